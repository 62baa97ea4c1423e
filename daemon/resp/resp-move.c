/*
 * daemon/resp/resp-move.c - the RESP commands that give a value another key or
 * another database: RENAME, RENAMENX, COPY and MOVE, with Redis 7's
 * replies and errors. The value is read, written under its new key with
 * the same expiry, as SET writes (resp-keys.c), then removed from the old
 * one where it moves; all of it in one turn of the loop, so no other
 * client sees it under both keys or neither. And SWAPDB, which moves no
 * value (kv-db.c).
 *
 * With sharded databases (resp-shard.c) a command runs at its keys' owner:
 * RENAME and COPY of keys of two owners get CROSSSLOT there, and MOVE or
 * COPY to another database are refused, as in a Redis Cluster (the other
 * database's key has an owner of its own).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"

#define RESP_ERR_SAME "ERR source and destination objects are the same"

/* A database index argument: false after its error. */
static bool resp_db_arg(struct resp_conn *c, const char *arg, size_t len, int *ret)
{
	long long db;

	if (!resp_ll(arg, len, &db) || db < INT_MIN || db > INT_MAX) {
		resp_err(c, RESP_ERR_INT);
		return false;
	}
	if (db < 0 || db >= RESP_DBS) {
		resp_err(c, "ERR DB index is out of range");
		return false;
	}
	*ret = (int)db;
	return true;
}

/*
 * Write the value of key in ns under newkey in newns, with its expiry:
 * 1, 0 when key has no value, or -1 after an error reply.
 */
static int resp_copy_value(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			   const char *newns, const char *newkey, size_t newklen)
{
	struct resp_val v;
	int64_t at = 0;
	char *copy;
	int rc;

	if (resp_get_raw(c, ns, key, klen, &v) < 0) /* (a list or set as it is) */
		return 0;
	/* (copied out first: the new value may take the old one's place) */
	if ((copy = malloc(v.len ? v.len : 1)) != NULL)
		memcpy(copy, v.data, v.len);
	resp_put_back(c, ns, key, klen, &v);
	if (copy == NULL) {
		resp_err(c, "ERR out of memory");
		return -1;
	}
	if (kv_local_ttl(c->rs->pd, c->uid, ns, (const uint8_t *)key, klen, &at) < 0)
		at = 0;
	rc = resp_put_raw(c, newns, newkey, newklen, copy, v.len, NULL, 0, at);
	free(copy);
	if (rc < 0) {
		resp_put_failed(c, rc, newkey, newklen);
		return -1;
	}
	return 1;
}

/* RENAME and RENAMENX key newkey. */
static void cmd_rename(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool nx = argl[0] == 8; /* RENAMENX */
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (!resp_exists(c, ns, argv[1], argl[1])) {
		resp_err(c, "ERR no such key");
		return;
	}
	if (argl[1] == argl[2] && memcmp(argv[1], argv[2], argl[1]) == 0) {
		if (nx)
			resp_int(c, 0);
		else
			resp_ok(c);
		return;
	}
	if (nx && resp_exists(c, ns, argv[2], argl[2])) {
		resp_int(c, 0);
		return;
	}
	if (resp_copy_value(c, ns, argv[1], argl[1], ns, argv[2], argl[2]) < 0)
		return;
	resp_del(c, ns, argv[1], argl[1]);
	if (nx)
		resp_int(c, 1);
	else
		resp_ok(c);
}

/* COPY source destination [DB destination-db] [REPLACE] */
static void cmd_copy(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	int db = c->db, rc;
	bool replace = false;
	char ns[32], newns[32];
	long i;

	for (i = 3; i < argc; i++) {
		if (strcasecmp(argv[i], "REPLACE") == 0) {
			replace = true;
		} else if (strcasecmp(argv[i], "DB") == 0 && i + 1 < argc) {
			if (!resp_db_arg(c, argv[i + 1], argl[i + 1], &db))
				return;
			i++;
		} else {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
	}
	if (resp_sharded(c->rs->pd) && db != c->db) {
		resp_err(c, "ERR Copying to another database is not allowed in cluster mode");
		return;
	}
	if (db == c->db && argl[1] == argl[2] && memcmp(argv[1], argv[2], argl[1]) == 0) {
		resp_err(c, RESP_ERR_SAME);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (!resp_exists(c, ns, argv[1], argl[1])) {
		resp_int(c, 0);
		return;
	}
	if (resp_db_open(c, db, newns, sizeof(newns)) < 0)
		return;
	if (resp_exists(c, newns, argv[2], argl[2])) {
		if (!replace) {
			resp_int(c, 0);
			return;
		}
		resp_del(c, newns, argv[2], argl[2]);
	}
	rc = resp_copy_value(c, ns, argv[1], argl[1], newns, argv[2], argl[2]);
	if (rc >= 0)
		resp_int(c, rc);
}

/* MOVE key db */
static void cmd_move(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32], newns[32];
	int db;

	(void)argc;
	if (resp_sharded(c->rs->pd)) {
		resp_err(c, "ERR MOVE is not allowed in cluster mode");
		return;
	}
	if (!resp_db_arg(c, argv[2], argl[2], &db))
		return;
	if (db == c->db) {
		resp_err(c, RESP_ERR_SAME);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (!resp_exists(c, ns, argv[1], argl[1])) {
		resp_int(c, 0);
		return;
	}
	if (resp_db_open(c, db, newns, sizeof(newns)) < 0)
		return;
	if (resp_exists(c, newns, argv[1], argl[1])) {
		resp_int(c, 0);
		return;
	}
	if (resp_copy_value(c, ns, argv[1], argl[1], newns, argv[1], argl[1]) < 0)
		return;
	resp_del(c, ns, argv[1], argl[1]);
	resp_int(c, 1);
}

/*
 * SWAPDB a b: the two databases trade their values, for every client at
 * once (kv-db.c). With sharded databases a node's endpoint asks the
 * coordinator (resp-shard.c); this runs at the coordinator's.
 */
static void cmd_swapdb(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct poold *pd = c->rs->pd;
	long long a, b;
	int rc;

	(void)argc;
	if (!resp_ll(argv[1], argl[1], &a) || a < INT_MIN || a > INT_MAX) {
		resp_err(c, "ERR invalid first DB index");
		return;
	}
	if (!resp_ll(argv[2], argl[2], &b) || b < INT_MIN || b > INT_MAX) {
		resp_err(c, "ERR invalid second DB index");
		return;
	}
	if (a < 0 || a >= RESP_DBS || b < 0 || b >= RESP_DBS) {
		resp_err(c, "ERR DB index is out of range");
		return;
	}
	if (a != b && pd->conf->role != ROLE_COORDINATOR) {
		resp_err(c, "ERR SWAPDB of sharded databases is not allowed inside MULTI");
		return;
	}
	if ((rc = resp_db_swap(pd, c->uid, (int)a, (int)b)) < 0)
		resp_err(c, "ERR SWAPDB: %s", err_str(rc));
	else
		resp_ok(c);
}

const struct resp_cmd resp_move_cmds[] = {
    {"copy", -3, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS | RESP_CMD_WRITES, cmd_copy},
    {"move", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_move},
    {"rename", 3, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS | RESP_CMD_WRITES, cmd_rename},
    {"renamenx", 3, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS | RESP_CMD_WRITES,
     cmd_rename},
    {"swapdb", 3, RESP_CMD_COORD, cmd_swapdb},
};
const size_t n_resp_move_cmds = ARRAY_SIZE(resp_move_cmds);

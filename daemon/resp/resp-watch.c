/*
 * daemon/resp/resp-watch.c - WATCH and UNWATCH: optimistic locking for MULTI /
 * EXEC, as Redis 7 has it. A watched key is remembered with the version
 * of its value and its expiry as they are at WATCH (no value: version 0);
 * EXEC runs nothing, and replies a null array, when any of them differ
 * then. Every write of a value makes a new version (the KV index's), so a
 * SET, a DEL, an expiry passed, a FLUSHDB, or another client of the
 * namespace writing through libpool all count as touching the key; a key
 * that has no value at WATCH and none at EXEC was not touched. A SWAPDB
 * that gave the key's database another namespace (kv-db.c) touched it
 * when it has a value in either, as Redis's touches a key that exists in
 * either database. EXEC, DISCARD, RESET and the connection's end forget
 * the keys.
 *
 * The keys' bytes count in the connection's buffers (resp.max_buffers*).
 * In a sharded database a key is watched where its shard's owner is: on
 * this node's endpoint, keys of the shards it owns alone (a client watches
 * others' keys on their owner's endpoint, as a Redis Cluster client does).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"

struct resp_watch {
	int db;
	char ns[32];	  /* its namespace at WATCH */
	uint64_t version; /* of its value at WATCH, 0 when it had none */
	int64_t expire;	  /* its expiry then, Unix ms, 0 for none */
	size_t klen;
	char key[];
};

/* A key's version and expiry as they are now (0 and 0 without a value). */
static void resp_watch_state(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			     uint64_t *version, int64_t *expire)
{
	struct kv_where w;

	*version = 0;
	*expire = 0;
	if (kv_local_where(c->rs->pd, c->uid, ns, (const uint8_t *)key, klen, &w) == 0) {
		*version = w.version;
		if (kv_local_ttl(c->rs->pd, c->uid, ns, (const uint8_t *)key, klen, expire) < 0)
			*expire = 0;
	}
}

static void cmd_watch(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_watch **more;
	char ns[32];
	size_t k;
	long i;

	if (c->multi) {
		resp_err(c, "ERR WATCH inside MULTI is not allowed");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	for (i = 1; i < argc; i++) {
		if (resp_sharded(c->rs->pd) && !resp_shard_here(c, ns, argv[i], argl[i])) {
			resp_err(c,
				 "ERR WATCH of a key another node owns the shard of: watch it on "
				 "that node's endpoint (sharded databases)");
			return;
		}
		for (k = 0; k < c->nwatched; k++)
			if (c->watched[k]->db == c->db && c->watched[k]->klen == argl[i] &&
			    memcmp(c->watched[k]->key, argv[i], argl[i]) == 0)
				break;
		if (k < c->nwatched)
			continue; /* (watched already) */
		if (!resp_room(c, sizeof(**more) + argl[i]))
			return; /* (its buffers' bound: the connection ends) */
		more = realloc(c->watched, (c->nwatched + 1) * sizeof(*more));
		if (more == NULL ||
		    (more[c->nwatched] = malloc(sizeof(**more) + argl[i])) == NULL) {
			if (more != NULL)
				c->watched = more;
			resp_err(c, "ERR out of memory");
			return;
		}
		c->watched = more;
		more[c->nwatched]->db = c->db;
		memcpy(more[c->nwatched]->ns, ns, sizeof(more[c->nwatched]->ns));
		more[c->nwatched]->klen = argl[i];
		memcpy(more[c->nwatched]->key, argv[i], argl[i]);
		resp_watch_state(c, ns, argv[i], argl[i], &more[c->nwatched]->version,
				 &more[c->nwatched]->expire);
		c->watched_bytes += sizeof(**more) + argl[i];
		c->nwatched++;
	}
	resp_ok(c);
}

bool resp_watch_touched(struct resp_conn *c)
{
	uint64_t version;
	int64_t expire;
	char ns[32];
	size_t k;

	for (k = 0; k < c->nwatched; k++) {
		const struct resp_watch *w = c->watched[k];

		resp_db_name(c, w->db, ns, sizeof(ns));
		resp_watch_state(c, ns, w->key, w->klen, &version, &expire);
		if (strcmp(ns, w->ns) != 0 ? version != 0 || w->version != 0
					   : version != w->version || expire != w->expire)
			return true;
	}
	return false;
}

void resp_watch_clear(struct resp_conn *c)
{
	while (c->nwatched > 0)
		free(c->watched[--c->nwatched]);
	free(c->watched);
	c->watched = NULL;
	c->watched_bytes = 0;
}

static void cmd_unwatch(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argv, (void)argl;
	resp_watch_clear(c);
	resp_ok(c);
}

const struct resp_cmd resp_watch_cmds[] = {
    {"unwatch", 1, 0, cmd_unwatch},
    {"watch", -2, RESP_CMD_TXN, cmd_watch},
};
const size_t n_resp_watch_cmds = ARRAY_SIZE(resp_watch_cmds);

/*
 * daemon/respconn.c - the connection and server commands of the RESP
 * endpoint (AUTH, HELLO, SELECT, CLIENT, MULTI/EXEC, INFO, COMMAND...),
 * and the command tables' lookup: these and the keyspace's (respkeys.c).
 * Replies and errors are Redis 7's where Redis defines them.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "daemon/poold.h"
#include "daemon/resp.h"

#define RESP_VERSION "7.0.0" /* the Redis we answer as (HELLO, INFO) */

static void cmd_auth(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	if (argc > 3) {
		resp_err(c, RESP_ERR_SYNTAX);
		return;
	}
	if (resp_auth_as(c, argc == 3 ? argv[1] : NULL, argv[argc - 1], argl[argc - 1]) == 0)
		resp_ok(c);
}

static void cmd_ping(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	if (argc > 2)
		resp_err(c, "ERR wrong number of arguments for 'ping' command");
	else if (argc == 2)
		resp_bulk(c, argv[1], argl[1]);
	else
		resp_out(c, "+PONG\r\n");
}

static void cmd_echo(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc;
	resp_bulk(c, argv[1], argl[1]);
}

static void cmd_quit(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argv, (void)argl;
	resp_ok(c);
	resp_close_after_reply(c);
}

static void cmd_reset(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argv, (void)argl;
	resp_reset(c);
	resp_out(c, "+RESET\r\n");
}

static void cmd_select(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long db;

	(void)argc;
	if (!resp_ll(argv[1], argl[1], &db) || db < INT_MIN || db > INT_MAX) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (db < 0 || db >= RESP_DBS) {
		resp_err(c, "ERR DB index is out of range");
		return;
	}
	c->db = (int)db;
	resp_ok(c);
}

static void cmd_time(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct timeval tv;
	char s[24], us[24];

	(void)argc, (void)argv, (void)argl;
	gettimeofday(&tv, NULL);
	snprintf(s, sizeof(s), "%lld", (long long)tv.tv_sec);
	snprintf(us, sizeof(us), "%ld", (long)tv.tv_usec);
	resp_array(c, 2);
	resp_bulk(c, s, strlen(s));
	resp_bulk(c, us, strlen(us));
}

/* HELLO [protover [AUTH username password] [SETNAME clientname]] */
static void cmd_hello(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long ver = c->proto;
	const char *name = NULL;
	long i;

	if (argc >= 2) {
		if (!resp_ll(argv[1], argl[1], &ver)) {
			resp_err(c, "ERR Protocol version is not an integer or out of range");
			return;
		}
		if (ver < 2 || ver > 3) {
			resp_err(c, "NOPROTO unsupported protocol version");
			return;
		}
	}
	for (i = 2; i < argc; i++) {
		if (strcasecmp(argv[i], "AUTH") == 0 && i + 2 < argc) {
			if (resp_auth_as(c, argv[i + 1], argv[i + 2], argl[i + 2]) < 0)
				return;
			i += 2;
		} else if (strcasecmp(argv[i], "SETNAME") == 0 && i + 1 < argc) {
			name = argv[++i];
		} else {
			resp_err(c, "ERR Syntax error in HELLO option '%s'", argv[i]);
			return;
		}
	}
	if (!c->authed) {
		resp_err(c, "NOAUTH HELLO must be called with the client already authenticated, "
			    "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
			    "authenticate the client and select the RESP protocol version at the "
			    "same time");
		return;
	}
	if (name != NULL)
		snprintf(c->name, sizeof(c->name), "%s", name);
	c->proto = (int)ver;
	resp_map(c, 7);
	resp_bulk(c, "server", 6);
	resp_bulk(c, "redis", 5);
	resp_bulk(c, "version", 7);
	resp_bulk(c, RESP_VERSION, strlen(RESP_VERSION));
	resp_bulk(c, "proto", 5);
	resp_int(c, c->proto);
	resp_bulk(c, "id", 2);
	resp_int(c, (long long)c->id);
	resp_bulk(c, "mode", 4);
	resp_bulk(c, "standalone", 10);
	resp_bulk(c, "role", 4);
	resp_bulk(c, "master", 6);
	resp_bulk(c, "modules", 7);
	resp_array(c, 0);
}

static bool resp_name_ok(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] < '!' || s[i] > '~')
			return false;
	return len <= RESP_NAME_MAX;
}

static void cmd_client(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	const char *sub = argv[1];
	char line[512];

	if (strcasecmp(sub, "ID") == 0 && argc == 2) {
		resp_int(c, (long long)c->id);
	} else if (strcasecmp(sub, "GETNAME") == 0 && argc == 2) {
		if (c->name[0] == '\0')
			resp_null(c);
		else
			resp_bulk(c, c->name, strlen(c->name));
	} else if (strcasecmp(sub, "SETNAME") == 0 && argc == 3) {
		if (!resp_name_ok(argv[2], argl[2])) {
			resp_err(c, "ERR Client names cannot contain spaces, newlines or special "
				    "characters.");
			return;
		}
		snprintf(c->name, sizeof(c->name), "%s", argv[2]);
		resp_ok(c);
	} else if (strcasecmp(sub, "SETINFO") == 0 && argc == 4) {
		resp_ok(c); /* LIB-NAME, LIB-VER: nothing to keep */
	} else if (strcasecmp(sub, "INFO") == 0 && argc == 2) {
		resp_client_line(c, line, sizeof(line));
		resp_verbatim(c, line, strlen(line));
	} else if (strcasecmp(sub, "LIST") == 0 && argc == 2) {
		/* The connections of the caller's uid (root: all). */
		struct evbuffer *b = evbuffer_new();
		struct resp_conn *o;
		size_t len;
		char *text;

		if (b == NULL) {
			resp_err(c, "ERR out of memory");
			return;
		}
		TAILQ_FOREACH(o, &c->rs->conns, entry)
			if (c->uid == 0 || o->uid == c->uid) {
				resp_client_line(o, line, sizeof(line));
				evbuffer_add(b, line, strlen(line));
			}
		len = evbuffer_get_length(b);
		text = (char *)evbuffer_pullup(b, -1);
		resp_verbatim(c, text ? text : "", len);
		evbuffer_free(b);
	} else if (strcasecmp(sub, "NO-EVICT") == 0 || strcasecmp(sub, "NO-TOUCH") == 0) {
		resp_ok(c);
	} else {
		resp_err(c,
			 "ERR unknown subcommand or wrong number of arguments for '%.128s'. Try "
			 "CLIENT HELP.",
			 sub);
	}
}

static void cmd_command(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argl;
	if (argc == 1) {
		resp_array(c, 0); /* no command information to give */
	} else if (strcasecmp(argv[1], "DOCS") == 0) {
		resp_map(c, 0); /* what redis-cli asks first, for its hints: none here */
	} else if (strcasecmp(argv[1], "COUNT") == 0 && argc == 2) {
		resp_int(c, (long long)resp_cmd_count());
	} else if (strcasecmp(argv[1], "INFO") == 0) {
		long i;

		resp_array(c, (size_t)(argc - 2));
		for (i = 2; i < argc; i++)
			resp_null(c);
	} else {
		resp_err(c,
			 "ERR unknown subcommand or wrong number of arguments for '%.128s'. Try "
			 "COMMAND HELP.",
			 argv[1]);
	}
}

static void cmd_config(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argl;
	if (strcasecmp(argv[1], "GET") == 0 && argc >= 3)
		resp_map(c, 0); /* no configuration a client may read */
	else if (strcasecmp(argv[1], "RESETSTAT") == 0 && argc == 2)
		resp_ok(c);
	else
		resp_err(c,
			 "ERR unknown subcommand or wrong number of arguments for '%.128s'. Try "
			 "CONFIG HELP.",
			 argv[1]);
}

/* INFO [section ...]: server, clients, stats, keyspace; all of them by default. */
static void cmd_info(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	static const char *const sections[] = {"server", "clients", "stats", "keyspace"};
	struct poold *pd = c->rs->pd;
	struct evbuffer *b = evbuffer_new();
	bool want[4] = {false}, any = false;
	size_t i, k, len;
	char ns[32], *text;
	long a;
	int db;

	(void)argl;
	if (b == NULL) {
		resp_err(c, "ERR out of memory");
		return;
	}
	for (a = 1; a < argc; a++) {
		bool every = strcasecmp(argv[a], "all") == 0 ||
			     strcasecmp(argv[a], "default") == 0 ||
			     strcasecmp(argv[a], "everything") == 0;

		for (k = 0; k < 4; k++)
			if (every || strcasecmp(argv[a], sections[k]) == 0)
				want[k] = any = true;
	}
	if (argc == 1)
		for (k = 0; k < 4; k++)
			want[k] = any = true;
	for (k = 0, i = 0; any && k < 4; k++) {
		if (!want[k])
			continue;
		if (i++ > 0)
			evbuffer_add(b, "\r\n", 2);
		switch (k) {
		case 0:
			evbuffer_add_printf(
			    b,
			    "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\n"
			    "pool_version:%s\r\nprocess_id:%d\r\nuptime_in_seconds:"
			    "%llu\r\n",
			    RESP_VERSION, PACKAGE_VERSION, (int)getpid(),
			    (unsigned long long)((units_now_ms() - pd->start_ms) / 1000));
			break;
		case 1:
			evbuffer_add_printf(
			    b, "# Clients\r\nconnected_clients:%u\r\nmaxclients:%lld\r\n",
			    c->rs->nconns, (long long)pd->conf->resp_max_clients);
			break;
		case 2:
			evbuffer_add_printf(b, "# Stats\r\ntotal_commands_processed:%llu\r\n",
					    (unsigned long long)c->rs->commands);
			break;
		case 3:
			evbuffer_add_printf(b, "# Keyspace\r\n");
			for (db = 0; db < RESP_DBS; db++) {
				uint64_t keys;

				resp_db_name(c, db, ns, sizeof(ns));
				keys = kv_local_size(pd, ns);
				if (keys > 0)
					evbuffer_add_printf(
					    b, "db%d:keys=%llu,expires=%llu,avg_ttl=0\r\n", db,
					    (unsigned long long)keys,
					    (unsigned long long)kv_local_volatile(pd, ns));
			}
			break;
		}
	}
	len = evbuffer_get_length(b);
	text = len ? (char *)evbuffer_pullup(b, -1) : NULL;
	resp_verbatim(c, text ? text : "", len);
	evbuffer_free(b);
}

static void cmd_multi(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argv, (void)argl;
	if (c->multi) {
		resp_err(c, "ERR MULTI calls can not be nested");
		return;
	}
	c->multi = true;
	c->multi_dirty = false;
	resp_ok(c);
}

static void cmd_discard(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argv, (void)argl;
	if (!c->multi) {
		resp_err(c, "ERR DISCARD without MULTI");
		return;
	}
	resp_queue_clear(c);
	c->multi = false;
	resp_ok(c);
}

static void cmd_exec(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	size_t i;

	(void)argc, (void)argv, (void)argl;
	if (!c->multi) {
		resp_err(c, "ERR EXEC without MULTI");
		return;
	}
	c->multi = false;
	if (c->multi_dirty) {
		resp_queue_clear(c);
		resp_err(c, "EXECABORT Transaction discarded because of previous errors.");
		return;
	}
	/*
	 * One event-loop turn: nothing else runs between the queued commands.
	 * The values they read from other nodes were fetched first; what they
	 * write goes to this node, so that the next of them reads it at once.
	 */
	resp_array(c, c->nqueued);
	c->in_exec = true;
	for (i = 0; i < c->nqueued; i++) {
		struct resp_queued *q = &c->queued[i];

		resp_cmd_run(c, resp_cmd_find(q->argv[0]), q->argc, q->argv, q->argl);
	}
	c->in_exec = false;
	resp_queue_clear(c);
}

/* Sorted by name; arity as in Redis 7's command table. */
const struct resp_cmd resp_conn_cmds[] = {
    {"auth", -2, RESP_CMD_NOAUTH, cmd_auth},
    {"client", -2, 0, cmd_client},
    {"command", -1, 0, cmd_command},
    {"config", -2, 0, cmd_config},
    {"discard", 1, RESP_CMD_TXN, cmd_discard},
    {"echo", 2, 0, cmd_echo},
    {"exec", 1, RESP_CMD_TXN, cmd_exec},
    {"hello", -1, RESP_CMD_NOAUTH, cmd_hello},
    {"info", -1, 0, cmd_info},
    {"multi", 1, RESP_CMD_TXN, cmd_multi},
    {"ping", -1, 0, cmd_ping},
    {"quit", -1, RESP_CMD_NOAUTH | RESP_CMD_TXN, cmd_quit},
    {"reset", 1, RESP_CMD_NOAUTH | RESP_CMD_TXN, cmd_reset},
    {"select", 2, 0, cmd_select},
    {"time", 1, 0, cmd_time},
};
const size_t n_resp_conn_cmds = ARRAY_SIZE(resp_conn_cmds);

static int resp_cmd_cmp(const void *key, const void *elem)
{
	return strcasecmp(key, ((const struct resp_cmd *)elem)->name);
}

const struct resp_cmd *resp_cmd_find(const char *name)
{
	const struct resp_cmd *c =
	    bsearch(name, resp_key_cmds, n_resp_key_cmds, sizeof(resp_key_cmds[0]), resp_cmd_cmp);

	return c != NULL ? c
			 : bsearch(name, resp_conn_cmds, n_resp_conn_cmds,
				   sizeof(resp_conn_cmds[0]), resp_cmd_cmp);
}

size_t resp_cmd_count(void)
{
	return n_resp_key_cmds + n_resp_conn_cmds;
}

void resp_cmd_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		  const size_t *argl)
{
	char ns[32];
	int rc;

	(void)coordha_epoch(c->rs->pd, NULL); /* (a deposed leader stops here, before it acts) */
	if (cmd->flags & RESP_CMD_KEYS) {
		resp_db_name(c, c->db, ns, sizeof(ns));
		rc = kv_local_ensure(c->rs->pd, ns, (uint64_t)c->rs->pd->conf->resp_capacity,
				     c->uid, c->rs->pd->conf->resp_placement == RESP_PLACE_LOCAL);
		if (rc < 0) {
			resp_err(c, "ERR cannot open database %d: %s", c->db, err_str(rc));
			return;
		}
	}
	cmd->run(c, argc, argv, argl);
}

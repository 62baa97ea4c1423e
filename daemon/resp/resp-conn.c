/*
 * daemon/resp/resp-conn.c - the connection and server commands of the RESP
 * endpoint (AUTH, HELLO, SELECT, CLIENT, MULTI/EXEC, COMMAND, FUNCTION...),
 * and the lookup of every command: each file's table (these, the
 * keyspace's in resp-keys.c, the lists' in resp-list.c...) merged once into
 * one sorted by name. Replies and errors are Redis 7's where Redis
 * defines them.
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

#include "daemon/ha/ha.h"
#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"

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

/*
 * FUNCTION: there are no functions (no scripting), so FLUSH has nothing to
 * remove and LIST nothing to show; what would load or call one is refused.
 */
static void cmd_function(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argl;
	if (strcasecmp(argv[1], "FLUSH") == 0 &&
	    (argc == 2 || (argc == 3 && (strcasecmp(argv[2], "ASYNC") == 0 ||
					 strcasecmp(argv[2], "SYNC") == 0))))
		resp_ok(c);
	else if (strcasecmp(argv[1], "LIST") == 0)
		resp_array(c, 0);
	else if (strcasecmp(argv[1], "LOAD") == 0 || strcasecmp(argv[1], "RESTORE") == 0)
		resp_err(c, "ERR functions are not supported by this server (no scripting)");
	else
		resp_err(c,
			 "ERR unknown subcommand or wrong number of arguments for '%.128s'. Try "
			 "FUNCTION HELP.",
			 argv[1]);
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
	resp_watch_clear(c);
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
	if (c->multi_dirty || resp_watch_touched(c)) {
		if (c->multi_dirty)
			resp_err(c, "EXECABORT Transaction discarded because of previous errors.");
		else /* (a watched key changed: nothing runs) */
			resp_out(c, c->proto == 3 ? "_\r\n" : "*-1\r\n");
		resp_queue_clear(c);
		resp_watch_clear(c);
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
	resp_watch_clear(c);
}

/* Sorted by name; arity as in Redis 7's command table. */
const struct resp_cmd resp_conn_cmds[] = {
    {"auth", -2, RESP_CMD_NOAUTH, cmd_auth},
    {"client", -2, 0, cmd_client},
    {"command", -1, 0, cmd_command},
    {"discard", 1, RESP_CMD_TXN, cmd_discard},
    {"echo", 2, 0, cmd_echo},
    {"exec", 1, RESP_CMD_TXN, cmd_exec},
    {"function", -2, 0, cmd_function},
    {"hello", -1, RESP_CMD_NOAUTH, cmd_hello},
    {"multi", 1, RESP_CMD_TXN, cmd_multi},
    {"ping", -1, 0, cmd_ping},
    {"quit", -1, RESP_CMD_NOAUTH | RESP_CMD_TXN, cmd_quit},
    {"reset", 1, RESP_CMD_NOAUTH | RESP_CMD_TXN, cmd_reset},
    {"select", 2, 0, cmd_select},
    {"time", 1, 0, cmd_time},
};
const size_t n_resp_conn_cmds = ARRAY_SIZE(resp_conn_cmds);

/* Each file's commands: its table and its length. */
static const struct {
	const struct resp_cmd *cmds;
	const size_t *n;
} resp_tables[] = {
    {resp_key_cmds, &n_resp_key_cmds},	   {resp_conn_cmds, &n_resp_conn_cmds},
    {resp_bit_cmds, &n_resp_bit_cmds},	   {resp_move_cmds, &n_resp_move_cmds},
    {resp_watch_cmds, &n_resp_watch_cmds}, {resp_lcs_cmds, &n_resp_lcs_cmds},
    {resp_info_cmds, &n_resp_info_cmds},   {resp_list_cmds, &n_resp_list_cmds},
    {resp_set_cmds, &n_resp_set_cmds},
};

/* Every command, sorted by name: made from the tables once; each table's commands' places in it. */
static const struct resp_cmd **resp_all;
static size_t resp_nall, *resp_slots[ARRAY_SIZE(resp_tables)];

static int resp_cmd_sort(const void *a, const void *b)
{
	return strcasecmp((*(const struct resp_cmd *const *)a)->name,
			  (*(const struct resp_cmd *const *)b)->name);
}

static int resp_cmd_cmp(const void *key, const void *elem)
{
	return strcasecmp(key, (*(const struct resp_cmd *const *)elem)->name);
}

static bool resp_cmd_index(void)
{
	size_t i, k, n = 0;

	if (resp_all != NULL)
		return true;
	for (i = 0; i < ARRAY_SIZE(resp_tables); i++)
		n += *resp_tables[i].n;
	if ((resp_all = calloc(n, sizeof(*resp_all))) == NULL)
		return false;
	for (i = 0; i < ARRAY_SIZE(resp_tables); i++)
		for (k = 0; k < *resp_tables[i].n; k++)
			resp_all[resp_nall++] = &resp_tables[i].cmds[k];
	qsort(resp_all, resp_nall, sizeof(*resp_all), resp_cmd_sort);
	for (i = 0; i < ARRAY_SIZE(resp_tables); i++)
		if ((resp_slots[i] = calloc(*resp_tables[i].n, sizeof(**resp_slots))) == NULL)
			return false;
	for (n = 0; n < resp_nall; n++)
		for (i = 0; i < ARRAY_SIZE(resp_tables); i++)
			if (resp_all[n] >= resp_tables[i].cmds &&
			    resp_all[n] < resp_tables[i].cmds + *resp_tables[i].n)
				resp_slots[i][resp_all[n] - resp_tables[i].cmds] = n;
	return true;
}

size_t resp_cmd_slot(const struct resp_cmd *cmd)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(resp_tables); i++)
		if (cmd >= resp_tables[i].cmds && cmd < resp_tables[i].cmds + *resp_tables[i].n)
			return resp_slots[i][cmd - resp_tables[i].cmds];
	return 0;
}

const struct resp_cmd *resp_cmd_at(size_t slot)
{
	return resp_all[slot];
}

const struct resp_cmd *resp_cmd_find(const char *name)
{
	const struct resp_cmd *const *c;

	if (!resp_cmd_index())
		return NULL;
	c = bsearch(name, resp_all, resp_nall, sizeof(*resp_all), resp_cmd_cmp);
	return c != NULL ? *c : NULL;
}

size_t resp_cmd_count(void)
{
	return resp_cmd_index() ? resp_nall : 0;
}

void resp_cmd_keys(const struct resp_cmd *cmd, long argc, long *first, long *last, long *step)
{
	*first = *last = *step = 1;
	if (cmd->flags & RESP_CMD_KEYLESS)
		*first = 0;
	else if (cmd->flags & RESP_CMD_KEYS_ALL)
		*last = argc - 1;
	else if (cmd->flags & RESP_CMD_KEYS_PAIRS)
		*last = argc - 2, *step = 2;
	else if (cmd->flags & RESP_CMD_KEYS_TWO)
		*last = 2;
	else if (cmd->flags & RESP_CMD_KEY_SECOND)
		*first = *last = 2;
}

int resp_db_open(struct resp_conn *c, int db, char *ns, size_t len)
{
	int rc;

	resp_db_name(c, db, ns, len);
	rc = kv_local_ensure(c->rs->pd, ns, (uint64_t)c->rs->pd->conf->resp_capacity, c->uid,
			     c->rs->pd->conf->resp_placement == RESP_PLACE_LOCAL);
	if (rc < 0)
		resp_err(c, "ERR cannot open database %d: %s", db, err_str(rc));
	return rc;
}

void resp_cmd_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		  const size_t *argl)
{
	char ns[32];

	(void)ha_epoch(c->rs->pd, NULL); /* (a deposed leader stops here, before it acts) */
	if ((cmd->flags & RESP_CMD_KEYS) && resp_db_open(c, c->db, ns, sizeof(ns)) < 0)
		return;
	resp_stat_run(c, cmd, argc, argv, argl);
}

/*
 * daemon/resp/resp.c - a Redis-protocol endpoint to the KV cache, so redis-cli,
 * redis-benchmark, redis-py, hiredis and tools that take a Redis URL can use
 * the pool unchanged: the connections, their limits and authentication,
 * the replies (RESP2, or RESP3 after HELLO 3), MULTI's queue, and the
 * dispatch to the command tables (resp-keys.c, resp-conn.c).
 *
 * Served by the coordinator on resp.listen. Database N (SELECT N, 0-15) is
 * the KV namespace "redisN" (another after a SWAPDB: kv-db.c), made on
 * first use with resp.capacity, its values spread over the lenders
 * (resp.placement): those of this node are copied in the event loop, those
 * of others fetched or put one-sided around the command (resp-remote.c);
 * libpool clients on any node reach the same namespace one-sided. Requests
 * are RESP arrays of bulk strings or inline commands; anything else, or a
 * bulk or array over the limits, gets an error and the connection is
 * closed. With resp.password or resp.users set, AUTH comes first; a user
 * of resp.users acts as its uid (resp-auth.c): its databases are namespaces
 * "redisN-uUID" of its own, mode 0600, and its values count against its
 * quota.
 *
 * What a connection makes poold hold (the command being read, counted at
 * each argument's header before its bytes come; MULTI's queue; unread
 * replies) is bounded per connection (resp.max_request, resp.max_output),
 * per user (resp.max_buffers_per_user) and in all (resp.max_buffers):
 * past a bound, the biggest connection in it is closed, as Redis's
 * maxmemory-clients does, and a reply that would pass one ends its
 * connection before it is built.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/kv/kv.h"
#include "daemon/net/net.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "proto/pool_contract.h"

#define RESP_MAX_BULK (POOL_KV_VALUE_MAX + 1024)
/* What a client that did not AUTH yet may send in one command, as Redis allows it. */
#define RESP_UNAUTH_ARGS 10
#define RESP_UNAUTH_BULK 16384
/* The most bytes one read or write system call of a connection moves. */
#define RESP_IO_CHUNK (256u << 10)
/* The most reads of resp_fill() in one callback. */
#define RESP_FILLS 16
/* Unread replies past which poold reads no more commands from a client, until it reads. */
#define RESP_OUTPUT_PAUSE (1u << 20)

void resp_args_free(struct resp_queued *q)
{
	long k;

	for (k = 0; k < q->argc; k++)
		free(q->argv[k]);
	free(q->argv);
	free(q->argl);
	q->argc = 0;
	q->argv = NULL;
	q->argl = NULL;
}

void resp_queue_clear(struct resp_conn *c)
{
	size_t i;

	for (i = 0; i < c->nqueued; i++)
		resp_args_free(&c->queued[i]);
	free(c->queued);
	c->queued = NULL;
	c->nqueued = 0;
	c->queued_bytes = 0;
}

/* ------------------------------------------------------------ buffers */

static struct resp_tenant *resp_tenant_find(struct resp *rs, uint32_t uid)
{
	struct resp_tenant *u;

	LIST_FOREACH(u, &rs->tenants, entry)
		if (u->uid == uid)
			return u;
	return NULL;
}

static size_t resp_out_bytes(struct resp_conn *c);

/*
 * What c's buffers hold: the arguments announced so far, MULTI's queue,
 * the values and owners' replies fetched for it, the unread replies.
 */
static uint64_t resp_conn_bytes(struct resp_conn *c)
{
	return c->p.total + c->queued_bytes + c->watched_bytes + c->ahead_bytes + c->remote_bytes +
	       c->shard_bytes + resp_out_bytes(c);
}

/* Count c's buffers as they are now, in its user's bytes and in all. */
static void resp_charge(struct resp_conn *c)
{
	uint64_t now = resp_conn_bytes(c);

	if (c->tenant != NULL)
		c->tenant->bytes = c->tenant->bytes - c->charged + now;
	c->rs->bytes = c->rs->bytes - c->charged + now;
	c->charged = now;
}

/* c now acts as uid (0 with u NULL: not authenticated); -ENOMEM leaves it as it was. */
static int resp_conn_user(struct resp_conn *c, bool authed, uint32_t uid)
{
	struct resp_tenant *u = NULL;

	if (authed && c->tenant != NULL && c->tenant->uid == uid)
		return 0; /* the same user again */
	if (authed && (u = resp_tenant_find(c->rs, uid)) == NULL) {
		u = calloc(1, sizeof(*u));
		if (u == NULL)
			return -ENOMEM;
		u->uid = uid;
		LIST_INSERT_HEAD(&c->rs->tenants, u, entry);
	}
	if (c->tenant != NULL) {
		c->tenant->bytes -= c->charged;
		if (--c->tenant->conns == 0) {
			LIST_REMOVE(c->tenant, entry);
			free(c->tenant);
		}
	}
	c->tenant = u;
	if (u != NULL) {
		u->conns++;
		u->bytes += c->charged;
	}
	c->authed = authed;
	c->uid = uid;
	return 0;
}

static void resp_conn_free(struct resp_conn *c)
{
	resp_parser_free(&c->p); /* (a value being read into its reservation: given back) */
	resp_conn_user(c, false, 0);
	c->rs->bytes -= c->charged;
	TAILQ_REMOVE(&c->rs->conns, c, entry);
	c->rs->nconns--;
	resp_remote_end(c); /* its pins and reservations, once nothing in flight needs them */
	resp_shard_end(c);
	resp_queue_clear(c);
	resp_watch_clear(c);
	while (c->nahead > 0)
		resp_args_free(&c->ahead[--c->nahead]);
	if (c->held != NULL)
		evbuffer_free(c->held);
	if (c->scratch != NULL)
		evbuffer_free(c->scratch);
	evbuffer_free(c->out);
	bufferevent_free(c->bev);
	free(c);
}

/* What the client may send in one command: little until it passed AUTH. */
static void resp_limits(struct resp_conn *c)
{
	if (c->authed)
		resp_parser_limit(&c->p, RESP_MAX_ARGS, RESP_MAX_BULK,
				  (uint64_t)c->rs->pd->conf->resp_max_request, false);
	else
		resp_parser_limit(&c->p, RESP_UNAUTH_ARGS, RESP_UNAUTH_BULK,
				  RESP_UNAUTH_ARGS * RESP_UNAUTH_BULK, true);
}

/* ------------------------------------------------------------ replies */

/*
 * Where replies go: the socket's output; while writes to other nodes are
 * in flight, the replies held behind them (c->held: the output's front is
 * the bufferevent's, so nothing in it can be taken back); for a command
 * that may start such writes, its own buffer first (resp_command()).
 */
struct evbuffer *resp_output(struct resp_conn *c)
{
	if (c->scratch_on)
		return c->scratch;
	return c->nsegs > 0 ? c->held : c->out;
}

/* The replies c holds, sent or not. */
static size_t resp_out_bytes(struct resp_conn *c)
{
	/* (no bufferevent: a command of another node's client, resp-shard.c) */
	return (c->bev != NULL ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0) +
	       evbuffer_get_length(c->out) + (c->held ? evbuffer_get_length(c->held) : 0) +
	       (c->scratch ? evbuffer_get_length(c->scratch) : 0);
}

void resp_out(struct resp_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	evbuffer_add_vprintf(resp_output(c), fmt, ap);
	va_end(ap);
}

/*
 * An error: "-" and the text (which starts with its code, ERR or another), CR and LF in it spaces.
 */
void resp_err(struct resp_conn *c, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	for (i = 0; text[i] != '\0'; i++)
		if (text[i] == '\r' || text[i] == '\n')
			text[i] = ' ';
	resp_out(c, "-%s\r\n", text);
}

void resp_ok(struct resp_conn *c)
{
	evbuffer_add(resp_output(c), "+OK\r\n", 5);
}

/*
 * Whether a reply of len more bytes still fits under resp.max_output; once
 * one does not, the connection is over (resp_read_cb() ends it), so that a
 * single command (MGET of one big key a million times) cannot make poold
 * build a reply of any size first.
 */
bool resp_room(struct resp_conn *c, size_t len)
{
	const struct poold_conf *conf = c->rs->pd->conf;
	uint64_t mine = resp_conn_bytes(c) + len;

	if (c->overflow != NULL)
		return false;
	if (resp_out_bytes(c) + len > (uint64_t)conf->resp_max_output)
		c->overflow = "resp.max_output";
	else if (c->tenant != NULL &&
		 c->tenant->bytes - c->charged + mine > (uint64_t)conf->resp_max_buffers_per_user)
		c->overflow = "resp.max_buffers_per_user";
	else if (c->rs->bytes - c->charged + mine > (uint64_t)conf->resp_max_buffers)
		c->overflow = "resp.max_buffers";
	return c->overflow == NULL;
}

/* A header: the type's byte, n in decimal, CRLF ("$5\r\n", ":-1\r\n"); no printf. */
void resp_head(struct evbuffer *out, char type, long long n)
{
	char buf[24], *p = buf + sizeof(buf);
	unsigned long long u = n < 0 ? 0 - (unsigned long long)n : (unsigned long long)n;

	*--p = '\n';
	*--p = '\r';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (n < 0)
		*--p = '-';
	*--p = type;
	evbuffer_add(out, p, (size_t)(buf + sizeof(buf) - p));
}

void resp_bulk(struct resp_conn *c, const void *data, size_t len)
{
	struct evbuffer *out = resp_output(c);

	if (!resp_room(c, len))
		return;
	resp_head(out, '$', (long long)len);
	evbuffer_add(out, data, len);
	evbuffer_add(out, "\r\n", 2);
}

/* Text for people (INFO, CLIENT INFO): a bulk string, or RESP3's verbatim "txt:". */
void resp_verbatim(struct resp_conn *c, const char *text, size_t len)
{
	struct evbuffer *out = resp_output(c);

	if (c->proto < 3) {
		resp_bulk(c, text, len);
		return;
	}
	evbuffer_add_printf(out, "=%zu\r\ntxt:", len + 4);
	evbuffer_add(out, text, len);
	evbuffer_add(out, "\r\n", 2);
}

void resp_null(struct resp_conn *c)
{
	if (c->proto >= 3)
		evbuffer_add(resp_output(c), "_\r\n", 3);
	else
		evbuffer_add(resp_output(c), "$-1\r\n", 5);
}

void resp_int(struct resp_conn *c, long long v)
{
	resp_head(resp_output(c), ':', v);
}

void resp_array(struct resp_conn *c, size_t n)
{
	resp_head(resp_output(c), '*', (long long)n);
}

/* A map of n pairs: RESP3's, or an array of 2n elements in RESP2. */
void resp_map(struct resp_conn *c, size_t n)
{
	if (c->proto >= 3)
		resp_head(resp_output(c), '%', (long long)n);
	else
		resp_head(resp_output(c), '*', (long long)(2 * n));
}

/* An error reply that also ends the connection (protocol errors). */
static void resp_fatal(struct resp_conn *c, const char *msg)
{
	log_debug("RESP client: %s", msg);
	resp_out(c, "-ERR Protocol error: %s\r\n", msg);
	resp_close_after_reply(c);
}

void resp_close_after_reply(struct resp_conn *c)
{
	bufferevent_disable(c->bev, EV_READ);
	c->closing = true;
}

/* ------------------------------------------------------------ the connection */

/* The namespace of database db, for the client's uid (kv-db.c). */
void resp_db_name(const struct resp_conn *c, int db, char *ns, size_t len)
{
	resp_db_resolve(c->rs->pd, c->uid, db, ns, len);
}

/*
 * AUTH [user] password (user NULL: the default user), for AUTH and HELLO:
 * 0 when the client now acts as that user, else -1 with the error replied
 * (or, past resp.max_clients_per_user, the connection closing).
 */
int resp_auth_as(struct resp_conn *c, const char *user, const char *password, size_t pwlen)
{
	struct poold *pd = c->rs->pd;
	struct resp_tenant *u;
	uint32_t uid;

	if (user == NULL && pd->conf->resp_password[0] == '\0' && pd->conf->resp_nusers == 0) {
		resp_err(c, "ERR AUTH <password> called without any password configured for the "
			    "default user. Are you sure your configuration is correct?");
		return -1;
	}
	if (resp_auth(pd->conf, user, password, pwlen, &uid) < 0) {
		static struct log_limit said;

		log_warnx_limited(&said, 10000, "RESP client: wrong password for user '%.64s'",
				  user ? user : "default");
		resp_err(c, "WRONGPASS invalid username-password pair or user is disabled.");
		return -1;
	}
	u = resp_tenant_find(c->rs, uid);
	if (uid != 0 && u != NULL && u != c->tenant &&
	    u->conns >= (unsigned)pd->conf->resp_max_clients_per_user) {
		resp_err(c,
			 "ERR max number of clients reached for user '%.64s' "
			 "(resp.max_clients_per_user = %lld)",
			 user ? user : "default", (long long)pd->conf->resp_max_clients_per_user);
		resp_close_after_reply(c);
		return -1;
	}
	if (resp_conn_user(c, true, uid) < 0) {
		resp_err(c, "ERR out of memory");
		return -1;
	}
	resp_limits(c);
	return 0;
}

/* RESET: as a new connection (database 0, RESP2, no name, no MULTI; AUTH again if needed). */
void resp_reset(struct resp_conn *c)
{
	struct poold_conf *conf = c->rs->pd->conf;

	resp_queue_clear(c);
	resp_watch_clear(c);
	c->multi = c->multi_dirty = false;
	c->db = 0;
	c->proto = 2;
	c->name[0] = '\0';
	/* Back to the default user (out of memory: to a client that must AUTH). */
	if (resp_conn_user(c, conf->resp_password[0] == '\0' && conf->resp_nusers == 0, 0) < 0)
		resp_conn_user(c, false, 0);
	resp_limits(c);
}

/* A CLIENT INFO / LIST line. */
void resp_client_line(const struct resp_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "id=%llu addr=%s name=%s db=%d multi=%d resp=%d user=%u\n",
		 (unsigned long long)c->id, c->addr, c->name, c->db,
		 c->multi ? (int)c->nqueued : -1, c->proto, (unsigned)c->uid);
}

/*
 * Move a command's arguments out of where they are (the parser, or the
 * commands read ahead) into q.
 */
static int resp_take(struct resp_conn *c, struct resp_queued *from, struct resp_queued *q)
{
	if (from == NULL) { /* the parser's, every argument in a buffer of its own */
		if (resp_parser_keep(&c->p) < 0)
			return -1;
		*q = (struct resp_queued){c->p.have, c->p.argv, c->p.argl, c->p.total};
		c->p.argv = NULL;
		c->p.argl = NULL;
		c->p.have = c->p.cap = 0;
		return 0;
	}
	*q = *from;
	from->argv = NULL;
	from->argl = NULL;
	from->argc = 0;
	return 0;
}

/* Keep a command for EXEC (from the parser when from is NULL). 0, or -1 (a limit: refused). */
static int resp_queue(struct resp_conn *c, struct resp_queued *from)
{
	uint64_t max = (uint64_t)c->rs->pd->conf->resp_max_request;
	uint64_t bytes = from ? from->bytes : c->p.total;
	struct resp_queued *q;

	if (c->queued_bytes + bytes > max || c->nqueued >= RESP_MAX_ARGS)
		return -1;
	q = reallocarray(c->queued, c->nqueued + 1, sizeof(*q));
	if (q == NULL)
		return -1;
	c->queued = q;
	if (resp_take(c, from, &c->queued[c->nqueued]) < 0)
		return -1;
	c->nqueued++;
	c->queued_bytes += bytes;
	return 0;
}

/* "'a' 'b' " of the arguments after the name, up to 128 bytes, for the unknown command error. */
static void resp_args_head(const struct resp_queued *q, char *buf, size_t len)
{
	size_t used = 0;
	long i;

	buf[0] = '\0';
	for (i = 1; i < q->argc && used < 128 && used + 1 < len; i++) {
		int room = (int)(128 - used);
		int n = snprintf(buf + used, len - used, "'%.*s' ", room, q->argv[i]);

		if (n < 0)
			break;
		used = MIN(used + (size_t)n, len - 1);
	}
}

/*
 * The values of other nodes a command reads (each of EXEC's) are here: 1;
 * 0 when they are being fetched (it runs once they are in); -1 when they
 * cannot be had (TRYAGAIN replied).
 */
static int resp_fetched_all(struct resp_conn *c, const struct resp_cmd *cmd,
			    const struct resp_queued *q)
{
	int rc = 0, one;
	size_t i;

	if (strcmp(cmd->name, "exec") == 0 && c->multi && !c->multi_dirty) {
		for (i = 0; i < c->nqueued && rc >= 0; i++) {
			one = resp_remote_fetch(c, resp_cmd_find(c->queued[i].argv[0]),
						c->queued[i].argc, c->queued[i].argv,
						c->queued[i].argl);
			rc = one < 0 ? one : rc | one;
		}
	} else {
		rc = resp_remote_fetch(c, cmd, q->argc, q->argv, q->argl);
	}
	if (rc > 0) {
		c->fetching = true;
		return 0;
	}
	if (rc == 0)
		return 1;
	if (c->overflow == NULL) /* (else the values would not fit its reply: c ends) */
		resp_err(c, "TRYAGAIN the value's lender (node %u) did not answer: %s",
			 (unsigned)c->lost_node, err_str(rc));
	return -1;
}

/*
 * Run one complete command (the parser's, or one read ahead): looked up,
 * its arity checked, AUTH, MULTI's queue, the values it reads from other
 * nodes. false when it waits for those (it runs again once they are in).
 * A command that started writes to other nodes gets a segment: its
 * replies are held until they are in (resp_resume()).
 */
static bool resp_command_run(struct resp_conn *c, struct resp_queued *q, struct resp_queued *from)
{
	char **a = q->argv, args[192];
	long n = q->argc;
	const struct resp_cmd *cmd;

	cmd = resp_cmd_find(a[0]);
	if (cmd == NULL) {
		c->rs->commands++;
		resp_args_head(q, args, sizeof(args));
		resp_err(c, "ERR unknown command '%.128s', with args beginning with: %s", a[0],
			 args);
		c->multi_dirty |= c->multi;
		return true;
	}
	if ((cmd->arity > 0 && n != cmd->arity) || (cmd->arity < 0 && n < -cmd->arity)) {
		c->rs->commands++;
		resp_stat_rejected(cmd);
		resp_err(c, "ERR wrong number of arguments for '%s' command", cmd->name);
		c->multi_dirty |= c->multi;
		return true;
	}
	if (!c->authed && !(cmd->flags & RESP_CMD_NOAUTH)) {
		c->rs->commands++;
		resp_stat_rejected(cmd);
		resp_err(c, "NOAUTH Authentication required.");
		c->multi_dirty |= c->multi;
		return true;
	}
	if (c->multi && (cmd->flags & RESP_CMD_NOMULTI)) {
		c->rs->commands++;
		resp_stat_rejected(cmd);
		resp_err(c, "ERR Command not allowed inside a transaction");
		c->multi_dirty = true;
		return true;
	}
	if (c->multi && !(cmd->flags & RESP_CMD_TXN)) {
		c->rs->commands++;
		if (resp_queue(c, from) < 0) {
			resp_err(c,
				 "ERR the commands queued in MULTI would exceed resp.max_request");
			c->multi_dirty = true;
			return true;
		}
		resp_out(c, "+QUEUED\r\n");
		return true;
	}
	if (resp_sharded(c->rs->pd) &&
	    ((cmd->flags & (RESP_CMD_KEYS | RESP_CMD_COORD)) || strcmp(cmd->name, "exec") == 0)) {
		switch (resp_shard_route(c, cmd, q)) {
		case RESP_SHARD_WAIT:
			return false;
		case RESP_SHARD_DONE:
			c->rs->commands++;
			return true;
		}
	}
	switch (resp_fetched_all(c, cmd, q)) {
	case 0:
		return false;
	case -1:
		c->rs->commands++;
		return true;
	}
	c->rs->commands++;
	resp_cmd_run(c, cmd, n, a, q->argl);
	return true;
}

/*
 * Run a command (resp_command_run()). Where another node lends, its
 * replies are built apart: if it started writes there, they are held as a
 * segment of their own until those are in (resp_release_replies()); else
 * they follow what is already out or held.
 */
static bool resp_command(struct resp_conn *c, struct resp_queued *q, struct resp_queued *from)
{
	uint64_t puts = c->puts;
	size_t at;
	bool ran;

	if (!resp_remote_lenders(c->rs->pd) ||
	    (c->scratch == NULL && (c->scratch = evbuffer_new()) == NULL) ||
	    (c->held == NULL && (c->held = evbuffer_new()) == NULL))
		/* (without memory, nothing is written there either) */
		return resp_command_run(c, q, from);
	c->scratch_on = true;
	ran = resp_command_run(c, q, from);
	c->scratch_on = false;
	if (c->puts == puts) {
		evbuffer_add_buffer(resp_output(c), c->scratch);
		return ran;
	}
	at = c->nsegs > 0 ? evbuffer_get_length(c->held) : 0;
	evbuffer_add_buffer(c->held, c->scratch);
	c->segs[c->nsegs++] = (struct resp_seg){at, evbuffer_get_length(c->held), 0, 0};
	return ran;
}

/*
 * Whether the next command, q, may run now: nothing is being fetched, and
 * no write is in flight unless q is a blind write, whose reply depends on
 * nothing stored, with room for its segment.
 */
static bool resp_may_run(struct resp_conn *c, const struct resp_queued *q)
{
	const struct resp_cmd *cmd;

	if (c->fetching)
		return false;
	if (c->inflight == 0)
		return true;
	cmd = resp_cmd_find(q->argv[0]);
	return cmd != NULL && c->nsegs < RESP_SEGS && !c->multi && c->authed &&
	       resp_blind_write(cmd, q->argc, q->argv) &&
	       c->remote_bytes < (uint64_t)c->rs->pd->conf->resp_max_request;
}

/*
 * Keep the parser's command to run later, in order; while one waits for
 * values, fetch what this one reads too, unless an earlier one may change
 * what it reads (SELECT, AUTH, MULTI...): then read no more.
 */
static void resp_read_ahead(struct resp_conn *c)
{
	struct resp_queued *q = &c->ahead[c->nahead];
	const struct resp_cmd *cmd;

	if (resp_take(c, NULL, q) < 0) {
		resp_fatal(c, "out of memory");
		return;
	}
	c->nahead++;
	c->ahead_bytes += q->bytes;
	cmd = resp_cmd_find(q->argv[0]);
	if (cmd == NULL || !(cmd->flags & RESP_CMD_KEYS) || (cmd->flags & RESP_CMD_TXN) ||
	    !c->authed || c->multi) {
		c->ahead_stop = true;
		return;
	}
	if (c->fetching && !c->ahead_stop)
		resp_remote_fetch(c, cmd, q->argc, q->argv, q->argl);
}

/* The biggest connection of u (of all with u NULL); c itself on a tie. */
static struct resp_conn *resp_biggest(struct resp *rs, struct resp_conn *c,
				      const struct resp_tenant *u)
{
	struct resp_conn *o, *big = c;

	TAILQ_FOREACH(o, &rs->conns, entry)
		if ((u == NULL || o->tenant == u) && o->charged > big->charged)
			big = o;
	return big;
}

/*
 * Count c's buffers after they changed; while its user's or all
 * connections' buffers pass their bound, close the biggest connection in
 * it. false when that was c.
 */
static bool resp_shed(struct resp_conn *c)
{
	struct resp *rs = c->rs;
	const struct poold_conf *conf = rs->pd->conf;
	struct resp_conn *big;
	const struct resp_tenant *u;
	const char *limit;

	resp_charge(c);
	for (;;) {
		static struct log_limit said[2]; /* per user, in all */

		u = c->tenant;
		if (u != NULL && u->bytes > (uint64_t)conf->resp_max_buffers_per_user) {
			limit = "resp.max_buffers_per_user";
		} else if (rs->bytes > (uint64_t)conf->resp_max_buffers) {
			limit = "resp.max_buffers";
			u = NULL;
		} else {
			return true;
		}
		big = resp_biggest(rs, c, u);
		log_warnx_limited(&said[u == NULL], 10000,
				  "RESP client %s (uid %u): its %llu bytes of "
				  "buffers are the most over %s: disconnected",
				  big->addr, (unsigned)big->uid, (unsigned long long)big->charged,
				  limit);
		resp_conn_free(big);
		if (big == c)
			return false;
	}
}

/*
 * Write the replies of the commands just run. When nothing is queued
 * before them they go to the socket at once, as Redis writes before it
 * sleeps: no write event to arm and disarm (two epoll_ctl() calls) for each
 * batch of a pipeline. What the socket does not take waits in the
 * bufferevent's output, written when it can be.
 */
static void resp_flush(struct resp_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (evbuffer_get_length(c->out) == 0)
		return;
	/* A failed write (the client went) leaves the bytes: the bufferevent sees the error. */
	if (evbuffer_get_length(out) == 0)
		evbuffer_write(c->out, bufferevent_getfd(c->bev));
	evbuffer_add_buffer(out, c->out);
}

/*
 * libevent 2.1 reads at most 4 KiB a call (EVBUFFER_MAX_READ) and calls
 * resp_read_cb() after each: a 256 KiB value took 64 reads and as many
 * parser calls, and was copied once more from the input buffer. While the
 * parser waits for the rest of a big argument, read it here, straight into
 * the argument, RESP_IO_CHUNK a call (the parser counted the argument
 * against the limits when its header came). true when it read something;
 * an end or error is left for the bufferevent to see on its next read.
 */
static bool resp_fill(struct resp_conn *c, struct evbuffer *in)
{
	size_t len;
	char *dst;
	ssize_t got;

	if (evbuffer_get_length(in) > 0 || (dst = resp_parser_room(&c->p, &len)) == NULL)
		return false;
	got = read(bufferevent_getfd(c->bev), dst, MIN(len, RESP_IO_CHUNK));
	if (got <= 0)
		return false;
	resp_parser_took(&c->p, (size_t)got);
	return true;
}

/*
 * Before the commands at the front of in are parsed one by one, bring in
 * what looking up their keys will touch, all at once (kv_local_prefetch()):
 * in a pipeline of small GETs and SETs those cache misses were most of a
 * command's time.
 */
static void resp_prefetch(struct resp_conn *c, struct evbuffer *in)
{
	const char *keys[KV_PREFETCH_MAX];
	size_t klens[KV_PREFETCH_MAX], n;
	struct evbuffer_iovec v;
	char ns[32];

	if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
		return;
	n = resp_peek_keys(v.iov_base, v.iov_len, keys, klens, KV_PREFETCH_MAX);
	c->prefetch_left = n > 0 ? (unsigned)n : KV_PREFETCH_MAX;
	if (n < 2)
		return; /* nothing to overlap */
	resp_db_name(c, c->db, ns, sizeof(ns));
	kv_local_prefetch(c->rs->pd, c->uid, ns, keys, klens, n);
}

/*
 * Serve the commands that came. A client that leaves its replies unread is
 * not read from either (its commands wait in the kernel) until it reads
 * them; one whose unread replies pass resp.max_output, or whose reply
 * would pass a bound, is disconnected. While a command waits for values of
 * other nodes, the commands after it are read ahead (RESP_AHEAD), their
 * values fetched meanwhile, and run in order once it ran.
 */
static void resp_read_cb(struct bufferevent *bev, void *arg)
{
	struct resp_conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(bev);
	struct resp_queued cur;
	const char *err;
	bool from_ahead;
	unsigned fills = 0;
	int rc = 1;

	while (!c->closing) {
		from_ahead = c->nahead > 0 && resp_may_run(c, &c->ahead[0]);
		if (from_ahead) {
			cur = c->ahead[0];
		} else {
			if (resp_out_bytes(c) > RESP_OUTPUT_PAUSE)
				resp_flush(c);
			if (resp_out_bytes(c) > RESP_OUTPUT_PAUSE || c->ahead_stop ||
			    c->nahead == RESP_AHEAD) {
				/* Again from resp_write_cb(), or resp_resume(). */
				bufferevent_disable(bev, EV_READ);
				break;
			}
			if (c->prefetch_left == 0 && c->authed && c->p.nargs == 0)
				resp_prefetch(c, bufferevent_get_input(bev));
			else if (c->prefetch_left > 0)
				c->prefetch_left--;
			rc = resp_parse(&c->p, bufferevent_get_input(bev), &err);
			if (rc < 0)
				resp_fatal(c, err);
			if (rc > 0)
				cur = (struct resp_queued){c->p.have, c->p.argv, c->p.argl,
							   c->p.total};
		}
		if (rc > 0 || from_ahead) {
			bool ran = false;

			if (!from_ahead && (c->nahead > 0 || !resp_may_run(c, &cur))) {
				resp_read_ahead(c); /* after those read before it */
			} else {
				ran = resp_command(c, &cur, from_ahead ? &c->ahead[0] : NULL);
				/* It runs first once its values are in. */
				if (!ran && !from_ahead)
					resp_read_ahead(c);
			}
			/* The values fetched for the commands read ahead served them all. */
			if (ran && c->nahead == (from_ahead ? 1u : 0u))
				resp_remote_clear(c);
			if (ran && from_ahead) {
				c->ahead_bytes -= c->ahead[0].bytes;
				resp_args_free(&c->ahead[0]);
				memmove(&c->ahead[0], &c->ahead[1],
					--c->nahead * sizeof(c->ahead[0]));
				if (c->nahead == 0)
					c->ahead_stop = false;
			}
			if (!from_ahead)
				resp_parser_reset(&c->p);
		}
		if (c->overflow != NULL ||
		    resp_out_bytes(c) > (size_t)c->rs->pd->conf->resp_max_output) {
			static struct log_limit said;

			log_warnx_limited(&said, 10000,
					  "RESP client %s: %zu bytes of replies unread%s, "
					  "over %s: disconnected",
					  c->addr, resp_out_bytes(c),
					  c->overflow ? " and a reply that would pass it" : "",
					  c->overflow ? c->overflow : "resp.max_output");
			resp_conn_free(c);
			return;
		}
		/* What it announced counts before its bytes come. */
		if (!resp_shed(c))
			return;
		/* (A few MiB a callback: a client sending a huge value does not hold the loop.) */
		if (!from_ahead && rc == 0 && fills < RESP_FILLS &&
		    resp_fill(c, bufferevent_get_input(bev))) {
			fills++;
			continue;
		}
		if (!from_ahead && rc <= 0)
			break;
	}
	if (c->nahead == 0 && c->inflight == 0)
		c->lost_err = 0; /* a run of commands is over: a node that failed is tried again */
	if (c->batch_wanted)	 /* (with what was read after it) */
		resp_shard_flush(c);
	resp_flush(c);
	if (c->closing && c->inflight == 0 && evbuffer_get_length(out) == 0)
		resp_conn_free(c);
}

/*
 * The replies held for commands whose writes were in flight go out; a
 * command whose write failed gets TRYAGAIN instead of its replies.
 */
static void resp_release_replies(struct resp_conn *c)
{
	struct evbuffer *out = c->out;
	size_t pos = 0;
	unsigned i;

	for (i = 0; i < c->nsegs; i++) {
		struct resp_seg *g = &c->segs[i];

		evbuffer_remove_buffer(c->held, out, g->from - pos);
		if (g->err == 0) {
			evbuffer_remove_buffer(c->held, out, g->to - g->from);
		} else {
			evbuffer_drain(c->held, g->to - g->from);
			evbuffer_add_printf(out,
					    "-TRYAGAIN the value's lender (node %u) did not "
					    "answer: %s\r\n",
					    (unsigned)g->node, err_str(g->err));
		}
		pos = g->to;
	}
	evbuffer_add_buffer(out, c->held); /* what followed them */
	c->nsegs = 0;
}

/*
 * What c waited for is in (resp_remote_settled()): the replies held go out,
 * and the commands read meanwhile run (the first of them again if it waited
 * for values).
 */
void resp_resume(struct resp_conn *c)
{
	c->fetching = false;
	if (c->nsegs > 0)
		resp_release_replies(c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	resp_read_cb(c->bev, c);
}

static void resp_write_cb(struct bufferevent *bev, void *arg)
{
	struct resp_conn *c = arg;

	if (c->closing && c->inflight == 0) {
		resp_conn_free(c);
		return;
	}
	resp_charge(c);
	/* Its replies are out: serve what it sent meanwhile (unless it waits for another node). */
	if (!(bufferevent_get_enabled(bev) & EV_READ) && c->inflight == 0) {
		bufferevent_enable(bev, EV_READ);
		resp_read_cb(bev, c);
	}
}

static void resp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		resp_conn_free(arg);
}

/* "host:port" of a client's address. */
static void resp_addr(const struct sockaddr *sa, int salen, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	(void)salen;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, len, "%s:%u", host, port);
}

static void resp_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			int salen, void *arg)
{
	struct resp *rs = arg;
	struct resp_conn *c;

	if (rs->nconns >= (unsigned)rs->pd->conf->resp_max_clients) {
		static const char msg[] = "-ERR max number of clients reached\r\n";

		rs->refused++;
		accept_refuse(fd, msg, sizeof(msg) - 1);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->out = evbuffer_new()) == NULL ||
	    (c->bev = bufferevent_socket_new(rs->pd->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		if (c != NULL && c->out != NULL)
			evbuffer_free(c->out);
		free(c);
		evutil_closesocket(fd);
		return;
	}
	{
		int one = 1; /* replies are small writes: no Nagle delay */

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	/* libevent writes 16 KiB a call by default: a 256 KiB reply took 16. */
	bufferevent_set_max_single_write(c->bev, RESP_IO_CHUNK);
	c->rs = rs;
	/* RESP sessions are numbered apart from control sessions. */
	c->session = (UINT64_C(1) << 62) | ++rs->next_session;
	c->id = rs->next_session;
	c->proto = 2;
	LIST_INIT(&c->remote);
	resp_addr(sa, salen, c->addr, sizeof(c->addr));
	/* Nothing to AUTH with: everyone is the default user, root. */
	if (resp_conn_user(c,
			   rs->pd->conf->resp_password[0] == '\0' && rs->pd->conf->resp_nusers == 0,
			   0) < 0) {
		bufferevent_free(c->bev);
		evbuffer_free(c->out);
		free(c);
		return;
	}
	resp_parser_init(&c->p, RESP_UNAUTH_ARGS, RESP_UNAUTH_BULK,
			 RESP_UNAUTH_ARGS * RESP_UNAUTH_BULK, true);
	resp_place_init(c);
	resp_limits(c);
	TAILQ_INSERT_TAIL(&rs->conns, c, entry);
	rs->nconns++;
	bufferevent_setcb(c->bev, resp_read_cb, resp_write_cb, resp_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* Start the RESP endpoint if resp.listen is set (at a node, resp-relay.c relays it). */
int resp_open(struct poold *pd)
{
	struct resp *rs;
	int rc;

	if (pd->conf->resp_listen[0] == '\0')
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (rs == NULL)
		return -ENOMEM;
	rs->pd = pd;
	TAILQ_INIT(&rs->conns);
	LIST_INIT(&rs->tenants);
	rc = accept_listen(pd, "resp.listen", pd->conf->resp_listen, 128, resp_accept, rs,
			   &rs->listener);
	if (rc < 0) {
		free(rs);
		return rc;
	}
	pd->resp = rs;
	log_info("RESP endpoint on %s%s", pd->conf->resp_listen,
		 pd->conf->resp_password[0] ? " (AUTH required)" : "");
	return 0;
}

/* What the endpoint served; false without one. */
bool resp_stats(const struct poold *pd, struct resp_stats *ret)
{
	const struct resp *rs = pd->resp;

	if (rs == NULL)
		return false;
	*ret = (struct resp_stats){
	    .connections = rs->nconns, .refused = rs->refused, .commands = rs->commands};
	return true;
}

/* Where the RESP endpoint is bound, as ip:port (for nodes that relay to it), or -ENOENT. */
int resp_endpoint(struct poold *pd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);

	if (pd->resp == NULL || getsockname(evconnlistener_get_fd(pd->resp->listener),
					    (struct sockaddr *)&ss, &sslen) < 0)
		return -ENOENT;
	addr_format(&ss, buf, len);
	return 0;
}

/* Stop the RESP endpoint. */
void resp_close(struct poold *pd)
{
	struct resp *rs = pd->resp;
	struct resp_conn *c;

	if (rs == NULL)
		return;
	while ((c = TAILQ_FIRST(&rs->conns)) != NULL)
		resp_conn_free(c);
	resp_remote_close();
	accept_close(rs->listener);
	free(rs);
	pd->resp = NULL;
}

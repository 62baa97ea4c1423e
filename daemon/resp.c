/*
 * daemon/resp.c - a Redis-protocol (RESP2) endpoint to the KV cache, so
 * redis-cli, redis-benchmark, hiredis and tools that take a Redis URL can use
 * the pool unchanged.
 *
 * Served by the coordinator on resp.listen. Database N (SELECT N, 0-15) is
 * the KV namespace "redisN", made on first use with resp.capacity and kept
 * in this node's lend pool, so every command completes in the event loop
 * with plain memory copies; libpool clients on any node reach the same
 * namespace one-sided. Requests are RESP arrays of bulk strings; anything
 * else, or a bulk or array over the limits, gets an error and the
 * connection is closed. With resp.password or resp.users set, AUTH comes
 * first; a user of resp.users acts as its uid (respauth.c): its databases
 * are namespaces "redisN-uUID" of its own, mode 0600, and its values count
 * against its quota.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/poold.h"
#include "daemon/respparse.h"
#include "libpool/libpool.h"

#define RESP_MAX_BULK (POOL_KV_VALUE_MAX + 1024)
#define RESP_DBS 16
/* What a client that did not AUTH yet may send in one command, as Redis allows it. */
#define RESP_UNAUTH_ARGS 10
#define RESP_UNAUTH_BULK 16384
/* Unread replies past which poold reads no more commands from a client, until it reads. */
#define RESP_OUTPUT_PAUSE (1u << 20)

struct resp_conn {
	TAILQ_ENTRY(resp_conn) entry;
	struct resp *rs;
	struct bufferevent *bev;
	uint64_t session;
	int db;
	uint32_t uid; /* who it acts as: root, or the uid of its resp.users user */
	bool authed;
	bool closing; /* after a protocol error or QUIT: ends once the output is out */
	struct resp_parser p; /* the command being read */
};

struct resp {
	struct poold *pd;
	struct evconnlistener *listener;
	TAILQ_HEAD(, resp_conn) conns;
	unsigned nconns;
	uint64_t next_session;
	uint64_t commands;
};

static void resp_conn_free(struct resp_conn *c)
{
	struct poold *pd = c->rs->pd;

	TAILQ_REMOVE(&c->rs->conns, c, entry);
	c->rs->nconns--;
	kv_session_end(pd, pd->node_id, c->session, false); /* its pins and reservations */
	resp_parser_reset(&c->p);
	bufferevent_free(c->bev);
	free(c);
}

/* What the client may send in one command: little until it passed AUTH. */
static void resp_limits(struct resp_conn *c)
{
	if (c->authed)
		resp_parser_limit(&c->p, RESP_MAX_ARGS, RESP_MAX_BULK,
				  (uint64_t)c->rs->pd->conf->resp_max_request, false);
}

static void resp_out(struct resp_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void resp_out(struct resp_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	evbuffer_add_vprintf(bufferevent_get_output(c->bev), fmt, ap);
	va_end(ap);
}

static void resp_bulk_to(struct evbuffer *out, const void *data, size_t len)
{
	evbuffer_add_printf(out, "$%zu\r\n", len);
	evbuffer_add(out, data, len);
	evbuffer_add(out, "\r\n", 2);
}

static void resp_bulk(struct resp_conn *c, const void *data, size_t len)
{
	resp_bulk_to(bufferevent_get_output(c->bev), data, len);
}

/* An error reply that also ends the connection (protocol errors). */
static void resp_fatal(struct resp_conn *c, const char *msg)
{
	log_debug("RESP client: %s", msg);
	resp_out(c, "-ERR Protocol error: %s\r\n", msg);
	bufferevent_disable(c->bev, EV_READ);
	c->closing = true;
}

/* The namespace of database db, for the client's uid. */
static void resp_db_name(const struct resp_conn *c, int db, char *ns, size_t len)
{
	if (c->uid == 0)
		snprintf(ns, len, "redis%d", db);
	else
		snprintf(ns, len, "redis%d-u%u", db, (unsigned)c->uid);
}

static void resp_db(const struct resp_conn *c, char *ns, size_t len)
{
	resp_db_name(c, c->db, ns, len);
}

/* GET one key: copy the value out of this node's arena into the reply. */
static void resp_get_one(struct resp_conn *c, const char *ns, const char *key, size_t klen)
{
	struct poold *pd = c->rs->pd;
	struct kv_where w;
	int rc;

	rc = kv_local_op(pd, c->session, c->uid, ns, "lookup", (const uint8_t *)key, klen, 0, &w);
	if (rc != 0 || w.arena >= pd->narenas || w.node != pd->node_id) {
		if (rc == 0)
			kv_local_op(pd, c->session, c->uid, ns, "release", (const uint8_t *)key, klen,
				    w.version, NULL);
		resp_out(c, "$-1\r\n");
		return;
	}
	resp_bulk(c, (char *)pd->arenas[w.arena].base + w.off, w.len);
	kv_local_op(pd, c->session, c->uid, ns, "release", (const uint8_t *)key, klen, w.version, NULL);
}

/* SET one key: reserve, copy into this node's arena, commit. */
static int resp_set_one(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			const char *val, size_t vlen)
{
	struct poold *pd = c->rs->pd;
	struct kv_where w;
	int rc;

	if (vlen == 0)
		return -EINVAL;
	rc = kv_local_op(pd, c->session, c->uid, ns, "reserve", (const uint8_t *)key, klen, vlen, &w);
	if (rc < 0)
		return rc;
	if (w.node != pd->node_id || w.arena >= pd->narenas)
		return -EREMOTE;
	memcpy((char *)pd->arenas[w.arena].base + w.off, val, vlen);
	return kv_local_op(pd, c->session, c->uid, ns, "commit", (const uint8_t *)key, klen, w.version,
			   NULL);
}

static void resp_scan_key(void *arg, const uint8_t *key, size_t klen)
{
	resp_bulk_to(arg, key, klen);
}

static void resp_info(struct resp_conn *c)
{
	struct poold *pd = c->rs->pd;
	char text[1024], ns[32];
	int n, db;

	n = snprintf(text, sizeof(text),
		     "# Server\r\nredis_version:7.0.0\r\npool_version:%s\r\nuptime_in_seconds:%llu\r\n"
		     "# Clients\r\nconnected_clients:%u\r\n# Stats\r\ntotal_commands_processed:%llu\r\n"
		     "# Keyspace\r\n",
		     PACKAGE_VERSION, (unsigned long long)((units_now_ms() - pd->start_ms) / 1000),
		     c->rs->nconns, (unsigned long long)c->rs->commands);
	for (db = 0; db < RESP_DBS && n > 0 && (size_t)n < sizeof(text); db++) {
		uint64_t keys;

		resp_db_name(c, db, ns, sizeof(ns));
		keys = kv_local_size(pd, ns);
		if (keys > 0)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "db%d:keys=%llu\r\n", db,
				      (unsigned long long)keys);
	}
	resp_bulk(c, text, strlen(text));
}

/* Connections authenticated as uid. */
static unsigned resp_user_conns(const struct resp *rs, uint32_t uid)
{
	const struct resp_conn *c;
	unsigned n = 0;

	TAILQ_FOREACH(c, &rs->conns, entry)
		n += c->authed && c->uid == uid;
	return n;
}

/* Run one complete command. */
static void resp_command(struct resp_conn *c)
{
	struct resp *rs = c->rs;
	struct poold *pd = rs->pd;
	char **a = c->p.argv, ns[32];
	long n = c->p.nargs, i;
	int rc;

	rs->commands++;
	resp_db(c, ns, sizeof(ns));
	if (strcasecmp(a[0], "AUTH") == 0) {
		uint32_t uid;

		if (n != 2 && n != 3)
			resp_out(c, "-ERR wrong number of arguments for 'auth' command\r\n");
		else if (n == 2 && pd->conf->resp_password[0] == '\0' && pd->conf->resp_nusers == 0)
			resp_out(c, "-ERR AUTH <password> called without any password configured "
				    "for the default user. Are you sure your configuration is "
				    "correct?\r\n");
		else if (resp_auth(pd->conf, n == 3 ? a[1] : NULL, a[n - 1], c->p.argl[n - 1],
				   &uid) == 0) {
			if (uid != 0 && uid != c->uid &&
			    resp_user_conns(rs, uid) >= (unsigned)pd->conf->resp_max_clients_per_user) {
				resp_out(c, "-ERR max number of clients reached for user '%.64s' "
					    "(resp.max_clients_per_user = %lld)\r\n", a[1],
					 (long long)pd->conf->resp_max_clients_per_user);
				bufferevent_disable(c->bev, EV_READ);
				c->closing = true;
				return;
			}
			c->authed = true;
			c->uid = uid;
			resp_limits(c);
			resp_out(c, "+OK\r\n");
		} else {
			static struct log_limit said;

			log_warnx_limited(&said, 10000, "RESP client: wrong password for user '%.64s'",
					  n == 3 ? a[1] : "default");
			resp_out(c, "-WRONGPASS invalid username-password pair or user is "
				    "disabled.\r\n");
		}
		return;
	}
	if (strcasecmp(a[0], "QUIT") == 0) {
		resp_out(c, "+OK\r\n");
		bufferevent_disable(c->bev, EV_READ);
		c->closing = true;
		return;
	}
	if (!c->authed) {
		resp_out(c, "-NOAUTH Authentication required.\r\n");
		return;
	}
	if (strcasecmp(a[0], "PING") == 0) {
		if (n > 1)
			resp_bulk(c, a[1], c->p.argl[1]);
		else
			resp_out(c, "+PONG\r\n");
		return;
	}
	if (strcasecmp(a[0], "SELECT") == 0 && n == 2) {
		char *end;
		long db = strtol(a[1], &end, 10);

		if (*end != '\0' || db < 0 || db >= RESP_DBS) {
			resp_out(c, "-ERR DB index is out of range\r\n");
			return;
		}
		c->db = (int)db;
		resp_out(c, "+OK\r\n");
		return;
	}
	if (strcasecmp(a[0], "COMMAND") == 0 || strcasecmp(a[0], "CONFIG") == 0) {
		resp_out(c, "*0\r\n"); /* what redis-cli and redis-benchmark ask first */
		return;
	}
	if (strcasecmp(a[0], "INFO") == 0) {
		resp_info(c);
		return;
	}
	/* The rest works on the selected database. */
	rc = kv_local_ensure(pd, ns, (uint64_t)pd->conf->resp_capacity, c->uid);
	if (rc < 0) {
		resp_out(c, "-ERR cannot open database: %s\r\n", err_str(rc));
		return;
	}
	if (strcasecmp(a[0], "GET") == 0 && n == 2) {
		resp_get_one(c, ns, a[1], c->p.argl[1]);
	} else if (strcasecmp(a[0], "MGET") == 0 && n >= 2) {
		resp_out(c, "*%ld\r\n", n - 1);
		for (i = 1; i < n; i++)
			resp_get_one(c, ns, a[i], c->p.argl[i]);
	} else if ((strcasecmp(a[0], "SET") == 0 && n == 3) ||
		   (strcasecmp(a[0], "MSET") == 0 && n >= 3 && n % 2 == 1)) {
		for (i = 1; i + 1 < n; i += 2) {
			rc = resp_set_one(c, ns, a[i], c->p.argl[i], a[i + 1], c->p.argl[i + 1]);
			if (rc < 0)
				break;
		}
		if (rc < 0)
			resp_out(c, "-ERR %s\r\n",
				 rc == -EINVAL ? "empty or oversized value or key" : err_str(rc));
		else
			resp_out(c, "+OK\r\n");
	} else if ((strcasecmp(a[0], "DEL") == 0 || strcasecmp(a[0], "EXISTS") == 0) && n >= 2) {
		long count = 0;

		for (i = 1; i < n; i++)
			count += kv_local_op(pd, c->session, c->uid, ns,
					     a[0][0] == 'D' || a[0][0] == 'd' ? "remove" : "exists",
					     (const uint8_t *)a[i], c->p.argl[i], 0, NULL) == 0;
		resp_out(c, ":%ld\r\n", count);
	} else if (strcasecmp(a[0], "DBSIZE") == 0 && n == 1) {
		resp_out(c, ":%llu\r\n", (unsigned long long)kv_local_size(pd, ns));
	} else if (strcasecmp(a[0], "FLUSHDB") == 0) {
		kv_local_flush(pd, ns, c->uid);
		resp_out(c, "+OK\r\n");
	} else if (strcasecmp(a[0], "FLUSHALL") == 0) {
		int db;

		for (db = 0; db < RESP_DBS; db++) { /* the client's own databases */
			resp_db_name(c, db, ns, sizeof(ns));
			kv_local_flush(pd, ns, c->uid);
		}
		resp_out(c, "+OK\r\n");
	} else if (strcasecmp(a[0], "SCAN") == 0 && n >= 2) {
		unsigned long long cursor = strtoull(a[1], NULL, 10);
		struct evbuffer *body = evbuffer_new(), *out = bufferevent_get_output(c->bev);
		size_t count = 10, keys;
		uint64_t next;

		for (i = 2; i + 1 < n; i += 2) {
			if (strcasecmp(a[i], "COUNT") == 0)
				count = (size_t)strtoull(a[i + 1], NULL, 10);
			else {
				resp_out(c, "-ERR SCAN supports COUNT only\r\n");
				evbuffer_free(body);
				return;
			}
		}
		if (body == NULL)
			return;
		/* Keys go to a side buffer first: the array length is known only after. */
		keys = kv_local_scan(pd, ns, cursor, count ? count : 10, resp_scan_key, body, &next);
		evbuffer_add_printf(out, "*2\r\n$%d\r\n%llu\r\n*%zu\r\n",
				    snprintf(NULL, 0, "%llu", (unsigned long long)next),
				    (unsigned long long)next, keys);
		evbuffer_add_buffer(out, body);
		evbuffer_free(body);
	} else {
		resp_out(c, "-ERR unknown command or wrong number of arguments for '%.40s'\r\n",
			 a[0]);
	}
}

/*
 * Serve the commands that came. A client that leaves its replies unread is
 * not read from either (its commands wait in the kernel) until it reads
 * them; one whose unread replies pass resp.max_output is disconnected.
 */
static void resp_read_cb(struct bufferevent *bev, void *arg)
{
	struct resp_conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(bev);
	const char *err;
	int rc;

	while (!c->closing) {
		if (evbuffer_get_length(out) > RESP_OUTPUT_PAUSE) {
			bufferevent_disable(bev, EV_READ); /* again from resp_write_cb() */
			break;
		}
		rc = resp_parse(&c->p, bufferevent_get_input(bev), &err);
		if (rc < 0)
			resp_fatal(c, err);
		if (rc <= 0)
			break;
		resp_command(c);
		resp_parser_reset(&c->p);
		if (evbuffer_get_length(out) > (size_t)c->rs->pd->conf->resp_max_output) {
			static struct log_limit said;

			log_warnx_limited(&said, 10000, "RESP client: %zu bytes of replies unread, "
					  "over resp.max_output: disconnected", evbuffer_get_length(out));
			resp_conn_free(c);
			return;
		}
	}
	if (c->closing && evbuffer_get_length(out) == 0)
		resp_conn_free(c);
}

static void resp_write_cb(struct bufferevent *bev, void *arg)
{
	struct resp_conn *c = arg;

	if (c->closing) {
		resp_conn_free(c);
		return;
	}
	/* Its replies are out: serve what it sent meanwhile. */
	if (!(bufferevent_get_enabled(bev) & EV_READ)) {
		bufferevent_enable(bev, EV_READ);
		resp_read_cb(bev, c);
	}
}

static void resp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		resp_conn_free(arg);
}

static void resp_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			int salen, void *arg)
{
	struct resp *rs = arg;
	struct resp_conn *c;

	if (rs->nconns >= (unsigned)rs->pd->conf->resp_max_clients) {
		static const char msg[] = "-ERR max number of clients reached\r\n";

		accept_refuse(fd, msg, sizeof(msg) - 1);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->bev = bufferevent_socket_new(rs->pd->base, fd,
							  BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(c);
		evutil_closesocket(fd);
		return;
	}
	{
		int one = 1; /* replies are small writes: no Nagle delay */

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->rs = rs;
	/* RESP sessions are numbered apart from control sessions. */
	c->session = (UINT64_C(1) << 62) | ++rs->next_session;
	/* Nothing to AUTH with: everyone is the default user, root. */
	c->authed = rs->pd->conf->resp_password[0] == '\0' && rs->pd->conf->resp_nusers == 0;
	resp_parser_init(&c->p, RESP_UNAUTH_ARGS, RESP_UNAUTH_BULK,
			 RESP_UNAUTH_ARGS * RESP_UNAUTH_BULK, true);
	resp_limits(c);
	TAILQ_INSERT_TAIL(&rs->conns, c, entry);
	rs->nconns++;
	bufferevent_setcb(c->bev, resp_read_cb, resp_write_cb, resp_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* Start the RESP endpoint if resp.listen is set (coordinator only). */
int resp_open(struct poold *pd)
{
	struct sockaddr_storage ss;
	struct resp *rs;
	unsigned len;
	int rc;

	if (pd->conf->resp_listen[0] == '\0')
		return 0;
	rc = addr_parse(pd->conf->resp_listen, &ss, &len);
	if (rc < 0) {
		log_warnx("resp.listen: cannot resolve '%s'", pd->conf->resp_listen);
		return rc;
	}
	rs = calloc(1, sizeof(*rs));
	if (rs == NULL)
		return -ENOMEM;
	rs->pd = pd;
	TAILQ_INIT(&rs->conns);
	rs->listener = evconnlistener_new_bind(pd->base, resp_accept, rs,
					       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
						       LEV_OPT_CLOSE_ON_EXEC,
					       128, (struct sockaddr *)&ss, (int)len);
	if (rs->listener == NULL) {
		log_warn("resp.listen: cannot listen on %s", pd->conf->resp_listen);
		free(rs);
		return -EADDRINUSE;
	}
	if (accept_guard(pd, rs->listener, "resp.listen") < 0) {
		evconnlistener_free(rs->listener);
		free(rs);
		return -ENOMEM;
	}
	pd->resp = rs;
	log_info("RESP endpoint on %s%s", pd->conf->resp_listen,
		 pd->conf->resp_password[0] ? " (AUTH required)" : "");
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
	accept_unguard(rs->listener);
	evconnlistener_free(rs->listener);
	free(rs);
	pd->resp = NULL;
}

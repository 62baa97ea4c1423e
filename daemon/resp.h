/*
 * daemon/resp.h - what the Redis-protocol endpoint's files share: a
 * connection, the replies (RESP2, or RESP3 after HELLO 3), and the command
 * tables (respkeys.c, respconn.c) that resp.c dispatches to.
 */
#ifndef POOLD_RESP_H
#define POOLD_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/util.h>

#include "daemon/respparse.h"

#define RESP_DBS 16
#define RESP_ERR_INT "ERR value is not an integer or out of range"
#define RESP_ERR_SYNTAX "ERR syntax error"
#define RESP_NAME_MAX 64 /* of a connection's CLIENT SETNAME */

struct evbuffer;
struct poold;
struct resp;

/* A command held for EXEC: its arguments, taken from the parser. */
struct resp_queued {
	long argc;
	char **argv;
	size_t *argl;
};

/*
 * The connections authenticated as one uid, and the bytes of their
 * buffers (commands being read, MULTI queues, unread replies), bounded by
 * resp.max_buffers_per_user.
 */
struct resp_tenant {
	LIST_ENTRY(resp_tenant) entry;
	uint32_t uid;
	unsigned conns;
	uint64_t bytes;
};

struct resp_conn {
	TAILQ_ENTRY(resp_conn) entry;
	struct resp *rs;
	struct bufferevent *bev;
	uint64_t session;
	uint64_t id; /* CLIENT ID */
	int db;
	int proto;    /* 2, or 3 after HELLO 3 */
	uint32_t uid; /* who it acts as: root, or the uid of its resp.users user */
	bool authed;
	bool closing; /* after a protocol error or QUIT: ends once the output is out */
	bool multi, multi_dirty; /* in MULTI; a command was refused while queueing */
	const char *overflow; /* the limit a reply would have passed: the connection ends */
	struct resp_tenant *tenant; /* NULL until it passed AUTH */
	uint64_t charged;	/* its buffers' bytes, as counted in its user's and in all */
	struct resp_queued *queued;
	size_t nqueued;
	uint64_t queued_bytes;
	char name[RESP_NAME_MAX + 1];
	char addr[64];
	struct resp_parser p; /* the command being read */
	/* Values on other nodes (respremote.c): fetched for the command, or written by it. */
	LIST_HEAD(, resp_remote) remote;
	unsigned inflight;    /* of them, in flight: the connection waits */
	bool fetching;	      /* for the command, which runs once they are here */
	bool in_exec;	      /* its writes go to this node: EXEC reads them at once */
	int remote_err;	      /* why one failed, and where */
	uint32_t remote_node;
	uint64_t remote_bytes; /* fetched or being written */
	struct event *remote_timer;
	struct resp_session *rsess; /* its KV session while operations hold it */
	size_t reply_from; /* where the replies of a command whose writes are in flight start */
	bool ready;	   /* the parser holds a whole command not run yet */
};

struct resp {
	struct poold *pd;
	struct evconnlistener *listener;
	TAILQ_HEAD(, resp_conn) conns;
	LIST_HEAD(, resp_tenant) tenants;
	unsigned nconns;
	uint64_t bytes; /* of all connections' buffers: resp.max_buffers */
	uint64_t next_session;
	uint64_t commands;
};

/* Replies (resp.c). */
void resp_out(struct resp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_err(struct resp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_ok(struct resp_conn *c);
bool resp_room(struct resp_conn *c, size_t len);
void resp_bulk(struct resp_conn *c, const void *data, size_t len);
void resp_verbatim(struct resp_conn *c, const char *text, size_t len);
void resp_null(struct resp_conn *c);
void resp_int(struct resp_conn *c, long long v);
void resp_array(struct resp_conn *c, size_t n);
void resp_map(struct resp_conn *c, size_t n);
struct evbuffer *resp_output(struct resp_conn *c);

/* The connection's side of things the commands ask resp.c for. */
void resp_db_name(const struct resp_conn *c, int db, char *ns, size_t len);
int resp_auth_as(struct resp_conn *c, const char *user, const char *password, size_t pwlen);
void resp_reset(struct resp_conn *c);
void resp_queue_clear(struct resp_conn *c);
void resp_close_after_reply(struct resp_conn *c);
void resp_client_line(const struct resp_conn *c, char *buf, size_t len);

/* Values on other nodes (respremote.c). */
struct resp_cmd;
int resp_remote_fetch(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		      const size_t *argl);
const char *resp_remote_value(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			      uint64_t version, size_t *ret_len);
struct kv_where;
int resp_remote_put(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		    const void *a, size_t alen, const void *b, size_t blen, int64_t expire,
		    const struct kv_where *w);
bool resp_remote_send(struct resp_conn *c, struct evbuffer *out, const char *data, size_t len);
void resp_remote_clear(struct resp_conn *c);
void resp_remote_end(struct resp_conn *c);
void resp_remote_timeout(evutil_socket_t fd, short what, void *arg);
void resp_resume(struct resp_conn *c);
void resp_remote_failed(struct resp_conn *c);

/* Commands (respkeys.c, respconn.c). */
#define RESP_CMD_NOAUTH 0x1 /* may run before AUTH (AUTH, HELLO, QUIT, RESET) */
#define RESP_CMD_TXN 0x2    /* not queued in MULTI (MULTI, EXEC, DISCARD, QUIT, RESET) */
#define RESP_CMD_KEYS 0x4   /* works on the selected database: it is made first */
/* The values it reads, fetched first when they are on other nodes (respremote.c). */
#define RESP_CMD_READS 0x8	/* its first key's */
#define RESP_CMD_READS_ALL 0x10 /* every argument's: keys all (MGET) */
#define RESP_CMD_READS_GET 0x20 /* its first key's, with a GET option (SET) */

struct resp_cmd {
	const char *name;
	int arity; /* argc including the name; -N: at least N */
	unsigned flags;
	void (*run)(struct resp_conn *c, long argc, char **argv, const size_t *argl);
};

extern const struct resp_cmd resp_key_cmds[], resp_conn_cmds[]; /* respkeys.c, respconn.c */
extern const size_t n_resp_key_cmds, n_resp_conn_cmds;

const struct resp_cmd *resp_cmd_find(const char *name);
size_t resp_cmd_count(void);
/* Run one command (checked against its arity already). */
void resp_cmd_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		  const size_t *argl);

#endif

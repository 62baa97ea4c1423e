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
#include <sys/time.h>

#include <event2/util.h>

#include "daemon/respparse.h"

#define RESP_DBS 16
#define RESP_ERR_INT "ERR value is not an integer or out of range"
#define RESP_ERR_SYNTAX "ERR syntax error"
#define RESP_NAME_MAX 64 /* of a connection's CLIENT SETNAME */

struct evbuffer;
struct poold;
struct resp;

/* A command taken from the parser: held for EXEC, or read ahead while others wait. */
struct resp_queued {
	long argc;
	char **argv;
	size_t *argl;
	uint64_t bytes; /* of its arguments */
};

/* Commands read ahead while one waits for values of other nodes (respremote.c). */
#define RESP_AHEAD 64
/* Commands whose writes to other nodes are in flight at once, their replies held. */
#define RESP_SEGS 32

/* The replies of a command whose writes are in flight: output bytes [from, to). */
struct resp_seg {
	size_t from, to;
	int err;       /* a write failed: TRYAGAIN instead */
	uint32_t node; /* where */
};

/* A SET's value being read straight into its reservation (respplace.c). */
struct resp_placed {
	char *at; /* where, in this node's lend pool; NULL when none */
	uint64_t version;
	bool committed;
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
	bool closing;		 /* after a protocol error or QUIT: ends once the output is out */
	bool multi, multi_dirty; /* in MULTI; a command was refused while queueing */
	const char *overflow;	 /* the limit a reply would have passed: the connection ends */
	struct resp_tenant *tenant; /* NULL until it passed AUTH */
	uint64_t charged;	    /* its buffers' bytes, as counted in its user's and in all */
	struct resp_queued *queued;
	size_t nqueued;
	uint64_t queued_bytes;
	char name[RESP_NAME_MAX + 1];
	char addr[64];
	struct resp_parser p; /* the command being read */
	struct resp_placer placer;
	struct resp_placed placed;
	/*
	 * Values on other nodes (respremote.c): fetched for the commands about
	 * to run, or written by commands whose replies wait for that.
	 */
	LIST_HEAD(, resp_remote) remote;
	unsigned inflight;     /* of them, in flight */
	bool fetching;	       /* the first command read ahead waits for values */
	bool in_exec;	       /* its writes go to this node: EXEC reads them at once */
	int lost_err;	       /* a node whose transfers failed in this run of commands: */
	uint32_t lost_node;    /* commands that need it fail at once (TRYAGAIN) */
	uint64_t remote_bytes; /* fetched or being written */
	uint64_t puts;	       /* writes to other nodes started, ever */
	struct event *remote_timer;
	struct timeval remote_window;	      /* a heartbeat window */
	struct resp_session *rsess;	      /* its KV session while operations hold it */
	struct resp_queued ahead[RESP_AHEAD]; /* read, not run yet, in order */
	size_t nahead;
	uint64_t ahead_bytes;
	bool ahead_stop; /* one that may change what the next ones read was read: no more */
	struct resp_seg segs[RESP_SEGS]; /* in held */
	unsigned nsegs;			 /* while any, replies go to held */
	struct evbuffer *out;	  /* replies not written yet, written at once (resp_flush()) */
	unsigned prefetch_left;	  /* commands to parse before the next resp_prefetch() */
	struct evbuffer *held;	  /* replies behind writes in flight (resp_output()) */
	struct evbuffer *scratch; /* a command's replies, built apart */
	bool scratch_on;
	/* Sharded databases (respshard.c): the command with its keys' owners. */
	struct resp_fwd *fwd;	  /* one split over owners, or a transaction */
	struct resp_batch *batch; /* those read ahead, each with its owner */
	bool batch_wanted;	  /* the first read ahead waits for a batch: sent after reading */
	size_t shard_room;	  /* bytes of replies a batch's call asks room for */
	uint64_t shard_bytes;	  /* owners' replies held, and the room their calls asked */
	struct event *fwd_timer;  /* asks again in a while: a shard moved, a database is made */
	uint64_t fwd_since_ms;	  /* since when it waits for that */
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
	uint64_t refused; /* connections over resp.max_clients */
};

/* Replies (resp.c). */
void resp_out(struct resp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_err(struct resp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_ok(struct resp_conn *c);
bool resp_room(struct resp_conn *c, size_t len);
void resp_head(struct evbuffer *out, char type, long long n);
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
void resp_args_free(struct resp_queued *q);
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
void resp_remote_close(void);
void resp_remote_timeout(evutil_socket_t fd, short what, void *arg);
bool resp_blind_write(const struct resp_cmd *cmd, long argc, char **argv);
bool resp_remote_lenders(struct poold *pd);
void resp_resume(struct resp_conn *c);

/* Sharded databases (resp.placement = sharded; respshard.c). */
#define RESP_SHARD_HERE 1
#define RESP_SHARD_WAIT 0
#define RESP_SHARD_DONE (-1)
int resp_shard_route(struct resp_conn *c, const struct resp_cmd *cmd, const struct resp_queued *q);
void resp_shard_flush(struct resp_conn *c);
void resp_shard_end(struct resp_conn *c);

/* Big SET values read straight into their reservations (respplace.c). */
void resp_place_init(struct resp_conn *c);
/*
 * Publish the value read into the connection's reservation (key's value
 * now, with expire as in resp_put()): 0, -errno, or -ESTALE when another
 * write overtook it (store it again from c->placed.at).
 */
int resp_place_commit(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		      int64_t expire);

/* Commands (respkeys.c, respconn.c). */
#define RESP_CMD_NOAUTH 0x1 /* may run before AUTH (AUTH, HELLO, QUIT, RESET) */
#define RESP_CMD_TXN 0x2    /* not queued in MULTI (MULTI, EXEC, DISCARD, QUIT, RESET) */
#define RESP_CMD_KEYS 0x4   /* works on the selected database: it is made first */
/* The values it reads, fetched first when they are on other nodes (respremote.c). */
#define RESP_CMD_READS 0x8	/* its first key's */
#define RESP_CMD_READS_ALL 0x10 /* every argument's: keys all (MGET) */
#define RESP_CMD_READS_GET 0x20 /* its first key's, with a GET option (SET) */
/* Writes only, what it replies not depending on what is stored (SET without NX, XX, GET). */
#define RESP_CMD_BLIND 0x40
/* Its keys, where not its first argument alone (respshard.c sends them to their owners). */
#define RESP_CMD_KEYS_ALL 0x80	  /* every argument (MGET, DEL) */
#define RESP_CMD_KEYS_PAIRS 0x100 /* every other one, from the first (MSET) */
#define RESP_CMD_KEYLESS 0x200	  /* none: it works on the whole database (DBSIZE, KEYS) */
/* It may change its keys' values or expiry (their shards' backups are told, respshard.c). */
#define RESP_CMD_WRITES 0x400

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

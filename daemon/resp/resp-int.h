/*
 * daemon/resp/resp-int.h - what the Redis-protocol endpoint's files share: a
 * connection, the replies (RESP2, or RESP3 after HELLO 3), and the command
 * tables (resp-keys.c, resp-conn.c) that resp.c dispatches to.
 */
#ifndef POOLD_RESP_INT_H
#define POOLD_RESP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/time.h>

#include <event2/util.h>

#include "daemon/util/util.h"
#include "daemon/resp/resp-parse.h"

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

/* Commands read ahead while one waits for values of other nodes (resp-remote.c). */
#define RESP_AHEAD 64
/* Commands whose writes to other nodes are in flight at once, their replies held. */
#define RESP_SEGS 32

/* The replies of a command whose writes are in flight: output bytes [from, to). */
struct resp_seg {
	size_t from, to;
	int err;       /* a write failed: TRYAGAIN instead */
	uint32_t node; /* where */
};

/* A SET's value being read straight into its reservation (resp-place.c). */
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
	struct resp_watch **watched; /* WATCH's keys (resp-watch.c) */
	size_t nwatched;
	uint64_t watched_bytes;
	char name[RESP_NAME_MAX + 1];
	char addr[64];
	struct resp_parser p; /* the command being read */
	struct resp_placer placer;
	struct resp_placed placed;
	/*
	 * Values on other nodes (resp-remote.c): fetched for the commands about
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
	/* Sharded databases (resp-shard.c): the command with its keys' owners. */
	struct resp_fwd *fwd;	  /* one split over owners, or a transaction */
	struct resp_batch *batch; /* those read ahead, each with its owner */
	bool batch_wanted;	  /* the first read ahead waits for a batch: sent after reading */
	size_t shard_room;	  /* bytes of replies a batch's call asks room for */
	uint64_t shard_bytes;	  /* owners' replies held, and the room their calls asked */
	struct event *fwd_timer;  /* asks again in a while: a shard moved, a database is made */
	uint64_t fwd_since_ms;	  /* since when it waits for that */
	char swap_was[2][32];	  /* a SWAPDB's databases' namespaces when it was asked */
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

/* Values on other nodes (resp-remote.c). */
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

/* Sharded databases (resp.placement = sharded; resp-shard.c). */
#define RESP_SHARD_HERE 1
#define RESP_SHARD_WAIT 0
#define RESP_SHARD_DONE (-1)
int resp_shard_route(struct resp_conn *c, const struct resp_cmd *cmd, const struct resp_queued *q);
bool resp_shard_here(struct resp_conn *c, const char *ns, const char *key, size_t klen);
void resp_shard_flush(struct resp_conn *c);
void resp_shard_end(struct resp_conn *c);

/* Big SET values read straight into their reservations (resp-place.c). */
void resp_place_init(struct resp_conn *c);
/*
 * Publish the value read into the connection's reservation (key's value
 * now, with expire as in resp_put()): 0, -errno, or -ESTALE when another
 * write overtook it (store it again from c->placed.at).
 */
int resp_place_commit(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		      int64_t expire);

/*
 * The values of the string keyspace, for its commands (resp-keys.c). A value
 * where it lives in this node's arena (or fetched from another node),
 * valid until the command returns to the event loop or changes a value;
 * pinned (version) when it is one the index might move meanwhile,
 * released by resp_put_back().
 */
struct resp_val {
	const char *data;
	size_t len;
	uint64_t version; /* of the pin, or 0 */
	bool fetched;	  /* from another node, for this command (resp-remote.c) */
};
void resp_ns(const struct resp_conn *c, char *ns, size_t len); /* its selected database's */
int64_t resp_now_ms(void);
int resp_get(struct resp_conn *c, const char *ns, const char *key, size_t klen, struct resp_val *v);
void resp_put_back(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   const struct resp_val *v);
bool resp_exists(struct resp_conn *c, const char *ns, const char *key, size_t klen);
/*
 * Store a + b as key's value, expire its expiry after (Unix ms, 0 for
 * none) or KV_EXPIRE_KEEP; 0 or -errno (resp_put_failed() says it).
 */
int resp_put(struct resp_conn *c, const char *ns, const char *key, size_t klen, const void *a,
	     size_t alen, const void *b, size_t blen, int64_t expire);
bool resp_del(struct resp_conn *c, const char *ns, const char *key, size_t klen);
char *resp_value_copy(struct resp_conn *c, const char *ns, const char *key, size_t klen, size_t min,
		      size_t *ret_len);
int resp_put_edited(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		    const void *a, size_t alen, const void *b, size_t blen);
void resp_put_failed(struct resp_conn *c, int rc, const char *key, size_t klen);
/* The same, for values of any type as they are stored (head included: resp-type.c). */
int resp_get_raw(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		 struct resp_val *v);
int resp_put_raw(struct resp_conn *c, const char *ns, const char *key, size_t klen, const void *a,
		 size_t alen, const void *b, size_t blen, int64_t expire);

/* Lists and sets (resp-type.c): a value's type, in its first bytes. */
enum resp_type { RESP_TYPE_STRING = 's', RESP_TYPE_LIST = 'l', RESP_TYPE_SET = 'S' };
#define RESP_TYPED_MAGIC "\xffPOOL\x01\x02\xfe" /* eight bytes, then the type's */
#define RESP_TYPED_HEAD 9
#define RESP_TYPED_MAX 65536 /* elements of a list or a set */
struct resp_elem {
	const char *p;
	size_t len;
};
struct resp_elems {
	size_t n, cap;
	struct resp_elem *e;
};
/* Its type, and how many bytes of head a string has before its own (0 or RESP_TYPED_HEAD). */
enum resp_type resp_type_of(const char *data, size_t len, size_t *ret_head);
const char *resp_type_name(enum resp_type type);
const char *resp_type_encoding(const char *data, size_t len);
bool resp_typed_head(const void *a, size_t alen, const void *b, size_t blen);
void resp_typed_start(char *buf, enum resp_type type);
int resp_elems_room(struct resp_elems *els, size_t n);
int resp_elems_own(struct resp_elems *els, char **ret_buf);
/*
 * A hash index of elements (a set's members), so that a command on many
 * members of a big set is not a search of the set per member: built for
 * els and extra more, each added once it is in els (at place i). One
 * table node per place (htab.h); never copied once built.
 */
struct resp_index {
	struct htab t;
	struct htab_node *node; /* node[i]: element i's */
};
int resp_index_build(const struct resp_elems *els, size_t extra, struct resp_index *ix);
size_t resp_index_find(const struct resp_elems *els, const struct resp_index *ix, const char *p,
		       size_t len);
void resp_index_add(const struct resp_elems *els, struct resp_index *ix, size_t i);
void resp_index_free(struct resp_index *ix);
void resp_elems_free(struct resp_elems *els);
/*
 * A list's or set's elements (pointing into v, valid as v is): 0, -ENOENT,
 * -EPROTOTYPE when the key holds another type (v put back), -ENOMEM.
 */
int resp_get_typed(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   enum resp_type want, struct resp_val *v, struct resp_elems *els);
/*
 * Store them as key's value, its expiry kept; none: the key goes. old, the
 * value they were read from (or NULL), is put back first. 0, -E2BIG or
 * -errno.
 */
int resp_put_typed(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   enum resp_type type, const struct resp_elems *els, const struct resp_val *old);
void resp_typed_failed(struct resp_conn *c, int rc, const char *key, size_t klen);
void resp_wrongtype(struct resp_conn *c);

/* Commands (resp-keys.c, resp-conn.c; those of their own files below). */
#define RESP_CMD_NOAUTH 0x1 /* may run before AUTH (AUTH, HELLO, QUIT, RESET) */
#define RESP_CMD_TXN 0x2    /* not queued in MULTI (MULTI, EXEC, DISCARD, QUIT, RESET) */
#define RESP_CMD_KEYS 0x4   /* works on the selected database: it is made first */
/* The values it reads, fetched first when they are on other nodes (resp-remote.c). */
#define RESP_CMD_READS 0x8	/* its first key's */
#define RESP_CMD_READS_ALL 0x10 /* every argument's: keys all (MGET) */
#define RESP_CMD_READS_GET 0x20 /* its first key's, with a GET option (SET) */
/* Writes only, what it replies not depending on what is stored (SET without NX, XX, GET). */
#define RESP_CMD_BLIND 0x40
/* Its keys, where not its first argument alone (resp-shard.c sends them to their owners). */
#define RESP_CMD_KEYS_ALL 0x80	  /* every argument (MGET, DEL) */
#define RESP_CMD_KEYS_PAIRS 0x100 /* every other one, from the first (MSET) */
#define RESP_CMD_KEYLESS 0x200	  /* none: it works on the whole database (DBSIZE, KEYS) */
/* It may change its keys' values or expiry (their shards' backups are told, resp-shard.c). */
#define RESP_CMD_WRITES 0x400
#define RESP_CMD_KEYS_TWO 0x800	   /* its first two arguments (RENAME, COPY, LCS); READS both */
#define RESP_CMD_KEY_SECOND 0x1000 /* its second argument alone (OBJECT ENCODING key) */
#define RESP_CMD_NOMULTI 0x2000	   /* refused inside MULTI, the transaction with it (SAVE) */
/* changes the coordinator's definitions: a node's endpoint asks it, and waits (SWAPDB) */
#define RESP_CMD_COORD 0x4000

struct resp_cmd {
	const char *name;
	int arity; /* argc including the name; -N: at least N */
	unsigned flags;
	void (*run)(struct resp_conn *c, long argc, char **argv, const size_t *argl);
};

/* Each file's commands, sorted by name: resp-keys.c, resp-conn.c, resp-bits.c, resp-move.c... */
extern const struct resp_cmd resp_key_cmds[], resp_conn_cmds[], resp_bit_cmds[], resp_move_cmds[],
    resp_watch_cmds[], resp_lcs_cmds[], resp_info_cmds[], resp_list_cmds[], resp_set_cmds[];
extern const size_t n_resp_key_cmds, n_resp_conn_cmds, n_resp_bit_cmds, n_resp_move_cmds,
    n_resp_watch_cmds, n_resp_lcs_cmds, n_resp_info_cmds, n_resp_list_cmds, n_resp_set_cmds;
/* A count that must not be negative (LPOP, SPOP): false after Redis's error. */
bool resp_count_arg(struct resp_conn *c, const char *arg, size_t len, long long *ret);
#define RESP_VERSION "7.0.0" /* the Redis we answer as (HELLO, INFO) */

/* WATCH (resp-watch.c): whether a watched key changed since; forget them all. */
bool resp_watch_touched(struct resp_conn *c);
void resp_watch_clear(struct resp_conn *c);

const struct resp_cmd *resp_cmd_find(const char *name);
size_t resp_cmd_count(void);
/* Commands by their place among all, sorted by name (INFO commandstats). */
size_t resp_cmd_slot(const struct resp_cmd *cmd);
const struct resp_cmd *resp_cmd_at(size_t slot);
/* Commands counted (resp-info.c): one refused before it ran; one run, with its time. */
void resp_stat_rejected(const struct resp_cmd *cmd);
void resp_stat_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		   const size_t *argl);
/* Redis's glob patterns (KEYS, SCAN MATCH, CONFIG GET), on bytes. */
bool resp_match(const char *p, size_t plen, const char *s, size_t slen);
/*
 * The arguments of cmd that are keys (its flags say which): from first to
 * last, every step; first 0: it has none (it works on the whole database).
 */
void resp_cmd_keys(const struct resp_cmd *cmd, long argc, long *first, long *last, long *step);
/*
 * Make database db ready for c's user (as a command on its keys does for
 * the selected one): 0 with its namespace's name, or -errno after an
 * error reply.
 */
int resp_db_open(struct resp_conn *c, int db, char *ns, size_t len);
/* Run one command (checked against its arity already). */
void resp_cmd_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		  const size_t *argl);

#endif

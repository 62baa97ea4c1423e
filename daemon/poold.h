/*
 * daemon/poold.h - internals of poold, the per-node daemon.
 */
#ifndef POOLD_H
#define POOLD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/listener.h>

#include "common/common.h"
#include "daemon/util/htab.h"
#include "daemon/member/shardmap.h"
#include "daemon/hold/ledger.h"
#include "daemon/util/usage.h"
#include "fabric/fabric.h"
#include "proto/kvstats.h"
#include "proto/wire.h"

struct poold;
struct event_base;
struct event;
struct ctl_conn;
struct control;
struct coord;
struct peer;
struct fab_ctx;
struct fab_mem;
struct fab_ep;
struct fab_rkey;
struct pmem2_map;
struct pmem2_source;
struct regions;
struct reconcile;
struct kv_space;
struct kvev;
struct sdnotify;
struct looplag;
struct resp;
struct resprelay;
struct hold;
struct ledger_extent;
struct journal;
struct coordlog;
struct vecindex_ctx;
struct metrics;
struct events;
struct snapcopies;
struct snapplaces;
struct grants;

enum member_state { MEMBER_UP, MEMBER_SUSPECT, MEMBER_DEAD };
enum tier { TIER_DRAM, TIER_PMEM };
/* What the holders of a region's leases are told (region_notify()). */
enum region_event { REGION_MOVED, REGION_GONE };

/* One arena of this node's lend pool (lend.c). */
struct arena {
	uint32_t id;
	enum tier tier;
	int numa; /* -1 for pmem */
	int fd;	  /* memfd, or the pmem file */
	void *base;
	uint64_t size;	 /* mapped and registered: the most it may lend */
	uint64_t lent;	 /* offered now */
	uint64_t backed; /* DRAM: [0, backed) has memory; it follows lent a step at a time */
	struct fab_mem *mem;
	void *rkey;
	size_t rkey_len;
	struct pmem2_map *map;
	struct pmem2_source *src;
	void (*persist)(const void *ptr, size_t len);
	void *journal; /* pmem: the record of what it holds, after the lent part */
	size_t journal_len;
};

/* Bytes a node's record carries for its fabric: a worker address, a remote key. */
struct node_bytes {
	uint8_t *data;
	size_t len;
};

/* A NUMA node of a member: its DRAM, and what it lends from it. */
struct node_numa {
	uint32_t id;
	uint64_t mem_total;	/* bytes of DRAM on it */
	uint64_t lend_capacity; /* bytes lent to the pool from it */
	uint64_t lend_used;	/* of those, in use (the coordinator's count) */
};

/* An arena a member lends, and how the coordinator's allocator sees it. */
struct node_arena {
	uint32_t id; /* per node */
	enum tier tier;
	int numa;      /* -1 for pmem */
	uint64_t size; /* registered: the most it may lend */
	uint64_t lent; /* offered to the pool now */
	uint64_t used; /* as the coordinator accounts it */
	uint64_t addr; /* remote address of byte 0, for one-sided access */
	struct node_bytes rkey;
	bool accounted; /* the coordinator filled in the three below (region_account()) */
	uint64_t largest_free;
	uint64_t free_runs;
	uint64_t extents;
};

/*
 * What a node tells about itself when it registers, as the member table
 * keeps it (member-codec.c maps it to and from the wire's NodeInfo). Owns
 * everything it points to: node_info_free().
 */
struct node_info {
	uint32_t id;
	char *name;    /* node.name: identifies the host across restarts */
	char *addr;    /* host:port of its peer listener, or its link's source */
	char *version; /* its software version */
	char *role;    /* "coordinator" or "node" */
	struct node_bytes worker_addr;
	struct node_numa *numa;
	size_t n_numa;
	uint64_t pmem_capacity;
	uint64_t pmem_used;
	uint64_t probe_addr; /* its registered probe buffer, read by peers' link probes */
	uint64_t probe_len;
	struct node_bytes probe_rkey;
	uint64_t incarnation; /* new at every poold start */
	struct node_arena *arenas;
	size_t n_arenas;
	uint32_t *fabric_ports; /* TCP ports its fabric worker listens on */
	size_t n_fabric_ports;
	char *link_host;	/* where its checked links are reached (numeric) */
	uint32_t link_port;	/* ... at which port; 0: it takes none */
	uint64_t epoch;		/* which registration of it this is: fences what came before */
	uint64_t kv_shard_size; /* kv.shard_size: it owns KV shards when not 0 */
};

#define MEMBER_PAST_EPOCHS 8 /* registrations of a member whose links are still served */

/*
 * A node of the cluster as this poold knows it. At the coordinator the
 * table is the truth; at a node it mirrors the coordinator's member events.
 */
struct member {
	TAILQ_ENTRY(member) entry;
	struct node_info *info; /* owned */
	enum member_state state;
	uint64_t last_heartbeat; /* units_now_ms() of the last heartbeat seen */
	uint64_t ledger_after;	 /* at the coordinator: no ledger pass of it before (reconcile.c) */
	uint64_t heartbeat_age_ms; /* at a node: age the coordinator reported */
	bool kv_drained;	   /* poolctl drain: it owns no KV shards until lend */
	struct conn *conn;	   /* at the coordinator: the node's link, if connected */
	/* at the coordinator: where its last registered link came from (coord-slot.c) */
	struct sockaddr_storage from;
	/* the way this poold reaches its memory (carry.c), made on first use */
	struct fab_link *link; /* fabric.transfer = checked */
	/*
	 * ... and a second link for the calls it answers at once (KV backup
	 * copies, nodecall_send_apart()): a link's replies go in order, so
	 * theirs never wait behind a reply it holds on link
	 */
	struct fab_link *side_link;
	struct fab_ep *ep;	       /* fabric.transfer = rma: an endpoint to its worker */
	struct fab_rkey *probe_rkey;   /* ... the key of its probe buffer on ep */
	struct fab_rkey **arena_rkeys; /* ... its arenas' keys on ep, unpacked on first use */
	size_t n_arena_rkeys;
	uint64_t way_incarnation; /* incarnation the way was made for */
	uint64_t way_failed_ms;	  /* units_now_ms() when the way last failed */
	uint64_t way_gen;	  /* which way it is (carry_current()) */
	/*
	 * The numbers of its registrations before this one, while it did not
	 * die since (0: none), newest first: as a lender, this poold serves
	 * links it made under any of them, or under info->epoch.
	 */
	uint64_t past_epochs[MEMBER_PAST_EPOCHS];
};
TAILQ_HEAD(member_list, member);

/*
 * What the coordinator role does for the requests served below it (coord.c
 * sets pd->coord_role while this poold is the coordinator, NULL otherwise):
 * the role calls the address space's and the KV index's modules, so their
 * request handlers reach it only through here.
 */
struct coord_role {
	/* a client could not reach node: suspect it at once, not after heartbeats */
	void (*suspect)(struct poold *pd, uint32_t node);
	/* m joined or changed: tell every registered node */
	void (*member_changed)(struct poold *pd, struct member *m);
	/* node id's record (its name, whether drained) changed: journal it */
	void (*node_changed)(struct poold *pd, uint32_t id);
};

struct poold {
	struct event_base *base;
	struct poold_conf *conf;
	const char *conf_path; /* NULL: embedded defaults */
	char **overrides;      /* -o name=value, applied over the file */
	size_t noverrides;
	uint64_t start_ms;
	uint64_t reloads;
	uint64_t requests;
	struct req_latency *latency; /* per request type, for the metrics */
	uint32_t node_id;
	gid_t admin_gid;       /* (gid_t)-1: no admin group */
	uint64_t incarnation;  /* new at every start */
	uint64_t next_session; /* client connections, numbered */
	struct control *control;
	struct event *sig_ev[3];
	int pid_fd;
	/* cluster */
	struct member_list members;
	struct coord *coord;		     /* role = coordinator */
	const struct coord_role *coord_role; /* ... what its requests ask of it */
	struct coordlink *coordlink;	     /* ... its calls to nodes waiting for answers */
	struct node_id *nodeids;	     /* ... the nodes whose ids are theirs (member-ids.c) */
	size_t nnodeids;
	struct peer *peer; /* role = node: the link to the coordinator */
	/* ... what asks the coordinator for this poold itself (peer_ask()), or NULL */
	int (*ask_coordinator)(struct poold *pd, uid_t uid, uint16_t type,
			       const ProtobufCMessage *msg);
	const struct carry_ops *carry;	       /* how it reaches other poolds' memory (carry.c) */
	const struct carry_hooks *carry_hooks; /* ... and what it is told of changes */
	void (*members_changed)(struct poold *pd); /* the KV shards' owners (kv-owner.c) */
	/* who serves other nodes' calls on the links (nodecall.c), or NULL: refused */
	void (*node_call)(struct poold *pd, const struct fab_link_peer *peer, const void *in,
			  size_t len, struct fab_link_answer *ans);
	/* ... and what ends a session of another node's client there (kv_session_end()) */
	void (*node_session_end)(struct poold *pd, uint32_t node, uint64_t session, bool all);
	struct fab_links *links; /* fabric.transfer = checked: its links, both ways */
	uint64_t epoch;		 /* its own registration's number (node_info.epoch) */
	struct fab_ctx *fab;	 /* fabric.transfer = rma: UCX */
	struct fab_mem *probe_mem;
	void *probe_buf;
	size_t probe_len;
	void *probe_rkey;
	size_t probe_rkey_len;
	void *worker_addr;
	size_t worker_addr_len;
	Pool__ProbeResult **probes; /* at the coordinator: the latest result of each link */
	size_t nprobes;
	struct arena *arenas; /* this node's lend pool */
	size_t narenas;
	struct arena kv_arena;	  /* kv.shard_size: kept for the KV shards it owns */
	struct kvstore *kvstore;  /* ... and its allocator (kvstore.c) */
	struct regions *regions;  /* at the coordinator: the global address space */
	struct usage_table usage; /* at the coordinator: what each uid holds, for the quotas */
	TAILQ_HEAD(, hold) holds; /* as a lender: the extents it holds (hold.c) */
	struct hold **hold_tab;	  /* ... hashed by place (hold.c: hold_slot()) */
	size_t hold_tab_size, hold_tab_low, nholds;
	struct htab hold_ns;	 /* ... what its KV values share, by namespace */
	struct htab kv_sessions; /* its clients' sessions that left pins with KV shard owners */
	struct hold_report *hold_report; /* ... its report on the way to the coordinator */
	uint32_t hold_report_gen;	 /* ... the number of the latest */
	struct journal *journal;	 /* as a lender: the durable part of that record, in pmem */
	struct coordlog *coordlog;    /* at the coordinator: its journal, if coord.journal is set */
	uint32_t journal_arena;	      /* ... of this arena */
	struct kv_space *kv;	      /* at the coordinator: the KV cache index */
	struct resp *resp;	      /* at the coordinator: the Redis-protocol endpoint */
	struct resprelay *resprelay;  /* at a node: its RESP endpoint, relayed to that one */
	struct event *ledger_ev;      /* at the coordinator: periodic reconciliation */
	bool stopping;		      /* shutting down: lent memory is left as it is */
	bool stop_asked;	      /* SIGTERM/SIGINT came, maybe inside a nested loop */
	struct vecindex_ctx *vec_ctx; /* scratch of the searches served here (vec-serve.c) */
	uint64_t vec_searches, vec_queries;	   /* ... and how many, for the metrics */
	uint64_t member_changes;		   /* member state changes seen (member.c) */
	uint64_t members_gen;			   /* changes of the member table (member.c) */
	struct kv_shard_map kv_shards;		   /* the KV shards' owners, of the table at ... */
	uint64_t kv_shards_gen;			   /* ... this members_gen (cluster_kv_shards()) */
	uint64_t kv_shard_changes, kv_shard_moves; /* ... its changes, and shards moved in them */
	uint64_t kv_requests_here, kv_requests_nodes; /* KV requests served: own clients', nodes' */
	uint64_t
	    kv_shard_requests[2]; /* ... to sharded namespaces, as owner: [0] own, [1] nodes' */
	struct metrics *metrics;  /* the Prometheus endpoint, if metrics.listen is set */
	struct events *events;	  /* the recent events (events.c) */
	struct fab_rma_stats client_rma; /* local clients' one-sided transfers, as they tell them */
	struct snapcopies *snapcopies;	 /* the node's copies of snapshot images (snap-copy.c) */
	struct snapplaces *snapplaces; /* the helpers filling them for snap place (snap-place.c) */
	struct ssl_ctx_st *tls;	       /* peer.tls: what peer links' TLS sessions are made of */
	struct carves *carves;	       /* extents with a memory file of their own (carve.c) */
	struct scrubs *scrubs;	       /* large extents being zeroed (scrub.c) */
	struct grants *grants;	       /* what each local client session may reach (grant.c) */
	struct firewall *firewall;     /* fabric.firewall's rule (firewall.c) */
	struct sdnotify *sdnotify;     /* systemd's notify socket, if any (sdnotify.c) */
	struct looplag *looplag;       /* how late the loop runs (looplag.c) */
	struct kvev *kvev;	       /* KV events, if kv_events.endpoint is set (kv-events.c) */
	struct coordha *coordha; /* coord.etcd: the election, or following its leader (ha.c) */
};

/* main.c */
int poold_reload(struct poold *pd, char *errbuf, size_t errlen);
int poold_resolve_admin(struct poold_conf *conf, gid_t *ret_gid, char *errbuf, size_t errlen);

/* pidfile.c */
int pidfile_open(const char *path, int *ret_fd);
int pidfile_write(const char *path, int fd);
void pidfile_close(const char *path, int fd);

/*
 * The largest frame poolds take from each other on a peer link: once its
 * node registered, and before (peer.c, coord.c). Lists that grow with the
 * data go in chunks of peer.chunk_size, well under it.
 */
#define PEER_FRAME_MAX (16u << 20)
#define PEER_UNREG_FRAME_MAX (256u << 10)

/* heap.c: freed heap given back to the system, a little at a time */
void heap_freed(size_t bytes);
void heap_trim_soon(struct event_base *base);

/* conn.c: a framed connection over a bufferevent */
struct conn;
struct sockaddr;
struct conn_ops {
	/* One complete frame whose header passed the checks. */
	void (*frame)(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload,
		      void *arg);
	/* An outgoing connection is established (optional). */
	void (*connected)(struct conn *c, void *arg);
	/* The connection ended; it is freed when this returns. */
	void (*closed)(struct conn *c, void *arg);
	/*
	 * Whether to take another frame while replies wait unread (optional: a
	 * budget shared by several connections); a connection held back goes
	 * on once its own replies are out.
	 */
	bool (*may_read)(struct conn *c, void *arg);
};

struct ssl_st;
int conn_new(struct event_base *base, int fd, struct ssl_st *ssl, size_t max_frame,
	     const struct conn_ops *ops, void *arg, const char *desc, struct conn **ret_conn);
int conn_connect(struct event_base *base, const struct sockaddr *sa, unsigned salen,
		 struct ssl_st *ssl, size_t max_frame, const struct conn_ops *ops, void *arg,
		 const char *desc, struct conn **ret_conn);
void conn_free(struct conn *c);
void conn_close_later(struct conn *c);
void conn_abort(struct conn *c, bool closed);
struct conn *conn_ref(struct conn *c);
void conn_unref(struct conn *c);
bool conn_alive(const struct conn *c);
int conn_send_raw(struct conn *c, uint16_t type, uint64_t req_id, const uint8_t *payload,
		  size_t len);
int conn_send_fd(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg,
		 int fd);
int conn_send(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg);
size_t conn_output_len(const struct conn *c);
int conn_send_error(struct conn *c, uint64_t req_id, int code, const char *msg);
int conn_send_frame(struct conn *c, const uint8_t *frame, size_t len);
const char *conn_desc(const struct conn *c);
int conn_fd(const struct conn *c);
void conn_set_desc(struct conn *c, const char *desc);
void conn_set_limit_name(struct conn *c, const char *name);
void conn_set_read_timeout(struct conn *c, unsigned timeout_ms);
void conn_set_write_timeout(struct conn *c, unsigned timeout_ms);
void conn_set_max_frame(struct conn *c, size_t max_frame);
void conn_set_max_send(struct conn *c, size_t max_send);
int conn_fits(const struct conn *c, uint16_t type, size_t len);

/*
 * A request being served: where to reply and who asked. Handlers reply with
 * req_reply() and return 0, return a negative code (the dispatcher sends the
 * error reply, with req_errorf()'s message), or return REQ_LATER after
 * req_hold() to reply from a later callback.
 */
struct req {
	struct poold *pd;
	struct conn *conn;
	uint64_t id;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admin;
	bool root;	   /* root or poold's own uid (a local client only) */
	uint32_t node;	   /* node holding the client's session */
	uint64_t session;  /* the client's connection there */
	uint16_t type;	   /* of the request */
	uint64_t start_us; /* when it came */
	bool with_file;	   /* a local session's open or create that wants the region's file */
	/* asked by another node (nodecall.c): the reply goes to answer_to, through answer */
	int (*answer)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
	void *answer_to;
	char errmsg[256];
};

/*
 * How long the requests of one type took, from their arrival to their
 * reply: a histogram with upper bounds REQ_LATENCY_BOUNDS_US (the last
 * bucket has none), their sum and count.
 */
#define REQ_LATENCY_BUCKETS 12
#define REQ_LATENCY_BOUNDS_US                                                                      \
	{                                                                                          \
		50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, 1000000                 \
	}
struct req_latency {
	uint64_t count, sum_us;
	uint64_t bucket[REQ_LATENCY_BUCKETS];
};

#define REQ_LATER 1

/* CTL_ROOT: root or poold's own uid, who could read poold's memory anyway. */
enum ctl_perm { CTL_ANY, CTL_ADMIN, CTL_ROOT };
/* AT_ROUTE: where the request's own data says (control_wiring.route), else as AT_COORD. */
enum ctl_where { AT_HERE, AT_COORD, AT_ROUTE };
#define CTL_NOT_ROUTED 2 /* control_wiring.route: not routed, served as AT_COORD */

/* The permission of one value of a request's "op" field, where it differs from the type's. */
/* An operation (the value of the request's enum field op, never 0) and who may ask for it. */
struct ctl_op {
	int op;
	enum ctl_perm perm;
};

struct ctl_handler {
	uint16_t type;
	enum ctl_perm perm;
	enum ctl_where where; /* AT_COORD: a node forwards it to the coordinator */
	int (*fn)(struct req *r, const ProtobufCMessage *msg);
	const struct ctl_op *ops; /* {0} ended; checked where the request is unpacked */
};

/*
 * What the control socket serves and whom it tells, given once by poold's
 * main (main.c): so that control.c calls no service, and the services
 * call control.c to answer.
 */
struct control_wiring {
	const struct ctl_handler *const *tables; /* each ended by an entry with fn == NULL */
	size_t ntables;
	/* A local client's connection closed: its session ends everywhere. */
	void (*session_end)(struct poold *pd, uint64_t session);
	/* A node passes a request its coordinator serves on to it (>= 0: passed). */
	int (*forward)(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
	/* A request served where its data says (AT_ROUTE): as a handler returns, or CTL_NOT_ROUTED.
	 */
	int (*route)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
	/* Whether a reply waits for the journal (1: held and sent later, 0: send it, -errno). */
	int (*hold_reply)(struct poold *pd, struct conn *c, uint16_t type, uint64_t req_id,
			  const ProtobufCMessage *msg);
	/* Whether a local session's request asks for a memory file with its reply. */
	bool (*wants_file)(uint16_t type, const ProtobufCMessage *msg);
	/* Send a reply with the file it asked for (1: sent, 0: send it as it is, -errno). */
	int (*reply_with_file)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
};

/* control.c: the local control socket and request dispatch */
void control_wire(const struct control_wiring *w);
int control_open(struct poold *pd, struct control **ret_ctl);
void control_close(struct control *ctl);
unsigned control_nclients(const struct control *ctl);
int control_sessions(struct poold *pd, uint64_t **ret_sessions, size_t *ret_n);
void control_notify(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
void control_dispatch(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
const struct ctl_handler *control_handler(uint16_t type);
int req_reply(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void req_send_error(struct req *r, int code);
/* nodecall.c: requests between nodes' poolds, on the links between them */
int nodecall_forward(struct req *r, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		     size_t max);
/* who a call is made for: the client, as its own poold saw it */
struct nodecall_as {
	uint32_t uid, gid, pid;
	bool admin;
	uint64_t session;
};
typedef void (*nodecall_cb)(struct poold *pd, void *arg, int status, uint16_t type,
			    const uint8_t *reply, size_t len);
int nodecall_send(struct poold *pd, uint32_t node, const struct nodecall_as *as, uint16_t type,
		  const ProtobufCMessage *msg, size_t max, nodecall_cb cb, void *arg);
int nodecall_send_apart(struct poold *pd, uint32_t node, const struct nodecall_as *as,
			uint16_t type, const ProtobufCMessage *msg, size_t max, nodecall_cb cb,
			void *arg);
void nodecall_as_req(const struct req *r, struct nodecall_as *ret);
/*
 * A call's answer as its callback has it: 0 with the reply (of type want)
 * in *ret, to free with wire_msg_free(); or the error: the call's, the
 * code of an Error, -EBADMSG or -EPROTO for a reply malformed or of
 * another type.
 */
int nodecall_reply(int status, uint16_t type, const uint8_t *bytes, size_t len, uint16_t want,
		   ProtobufCMessage **ret);
int nodecall_answer(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void nodecall_open(struct poold *pd, void (*session_end)(struct poold *pd, uint32_t node,
							 uint64_t session, bool all));
/* kv-route.c: KV requests to sharded namespaces, sent to their keys' owners */
int kvroute_request(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void kvroute_session_end(struct poold *pd, uint64_t session);
void kvroute_close(struct poold *pd);
int req_errorf(struct req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct req *req_hold(const struct req *r);
void req_finish(struct req *r, int rc);

/* member.c: the member table */
const char *member_state_name(enum member_state state);
struct member *cluster_find(struct poold *pd, uint32_t id);
struct member *cluster_find_name(struct poold *pd, const char *name);
int cluster_update(struct poold *pd, struct node_info *info, struct member **ret_member);
bool cluster_epoch_ok(const struct member *m, uint64_t epoch);
void cluster_set_state(struct poold *pd, struct member *m, enum member_state state);
void cluster_set_kv_drained(struct poold *pd, struct member *m, bool drained);
void cluster_remove(struct poold *pd, struct member *m);
void cluster_clear(struct poold *pd);
struct node_info *cluster_self_info(struct poold *pd);
const struct kv_shard_map *cluster_kv_shards(struct poold *pd);
void node_info_free(struct node_info *info);

/* member-ids.c: node ids tied to names (coordinator) */
struct node_id {
	uint32_t id;
	char name[64];
	bool kv_drained; /* drained (poolctl drain) until it lends again: it owns no KV shard */
};
const struct node_id *nodeids_find(const struct poold *pd, uint32_t id, const char *name);
bool nodeids_add(struct poold *pd, uint32_t id, const char *name);
bool nodeids_set_drained(struct poold *pd, uint32_t id, bool drained);
void nodeids_clear(struct poold *pd);

/* member-codec.c: the member table's records to and from the wire */
Pool__MemberState member_state_wire(enum member_state state);
enum member_state member_state_of(Pool__MemberState state);
struct node_info *node_info_from_wire(const Pool__NodeInfo *w);
int node_info_to_wire(const struct node_info *info, bool public, Pool__NodeInfo *w);
void node_info_wire_free(Pool__NodeInfo *w);
int member_to_wire(struct poold *pd, const struct member *m, bool public, Pool__Member *w);
void member_wire_free(Pool__Member *w);
Pool__Member *member_to_wire_copy(struct poold *pd, const struct member *m);
int cluster_members_msg(struct poold *pd, bool public, Pool__Member ***ret_members, size_t *ret_n);
void cluster_members_msg_free(Pool__Member **members, size_t n);

/* carry*.c: how this poold reaches the memory other poolds lend (fabric.transfer) */
#define CARRY_PROBE_ARENA UINT32_MAX /* a node's probe buffer, as the arena link probes read */
/* a node's memory for its KV shards' values: the last arena id a KV place packs */
#define KV_STORE_ARENA (LENDER_ARENA_IDS - 1)
int carry_memory(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		 bool last, void **ret_ptr);
/* kvstore.c: the memory a node keeps for the values of the KV shards it owns */
int kvstore_open(struct poold *pd);
void kvstore_close(struct poold *pd);
int kvstore_alloc(struct poold *pd, uint64_t len, uint64_t *ret_off, uint64_t *ret_len);
void kvstore_free(struct poold *pd, uint64_t off, uint64_t len);
int kvstore_reach(struct poold *pd, uint64_t ext, uint64_t off, uint64_t len, void **ret_ptr);
void kvstore_stats(struct poold *pd, uint64_t *ret_size, uint64_t *ret_used);
enum carry_op { CARRY_READ, CARRY_WRITE, CARRY_FADD, CARRY_CSWAP };
/* Bytes of a node's memory: [off, off+len) of the extent its lender holds at ext of arena. */
struct carry_place {
	uint32_t node, arena;
	uint64_t ext, off, len;
};
/* One way of reaching the others' memory. */
struct carry_ops {
	const char *name;
	int (*open)(struct poold *pd);
	void (*close)(struct poold *pd);
	/* Start one transfer to m (its way made if it has none): 0 (cb later, once) or -errno. */
	int (*start)(struct poold *pd, struct member *m, enum carry_op op,
		     const struct carry_place *p, void *buf, uint64_t a, uint64_t b,
		     uint64_t *ret_old, fab_done_cb cb, void *arg);
	/* Make the writes to m complete there: 0 (cb later), 1 (they are), -errno. */
	int (*flush)(struct poold *pd, struct member *m, fab_done_cb cb, void *arg);
	/* Whether m's way failed (its transfers fail). */
	bool (*failed)(const struct member *m);
	/* Close m's way: what it carries fails, later, from the loop. */
	void (*drop)(struct member *m);
	/* The transports m's way uses, for the link probes. */
	int (*transport)(struct member *m, char *buf, size_t len);
	/* What it moved: grows while it carries, for the loop's polling. */
	uint64_t (*activity)(const struct poold *pd);
};
extern const struct carry_ops carry_link_ops, carry_rma_ops;
int carry_open(struct poold *pd);
void carry_close(struct poold *pd);
int carry_start(struct poold *pd, enum carry_op op, const struct carry_place *p, void *buf,
		uint64_t a, uint64_t b, uint64_t *ret_old, fab_done_cb cb, void *arg,
		uint64_t *ret_gen);
int carry_read(struct poold *pd, const struct carry_place *p, void *buf, fab_done_cb cb, void *arg,
	       uint64_t *ret_gen);
int carry_write(struct poold *pd, const struct carry_place *p, const void *buf, fab_done_cb cb,
		void *arg, uint64_t *ret_gen);
int carry_flush(struct poold *pd, uint32_t node, uint64_t gen, fab_done_cb cb, void *arg);
bool carry_current(struct poold *pd, uint32_t node, uint64_t gen);
bool carry_lost(int err);
uint64_t carry_new_gen(void);
void carry_drop(struct poold *pd, struct member *m);
void carry_joined(struct poold *pd);
void carry_fence(struct poold *pd);
/*
 * What the member table and the holdings tell the ways (carry.c gives them
 * at carry_open()): so member.c and hold.c, which the ways read, do not
 * call them.
 */
struct carry_hooks {
	/* A member's record or holdings came: requests waiting for them are checked again. */
	void (*changed)(struct poold *pd);
	/* A member was declared dead or forgotten: its way closes, its links from it too. */
	void (*dead)(struct poold *pd, struct member *m);
};
uint64_t carry_activity(const struct poold *pd);
void carry_stats(struct poold *pd, struct fab_rma_stats *ret_issued);
/* carry-link.c */
int carry_link_key(const char *secret, uint8_t ret_key[FAB_LINK_KEY_LEN]);
int carry_link_member(struct poold *pd, const struct fab_link_peer *peer);
int carry_link_way(struct poold *pd, struct member *m);
int carry_link_side(struct poold *pd, struct member *m);

/* quota.c: the most bytes uid may hold (UINT64_MAX: no bound), and the option that bounds it */
uint64_t quota_of(const struct poold *pd, uint32_t uid, const char **ret_option);
bool quota_over(const struct poold *pd, uint32_t uid, uint64_t need);
/* "uid U holds ...; N more is over OPTION (...)" */
void quota_explain(const struct poold *pd, uint32_t uid, uint64_t need, char *buf, size_t len);

/* numa.c */
int numa_layout(const char *spec, uint64_t total, struct node_numa **ret_nodes, size_t *ret_n);

/* accept.c: listeners that outlive running out of fds */
int accept_guard(struct poold *pd, struct evconnlistener *l, const char *what);
int accept_listen(struct poold *pd, const char *what, const char *addr, int backlog,
		  evconnlistener_cb cb, void *arg, struct evconnlistener **ret);
void accept_close(struct evconnlistener *l);
void accept_refuse(int fd, const char *why, size_t len);

/* clientkey.c: who a client counts as: its uid on this host, else its address */
enum clientkey_kind { CLIENTKEY_UID, CLIENTKEY_ADDR };
struct clientkey {
	enum clientkey_kind kind;
	uint32_t uid;	  /* CLIENTKEY_UID */
	uint8_t addr[16]; /* CLIENTKEY_ADDR: IPv4 v4-mapped, IPv6 its /64 */
};
struct clientkey_ctx;
int clientkey_open(struct clientkey_ctx **ret);
void clientkey_close(struct clientkey_ctx *ck);
int clientkey_of(struct clientkey_ctx *ck, int fd, struct clientkey *ret);
bool clientkey_eq(const struct clientkey *a, const struct clientkey *b);
const char *clientkey_str(const struct clientkey *k, char *buf, size_t len);

/* zmqgate.c: bounds on the connections a bound ZMQ socket takes */
struct zmqgate;
struct zmqgate_limits {
	unsigned max, per_uid, per_addr;
	uint64_t in_max;  /* bytes a TCP connection may send over its life; 0: no bound */
	const char *what; /* the socket, for the log */
	const char *max_option, *per_uid_option, *per_addr_option;
};
int zmqgate_open(struct poold *pd, void *ctx, void *sock, const struct zmqgate_limits *lim,
		 struct zmqgate **ret);
void zmqgate_close(struct zmqgate *g);
void zmqgate_stats(const struct zmqgate *g, uint64_t *ret_open, uint64_t *ret_refused);

/* httpd.c: a small HTTP server for one resource (the metrics) */
struct httpd;
struct evbuffer;
typedef int (*httpd_get_fn)(struct poold *pd, struct evbuffer *body);
struct httpd_limits {
	/* connections at once: in all, of one uid on this host, of one address elsewhere */
	unsigned max_clients, per_uid, per_addr;
	unsigned timeout_ms; /* of a connection, from its accept */
	const char *per_uid_option, *per_addr_option;
};
int httpd_open(struct poold *pd, const char *addr, const char *option, const char *path,
	       const struct httpd_limits *lim, httpd_get_fn get, struct httpd **ret);
void httpd_close(struct httpd *h);

/* peer-tls.c: TLS on peer links */
int peertls_open(struct poold *pd);
void peertls_close(struct poold *pd);
int peertls_new(struct poold *pd, struct ssl_st **ret_ssl);

/* carve.c: extents with a memory file of their own, for local mappings */
int carve_fd(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, bool may_share,
	     int *ret_fd, uint64_t *ret_off);
int carve_take(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, uint64_t *ret_off,
	       uint64_t *ret_len);
void carve_put_back(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void carve_empty(int fd, uint64_t off, uint64_t len);
void carve_release(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void carve_close(struct poold *pd);
void carve_count(const struct poold *pd, size_t *ret_carved, size_t *ret_windows);

/* lend.c: this node's lend pool */
/* The same file opened again for reading only, or -1 (errno): a client cannot map it writable. */
int fd_read_only(int fd);
bool region_file_wanted(uint16_t type, const ProtobufCMessage *msg);
int region_reply_with_file(struct req *q, uint16_t type, const ProtobufCMessage *msg);
int lend_open(struct poold *pd);
void lend_close(struct poold *pd);
void lend_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
struct arena *lend_arena(struct poold *pd, uint32_t arena);
int lend_renew(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
uint64_t lend_page_size(const struct poold *pd);
void lend_numa_bind(void *base, size_t len, int numa);
int lend_pmem_check(const char *path, uint64_t size, char *err, size_t errlen);
void lend_set_limit(struct poold *pd, uint32_t arena, uint64_t limit);
int lend_copy(struct poold *pd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
	      uint64_t len);
const char *tier_name(enum tier tier);
void *lend_ptr(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int lend_persist(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void lend_group_begin(void);
void lend_group_values(void);
bool lend_group_end(void);
void lend_flush(void);
uint64_t lend_flushes(void);
void lend_zero(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int lend_arenas_info(struct poold *pd, struct node_arena **ret_arenas, size_t *ret_n);

/* region.c, reclaim.c: the global address space (coordinator) */
enum region_class { CLASS_PINNED, CLASS_CACHE, CLASS_PERSISTENT };

/*
 * The arenas the coordinator lends from: ids below 2^16 - 1 and offsets
 * below 2^48, so that a KV value's place packs into 8 bytes (struct
 * kv_val), its last id naming a node's memory for its KV shards
 * (KV_STORE_ARENA). An arena beyond them is not lent
 * (region_lender_update()).
 */
#define LENDER_ARENA_IDS (1u << 16)
#define LENDER_ARENA_BYTES (1ull << 48)

/* The allocator of one arena of one lender. */
struct lender_pool {
	TAILQ_ENTRY(lender_pool) entry;
	uint32_t node;
	uint32_t arena;
	enum tier tier;
	int numa;
	uint64_t incarnation;
	uint64_t size;	 /* the arena: the most it may lend */
	uint64_t lent;	 /* what it offers now: the allocator's size */
	bool draining;	 /* poolctl drain: no new extents here */
	bool reconciled; /* the lender's record was compared with the map: usable */
	bool asked; /* its allocator's changes listed since its lender was asked for its record */
	struct extent_arena *alloc;
	uint64_t addr; /* remote address of byte 0, and its key */
	void *rkey;
	size_t rkey_len;
};

struct region_extent {
	uint32_t node, arena;
	uint64_t off, len, region_off;
};

/* An extent no region uses any more, kept readable for reclaim.grace. */
struct retired {
	TAILQ_ENTRY(retired) entry;
	uint32_t node, arena;
	uint64_t off, len;
	uint64_t release_at;
	struct reclaim *rc;   /* the reclaim waiting for it, or NULL */
	uint64_t incarnation; /* of the lender when it was retired */
	bool scrub_sent;
	bool scrubbed; /* its lender zeroed it: it may be lent again */
};

/* A client session's hold on a region; ends_at != 0 once the session is gone. */
struct lease {
	TAILQ_ENTRY(lease) entry;
	uint32_t node;
	uint64_t session;
	uint64_t ends_at;
	uint64_t incarnation; /* of its node, when taken */
	bool unconfirmed;     /* from the coordinator's journal: its node has not said it is live */
};

struct region {
	TAILQ_ENTRY(region) entry;
	struct htab_node by_name, by_id; /* in regions.names and .ids while linked */
	TAILQ_HEAD(, lease) lease_list;
	char name[64];
	uint64_t id, size, base, stripe;
	enum region_class cls;
	char placement[32];
	uint32_t mode, uid, gid, creator_node;
	bool anonymous;
	bool lost;	 /* a lender of it restarted or died: its data is gone */
	bool moving;	 /* reclaim is copying it */
	size_t want_ext; /* persistent and lost: the extents it is whole with, to come back */
	uint32_t leases;
	struct region_extent *ext;
	size_t next;
	/*
	 * References to values of a dedup KV namespace this region holds (a
	 * snapshot manifest's pages): the keys, each after a length byte,
	 * dropped when the region goes.
	 */
	uint64_t refs_ns;
	uint8_t *refs;
	size_t refs_len, refs_cap;
	bool refs_unknown; /* rebuilt after a restart: what it holds is to be told again */
};

/* A region gone while a lender of it was not up: that lender's extents of it are scrubbed. */
struct tombstone {
	TAILQ_ENTRY(tombstone) entry;
	uint64_t id;
	uint32_t node;
	char name[64];
};

struct reclaim;

struct regions {
	TAILQ_HEAD(, region) list;
	struct htab names, ids; /* the regions of list by name and by id */
	TAILQ_HEAD(, lender_pool) pools;
	uint64_t next_id;
	uint64_t next_base;
	size_t count;
	TAILQ_HEAD(, retired) retired; /* moved or evicted extents, readable until released */
	size_t scrubs;		       /* of those, scrubs asked of their lenders, not answered */
	TAILQ_HEAD(, reclaim) reclaims;
	TAILQ_HEAD(, tombstone) tombstones;
	const struct space_hooks *hooks;
	struct reconcile *ledger; /* ledger passes (reconcile.c: reconcile_close() first) */
	uint64_t opened_ms;	  /* units_now_ms() when the coordinator opened it */
};

/*
 * Whom the address space tells what changed, given by the coordinator: so
 * region.c calls neither the KV index nor the coordinator's journal.
 */
struct space_hooks {
	/* A region goes, before its extents do. */
	void (*freed)(struct poold *pd, struct region *r);
	/*
	 * For the journal: a region made, adopted or kept; gone (nodes: its
	 * lenders not told); a lender told of a region destroyed while it was
	 * away; a lease on an anonymous region taken or ended.
	 */
	void (*logged)(struct poold *pd, const struct region *r);
	void (*gone)(struct poold *pd, const struct region *r, const uint32_t *nodes, size_t n);
	void (*buried)(struct poold *pd, uint64_t id, uint32_t node);
	void (*leased)(struct poold *pd, const struct region *r, const struct lease *l, bool taken);
};

int region_open_space(struct poold *pd, const struct space_hooks *hooks);
extern const struct space_hooks coord_space_hooks; /* coord.c's (the unit tests' too) */
void region_close_space(struct poold *pd);
bool region_lender_restarted(struct poold *pd, const struct node_info *info);
void region_lender_update(struct poold *pd, const struct node_info *info);
void region_sweep_leases(struct poold *pd);
void region_sweep_retired(struct poold *pd);
bool region_scrubs_full(struct poold *pd);
uint64_t region_arena_used(struct poold *pd, uint32_t node, uint32_t arena);
void region_session_end(struct poold *pd, uint32_t node, uint64_t session);
struct region *region_find(struct regions *rs, const char *name);
struct region *region_find_id(struct regions *rs, uint64_t id);
/* Whether uid (in gid) may access what owner/group/mode guard with want (4 read, 2 write). */
bool mode_allows(uid_t uid, gid_t gid, uid_t owner, gid_t group, unsigned mode, unsigned want);
bool req_mode_allows(const struct req *q, uid_t owner, gid_t group, unsigned mode, unsigned want);
bool region_allowed(const struct region *r, const struct req *q, unsigned want);

/*
 * The address space's operations on regions (region.c), for region-serve.c's
 * requests and for tests: the caller as the coordinator knows it, the
 * answer a status with err saying why it failed.
 */
struct region_caller {
	uint32_t node;	  /* the node of the caller's session */
	uint64_t session; /* its leases are this session's */
	uid_t uid;
	gid_t gid;
	bool admin; /* may destroy and keep others' regions */
};

struct region_spec {
	const char *name;
	uint64_t size;
	enum region_class cls;
	const char *placement; /* local, any, node=N, numa=M, spread[=N] ("": any) */
	uint64_t stripe;       /* spread: bytes per stripe (0: the default) */
	unsigned mode;
	bool anonymous; /* goes with its last lease, until kept */
	bool open;	/* the caller holds a lease on it at once */
};

bool region_may(const struct region *r, const struct region_caller *who, unsigned want);
const char *region_class_name(enum region_class cls);
int region_class_of(const char *name, enum region_class *ret);
int region_create(struct poold *pd, const struct region_spec *spec, const struct region_caller *who,
		  struct region **ret, char *err, size_t errlen);
int region_open(struct poold *pd, const char *name, unsigned want, const struct region_caller *who,
		struct region **ret, char *err, size_t errlen);
int region_close(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		 size_t errlen);
int region_destroy(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		   size_t errlen);
int region_keep(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		size_t errlen);
bool region_pool_usable(struct poold *pd, const struct lender_pool *lp);
bool region_rebuilding(struct poold *pd);
size_t region_unreconciled(struct poold *pd);
bool region_settling(struct poold *pd, char *why, size_t len);
struct lender_pool *region_pool(struct regions *rs, uint32_t node, uint32_t arena);
struct lender_pool *region_pick_avoid(struct poold *pd, enum tier tier, uint64_t len,
				      uint32_t avoid);
void region_free(struct poold *pd, struct region *r);
void region_account(struct poold *pd);
void region_notify(struct poold *pd, struct region *r, enum region_event event);
void region_retire(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		   struct reclaim *rc);
typedef void reclaim_done_fn(void *arg, int rc, const char *summary);
int reclaim_start(struct poold *pd, uint32_t node, uint64_t size, bool drain, reclaim_done_fn *done,
		  void *arg, char *err, size_t errlen);
int reclaim_lend(struct poold *pd, uint32_t node, uint64_t size, char *msg, size_t len);
void reclaim_sweep(struct poold *pd);
int reclaim_extents(struct poold *pd, uint32_t node, struct ledger_extent **ext, size_t *n,
		    size_t *cap);
void reclaim_close(struct poold *pd);
extern const struct ctl_handler reclaim_handlers[];
void region_node_gone(struct poold *pd, uint32_t node);
void region_node_sessions(struct poold *pd, uint32_t node, uint64_t incarnation,
			  const uint64_t *live, size_t n);
/*
 * A region as its lenders' holdings and the coordinator's journal record
 * it, enough to make it again (region-serve.c maps it to and from a Holding).
 */
struct region_record {
	uint64_t id; /* 0 where the record does not say */
	const char *name;
	const char *placement; /* NULL or "": any */
	uint64_t size;
	uint32_t extents; /* how many it has */
	uint32_t index;	  /* which of them the record's extent is (a lender's record) */
	uint32_t mode, uid, gid;
	uint64_t stripe;
	enum region_class cls;
	bool anonymous;
};
bool region_extent_record(struct poold *pd, uint32_t node, uint64_t id, uint32_t arena,
			  uint64_t off, struct region_record *rec);
void region_record(const struct region *r, struct region_record *rec);
void region_tell_extent(struct poold *pd, const struct region *r, size_t i);
int region_replay(struct poold *pd, const struct region_record *rec, uint64_t base);
void region_replay_gone(struct poold *pd, uint64_t id, const char *name, const uint32_t *nodes,
			size_t n);
void region_replay_lease(struct poold *pd, uint64_t id, uint32_t node, uint64_t session,
			 uint64_t incarnation, bool taken);
int region_tombstone_add(struct poold *pd, uint64_t id, const char *name, uint32_t node);
const struct tombstone *region_tombstone(struct poold *pd, uint32_t node, uint64_t id);
void region_tombstone_drop(struct poold *pd, uint32_t node, uint64_t id);
void region_tombstones_done(struct poold *pd, uint32_t node);

/* coord-log.c: the coordinator's journal (coord.journal), or its state in etcd (coord.etcd) */
int coordlog_open(struct poold *pd);
void coordlog_close(struct poold *pd);
struct etcdlog_stats;
bool coordlog_etcd_stats(const struct poold *pd, struct etcdlog_stats *ret);
int coordlog_hold_reply(struct poold *pd, struct conn *c, uint16_t type, uint64_t req_id,
			const ProtobufCMessage *msg);
void coordlog_region(struct poold *pd, const struct region *r);
void coordlog_region_gone(struct poold *pd, const struct region *r, const uint32_t *nodes,
			  size_t n);
void coordlog_tombstone_done(struct poold *pd, uint64_t id, uint32_t node);
void coordlog_namespaces(struct poold *pd);
void coordlog_node(struct poold *pd, uint32_t id);
void coordlog_lease(struct poold *pd, const struct region *r, const struct lease *l, bool taken);
struct journal_stats;
size_t journals_stats(struct poold *pd, const char *names[2], struct journal_stats *st);
int region_adopt(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		 const struct region_record *rec);

typedef void (*coord_done_cb)(struct poold *pd, void *arg, int rc);

/* region-tell.c: what the address space asks of lenders and tells lease holders */
int region_send_scrub(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		      coord_done_cb done, void *arg);
void region_send_notice(struct poold *pd, uint32_t node, const uint64_t *sessions, size_t n,
			const char *name, enum region_event event);
void reclaim_send_limit(struct poold *pd, uint32_t node, uint32_t arena, uint64_t limit);

/* hold.c: a lender's record of what it holds (HOLD_NS_*: Holding.ns_flags) */
#define HOLD_NS_DRAM_ONLY 0x1u	/* Holding.ns_flags: the namespace never spills */
#define HOLD_NS_PERSISTENT 0x2u /* ... its values live in pmem and are journaled */
#define HOLD_NS_NO_EVICT 0x4u	/* ... a full namespace refuses puts */
#define HOLD_NS_DEDUP 0x8u	/* ... keys name their content: puts count references */
#define HOLD_NS_SHARED 0x10u	/* ... across uids: a value is checked against its key at commit */
#define HOLD_NS_SHARDED 0x20u	/* ... its index and values on the KV shards' owners */
#define HOLD_REGION_ID(id) (!((id) >> 63)) /* Holding.region: a region's, not a KV namespace's */
/*
 * A committed KV value where one lender holds it, as its holdings record
 * it, with what it takes to make its namespace again (hold-codec.c maps it
 * to and from a Holding).
 */
struct kv_record { /* (its extent is its holding's) */
	const char *ns;
	uint64_t ns_capacity;
	uint32_t ns_flags;     /* HOLD_NS_* */
	uint32_t ns_replicas;  /* 0: not said */
	uint64_t ns_size_hint; /* 0: not said */
	const uint8_t *key;
	size_t klen;
	uint64_t vlen, version;
	bool has_owner;
	uint32_t owner; /* its writer, whose quota it counts against */
};

/*
 * One extent a lender holds, as its record says, and what for: an extent
 * of a named region, a committed KV value, or neither (an extent only the
 * map names, a KV reservation). Its records point into whoever made it.
 */
struct holding {
	struct ledger_extent e; /* e.region: a region's id, or a namespace's KV_HOLD_ID */
	bool has_region;
	struct region_record region;
	bool has_kv;
	struct kv_record kv;
};
int hold_open(struct poold *pd);
int hold_add(struct poold *pd, const struct holding *h, size_t n);
/* scrub.c: a lender's scrubs of large extents, in slices */
bool scrub_later(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, coord_done_cb cb,
		 void *arg);
void scrub_close(struct poold *pd);

void hold_forget(struct poold *pd, uint32_t arena, uint64_t off);
void hold_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int hold_reach(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
	       bool last, void **ret_ptr);
void hold_clear(struct poold *pd);
int hold_list(struct poold *pd, struct holding **ret, size_t *ret_n);
int hold_extents(struct poold *pd, size_t *cursor, size_t max, struct ledger_extent **arr,
		 size_t *n, size_t *cap);
bool hold_at(struct poold *pd, uint32_t arena, uint64_t off, struct holding *ret);
/* A holding's place, as a report tells one that ended. */
struct hold_place {
	uint32_t arena;
	uint64_t off;
};
int hold_report_begin(struct poold *pd);
void hold_report_end(struct poold *pd);
const struct holding *hold_report_peek(struct poold *pd);
void hold_report_take(struct poold *pd);
ssize_t hold_report_gone(struct poold *pd, const struct hold_place **ret);
void hold_report_gone_told(struct poold *pd, size_t n);
/* hold-sync.c: the coordinator telling lenders what they hold */
void hold_tell(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
	       uint64_t id);
void hold_tell_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
			coord_done_cb done, void *arg);

/* stream.c: a long list sent over a peer link in chunks, as the loop turns */
struct stream;
typedef int (*stream_next_cb)(struct poold *pd, struct conn *c, void *arg);
typedef void (*stream_end_cb)(struct poold *pd, void *arg, int rc);
int stream_start(struct poold *pd, struct conn *c, size_t ahead, stream_next_cb next,
		 stream_end_cb end, void *arg, struct stream **ret);
void stream_pause(struct stream *s);
void stream_resume(struct stream *s);
void stream_stop(struct stream *s);

/* hold-report.c: a lender's report of its record in chunks: cut (lender), gathered (coordinator) */
struct holdreport_chunk {
	struct holding *h; /* the next holdings of the record (copies pointing into it) */
	size_t n;
	struct hold_place *gone; /* holdings of earlier chunks that ended since */
	size_t ngone;
	bool more; /* more chunks follow */
};
int holdreport_chunk(struct poold *pd, size_t max, struct holdreport_chunk *ret);
void holdreport_chunk_free(struct holdreport_chunk *c);
struct holdreport;
int holdreport_add(struct holdreport **rp, uint64_t report, uint32_t seq, bool more,
		   const struct holding *h, size_t n, const struct hold_place *gone, size_t ngone);
int holdreport_result(struct holdreport *r, const struct holding **ret, size_t *ret_n);
int holdreport_holdings(struct holdreport *r, const struct holding **ret, size_t *ret_n);
bool holdreport_ended(const struct holdreport *r, size_t i);
bool holdreport_shrink(struct holdreport *r);
void holdreport_free(struct holdreport *r);
void holdreport_progress(const struct holdreport *r, uint32_t *ret_chunks, size_t *ret_n);

/* reconcile.c: lenders' records kept in step with the map (coordinator) */
void reconcile_ask(struct poold *pd, uint32_t node);
void reconcile_report(struct poold *pd, uint32_t node, struct holdreport *report);
void reconcile_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n);
bool reconcile_run(struct poold *pd, uint64_t budget_us);
void reconcile_close(struct poold *pd);

/* hold-codec.c: holdings on the wire and in the pmem journal */
void holding_to_msg(const struct holding *h, Pool__Holding *m);
void holding_of_msg(const Pool__Holding *m, struct holding *h);
ssize_t holding_pack(const struct holding *h, uint8_t *buf, size_t cap);
struct holding_unpacked {
	struct holding h;
	Pool__Holding *msg; /* what h points into */
};
int holding_unpack(const uint8_t *buf, size_t len, struct holding_unpacked *ret);
void holding_unpacked_free(struct holding_unpacked *u);
struct holding *holdings_of_msg(const Pool__Holdings *hs);
void holdings_send(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
		   coord_done_cb done, void *arg);
void holdings_ask(struct poold *pd, uint32_t node);
size_t holding_wire_len(const struct holding *h);
size_t hold_place_wire_len(const struct hold_place *g);
struct holdreport_chunk;
int holdings_chunk_msg(uint64_t report, uint32_t seq, const struct holdreport_chunk *c,
		       Pool__Holdings *ret);
void holdings_chunk_free(Pool__Holdings *hs);
struct hold_place *holding_ends_of_msg(const Pool__Holdings *hs);
int holdings_msg(const struct holding *h, size_t n, Pool__Holdings *hs);
void holdings_msg_free(Pool__Holdings *hs);

/* ha.c: the coordinator's place in etcd (coord.etcd) */
struct coordha_info {
	bool on;	      /* coord.etcd is set */
	bool leading;	      /* this poold leads */
	const char *leader;   /* the leader as last known ("" none) */
	int64_t epoch;	      /* ... its epoch */
	const char *endpoint; /* the etcd endpoint in use */
	const char *why;      /* why no leader is known, or etcd's last complaint */
	uint64_t changes;     /* leaders seen */
};
typedef void (*coordha_follow_cb)(struct poold *pd, const char *leader, int64_t epoch);
int coordha_open(struct poold *pd, coordha_follow_cb follow);
int coordha_campaign(struct poold *pd);
bool coordha_standby(const struct poold *pd);
void coordha_deposed(const char *why) __attribute__((noreturn));
bool coordha_epoch(const struct poold *pd, int64_t *ret_epoch);
struct etcd *coordha_etcd(const struct poold *pd, const char **ret_key);
void coordha_describe(const struct poold *pd, struct coordha_info *ret);
void coordha_close(struct poold *pd);

/* coord.c: the coordinator role */
int coord_open(struct poold *pd);
void coord_close(struct poold *pd);
int coord_probe_all(struct poold *pd, struct req *r);
void coord_session_end(struct poold *pd, uint32_t node, uint64_t session);

/* member-call.c: the coordinator's calls to its nodes */
int coordlink_open(struct poold *pd);
void coordlink_close(struct poold *pd);
int coord_request(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		  coord_done_cb cb, void *arg);
typedef void (*coord_reply_cb)(struct poold *pd, void *arg, int rc, const struct wire_hdr *hdr,
			       const uint8_t *payload);
int coord_call(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
	       coord_reply_cb reply, void *arg);
void coord_notice(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg);
void coordlink_cancel(struct poold *pd, const void *arg);
void coordlink_answer(struct poold *pd, const struct wire_hdr *hdr, const uint8_t *payload);
void coordlink_fail(struct poold *pd, uint32_t node);

/* kv-events.c: KV events in vLLM's format (the coordinator's; of a sharded namespace, each owner's)
 */
int kvev_open(struct poold *pd);
void kvev_close(struct poold *pd);
void kvev_stored(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool pmem);
void kvev_removed(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool pmem);
void kvev_moved(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool to_pmem);
void kvev_cleared(struct poold *pd, const char *ns);
void kvev_end(struct poold *pd);
struct kvev_stats {
	uint64_t published, kept, kept_bytes, held_bytes, bad_replays, refused_replays;
	uint64_t connections[2], refused_connections[2]; /* of the events socket, the replay one */
};
bool kvev_stats(const struct poold *pd, struct kvev_stats *ret);

/* kv.c: the KV cache index (coordinator) */
/* (The coordinator's journal records the namespaces each time they change.) */
typedef void (*kv_defined_cb)(struct poold *pd);
int kv_open(struct poold *pd, kv_defined_cb defined);
void kv_close(struct poold *pd);
void kv_session_end(struct poold *pd, uint32_t node, uint64_t session, bool all);
void kv_node_lost(struct poold *pd, uint32_t node);
void kv_sweep(struct poold *pd);
int kvowner_open(struct poold *pd);
void kvowner_close(struct poold *pd);
void kvowner_fenced(struct poold *pd);
void kvowner_hold(struct poold *pd, bool on);
int kvhandover_open(struct poold *pd);
void kvhandover_close(struct poold *pd);
/* kv-backup.c: the backup copies of sharded namespaces' shards */
int kvbackup_open(struct poold *pd);
void kvbackup_close(struct poold *pd);
void kvowner_stats(struct poold *pd, Pool__KvShardInfo *ret);
struct kv_ns_spec;
void kvowner_defs(struct poold *pd, const struct kv_ns_spec *defs, size_t n);
int kv_adopt(struct poold *pd, uint32_t node, const struct ledger_extent *at,
	     const struct kv_record *rec);
/* A walk of the KV extents on a node for a ledger pass, a slice at a time (kv_extents()). */
struct kv_extents_walk {
	int list;	  /* 0: the namespaces, 1: the flushed and dropped, 2: copies, 3: done */
	struct kv_ns *ns; /* the namespace walked (NULL: the list's first) */
	size_t bucket;	  /* ... its next bucket */
};
/* 1 while there is more to walk, 0 at the end, -ENOMEM. */
int kv_extents(struct poold *pd, uint32_t node, struct kv_extents_walk *w, size_t max,
	       struct ledger_extent **ext, size_t *n, size_t *cap);
extern const struct ctl_handler kv_handlers[];
extern const struct ctl_handler kvhandover_handlers[];
extern const struct ctl_handler respshard_handlers[];
extern const struct ctl_handler kvbackup_handlers[];
struct kv_where {
	uint32_t node, arena;
	uint64_t off, len, version;
};
/* An operation on one KV key (the wire names them: "lookup", "exists"...). */
enum kv_op { KV_LOOKUP, KV_EXISTS, KV_RESERVE, KV_COMMIT, KV_ABORT, KV_RELEASE, KV_REMOVE };
int kv_local_op(struct poold *pd, uint64_t session, uid_t uid, const char *nsname, enum kv_op op,
		const uint8_t *key, size_t klen, uint64_t arg, struct kv_where *ret);
int kv_local_ensure(struct poold *pd, const char *nsname, uint64_t capacity, uid_t uid, bool here);
int kv_local_reserve(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		     const uint8_t *key, size_t klen, uint64_t len, bool here,
		     struct kv_where *ret);
int kv_local_where(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		   struct kv_where *ret);
int resp_auth(const struct poold_conf *conf, const char *user, const char *password, size_t len,
	      uint32_t *ret_uid);
int kv_snap_open(struct poold *pd);
void kv_holder_drop(struct poold *pd, struct region *r);
/*
 * A KV namespace's definition: what makes it (kv_ns_create()), and what
 * every node keeps so that a restarted coordinator makes it again
 * (kv_defs(), kv_defs_adopt()).
 */
struct kv_ns_spec {
	const char *name;
	uint64_t capacity;
	uint64_t size_hint; /* 0: none */
	uint32_t flags;	    /* HOLD_NS_DRAM_ONLY or _PERSISTENT, HOLD_NS_NO_EVICT, _DEDUP */
	unsigned replicas;
	uid_t uid;
	gid_t gid;
	unsigned mode;
	unsigned resp_db; /* 1 + the RESP database it serves since a SWAPDB; 0: its name's */
};
int kv_defs(struct poold *pd, struct kv_ns_spec **ret, size_t *ret_n);
void kv_defs_adopt(struct poold *pd, const struct kv_ns_spec *defs, size_t n, const char *from);
int kv_ns_flags_of(const char *tier, const char *evict, uint32_t *ret);
void kv_def_msg(const struct kv_ns_spec *d, Pool__KvNamespace *m);
Pool__KvNamespace **kv_defs_msg(struct poold *pd, size_t *ret_n);
void kv_defs_tell(struct poold *pd, uint32_t node, Pool__KvNamespace **defs, size_t n, size_t from,
		  uint32_t seq);
void kv_defs_adopt_msg(struct poold *pd, Pool__KvNamespace *const *defs, size_t n,
		       const char *from);
/* A namespace as kv stats and the metrics show it (used: the bytes in its own tier). */
struct kv_ns_stats {
	struct kv_ns_spec def;
	uint64_t id, used, pmem_used;
	KV_STATS(KV_STAT_FIELD) /* entries, hits, misses... (proto/kvstats.h) */
};
size_t kv_local_scan(struct poold *pd, const char *nsname, uint64_t cursor, size_t max,
		     void (*cb)(void *arg, const uint8_t *key, size_t klen), void *arg,
		     uint64_t *ret_next);
bool kv_local_random(struct poold *pd, const char *nsname, uint64_t rnd,
		     void (*cb)(void *arg, const uint8_t *key, size_t klen), void *arg);
uint64_t kv_local_size(struct poold *pd, const char *nsname);
uint64_t kv_local_volatile(struct poold *pd, const char *nsname);
bool kv_local_edited(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		     size_t klen, bool set);
int kv_local_ttl(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		 int64_t *ret_at);
#define KV_PREFETCH_MAX 32
void kv_local_prefetch(struct poold *pd, uid_t uid, const char *nsname, const char *const *keys,
		       const size_t *klens, size_t n);
int kv_local_read(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		  const void **ret_data, size_t *ret_len);
uint64_t kv_local_pin(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		      const uint8_t *key, size_t klen);
#define KV_EXPIRE_KEEP INT64_MIN /* kv_local_overwrite(): the expiry stays as it is */
int kv_local_overwrite(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		       size_t klen, const void *a, size_t alen, const void *b, size_t blen,
		       int64_t expire);
int kv_local_expire(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		    size_t klen, int64_t at);
bool kv_local_lands_here(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
			 size_t klen, uint64_t len);
int kv_local_commit_own(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
			const uint8_t *key, size_t klen, uint64_t version);
void kv_stats_each(struct poold *pd, void (*cb)(void *arg, const struct kv_ns_stats *st),
		   void *arg);
void kv_local_flush(struct poold *pd, const char *nsname, uid_t uid);

/* vec-serve.c: vector indexes searched near their data */
void vec_serve(struct poold *pd, struct conn *conn, uint64_t req_id, const Pool__VecRequest *vr);
extern const struct ctl_handler vec_handlers[];

/* events.c: the recent events, for poolctl events (events-serve.c) */
struct event_rec {
	uint64_t seq;
	uint64_t time_ms; /* wall clock, ms since the epoch */
	char kind[16];
	char text[200];
};
void events_add(struct poold *pd, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void events_free(struct poold *pd);
size_t events_count(const struct poold *pd);
void events_each(const struct poold *pd, void (*cb)(void *arg, const struct event_rec *e),
		 void *arg);
extern const struct ctl_handler events_handlers[];

/* snap-copy.c: the node's shared copies of snapshot images */
void snapcopy_session_end(struct poold *pd, uint64_t session);
/* copies, bytes, clones, fills, evictions, restores, failed, faults, pages, prefetched */
#define SNAPCOPY_STATS 10
void snapcopy_stats(struct poold *pd, uint64_t ret[SNAPCOPY_STATS]);
void snapcopy_close(struct poold *pd);
extern const struct ctl_handler snapcopy_handlers[];

/* snap-place.c: node copies made ahead of use, on the nodes an admin names */
void snapplace_serve(struct poold *pd, struct conn *conn, uint64_t req_id,
		     const Pool__SnapPlace *m);
void snapplace_close(struct poold *pd);
void snap_recount_want(struct poold *pd);
extern const struct ctl_handler snapplace_handlers[];

/* looplag.c: how late the event loop runs, for the metrics */
#define LOOPLAG_STALL_LEVELS 3
extern const uint64_t looplag_stall_us[LOOPLAG_STALL_LEVELS]; /* 10 ms, 100 ms, 1 s */
struct looplag_stats {
	uint64_t total_us;		       /* lateness of the loop's timer, summed */
	uint64_t max_us;		       /* the longest in the last minute */
	uint64_t stalls[LOOPLAG_STALL_LEVELS]; /* ticks later than each level */
};
int looplag_open(struct poold *pd);
void looplag_stats(const struct poold *pd, struct looplag_stats *st);
void looplag_close(struct poold *pd);

/* sdnotify.c: systemd's READY=1, STATUS= and WATCHDOG=1 (Type=notify) */
int sdnotify_open(struct poold *pd);
/* A STATUS= line (printf), with READY=1 the first time ready is true. */
void sdnotify_status(struct poold *pd, bool ready, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* READY=1 and what it serves as: role, its node id and the memory it lends. */
void sdnotify_serving(struct poold *pd, const char *role);
void sdnotify_close(struct poold *pd);

/* firewall.c: the fabric's ports of every node admit poold's uid only (nftables) */
int firewall_open(struct poold *pd);
int firewall_cover_fabric(struct poold *pd);
void firewall_members_changed(struct poold *pd);
void firewall_ports(const struct poold *pd, uint32_t **ret_ports, size_t *ret_n);
const char *firewall_state(const struct poold *pd);
bool firewall_is_on(const struct poold *pd);
void firewall_close(struct poold *pd);

/* grant.c: what each local session may reach, from the coordinator's replies */
struct grant_piece {
	uint32_t node, arena;
	uint64_t ext;	   /* where its extent starts in the arena: what its lender holds */
	uint64_t off, len; /* in the arena */
	uint64_t pos;	   /* where in the op it starts */
};
void grant_reply(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
bool grant_wants(struct poold *pd, uint64_t session, uint16_t type);
void grant_request(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
void grant_notice(struct poold *pd, uint64_t session, const char *name, bool gone);
void grant_session_end(struct poold *pd, uint64_t session);
void grant_clear(struct poold *pd);
void grant_expire_all(struct poold *pd);
int grant_region_pieces(struct poold *pd, uint64_t session, uint64_t region, uint64_t off,
			uint64_t len, bool write, struct grant_piece *pieces, size_t max);
int grant_region_extent(struct poold *pd, uint64_t session, uint64_t region,
			struct region_extent *ret_extent, bool *ret_write);
int grant_place_check(struct poold *pd, uint64_t session, uint32_t node, uint32_t arena,
		      uint64_t off, uint64_t within, uint64_t len, bool write);

/* xfer.c: transfers carried for local clients, between their windows and granted memory */
bool xfer_busy(void);
bool resp_remote_busy(void); /* the RESP endpoint's transfers (resp-remote.c) */
void xfer_session_end(struct poold *pd, uint64_t session);
char *xfer_window_map(uint64_t session, uint32_t id, uint64_t *ret_size);
void xfer_close(struct poold *pd);
#define XFER_STATS 7
void xfer_stats(struct poold *pd, uint64_t ret[XFER_STATS]);
extern const struct ctl_handler xfer_handlers[];

/* copy.c: an extent copied between lenders over the fabric */
typedef void (*copy_done_cb)(struct poold *pd, void *arg, int rc);
void copy_cancel(struct poold *pd);
void copy_close(void);
int copy_start(struct poold *pd, const struct lender_pool *src, uint64_t src_off,
	       const struct lender_pool *dst, uint64_t dst_off, uint64_t len, copy_done_cb cb,
	       void *arg);

/* metrics.c: the Prometheus endpoint */
extern const struct ctl_handler metrics_handlers[];
int metrics_open(struct poold *pd);
void metrics_close(struct poold *pd);

/* resp.c: the Redis-protocol endpoint to the KV cache (coordinator) */
int resp_open(struct poold *pd);
/* Whether its databases are sharded (resp.placement): every node runs commands (resp-shard.c). */
bool resp_sharded(const struct poold *pd);
/* Commands (or parts) of sharded databases sent to other owners, and served for other nodes. */
void resp_shard_stats(uint64_t *to_owners, uint64_t *from_nodes);
void resp_close(struct poold *pd);
int resp_endpoint(struct poold *pd, char *buf, size_t len);
/* What a RESP endpoint served, for the metrics: its own (coordinator) or a node's relay. */
struct resp_stats {
	uint64_t connections;		    /* open now */
	uint64_t refused;		    /* connections refused, ever */
	uint64_t commands;		    /* run, ever (the coordinator's) */
	uint64_t to_coordinator, to_client; /* bytes relayed, ever (a node's) */
	bool relay;
};
bool resp_stats(const struct poold *pd, struct resp_stats *ret);

/* resp-relay.c: a node's RESP endpoint, relayed to the coordinator's */
int resprelay_open(struct poold *pd);
void resprelay_close(struct poold *pd);
void resprelay_learn(struct poold *pd, const char *endpoint, int link_fd);
bool resprelay_stats(const struct poold *pd, struct resp_stats *ret);

/* peer.c: a node's link to the coordinator */
int peer_open(struct poold *pd);
void peer_close(struct poold *pd);
void peer_follow(struct poold *pd, const char *leader, int64_t epoch);
int peer_forward(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
void peer_session_end(struct poold *pd, uint64_t session);

/* peer-auth.c: challenge-response on the peer secret */
#define PEERAUTH_NONCE_LEN 32
#define PEERAUTH_PROOF_LEN 32
int peerauth_nonce(uint8_t ret_nonce[PEERAUTH_NONCE_LEN]);
int peerauth_coord_proof(const char *secret, const uint8_t *nn, const uint8_t *nc,
			 uint8_t ret_proof[PEERAUTH_PROOF_LEN]);
int peerauth_node_proof(const char *secret, const uint8_t *nc, const uint8_t *nn, const char *name,
			uint8_t ret_proof[PEERAUTH_PROOF_LEN]);
bool peerauth_equal(const uint8_t want[PEERAUTH_PROOF_LEN], const uint8_t *got, size_t len);

/* probe.c: link probes over the fabric */
typedef void (*probe_done_cb)(struct poold *pd, Pool__ProbeResult **results, size_t n, void *arg);
int probe_run(struct poold *pd, const uint32_t *targets, size_t ntargets, probe_done_cb cb,
	      void *arg);
void probe_results_free(Pool__ProbeResult **results, size_t n);
void probe_result_free(Pool__ProbeResult *res);
Pool__ProbeResult *probe_result_dup(const Pool__ProbeResult *res);

/* handlers, one file per concept */
extern const struct ctl_handler status_handlers[];
extern const struct ctl_handler reload_handlers[];
extern const struct ctl_handler nodes_handlers[];
extern const struct ctl_handler region_handlers[];
extern const struct ctl_handler arena_handlers[];

#endif

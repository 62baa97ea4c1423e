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
struct kv_events;
struct sdnotify;
struct looplag;
struct resp;
struct resp_relay;
struct hold;
struct ledger_extent;
struct journal;
struct coord_log;
struct vecindex_ctx;
struct metrics;
struct events;
struct snap_copies;
struct snap_places;
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
 * Where some of a region's bytes are: [off, off+len) of arena on node,
 * holding the region's [region_off, region_off+len). The address space
 * keeps them (region.h), and each session's grants (grant.c) the ones it
 * may reach.
 */
struct region_extent {
	uint32_t node, arena;
	uint64_t off, len, region_off;
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
	struct member_calls *member_calls;   /* ... its calls to nodes waiting for answers */
	struct node_id *member_ids;	     /* ... the nodes whose ids are theirs (member-ids.c) */
	size_t n_member_ids;
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
	struct coord_log *coord_log; /* at the coordinator: its journal, if coord.journal is set */
	uint32_t journal_arena;	     /* ... of this arena */
	struct kv_space *kv;	     /* at the coordinator: the KV cache index */
	struct resp *resp;	     /* at the coordinator: the Redis-protocol endpoint */
	struct resp_relay *resp_relay;	    /* at a node: its RESP endpoint, relayed to that one */
	struct event *ledger_ev;	    /* at the coordinator: periodic reconciliation */
	bool stopping;			    /* shutting down: lent memory is left as it is */
	bool stop_asked;		    /* SIGTERM/SIGINT came, maybe inside a nested loop */
	struct vecindex_ctx *vec_ctx;	    /* scratch of the searches served here (vec-serve.c) */
	uint64_t vec_searches, vec_queries; /* ... and how many, for the metrics */
	uint64_t member_changes;	    /* member state changes seen (member.c) */
	uint64_t members_gen;		    /* changes of the member table (member.c) */
	struct kv_shard_map kv_shards;	    /* the KV shards' owners, of the table at ... */
	uint64_t kv_shards_gen;		    /* ... this members_gen (member_kv_shards()) */
	uint64_t kv_shard_changes, kv_shard_moves; /* ... its changes, and shards moved in them */
	uint64_t kv_requests_here, kv_requests_nodes; /* KV requests served: own clients', nodes' */
	uint64_t
	    kv_shard_requests[2]; /* ... to sharded namespaces, as owner: [0] own, [1] nodes' */
	struct metrics *metrics;  /* the Prometheus endpoint, if metrics.listen is set */
	struct events *events;	  /* the recent events (events.c) */
	struct fab_rma_stats client_rma; /* local clients' one-sided transfers, as they tell them */
	struct snap_copies *snap_copies; /* the node's copies of snapshot images (snap-copy.c) */
	struct snap_places
	    *snap_places;	     /* the helpers filling them for snap place (snap-place.c) */
	struct ssl_ctx_st *tls;	     /* peer.tls: what peer links' TLS sessions are made of */
	struct carves *carves;	     /* extents with a memory file of their own (carve.c) */
	struct scrubs *scrubs;	     /* large extents being zeroed (scrub.c) */
	struct grants *grants;	     /* what each local client session may reach (grant.c) */
	struct firewall *firewall;   /* fabric.firewall's rule (firewall.c) */
	struct sdnotify *sdnotify;   /* systemd's notify socket, if any (sdnotify.c) */
	struct looplag *looplag;     /* how late the loop runs (looplag.c) */
	struct kv_events *kv_events; /* KV events, if kv_events.endpoint is set (kv-events.c) */
	struct ha *ha;		     /* coord.etcd: the election, or following its leader (ha.c) */
};

/* main.c */
int poold_reload(struct poold *pd, char *errbuf, size_t errlen);
int poold_resolve_admin(struct poold_conf *conf, gid_t *ret_gid, char *errbuf, size_t errlen);

#endif

/*
 * daemon/kv/kv.h - the KV cache index: namespaces, keys, their places and
 * pins, shards and their owners, events, and the requests that reach them.
 * The interface of kv/ to the rest of poold.
 */
#ifndef POOLD_KV_H
#define POOLD_KV_H

#include "daemon/control/control.h"
#include "proto/kvshardstats.h"

struct kv_ns;
struct kv_ns_spec;
struct kv_record;
struct region;

/* kv-route.c: KV requests to sharded namespaces, sent to their keys' owners */
int kv_route_request(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void kv_route_session_end(struct poold *pd, uint64_t session);
void kv_route_close(struct poold *pd);
/* kv-events.c: KV events in vLLM's format (the coordinator's; of a sharded namespace, each owner's)
 */
int kv_events_open(struct poold *pd);
void kv_events_close(struct poold *pd);
void kv_events_stored(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool pmem);
void kv_events_removed(struct poold *pd, const char *ns, const uint8_t *key, size_t klen,
		       bool pmem);
void kv_events_moved(struct poold *pd, const char *ns, const uint8_t *key, size_t klen,
		     bool to_pmem);
void kv_events_cleared(struct poold *pd, const char *ns);
void kv_events_end(struct poold *pd);
struct kv_events_stats {
	uint64_t published, kept, kept_bytes, held_bytes, bad_replays, refused_replays;
	uint64_t connections[2], refused_connections[2]; /* of the events socket, the replay one */
};
bool kv_events_stats(const struct poold *pd, struct kv_events_stats *ret);

/* kv.c: the KV cache index (coordinator) */
/* (The coordinator's journal records the namespaces each time they change.) */
typedef void (*kv_defined_cb)(struct poold *pd);
int kv_open(struct poold *pd, kv_defined_cb defined);
void kv_close(struct poold *pd);
void kv_session_end(struct poold *pd, uint32_t node, uint64_t session, bool all);
void kv_node_lost(struct poold *pd, uint32_t node);
void kv_sweep(struct poold *pd);
int kv_owner_open(struct poold *pd);
void kv_owner_close(struct poold *pd);
void kv_owner_fenced(struct poold *pd);
void kv_owner_hold(struct poold *pd, bool on);
int kv_handover_open(struct poold *pd);
void kv_handover_close(struct poold *pd);
/* kv-backup.c: the backup copies of sharded namespaces' shards */
int kv_backup_open(struct poold *pd);
void kv_backup_close(struct poold *pd);
/* The KV shards as this poold maps them and saw them move (proto/kvshardstats.h). */
struct kv_shard_stats {
	KV_SHARD_STATS(KV_SHARD_STAT_FIELD)
	bool told_moves;   /* the MOVES figures are told: it has a KV index */
	bool told_backups; /* ... and the BACKUPS: a namespace of 2 replicas exists */
};
void kv_shard_stats(struct poold *pd, struct kv_shard_stats *ret);
void kv_owner_defs(struct poold *pd, const struct kv_ns_spec *defs, size_t n);
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
extern const struct ctl_handler kv_handover_handlers[];
extern const struct ctl_handler kv_backup_handlers[];
extern const struct ctl_handler kv_demand_handlers[];
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

/*
 * A namespace, as the modules above the index name one: found or made by
 * name, and read through these (resp-shard.c).
 */
int kv_ns_create(struct poold *pd, const struct kv_ns_spec *spec, char *err, size_t errlen);
struct kv_ns *kv_ns_find(struct poold *pd, const char *name);
/*
 * After a request's puts (removed false) or removals of ns's keys (those
 * of locs[i].status 0 done): each sent to its shard's backup. 1 when some
 * were: done(arg) runs once the backups answered; 0 when none went.
 */
int kv_backup_send(struct poold *pd, struct kv_ns *ns, const ProtobufCBinaryData *keys,
		   const Pool__KvLocation *locs, size_t n, bool removed, void (*done)(void *arg),
		   void *arg);
int kv_owner_serves(struct poold *pd, const struct kv_ns *ns, const void *key, size_t klen);
const char *kv_ns_name(const struct kv_ns *ns);
uint32_t kv_ns_flags(const struct kv_ns *ns); /* HOLD_NS_* */
uint32_t kv_ns_replicas(const struct kv_ns *ns);

/* kv-db.c: the namespace of uid's database db now; a SWAPDB, done by the coordinator */
#define RESP_DBS 16
void resp_db_resolve(struct poold *pd, uid_t uid, int db, char *ns, size_t len);
int resp_db_swap(struct poold *pd, uid_t uid, int a, int b);

#endif /* POOLD_KV_H */

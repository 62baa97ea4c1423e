/*
 * daemon/kv/kv-int.h - what the KV index's files share (kv.c the index itself;
 * kv-evict.c, kv-reap.c, kv-tier.c, kv-dedup.c, kv-replica.c, kv-rebuild.c,
 * kv-evshards.c, kv-serve.c, kv-local.c): its records and the functions they call in each
 * other. Nothing outside them includes it; the rest of poold uses
 * poold.h's kv_* functions.
 */
#ifndef POOLD_KVINT_H
#define POOLD_KVINT_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/util/util.h"
#include "proto/pool_contract.h"

#define KV_MAX_NAMESPACES 256
#define KV_RESP_DBS 16	 /* a RESP endpoint's databases (RESP_DBS) */
#define KV_MAX_KEYS 4096 /* per request */
#define KV_RESERVE_TTL_MS 30000
#define KV_SHARED_HOLD_MS 1000 /* another uid's reservation holds a shared key this long */
#define KV_BUCKETS0 1024
#define KV_MAX_REPLICAS 4
#define KV_OFF_BITS 48		  /* offsets in an arena: LENDER_ARENA_BYTES */
#define KV_ARENA_BITS 16	  /* an arena's id: LENDER_ARENA_IDS */
#define KV_ALEN_BITS 28		  /* a place's bytes: POOL_KV_VALUE_MAX */
#define KV_RECOPY_MAX 16	  /* copies started again per sweep */
#define KV_RECOPY_TIMEOUT_MS 5000 /* a copy not done by then is tried again */
#define KV_REAP_NOW 256		  /* a namespace of up to this many entries is flushed at once */
#define KV_SWEEP_BUCKETS 8192	  /* buckets a sweep looks at for lost copies (kv_sweep()) */
#define KV_EVICT_NOW 512	  /* values a reservation looks at for room (kv-evict.c) */
#define KV_RETAIN_MS_MAX (1ull << 40) /* a pin's longest deadline: 34 years */

/*
 * A value's retention, set by the put that wrote it (kv-retain.c): a soft
 * pinned value is evicted only when its namespace has no unpinned one left
 * that could go, a hard pinned one never (it goes when removed, flushed or
 * overwritten by a put that does not pin it); either until its deadline,
 * when it has one.
 */
enum kv_retain { KV_RETAIN_NONE, KV_RETAIN_SOFT, KV_RETAIN_HARD };

/* A place a value is stored at. */
struct kv_place {
	uint32_t node, arena;
	uint64_t off, alen;
};

/*
 * One stored version of a value: its place and, in a replicated namespace,
 * copies of the same bytes on other lenders.
 *
 * The copies' places are out of line, room for KV_MAX_REPLICAS - 1 made
 * with the first (kv_val_copy_add()) and freed with the value's places
 * (kv_val_retire()): most namespaces have none, and a million keys would
 * carry 72 empty bytes each. A kv_val copied by value borrows them; the
 * one that owns them is the one whose places are freed in the end: the
 * index's, a zombie's, a reservation's, or a move's source once the move
 * is done (kv-tier.c).
 */
struct kv_val {
	/*
	 * Packed to 40 bytes, for the index's millions of entries (Scale I's
	 * 128 bytes a key with its key and bucket): the coordinator lends
	 * no arena whose offsets or id do not fit (LENDER_ARENA_BYTES,
	 * LENDER_ARENA_IDS), and no place is longer than a value's extent.
	 */
	uint64_t off : KV_OFF_BITS, arena : KV_ARENA_BITS;
	uint64_t version;
	uint32_t node;
	uint32_t alen : KV_ALEN_BITS;
	uint32_t ncopies : 2;
	uint32_t pmem : 1;    /* spilled to the lender's pmem tier, below a DRAM namespace */
	uint32_t charged : 1; /* its places' bytes count against owner's quota.bytes */
	uint32_t vlen;
	uint32_t owner;	       /* who it counts against: its writer (kv_val_owner()) */
	struct kv_place *copy; /* ncopies places, or NULL */
};
_Static_assert(POOL_KV_VALUE_MAX < (1u << (KV_ALEN_BITS - 1)),
	       "a value's extent fits struct kv_val's alen");
_Static_assert(LENDER_ARENA_BYTES <= 1ull << KV_OFF_BITS &&
		   LENDER_ARENA_IDS <= 1ull << KV_ARENA_BITS,
	       "an arena's offsets and id fit struct kv_val");
_Static_assert(KV_MAX_REPLICAS - 1 <= 3, "a value's copies fit struct kv_val's ncopies");
_Static_assert(sizeof(struct kv_val) == 40, "struct kv_val packs to 40 bytes");

/*
 * A version reserved and not yet committed, and its writer. Out of the
 * entry: a key has one for the moment of a put, and the index's millions
 * of other keys do not pay for its room.
 */
struct kv_write {
	struct kv_val val;
	uint32_t node; /* the writer: a session of a node */
	uint64_t session;
	uint64_t reserved_at; /* when (the sweep expires it, kv_expire_entry()) */
};

/* Readers of one version: a session of a node. */
struct kv_pin {
	struct kv_pin *next;
	uint32_t node;
	uint64_t session;
	uint64_t version;
	uint32_t count;
};

/*
 * What few of an index's entries have at any moment: a reservation,
 * readers, a place on the held list, an expiry, a lost copy being made
 * again. Out of the
 * entry (kv_extra()), and freed when the entry has none of them any more
 * (kv_extra_trim()): millions of keys that are neither read nor volatile
 * right now do not pay for their room.
 */
struct kv_extra {
	struct kv_write *pending;   /* a version reserved and not yet committed, or NULL */
	struct kv_pin *pins;	    /* readers of its value */
	int64_t expire_ms;	    /* when its value expires, in Unix ms (RESP EXPIRE), or 0 */
	uint64_t recopy_at;	    /* a lost copy of its value is being made again since, or 0 */
	TAILQ_ENTRY(kv_entry) vol;  /* while expire_ms is set: in its namespace's vol list */
	TAILQ_ENTRY(kv_entry) held; /* while the entry is_held: on its namespace's held list */
	int64_t retain_until;	    /* its retention (kv-retain.c) ends then, in Unix ms, or 0 */
	TAILQ_ENTRY(kv_entry) rvol; /* while retain_until is set: in its namespace's rvol list */
};

/*
 * An index entry. A lookup, a read and an overwrite touch only its first
 * two cache lines and its key, which sits right before it in the same
 * allocation (kv_entry_new()): with 100,000s of keys each is a cache
 * miss, so the fields they read come first. What only some entries have
 * for a while is out of line (x).
 */
struct kv_entry {
	struct kv_entry *hnext;
	uint32_t hash; /* its key's kv_hash(), the low half: buckets are fewer than 2^32 */
	uint32_t refs; /* dedup namespaces: holders of the value, or KV_REFS_UNKNOWN */
	uint16_t klen; /* its key: the klen bytes right before it (kv_entry_key()) */
	bool has_val : 1;
	bool moving : 1;  /* a spill or a promotion is copying its value */
	bool recount : 1; /* its references are being counted again */
	bool is_held : 1; /* pinned or reserved: on its namespace's held list (x->held) */
	bool edited : 1;  /* its value was made by changing the last one in place (RESP SETRANGE) */
	uint8_t retain;	  /* enum kv_retain: its value's pin against eviction (kv-retain.c) */
	/*
	 * When its value was last used (put, read): units_now_ms() modulo
	 * 2^32, so an age reads right for 49 days. The LRU's oldest says how
	 * far back a namespace's part keeps values (kv-demand.c).
	 */
	uint32_t used_ms;
	TAILQ_ENTRY(kv_entry) lru; /* while it has a committed value: its tier's list */
	struct kv_val val;
	struct kv_extra
	    *x; /* a reservation, pins, expiry, held list, recopy: or NULL (most keys) */
};

/* A value out of the index that readers still hold. */
struct kv_zombie {
	TAILQ_ENTRY(kv_zombie) entry;
	struct kv_val val;
	struct kv_pin *pins;
};

struct kv_ns {
	TAILQ_ENTRY(kv_ns) entry;
	char name[64];
	uint64_t id, capacity, used;
	uint64_t pmem_used; /* bytes spilled to the pmem tier */
	uint64_t leaving;   /* DRAM bytes whose spill is in flight: counted as gone */
	/*
	 * Of used and pmem_used, the bytes of copies in flight (kv_move(),
	 * kv_recopy()) that are no value's yet: their ends give them back
	 * to the namespace of their id, so a flush leaves them there.
	 */
	uint64_t landing, planding;
	KV_STATS(KV_STAT_COUNTER)  /* hits, misses... (proto/kvstats.h's COUNTED) */
	struct kv_entry **buckets; /* room for 2 * low of them */
	size_t nbuckets, nentries;
	size_t low; /* a power of two, low <= nbuckets <= 2 * low (kv_bucket()) */
	TAILQ_HEAD(kv_lru, kv_entry) lru; /* DRAM values, least recently used first */
	struct kv_lru plru;		  /* spilled values, likewise */
	struct kv_lru soft, hard;    /* DRAM values soft or hard pinned (kv-retain.c), likewise */
	TAILQ_HEAD(, kv_entry) rvol; /* entries whose retention has a deadline, in turn */
	uint64_t nsoft, nhard;	     /* values on those lists */
	TAILQ_HEAD(, kv_zombie) zombies;
	TAILQ_HEAD(, kv_entry)
	vol; /* entries with an expiry, checked in turn (kv_expire_cycle()) */
	uint64_t nvolatile, expired;
	uint64_t npending;   /* entries with a reservation (the sweep expires them) */
	size_t sweep_bucket; /* where the next sweep looks for lost copies (kv_sweep()) */
	/*
	 * Entries pinned by a reader or reserved by a writer: where a
	 * session's end and the sweep's expiry look, not at every key.
	 */
	TAILQ_HEAD(, kv_entry) held;
	uint64_t next_version;
	uint32_t local_node; /* values only on this node's arenas, or 0 */
	bool resp_db;	     /* a database of this node's RESP endpoint (kv_local_ensure()) */
	uint8_t serves_db;   /* 1 + the RESP database it serves since a SWAPDB; 0: its name's */
	uint32_t flags;	     /* HOLD_NS_*: never spill, persistent, never evict */
	uint32_t replicas;   /* places of each value, on as many lenders (1: no copies) */
	uint64_t size_hint;  /* values up to it take an extent of that size, or 0 */
	bool flushing;	     /* every key is going: one event says so (kv_ns_flush()) */
	bool evict_later;    /* over its capacity: the loop evicts (kv-evict.c) */
	/* A ghost, being freed (kv-reap.c): */
	size_t reap_bucket;  /* the first bucket that may still hold entries */
	size_t reap_count;   /* its entries when it began, */
	uint64_t reap_since; /* ... at this units_now_ms() */
	uid_t uid;	     /* who may read (4) and write (2) its values: owner, group, mode */
	gid_t gid;
	unsigned mode;
	uint64_t room; /* sharded: this poold's part of the capacity (kv-owner.c) */
	/*
	 * Sharded, of 1 replica: the part its keeper gave this poold for
	 * the demand it saw (0: none yet, room holds), its puts and hits,
	 * evictions and puts at the last report to the keeper, and at the
	 * keeper, what the owners reported (kv-demand.c).
	 */
	uint64_t given, reported, reported_evictions, reported_puts;
	struct kv_demand_book *book;
	struct kv_ages *ages; /* its LRU's values by when they were last used (kv-demand.c) */
	/*
	 * Sharded, of 2 replicas: its entries per shard, and of nentries those
	 * of the shards this poold backs (backs: kv_space.backing), which are
	 * copies of another owner's keys (kv-backup.c), not counted as its own.
	 */
	uint32_t *shard_entries;
	const uint8_t *backs;
	size_t copies;
	/*
	 * At a backup: for each shard whose whole copy began, the namespace's
	 * last version then; the copies of the shard not written since are
	 * what its owner no longer holds (kv-backup.c), dropped once it is done.
	 */
	uint64_t *copy_since;
};

/*
 * The places a value of ns takes in this index: a sharded namespace's
 * second copy is its shard's backup's, made there (kv-backup.c).
 */
static inline uint32_t kv_ns_places(const struct kv_ns *ns)
{
	return ns->flags & HOLD_NS_SHARDED ? 1 : ns->replicas;
}

/*
 * The bytes of values ns may hold here: its capacity, or a sharded one's
 * part of it (as its keeper gave it, kv-demand.c, or as the map shares it).
 */
static inline uint64_t kv_ns_room(const struct kv_ns *ns)
{
	if (!(ns->flags & HOLD_NS_SHARDED))
		return ns->capacity;
	return ns->given != 0 ? ns->given : ns->room;
}

/*
 * A commit of persistent values: its answer waits until every lender has
 * journaled the value it holds; a key whose lender cannot is failed (it
 * gets -EIO).
 */
struct kv_durable {
	bool *failed; /* per key */
	size_t n;
	uint64_t count, lost; /* keys committed, and of those, not made durable */
	unsigned pending;     /* lenders yet to answer */
	/* once they all have: answer(d, waiter) (it frees d), or nothing when abandoned */
	void (*answer)(struct kv_durable *d, void *waiter);
	void *waiter;
	bool abandoned; /* answered already, for want of memory to wait: d goes at the end */
	/* what each lender is told, sent as one message per lender once all keys are through */
	struct kv_durable_tell {
		uint32_t node;
		size_t i; /* the key */
		struct holding h;
	} * tells;
	size_t ntells, cap;
};

/* The keys of one message to a lender. */
struct kv_durable_batch {
	struct kv_durable *d;
	size_t n;
	size_t i[];
};

struct kv_space {
	TAILQ_HEAD(kv_ns_list, kv_ns) list;
	uint64_t next_id;
	struct kv_ns *orphans;	    /* what dropped namespaces' readers and writers still hold */
	struct kv_durable *durable; /* the commit being served, and its key */
	size_t durable_i;
	struct region *holder;		 /* dedup: the region taking the references served */
	unsigned recopies;		 /* copies started again in this sweep */
	TAILQ_HEAD(, kv_recopy) copying; /* copies in flight: their extents are claimed */
	kv_defined_cb defined;		 /* told when the namespaces' definitions change */
	/* The namespaces a SWAPDB moved to another RESP database (serves_db), in no order. */
	struct kv_ns *swapped[KV_MAX_NAMESPACES];
	unsigned nswapped;
	/*
	 * Flushed and dropped namespaces whose entries are being freed, a
	 * slice at a time (kv-reap.c), oldest first, and the event that frees
	 * the next slice.
	 */
	struct kv_ns_list reaping;
	struct event *reap_ev;
	struct event *evict_ev;	   /* evicts what reservations left over capacities (kv-evict.c) */
	struct event *owner_sweep; /* the sharded namespaces' (kv-owner.c) */
	uint64_t map_gen;	   /* the member table the shards' parts were worked out from */
	/*
	 * The KV shards as this poold serves them (kv-owner.c): each one's
	 * owner at the last change of the map (0: none). Of those it owns,
	 * the last owner whose keys it takes (from, 0: none): not served
	 * until they came (kv-handover.c). Those it lost (leaving): their keys
	 * kept for their new owners to take, until leave_until_ms. Those whose
	 * keys are dropped from the loop (dropping), a slice at a time, from
	 * namespace drop_ns's bucket drop_bucket on: not served until gone.
	 */
	uint32_t was[KV_SHARDS], from[KV_SHARDS];
	uint8_t hops[KV_SHARDS]; /* members asked after from[] said it has none (kv-handover.c) */
	/*
	 * A shard lost while its keys were still coming from its last owner:
	 * that owner, which keeps the rest (rest[], told to the new owner);
	 * at the new owner, whom to ask next once from[] handed what it has.
	 */
	uint32_t rest[KV_SHARDS], then[KV_SHARDS];
	uint8_t leaving[KV_SHARDS / 8], dropping[KV_SHARDS / 8];
	bool was_owner; /* it owned shards at the last change */
	bool held_back; /* none served: this poold stalled, maybe declared dead (kv_owner_hold()) */
	uint64_t leave_until_ms;
	bool drop_running;
	uint64_t drop_ns;
	size_t drop_bucket;
	struct event *drop_ev;
	TAILQ_HEAD(, kvhandover) handovers; /* asked of shards' last owners (kv-handover.c) */
	struct event *handover_ev;	    /* asks again: after -EAGAIN, or more shards came */
	void (*moved)(struct poold *pd);    /* told when shards may be asked for (kv-handover.c) */
	void (*moves_close)(struct poold *pd); /* ... and when this KV space goes (kv_close()) */
	uint64_t keys_in, keys_out, keys_lost;
	uint64_t drop_from; /* keys_lost when the drop under way began */
	/*
	 * The backup copies of the shards of namespaces of 2 copies
	 * (kv-backup.c): the shards this poold backs (map->second, at the last
	 * change), those of the dropping that it only backed (their drop
	 * loses nothing), and, of the shards it owns, the backup that holds
	 * the whole shard (0: none yet, or a copy failed: it is copied again).
	 */
	uint8_t backing[KV_SHARDS / 8], drop_copy[KV_SHARDS / 8];
	uint8_t stale[KV_SHARDS / 8]; /* copied whole: their older copies go (ns->copy_since) */
	uint32_t copied_to[KV_SHARDS];
	uint32_t whole_from[KV_SHARDS];	      /* at a backup: the owner whose whole copy it holds */
	TAILQ_HEAD(, kv_backup_copy) copies;  /* whole shards being copied to their backups */
	TAILQ_HEAD(, kv_backup_from) parts;   /* at a backup: values coming in pieces, per owner */
	TAILQ_HEAD(, kv_backup_waiter) waits; /* requests answered once their backups have them */
	struct event *copy_ev;
	void (*copy_kick)(struct poold *pd); /* told when the map changed (kv-backup.c) */
	void (*copy_close)(struct poold *pd);
	/* Told of each value evicted, before it goes (kv-backup.c: sent to its backup). */
	void (*evicted)(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e);
	struct kv_backup_gone *gone; /* evicted keys to send to their backups */
	size_t ngone, gone_cap;
	struct event *gone_ev;
	uint64_t backup_keys, backup_missed, backup_copied; /* sent, not taken, copied whole */
	uint64_t stale_dropped, stale_from; /* at a backup: copies a whole copy did not write */
	/*
	 * What each uid's values of sharded namespaces take here, apart from
	 * its other holdings: bounded by its part of its quota
	 * (kv_owner_quota_over()), the shards' part this poold keeps.
	 */
	struct usage_table shard_usage;
	uint32_t quota_shards; /* shards owned, and backed where a namespace has 2 replicas */
	/*
	 * The events of a sharded kv_events.namespace (kv-evshards.c): the
	 * shards whose keys' BlockStored this poold publishes (told: those
	 * it owns), those whose removals it publishes (known: those told of,
	 * and those it stopped owning until the walk withdrew their keys),
	 * and those the walk under way tells of or withdraws, from bucket
	 * ev_bucket of the namespace on.
	 */
	uint8_t ev_told[KV_SHARDS / 8], ev_known[KV_SHARDS / 8], ev_walk[KV_SHARDS / 8];
	size_t ev_bucket;
	struct event *ev_walk_ev;
	/* Sharded namespaces' use reported to their keepers (kv-demand.c). */
	TAILQ_HEAD(, kv_demand_call) demand_calls; /* unanswered */
	struct event *demand_ev;
	uint64_t demand_reports, part_changes; /* calls sent; parts changed here */
};

/*
 * The bucket of an entry of hash h. The table grows a bucket at a time,
 * as entries come (linear hashing, kv_entry_new()): buckets [0, nbuckets -
 * low) were split by the next bit of the hash, the others not yet, so no
 * put ever rehashes millions of entries at once.
 */
static inline size_t kv_bucket(const struct kv_ns *ns, uint32_t h)
{
	size_t b = h & (2 * ns->low - 1);

	return b < ns->nbuckets ? b : h & (ns->low - 1);
}

/* The ledger's region id of a namespace's extents: kept apart from region ids. */
#define KV_HOLD_ID(ns) ((UINT64_C(1) << 63) | (ns)->id)

#define KV_NS_FLAGS                                                                                \
	(HOLD_NS_DRAM_ONLY | HOLD_NS_PERSISTENT | HOLD_NS_NO_EVICT | HOLD_NS_DEDUP |               \
	 HOLD_NS_SHARED | HOLD_NS_SHARDED)
/* References of a value taken back after a restart: not known, so never dropped. */
#define KV_REFS_UNKNOWN UINT32_MAX

/* A lost copy being made again. */
struct kv_recopy {
	TAILQ_ENTRY(kv_recopy) entry; /* on kv_space.copying */
	uint64_t ns_id, version;
	uint8_t *key;
	size_t klen;
	struct kv_place to;
};

/* Who operates on a key: a session of a node, acting as a uid. */
struct kv_caller {
	uint32_t node;
	uint64_t session;
	uid_t uid;
};

/* Which places of the value an operation's answer names (kv_loc()). */
enum kv_places {
	KV_PLACES_NONE,	     /* none (a failure, or nothing to name) */
	KV_PLACES_READ,	     /* the reader's nearest first, then the other live copies */
	KV_PLACES_READ_ONE,  /* the reader's nearest */
	KV_PLACES_WRITE,     /* every place, its own first: the writer fills each */
	KV_PLACES_WRITE_ONE, /* its own */
};

/* How an operation on one key went (kv_key_op()). */
struct kv_result {
	int status;	   /* 0 or -errno */
	struct kv_val val; /* the value it names (a copy: the index may change it next) */
	enum kv_places places;
};

/* kv.c */
int kv_key_op(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who, enum kv_op op,
	      const uint8_t *key, size_t klen, uint64_t arg, struct kv_result *res);
unsigned kv_key_access(enum kv_op op);
void kv_ns_drop(struct poold *pd, struct kv_ns *ns);
size_t kv_place_first(struct poold *pd, const struct kv_place *all, size_t n, uint32_t near);
int kv_read_here(struct poold *pd, struct kv_ns *ns, const uint8_t *key, size_t klen, size_t max,
		 const void **ret_data, size_t *ret_len, uint64_t *ret_version);
const char *kv_tier_name(uint32_t flags);
void kv_ns_def(const struct kv_ns *ns, struct kv_ns_spec *ret);
void kv_ns_serve(struct poold *pd, struct kv_ns *ns, unsigned db1);
void kv_ns_stats(const struct kv_ns *ns, struct kv_ns_stats *ret);
struct kv_entry *kv_entry_new(struct kv_ns *ns, const uint8_t *key, size_t klen, uint64_t h);
struct kv_ns *kv_ns_new(struct poold *pd, const char *name, uint64_t capacity);
void kv_ns_lists_init(struct kv_ns *ns);
void kv_pending_end(struct kv_ns *ns, struct kv_entry *e);
struct kv_extra *kv_extra(struct kv_entry *e);
void kv_extra_trim(struct kv_entry *e);
int kv_set_expire(struct kv_ns *ns, struct kv_entry *e, int64_t at);
void kv_val_retire(struct poold *pd, struct kv_val *v);
int kv_val_copy_add(struct poold *pd, struct kv_val *v, const struct kv_place *p);
uint32_t kv_key_owner(const uint8_t *key, size_t klen);
uint32_t kv_val_owner(const struct kv_ns *ns, const uint8_t *key, size_t klen, uint32_t writer);
int kv_owner_charge(struct poold *pd, struct kv_val *v, uint32_t owner);
void kv_val_recharge(struct poold *pd, const struct kv_val *v, int64_t delta);
void kv_val_free(struct poold *pd, struct kv_ns *ns, struct kv_val *v);
void kv_pins_free(struct kv_pin *p);
void kv_val_out(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);
void kv_pending_retire(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);
void kv_retire_val(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);
bool kv_entry_unused(const struct kv_entry *e);
void kv_entry_drop(struct kv_ns *ns, struct kv_entry *e);
void kv_entry_clear(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);
struct kv_entry *kv_live(struct poold *pd, struct kv_ns *ns, struct kv_entry **pp);
struct kv_entry *kv_expire_now(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);
struct lender_pool *kv_pick(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len,
			    const uint32_t *avoid, size_t navoid);
int kv_place(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len, struct kv_val *v);
int kv_place_evicting(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len,
		      struct kv_val *v);
bool kv_node_up(struct poold *pd, uint32_t node);
bool kv_val_usable(struct poold *pd, const struct kv_val *v);
int kv_pin(struct kv_ns *ns, struct kv_entry *e, uint32_t node, uint64_t session);
void kv_unhold(struct kv_ns *ns, struct kv_entry *e);
bool kv_unpin(struct kv_pin **pp, uint32_t node, uint64_t session, uint64_t version);
void kv_zombies_sweep(struct poold *pd, struct kv_ns *ns);
void kv_zombie_move(struct kv_ns *ns, struct kv_zombie *z);
struct kv_ns *kv_ns_by_id(struct poold *pd, uint64_t id);
void kv_foreach_ns(struct poold *pd, struct kv_ns *ns,
		   void (*fn)(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg),
		   void *arg);
void kv_ns_flush(struct poold *pd, struct kv_ns *ns);
void kv_ns_clear(struct poold *pd, struct kv_ns *ns);
void kv_ns_free(struct poold *pd, struct kv_ns *ns);

/* kv-retain.c */
int kv_retain_set(struct kv_ns *ns, struct kv_entry *e, enum kv_retain how, int64_t until);
void kv_retain_end(struct kv_ns *ns, struct kv_entry *e);
void kv_retain_cycle(struct poold *pd);

/* kv-evict.c */
int kv_quota_room(struct poold *pd, struct kv_ns *ns, uint32_t owner, uint64_t need);
int kv_make_room(struct poold *pd, struct kv_ns *ns, uint64_t need, bool may_evict);
bool kv_evict(struct poold *pd, uint64_t budget_us);
int kv_evict_open(struct poold *pd);
void kv_evict_close(struct poold *pd);
void kv_evict_over(struct poold *pd, struct kv_ns *ns);

/* kv-reap.c */
int kv_reap_open(struct poold *pd);
void kv_reap_close(struct poold *pd);
int kv_reap_flush(struct poold *pd, struct kv_ns *ns);
void kv_reap_drop(struct poold *pd, struct kv_ns *ns);
bool kv_evict_one(struct poold *pd, struct kv_ns *ns);
/* Namespaces whose values are never evicted for another's room. */
#define KV_NS_KEEPS (HOLD_NS_NO_EVICT | HOLD_NS_DEDUP | HOLD_NS_PERSISTENT)
uint64_t kv_fair_level(struct poold *pd, const struct kv_ns *ns, uint64_t total);
struct kv_ns *kv_victim(struct poold *pd, struct kv_ns *ns, uint64_t level);
/* kv-owner.c: a poold's part of the sharded namespaces */
/* A value coming in pieces from another poold: its namespace, reservation, bytes so far, key. */
struct kv_part {
	uint64_t ns, version, got;
	uint8_t *key;
	size_t klen;
};
int kv_handover_put(struct poold *pd, struct kv_part *part, struct kv_ns *ns,
		    const Pool__KvHandoverEntry *in);
bool kv_handover_part_end(struct poold *pd, struct kv_part *part);
/* Entry out: e's key, len bytes of its value (data) from off, its size, uid and expiry. */
void kv_handover_entry(Pool__KvHandoverEntry *out, const struct kv_entry *e, uint64_t off,
		       void *data, uint64_t len);
int kv_owner_place(struct poold *pd, struct kv_ns *ns, uint64_t len, struct kv_val *v);
bool kv_owner_quota_over(struct poold *pd, uint32_t uid, uint64_t need);
struct kv_ns *kv_owner_next_ns(struct poold *pd, uint64_t id);
void kv_owner_map(struct poold *pd);
void kv_owner_drop_start(struct poold *pd);
bool kv_owner_alive(struct poold *pd, uint32_t node);
static inline bool kv_owner_bit(const uint8_t *bits, uint32_t shard)
{
	return bits[shard / 8] >> (shard % 8) & 1;
}
/* Whether this poold keeps shard's keys of ns as their backup (a namespace of 2 replicas). */
static inline bool kv_owner_keeps(const struct kv_space *kv, const struct kv_ns *ns, uint32_t shard)
{
	return ns->replicas > 1 && kv_owner_bit(kv->backing, shard);
}
static inline void kv_owner_set(uint8_t *bits, uint32_t shard, bool on)
{
	if (on)
		bits[shard / 8] |= (uint8_t)(1u << (shard % 8));
	else
		bits[shard / 8] &= (uint8_t) ~(1u << (shard % 8));
}
bool kv_reap(struct poold *pd, size_t max, uint64_t budget_us);

/* kv-demand.c: a sharded namespace's capacity shared as its owners' demand goes */
#define KV_DEMAND_POINTS 10 /* a report's points of its use by age: 8 ms, 16 ms... 4 s */
struct kv_demand_use {
	uint64_t used, age_ms; /* an owner's bytes, held back to its LRU's oldest age */
	bool evicted;	       /* it evicted since its last report */
	/* Of them, those used within 8 ms, 16 ms..., each age twice the last (npoints: 0, none). */
	uint64_t held[KV_DEMAND_POINTS];
	size_t npoints;
};
/*
 * The parts of capacity (ret, n of them) that owners of use[] (n) keep:
 * values back to about the same age in each, once one evicts (never under
 * 1/16 of an even part); before, what each holds and the rest shared
 * likewise.
 */
void kv_demand_split(const struct kv_demand_use *use, size_t n, uint64_t capacity, uint64_t *ret);
void kv_demand_book_free(struct kv_demand_book *b);
void kv_demand_arm(struct poold *pd, const struct kv_ns *ns);
void kv_demand_ns(struct kv_ns *ns);
void kv_demand_map(struct poold *pd);
void kv_demand_forget(struct kv_ns *ns);
void kv_ages_count(struct kv_ages *a, uint64_t now, uint32_t used_ms, uint64_t bytes, bool add);
void kv_ages_clear(struct kv_ns *ns);
int kv_demand_open(struct poold *pd);
void kv_demand_close(struct poold *pd);

/* kv-evshards.c: the events of a sharded namespace, those of the shards this poold owns */
void kv_ev_stored(struct poold *pd, const struct kv_ns *ns, const uint8_t *key, size_t klen,
		  bool pmem);
void kv_ev_removed(struct poold *pd, const struct kv_ns *ns, const uint8_t *key, size_t klen,
		   bool pmem);
void kv_ev_moved(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e);
void kvevshards_map(struct poold *pd, const struct kv_shard_map *map);
int kvevshards_open(struct poold *pd);
bool kv_reap_settle(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
		    const uint8_t *key, size_t klen, uint64_t h, uint64_t version);

/* kv-tier.c */
struct kv_durable *kv_durable_new(size_t n);
void kv_durable_send(struct poold *pd, struct kv_durable *d);
void kv_durable_free(struct kv_durable *d);
void kv_tell(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e);
int kv_spill(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool may_evict);
void kv_promote(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);

/* kv-dedup.c */
int kv_holder_add(struct poold *pd, struct kv_ns *ns, const uint8_t *key, size_t klen,
		  struct kv_entry *e);
bool kv_dedup_reserve(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, uid_t uid,
		      int *ret_status);
int kv_verify(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e, uid_t uid);
int kv_recount(struct poold *pd, struct kv_ns *ns, uint64_t *ret_freed, char *err, size_t errlen);

/* kv-replica.c */
void kv_recopy(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);

/* kv-tell.c (the wire's side is in poold.h) */
void kv_defs_send(struct poold *pd);
int kv_send_copy(struct poold *pd, uint32_t node, uint32_t src_arena, uint64_t src_off,
		 uint32_t dst_arena, uint64_t dst_off, uint64_t len, coord_done_cb done, void *arg);

/* The tier a namespace's values live in (before any spill). */
static inline enum tier kv_tier(const struct kv_ns *ns)
{
	return ns->flags & HOLD_NS_PERSISTENT ? TIER_PMEM : TIER_DRAM;
}

static inline uint64_t kv_hash(const uint8_t *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

/* An entry's key: right before it in its allocation (kv_entry_new()). */
static inline uint8_t *kv_entry_key(const struct kv_entry *e)
{
	return (uint8_t *)e - e->klen;
}

/*
 * An entry's reservation (NULL: none), readers, expiry (0: none) and
 * recopy's start (0: none), whether or not it has x.
 */
static inline struct kv_write *kv_pending(const struct kv_entry *e)
{
	return e->x != NULL ? e->x->pending : NULL;
}

static inline struct kv_pin *kv_pins(const struct kv_entry *e)
{
	return e->x != NULL ? e->x->pins : NULL;
}

static inline int64_t kv_expire_at(const struct kv_entry *e)
{
	return e->x != NULL ? e->x->expire_ms : 0;
}

static inline int64_t kv_retain_until(const struct kv_entry *e)
{
	return e->x != NULL ? e->x->retain_until : 0;
}

static inline uint64_t kv_recopy_at(const struct kv_entry *e)
{
	return e->x != NULL ? e->x->recopy_at : 0;
}

static inline struct kv_entry **kv_slot(struct kv_ns *ns, const uint8_t *key, size_t klen,
					uint64_t h)
{
	struct kv_entry **pp = &ns->buckets[kv_bucket(ns, (uint32_t)h)];

	for (; *pp != NULL; pp = &(*pp)->hnext)
		if ((*pp)->hash == (uint32_t)h && (*pp)->klen == klen &&
		    memcmp(kv_entry_key(*pp), key, klen) == 0)
			break;
	return pp;
}

/* The bytes before an entry that hold its key, the entry aligned as it must be. */
static inline size_t kv_key_room(size_t klen)
{
	return (klen + _Alignof(struct kv_entry) - 1) & ~(_Alignof(struct kv_entry) - 1);
}

/* Now, in Unix ms: expiry times are wall-clock times, as EXPIREAT's. */
static inline int64_t kv_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A value's places, its own first: their number. */
static inline size_t kv_places(const struct kv_val *v, struct kv_place *out)
{
	size_t i;

	out[0] = (struct kv_place){v->node, v->arena, v->off, v->alen};
	for (i = 0; i < v->ncopies; i++)
		out[i + 1] = v->copy[i];
	return i + 1;
}

/* Bytes of memory a value takes, copies included. */
static inline uint64_t kv_val_bytes(const struct kv_val *v)
{
	uint64_t n = v->alen;
	size_t i;

	for (i = 0; i < v->ncopies; i++)
		n += v->copy[i].alen;
	return n;
}

static inline bool kv_val_on(const struct kv_val *v, uint32_t node)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (all[i].node == node)
			return true;
	return false;
}

/*
 * The recency list of an entry's committed value: of its tier, and in
 * DRAM of its retention (a hard pinned value never spills).
 */
static inline struct kv_lru *kv_lru(struct kv_ns *ns, const struct kv_entry *e)
{
	if (e->val.pmem)
		return &ns->plru;
	return e->retain == KV_RETAIN_HARD   ? &ns->hard
	       : e->retain == KV_RETAIN_SOFT ? &ns->soft
					     : &ns->lru;
}

/*
 * The bytes of a namespace's values on its LRU by when they were last
 * used: a ring of KV_AGE_EPOCHS epochs of KV_AGE_EPOCH_MS, the one of epoch
 * newest last, and those used before the ring's first together (older).
 * Kept for sharded namespaces of 1 replica, whose owners report it
 * (kv-demand.c): 4 KiB a namespace, two counts a use.
 */
#define KV_AGE_EPOCH_MS 8
#define KV_AGE_EPOCHS 512
struct kv_ages {
	uint64_t newest, older;
	uint64_t bytes[KV_AGE_EPOCHS];
};

/* Whether e's value counts in its namespace's ages. */
static inline bool kv_lru_aged(struct kv_ns *ns, const struct kv_entry *e)
{
	return ns->ages != NULL && !e->val.pmem && e->retain == KV_RETAIN_NONE;
}

/* kv_lru_append() at now (units_now_ms()). */
static inline void kv_lru_append_at(struct kv_ns *ns, struct kv_entry *e, uint64_t now)
{
	e->used_ms = (uint32_t)now;
	TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
	if (kv_lru_aged(ns, e))
		kv_ages_count(ns->ages, now, e->used_ms, e->val.alen, true);
}

/* kv_lru_remove() at now (units_now_ms(); read only where the ages count). */
static inline void kv_lru_remove_at(struct kv_ns *ns, struct kv_entry *e, uint64_t now)
{
	if (kv_lru_aged(ns, e))
		kv_ages_count(ns->ages, now != 0 ? now : units_now_ms(), e->used_ms, e->val.alen,
			      false);
	TAILQ_REMOVE(kv_lru(ns, e), e, lru);
}

/* e's committed value was used now: the most recent of its recency list. */
static inline void kv_lru_append(struct kv_ns *ns, struct kv_entry *e)
{
	kv_lru_append_at(ns, e, units_now_ms());
}

/* e's committed value leaves its recency list. */
static inline void kv_lru_remove(struct kv_ns *ns, struct kv_entry *e)
{
	kv_lru_remove_at(ns, e, 0);
}

/* e's value, on its recency list, was used again (the clock read once). */
static inline void kv_lru_touch(struct kv_ns *ns, struct kv_entry *e)
{
	uint64_t now = units_now_ms();

	kv_lru_remove_at(ns, e, now);
	kv_lru_append_at(ns, e, now);
}

/* A RESP database: it takes the empty key. */
static inline bool kv_is_resp_db(const struct kv_ns *ns)
{
	return ns->resp_db;
}

/*
 * The extent a value of len bytes takes: with a size hint, values up to it
 * all take the same size, so a freed one leaves a hole the next one fits.
 */
static inline uint64_t kv_alloc_len(const struct kv_ns *ns, uint64_t len)
{
	return ns->size_hint != 0 && len <= ns->size_hint ? ns->size_hint : MAX(len, 1);
}

/* Whether the places are named for a reader (the nearest first) rather than a writer. */
static inline bool kv_places_reader(enum kv_places places)
{
	return places == KV_PLACES_READ || places == KV_PLACES_READ_ONE;
}

/* Set *res: status, the value named (when places says one is), which places. */
static inline void kv_result(struct kv_result *res, int status, const struct kv_val *v,
			     enum kv_places places)
{
	res->status = status;
	res->places = status == 0 && v != NULL ? places : KV_PLACES_NONE;
	if (res->places != KV_PLACES_NONE)
		res->val = *v;
}

#endif

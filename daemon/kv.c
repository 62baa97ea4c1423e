/*
 * daemon/kv.c - the KV cache index, kept by the coordinator.
 *
 * Namespaces map keys (block hashes, up to 256 bytes) to values stored in
 * cache-class extents of the lend pools; clients move the bytes themselves,
 * one-sided. A put is reserve (an extent is allocated and a version taken),
 * the client's write, then commit (the version becomes the value). A
 * reader's lookup pins the version it gets until it releases it: a value
 * replaced, removed or evicted while pinned lives on, out of the index, until
 * its last pin goes. A reservation superseded by a later writer, or whose
 * namespace is flushed, is kept the same way, pinned by its writer, until
 * that writer commits (the commit succeeds and changes nothing) or goes
 * away: memory a writer may still be writing into is never lent again.
 * Reservations not committed within KV_RESERVE_TTL_MS, and pins of clients
 * that go away, are dropped.
 *
 * Each namespace has a capacity in bytes; beyond it the least recently used
 * unpinned values are evicted. Values are placed by key hash over two
 * candidate lenders, the one with more room winning (power of two choices),
 * so keys spread over lenders and an empty, freshly restarted lender is not
 * flooded. Values on a lender that dies are dropped: gets become misses.
 *
 * Under pressure a value is not dropped if its lender has a pmem tier with
 * room (and the namespace is not DRAM only): it spills there (the lender
 * copies it between its own arenas), and a hit on a spilled value promotes
 * it back to DRAM, spilling colder values to make room but evicting none.
 * The capacity bounds DRAM; spilled values are bounded by the pmem tier,
 * beyond which the least recently used ones are dropped.
 *
 * A persistent namespace (tier pmem) keeps its values in the lenders' pmem
 * tiers instead, bounded by its capacity, never spilled: each lender
 * journals the values it holds for it (hold.c), so they survive a restart
 * of the lender or of the coordinator. A namespace created with evict none
 * refuses puts when full instead of evicting.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "daemon/extent.h"
#include "daemon/ledger.h"
#include "daemon/placement.h"
#include "daemon/poold.h"
#include "proto/pool_contract.h"

#define KV_MAX_NAMESPACES 256
#define KV_MAX_KEYS 4096 /* per request */
#define KV_RESERVE_TTL_MS 30000
#define KV_SHARED_HOLD_MS 1000 /* what another uid's reservation holds a shared key against a put */
#define KV_BUCKETS0 1024
#define KV_MAX_REPLICAS 4
#define KV_RECOPY_MAX 16	     /* copies started again per sweep */
#define KV_RECOPY_TIMEOUT_MS 5000 /* a copy not done by then is tried again */

/* A place a value is stored at. */
struct kv_place {
	uint32_t node, arena;
	uint64_t off, alen;
};

/*
 * One stored version of a value: its place and, in a replicated namespace,
 * copies of the same bytes on other lenders.
 */
struct kv_val {
	uint32_t node, arena;
	uint64_t off, alen, vlen, version;
	uint64_t charged; /* bytes counted against owner's quota.bytes (kv_owner_charge()) */
	uint32_t owner;	  /* who it counts against: its writer (kv_val_owner()) */
	bool pmem;	  /* spilled to the lender's pmem tier, below a DRAM namespace */
	uint8_t ncopies;
	struct kv_place copy[KV_MAX_REPLICAS - 1]; /* last: most namespaces have none */
};

/* Storage for the places of one reply location. */
struct kv_locplaces {
	Pool__KvPlace place[KV_MAX_REPLICAS];
	Pool__KvPlace *ptr[KV_MAX_REPLICAS];
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
 * An index entry. A lookup, a read and an overwrite touch only its first
 * two cache lines and its key, which sits right before it in the same
 * allocation (kv_entry_new()): with 100,000s of keys each is a cache
 * miss, so the fields they read come first and the rare ones last.
 */
struct kv_entry {
	struct kv_entry *hnext;
	uint64_t hash;
	uint8_t *key;
	uint16_t klen;
	bool has_val, has_pending;
	bool moving; /* a spill or a promotion is copying its value */
	bool recount; /* its references are being counted again */
	struct kv_pin *pins;
	int64_t expire_ms;	   /* when its value expires, in Unix ms (RESP EXPIRE), or 0 */
	TAILQ_ENTRY(kv_entry) lru; /* while it has a committed value: its tier's list */
	struct kv_val val;
	struct kv_val pending;
	uint32_t pnode; /* the writer of the pending version */
	uint32_t refs;	/* dedup namespaces: holders of the value, or KV_REFS_UNKNOWN */
	uint64_t psession;
	uint64_t preserved_at;
	uint64_t recopy_at; /* a lost copy of its value is being made again since, or 0 */
	TAILQ_ENTRY(kv_entry) vol; /* while expire_ms is set: in its namespace's vol list */
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
	uint64_t hits, misses, evictions, puts, spills, promotions, pmem_hits;
	struct kv_entry **buckets;
	size_t nbuckets, nentries;
	TAILQ_HEAD(kv_lru, kv_entry) lru; /* DRAM values, least recently used first */
	struct kv_lru plru;		   /* spilled values, likewise */
	TAILQ_HEAD(, kv_zombie) zombies;
	TAILQ_HEAD(, kv_entry) vol; /* entries with an expiry, checked in turn (kv_expire_cycle()) */
	uint64_t nvolatile, expired;
	uint64_t npending; /* entries with a reservation (the sweep expires them) */
	uint64_t next_version;
	uint32_t local_node; /* values only on this node's arenas, or 0 */
	bool resp_db;	     /* a database of this node's RESP endpoint (kv_local_ensure()) */
	uint32_t flags;	     /* HOLD_NS_*: never spill, persistent, never evict */
	uint32_t replicas;   /* places of each value, on as many lenders (1: no copies) */
	uint64_t size_hint;  /* values up to it take an extent of that size, or 0 */
	bool flushing;	     /* every key is going: one event says so (kv_ns_flush()) */
	uid_t uid;	     /* who may read (4) and write (2) its values: owner, group, mode */
	gid_t gid;
	unsigned mode;
};

/*
 * A commit of persistent values: its reply waits until every lender has
 * journaled the value it holds; a key whose lender cannot gets -EIO.
 */
struct kv_durable {
	struct req *q;		/* held, once the request is through */
	Pool__KvLocation *locs; /* the reply's, one per key */
	size_t n;
	uint64_t count, lost;	/* keys committed, and of those, not made durable */
	unsigned pending;	/* lenders yet to answer */
	/* what each lender is told, sent as one message per lender once all keys are through */
	struct kv_durable_tell {
		uint32_t node;
		size_t i; /* the key */
		Pool__Holding h;
	} *tells;
	size_t ntells, cap;
};

/* The keys of one message to a lender. */
struct kv_durable_batch {
	struct kv_durable *d;
	size_t n;
	size_t i[];
};

struct kv_space {
	TAILQ_HEAD(, kv_ns) list;
	uint64_t next_id;
	struct kv_ns *orphans; /* what dropped namespaces' readers and writers still hold */
	struct kv_durable *durable; /* the commit being served, and its key */
	size_t durable_i;
	struct region *holder;	    /* dedup: the region taking the references served */
	unsigned recopies;	    /* copies started again in this sweep */
	TAILQ_HEAD(, kv_recopy) copying; /* copies in flight: their extents are claimed */
};

/* The ledger's region id of a namespace's extents: kept apart from region ids. */
#define KV_HOLD_ID(ns) ((UINT64_C(1) << 63) | (ns)->id)
#define KV_NS_FLAGS                                                                    \
	(HOLD_NS_DRAM_ONLY | HOLD_NS_PERSISTENT | HOLD_NS_NO_EVICT | HOLD_NS_DEDUP |      \
	 HOLD_NS_SHARED)
/* References of a value taken back after a restart: not known, so never dropped. */
#define KV_REFS_UNKNOWN UINT32_MAX

/* The tier a namespace's values live in (before any spill). */
static enum tier kv_tier(const struct kv_ns *ns)
{
	return ns->flags & HOLD_NS_PERSISTENT ? TIER_PMEM : TIER_DRAM;
}

static const char *kv_tier_name(const struct kv_ns *ns)
{
	return ns->flags & HOLD_NS_PERSISTENT ? "pmem" :
	       ns->flags & HOLD_NS_DRAM_ONLY ? "dram" : "dram+pmem";
}

static struct kv_ns *kv_ns_find(struct poold *pd, const char *name)
{
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (strcmp(ns->name, name) == 0)
			return ns;
	return NULL;
}

static uint64_t kv_hash(const uint8_t *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

static struct kv_entry **kv_slot(struct kv_ns *ns, const uint8_t *key, size_t klen, uint64_t h)
{
	struct kv_entry **pp = &ns->buckets[h & (ns->nbuckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->hnext)
		if ((*pp)->hash == h && (*pp)->klen == klen && memcmp((*pp)->key, key, klen) == 0)
			break;
	return pp;
}

static void kv_grow(struct kv_ns *ns)
{
	size_t n = ns->nbuckets * 2, i;
	struct kv_entry **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return; /* longer chains, still correct */
	for (i = 0; i < ns->nbuckets; i++) {
		struct kv_entry *e = ns->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->hnext;
			e->hnext = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(ns->buckets);
	ns->buckets = b;
	ns->nbuckets = n;
}

/* The bytes before an entry that hold its key, the entry aligned as malloc() aligns. */
static size_t kv_key_room(size_t klen)
{
	return (klen + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
}

/* A new entry for a key, linked into the namespace; NULL without memory. */
static struct kv_entry *kv_entry_new(struct kv_ns *ns, const uint8_t *key, size_t klen,
				     uint64_t h)
{
	/* The key right before the entry: a short one shares its first cache line. */
	uint8_t *mem = calloc(1, kv_key_room(klen) + sizeof(struct kv_entry));
	struct kv_entry *e;

	if (mem == NULL)
		return NULL;
	e = (struct kv_entry *)(void *)(mem + kv_key_room(klen));
	e->key = (uint8_t *)e - klen;
	memcpy(e->key, key, klen);
	e->klen = (uint16_t)klen;
	e->hash = h;
	e->hnext = ns->buckets[h & (ns->nbuckets - 1)];
	ns->buckets[h & (ns->nbuckets - 1)] = e;
	if (++ns->nentries > ns->nbuckets)
		kv_grow(ns);
	return e;
}

/* A new namespace; NULL without memory. */
static struct kv_ns *kv_ns_new(struct poold *pd, const char *name, uint64_t capacity)
{
	struct kv_ns *ns = calloc(1, sizeof(*ns));

	if (ns == NULL || (ns->buckets = calloc(KV_BUCKETS0, sizeof(*ns->buckets))) == NULL) {
		free(ns);
		return NULL;
	}
	snprintf(ns->name, sizeof(ns->name), "%s", name);
	ns->id = ++pd->kv->next_id;
	ns->capacity = capacity;
	ns->replicas = 1;
	ns->mode = 0666; /* poold's own (RESP, snapshot pages) and older ones: open to all */
	ns->nbuckets = KV_BUCKETS0;
	TAILQ_INIT(&ns->lru);
	TAILQ_INIT(&ns->plru);
	TAILQ_INIT(&ns->zombies);
	TAILQ_INIT(&ns->vol);
	TAILQ_INSERT_TAIL(&pd->kv->list, ns, entry);
	return ns;
}

/* An entry's reservation made (on) or gone: counted, so the sweep walks only where there are some. */
static void kv_set_pending(struct kv_ns *ns, struct kv_entry *e, bool on)
{
	if (e->has_pending != on)
		ns->npending += on ? 1 : (uint64_t)-1;
	e->has_pending = on;
}

/* Now, in Unix ms: expiry times are wall-clock times, as EXPIREAT's. */
static int64_t kv_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Give an entry an expiry (Unix ms), or none (0). */
static void kv_set_expire(struct kv_ns *ns, struct kv_entry *e, int64_t at)
{
	if (e->expire_ms != 0 && at == 0) {
		TAILQ_REMOVE(&ns->vol, e, vol);
		ns->nvolatile--;
	} else if (e->expire_ms == 0 && at != 0) {
		TAILQ_INSERT_TAIL(&ns->vol, e, vol);
		ns->nvolatile++;
	}
	e->expire_ms = at;
}

static bool kv_expired(const struct kv_entry *e, int64_t now)
{
	return e->expire_ms != 0 && e->expire_ms <= now;
}

/* A value's places, its own first: their number. */
static size_t kv_places(const struct kv_val *v, struct kv_place *out)
{
	size_t i;

	out[0] = (struct kv_place){v->node, v->arena, v->off, v->alen};
	for (i = 0; i < v->ncopies; i++)
		out[i + 1] = v->copy[i];
	return i + 1;
}

/* Bytes of memory a value takes, copies included. */
static uint64_t kv_val_bytes(const struct kv_val *v)
{
	uint64_t n = v->alen;
	size_t i;

	for (i = 0; i < v->ncopies; i++)
		n += v->copy[i].alen;
	return n;
}

static bool kv_val_on(const struct kv_val *v, uint32_t node)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (all[i].node == node)
			return true;
	return false;
}

/* Give a value's places back, without accounting (each scrubbed by its lender first). */
static void kv_val_retire(struct poold *pd, const struct kv_val *v)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		region_retire(pd, all[i].node, all[i].arena, all[i].off, all[i].alen, NULL);
}

/* The uid a dedup namespace's key belongs to: its first 4 bytes, big-endian. */
static uint32_t kv_key_owner(const uint8_t *key, size_t klen)
{
	return klen < 4 ? UINT32_MAX
			: (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 |
				  key[3];
}

/*
 * The uid a value counts against for quota.bytes: its writer. A snapshot
 * page is its key's uid (the only uid that may write it), so a page shared
 * by many snapshots counts once; a page of the store shared across uids,
 * the uid that first stored it.
 */
static uint32_t kv_val_owner(const struct kv_ns *ns, const uint8_t *key, size_t klen,
			     uint32_t writer)
{
	return (ns->flags & (HOLD_NS_DEDUP | HOLD_NS_SHARED)) == HOLD_NS_DEDUP
		       ? kv_key_owner(key, klen)
		       : writer;
}

/* Count a value's bytes (its copies too) against owner; -ENOMEM. */
static int kv_owner_charge(struct poold *pd, struct kv_val *v, uint32_t owner)
{
	if (usage_charge(&pd->usage, owner, (int64_t)kv_val_bytes(v), 0) < 0)
		return -ENOMEM;
	v->owner = owner;
	v->charged = kv_val_bytes(v);
	return 0;
}

/* Stop counting what kv_owner_charge() counted. */
static void kv_owner_uncharge(struct poold *pd, struct kv_val *v)
{
	usage_charge(&pd->usage, v->owner, -(int64_t)v->charged, 0);
	v->charged = 0;
}

/* Give a value's places back. */
static void kv_val_free(struct poold *pd, struct kv_ns *ns, struct kv_val *v)
{
	kv_owner_uncharge(pd, v);
	kv_val_retire(pd, v);
	if (v->pmem)
		ns->pmem_used -= kv_val_bytes(v);
	else
		ns->used -= kv_val_bytes(v);
}

/*
 * Pins alive in the index (of entries and of zombies): when there are
 * none, a session's end need not look at every entry (poold has one KV
 * index, and one thread).
 */
static uint64_t kv_npins;

static void kv_pins_free(struct kv_pin *p)
{
	while (p != NULL) {
		struct kv_pin *next = p->next;

		free(p);
		kv_npins--;
		p = next;
	}
}

/* The recency list of the tier of an entry's committed value. */
static struct kv_lru *kv_lru(struct kv_ns *ns, const struct kv_entry *e)
{
	return e->val.pmem ? &ns->plru : &ns->lru;
}

/* Take a committed value out of the index: freed, or a zombie while pinned. */
static void kv_val_out(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_zombie *z;

	TAILQ_REMOVE(kv_lru(ns, e), e, lru);
	if (e->moving && !e->val.pmem) /* its spill is moot: no longer leaving */
		ns->leaving -= e->val.alen;
	e->moving = false;
	e->has_val = false;
	kv_set_expire(ns, e, 0); /* a key's expiry is its value's: only a value has one */
	if (e->pins == NULL || (z = calloc(1, sizeof(*z))) == NULL) {
		kv_pins_free(e->pins);
		e->pins = NULL;
		kv_val_free(pd, ns, &e->val);
		return;
	}
	z->val = e->val;
	z->pins = e->pins;
	e->pins = NULL;
	TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
}

/* A key's value is gone, not replaced: routers are told (in a flush, at once, by kv_ns_flush()). */
static void kv_retire_val(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	kv_val_out(pd, ns, e);
	if (!ns->flushing)
		kvev_removed(pd, ns->name, e->key, e->klen);
}

/* Take a pending value out of the index, kept (pinned by its writer) until the writer is done. */
static void kv_pending_retire(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_zombie *z = calloc(1, sizeof(*z));
	struct kv_pin *p = calloc(1, sizeof(*p));

	kv_set_pending(ns, e, false);
	if (z == NULL || p == NULL) {
		/* Without memory to wait, leak the extent rather than lend it while written. */
		log_warnx("KV: out of memory: a superseded reservation leaks %llu bytes",
			  (unsigned long long)e->pending.alen);
		free(z);
		free(p);
		return;
	}
	*p = (struct kv_pin){NULL, e->pnode, e->psession, e->pending.version, 1};
	kv_npins++;
	z->val = e->pending;
	z->pins = p;
	TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
}

/*
 * Whether an entry is of no more use: neither a value nor a pending one,
 * and in a dedup namespace nobody holding a reference (a value lost with
 * its lender keeps its entry and references, for the lender's journal to
 * bring the value back to, or for the holders to drop).
 */
static bool kv_entry_unused(const struct kv_entry *e)
{
	return !e->has_val && !e->has_pending && e->refs == 0;
}

/* Unlink and free an entry that has neither a value nor a pending one. */
static void kv_entry_drop(struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_entry **pp = kv_slot(ns, e->key, e->klen, e->hash);

	kv_set_expire(ns, e, 0);
	*pp = e->hnext;
	ns->nentries--;
	free((uint8_t *)e - kv_key_room(e->klen)); /* the allocation starts with its key */
}

static void kv_entry_clear(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	if (e->has_val)
		kv_retire_val(pd, ns, e);
	if (e->has_pending)
		kv_pending_retire(pd, ns, e);
	kv_entry_drop(ns, e);
}

/*
 * The entry in *pp, after lazy expiry: an expired value is gone for every
 * operation, as in Redis (the entry may stay, for a write in flight).
 */
static struct kv_entry *kv_expire_now(struct poold *pd, struct kv_ns *ns, struct kv_entry *e);

static struct kv_entry *kv_live(struct poold *pd, struct kv_ns *ns, struct kv_entry **pp)
{
	struct kv_entry *e = *pp;

	if (e != NULL && kv_expired(e, e->expire_ms != 0 ? kv_unix_ms() : 0))
		e = kv_expire_now(pd, ns, e);
	return e;
}

/* A RESP database: it takes the empty key. */
static bool kv_is_resp_db(const struct kv_ns *ns)
{
	return ns->resp_db;
}

/* The value's time is up: it goes (a write in flight stays, and becomes a new key). */
static struct kv_entry *kv_expire_now(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	kv_retire_val(pd, ns, e);
	ns->expired++;
	if (!kv_entry_unused(e))
		return e;
	kv_entry_drop(ns, e);
	return NULL;
}

/*
 * Active expiry, from the sweep: in each namespace the entries with an
 * expiry are looked at 20 at a time in turn, again while more than a
 * quarter of those were expired (at most 16 rounds), as Redis samples its
 * expires.
 */
static void kv_expire_cycle(struct poold *pd)
{
	int64_t now = kv_unix_ms();
	struct kv_entry *e;
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		unsigned rounds = 0, seen, expired;

		do {
			for (seen = expired = 0; seen < 20 && (e = TAILQ_FIRST(&ns->vol)) != NULL;
			     seen++) {
				if (kv_expired(e, now)) {
					kv_expire_now(pd, ns, e);
					expired++;
				} else {
					TAILQ_REMOVE(&ns->vol, e, vol);
					TAILQ_INSERT_TAIL(&ns->vol, e, vol);
				}
			}
		} while (expired * 4 > seen && ++rounds < 16);
	}
}

static int kv_spill(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool may_evict);

/* Whether need more DRAM bytes fit the namespace (spills in flight count as done). */
static bool kv_fits(const struct kv_ns *ns, uint64_t need)
{
	return ns->used - ns->leaving + need <= ns->capacity;
}


/*
 * Room for need more bytes under owner's quota (quota.c), which counts its
 * regions and snapshot pages too. A namespace that may evict drops its own
 * least recently used values, spilled ones first (a spill gives no quota
 * back); -EDQUOT when that is not enough.
 */
static int kv_quota_room(struct poold *pd, struct kv_ns *ns, uint32_t owner, uint64_t need)
{
	struct kv_lru *lists[] = {&ns->plru, &ns->lru};
	struct kv_entry *e, *next;
	size_t k;

	if (!quota_over(pd, owner, need))
		return 0;
	if (ns->flags & (HOLD_NS_NO_EVICT | HOLD_NS_DEDUP))
		return -EDQUOT;
	for (k = 0; k < ARRAY_SIZE(lists); k++)
		for (e = TAILQ_FIRST(lists[k]); e != NULL && quota_over(pd, owner, need);
		     e = next) {
			next = TAILQ_NEXT(e, lru);
			if (e->pins != NULL || e->moving || e->val.owner != owner)
				continue;
			ns->evictions++;
			if (e->has_pending)
				kv_retire_val(pd, ns, e); /* keep the entry for its pending write */
			else
				kv_entry_clear(pd, ns, e);
		}
	return quota_over(pd, owner, need) ? -EDQUOT : 0;
}

/*
 * Make need bytes of DRAM room: the least recently used unpinned values
 * spill to their lender's pmem tier where it has room, else are evicted
 * (when may_evict).
 */
static int kv_make_room(struct poold *pd, struct kv_ns *ns, uint64_t need, bool may_evict)
{
	struct kv_entry *e, *next;
	int rc;

	for (e = TAILQ_FIRST(&ns->lru); e != NULL && !kv_fits(ns, need); e = next) {
		/* A spill moves e to the pmem list, and may drop spilled values: none of this one. */
		next = TAILQ_NEXT(e, lru);
		if (e->pins != NULL || e->moving)
			continue;
		rc = kv_spill(pd, ns, e, may_evict);
		if (rc == 0 || !may_evict)
			continue;
		ns->evictions++;
		if (e->has_pending) {
			kv_retire_val(pd, ns, e); /* keep the entry for its pending write */
			continue;
		}
		kv_entry_clear(pd, ns, e);
	}
	return kv_fits(ns, need) ? 0 : -ENOSPC;
}

static bool kv_pool_ok(struct poold *pd, const struct kv_ns *ns, const struct lender_pool *lp)
{
	return lp->tier == kv_tier(ns) && !lp->draining && region_pool_usable(pd, lp) &&
	       (ns->local_node == 0 || lp->node == ns->local_node);
}

/* A pool that may take a value, on none of the nodes in avoid. */
static bool kv_pool_free(struct poold *pd, const struct kv_ns *ns, const struct lender_pool *lp,
			 const uint32_t *avoid, size_t navoid)
{
	size_t i;

	for (i = 0; i < navoid; i++)
		if (lp->node == avoid[i])
			return false;
	return kv_pool_ok(pd, ns, lp);
}

/*
 * A lender for a value (or one more copy of it, on a node not in avoid):
 * two candidates from the key hash, the one with more room wins; when
 * neither has room, any that does.
 */
static struct lender_pool *kv_pick(struct poold *pd, struct kv_ns *ns, uint64_t hash,
				   uint64_t len, const uint32_t *avoid, size_t navoid)
{
	struct lender_pool *pools[2], *lp;
	struct placement_candidate c[2];
	size_t n = 0, i = 0, k;
	long pick;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		n += kv_pool_free(pd, ns, lp, avoid, navoid);
	if (n == 0)
		return NULL;
	for (k = 0; k < 2; k++) {
		size_t want = (size_t)((k ? hash >> 32 : hash) % n);
		struct extent_stats st;

		i = 0;
		TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
			if (!kv_pool_free(pd, ns, lp, avoid, navoid))
				continue;
			if (i++ == want)
				break;
		}
		pools[k] = lp;
		extent_stats(lp->alloc, &st);
		c[k] = (struct placement_candidate){st.size, st.used, st.largest_free, true};
	}
	pick = placement_choose(c, 2, len, (unsigned)pd->conf->watermark);
	if (pick >= 0)
		return pools[pick];
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		if (!kv_pool_free(pd, ns, lp, avoid, navoid))
			continue;
		extent_stats(lp->alloc, &st);
		if (st.largest_free >= len)
			return lp;
	}
	return NULL;
}

/*
 * The extent a value of len bytes takes: with a size hint, values up to it
 * all take the same size, so a freed one leaves a hole the next one fits.
 */
static uint64_t kv_alloc_len(const struct kv_ns *ns, uint64_t len)
{
	return ns->size_hint != 0 && len <= ns->size_hint ? ns->size_hint : MAX(len, 1);
}

/*
 * Places for a value of len bytes: one per replica, each on another
 * lender; fewer when fewer lenders can take it, -ENOSPC when none can.
 */
static int kv_place(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len,
		    struct kv_val *v)
{
	uint32_t nodes[KV_MAX_REPLICAS];
	struct lender_pool *lp;
	uint64_t off, alen;
	size_t k;

	memset(v, 0, sizeof(*v));
	for (k = 0; k < ns->replicas; k++) {
		/* Each copy's candidates from another mix of the hash. */
		lp = kv_pick(pd, ns, hash ^ (k * UINT64_C(0x9e3779b97f4a7c15)),
			     kv_alloc_len(ns, len), nodes, k);
		if (lp == NULL || extent_alloc_fine(lp->alloc, kv_alloc_len(ns, len), &off, &alen) < 0)
			break;
		nodes[k] = lp->node;
		if (k == 0)
			*v = (struct kv_val){.node = lp->node, .arena = lp->arena, .off = off,
					     .alen = alen, .vlen = len};
		else
			v->copy[v->ncopies++] = (struct kv_place){lp->node, lp->arena, off, alen};
	}
	return k == 0 ? -ENOSPC : 0;
}

static bool kv_node_up(struct poold *pd, uint32_t node)
{
	struct member *m = cluster_find(pd, node);

	return m != NULL && m->state == MEMBER_UP;
}

/* Whether a value can be read: one of its places is on a lender that is up. */
static bool kv_val_usable(struct poold *pd, const struct kv_val *v)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (kv_node_up(pd, all[i].node))
			return true;
	return false;
}

static int kv_pin(struct kv_entry *e, uint32_t node, uint64_t session)
{
	struct kv_pin *p;

	for (p = e->pins; p != NULL; p = p->next)
		if (p->node == node && p->session == session && p->version == e->val.version) {
			p->count++;
			return 0;
		}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	*p = (struct kv_pin){e->pins, node, session, e->val.version, 1};
	e->pins = p;
	kv_npins++;
	return 0;
}

/* Drop one pin (count) of a session on version from a list; true if it was there. */
static bool kv_unpin(struct kv_pin **pp, uint32_t node, uint64_t session, uint64_t version)
{
	for (; *pp != NULL; pp = &(*pp)->next) {
		struct kv_pin *p = *pp;

		if (p->node != node || p->session != session || p->version != version)
			continue;
		if (--p->count == 0) {
			*pp = p->next;
			free(p);
			kv_npins--;
		}
		return true;
	}
	return false;
}

/* Drop every pin of a session (or, with all, of a node) from a list. */
static void kv_unpin_all(struct kv_pin **pp, uint32_t node, uint64_t session, bool all)
{
	while (*pp != NULL) {
		struct kv_pin *p = *pp;

		if (p->node == node && (all || p->session == session)) {
			*pp = p->next;
			free(p);
			kv_npins--;
		} else {
			pp = &p->next;
		}
	}
}

static void kv_zombies_sweep(struct poold *pd, struct kv_ns *ns)
{
	struct kv_zombie *z, *next;

	for (z = TAILQ_FIRST(&ns->zombies); z != NULL; z = next) {
		next = TAILQ_NEXT(z, entry);
		if (z->pins != NULL)
			continue;
		TAILQ_REMOVE(&ns->zombies, z, entry);
		kv_val_free(pd, ns, &z->val);
		free(z);
	}
}

/*
 * Where a value is. For a writer (pd NULL), every place, its own first:
 * the writer fills each. For a reader, the place to read first (on the
 * reader's node, else on a lender that is up) and the other live places
 * to fall back on. pl holds the places (NULL: none but the first).
 */
static void kv_loc(struct poold *pd, Pool__KvLocation *loc, struct kv_locplaces *pl, int status,
		   const struct kv_val *v, uint32_t near)
{
	struct kv_place all[KV_MAX_REPLICAS], first;
	size_t n, i, best = 0;

	pool__kv_location__init(loc);
	loc->status = status;
	if (status != 0 || v == NULL)
		return;
	n = kv_places(v, all);
	if (pd != NULL) { /* a reader's own node, else the first lender up */
		for (best = 0; best < n && all[best].node != near; best++)
			;
		for (i = 0; best == n && i < n; i++)
			if (kv_node_up(pd, all[i].node))
				best = i;
		best = best < n ? best : 0;
	}
	first = all[best];
	all[best] = all[0];
	all[0] = first;
	loc->has_node = loc->has_arena = loc->has_off = loc->has_len = loc->has_version = 1;
	loc->node = first.node;
	loc->arena = first.arena;
	loc->off = first.off;
	loc->len = v->vlen;
	loc->version = v->version;
	for (i = 1; pl != NULL && i < n; i++) {
		Pool__KvPlace *p = &pl->place[loc->n_copies];

		if (pd != NULL && !kv_node_up(pd, all[i].node))
			continue;
		pool__kv_place__init(p);
		p->node = all[i].node;
		p->arena = all[i].arena;
		p->off = all[i].off;
		pl->ptr[loc->n_copies++] = p;
	}
	loc->copies = pl != NULL ? pl->ptr : NULL;
}

static int kv_reply(struct req *q, Pool__KvLocation *locs, size_t n, uint64_t count,
		    unsigned access);

/* Reply to a commit whose lenders have all answered. */
static void kv_durable_finish(struct kv_durable *d)
{
	int rc = kv_reply(d->q, d->locs, d->n, d->count - d->lost, 0);

	req_finish(d->q, rc < 0 ? rc : 0);
	free(d->locs);
	free(d);
}

/* A lender journaled a committed persistent value (or could not: the key fails). */
static void kv_durable_done(struct poold *pd, void *arg, int rc)
{
	struct kv_durable_batch *b = arg;
	struct kv_durable *d = b->d;
	size_t k;

	(void)pd;
	for (k = 0; rc < 0 && d->locs != NULL && k < b->n; k++)
		if (d->locs[b->i[k]].status == 0) {
			d->locs[b->i[k]].status = -EIO;
			d->lost++;
		}
	free(b);
	if (--d->pending > 0)
		return;
	if (d->q != NULL)
		kv_durable_finish(d);
	else if (d->locs == NULL) /* answered already, for want of memory to wait */
		free(d);
}

/*
 * Tell each lender the values of a commit it holds, in one message, so
 * that it journals them together (one flush for the lot, lend.c); the
 * keys of a lender that cannot get -EIO.
 */
static void kv_durable_send(struct poold *pd, struct kv_durable *d)
{
	Pool__Holding **hs = calloc(d->ntells ? d->ntells : 1, sizeof(*hs));
	size_t t, k, n;

	for (t = 0; t < d->ntells; t++) {
		struct kv_durable_batch *b;
		uint32_t node = d->tells[t].node;

		if (node == UINT32_MAX) /* sent with an earlier one */
			continue;
		for (k = t, n = 0; k < d->ntells; k++)
			n += d->tells[k].node == node;
		b = malloc(sizeof(*b) + n * sizeof(b->i[0]));
		if (hs == NULL || b == NULL) { /* without memory: these are not durable */
			free(b);
			for (k = t; k < d->ntells; k++)
				if (d->tells[k].node == node) {
					d->locs[d->tells[k].i].status = -EIO;
					d->lost++;
					d->tells[k].node = UINT32_MAX;
				}
			continue;
		}
		b->d = d;
		b->n = 0;
		for (k = t; k < d->ntells; k++)
			if (d->tells[k].node == node) {
				hs[b->n] = &d->tells[k].h;
				b->i[b->n++] = d->tells[k].i;
				d->tells[k].node = UINT32_MAX;
			}
		d->pending++;
		hold_tell_kv(pd, node, hs, b->n, kv_durable_done, b);
	}
	free(hs);
	free(d->tells);
	d->tells = NULL;
	d->ntells = d->cap = 0;
}

/* Tell a value's lenders what they hold, so that a restarted coordinator can rebuild it. */
/* Queue a holding for kv_durable_send(): 0, or -ENOMEM. */
static int kv_durable_add(struct kv_durable *d, const Pool__Holding *h, uint32_t node, size_t i)
{
	if (d->ntells == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct kv_durable_tell *t = realloc(d->tells, cap * sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		d->tells = t;
		d->cap = cap;
	}
	d->tells[d->ntells++] = (struct kv_durable_tell){node, i, *h};
	return 0;
}

static void kv_tell(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e)
{
	Pool__Holding h = POOL__HOLDING__INIT;
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(&e->val, all), i;

	h.region = KV_HOLD_ID(ns);
	h.ns = (char *)ns->name;
	h.has_key = h.has_vlen = h.has_version = h.has_ns_capacity = h.has_ns_flags = 1;
	h.key.data = e->key;
	h.key.len = e->klen;
	h.vlen = e->val.vlen;
	h.version = e->val.version;
	h.ns_capacity = ns->capacity;
	h.ns_flags = ns->flags;
	h.has_ns_replicas = 1;
	h.ns_replicas = ns->replicas;
	h.has_ns_size_hint = ns->size_hint != 0;
	h.ns_size_hint = ns->size_hint;
	h.has_ruid = 1; /* the writer, whose quota the value counts against */
	h.ruid = e->val.owner;
	for (i = 0; i < n; i++) {
		struct kv_durable *d = (ns->flags & HOLD_NS_PERSISTENT) ? pd->kv->durable : NULL;
		size_t key = pd->kv->durable_i;
		Pool__Holding *hp = &h;

		h.arena = all[i].arena;
		h.off = all[i].off;
		h.len = all[i].alen;
		if (d != NULL && kv_durable_add(d, &h, all[i].node, key) == 0)
			continue; /* told with the commit's other values (kv_durable_send) */
		if (d != NULL && d->locs[key].status == 0) { /* no memory to wait for it */
			d->locs[key].status = -EIO;
			d->lost++;
		}
		hold_tell_kv(pd, all[i].node, &hp, 1, NULL, NULL);
	}
}

/* A spill or a promotion in flight: the value copied from one tier to the other. */
struct kv_move {
	uint64_t ns_id;
	uint8_t *key;
	size_t klen;
	struct kv_val from, to;
};

static struct kv_ns *kv_ns_by_id(struct poold *pd, uint64_t id)
{
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (ns->id == id)
			return ns;
	return NULL;
}

/*
 * The copy is done (or failed): if the entry still holds the version that
 * was copied, it now lives in the new place; the old place is freed, or kept
 * for its readers. Otherwise the copy is thrown away.
 */
static void kv_moved(struct poold *pd, void *arg, int rc)
{
	struct kv_move *mv = arg;
	struct kv_ns *ns = pd->kv ? kv_ns_by_id(pd, mv->ns_id) : NULL;
	struct kv_entry *e = NULL;

	if (ns != NULL)
		e = *kv_slot(ns, mv->key, mv->klen, kv_hash(mv->key, mv->klen));
	if (e != NULL && e->moving && e->has_val && e->val.version == mv->from.version &&
	    e->val.off == mv->from.off && e->val.arena == mv->from.arena) {
		e->moving = false;
		if (!mv->from.pmem)
			ns->leaving -= mv->from.alen;
		if (rc == 0) {
			struct kv_zombie *z = e->pins ? calloc(1, sizeof(*z)) : NULL;

			/* The count goes with the value to its new place. */
			mv->to.charged = mv->from.charged;
			mv->to.owner = mv->from.owner;
			mv->from.charged = 0;
			if (z != NULL) { /* its readers keep the old place until they are done */
				z->val = mv->from;
				z->pins = e->pins;
				e->pins = NULL;
				TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
			} else {
				kv_pins_free(e->pins);
				e->pins = NULL;
				kv_val_free(pd, ns, &mv->from);
			}
			TAILQ_REMOVE(kv_lru(ns, e), e, lru);
			e->val = mv->to;
			TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
			if (mv->to.pmem)
				ns->spills++;
			else
				ns->promotions++;
			kv_tell(pd, ns, e);
			goto out;
		}
	}
	if (ns != NULL)
		kv_val_free(pd, ns, &mv->to); /* not used: the value changed, or the copy failed */
	else
		region_retire(pd, mv->to.node, mv->to.arena, mv->to.off, mv->to.alen, NULL);
out:
	if (ns != NULL)
		region_account(pd);
	free(mv->key);
	free(mv);
}

/* Copy a value to an extent of another tier on the same lender, then kv_moved(). */
static int kv_move(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool to_pmem)
{
	struct lender_pool *lp, *dst = NULL;
	Pool__Copy cp = POOL__COPY__INIT;
	struct kv_move *mv;
	uint64_t off, alen;
	int rc;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == e->val.node && lp->tier == (to_pmem ? TIER_PMEM : TIER_DRAM) &&
		    region_pool_usable(pd, lp) && !lp->draining) {
			dst = lp;
			break;
		}
	if (dst == NULL || extent_alloc_fine(dst->alloc, e->val.vlen, &off, &alen) < 0)
		return -ENOSPC;
	mv = calloc(1, sizeof(*mv));
	if (mv == NULL || (mv->key = malloc(e->klen)) == NULL) {
		free(mv);
		extent_release(dst->alloc, off, alen);
		return -ENOMEM;
	}
	memcpy(mv->key, e->key, e->klen);
	mv->klen = e->klen;
	mv->ns_id = ns->id;
	mv->from = e->val;
	mv->to = (struct kv_val){.node = dst->node, .arena = dst->arena, .off = off, .alen = alen,
				 .vlen = e->val.vlen, .version = e->val.version, .pmem = to_pmem};
	if (to_pmem) {
		ns->pmem_used += alen;
		ns->leaving += e->val.alen;
	} else {
		ns->used += alen;
	}
	e->moving = true;
	hold_tell(pd, dst->node, dst->arena, off, alen, KV_HOLD_ID(ns));
	if (e->val.node == pd->node_id) {
		kv_moved(pd, mv, lend_copy(pd, e->val.arena, e->val.off, dst->arena, off,
					   e->val.vlen));
		return 0;
	}
	cp.src_arena = e->val.arena;
	cp.src_off = e->val.off;
	cp.dst_arena = dst->arena;
	cp.dst_off = off;
	cp.len = e->val.vlen;
	rc = coord_request(pd, e->val.node, WIRE_COPY, &cp.base, kv_moved, mv);
	if (rc < 0)
		kv_moved(pd, mv, rc);
	return 0;
}

/*
 * Spill a DRAM value to its lender's pmem tier. When the tier is full and
 * may_evict, the least recently used spilled value of that lender is dropped
 * to make room, once; -ENOSPC when there is no pmem tier or still no room.
 */
static int kv_spill(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool may_evict)
{
	struct kv_entry *old;

	if (ns->flags & (HOLD_NS_DRAM_ONLY | HOLD_NS_PERSISTENT) || ns->replicas > 1)
		return -ENOSPC; /* persistent values are in pmem already; copies are not moved */
	if (kv_move(pd, ns, e, true) == 0)
		return 0;
	if (!may_evict)
		return -ENOSPC;
	TAILQ_FOREACH(old, &ns->plru, lru)
		if (old->val.node == e->val.node && old->pins == NULL &&
		    !old->moving && !old->has_pending)
			break;
	if (old == NULL)
		return -ENOSPC;
	ns->evictions++;
	kv_entry_clear(pd, ns, old);
	return kv_move(pd, ns, e, true);
}

/*
 * A hit on a spilled value: back to DRAM, swapping colder DRAM values out to
 * pmem when the namespace is full. Nothing is evicted for a promotion.
 */
static void kv_promote(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	if (!e->moving && kv_make_room(pd, ns, e->val.alen, false) == 0)
		kv_move(pd, ns, e, false);
}

/*
 * The holder of a request to a dedup namespace takes a reference to a
 * value: counted, and its key recorded with the holder, so that the
 * reference goes when the holder does. A holder records at most as many
 * bytes of keys as it is large (a manifest lists each page in more).
 */
static int kv_holder_add(struct poold *pd, struct kv_ns *ns, const uint8_t *key, size_t klen,
			 struct kv_entry *e)
{
	struct region *r = pd->kv->holder;
	size_t need = 1 + klen;
	uint8_t *p;

	if (r->refs_len + need > r->size)
		return -ENOSPC;
	if (r->refs_len + need > r->refs_cap) {
		size_t cap = MAX(r->refs_cap * 2, (size_t)4096);

		while (cap < r->refs_len + need)
			cap *= 2;
		if ((p = realloc(r->refs, cap)) == NULL)
			return -ENOMEM;
		r->refs = p;
		r->refs_cap = cap;
	}
	r->refs[r->refs_len] = (uint8_t)klen;
	memcpy(r->refs + r->refs_len + 1, key, klen);
	r->refs_len += need;
	r->refs_ns = ns->id;
	if (e != NULL && e->refs != KV_REFS_UNKNOWN)
		e->refs++;
	return 0;
}

/* A region goes: the references it holds go with it, and values nobody else holds. */
void kv_holder_drop(struct poold *pd, struct region *r)
{
	struct kv_ns *ns = pd->kv != NULL && !pd->stopping ? kv_ns_by_id(pd, r->refs_ns) : NULL;
	size_t off = 0;

	while (ns != NULL && off < r->refs_len) {
		const uint8_t *key = r->refs + off + 1;
		size_t klen = r->refs[off];
		struct kv_entry *e = *kv_slot(ns, key, klen, kv_hash(key, klen));

		if (e != NULL && e->refs != KV_REFS_UNKNOWN && e->refs > 0 && --e->refs == 0)
			kv_entry_clear(pd, ns, e);
		off += 1 + klen;
	}
	if (ns != NULL && r->refs_len > 0)
		region_account(pd);
	free(r->refs);
	r->refs = NULL;
	r->refs_len = r->refs_cap = 0;
}

/*
 * A put to a dedup namespace of a key it has: the key names the content,
 * so the value is there already and the writer's holder only takes a
 * reference (-EEXIST: nothing to write). While another writer still
 * writes the same content, -EAGAIN: try again once that one commits.
 * Whether it answered the key (else the put goes on as any other).
 */
static bool kv_dedup_reserve(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, uid_t uid,
			     Pool__KvLocation *loc)
{
	int rc;

	if (e->has_val && kv_val_usable(pd, &e->val)) {
		rc = kv_holder_add(pd, ns, e->key, e->klen, e);
		kv_loc(NULL, loc, NULL, rc < 0 ? rc : -EEXIST, NULL, 0);
		return true;
	}
	/*
	 * In the shared store, another uid that reserved a key cannot hold it
	 * against the others: past KV_SHARED_HOLD_MS the reservation gives way
	 * (an honest put commits within milliseconds).
	 */
	if (e->has_pending && (ns->flags & HOLD_NS_SHARED) && e->pending.owner != (uint32_t)uid &&
	    units_now_ms() - e->preserved_at > KV_SHARED_HOLD_MS)
		return false;
	if (e->has_pending) {
		kv_loc(NULL, loc, NULL, -EAGAIN, NULL, 0);
		return true;
	}
	return false;
}

/*
 * The shared store's values may be published only if their bytes are what
 * their key says (page_key_shared()): the store lives on this node (the
 * coordinator's), so poold hashes them where they lie before any other put
 * can find them. -EBADMSG when they are not.
 */
static int kv_verify(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e,
		     const struct req *q)
{
	static struct log_limit said;
	const struct kv_val *v = &e->pending;
	uint8_t want[PAGE_KEY_LEN];
	int rc;

	if (v->node != pd->node_id || v->arena >= pd->narenas || e->klen != PAGE_KEY_LEN)
		return -EBADMSG;
	rc = page_key_shared((const uint8_t *)pd->arenas[v->arena].base + v->off, v->vlen, want);
	if (rc == 0 && memcmp(want, e->key, PAGE_KEY_LEN) != 0) {
		log_warnx_limited(&said, 10000, "KV '%s': uid %u wrote a value that is not its "
				  "key's: dropped", ns->name, (unsigned)q->uid);
		rc = -EBADMSG;
	}
	return rc;
}

/* One key of a request. */
static int kv_one(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr, size_t i,
		  Pool__KvLocation *loc, struct kv_locplaces *pl)
{
	struct poold *pd = q->pd;
	const uint8_t *key = kr->keys[i].data;
	size_t klen = kr->keys[i].len;
	uint64_t h = kv_hash(key, klen);
	struct kv_entry **pp = kv_slot(ns, key, klen, h), *e;
	const char *op = kr->op;
	int rc;

	/* The empty key is RESP's (GET ""): only its databases, this node's, take it. */
	if ((klen == 0 && !kv_is_resp_db(ns)) || klen > POOL_KV_KEY_MAX) {
		kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
		return 0;
	}
	e = kv_live(pd, ns, pp);
	if (strcmp(op, "lookup") == 0 || strcmp(op, "exists") == 0) {
		if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val)) {
			ns->misses += op[0] == 'l';
			kv_loc(NULL, loc, NULL, -ENOENT, NULL, 0);
			return 0;
		}
		if (op[0] == 'l') {
			if (kv_pin(e, q->node, q->session) < 0) {
				kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
				return 0;
			}
			ns->hits++;
			TAILQ_REMOVE(kv_lru(ns, e), e, lru);
			TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
			/* where it is now (a promotion moves it later), nearest first */
			kv_loc(pd, loc, pl, 0, &e->val, q->node);
			if (e->val.pmem) {
				ns->pmem_hits++;
				kv_promote(pd, ns, e);
			}
			return 1;
		}
		kv_loc(pd, loc, NULL, 0, &e->val, q->node);
		return 1;
	}
	if (strcmp(op, "reserve") == 0 && (ns->flags & HOLD_NS_DEDUP) && e != NULL &&
	    kv_dedup_reserve(pd, ns, e, q->uid, loc))
		return 0;
	if (strcmp(op, "reserve") == 0) {
		uint64_t size = kr->sizes[i], need;
		struct kv_val v;
		uint32_t owner;

		if (size > POOL_KV_VALUE_MAX) { /* 0 is an empty value (RESP's "") */
			kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
			return 0;
		}
		/* Room for every copy, each of the size it will take. */
		need = kv_alloc_len(ns, size) * ns->replicas;
		if (need > ns->capacity) { /* would spill everything and still not fit */
			kv_loc(NULL, loc, NULL, -ENOSPC, NULL, 0);
			return 0;
		}
		owner = kv_val_owner(ns, key, klen, (uint32_t)q->uid);
		rc = kv_quota_room(pd, ns, owner, need);
		if (rc == 0)
			rc = kv_make_room(pd, ns, need, !(ns->flags & HOLD_NS_NO_EVICT));
		if (rc == 0)
			rc = kv_place(pd, ns, h, size, &v);
		if (rc < 0) {
			e = *kv_slot(ns, key, klen, h);
			if (e != NULL && kv_entry_unused(e))
				kv_entry_drop(ns, e);
			kv_loc(NULL, loc, NULL, rc, NULL, 0);
			return 0;
		}
		e = *kv_slot(ns, key, klen, h); /* eviction may have dropped it */
		if (e == NULL && (e = kv_entry_new(ns, key, klen, h)) == NULL) {
			kv_val_retire(pd, &v);
			kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
			return 0;
		}
		/* The last writer wins, once its reservation is made: a failed one changes nothing. */
		if (e->has_pending)
			kv_pending_retire(pd, ns, e);
		if (kv_owner_charge(pd, &v, owner) < 0) {
			kv_val_retire(pd, &v);
			if (kv_entry_unused(e))
				kv_entry_drop(ns, e);
			kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
			return 0;
		}
		v.version = ++ns->next_version;
		e->pending = v;
		kv_set_pending(ns, e, true);
		e->pnode = q->node;
		e->psession = q->session;
		e->preserved_at = units_now_ms();
		ns->used += kv_val_bytes(&v);
		{
			struct kv_place all[KV_MAX_REPLICAS];
			size_t n = kv_places(&v, all), k;

			for (k = 0; k < n; k++)
				hold_tell(pd, all[k].node, all[k].arena, all[k].off, all[k].alen,
					  KV_HOLD_ID(ns));
		}
		kv_loc(NULL, loc, pl, 0, &v, 0); /* every place: the writer fills each */
		return 1;
	}
	/*
	 * commit, abort, release: first the version kept out of the index (a
	 * superseded or flushed write, a value removed while read), then the entry.
	 */
	if (strcmp(op, "commit") == 0 || strcmp(op, "abort") == 0 ||
	    strcmp(op, "release") == 0) {
		uint64_t version = kr->versions[i];
		struct kv_zombie *z;
		int64_t ttl;
		bool fresh;

		if (e != NULL && strcmp(op, "release") == 0 &&
		    kv_unpin(&e->pins, q->node, q->session, version)) {
			kv_loc(NULL, loc, NULL, 0, NULL, 0);
			return 1;
		}
		if (e != NULL && op[0] != 'r' && e->has_pending && e->pending.version == version) {
			/* A reservation is its session's: nobody else may publish or free it. */
			if (e->pnode != q->node || e->psession != q->session) {
				kv_loc(NULL, loc, NULL, -EPERM, NULL, 0);
				return 0;
			}
			/* A value of the shared store whose bytes are not its key's is dropped. */
			rc = op[0] == 'c' && (ns->flags & HOLD_NS_SHARED) ? kv_verify(pd, ns, e, q) : 0;
			if (op[0] == 'a' || rc < 0) { /* nobody writes there any more */
				kv_val_free(pd, ns, &e->pending);
				kv_set_pending(ns, e, false);
				if (kv_entry_unused(e))
					kv_entry_drop(ns, e);
				kv_loc(NULL, loc, NULL, rc, NULL, 0);
				return rc == 0;
			}
			/* In a dedup namespace the writer's holder takes a reference. */
			if ((ns->flags & HOLD_NS_DEDUP) &&
			    (rc = kv_holder_add(pd, ns, e->key, e->klen, e)) < 0) {
				kv_loc(NULL, loc, NULL, rc, NULL, 0);
				return 0;
			}
			/* A new version of a key keeps its expiry (APPEND, INCR); SET sets its own. */
			ttl = e->has_val ? e->expire_ms : 0;
			fresh = !e->has_val;
			if (e->has_val)
				kv_val_out(pd, ns, e);
			e->val = e->pending;
			e->has_val = true;
			kv_set_pending(ns, e, false);
			kv_set_expire(ns, e, ttl);
			TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
			ns->puts++;
			/* The lender's record now names the value: a restarted coordinator rebuilds it. */
			kv_tell(pd, ns, e);
			if (fresh)
				kvev_stored(pd, ns->name, e->key, e->klen);
			kv_loc(NULL, loc, NULL, 0, &e->val, 0);
			return 1;
		}
		TAILQ_FOREACH(z, &ns->zombies, entry)
			if (z->val.version == version &&
			    kv_unpin(&z->pins, q->node, q->session, version)) {
				/* Superseded, flushed or removed: as if overwritten at once. */
				kv_zombies_sweep(pd, ns);
				kv_loc(NULL, loc, NULL, 0, NULL, 0);
				return 1;
			}
		kv_loc(NULL, loc, NULL, op[0] == 'c' ? -ESTALE : -ENOENT, NULL, 0);
		return 0;
	}
	if (e == NULL) {
		kv_loc(NULL, loc, NULL, -ENOENT, NULL, 0);
		return 0;
	}
	if (strcmp(op, "remove") == 0) {
		kv_entry_clear(pd, ns, e);
		kv_loc(NULL, loc, NULL, 0, NULL, 0);
		return 1;
	}
	kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
	return 0;
}

/*
 * Reply with the locations. access (4 read, 2 write, 0 none) is what the
 * session may now do with their places: its own poold grants it that and
 * carries the transfers (grant.c). No lender's address or key goes to a
 * client.
 */
static int kv_reply(struct req *q, Pool__KvLocation *locs, size_t n, uint64_t count,
		    unsigned access)
{
	Pool__KvReply reply = POOL__KV_REPLY__INIT;
	Pool__KvLocation **lp = calloc(n ? n : 1, sizeof(*lp));
	size_t i;
	int rc;

	if (lp == NULL)
		return req_errorf(q, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		lp[i] = &locs[i];
	reply.locations = lp;
	reply.n_locations = n;
	reply.has_count = 1;
	reply.count = count;
	if (access != 0) {
		reply.has_access = 1;
		reply.access = access;
	}
	rc = req_reply(q, WIRE_KV_REPLY, &reply.base);
	free(lp);
	return rc;
}

/*
 * Whether the caller's session holds a transfer of key to node: a pin of a
 * value with a place there, or its own reservation there.
 */
static bool kv_was_given(struct kv_ns *ns, const struct req *q, const ProtobufCBinaryData *key,
			 uint32_t node)
{
	struct kv_entry *e;
	struct kv_zombie *z;
	struct kv_pin *p;

	if (key->len == 0 || key->len > POOL_KV_KEY_MAX)
		return false;
	e = *kv_slot(ns, key->data, key->len, kv_hash(key->data, key->len));
	if (e != NULL && e->has_pending && e->pnode == q->node && e->psession == q->session &&
	    kv_val_on(&e->pending, node))
		return true;
	for (p = e != NULL ? e->pins : NULL; p != NULL; p = p->next)
		if (p->node == q->node && p->session == q->session && e->has_val &&
		    kv_val_on(&e->val, node))
			return true;
	TAILQ_FOREACH(z, &ns->zombies, entry) /* replaced or spilled while it was read */
		for (p = z->pins; p != NULL; p = p->next)
			if (p->node == q->node && p->session == q->session &&
			    kv_val_on(&z->val, node))
				return true;
	return false;
}

/* Call fn on every entry of a namespace; fn may drop the entry it is given. */
static void kv_foreach_ns(struct poold *pd, struct kv_ns *ns,
			  void (*fn)(struct poold *pd, struct kv_ns *ns, struct kv_entry *e,
				     void *arg),
			  void *arg)
{
	size_t i;

	for (i = 0; i < ns->nbuckets; i++) {
		struct kv_entry *e, *next;

		for (e = ns->buckets[i]; e != NULL; e = next) {
			next = e->hnext;
			fn(pd, ns, e, arg);
		}
	}
}

static void kv_recount_begin(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	(void)pd;
	(void)ns;
	(void)arg;
	if (e->refs == KV_REFS_UNKNOWN) {
		e->refs = 0;
		e->recount = true;
	}
}

static void kv_recount_end(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	if (!e->recount)
		return;
	e->recount = false;
	if (e->refs == 0) {
		kv_entry_clear(pd, ns, e);
		(*(uint64_t *)arg)++;
	}
}

/*
 * After a restart of this coordinator, the references of a dedup
 * namespace are not known (KV_REFS_UNKNOWN: never freed) and the regions
 * that held them hold nothing. An admin's client reads each holder (a
 * snapshot manifest) and tells its keys again: "adopt" (in batches) then
 * "adopted" for a region rebuilt after the restart. "recount" then counts
 * every unknown value's references from all holders and frees the values
 * nobody holds; it is refused while a rebuilt snapshot manifest (a region
 * "snap/...") has not been adopted, since its pages would be freed under
 * it.
 */
static int kv_recount_request(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	struct poold *pd = q->pd;
	struct region *r = pd->kv->holder;
	uint64_t count = 0;
	size_t i;
	int rc;

	if (strcmp(kr->op, "recount") != 0) {
		if (!r->refs_unknown) /* adopted already, or never lost its references */
			return kv_reply(q, NULL, 0, 0, 0);
		for (i = 0; strcmp(kr->op, "adopt") == 0 && i < kr->n_keys; i++) {
			if (kr->keys[i].len == 0 || kr->keys[i].len > POOL_KV_KEY_MAX)
				return req_errorf(q, -EINVAL, "key %zu: 1 to %d bytes", i,
						  POOL_KV_KEY_MAX);
			rc = kv_holder_add(pd, ns, kr->keys[i].data, kr->keys[i].len, NULL);
			if (rc < 0)
				return req_errorf(q, rc, "region '%s': %s", r->name, err_str(rc));
		}
		if (strcmp(kr->op, "adopted") == 0)
			r->refs_unknown = false;
		return kv_reply(q, NULL, 0, kr->n_keys, 0);
	}
	TAILQ_FOREACH(r, &pd->regions->list, entry)
		if (r->refs_unknown && strncmp(r->name, "snap/", 5) == 0)
			return req_errorf(q, -EBUSY, "snapshot manifest '%s' is not adopted yet",
					  r->name);
	kv_foreach_ns(pd, ns, kv_recount_begin, NULL);
	TAILQ_FOREACH(r, &pd->regions->list, entry) {
		size_t off = 0;

		while (r->refs_ns == ns->id && off < r->refs_len) {
			const uint8_t *key = r->refs + off + 1;
			size_t klen = r->refs[off];
			struct kv_entry *e = *kv_slot(ns, key, klen, kv_hash(key, klen));

			if (e != NULL && e->recount)
				e->refs++;
			off += 1 + klen;
		}
	}
	kv_foreach_ns(pd, ns, kv_recount_end, &count);
	region_account(pd);
	log_info("KV namespace '%s': references counted again, %llu value(s) nobody holds freed",
		 ns->name, (unsigned long long)count);
	return kv_reply(q, NULL, 0, count, 0);
}

/*
 * Requests to a dedup namespace: values are taken and let go by their
 * holders, regions the caller may write (a snapshot's manifest); a
 * reference goes with its holder only, never by a remove.
 */
static int kv_dedup_holder(struct req *q, const struct kv_ns *ns, const Pool__KvRequest *kr)
{
	struct region *r;

	bool adopt = strcmp(kr->op, "adopt") == 0 || strcmp(kr->op, "adopted") == 0;

	q->pd->kv->holder = NULL;
	if (strcmp(kr->op, "remove") == 0)
		return req_errorf(q, -EPERM, "values of '%s' go with the regions holding them",
				  ns->name);
	if (strcmp(kr->op, "reserve") != 0 && strcmp(kr->op, "commit") != 0 && !adopt)
		return 0;
	/*
	 * A page's key starts with its writer's uid (big-endian): a tenant can
	 * store a page only under its own keys, never under the key another
	 * uid's put would find, so no one's snapshot restores someone else's
	 * bytes. Admins (recounts, adoptions) may name any key.
	 */
	for (size_t i = 0; !q->admin && !(ns->flags & HOLD_NS_SHARED) && i < kr->n_keys; i++)
		if (kv_key_owner(kr->keys[i].data, kr->keys[i].len) != (uint32_t)q->uid)
			return req_errorf(q, -EPERM, "a key of '%s' starts with its writer's uid, "
					  "%u", ns->name, (unsigned)q->uid);
	if (kr->holder == NULL || (r = region_find(q->pd->regions, kr->holder)) == NULL)
		return req_errorf(q, -EINVAL, "a put to '%s' names the region holding it",
				  ns->name);
	if (!region_allowed(r, q, 2))
		return req_errorf(q, -EACCES, "region '%s' is not the caller's to write",
				  r->name);
	if (r->refs_ns != 0 && r->refs_ns != ns->id)
		return req_errorf(q, -EINVAL, "region '%s' holds values of another namespace",
				  r->name);
	q->pd->kv->holder = r;
	return 0;
}

/*
 * Whether the caller may access the namespace's values with the given bits
 * (4 read, 2 write): admins always; the others by its owner, group and mode,
 * as for regions.
 */
static bool kv_ns_allowed(const struct kv_ns *ns, const struct req *q, unsigned want)
{
	return q->admin || req_mode_allows(q, ns->uid, ns->gid, ns->mode, want);
}

/* The access a KV operation needs: lookups (and exists) read, writes and their ends write, the rest none. */
static unsigned kv_op_access(const char *op)
{
	if (strcmp(op, "lookup") == 0 || strcmp(op, "exists") == 0 || strcmp(op, "match") == 0)
		return 4;
	if (strcmp(op, "reserve") == 0 || strcmp(op, "commit") == 0 || strcmp(op, "abort") == 0 ||
	    strcmp(op, "remove") == 0)
		return 2;
	return 0; /* release (of the caller's own pins), failed (of its own transfers) */
}

static int kv_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvRequest *kr = (const Pool__KvRequest *)msg;
	struct poold *pd = q->pd;
	struct kv_durable *d = NULL;
	struct kv_locplaces *pl;
	Pool__KvLocation *locs;
	struct kv_ns *ns = kv_ns_find(pd, kr->ns);
	uint64_t count = 0;
	size_t i;
	int rc;

	if (ns == NULL)
		return req_errorf(q, -ENOENT, "no KV namespace '%s'", kr->ns);
	if (!kv_ns_allowed(ns, q, kv_op_access(kr->op)))
		return req_errorf(q, -EACCES, "KV namespace '%s' (mode %03o, uid %u): %s access "
				  "denied", ns->name, ns->mode, (unsigned)ns->uid,
				  kv_op_access(kr->op) & 2 ? "write" : "read");
	if ((ns->flags & HOLD_NS_DEDUP) && (rc = kv_dedup_holder(q, ns, kr)) < 0)
		return rc;
	if ((ns->flags & HOLD_NS_DEDUP) && (strcmp(kr->op, "adopt") == 0 ||
					    strcmp(kr->op, "adopted") == 0 ||
					    strcmp(kr->op, "recount") == 0))
		return kv_recount_request(q, ns, kr);
	if (strcmp(kr->op, "failed") == 0) {
		/* A client could not reach a lender: suspect it now, not after heartbeats. */
		if (!kr->has_node || kr->n_keys != 1 || !kv_was_given(ns, q, &kr->keys[0], kr->node))
			return req_errorf(q, -EPERM, "a lender is reported only with a key whose "
					  "transfer to it the caller was given");
		coord_suspect(pd, kr->node);
		return kv_reply(q, NULL, 0, 0, 0);
	}
	if (kr->n_keys > KV_MAX_KEYS)
		return req_errorf(q, -E2BIG, "at most %d keys per request", KV_MAX_KEYS);
	if ((strcmp(kr->op, "reserve") == 0 && kr->n_sizes != kr->n_keys) ||
	    ((strcmp(kr->op, "commit") == 0 || strcmp(kr->op, "release") == 0 ||
	      strcmp(kr->op, "abort") == 0) &&
	     kr->n_versions != kr->n_keys))
		return req_errorf(q, -EINVAL, "%s needs one %s per key", kr->op,
				  kr->op[0] == 'r' && kr->op[2] == 's' ? "size" : "version");
	if (strcmp(kr->op, "match") == 0) {
		for (i = 0; i < kr->n_keys; i++) {
			struct kv_entry *e = *kv_slot(ns, kr->keys[i].data, kr->keys[i].len,
						      kv_hash(kr->keys[i].data, kr->keys[i].len));

			if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val))
				break;
		}
		return kv_reply(q, NULL, 0, i, 0);
	}
	locs = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*locs));
	pl = ns->replicas > 1 ? calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*pl)) : NULL;
	if (locs == NULL || (ns->replicas > 1 && pl == NULL)) {
		free(locs);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	/* Commits of persistent values are answered once their lenders made them durable. */
	if (strcmp(kr->op, "commit") == 0 && (ns->flags & HOLD_NS_PERSISTENT) &&
	    (d = calloc(1, sizeof(*d))) != NULL) {
		d->locs = locs;
		d->n = kr->n_keys;
		pd->kv->durable = d;
	}
	for (i = 0; i < kr->n_keys; i++) {
		pd->kv->durable_i = i;
		count += (uint64_t)kv_one(q, ns, kr, i, &locs[i], pl ? &pl[i] : NULL);
	}
	kvev_end(pd);
	pd->kv->durable = NULL;
	if (d != NULL)
		kv_durable_send(pd, d);
	if (d != NULL) { /* (a commit's locations name no copies: pl is not theirs) */
		free(pl);
		pl = NULL;
		d->count = count;
		if (d->pending > 0 && (d->q = req_hold(q)) != NULL)
			return REQ_LATER; /* the last lender's answer replies */
		count -= d->lost;
		if (d->pending > 0)
			d->locs = NULL; /* without memory to wait: the reply goes now */
		else
			free(d);
	}
	if (strcmp(kr->op, "reserve") == 0 || strcmp(kr->op, "remove") == 0)
		region_account(pd);
	rc = kv_reply(q, locs, kr->n_keys, count,
		      strcmp(kr->op, "lookup") == 0 ? 4 : strcmp(kr->op, "reserve") == 0 ? 2 : 0);
	free(locs);
	free(pl);
	return rc;
}

static void kv_ns_msg(const struct kv_ns *ns, Pool__KvNamespace *m);
static void kv_defs_send(struct poold *pd);

static void kv_ns_msg(const struct kv_ns *ns, Pool__KvNamespace *m)
{
	pool__kv_namespace__init(m);
	m->name = (char *)ns->name;
	m->capacity = ns->capacity;
	m->has_used = m->has_entries = m->has_hits = m->has_misses = 1;
	m->has_evictions = m->has_puts = m->has_id = 1;
	m->used = ns->used;
	m->entries = ns->nentries;
	m->hits = ns->hits;
	m->misses = ns->misses;
	m->evictions = ns->evictions;
	m->puts = ns->puts;
	m->id = ns->id;
	m->has_pmem_used = m->has_spills = m->has_promotions = m->has_pmem_hits = 1;
	m->pmem_used = ns->pmem_used;
	if (kv_tier(ns) == TIER_PMEM) { /* used counts the namespace's own tier */
		m->pmem_used += ns->used;
		m->used = 0;
	}
	m->spills = ns->spills;
	m->promotions = ns->promotions;
	m->pmem_hits = ns->pmem_hits;
	m->tier = (char *)kv_tier_name(ns);
	m->has_replicas = 1;
	m->replicas = ns->replicas;
	m->has_size_hint = 1;
	m->size_hint = ns->size_hint;
	m->evict = (char *)(ns->flags & HOLD_NS_NO_EVICT ? "none" : "lru");
	m->has_dedup = 1;
	m->dedup = (ns->flags & HOLD_NS_DEDUP) != 0;
	m->has_uid = m->has_gid = m->has_mode = 1;
	m->uid = ns->uid;
	m->gid = ns->gid;
	m->mode = ns->mode;
}

static void kv_ns_flush(struct poold *pd, struct kv_ns *ns)
{
	size_t i;

	kvev_cleared(pd, ns->name);
	ns->flushing = true;
	for (i = 0; i < ns->nbuckets; i++)
		while (ns->buckets[i] != NULL)
			kv_entry_clear(pd, ns, ns->buckets[i]);
	ns->flushing = false;
	kv_zombies_sweep(pd, ns);
	region_account(pd);
}

static void kv_ns_free(struct poold *pd, struct kv_ns *ns)
{
	struct kv_ns *orphans = pd->kv->orphans;
	struct kv_zombie *z;

	kv_ns_flush(pd, ns);
	/*
	 * Values still read or written outlive the namespace in the orphan list
	 * until their sessions end (at shutdown, when nothing is in flight any
	 * more, they simply go).
	 */
	while ((z = TAILQ_FIRST(&ns->zombies)) != NULL) {
		TAILQ_REMOVE(&ns->zombies, z, entry);
		if (orphans != NULL && ns != orphans) {
			TAILQ_INSERT_TAIL(&orphans->zombies, z, entry);
			orphans->used += kv_val_bytes(&z->val);
			continue;
		}
		kv_pins_free(z->pins);
		kv_val_free(pd, ns, &z->val);
		free(z);
	}
	if (ns == orphans) {
		free(ns->buckets);
		free(ns);
		return;
	}
	TAILQ_REMOVE(&pd->kv->list, ns, entry);
	free(ns->buckets);
	free(ns);
}

static int kv_ns_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvNsRequest *r = (const Pool__KvNsRequest *)msg;
	Pool__KvNsReply reply = POOL__KV_NS_REPLY__INIT;
	struct poold *pd = q->pd;
	Pool__KvNamespace *m = NULL, **mp = NULL;
	struct kv_ns *ns = kv_ns_find(pd, r->name);
	size_t n = 0;
	int rc;

	if (strcmp(r->op, "create") == 0) {
		uint32_t flags = 0;
		size_t count = 0;

		if (!name_ok(r->name, POOL_REGION_NAME_MAX, true))
			return req_errorf(q, -EINVAL, "namespace name '%s': 1-63 characters of "
					  "[A-Za-z0-9._:/-]", r->name);
		if (ns != NULL)
			return req_errorf(q, -EEXIST, "KV namespace '%s' exists", r->name);
		TAILQ_FOREACH(ns, &pd->kv->list, entry)
			count++;
		if (count >= KV_MAX_NAMESPACES)
			return req_errorf(q, -EUSERS, "at most %d KV namespaces", KV_MAX_NAMESPACES);
		if (!r->has_capacity || r->capacity < (1u << 20))
			return req_errorf(q, -EINVAL, "a namespace needs a capacity of at least 1M");
		if (r->tier != NULL && strcmp(r->tier, "dram") == 0)
			flags |= HOLD_NS_DRAM_ONLY;
		else if (r->tier != NULL && strcmp(r->tier, "pmem") == 0)
			flags |= HOLD_NS_PERSISTENT;
		else if (r->tier != NULL && strcmp(r->tier, "dram+pmem") != 0)
			return req_errorf(q, -EINVAL, "tier '%s': dram, dram+pmem or pmem", r->tier);
		if (r->evict != NULL && strcmp(r->evict, "none") == 0)
			flags |= HOLD_NS_NO_EVICT;
		else if (r->evict != NULL && strcmp(r->evict, "lru") != 0)
			return req_errorf(q, -EINVAL, "evict '%s': lru or none", r->evict);
		if (r->has_replicas && (r->replicas < 1 || r->replicas > KV_MAX_REPLICAS))
			return req_errorf(q, -EINVAL, "replicas %u: 1 to %d", r->replicas,
					  KV_MAX_REPLICAS);
		if (r->has_size_hint && (r->size_hint > POOL_KV_VALUE_MAX ||
					 r->size_hint > r->capacity))
			return req_errorf(q, -EINVAL, "size hint %llu: at most 64M and the capacity",
					  (unsigned long long)r->size_hint);
		ns = kv_ns_new(pd, r->name, r->capacity);
		if (ns == NULL)
			return req_errorf(q, -ENOMEM, "out of memory");
		ns->flags = flags;
		ns->replicas = r->has_replicas ? r->replicas : 1;
		ns->size_hint = r->has_size_hint ? r->size_hint : 0;
		ns->uid = q->uid;
		ns->gid = r->has_gid ? r->gid : q->gid;
		ns->mode = r->has_mode ? r->mode & 0777 : 0600;
		log_info("KV namespace '%s' created, capacity %llu, tier %s, evict %s, replicas %u, "
			 "uid %u gid %u mode %03o", ns->name, (unsigned long long)ns->capacity,
			 kv_tier_name(ns), flags & HOLD_NS_NO_EVICT ? "none" : "lru", ns->replicas,
			 (unsigned)ns->uid, (unsigned)ns->gid, ns->mode);
		coordlog_namespaces(pd);
		kv_defs_send(pd);
	} else if (strcmp(r->op, "drop") == 0 || strcmp(r->op, "flush") == 0) {
		if (ns == NULL)
			return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
		log_info("KV namespace '%s' %s", ns->name, r->op[0] == 'd' ? "dropped" : "flushed");
		if (r->op[0] == 'd') {
			kv_ns_free(pd, ns);
			coordlog_namespaces(pd);
			kv_defs_send(pd);
			return req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
		}
		kv_ns_flush(pd, ns);
	} else if (strcmp(r->op, "stats") != 0) {
		return req_errorf(q, -EINVAL, "unknown namespace operation '%s'", r->op);
	} else if (r->name[0] != '\0' && ns == NULL) {
		return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
	} else if (ns != NULL && !kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2)) {
		return req_errorf(q, -EACCES, "KV namespace '%s' (mode %03o, uid %u): access denied",
				  ns->name, ns->mode, (unsigned)ns->uid);
	}
	/* Reply with the namespace, or all of them for stats of "". */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n++;
	m = calloc(n ? n : 1, sizeof(*m));
	mp = calloc(n ? n : 1, sizeof(*mp));
	if (m == NULL || mp == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	n = 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		if (r->name[0] != '\0' && strcmp(ns->name, r->name) != 0)
			continue;
		/* A listing shows a uid the namespaces it may use. */
		if (!kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2))
			continue;
		kv_ns_msg(ns, &m[n]);
		mp[n] = &m[n];
		n++;
	}
	reply.namespaces = mp;
	reply.n_namespaces = n;
	rc = req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
out:
	free(m);
	free(mp);
	return rc;
}

/* Call fn on every entry of every namespace; fn may drop the entry it is given. */
static void kv_foreach(struct poold *pd,
		       void (*fn)(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg),
		       void *arg)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		kv_foreach_ns(pd, ns, fn, arg);
}

struct kv_who {
	uint32_t node;
	uint64_t session;
	bool all;
	size_t count;
};

static void kv_session_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	struct kv_who *w = arg;

	kv_unpin_all(&e->pins, w->node, w->session, w->all);
	if (e->has_pending && e->pnode == w->node && (w->all || e->psession == w->session)) {
		kv_val_free(pd, ns, &e->pending);
		kv_set_pending(ns, e, false);
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
	}
}

/* A client session or a whole node went away: its reservations and pins go. */
void kv_session_end(struct poold *pd, uint32_t node, uint64_t session, bool all)
{
	struct kv_who w = {node, session, all, 0};
	struct kv_zombie *z;
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	/* Every entry if some are pinned; else only where reservations are (a close is cheap). */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (kv_npins > 0 || ns->npending > 0)
			kv_foreach_ns(pd, ns, kv_session_entry, &w);
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		TAILQ_FOREACH(z, &ns->zombies, entry)
			kv_unpin_all(&z->pins, node, session, all);
		kv_zombies_sweep(pd, ns);
	}
	TAILQ_FOREACH(z, &pd->kv->orphans->zombies, entry)
		kv_unpin_all(&z->pins, node, session, all);
	kv_zombies_sweep(pd, pd->kv->orphans);
}

/* Forget a value's places on node (retired); false when it had no other. */
static bool kv_val_drop_node(struct poold *pd, struct kv_ns *ns, struct kv_val *v, uint32_t node)
{
	struct kv_place all[KV_MAX_REPLICAS], keep[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i, k = 0;

	for (i = 0; i < n; i++)
		if (all[i].node != node)
			keep[k++] = all[i];
	if (k == 0)
		return false;
	for (i = 0; i < n; i++)
		if (all[i].node == node) {
			region_retire(pd, node, all[i].arena, all[i].off, all[i].alen, NULL);
			ns->used -= all[i].alen;
		}
	v->node = keep[0].node;
	v->arena = keep[0].arena;
	v->off = keep[0].off;
	v->alen = keep[0].alen;
	v->ncopies = (uint8_t)(k - 1);
	for (i = 1; i < k; i++)
		v->copy[i - 1] = keep[i];
	return true;
}

static void kv_lost_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	struct kv_who *w = arg;
	bool hit = false;

	if (e->has_pending && kv_val_on(&e->pending, w->node)) {
		kv_pending_retire(pd, ns, e); /* its writer's commit will change nothing */
		hit = true;
	}
	if (e->has_val && kv_val_on(&e->val, w->node)) {
		/* Copies elsewhere keep the value; without any, it is gone. */
		if (!kv_val_drop_node(pd, ns, &e->val, w->node))
			kv_retire_val(pd, ns, e);
		hit = true;
	}
	w->count += hit;
	if (kv_entry_unused(e))
		kv_entry_drop(ns, e);
}

/* A lender died or restarted: its values are gone, gets of them are misses. */
void kv_node_lost(struct poold *pd, uint32_t node)
{
	struct kv_who w = {.node = node};

	kv_foreach(pd, kv_lost_entry, &w);
	if (w.count > 0) {
		log_warnx("KV: %zu value(s) on node %u dropped", w.count, node);
		events_add(pd, "kv", "%zu value(s) on node %u dropped or down to their copies",
			   w.count, node);
	}
}

static void kv_expire_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	uint64_t now = *(const uint64_t *)arg;

	if (!e->has_pending || now - e->preserved_at < KV_RESERVE_TTL_MS)
		return;
	kv_pending_retire(pd, ns, e); /* out of the index; freed with its writer */
	if (kv_entry_unused(e))
		kv_entry_drop(ns, e);
}

/* A lost copy being made again. */
struct kv_recopy {
	TAILQ_ENTRY(kv_recopy) entry; /* on kv_space.copying */
	uint64_t ns_id, version;
	uint8_t *key;
	size_t klen;
	struct kv_place to;
};

/* The copy is at its new lender (or failed): the value has one more place, or not. */
static void kv_recopied(struct poold *pd, void *arg, int rc)
{
	struct kv_recopy *rk = arg;
	struct kv_ns *ns = pd->kv ? kv_ns_by_id(pd, rk->ns_id) : NULL;
	struct kv_entry *e = NULL;

	if (pd->kv != NULL)
		TAILQ_REMOVE(&pd->kv->copying, rk, entry);
	if (ns != NULL && (e = *kv_slot(ns, rk->key, rk->klen, kv_hash(rk->key, rk->klen))) != NULL)
		e->recopy_at = 0;
	if (rc == 0 && e != NULL && e->has_val && e->val.version == rk->version && !e->val.pmem &&
	    1u + e->val.ncopies < ns->replicas && !kv_val_on(&e->val, rk->to.node)) {
		e->val.copy[e->val.ncopies++] = rk->to;
		kv_tell(pd, ns, e);
	} else {
		region_retire(pd, rk->to.node, rk->to.arena, rk->to.off, rk->to.alen, NULL);
		if (ns != NULL)
			ns->used -= rk->to.alen;
	}
	region_account(pd);
	free(rk->key);
	free(rk);
}

/*
 * A value with fewer places than its namespace's replicas (a lender of it
 * died, or too few were up when it was put): one more, on another lender,
 * copied from a place that is up.
 */
static void kv_recopy(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	struct kv_place all[KV_MAX_REPLICAS];
	uint32_t nodes[KV_MAX_REPLICAS];
	struct lender_pool *src = NULL, *dst;
	size_t n, i;
	struct kv_recopy *rk;
	uint64_t len, off, alen, src_off = 0;

	(void)arg;
	/* (a copy whose lender went away may never answer: after a while, try again) */
	if (pd->kv->recopies >= KV_RECOPY_MAX || !e->has_val || e->moving || e->val.pmem ||
	    ns->local_node != 0 || 1u + e->val.ncopies >= ns->replicas ||
	    (e->recopy_at != 0 && units_now_ms() - e->recopy_at < KV_RECOPY_TIMEOUT_MS))
		return;
	n = kv_places(&e->val, all);
	for (i = 0; i < n; i++) {
		nodes[i] = all[i].node;
		if (src == NULL && kv_node_up(pd, all[i].node)) {
			src = region_pool(pd->regions, all[i].node, all[i].arena);
			src_off = all[i].off;
		}
	}
	len = kv_alloc_len(ns, e->val.vlen);
	dst = kv_pick(pd, ns, e->hash ^ (n * UINT64_C(0x9e3779b97f4a7c15)), len, nodes, n);
	if (src == NULL || dst == NULL || extent_alloc_fine(dst->alloc, len, &off, &alen) < 0)
		return;
	rk = calloc(1, sizeof(*rk));
	if (rk == NULL || (rk->key = malloc(e->klen)) == NULL) {
		free(rk);
		extent_release(dst->alloc, off, alen);
		return;
	}
	memcpy(rk->key, e->key, e->klen);
	rk->klen = e->klen;
	rk->ns_id = ns->id;
	rk->version = e->val.version;
	rk->to = (struct kv_place){dst->node, dst->arena, off, alen};
	ns->used += alen;
	hold_tell(pd, dst->node, dst->arena, off, alen, KV_HOLD_ID(ns));
	if (copy_start(pd, src, src_off, dst, off, e->val.vlen, kv_recopied, rk) < 0) {
		region_retire(pd, dst->node, dst->arena, off, alen, NULL);
		ns->used -= alen;
		free(rk->key);
		free(rk);
		return;
	}
	/*
	 * Until the copy is done, its extent is in no value's places: the
	 * ledger must still see it claimed, or it would scrub the copy.
	 */
	TAILQ_INSERT_TAIL(&pd->kv->copying, rk, entry);
	e->recopy_at = units_now_ms();
	pd->kv->recopies++;
}

/* Drop reservations that were never committed; make lost copies again. */
void kv_sweep(struct poold *pd)
{
	uint64_t now = units_now_ms();
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	/* Only where there is something to do: a namespace may hold millions of keys. */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (ns->npending > 0)
			kv_foreach_ns(pd, ns, kv_expire_entry, &now);
	kv_expire_cycle(pd);
	if (pd->regions != NULL) {
		pd->kv->recopies = 0;
		TAILQ_FOREACH(ns, &pd->kv->list, entry)
			if (ns->replicas > 1 && ns->local_node == 0)
				kv_foreach_ns(pd, ns, kv_recopy, NULL);
	}
}

static int kv_val_extents(const struct kv_ns *ns, const struct kv_val *v, uint32_t node,
			  struct ledger_extent **ext, size_t *n, size_t *cap)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t np = kv_places(v, all), i;

	for (i = 0; i < np; i++)
		if (all[i].node == node &&
		    ledger_append(ext, n, cap, all[i].arena, all[i].off, all[i].alen,
				  KV_HOLD_ID(ns)) < 0)
			return -ENOMEM;
	return 0;
}

/* The KV extents on a node, for the ledger. */
int kv_extents(struct poold *pd, uint32_t node, struct ledger_extent **ext, size_t *n,
	       size_t *cap)
{
	struct kv_recopy *rk;
	struct kv_ns *ns;
	size_t i;

	if (pd->kv == NULL)
		return 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		struct kv_zombie *z;
		const struct kv_val *vals[2];

		for (i = 0; i < ns->nbuckets; i++) {
			struct kv_entry *e;

			for (e = ns->buckets[i]; e != NULL; e = e->hnext) {
				size_t k, nv = 0;

				if (e->has_val)
					vals[nv++] = &e->val;
				if (e->has_pending)
					vals[nv++] = &e->pending;
				for (k = 0; k < nv; k++)
					if (kv_val_extents(ns, vals[k], node, ext, n, cap) < 0)
						return -ENOMEM;
			}
		}
		TAILQ_FOREACH(z, &ns->zombies, entry)
			if (kv_val_extents(ns, &z->val, node, ext, n, cap) < 0)
				return -ENOMEM;
	}
	TAILQ_FOREACH(rk, &pd->kv->copying, entry) {
		ns = kv_ns_by_id(pd, rk->ns_id);
		if (ns != NULL && rk->to.node == node &&
		    ledger_append(ext, n, cap, rk->to.arena, rk->to.off, rk->to.alen,
				  KV_HOLD_ID(ns)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * One key, for servers inside poold (the RESP endpoint): op as in a
 * KvRequest, arg the size (reserve) or version (commit, release). The
 * caller is session of this node. Returns the key's status; on 0 *ret
 * tells where the value lives.
 */
int kv_local_op(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		const char *op, const uint8_t *key, size_t klen, uint64_t arg, struct kv_where *ret)
{
	Pool__KvRequest kr = POOL__KV_REQUEST__INIT;
	ProtobufCBinaryData k = {.len = klen, .data = (uint8_t *)key};
	struct req q = {.pd = pd, .node = pd->node_id, .session = session, .uid = uid,
			.gid = (gid_t)-1, .admin = uid == 0};
	Pool__KvLocation loc;
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	if (ns == NULL)
		return -ENOENT;
	if (!kv_ns_allowed(ns, &q, kv_op_access(op)))
		return -EACCES;
	kr.op = (char *)op;
	kr.ns = (char *)nsname;
	kr.keys = &k;
	kr.n_keys = 1;
	kr.sizes = &arg;
	kr.n_sizes = 1;
	kr.versions = &arg;
	kr.n_versions = 1;
	kv_one(&q, ns, &kr, 0, &loc, NULL);
	if (loc.status == 0 && ret != NULL)
		*ret = (struct kv_where){loc.node, loc.arena, loc.off, loc.len, loc.version};
	if (strcmp(op, "reserve") == 0 || strcmp(op, "remove") == 0)
		region_account(pd);
	return loc.status;
}

/* Whether a RESP database is uid's: root's are all; another uid's, those it owns (0600). */
static bool kv_local_owns(const struct kv_ns *ns, uid_t uid)
{
	return uid == 0 || (ns->uid == uid && (ns->mode & 0600) == 0600);
}

/*
 * Make sure a namespace exists (the RESP endpoint's databases); 0 or
 * -errno. Root's are open to all, as poold's own; another uid's are its
 * alone (mode 0600), and -EACCES when one of that name is someone else's.
 * A new one keeps its values on this node (here) or spreads them over the
 * lenders as any namespace does.
 */
int kv_local_ensure(struct poold *pd, const char *nsname, uint64_t capacity, uid_t uid, bool here)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return -ENOTSUP;
	if ((ns = kv_ns_find(pd, nsname)) != NULL) {
		if (!kv_local_owns(ns, uid))
			return -EACCES;
		ns->resp_db = true; /* also one rebuilt from its lenders after a restart */
		return 0;
	}
	ns = kv_ns_new(pd, nsname, capacity);
	if (ns == NULL)
		return -ENOMEM;
	ns->resp_db = true;
	ns->local_node = here ? pd->node_id : 0;
	if (uid != 0) {
		ns->uid = uid;
		ns->gid = (gid_t)-1;
		ns->mode = 0600;
	}
	return 0;
}

/*
 * Reserve a place for a key's value as kv_local_op("reserve") does, on this
 * node whatever the namespace's placement when here (a RESP transaction's
 * writes, which must be readable at once).
 */
int kv_local_reserve(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		     const uint8_t *key, size_t klen, uint64_t len, bool here, struct kv_where *ret)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	uint32_t placed;
	int rc;

	if (ns == NULL || !here)
		return kv_local_op(pd, session, uid, nsname, "reserve", key, klen, len, ret);
	placed = ns->local_node;
	ns->local_node = pd->node_id;
	rc = kv_local_op(pd, session, uid, nsname, "reserve", key, klen, len, ret);
	ns->local_node = placed;
	return rc;
}

/*
 * The namespaces' definitions, which every node keeps for a restarted
 * coordinator: so that a namespace comes back even when it holds no value
 * to be rebuilt from. (A namespace dropped while a node was away and the
 * coordinator restarted before the node came back comes back too.)
 * *ret_m (n entries) and *ret_mp point into the namespaces: free both.
 */
int kv_defs(struct poold *pd, Pool__KvNamespace **ret_m, Pool__KvNamespace ***ret_mp,
	    size_t *ret_n)
{
	Pool__KvNamespace *m, **mp;
	struct kv_ns *ns;
	size_t n = 0;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n++;
	m = calloc(n ? n : 1, sizeof(*m));
	mp = calloc(n ? n : 1, sizeof(*mp));
	if (m == NULL || mp == NULL) {
		free(m);
		free(mp);
		return -ENOMEM;
	}
	n = 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (!ns->resp_db) { /* RESP databases are made again on use */
			kv_ns_msg(ns, &m[n]);
			mp[n] = &m[n];
			n++;
		}
	*ret_m = m;
	*ret_mp = mp;
	*ret_n = n;
	return 0;
}

/* Tell every node the namespaces as they are now. */
static void kv_defs_send(struct poold *pd)
{
	Pool__KvNsReply defs = POOL__KV_NS_REPLY__INIT;
	Pool__KvNamespace *m;
	struct member *mem;

	if (kv_defs(pd, &m, &defs.namespaces, &defs.n_namespaces) < 0)
		return; /* they learn them when they register again */
	TAILQ_FOREACH(mem, &pd->members, entry)
		if (mem->info->id != pd->node_id && mem->state == MEMBER_UP)
			coord_notice(pd, mem->info->id, WIRE_KV_NS_DEFS, &defs.base);
	free(m);
	free(defs.namespaces);
}

/*
 * Definitions from a node's record (after this coordinator restarted) or
 * from the coordinator's journal: make the namespaces it lacks.
 */
void kv_defs_adopt(struct poold *pd, Pool__KvNamespace *const *defs, size_t n,
		   const char *from)
{
	size_t i, count = 0, made = 0;
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		count++;
	for (i = 0; i < n && count < KV_MAX_NAMESPACES; i++) {
		const Pool__KvNamespace *d = defs[i];
		uint32_t flags;

		if (kv_ns_find(pd, d->name) != NULL || d->name[0] == '\0' || strlen(d->name) > POOL_REGION_NAME_MAX ||
		    d->capacity < (1u << 20) || (d->has_replicas && (d->replicas < 1 ||
								     d->replicas > KV_MAX_REPLICAS)) ||
		    (d->has_size_hint && d->size_hint > POOL_KV_VALUE_MAX))
			continue;
		flags = d->tier != NULL && strcmp(d->tier, "dram") == 0	  ? HOLD_NS_DRAM_ONLY
			: d->tier != NULL && strcmp(d->tier, "pmem") == 0 ? HOLD_NS_PERSISTENT
									  : 0;
		if (d->evict != NULL && strcmp(d->evict, "none") == 0)
			flags |= HOLD_NS_NO_EVICT;
		if (d->has_dedup && d->dedup)
			flags |= HOLD_NS_DEDUP;
		if ((ns = kv_ns_new(pd, d->name, d->capacity)) == NULL)
			return;
		ns->flags = flags;
		ns->replicas = d->has_replicas ? d->replicas : 1;
		ns->size_hint = d->has_size_hint ? d->size_hint : 0;
		if (d->has_mode) {
			ns->uid = d->uid;
			ns->gid = d->gid;
			ns->mode = d->mode & 0777;
		}
		count++;
		made++;
		log_info("KV namespace '%s' defined again from %s", ns->name, from);
	}
	if (made > 0)
		coordlog_namespaces(pd);
}

/*
 * The snapshot page stores (libpool/snap.h): dedup namespaces that never
 * evict, one in DRAM, one in the pmem tier. Made at the coordinator's
 * start; the persistent one may come back from its lenders instead.
 */
int kv_snap_open(struct poold *pd)
{
	static const struct {
		const char *name;
		uint32_t flags;
	} stores[] = {
		{"snap.pages", HOLD_NS_DRAM_ONLY},
		{"snap.ppages", HOLD_NS_PERSISTENT},
		/* dedup across uids, checked: on this node, where poold can hash each value */
		{"snap.shared", HOLD_NS_DRAM_ONLY | HOLD_NS_SHARED},
	};
	struct kv_ns *ns;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(stores); i++) {
		if (kv_ns_find(pd, stores[i].name) != NULL)
			continue;
		ns = kv_ns_new(pd, stores[i].name, (uint64_t)pd->conf->snap_capacity);
		if (ns == NULL)
			return -ENOMEM;
		ns->flags = stores[i].flags | HOLD_NS_NO_EVICT | HOLD_NS_DEDUP;
		if (ns->flags & HOLD_NS_SHARED)
			ns->local_node = pd->node_id;
	}
	return 0;
}

/* Keys of a namespace from a cursor on, for SCAN: up to max, *ret_next 0 at the end. */
size_t kv_local_scan(struct poold *pd, const char *nsname, uint64_t cursor, size_t max,
		     void (*cb)(void *arg, const uint8_t *key, size_t klen), void *arg,
		     uint64_t *ret_next)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	size_t n = 0, b;

	*ret_next = 0;
	if (ns == NULL)
		return 0;
	for (b = cursor; b < ns->nbuckets; b++) {
		struct kv_entry *e;

		if (n >= max) {
			*ret_next = b;
			break;
		}
		for (e = ns->buckets[b]; e != NULL; e = e->hnext)
			if (e->has_val) {
				cb(arg, e->key, e->klen);
				n++;
			}
	}
	return n;
}

/*
 * The entry of a key with a live value in a RESP database of uid's
 * (kv_local_owns()), its namespace in *ret_ns; or NULL.
 */
static struct kv_entry *kv_local_key(struct poold *pd, const char *nsname, uid_t uid,
				     const uint8_t *key, size_t klen, struct kv_ns **ret_ns)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;

	if (ns == NULL || !kv_local_owns(ns, uid) || klen > POOL_KV_KEY_MAX)
		return NULL;
	e = kv_live(pd, ns, kv_slot(ns, key, klen, kv_hash(key, klen)));
	*ret_ns = ns;
	return e != NULL && e->has_val ? e : NULL;
}

/*
 * Whether a value of len bytes may take over a place of alen: when it fits
 * and would not waste more than half of it (a place of one grain takes any
 * value up to a grain: the allocator gives nothing smaller).
 */
static bool kv_fits_place(const struct kv_ns *ns, uint64_t len, uint64_t alen)
{
	uint64_t want = kv_alloc_len(ns, len);

	return want <= alen && (alen <= EXTENT_GRAIN_DEFAULT || want > alen / 2);
}

/*
 * Whether uid's value of len bytes may be written over e's, in place
 * (kv_local_overwrite()): nobody reads or moves it, it is one copy in this
 * node's DRAM, it is uid's, and the new value fits its place.
 */
static bool kv_overwritable(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e,
			    uint64_t len, uid_t uid)
{
	return e->pins == NULL && !e->has_pending && !e->moving && !e->recount && !e->val.pmem &&
	       e->val.ncopies == 0 && e->val.node == pd->node_id && e->val.arena < pd->narenas &&
	       !(ns->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT)) &&
	       kv_fits_place(ns, len, e->val.alen) &&
	       e->val.owner == kv_val_owner(ns, e->key, e->klen, (uint32_t)uid);
}

/*
 * Bring into the cache what looking up these keys will touch, for a server
 * inside poold about to run a batch of commands (a RESP pipeline): each a
 * chain of dependent loads (bucket, entry and key, value and LRU
 * neighbours) that would otherwise miss one after the other, command after
 * command. Here the misses of the whole batch overlap, one stage at a time.
 */
void kv_local_prefetch(struct poold *pd, uid_t uid, const char *nsname, const char *const *keys,
		       const size_t *klens, size_t n)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e, **slot[KV_PREFETCH_MAX];
	uint64_t h[KV_PREFETCH_MAX];
	size_t i;

	if (ns == NULL || !kv_local_owns(ns, uid))
		return;
	n = MIN(n, KV_PREFETCH_MAX);
	for (i = 0; i < n; i++) {
		h[i] = kv_hash((const uint8_t *)keys[i], klens[i]);
		slot[i] = &ns->buckets[h[i] & (ns->nbuckets - 1)];
		__builtin_prefetch(slot[i]);
	}
	for (i = 0; i < n; i++)
		if ((e = *slot[i]) != NULL) {
			/* Its key, and its fields up to val's end (an entry is 16-byte aligned). */
			__builtin_prefetch((const uint8_t *)e - kv_key_room(klens[i]));
			__builtin_prefetch(e);
			__builtin_prefetch((const uint8_t *)e + 64);
			__builtin_prefetch((const uint8_t *)&e->val +
					   offsetof(struct kv_val, copy));
		}
	for (i = 0; i < n; i++) {
		for (e = *slot[i]; e != NULL && e->hash != h[i]; e = e->hnext)
			;
		if (e == NULL || !e->has_val || e->val.node != pd->node_id ||
		    e->val.arena >= pd->narenas)
			continue;
		__builtin_prefetch((const char *)pd->arenas[e->val.arena].base + e->val.off);
		if (e->lru.tqe_next != NULL)
			__builtin_prefetch(e->lru.tqe_next);
		__builtin_prefetch(e->lru.tqe_prev);
	}
}

/*
 * A key's value where it lives in this node's arena, for a server inside
 * poold that copies it out at once (RESP GET): no pin, as nothing else
 * runs before the copy is done. 0, -ENOENT, or -EREMOTE when the value is
 * on another node (then the caller looks it up with a pin).
 */
int kv_local_read(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		  size_t klen, const void **ret_data, size_t *ret_len)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL || !kv_val_usable(pd, &e->val)) {
		if (ns != NULL)
			ns->misses++;
		return -ENOENT;
	}
	if (e->val.node != pd->node_id || e->val.arena >= pd->narenas || e->val.pmem || e->moving)
		return -EREMOTE;
	ns->hits++;
	TAILQ_REMOVE(kv_lru(ns, e), e, lru);
	TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
	*ret_data = (const char *)pd->arenas[e->val.arena].base + e->val.off;
	*ret_len = e->val.vlen;
	return 0;
}

/*
 * Where a key's live value is (its first place) and its version, without a
 * pin: for the RESP endpoint, which fetches values of other nodes before a
 * command runs. 0 or -ENOENT.
 */
int kv_local_where(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		   size_t klen, struct kv_where *ret)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL || !kv_val_usable(pd, &e->val))
		return -ENOENT;
	*ret = (struct kv_where){e->val.node, e->val.arena, e->val.off, e->val.vlen,
				 e->val.version};
	return 0;
}

/*
 * Pin the value kv_local_read() just gave, for a server inside poold that
 * sends it later, by reference (a large RESP GET): nothing overwrites it in
 * place or frees it until kv_local_op("release") of the version returned,
 * or the session's end. 0 when it cannot be pinned.
 */
uint64_t kv_local_pin(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		      const uint8_t *key, size_t klen)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL || kv_pin(e, pd->node_id, session) < 0)
		return 0;
	return e->val.version;
}

/*
 * Overwrite a key's value in place with a + b (RESP SET of a key that has
 * one): when nobody reads or writes it (no pins, no reservation), it has
 * one copy, in this node's DRAM arena, in an extent the new value fits
 * (kv_fits_place()). A new version, as a commit would make; the lender's
 * record follows when the length changed (the record names the key, its
 * place and length). expire as for kv_local_expire(), or KV_EXPIRE_KEEP.
 * 0, or -EAGAIN when it cannot be done in place (the caller reserves and
 * commits instead).
 */
int kv_local_overwrite(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		       size_t klen, const void *a, size_t alen, const void *b, size_t blen,
		       int64_t expire)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);
	char *dst;

	if (e == NULL || !kv_overwritable(pd, ns, e, alen + blen, uid))
		return -EAGAIN;
	dst = (char *)pd->arenas[e->val.arena].base + e->val.off;
	if (alen > 0)
		memmove(dst, a, alen);
	if (blen > 0)
		memmove(dst + alen, b, blen);
	e->val.version = ++ns->next_version;
	TAILQ_REMOVE(kv_lru(ns, e), e, lru);
	TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
	ns->puts++;
	if (expire != KV_EXPIRE_KEEP)
		kv_set_expire(ns, e, expire); /* one already past: gone at the next access */
	if (e->val.vlen != alen + blen) {
		e->val.vlen = alen + blen;
		kv_tell(pd, ns, e);
	}
	return 0;
}

/*
 * Whether a new value of len bytes for key would be placed in this node's
 * own DRAM, in one copy, where poold can write it itself (respplace.c
 * reads a SET's value straight into its reservation): a namespace uid may
 * use, neither dedup, persistent nor shared, with one replica, with room
 * for it without evicting or spilling anything, whose placement picks
 * this node; and no value of the key that the new one could be written
 * over in place instead (then one copy over it costs less than a new
 * place and the old one's scrub).
 */
bool kv_local_lands_here(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
			 size_t klen, uint64_t len)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);
	struct lender_pool *lp;

	if (e != NULL && kv_overwritable(pd, ns, e, len, uid))
		return false;
	if (ns == NULL && (ns = pd->kv ? kv_ns_find(pd, nsname) : NULL) == NULL)
		return false;
	if (!kv_local_owns(ns, uid) || ns->replicas != 1 || klen > POOL_KV_KEY_MAX ||
	    len > POOL_KV_VALUE_MAX ||
	    (ns->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT | HOLD_NS_SHARED)))
		return false;
	/* Reserved before its bytes come, it must fit without pushing other values out. */
	if (ns->used + kv_alloc_len(ns, len) > ns->capacity ||
	    quota_over(pd, kv_val_owner(ns, key, klen, (uint32_t)uid), kv_alloc_len(ns, len)))
		return false;
	lp = kv_pick(pd, ns, kv_hash(key, klen), kv_alloc_len(ns, len), NULL, 0);
	return lp != NULL && lp->node == pd->node_id && lp->arena < pd->narenas &&
	       pd->arenas[lp->arena].tier == TIER_DRAM;
}

/*
 * Commit this session's reservation version of key if it is still the
 * key's next value; -ESTALE, with nothing changed, when a later writer or
 * a flush took it over meanwhile (the writer may store its bytes again,
 * then abort the reservation, which lives on until then).
 */
int kv_local_commit_own(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
			const uint8_t *key, size_t klen, uint64_t version)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;

	if (ns == NULL || klen > POOL_KV_KEY_MAX)
		return -ESTALE;
	e = *kv_slot(ns, key, klen, kv_hash(key, klen));
	if (e == NULL || !e->has_pending || e->pending.version != version ||
	    e->pnode != pd->node_id || e->psession != session)
		return -ESTALE;
	return kv_local_op(pd, session, uid, nsname, "commit", key, klen, version, NULL);
}

/*
 * A key's expiry (RESP TTL): 0 with *ret_at in Unix ms, 0 when it has
 * none; -ENOENT when the key has no value.
 */
int kv_local_ttl(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		 int64_t *ret_at)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL)
		return -ENOENT;
	*ret_at = e->expire_ms;
	return 0;
}

/*
 * Give a key's value an expiry in Unix ms (RESP EXPIRE), or take it away
 * (0); a time already past removes the value. -ENOENT when there is none.
 */
int kv_local_expire(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		    size_t klen, int64_t at)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL)
		return -ENOENT;
	kv_set_expire(ns, e, at);
	if (at != 0 && at <= kv_unix_ms()) {
		kv_expire_now(pd, ns, e);
		region_account(pd);
	}
	return 0;
}

/* Keys with an expiry in a namespace (INFO keyspace), or 0. */
uint64_t kv_local_volatile(struct poold *pd, const char *nsname)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	return ns != NULL ? ns->nvolatile : 0;
}

/* Entries of a namespace with a value (DBSIZE), or 0. */
uint64_t kv_local_size(struct poold *pd, const char *nsname)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;
	uint64_t n = 0;

	if (ns == NULL)
		return 0;
	TAILQ_FOREACH(e, &ns->lru, lru)
		n++;
	TAILQ_FOREACH(e, &ns->plru, lru)
		n++;
	return n;
}

/* Every namespace's stats, as kv stats shows them (the metrics endpoint). */
void kv_stats_each(struct poold *pd, void (*cb)(void *arg, const Pool__KvNamespace *m),
		   void *arg)
{
	Pool__KvNamespace m;
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		kv_ns_msg(ns, &m);
		cb(arg, &m);
	}
}

/* Flush a namespace (FLUSHDB) if it is uid's (kv_local_owns()). */
void kv_local_flush(struct poold *pd, const char *nsname, uid_t uid)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	if (ns != NULL && kv_local_owns(ns, uid))
		kv_ns_flush(pd, ns);
}

/*
 * A committed value a lender holds and the index does not know (this
 * coordinator restarted): take it back, with its namespace if need be. The
 * newer version of a key wins. 0, or -errno when it cannot be taken (the
 * caller scrubs it).
 */
int kv_adopt(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t alen,
	     const Pool__Holding *h)
{
	struct lender_pool *lp = region_pool(pd->regions, node, arena);
	const uint8_t *key = h->key.data;
	size_t klen = h->key.len;
	struct kv_entry *e;
	struct kv_ns *ns;
	uint32_t owner;
	uint64_t hash;
	bool fresh;

	if (pd->kv == NULL || lp == NULL || klen == 0 || klen > POOL_KV_KEY_MAX || h->vlen == 0 ||
	    h->vlen > alen)
		return -EINVAL;
	ns = kv_ns_find(pd, h->ns);
	if (ns == NULL) {
		ns = kv_ns_new(pd, h->ns, h->ns_capacity ? h->ns_capacity : UINT64_C(1) << 30);
		if (ns == NULL)
			return -ENOMEM;
		ns->flags = h->ns_flags & KV_NS_FLAGS;
		if (h->has_ns_replicas && h->ns_replicas >= 1 && h->ns_replicas <= KV_MAX_REPLICAS)
			ns->replicas = h->ns_replicas;
		if (h->has_ns_size_hint && h->ns_size_hint <= POOL_KV_VALUE_MAX)
			ns->size_hint = h->ns_size_hint;
		log_info("KV namespace '%s' rebuilt from its lenders", ns->name);
		events_add(pd, "kv", "namespace '%s' rebuilt from its lenders", ns->name);
	}
	hash = kv_hash(key, klen);
	e = *kv_slot(ns, key, klen, hash);
	if (e != NULL && e->has_val && e->val.version == h->version && e->val.vlen == h->vlen &&
	    !e->val.pmem && lp->tier == kv_tier(ns) && 1u + e->val.ncopies < ns->replicas &&
	    !kv_val_on(&e->val, node)) {
		/* Another copy of a replicated value. */
		if (extent_reserve_fine(lp->alloc, off, alen) < 0)
			return -EBUSY;
		e->val.copy[e->val.ncopies++] = (struct kv_place){node, arena, off, alen};
		ns->used += alen;
		return 0;
	}
	if (e != NULL && e->has_val && e->val.version >= h->version)
		return -EEXIST;
	if (extent_reserve_fine(lp->alloc, off, alen) < 0)
		return -EBUSY;
	fresh = e == NULL || !e->has_val;
	if (e != NULL && e->has_val)
		kv_val_out(pd, ns, e);
	if (e == NULL && (e = kv_entry_new(ns, key, klen, hash)) == NULL) {
		extent_release(lp->alloc, off, alen);
		return -ENOMEM;
	}
	e->val = (struct kv_val){.node = node, .arena = arena, .off = off, .alen = alen,
				 .vlen = h->vlen, .version = h->version,
				 .pmem = lp->tier != kv_tier(ns)};
	/* Its writer, as its lender's record names it (else the namespace's owner). */
	owner = kv_val_owner(ns, key, klen, h->has_ruid ? h->ruid : (uint32_t)ns->uid);
	if (kv_owner_charge(pd, &e->val, owner) < 0) {
		e->has_val = false;
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
		extent_release(lp->alloc, off, alen);
		return -ENOMEM;
	}
	e->has_val = true;
	/* References kept while its lender was away stay; after our own restart, unknown. */
	if ((ns->flags & HOLD_NS_DEDUP) && e->refs == 0) {
		e->refs = KV_REFS_UNKNOWN;
		snap_recount_want(pd);
	}
	TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
	if (e->val.pmem)
		ns->pmem_used += alen;
	else
		ns->used += alen;
	ns->next_version = MAX(ns->next_version, h->version);
	if (fresh) { /* a key of its own: no chain is known */
		kvev_stored(pd, ns->name, key, klen);
		kvev_end(pd);
	}
	return 0;
}

/* Start the KV index (coordinator). */
int kv_open(struct poold *pd)
{
	pd->kv = calloc(1, sizeof(*pd->kv));
	if (pd->kv == NULL)
		return -ENOMEM;
	TAILQ_INIT(&pd->kv->list);
	TAILQ_INIT(&pd->kv->copying);
	pd->kv->orphans = calloc(1, sizeof(*pd->kv->orphans));
	if (pd->kv->orphans == NULL || (pd->kv->orphans->buckets = calloc(1, sizeof(void *))) == NULL) {
		free(pd->kv->orphans);
		free(pd->kv);
		pd->kv = NULL;
		return -ENOMEM;
	}
	pd->kv->orphans->nbuckets = 1;
	TAILQ_INIT(&pd->kv->orphans->lru);
	TAILQ_INIT(&pd->kv->orphans->plru);
	TAILQ_INIT(&pd->kv->orphans->zombies);
	return 0;
}

/* Drop the KV index. */
void kv_close(struct poold *pd)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	while ((ns = TAILQ_FIRST(&pd->kv->list)) != NULL)
		kv_ns_free(pd, ns);
	kv_ns_free(pd, pd->kv->orphans);
	free(pd->kv);
	pd->kv = NULL;
}

/* Namespaces are made, dropped and flushed by admins; adopting and recounting holders too. */
static const struct ctl_op kv_ns_ops[] = {
	{"create", CTL_ADMIN}, {"drop", CTL_ADMIN}, {"flush", CTL_ADMIN}, {NULL, 0},
};
static const struct ctl_op kv_ops[] = {
	{"adopt", CTL_ADMIN}, {"adopted", CTL_ADMIN}, {"recount", CTL_ADMIN}, {NULL, 0},
};

const struct ctl_handler kv_handlers[] = {
	{WIRE_KV_NS, CTL_ANY, AT_COORD, kv_ns_request, kv_ns_ops},
	{WIRE_KV, CTL_ANY, AT_COORD, kv_request, kv_ops},
	{0, 0, 0, NULL, NULL},
};

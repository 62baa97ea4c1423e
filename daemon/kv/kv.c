/*
 * daemon/kv/kv.c - the KV cache index, kept by the coordinator.
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

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"

const char *kv_tier_name(uint32_t flags)
{
	return flags & HOLD_NS_PERSISTENT  ? "pmem"
	       : flags & HOLD_NS_DRAM_ONLY ? "dram"
					   : "dram+pmem";
}

/* A COUNTED statistic of proto/kvstats.h copied from the namespace's counter. */
#define KV_STAT_COPY(name, source, ...) KV_STAT_COPY_##source(name)
#define KV_STAT_COPY_COUNTED(name) ret->name = ns->name;
#define KV_STAT_COPY_DERIVED(name)

void kv_ns_stats(const struct kv_ns *ns, struct kv_ns_stats *ret)
{
	*ret = (struct kv_ns_stats){.id = ns->id,
				    .used = ns->used,
				    .pmem_used = ns->pmem_used,
				    .entries = ns->nentries - MIN(ns->copies, ns->nentries),
				    .soft_pinned = ns->nsoft,
				    .hard_pinned = ns->nhard,
				    .part = kv_ns_room(ns)};
	KV_STATS(KV_STAT_COPY)
	kv_ns_def(ns, &ret->def);
	if (kv_tier(ns) == TIER_PMEM) { /* used counts the namespace's own tier */
		ret->pmem_used += ns->used;
		ret->used = 0;
	}
}

/* Every namespace's stats, as kv stats shows them (the metrics endpoint). */
void kv_stats_each(struct poold *pd, void (*cb)(void *arg, const struct kv_ns_stats *st), void *arg)
{
	struct kv_ns_stats st;
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		kv_ns_stats(ns, &st);
		cb(arg, &st);
	}
}

struct kv_ns *kv_ns_find(struct poold *pd, const char *name)
{
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (strcmp(ns->name, name) == 0)
			return ns;
	return NULL;
}

/* What the modules above the index read of a namespace it found (kv.h). */
const char *kv_ns_name(const struct kv_ns *ns)
{
	return ns->name;
}

uint32_t kv_ns_flags(const struct kv_ns *ns)
{
	return ns->flags;
}

uint32_t kv_ns_replicas(const struct kv_ns *ns)
{
	return ns->replicas;
}

/*
 * One more bucket: the next one of this round split by the next bit of
 * the hash (a chain of one or two entries moved), the room doubled when a
 * round is done. Without memory, chains grow longer; still correct.
 */
static void kv_split(struct kv_ns *ns)
{
	struct kv_entry **pp, *e;
	size_t to;

	if (ns->nbuckets == 2 * ns->low) {
		struct kv_entry **b = realloc(ns->buckets, 4 * ns->low * sizeof(*b));

		if (b == NULL)
			return;
		ns->buckets = b;
		ns->low *= 2;
	}
	to = ns->nbuckets;
	ns->buckets[to] = NULL;
	for (pp = &ns->buckets[to - ns->low]; (e = *pp) != NULL;) {
		if ((e->hash & (2 * ns->low - 1)) == to) {
			*pp = e->hnext;
			e->hnext = ns->buckets[to];
			ns->buckets[to] = e;
		} else {
			pp = &e->hnext;
		}
	}
	ns->nbuckets++;
}

/* An entry comes (add 1) or goes (-1): counted in its shard, for a sharded namespace's copies. */
static void kv_shard_count(struct kv_ns *ns, const struct kv_entry *e, int add)
{
	uint32_t s;

	if (ns->shard_entries == NULL && (ns->flags & HOLD_NS_SHARDED) && ns->replicas > 1 &&
	    ns->nentries == 0 && add > 0)
		ns->shard_entries = calloc(KV_SHARDS, sizeof(*ns->shard_entries));
	if (ns->shard_entries == NULL)
		return;
	s = kv_shard_of(ns->name, kv_entry_key(e), e->klen);
	ns->shard_entries[s] += (uint32_t)add;
	if (ns->backs != NULL && kv_owner_bit(ns->backs, s))
		ns->copies += (size_t)add;
}

/* A new entry for a key, linked into the namespace; NULL without memory. */
struct kv_entry *kv_entry_new(struct kv_ns *ns, const uint8_t *key, size_t klen, uint64_t h)
{
	/* The key right before the entry: a short one shares its first cache line. */
	uint8_t *mem = calloc(1, kv_key_room(klen) + sizeof(struct kv_entry));
	struct kv_entry *e;

	if (mem == NULL)
		return NULL;
	e = (struct kv_entry *)(void *)(mem + kv_key_room(klen));
	memcpy((uint8_t *)e - klen, key, klen);
	e->klen = (uint16_t)klen;
	e->hash = (uint32_t)h;
	e->hnext = ns->buckets[kv_bucket(ns, e->hash)];
	ns->buckets[kv_bucket(ns, e->hash)] = e;
	kv_shard_count(ns, e, 1);
	if (++ns->nentries > ns->nbuckets)
		kv_split(ns);
	return e;
}

/* A namespace's lists, empty. */
void kv_ns_lists_init(struct kv_ns *ns)
{
	TAILQ_INIT(&ns->lru);
	TAILQ_INIT(&ns->plru);
	TAILQ_INIT(&ns->soft);
	TAILQ_INIT(&ns->hard);
	TAILQ_INIT(&ns->rvol);
	TAILQ_INIT(&ns->zombies);
	TAILQ_INIT(&ns->vol);
	TAILQ_INIT(&ns->held);
}

/* A new namespace; NULL without memory. */
struct kv_ns *kv_ns_new(struct poold *pd, const char *name, uint64_t capacity)
{
	struct kv_ns *ns = calloc(1, sizeof(*ns));

	if (ns == NULL || (ns->buckets = calloc(2 * KV_BUCKETS0, sizeof(*ns->buckets))) == NULL) {
		free(ns);
		return NULL;
	}
	snprintf(ns->name, sizeof(ns->name), "%s", name);
	ns->id = ++pd->kv->next_id;
	ns->capacity = capacity;
	ns->replicas = 1;
	ns->mode = 0666; /* poold's own (RESP, snapshot pages) and older ones: open to all */
	ns->nbuckets = ns->low = KV_BUCKETS0;
	kv_ns_lists_init(ns);
	TAILQ_INSERT_TAIL(&pd->kv->list, ns, entry);
	return ns;
}

/* e's extras (struct kv_extra), made when it has none; NULL without memory. */
struct kv_extra *kv_extra(struct kv_entry *e)
{
	if (e->x == NULL)
		e->x = calloc(1, sizeof(*e->x));
	return e->x;
}

/* Free e's extras once it has none of them left. */
void kv_extra_trim(struct kv_entry *e)
{
	if (e->x == NULL || e->is_held || e->x->pending != NULL || e->x->pins != NULL ||
	    e->x->expire_ms != 0 || e->x->recopy_at != 0 || e->x->retain_until != 0)
		return;
	free(e->x);
	e->x = NULL;
}

/*
 * e is pinned or reserved: on its namespace's held list, where a session's
 * end looks. (Its extras were made for the pin or the reservation.)
 */
static void kv_hold(struct kv_ns *ns, struct kv_entry *e)
{
	if (e->is_held)
		return;
	TAILQ_INSERT_TAIL(&ns->held, e, x->held);
	e->is_held = true;
}

/* Off the held list once nobody holds e any more. */
void kv_unhold(struct kv_ns *ns, struct kv_entry *e)
{
	if (!e->is_held || kv_pins(e) != NULL || kv_pending(e) != NULL)
		return;
	TAILQ_REMOVE(&ns->held, e, x->held);
	e->is_held = false;
	kv_extra_trim(e);
}

/* An entry's reservation, w, made: counted, and on the held list while it lasts. */
static void kv_pending_begin(struct kv_ns *ns, struct kv_entry *e, struct kv_write *w)
{
	e->x->pending = w;
	ns->npending++;
	kv_hold(ns, e);
}

/* An entry's reservation gone (its value freed, kept elsewhere or made the entry's). */
void kv_pending_end(struct kv_ns *ns, struct kv_entry *e)
{
	free(e->x->pending);
	e->x->pending = NULL;
	ns->npending--;
	kv_unhold(ns, e);
}

/* Give an entry an expiry (Unix ms), or none (0): 0, or -ENOMEM (nothing changed). */
int kv_set_expire(struct kv_ns *ns, struct kv_entry *e, int64_t at)
{
	int64_t was = kv_expire_at(e);

	if (was == 0 && at == 0)
		return 0;
	if (was == 0) {
		if (kv_extra(e) == NULL)
			return -ENOMEM;
		TAILQ_INSERT_TAIL(&ns->vol, e, x->vol);
		ns->nvolatile++;
	} else if (at == 0) {
		TAILQ_REMOVE(&ns->vol, e, x->vol);
		ns->nvolatile--;
	}
	e->x->expire_ms = at;
	kv_extra_trim(e);
	return 0;
}

static bool kv_expired(const struct kv_entry *e, int64_t now)
{
	int64_t at = kv_expire_at(e);

	return at != 0 && at <= now;
}

/*
 * Give a value's places back, without accounting (each scrubbed by its
 * lender first); v names none after.
 */
void kv_val_retire(struct poold *pd, struct kv_val *v)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (all[i].arena == KV_STORE_ARENA) /* (a sharded namespace's, here) */
			kvstore_free(pd, all[i].off, all[i].alen);
		else
			region_retire(pd, all[i].node, all[i].arena, all[i].off, all[i].alen, NULL);
	free(v->copy);
	v->copy = NULL;
	v->ncopies = 0;
}

/* One more copy of a value, at p: 0, or -ENOMEM (none added). */
int kv_val_copy_add(struct poold *pd, struct kv_val *v, const struct kv_place *p)
{
	if (v->ncopies >= KV_MAX_REPLICAS - 1)
		return -EINVAL;
	if (v->copy == NULL && (v->copy = calloc(KV_MAX_REPLICAS - 1, sizeof(*v->copy))) == NULL)
		return -ENOMEM;
	v->copy[v->ncopies++] = *p;
	kv_val_recharge(pd, v, (int64_t)p->alen);
	return 0;
}

/* The uid a dedup namespace's key belongs to: its first 4 bytes, big-endian. */
uint32_t kv_key_owner(const uint8_t *key, size_t klen)
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
uint32_t kv_val_owner(const struct kv_ns *ns, const uint8_t *key, size_t klen, uint32_t writer)
{
	return (ns->flags & (HOLD_NS_DEDUP | HOLD_NS_SHARED)) == HOLD_NS_DEDUP
		   ? kv_key_owner(key, klen)
		   : writer;
}

/* Where v's bytes are counted: a sharded namespace's values apart (kv_owner_quota_over()). */
static struct usage_table *kv_usage(struct poold *pd, const struct kv_val *v)
{
	return v->arena == KV_STORE_ARENA && !v->pmem ? &pd->kv->shard_usage : &pd->usage;
}

/*
 * Count a value's bytes (its copies too) against owner; -ENOMEM. While it
 * is counted, a place added or dropped is counted with it
 * (kv_val_recharge()), so what is taken back is what it has then.
 */
int kv_owner_charge(struct poold *pd, struct kv_val *v, uint32_t owner)
{
	if (usage_charge(kv_usage(pd, v), owner, (int64_t)kv_val_bytes(v), 0) < 0)
		return -ENOMEM;
	v->owner = owner;
	v->charged = 1;
	return 0;
}

/* A counted value's places grew or shrank by delta bytes. */
void kv_val_recharge(struct poold *pd, const struct kv_val *v, int64_t delta)
{
	/* (owner has a count while v is counted: it cannot fail) */
	if (v->charged)
		usage_charge(kv_usage(pd, v), v->owner, delta, 0);
}

/* Stop counting what kv_owner_charge() counted. */
static void kv_owner_uncharge(struct poold *pd, struct kv_val *v)
{
	kv_val_recharge(pd, v, -(int64_t)kv_val_bytes(v));
	v->charged = 0;
}

/* Give a value's places back. */
void kv_val_free(struct poold *pd, struct kv_ns *ns, struct kv_val *v)
{
	uint64_t bytes = kv_val_bytes(v);

	kv_owner_uncharge(pd, v);
	if (v->pmem)
		ns->pmem_used -= bytes;
	else
		ns->used -= bytes;
	kv_val_retire(pd, v);
}

void kv_pins_free(struct kv_pin *p)
{
	while (p != NULL) {
		struct kv_pin *next = p->next;

		free(p);
		p = next;
	}
}

/* Take a committed value out of the index: freed, or a zombie while pinned. */
void kv_val_out(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_zombie *z;
	struct kv_pin *pins;

	kv_lru_remove(ns, e);
	if (e->moving && !e->val.pmem) /* its spill is moot: no longer leaving */
		ns->leaving -= e->val.alen;
	e->moving = false;
	e->has_val = false;
	kv_set_expire(ns, e, 0); /* a key's expiry and retention are its value's */
	kv_retain_end(ns, e);
	pins = kv_pins(e);
	if (e->x != NULL)
		e->x->pins = NULL;
	kv_unhold(ns, e);
	if (pins == NULL || (z = calloc(1, sizeof(*z))) == NULL) {
		kv_pins_free(pins);
		kv_val_free(pd, ns, &e->val);
		return;
	}
	z->val = e->val;
	z->pins = pins;
	TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
}

/* A key's value is gone, not replaced: routers are told (in a flush, at once, by kv_ns_flush()). */
void kv_retire_val(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	bool pmem = e->val.pmem;

	kv_val_out(pd, ns, e);
	if (!ns->flushing)
		kv_ev_removed(pd, ns, kv_entry_key(e), e->klen, pmem);
}

/* Take a pending value out of the index, kept (pinned by its writer) until the writer is done. */
void kv_pending_retire(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_zombie *z = calloc(1, sizeof(*z));
	struct kv_pin *p = calloc(1, sizeof(*p));
	const struct kv_write *w = kv_pending(e);

	if (z == NULL || p == NULL) {
		/* Without memory to wait, leak the extent rather than lend it while written. */
		log_warnx("KV: out of memory: a superseded reservation leaks %llu bytes",
			  (unsigned long long)w->val.alen);
		free(z);
		free(p);
	} else {
		*p = (struct kv_pin){NULL, w->node, w->session, w->val.version, 1};
		z->val = w->val;
		z->pins = p;
		TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
	}
	kv_pending_end(ns, e);
}

/*
 * Whether an entry is of no more use: neither a value nor a pending one,
 * and in a dedup namespace nobody holding a reference (a value lost with
 * its lender keeps its entry and references, for the lender's journal to
 * bring the value back to, or for the holders to drop).
 */
bool kv_entry_unused(const struct kv_entry *e)
{
	return !e->has_val && kv_pending(e) == NULL && e->refs == 0;
}

/* Unlink and free an entry that has neither a value nor a pending one. */
void kv_entry_drop(struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_entry **pp = kv_slot(ns, kv_entry_key(e), e->klen, e->hash);

	kv_set_expire(ns, e, 0);
	if (e->is_held) /* (only pins of a value gone with it, or none) */
		TAILQ_REMOVE(&ns->held, e, x->held);
	free(e->x);
	*pp = e->hnext;
	kv_shard_count(ns, e, -1);
	ns->nentries--;
	heap_freed(kv_key_room(e->klen) + sizeof(*e)); /* (a flush or an eviction frees many) */
	free((uint8_t *)e - kv_key_room(e->klen));     /* the allocation starts with its key */
}

void kv_entry_clear(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	if (e->has_val)
		kv_retire_val(pd, ns, e);
	if (kv_pending(e) != NULL)
		kv_pending_retire(pd, ns, e);
	kv_entry_drop(ns, e);
}

struct kv_entry *kv_live(struct poold *pd, struct kv_ns *ns, struct kv_entry **pp)
{
	struct kv_entry *e = *pp;

	if (e != NULL && kv_expired(e, kv_expire_at(e) != 0 ? kv_unix_ms() : 0))
		e = kv_expire_now(pd, ns, e);
	return e;
}

/* The value's time is up: it goes (a write in flight stays, and becomes a new key). */
struct kv_entry *kv_expire_now(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
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
					TAILQ_REMOVE(&ns->vol, e, x->vol);
					TAILQ_INSERT_TAIL(&ns->vol, e, x->vol);
				}
			}
		} while (expired * 4 > seen && ++rounds < 16);
	}
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
struct lender_pool *kv_pick(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len,
			    const uint32_t *avoid, size_t navoid)
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
 * Places for a value of len bytes: one per replica, each on another
 * lender; fewer when fewer lenders can take it, -ENOSPC when none can.
 */
int kv_place(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len, struct kv_val *v)
{
	uint32_t nodes[KV_MAX_REPLICAS];
	struct lender_pool *lp;
	uint64_t off, alen;
	size_t k;

	if (ns->flags & HOLD_NS_SHARDED)
		return kv_owner_place(pd, ns, len, v);
	memset(v, 0, sizeof(*v));
	for (k = 0; k < ns->replicas; k++) {
		/* Each copy's candidates from another mix of the hash. */
		lp = kv_pick(pd, ns, hash ^ (k * UINT64_C(0x9e3779b97f4a7c15)),
			     kv_alloc_len(ns, len), nodes, k);
		if (lp == NULL ||
		    extent_alloc_fine(lp->alloc, kv_alloc_len(ns, len), &off, &alen) < 0)
			break;
		nodes[k] = lp->node;
		if (k == 0) {
			*v = (struct kv_val){.node = lp->node,
					     .arena = lp->arena,
					     .off = off,
					     .alen = alen,
					     .vlen = len};
		} else if (kv_val_copy_add(
			       pd, v, &(struct kv_place){lp->node, lp->arena, off, alen}) < 0) {
			extent_release(lp->alloc, off,
				       alen); /* fewer copies, as with fewer lenders */
			break;
		}
	}
	return k == 0 ? -ENOSPC : 0;
}

/* The bytes of the lenders' memory ns's values may take (kv_pool_ok()). */
static uint64_t kv_index_memory(struct poold *pd, const struct kv_ns *ns)
{
	struct lender_pool *lp;
	uint64_t total = 0;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		if (!kv_pool_ok(pd, ns, lp))
			continue;
		extent_stats(lp->alloc, &st);
		total += st.size;
	}
	return total;
}

/*
 * kv_place() that, when the lenders are full (not ns's capacity), makes
 * room: values go one at a time, KV_EVICT_NOW at most, from the namespace
 * holding most beyond its fair share of the lenders (kv_victim()), until
 * this one fits. A namespace's own cold values or a greedier one's, never
 * a namespace within its share: so a namespace can hold its capacity
 * whatever the others put. An evicted value's extent comes back once its
 * lender has scrubbed it: at once on this node, a message away on another;
 * so the evictions stop, the value not placed, once they give back room
 * for it and three more of its size (for the next puts, while the lenders
 * scrub).
 */
int kv_place_evicting(struct poold *pd, struct kv_ns *ns, uint64_t hash, uint64_t len,
		      struct kv_val *v)
{
	uint64_t level = 0, freed = 0, want = kv_alloc_len(ns, len) * kv_ns_places(ns) * 4;
	struct kv_ns *victim;
	size_t tries = 0;
	int rc;

	while ((rc = kv_place(pd, ns, hash, len, v)) == -ENOSPC && tries++ < KV_EVICT_NOW &&
	       freed < want) {
		uint64_t before;

		if (tries == 1) /* (the shares do not change while this evicts) */
			level = kv_fair_level(pd, ns, kv_index_memory(pd, ns));
		if ((victim = kv_victim(pd, ns, level)) == NULL)
			break;
		before = victim->used;
		if (!kv_evict_one(pd, victim))
			break;
		freed += before - victim->used;
	}
	return rc;
}

bool kv_node_up(struct poold *pd, uint32_t node)
{
	struct member *m = member_find(pd, node);

	return m != NULL && m->state == MEMBER_UP;
}

/* Whether a value can be read: one of its places is on a lender that is up. */
bool kv_val_usable(struct poold *pd, const struct kv_val *v)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (kv_node_up(pd, all[i].node))
			return true;
	return false;
}

int kv_pin(struct kv_ns *ns, struct kv_entry *e, uint32_t node, uint64_t session)
{
	struct kv_pin *p;

	for (p = kv_pins(e); p != NULL; p = p->next)
		if (p->node == node && p->session == session && p->version == e->val.version) {
			p->count++;
			return 0;
		}
	if (kv_extra(e) == NULL)
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		kv_extra_trim(e);
		return -ENOMEM;
	}
	*p = (struct kv_pin){e->x->pins, node, session, e->val.version, 1};
	e->x->pins = p;
	kv_hold(ns, e);
	return 0;
}

/* Drop one pin (count) of a session on version from a list; true if it was there. */
bool kv_unpin(struct kv_pin **pp, uint32_t node, uint64_t session, uint64_t version)
{
	for (; *pp != NULL; pp = &(*pp)->next) {
		struct kv_pin *p = *pp;

		if (p->node != node || p->session != session || p->version != version)
			continue;
		if (--p->count == 0) {
			*pp = p->next;
			free(p);
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
		} else {
			pp = &p->next;
		}
	}
}

/* Count a zombie taken out of its namespace against ns, and keep it there. */
void kv_zombie_move(struct kv_ns *ns, struct kv_zombie *z)
{
	TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
	if (z->val.pmem)
		ns->pmem_used += kv_val_bytes(&z->val);
	else
		ns->used += kv_val_bytes(&z->val);
}

void kv_zombies_sweep(struct poold *pd, struct kv_ns *ns)
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

struct kv_ns *kv_ns_by_id(struct poold *pd, uint64_t id)
{
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (ns->id == id)
			return ns;
	return NULL;
}

/* Call fn on every entry of a namespace; fn may drop the entry it is given. */
void kv_foreach_ns(struct poold *pd, struct kv_ns *ns,
		   void (*fn)(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg),
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

/* Every entry of a namespace goes now, whatever their number (see kv_ns_flush()). */
void kv_ns_clear(struct poold *pd, struct kv_ns *ns)
{
	size_t i;

	ns->flushing = true;
	for (i = 0; i < ns->nbuckets; i++)
		while (ns->buckets[i] != NULL)
			kv_entry_clear(pd, ns, ns->buckets[i]);
	ns->flushing = false;
	kv_zombies_sweep(pd, ns);
}

/*
 * Every key of a namespace goes (poolctl kv flush, FLUSHDB): at once for
 * whoever looks them up or puts them again. A few are freed now; more are
 * taken out of the index as a whole and freed from the loop, a slice at a
 * time (kv-reap.c).
 */
void kv_ns_flush(struct poold *pd, struct kv_ns *ns)
{
	kv_events_cleared(pd, ns->name);
	if (ns->nentries <= KV_REAP_NOW || kv_reap_flush(pd, ns) < 0)
		kv_ns_clear(pd, ns);
	region_account(pd);
}

/* Free a namespace and its entries now (a small one dropped, or at exit). */
void kv_ns_free(struct poold *pd, struct kv_ns *ns)
{
	struct kv_ns *orphans = pd->kv->orphans;
	struct kv_zombie *z;

	kv_ns_clear(pd, ns);
	/*
	 * Values still read or written outlive the namespace in the orphan list
	 * until their sessions end (at shutdown, when nothing is in flight any
	 * more, they simply go).
	 */
	while ((z = TAILQ_FIRST(&ns->zombies)) != NULL) {
		TAILQ_REMOVE(&ns->zombies, z, entry);
		if (orphans != NULL && ns != orphans) {
			kv_zombie_move(orphans, z);
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
	kv_ns_serve(pd, ns, 0);
	TAILQ_REMOVE(&pd->kv->list, ns, entry);
	free(ns->buckets);
	free(ns->shard_entries);
	free(ns->copy_since);
	kv_demand_book_free(ns->book);
	free(ns->ages);
	free(ns);
}

/*
 * Call fn on every entry of every namespace, those of flushed and dropped
 * ones not freed yet too; fn may drop the entry it is given.
 */
static void
kv_foreach(struct poold *pd,
	   void (*fn)(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg), void *arg)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		kv_foreach_ns(pd, ns, fn, arg);
	TAILQ_FOREACH(ns, &pd->kv->reaping, entry)
		kv_foreach_ns(pd, ns, fn, arg);
}

struct kv_who {
	uint32_t node;
	size_t count;
};

/* A client session that ended, or with all every session of a node. */
struct kv_ended {
	uint32_t node;
	uint64_t session;
	bool all;
};

/* A session that ended lets go of an entry: its pins, and its reservation (freed). */
static void kv_session_forget(struct poold *pd, struct kv_ns *ns, struct kv_entry *e,
			      const struct kv_ended *end)
{
	struct kv_write *w = kv_pending(e);

	if (e->x != NULL)
		kv_unpin_all(&e->x->pins, end->node, end->session, end->all);
	if (w != NULL && w->node == end->node && (end->all || w->session == end->session)) {
		kv_val_free(pd, ns, &w->val);
		kv_pending_end(ns, e);
	}
	kv_unhold(ns, e);
}

/*
 * A session's end in ns: only the entries someone pins or reserves are
 * looked at (its held list), and its zombies.
 */
static void kv_ns_session_end(struct poold *pd, struct kv_ns *ns, const struct kv_ended *end)
{
	struct kv_entry *e, *next;
	struct kv_zombie *z;

	for (e = TAILQ_FIRST(&ns->held); e != NULL; e = next) {
		next = TAILQ_NEXT(e, x->held);
		kv_session_forget(pd, ns, e, end);
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
	}
	TAILQ_FOREACH(z, &ns->zombies, entry)
		kv_unpin_all(&z->pins, end->node, end->session, end->all);
	kv_zombies_sweep(pd, ns);
}

/*
 * A client session or a whole node went away: its reservations and pins
 * go, in every namespace, those being flushed and the orphans too.
 */
void kv_session_end(struct poold *pd, uint32_t node, uint64_t session, bool all)
{
	struct kv_ended end = {node, session, all};
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		kv_ns_session_end(pd, ns, &end);
	TAILQ_FOREACH(ns, &pd->kv->reaping, entry)
		kv_ns_session_end(pd, ns, &end);
	kv_ns_session_end(pd, pd->kv->orphans, &end);
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
			kv_val_recharge(pd, v, -(int64_t)all[i].alen);
		}
	v->node = keep[0].node;
	v->arena = keep[0].arena;
	v->off = keep[0].off;
	v->alen = keep[0].alen;
	v->ncopies = (uint8_t)(k - 1); /* (in the room its copies had) */
	for (i = 1; i < k; i++)
		v->copy[i - 1] = keep[i];
	return true;
}

static void kv_lost_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	struct kv_who *w = arg;
	bool hit = false;

	if (kv_pending(e) != NULL && kv_val_on(&kv_pending(e)->val, w->node)) {
		kv_pending_retire(pd, ns, e); /* its writer's commit will change nothing */
		hit = true;
	}
	if (e->has_val && kv_val_on(&e->val, w->node)) {
		/* Copies elsewhere keep the value; without any, it is gone. */
		if (!kv_val_drop_node(pd, ns, &e->val, w->node))
			kv_retire_val(pd, ns, e);
		hit = true;
	}
	w->count += hit && !ns->flushing; /* (a flushed one is no news) */
	if (kv_entry_unused(e))
		kv_entry_drop(ns, e);
}

/*
 * A lender died or restarted: its values are gone, gets of them are
 * misses. Those of flushed namespaces go now too: freed after the
 * lender's new life began, they would be scrubbed in it.
 */
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

/* A reservation never committed goes (out of the index; freed with its writer). */
static void kv_expire_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, uint64_t now)
{
	if (kv_pending(e) == NULL || now - kv_pending(e)->reserved_at < KV_RESERVE_TTL_MS)
		return;
	kv_pending_retire(pd, ns, e);
	if (kv_entry_unused(e))
		kv_entry_drop(ns, e);
}

/* Whether the sweep makes lost copies of ns's values again. */
static bool kv_sweep_copies(struct poold *pd, const struct kv_ns *ns)
{
	return pd->regions != NULL && kv_ns_places(ns) > 1 && ns->local_node == 0;
}

/* The sweep's walk of n buckets of ns, from where the last one stopped, for lost copies. */
static void kv_sweep_ns(struct poold *pd, struct kv_ns *ns, size_t n)
{
	struct kv_entry *e;

	for (n = MIN(n, ns->nbuckets); n > 0; n--) {
		ns->sweep_bucket %= ns->nbuckets; /* (entries only move up: none is missed) */
		for (e = ns->buckets[ns->sweep_bucket++]; e != NULL; e = e->hnext)
			kv_recopy(pd, ns, e);
	}
}

/*
 * Drop reservations that were never committed (among the entries held,
 * not every key); make lost copies again. A replicated namespace may hold
 * millions of keys: each sweep looks at KV_SWEEP_BUCKETS of their buckets
 * in all, shared by such namespaces, each where the last sweep left it,
 * so a lost copy is made again a little later and the loop is never held
 * for a walk of every key.
 */
void kv_sweep(struct poold *pd)
{
	uint64_t now = units_now_ms();
	struct kv_entry *e, *next;
	struct kv_ns *ns;
	size_t n = 0;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		for (e = TAILQ_FIRST(&ns->held); e != NULL; e = next) {
			next = TAILQ_NEXT(e, x->held);
			kv_expire_entry(pd, ns, e, now);
		}
	kv_expire_cycle(pd);
	kv_retain_cycle(pd);
	pd->kv->recopies = 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n += kv_sweep_copies(pd, ns);
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (kv_sweep_copies(pd, ns))
			kv_sweep_ns(pd, ns, MAX(KV_SWEEP_BUCKETS / n, 64));
}

/* Start the KV index (coordinator). */
int kv_open(struct poold *pd, kv_defined_cb defined)
{
	if (pd->kv != NULL) { /* (every poold's, for its KV shards: kv-owner.c) */
		pd->kv->defined = defined;
		return 0;
	}
	pd->kv = calloc(1, sizeof(*pd->kv));
	if (pd->kv == NULL)
		return -ENOMEM;
	TAILQ_INIT(&pd->kv->list);
	TAILQ_INIT(&pd->kv->copying);
	TAILQ_INIT(&pd->kv->reaping);
	pd->kv->defined = defined;
	pd->kv->orphans = calloc(1, sizeof(*pd->kv->orphans));
	if (pd->kv->orphans == NULL ||
	    (pd->kv->orphans->buckets = calloc(2, sizeof(void *))) == NULL ||
	    kv_reap_open(pd) < 0 || kv_evict_open(pd) < 0) {
		kv_reap_close(pd);
		kv_evict_close(pd);
		if (pd->kv->orphans != NULL)
			free(pd->kv->orphans->buckets);
		free(pd->kv->orphans);
		free(pd->kv);
		pd->kv = NULL;
		return -ENOMEM;
	}
	pd->kv->orphans->nbuckets = pd->kv->orphans->low = 1;
	kv_ns_lists_init(pd->kv->orphans);
	return 0;
}

/* Drop the KV index. */
void kv_close(struct poold *pd)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	if (pd->kv->moves_close != NULL) /* (a coordinator that stops leading closes it early) */
		pd->kv->moves_close(pd);
	if (pd->kv->copy_close != NULL)
		pd->kv->copy_close(pd);
	kv_evict_close(pd);
	kv_demand_close(pd);
	kv_reap_close(pd); /* (what is left of it goes to the namespaces and orphans first) */
	if (pd->kv->owner_sweep != NULL)
		event_free(pd->kv->owner_sweep);
	if (pd->kv->drop_ev != NULL)
		event_free(pd->kv->drop_ev);
	if (pd->kv->ev_walk_ev != NULL)
		event_free(pd->kv->ev_walk_ev);
	while ((ns = TAILQ_FIRST(&pd->kv->list)) != NULL)
		kv_ns_free(pd, ns);
	kv_ns_free(pd, pd->kv->orphans);
	usage_clear(&pd->kv->shard_usage);
	free(pd->kv);
	pd->kv = NULL;
}

/* A lookup (pins the value for who's session) or an exists of entry e (NULL: none). */
static int kv_op_read(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
		      enum kv_op op, struct kv_entry *e, struct kv_result *res)
{
	if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val)) {
		ns->misses += op == KV_LOOKUP;
		kv_result(res, -ENOENT, NULL, KV_PLACES_NONE);
		return 0;
	}
	if (op == KV_EXISTS) {
		kv_result(res, 0, &e->val, KV_PLACES_READ_ONE);
		return 1;
	}
	if (kv_pin(ns, e, who->node, who->session) < 0) {
		kv_result(res, -ENOMEM, NULL, KV_PLACES_NONE);
		return 0;
	}
	ns->hits++;
	kv_lru_touch(ns, e);
	/* where it is now (a promotion moves it later), nearest first */
	kv_result(res, 0, &e->val, KV_PLACES_READ);
	if (e->val.pmem) {
		ns->pmem_hits++;
		kv_promote(pd, ns, e);
	}
	return 1;
}

/*
 * A reservation of size bytes for key (hash h) by who: room made within
 * the namespace's capacity and the owner's quota, the places taken, the
 * write begun on the key's entry (a reservation before it is retired: the
 * last writer wins). Its lenders are told of each place.
 */
static int kv_op_reserve(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
			 const uint8_t *key, size_t klen, uint64_t h, uint64_t size,
			 struct kv_result *res)
{
	struct kv_place all[KV_MAX_REPLICAS];
	uint64_t need;
	struct kv_write *w;
	struct kv_entry *e;
	struct kv_val v;
	uint32_t owner;
	size_t n, k;
	int rc;

	if (size > POOL_KV_VALUE_MAX) { /* 0 is an empty value (RESP's "") */
		kv_result(res, -EINVAL, NULL, KV_PLACES_NONE);
		return 0;
	}
	/* Room for every copy, each of the size it will take. */
	need = kv_alloc_len(ns, size) * kv_ns_places(ns);
	if (need > kv_ns_room(ns)) { /* would spill everything and still not fit */
		kv_result(res, -ENOSPC, NULL, KV_PLACES_NONE);
		return 0;
	}
	owner = kv_val_owner(ns, key, klen, (uint32_t)who->uid);
	rc = kv_quota_room(pd, ns, owner, need);
	if (rc == 0)
		rc = kv_make_room(pd, ns, need, !(ns->flags & HOLD_NS_NO_EVICT));
	if (rc == 0)
		rc = kv_place_evicting(pd, ns, h, size, &v);
	if (rc < 0) {
		e = *kv_slot(ns, key, klen, h);
		if (e != NULL && kv_entry_unused(e))
			kv_entry_drop(ns, e);
		kv_result(res, rc, NULL, KV_PLACES_NONE);
		return 0;
	}
	e = *kv_slot(ns, key, klen, h); /* eviction may have dropped it */
	w = malloc(sizeof(*w));
	if (w == NULL || (e == NULL && (e = kv_entry_new(ns, key, klen, h)) == NULL)) {
		free(w);
		kv_val_retire(pd, &v);
		kv_result(res, -ENOMEM, NULL, KV_PLACES_NONE);
		return 0;
	}
	/* The last writer wins, once its reservation is made: a failed one changes nothing. */
	if (kv_pending(e) != NULL)
		kv_pending_retire(pd, ns, e);
	/* (its extras for the held list: the retired reservation's may have gone) */
	if (kv_extra(e) == NULL || kv_owner_charge(pd, &v, owner) < 0) {
		free(w);
		kv_val_retire(pd, &v);
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
		else
			kv_extra_trim(e);
		kv_result(res, -ENOMEM, NULL, KV_PLACES_NONE);
		return 0;
	}
	v.version = ++ns->next_version;
	*w = (struct kv_write){v, who->node, who->session, units_now_ms()};
	kv_pending_begin(ns, e, w);
	ns->used += kv_val_bytes(&v);
	n = kv_places(&v, all);
	for (k = 0; k < n && !(ns->flags & HOLD_NS_SHARDED); k++)
		hold_tell(pd, all[k].node, all[k].arena, all[k].off, all[k].alen, KV_HOLD_ID(ns));
	kv_result(res, 0, &v, KV_PLACES_WRITE); /* every place: the writer fills each */
	return 1;
}

/*
 * The commit or abort of entry e's pending write w by who: an abort (or a
 * shared store's value whose bytes are not its key's) frees it; a commit
 * makes it the key's value, keeping the key's expiry and pin, and tells
 * the lender's record and the KV events.
 */
static int kv_op_publish(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
			 enum kv_op op, struct kv_entry *e, struct kv_write *w,
			 struct kv_result *res)
{
	enum kv_retain retain;
	int64_t ttl, retain_until;
	bool fresh, was_pmem;
	int rc;

	/* A reservation is its session's: nobody else may publish or free it. */
	if (w->node != who->node || w->session != who->session) {
		kv_result(res, -EPERM, NULL, KV_PLACES_NONE);
		return 0;
	}
	/* A value of the shared store whose bytes are not its key's is dropped. */
	rc = op == KV_COMMIT && (ns->flags & HOLD_NS_SHARED) ? kv_verify(pd, ns, e, who->uid) : 0;
	if (op == KV_ABORT || rc < 0) { /* nobody writes there any more */
		kv_val_free(pd, ns, &w->val);
		kv_pending_end(ns, e);
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
		kv_result(res, rc, NULL, KV_PLACES_NONE);
		return rc == 0;
	}
	/* In a dedup namespace the writer's holder takes a reference. */
	if ((ns->flags & HOLD_NS_DEDUP) &&
	    (rc = kv_holder_add(pd, ns, kv_entry_key(e), e->klen, e)) < 0) {
		kv_result(res, rc, NULL, KV_PLACES_NONE);
		return 0;
	}
	/* A new version of a key keeps its expiry (APPEND, INCR); SET sets its own. */
	ttl = e->has_val ? kv_expire_at(e) : 0;
	retain = (enum kv_retain)e->retain; /* (and its pin, until the put says) */
	retain_until = kv_retain_until(e);
	fresh = !e->has_val;
	was_pmem = e->has_val && e->val.pmem;
	if (e->has_val)
		kv_val_out(pd, ns, e);
	e->val = w->val;
	e->has_val = true;
	e->edited = false;
	/* (its extras are there while it is held: this takes no memory) */
	(void)kv_set_expire(ns, e, ttl);
	kv_pending_end(ns, e);
	kv_lru_append(ns, e);
	if (retain != KV_RETAIN_NONE)
		(void)kv_retain_set(ns, e, retain, retain_until);
	ns->puts++;
	/* The lender's record now names the value: a restarted coordinator rebuilds it. */
	kv_tell(pd, ns, e);
	if (fresh)
		kv_ev_stored(pd, ns, kv_entry_key(e), e->klen, e->val.pmem);
	else if (was_pmem != e->val.pmem) /* a spilled key written again */
		kv_ev_moved(pd, ns, e);
	kv_result(res, 0, &e->val, KV_PLACES_WRITE_ONE);
	return 1;
}

/*
 * A commit, abort or release of version of key (hash h, entry e or NULL):
 * first the version kept out of the index (a superseded or flushed write,
 * a value removed while read), then the entry's.
 */
static int kv_op_settle(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
			enum kv_op op, const uint8_t *key, size_t klen, uint64_t h,
			struct kv_entry *e, uint64_t version, struct kv_result *res)
{
	struct kv_write *w = e != NULL ? kv_pending(e) : NULL;
	struct kv_zombie *z;

	if (e != NULL && op == KV_RELEASE && e->x != NULL &&
	    kv_unpin(&e->x->pins, who->node, who->session, version)) {
		kv_unhold(ns, e);
		kv_result(res, 0, NULL, KV_PLACES_NONE);
		return 1;
	}
	if (op != KV_RELEASE && w != NULL && w->val.version == version)
		return kv_op_publish(pd, ns, who, op, e, w, res);
	TAILQ_FOREACH(z, &ns->zombies, entry)
		if (z->val.version == version &&
		    kv_unpin(&z->pins, who->node, who->session, version)) {
			/* Superseded, flushed or removed: as if overwritten at once. */
			kv_zombies_sweep(pd, ns);
			kv_result(res, 0, NULL, KV_PLACES_NONE);
			return 1;
		}
	/* Flushed, and not freed yet: the same. */
	if (kv_reap_settle(pd, ns, who, key, klen, h, version)) {
		kv_result(res, 0, NULL, KV_PLACES_NONE);
		return 1;
	}
	kv_result(res, op == KV_COMMIT ? -ESTALE : -ENOENT, NULL, KV_PLACES_NONE);
	return 0;
}

/*
 * One operation on one key of ns, for who (the core of the wire's KV
 * requests and of kv_local_op()): lookup pins the value for who's session
 * and names where it is; exists only names it; reserve makes a place for a
 * value of arg bytes; commit publishes, abort forgets, release unpins the
 * version arg; remove drops the key. *res says how it went and which
 * places of which value to name. 1 when it counts (found, done), else 0.
 */
int kv_key_op(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who, enum kv_op op,
	      const uint8_t *key, size_t klen, uint64_t arg, struct kv_result *res)
{
	uint64_t h = kv_hash(key, klen);
	struct kv_entry **pp = kv_slot(ns, key, klen, h), *e;
	int rc;

	/* The empty key is RESP's (GET ""): only its databases, this node's, take it. */
	if ((klen == 0 && !kv_is_resp_db(ns)) || klen > POOL_KV_KEY_MAX) {
		kv_result(res, -EINVAL, NULL, KV_PLACES_NONE);
		return 0;
	}
	e = kv_live(pd, ns, pp);
	switch (op) {
	case KV_LOOKUP:
	case KV_EXISTS:
		return kv_op_read(pd, ns, who, op, e, res);
	case KV_RESERVE:
		if ((ns->flags & HOLD_NS_DEDUP) && e != NULL &&
		    kv_dedup_reserve(pd, ns, e, who->uid, &rc)) {
			kv_result(res, rc, NULL, KV_PLACES_NONE);
			return 0;
		}
		return kv_op_reserve(pd, ns, who, key, klen, h, arg, res);
	case KV_COMMIT:
	case KV_ABORT:
	case KV_RELEASE:
		return kv_op_settle(pd, ns, who, op, key, klen, h, e, arg, res);
	case KV_REMOVE:
		if (e == NULL) {
			kv_result(res, -ENOENT, NULL, KV_PLACES_NONE);
			return 0;
		}
		kv_entry_clear(pd, ns, e);
		kv_result(res, 0, NULL, KV_PLACES_NONE);
		return 1;
	default:
		kv_result(res, e == NULL ? -ENOENT : -EINVAL, NULL, KV_PLACES_NONE);
		return 0;
	}
}

/* What an operation needs of the namespace's mode: 4 read, 2 write, 0 nothing. */
unsigned kv_key_access(enum kv_op op)
{
	switch (op) {
	case KV_LOOKUP:
	case KV_EXISTS:
		return 4;
	case KV_RESERVE:
	case KV_COMMIT:
	case KV_ABORT:
	case KV_REMOVE:
		return 2;
	case KV_RELEASE: /* of the caller's own pins */
		break;
	}
	return 0;
}

/*
 * Which of a value's places (all, n of them: kv_places()) an answer names
 * first: for a reader (pd given), the one on its own node, else the first
 * on a lender that is up; for a writer, the value's own.
 */
size_t kv_place_first(struct poold *pd, const struct kv_place *all, size_t n, uint32_t near)
{
	size_t best, i;

	if (pd == NULL)
		return 0;
	for (best = 0; best < n && all[best].node != near; best++)
		;
	for (i = 0; best == n && i < n; i++)
		if (kv_node_up(pd, all[i].node))
			best = i;
	return best < n ? best : 0;
}

/*
 * Make a namespace (poolctl kv create, pool_kv_create()), journaled and
 * told to every node: 0, or -errno with err saying why.
 */
int kv_ns_create(struct poold *pd, const struct kv_ns_spec *spec, char *err, size_t errlen)
{
	struct kv_ns *ns;
	size_t count = 0;

	if (!name_ok(spec->name, POOL_REGION_NAME_MAX, true)) {
		snprintf(err, errlen, "namespace name '%s': 1-63 characters of [A-Za-z0-9._:/-]",
			 spec->name);
		return -EINVAL;
	}
	if (kv_ns_find(pd, spec->name) != NULL) {
		snprintf(err, errlen, "KV namespace '%s' exists", spec->name);
		return -EEXIST;
	}
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		count++;
	if (count >= KV_MAX_NAMESPACES) {
		snprintf(err, errlen, "at most %d KV namespaces", KV_MAX_NAMESPACES);
		return -EUSERS;
	}
	if (spec->capacity < (1u << 20)) {
		snprintf(err, errlen, "a namespace needs a capacity of at least 1M");
		return -EINVAL;
	}
	if (spec->replicas < 1 || spec->replicas > KV_MAX_REPLICAS) {
		snprintf(err, errlen, "replicas %u: 1 to %d", spec->replicas, KV_MAX_REPLICAS);
		return -EINVAL;
	}
	if ((spec->flags & HOLD_NS_SHARDED) &&
	    (spec->replicas > 2 || (spec->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT)) ||
	     !(spec->flags & HOLD_NS_DRAM_ONLY))) {
		snprintf(err, errlen,
			 "a sharded namespace keeps its values in its owners' DRAM "
			 "(kv.shard_size): tier dram, 1 or 2 replicas");
		return -EINVAL;
	}
	if (spec->size_hint > POOL_KV_VALUE_MAX || spec->size_hint > spec->capacity) {
		snprintf(err, errlen, "size hint %llu: at most 64M and the capacity",
			 (unsigned long long)spec->size_hint);
		return -EINVAL;
	}
	ns = kv_ns_new(pd, spec->name, spec->capacity);
	if (ns == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ns->flags = spec->flags;
	ns->replicas = spec->replicas;
	ns->backs = pd->kv->backing;
	ns->size_hint = spec->size_hint;
	ns->uid = spec->uid;
	ns->gid = spec->gid;
	ns->mode = spec->mode;
	kv_demand_ns(ns);
	pd->kv->map_gen = 0; /* (its part of the capacity, kv-owner.c) */
	log_info("KV namespace '%s' created, capacity %llu, tier %s, evict %s, replicas %u, "
		 "uid %u gid %u mode %03o%s",
		 ns->name, (unsigned long long)ns->capacity, kv_tier_name(ns->flags),
		 ns->flags & HOLD_NS_NO_EVICT ? "none" : "lru", ns->replicas, (unsigned)ns->uid,
		 (unsigned)ns->gid, ns->mode, ns->flags & HOLD_NS_SHARDED ? ", sharded" : "");
	pd->kv->defined(pd);
	kv_defs_send(pd);
	return 0;
}

/*
 * Drop a namespace and its values, journaled and told to every node. Its
 * name is free at once; many values are freed from the loop, a slice at a
 * time (kv-reap.c).
 */
void kv_ns_drop(struct poold *pd, struct kv_ns *ns)
{
	log_info("KV namespace '%s' dropped", ns->name);
	kv_events_cleared(pd, ns->name);
	if (ns->nentries <= KV_REAP_NOW)
		kv_ns_free(pd, ns);
	else
		kv_reap_drop(pd, ns);
	region_account(pd);
	pd->kv->defined(pd);
	kv_defs_send(pd);
}

/*
 * daemon/kv/kv-evict.c - room for a KV reservation: the least recently used
 * values of its namespace spill to their lender's pmem tier, or are
 * evicted, under the namespace's capacity and under the owner's quota;
 * soft pinned values only once no unpinned one can go, hard pinned ones
 * never (kv-retain.c).
 *
 * Evicting a value costs microseconds (its extent freed, its lender's
 * scrub), and a large value put into a namespace of small ones may need
 * hundreds of thousands to go: a 32 MiB put into 64 MiB of 64-byte values
 * evicted 475,000 of them in its call and held poold's loop for 1.7 s. So
 * a reservation looks at KV_EVICT_NOW values at most; when more must go
 * for the capacity, the namespace goes over it by that value for a moment
 * and the loop evicts the rest, about a millisecond at a time, as Redis's
 * evictions continue from its timer once a command has done its share.
 * The owner's quota is a hard bound: it is never passed, and its
 * evictions are all done in the call.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"

#define KV_EVICT_SLICE_US 1000 /* the loop's evictions, about this long each time */

/* Whether need more DRAM bytes fit the namespace (spills in flight count as done). */
static bool kv_fits(const struct kv_ns *ns, uint64_t need)
{
	return ns->used - ns->leaving + need <= kv_ns_room(ns);
}

/*
 * Whether need more bytes of ns would pass owner's quota (quota.c), which
 * counts its regions and snapshot pages too; a sharded namespace's values
 * are bounded apart, by owner's part of its quota here (kv-owner.c).
 */
static bool kv_quota_over(struct poold *pd, const struct kv_ns *ns, uint32_t owner, uint64_t need)
{
	return ns->flags & HOLD_NS_SHARDED ? kv_owner_quota_over(pd, owner, need)
					   : quota_over(pd, owner, need);
}

/* Evict e's value (its entry stays for a write pending on it); its backup is told first. */
static void kv_evict_entry(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	ns->evictions++;
	if (pd->kv->evicted != NULL)
		pd->kv->evicted(pd, ns, e);
	if (kv_pending(e) != NULL)
		kv_retire_val(pd, ns, e);
	else
		kv_entry_clear(pd, ns, e);
}

/*
 * Room for need more bytes under owner's quota (kv_quota_over()). A
 * namespace that may evict drops its own least recently used values,
 * spilled ones first (a spill gives no quota back), soft pinned ones last;
 * -EDQUOT when that is not enough.
 */
int kv_quota_room(struct poold *pd, struct kv_ns *ns, uint32_t owner, uint64_t need)
{
	struct kv_lru *lists[] = {&ns->plru, &ns->lru, &ns->soft};
	struct kv_entry *e, *next;
	size_t k;

	if (!kv_quota_over(pd, ns, owner, need))
		return 0;
	if (ns->flags & (HOLD_NS_NO_EVICT | HOLD_NS_DEDUP))
		return -EDQUOT;
	for (k = 0; k < ARRAY_SIZE(lists); k++)
		for (e = TAILQ_FIRST(lists[k]); e != NULL && kv_quota_over(pd, ns, owner, need);
		     e = next) {
			next = TAILQ_NEXT(e, lru);
			if (kv_pins(e) == NULL && !e->moving && e->val.owner == owner)
				kv_evict_entry(pd, ns, e);
		}
	return kv_quota_over(pd, ns, owner, need) ? -EDQUOT : 0;
}

/*
 * Make need bytes of DRAM room: the least recently used values that are
 * not read right now spill to their lender's pmem tier where it has room,
 * else are evicted (when may_evict; soft pinned ones then too, after the
 * others). 0 once it fits, -ENOSPC when it cannot, -EAGAIN when max values
 * were looked at and more could go.
 */
static int kv_make_room_some(struct poold *pd, struct kv_ns *ns, uint64_t need, bool may_evict,
			     size_t max)
{
	struct kv_lru *lists[] = {&ns->lru, &ns->soft};
	struct kv_entry *e, *next;
	size_t n = 0, k;
	int rc;

	for (k = 0; k < (may_evict ? ARRAY_SIZE(lists) : 1); k++)
		for (e = TAILQ_FIRST(lists[k]); e != NULL && !kv_fits(ns, need); e = next) {
			if (n++ == max)
				return -EAGAIN;
			/*
			 * A spill moves e to the pmem list, and may drop spilled values: none of
			 * this one.
			 */
			next = TAILQ_NEXT(e, lru);
			if (kv_pins(e) != NULL || e->moving)
				continue;
			rc = kv_spill(pd, ns, e, may_evict);
			if (rc != 0 && may_evict)
				kv_evict_entry(pd, ns, e);
		}
	return kv_fits(ns, need) ? 0 : -ENOSPC;
}

/* Evict ns's least recently used value that may go, soft pinned last; false when none may. */
bool kv_evict_one(struct poold *pd, struct kv_ns *ns)
{
	struct kv_lru *lists[] = {&ns->lru, &ns->soft};
	struct kv_entry *e = NULL;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(lists) && e == NULL; k++)
		TAILQ_FOREACH(e, lists[k], lru)
			if (kv_pins(e) == NULL && !e->moving)
				break;
	if (e == NULL)
		return false;
	kv_evict_entry(pd, ns, e);
	return true;
}

/*
 * Whether a and b keep their values in the same memory: the coordinator's
 * lenders of a tier, or this owner's KV store (sharded).
 */
static bool kv_same_memory(const struct kv_ns *a, const struct kv_ns *b)
{
	return (a->flags & HOLD_NS_SHARDED) == (b->flags & HOLD_NS_SHARDED) &&
	       kv_tier(a) == kv_tier(b);
}

static int kv_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The fair level of total bytes over the namespaces that share ns's memory:
 * the L at which each holding min(its capacity, L) takes it all (max-min
 * fairness), UINT64_MAX when their capacities fit in total together.
 */
uint64_t kv_fair_level(struct poold *pd, const struct kv_ns *ns, uint64_t total)
{
	uint64_t *rooms, level = UINT64_MAX;
	struct kv_ns *x;
	size_t n = 0, i;

	TAILQ_FOREACH(x, &pd->kv->list, entry)
		n += kv_same_memory(x, ns);
	rooms = calloc(n, sizeof(*rooms));
	if (rooms == NULL)
		return 0; /* (everyone over its share: the fullest namespace gives) */
	n = 0;
	TAILQ_FOREACH(x, &pd->kv->list, entry)
		if (kv_same_memory(x, ns))
			rooms[n++] = kv_ns_room(x);
	qsort(rooms, n, sizeof(*rooms), kv_cmp_u64);
	for (i = 0; i < n; i++) {
		if (rooms[i] > total / (n - i)) {
			level = total / (n - i);
			break;
		}
		total -= rooms[i];
	}
	free(rooms);
	return level;
}

/*
 * Whose value goes when ns cannot place one because the memory its values
 * live in is full, not its capacity: of the namespaces in that memory that
 * evict, the one holding most beyond its fair share (min(capacity, level),
 * level being kv_fair_level()'s of that memory, which the caller works out
 * once for all the values it evicts), else ns itself when it evicts; NULL
 * when none may give. So a namespace can always fill its capacity when
 * the capacities fit the memory together, and its fair share when they do
 * not, whatever the others hold; and one made with a capacity far beyond
 * the memory (snapshot pages, 1 TiB) crowds out none.
 */
struct kv_ns *kv_victim(struct poold *pd, struct kv_ns *ns, uint64_t level)
{
	uint64_t over = 0, share;
	struct kv_ns *x, *victim = NULL;

	TAILQ_FOREACH(x, &pd->kv->list, entry) {
		if (!kv_same_memory(x, ns) || (x->flags & KV_NS_KEEPS) ||
		    (TAILQ_EMPTY(&x->lru) && TAILQ_EMPTY(&x->soft)))
			continue;
		share = MIN(kv_ns_room(x), level);
		if (x->used > share && x->used - share > over) {
			over = x->used - share;
			victim = x;
		}
	}
	if (victim == NULL && !(ns->flags & KV_NS_KEEPS))
		victim = ns;
	return victim;
}

/* The loop evicts what a reservation left over its namespace's capacity. */
static void kv_evict_arm(struct poold *pd)
{
	static const struct timeval now = {0, 0};

	if (pd->kv->evict_ev != NULL && !evtimer_pending(pd->kv->evict_ev, NULL))
		evtimer_add(pd->kv->evict_ev, &now);
}

/*
 * Make need bytes of DRAM room (see kv_make_room_some()); 0 or -ENOSPC.
 * When more than KV_EVICT_NOW values would have to be looked at, the
 * reservation takes its room over the capacity and the loop evicts the
 * rest; until it is done, another that would take the namespace further
 * over fails, so that a namespace passes its capacity by one value at
 * most and never crowds the others out of their lenders. (A promotion,
 * which evicts nothing, is not worth it: -ENOSPC.)
 */
int kv_make_room(struct poold *pd, struct kv_ns *ns, uint64_t need, bool may_evict)
{
	int rc = kv_make_room_some(pd, ns, need, may_evict, KV_EVICT_NOW);

	if (rc != -EAGAIN)
		return rc;
	if (!may_evict || ns->evict_later)
		return -ENOSPC;
	ns->evict_later = true;
	kv_evict_arm(pd);
	return 0;
}

/*
 * Evict for about budget_us (0: no limit) in the namespaces left over
 * their capacity; whether any still is.
 */
bool kv_evict(struct poold *pd, uint64_t budget_us)
{
	uint64_t start = units_now_us();
	struct kv_ns *ns;
	bool more;

	do {
		more = false;
		TAILQ_FOREACH(ns, &pd->kv->list, entry) {
			if (!ns->evict_later)
				continue;
			ns->evict_later =
			    kv_make_room_some(pd, ns, 0, true, KV_EVICT_NOW / 4) == -EAGAIN;
			more |= ns->evict_later;
		}
	} while (more && (budget_us == 0 || units_now_us() - start < budget_us));
	return more;
}

static void kv_evict_cb(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd, (void)what;
	if (kv_evict(pd, KV_EVICT_SLICE_US))
		kv_evict_arm(pd);
	region_account(pd);
}

/* ns's room here shrank below what it holds: the loop evicts down to it. */
void kv_evict_over(struct poold *pd, struct kv_ns *ns)
{
	ns->evict_later = true;
	kv_evict_arm(pd);
}

/* The loop's evictions' event; 0 or -ENOMEM. */
int kv_evict_open(struct poold *pd)
{
	pd->kv->evict_ev = evtimer_new(pd->base, kv_evict_cb, pd);
	return pd->kv->evict_ev != NULL ? 0 : -ENOMEM;
}

void kv_evict_close(struct poold *pd)
{
	if (pd->kv->evict_ev != NULL)
		event_free(pd->kv->evict_ev);
	pd->kv->evict_ev = NULL;
}

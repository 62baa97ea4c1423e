/*
 * daemon/kv/kv-retain.c - a value's retention: soft and hard pins against
 * eviction, each until a deadline or for as long as the value lives, set
 * by the put that writes the value (Mooncake's soft pin with its TTL and
 * its hard pin).
 *
 * A pinned DRAM value leaves its tier's recency list for one of its own
 * (kv_lru()): room is made from the unpinned values first and then from
 * the soft pinned ones, each least recently used first (kv-evict.c); hard
 * pinned values are never looked at, so a namespace full of them costs a
 * put nothing to refuse. A soft pinned value that had to spill is an
 * ordinary value of the pmem tier until it is read back. A put that does
 * not say keeps the key's retention (as APPEND keeps its expiry); one
 * that says sets it, or clears it.
 *
 * Deadlines are looked at as expiries are (kv_expire_cycle()): the
 * entries that have one, 20 at a time in turn from the sweep. A value
 * whose pin ended joins its tier's list as if just used.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/kv/kv.h"

static void kv_retain_count(struct kv_ns *ns, enum kv_retain how, int64_t delta)
{
	if (how == KV_RETAIN_HARD)
		ns->nhard += (uint64_t)delta;
	else if (how == KV_RETAIN_SOFT)
		ns->nsoft += (uint64_t)delta;
}

/* Give e's deadline (Unix ms, 0: none): 0, or -ENOMEM (nothing changed). */
static int kv_retain_deadline(struct kv_ns *ns, struct kv_entry *e, int64_t until)
{
	int64_t was = kv_retain_until(e);

	if (was == 0 && until == 0)
		return 0;
	if (was == 0) {
		if (kv_extra(e) == NULL)
			return -ENOMEM;
		TAILQ_INSERT_TAIL(&ns->rvol, e, x->rvol);
	} else if (until == 0) {
		TAILQ_REMOVE(&ns->rvol, e, x->rvol);
	}
	e->x->retain_until = until;
	kv_extra_trim(e);
	return 0;
}

/*
 * Pin e's committed value how, until a Unix ms time (0: for as long as it
 * lives), or unpin it (KV_RETAIN_NONE); the value moves to the tail of its
 * list. 0, or -ENOMEM (nothing changed).
 */
int kv_retain_set(struct kv_ns *ns, struct kv_entry *e, enum kv_retain how, int64_t until)
{
	if (how == KV_RETAIN_NONE)
		until = 0;
	if (kv_retain_deadline(ns, e, until) < 0)
		return -ENOMEM;
	if (e->has_val)
		kv_lru_remove(ns, e);
	kv_retain_count(ns, e->retain, -1);
	e->retain = (uint8_t)how;
	kv_retain_count(ns, e->retain, 1);
	if (e->has_val)
		kv_lru_append(ns, e);
	return 0;
}

/* e's value left the index (and its list): its retention goes with it. */
void kv_retain_end(struct kv_ns *ns, struct kv_entry *e)
{
	(void)kv_retain_deadline(ns, e, 0);
	kv_retain_count(ns, e->retain, -1);
	e->retain = KV_RETAIN_NONE;
}

/* Unpin, with their lists, the values whose deadline passed, as kv_expire_cycle() expires. */
void kv_retain_cycle(struct poold *pd)
{
	int64_t now = kv_unix_ms();
	struct kv_entry *e;
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		unsigned rounds = 0, seen, ended;

		do {
			for (seen = ended = 0; seen < 20 && (e = TAILQ_FIRST(&ns->rvol)) != NULL;
			     seen++) {
				if (kv_retain_until(e) <= now) {
					(void)kv_retain_set(ns, e, KV_RETAIN_NONE, 0);
					ended++;
				} else {
					TAILQ_REMOVE(&ns->rvol, e, x->rvol);
					TAILQ_INSERT_TAIL(&ns->rvol, e, x->rvol);
				}
			}
		} while (ended * 4 > seen && ++rounds < 16);
	}
}

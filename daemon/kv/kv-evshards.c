/*
 * daemon/kv/kv-evshards.c - the KV events of a sharded namespace: every poold
 * publishes, on its own kv_events.endpoint (kv-events.c), the events of the
 * keys of the shards it owns and of no other, so a router that subscribes
 * to every poold sees each key at the node that holds it, as it sees each
 * engine's blocks at that engine (vLLM's data-parallel ranks publish
 * apart in the same way).
 *
 * A shard this poold comes to own is told of: its keys already here (the
 * copies it kept as the shard's backup, keys left from an earlier turn)
 * go out as BlockStored, one event each, from the loop a slice at a time;
 * from then on its keys' events go out as they happen, those that arrive
 * from its last owner included. A shard it stops owning is withdrawn: its
 * keys still here (left for the new owner to take, or kept as its backup's
 * copy) go out as BlockRemoved, likewise, its removals meanwhile too, and
 * then nothing of it. A backup's copies are never told of.
 *
 * So a subscriber of one poold sees each key's events in the order that
 * poold applied them. Between poolds there is no order: while a shard
 * moves, a key may be shown at both or at neither, and one stored while
 * its shard was being told of may be told of twice.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/member/member.h"

#define KVEVSHARDS_SLICE_US 1000 /* a walk's turn of the loop, at most */

/* The namespace whose events are published, if it is a sharded one. */
static struct kv_ns *kvevshards_ns(struct poold *pd)
{
	struct kv_ns *ns;

	if (pd->kv_events == NULL || pd->kv == NULL)
		return NULL;
	ns = kv_ns_find(pd, pd->conf->kv_events_namespace);
	return ns != NULL && (ns->flags & HOLD_NS_SHARDED) ? ns : NULL;
}

/* Whether an event of key of ns goes out here: of a shard told of (stored) or not withdrawn. */
static bool kvevshards_tells(struct poold *pd, const struct kv_ns *ns, const uint8_t *key,
			     size_t klen, bool stored)
{
	uint32_t s;

	if (pd->kv_events == NULL || strcmp(ns->name, pd->conf->kv_events_namespace) != 0)
		return false; /* (not published: no need to find the shard) */
	if (!(ns->flags & HOLD_NS_SHARDED))
		return true;
	s = kv_shard_of(ns->name, key, klen);
	return kv_owner_bit(stored ? pd->kv->ev_told : pd->kv->ev_known, s);
}

/* A key of ns became present here (its value in the pmem tier, or DRAM). */
void kv_ev_stored(struct poold *pd, const struct kv_ns *ns, const uint8_t *key, size_t klen,
		  bool pmem)
{
	if (kvevshards_tells(pd, ns, key, klen, true))
		kv_events_stored(pd, ns->name, key, klen, pmem);
}

/* A key of ns is gone from here (its value was in the pmem tier, or DRAM). */
void kv_ev_removed(struct poold *pd, const struct kv_ns *ns, const uint8_t *key, size_t klen,
		   bool pmem)
{
	if (kvevshards_tells(pd, ns, key, klen, false))
		kv_events_removed(pd, ns->name, key, klen, pmem);
}

/* e's value went to the other tier: spilled to pmem, or promoted back to DRAM. */
void kv_ev_moved(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e)
{
	if (kvevshards_tells(pd, ns, kv_entry_key(e), e->klen, true))
		kv_events_moved(pd, ns->name, kv_entry_key(e), e->klen, e->val.pmem);
}

/* The walk is over: what it withdrew is not told of any more. */
static void kvevshards_walked(struct kv_space *kv)
{
	size_t i;

	for (i = 0; i < sizeof(kv->ev_walk); i++) {
		kv->ev_known[i] = (uint8_t)(kv->ev_known[i] & (kv->ev_told[i] | ~kv->ev_walk[i]));
		kv->ev_walk[i] = 0;
	}
}

/*
 * About a millisecond of the walk: each key of a shard walked goes out as
 * BlockStored (its shard told of) or BlockRemoved (withdrawn); again at the
 * next turn of the loop until the last bucket.
 */
static void kvevshards_walk(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	struct poold *pd = arg;
	struct kv_space *kv = pd->kv;
	struct kv_ns *ns = kvevshards_ns(pd);
	uint64_t until = units_now_us() + KVEVSHARDS_SLICE_US;
	size_t n = 0;

	(void)fd, (void)what;
	for (; ns != NULL && kv->ev_bucket < ns->nbuckets; kv->ev_bucket++) {
		struct kv_entry *e;

		if (++n % 64 == 0 && units_now_us() >= until) {
			evtimer_add(kv->ev_walk_ev, &now);
			return;
		}
		for (e = ns->buckets[kv->ev_bucket]; e != NULL; e = e->hnext) {
			uint32_t s = kv_shard_of(ns->name, kv_entry_key(e), e->klen);

			if (!e->has_val || !kv_owner_bit(kv->ev_walk, s))
				continue;
			if (kv_owner_bit(kv->ev_told, s)) {
				kv_events_stored(pd, ns->name, kv_entry_key(e), e->klen,
						 e->val.pmem);
				kv_events_end(pd); /* (not a chain: a key of its own) */
			} else {
				kv_events_removed(pd, ns->name, kv_entry_key(e), e->klen,
						  e->val.pmem);
			}
		}
	}
	kv_events_end(pd);
	kvevshards_walked(kv);
}

/*
 * After a change of the map (kv-owner.c): the shards this poold came to
 * own are told of, those it stopped owning withdrawn, by a walk over the
 * events' namespace from its first bucket (again from there when the map
 * changes during one: the keys walked already are told of again).
 */
void kvevshards_map(struct poold *pd, const struct kv_shard_map *map)
{
	static const struct timeval now = {0, 0};
	struct kv_space *kv = pd->kv;
	bool changed = false;
	uint32_t s;

	for (s = 0; s < KV_SHARDS; s++) {
		bool own = map->nowners > 0 && map->owner[s] == pd->node_id;

		if (own == kv_owner_bit(kv->ev_told, s))
			continue;
		kv_owner_set(kv->ev_told, s, own);
		kv_owner_set(kv->ev_known, s, true);
		kv_owner_set(kv->ev_walk, s, true);
		changed = true;
	}
	if (!changed)
		return;
	if (kvevshards_ns(pd) == NULL || kv->ev_walk_ev == NULL) {
		kvevshards_walked(kv); /* (nothing published: nothing to tell) */
		return;
	}
	kv->ev_bucket = 0;
	evtimer_add(kv->ev_walk_ev, &now);
}

int kvevshards_open(struct poold *pd)
{
	pd->kv->ev_walk_ev = evtimer_new(pd->base, kvevshards_walk, pd);
	return pd->kv->ev_walk_ev != NULL ? 0 : -ENOMEM;
}

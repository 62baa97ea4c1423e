/*
 * daemon/kvowner.c - a poold's part of the sharded KV namespaces: the
 * index entries of the KV shards it owns (kvshard.c's map), and their
 * values in the memory it keeps for them (kvstore.c).
 *
 * Every poold keeps a namespace for each sharded one the coordinator
 * defined (a node from the definitions it is told, the coordinator its
 * own), which holds the keys of its own shards only; their requests come
 * to it from the poold of the client that asks (kvroute.c), never through
 * the coordinator. A sharded namespace's capacity is shared out as its
 * shards are: an owner's part is capacity * shards owned / 1024, evicted
 * by its own LRU (an approximation of one LRU over the namespace, as the
 * keys spread evenly over the shards).
 *
 * When the map changes, the keys of the shards this poold lost go, from
 * the loop a slice at a time: their new owners start without them (their
 * values were in this node's memory), and a shard that came back before
 * its old keys were gone must not serve them, so no lost shard is served
 * here until the last of them went.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kvint.h"
#include "daemon/kvshard.h"

#define KVOWNER_SWEEP_MS 250
#define KVOWNER_DROP_SLICE_US 1000

static bool kvowner_bit(const uint8_t *bits, uint32_t shard)
{
	return bits[shard / 8] >> (shard % 8) & 1;
}

static void kvowner_set(uint8_t *bits, uint32_t shard, bool on)
{
	if (on)
		bits[shard / 8] |= (uint8_t)(1u << (shard % 8));
	else
		bits[shard / 8] &= (uint8_t) ~(1u << (shard % 8));
}

/* The next sharded namespace after the one of id (0: the first), or NULL. */
static struct kv_ns *kvowner_next_ns(struct poold *pd, uint64_t id)
{
	struct kv_ns *ns;
	bool past = id == 0;

	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		if (past && (ns->flags & HOLD_NS_SHARDED))
			return ns;
		past = past || ns->id == id;
	}
	return NULL;
}

/*
 * About a millisecond of dropping the keys of lost shards; again at the
 * next turn of the loop until none is left.
 */
static void kvowner_drop_slice(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	struct poold *pd = arg;
	struct kv_space *kv = pd->kv;
	uint64_t until = units_now_us() + KVOWNER_DROP_SLICE_US;
	struct kv_ns *ns = kv_ns_by_id(pd, kv->drop_ns);
	size_t n = 0;

	(void)fd, (void)what;
	if (ns == NULL) /* (dropped meanwhile: the next one) */
		ns = kvowner_next_ns(pd, 0), kv->drop_bucket = 0;
	while (ns != NULL) {
		for (; kv->drop_bucket < ns->nbuckets; kv->drop_bucket++) {
			struct kv_entry **pp = &ns->buckets[kv->drop_bucket], *e;

			if (++n % 64 == 0 && units_now_us() >= until) {
				kv->drop_ns = ns->id;
				evtimer_add(kv->drop_ev, &now);
				return;
			}
			while ((e = *pp) != NULL) {
				if (kvowner_bit(kv->shards_lost,
						kv_shard_of(ns->name, kv_entry_key(e), e->klen))) {
					kv_entry_clear(pd, ns,
						       e); /* (unlinks it: *pp is the next) */
					kv->dropped++;
				} else {
					pp = &e->hnext;
				}
			}
		}
		kv_zombies_sweep(pd, ns);
		ns = kvowner_next_ns(pd, ns->id);
		kv->drop_bucket = 0;
	}
	log_info("KV shards: %zu key(s) of the shards that moved away dropped", kv->dropped);
	memset(kv->shards_lost, 0, sizeof(kv->shards_lost));
	kv->dropping = false;
}

/* This poold's part of ns's capacity, as the map shares it. */
static uint64_t kvowner_room(struct poold *pd, const struct kv_ns *ns)
{
	const struct kv_shard_map *map = cluster_kv_shards(pd);

	return ns->capacity / KV_SHARDS * kv_shard_map_owned(map, pd->node_id);
}

/*
 * After a change of the map: each sharded namespace's part of its
 * capacity; the keys of the shards lost start to go; at a node, the pins
 * and reservations of the sessions of nodes that died (the coordinator
 * ends its own index's).
 */
static void kvowner_map(struct poold *pd)
{
	static const struct timeval now = {0, 0};
	const struct kv_shard_map *map = cluster_kv_shards(pd);
	struct kv_space *kv = pd->kv;
	struct kv_ns *ns;
	struct member *m;
	bool lost = false;
	uint32_t s;

	if (kv->map_gen == pd->members_gen)
		return;
	kv->map_gen = pd->members_gen;
	TAILQ_FOREACH(ns, &kv->list, entry)
		if (ns->flags & HOLD_NS_SHARDED)
			ns->room = kvowner_room(pd, ns);
	for (s = 0; s < KV_SHARDS; s++) {
		bool owns = map->nowners > 0 && map->owner[s] == pd->node_id;

		if (kvowner_bit(kv->shards_had, s) && !owns) {
			kvowner_set(kv->shards_lost, s, true);
			lost = true;
		}
		kvowner_set(kv->shards_had, s, owns);
	}
	if (lost && kvowner_next_ns(pd, 0) != NULL) {
		if (!kv->dropping) {
			kv->dropping = true;
			kv->dropped = 0;
		}
		kv->drop_ns = kvowner_next_ns(pd, 0)->id; /* (from the start: more were lost) */
		kv->drop_bucket = 0;
		evtimer_add(kv->drop_ev, &now);
	} else if (lost) {
		memset(kv->shards_lost, 0, sizeof(kv->shards_lost));
	}
	if (pd->regions == NULL)
		TAILQ_FOREACH(m, &pd->members, entry)
			if (m->state == MEMBER_DEAD)
				kv_session_end(pd, m->info->id, 0, true);
}

/* Every 250 ms: the map's changes; at a node, its namespaces' expiry too. */
static void kvowner_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd;
	(void)what;
	kvowner_map(pd);
	if (pd->regions == NULL) /* (the coordinator's own sweep does its index's) */
		kv_sweep(pd);
}

/* The index on every poold (at a node, of its sharded namespaces alone). */
int kvowner_open(struct poold *pd)
{
	static const struct timeval every = {0, KVOWNER_SWEEP_MS * 1000};
	int rc = kv_open(pd, NULL);

	if (rc < 0)
		return rc;
	pd->kv->owner_sweep = event_new(pd->base, -1, EV_PERSIST, kvowner_sweep, pd);
	pd->kv->drop_ev = evtimer_new(pd->base, kvowner_drop_slice, pd);
	if (pd->kv->owner_sweep == NULL || pd->kv->drop_ev == NULL)
		return -ENOMEM;
	event_add(pd->kv->owner_sweep, &every);
	return 0;
}

void kvowner_close(struct poold *pd)
{
	kv_close(pd);
	usage_clear(&pd->usage); /* (what its owners' values counted, at a node too) */
}

/* Whether this poold owns key's shard of ns now. */
bool kvowner_owns(struct poold *pd, const struct kv_ns *ns, const void *key, size_t klen)
{
	const struct kv_shard_map *map = cluster_kv_shards(pd);

	uint32_t s = kv_shard_of(ns->name, key, klen);

	kvowner_map(pd);
	return map->nowners > 0 && map->owner[s] == pd->node_id &&
	       !kvowner_bit(pd->kv->shards_lost, s);
}

/* Drop a namespace of this node's, its many entries from the loop (kvreap.c). */
static void kvowner_drop(struct poold *pd, struct kv_ns *ns)
{
	log_info("KV namespace '%s' dropped", ns->name);
	if (ns->nentries <= KV_REAP_NOW)
		kv_ns_free(pd, ns);
	else
		kv_reap_drop(pd, ns);
}

/*
 * A node: the coordinator's namespace definitions, all of them; this
 * poold's sharded namespaces follow them (made, changed, dropped).
 */
void kvowner_defs(struct poold *pd, const struct kv_ns_spec *defs, size_t n)
{
	struct kv_ns *ns, *next;
	size_t i;

	if (pd->kv == NULL || pd->regions != NULL)
		return;
	for (ns = TAILQ_FIRST(&pd->kv->list); ns != NULL; ns = next) {
		next = TAILQ_NEXT(ns, entry);
		for (i = 0; i < n; i++)
			if ((defs[i].flags & HOLD_NS_SHARDED) &&
			    strcmp(defs[i].name, ns->name) == 0)
				break;
		if (i == n)
			kvowner_drop(pd, ns);
	}
	for (i = 0; i < n; i++) {
		const struct kv_ns_spec *d = &defs[i];

		if (!(d->flags & HOLD_NS_SHARDED) || d->capacity < (1u << 20) ||
		    strlen(d->name) > POOL_REGION_NAME_MAX)
			continue;
		ns = kv_ns_find(pd, d->name);
		if (ns == NULL && (ns = kv_ns_new(pd, d->name, d->capacity)) == NULL)
			return;
		ns->capacity = d->capacity;
		ns->flags = d->flags & KV_NS_FLAGS;
		ns->replicas = 1;
		ns->size_hint = d->size_hint;
		ns->uid = d->uid;
		ns->gid = d->gid;
		ns->mode = d->mode & 0777;
		ns->room = kvowner_room(pd, ns);
	}
}

/*
 * A place for a value of len bytes of ns, in this node's memory for its
 * shards; when that is full, ns's least recently used values go (unless
 * it never evicts). -ENOSPC when no room could be made.
 */
int kvowner_place(struct poold *pd, struct kv_ns *ns, uint64_t len, struct kv_val *v)
{
	uint64_t off, alen;
	size_t tries = 0;
	int rc;

	memset(v, 0, sizeof(*v));
	while ((rc = kvstore_alloc(pd, kv_alloc_len(ns, len), &off, &alen)) == -ENOSPC &&
	       !(ns->flags & HOLD_NS_NO_EVICT) && tries++ < KV_EVICT_NOW && kv_evict_one(pd, ns))
		;
	if (rc < 0)
		return rc == -ENODEV ? -ENOSPC : rc;
	*v = (struct kv_val){
	    .node = pd->node_id, .arena = KV_STORE_ARENA, .off = off, .alen = alen, .vlen = len};
	return 0;
}

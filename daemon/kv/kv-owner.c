/*
 * daemon/kv/kv-owner.c - a poold's part of the sharded KV namespaces: the
 * index entries of the KV shards it owns (shardmap.c's map), and their
 * values in the memory it keeps for them (kvstore.c).
 *
 * Every poold keeps a namespace for each sharded one the coordinator
 * defined (a node from the definitions it is told, the coordinator its
 * own), which holds the keys of its own shards only; their requests come
 * to it from the poold of the client that asks (kv-route.c), never through
 * the coordinator. A sharded namespace's capacity is shared out as its
 * shards are: an owner's part is capacity * shards owned / 1024, evicted
 * by its own LRU (an approximation of one LRU over the namespace, as the
 * keys spread evenly over the shards).
 *
 * When the map changes, the shards move without their keys being lost
 * where their last owner is still up: the new owner asks it for them
 * (kv-handover.c) and serves none of them until they came (-EAGAIN); the
 * last owner serves them no more (-ESTALE) and keeps their keys for it
 * until it took them, or for KVOWNER_LEAVE_KEEP_MS, after which what is
 * left is dropped from the loop a slice at a time. A shard whose keys are
 * being dropped is not served until the last of them went: one back
 * before they were gone would otherwise serve stale values. A poold that
 * learns it was declared dead drops all it holds (kv_owner_fenced()).
 */
#include "config.h"

#include <unistd.h>

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/util/util.h"

#define KVOWNER_SWEEP_MS 250
#define KVOWNER_DROP_SLICE_US 1000
#define KVOWNER_LEAVE_KEEP_MS 30000 /* a lost shard's keys wait for its new owner this long */

/* The next sharded namespace after the one of id (0: the first), or NULL. */
struct kv_ns *kv_owner_next_ns(struct poold *pd, uint64_t id)
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
 * Tell the hand-overs (kv-handover.c) that shards may be asked for, and the
 * backups' copies (kv-backup.c) that shards may be copied.
 */
static void kv_owner_moved(struct poold *pd)
{
	if (pd->kv->moved != NULL)
		pd->kv->moved(pd);
	if (pd->kv->copy_kick != NULL)
		pd->kv->copy_kick(pd);
}

/*
 * Whether e, of shard s of ns, is a backup's copy that a whole copy of
 * its shard did not write again: its owner no longer holds it (kv-backup.c).
 */
static bool kv_owner_stale(const struct kv_space *kv, const struct kv_ns *ns,
			   const struct kv_entry *e, uint32_t s)
{
	return kv_owner_bit(kv->stale, s) && ns->copy_since != NULL && e->has_val &&
	       kv_pending(e) == NULL && e->val.version <= ns->copy_since[s];
}

/*
 * About a millisecond of dropping the keys of the shards dropping, and
 * the stale copies of those copied whole; again at the next turn of the
 * loop until none is left.
 */
static void kv_owner_drop_slice(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	struct poold *pd = arg;
	struct kv_space *kv = pd->kv;
	uint64_t until = units_now_us() + KVOWNER_DROP_SLICE_US;
	struct kv_ns *ns = kv_ns_by_id(pd, kv->drop_ns);
	size_t n = 0;

	(void)fd, (void)what;
	if (ns == NULL) /* (dropped meanwhile: the next one) */
		ns = kv_owner_next_ns(pd, 0), kv->drop_bucket = 0;
	while (ns != NULL) {
		for (; kv->drop_bucket < ns->nbuckets; kv->drop_bucket++) {
			struct kv_entry **pp = &ns->buckets[kv->drop_bucket], *e;

			if (++n % 64 == 0 && units_now_us() >= until) {
				kv->drop_ns = ns->id;
				evtimer_add(kv->drop_ev, &now);
				return;
			}
			while ((e = *pp) != NULL) {
				uint32_t s = kv_shard_of(ns->name, kv_entry_key(e), e->klen);
				bool stale = kv_owner_stale(kv, ns, e, s);

				if (!stale &&
				    (!kv_owner_bit(kv->dropping, s) || kv_owner_keeps(kv, ns, s))) {
					pp = &e->hnext;
					continue;
				}
				kv_entry_clear(pd, ns, e); /* (unlinks it: *pp is the next) */
				kv->keys_lost += !stale && !kv_owner_bit(kv->drop_copy, s);
				kv->stale_dropped += stale;
			}
		}
		kv_zombies_sweep(pd, ns);
		ns = kv_owner_next_ns(pd, ns->id);
		kv->drop_bucket = 0;
	}
	if (kv->keys_lost > kv->drop_from)
		log_warnx("KV shards: %llu key(s) of shards moved away dropped, not taken by their "
			  "new owners in time",
			  (unsigned long long)(kv->keys_lost - kv->drop_from));
	if (kv->stale_dropped > kv->stale_from)
		log_info("KV shards: %llu backup cop(ies) that a whole copy did not write again "
			 "dropped (their owners no longer hold them)",
			 (unsigned long long)(kv->stale_dropped - kv->stale_from));
	memset(kv->dropping, 0, sizeof(kv->dropping));
	memset(kv->drop_copy, 0, sizeof(kv->drop_copy));
	memset(kv->stale, 0, sizeof(kv->stale));
	kv->drop_running = false;
	kv_owner_moved(pd); /* (shards back here wait for their keys once these went) */
}

/* Drop what is left of the shards marked dropping, and the stale copies, from the loop. */
void kv_owner_drop_start(struct poold *pd)
{
	static const struct timeval now = {0, 0};
	struct kv_space *kv = pd->kv;

	if (kv_owner_next_ns(pd, 0) == NULL) {
		memset(kv->dropping, 0, sizeof(kv->dropping));
		memset(kv->drop_copy, 0, sizeof(kv->drop_copy));
		memset(kv->stale, 0, sizeof(kv->stale));
		return;
	}
	if (!kv->drop_running) {
		kv->drop_from = kv->keys_lost;
		kv->stale_from = kv->stale_dropped;
	}
	kv->drop_running = true;
	kv->drop_ns = kv_owner_next_ns(pd, 0)->id; /* (from the start: more to drop) */
	kv->drop_bucket = 0;
	evtimer_add(kv->drop_ev, &now);
}

/* Whether node is a member not dead (a shard's last owner that can hand its keys over). */
bool kv_owner_alive(struct poold *pd, uint32_t node)
{
	struct member *m = node != 0 ? member_find(pd, node) : NULL;

	return m != NULL && m->state != MEMBER_DEAD;
}

/*
 * This poold's part of ns's capacity, as the map shares it: its shards',
 * and with 2 copies those it backs too (backed of them).
 */
static uint64_t kv_owner_room(struct poold *pd, const struct kv_ns *ns, uint32_t backed)
{
	const struct kv_shard_map *map = member_kv_shards(pd);

	return ns->capacity / KV_SHARDS *
	       (kv_shard_map_owned(map, pd->node_id) + (ns->replicas > 1 ? backed : 0));
}

/* Of the shards this poold backs (backed), those that hold copies: all, where a namespace has 2. */
static uint32_t kv_owner_backups(struct poold *pd, uint32_t backed)
{
	struct kv_ns *ns;

	for (ns = kv_owner_next_ns(pd, 0); ns != NULL; ns = kv_owner_next_ns(pd, ns->id))
		if (ns->replicas > 1)
			return backed;
	return 0;
}

/* The shards this poold backs in the map (kv-backup.c). */
static uint32_t kv_owner_backed(struct poold *pd)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	uint32_t s, n = 0;

	for (s = 0; s < KV_SHARDS && map->nowners > 1; s++)
		n += map->second[s] == pd->node_id;
	return n;
}

/*
 * After a change of the map: each sharded namespace's part of its
 * capacity; the shards gained are asked of their last owners (at its
 * first map, for each shard the owner it would have without this poold);
 * the shards lost are left for their new owners; at a node, the pins and
 * reservations of the sessions of nodes that died end (the coordinator
 * ends its own index's).
 */
void kv_owner_map(struct poold *pd)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct kv_shard_map without = {0};
	struct kv_space *kv = pd->kv;
	uint32_t me = pd->node_id, s, gained = 0, asked = 0, backed;
	bool owner, first, keys = false, drop = false;
	struct kv_ns *ns;
	struct member *m;

	if (kv->map_gen == pd->members_gen)
		return; /* (every key of every request asks: nothing more before this) */
	kv->map_gen = pd->members_gen;
	kv_demand_map(pd);
	backed = kv_owner_backed(pd);
	TAILQ_FOREACH(ns, &kv->list, entry)
		if (ns->flags & HOLD_NS_SHARDED)
			ns->room = kv_owner_room(pd, ns, backed);
	owner = map->nowners > 0 && kv_shard_map_owned(map, me) > 0;
	TAILQ_FOREACH(ns, &kv->list, entry) /* (none: the shards lost leave nothing behind) */
		keys = keys || ((ns->flags & HOLD_NS_SHARDED) && ns->nentries > 0);
	first = owner && !kv->was_owner;
	if (first && map->nowners > 1) { /* (a map without it: out of memory, none asked) */
		uint32_t *ids = malloc(map->nowners * sizeof(*ids));
		size_t n = 0, i;

		for (i = 0; ids != NULL && i < map->nowners; i++)
			if (map->owners[i] != me)
				ids[n++] = map->owners[i];
		if (ids != NULL && kv_shard_map_set(&without, ids, n) < 0)
			kv_shard_map_clear(&without);
		free(ids);
	}
	for (s = 0; s < KV_SHARDS; s++) {
		uint32_t now = map->nowners > 0 ? map->owner[s] : 0;
		uint32_t last = first ? (without.nowners > 0 ? without.owner[s] : 0) : kv->was[s];

		if (now == me && kv->was[s] != me) {
			kv_owner_set(kv->leaving, s, false); /* (back before its keys were taken) */
			kv->from[s] = last != me && kv_owner_alive(pd, last) ? last : 0;
			gained++;
			asked += kv->from[s] != 0;
			kv->hops[s] = 0;
			kv->rest[s] = kv->then[s] = 0;
		} else if (now != me && kv->was[s] == me && (keys || kv->from[s] != 0)) {
			/* (what came of it goes on, and its new owner is told where the rest is) */
			kv_owner_set(kv->leaving, s, true);
			kv->rest[s] = kv->from[s];
			kv->leave_until_ms = units_now_ms() + KVOWNER_LEAVE_KEEP_MS;
		}
		if (now != me || !kv_owner_alive(pd, kv->from[s]))
			kv->from[s] = 0; /* (its last owner died: what came is what there is) */
		/* (a backup that was not the shard's meanwhile, dead say, missed changes) */
		if (now != me || map->nowners < 2 || map->second[s] != kv->copied_to[s])
			kv->copied_to[s] = 0;
		/* A copy it backed and no longer does (not its own either): dropped. */
		if (kv_owner_bit(kv->backing, s) && map->nowners > 1 && map->second[s] != me &&
		    now != me && !kv_owner_bit(kv->leaving, s) && keys) {
			kv_owner_set(kv->dropping, s, true);
			kv_owner_set(kv->drop_copy, s, true);
			drop = true;
		}
		kv_owner_set(kv->backing, s, map->nowners > 1 && map->second[s] == me);
		if (!kv_owner_bit(kv->backing, s) || map->owner[s] != kv->whole_from[s])
			kv->whole_from[s] = 0; /* (its copy of the shard is another owner's) */
		kv->was[s] = now;
	}
	if (drop)
		kv_owner_drop_start(pd);
	kvevshards_map(pd, map);
	kv->quota_shards = kv_shard_map_owned(map, me) + kv_owner_backups(pd, backed);
	kv->was_owner = owner;
	kv_shard_map_clear(&without);
	TAILQ_FOREACH(ns, &kv->list, entry) /* (the copies among its entries, as backed now) */
		if (ns->shard_entries != NULL)
			for (ns->copies = 0, s = 0; s < KV_SHARDS; s++)
				ns->copies +=
				    kv_owner_bit(kv->backing, s) ? ns->shard_entries[s] : 0;
	if (gained > 0)
		log_info("KV shards: %u gained (%s map), %u of them asked of their last owner, the "
			 "others served at once",
			 gained, first ? "its first" : "a new", asked);
	kv_owner_moved(pd);
	if (pd->regions == NULL)
		TAILQ_FOREACH(m, &pd->members, entry)
			if (m->state == MEMBER_DEAD)
				kv_session_end(pd, m->info->id, 0, true);
}

/*
 * The coordinator had declared this poold dead (it did not run, or was
 * cut off, for longer than the heartbeat window) and it comes back without
 * a restart: the others went on with its shards meanwhile, so what it
 * holds of them, its own keys and its backup copies alike, is stale. All
 * of it is dropped from the loop (no shard served until it went), and its
 * next map is taken as its first: each shard it owns is asked of the
 * member that served it meanwhile, as after a restart.
 */
void kv_owner_fenced(struct poold *pd)
{
	struct kv_space *kv = pd->kv;
	uint32_t s;

	if (kv == NULL)
		return;
	for (s = 0; s < KV_SHARDS; s++) {
		kv->was[s] = kv->from[s] = kv->rest[s] = kv->then[s] = 0;
		kv->copied_to[s] = kv->whole_from[s] = 0;
	}
	memset(kv->leaving, 0, sizeof(kv->leaving));
	memset(kv->backing, 0, sizeof(kv->backing)); /* (so none of it is kept: kv_owner_keeps()) */
	memset(kv->stale, 0, sizeof(kv->stale));
	memset(kv->dropping, 0xff, sizeof(kv->dropping));
	memset(kv->drop_copy, 0xff, sizeof(kv->drop_copy)); /* (stale, not lost) */
	kv->was_owner = false;
	kv->map_gen = 0;
	if (kv_owner_next_ns(pd, 0) != NULL)
		log_warnx(
		    "KV shards: this node was declared dead: what it held of the shards is "
		    "dropped, and its shards taken again from those that served them meanwhile");
	kv_owner_drop_start(pd);
}

/* The lost shards whose new owners did not take their keys in time: what is left goes. */
static void kv_owner_leave_expire(struct poold *pd)
{
	struct kv_space *kv = pd->kv;
	bool any = false;
	size_t i;

	if (units_now_ms() < kv->leave_until_ms)
		return;
	for (i = 0; i < sizeof(kv->leaving); i++) {
		any = any || kv->leaving[i] != 0;
		kv->dropping[i] |= kv->leaving[i]; /* (but the keys it backs: kv_owner_keeps()) */
		kv->leaving[i] = 0;
		memset(&kv->rest[i * 8], 0, 8 * sizeof(kv->rest[0]));
	}
	if (any)
		kv_owner_drop_start(pd);
}

/* Every 250 ms: the map's changes; at a node, its namespaces' expiry too. */
static void kv_owner_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd;
	(void)what;
	kv_owner_map(pd);
	kv_owner_leave_expire(pd);
	kv_owner_moved(pd);
	if (pd->regions == NULL) /* (the coordinator's own sweep does its index's) */
		kv_sweep(pd);
}

/* The member table changed: the map is looked at from the loop now, not at the next sweep. */
static void kv_owner_members_changed(struct poold *pd)
{
	if (pd->kv != NULL && pd->kv->owner_sweep != NULL)
		event_active(pd->kv->owner_sweep, EV_TIMEOUT, 0);
}

/* The index on every poold (at a node, of its sharded namespaces alone). */
int kv_owner_open(struct poold *pd)
{
	static const struct timeval every = {0, KVOWNER_SWEEP_MS * 1000};
	int rc = kv_open(pd, NULL);

	if (rc < 0)
		return rc;
	pd->kv->owner_sweep = event_new(pd->base, -1, EV_PERSIST, kv_owner_sweep, pd);
	pd->kv->drop_ev = evtimer_new(pd->base, kv_owner_drop_slice, pd);
	if (pd->kv->owner_sweep == NULL || pd->kv->drop_ev == NULL || kvevshards_open(pd) < 0 ||
	    kv_demand_open(pd) < 0)
		return -ENOMEM;
	event_add(pd->kv->owner_sweep, &every);
	pd->members_changed = kv_owner_members_changed;
	return 0;
}

void kv_owner_close(struct poold *pd)
{
	pd->members_changed = NULL;
	kv_close(pd); /* (with what its shards' values counted: kv_space.shard_usage) */
}

/*
 * Held back (on) after this poold did not run for longer than the
 * heartbeat window (peer.c): the others may have declared it dead and
 * gone on with its shards, so none is served until the coordinator
 * answers a heartbeat (it was not) or its registration (kv_owner_fenced()
 * if it was).
 */
void kv_owner_hold(struct poold *pd, bool on)
{
	if (pd->kv != NULL)
		pd->kv->held_back = on;
}

/*
 * Whether this poold serves key of ns now: 0; -ESTALE when its shard is
 * another's; -EAGAIN while its keys are on their way here or going, or
 * while it is held back.
 */
int kv_owner_serves(struct poold *pd, const struct kv_ns *ns, const void *key, size_t klen)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	uint32_t s = kv_shard_of(ns->name, key, klen);

	kv_owner_map(pd);
	if (map->nowners == 0 || map->owner[s] != pd->node_id)
		return -ESTALE;
	if (pd->kv->from[s] != 0 || kv_owner_bit(pd->kv->dropping, s) ||
	    kv_owner_bit(pd->kv->stale, s) || pd->kv->held_back)
		return -EAGAIN;
	kv_demand_arm(pd, ns); /* (its use is reported from now on) */
	return 0;
}

/* The shards as this poold maps them and saw them move, for its status and metrics. */
void kv_shard_stats(struct poold *pd, struct kv_shard_stats *ret)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct kv_space *kv = pd->kv;
	struct kv_ns *ns;
	uint32_t s;

	*ret = (struct kv_shard_stats){
	    .shards = KV_SHARDS,
	    .owners = (uint32_t)map->nowners,
	    .owned = kv_shard_map_owned(map, pd->node_id),
	    .digest = map->digest,
	    .changes = pd->kv_shard_changes,
	    .moves = pd->kv_shard_moves,
	};
	kvstore_stats(pd, &ret->store_size, &ret->store_used);
	if (kv == NULL)
		return;
	ret->told_moves = true;
	for (s = 0; s < KV_SHARDS; s++) {
		ret->arriving += kv->from[s] != 0 ||
				 (kv_owner_bit(kv->dropping, s) && kv->was[s] == pd->node_id);
		ret->leaving += kv_owner_bit(kv->leaving, s);
	}
	ret->keys_in = kv->keys_in;
	ret->keys_out = kv->keys_out;
	ret->keys_lost = kv->keys_lost;
	ret->demand_reports = kv->demand_reports;
	ret->part_changes = kv->part_changes;
	for (ns = kv_owner_next_ns(pd, 0); ns != NULL && ns->replicas < 2;
	     ns = kv_owner_next_ns(pd, ns->id))
		;
	if (ns == NULL) /* (no namespace of 2 replicas: no backups) */
		return;
	ret->told_backups = true;
	for (s = 0; s < KV_SHARDS; s++) {
		ret->backed += kv_owner_bit(kv->backing, s);
		ret->unbacked += map->nowners > 1 && map->owner[s] == pd->node_id &&
				 kv->copied_to[s] != map->second[s];
	}
	ret->backup_keys = kv->backup_keys;
	ret->backup_missed = kv->backup_missed;
}

/* Drop a namespace of this node's, its many entries from the loop (kv-reap.c). */
static void kv_owner_drop(struct poold *pd, struct kv_ns *ns)
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
void kv_owner_defs(struct poold *pd, const struct kv_ns_spec *defs, size_t n)
{
	struct kv_ns *ns, *next;
	uint32_t backed;
	size_t i;

	if (pd->kv == NULL || pd->regions != NULL)
		return;
	backed = kv_owner_backed(pd);
	for (ns = TAILQ_FIRST(&pd->kv->list); ns != NULL; ns = next) {
		next = TAILQ_NEXT(ns, entry);
		for (i = 0; i < n; i++)
			if ((defs[i].flags & HOLD_NS_SHARDED) &&
			    strcmp(defs[i].name, ns->name) == 0)
				break;
		if (i == n)
			kv_owner_drop(pd, ns);
	}
	for (i = 0; i < n; i++) {
		const struct kv_ns_spec *d = &defs[i];

		if (!(d->flags & HOLD_NS_SHARDED) || d->capacity < (1u << 20) ||
		    strlen(d->name) > POOL_REGION_NAME_MAX)
			continue;
		ns = kv_ns_find(pd, d->name);
		if (ns == NULL && (ns = kv_ns_new(pd, d->name, d->capacity)) == NULL)
			return;
		if (ns->capacity != d->capacity)
			kv_demand_forget(ns);
		ns->capacity = d->capacity;
		ns->flags = d->flags & KV_NS_FLAGS;
		ns->replicas = d->replicas == 2 ? 2 : 1;
		ns->size_hint = d->size_hint;
		ns->uid = d->uid;
		ns->gid = d->gid;
		ns->mode = d->mode & 0777;
		kv_ns_serve(pd, ns, d->resp_db);
		ns->backs = pd->kv->backing;
		ns->room = kv_owner_room(pd, ns, backed);
		kv_demand_ns(ns);
	}
	pd->kv->quota_shards =
	    kv_shard_map_owned(member_kv_shards(pd), pd->node_id) + kv_owner_backups(pd, backed);
}

/*
 * Whether uid's values of sharded namespaces here would pass its bound
 * with need bytes more: quota.bytes shared out as the shards are (this
 * poold's part: the shards it owns, and those it backs where a namespace
 * keeps 2 replicas, of 1,024), and for every uid but root and poold's own,
 * quota.share of the memory it keeps for shards. So a uid holds about its
 * quota over all owners, not on each, and no uid fills an owner's memory.
 */
bool kv_owner_quota_over(struct poold *pd, uint32_t uid, uint64_t need)
{
	uint64_t limit = UINT64_MAX, held = usage_of(&pd->kv->shard_usage, uid).bytes, size, used;

	if (pd->conf->quota_bytes > 0)
		limit = (uint64_t)pd->conf->quota_bytes / KV_SHARDS * pd->kv->quota_shards;
	if (pd->conf->quota_share > 0 && uid != 0 && uid != (uint32_t)geteuid()) {
		kvstore_stats(pd, &size, &used);
		limit = MIN(limit, size / 100 * (uint64_t)pd->conf->quota_share);
	}
	return held > limit || need > limit - held;
}

/*
 * A place for a value of len bytes of ns, in this node's memory for its
 * shards; when that is full, values go from the sharded namespace holding
 * most beyond its fair share of it (kv_victim()): ns's own least recently
 * used, or a greedier one's. -ENOSPC when no room could be made.
 */
int kv_owner_place(struct poold *pd, struct kv_ns *ns, uint64_t len, struct kv_val *v)
{
	uint64_t off, alen, level = 0;
	struct kv_ns *victim;
	size_t tries = 0;
	int rc;

	memset(v, 0, sizeof(*v));
	while ((rc = kvstore_alloc(pd, kv_alloc_len(ns, len), &off, &alen)) == -ENOSPC &&
	       tries++ < KV_EVICT_NOW) {
		if (tries == 1) /* (the shares do not change while this evicts) */
			level = kv_fair_level(pd, ns, pd->kv_arena.size);
		if ((victim = kv_victim(pd, ns, level)) == NULL || !kv_evict_one(pd, victim))
			break;
	}
	if (rc < 0)
		return rc == -ENODEV ? -ENOSPC : rc;
	*v = (struct kv_val){
	    .node = pd->node_id, .arena = KV_STORE_ARENA, .off = off, .alen = alen, .vlen = len};
	return 0;
}

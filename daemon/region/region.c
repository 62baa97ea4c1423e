/*
 * daemon/region/region.c - the global address space, kept by the coordinator.
 *
 * Each lender's arenas get an extent allocator here when the lender
 * registers. A region is a name, a size, an owner and mode, a class and a
 * placement; the coordinator picks lenders, allocates one extent per lender
 * it uses, and hands out a global base address (never reused). A striped
 * ("spread") region maps stripe s to lender s % N at offset (s / N) * stripe
 * of that lender's extent. Clients get the extents with the lenders' worker
 * addresses and rkeys and then access memory directly.
 *
 * Freed extents are scrubbed by their lender before they can be lent again.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"
#include "daemon/region/region-int.h"
#include "proto/pool_contract.h"

#define REGION_BASE0 (UINT64_C(1) << 40)
#define REGION_GVA_ALIGN (UINT64_C(2) << 20)
#define REGION_STRIPE_DEFAULT (UINT64_C(1) << 20)
#define REGION_SCRUBS_MAX 4096 /* in flight, before bulk work waits (region_scrubs_full()) */

static const char *const class_names[] = {"pinned", "cache", "persistent"};

bool region_name_ok(const char *name)
{
	return name_ok(name, POOL_REGION_NAME_MAX, true);
}

struct region *region_find(struct regions *rs, const char *name)
{
	struct htab_node *n;

	for (n = htab_first(&rs->names, htab_hash_str(name)); n != NULL; n = htab_next(n)) {
		struct region *r = htab_entry(n, struct region, by_name);

		if (strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

struct region *region_find_id(struct regions *rs, uint64_t id)
{
	struct htab_node *n;

	for (n = htab_first(&rs->ids, htab_hash_u64(id)); n != NULL; n = htab_next(n)) {
		struct region *r = htab_entry(n, struct region, by_id);

		if (r->id == id)
			return r;
	}
	return NULL;
}

static void region_pool_free(struct lender_pool *lp)
{
	extent_arena_free(lp->alloc);
	free(lp->rkey);
	free(lp);
}

struct lender_pool *region_pool(struct regions *rs, uint32_t node, uint32_t arena)
{
	struct lender_pool *lp;

	TAILQ_FOREACH(lp, &rs->pools, entry)
		if (lp->node == node && lp->arena == arena)
			return lp;
	return NULL;
}

/*
 * A lender's memory is gone (it restarted): regions with extents there lose
 * their data. Cache regions are dropped; the others stay, marked lost, so
 * their holders and poolctl see POOL_ELOST until someone destroys them.
 * Their extents on that lender are forgotten, not released: the lender's
 * allocator starts afresh.
 */
static void region_lender_lost(struct poold *pd, uint32_t node)
{
	struct region *r, *next;
	size_t i, k;

	for (r = TAILQ_FIRST(&pd->regions->list); r != NULL; r = next) {
		bool hit = false;

		next = TAILQ_NEXT(r, entry);
		for (i = k = 0; i < r->next; i++) {
			if (r->ext[i].node == node)
				hit = true;
			else
				r->ext[k++] = r->ext[i];
		}
		if (!hit)
			continue;
		if (r->cls == CLASS_PERSISTENT && r->want_ext == 0)
			r->want_ext = r->next; /* its lender's journal may bring them back */
		r->next = k;
		log_warnx("region '%s' lost its data on node %u", r->name, node);
		events_add(pd, "region", "region '%s' lost its data on node %u", r->name, node);
		region_notify(pd, r, REGION_GONE);
		if (r->cls == CLASS_CACHE)
			region_free(pd, r);
		else
			r->lost = true;
	}
}

/*
 * Whether a lender that registers restarted since we last knew it: an
 * arena of it we know is of another incarnation (what it held is gone).
 */
bool region_lender_restarted(struct poold *pd, const struct node_info *info)
{
	struct lender_pool *lp;
	size_t i;

	for (i = 0; pd->regions != NULL && i < info->n_arenas; i++)
		if ((lp = region_pool(pd->regions, info->id, info->arenas[i].id)) != NULL &&
		    lp->incarnation != info->incarnation)
			return true;
	return false;
}

/*
 * A lender registered (or registered again): make allocators for arenas we
 * do not know. Arenas of a new incarnation start empty: what the lender held
 * before it restarted is gone.
 */
void region_lender_update(struct poold *pd, const struct node_info *info)
{
	struct regions *rs = pd->regions;
	size_t i;

	if (rs == NULL)
		return;
	for (i = 0; i < info->n_arenas; i++) {
		const struct node_arena *a = &info->arenas[i];
		struct lender_pool *lp = region_pool(rs, info->id, a->id);
		uint64_t size = a->size / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT;

		if (lp != NULL && lp->incarnation == info->incarnation)
			continue;
		if (lp != NULL) {
			log_warnx("node %u restarted: its arena %u lost what it held", info->id,
				  a->id);
			region_lender_lost(pd, info->id);
			TAILQ_REMOVE(&rs->pools, lp, entry);
			region_pool_free(lp);
		}
		if (a->id >= KV_STORE_ARENA || size >= LENDER_ARENA_BYTES) {
			log_warnx("node %u's arena %u (%llu bytes) is not lent: ids stop at %u, "
				  "sizes below %llu bytes",
				  info->id, a->id, (unsigned long long)a->size, KV_STORE_ARENA - 1,
				  LENDER_ARENA_BYTES);
			continue;
		}
		if (size == 0 || (lp = calloc(1, sizeof(*lp))) == NULL)
			continue;
		if (extent_arena_new(size, 0, 0, &lp->alloc) < 0) {
			free(lp);
			continue;
		}
		lp->node = info->id;
		lp->arena = a->id;
		lp->tier = a->tier;
		lp->numa = a->numa;
		lp->incarnation = info->incarnation;
		lp->size = size;
		lp->lent = MIN(a->lent / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT, size);
		lp->addr = a->addr;
		lp->rkey = malloc(a->rkey.len ? a->rkey.len : 1);
		if (lp->rkey != NULL && a->rkey.len > 0) /* (a registration may carry none) */
			memcpy(lp->rkey, a->rkey.data, a->rkey.len);
		lp->rkey_len = a->rkey.len;
		extent_arena_shrink(lp->alloc, lp->lent, NULL);
		TAILQ_INSERT_TAIL(&rs->pools, lp, entry);
	}
}

/* Bytes a lender's arena has in use, for poolctl nodes. */
uint64_t region_arena_used(struct poold *pd, uint32_t node, uint32_t arena)
{
	struct lender_pool *lp = pd->regions ? region_pool(pd->regions, node, arena) : NULL;
	struct extent_stats st;

	if (lp == NULL)
		return 0;
	extent_stats(lp->alloc, &st);
	return st.used;
}

/*
 * Whether a lender pool can take new extents: its node is up in the
 * incarnation the pool was made for, and the lender's own record has been
 * reconciled with the map (until then, what it already holds is unknown).
 */
bool region_pool_usable(struct poold *pd, const struct lender_pool *lp)
{
	if (!lp->reconciled)
		return false;
	struct member *m = member_find(pd, lp->node);

	return m != NULL && m->state == MEMBER_UP && m->info->incarnation == lp->incarnation;
}

/*
 * Whether regions this coordinator does not know may still come back: it
 * keeps no record of its own (no coord.journal or coord.etcd), and a lender
 * that is up has not had its record compared with the map since it
 * registered. After a restart the regions come back from those records
 * (region_adopt()), a lender at a time.
 */
bool region_rebuilding(struct poold *pd)
{
	struct lender_pool *lp;

	if (pd->coord_log != NULL)
		return false;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct member *m = member_find(pd, lp->node);

		if (!lp->reconciled && m != NULL && m->state == MEMBER_UP &&
		    m->info->incarnation == lp->incarnation)
			return true;
	}
	return false;
}

/*
 * The lender arenas of members that are up whose records have not been
 * compared with the map since they registered: none of their room is lent
 * until then (region_pool_usable()).
 */
size_t region_unreconciled(struct poold *pd)
{
	struct lender_pool *lp;
	size_t n = 0;

	if (pd->regions == NULL)
		return 0;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct member *m = member_find(pd, lp->node);

		n += !lp->reconciled && m != NULL && m->state == MEMBER_UP &&
		     m->info->incarnation == lp->incarnation;
	}
	return n;
}

/*
 * Whether the address space was opened so recently (within the heartbeat
 * window) that nodes of the coordinator's state have not registered again
 * yet, or have and their lenders' records are not compared with the map
 * yet: a request that found no room is then worth trying again, not
 * refused. why says how many are away.
 */
bool region_settling(struct poold *pd, char *why, size_t len)
{
	const struct regions *rs = pd->regions;
	uint64_t age,
	    window = (uint64_t)pd->conf->heartbeat_ms * (uint64_t)pd->conf->heartbeat_misses;
	size_t i, away = 0, unreconciled;

	if (rs == NULL || pd->coord == NULL || (age = units_now_ms() - rs->opened_ms) >= window)
		return false;
	for (i = 0; i < pd->n_member_ids; i++) {
		struct member *m = member_find(pd, pd->member_ids[i].id);

		if (pd->member_ids[i].id != pd->node_id && (m == NULL || m->state != MEMBER_UP))
			away++;
	}
	unreconciled = region_unreconciled(pd);
	if (away > 0 || unreconciled > 0)
		snprintf(
		    why, len,
		    "%zu node(s) of the pool not registered again, %zu lender arena(s) not yet "
		    "compared with their record, since this coordinator started %llu ms ago",
		    away, unreconciled, (unsigned long long)age);
	return away > 0 || unreconciled > 0;
}

/* The pool with the most free space on node (any node if node is 0) in tier. */
/*
 * The lender for len bytes in tier on node (any node if 0) and NUMA node
 * (any if -1), skipping the nodes of skip[]: placement_choose() decides
 * from what the allocators and the member table say.
 */
static struct lender_pool *region_pick(struct poold *pd, uint32_t node, enum tier tier, int numa,
				       uint64_t len, const struct lender_pool *const *skip,
				       size_t nskip)
{
	struct placement_candidate *c;
	struct lender_pool *lp, **pools, *best = NULL;
	size_t n = 0, i;
	long k;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		n++;
	c = calloc(n ? n : 1, sizeof(*c));
	pools = calloc(n ? n : 1, sizeof(*pools));
	if (c == NULL || pools == NULL)
		goto out;
	n = 0;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		bool skipped = false;

		for (i = 0; i < nskip; i++)
			skipped |= skip[i]->node == lp->node;
		extent_stats(lp->alloc, &st);
		c[n] = (struct placement_candidate){st.size, st.used, st.largest_free,
						    !skipped && !lp->draining && lp->tier == tier &&
							(node == 0 || lp->node == node) &&
							(numa < 0 || lp->numa == numa) &&
							region_pool_usable(pd, lp)};
		pools[n++] = lp;
	}
	k = placement_choose(c, n, len, (unsigned)pd->conf->watermark);
	if (k >= 0)
		best = pools[k];
out:
	free(c);
	free(pools);
	return best;
}

/* The best lender for len bytes of tier on any node but avoid (for moves). */
struct lender_pool *region_pick_avoid(struct poold *pd, enum tier tier, uint64_t len,
				      uint32_t avoid)
{
	struct lender_pool *lp;

	/* Skip every pool of the avoided node through region_pick()'s skip list. */
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == avoid)
			return region_pick(pd, 0, tier, -1, len,
					   (const struct lender_pool *const[]){lp}, 1);
	return region_pick(pd, 0, tier, -1, len, NULL, 0);
}

/* Describe the free space per lender for a -ENOSPC message. */
static void region_free_text(struct poold *pd, enum tier tier, char *buf, size_t len)
{
	struct lender_pool *lp;
	size_t off = 0;

	off += (size_t)snprintf(buf, len, "largest free %s extent per node:", tier_name(tier));
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		char sz[24];

		if (lp->tier != tier || off >= len)
			continue;
		extent_stats(lp->alloc, &st);
		units_fmt_size(st.largest_free, sz, sizeof(sz));
		off += (size_t)snprintf(buf + off, len - off, " %u:%s%s", lp->node, sz,
					region_pool_usable(pd, lp) ? "" : "(down)");
	}
}

/* Keep the members' records of lent and used bytes in step with the allocators. */
void region_account(struct poold *pd)
{
	struct lender_pool *lp;
	struct member *m;
	size_t i;

	if (pd->regions == NULL) /* (a node's KV shards take nothing lent) */
		return;

	TAILQ_FOREACH(m, &pd->members, entry) {
		for (i = 0; i < m->info->n_numa; i++)
			m->info->numa[i].lend_used = 0;
		m->info->pmem_used = 0;
	}
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		m = member_find(pd, lp->node);
		if (m == NULL || m->info->incarnation != lp->incarnation)
			continue;
		extent_stats(lp->alloc, &st);
		/* The member's arena record, for poolctl nodes -v. */
		for (i = 0; i < m->info->n_arenas; i++) {
			struct node_arena *a = &m->info->arenas[i];

			if (a->id != lp->arena)
				continue;
			a->used = st.used;
			a->lent = lp->lent;
			a->accounted = true;
			a->largest_free = st.largest_free;
			a->free_runs = st.nfree_runs;
			a->extents = st.nextents;
		}
		if (lp->tier == TIER_PMEM) {
			m->info->pmem_used += st.used;
			continue;
		}
		for (i = 0; i < m->info->n_numa; i++)
			if ((int)m->info->numa[i].id == lp->numa)
				m->info->numa[i].lend_used += st.used;
	}
}

/*
 * A lender answered a scrub: the extent goes back to its allocator now if
 * it is due, rather than at the next sweep, which would otherwise walk
 * every extent of a flush of millions of values while they are on their
 * way (kv-reap.c keeps at most REGION_SCRUBS_MAX of them in flight).
 */
static void region_scrubbed(struct poold *pd, void *arg, int rc)
{
	struct retired *rt = arg;
	struct lender_pool *lp;

	rt->scrub_sent = false;
	pd->regions->scrubs--;
	if (rc != 0)
		return; /* tried again at the next sweep */
	rt->scrubbed = true;
	lp = region_pool(pd->regions, rt->node, rt->arena);
	if (lp == NULL || lp->incarnation != rt->incarnation || rt->release_at > units_now_ms())
		return; /* the sweep sees to it */
	extent_release(lp->alloc, rt->off, rt->len);
	TAILQ_REMOVE(&pd->regions->retired, rt, entry);
	free(rt);
}

/*
 * Whether so many scrubs are in flight that bulk work (kv-reap.c) should
 * wait for answers before it retires more extents.
 */
bool region_scrubs_full(struct poold *pd)
{
	return pd->regions != NULL && pd->regions->scrubs >= REGION_SCRUBS_MAX;
}

/*
 * Ask the lender to zero a retired extent; it is released to the allocator
 * only once the lender confirmed, so nothing written to its next user can be
 * wiped by a late scrub.
 */
static void region_scrub(struct poold *pd, struct retired *rt)
{
	struct member *m = member_find(pd, rt->node);

	if (rt->scrubbed || rt->scrub_sent || pd->stopping)
		return;
	if (m != NULL && m->info->incarnation != rt->incarnation) {
		/*
		 * Retired under an earlier life of the lender: that memory is gone,
		 * or (pmem) kept by the lender's journal or zeroed when it started.
		 * A scrub now would hit the new life's memory.
		 */
		rt->scrubbed = true;
		return;
	}
	if (rt->node == pd->node_id &&
	    !scrub_later(pd, rt->arena, rt->off, rt->len, region_scrubbed, rt)) {
		hold_scrub(pd, rt->arena, rt->off, rt->len);
		rt->scrubbed = true;
		return;
	}
	if (rt->node != pd->node_id &&
	    region_send_scrub(pd, rt->node, rt->arena, rt->off, rt->len, region_scrubbed, rt) < 0)
		return;
	rt->scrub_sent = true;
	pd->regions->scrubs++;
}

/*
 * Take an extent out of use. It stays readable until reclaim.grace has
 * passed (0 for plain frees: holders were told the region is gone), then
 * it is scrubbed and released.
 */
void region_retire(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		   struct reclaim *rc)
{
	struct retired *rt = calloc(1, sizeof(*rt));
	struct lender_pool *lp;

	if (rt == NULL) {
		log_warnx("out of memory: extent %llu+%llu of node %u arena %u leaks",
			  (unsigned long long)off, (unsigned long long)len, node, arena);
		return;
	}
	rt->node = node;
	rt->arena = arena;
	rt->off = off;
	rt->len = len;
	rt->rc = rc;
	lp = region_pool(pd->regions, node, arena);
	rt->incarnation = lp ? lp->incarnation : 0;
	rt->release_at = units_now_ms() + (rc ? (uint64_t)pd->conf->reclaim_grace_ms : 0);
	if (rc == NULL)
		region_scrub(pd, rt);
	if (rt->scrubbed && lp != NULL) {
		/* Scrubbed here and due now: back to the allocator at once. */
		extent_release(lp->alloc, off, len);
		free(rt);
		return;
	}
	TAILQ_INSERT_TAIL(&pd->regions->retired, rt, entry);
}

/* Release the retired extents that are due and scrubbed. */
void region_sweep_retired(struct poold *pd)
{
	struct retired *rt, *next;
	uint64_t now = units_now_ms();

	for (rt = TAILQ_FIRST(&pd->regions->retired); rt != NULL; rt = next) {
		struct lender_pool *lp = region_pool(pd->regions, rt->node, rt->arena);

		next = TAILQ_NEXT(rt, entry);
		if (lp != NULL && lp->incarnation != rt->incarnation)
			lp = NULL; /* retired under an earlier life of the lender: nothing to do */
		if (rt->scrub_sent)
			continue;
		if (lp != NULL && rt->release_at > now)
			continue;
		if (lp != NULL && !rt->scrubbed) {
			region_scrub(pd, rt);
			if (!rt->scrubbed)
				continue;
		}
		/* lp == NULL: the lender restarted, its allocator started afresh. */
		if (lp != NULL)
			extent_release(lp->alloc, rt->off, rt->len);
		TAILQ_REMOVE(&pd->regions->retired, rt, entry);
		free(rt);
	}
	region_account(pd);
}

static void region_release_extents(struct poold *pd, struct region *r)
{
	size_t i;

	for (i = 0; i < r->next; i++)
		region_retire(pd, r->ext[i].node, r->ext[i].arena, r->ext[i].off, r->ext[i].len,
			      NULL);
	free(r->ext);
	r->ext = NULL;
	r->next = 0;
	region_sweep_retired(pd);
}

/* Put a region in the address space, charged to its owner for the quotas; -ENOMEM. */
int region_link(struct poold *pd, struct region *r)
{
	if (usage_charge(&pd->usage, r->uid, (int64_t)r->size, 1) < 0)
		return -ENOMEM;
	TAILQ_INSERT_TAIL(&pd->regions->list, r, entry);
	htab_add(&pd->regions->names, &r->by_name, htab_hash_str(r->name));
	htab_add(&pd->regions->ids, &r->by_id, htab_hash_u64(r->id));
	pd->regions->count++;
	return 0;
}

void region_unlink(struct poold *pd, struct region *r)
{
	TAILQ_REMOVE(&pd->regions->list, r, entry);
	htab_del(&pd->regions->names, &r->by_name);
	htab_del(&pd->regions->ids, &r->by_id);
	pd->regions->count--;
	usage_charge(&pd->usage, r->uid, -(int64_t)r->size, -1);
}

/*
 * Tell the holders of a region's leases that it moved or is gone: directly
 * for sessions on this node, through their poold for the others.
 */
void region_notify(struct poold *pd, struct region *r, enum region_event event)
{
	uint64_t *sessions;
	struct lease *l, *k;

	sessions = calloc(r->leases ? r->leases : 1, sizeof(*sessions));
	if (sessions == NULL)
		return;
	TAILQ_FOREACH(l, &r->lease_list, entry) {
		size_t n = 0;

		/* Once per node: the first lease of each node gathers its sessions. */
		TAILQ_FOREACH(k, &r->lease_list, entry) {
			if (k == l)
				break;
			if (k->node == l->node)
				break;
		}
		if (k != l)
			continue;
		TAILQ_FOREACH(k, &r->lease_list, entry)
			if (k->node == l->node && k->ends_at == 0)
				sessions[n++] = k->session;
		region_send_notice(pd, l->node, sessions, n, r->name, event);
	}
	free(sessions);
}

/* Parse a placement: local, any, node=N, numa=M, spread, spread=N. */
static int region_parse_placement(const char *p, uint32_t *node, int *numa, unsigned *spread)
{
	char *end;
	unsigned long v;

	*node = 0;
	*numa = -1;
	*spread = 0;
	if (strcmp(p, "any") == 0 || strcmp(p, "local") == 0)
		return 0;
	if (strcmp(p, "spread") == 0) {
		*spread = UINT32_MAX;
		return 0;
	}
	if (strncmp(p, "node=", 5) == 0 || strncmp(p, "numa=", 5) == 0 ||
	    strncmp(p, "spread=", 7) == 0) {
		const char *num = strchr(p, '=') + 1;

		v = strtoul(num, &end, 10);
		if (*num == '\0' || *end != '\0' || v > 65535)
			return -EINVAL;
		if (p[0] == 'n' && p[1] == 'o')
			*node = (uint32_t)v;
		else if (p[0] == 'n')
			*numa = (int)v;
		else if (v < 1)
			return -EINVAL;
		else
			*spread = (unsigned)v;
		return 0;
	}
	return -EINVAL;
}

static int region_place(struct poold *pd, struct region *r, const struct region_spec *spec,
			char *err, size_t errlen)
{
	enum tier tier = r->cls == CLASS_PERSISTENT ? TIER_PMEM : TIER_DRAM;
	const struct lender_pool **used = NULL;
	unsigned spread, n, k;
	uint32_t node;
	int numa;

	if (region_parse_placement(spec->placement, &node, &numa, &spread) < 0) {
		snprintf(err, errlen,
			 "placement '%s' is not local, any, node=N, numa=M, spread or "
			 "spread=N",
			 spec->placement);
		return -EINVAL;
	}
	/* "local" is the node of the caller's session, whatever the client claims. */
	if (strcmp(spec->placement, "local") == 0 || numa >= 0)
		node = r->creator_node;
	if (spread == 0) {
		struct lender_pool *lp = region_pick(pd, node, tier, numa, r->size, NULL, 0);
		uint64_t off, len;

		if (lp == NULL || extent_alloc(lp->alloc, r->size, &off, &len) < 0)
			goto out_nospc;
		r->ext = calloc(1, sizeof(*r->ext));
		if (r->ext == NULL) {
			extent_release(lp->alloc, off, len);
			return -ENOMEM;
		}
		r->ext[0] = (struct region_extent){lp->node, lp->arena, off, len, 0};
		r->next = 1;
		return 0;
	}
	/* Striped over n lenders, each holding ceil(stripes / n) stripes. */
	n = spread;
	if (n == UINT32_MAX) {
		struct member *m;

		n = 0;
		TAILQ_FOREACH(m, &pd->members, entry)
			n += m->state == MEMBER_UP;
	}
	r->stripe = spec->stripe ? spec->stripe
				 : MIN(REGION_STRIPE_DEFAULT, (r->size + EXTENT_GRAIN_DEFAULT - 1) /
								  EXTENT_GRAIN_DEFAULT *
								  EXTENT_GRAIN_DEFAULT);
	if (r->stripe % EXTENT_GRAIN_DEFAULT != 0 || r->stripe == 0 ||
	    r->stripe > (r->size + EXTENT_GRAIN_DEFAULT - 1) / EXTENT_GRAIN_DEFAULT *
			    EXTENT_GRAIN_DEFAULT) {
		snprintf(err, errlen,
			 "stripe size must be a multiple of 4K, at most the region size");
		return -EINVAL;
	}
	{
		uint64_t stripes = (r->size + r->stripe - 1) / r->stripe;

		if (n > stripes)
			n = (unsigned)stripes;
		r->ext = calloc(n ? n : 1, sizeof(*r->ext));
		used = calloc(n ? n : 1, sizeof(*used));
		if (r->ext == NULL || used == NULL) {
			free(used);
			return -ENOMEM;
		}
		for (k = 0; k < n; k++) {
			uint64_t share = (stripes - k + n - 1) / n * r->stripe, off, len;
			struct lender_pool *lp = region_pick(pd, 0, tier, -1, share, used, k);

			if (lp == NULL || extent_alloc(lp->alloc, share, &off, &len) < 0) {
				free(used);
				goto out_nospc;
			}
			used[k] = lp;
			r->ext[k] = (struct region_extent){lp->node, lp->arena, off, len, k};
			r->next = k + 1;
		}
	}
	free(used);
	return 0;
out_nospc : {
	char sz[24], where[400];

	region_release_extents(pd, r);
	units_fmt_size(r->size, sz, sizeof(sz));
	region_free_text(pd, tier, where, sizeof(where));
	snprintf(err, errlen, "no room for %s (placement %s%s): %s", sz, spec->placement,
		 spread ? ", striped" : "", where);
	return -ENOSPC;
}
}

/* A lease of a session of node; the coordinator's journal records those on anonymous regions. */
static struct lease *region_lease_add(struct poold *pd, struct region *r, uint32_t node,
				      uint64_t session)
{
	struct lease *l = calloc(1, sizeof(*l));
	struct member *m = member_find(pd, node);

	if (l == NULL)
		return NULL;
	l->node = node;
	l->session = session;
	l->incarnation = m != NULL ? m->info->incarnation : 0;
	TAILQ_INSERT_TAIL(&r->lease_list, l, entry);
	r->leases++;
	if (r->anonymous)
		pd->regions->hooks->leased(pd, r, l, true);
	return l;
}

/*
 * End a lease; pd NULL: the region goes too, which the journal records
 * instead. (Recorded once out of the list: a rewrite of the journal then
 * has it gone.)
 */
void region_lease_drop(struct poold *pd, struct region *r, struct lease *l)
{
	TAILQ_REMOVE(&r->lease_list, l, entry);
	r->leases--;
	if (pd != NULL && r->anonymous)
		pd->regions->hooks->leased(pd, r, l, false);
	free(l);
}

/*
 * Remember that node may hold an extent of region id (named name), which
 * is gone: when it reports one, it is scrubbed, not adopted.
 */
int region_tombstone_add(struct poold *pd, uint64_t id, const char *name, uint32_t node)
{
	struct tombstone *t;

	TAILQ_FOREACH(t, &pd->regions->tombstones, entry)
		if (t->id == id && t->node == node)
			return 0;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->id = id;
	t->node = node;
	snprintf(t->name, sizeof(t->name), "%s", name);
	TAILQ_INSERT_TAIL(&pd->regions->tombstones, t, entry);
	return 0;
}

/* The tombstone of region id for node, if there is one. */
const struct tombstone *region_tombstone(struct poold *pd, uint32_t node, uint64_t id)
{
	struct tombstone *t;

	TAILQ_FOREACH(t, &pd->regions->tombstones, entry)
		if (t->id == id && t->node == node)
			return t;
	return NULL;
}

/* Forget a tombstone: node reconciled, its extents of the region are scrubbed. */
void region_tombstone_drop(struct poold *pd, uint32_t node, uint64_t id)
{
	struct tombstone *t;

	TAILQ_FOREACH(t, &pd->regions->tombstones, entry)
		if (t->id == id && t->node == node) {
			TAILQ_REMOVE(&pd->regions->tombstones, t, entry);
			free(t);
			return;
		}
}

/* node's record was reconciled with the map: what it held of destroyed regions is scrubbed. */
void region_tombstones_done(struct poold *pd, uint32_t node)
{
	struct tombstone *t, *next;

	for (t = TAILQ_FIRST(&pd->regions->tombstones); t != NULL; t = next) {
		next = TAILQ_NEXT(t, entry);
		if (t->node != node)
			continue;
		TAILQ_REMOVE(&pd->regions->tombstones, t, entry);
		pd->regions->hooks->buried(pd, t->id, node); /* once out of the list */
		free(t);
	}
}

/*
 * A region goes while lenders of it are not up: they cannot be told, and
 * their record (for a persistent region, their journal) still names it.
 * Tombstones make sure it is not adopted back when they return.
 */
static void region_bury(struct poold *pd, const struct region *r)
{
	uint32_t nodes[64];
	size_t i, j, n = 0;

	for (i = 0; i < r->next && n < ARRAY_SIZE(nodes); i++) {
		struct member *m = member_find(pd, r->ext[i].node);

		if (m != NULL && m->state == MEMBER_UP)
			continue;
		for (j = 0; j < n && nodes[j] != r->ext[i].node; j++)
			;
		if (j == n && region_tombstone_add(pd, r->id, r->name, r->ext[i].node) == 0)
			nodes[n++] = r->ext[i].node;
	}
	pd->regions->hooks->gone(pd, r, nodes, n);
}

/* Forget a region: its leases, its extents (scrubbed by their lenders). */
void region_free(struct poold *pd, struct region *r)
{
	struct lease *l;

	region_unlink(pd, r);
	region_bury(pd, r);
	while ((l = TAILQ_FIRST(&r->lease_list)) != NULL)
		region_lease_drop(NULL, r, l);
	pd->regions->hooks->freed(pd, r);
	region_release_extents(pd, r);
	free(r->refs);
	free(r);
}

/* Leases of sessions gone for lease.grace end; anonymous regions without leases go. */
void region_sweep_leases(struct poold *pd)
{
	struct region *r, *rnext;
	uint64_t now = units_now_ms();

	for (r = TAILQ_FIRST(&pd->regions->list); r != NULL; r = rnext) {
		struct lease *l, *lnext;

		rnext = TAILQ_NEXT(r, entry);
		for (l = TAILQ_FIRST(&r->lease_list); l != NULL; l = lnext) {
			lnext = TAILQ_NEXT(l, entry);
			if (l->ends_at != 0 && l->ends_at <= now)
				region_lease_drop(pd, r, l);
		}
		if (r->anonymous && r->leases == 0 && !r->moving) {
			log_info("anonymous region '%s' freed: its last lease ended", r->name);
			region_free(pd, r);
		}
	}
}

/*
 * End, after lease.grace, the leases of one session of a node, or with
 * all set, of every session of the node.
 */
static void region_end_leases(struct poold *pd, uint32_t node, uint64_t session, bool all)
{
	uint64_t ends = units_now_ms() + (uint64_t)pd->conf->lease_grace_ms;
	struct region *r;
	struct lease *l;

	if (pd->regions == NULL)
		return;
	TAILQ_FOREACH(r, &pd->regions->list, entry)
		TAILQ_FOREACH(l, &r->lease_list, entry)
			if (l->node == node && (all || l->session == session) && l->ends_at == 0)
				l->ends_at = ends;
}

/* A client session ended: its leases end after lease.grace. */
void region_session_end(struct poold *pd, uint32_t node, uint64_t session)
{
	region_end_leases(pd, node, session, false);
}

/* A node died or restarted: every session it held ends after lease.grace. */
void region_node_gone(struct poold *pd, uint32_t node)
{
	region_end_leases(pd, node, 0, true);
}

/*
 * A node came back (or registered with this coordinator after its
 * restart): leases of its sessions that are not live any more end after
 * lease.grace. A lease from the coordinator's journal holds on only if
 * its session is live in the same life of the node.
 */
void region_node_sessions(struct poold *pd, uint32_t node, uint64_t incarnation,
			  const uint64_t *live, size_t n)
{
	uint64_t ends = units_now_ms() + (uint64_t)pd->conf->lease_grace_ms;
	struct region *r;
	struct lease *l;
	size_t i;

	if (pd->regions == NULL)
		return;
	TAILQ_FOREACH(r, &pd->regions->list, entry)
		TAILQ_FOREACH(l, &r->lease_list, entry) {
			if (l->node != node || (l->ends_at != 0 && !l->unconfirmed))
				continue;
			for (i = 0; i < n && live[i] != l->session; i++)
				;
			if (l->unconfirmed && l->incarnation != incarnation)
				i = n;
			l->ends_at = i == n ? ends : 0;
			l->unconfirmed = false;
		}
}

/* What a region is, as its lenders and the coordinator's journal record it. */
void region_record(const struct region *r, struct region_record *rec)
{
	*rec = (struct region_record){
	    .id = r->id,
	    .name = r->name,
	    .placement = r->placement,
	    .size = r->size,
	    .extents = (uint32_t)(r->want_ext ? r->want_ext : r->next),
	    .mode = r->mode,
	    .uid = r->uid,
	    .gid = r->gid,
	    .stripe = r->stripe,
	    .cls = r->cls,
	    .anonymous = r->anonymous,
	};
}

/* Tell extent i's lender that it holds it, with the region's record. */
void region_tell_extent(struct poold *pd, const struct region *r, size_t i)
{
	struct holding h = {.e = {.arena = r->ext[i].arena,
				  .off = r->ext[i].off,
				  .len = r->ext[i].len,
				  .region = r->id},
			    .has_region = true};

	region_record(r, &h.region);
	h.region.index = (uint32_t)r->ext[i].region_off;
	hold_tell_holdings(pd, r->ext[i].node, &h, 1, NULL, NULL);
}

/* Tell a region's lenders the extents they hold of it. */
static void region_tell_lenders(struct poold *pd, const struct region *r)
{
	size_t i;

	for (i = 0; i < r->next; i++)
		region_tell_extent(pd, r, i);
}

uint64_t region_gva_len(uint64_t size)
{
	return (size + REGION_GVA_ALIGN - 1) / REGION_GVA_ALIGN * REGION_GVA_ALIGN;
}

/*
 * Whether the caller may access an object of owner, group and mode with
 * the given rwx bits (4 read, 2 write): root always; the others by the
 * owner's, the group's or the others' bits of mode.
 */
bool mode_allows(uid_t uid, gid_t gid, uid_t owner, gid_t group, unsigned mode, unsigned want)
{
	unsigned bits;

	if (uid == 0)
		return true;
	if (uid == owner)
		bits = (mode >> 6) & 7;
	else if (gid == group)
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return (bits & want) == want;
}

/* Whether the caller may access r with the given rwx bits (4 read, 2 write). */
bool region_may(const struct region *r, const struct region_caller *who, unsigned want)
{
	return mode_allows(who->uid, who->gid, r->uid, r->gid, r->mode, want);
}

/* The word for a region class, as the wire, poolctl and the logs say it. */
const char *region_class_name(enum region_class cls)
{
	return class_names[cls];
}

/* The class a word names: 0 with *ret, or -EINVAL. */
int region_class_of(const char *name, enum region_class *ret)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(class_names); i++)
		if (strcmp(name, class_names[i]) == 0) {
			*ret = (enum region_class)i;
			return 0;
		}
	return -EINVAL;
}

/* Say why in err and return rc, for the requests' answers. */
static int region_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int region_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* Check the caller's uid against its quota (quota.c: all it holds) and quota.regions. */
static int region_quota(struct poold *pd, uid_t uid, uint64_t size, char *err, size_t errlen)
{
	struct poold_conf *conf = pd->conf;
	uint64_t count = usage_of(&pd->usage, uid).regions;

	if (conf->quota_regions > 0 && count + 1 > (uint64_t)conf->quota_regions)
		return region_fail(err, errlen, -EDQUOT,
				   "uid %u owns %llu regions: quota.regions is %lld", (unsigned)uid,
				   (unsigned long long)count, (long long)conf->quota_regions);
	if (quota_over(pd, uid, size)) {
		quota_explain(pd, uid, size, err, errlen);
		return -EDQUOT;
	}
	return 0;
}

/*
 * Make a region for the caller: its name, size and mode checked against
 * the pool's limits and the caller's quota, its extents placed on lenders,
 * a global base address of its own. With spec->open the caller holds a
 * lease on it at once.
 */
int region_create(struct poold *pd, const struct region_spec *spec, const struct region_caller *who,
		  struct region **ret, char *err, size_t errlen)
{
	struct regions *rs = pd->regions;
	struct region *r;
	int rc;

	if (!region_name_ok(spec->name))
		return region_fail(err, errlen, -EINVAL,
				   "region name '%s': 1-%d characters of [A-Za-z0-9._:/-]",
				   spec->name, POOL_REGION_NAME_MAX);
	if (spec->size == 0 || spec->size > REGION_MAX_SIZE)
		return region_fail(err, errlen, -EINVAL, "region size must be 1 byte to 16T");
	if (spec->mode > 0777)
		return region_fail(err, errlen, -EINVAL, "mode %o is not a permission mode",
				   spec->mode);
	if (region_find(rs, spec->name) != NULL)
		return region_fail(err, errlen, -EEXIST, "region '%s' exists", spec->name);
	if (rs->count >= (size_t)pd->conf->max_regions)
		return region_fail(err, errlen, -EUSERS,
				   "the pool holds regions.max = %lld regions",
				   (long long)pd->conf->max_regions);
	rc = region_quota(pd, who->uid, spec->size, err, errlen);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return region_fail(err, errlen, -ENOMEM, "out of memory");
	TAILQ_INIT(&r->lease_list);
	r->cls = spec->cls;
	snprintf(r->name, sizeof(r->name), "%s", spec->name);
	snprintf(r->placement, sizeof(r->placement), "%s",
		 spec->placement[0] ? spec->placement : "any");
	r->size = spec->size;
	r->mode = spec->mode;
	r->uid = who->uid;
	r->gid = who->gid;
	r->anonymous = spec->anonymous;
	r->creator_node = who->node;
	rc = region_place(pd, r, spec, err, errlen);
	if (rc < 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", err_str(rc));
		free(r);
		return rc;
	}
	r->id = ++rs->next_id;
	r->base = rs->next_base;
	rs->next_base += region_gva_len(r->size);
	if (region_link(pd, r) < 0) {
		region_release_extents(pd, r);
		free(r);
		return region_fail(err, errlen, -ENOMEM, "out of memory");
	}
	/* In the map first: a persistent region's lenders are told what it is. */
	region_tell_lenders(pd, r);
	/* (Journaled before its first lease, which the journal names it in.) */
	pd->regions->hooks->logged(pd, r);
	if (spec->open && region_lease_add(pd, r, who->node, who->session) == NULL) {
		region_free(pd, r);
		return region_fail(err, errlen, -ENOMEM, "out of memory");
	}
	region_account(pd);
	log_debug("region '%s' created: %llu bytes, %s, %s, %zu extent(s), uid %u", r->name,
		  (unsigned long long)r->size, class_names[r->cls], r->placement, r->next,
		  (unsigned)r->uid);
	*ret = r;
	return 0;
}

static int region_named(struct poold *pd, const char *name, struct region **ret, char *err,
			size_t errlen)
{
	*ret = region_find(pd->regions, name);
	return *ret == NULL ? region_fail(err, errlen, -ENOENT, "no region '%s'", name) : 0;
}

/*
 * Open a region for the caller with access want (4 read, 2 write): a lease
 * of its session, which keeps an anonymous region, if its data is whole
 * and its lenders alive.
 */
int region_open(struct poold *pd, const char *name, unsigned want, const struct region_caller *who,
		struct region **ret, char *err, size_t errlen)
{
	struct region *r;
	size_t i;
	int rc = region_named(pd, name, &r, err, errlen);

	if (rc < 0)
		return rc;
	if (r->lost && r->want_ext > 0)
		return region_fail(err, errlen, POOL_ELOST,
				   "region '%s' is not back whole: %zu of %zu extent(s) are back "
				   "from their lenders",
				   r->name, r->next, r->want_ext);
	if (r->lost)
		return region_fail(err, errlen, POOL_ELOST,
				   "region '%s' lost its data when a lender restarted", r->name);
	if (!region_may(r, who, want))
		return region_fail(err, errlen, -EACCES,
				   "region '%s' (mode %03o, uid %u): %s access denied", r->name,
				   r->mode, r->uid, want & 2 ? "read-write" : "read");
	for (i = 0; i < r->next; i++) {
		struct member *m = member_find(pd, r->ext[i].node);

		if (m == NULL || m->state == MEMBER_DEAD)
			return region_fail(err, errlen, POOL_ELOST,
					   "region '%s': its lender node %u is dead", r->name,
					   r->ext[i].node);
	}
	if (region_lease_add(pd, r, who->node, who->session) == NULL)
		return region_fail(err, errlen, -ENOMEM, "out of memory");
	*ret = r;
	return 0;
}

/* End one lease of the caller's session on a region; an anonymous region goes with its last. */
int region_close(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		 size_t errlen)
{
	struct region *r;
	struct lease *l;
	int rc = region_named(pd, name, &r, err, errlen);

	if (rc < 0)
		return rc;
	TAILQ_FOREACH(l, &r->lease_list, entry)
		if (l->node == who->node && l->session == who->session && l->ends_at == 0)
			break;
	if (l == NULL)
		return region_fail(err, errlen, -ENOENT, "this session holds no lease on '%s'",
				   r->name);
	region_lease_drop(pd, r, l);
	/* While a reclaim moves it, the sweep frees it once the move is over. */
	if (r->anonymous && r->leases == 0 && !r->moving) {
		log_info("anonymous region '%s' freed: its last lease ended", r->name);
		region_free(pd, r);
	}
	return 0;
}

/* The region named, if the caller owns it (or is root or an admin). */
static int region_owned(struct poold *pd, const char *name, const struct region_caller *who,
			struct region **ret, char *err, size_t errlen)
{
	int rc = region_named(pd, name, ret, err, errlen);

	if (rc == 0 && who->uid != 0 && who->uid != (*ret)->uid && !who->admin)
		rc = region_fail(err, errlen, -EPERM, "region '%s' belongs to uid %u", (*ret)->name,
				 (*ret)->uid);
	return rc;
}

/* Destroy a region the caller owns: its lease holders are told, its extents scrubbed. */
int region_destroy(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		   size_t errlen)
{
	struct region *r;
	int rc = region_owned(pd, name, who, &r, err, errlen);

	if (rc < 0)
		return rc;
	if (r->moving)
		return region_fail(err, errlen, -EBUSY, "region '%s' is being moved by a reclaim",
				   r->name);
	region_notify(pd, r, REGION_GONE);
	log_debug("region '%s' destroyed", r->name);
	region_free(pd, r);
	return 0;
}

/*
 * An anonymous region stays once its last lease ends: what a creator does
 * when the region is complete (a snapshot's manifest once its pages are
 * stored), so that one that dies first leaves nothing behind. Its lenders'
 * records and the coordinator's journal are told.
 */
int region_keep(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		size_t errlen)
{
	struct region *r;
	int rc = region_owned(pd, name, who, &r, err, errlen);

	if (rc < 0 || !r->anonymous)
		return rc;
	r->anonymous = false;
	region_tell_lenders(pd, r);
	pd->regions->hooks->logged(pd, r);
	log_debug("region '%s' kept", r->name);
	return 0;
}

/* Start the global address space (coordinator), which tells hooks what changes. */
int region_open_space(struct poold *pd, const struct space_hooks *hooks)
{
	struct regions *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return -ENOMEM;
	rs->hooks = hooks;
	TAILQ_INIT(&rs->list);
	TAILQ_INIT(&rs->pools);
	TAILQ_INIT(&rs->retired);
	TAILQ_INIT(&rs->reclaims);
	TAILQ_INIT(&rs->tombstones);
	rs->next_base = REGION_BASE0;
	rs->opened_ms = units_now_ms();
	pd->regions = rs;
	return 0;
}

/*
 * Drop the global address space (its ledger passes and reclaims first:
 * reconcile_close(), reclaim_close()).
 */
void region_close_space(struct poold *pd)
{
	struct regions *rs = pd->regions;
	struct lender_pool *lp;
	struct tombstone *t;
	struct retired *rt;
	struct region *r;

	if (rs == NULL)
		return;
	while ((rt = TAILQ_FIRST(&rs->retired)) != NULL) {
		TAILQ_REMOVE(&rs->retired, rt, entry);
		free(rt);
	}
	while ((t = TAILQ_FIRST(&rs->tombstones)) != NULL) {
		TAILQ_REMOVE(&rs->tombstones, t, entry);
		free(t);
	}
	while ((r = TAILQ_FIRST(&rs->list)) != NULL) {
		struct lease *l;

		region_unlink(pd, r);
		while ((l = TAILQ_FIRST(&r->lease_list)) != NULL)
			region_lease_drop(NULL, r, l);
		free(r->refs); /* the KV space is gone: nothing to drop them from */
		free(r->ext);
		free(r);
	}
	while ((lp = TAILQ_FIRST(&rs->pools)) != NULL) {
		TAILQ_REMOVE(&rs->pools, lp, entry);
		region_pool_free(lp);
	}
	htab_free(&rs->names);
	htab_free(&rs->ids);
	free(rs);
	pd->regions = NULL;
}

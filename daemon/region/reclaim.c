/*
 * daemon/region/reclaim.c - lend, reclaim and drain: what a node offers changes.
 *
 * lend NODE SIZE sets what NODE offers (growing up to lend.max, shrinking
 * only over free memory). reclaim NODE SIZE takes SIZE back: the extents in
 * the tail of its arenas are vacated first: cache-class regions are evicted
 * (their holders are told "gone" and see -ESTALE), the others are copied
 * to other lenders over the fabric (holders are told "moved" and fetch the
 * new layout). The old extents stay readable for reclaim.grace, so readers
 * that have not yet heard keep reading correct data; then they are
 * scrubbed, the arenas shrink and the node gives the memory back to the
 * kernel. drain NODE reclaims everything and takes no new extents there.
 *
 * Writes that land on the old copy after its chunk was copied are lost:
 * a region must not be written while a reclaim moves it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"
#include "fabric/fabric.h"
#include "proto/pool_contract.h"

struct reclaim_target {
	struct lender_pool *lp;
	uint64_t target;
};

struct move;

struct reclaim {
	TAILQ_ENTRY(reclaim) entry;
	TAILQ_HEAD(, move) moves; /* its copies in flight */
	struct poold *pd;
	reclaim_done_fn *done; /* told the result, once */
	void *arg;
	uint32_t node;
	bool drain;
	struct reclaim_target *targets;
	size_t ntargets;
	unsigned moving, migrated, evicted, failed;
	char err[200];
};

/* One extent of a region being copied to another lender. */
struct move {
	TAILQ_ENTRY(move) entry;
	struct reclaim *rc;
	struct region *r;
	size_t idx;
	struct region_extent to;
};

/* The copy is complete at the new lender (or failed): switch the region over, or undo. */
static void move_done(struct poold *pd, void *arg, int err)
{
	struct move *mv = arg;
	struct reclaim *rc = mv->rc;
	struct region *r = mv->r;

	if (err == 0) {
		struct region_extent old = r->ext[mv->idx];

		r->ext[mv->idx] = mv->to;
		/* Its new lender records (and for a persistent region journals) what it holds. */
		region_tell_extent(pd, r, mv->idx);
		region_retire(pd, old.node, old.arena, old.off, old.len, rc);
		region_notify(pd, r, REGION_MOVED);
		rc->migrated++;
		log_info("region '%s': extent moved from node %u to node %u", r->name, old.node,
			 mv->to.node);
	} else {
		struct lender_pool *lp = region_pool(pd->regions, mv->to.node, mv->to.arena);

		if (lp != NULL)
			extent_release(lp->alloc, mv->to.off, mv->to.len);
		rc->failed++;
		snprintf(rc->err, sizeof(rc->err), "moving region '%s' failed: %s", r->name,
			 err_str(err));
		log_warnx("%s", rc->err);
	}
	r->moving = false;
	rc->moving--;
	TAILQ_REMOVE(&rc->moves, mv, entry);
	free(mv);
	region_account(pd);
}

/* Start copying extent idx of r to another lender. */
static int reclaim_move(struct reclaim *rc, struct region *r, size_t idx)
{
	struct poold *pd = rc->pd;
	struct region_extent *from = &r->ext[idx];
	struct lender_pool *src = region_pool(pd->regions, from->node, from->arena), *dst;
	struct move *mv;
	uint64_t off, len;
	int err;

	dst = region_pick_avoid(pd, src->tier, from->len, rc->node);
	if (dst == NULL || extent_alloc(dst->alloc, from->len, &off, &len) < 0) {
		snprintf(rc->err, sizeof(rc->err), "no other lender has room for region '%s'",
			 r->name);
		return -ENOSPC;
	}
	mv = calloc(1, sizeof(*mv));
	if (mv == NULL) {
		extent_release(dst->alloc, off, len);
		return -ENOMEM;
	}
	mv->rc = rc;
	mv->r = r;
	mv->idx = idx;
	mv->to = (struct region_extent){dst->node, dst->arena, off, from->len, from->region_off};
	err = copy_start(pd, (struct copy_end){src->node, src->arena, from->off},
			 (struct copy_end){dst->node, dst->arena, off}, from->len, move_done, mv);
	if (err < 0) {
		extent_release(dst->alloc, off, len);
		free(mv);
		snprintf(rc->err, sizeof(rc->err), "cannot reach the lenders of '%s': %s", r->name,
			 err_str(err));
		return err;
	}
	r->moving = true;
	rc->moving++;
	TAILQ_INSERT_TAIL(&rc->moves, mv, entry);
	hold_tell(pd, dst->node, dst->arena, off, from->len, r->id);
	return 0;
}

/*
 * Coordinator: the extents of node that moves in flight copy into. Until a
 * move is done its extent is in no region's layout: the ledger must still
 * see it claimed, or it would scrub what is being copied there.
 */
int reclaim_extents(struct poold *pd, uint32_t node, struct ledger_extent **ext, size_t *n,
		    size_t *cap)
{
	struct reclaim *rc;
	struct move *mv;

	TAILQ_FOREACH(rc, &pd->regions->reclaims, entry)
		TAILQ_FOREACH(mv, &rc->moves, entry)
			if (mv->to.node == node &&
			    ledger_append(ext, n, cap, mv->to.arena, mv->to.off, mv->to.len,
					  mv->r->id) < 0)
				return -ENOMEM;
	return 0;
}

static void reclaim_free(struct reclaim *rc)
{
	struct move *mv;

	while ((mv = TAILQ_FIRST(&rc->moves)) != NULL) { /* (poold stops: no copy comes back) */
		TAILQ_REMOVE(&rc->moves, mv, entry);
		mv->r->moving = false;
		free(mv);
	}
	TAILQ_REMOVE(&rc->pd->regions->reclaims, rc, entry);
	free(rc->targets);
	free(rc);
}

/* Tell a lender how much of an arena it now lends. */
static void reclaim_set_limit(struct poold *pd, struct lender_pool *lp, uint64_t limit)
{
	lp->lent = limit;
	if (lp->node == pd->node_id)
		lend_set_limit(pd, lp->arena, limit);
	else
		reclaim_send_limit(pd, lp->node, lp->arena, limit);
}

/* Finish the reclaims whose copies are done and whose old extents are released. */
void reclaim_sweep(struct poold *pd)
{
	struct reclaim *rc, *next;

	for (rc = TAILQ_FIRST(&pd->regions->reclaims); rc != NULL; rc = next) {
		uint64_t before = 0, after = 0, busy = 0;
		struct retired *rt;
		char msg[400], a[24], b[24];
		size_t i;

		next = TAILQ_NEXT(rc, entry);
		if (rc->moving > 0)
			continue;
		TAILQ_FOREACH(rt, &pd->regions->retired, entry)
			if (rt->rc == rc)
				break;
		if (rt != NULL)
			continue;
		for (i = 0; i < rc->ntargets; i++) {
			struct lender_pool *lp = rc->targets[i].lp;
			uint64_t b_here = 0;

			before += lp->lent;
			if (extent_arena_shrink(lp->alloc, rc->targets[i].target, &b_here) == 0)
				reclaim_set_limit(pd, lp, rc->targets[i].target);
			busy += b_here;
			after += lp->lent;
			lp->draining = rc->drain;
		}
		units_fmt_size(before - after, a, sizeof(a));
		units_fmt_size(after, b, sizeof(b));
		snprintf(msg, sizeof(msg),
			 "node %u: %s %s, now lends %s (%u region(s) migrated, %u "
			 "evicted)%s%s",
			 rc->node, rc->drain ? "drained" : "reclaimed", a, b, rc->migrated,
			 rc->evicted, rc->failed ? "; " : "", rc->failed ? rc->err : "");
		log_info("%s", msg);
		events_add(pd, "reclaim", "%s", msg);
		if (busy > 0 || rc->failed > 0) {
			char why[sizeof(msg) + 64];

			units_fmt_size(busy, a, sizeof(a));
			snprintf(why, sizeof(why), "%s; %s still in use", msg, a);
			rc->done(rc->arg, -EBUSY, why);
		} else {
			rc->done(rc->arg, 0, msg);
		}
		reclaim_free(rc);
	}
}

/* Drop every reclaim in progress (the coordinator is stopping). */
void reclaim_close(struct poold *pd)
{
	struct reclaim *rc;

	if (pd->regions == NULL)
		return;
	while ((rc = TAILQ_FIRST(&pd->regions->reclaims)) != NULL) {
		rc->done(rc->arg, -ESHUTDOWN, "poold is stopping");
		reclaim_free(rc);
	}
}

/* Whether what node lends may change now: a member, not being reclaimed. */
static int reclaim_may(struct poold *pd, uint32_t node, char *err, size_t errlen)
{
	struct reclaim *rc;

	if (member_find(pd, node) == NULL) {
		snprintf(err, errlen, "no node %u", node);
		return -ENOENT;
	}
	TAILQ_FOREACH(rc, &pd->regions->reclaims, entry)
		if (rc->node == node) {
			snprintf(err, errlen, "node %u is being reclaimed already", node);
			return -EBUSY;
		}
	return 0;
}

/*
 * reclaim (drain: everything) of a node: vacate the tails of its arenas,
 * evicting cache regions and moving the others. 0 once started, and done
 * is told the result when it ends (never before this returns); or the
 * error, in err.
 */
int reclaim_start(struct poold *pd, uint32_t node, uint64_t size, bool drain, reclaim_done_fn *done,
		  void *arg, char *err, size_t errlen)
{
	struct lender_pool *lp;
	struct region *r, *rnext;
	struct reclaim *rc;
	size_t n = 0, i;
	int status = reclaim_may(pd, node, err, errlen);

	if (status < 0)
		return status;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		n += lp->node == node;
	if (n == 0) {
		snprintf(err, errlen, "node %u lends nothing", node);
		return -ENOENT;
	}
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL || (rc->targets = calloc(n, sizeof(*rc->targets))) == NULL) {
		free(rc);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc->done = done;
	rc->arg = arg;
	rc->pd = pd;
	rc->node = node;
	rc->drain = drain;
	TAILQ_INIT(&rc->moves);
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		uint64_t share = size / n, target;

		if (lp->node != node)
			continue;
		target = drain || share >= lp->lent ? 0 : lp->lent - share;
		target = target / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT;
		rc->targets[rc->ntargets++] = (struct reclaim_target){lp, target};
		lp->draining = true; /* nothing new lands here while it empties */
	}
	TAILQ_INSERT_TAIL(&pd->regions->reclaims, rc, entry);
	for (r = TAILQ_FIRST(&pd->regions->list); r != NULL; r = rnext) {
		rnext = TAILQ_NEXT(r, entry);
		for (i = 0; i < r->next; i++) {
			struct region_extent *e = &r->ext[i];
			size_t k;

			for (k = 0; k < rc->ntargets; k++)
				if (rc->targets[k].lp->node == e->node &&
				    rc->targets[k].lp->arena == e->arena &&
				    e->off + e->len > rc->targets[k].target)
					break;
			if (k == rc->ntargets || r->moving || r->lost)
				continue;
			if (r->cls == CLASS_CACHE) {
				/* Evicted: its extents stay readable for reclaim.grace. */
				region_notify(pd, r, REGION_GONE);
				for (k = 0; k < r->next; k++)
					region_retire(pd, r->ext[k].node, r->ext[k].arena,
						      r->ext[k].off, r->ext[k].len, rc);
				r->next = 0;
				log_info("region '%s' evicted from node %u", r->name, node);
				region_free(pd, r);
				rc->evicted++;
				break;
			}
			if (reclaim_move(rc, r, i) < 0)
				rc->failed++;
			break;
		}
	}
	return 0;
}

static uint64_t reclaim_arena_size(const struct extent_arena *a)
{
	struct extent_stats st;

	extent_stats(a, &st);
	return st.size;
}

/*
 * lend: set what a node offers (grow up to its arenas, shrink over free
 * memory). 0 with what it lends now in msg, or the error in msg.
 */
int reclaim_lend(struct poold *pd, uint32_t node, uint64_t size, char *msg, size_t len)
{
	struct lender_pool *lp;
	uint64_t max = 0, busy;
	size_t n = 0;
	char a[24];
	int rc = reclaim_may(pd, node, msg, len);

	if (rc < 0)
		return rc;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == node && lp->tier == TIER_DRAM) {
			n++;
			max += lp->size;
		}
	if (n == 0) {
		snprintf(msg, len, "node %u lends no DRAM", node);
		return -ENOENT;
	}
	if (size > max) {
		units_fmt_size(max, a, sizeof(a));
		snprintf(msg, len, "node %u can lend at most %s (its lend.max)", node, a);
		return -ERANGE;
	}
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		uint64_t want = size / n / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT;

		if (lp->node != node || lp->tier != TIER_DRAM)
			continue;
		rc = want >= lp->lent ? extent_arena_grow(lp->alloc, want)
				      : extent_arena_shrink(lp->alloc, want, &busy);
		if (rc < 0) {
			struct lender_pool *done;

			/* All or nothing: the arenas resized so far get their size back. */
			TAILQ_FOREACH(done, &pd->regions->pools, entry) {
				if (done == lp)
					break;
				if (done->node != node || done->tier != TIER_DRAM)
					continue;
				if (reclaim_arena_size(done->alloc) > done->lent)
					extent_arena_shrink(done->alloc, done->lent, NULL);
				else
					extent_arena_grow(done->alloc, done->lent);
			}
			units_fmt_size(busy, a, sizeof(a));
			if (rc != -EBUSY)
				snprintf(msg, len, "cannot resize node %u arena %u: %s", node,
					 lp->arena, err_str(rc));
			else
				snprintf(msg, len,
					 "node %u arena %u has %s in use above %llu bytes: use "
					 "poolctl reclaim",
					 node, lp->arena, a, (unsigned long long)want);
			return rc;
		}
	}
	/* Every arena took its new size: tell the lender. */
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		if (lp->node != node || lp->tier != TIER_DRAM)
			continue;
		lp->draining = false;
		reclaim_set_limit(pd, lp, reclaim_arena_size(lp->alloc));
	}
	region_account(pd);
	units_fmt_size(size, a, sizeof(a));
	snprintf(msg, len, "node %u now lends %s", node, a);
	log_info("%s", msg);
	events_add(pd, "reclaim", "%s", msg);
	return 0;
}

/*
 * daemon/reclaim.c - lend, reclaim and drain: what a node offers changes.
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

#include "daemon/extent.h"
#include "daemon/poold.h"
#include "fabric/fabric.h"
#include "proto/pool_contract.h"

struct reclaim_target {
	struct lender_pool *lp;
	uint64_t target;
};

struct reclaim {
	TAILQ_ENTRY(reclaim) entry;
	struct poold *pd;
	struct req *q; /* the admin waiting for the result */
	uint32_t node;
	bool drain;
	struct reclaim_target *targets;
	size_t ntargets;
	unsigned moving, migrated, evicted, failed;
	char err[200];
};

/* One extent of a region being copied to another lender. */
struct move {
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
	err = copy_start(pd, src, from->off, dst, off, from->len, move_done, mv);
	if (err < 0) {
		extent_release(dst->alloc, off, len);
		free(mv);
		snprintf(rc->err, sizeof(rc->err), "cannot reach the lenders of '%s': %s", r->name,
			 err_str(err));
		return err;
	}
	r->moving = true;
	rc->moving++;
	hold_tell(pd, dst->node, dst->arena, off, from->len, r->id);
	return 0;
}

static void reclaim_free(struct reclaim *rc)
{
	TAILQ_REMOVE(&rc->pd->regions->reclaims, rc, entry);
	free(rc->targets);
	free(rc);
}

/* Tell a lender how much of an arena it now lends. */
static void reclaim_set_limit(struct poold *pd, struct lender_pool *lp, uint64_t limit)
{
	Pool__ArenaLimit al = POOL__ARENA_LIMIT__INIT;

	lp->lent = limit;
	if (lp->node == pd->node_id) {
		lend_set_limit(pd, lp->arena, limit);
		return;
	}
	al.arena = lp->arena;
	al.limit = limit;
	coord_notice(pd, lp->node, WIRE_ARENA_LIMIT, &al.base);
}

/* Finish the reclaims whose copies are done and whose old extents are released. */
void reclaim_sweep(struct poold *pd)
{
	struct reclaim *rc, *next;

	for (rc = TAILQ_FIRST(&pd->regions->reclaims); rc != NULL; rc = next) {
		Pool__Ok ok = POOL__OK__INIT;
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
			units_fmt_size(busy, a, sizeof(a));
			req_finish(rc->q, req_errorf(rc->q, -EBUSY, "%s; %s still in use", msg, a));
		} else {
			ok.message = msg;
			req_finish(rc->q, req_reply(rc->q, WIRE_OK, &ok.base));
		}
		reclaim_free(rc);
	}
}

/* Drop every reclaim in progress (the coordinator is stopping). */
void reclaim_close(struct poold *pd)
{
	struct reclaim *rc;

	while ((rc = TAILQ_FIRST(&pd->regions->reclaims)) != NULL) {
		req_finish(rc->q, req_errorf(rc->q, -ESHUTDOWN, "poold is stopping"));
		reclaim_free(rc);
	}
}

/* Vacate the tails of the node's arenas: evict cache regions, move the others. */
static int reclaim_start(struct req *q, uint32_t node, uint64_t size, bool drain)
{
	struct poold *pd = q->pd;
	struct lender_pool *lp;
	struct region *r, *rnext;
	struct reclaim *rc;
	size_t n = 0, i;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		n += lp->node == node;
	if (n == 0)
		return req_errorf(q, -ENOENT, "node %u lends nothing", node);
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL || (rc->targets = calloc(n, sizeof(*rc->targets))) == NULL ||
	    (rc->q = req_hold(q)) == NULL) {
		if (rc != NULL)
			free(rc->targets);
		free(rc);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	rc->pd = pd;
	rc->node = node;
	rc->drain = drain;
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
	return REQ_LATER;
}

static uint64_t reclaim_arena_size(const struct extent_arena *a)
{
	struct extent_stats st;

	extent_stats(a, &st);
	return st.size;
}

/* lend: set what a node offers (grow up to its arenas, shrink over free memory). */
static int reclaim_lend(struct req *q, uint32_t node, uint64_t size)
{
	struct poold *pd = q->pd;
	Pool__Ok ok = POOL__OK__INIT;
	struct lender_pool *lp;
	uint64_t max = 0, busy;
	size_t n = 0;
	char msg[160], a[24];
	int rc;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == node && lp->tier == TIER_DRAM) {
			n++;
			max += lp->size;
		}
	if (n == 0)
		return req_errorf(q, -ENOENT, "node %u lends no DRAM", node);
	if (size > max) {
		units_fmt_size(max, a, sizeof(a));
		return req_errorf(q, -ERANGE, "node %u can lend at most %s (its lend.max)", node,
				  a);
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
			if (rc != -EBUSY)
				return req_errorf(q, rc, "cannot resize node %u arena %u: %s", node,
						  lp->arena, err_str(rc));
			units_fmt_size(busy, a, sizeof(a));
			return req_errorf(q, -EBUSY,
					  "node %u arena %u has %s in use above %llu bytes: "
					  "use poolctl reclaim",
					  node, lp->arena, a, (unsigned long long)want);
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
	snprintf(msg, sizeof(msg), "node %u now lends %s", node, a);
	log_info("%s", msg);
	events_add(pd, "reclaim", "%s", msg);
	ok.message = msg;
	return req_reply(q, WIRE_OK, &ok.base);
}

static int reclaim_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__LendRequest *lr = (const Pool__LendRequest *)msg;
	struct reclaim *rc;

	if (cluster_find(q->pd, lr->node) == NULL)
		return req_errorf(q, -ENOENT, "no node %u", lr->node);
	TAILQ_FOREACH(rc, &q->pd->regions->reclaims, entry)
		if (rc->node == lr->node)
			return req_errorf(q, -EBUSY, "node %u is being reclaimed already",
					  lr->node);
	switch (lr->op) {
	case POOL__LEND_OP__LEND_OP_LEND:
		return reclaim_lend(q, lr->node, lr->size);
	case POOL__LEND_OP__LEND_OP_RECLAIM:
	case POOL__LEND_OP__LEND_OP_DRAIN:
		return reclaim_start(q, lr->node, lr->size, lr->op == POOL__LEND_OP__LEND_OP_DRAIN);
	default: /* (wire_msg_unpack() refused any other number) */
		return req_errorf(q, -EINVAL, "unknown lend operation %d", lr->op);
	}
}

struct ledger_rows {
	Pool__LedgerEntry *rows;
	size_t n, cap;
};

/* A new row at the end (index returned), or -1 without memory. */
static long ledger_add(struct ledger_rows *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		Pool__LedgerEntry *grown = realloc(l->rows, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		l->rows = grown;
		l->cap = cap;
	}
	pool__ledger_entry__init(&l->rows[l->n]);
	return (long)l->n++;
}

/*
 * The ledger: for each lender arena, what it offers and uses (uid
 * 0xffffffff), then what each borrowing uid holds there.
 */
static int reclaim_ledger(struct req *q, const ProtobufCMessage *msg)
{
	struct poold *pd = q->pd;
	Pool__Ledger reply = POOL__LEDGER__INIT;
	Pool__LedgerEntry **ptrs = NULL;
	struct ledger_rows l = {0};
	struct lender_pool *lp;
	struct region *r;
	size_t i, k;
	int rc = -ENOMEM;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		long first = ledger_add(&l);

		if (first < 0)
			goto out;
		extent_stats(lp->alloc, &st);
		l.rows[first].node = lp->node;
		l.rows[first].arena = lp->arena;
		l.rows[first].tier = (char *)tier_name(lp->tier);
		l.rows[first].size = lp->size;
		l.rows[first].lent = lp->lent;
		l.rows[first].used = st.used;
		l.rows[first].uid = UINT32_MAX;
		l.rows[first].draining = lp->draining;
		TAILQ_FOREACH(r, &pd->regions->list, entry) {
			for (i = 0; i < r->next; i++) {
				if (r->ext[i].node != lp->node || r->ext[i].arena != lp->arena)
					continue;
				l.rows[first].regions++;
				/* A uid sees its own use of each arena; admins see every uid's. */
				if (!q->admin && r->uid != q->uid)
					continue;
				for (k = (size_t)first + 1; k < l.n && l.rows[k].uid != r->uid; k++)
					;
				if (k == l.n) {
					if (ledger_add(&l) < 0)
						goto out;
					l.rows[k] = l.rows[first];
					l.rows[k].uid = r->uid;
					l.rows[k].used = 0;
					l.rows[k].regions = 0;
				}
				l.rows[k].used += r->ext[i].len;
				l.rows[k].regions++;
			}
		}
	}
	ptrs = calloc(l.n ? l.n : 1, sizeof(*ptrs));
	if (ptrs == NULL)
		goto out;
	for (i = 0; i < l.n; i++)
		ptrs[i] = &l.rows[i];
	reply.entries = ptrs;
	reply.n_entries = l.n;
	rc = req_reply(q, WIRE_LEDGER_REPLY, &reply.base);
out:
	free(ptrs);
	free(l.rows);
	return rc < 0 && rc == -ENOMEM ? req_errorf(q, rc, "out of memory") : rc;
}

const struct ctl_handler reclaim_handlers[] = {
    {WIRE_LEND, CTL_ADMIN, AT_COORD, reclaim_request, NULL},
    {WIRE_LEDGER, CTL_ANY, AT_COORD, reclaim_ledger, NULL},
    {0, 0, 0, NULL, NULL},
};

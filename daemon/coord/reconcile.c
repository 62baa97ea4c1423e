/*
 * daemon/coord/reconcile.c - the coordinator keeps each lender's record of what
 * it holds (hold.c) in step with the map, when the lender registers and
 * every ledger.interval: an extent it does not record is told again; one
 * only it records is adopted back into the map (a region's, a KV value's),
 * kept unclaimed, or scrubbed. The comparison itself is ledger.c's; the
 * address space and the KV index say what they hold and take back what
 * they lost.
 *
 * A lender may hold tens of millions of values, so a pass runs from an
 * event of the loop, about a millisecond at a time: the lender's record
 * (its report, or this poold's own) and the map are listed, sorted and
 * compared in slices, then repaired in slices; one pass at a time, the
 * others waiting in turn. The map goes on changing between slices, and
 * the lender's record was whole at one moment, so before an extent is
 * told or taken back the pass looks again: the allocators of the lender's
 * arenas list what they allocate and release (extent_watch()) from when
 * the lender was asked for its record (an extent released after the
 * lender made it, its scrub confirmed, is still in the record), the pass
 * keeps in mind the 2 MiB granules those changes touched, and an extent in
 * such a granule, or that the map holds now, is left to a later pass. A
 * pass whose lender left or restarted is dropped, and the lender asked
 * again.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "daemon/coord/coord.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"

/*
 * A periodic pass of a lender waits at least this many times as long as
 * its last pass held the loop: however many values a lender holds, ledger
 * passes take at most about a twentieth of the coordinator's loop.
 */
#define RECONCILE_PACE 20
#define RECONCILE_SLICE_US 1000	     /* a slice of a pass holds the loop about this long */
#define RECONCILE_STEP 4096	     /* extents between looks at the clock */
#define RECONCILE_CHANGES (1u << 20) /* changes to a lender's arenas listed between two looks */
#define RECONCILE_GRANULE_SHIFT 21   /* ... kept in mind by the 2 MiB granule they touched */

enum reconcile_stage {
	STAGE_HAVE,    /* the lender's record, listed */
	STAGE_REGIONS, /* the map's regions and reclaims of the lender (at once: a few) */
	STAGE_KV,      /* the KV index's values on it */
	STAGE_COMPARE, /* both sorted and compared */
	STAGE_ENDS,    /* want's furthest ends, for the overlap tests */
	STAGE_MISSING, /* what the lender does not record, told again */
	STAGE_ORPHANS, /* what only it records, taken back or scrubbed */
	STAGE_FREE,    /* the arrays' pages given back */
};

struct reconcile_pass {
	TAILQ_ENTRY(reconcile_pass) entry;
	uint32_t node;
	bool member;	      /* the lender was a member when the pass was queued ... */
	uint64_t incarnation; /* ... in this life */
	bool started;
	enum reconcile_stage stage;
	struct holdreport *report; /* the lender's record; NULL: this poold's own */
	const struct holding *h;   /* ... its holdings, told-as-gone ones among them */
	size_t nh;
	size_t at;	  /* the stage's place: a holding, a bucket, an extent, a byte */
	unsigned freeing; /* STAGE_FREE: the array given back */
	struct kv_extents_walk kv;
	struct ledger_extent *have, *want;
	size_t nhave, nwant, cap_have, cap_want;
	struct ledger_job job;
	uint64_t *ends;
	/* The granules of the lender's arenas changed since the pass began (a set). */
	uint64_t *dirty;
	size_t ndirty, cap_dirty;
	size_t told, taken; /* extents told again; orphans taken back or scrubbed */
	uint64_t loop_us;   /* how long its slices held the loop */
	uint64_t began_ms;
};

struct reconcile {
	TAILQ_HEAD(, reconcile_pass) passes; /* the first one runs */
	struct event *ev;
};

static void reconcile_pass_free(struct poold *pd, struct reconcile_pass *p)
{
	struct lender_pool *lp;

	if (p->started && pd->regions != NULL)
		TAILQ_FOREACH(lp, &pd->regions->pools, entry)
			if (lp->node == p->node)
				extent_unwatch(lp->alloc);
	holdreport_free(p->report);
	ledger_job_free(&p->job);
	free(p->have);
	free(p->want);
	free(p->ends);
	free(p->dirty);
	free(p);
}

/* Whether the lender the pass is of is still there, in the same life. */
static bool reconcile_pass_current(struct poold *pd, const struct reconcile_pass *p)
{
	struct member *m = member_find(pd, p->node);

	if (m == NULL)
		return !p->member;
	return p->member && m->info->incarnation == p->incarnation && m->state != MEMBER_DEAD;
}

/* Whether e overlaps an extent of set, sorted, where ends[i] is the furthest end of set[0..i]. */
static bool reconcile_overlaps(const struct ledger_extent *e, const struct ledger_extent *set,
			       const uint64_t *ends, size_t n)
{
	size_t lo = 0, hi = n;

	/* The first of set at or past e's end: those before it start before e ends. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set[mid].arena < e->arena ||
		    (set[mid].arena == e->arena && set[mid].off < e->off + e->len))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && set[lo - 1].arena == e->arena && ends[lo - 1] > e->off;
}

/* ends[i] for set[i], sorted: the furthest end of set[0..i] in set[i]'s arena. */
static void reconcile_ends(const struct ledger_extent *set, uint64_t *ends, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++)
		ends[i] = MAX(set[i].off + set[i].len,
			      i > 0 && set[i - 1].arena == set[i].arena ? ends[i - 1] : 0);
}

/* A granule of an arena as a key of the set of those changed (never 0: an empty slot). */
static uint64_t reconcile_granule(uint32_t arena, uint64_t off)
{
	return ((uint64_t)arena << 43 | off >> RECONCILE_GRANULE_SHIFT) + 1;
}

static size_t reconcile_dirty_slot(const struct reconcile_pass *p, uint64_t key)
{
	size_t i = (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (p->cap_dirty - 1);

	while (p->dirty[i] != 0 && p->dirty[i] != key)
		i = (i + 1) & (p->cap_dirty - 1);
	return i;
}

/* Mark a granule changed: 0 or -ENOMEM. */
static int reconcile_dirty_add(struct reconcile_pass *p, uint64_t key)
{
	size_t i;

	if (2 * (p->ndirty + 1) > p->cap_dirty) {
		uint64_t *was = p->dirty;
		size_t n = p->cap_dirty;

		p->cap_dirty = n ? 2 * n : 1024;
		if ((p->dirty = calloc(p->cap_dirty, sizeof(*p->dirty))) == NULL) {
			p->dirty = was;
			p->cap_dirty = n;
			return -ENOMEM;
		}
		for (i = 0; i < n; i++)
			if (was[i] != 0)
				p->dirty[reconcile_dirty_slot(p, was[i])] = was[i];
		free(was);
	}
	i = reconcile_dirty_slot(p, key);
	if (p->dirty[i] == 0) {
		p->dirty[i] = key;
		p->ndirty++;
	}
	return 0;
}

/*
 * Take in what the lender's arenas allocated and released since the last
 * look, as the granules they touched (their lists emptied): 0, -EOVERFLOW
 * when that is not all known (more than a list keeps between two looks,
 * an arena not watched from the pass's start), or -ENOMEM.
 */
static int reconcile_changes_take(struct poold *pd, struct reconcile_pass *p)
{
	struct lender_pool *lp;
	int rc;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		const struct extent_change *c;
		size_t n, i;

		if (lp->node != p->node)
			continue;
		if (extent_changes(lp->alloc, &c, &n) < 0)
			return -EOVERFLOW;
		for (i = 0; i < n; i++) {
			uint64_t g = c[i].off >> RECONCILE_GRANULE_SHIFT,
				 last = (c[i].off + c[i].len - 1) >> RECONCILE_GRANULE_SHIFT;

			for (; g <= last; g++)
				if ((rc = reconcile_dirty_add(
					 p, reconcile_granule(lp->arena,
							      g << RECONCILE_GRANULE_SHIFT))) < 0)
					return rc;
		}
		extent_changes_forget(lp->alloc, 0);
	}
	return 0;
}

/*
 * Whether e lies in a granule where the map allocated or released anything
 * since the pass began: 1, 0, or -errno as reconcile_changes_take().
 */
static int reconcile_changed(struct poold *pd, struct reconcile_pass *p,
			     const struct ledger_extent *e)
{
	uint64_t g, last = (e->off + e->len - 1) >> RECONCILE_GRANULE_SHIFT;
	int rc;

	if ((rc = reconcile_changes_take(pd, p)) < 0)
		return rc;
	if (p->ndirty == 0)
		return 0;
	for (g = e->off >> RECONCILE_GRANULE_SHIFT; g <= last; g++)
		if (p->dirty[reconcile_dirty_slot(
			p, reconcile_granule(e->arena, g << RECONCILE_GRANULE_SHIFT))] != 0)
			return 1;
	return 0;
}

/*
 * Forget what the pass itself changed in the lender's arenas since its
 * last look (reconcile_changes_take(), just before): what it took back
 * changed nothing meanwhile.
 */
static void reconcile_forget_own(struct poold *pd, const struct reconcile_pass *p)
{
	struct lender_pool *lp;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == p->node)
			extent_changes_forget(lp->alloc, 0);
}

/*
 * An extent the lender holds that the map does not know, typically after
 * this coordinator restarted. A committed KV value comes back into the
 * index (the lenders are the truth for the cache); a region's extent is
 * kept, unclaimed, so its memory is not lent twice; a KV reservation nobody
 * committed is scrubbed.
 */
static void reconcile_orphan(struct poold *pd, uint32_t node, const struct ledger_extent *e,
			     const struct holding *h)
{
	struct lender_pool *lp = region_pool(pd->regions, node, e->arena);
	const struct tombstone *t =
	    HOLD_REGION_ID(e->region) ? region_tombstone(pd, node, e->region) : NULL;

	if (t != NULL) {
		log_info("ledger: node %u holds an extent of region '%s', destroyed while it was "
			 "away: scrubbing it",
			 node, t->name);
		region_retire(pd, node, e->arena, e->off, e->len, NULL);
		return;
	}
	if (h != NULL && h->has_region &&
	    region_adopt(pd, node, e->arena, e->off, e->len, &h->region) == 0)
		return;
	if (h != NULL && h->has_kv) {
		if (kv_adopt(pd, node, e, &h->kv) == 0)
			return;
	} else if (!(e->region >> 63) && lp != NULL &&
		   extent_reserve(lp->alloc, e->off, e->len) == 0) {
		log_warnx("ledger: node %u holds arena %u extent %llu+%llu of region %llu, unknown "
			  "to the map: kept unclaimed",
			  node, e->arena, (unsigned long long)e->off, (unsigned long long)e->len,
			  (unsigned long long)e->region);
		region_account(pd);
		return;
	}
	log_warnx("ledger: node %u holds arena %u extent %llu+%llu nobody can claim: scrubbing it",
		  node, e->arena, (unsigned long long)e->off, (unsigned long long)e->len);
	region_retire(pd, node, e->arena, e->off, e->len, NULL);
}

/* Whether e is an extent retired under an earlier life of the lender (its scrub will not come). */
static bool reconcile_retired_before(struct poold *pd, const struct reconcile_pass *p,
				     const struct ledger_extent *e)
{
	struct retired *rt;

	TAILQ_FOREACH(rt, &pd->regions->retired, entry)
		if (rt->node == p->node && rt->arena == e->arena && rt->off == e->off)
			return rt->incarnation != p->incarnation;
	return false;
}

/*
 * An extent only the lender records, looked at again now: left alone when
 * the map holds anything there now or changed it since the pass began (on
 * its way out, placed anew, or repaired as missing), else taken back.
 */
static int reconcile_orphan_now(struct poold *pd, struct reconcile_pass *p,
				const struct ledger_extent *e)
{
	struct lender_pool *lp = region_pool(pd->regions, p->node, e->arena);
	const struct holding *h = NULL;
	struct holding own;
	int rc;

	if (reconcile_overlaps(e, p->want, p->ends, p->nwant))
		return 0;
	if ((rc = reconcile_changed(pd, p, e)) != 0)
		return rc < 0 ? rc : 0;
	if (lp != NULL && extent_busy(lp->alloc, e->off, e->len) &&
	    !reconcile_retired_before(pd, p, e))
		return 0;
	if (p->report != NULL)
		h = e->ref < p->nh ? &p->h[e->ref] : NULL;
	else if (hold_at(pd, e->arena, e->off, &own))
		h = &own;
	reconcile_orphan(pd, p->node, e, h);
	reconcile_forget_own(pd, p);
	p->taken++;
	return 0;
}

/* Tell the lender extents of the map it does not record (a region's with its record). */
static int reconcile_tell(struct poold *pd, struct reconcile_pass *p, const struct ledger_extent *e,
			  size_t n)
{
	struct holding *h = calloc(n ? n : 1, sizeof(*h));
	size_t i, k = 0;
	int rc = 0;

	if (h == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if ((rc = reconcile_changed(pd, p, &e[i])) != 0) {
			if (rc < 0)
				break;
			continue; /* (released or placed anew meanwhile) */
		}
		h[k].e = e[i];
		h[k].has_region = region_extent_record(pd, p->node, e[i].region, e[i].arena,
						       e[i].off, &h[k].region);
		k++;
	}
	if (rc >= 0 && k > 0)
		hold_tell_holdings(pd, p->node, h, k, NULL, NULL);
	p->told += k;
	free(h);
	return rc < 0 ? rc : 0;
}

/* The pass is over: what the lender held is accounted for. */
static void reconcile_done(struct poold *pd, struct reconcile_pass *p)
{
	struct member *m = member_find(pd, p->node);
	struct lender_pool *lp;

	/* Whatever the lender held is now accounted for: it may take new extents. */
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == p->node)
			lp->reconciled = true;
	region_tombstones_done(pd, p->node);
	if (m != NULL)
		m->ledger_after = units_now_ms() + p->loop_us / 1000 * RECONCILE_PACE;
	if (p->told > 0)
		log_warnx("ledger: node %u does not record %zu extent(s) of the map; told again",
			  p->node, p->told);
	if (p->taken > 0)
		log_info("ledger: node %u: of the %zu extent(s) it records, %zu taken back or "
			 "scrubbed (%llu ms, %llu ms of the loop)",
			 p->node, p->nhave, p->taken,
			 (unsigned long long)(units_now_ms() - p->began_ms),
			 (unsigned long long)p->loop_us / 1000);
	log_debug("ledger: node %u: its %zu extent(s) and the map's %zu compared (%llu ms, %llu us "
		  "of the loop)",
		  p->node, p->nhave, p->nwant, (unsigned long long)(units_now_ms() - p->began_ms),
		  (unsigned long long)p->loop_us);
}

/*
 * Room for about n extents at once: grown by doubling as they are listed,
 * an array of millions would be copied, and its pages faulted in, in one
 * slice.
 */
static int reconcile_room(struct ledger_extent **arr, size_t *cap, size_t n)
{
	n += n / 16 + 1024; /* (and what comes meanwhile) */
	if ((*arr = malloc(n * sizeof(**arr))) == NULL)
		return -ENOMEM;
	*cap = n;
	return 0;
}

/* Begin a pass: watch what changes in the lender's arenas from now on. */
static int reconcile_begin(struct poold *pd, struct reconcile_pass *p)
{
	struct lender_pool *lp;
	size_t extents = 0;
	int rc;

	p->started = true;
	p->began_ms = units_now_ms();
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		if (lp->node != p->node)
			continue;
		/*
		 * The changes since the lender was asked (reconcile_ask()): what
		 * was released after it made its record and before now, the
		 * record still names.
		 */
		if (!(lp->asked && p->report != NULL) &&
		    (rc = extent_watch(lp->alloc, RECONCILE_CHANGES)) < 0)
			return rc;
		lp->asked = false;
		extent_stats(lp->alloc, &st);
		extents += st.nextents;
	}
	if (p->report != NULL && holdreport_holdings(p->report, &p->h, &p->nh) < 0)
		return -EINVAL;
	if (p->nh >= UINT32_MAX)
		return -E2BIG; /* (a holding's number is its extent's ref) */
	if ((rc = reconcile_room(&p->have, &p->cap_have, p->report != NULL ? p->nh : pd->nholds)) <
		0 ||
	    (rc = reconcile_room(&p->want, &p->cap_want, extents)) < 0)
		return rc;
	return 0;
}

/*
 * What the lender holds, about max extents of it: from its report, or this
 * poold's own holdings when it is the lender. 1 more to do, 0 done, -errno.
 */
static int reconcile_have(struct poold *pd, struct reconcile_pass *p, size_t max)
{
	size_t end;

	if (p->report == NULL)
		return hold_extents(pd, &p->at, max, &p->have, &p->nhave, &p->cap_have);
	for (end = MIN(p->nh, p->at + max); p->at < end; p->at++) {
		const struct ledger_extent *e = &p->h[p->at].e;

		if (holdreport_ended(p->report, p->at))
			continue; /* it ended after its chunk */
		if (ledger_append(&p->have, &p->nhave, &p->cap_have, e->arena, e->off, e->len,
				  e->region) < 0)
			return -ENOMEM;
		p->have[p->nhave - 1].ref = (uint32_t)p->at;
	}
	return p->at < p->nh;
}

/* What the map says the lender should hold of regions and of reclaims: 0 or -ENOMEM. */
static int reconcile_regions(struct poold *pd, struct reconcile_pass *p)
{
	struct region *r;
	size_t i;

	TAILQ_FOREACH(r, &pd->regions->list, entry)
		for (i = 0; i < r->next; i++)
			if (r->ext[i].node == p->node &&
			    ledger_append(&p->want, &p->nwant, &p->cap_want, r->ext[i].arena,
					  r->ext[i].off, r->ext[i].len, r->id) < 0)
				return -ENOMEM;
	return reclaim_extents(pd, p->node, &p->want, &p->nwant, &p->cap_want) < 0 ? -ENOMEM : 0;
}

/* One step of the pass, about max extents: 1 more to do, 0 done, -errno (dropped). */
static int reconcile_step(struct poold *pd, struct reconcile_pass *p, size_t max)
{
	size_t end;
	int rc;

	switch (p->stage) {
	case STAGE_HAVE:
		if ((rc = reconcile_have(pd, p, max)) != 0)
			return rc;
		p->stage = STAGE_REGIONS;
		return 1;
	case STAGE_REGIONS:
		if ((rc = reconcile_regions(pd, p)) < 0)
			return rc;
		p->stage = STAGE_KV;
		return 1;
	case STAGE_KV:
		if ((rc = kv_extents(pd, p->node, &p->kv, max, &p->want, &p->nwant,
				     &p->cap_want)) != 0)
			return rc;
		if ((p->ends = calloc(p->nwant ? p->nwant : 1, sizeof(*p->ends))) == NULL)
			return -ENOMEM;
		ledger_job_start(&p->job, p->want, p->nwant, p->have, p->nhave);
		p->stage = STAGE_COMPARE;
		return 1;
	case STAGE_COMPARE:
		if ((rc = ledger_job_step(&p->job, max)) != 0)
			return rc;
		p->at = 0;
		p->stage = STAGE_ENDS;
		return 1;
	case STAGE_ENDS:
		end = MIN(p->nwant, p->at + max);
		reconcile_ends(p->want, p->ends, p->at, end);
		if ((p->at = end) < p->nwant)
			return 1;
		p->at = 0;
		p->stage = STAGE_MISSING;
		return 1;
	case STAGE_MISSING:
		end = MIN(p->job.nmissing, p->at + max);
		if (end > p->at &&
		    (rc = reconcile_tell(pd, p, p->job.missing + p->at, end - p->at)) < 0)
			return rc;
		if ((p->at = end) < p->job.nmissing)
			return 1;
		p->at = 0;
		p->stage = STAGE_ORPHANS;
		return 1;
	case STAGE_ORPHANS:
		/* (each may adopt a value: a step is a few of them) */
		end = MIN(p->job.norphans, p->at + MAX(max / 16, 1));
		for (; p->at < end; p->at++)
			if ((rc = reconcile_orphan_now(pd, p, &p->job.orphans[p->at])) < 0)
				return rc;
		if (p->at < p->job.norphans)
			return 1;
		reconcile_done(pd, p);
		p->at = 0;
		p->stage = STAGE_FREE;
		return 1;
	case STAGE_FREE: {
		/* (the report first, then each array; p->at: bytes of the one at hand) */
		void *arr[] = {p->have, p->want, p->ends, p->job.orphans, p->job.missing};
		size_t bytes[] = {p->cap_have * sizeof(*p->have), p->cap_want * sizeof(*p->want),
				  p->nwant * sizeof(*p->ends),
				  p->job.cap_orphans * sizeof(*p->job.orphans),
				  p->job.cap_missing * sizeof(*p->job.missing)};

		if (holdreport_shrink(p->report))
			return 1;
		for (; p->freeing < sizeof(arr) / sizeof(arr[0]); p->freeing++, p->at = 0)
			if (ledger_release(arr[p->freeing], bytes[p->freeing], &p->at))
				return 1;
		return 0;
	}
	}
	return -EINVAL;
}

/* The lender's pass is dropped: it is asked again at a later ledger.interval. */
static void reconcile_dropped(struct poold *pd, struct reconcile_pass *p, int rc)
{
	struct member *m = member_find(pd, p->node);

	if (m != NULL)
		m->ledger_after = units_now_ms() + p->loop_us / 1000 * RECONCILE_PACE;
	log_info("ledger: node %u: pass dropped (%s), asked again later", p->node,
		 rc == -EOVERFLOW ? "its arenas changed more than a pass keeps in mind"
		 : rc == -ESTALE  ? "it left or restarted meanwhile"
				  : err_str(rc));
}

/*
 * Run the passes for about budget_us (0: until none is left); whether any
 * is left. (The event of the loop calls it; unit tests call it at once.)
 */
bool reconcile_run(struct poold *pd, uint64_t budget_us)
{
	struct reconcile *rc = pd->regions != NULL ? pd->regions->ledger : NULL;
	uint64_t start = units_now_us(), now = start;
	struct reconcile_pass *p;

	if (rc == NULL)
		return false;
	while ((p = TAILQ_FIRST(&rc->passes)) != NULL &&
	       (budget_us == 0 || now - start < budget_us)) {
		uint64_t t0 = now;
		int r = p->stage == STAGE_FREE || reconcile_pass_current(pd, p) ? 1 : -ESTALE;

		if (r > 0 && !p->started && (r = reconcile_begin(pd, p)) == 0)
			r = 1;
		if (r > 0 && p->stage != STAGE_FREE && (r = reconcile_changes_take(pd, p)) == 0)
			r = 1; /* (the arenas' lists kept short) */
		while (r > 0) {
			r = reconcile_step(pd, p, RECONCILE_STEP);
			if (budget_us != 0 && units_now_us() - start >= budget_us)
				break;
		}
		now = units_now_us();
		p->loop_us += now - t0;
		if (r > 0)
			break;
		if (r < 0)
			reconcile_dropped(pd, p, r);
		TAILQ_REMOVE(&rc->passes, p, entry);
		reconcile_pass_free(pd, p);
	}
	return !TAILQ_EMPTY(&rc->passes);
}

/*
 * The next slice, once the loop has looked at its sockets (a timer, not an
 * active event: those would run before any socket is read).
 */
static void reconcile_arm(struct reconcile *rc)
{
	struct timeval now = {0, 0};

	if (rc->ev != NULL && !evtimer_pending(rc->ev, NULL))
		evtimer_add(rc->ev, &now);
}

static void reconcile_cb(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd, (void)what;
	if (reconcile_run(pd, RECONCILE_SLICE_US))
		reconcile_arm(pd->regions->ledger);
}

/*
 * Coordinator: compare a lender's whole report with the map and repair, or
 * this poold's own record when report is NULL (takes report): a pass queued.
 */
void reconcile_report(struct poold *pd, uint32_t node, struct holdreport *report)
{
	struct reconcile *rc;
	struct reconcile_pass *p;
	struct member *m;

	if (pd->regions == NULL) {
		holdreport_free(report);
		return;
	}
	if ((rc = pd->regions->ledger) == NULL) {
		if ((rc = calloc(1, sizeof(*rc))) == NULL) {
			holdreport_free(report);
			return;
		}
		TAILQ_INIT(&rc->passes);
		if (pd->base != NULL &&
		    (rc->ev = event_new(pd->base, -1, 0, reconcile_cb, pd)) == NULL) {
			free(rc);
			holdreport_free(report);
			return;
		}
		pd->regions->ledger = rc;
	}
	TAILQ_FOREACH(p, &rc->passes, entry)
		if (p->node == node && !p->started && reconcile_pass_current(pd, p)) {
			/* (a newer record for one waiting) */
			holdreport_free(p->report);
			p->report = report;
			return;
		}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		holdreport_free(report);
		return;
	}
	p->node = node;
	p->member = (m = member_find(pd, node)) != NULL;
	p->incarnation = m != NULL ? m->info->incarnation : 0;
	p->report = report;
	TAILQ_INSERT_TAIL(&rc->passes, p, entry);
	reconcile_arm(rc);
}

/* Coordinator: a lender's record in one message (an older lender's, a test's): a report of
 * one. */
void reconcile_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n)
{
	struct holdreport *r = NULL;

	if (holdreport_add(&r, 0, 0, false, h, n, NULL, 0) == 1)
		reconcile_report(pd, node, r);
	else
		log_warnx("node %u: out of memory keeping its holdings", node);
}

/* Coordinator: ask a lender for its record (the reply comes to reconcile_report()). */
void reconcile_ask(struct poold *pd, uint32_t node)
{
	struct reconcile_pass *p;

	if (pd->regions != NULL && pd->regions->ledger != NULL)
		TAILQ_FOREACH(p, &pd->regions->ledger->passes, entry)
			if (p->node == node && reconcile_pass_current(pd, p))
				return; /* (one under way or waiting) */
	if (node != pd->node_id) {
		struct lender_pool *lp;

		TAILQ_FOREACH(lp, &pd->regions->pools, entry)
			if (lp->node == node) /* (no pass of it runs: see above) */
				lp->asked = extent_watch(lp->alloc, RECONCILE_CHANGES) == 0;
		holdings_ask(pd, node);
	} else
		reconcile_report(pd, node, NULL); /* (this poold's own record) */
}

/* Coordinator: drop the passes (the address space goes). */
void reconcile_close(struct poold *pd)
{
	struct reconcile *rc = pd->regions != NULL ? pd->regions->ledger : NULL;
	struct reconcile_pass *p;

	if (rc == NULL)
		return;
	while ((p = TAILQ_FIRST(&rc->passes)) != NULL) {
		TAILQ_REMOVE(&rc->passes, p, entry);
		reconcile_pass_free(pd, p);
	}
	if (rc->ev != NULL)
		event_free(rc->ev);
	free(rc);
	pd->regions->ledger = NULL;
}

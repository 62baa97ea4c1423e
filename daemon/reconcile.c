/*
 * daemon/reconcile.c - the coordinator keeps each lender's record of what
 * it holds (hold.c) in step with the map, when the lender registers and
 * every ledger.interval: an extent it does not record is told again; one
 * only it records is adopted back into the map (a region's, a KV value's),
 * kept unclaimed, or scrubbed. The comparison itself is ledger.c's; the
 * address space and the KV index say what they hold and take back what
 * they lost.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/extent.h"
#include "daemon/ledger.h"
#include "daemon/poold.h"

/*
 * A periodic pass of a lender waits at least this many times as long as
 * its last comparison held the loop: however many values a lender holds,
 * ledger passes take at most about a twentieth of the coordinator's loop.
 */
#define RECONCILE_PACE 20

/* Tell a lender the extents of the map it does not record, a region's with its record. */
static void reconcile_tell(struct poold *pd, uint32_t node, const struct ledger_extent *e, size_t n)
{
	struct holding *h = calloc(n ? n : 1, sizeof(*h));
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < n; i++) {
		h[i].e = e[i];
		h[i].has_region =
		    region_extent_record(pd, node, e[i].region, e[i].arena, e[i].off, &h[i].region);
	}
	hold_tell_holdings(pd, node, h, n, NULL, NULL);
	free(h);
}

static int reconcile_cmp_place(const void *a, const void *b)
{
	const struct holding *x = *(const struct holding *const *)a,
			     *y = *(const struct holding *const *)b;

	if (x->e.arena != y->e.arena)
		return x->e.arena < y->e.arena ? -1 : 1;
	return x->e.off < y->e.off ? -1 : x->e.off > y->e.off;
}

/*
 * The lender's full record of an orphan extent, if it has one (NULL): from
 * its report, or from this poold's own record.
 */
typedef const struct holding *(*reconcile_find_cb)(struct poold *pd, void *arg,
						   const struct ledger_extent *e,
						   struct holding *scratch);

/* A report's holdings, sorted by place at the first orphan looked up (bsearch). */
struct reconcile_report {
	const struct holding *h;
	size_t n;
	const struct holding **byplace;
	bool sorted;
};

static const struct holding *reconcile_find_reported(struct poold *pd, void *arg,
						     const struct ledger_extent *e,
						     struct holding *scratch)
{
	struct reconcile_report *rep = arg;
	struct holding key = {.e = *e};
	const struct holding *kp = &key;
	const struct holding *const *found;
	size_t i;

	(void)pd;
	(void)scratch;
	if (!rep->sorted) {
		if (rep->n == 0 || (rep->byplace = calloc(rep->n, sizeof(*rep->byplace))) == NULL)
			return NULL;
		for (i = 0; i < rep->n; i++)
			rep->byplace[i] = &rep->h[i];
		qsort(rep->byplace, rep->n, sizeof(*rep->byplace), reconcile_cmp_place);
		rep->sorted = true;
	}
	found = bsearch(&kp, rep->byplace, rep->n, sizeof(*rep->byplace), reconcile_cmp_place);
	return found != NULL ? *found : NULL;
}

static const struct holding *reconcile_find_own(struct poold *pd, void *arg,
						const struct ledger_extent *e,
						struct holding *scratch)
{
	(void)arg;
	return hold_at(pd, e->arena, e->off, scratch) ? scratch : NULL;
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

/*
 * Whether e overlaps an extent of set, sorted by arena and offset (as
 * ledger_diff() leaves it), where ends[i] is the furthest end of set[0..i]
 * in set[i]'s arena.
 */
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

/*
 * Coordinator: compare a lender's record, the n extents of have (sorted
 * here), with the map and repair; find() gives the full record of an
 * extent only the lender holds.
 */
static void reconcile_record(struct poold *pd, uint32_t node, struct ledger_extent *have, size_t n,
			     reconcile_find_cb find, void *arg)
{
	struct ledger_extent *want = NULL, *missing = NULL, *orphans = NULL;
	uint64_t *ends = NULL;
	size_t nwant = 0, cap = 0, nm = 0, no = 0, i;
	struct member *m = cluster_find(pd, node);
	uint64_t incarnation = m != NULL ? m->info->incarnation : 0, start = units_now_us(), took;
	struct region *r;
	struct retired *rt;

	if (pd->regions == NULL)
		return;
	TAILQ_FOREACH(r, &pd->regions->list, entry)
		for (i = 0; i < r->next; i++)
			if (r->ext[i].node == node &&
			    ledger_append(&want, &nwant, &cap, r->ext[i].arena, r->ext[i].off,
					  r->ext[i].len, r->id) < 0)
				goto out;
	if (kv_extents(pd, node, &want, &nwant, &cap) < 0 ||
	    reclaim_extents(pd, node, &want, &nwant, &cap) < 0)
		goto out;
	if (ledger_diff(want, nwant, have, n, &missing, &nm, &orphans, &no) < 0)
		goto out;
	took = units_now_us() - start;
	if (m != NULL)
		m->ledger_after = units_now_ms() + took / 1000 * RECONCILE_PACE;
	log_debug("ledger: node %u: its %zu extent(s) and the map's %zu compared in %llu us", node,
		  n, nwant, (unsigned long long)took);
	if (no > 0) {
		if ((ends = calloc(nwant ? nwant : 1, sizeof(*ends))) == NULL)
			goto out;
		for (i = 0; i < nwant; i++) /* (want is sorted now) */
			ends[i] =
			    MAX(want[i].off + want[i].len,
				i > 0 && want[i - 1].arena == want[i].arena ? ends[i - 1] : 0);
	}
	{
		struct lender_pool *lp;

		/* Whatever the lender held is now accounted for: it may take new extents. */
		TAILQ_FOREACH(lp, &pd->regions->pools, entry)
			if (lp->node == node)
				lp->reconciled = true;
	}
	if (nm > 0) {
		log_warnx("ledger: node %u does not record %zu extent(s) of the map; told again",
			  node, nm);
		reconcile_tell(pd, node, missing, nm);
	}
	for (i = 0; i < no; i++) {
		struct holding scratch;
		bool retired = false;

		/*
		 * (Extents retired under an earlier life of the lender are not on their way out.)
		 */
		TAILQ_FOREACH(rt, &pd->regions->retired, entry)
			retired |= rt->node == node && rt->incarnation == incarnation &&
				   rt->arena == orphans[i].arena && rt->off == orphans[i].off;
		if (retired || reconcile_overlaps(&orphans[i], want, ends, nwant))
			continue; /* on its way out, or replaced by the repair above */
		reconcile_orphan(pd, node, &orphans[i], find(pd, arg, &orphans[i], &scratch));
	}
	region_tombstones_done(pd, node);
out:
	free(ends);
	free(want);
	free(missing);
	free(orphans);
}

/* Coordinator: compare a lender's report, its n holdings, with the map and repair. */
void reconcile_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n)
{
	struct reconcile_report rep = {.h = h, .n = n};
	struct ledger_extent *have = malloc((n ? n : 1) * sizeof(*have));
	size_t i;

	if (have == NULL)
		return;
	for (i = 0; i < n; i++)
		have[i] = h[i].e;
	reconcile_record(pd, node, have, n, reconcile_find_reported, &rep);
	free(rep.byplace);
	free(have);
}

/* Coordinator: ask a lender for its record (the reply comes to reconcile_holdings()). */
void reconcile_ask(struct poold *pd, uint32_t node)
{
	struct ledger_extent *have;
	size_t n;

	if (node != pd->node_id) {
		holdings_ask(pd, node);
	} else if (hold_extents(pd, &have, &n) == 0) {
		/* (this poold's own record: only its extents, each orphan's record looked up) */
		reconcile_record(pd, node, have, n, reconcile_find_own, NULL);
		free(have);
	}
}

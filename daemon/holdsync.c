/*
 * daemon/holdsync.c - the coordinator's side of the holdings: telling each
 * lender what it holds (a region's extents, KV values), and reconciling a
 * lender's record (hold.c) with the map when it registers and every
 * ledger.interval: an extent it does not record is told again; one only it
 * records is adopted back into the map (a region's, a KV value's), kept
 * unclaimed, or scrubbed. The comparison itself is ledger.c's.
 */
#include "config.h"

#include <stdlib.h>

#include "daemon/extent.h"
#include "daemon/ledger.h"
#include "daemon/poold.h"

static void hold_send(struct poold *pd, uint32_t node, const struct ledger_extent *e, size_t n)
{
	Pool__Holdings hs = POOL__HOLDINGS__INIT;
	Pool__Holding *h = calloc(n ? n : 1, sizeof(*h)), **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	struct region_record rec;
	size_t i;

	if (h == NULL || ptrs == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		pool__holding__init(&h[i]);
		h[i].arena = e[i].arena;
		h[i].off = e[i].off;
		h[i].len = e[i].len;
		h[i].region = e[i].region;
		/* A region's extent names its region. */
		if (region_extent_record(pd, node, e[i].region, e[i].arena, e[i].off, &rec))
			region_record_to_holding(&rec, &h[i]);
		ptrs[i] = &h[i];
	}
	hs.holdings = ptrs;
	hs.n_holdings = n;
	if (node == pd->node_id)
		hold_add(pd, &hs);
	else
		coord_notice(pd, node, WIRE_HOLD, &hs.base);
out:
	free(ptrs);
	free(h);
}

/*
 * Coordinator: tell a lender the committed KV values it holds (n, in one
 * message), so they can be rebuilt. With done, the lender answers once the holding is recorded (and
 * journaled, for a persistent value): done gets 0 or the error, at once or
 * later.
 */
void hold_tell_kv(struct poold *pd, uint32_t node, const struct kv_record *const *recs, size_t n,
		  coord_done_cb done, void *arg)
{
	Pool__Holdings hs = POOL__HOLDINGS__INIT;
	Pool__Holding *h = calloc(n ? n : 1, sizeof(*h)), **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	size_t i;
	int rc;

	if (h == NULL || ptrs == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		pool__holding__init(&h[i]);
		kv_record_to_holding(recs[i], &h[i]);
		ptrs[i] = &h[i];
	}
	hs.holdings = ptrs;
	hs.n_holdings = n;
	if (node == pd->node_id) {
		rc = hold_add(pd, &hs);
	} else if (done == NULL) {
		coord_notice(pd, node, WIRE_HOLD, &hs.base);
		rc = 0;
	} else {
		rc = coord_request(pd, node, WIRE_HOLD, &hs.base, done, arg);
		done = rc < 0 ? done : NULL; /* it answers later */
	}
out:
	free(ptrs);
	free(h);
	if (done != NULL)
		done(pd, arg, rc);
}

/* Coordinator: tell a lender it now holds an extent for a region. */
void hold_tell(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
	       uint64_t region)
{
	struct ledger_extent e = {arena, off, len, region};

	hold_send(pd, node, &e, 1);
}

/* The lender's full record of an orphan extent, if it sent one. */
static const Pool__Holding *hold_find(const Pool__Holdings *hs, const struct ledger_extent *e)
{
	size_t i;

	for (i = 0; hs != NULL && i < hs->n_holdings; i++)
		if (hs->holdings[i]->arena == e->arena && hs->holdings[i]->off == e->off)
			return hs->holdings[i];
	return NULL;
}

/*
 * An extent the lender holds that the map does not know, typically after
 * this coordinator restarted. A committed KV value comes back into the
 * index (the lenders are the truth for the cache); a region's extent is
 * kept, unclaimed, so its memory is not lent twice; a KV reservation nobody
 * committed is scrubbed.
 */
static void hold_adopt(struct poold *pd, uint32_t node, const struct ledger_extent *e,
		       const Pool__Holding *h)
{
	struct lender_pool *lp = region_pool(pd->regions, node, e->arena);
	const struct tombstone *t =
	    HOLD_REGION_ID(e->region) ? region_tombstone(pd, node, e->region) : NULL;
	struct region_record rec;
	struct kv_record kv;

	if (t != NULL) {
		log_info("ledger: node %u holds an extent of region '%s', destroyed while it was "
			 "away: scrubbing it",
			 node, t->name);
		region_retire(pd, node, e->arena, e->off, e->len, NULL);
		return;
	}
	if (h != NULL && h->rname != NULL && h->rname[0] != '\0' &&
	    region_record_of_holding(h, &rec) &&
	    region_adopt(pd, node, e->arena, e->off, e->len, &rec) == 0)
		return;
	if (h != NULL && h->ns != NULL && h->ns[0] != '\0' && h->has_key) {
		kv_record_of_holding(h, &kv);
		kv.len = e->len; /* (the extent as the ledger has it) */
		if (kv_adopt(pd, node, &kv) == 0)
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

static bool hold_overlaps(const struct ledger_extent *e, const struct ledger_extent *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i].arena == e->arena && set[i].off < e->off + e->len &&
		    e->off < set[i].off + set[i].len)
			return true;
	return false;
}

/*
 * Coordinator: compare a lender's record with the map and repair. have is
 * what the lender reported (for this poold itself, its own record).
 */
void hold_reconcile(struct poold *pd, uint32_t node, struct ledger_extent *have, size_t nhave,
		    const Pool__Holdings *hs)
{
	struct ledger_extent *want = NULL, *missing = NULL, *orphans = NULL;
	size_t nwant = 0, cap = 0, nm = 0, no = 0, i;
	struct member *m = cluster_find(pd, node);
	uint64_t incarnation = m != NULL ? m->info->incarnation : 0;
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
	if (kv_extents(pd, node, &want, &nwant, &cap) < 0)
		goto out;
	if (ledger_diff(want, nwant, have, nhave, &missing, &nm, &orphans, &no) < 0)
		goto out;
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
		hold_send(pd, node, missing, nm);
	}
	for (i = 0; i < no; i++) {
		const Pool__Holding *h = hold_find(hs, &orphans[i]);
		bool retired = false;

		/*
		 * (Extents retired under an earlier life of the lender are not on their way out.)
		 */
		TAILQ_FOREACH(rt, &pd->regions->retired, entry)
			retired |= rt->node == node && rt->incarnation == incarnation &&
				   rt->arena == orphans[i].arena && rt->off == orphans[i].off;
		if (retired || hold_overlaps(&orphans[i], want, nwant))
			continue; /* on its way out, or replaced by the repair above */
		hold_adopt(pd, node, &orphans[i], h);
	}
	region_tombstones_done(pd, node);
out:
	free(want);
	free(missing);
	free(orphans);
}

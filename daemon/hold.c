/*
 * daemon/hold.c - the ledger between the coordinator and its lenders.
 *
 * Every lender keeps its own record of the extents it holds and for which
 * region: the coordinator tells it on each allocation (Hold), a scrub ends
 * the holding. The coordinator asks each lender for its record when it
 * registers and every ledger.interval, compares it with its own map
 * (ledger.c) and repairs differences: an extent the lender does not know
 * is told again; an extent only the lender knows, and that no region uses,
 * is scrubbed. Both are logged.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/extent.h"
#include "daemon/ledger.h"
#include "daemon/poold.h"

struct hold {
	TAILQ_ENTRY(hold) entry;
	struct hold *hnext; /* the chain of its hash bucket */
	struct ledger_extent e;
	/* a committed KV value's identity, or ns[0] == 0 */
	char ns[64];
	uint8_t *key;
	size_t klen;
	uint64_t vlen, version, ns_capacity;
	uint32_t ns_flags;
};

static void hold_free(struct hold *hd)
{
	free(hd->key);
	free(hd);
}

static struct hold **hold_slot(struct poold *pd, uint32_t arena, uint64_t off)
{
	uint64_t h = (off ^ (uint64_t)arena << 56) * UINT64_C(0x9e3779b97f4a7c15);
	struct hold **pp = &pd->hold_tab[(h >> 32) & (pd->hold_tab_size - 1)];

	while (*pp != NULL && ((*pp)->e.arena != arena || (*pp)->e.off != off))
		pp = &(*pp)->hnext;
	return pp;
}

/* Keep the table at least as large as the number of holdings: 0 or -ENOMEM. */
static int hold_grow(struct poold *pd)
{
	size_t size = pd->hold_tab_size ? pd->hold_tab_size * 2 : 256;
	struct hold **tab, *hd;

	if (pd->nholds < pd->hold_tab_size)
		return 0;
	tab = calloc(size, sizeof(*tab));
	if (tab == NULL)
		return -ENOMEM;
	free(pd->hold_tab);
	pd->hold_tab = tab;
	pd->hold_tab_size = size;
	TAILQ_FOREACH(hd, &pd->holds, entry) {
		struct hold **pp = hold_slot(pd, hd->e.arena, hd->e.off);

		hd->hnext = NULL;
		*pp = hd;
	}
	return 0;
}

/* Lender: record extents held for regions (replacing any other record at the same place). */
void hold_add(struct poold *pd, const Pool__Holdings *hs)
{
	size_t i;

	for (i = 0; i < hs->n_holdings; i++) {
		const Pool__Holding *h = hs->holdings[i];
		struct hold **pp, *hd;

		if (hold_grow(pd) < 0) {
			log_warnx("out of memory recording a holding");
			return;
		}
		pp = hold_slot(pd, h->arena, h->off);
		hd = *pp;
		if (hd == NULL) {
			hd = calloc(1, sizeof(*hd));
			if (hd == NULL) {
				log_warnx("out of memory recording a holding");
				return;
			}
			TAILQ_INSERT_TAIL(&pd->holds, hd, entry);
			*pp = hd;
			pd->nholds++;
		}
		hd->e = (struct ledger_extent){h->arena, h->off, h->len, h->region};
		free(hd->key);
		hd->key = NULL;
		hd->klen = 0;
		hd->ns[0] = '\0';
		if (h->ns != NULL && h->ns[0] != '\0' && h->has_key && h->key.len > 0 &&
		    (hd->key = malloc(h->key.len)) != NULL) {
			snprintf(hd->ns, sizeof(hd->ns), "%s", h->ns);
			memcpy(hd->key, h->key.data, h->key.len);
			hd->klen = h->key.len;
			hd->vlen = h->vlen;
			hd->version = h->version;
			hd->ns_capacity = h->ns_capacity;
			hd->ns_flags = h->ns_flags;
		}
	}
}

/* Lender: the extent at (arena, off) is scrubbed: no longer held. */
void hold_drop(struct poold *pd, uint32_t arena, uint64_t off)
{
	struct hold **pp, *hd;

	if (pd->hold_tab_size == 0 || (hd = *(pp = hold_slot(pd, arena, off))) == NULL)
		return;
	*pp = hd->hnext;
	TAILQ_REMOVE(&pd->holds, hd, entry);
	pd->nholds--;
	hold_free(hd);
}

/* Lender: forget every holding. */
void hold_clear(struct poold *pd)
{
	struct hold *hd;

	while ((hd = TAILQ_FIRST(&pd->holds)) != NULL) {
		TAILQ_REMOVE(&pd->holds, hd, entry);
		hold_free(hd);
	}
	free(pd->hold_tab);
	pd->hold_tab = NULL;
	pd->hold_tab_size = pd->nholds = 0;
}

/* Lender: answer the coordinator's HoldingsRequest with its record. */
int hold_report(struct poold *pd, struct conn *c, uint64_t req_id)
{
	Pool__Holdings hs = POOL__HOLDINGS__INIT;
	Pool__Holding *h, **ptrs;
	struct hold *hd;
	size_t n = pd->nholds;
	int rc;

	h = calloc(n ? n : 1, sizeof(*h));
	ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (h == NULL || ptrs == NULL) {
		free(h);
		free(ptrs);
		return conn_send_error(c, req_id, -ENOMEM, NULL);
	}
	n = 0;
	TAILQ_FOREACH(hd, &pd->holds, entry) {
		pool__holding__init(&h[n]);
		h[n].arena = hd->e.arena;
		h[n].off = hd->e.off;
		h[n].len = hd->e.len;
		h[n].region = hd->e.region;
		if (hd->ns[0] != '\0') {
			h[n].ns = hd->ns;
			h[n].has_key = h[n].has_vlen = h[n].has_version = h[n].has_ns_capacity = 1;
			h[n].has_ns_flags = 1;
			h[n].ns_flags = hd->ns_flags;
			h[n].key.data = hd->key;
			h[n].key.len = hd->klen;
			h[n].vlen = hd->vlen;
			h[n].version = hd->version;
			h[n].ns_capacity = hd->ns_capacity;
		}
		ptrs[n] = &h[n];
		n++;
	}
	hs.holdings = ptrs;
	hs.n_holdings = n;
	rc = conn_send(c, WIRE_HOLDINGS_REPLY, req_id, &hs.base);
	free(ptrs);
	free(h);
	return rc;
}

static void hold_send(struct poold *pd, uint32_t node, const struct ledger_extent *e, size_t n)
{
	Pool__Holdings hs = POOL__HOLDINGS__INIT;
	Pool__Holding *h = calloc(n ? n : 1, sizeof(*h)), **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	size_t i;

	if (h == NULL || ptrs == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		pool__holding__init(&h[i]);
		h[i].arena = e[i].arena;
		h[i].off = e[i].off;
		h[i].len = e[i].len;
		h[i].region = e[i].region;
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

/* Coordinator: tell a lender the committed KV value it holds, so it can be rebuilt. */
void hold_tell_kv(struct poold *pd, uint32_t node, const Pool__Holding *h)
{
	Pool__Holdings hs = POOL__HOLDINGS__INIT;
	Pool__Holding *ph = (Pool__Holding *)h;

	hs.holdings = &ph;
	hs.n_holdings = 1;
	if (node == pd->node_id)
		hold_add(pd, &hs);
	else
		coord_notice(pd, node, WIRE_HOLD, &hs.base);
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

	if (h != NULL && h->ns != NULL && h->ns[0] != '\0' && h->has_key) {
		if (kv_adopt(pd, node, e->arena, e->off, e->len, h) == 0)
			return;
	} else if (!(e->region >> 63) && lp != NULL &&
		   extent_reserve(lp->alloc, e->off, e->len) == 0) {
		log_warnx("ledger: node %u holds arena %u extent %llu+%llu of region %llu, unknown "
			  "to the map: kept unclaimed", node, e->arena, (unsigned long long)e->off,
			  (unsigned long long)e->len, (unsigned long long)e->region);
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
		log_warnx("ledger: node %u does not record %zu extent(s) of the map; told again", node,
			  nm);
		hold_send(pd, node, missing, nm);
	}
	for (i = 0; i < no; i++) {
		const Pool__Holding *h = hold_find(hs, &orphans[i]);
		bool retired = false;

		TAILQ_FOREACH(rt, &pd->regions->retired, entry)
			retired |= rt->node == node && rt->arena == orphans[i].arena &&
				   rt->off == orphans[i].off;
		if (retired || hold_overlaps(&orphans[i], want, nwant))
			continue; /* on its way out, or replaced by the repair above */
		hold_adopt(pd, node, &orphans[i], h);
	}
out:
	free(want);
	free(missing);
	free(orphans);
}

/* Coordinator: reconcile this poold's own record as a lender. */
static void hold_reconcile_self(struct poold *pd)
{
	struct ledger_extent *have = calloc(pd->nholds ? pd->nholds : 1, sizeof(*have));
	struct hold *hd;
	size_t n = 0;

	if (have == NULL)
		return;
	TAILQ_FOREACH(hd, &pd->holds, entry)
		have[n++] = hd->e;
	hold_reconcile(pd, pd->node_id, have, n, NULL);
	free(have);
}

/* Coordinator: ask a lender for its record (the reply comes to hold_reconcile()). */
void hold_ask(struct poold *pd, uint32_t node)
{
	Pool__HoldingsRequest req = POOL__HOLDINGS_REQUEST__INIT;

	if (node == pd->node_id)
		hold_reconcile_self(pd);
	else
		coord_notice(pd, node, WIRE_HOLDINGS, &req.base);
}

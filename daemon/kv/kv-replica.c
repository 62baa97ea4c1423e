/*
 * daemon/kv/kv-replica.c - KV replicas: a copy lost with its lender is made
 * again on another lender, a few per sweep, from a copy that lives.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/region/region.h"

/* The copy is at its new lender (or failed): the value has one more place, or not. */
static void kv_recopied(struct poold *pd, void *arg, int rc)
{
	struct kv_recopy *rk = arg;
	struct kv_ns *ns = pd->kv ? kv_ns_by_id(pd, rk->ns_id) : NULL;
	struct kv_entry *e = NULL;

	if (pd->kv != NULL)
		TAILQ_REMOVE(&pd->kv->copying, rk, entry);
	if (ns != NULL)
		ns->landing -= rk->to.alen;
	if (ns != NULL &&
	    (e = *kv_slot(ns, rk->key, rk->klen, kv_hash(rk->key, rk->klen))) != NULL &&
	    e->x != NULL) {
		e->x->recopy_at = 0;
		kv_extra_trim(e);
	}
	if (rc == 0 && e != NULL && e->has_val && e->val.version == rk->version && !e->val.pmem &&
	    1u + e->val.ncopies < ns->replicas && !kv_val_on(&e->val, rk->to.node) &&
	    kv_val_copy_add(pd, &e->val, &rk->to) == 0) {
		kv_tell(pd, ns, e);
	} else {
		region_retire(pd, rk->to.node, rk->to.arena, rk->to.off, rk->to.alen, NULL);
		if (ns != NULL)
			ns->used -= rk->to.alen;
	}
	region_account(pd);
	free(rk->key);
	free(rk);
}

/*
 * A value with fewer places than its namespace's replicas (a lender of it
 * died, or too few were up when it was put): one more, on another lender,
 * copied from a place that is up.
 */
void kv_recopy(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	struct kv_place all[KV_MAX_REPLICAS];
	uint32_t nodes[KV_MAX_REPLICAS];
	struct lender_pool *src = NULL, *dst;
	size_t n, i;
	struct kv_recopy *rk;
	uint64_t len, off, alen, src_off = 0;

	/* (a copy whose lender went away may never answer: after a while, try again) */
	if (pd->kv->recopies >= KV_RECOPY_MAX || !e->has_val || e->moving || e->val.pmem ||
	    ns->local_node != 0 || 1u + e->val.ncopies >= ns->replicas ||
	    (kv_recopy_at(e) != 0 && units_now_ms() - kv_recopy_at(e) < KV_RECOPY_TIMEOUT_MS))
		return;
	n = kv_places(&e->val, all);
	for (i = 0; i < n; i++) {
		nodes[i] = all[i].node;
		if (src == NULL && kv_node_up(pd, all[i].node)) {
			src = region_pool(pd->regions, all[i].node, all[i].arena);
			src_off = all[i].off;
		}
	}
	len = kv_alloc_len(ns, e->val.vlen);
	dst =
	    kv_pick(pd, ns, kv_hash(kv_entry_key(e), e->klen) ^ (n * UINT64_C(0x9e3779b97f4a7c15)),
		    len, nodes, n);
	if (src == NULL || dst == NULL || kv_extra(e) == NULL)
		return;
	if (extent_alloc_fine(dst->alloc, len, &off, &alen) < 0) {
		kv_extra_trim(e);
		return;
	}
	rk = calloc(1, sizeof(*rk));
	if (rk == NULL || (rk->key = malloc(e->klen)) == NULL) {
		free(rk);
		extent_release(dst->alloc, off, alen);
		kv_extra_trim(e);
		return;
	}
	memcpy(rk->key, kv_entry_key(e), e->klen);
	rk->klen = e->klen;
	rk->ns_id = ns->id;
	rk->version = e->val.version;
	rk->to = (struct kv_place){dst->node, dst->arena, off, alen};
	ns->used += alen;
	ns->landing += alen;
	hold_tell(pd, dst->node, dst->arena, off, alen, KV_HOLD_ID(ns));
	if (copy_start(pd, (struct copy_end){src->node, src->arena, src_off},
		       (struct copy_end){dst->node, dst->arena, off}, e->val.vlen, kv_recopied,
		       rk) < 0) {
		region_retire(pd, dst->node, dst->arena, off, alen, NULL);
		ns->used -= alen;
		ns->landing -= alen;
		free(rk->key);
		free(rk);
		kv_extra_trim(e);
		return;
	}
	/*
	 * Until the copy is done, its extent is in no value's places: the
	 * ledger must still see it claimed, or it would scrub the copy.
	 */
	TAILQ_INSERT_TAIL(&pd->kv->copying, rk, entry);
	e->x->recopy_at = units_now_ms();
	pd->kv->recopies++;
}

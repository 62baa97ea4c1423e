/*
 * daemon/kv/kv-tier.c - where a KV value lives over time: its lender told
 * (the lender's record names it, so a restarted coordinator rebuilds it),
 * persistent values made durable before their put is answered, and values
 * moved between a lender's DRAM and its pmem tier (spilled under pressure,
 * promoted back on a hit).
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"

/* A commit of n persistent values (keys), before its lenders are told; NULL for no memory. */
struct kv_durable *kv_durable_new(size_t n)
{
	struct kv_durable *d = calloc(1, sizeof(*d));

	if (d != NULL && (d->failed = calloc(n ? n : 1, sizeof(*d->failed))) == NULL) {
		free(d);
		return NULL;
	}
	if (d != NULL)
		d->n = n;
	return d;
}

void kv_durable_free(struct kv_durable *d)
{
	free(d->failed);
	free(d->tells);
	free(d);
}

/* Key i of a commit is not durable. */
static void kv_durable_fail(struct kv_durable *d, size_t key)
{
	if (!d->failed[key]) {
		d->failed[key] = true;
		d->lost++;
	}
}

/* A lender journaled a committed persistent value (or could not: the key fails). */
static void kv_durable_done(struct poold *pd, void *arg, int rc)
{
	struct kv_durable_batch *b = arg;
	struct kv_durable *d = b->d;
	size_t k;

	(void)pd;
	for (k = 0; rc < 0 && k < b->n; k++)
		kv_durable_fail(d, b->i[k]);
	free(b);
	if (--d->pending > 0)
		return;
	if (d->answer != NULL)
		d->answer(d, d->waiter);
	else if (d->abandoned)
		kv_durable_free(d);
}

/*
 * Tell each lender the values of a commit it holds, in one message, so
 * that it journals them together (one flush for the lot, lend.c); the
 * keys of a lender that cannot get -EIO.
 */
void kv_durable_send(struct poold *pd, struct kv_durable *d)
{
	struct holding *hs = calloc(d->ntells ? d->ntells : 1, sizeof(*hs));
	size_t t, k, n;

	for (t = 0; t < d->ntells; t++) {
		struct kv_durable_batch *b;
		uint32_t node = d->tells[t].node;

		if (node == UINT32_MAX) /* sent with an earlier one */
			continue;
		for (k = t, n = 0; k < d->ntells; k++)
			n += d->tells[k].node == node;
		b = malloc(sizeof(*b) + n * sizeof(b->i[0]));
		if (hs == NULL || b == NULL) { /* without memory: these are not durable */
			free(b);
			for (k = t; k < d->ntells; k++)
				if (d->tells[k].node == node) {
					kv_durable_fail(d, d->tells[k].i);
					d->tells[k].node = UINT32_MAX;
				}
			continue;
		}
		b->d = d;
		b->n = 0;
		for (k = t; k < d->ntells; k++)
			if (d->tells[k].node == node) {
				hs[b->n] = d->tells[k].h;
				b->i[b->n++] = d->tells[k].i;
				d->tells[k].node = UINT32_MAX;
			}
		d->pending++;
		hold_tell_holdings(pd, node, hs, b->n, kv_durable_done, b);
	}
	free(hs);
	free(d->tells);
	d->tells = NULL;
	d->ntells = d->cap = 0;
}

/* Queue a holding for kv_durable_send(): 0, or -ENOMEM. */
static int kv_durable_add(struct kv_durable *d, const struct holding *h, uint32_t node, size_t i)
{
	if (d->ntells == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct kv_durable_tell *t = realloc(d->tells, cap * sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		d->tells = t;
		d->cap = cap;
	}
	d->tells[d->ntells++] = (struct kv_durable_tell){node, i, *h};
	return 0;
}

/* Tell a value's lenders what they hold, so that a restarted coordinator can rebuild it. */
void kv_tell(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e)
{
	if (ns->flags & HOLD_NS_SHARDED) /* (its owner's allocator is the record: kvstore.c) */
		return;
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(&e->val, all), i;
	struct holding h = {.has_kv = true};
	struct kv_record rec = {
	    .ns = ns->name,
	    .ns_capacity = ns->capacity,
	    .ns_flags = ns->flags,
	    .ns_replicas = ns->replicas,
	    .ns_size_hint = ns->size_hint,
	    .key = kv_entry_key(e),
	    .klen = e->klen,
	    .vlen = e->val.vlen,
	    .version = e->val.version,
	    .has_owner = true,
	    .owner = e->val.owner,
	};

	for (i = 0; i < n; i++) {
		struct kv_durable *d = (ns->flags & HOLD_NS_PERSISTENT) ? pd->kv->durable : NULL;
		size_t key = pd->kv->durable_i;

		h.e = (struct ledger_extent){.arena = all[i].arena,
					     .off = all[i].off,
					     .len = all[i].alen,
					     .region = KV_HOLD_ID(ns)};
		h.kv = rec;
		if (d != NULL && kv_durable_add(d, &h, all[i].node, key) == 0)
			continue; /* told with the commit's other values (kv_durable_send) */
		if (d != NULL)	  /* no memory to wait for it */
			kv_durable_fail(d, key);
		hold_tell_holdings(pd, all[i].node, &h, 1, NULL, NULL);
	}
}

/* A spill or a promotion in flight: the value copied from one tier to the other. */
struct kv_move {
	uint64_t ns_id;
	uint8_t *key;
	size_t klen;
	struct kv_val from, to;
};

/*
 * The copy is done (or failed): if the entry still holds the version that
 * was copied, it now lives in the new place; the old place is freed, or kept
 * for its readers. Otherwise the copy is thrown away.
 */
static void kv_moved(struct poold *pd, void *arg, int rc)
{
	struct kv_move *mv = arg;
	struct kv_ns *ns = pd->kv ? kv_ns_by_id(pd, mv->ns_id) : NULL;
	struct kv_entry *e = NULL;

	if (ns != NULL) {
		if (mv->to.pmem)
			ns->planding -= mv->to.alen;
		else
			ns->landing -= mv->to.alen;
		e = *kv_slot(ns, mv->key, mv->klen, kv_hash(mv->key, mv->klen));
	}
	if (e != NULL && e->moving && e->has_val && e->val.version == mv->from.version &&
	    e->val.off == mv->from.off && e->val.arena == mv->from.arena) {
		e->moving = false;
		if (!mv->from.pmem)
			ns->leaving -= mv->from.alen;
		if (rc == 0) {
			struct kv_pin *pins = kv_pins(e);
			struct kv_zombie *z = pins != NULL ? calloc(1, sizeof(*z)) : NULL;

			/* The count goes with the value to its new place. */
			mv->to.charged = mv->from.charged;
			mv->to.owner = mv->from.owner;
			kv_val_recharge(pd, &mv->to,
					(int64_t)kv_val_bytes(&mv->to) -
					    (int64_t)kv_val_bytes(&mv->from));
			mv->from.charged = 0;
			if (z != NULL) { /* its readers keep the old place until they are done */
				z->val = mv->from;
				z->pins = pins;
				TAILQ_INSERT_TAIL(&ns->zombies, z, entry);
			} else {
				kv_pins_free(pins);
				kv_val_free(pd, ns, &mv->from);
			}
			if (e->x != NULL)
				e->x->pins = NULL;
			kv_unhold(ns, e);
			kv_lru_remove(ns, e);
			e->val = mv->to;
			kv_lru_append(ns, e);
			if (mv->to.pmem)
				ns->spills++;
			else
				ns->promotions++;
			kv_tell(pd, ns, e);
			kv_ev_moved(pd, ns, e);
			goto out;
		}
	}
	if (ns != NULL)
		kv_val_free(pd, ns, &mv->to); /* not used: the value changed, or the copy failed */
	else
		region_retire(pd, mv->to.node, mv->to.arena, mv->to.off, mv->to.alen, NULL);
out:
	if (ns != NULL)
		region_account(pd);
	free(mv->key);
	free(mv);
}

/* Copy a value to an extent of another tier on the same lender, then kv_moved(). */
static int kv_move(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool to_pmem)
{
	struct lender_pool *lp, *dst = NULL;
	struct kv_move *mv;
	uint64_t off, alen;
	int rc;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node == e->val.node && lp->tier == (to_pmem ? TIER_PMEM : TIER_DRAM) &&
		    region_pool_usable(pd, lp) && !lp->draining) {
			dst = lp;
			break;
		}
	if (dst == NULL || extent_alloc_fine(dst->alloc, e->val.vlen, &off, &alen) < 0)
		return -ENOSPC;
	mv = calloc(1, sizeof(*mv));
	if (mv == NULL || (mv->key = malloc(e->klen)) == NULL) {
		free(mv);
		extent_release(dst->alloc, off, alen);
		return -ENOMEM;
	}
	memcpy(mv->key, kv_entry_key(e), e->klen);
	mv->klen = e->klen;
	mv->ns_id = ns->id;
	mv->from = e->val;
	mv->to = (struct kv_val){.node = dst->node,
				 .arena = dst->arena,
				 .off = off,
				 .alen = alen,
				 .vlen = e->val.vlen,
				 .version = e->val.version,
				 .pmem = to_pmem};
	if (to_pmem) {
		ns->pmem_used += alen;
		ns->planding += alen;
		ns->leaving += e->val.alen;
	} else {
		ns->used += alen;
		ns->landing += alen;
	}
	e->moving = true;
	hold_tell(pd, dst->node, dst->arena, off, alen, KV_HOLD_ID(ns));
	if (e->val.node == pd->node_id) {
		kv_moved(pd, mv,
			 lend_copy(pd, e->val.arena, e->val.off, dst->arena, off, e->val.vlen));
		return 0;
	}
	rc = kv_send_copy(pd, e->val.node, e->val.arena, e->val.off, dst->arena, off, e->val.vlen,
			  kv_moved, mv);
	if (rc < 0)
		kv_moved(pd, mv, rc);
	return 0;
}

/*
 * Spill a DRAM value to its lender's pmem tier. When the tier is full and
 * may_evict, the least recently used spilled value of that lender is dropped
 * to make room, once; -ENOSPC when there is no pmem tier or still no room.
 */
int kv_spill(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, bool may_evict)
{
	struct kv_entry *old;

	if (ns->flags & (HOLD_NS_DRAM_ONLY | HOLD_NS_PERSISTENT) || ns->replicas > 1)
		return -ENOSPC; /* persistent values are in pmem already; copies are not moved */
	if (kv_move(pd, ns, e, true) == 0)
		return 0;
	if (!may_evict)
		return -ENOSPC;
	TAILQ_FOREACH(old, &ns->plru, lru)
		if (old->val.node == e->val.node && kv_pins(old) == NULL && !old->moving &&
		    kv_pending(old) == NULL)
			break;
	if (old == NULL)
		return -ENOSPC;
	ns->evictions++;
	kv_entry_clear(pd, ns, old);
	return kv_move(pd, ns, e, true);
}

/*
 * A hit on a spilled value: back to DRAM, swapping colder DRAM values out to
 * pmem when the namespace is full. Nothing is evicted for a promotion.
 */
void kv_promote(struct poold *pd, struct kv_ns *ns, struct kv_entry *e)
{
	if (!e->moving && kv_make_room(pd, ns, e->val.alen, false) == 0)
		kv_move(pd, ns, e, false);
}

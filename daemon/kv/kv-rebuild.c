/*
 * daemon/kv/kv-rebuild.c - the KV index rebuilt from the lenders: the extents
 * each value holds (for the ledger's comparison), the values a lender
 * reports after the coordinator restarted, and the namespaces'
 * definitions every node keeps for it.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"

static int kv_val_extents(const struct kv_ns *ns, const struct kv_val *v, uint32_t node,
			  struct ledger_extent **ext, size_t *n, size_t *cap)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t np = kv_places(v, all), i;

	for (i = 0; i < np; i++)
		if (all[i].node == node && ledger_append(ext, n, cap, all[i].arena, all[i].off,
							 all[i].alen, KV_HOLD_ID(ns)) < 0)
			return -ENOMEM;
	return 0;
}

/* Whether ns is still on list (a walk's namespace between its slices). */
static bool kv_ns_listed(struct kv_ns *ns, const struct kv_ns_list *list)
{
	const struct kv_ns *o;

	TAILQ_FOREACH(o, list, entry)
		if (o == ns)
			return true;
	return false;
}

/*
 * The KV extents on a node, for the ledger, appended to *ext about max
 * entries at a time (see poold.h): those of flushed and dropped namespaces
 * not freed yet too, or a pass would take them back into the index, or
 * scrub them, while they are on their way out. A namespace that went
 * between two slices ends its part of the walk; buckets split meanwhile
 * list some values twice.
 */
int kv_extents(struct poold *pd, uint32_t node, struct kv_extents_walk *w, size_t max,
	       struct ledger_extent **ext, size_t *n, size_t *cap)
{
	struct kv_ns_list *lists[2];
	size_t done = 0;

	if (pd->kv == NULL)
		return 0;
	lists[0] = &pd->kv->list;
	lists[1] = &pd->kv->reaping;
	while (w->list < 2 && done < max) {
		struct kv_ns *ns = w->ns;
		struct kv_zombie *z;

		if (ns == NULL || !kv_ns_listed(ns, lists[w->list])) {
			ns = w->ns == NULL ? TAILQ_FIRST(lists[w->list]) : NULL;
			if (ns == NULL) {
				w->list++;
				w->ns = NULL;
				continue;
			}
			w->ns = ns;
			w->bucket = 0;
		}
		for (; w->bucket < ns->nbuckets && done < max; w->bucket++) {
			struct kv_entry *e;

			for (e = ns->buckets[w->bucket]; e != NULL; e = e->hnext, done++) {
				if (e->has_val &&
				    kv_val_extents(ns, &e->val, node, ext, n, cap) < 0)
					return -ENOMEM;
				if (kv_pending(e) != NULL &&
				    kv_val_extents(ns, &kv_pending(e)->val, node, ext, n, cap) < 0)
					return -ENOMEM;
			}
		}
		if (w->bucket < ns->nbuckets)
			break;
		TAILQ_FOREACH(z, &ns->zombies, entry)
			if (kv_val_extents(ns, &z->val, node, ext, n, cap) < 0)
				return -ENOMEM;
		if ((w->ns = TAILQ_NEXT(ns, entry)) == NULL)
			w->list++;
		w->bucket = 0;
	}
	if (w->list == 2) { /* (copies in flight: a few) */
		struct kv_recopy *rk;

		TAILQ_FOREACH(rk, &pd->kv->copying, entry) {
			struct kv_ns *ns = kv_ns_by_id(pd, rk->ns_id);

			if (ns != NULL && rk->to.node == node &&
			    ledger_append(ext, n, cap, rk->to.arena, rk->to.off, rk->to.alen,
					  KV_HOLD_ID(ns)) < 0)
				return -ENOMEM;
		}
		w->list++;
	}
	return w->list > 2 ? 0 : 1;
}

/* What a namespace would be made again with. */
void kv_ns_def(const struct kv_ns *ns, struct kv_ns_spec *ret)
{
	*ret = (struct kv_ns_spec){.name = ns->name,
				   .capacity = ns->capacity,
				   .size_hint = ns->size_hint,
				   .flags = ns->flags & KV_NS_FLAGS,
				   .replicas = ns->replicas,
				   .uid = ns->uid,
				   .gid = ns->gid,
				   .mode = ns->mode,
				   .resp_db = ns->serves_db};
}

/*
 * The namespaces' definitions, which every node keeps for a restarted
 * coordinator: so that a namespace comes back even when it holds no value
 * to be rebuilt from. (A namespace dropped while a node was away and the
 * coordinator restarted before the node came back comes back too.) The
 * names point into the namespaces; free *ret.
 */
int kv_defs(struct poold *pd, struct kv_ns_spec **ret, size_t *ret_n)
{
	struct kv_ns_spec *defs;
	struct kv_ns *ns;
	size_t n = 0;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n++;
	if ((defs = calloc(n ? n : 1, sizeof(*defs))) == NULL)
		return -ENOMEM;
	n = 0;
	/*
	 * Root's RESP databases are made again on use; a RESP user's is kept
	 * with its owner, or a coordinator that came back would rebuild it
	 * from its lenders open to all; a sharded one is kept too, as every
	 * node's endpoint runs commands on it, and one a SWAPDB moved to
	 * another database.
	 */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (!ns->resp_db || ns->uid != 0 || (ns->flags & HOLD_NS_SHARDED) || ns->serves_db)
			kv_ns_def(ns, &defs[n++]);
	*ret = defs;
	*ret_n = n;
	return 0;
}

/*
 * Definitions from a node's record (after this coordinator restarted) or
 * from the coordinator's journal: make the namespaces it lacks (and give
 * one rebuilt from its lenders first the database a SWAPDB moved it to).
 */
void kv_defs_adopt(struct poold *pd, const struct kv_ns_spec *defs, size_t n, const char *from)
{
	size_t i, count = 0, made = 0;
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		count++;
	for (i = 0; i < n && count < KV_MAX_NAMESPACES; i++) {
		const struct kv_ns_spec *d = &defs[i];

		if ((ns = kv_ns_find(pd, d->name)) != NULL && ns->serves_db == 0 && d->resp_db != 0)
			kv_ns_serve(pd, ns, d->resp_db);
		if (ns != NULL || d->name[0] == '\0' || strlen(d->name) > POOL_REGION_NAME_MAX ||
		    d->capacity < (1u << 20) || d->replicas < 1 || d->replicas > KV_MAX_REPLICAS ||
		    d->size_hint > POOL_KV_VALUE_MAX)
			continue;
		if ((ns = kv_ns_new(pd, d->name, d->capacity)) == NULL)
			return;
		ns->flags = d->flags & KV_NS_FLAGS;
		ns->replicas = d->replicas;
		ns->size_hint = d->size_hint;
		ns->uid = d->uid;
		ns->gid = d->gid;
		ns->mode = d->mode & 0777;
		kv_ns_serve(pd, ns, d->resp_db);
		kv_demand_ns(ns);
		count++;
		made++;
		log_info("KV namespace '%s' defined again from %s", ns->name, from);
	}
	if (made > 0) {
		pd->kv->map_gen = 0; /* (a sharded one's part of its capacity, kv-owner.c) */
		pd->kv->defined(pd);
	}
}

/*
 * A committed value a lender holds at the extent at and the index does not
 * know (this coordinator restarted): take it back, with its namespace if
 * need be. The newer version of a key wins. 0, or -errno when it cannot be
 * taken (the caller scrubs it).
 */
int kv_adopt(struct poold *pd, uint32_t node, const struct ledger_extent *at,
	     const struct kv_record *rec)
{
	uint32_t arena = at->arena;
	uint64_t off = at->off, alen = at->len;
	struct lender_pool *lp = region_pool(pd->regions, node, arena);
	const uint8_t *key = rec->key;
	size_t klen = rec->klen;
	struct kv_entry *e;
	struct kv_ns *ns;
	uint32_t owner;
	uint64_t hash;
	bool fresh;

	if (pd->kv == NULL || lp == NULL || klen == 0 || klen > POOL_KV_KEY_MAX || rec->vlen == 0 ||
	    rec->vlen > alen || alen > POOL_KV_VALUE_MAX)
		return -EINVAL;
	ns = kv_ns_find(pd, rec->ns);
	if (ns == NULL) {
		ns =
		    kv_ns_new(pd, rec->ns, rec->ns_capacity ? rec->ns_capacity : UINT64_C(1) << 30);
		if (ns == NULL)
			return -ENOMEM;
		ns->flags = rec->ns_flags & KV_NS_FLAGS;
		if (rec->ns_replicas >= 1 && rec->ns_replicas <= KV_MAX_REPLICAS)
			ns->replicas = rec->ns_replicas;
		if (rec->ns_size_hint != 0 && rec->ns_size_hint <= POOL_KV_VALUE_MAX)
			ns->size_hint = rec->ns_size_hint;
		log_info("KV namespace '%s' rebuilt from its lenders", ns->name);
		events_add(pd, "kv", "namespace '%s' rebuilt from its lenders", ns->name);
	}
	hash = kv_hash(key, klen);
	e = *kv_slot(ns, key, klen, hash);
	if (e != NULL && e->has_val && e->val.version == rec->version && e->val.vlen == rec->vlen &&
	    !e->val.pmem && lp->tier == kv_tier(ns) && 1u + e->val.ncopies < ns->replicas &&
	    !kv_val_on(&e->val, node)) {
		/* Another copy of a replicated value. */
		if (extent_reserve_fine(lp->alloc, off, alen) < 0)
			return -EBUSY;
		if (kv_val_copy_add(pd, &e->val, &(struct kv_place){node, arena, off, alen}) < 0) {
			extent_release(lp->alloc, off, alen);
			return -ENOMEM;
		}
		ns->used += alen;
		return 0;
	}
	if (e != NULL && e->has_val && e->val.version >= rec->version)
		return -EEXIST;
	if (extent_reserve_fine(lp->alloc, off, alen) < 0)
		return -EBUSY;
	fresh = e == NULL || !e->has_val;
	if (e != NULL && e->has_val)
		kv_val_out(pd, ns, e);
	if (e == NULL && (e = kv_entry_new(ns, key, klen, hash)) == NULL) {
		extent_release(lp->alloc, off, alen);
		return -ENOMEM;
	}
	e->val = (struct kv_val){.node = node,
				 .arena = arena,
				 .off = off,
				 .alen = alen,
				 .vlen = rec->vlen,
				 .version = rec->version,
				 .pmem = lp->tier != kv_tier(ns)};
	/* Its writer, as its lender's record names it (else the namespace's owner). */
	owner = kv_val_owner(ns, key, klen, rec->has_owner ? rec->owner : (uint32_t)ns->uid);
	if (kv_owner_charge(pd, &e->val, owner) < 0) {
		e->has_val = false;
		if (kv_entry_unused(e))
			kv_entry_drop(ns, e);
		extent_release(lp->alloc, off, alen);
		return -ENOMEM;
	}
	e->has_val = true;
	/* References kept while its lender was away stay; after our own restart, unknown. */
	if ((ns->flags & HOLD_NS_DEDUP) && e->refs == 0) {
		e->refs = KV_REFS_UNKNOWN;
		snap_recount_want(pd);
	}
	kv_lru_append(ns, e);
	if (e->val.pmem)
		ns->pmem_used += alen;
	else
		ns->used += alen;
	ns->next_version = MAX(ns->next_version, rec->version);
	if (fresh) { /* a key of its own: no chain is known */
		kv_ev_stored(pd, ns, key, klen, e->val.pmem);
		kv_events_end(pd);
	}
	return 0;
}

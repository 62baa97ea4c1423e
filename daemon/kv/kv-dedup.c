/*
 * daemon/kv/kv-dedup.c - the KV namespaces of snapshot pages: content-keyed
 * values shared by reference (each snapshot's holder region takes one),
 * the shared store's check that a page is what its key says, and the
 * references counted again after a coordinator restart.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/region/region.h"

/*
 * The holder of a request to a dedup namespace takes a reference to a
 * value: counted, and its key recorded with the holder, so that the
 * reference goes when the holder does. A holder records at most as many
 * bytes of keys as it is large (a manifest lists each page in more).
 */
int kv_holder_add(struct poold *pd, struct kv_ns *ns, const uint8_t *key, size_t klen,
		  struct kv_entry *e)
{
	struct region *r = pd->kv->holder;
	size_t need = 1 + klen;
	uint8_t *p;

	if (r->refs_len + need > r->size)
		return -ENOSPC;
	if (r->refs_len + need > r->refs_cap) {
		size_t cap = MAX(r->refs_cap * 2, (size_t)4096);

		while (cap < r->refs_len + need)
			cap *= 2;
		if ((p = realloc(r->refs, cap)) == NULL)
			return -ENOMEM;
		r->refs = p;
		r->refs_cap = cap;
	}
	r->refs[r->refs_len] = (uint8_t)klen;
	memcpy(r->refs + r->refs_len + 1, key, klen);
	r->refs_len += need;
	r->refs_ns = ns->id;
	if (e != NULL && e->refs != KV_REFS_UNKNOWN)
		e->refs++;
	return 0;
}

/* A region goes: the references it holds go with it, and values nobody else holds. */
void kv_holder_drop(struct poold *pd, struct region *r)
{
	struct kv_ns *ns = pd->kv != NULL && !pd->stopping ? kv_ns_by_id(pd, r->refs_ns) : NULL;
	size_t off = 0;

	while (ns != NULL && off < r->refs_len) {
		const uint8_t *key = r->refs + off + 1;
		size_t klen = r->refs[off];
		struct kv_entry *e = *kv_slot(ns, key, klen, kv_hash(key, klen));

		if (e != NULL && e->refs != KV_REFS_UNKNOWN && e->refs > 0 && --e->refs == 0)
			kv_entry_clear(pd, ns, e);
		off += 1 + klen;
	}
	if (ns != NULL && r->refs_len > 0)
		region_account(pd);
	free(r->refs);
	r->refs = NULL;
	r->refs_len = r->refs_cap = 0;
}

/*
 * A put to a dedup namespace of a key it has: the key names the content,
 * so the value is there already and the writer's holder only takes a
 * reference (-EEXIST: nothing to write). While another writer still
 * writes the same content, -EAGAIN: try again once that one commits.
 * Whether it answered the key (else the put goes on as any other).
 */
bool kv_dedup_reserve(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, uid_t uid,
		      int *ret_status)
{
	int rc;

	if (e->has_val && kv_val_usable(pd, &e->val)) {
		rc = kv_holder_add(pd, ns, kv_entry_key(e), e->klen, e);
		*ret_status = rc < 0 ? rc : -EEXIST;
		return true;
	}
	/*
	 * In the shared store, another uid that reserved a key cannot hold it
	 * against the others: past KV_SHARED_HOLD_MS the reservation gives way
	 * (an honest put commits within milliseconds).
	 */
	if (kv_pending(e) != NULL && (ns->flags & HOLD_NS_SHARED) &&
	    kv_pending(e)->val.owner != (uint32_t)uid &&
	    units_now_ms() - kv_pending(e)->reserved_at > KV_SHARED_HOLD_MS)
		return false;
	if (kv_pending(e) != NULL) {
		*ret_status = -EAGAIN;
		return true;
	}
	return false;
}

/*
 * The shared store's values may be published only if their bytes are what
 * their key says (page_key_shared()): the store lives on this node (the
 * coordinator's), so poold hashes them where they lie before any other put
 * can find them. -EBADMSG when they are not.
 */
int kv_verify(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e, uid_t uid)
{
	static struct log_limit said;
	const struct kv_val *v = &kv_pending(e)->val;
	uint8_t want[PAGE_KEY_LEN];
	int rc;

	if (v->node != pd->node_id || v->arena >= pd->narenas || e->klen != PAGE_KEY_LEN)
		return -EBADMSG;
	rc = page_key_shared((const uint8_t *)pd->arenas[v->arena].base + v->off, v->vlen, want);
	if (rc == 0 && memcmp(want, kv_entry_key(e), PAGE_KEY_LEN) != 0) {
		log_warnx_limited(&said, 10000,
				  "KV '%s': uid %u wrote a value that is not its "
				  "key's: dropped",
				  ns->name, (unsigned)uid);
		rc = -EBADMSG;
	}
	return rc;
}

static void kv_recount_begin(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	(void)pd;
	(void)ns;
	(void)arg;
	if (e->refs == KV_REFS_UNKNOWN) {
		e->refs = 0;
		e->recount = true;
	}
}

static void kv_recount_end(struct poold *pd, struct kv_ns *ns, struct kv_entry *e, void *arg)
{
	if (!e->recount)
		return;
	e->recount = false;
	if (e->refs == 0) {
		kv_entry_clear(pd, ns, e);
		(*(uint64_t *)arg)++;
	}
}

/*
 * After a restart of this coordinator, the references of a dedup
 * namespace are not known (KV_REFS_UNKNOWN: never freed) and the regions
 * that held them hold nothing. An admin's client reads each holder (a
 * snapshot manifest) and tells its keys again (kv_holder_add(), "adopt" on
 * the wire, then "adopted" for a region rebuilt after the restart). Then
 * this counts every unknown value's references from all holders and frees
 * the values nobody holds, *ret_freed of them; -EBUSY while a rebuilt
 * snapshot manifest (a region "snap/...") has not been adopted, since its
 * pages would be freed under it.
 */
int kv_recount(struct poold *pd, struct kv_ns *ns, uint64_t *ret_freed, char *err, size_t errlen)
{
	struct region *r;
	uint64_t count = 0;

	TAILQ_FOREACH(r, &pd->regions->list, entry)
		if (r->refs_unknown && strncmp(r->name, "snap/", 5) == 0) {
			snprintf(err, errlen, "snapshot manifest '%s' is not adopted yet", r->name);
			return -EBUSY;
		}
	kv_foreach_ns(pd, ns, kv_recount_begin, NULL);
	TAILQ_FOREACH(r, &pd->regions->list, entry) {
		size_t off = 0;

		while (r->refs_ns == ns->id && off < r->refs_len) {
			const uint8_t *key = r->refs + off + 1;
			size_t klen = r->refs[off];
			struct kv_entry *e = *kv_slot(ns, key, klen, kv_hash(key, klen));

			if (e != NULL && e->recount)
				e->refs++;
			off += 1 + klen;
		}
	}
	kv_foreach_ns(pd, ns, kv_recount_end, &count);
	region_account(pd);
	log_info("KV namespace '%s': references counted again, %llu value(s) nobody holds freed",
		 ns->name, (unsigned long long)count);
	*ret_freed = count;
	return 0;
}

/*
 * The snapshot page stores (libpool/snap.h): dedup namespaces that never
 * evict, one in DRAM, one in the pmem tier. Made at the coordinator's
 * start; the persistent one may come back from its lenders instead.
 */
int kv_snap_open(struct poold *pd)
{
	static const struct {
		const char *name;
		uint32_t flags;
	} stores[] = {
	    {"snap.pages", HOLD_NS_DRAM_ONLY},
	    {"snap.ppages", HOLD_NS_PERSISTENT},
	    /* dedup across uids, checked: on this node, where poold can hash each value */
	    {"snap.shared", HOLD_NS_DRAM_ONLY | HOLD_NS_SHARED},
	};
	struct kv_ns *ns;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(stores); i++) {
		if (kv_ns_find(pd, stores[i].name) != NULL)
			continue;
		ns = kv_ns_new(pd, stores[i].name, (uint64_t)pd->conf->snap_capacity);
		if (ns == NULL)
			return -ENOMEM;
		ns->flags = stores[i].flags | HOLD_NS_NO_EVICT | HOLD_NS_DEDUP;
		if (ns->flags & HOLD_NS_SHARED)
			ns->local_node = pd->node_id;
	}
	return 0;
}

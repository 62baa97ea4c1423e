/*
 * daemon/kv/kv-tell.c - what the KV index sends to nodes, and how its
 * namespaces' definitions travel: to every node, which keeps them for a
 * restarted coordinator, back from a node as it registers, and in the
 * coordinator's journal (as the wire's KvNamespace); and the copies
 * between a lender's tiers kv-tier.c asks for.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/member/member.h"

/* HOLD_NS_* of a namespace's tier and eviction as the wire names them; -EINVAL for others. */
int kv_ns_flags_of(const char *tier, const char *evict, uint32_t *ret)
{
	uint32_t flags = 0;

	if (tier != NULL && strcmp(tier, "dram") == 0)
		flags |= HOLD_NS_DRAM_ONLY;
	else if (tier != NULL && strcmp(tier, "pmem") == 0)
		flags |= HOLD_NS_PERSISTENT;
	else if (tier != NULL && strcmp(tier, "dram+pmem") != 0)
		return -EINVAL;
	if (evict != NULL && strcmp(evict, "none") == 0)
		flags |= HOLD_NS_NO_EVICT;
	else if (evict != NULL && strcmp(evict, "lru") != 0)
		return -EINVAL;
	*ret = flags;
	return 0;
}

/* m points into d. */
void kv_def_msg(const struct kv_ns_spec *d, Pool__KvNamespace *m)
{
	pool__kv_namespace__init(m);
	m->name = (char *)d->name;
	m->capacity = d->capacity;
	m->tier = (char *)kv_tier_name(d->flags);
	m->has_replicas = m->has_size_hint = m->has_dedup = 1;
	m->replicas = d->replicas;
	m->size_hint = d->size_hint;
	m->evict = (char *)(d->flags & HOLD_NS_NO_EVICT ? "none" : "lru");
	m->dedup = (d->flags & HOLD_NS_DEDUP) != 0;
	m->has_sharded = (d->flags & HOLD_NS_SHARDED) != 0;
	m->sharded = m->has_sharded;
	m->has_uid = m->has_gid = m->has_mode = 1;
	m->uid = d->uid;
	m->gid = d->gid;
	m->mode = d->mode;
	m->has_resp_db = d->resp_db != 0;
	m->resp_db = d->resp_db - m->has_resp_db;
}

/*
 * A definition as a node or the journal kept it (older ones lack fields:
 * one copy, no hint, open to all as kv_ns_new() makes it); d points into m.
 */
static void kv_def_of_msg(const Pool__KvNamespace *m, struct kv_ns_spec *d)
{
	uint32_t evict;

	*d = (struct kv_ns_spec){.name = m->name,
				 .capacity = m->capacity,
				 .size_hint = m->has_size_hint ? m->size_hint : 0,
				 .replicas = m->has_replicas ? m->replicas : 1,
				 .mode = 0666};
	if (kv_ns_flags_of(m->tier, NULL, &d->flags) < 0) /* a newer tier: the default */
		d->flags = 0;
	if (kv_ns_flags_of(NULL, m->evict, &evict) == 0) /* a newer policy: LRU */
		d->flags |= evict;
	if (m->has_dedup && m->dedup)
		d->flags |= HOLD_NS_DEDUP;
	if (m->has_sharded && m->sharded)
		d->flags |= HOLD_NS_SHARDED;
	if (m->has_mode) {
		d->uid = m->uid;
		d->gid = m->gid;
		d->mode = m->mode & 0777;
	}
	if (m->has_resp_db && m->resp_db < KV_RESP_DBS)
		d->resp_db = m->resp_db + 1;
}

/*
 * Say which RESP database ns serves: db1 is 1 + its number since a
 * SWAPDB, 0 for the one its name says (kv-db.c reads them). The
 * namespaces that serve another are listed, so that a database's
 * namespace is found without a walk of all of them.
 */
void kv_ns_serve(struct poold *pd, struct kv_ns *ns, unsigned db1)
{
	struct kv_space *kv = pd->kv;
	unsigned i;

	if (db1 > KV_RESP_DBS)
		db1 = 0;
	if ((ns->serves_db != 0) != (db1 != 0)) {
		if (db1 != 0) {
			if (kv->nswapped == KV_MAX_NAMESPACES)
				return; /* (never: as many as namespaces can be) */
			kv->swapped[kv->nswapped++] = ns;
		} else {
			for (i = 0; i < kv->nswapped && kv->swapped[i] != ns; i++)
				;
			if (i < kv->nswapped)
				kv->swapped[i] = kv->swapped[--kv->nswapped];
		}
	}
	ns->serves_db = (uint8_t)db1;
}

/*
 * The namespaces' definitions as a register reply, a KvNsReply and the
 * coordinator's journal carry them: an array of n, in one allocation
 * (free it), pointing into the namespaces. NULL: out of memory.
 */
Pool__KvNamespace **kv_defs_msg(struct poold *pd, size_t *ret_n)
{
	Pool__KvNamespace **mp, *m;
	struct kv_ns_spec *defs;
	size_t n, i;

	if (kv_defs(pd, &defs, &n) < 0)
		return NULL;
	mp = calloc(1, (n ? n : 1) * (sizeof(*mp) + sizeof(*m)));
	if (mp != NULL) {
		m = (Pool__KvNamespace *)(mp + (n ? n : 1));
		for (i = 0; i < n; i++) {
			kv_def_msg(&defs[i], &m[i]);
			mp[i] = &m[i];
		}
		*ret_n = n;
	}
	free(defs);
	return mp;
}

/* from NULL: a node follows the coordinator's definitions (kv_owner_defs()), else adopts them. */
void kv_defs_adopt_msg(struct poold *pd, Pool__KvNamespace *const *defs, size_t n, const char *from)
{
	struct kv_ns_spec *d = calloc(n ? n : 1, sizeof(*d));
	size_t i;

	if (d == NULL)
		return; /* the node tells them again when it registers again */
	for (i = 0; i < n; i++)
		kv_def_of_msg(defs[i], &d[i]);
	if (from == NULL)
		kv_owner_defs(pd, d, n);
	else
		kv_defs_adopt(pd, d, n, from);
	free(d);
}

/*
 * Tell node the definitions defs[from..n), in kv-ns-defs chunks of at most
 * peer.chunk_size bytes numbered from seq, the last without more: the node
 * keeps the set its chunks make once the last is in.
 */
void kv_defs_tell(struct poold *pd, uint32_t node, Pool__KvNamespace **defs, size_t n, size_t from,
		  uint32_t seq)
{
	size_t max = (size_t)pd->conf->peer_chunk_size;

	do {
		Pool__KvNsReply chunk = POOL__KV_NS_REPLY__INIT;

		chunk.namespaces = defs + from;
		chunk.n_namespaces = wire_fit((void *const *)(defs + from), n - from, max);
		from += chunk.n_namespaces;
		chunk.has_seq = chunk.has_more = 1;
		chunk.seq = seq++;
		chunk.more = from < n;
		coord_notice(pd, node, WIRE_KV_NS_DEFS, &chunk.base);
	} while (from < n);
}

/* Tell every node the namespaces as they are now. */
void kv_defs_send(struct poold *pd)
{
	Pool__KvNamespace **defs;
	struct member *mem;
	size_t n;

	if ((defs = kv_defs_msg(pd, &n)) == NULL)
		return; /* they learn them when they register again */
	TAILQ_FOREACH(mem, &pd->members, entry)
		if (mem->info->id != pd->node_id && mem->state == MEMBER_UP)
			kv_defs_tell(pd, mem->info->id, defs, n, 0, 0);
	free(defs);
}

/*
 * Ask node to copy len bytes from one of its arenas to another (a value
 * moving between its tiers); done(pd, arg, rc) once it answered. 0, or
 * -errno when it cannot be asked.
 */
int kv_send_copy(struct poold *pd, uint32_t node, uint32_t src_arena, uint64_t src_off,
		 uint32_t dst_arena, uint64_t dst_off, uint64_t len, coord_done_cb done, void *arg)
{
	Pool__Copy cp = POOL__COPY__INIT;

	cp.src_arena = src_arena;
	cp.src_off = src_off;
	cp.dst_arena = dst_arena;
	cp.dst_off = dst_off;
	cp.len = len;
	return coord_request(pd, node, WIRE_COPY, &cp.base, done, arg);
}

/*
 * daemon/kv/kv-local.c - the KV index for servers inside poold (the RESP
 * endpoint): the same operations as the wire's, called directly with C
 * arguments, plus what a Redis command needs beyond them (reads in place,
 * overwrites in place, expiry, scans, flushes).
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"

/*
 * One key, for servers inside poold (the RESP endpoint): kv_key_op() for
 * session of this node acting as uid, after the namespace's mode allowed
 * it; arg the size (reserve) or version (commit, abort, release). Returns
 * the key's status; on 0 *ret tells where the value lives (when the
 * operation names one).
 */
int kv_local_op(struct poold *pd, uint64_t session, uid_t uid, const char *nsname, enum kv_op op,
		const uint8_t *key, size_t klen, uint64_t arg, struct kv_where *ret)
{
	struct kv_caller who = {pd->node_id, session, uid};
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_place all[KV_MAX_REPLICAS];
	struct kv_result res;
	size_t first, n;

	if (ns == NULL)
		return -ENOENT;
	if (!mode_allows(uid, (gid_t)-1, ns->uid, ns->gid, ns->mode, kv_key_access(op)))
		return -EACCES;
	kv_key_op(pd, ns, &who, op, key, klen, arg, &res);
	if (res.status == 0 && ret != NULL && res.places != KV_PLACES_NONE) {
		/* the place kv_loc() would name first */
		n = kv_places(&res.val, all);
		first =
		    kv_place_first(kv_places_reader(res.places) ? pd : NULL, all, n, pd->node_id);
		*ret = (struct kv_where){all[first].node, all[first].arena, all[first].off,
					 res.val.vlen, res.val.version};
	}
	if (op == KV_RESERVE || op == KV_REMOVE)
		region_account(pd);
	return res.status;
}

/* Whether a RESP database is uid's: root's are all; another uid's, those it owns (0600). */
static bool kv_local_owns(const struct kv_ns *ns, uid_t uid)
{
	return uid == 0 || (ns->uid == uid && (ns->mode & 0600) == 0600);
}

/*
 * Make sure a namespace exists (the RESP endpoint's databases); 0 or
 * -errno. Root's are open to all, as poold's own; another uid's are its
 * alone (mode 0600), and -EACCES when one of that name is someone else's.
 * A new one keeps its values on this node (here) or spreads them over the
 * lenders as any namespace does.
 */
int kv_local_ensure(struct poold *pd, const char *nsname, uint64_t capacity, uid_t uid, bool here)
{
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return -ENOTSUP;
	if ((ns = kv_ns_find(pd, nsname)) != NULL) {
		if (!kv_local_owns(ns, uid))
			return -EACCES;
		ns->resp_db = true; /* also one rebuilt from its lenders after a restart */
		return 0;
	}
	ns = kv_ns_new(pd, nsname, capacity);
	if (ns == NULL)
		return -ENOMEM;
	ns->resp_db = true;
	ns->local_node = here ? pd->node_id : 0;
	if (uid != 0) {
		ns->uid = uid;
		ns->gid = (gid_t)-1;
		ns->mode = 0600;
		/*
		 * Its owner is part of its definition: journaled and told to every
		 * node, so that a coordinator that comes back (or another that
		 * leads) gives it back to its uid alone, not open to all as a
		 * namespace rebuilt from its lenders without one would be.
		 */
		pd->kv->defined(pd);
		kv_defs_send(pd);
	}
	return 0;
}

/*
 * Reserve a place for a key's value as kv_local_op(KV_RESERVE) does, on this
 * node whatever the namespace's placement when here (a RESP transaction's
 * writes, which must be readable at once).
 */
int kv_local_reserve(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		     const uint8_t *key, size_t klen, uint64_t len, bool here, struct kv_where *ret)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	uint32_t placed;
	int rc;

	if (ns == NULL || !here)
		return kv_local_op(pd, session, uid, nsname, KV_RESERVE, key, klen, len, ret);
	placed = ns->local_node;
	ns->local_node = pd->node_id;
	rc = kv_local_op(pd, session, uid, nsname, KV_RESERVE, key, klen, len, ret);
	ns->local_node = placed;
	return rc;
}

/*
 * Whether e is one of ns's keys here: in a sharded namespace, of a shard
 * this poold serves now, not a backup copy of another owner's or a key of
 * a shard on its way in or out (each owner counts its own, and a key is
 * counted once).
 */
static bool kv_local_served(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e)
{
	return !(ns->flags & HOLD_NS_SHARDED) ||
	       kv_owner_serves(pd, ns, kv_entry_key(e), e->klen) == 0;
}

/* Keys of a namespace from a cursor on, for SCAN: up to max, *ret_next 0 at the end. */
size_t kv_local_scan(struct poold *pd, const char *nsname, uint64_t cursor, size_t max,
		     void (*cb)(void *arg, const uint8_t *key, size_t klen), void *arg,
		     uint64_t *ret_next)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	size_t n = 0, b;

	*ret_next = 0;
	if (ns == NULL)
		return 0;
	for (b = cursor; b < ns->nbuckets; b++) {
		struct kv_entry *e;

		if (n >= max) {
			*ret_next = b;
			break;
		}
		for (e = ns->buckets[b]; e != NULL; e = e->hnext)
			if (e->has_val && kv_local_served(pd, ns, e)) {
				cb(arg, kv_entry_key(e), e->klen);
				n++;
			}
	}
	return n;
}

/*
 * A key of a namespace for RANDOMKEY: the first of the bucket rnd picks
 * that has one, or of the next that has, round the table; to cb. false
 * when it has none.
 */
bool kv_local_random(struct poold *pd, const char *nsname, uint64_t rnd,
		     void (*cb)(void *arg, const uint8_t *key, size_t klen), void *arg)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;
	size_t i;

	for (i = 0; ns != NULL && i < ns->nbuckets; i++)
		for (e = ns->buckets[(rnd + i) % ns->nbuckets]; e != NULL; e = e->hnext)
			if (e->has_val && kv_local_served(pd, ns, e)) {
				cb(arg, kv_entry_key(e), e->klen);
				return true;
			}
	return false;
}

/*
 * The entry of a key with a live value in a RESP database of uid's
 * (kv_local_owns()), its namespace in *ret_ns; or NULL.
 */
static struct kv_entry *kv_local_key(struct poold *pd, const char *nsname, uid_t uid,
				     const uint8_t *key, size_t klen, struct kv_ns **ret_ns)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;

	if (ns == NULL || !kv_local_owns(ns, uid) || klen > POOL_KV_KEY_MAX)
		return NULL;
	e = kv_live(pd, ns, kv_slot(ns, key, klen, kv_hash(key, klen)));
	*ret_ns = ns;
	return e != NULL && e->has_val ? e : NULL;
}

/*
 * Whether a value of len bytes may take over a place of alen: when it fits
 * and would not waste more than half of it (a place of one grain takes any
 * value up to a grain: the allocator gives nothing smaller).
 */
static bool kv_fits_place(const struct kv_ns *ns, uint64_t len, uint64_t alen)
{
	uint64_t want = kv_alloc_len(ns, len);

	return want <= alen && (alen <= EXTENT_GRAIN_DEFAULT || want > alen / 2);
}

/*
 * Whether uid's value of len bytes may be written over e's, in place
 * (kv_local_overwrite()): nobody reads or moves it, it is one copy in this
 * node's DRAM, it is uid's, and the new value fits its place.
 */
static bool kv_overwritable(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e,
			    uint64_t len, uid_t uid)
{
	return kv_pins(e) == NULL && kv_pending(e) == NULL && !e->moving && !e->recount &&
	       !e->val.pmem && e->val.ncopies == 0 && e->val.node == pd->node_id &&
	       lend_arena(pd, e->val.arena) != NULL &&
	       !(ns->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT)) &&
	       kv_fits_place(ns, len, e->val.alen) &&
	       e->val.owner == kv_val_owner(ns, kv_entry_key(e), e->klen, (uint32_t)uid);
}

/*
 * Bring into the cache what looking up these keys will touch, for a server
 * inside poold about to run a batch of commands (a RESP pipeline): each a
 * chain of dependent loads (bucket, entry and key, value and LRU
 * neighbours) that would otherwise miss one after the other, command after
 * command. Here the misses of the whole batch overlap, one stage at a time.
 */
void kv_local_prefetch(struct poold *pd, uid_t uid, const char *nsname, const char *const *keys,
		       const size_t *klens, size_t n)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e, **slot[KV_PREFETCH_MAX];
	uint64_t h[KV_PREFETCH_MAX];
	size_t i;

	if (ns == NULL || !kv_local_owns(ns, uid))
		return;
	n = MIN(n, KV_PREFETCH_MAX);
	for (i = 0; i < n; i++) {
		h[i] = kv_hash((const uint8_t *)keys[i], klens[i]);
		slot[i] = &ns->buckets[kv_bucket(ns, (uint32_t)h[i])];
		__builtin_prefetch(slot[i]);
	}
	for (i = 0; i < n; i++)
		if ((e = *slot[i]) != NULL) {
			/* Its key, and its fields up to val's end (an entry is 16-byte aligned). */
			__builtin_prefetch((const uint8_t *)e - kv_key_room(klens[i]));
			__builtin_prefetch(e);
			__builtin_prefetch((const uint8_t *)e + 64);
		}
	for (i = 0; i < n; i++) {
		for (e = *slot[i]; e != NULL && e->hash != (uint32_t)h[i]; e = e->hnext)
			;
		if (e == NULL || !e->has_val || e->val.node != pd->node_id ||
		    lend_arena(pd, e->val.arena) == NULL)
			continue;
		__builtin_prefetch((const char *)lend_arena(pd, e->val.arena)->base + e->val.off);
		if (e->lru.tqe_next != NULL)
			__builtin_prefetch(e->lru.tqe_next);
		__builtin_prefetch(e->lru.tqe_prev);
	}
}

/*
 * A key's value where it lives in this node's DRAM arena, for poold to
 * copy out at once (RESP GET, a client's KV_OP_GET): no pin, as nothing
 * else runs before the copy is done; a hit or a miss, as a lookup. 0,
 * -ENOENT, or -EREMOTE when the value is elsewhere (on another node, in
 * the pmem tier, moving: then the caller looks it up with a pin), or
 * -EMSGSIZE, neither a hit nor a miss, when it is longer than max.
 * ret_version may be NULL.
 */
int kv_read_here(struct poold *pd, struct kv_ns *ns, const uint8_t *key, size_t klen, size_t max,
		 const void **ret_data, size_t *ret_len, uint64_t *ret_version)
{
	struct kv_entry *e;

	if (klen > POOL_KV_KEY_MAX)
		return -ENOENT;
	e = kv_live(pd, ns, kv_slot(ns, key, klen, kv_hash(key, klen)));
	if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val)) {
		ns->misses++;
		return -ENOENT;
	}
	if (e->val.node != pd->node_id || lend_arena(pd, e->val.arena) == NULL || e->val.pmem ||
	    e->moving)
		return -EREMOTE;
	if (e->val.vlen > max)
		return -EMSGSIZE;
	ns->hits++;
	kv_lru_touch(ns, e);
	*ret_data = (const char *)lend_arena(pd, e->val.arena)->base + e->val.off;
	*ret_len = e->val.vlen;
	if (ret_version != NULL)
		*ret_version = e->val.version;
	return 0;
}

/* kv_read_here() in a RESP database of uid's (kv_local_owns()). */
int kv_local_read(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		  const void **ret_data, size_t *ret_len)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	if (ns == NULL || !kv_local_owns(ns, uid))
		return -ENOENT;
	return kv_read_here(pd, ns, key, klen, SIZE_MAX, ret_data, ret_len, NULL);
}

/*
 * Where a key's live value is (its first place) and its version, without a
 * pin: for the RESP endpoint, which fetches values of other nodes before a
 * command runs. 0 or -ENOENT.
 */
int kv_local_where(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		   struct kv_where *ret)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL || !kv_val_usable(pd, &e->val))
		return -ENOENT;
	*ret =
	    (struct kv_where){e->val.node, e->val.arena, e->val.off, e->val.vlen, e->val.version};
	return 0;
}

/*
 * Pin the value kv_local_read() just gave, for a server inside poold that
 * sends it later, by reference (a large RESP GET): nothing overwrites it in
 * place or frees it until kv_local_op(KV_RELEASE) of the version returned,
 * or the session's end. 0 when it cannot be pinned.
 */
uint64_t kv_local_pin(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
		      const uint8_t *key, size_t klen)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL || kv_pin(ns, e, pd->node_id, session) < 0)
		return 0;
	return e->val.version;
}

/*
 * Overwrite a key's value in place with a + b (RESP SET of a key that has
 * one): when nobody reads or writes it (no pins, no reservation), it has
 * one copy, in this node's DRAM arena, in an extent the new value fits
 * (kv_fits_place()). A new version, as a commit would make; the lender's
 * record follows when the length changed (the record names the key, its
 * place and length). expire as for kv_local_expire(), or KV_EXPIRE_KEEP.
 * 0, or -EAGAIN when it cannot be done in place (the caller reserves and
 * commits instead).
 */
int kv_local_overwrite(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		       size_t klen, const void *a, size_t alen, const void *b, size_t blen,
		       int64_t expire)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);
	char *dst;

	if (e == NULL || !kv_overwritable(pd, ns, e, alen + blen, uid))
		return -EAGAIN;
	/* Room for its expiry first: then nothing fails once the bytes are written. */
	if (expire != KV_EXPIRE_KEEP && expire != 0 && kv_extra(e) == NULL)
		return -EAGAIN;
	dst = (char *)lend_arena(pd, e->val.arena)->base + e->val.off;
	if (alen > 0)
		memmove(dst, a, alen);
	if (blen > 0)
		memmove(dst + alen, b, blen);
	e->val.version = ++ns->next_version;
	e->edited = false;
	kv_lru_touch(ns, e);
	ns->puts++;
	if (expire != KV_EXPIRE_KEEP)
		(void)kv_set_expire(ns, e, expire); /* one already past: gone at the next access */
	if (e->val.vlen != alen + blen) {
		e->val.vlen = alen + blen;
		kv_tell(pd, ns, e);
	}
	return 0;
}

/*
 * Whether a new value of len bytes for key would be placed in this node's
 * own DRAM, in one copy, where poold can write it itself (resp-place.c
 * reads a SET's value straight into its reservation): a namespace uid may
 * use, neither dedup, persistent nor shared, with one replica, with room
 * for it without evicting or spilling anything, whose placement picks
 * this node; and no value of the key that the new one could be written
 * over in place instead (then one copy over it costs less than a new
 * place and the old one's scrub).
 */
bool kv_local_lands_here(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
			 size_t klen, uint64_t len)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);
	struct lender_pool *lp;

	if (e != NULL && kv_overwritable(pd, ns, e, len, uid))
		return false;
	if (ns == NULL && (ns = pd->kv ? kv_ns_find(pd, nsname) : NULL) == NULL)
		return false;
	if (!kv_local_owns(ns, uid) || ns->replicas != 1 || klen > POOL_KV_KEY_MAX ||
	    len > POOL_KV_VALUE_MAX ||
	    (ns->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT | HOLD_NS_SHARED | HOLD_NS_SHARDED)))
		return false;
	/* Reserved before its bytes come, it must fit without pushing other values out. */
	if (ns->used + kv_alloc_len(ns, len) > kv_ns_room(ns) ||
	    quota_over(pd, kv_val_owner(ns, key, klen, (uint32_t)uid), kv_alloc_len(ns, len)))
		return false;
	lp = kv_pick(pd, ns, kv_hash(key, klen), kv_alloc_len(ns, len), NULL, 0);
	return lp != NULL && lp->node == pd->node_id && lp->arena < pd->narenas &&
	       pd->arenas[lp->arena].tier == TIER_DRAM;
}

/*
 * Commit this session's reservation version of key if it is still the
 * key's next value; -ESTALE, with nothing changed, when a later writer or
 * a flush took it over meanwhile (the writer may store its bytes again,
 * then abort the reservation, which lives on until then).
 */
int kv_local_commit_own(struct poold *pd, uint64_t session, uid_t uid, const char *nsname,
			const uint8_t *key, size_t klen, uint64_t version)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_entry *e;

	if (ns == NULL || klen > POOL_KV_KEY_MAX)
		return -ESTALE;
	e = *kv_slot(ns, key, klen, kv_hash(key, klen));
	if (e == NULL || kv_pending(e) == NULL || kv_pending(e)->val.version != version ||
	    kv_pending(e)->node != pd->node_id || kv_pending(e)->session != session)
		return -ESTALE;
	return kv_local_op(pd, session, uid, nsname, KV_COMMIT, key, klen, version, NULL);
}

/*
 * Whether a key's value was made by an edit of the last one (RESP APPEND,
 * SETRANGE, SETBIT: Redis keeps those raw, OBJECT ENCODING says so); with
 * set, mark it so (any new value clears the mark). A hint only: a value
 * that moves to another node, or is rebuilt, is not marked there.
 */
bool kv_local_edited(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		     size_t klen, bool set)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e != NULL && set)
		e->edited = true;
	return e != NULL && e->edited;
}

/*
 * A key's expiry (RESP TTL): 0 with *ret_at in Unix ms, 0 when it has
 * none; -ENOENT when the key has no value.
 */
int kv_local_ttl(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key, size_t klen,
		 int64_t *ret_at)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);

	if (e == NULL)
		return -ENOENT;
	*ret_at = kv_expire_at(e);
	return 0;
}

/*
 * Give a key's value an expiry in Unix ms (RESP EXPIRE), or take it away
 * (0); a time already past removes the value. -ENOENT when there is none.
 */
int kv_local_expire(struct poold *pd, uid_t uid, const char *nsname, const uint8_t *key,
		    size_t klen, int64_t at)
{
	struct kv_ns *ns = NULL;
	struct kv_entry *e = kv_local_key(pd, nsname, uid, key, klen, &ns);
	int rc;

	if (e == NULL)
		return -ENOENT;
	rc = kv_set_expire(ns, e, at);
	if (rc < 0)
		return rc;
	if (at != 0 && at <= kv_unix_ms()) {
		kv_expire_now(pd, ns, e);
		region_account(pd);
	}
	return 0;
}

/* Keys with an expiry in a namespace (INFO keyspace), or 0. */
uint64_t kv_local_volatile(struct poold *pd, const char *nsname)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	return ns != NULL ? ns->nvolatile : 0;
}

/* Entries of a namespace with a value (DBSIZE), or 0. */
uint64_t kv_local_size(struct poold *pd, const char *nsname)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;
	struct kv_lru *lists[4];
	struct kv_entry *e;
	uint64_t n = 0;
	size_t k;

	if (ns == NULL)
		return 0;
	lists[0] = &ns->lru;
	lists[1] = &ns->plru;
	lists[2] = &ns->soft;
	lists[3] = &ns->hard;
	for (k = 0; k < ARRAY_SIZE(lists); k++)
		TAILQ_FOREACH(e, lists[k], lru)
			n += kv_local_served(pd, ns, e);
	return n;
}

/* Flush a namespace (FLUSHDB) if it is uid's (kv_local_owns()). */
void kv_local_flush(struct poold *pd, const char *nsname, uid_t uid)
{
	struct kv_ns *ns = pd->kv ? kv_ns_find(pd, nsname) : NULL;

	if (ns != NULL && kv_local_owns(ns, uid))
		kv_ns_flush(pd, ns);
}

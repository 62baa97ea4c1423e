/*
 * daemon/kv/kv-serve.c - the KV requests of the control socket and the peer
 * links: operations on keys (lookup, reserve, commit, abort, release,
 * remove, match...) answered with locations, and on namespaces (create,
 * drop, flush, stats), checked against each namespace's owner and mode.
 * What the index sends to nodes is kv-tell.c's.
 */
#include "config.h"

#include "daemon/kv/kv-int.h"
#include "daemon/control/control.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"
#include "daemon/xfer/xfer.h"

/* Storage for the places of one reply location. */
struct kv_locplaces {
	Pool__KvPlace place[KV_MAX_REPLICAS];
	Pool__KvPlace *ptr[KV_MAX_REPLICAS];
};

/*
 * Where a value is. For a writer (pd NULL), every place, its own first:
 * the writer fills each. For a reader, the place to read first (on the
 * reader's node, else on a lender that is up) and the other live places
 * to fall back on. pl holds the places (NULL: none but the first).
 */
static void kv_loc(struct poold *pd, Pool__KvLocation *loc, struct kv_locplaces *pl, int status,
		   const struct kv_val *v, uint32_t near)
{
	struct kv_place all[KV_MAX_REPLICAS], first;
	size_t n, i, best;

	pool__kv_location__init(loc);
	loc->status = status;
	if (status != 0 || v == NULL)
		return;
	n = kv_places(v, all);
	best = kv_place_first(pd, all, n, near);
	first = all[best];
	all[best] = all[0];
	all[0] = first;
	loc->has_node = loc->has_arena = loc->has_off = loc->has_len = loc->has_version = 1;
	loc->node = first.node;
	loc->arena = first.arena;
	loc->off = first.off;
	loc->len = v->vlen;
	loc->version = v->version;
	for (i = 1; pl != NULL && i < n; i++) {
		Pool__KvPlace *p = &pl->place[loc->n_copies];

		if (pd != NULL && !kv_node_up(pd, all[i].node))
			continue;
		pool__kv_place__init(p);
		p->node = all[i].node;
		p->arena = all[i].arena;
		p->off = all[i].off;
		pl->ptr[loc->n_copies++] = p;
	}
	loc->copies = pl != NULL ? pl->ptr : NULL;
}

/* The core's operation of a wire operation on keys: 0 with *ret, or -1 for one that is not. */
static int kv_op_of(Pool__KvOp wire, enum kv_op *ret)
{
	switch (wire) {
	case POOL__KV_OP__KV_OP_LOOKUP:
		*ret = KV_LOOKUP;
		return 0;
	case POOL__KV_OP__KV_OP_EXISTS:
		*ret = KV_EXISTS;
		return 0;
	case POOL__KV_OP__KV_OP_RESERVE:
		*ret = KV_RESERVE;
		return 0;
	case POOL__KV_OP__KV_OP_COMMIT:
		*ret = KV_COMMIT;
		return 0;
	case POOL__KV_OP__KV_OP_ABORT:
		*ret = KV_ABORT;
		return 0;
	case POOL__KV_OP__KV_OP_RELEASE:
		*ret = KV_RELEASE;
		return 0;
	case POOL__KV_OP__KV_OP_REMOVE:
		*ret = KV_REMOVE;
		return 0;
	default:
		return -1;
	}
}

_Static_assert((int)POOL__KV_RETAIN__KV_RETAIN_NONE == KV_RETAIN_NONE &&
		   (int)POOL__KV_RETAIN__KV_RETAIN_SOFT == KV_RETAIN_SOFT &&
		   (int)POOL__KV_RETAIN__KV_RETAIN_HARD == KV_RETAIN_HARD,
	       "KvRetain is enum kv_retain on the wire");

/*
 * Pin key i of a commit or a put as it asks (kr->retain), once its value,
 * of version, is committed: not a later writer's that superseded it.
 */
static void kv_retain_asked(struct kv_ns *ns, const Pool__KvRequest *kr, size_t i, uint64_t version)
{
	const ProtobufCBinaryData *k = &kr->keys[i];
	struct kv_entry *e;

	if (!kr->has_retain)
		return;
	e = *kv_slot(ns, k->data, k->len, kv_hash(k->data, k->len));
	if (e != NULL && e->has_val && e->val.version == version)
		(void)kv_retain_set(ns, e, (enum kv_retain)kr->retain,
				    kr->retain_ms > 0 ? kv_unix_ms() + (int64_t)kr->retain_ms : 0);
}

/* Key i of a request, through kv_key_op(), its result as a location for the reply. */
static int kv_one(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr, size_t i,
		  Pool__KvLocation *loc, struct kv_locplaces *pl)
{
	struct kv_caller who = {q->node, q->session, q->uid};
	struct kv_result res;
	enum kv_op op;
	uint64_t arg = 0;
	int n;

	if (kv_op_of(kr->op, &op) < 0) {
		kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
		return 0;
	}
	if (op == KV_RESERVE)
		arg = kr->sizes[i];
	else if (op == KV_COMMIT || op == KV_ABORT || op == KV_RELEASE)
		arg = kr->versions[i];
	n = kv_key_op(q->pd, ns, &who, op, kr->keys[i].data, kr->keys[i].len, arg, &res);
	if (op == KV_COMMIT && res.status == 0)
		kv_retain_asked(ns, kr, i, arg);
	if (res.places == KV_PLACES_NONE)
		kv_loc(NULL, loc, NULL, res.status, NULL, 0);
	else
		kv_loc(kv_places_reader(res.places) ? q->pd : NULL, loc,
		       res.places == KV_PLACES_READ || res.places == KV_PLACES_WRITE ? pl : NULL, 0,
		       &res.val, q->node);
	return n;
}

/*
 * Reply with the locations. access (4 read, 2 write, 0 none) is what the
 * session may now do with their places: its own poold grants it that and
 * carries the transfers (grant.c). No lender's address or key goes to a
 * client.
 */
static int kv_reply(struct req *q, Pool__KvLocation *locs, size_t n, uint64_t count,
		    unsigned access)
{
	Pool__KvReply reply = POOL__KV_REPLY__INIT;
	Pool__KvLocation **lp = calloc(n ? n : 1, sizeof(*lp));
	size_t i;
	int rc;

	if (lp == NULL)
		return req_errorf(q, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		lp[i] = &locs[i];
	reply.locations = lp;
	reply.n_locations = n;
	reply.has_count = 1;
	reply.count = count;
	if (access != 0) {
		reply.has_access = 1;
		reply.access = access;
	}
	rc = req_reply(q, WIRE_KV_REPLY, &reply.base);
	free(lp);
	return rc;
}

/* A reply that waits until the backups of its keys' shards have them (kv-backup.c). */
struct kv_backup_wait {
	struct req *q; /* held */
	Pool__KvLocation *locs;
	size_t n;
	uint64_t count;
};

static void kv_backed(void *arg)
{
	struct kv_backup_wait *w = arg;
	int rc = kv_reply(w->q, w->locs, w->n, w->count, 0);

	req_finish(w->q, rc < 0 ? rc : 0);
	free(w->locs);
	free(w);
}

/*
 * The reply to kr's puts or removals of ns's keys (locs, count): once the
 * backups of their shards have them (REQ_LATER), when ns is a sharded one
 * of 2 replicas, or now.
 */
static int kv_reply_backed(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr,
			   const Pool__KvLocation *locs, uint64_t count)
{
	struct kv_backup_wait *w = NULL;
	size_t i, n = kr->n_keys;

	if ((ns->flags & HOLD_NS_SHARDED) && ns->replicas > 1 && n > 0 &&
	    (w = calloc(1, sizeof(*w))) != NULL && (w->locs = calloc(n, sizeof(*locs))) != NULL &&
	    (w->q = req_hold(q)) != NULL) {
		for (i = 0; i < n; i++) { /* (a put's or removal's: no places to name) */
			w->locs[i] = locs[i];
			w->locs[i].n_copies = 0;
			w->locs[i].copies = NULL;
		}
		w->n = n;
		w->count = count;
		if (kv_backup_send(q->pd, ns, kr->keys, locs, n,
				   kr->op == POOL__KV_OP__KV_OP_REMOVE, kv_backed, w) > 0)
			return REQ_LATER;
		req_finish(w->q, 0); /* (nothing went: the reply goes now) */
	}
	if (w != NULL)
		free(w->locs);
	free(w);
	return kv_reply(q, (Pool__KvLocation *)locs, n, count, 0);
}

/*
 * Whether the caller's session holds a transfer of key to node: a pin of a
 * value with a place there, or its own reservation there.
 */
static bool kv_was_given(struct kv_ns *ns, const struct req *q, const ProtobufCBinaryData *key,
			 uint32_t node)
{
	struct kv_entry *e;
	struct kv_zombie *z;
	struct kv_pin *p;

	if (key->len == 0 || key->len > POOL_KV_KEY_MAX)
		return false;
	e = *kv_slot(ns, key->data, key->len, kv_hash(key->data, key->len));
	if (e != NULL && kv_pending(e) != NULL && kv_pending(e)->node == q->node &&
	    kv_pending(e)->session == q->session && kv_val_on(&kv_pending(e)->val, node))
		return true;
	for (p = e != NULL ? kv_pins(e) : NULL; p != NULL; p = p->next)
		if (p->node == q->node && p->session == q->session && e->has_val &&
		    kv_val_on(&e->val, node))
			return true;
	TAILQ_FOREACH(z, &ns->zombies, entry) /* replaced or spilled while it was read */
		for (p = z->pins; p != NULL; p = p->next)
			if (p->node == q->node && p->session == q->session &&
			    kv_val_on(&z->val, node))
				return true;
	return false;
}

/*
 * Whether the caller may access the namespace's values with the given bits
 * (4 read, 2 write): admins always; the others by its owner, group and mode,
 * as for regions.
 */
static bool kv_ns_allowed(const struct kv_ns *ns, const struct req *q, unsigned want)
{
	return q->admin || req_mode_allows(q, ns->uid, ns->gid, ns->mode, want);
}

/*
 * The access a KV operation needs: lookups (and exists) read, writes and their ends write, the rest
 * none.
 */
static unsigned kv_op_access(Pool__KvOp op)
{
	enum kv_op k;

	if (op == POOL__KV_OP__KV_OP_MATCH || op == POOL__KV_OP__KV_OP_GET)
		return 4;
	if (op == POOL__KV_OP__KV_OP_PUT)
		return 2;
	/* failed (of the caller's own transfers), adopt, recount: checked where they are served */
	return kv_op_of(op, &k) == 0 ? kv_key_access(k) : 0;
}

/*
 * adopt, adopted and recount of a dedup namespace (admins: the handler
 * table says so): a holder's references told again after a restart of
 * this coordinator, then counted again (kv_recount()).
 */
static int kv_recount_request(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	struct poold *pd = q->pd;
	struct region *r = pd->kv->holder;
	uint64_t count = 0;
	char err[256];
	size_t i;
	int rc;

	if (kr->op == POOL__KV_OP__KV_OP_RECOUNT) {
		rc = kv_recount(pd, ns, &count, err, sizeof(err));
		return rc < 0 ? req_errorf(q, rc, "%s", err) : kv_reply(q, NULL, 0, count, 0);
	}
	if (!r->refs_unknown) /* adopted already, or never lost its references */
		return kv_reply(q, NULL, 0, 0, 0);
	for (i = 0; kr->op == POOL__KV_OP__KV_OP_ADOPT && i < kr->n_keys; i++) {
		if (kr->keys[i].len == 0 || kr->keys[i].len > POOL_KV_KEY_MAX)
			return req_errorf(q, -EINVAL, "key %zu: 1 to %d bytes", i, POOL_KV_KEY_MAX);
		rc = kv_holder_add(pd, ns, kr->keys[i].data, kr->keys[i].len, NULL);
		if (rc < 0)
			return req_errorf(q, rc, "region '%s': %s", r->name, err_str(rc));
	}
	if (kr->op == POOL__KV_OP__KV_OP_ADOPTED)
		r->refs_unknown = false;
	return kv_reply(q, NULL, 0, kr->n_keys, 0);
}

/*
 * Requests to a dedup namespace: values are taken and let go by their
 * holders, regions the caller may write (a snapshot's manifest); a
 * reference goes with its holder only, never by a remove.
 */
static int kv_dedup_holder(struct req *q, const struct kv_ns *ns, const Pool__KvRequest *kr)
{
	bool adopt = kr->op == POOL__KV_OP__KV_OP_ADOPT || kr->op == POOL__KV_OP__KV_OP_ADOPTED;
	struct region *r;

	q->pd->kv->holder = NULL;
	if (kr->op == POOL__KV_OP__KV_OP_REMOVE)
		return req_errorf(q, -EPERM, "values of '%s' go with the regions holding them",
				  ns->name);
	if (kr->op != POOL__KV_OP__KV_OP_RESERVE && kr->op != POOL__KV_OP__KV_OP_COMMIT && !adopt)
		return 0;
	/*
	 * A page's key starts with its writer's uid (big-endian): a tenant can
	 * store a page only under its own keys, never under the key another
	 * uid's put would find, so no one's snapshot restores someone else's
	 * bytes. Admins (recounts, adoptions) may name any key.
	 */
	for (size_t i = 0; !q->admin && !(ns->flags & HOLD_NS_SHARED) && i < kr->n_keys; i++)
		if (kv_key_owner(kr->keys[i].data, kr->keys[i].len) != (uint32_t)q->uid)
			return req_errorf(q, -EPERM,
					  "a key of '%s' starts with its writer's uid, "
					  "%u",
					  ns->name, (unsigned)q->uid);
	if (kr->holder == NULL || (r = region_find(q->pd->regions, kr->holder)) == NULL)
		return req_errorf(q, -EINVAL, "a put to '%s' names the region holding it",
				  ns->name);
	if (!region_allowed(r, q, 2))
		return req_errorf(q, -EACCES, "region '%s' is not the caller's to write", r->name);
	if (r->refs_ns != 0 && r->refs_ns != ns->id)
		return req_errorf(q, -EINVAL, "region '%s' holds values of another namespace",
				  r->name);
	q->pd->kv->holder = r;
	return 0;
}

/*
 * One key of a put in one request: reserve, copy len bytes from the
 * caller's window, commit; -EXDEV (the reservation aborted) when a place
 * of the value is not in this node's DRAM.
 */
static int kv_put_here(struct req *q, struct kv_ns *ns, const ProtobufCBinaryData *key,
		       const char *bytes, uint64_t len, uint64_t *ret_version)
{
	struct kv_caller who = {q->node, q->session, q->uid};
	struct kv_place all[KV_MAX_REPLICAS];
	struct poold *pd = q->pd;
	struct kv_result res;
	uint64_t version;
	size_t n, i;

	if (len == 0 || len > POOL_KV_VALUE_MAX)
		return -EINVAL;
	kv_key_op(pd, ns, &who, KV_RESERVE, key->data, key->len, len, &res);
	if (res.status != 0)
		return res.status;
	version = res.val.version;
	n = kv_places(&res.val, all);
	for (i = 0; i < n; i++)
		if (all[i].node != pd->node_id || lend_arena(pd, all[i].arena) == NULL ||
		    lend_arena(pd, all[i].arena)->tier != TIER_DRAM)
			break;
	if (i < n) {
		kv_key_op(pd, ns, &who, KV_ABORT, key->data, key->len, version, &res);
		return -EXDEV;
	}
	for (i = 0; i < n; i++)
		memcpy((char *)lend_arena(pd, all[i].arena)->base + all[i].off, bytes, len);
	kv_key_op(pd, ns, &who, KV_COMMIT, key->data, key->len, version, &res);
	*ret_version = version;
	return res.status;
}

/*
 * Key i of a get or a put in one request: a put of len bytes from src, or
 * a get whose bytes are then at *ret_data (as long as loc says). 1 when
 * it counts (a hit, a put done).
 */
static int kv_inline_key(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr, size_t i,
			 const char *src, uint64_t len, Pool__KvLocation *loc,
			 const void **ret_data)
{
	uint64_t version = 0;
	size_t got;

	pool__kv_location__init(loc);
	if (kr->op == POOL__KV_OP__KV_OP_PUT) {
		loc->status = kv_put_here(q, ns, &kr->keys[i], src, len, &version);
		if (loc->status == 0)
			kv_retain_asked(ns, kr, i, version);
	} else {
		loc->status = kv_read_here(q->pd, ns, kr->keys[i].data, kr->keys[i].len,
					   kr->sizes[i], ret_data, &got, &version);
		if (loc->status == -EREMOTE)
			loc->status = -EXDEV;
		loc->has_len = loc->status == 0;
		loc->len = loc->status == 0 ? got : 0;
	}
	if (loc->status != 0)
		return 0;
	loc->has_version = 1;
	loc->version = version;
	return 1;
}

/*
 * A get or a put in one request, asked by another node's poold for its
 * client (a sharded namespace's keys of this node's shards): the bytes
 * travel in the request (values, a put's) and in the reply (a get's), and
 * that poold copies them from and to its client's window (kv-route.c).
 */
static int kv_inline_by_value(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	bool put = kr->op == POOL__KV_OP__KV_OP_PUT;
	struct poold *pd = q->pd;
	Pool__KvReply reply = POOL__KV_REPLY__INIT;
	Pool__KvLocation *locs, **lp;
	ProtobufCBinaryData *vals;
	uint64_t total = 0;
	const void *data;
	size_t i;
	int rc;

	if (kr->n_sizes != kr->n_keys || (put && kr->n_values != kr->n_keys))
		return req_errorf(q, -EINVAL,
				  "a get or put by value names a size per key, and a put "
				  "its values");
	for (i = 0; i < kr->n_keys; i++) {
		if (kr->sizes[i] > POOL_KV_INLINE_MAX - total ||
		    (put && kr->values[i].len != kr->sizes[i]))
			return req_errorf(q, -E2BIG,
					  "a get or put moves at most %u bytes, as sized",
					  POOL_KV_INLINE_MAX);
		total += kr->sizes[i];
	}
	locs = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*locs));
	lp = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*lp));
	vals = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*vals));
	if (locs == NULL || lp == NULL || vals == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < kr->n_keys; i++) {
		lp[i] = &locs[i];
		reply.count += (uint64_t)kv_inline_key(
		    q, ns, kr, i, put ? (const char *)kr->values[i].data : NULL, kr->sizes[i],
		    &locs[i], &data);
		if (!put && locs[i].status == 0)
			vals[i] = (ProtobufCBinaryData){locs[i].len, (uint8_t *)data};
	}
	if (put) {
		kv_events_end(pd);
		rc = kv_reply_backed(q, ns, kr, locs, reply.count);
		goto out;
	}
	reply.locations = lp;
	reply.n_locations = kr->n_keys;
	reply.has_count = 1;
	reply.values = vals;
	reply.n_values = kr->n_keys;
	rc = req_reply(q, WIRE_KV_REPLY, &reply.base); /* (packed now: the bytes stay put) */
out:
	free(locs);
	free(lp);
	free(vals);
	return rc;
}

/*
 * A get or a put in one request (KV_OP_GET, KV_OP_PUT) from a client of
 * this poold: poold copies the values between the caller's window and
 * their places in this node's DRAM itself, in this callback (at most
 * POOL_KV_INLINE_MAX bytes a request), so the caller makes neither the
 * lookup and release nor the reserve and commit round trips, and holds no
 * pin. A key whose value is elsewhere (another node, the pmem tier) gets
 * -EXDEV, and one of a get whose value is longer than the room the caller
 * gave it -EMSGSIZE: the caller moves them the two-phase way. A get is a
 * lookup's hit or miss; a put is a reserve and a commit made one after the
 * other (quota, eviction, the last reserver, events). Asked by another
 * node for its client, the bytes travel with the request and the reply.
 */
static int kv_inline_request(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	bool put = kr->op == POOL__KV_OP__KV_OP_PUT;
	struct poold *pd = q->pd;
	Pool__KvLocation *locs;
	uint64_t total = 0, count = 0, size = 0;
	const void *data;
	char *win;
	size_t i;
	int rc;

	if (q->node != pd->node_id && (ns->flags & HOLD_NS_SHARDED) && !kr->has_window)
		return kv_inline_by_value(q, ns, kr);
	if (q->node != pd->node_id || q->session == 0)
		return req_errorf(q, -EXDEV,
				  "a get or put in one request is served by the client's own "
				  "poold only");
	if (put && (ns->flags & (HOLD_NS_DEDUP | HOLD_NS_PERSISTENT)))
		return req_errorf(q, -EXDEV, "a put to '%s' takes a reservation and a commit",
				  ns->name);
	if (!kr->has_window || kr->n_offs != kr->n_keys || kr->n_sizes != kr->n_keys)
		return req_errorf(
		    q, -EINVAL, "a get or put names its window, and an offset and a size per key");
	win = xfer_window_map(q->session, kr->window, &size);
	for (i = 0; i < kr->n_keys; i++) {
		if (kr->sizes[i] > POOL_KV_INLINE_MAX - total)
			return req_errorf(q, -E2BIG, "a get or put moves at most %u bytes",
					  POOL_KV_INLINE_MAX);
		total += kr->sizes[i];
		if (win == NULL || kr->sizes[i] > size || kr->offs[i] > size - kr->sizes[i])
			return req_errorf(q, -EINVAL,
					  "key %zu: its bytes are not in window %u of the caller",
					  i, kr->window);
	}
	locs = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*locs));
	if (locs == NULL)
		return req_errorf(q, -ENOMEM, "out of memory");
	for (i = 0; i < kr->n_keys; i++) {
		count += (uint64_t)kv_inline_key(q, ns, kr, i, win + kr->offs[i], kr->sizes[i],
						 &locs[i], &data);
		if (!put && locs[i].status == 0)
			memcpy(win + kr->offs[i], data, locs[i].len);
	}
	if (put) {
		kv_events_end(pd);
		region_account(pd);
	}
	rc =
	    put ? kv_reply_backed(q, ns, kr, locs, count) : kv_reply(q, locs, kr->n_keys, count, 0);
	free(locs);
	return rc;
}

/* A commit waiting for its persistent values to be durable. */
struct kv_commit_wait {
	struct req *q; /* held */
	Pool__KvLocation *locs;
};

/* The keys of a commit that are not durable get -EIO. */
static void kv_commit_failed(const struct kv_durable *d, Pool__KvLocation *locs)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->failed[i] && locs[i].status == 0)
			locs[i].status = -EIO;
}

/* Every lender of the commit answered: the reply goes. */
static void kv_commit_answer(struct kv_durable *d, void *waiter)
{
	struct kv_commit_wait *w = waiter;
	int rc;

	kv_commit_failed(d, w->locs);
	rc = kv_reply(w->q, w->locs, d->n, d->count - d->lost, 0);
	req_finish(w->q, rc < 0 ? rc : 0);
	free(w->locs);
	free(w);
	kv_durable_free(d);
}

/* Hold q until its lenders answer (kv_commit_answer()): 0, or -ENOMEM to answer now. */
static int kv_commit_wait(struct req *q, struct kv_durable *d, Pool__KvLocation *locs)
{
	struct kv_commit_wait *w = malloc(sizeof(*w));

	if (w == NULL || (w->q = req_hold(q)) == NULL) {
		free(w);
		return -ENOMEM;
	}
	w->locs = locs;
	d->answer = kv_commit_answer;
	d->waiter = w;
	return 0;
}

/* Whether a request's keys, pins and per-key sizes or versions are ones ns serves: 0 or -errno. */
static int kv_request_check(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	char name[WIRE_ENUM_NAME_MAX];
	size_t i;
	int rc;

	if (kr->n_keys > KV_MAX_KEYS)
		return req_errorf(q, -E2BIG, "at most %d keys per request", KV_MAX_KEYS);
	if ((kr->has_retain || kr->has_retain_ms) &&
	    ((kr->op != POOL__KV_OP__KV_OP_COMMIT && kr->op != POOL__KV_OP__KV_OP_PUT) ||
	     !kr->has_retain || (unsigned)kr->retain > POOL__KV_RETAIN__KV_RETAIN_HARD ||
	     kr->retain_ms > KV_RETAIN_MS_MAX ||
	     (kr->retain == POOL__KV_RETAIN__KV_RETAIN_NONE && kr->retain_ms > 0)))
		return req_errorf(q, -EINVAL,
				  "a pin (soft or hard, for up to %llu ms, or none) is asked "
				  "of a commit or a put",
				  (unsigned long long)KV_RETAIN_MS_MAX);
	/* A sharded namespace's keys here are those of this node's shards (kv-route.c). */
	for (i = 0; (ns->flags & HOLD_NS_SHARDED) && i < kr->n_keys; i++)
		if ((rc = kv_owner_serves(q->pd, ns, kr->keys[i].data, kr->keys[i].len)) < 0)
			return req_errorf(q, rc,
					  rc == -EAGAIN
					      ? "key %zu of '%s': its shard moved here and "
						"its keys are on their way: ask again"
					      : "key %zu of '%s': its shard is not this "
						"node's (the shards moved): ask again",
					  i, ns->name);
	if ((kr->op == POOL__KV_OP__KV_OP_RESERVE && kr->n_sizes != kr->n_keys) ||
	    ((kr->op == POOL__KV_OP__KV_OP_COMMIT || kr->op == POOL__KV_OP__KV_OP_RELEASE ||
	      kr->op == POOL__KV_OP__KV_OP_ABORT) &&
	     kr->n_versions != kr->n_keys))
		return req_errorf(
		    q, -EINVAL, "%s needs one %s per key",
		    wire_enum_name(&pool__kv_op__descriptor, kr->op, name, sizeof(name)),
		    kr->op == POOL__KV_OP__KV_OP_RESERVE ? "size" : "version");
	return 0;
}

/* A prefix match: how many of the keys, from the first, have a value. */
static int kv_request_match(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	size_t i;

	for (i = 0; i < kr->n_keys; i++) {
		struct kv_entry *e = *kv_slot(ns, kr->keys[i].data, kr->keys[i].len,
					      kv_hash(kr->keys[i].data, kr->keys[i].len));

		if (e == NULL || !e->has_val || !kv_val_usable(q->pd, &e->val))
			break;
	}
	return kv_reply(q, NULL, 0, i, 0);
}

/*
 * The operation of kr on each of its keys, and the reply with their
 * locations; a commit of persistent values is answered once their lenders
 * made them durable (REQ_LATER).
 */
static int kv_request_keys(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr)
{
	struct poold *pd = q->pd;
	struct kv_durable *d = NULL;
	struct kv_locplaces *pl;
	Pool__KvLocation *locs;
	uint64_t count = 0;
	size_t i;
	int rc;

	locs = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*locs));
	pl = kv_ns_places(ns) > 1 ? calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*pl)) : NULL;
	if (locs == NULL || (kv_ns_places(ns) > 1 && pl == NULL)) {
		free(locs);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	if (kr->op == POOL__KV_OP__KV_OP_COMMIT && (ns->flags & HOLD_NS_PERSISTENT) &&
	    (d = kv_durable_new(kr->n_keys)) != NULL)
		pd->kv->durable = d;
	for (i = 0; i < kr->n_keys; i++) {
		pd->kv->durable_i = i;
		count += (uint64_t)kv_one(q, ns, kr, i, &locs[i], pl ? &pl[i] : NULL);
	}
	kv_events_end(pd);
	pd->kv->durable = NULL;
	if (d != NULL)
		kv_durable_send(pd, d);
	if (d != NULL) { /* (a commit's locations name no copies: pl is not theirs) */
		free(pl);
		pl = NULL;
		d->count = count;
		if (d->pending > 0 && kv_commit_wait(q, d, locs) == 0)
			return REQ_LATER; /* the last lender's answer replies */
		kv_commit_failed(d, locs);
		count -= d->lost;
		if (d->pending > 0)
			d->abandoned = true; /* without memory to wait: the reply goes now */
		else
			kv_durable_free(d);
	}
	if (kr->op == POOL__KV_OP__KV_OP_RESERVE || kr->op == POOL__KV_OP__KV_OP_REMOVE)
		region_account(pd);
	if (kr->op == POOL__KV_OP__KV_OP_COMMIT || kr->op == POOL__KV_OP__KV_OP_REMOVE)
		rc = kv_reply_backed(q, ns, kr, locs, count);
	else
		rc = kv_reply(q, locs, kr->n_keys, count,
			      kr->op == POOL__KV_OP__KV_OP_LOOKUP    ? 4
			      : kr->op == POOL__KV_OP__KV_OP_RESERVE ? 2
								     : 0);
	free(locs);
	free(pl);
	return rc;
}

static int kv_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvRequest *kr = (const Pool__KvRequest *)msg;
	struct poold *pd = q->pd;
	struct kv_ns *ns = kv_ns_find(pd, kr->ns);
	int rc;

	if (ns != NULL && (ns->flags & HOLD_NS_SHARDED))
		pd->kv_shard_requests[q->node != pd->node_id]++;
	else if (q->node == pd->node_id)
		pd->kv_requests_here++;
	else
		pd->kv_requests_nodes++;

	if (ns == NULL)
		return req_errorf(q, -ENOENT, "no KV namespace '%s'", kr->ns);
	if (!kv_ns_allowed(ns, q, kv_op_access(kr->op)))
		return req_errorf(q, -EACCES,
				  "KV namespace '%s' (mode %03o, uid %u): %s access "
				  "denied",
				  ns->name, ns->mode, (unsigned)ns->uid,
				  kv_op_access(kr->op) & 2 ? "write" : "read");
	if ((ns->flags & HOLD_NS_DEDUP) && (rc = kv_dedup_holder(q, ns, kr)) < 0)
		return rc;
	if ((ns->flags & HOLD_NS_DEDUP) &&
	    (kr->op == POOL__KV_OP__KV_OP_ADOPT || kr->op == POOL__KV_OP__KV_OP_ADOPTED ||
	     kr->op == POOL__KV_OP__KV_OP_RECOUNT))
		return kv_recount_request(q, ns, kr);
	rc = kv_request_check(q, ns, kr);
	if (rc < 0)
		return rc;
	if (kr->op == POOL__KV_OP__KV_OP_FAILED) {
		/* A client could not reach a lender: suspect it now, not after heartbeats. */
		if (!kr->has_node || kr->n_keys != 1 ||
		    !kv_was_given(ns, q, &kr->keys[0], kr->node))
			return req_errorf(q, -EPERM,
					  "a lender is reported only with a key whose "
					  "transfer to it the caller was given");
		if (pd->coord_role != NULL)
			pd->coord_role->suspect(pd, kr->node);
		return kv_reply(q, NULL, 0, 0, 0);
	}
	if (kr->op == POOL__KV_OP__KV_OP_GET || kr->op == POOL__KV_OP__KV_OP_PUT)
		return kv_inline_request(q, ns, kr);
	if (kr->op == POOL__KV_OP__KV_OP_MATCH)
		return kv_request_match(q, ns, kr);
	return kv_request_keys(q, ns, kr);
}

/* A statistic of proto/kvstats.h into its field of the same name in KvNamespace. */
#define KV_STAT_MSG(name, ...)                                                                     \
	m->has_##name = 1;                                                                         \
	m->name = st->name;

static void kv_stats_msg(const struct kv_ns_stats *st, Pool__KvNamespace *m)
{
	kv_def_msg(&st->def, m);
	m->has_used = m->has_id = m->has_pmem_used = 1;
	m->id = st->id;
	m->used = st->used;
	m->pmem_used = st->pmem_used;
	KV_STATS(KV_STAT_MSG)
}

static int kv_ns_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvNsRequest *r = (const Pool__KvNsRequest *)msg;
	Pool__KvNsReply reply = POOL__KV_NS_REPLY__INIT;
	struct poold *pd = q->pd;
	Pool__KvNamespace *m = NULL, **mp = NULL;
	struct kv_ns *ns = kv_ns_find(pd, r->name);
	struct kv_ns_stats st;
	size_t n = 0;
	int rc;

	switch (r->op) {
	case POOL__KV_NS_OP__KV_NS_OP_CREATE: {
		struct kv_ns_spec spec = {
		    .name = r->name,
		    .capacity = r->has_capacity ? r->capacity : 0,
		    .size_hint = r->has_size_hint ? r->size_hint : 0,
		    .replicas = r->has_replicas ? r->replicas : 1,
		    .uid = q->uid,
		    .gid = r->has_gid ? r->gid : q->gid,
		    .mode = r->has_mode ? r->mode & 0777 : 0600,
		};
		uint32_t evict;
		char err[128];

		if (kv_ns_flags_of(r->tier, NULL, &spec.flags) < 0)
			return req_errorf(q, -EINVAL, "tier '%s': dram, dram+pmem or pmem",
					  r->tier);
		if (r->has_sharded && r->sharded) /* (in the owners' DRAM: tier dram, or said) */
			spec.flags |= HOLD_NS_SHARDED | (r->tier == NULL ? HOLD_NS_DRAM_ONLY : 0);
		if (kv_ns_flags_of(NULL, r->evict, &evict) < 0)
			return req_errorf(q, -EINVAL, "evict '%s': lru or none", r->evict);
		spec.flags |= evict;
		if ((rc = kv_ns_create(pd, &spec, err, sizeof(err))) < 0)
			return req_errorf(q, rc, "%s", err);
		ns = kv_ns_find(pd, r->name);
		break;
	}
	case POOL__KV_NS_OP__KV_NS_OP_DROP:
	case POOL__KV_NS_OP__KV_NS_OP_FLUSH:
		if (ns == NULL)
			return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
		if (r->op == POOL__KV_NS_OP__KV_NS_OP_DROP) {
			kv_ns_drop(pd, ns);
			return req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
		}
		log_info("KV namespace '%s' flushed", ns->name);
		kv_ns_flush(pd, ns);
		break;
	case POOL__KV_NS_OP__KV_NS_OP_SWAPDB:
		if (!r->has_db || !r->has_other_db || r->db >= RESP_DBS || r->other_db >= RESP_DBS)
			return req_errorf(q, -EINVAL, "swapdb: two databases of 0-%d",
					  RESP_DBS - 1);
		if ((rc = resp_db_swap(pd, q->uid, (int)r->db, (int)r->other_db)) < 0)
			return req_errorf(q, rc, "swapdb: %s", err_str(rc));
		return req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
	case POOL__KV_NS_OP__KV_NS_OP_STATS:
		if (r->name[0] != '\0' && ns == NULL)
			return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
		if (ns != NULL && !kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2))
			return req_errorf(q, -EACCES,
					  "KV namespace '%s' (mode %03o, uid %u): access denied",
					  ns->name, ns->mode, (unsigned)ns->uid);
		break;
	default: /* (wire_msg_unpack() refused any other number) */
		return req_errorf(q, -EINVAL, "unknown namespace operation %d", r->op);
	}
	/* Reply with the namespace, or all of them for stats of "". */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n++;
	m = calloc(n ? n : 1, sizeof(*m));
	mp = calloc(n ? n : 1, sizeof(*mp));
	if (m == NULL || mp == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	n = 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		if (r->name[0] != '\0' && strcmp(ns->name, r->name) != 0)
			continue;
		/* A listing shows a uid the namespaces it may use. */
		if (!kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2))
			continue;
		kv_ns_stats(ns, &st);
		kv_stats_msg(&st, &m[n]); /* (which points into ns, not st) */
		mp[n] = &m[n];
		n++;
	}
	reply.namespaces = mp;
	reply.n_namespaces = n;
	rc = req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
out:
	free(m);
	free(mp);
	return rc;
}

/* Namespaces are made, dropped and flushed by admins; adopting and recounting holders too. */
static const struct ctl_op kv_ns_ops[] = {
    {POOL__KV_NS_OP__KV_NS_OP_CREATE, CTL_ADMIN},
    {POOL__KV_NS_OP__KV_NS_OP_DROP, CTL_ADMIN},
    {POOL__KV_NS_OP__KV_NS_OP_FLUSH, CTL_ADMIN},
    {POOL__KV_NS_OP__KV_NS_OP_SWAPDB, CTL_ADMIN},
    {0, 0},
};

static const struct ctl_op kv_ops[] = {
    {POOL__KV_OP__KV_OP_ADOPT, CTL_ADMIN},
    {POOL__KV_OP__KV_OP_ADOPTED, CTL_ADMIN},
    {POOL__KV_OP__KV_OP_RECOUNT, CTL_ADMIN},
    {0, 0},
};

const struct ctl_handler kv_handlers[] = {
    {WIRE_KV_NS, CTL_ANY, AT_ROUTE, kv_ns_request, kv_ns_ops},
    {WIRE_KV, CTL_ANY, AT_ROUTE, kv_request, kv_ops},
    {0, 0, 0, NULL, NULL},
};

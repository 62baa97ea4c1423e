/*
 * daemon/kv/kv-route.c - the KV requests of this poold's clients to sharded
 * namespaces, sent where their keys are: each key to the owner of its
 * shard (shardmap.c's map), this poold itself or another member's poold,
 * asked on the link between them (nodecall.c), never the coordinator. A
 * request whose keys have several owners is split by owner, its parts in
 * flight together, and their answers put back together in the keys' order:
 * one reply, as the client asked. Requests to other namespaces go on to
 * the coordinator as before.
 *
 * What a part's owner grants the client (the places of its keys) is taken
 * in as its answer comes, as for a reply of the coordinator's. A get or a
 * put in one request (the bytes in the client's window) goes to another
 * owner by value: this poold takes a put's bytes from the window into the
 * call, and puts a get's from the answer into the window, so the client
 * makes one request whichever node holds its keys. A part that
 * fails fails the request (its message names the owner), and what the
 * other parts of a lookup or a reserve did is undone (their pins
 * released, their reservations aborted); an owner whose shards moved
 * meanwhile refuses keys it no longer owns (-ESTALE), one whose shards'
 * keys are still on their way too (-EAGAIN), and the client asks again
 * (libpool does, for a while).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/util/util.h"
#include "daemon/xfer/xfer.h"
#include "daemon/kv/kv-int.h"

#define KVROUTE_LOC_MAX 256	  /* a key's location in a reply, with its copies, at most */
#define KVROUTE_OK_MAX 4096	  /* an Ok or an Error */
#define KVROUTE_LS_MAX (1u << 20) /* an owner's stats of all its sharded namespaces */

/* The most bytes the reply to kr may take (by value: with a get's bytes, as sized). */
static size_t kv_route_reply_max(const Pool__KvRequest *kr, bool by_value)
{
	size_t max = KVROUTE_OK_MAX + kr->n_keys * KVROUTE_LOC_MAX, i;

	for (i = 0; by_value && kr->op == POOL__KV_OP__KV_OP_GET && i < kr->n_sizes; i++)
		max += MIN(kr->sizes[i], (uint64_t)POOL_KV_INLINE_MAX);
	return MIN(max, (size_t)FAB_LINK_CALL_MAX - 2);
}

/*
 * A request served by this poold for one of its clients' split ones: its
 * reply packed and handed to cb, as another owner's answer would be.
 */
struct kv_route_here {
	nodecall_cb cb;
	void *arg;
};

static int kv_route_here_answer(struct req *q, uint16_t type, const ProtobufCMessage *msg)
{
	const struct kv_route_here *here = q->answer_to;
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len ? len : 1);

	q->answer = NULL; /* (once) */
	if (buf != NULL)
		protobuf_c_message_pack(msg, buf);
	here->cb(q->pd, here->arg, buf != NULL ? 0 : -ENOMEM, type, buf, len);
	free(buf);
	return 0;
}

/*
 * Serve msg, a request of type, here as this poold's part of r's: its
 * answer goes to here->cb as another owner's would. 0, or the error of a
 * refusal before it answered (said in r when first).
 */
static int kv_route_serve_here(struct req *r, bool first, struct kv_route_here *here, uint16_t type,
			       const ProtobufCMessage *msg)
{
	struct req q = *r;
	int rc;

	q.answer = kv_route_here_answer;
	q.answer_to = here;
	q.errmsg[0] = '\0';
	rc = control_handler(type)->fn(&q, msg);
	if (rc >= 0 || q.answer == NULL) /* (answered) */
		return 0;
	if (first)
		req_errorf(r, rc, "%s", q.errmsg[0] ? q.errmsg : err_str(rc));
	return rc;
}

/* A request split over several owners, until every part answered. */
struct kvroute {
	struct req *r; /* the client's, held */
	Pool__KvOp op;
	size_t nkeys, nparts, pending;
	struct kv_route_part *parts;
	Pool__KvLocation **locs; /* each key's, pointing into its part's reply */
	uint64_t count;
	size_t match; /* MATCH: the first key missing */
	uint32_t access;
	bool has_access;
	int status; /* the first part's failure */
	/* a get or put in one request: the client's window, and each key's place and size in it */
	bool by_value;
	uint32_t window;
	uint64_t *offs, *sizes;
	/* a lookup's or a reserve's: its namespace and keys, to undo the parts done when one fails
	 */
	char *ns;
	ProtobufCBinaryData *keys;
};

/* The keys of one owner. */
struct kv_route_part {
	struct kvroute *rt;
	uint32_t node;
	size_t n;
	size_t *idx;		   /* each key's place in the request */
	Pool__KvReply *reply;	   /* its answer, once it came */
	struct kv_route_here here; /* its answer when this poold is its owner */
};

static void kv_route_free(struct kvroute *rt)
{
	size_t i;

	for (i = 0; i < rt->nparts; i++) {
		free(rt->parts[i].idx);
		wire_msg_free(rt->parts[i].reply != NULL ? &rt->parts[i].reply->base : NULL);
	}
	for (i = 0; rt->keys != NULL && i < rt->nkeys; i++)
		free(rt->keys[i].data);
	free(rt->keys);
	free(rt->ns);
	free(rt->parts);
	free(rt->locs);
	free(rt->offs);
	free(rt->sizes);
	free(rt);
}

/* (an owner's answer that nothing waits for: an undo, a session's end) */
static void kv_route_told(struct poold *pd, void *arg, int status, uint16_t type,
			  const uint8_t *bytes, size_t len)
{
	(void)pd, (void)arg, (void)status, (void)type, (void)bytes, (void)len;
}

/*
 * The owners a session of this poold's clients left pins or reservations
 * with (a lookup or a reserve sent there), ascending: they alone are told
 * when it ends.
 */
struct kv_route_session {
	struct htab_node by_id;
	uint64_t session;
	uint32_t *nodes;
	size_t n, cap;
};

static struct kv_route_session *kv_route_session_find(struct poold *pd, uint64_t session)
{
	struct htab_node *hn;

	for (hn = htab_first(&pd->kv_sessions, htab_hash_u64(session)); hn != NULL;
	     hn = htab_next(hn)) {
		struct kv_route_session *s = htab_entry(hn, struct kv_route_session, by_id);

		if (s->session == session)
			return s;
	}
	return NULL;
}

/* Remember that r's session may hold something at node after an op of its request. */
static void kv_route_session_used(struct req *r, Pool__KvOp op, uint32_t node)
{
	struct kv_route_session *s;
	size_t lo = 0, hi, mid;

	if ((op != POOL__KV_OP__KV_OP_LOOKUP && op != POOL__KV_OP__KV_OP_RESERVE) ||
	    r->session == 0 || node == r->pd->node_id)
		return;
	if ((s = kv_route_session_find(r->pd, r->session)) == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return; /* (out of memory: its pins go when their node sees it go) */
		s->session = r->session;
		htab_add(&r->pd->kv_sessions, &s->by_id, htab_hash_u64(r->session));
	}
	for (hi = s->n; lo < hi;) {
		mid = lo + (hi - lo) / 2;
		if (s->nodes[mid] == node)
			return;
		if (s->nodes[mid] < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;
		uint32_t *nodes = realloc(s->nodes, cap * sizeof(*nodes));

		if (nodes == NULL)
			return;
		s->nodes = nodes;
		s->cap = cap;
	}
	memmove(&s->nodes[lo + 1], &s->nodes[lo], (s->n - lo) * sizeof(*s->nodes));
	s->nodes[lo] = node;
	s->n++;
}

static void kv_route_session_free(struct poold *pd, struct kv_route_session *s)
{
	htab_del(&pd->kv_sessions, &s->by_id);
	free(s->nodes);
	free(s);
}

/*
 * A lookup or a reserve failed on one owner: on the others, what their
 * parts did is undone (the pins released, the reservations aborted), so
 * that the client may ask again (libpool does, for a shard that moved).
 */
static void kv_route_undo(struct kvroute *rt)
{
	Pool__KvRequest undo = POOL__KV_REQUEST__INIT;
	struct poold *pd = rt->r->pd;
	ProtobufCBinaryData *keys = calloc(rt->nkeys, sizeof(*keys));
	uint64_t *versions = calloc(rt->nkeys, sizeof(*versions));
	struct nodecall_as as;
	size_t k, i;

	undo.op = rt->op == POOL__KV_OP__KV_OP_LOOKUP ? POOL__KV_OP__KV_OP_RELEASE
						      : POOL__KV_OP__KV_OP_ABORT;
	undo.ns = rt->ns;
	undo.keys = keys;
	undo.versions = versions;
	nodecall_as_req(rt->r, &as);
	for (k = 0; keys != NULL && versions != NULL && k < rt->nparts; k++) {
		struct kv_route_part *p = &rt->parts[k];

		undo.n_keys = undo.n_versions = 0;
		for (i = 0; p->reply != NULL && i < p->n && i < p->reply->n_locations; i++)
			if (p->reply->locations[i]->status == 0 &&
			    p->reply->locations[i]->has_version) {
				keys[undo.n_keys] = rt->keys[p->idx[i]];
				versions[undo.n_versions++] = p->reply->locations[i]->version;
				undo.n_keys++;
			}
		if (undo.n_keys == 0)
			continue;
		if (p->node == pd->node_id) {
			p->here = (struct kv_route_here){kv_route_told, NULL};
			(void)kv_route_serve_here(rt->r, false, &p->here, WIRE_KV, &undo.base);
		} else {
			(void)nodecall_send(pd, p->node, &as, WIRE_KV, &undo.base,
					    kv_route_reply_max(&undo, false), kv_route_told, NULL);
		}
	}
	free(keys);
	free(versions);
}

/* Every part answered: the client's one reply, or the first failure. */
static void kv_route_finish(struct kvroute *rt)
{
	Pool__KvReply reply = POOL__KV_REPLY__INIT;
	struct req *r = rt->r;
	int rc;

	if (rt->status < 0) {
		if (rt->keys != NULL)
			kv_route_undo(rt);
		req_finish(r, rt->status);
		kv_route_free(rt);
		return;
	}
	reply.locations = rt->locs;
	reply.n_locations = rt->op == POOL__KV_OP__KV_OP_MATCH ? 0 : rt->nkeys;
	reply.has_count = 1;
	reply.count = rt->op == POOL__KV_OP__KV_OP_MATCH ? rt->match : rt->count;
	reply.has_access = rt->has_access;
	reply.access = rt->access;
	/* (each part's grants were taken in with its answer: sent as it is) */
	rc = conn_send(r->conn, WIRE_KV_REPLY, r->id, &reply.base);
	req_finish(r, rc < 0 ? rc : 0);
	kv_route_free(rt);
}

static void kv_route_part_done(struct kv_route_part *p)
{
	if (--p->rt->pending == 0)
		kv_route_finish(p->rt);
}

/*
 * The values another owner's answer carries (a get by value) into the
 * client's window, where the client said each key's go; a window gone
 * meanwhile, or a value longer than its room, fails the request.
 */
static void kv_route_got(struct kvroute *rt, const struct kv_route_part *p)
{
	uint64_t size = 0;
	char *win = xfer_window_map(rt->r->session, rt->window, &size);
	size_t i, k;

	for (i = 0; i < p->n && rt->status == 0; i++) {
		const Pool__KvLocation *loc = p->reply->locations[i];

		k = p->idx[i];
		if (loc->status != 0)
			continue;
		if (win == NULL || i >= p->reply->n_values ||
		    p->reply->values[i].len > rt->sizes[k] || rt->offs[k] > size ||
		    rt->sizes[k] > size - rt->offs[k])
			rt->status = req_errorf(rt->r, -EPROTO,
						"key %zu: its bytes from node %u do "
						"not fit its room in the window",
						k, p->node);
		else
			memcpy(win + rt->offs[k], p->reply->values[i].data,
			       p->reply->values[i].len);
	}
}

/* A part failed: the request fails, with the first failure's message (said already). */
static void kv_route_part_failed(struct kv_route_part *p, int rc)
{
	if (p->rt->status == 0)
		p->rt->status = rc;
	kv_route_part_done(p);
}

/* A part's answer: its locations in their keys' places, its count added. */
static void kv_route_part_answer(struct kv_route_part *p, int status, uint16_t type,
				 const uint8_t *bytes, size_t len)
{
	struct kvroute *rt = p->rt;
	ProtobufCMessage *msg = NULL;
	bool first = rt->status == 0;
	size_t i;

	if (status == 0 && type == WIRE_ERROR &&
	    wire_msg_unpack(WIRE_ERROR, bytes, len, &msg) == 0) {
		const Pool__Error *e = (const Pool__Error *)msg;

		status = e->code < 0 ? e->code : -EIO;
		if (first)
			req_errorf(rt->r, status, "node %u: %s", p->node, e->message);
		wire_msg_free(msg);
	} else if (status == 0 &&
		   (type != WIRE_KV_REPLY || wire_msg_unpack(type, bytes, len, &msg) < 0)) {
		status = -EPROTO;
		if (first)
			req_errorf(rt->r, status, "node %u answered with %s", p->node,
				   wire_type_name(type));
	} else if (status < 0 && first) {
		req_errorf(rt->r, status, "node %u did not answer: %s", p->node, err_str(status));
	}
	if (status < 0) {
		kv_route_part_failed(p, status);
		return;
	}
	{
		p->reply = (Pool__KvReply *)msg;
		if (p->reply->n_locations != (rt->op == POOL__KV_OP__KV_OP_MATCH ? 0 : p->n) &&
		    rt->status == 0)
			rt->status = req_errorf(rt->r, -EPROTO, "node %u answered %zu keys of %zu",
						p->node, p->reply->n_locations, p->n);
		for (i = 0; rt->status == 0 && i < p->reply->n_locations; i++)
			rt->locs[p->idx[i]] = p->reply->locations[i];
		rt->count += p->reply->count;
		if (rt->op == POOL__KV_OP__KV_OP_MATCH && p->reply->count < p->n)
			rt->match = MIN(rt->match, p->idx[p->reply->count]);
		if (p->reply->has_access) {
			rt->has_access = true;
			rt->access = p->reply->access;
		}
		if (p->node != rt->r->pd->node_id) /* (this poold's own part granted already) */
			grant_reply(rt->r->pd, rt->r->session, WIRE_KV_REPLY, msg);
		if (rt->by_value && rt->op == POOL__KV_OP__KV_OP_GET &&
		    p->node != rt->r->pd->node_id)
			kv_route_got(rt, p);
	}
	kv_route_part_done(p);
}

static void kv_route_remote_answer(struct poold *pd, void *arg, int status, uint16_t type,
				   const uint8_t *bytes, size_t len)
{
	(void)pd;
	kv_route_part_answer(arg, status, type, bytes, len);
}

/* kr's keys of one part, as a request of their own (pointing into kr). */
static void kv_route_sub(const Pool__KvRequest *kr, const struct kv_route_part *p,
			 Pool__KvRequest *sub, ProtobufCBinaryData *keys, uint64_t *sizes,
			 uint64_t *versions, uint64_t *offs)
{
	size_t i;

	*sub = *kr;
	sub->keys = keys;
	sub->n_keys = p->n;
	sub->sizes = kr->n_sizes == kr->n_keys ? sizes : NULL;
	sub->n_sizes = kr->n_sizes == kr->n_keys ? p->n : 0;
	sub->versions = kr->n_versions == kr->n_keys ? versions : NULL;
	sub->n_versions = kr->n_versions == kr->n_keys ? p->n : 0;
	sub->offs = kr->n_offs == kr->n_keys ? offs : NULL;
	sub->n_offs = kr->n_offs == kr->n_keys ? p->n : 0;
	for (i = 0; i < p->n; i++) {
		keys[i] = kr->keys[p->idx[i]];
		if (sub->sizes != NULL)
			sizes[i] = kr->sizes[p->idx[i]];
		if (sub->versions != NULL)
			versions[i] = kr->versions[p->idx[i]];
		if (sub->offs != NULL)
			offs[i] = kr->offs[p->idx[i]];
	}
}

/*
 * A part of a get or put in one request, for another owner: by value, no
 * window (the owner has none of the client's), a put's bytes taken from
 * the window into *ret_vals (the caller frees it). -EINVAL (said) for a
 * key whose bytes are not in the window, -ENOMEM.
 */
static int kv_route_by_value(struct kvroute *rt, const struct kv_route_part *p,
			     Pool__KvRequest *sub, ProtobufCBinaryData **ret_vals)
{
	uint64_t size = 0;
	char *win = xfer_window_map(rt->r->session, rt->window, &size);
	size_t i, k;

	sub->has_window = 0;
	sub->window = 0;
	sub->offs = NULL;
	sub->n_offs = 0;
	if (rt->op != POOL__KV_OP__KV_OP_PUT)
		return 0;
	if ((*ret_vals = calloc(p->n ? p->n : 1, sizeof(**ret_vals))) == NULL)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		k = p->idx[i];
		if (win == NULL || rt->offs[k] > size || rt->sizes[k] > size - rt->offs[k]) {
			if (rt->status == 0)
				req_errorf(rt->r, -EINVAL,
					   "key %zu: its bytes are not in window %u of the caller",
					   k, rt->window);
			return -EINVAL;
		}
		(*ret_vals)[i] = (ProtobufCBinaryData){rt->sizes[k], (uint8_t *)win + rt->offs[k]};
	}
	sub->values = *ret_vals;
	sub->n_values = p->n;
	return 0;
}

/* Send (or serve here) one part; its answer comes to kv_route_part_answer(). */
static void kv_route_part_start(struct kvroute *rt, struct kv_route_part *p,
				const Pool__KvRequest *kr)
{
	struct poold *pd = rt->r->pd;
	ProtobufCBinaryData *keys = calloc(p->n ? p->n : 1, sizeof(*keys)), *vals = NULL;
	uint64_t *nums = calloc(p->n ? 3 * p->n : 1, sizeof(*nums));
	Pool__KvRequest sub;
	struct nodecall_as as;
	int rc;

	if (keys == NULL || nums == NULL) {
		free(keys);
		free(nums);
		if (rt->status == 0)
			req_errorf(rt->r, -ENOMEM, "out of memory");
		kv_route_part_failed(p, -ENOMEM);
		return;
	}
	kv_route_sub(kr, p, &sub, keys, nums, nums + p->n, nums + 2 * p->n);
	if (rt->by_value && p->node != pd->node_id &&
	    (rc = kv_route_by_value(rt, p, &sub, &vals)) < 0) {
		free(keys);
		free(nums);
		free(vals);
		if (rt->status == 0 && rc == -ENOMEM)
			req_errorf(rt->r, rc, "out of memory");
		kv_route_part_failed(p, rc);
		return;
	}
	if (p->node == pd->node_id) {
		p->here = (struct kv_route_here){kv_route_remote_answer, p};
		rc = kv_route_serve_here(rt->r, rt->status == 0, &p->here, WIRE_KV, &sub.base);
		if (rc < 0)
			kv_route_part_failed(p, rc);
	} else {
		nodecall_as_req(rt->r, &as);
		kv_route_session_used(rt->r, rt->op, p->node);
		rc = nodecall_send(pd, p->node, &as, WIRE_KV, &sub.base,
				   kv_route_reply_max(&sub, rt->by_value), kv_route_remote_answer,
				   p);
		if (rc < 0)
			kv_route_part_answer(p, rc, 0, NULL, 0);
	}
	free(keys);
	free(nums);
	free(vals);
}

/* The owner of each key of kr, in owner[]; the number of owners, or -errno. */
static int kv_route_owners(struct poold *pd, const Pool__KvRequest *kr, uint32_t *owner)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	size_t i;

	if (map->nowners == 0)
		return -EHOSTUNREACH;
	for (i = 0; i < kr->n_keys; i++)
		owner[i] = map->owner[kv_shard_of(kr->ns, kr->keys[i].data, kr->keys[i].len)];
	return 0;
}

/* Whether kr is a get or put in one request whose bytes are in a window, as sized. */
static bool kv_route_inline(const Pool__KvRequest *kr)
{
	return (kr->op == POOL__KV_OP__KV_OP_GET || kr->op == POOL__KV_OP__KV_OP_PUT) &&
	       kr->has_window && kr->n_offs == kr->n_keys && kr->n_sizes == kr->n_keys;
}

/* A copy of kr's namespace and keys in rt (kv_route_undo()); -ENOMEM. */
static int kv_route_keep_keys(struct kvroute *rt, const Pool__KvRequest *kr)
{
	size_t i;

	if ((rt->ns = strdup(kr->ns)) == NULL ||
	    (rt->keys = calloc(kr->n_keys, sizeof(*rt->keys))) == NULL)
		return -ENOMEM;
	for (i = 0; i < kr->n_keys; i++) {
		if ((rt->keys[i].data = malloc(kr->keys[i].len ? kr->keys[i].len : 1)) == NULL)
			return -ENOMEM;
		memcpy(rt->keys[i].data, kr->keys[i].data, kr->keys[i].len);
		rt->keys[i].len = kr->keys[i].len;
	}
	return 0;
}

/* kr, from a client of this poold, to the owners of its keys. */
static int kv_route_split(struct req *r, const Pool__KvRequest *kr)
{
	uint32_t *owner = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*owner));
	struct kvroute *rt = NULL;
	size_t i, k;
	int rc;

	if (owner == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	rc = kv_route_owners(r->pd, kr, owner);
	if (rc < 0) {
		free(owner);
		return req_errorf(r, rc, "no member keeps memory for KV shards (kv.shard_size)");
	}
	/* One owner (or no key): the request goes as it is, but to another owner by value. */
	for (i = 1; i < kr->n_keys && owner[i] == owner[0]; i++)
		;
	if (i >= kr->n_keys &&
	    (kr->n_keys == 0 || owner[0] == r->pd->node_id || !kv_route_inline(kr))) {
		uint32_t node = kr->n_keys > 0 ? owner[0] : r->pd->node_id;

		free(owner);
		if (node == r->pd->node_id)
			return control_handler(WIRE_KV)->fn(r, &kr->base);
		kv_route_session_used(r, kr->op, node);
		return nodecall_forward(r, node, WIRE_KV, &kr->base, kv_route_reply_max(kr, false));
	}
	rt = calloc(1, sizeof(*rt));
	if (rt == NULL || (rt->locs = calloc(kr->n_keys, sizeof(*rt->locs))) == NULL ||
	    (rt->parts = calloc(kr->n_keys, sizeof(*rt->parts))) == NULL ||
	    (rt->r = req_hold(r)) == NULL)
		goto out_nomem;
	rt->op = kr->op;
	rt->nkeys = rt->match = kr->n_keys;
	if ((kr->op == POOL__KV_OP__KV_OP_LOOKUP || kr->op == POOL__KV_OP__KV_OP_RESERVE) &&
	    kv_route_keep_keys(rt, kr) < 0)
		goto out_nomem;
	if (kv_route_inline(kr)) {
		rt->by_value = true;
		rt->window = kr->window;
		if ((rt->offs = calloc(kr->n_keys, sizeof(*rt->offs))) == NULL ||
		    (rt->sizes = calloc(kr->n_keys, sizeof(*rt->sizes))) == NULL)
			goto out_nomem;
		memcpy(rt->offs, kr->offs, kr->n_keys * sizeof(*rt->offs));
		memcpy(rt->sizes, kr->sizes, kr->n_keys * sizeof(*rt->sizes));
	}
	for (i = 0; i < kr->n_keys; i++) {
		struct kv_route_part *p;

		for (k = 0; k < rt->nparts && rt->parts[k].node != owner[i]; k++)
			;
		p = &rt->parts[k];
		if (k == rt->nparts) {
			*p = (struct kv_route_part){.rt = rt, .node = owner[i]};
			if ((p->idx = calloc(kr->n_keys, sizeof(*p->idx))) == NULL)
				goto out_nomem;
			rt->nparts++;
		}
		p->idx[p->n++] = i;
	}
	free(owner);
	rt->pending = rt->nparts + 1; /* (and one for the loop below: no reply before its end) */
	for (k = 0; k < rt->nparts; k++)
		kv_route_part_start(rt, &rt->parts[k], kr);
	if (--rt->pending == 0)
		kv_route_finish(rt);
	return 0;
out_nomem:
	free(owner);
	if (rt != NULL) {
		if (rt->r != NULL)
			req_finish(rt->r, 0);
		kv_route_free(rt);
	}
	return req_errorf(r, -ENOMEM, "out of memory");
}

/* A namespace's stats or flush over its owners, until each answered. */
struct kv_route_ns {
	struct req *r; /* the client's, held */
	size_t pending;
	int status;
	Pool__KvNamespace sum; /* the first owner's, with every owner's counts added */
	Pool__KvNsReply *first;
	struct kv_route_here here; /* this poold's own part's answer */
};

static void kv_route_ns_done(struct kv_route_ns *rn)
{
	Pool__KvNsReply reply = POOL__KV_NS_REPLY__INIT;
	Pool__KvNamespace *one = &rn->sum;

	if (--rn->pending > 0)
		return;
	if (rn->status == 0) {
		reply.namespaces = &one;
		reply.n_namespaces = 1;
		rn->status = conn_send(rn->r->conn, WIRE_KV_NS_REPLY, rn->r->id, &reply.base);
	}
	req_finish(rn->r, rn->status < 0 ? rn->status : 0);
	wire_msg_free(rn->first != NULL ? &rn->first->base : NULL);
	free(rn);
}

/* A statistic of proto/kvstats.h of one owner's part, added to the others'. */
#define KV_STAT_ADD(name, ...) sum->name += n->name;

/* Another owner's part of a sharded namespace added to sum: its bytes and every statistic. */
static void kv_route_ns_add(Pool__KvNamespace *sum, const Pool__KvNamespace *n)
{
	sum->used += n->used;
	KV_STATS(KV_STAT_ADD)
}

/* One owner's part: its counts added to the others'. */
static void kv_route_ns_answer(struct poold *pd, void *arg, int status, uint16_t type,
			       const uint8_t *bytes, size_t len)
{
	struct kv_route_ns *rn = arg;
	ProtobufCMessage *msg = NULL;
	const Pool__KvNamespace *n;

	(void)pd;
	if (status == 0 && type == WIRE_ERROR && wire_msg_unpack(type, bytes, len, &msg) == 0) {
		status = ((Pool__Error *)msg)->code < 0 ? ((Pool__Error *)msg)->code : -EIO;
		if (rn->status == 0)
			req_errorf(rn->r, status, "%s", ((Pool__Error *)msg)->message);
	} else if (status == 0 &&
		   (type != WIRE_KV_NS_REPLY || wire_msg_unpack(type, bytes, len, &msg) < 0 ||
		    ((Pool__KvNsReply *)msg)->n_namespaces != 1)) {
		status = -EPROTO;
		if (rn->status == 0)
			req_errorf(rn->r, status, "an owner answered with %s",
				   wire_type_name(type));
	} else if (status < 0 && rn->status == 0) {
		req_errorf(rn->r, status, "an owner did not answer: %s", err_str(status));
	}
	if (status < 0) {
		wire_msg_free(msg);
		if (rn->status == 0)
			rn->status = status;
		kv_route_ns_done(rn);
		return;
	}
	n = ((Pool__KvNsReply *)msg)->namespaces[0];
	if (rn->first == NULL) {
		rn->first = (Pool__KvNsReply *)msg; /* (the sum points into it) */
		rn->sum = *n;
	} else {
		kv_route_ns_add(&rn->sum, n);
		wire_msg_free(msg);
	}
	kv_route_ns_done(rn);
}

/*
 * The stats or the flush of a sharded namespace, from a client of this
 * poold: every owner's part (its entries, bytes and counts), at once,
 * added up in one reply; a flush flushes every part.
 */
static int kv_route_ns_owners(struct req *r, const Pool__KvNsRequest *nr)
{
	const struct kv_shard_map *map = member_kv_shards(r->pd);
	struct kv_route_ns *rn = calloc(1, sizeof(*rn));
	struct nodecall_as as;
	size_t i;
	int rc;

	if (rn == NULL || (rn->r = req_hold(r)) == NULL) {
		free(rn);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	nodecall_as_req(r, &as);
	rn->pending = map->nowners + 1; /* (one for this loop: no reply before its end) */
	for (i = 0; i < map->nowners; i++) {
		if (map->owners[i] == r->pd->node_id) {
			rn->here = (struct kv_route_here){kv_route_ns_answer, rn};
			rc = kv_route_serve_here(rn->r, rn->status == 0, &rn->here, WIRE_KV_NS,
						 &nr->base);
			if (rc < 0) {
				rn->status = rn->status < 0 ? rn->status : rc;
				kv_route_ns_done(rn);
			}
			continue;
		}
		rc = nodecall_send(r->pd, map->owners[i], &as, WIRE_KV_NS, &nr->base,
				   KVROUTE_OK_MAX + KVROUTE_LOC_MAX, kv_route_ns_answer, rn);
		if (rc < 0)
			kv_route_ns_answer(r->pd, rn, rc, 0, NULL, 0);
	}
	kv_route_ns_done(rn);
	return 0;
}

/*
 * Every namespace's stats (kv stats without a name), at the coordinator
 * when some are sharded: its own reply, each sharded namespace's counts
 * and bytes added up with every other owner's part (asked at once, all of
 * their namespaces in one call each).
 */
struct kv_route_ls {
	struct req *r; /* the client's (or the node's forward), held */
	size_t pending, nparts;
	int status;
	Pool__KvNsReply *mine;	   /* the coordinator's own */
	Pool__KvNsReply **parts;   /* the other owners' */
	struct kv_route_here here; /* the coordinator's own answer */
	struct kv_route_ls_part {
		struct kv_route_ls *ls;
	} * args;
};

static void kv_route_ls_done(struct kv_route_ls *ls)
{
	size_t i, k, j;

	if (--ls->pending > 0)
		return;
	for (i = 0; ls->status == 0 && ls->mine != NULL && i < ls->mine->n_namespaces; i++) {
		Pool__KvNamespace *sum = ls->mine->namespaces[i];

		for (k = 0; sum->sharded && k < ls->nparts; k++)
			for (j = 0; ls->parts[k] != NULL && j < ls->parts[k]->n_namespaces; j++) {
				const Pool__KvNamespace *n = ls->parts[k]->namespaces[j];

				if (strcmp(n->name, sum->name) == 0)
					kv_route_ns_add(sum, n);
			}
	}
	if (ls->status == 0 && ls->mine == NULL)
		ls->status = req_errorf(ls->r, -EPROTO, "no stats of this poold's own");
	if (ls->status == 0)
		ls->status = conn_send(ls->r->conn, WIRE_KV_NS_REPLY, ls->r->id, &ls->mine->base);
	req_finish(ls->r, ls->status < 0 ? ls->status : 0);
	for (k = 0; k < ls->nparts; k++)
		wire_msg_free(ls->parts[k] != NULL ? &ls->parts[k]->base : NULL);
	wire_msg_free(ls->mine != NULL ? &ls->mine->base : NULL);
	free(ls->parts);
	free(ls->args);
	free(ls);
}

/* One answer: this poold's own (arg the kv_route_ls), or an owner's (arg its part). */
static void kv_route_ls_answer(struct kv_route_ls *ls, Pool__KvNsReply **to, int status,
			       uint16_t type, const uint8_t *bytes, size_t len)
{
	ProtobufCMessage *msg = NULL;

	if (status == 0 && type == WIRE_KV_NS_REPLY && wire_msg_unpack(type, bytes, len, &msg) == 0)
		*to = (Pool__KvNsReply *)msg;
	else if (to == &ls->mine && ls->status == 0)
		ls->status =
		    req_errorf(ls->r, status < 0 ? status : -EPROTO, "this poold's own stats: %s",
			       err_str(status < 0 ? status : -EPROTO));
	/* (an owner that does not answer: its part is missing from the sums) */
	kv_route_ls_done(ls);
}

static void kv_route_ls_mine(struct poold *pd, void *arg, int status, uint16_t type,
			     const uint8_t *bytes, size_t len)
{
	struct kv_route_ls *ls = arg;

	(void)pd;
	kv_route_ls_answer(ls, &ls->mine, status, type, bytes, len);
}

static void kv_route_ls_part(struct poold *pd, void *arg, int status, uint16_t type,
			     const uint8_t *bytes, size_t len)
{
	struct kv_route_ls_part *a = arg;

	(void)pd;
	kv_route_ls_answer(a->ls, &a->ls->parts[a - a->ls->args], status, type, bytes, len);
}

static int kv_route_ns_all(struct req *r, const Pool__KvNsRequest *nr)
{
	const struct kv_shard_map *map = member_kv_shards(r->pd);
	struct kv_route_ls *ls = calloc(1, sizeof(*ls));
	struct nodecall_as as;
	size_t i;
	int rc;

	if (ls == NULL || (ls->parts = calloc(map->nowners + 1, sizeof(*ls->parts))) == NULL ||
	    (ls->args = calloc(map->nowners + 1, sizeof(*ls->args))) == NULL ||
	    (ls->r = req_hold(r)) == NULL) {
		if (ls != NULL) {
			free(ls->parts);
			free(ls->args);
		}
		free(ls);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	nodecall_as_req(r, &as);
	ls->pending = 2; /* (this poold's own, and this loop: no reply before its end) */
	ls->here = (struct kv_route_here){kv_route_ls_mine, ls};
	rc = kv_route_serve_here(ls->r, true, &ls->here, WIRE_KV_NS, &nr->base);
	if (rc < 0) {
		ls->status = rc;
		kv_route_ls_done(ls);
	}
	for (i = 0; i < map->nowners; i++) {
		if (map->owners[i] == r->pd->node_id)
			continue;
		ls->args[ls->nparts].ls = ls;
		ls->pending++;
		rc = nodecall_send(r->pd, map->owners[i], &as, WIRE_KV_NS, &nr->base,
				   KVROUTE_LS_MAX, kv_route_ls_part, &ls->args[ls->nparts++]);
		if (rc < 0)
			kv_route_ls_part(r->pd, &ls->args[ls->nparts - 1], rc, 0, NULL, 0);
	}
	kv_route_ls_done(ls);
	return 0;
}

/* Whether nr asks for every namespace's stats (kv stats without a name). */
static bool kv_route_ns_ls(const Pool__KvNsRequest *nr)
{
	return nr->op == POOL__KV_NS_OP__KV_NS_OP_STATS && nr->name[0] == '\0';
}

/* Whether this poold keeps a sharded namespace. */
static bool kv_route_any_sharded(struct poold *pd)
{
	struct kv_ns *ns;

	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (ns->flags & HOLD_NS_SHARDED)
			return true;
	return false;
}

/*
 * A KV request (control.c's AT_ROUTE): CTL_NOT_ROUTED when its namespace
 * is not sharded (the coordinator serves it, as any), else sent to its
 * keys' owners; a namespace request of a sharded namespace's stats or
 * flush, to all its owners. A request another node sent here for its
 * client is served here (kv_request() refuses the keys of shards that are
 * not this node's).
 */
int kv_route_request(struct req *r, uint16_t type, const ProtobufCMessage *msg)
{
	const char *name = type == WIRE_KV ? ((const Pool__KvRequest *)msg)->ns
					   : ((const Pool__KvNsRequest *)msg)->name;
	const struct kv_ns *ns = r->pd->kv != NULL ? kv_ns_find(r->pd, name) : NULL;

	/* Every namespace's stats: the coordinator adds the owners' parts of the sharded ones. */
	if (type == WIRE_KV_NS && kv_route_ns_ls((const Pool__KvNsRequest *)msg)) {
		if (r->answer != NULL) /* (an owner asked for its parts) */
			return control_handler(type)->fn(r, msg);
		if (r->pd->regions == NULL || r->pd->kv == NULL || !kv_route_any_sharded(r->pd))
			return CTL_NOT_ROUTED;
		return kv_route_ns_all(r, (const Pool__KvNsRequest *)msg);
	}
	if (type == WIRE_KV_NS &&
	    (ns == NULL || !(ns->flags & HOLD_NS_SHARDED) ||
	     (((const Pool__KvNsRequest *)msg)->op != POOL__KV_NS_OP__KV_NS_OP_STATS &&
	      ((const Pool__KvNsRequest *)msg)->op != POOL__KV_NS_OP__KV_NS_OP_FLUSH)))
		return r->answer != NULL ? req_errorf(r, -EOPNOTSUPP,
						      "only a sharded namespace's stats and flush "
						      "are asked of its owners")
					 : CTL_NOT_ROUTED;
	if (ns == NULL || !(ns->flags & HOLD_NS_SHARDED))
		return r->answer != NULL
			   ? req_errorf(r, -ENOENT, "no sharded KV namespace '%s' here", name)
			   : CTL_NOT_ROUTED;
	if (r->answer != NULL || (type == WIRE_KV_NS && ((const Pool__KvNsRequest *)msg)->here))
		return control_handler(type)->fn(r, msg);
	return type == WIRE_KV ? kv_route_split(r, (const Pool__KvRequest *)msg)
			       : kv_route_ns_owners(r, (const Pool__KvNsRequest *)msg);
}

/*
 * A client of this poold went: its pins and reservations of this node's
 * shards go, and the other owners its lookups and reserves went to are
 * told (a session that left nothing with another owner asks nothing of
 * anyone).
 */
void kv_route_session_end(struct poold *pd, uint64_t session)
{
	Pool__SessionEnd se = POOL__SESSION_END__INIT;
	struct nodecall_as as = {.session = session};
	struct kv_route_session *s;
	struct kv_ns *ns;
	size_t i;

	if (pd->kv == NULL)
		return;
	s = kv_route_session_find(pd, session);
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		if (ns->flags & HOLD_NS_SHARDED)
			break;
	if (ns != NULL && pd->regions == NULL && !pd->stopping)
		kv_session_end(pd, pd->node_id, session, false); /* (the coordinator: its own) */
	se.session = session;
	for (i = 0; s != NULL && !pd->stopping && i < s->n; i++) /* (stopping: they see it go) */
		(void)nodecall_send(pd, s->nodes[i], &as, WIRE_SESSION_END, &se.base,
				    KVROUTE_OK_MAX, kv_route_told, NULL);
	if (s != NULL)
		kv_route_session_free(pd, s);
}

/* This poold stops: what it remembers of its clients' sessions goes. */
void kv_route_close(struct poold *pd)
{
	struct kv_route_session *s;
	size_t b;

	for (b = 0; b < pd->kv_sessions.nbuckets; b++)
		while (pd->kv_sessions.buckets[b] != NULL) {
			s = htab_entry(pd->kv_sessions.buckets[b], struct kv_route_session, by_id);
			kv_route_session_free(pd, s);
		}
	htab_free(&pd->kv_sessions);
}

/*
 * daemon/vec/vec-serve.c - vector indexes searched near their data.
 *
 * An index is a region of one extent laid out by vecindex/vecindex.c.
 * Processes on the lender's node map it and search in place; the others
 * send their queries here. The request goes to the coordinator, which
 * checks the caller's access to the region and hands it, with where the
 * index is, to the region's lender (itself, or a node over its link); the
 * lender opens the index in its own arena and serves it: one fabric round
 * trip from a node to the coordinator's own indexes, two to another
 * node's. The lender trusts only the coordinator's word on where the index
 * is: a client never names memory.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/vec/vec.h"
#include "proto/pool_contract.h"
#include "vecindex/vecindex.h"

/* At most this many results per request (k times the queries): a reply fits a frame. */
#define VEC_MAX_RESULTS 65536

/* A client's request passed to the index's lender, waiting for its answer. */
struct vec_relay {
	struct req *q;
};

/* Lender: what an index is now. */
static void vec_stat_msg(const struct vecindex *ix, Pool__VecReply *rep)
{
	struct vecindex_stat st;

	vecindex_stat(ix, &st);
	rep->has_kind = rep->has_metric = rep->has_dim = rep->has_m = 1;
	rep->has_ef_construction = rep->has_ef_search = rep->has_count = rep->has_deleted = 1;
	rep->has_capacity = rep->has_used = rep->has_size = rep->has_writer = rep->has_levels = 1;
	rep->kind = st.params.kind;
	rep->metric = st.params.metric;
	rep->dim = st.params.dim;
	rep->m = st.params.m;
	rep->ef_construction = st.params.ef_construction;
	rep->ef_search = st.params.ef_search;
	rep->count = st.count;
	rep->deleted = st.deleted;
	rep->capacity = st.capacity;
	rep->used = st.used;
	rep->size = st.size;
	rep->writer = st.writer;
	rep->levels = st.levels;
}

/* Lender: lay out an empty index (create), as the request's parameters say. */
static int vec_create(void *base, const Pool__VecRequest *vr, char *err, size_t errlen)
{
	struct vecindex_params p;
	int rc;

	if (!vr->has_kind || !vr->has_metric || !vr->has_dim) {
		snprintf(err, errlen, "create needs a kind, a metric and a dimension");
		return -EINVAL;
	}
	vecindex_params_init(&p, vr->kind, vr->metric, vr->dim);
	if (vr->has_m && vr->m != 0)
		p.m = vr->m;
	if (vr->has_ef_construction && vr->ef_construction != 0)
		p.ef_construction = vr->ef_construction;
	if (vr->has_ef_search && vr->ef_search != 0)
		p.ef_search = vr->ef_search;
	rc = vecindex_params_check(&p);
	if (rc == 0)
		rc = vecindex_create(base, vr->len, &p);
	if (rc < 0)
		snprintf(err, errlen, "%s", vecindex_errmsg());
	return rc;
}

/* Lender: search an open index with the request's queries. */
static int vec_search(struct poold *pd, const struct vecindex *ix, const Pool__VecRequest *vr,
		      Pool__VecReply *rep, char *err, size_t errlen)
{
	struct vecindex_stat st;
	size_t nq, qbytes;
	unsigned k = vr->has_k ? vr->k : 0;
	int rc;

	vecindex_stat(ix, &st);
	qbytes = (size_t)st.params.dim * sizeof(float);
	if (!vr->has_queries || vr->queries.len == 0 || vr->queries.len % qbytes != 0) {
		snprintf(err, errlen, "queries: a multiple of %zu bytes (%u float32 each)", qbytes,
			 st.params.dim);
		return -EINVAL;
	}
	nq = vr->queries.len / qbytes;
	if (k == 0 || k > VECINDEX_K_MAX || nq * k > VEC_MAX_RESULTS) {
		snprintf(err, errlen, "k %u: 1 to %d, and at most %d results per request", k,
			 VECINDEX_K_MAX, VEC_MAX_RESULTS);
		return -EINVAL;
	}
	if (pd->vec_ctx == NULL && (rc = vecindex_ctx_new(&pd->vec_ctx)) < 0)
		return rc;
	rep->labels = malloc(nq * k * sizeof(*rep->labels));
	rep->dists = malloc(nq * k * sizeof(*rep->dists));
	rep->counts = malloc(nq * sizeof(*rep->counts));
	if (rep->labels == NULL || rep->dists == NULL || rep->counts == NULL)
		return -ENOMEM;
	/* The queries are float32 in the request's bytes; copied, so they are aligned. */
	{
		float *q = malloc(vr->queries.len);

		if (q == NULL)
			return -ENOMEM;
		memcpy(q, vr->queries.data, vr->queries.len);
		rc = vecindex_search_batch(ix, pd->vec_ctx, nq, q, k, vr->has_ef ? vr->ef : 0,
					   rep->labels, rep->dists, rep->counts);
		free(q);
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s", vecindex_errmsg());
		return rc;
	}
	pd->vec_searches++;
	pd->vec_queries += nq;
	rep->n_labels = rep->n_dists = nq * k;
	rep->n_counts = nq;
	return 0;
}

/*
 * Lender: serve a request the coordinator passed on, on the index at
 * (arena, off, len) of this node's lend pool. Replies on conn with req_id.
 */
void vec_serve(struct poold *pd, struct conn *conn, uint64_t req_id, const Pool__VecRequest *vr)
{
	Pool__VecReply rep = POOL__VEC_REPLY__INIT;
	struct vecindex *ix = NULL;
	char err[256] = "";
	void *base;
	int rc;

	base = lend_ptr(pd, vr->arena, vr->off, vr->len);
	if (!vr->has_arena || !vr->has_off || !vr->has_len || base == NULL) {
		snprintf(err, sizeof(err), "the index is not in this node's lend pool");
		rc = -ERANGE;
		goto out;
	}
	if (vr->op == POOL__VEC_OP__VEC_OP_CREATE &&
	    (rc = vec_create(base, vr, err, sizeof(err))) < 0)
		goto out;
	rc = vecindex_open(base, vr->len, NULL, &ix);
	if (rc < 0) {
		snprintf(err, sizeof(err), "region '%s' holds no vector index: %s", vr->name,
			 vecindex_errmsg());
		goto out;
	}
	if (vr->op == POOL__VEC_OP__VEC_OP_SEARCH)
		rc = vec_search(pd, ix, vr, &rep, err, sizeof(err));
	else
		vec_stat_msg(ix, &rep); /* stat, create */
out:
	if (ix != NULL)
		vecindex_close(ix);
	if (rc == 0) {
		rep.has_node = 1;
		rep.node = pd->node_id;
		conn_send(conn, WIRE_VEC_REPLY, req_id, &rep.base);
	} else {
		conn_send_error(conn, req_id, rc, err[0] ? err : err_str(rc));
	}
	free(rep.labels);
	free(rep.dists);
	free(rep.counts);
}

/* Coordinator: the lender answered (or its link dropped): pass it to the client. */
static void vec_relayed(struct poold *pd, void *arg, int rc, const struct wire_hdr *hdr,
			const uint8_t *payload)
{
	struct vec_relay *vr = arg;

	(void)pd;
	if (hdr != NULL) {
		conn_send_raw(vr->q->conn, hdr->type, vr->q->id, payload, hdr->len);
		req_finish(vr->q, 0);
	} else {
		req_finish(vr->q,
			   req_errorf(vr->q, rc, "the index's lender went away: %s", err_str(rc)));
	}
	free(vr);
}

/*
 * Coordinator: a client's request on an index. The caller needs read
 * access to search or stat, write access to create; the index must be a
 * region of one extent.
 */
static int vec_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__VecRequest *in = (const Pool__VecRequest *)msg;
	Pool__VecRequest vr = *in;
	struct poold *pd = q->pd;
	struct region *r = region_find(pd->regions, in->name);
	bool create = in->op == POOL__VEC_OP__VEC_OP_CREATE;
	struct vec_relay *relay;
	int rc;

	if (r == NULL)
		return req_errorf(q, -ENOENT, "no region '%s'", in->name);
	if (!region_allowed(r, q, create ? 6 : 4))
		return req_errorf(q, -EACCES, "region '%s' (mode %03o, uid %u): %s access denied",
				  r->name, r->mode, r->uid, create ? "read-write" : "read");
	if (r->lost || r->moving || r->next != 1)
		return req_errorf(q, r->lost ? POOL_ELOST : -EINVAL, "region '%s' %s", r->name,
				  r->lost ? "lost its data"
				  : r->moving
				      ? "is being moved"
				      : "is not a vector index: it has more than one extent");
	vr.has_arena = vr.has_off = vr.has_len = 1;
	vr.arena = r->ext[0].arena;
	vr.off = r->ext[0].off;
	vr.len = r->size;
	if (r->ext[0].node == pd->node_id) {
		vec_serve(pd, q->conn, q->id, &vr);
		return 0;
	}
	relay = calloc(1, sizeof(*relay));
	if (relay == NULL || (relay->q = req_hold(q)) == NULL) {
		free(relay);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	rc = coord_call(pd, r->ext[0].node, WIRE_VEC, &vr.base, vec_relayed, relay);
	if (rc < 0) {
		req_finish(relay->q, 0); /* the error reply goes from here */
		free(relay);
		return req_errorf(q, POOL_ELOST, "the index's lender, node %u, is not connected",
				  r->ext[0].node);
	}
	return REQ_LATER;
}

const struct ctl_handler vec_handlers[] = {
    {WIRE_VEC, CTL_ANY, AT_COORD, vec_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * libpool/vec.c - vector indexes in pool regions.
 *
 * An index is a region (placement "local" unless told otherwise) holding
 * the layout of vecindex.c. This process maps the region and searches it
 * in place; so does any other process on the node that opens it, at
 * whatever address its mapping gets. A region that is not mappable here
 * (on another node, or a caller poold will not pass the arena to) is
 * searched near its data: the queries go to its lender's poold through
 * the coordinator (daemon/vec/vec-serve.c), the results come back. Adds and removes
 * need the mapping: they run on the lender's node.
 *
 * The writer token in the index header names the writing process by pid.
 * pool_vec_open(POOL_VEC_WRITE) takes it over only from a pid that no
 * longer exists on this node; the writer lease held through the pool will
 * replace that check.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/internal.h"
#include "vecindex/vecindex.h"

#define VEC_CTX_CACHE 16 /* search contexts kept for reuse per handle */

struct pool_vec_opts {
	unsigned m, ef_construction, ef_search;
	unsigned mode;
	char placement[32];
	char cls[16];
};

struct pool_vec {
	struct pool *pool;
	struct pool_region *region;
	struct vecindex *ix; /* NULL: remote, searched through poold */
	unsigned dim;	     /* remote: the index's dimension */
	char name[64];
	_Atomic unsigned ef;   /* search breadth; 0: the index's */
	pthread_mutex_t wlock; /* adds and removes through this handle, one at a time */
	pthread_mutex_t clock; /* ctx[] */
	struct vecindex_ctx *ctx[VEC_CTX_CACHE];
	size_t nctx;
};

struct pool_vec_info {
	struct vecindex_stat st;
};

POOL_EXPORT int pool_vec_opts_new(struct pool_vec_opts **ret_opts)
{
	struct pool_vec_opts *o;

	if (ret_opts == NULL)
		return pool_err(-EINVAL, "pool_vec_opts_new: invalid argument");
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		return pool_err(-ENOMEM, "out of memory");
	o->mode = 0600;
	snprintf(o->placement, sizeof(o->placement), "local");
	*ret_opts = o;
	return 0;
}

POOL_EXPORT void pool_vec_opts_free(struct pool_vec_opts *opts)
{
	free(opts);
}

POOL_EXPORT int pool_vec_opts_set_hnsw(struct pool_vec_opts *opts, unsigned m,
				       unsigned ef_construction, unsigned ef_search)
{
	if (opts == NULL)
		return pool_err(-EINVAL, "pool_vec_opts_set_hnsw: invalid argument");
	if (m != 0 && (m < VECINDEX_M_MIN || m > VECINDEX_M_MAX))
		return pool_err(-EINVAL, "hnsw M %u is outside %d..%d", m, VECINDEX_M_MIN,
				VECINDEX_M_MAX);
	if (ef_construction > VECINDEX_EF_MAX || ef_search > VECINDEX_EF_MAX)
		return pool_err(-EINVAL, "hnsw ef is at most %d", VECINDEX_EF_MAX);
	opts->m = m;
	opts->ef_construction = ef_construction;
	opts->ef_search = ef_search;
	return 0;
}

POOL_EXPORT int pool_vec_opts_set_mode(struct pool_vec_opts *opts, unsigned mode)
{
	if (opts == NULL || mode > 0777)
		return pool_err(-EINVAL, "mode %o is not a permission mode", mode);
	opts->mode = mode;
	return 0;
}

POOL_EXPORT int pool_vec_opts_set_class(struct pool_vec_opts *opts, const char *cls)
{
	if (opts == NULL || cls == NULL || strlen(cls) >= sizeof(opts->cls))
		return pool_err(-EINVAL, "invalid class");
	snprintf(opts->cls, sizeof(opts->cls), "%s", cls);
	return 0;
}

POOL_EXPORT int pool_vec_opts_set_placement(struct pool_vec_opts *opts, const char *placement)
{
	if (opts == NULL || placement == NULL || strlen(placement) >= sizeof(opts->placement))
		return pool_err(-EINVAL, "invalid placement");
	snprintf(opts->placement, sizeof(opts->placement), "%s", placement);
	return 0;
}

/* The index parameters for a kind, metric, dim and options (NULL: defaults). */
static int vec_params(unsigned kind, unsigned metric, unsigned dim,
		      const struct pool_vec_opts *opts, struct vecindex_params *p)
{
	vecindex_params_init(p, kind, metric, dim);
	if (kind == POOL_VEC_HNSW && opts != NULL) {
		if (opts->m)
			p->m = opts->m;
		if (opts->ef_construction)
			p->ef_construction = opts->ef_construction;
		if (opts->ef_search)
			p->ef_search = opts->ef_search;
	}
	if (vecindex_params_check(p) < 0)
		return pool_err(-EINVAL, "%s", vecindex_errmsg());
	return 0;
}

POOL_EXPORT int pool_vec_size(unsigned kind, unsigned dim, uint64_t n,
			      const struct pool_vec_opts *opts, uint64_t *ret_size)
{
	struct vecindex_params p;
	uint64_t size;
	int rc;

	if (ret_size == NULL)
		return pool_err(-EINVAL, "pool_vec_size: invalid argument");
	rc = vec_params(kind, POOL_VEC_L2, dim, opts, &p);
	if (rc < 0)
		return rc;
	rc = vecindex_size(&p, n, &size);
	if (rc < 0)
		return pool_err(rc, "%s", vecindex_errmsg());
	*ret_size = size;
	return 0;
}

/* A search context from the handle's cache, or a new one. */
static struct vecindex_ctx *vec_ctx_get(struct pool_vec *v)
{
	struct vecindex_ctx *c = NULL;

	pthread_mutex_lock(&v->clock);
	if (v->nctx > 0)
		c = v->ctx[--v->nctx];
	pthread_mutex_unlock(&v->clock);
	if (c == NULL && vecindex_ctx_new(&c) < 0)
		return NULL;
	return c;
}

static void vec_ctx_put(struct pool_vec *v, struct vecindex_ctx *c)
{
	pthread_mutex_lock(&v->clock);
	if (v->nctx < VEC_CTX_CACHE) {
		v->ctx[v->nctx++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&v->clock);
	vecindex_ctx_free(c);
}

static void vec_free(struct pool_vec *v)
{
	while (v->nctx > 0)
		vecindex_ctx_free(v->ctx[--v->nctx]);
	vecindex_close(v->ix);
	pthread_mutex_destroy(&v->wlock);
	pthread_mutex_destroy(&v->clock);
	free(v);
}

/* One request on the index named in vr, served near its data; the reply in *ret. */
static int vec_call(struct pool *pool, Pool__VecRequest *vr, Pool__VecReply **ret)
{
	return pool_call(pool, WIRE_VEC, &vr->base, WIRE_VEC_REPLY, (ProtobufCMessage **)ret);
}

/* A remote index's state, from its lender. */
static int vec_remote_stat(struct pool_vec *v, struct vecindex_stat *st)
{
	Pool__VecRequest vr = POOL__VEC_REQUEST__INIT;
	Pool__VecReply *rep;
	int rc;

	vr.op = POOL__VEC_OP__VEC_OP_STAT;
	vr.name = v->name;
	rc = vec_call(v->pool, &vr, &rep);
	if (rc < 0)
		return rc;
	*st = (struct vecindex_stat){
	    .params = {rep->kind, rep->metric, rep->dim, rep->m, rep->ef_construction,
		       rep->ef_search, 0},
	    .count = rep->count,
	    .deleted = rep->deleted,
	    .capacity = rep->capacity,
	    .used = rep->used,
	    .size = rep->size,
	    .writer = rep->writer,
	    .levels = rep->levels,
	};
	wire_msg_free(&rep->base);
	return 0;
}

/*
 * A handle on an open region: mapped, or (when it cannot be mapped here)
 * remote, after its lender said it holds an index.
 */
static int vec_handle(struct pool *pool, struct pool_region *r, const char *name,
		      struct pool_vec **ret)
{
	struct vecindex_stat st;
	struct pool_vec *v;
	void *base = NULL;
	int rc;

	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return pool_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&v->wlock, NULL);
	pthread_mutex_init(&v->clock, NULL);
	v->pool = pool;
	v->region = r;
	snprintf(v->name, sizeof(v->name), "%s", name);
	if (pool_region_map(r, &base) < 0) {
		rc = vec_remote_stat(v, &st);
		if (rc < 0) {
			vec_free(v);
			return rc;
		}
		v->dim = st.params.dim;
		*ret = v;
		return 0;
	}
	rc = vecindex_open(base, pool_region_size(r), NULL, &v->ix);
	if (rc < 0) {
		rc = pool_err(rc, "region '%s': %s", name, vecindex_errmsg());
		v->ix = NULL;
		vec_free(v);
		return rc;
	}
	*ret = v;
	return 0;
}

/* Adds and removes need the index mapped: on its lender's node. */
static int vec_remote_error(struct pool_vec *v)
{
	return pool_err(-EREMOTE,
			"vector index '%s' is on another node (or not mappable by "
			"this caller): it is searched from here, written from its node",
			v->name);
}

/*
 * Take the writer token; from a holder whose pid is gone from this node,
 * take it over.
 */
static int vec_writer(struct pool_vec *v)
{
	uint32_t holder = 0;
	int rc = vecindex_writer_acquire(v->ix, (uint32_t)getpid(), 0, &holder);

	if (rc == -EBUSY && holder != 0 && kill((pid_t)holder, 0) < 0 && errno == ESRCH)
		rc = vecindex_writer_acquire(v->ix, (uint32_t)getpid(), VECINDEX_TAKEOVER, NULL);
	if (rc == -EBUSY)
		return pool_err(rc, "vector index '%s' has a writer already: pid %u", v->name,
				holder);
	if (rc < 0)
		return pool_err(rc, "vector index '%s': %s", v->name, vecindex_errmsg());
	return 0;
}

POOL_EXPORT int pool_vec_create(struct pool *pool, const char *name, unsigned kind, unsigned metric,
				unsigned dim, uint64_t size, const struct pool_vec_opts *opts,
				unsigned flags, struct pool_vec **ret_vec)
{
	struct pool_region_opts *ro = NULL;
	struct pool_region *r = NULL;
	struct vecindex_params p;
	struct pool_vec *v = NULL;
	void *base;
	int rc;

	if (pool == NULL || name == NULL || ret_vec == NULL || flags != 0)
		return pool_err(-EINVAL, "pool_vec_create: invalid argument");
	rc = vec_params(kind, metric, dim, opts, &p);
	if (rc < 0)
		return rc;
	if ((rc = pool_region_opts_new(&ro)) < 0 ||
	    (rc = pool_region_opts_set_size(ro, size)) < 0 ||
	    (rc = pool_region_opts_set_mode(ro, opts ? opts->mode : 0600)) < 0 ||
	    (rc = pool_region_opts_set_placement(ro, opts ? opts->placement : "local")) < 0 ||
	    (opts != NULL && opts->cls[0] != '\0' &&
	     (rc = pool_region_opts_set_class(ro, opts->cls)) < 0))
		goto out;
	rc = pool_region_create(pool, name, ro, 0, &r);
	if (rc < 0)
		goto out;
	if (pool_region_map(r, &base) == 0) {
		rc = vecindex_create(base, pool_region_size(r), &p);
		if (rc < 0)
			rc = pool_err(rc, "vector index '%s': %s", name, vecindex_errmsg());
	} else { /* laid out by its lender */
		Pool__VecRequest vr = POOL__VEC_REQUEST__INIT;
		Pool__VecReply *rep;

		vr.op = POOL__VEC_OP__VEC_OP_CREATE;
		vr.name = (char *)name;
		vr.has_kind = vr.has_metric = vr.has_dim = vr.has_m = 1;
		vr.has_ef_construction = vr.has_ef_search = 1;
		vr.kind = p.kind;
		vr.metric = p.metric;
		vr.dim = p.dim;
		vr.m = p.m;
		vr.ef_construction = p.ef_construction;
		vr.ef_search = p.ef_search;
		rc = vec_call(pool, &vr, &rep);
		if (rc == 0)
			wire_msg_free(&rep->base);
	}
	if (rc < 0)
		goto out_destroy;
	if ((rc = vec_handle(pool, r, name, &v)) < 0)
		goto out_destroy;
	if (v->ix != NULL && (rc = vec_writer(v)) < 0) {
		vec_free(v);
		goto out_destroy;
	}
	*ret_vec = v;
	pool_region_opts_free(ro);
	return 0;
out_destroy:
	pool_region_close(r);
	pool_region_destroy(pool, name);
out:
	pool_region_opts_free(ro);
	return rc;
}

POOL_EXPORT int pool_vec_open(struct pool *pool, const char *name, unsigned flags,
			      struct pool_vec **ret_vec)
{
	struct pool_region *r;
	struct pool_vec *v;
	int rc;

	if (pool == NULL || name == NULL || ret_vec == NULL || (flags & ~POOL_VEC_WRITE))
		return pool_err(-EINVAL, "pool_vec_open: invalid argument");
	rc = pool_region_open(pool, name, flags & POOL_VEC_WRITE ? POOL_REGION_WRITE : 0, &r);
	if (rc < 0)
		return rc;
	rc = vec_handle(pool, r, name, &v);
	if (rc == 0 && (flags & POOL_VEC_WRITE) && v->ix == NULL) {
		rc = vec_remote_error(v);
		vec_free(v);
	} else if (rc == 0 && (flags & POOL_VEC_WRITE) && (rc = vec_writer(v)) < 0) {
		vec_free(v);
	}
	if (rc < 0) {
		pool_region_close(r);
		return rc;
	}
	*ret_vec = v;
	return 0;
}

POOL_EXPORT int pool_vec_close(struct pool_vec *vec)
{
	struct pool_region *r;

	if (vec == NULL)
		return 0;
	r = vec->region;
	vec_free(vec);
	return pool_region_close(r);
}

POOL_EXPORT int pool_vec_add(struct pool_vec *vec, uint64_t label, const float *vector)
{
	int rc = pool_vec_add_batch(vec, 1, &label, vector);

	return rc < 0 ? rc : 0;
}

POOL_EXPORT int pool_vec_add_batch(struct pool_vec *vec, size_t n, const uint64_t *labels,
				   const float *vectors)
{
	int rc;

	if (vec == NULL || (n > 0 && (labels == NULL || vectors == NULL)))
		return pool_err(-EINVAL, "pool_vec_add: invalid argument");
	if (vec->ix == NULL)
		return vec_remote_error(vec);
	pthread_mutex_lock(&vec->wlock);
	rc = vecindex_add_batch(vec->ix, n, labels, vectors);
	pthread_mutex_unlock(&vec->wlock);
	if (rc < 0)
		return pool_err(rc, "vector index '%s': %s", vec->name, vecindex_errmsg());
	if ((size_t)rc < n) /* the message says why the next one failed */
		pool_err(rc, "vector index '%s': vector %d of the batch: %s", vec->name, rc,
			 vecindex_errmsg());
	return rc;
}

POOL_EXPORT int pool_vec_remove(struct pool_vec *vec, uint64_t label)
{
	int rc;

	if (vec == NULL)
		return pool_err(-EINVAL, "pool_vec_remove: invalid argument");
	if (vec->ix == NULL)
		return vec_remote_error(vec);
	pthread_mutex_lock(&vec->wlock);
	rc = vecindex_remove(vec->ix, label);
	pthread_mutex_unlock(&vec->wlock);
	if (rc < 0)
		return pool_err(rc, "vector index '%s': %s", vec->name, vecindex_errmsg());
	return rc;
}

/*
 * Queries to a remote index, in requests of at most VEC_REMOTE_RESULTS
 * results and VEC_REMOTE_BYTES of queries (a reply and a request fit a
 * frame); results laid out as vecindex_search_batch() does.
 */
#define VEC_REMOTE_RESULTS 65536
#define VEC_REMOTE_BYTES (256u << 10)

static int vec_remote_search(struct pool_vec *v, size_t n, const float *q, unsigned k,
			     uint64_t *labels, float *dists, unsigned *counts)
{
	size_t per = (size_t)v->dim * sizeof(float), step, i, j;
	int rc = 0;

	if (q == NULL || labels == NULL || k == 0 || k > VECINDEX_K_MAX)
		return pool_err(-EINVAL, "k: 1 to %d, and queries and labels are needed",
				VECINDEX_K_MAX);
	step = MIN(VEC_REMOTE_RESULTS / k, VEC_REMOTE_BYTES / per);
	step = MAX(step, 1);
	for (i = 0; i < n && rc == 0; i += step) {
		Pool__VecRequest vr = POOL__VEC_REQUEST__INIT;
		size_t nq = MIN(step, n - i);
		Pool__VecReply *rep;

		vr.op = POOL__VEC_OP__VEC_OP_SEARCH;
		vr.name = v->name;
		vr.has_queries = vr.has_k = vr.has_ef = 1;
		vr.queries.data = (uint8_t *)(q + i * v->dim);
		vr.queries.len = nq * per;
		vr.k = k;
		vr.ef = v->ef;
		rc = vec_call(v->pool, &vr, &rep);
		if (rc < 0)
			break;
		if (rep->n_counts != nq || rep->n_labels != nq * k || rep->n_dists != nq * k) {
			wire_msg_free(&rep->base);
			return pool_err(POOL_EPROTOCOL, "vector search: the reply does not match");
		}
		for (j = 0; j < nq; j++)
			if (counts != NULL)
				counts[i + j] = rep->counts[j];
		memcpy(labels + i * k, rep->labels, nq * k * sizeof(*labels));
		if (dists != NULL)
			memcpy(dists + i * k, rep->dists, nq * k * sizeof(*dists));
		wire_msg_free(&rep->base);
	}
	return rc;
}

POOL_EXPORT int pool_vec_search(struct pool_vec *vec, const float *query, unsigned k,
				uint64_t *ret_labels, float *ret_dists)
{
	struct vecindex_ctx *c;
	unsigned count = 0;
	int rc;

	if (vec == NULL)
		return pool_err(-EINVAL, "pool_vec_search: invalid argument");
	if (vec->ix == NULL) {
		rc = vec_remote_search(vec, 1, query, k, ret_labels, ret_dists, &count);
		return rc < 0 ? rc : (int)count;
	}
	if ((c = vec_ctx_get(vec)) == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = vecindex_search(vec->ix, c, query, k, vec->ef, ret_labels, ret_dists);
	vec_ctx_put(vec, c);
	if (rc < 0)
		return pool_err(rc, "vector index '%s': %s", vec->name, vecindex_errmsg());
	return rc;
}

POOL_EXPORT int pool_vec_search_batch(struct pool_vec *vec, size_t n, const float *queries,
				      unsigned k, uint64_t *ret_labels, float *ret_dists,
				      unsigned *ret_counts)
{
	struct vecindex_ctx *c;
	int rc;

	if (vec == NULL)
		return pool_err(-EINVAL, "pool_vec_search_batch: invalid argument");
	if (vec->ix == NULL)
		return vec_remote_search(vec, n, queries, k, ret_labels, ret_dists, ret_counts);
	if ((c = vec_ctx_get(vec)) == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = vecindex_search_batch(vec->ix, c, n, queries, k, vec->ef, ret_labels, ret_dists,
				   ret_counts);
	vec_ctx_put(vec, c);
	if (rc < 0)
		return pool_err(rc, "vector index '%s': %s", vec->name, vecindex_errmsg());
	return 0;
}

POOL_EXPORT int pool_vec_set_ef(struct pool_vec *vec, unsigned ef)
{
	if (vec == NULL || ef > VECINDEX_EF_MAX)
		return pool_err(-EINVAL, "ef is at most %d", VECINDEX_EF_MAX);
	vec->ef = ef;
	return 0;
}

POOL_EXPORT int pool_vec_stat(struct pool_vec *vec, struct pool_vec_info **ret_info)
{
	struct pool_vec_info *info;

	if (vec == NULL || ret_info == NULL)
		return pool_err(-EINVAL, "pool_vec_stat: invalid argument");
	info = calloc(1, sizeof(*info));
	if (info == NULL)
		return pool_err(-ENOMEM, "out of memory");
	if (vec->ix == NULL) {
		int rc = vec_remote_stat(vec, &info->st);

		if (rc < 0) {
			free(info);
			return rc;
		}
		*ret_info = info;
		return 0;
	}
	vecindex_stat(vec->ix, &info->st);
	*ret_info = info;
	return 0;
}

POOL_EXPORT void pool_vec_info_free(struct pool_vec_info *info)
{
	free(info);
}

POOL_EXPORT unsigned pool_vec_info_kind(const struct pool_vec_info *info)
{
	return info->st.params.kind;
}

POOL_EXPORT unsigned pool_vec_info_metric(const struct pool_vec_info *info)
{
	return info->st.params.metric;
}

POOL_EXPORT unsigned pool_vec_info_dim(const struct pool_vec_info *info)
{
	return info->st.params.dim;
}

POOL_EXPORT unsigned pool_vec_info_m(const struct pool_vec_info *info)
{
	return info->st.params.m;
}

POOL_EXPORT unsigned pool_vec_info_ef_construction(const struct pool_vec_info *info)
{
	return info->st.params.ef_construction;
}

POOL_EXPORT unsigned pool_vec_info_ef_search(const struct pool_vec_info *info)
{
	return info->st.params.ef_search;
}

POOL_EXPORT uint64_t pool_vec_info_count(const struct pool_vec_info *info)
{
	return info->st.count;
}

POOL_EXPORT uint64_t pool_vec_info_deleted(const struct pool_vec_info *info)
{
	return info->st.deleted;
}

POOL_EXPORT uint64_t pool_vec_info_capacity(const struct pool_vec_info *info)
{
	return info->st.capacity;
}

POOL_EXPORT uint64_t pool_vec_info_used(const struct pool_vec_info *info)
{
	return info->st.used;
}

POOL_EXPORT uint64_t pool_vec_info_size(const struct pool_vec_info *info)
{
	return info->st.size;
}

POOL_EXPORT uint32_t pool_vec_info_writer(const struct pool_vec_info *info)
{
	return (uint32_t)(info->st.writer >> 32);
}

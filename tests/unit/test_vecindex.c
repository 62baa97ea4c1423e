/*
 * tests/unit/test_vecindex.c - the vector index of libpool on plain memory:
 * parameters and header checks, bad input, exact flat search against a
 * naive scan, tombstones, HNSW recall against flat on clustered data, a
 * full range, two mappings of one memfd, a writer's crash, and crafted or
 * random corruption (the range sits between guard pages, so a stray read
 * crashes the test).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vecindex/vecdist.h"
#include "vecindex/vecindex.h"
#include "tests/tools/vecdata.h"
#include "tests/unit/unit.h"

/* A range of len bytes between two PROT_NONE pages. */
struct range {
	uint8_t *map, *base;
	size_t len, maplen;
};

static void range_new(struct range *r, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);

	r->len = len;
	r->maplen = (len + pg - 1) / pg * pg + 2 * pg;
	r->map = mmap(NULL, r->maplen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(r->map != MAP_FAILED);
	r->base = r->map + pg;
	CU_ASSERT_FATAL(mprotect(r->base, r->maplen - 2 * pg, PROT_READ | PROT_WRITE) == 0);
	memset(r->base, 0xa5, len); /* not zero: the index must not rely on zeroed memory */
	/* The range ends at the guard page when its length is a multiple of the page size. */
}

static void range_free(struct range *r)
{
	munmap(r->map, r->maplen);
}

/* An index of n clustered vectors in a fresh range: its handle (the writer), data in *ret_x. */
static struct vecindex *index_new(struct range *r, uint32_t kind, uint32_t metric, uint32_t dim,
				  size_t n, uint64_t seed, float **ret_x)
{
	struct vecindex_params p;
	struct vecindex *ix;
	struct vecdata *d = vecdata_new(dim, 16, dim < 10 ? dim : 10, 0.05f, seed);
	float *x = malloc(n * dim * sizeof(float) + 1);
	uint64_t *labels = malloc(n * sizeof(uint64_t) + 1), size;
	size_t i;

	CU_ASSERT_FATAL(d != NULL && x != NULL && labels != NULL);
	vecdata_points(d, 0, n, x);
	for (i = 0; i < n; i++)
		labels[i] = 1000 + i;
	vecindex_params_init(&p, kind, metric, dim);
	CU_ASSERT_EQUAL_FATAL(vecindex_size(&p, n, &size), 0);
	range_new(r, size);
	CU_ASSERT_EQUAL_FATAL(vecindex_create(r->base, r->len, &p), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(r->base, r->len, NULL, &ix), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_writer_acquire(ix, 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(vecindex_add_batch(ix, n, labels, x), (int)n);
	free(labels);
	vecdata_free(d);
	if (ret_x != NULL)
		*ret_x = x;
	else
		free(x);
	return ix;
}

/* The same model's queries. */
static float *queries(uint32_t dim, size_t n, uint64_t seed)
{
	struct vecdata *d = vecdata_new(dim, 16, dim < 10 ? dim : 10, 0.05f, seed);
	float *q = malloc(n * dim * sizeof(float));

	CU_ASSERT_FATAL(d != NULL && q != NULL);
	vecdata_queries(d, 0, n, q);
	vecdata_free(d);
	return q;
}

static void test_params(void)
{
	struct vecindex_params p;
	uint64_t size;

	vecindex_params_init(&p, VECINDEX_HNSW, VECINDEX_L2, 128);
	CU_ASSERT_EQUAL(vecindex_params_check(&p), 0);
	CU_ASSERT_EQUAL(p.m, VECINDEX_M_DEFAULT);
	CU_ASSERT_EQUAL(vecindex_params_check(NULL), -EINVAL);
	p.kind = 3;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "kind 3"));
	p.kind = VECINDEX_HNSW;
	p.metric = 0;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.metric = 4;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.metric = VECINDEX_COSINE;
	p.dim = 0;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "dimension 0"));
	p.dim = VECINDEX_DIM_MAX + 1;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.dim = VECINDEX_DIM_MAX;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), 0);
	p.m = 1;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.m = VECINDEX_M_MAX + 1;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.m = 8;
	p.ef_construction = 0;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.ef_construction = VECINDEX_EF_MAX + 1;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	p.ef_construction = 100;
	p.ef_search = 0;
	CU_ASSERT_EQUAL(vecindex_params_check(&p), -EINVAL);
	/* Flat indexes ignore the HNSW parameters. */
	vecindex_params_init(&p, VECINDEX_FLAT, VECINDEX_IP, 3);
	CU_ASSERT_EQUAL(vecindex_params_check(&p), 0);
	CU_ASSERT_EQUAL(vecindex_size(&p, 10, NULL), -EINVAL);
	p.dim = 0;
	CU_ASSERT_EQUAL(vecindex_size(&p, 10, &size), -EINVAL);
}

/* vecindex_size() gives a range that holds that many vectors, and not many more. */
static void test_size(void)
{
	static const uint32_t dims[] = {1, 7, 128, 1000};
	size_t i, kind;

	for (kind = VECINDEX_FLAT; kind <= VECINDEX_HNSW; kind++)
		for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
			struct vecindex_stat st;
			struct range r;
			size_t n = dims[i] > 100 ? 300 : 3000;
			struct vecindex *ix =
			    index_new(&r, (uint32_t)kind, VECINDEX_L2, dims[i], n, i + 1, NULL);

			vecindex_stat(ix, &st);
			CU_ASSERT_EQUAL(st.count, n);
			CU_ASSERT(st.used <= st.size && st.size == r.len);
			/* Not wasteful: at most 3/8 more than what is in use, and 64 KiB. */
			CU_ASSERT(st.size <= st.used + st.used / 8 * 3 + 65536);
			vecindex_close(ix);
			range_free(&r);
		}
}

static void test_create_open(void)
{
	struct vecindex_params p;
	struct vecindex *ix;
	struct range r;
	uint64_t saved;
	uint8_t *b;

	vecindex_params_init(&p, VECINDEX_HNSW, VECINDEX_L2, 16);
	range_new(&r, 1 << 20);
	b = r.base;
	CU_ASSERT_EQUAL(vecindex_create(NULL, r.len, &p), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_create(b + 8, r.len - 8, &p), -EINVAL); /* not 64-byte aligned */
	CU_ASSERT_EQUAL(vecindex_create(b, 4096, &p), -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "cannot hold"));
	/* Not an index. */
	CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, &ix), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "bad magic"));
	CU_ASSERT_EQUAL(vecindex_create(b, r.len, &p), 0);
	CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_open(b, 100, NULL, &ix), -EBADMSG);
	/* Opened through a shorter range than it was made for. */
	CU_ASSERT_EQUAL(vecindex_open(b, r.len - 4096, NULL, &ix), -EBADMSG);
	/* Wrong magic. */
	b[0] ^= 1;
	CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, &ix), -EBADMSG);
	b[0] ^= 1;
	/* Another version. */
	b[8]++;
	CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, &ix), -EPROTONOSUPPORT);
	b[8]--;
	/* A parameter changed: the checksum catches it. */
	b[32] ^= 4; /* dim */
	CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, &ix), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "checksum"));
	b[32] ^= 4;
	/* A layout field changed and the checksum recomputed: the layout check catches it. */
	memcpy(&saved, b + 72, 8); /* capacity */
	{
		uint64_t cap = saved * 2, h = UINT64_C(0xcbf29ce484222325);
		size_t i;

		memcpy(b + 72, &cap, 8);
		for (i = 0; i < 104; i++)
			h = (h ^ b[i]) * UINT64_C(0x100000001b3);
		memcpy(b + 104, &h, 8);
		CU_ASSERT_EQUAL(vecindex_open(b, r.len, NULL, &ix), -EBADMSG);
		CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "layout"));
		memcpy(b + 72, &saved, 8);
		h = UINT64_C(0xcbf29ce484222325);
		for (i = 0; i < 104; i++)
			h = (h ^ b[i]) * UINT64_C(0x100000001b3);
		memcpy(b + 104, &h, 8);
	}
	CU_ASSERT_EQUAL_FATAL(vecindex_open(b, r.len, NULL, &ix), 0);
	vecindex_close(ix);
	range_free(&r);
}

static void test_bad_input(void)
{
	struct vecindex_params p;
	struct vecindex *ix, *ix2;
	struct range r;
	float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, zero[8] = {0};
	uint64_t labels[4];
	unsigned counts[2];
	uint32_t owner = 0;

	vecindex_params_init(&p, VECINDEX_HNSW, VECINDEX_COSINE, 8);
	range_new(&r, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(vecindex_create(r.base, r.len, &p), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(r.base, r.len, NULL, &ix), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(r.base, r.len, NULL, &ix2), 0);
	/* An empty index finds nothing. */
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 4, 0, labels, NULL), 0);
	/* Adds need the writer token, which one handle holds at a time. */
	CU_ASSERT_EQUAL(vecindex_add(ix, 1, v), -EPERM);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix, 0, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix, 7, 0x10, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix, 7, 0, NULL), 0);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix2, 8, 0, &owner), -EBUSY);
	CU_ASSERT_EQUAL(owner, 7);
	CU_ASSERT_EQUAL(vecindex_add(ix2, 1, v), -EPERM);
	CU_ASSERT_EQUAL(vecindex_add(ix, 1, v), 0);
	/* Takeover: the old holder can no longer add. */
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix2, 8, VECINDEX_TAKEOVER, NULL), 0);
	CU_ASSERT_EQUAL(vecindex_add(ix, 2, v), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "owner 8"));
	CU_ASSERT_EQUAL(vecindex_add(ix2, 2, v), 0);
	CU_ASSERT_EQUAL(vecindex_writer_release(ix), -EPERM);
	/* Bad vectors. */
	CU_ASSERT_EQUAL(vecindex_add(ix2, 3, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_add(ix2, 3, zero), -EINVAL); /* cosine of a zero vector */
	v[3] = NAN;
	CU_ASSERT_EQUAL(vecindex_add(ix2, 3, v), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "component 3"));
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 4, 0, labels, NULL), -EINVAL);
	v[3] = INFINITY;
	CU_ASSERT_EQUAL(vecindex_add(ix2, 3, v), -EINVAL);
	v[3] = 4;
	/* Bad searches. */
	CU_ASSERT_EQUAL(vecindex_search(NULL, NULL, v, 4, 0, labels, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, NULL, 4, 0, labels, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 4, 0, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 0, 0, labels, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, VECINDEX_K_MAX + 1, 0, labels, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 4, VECINDEX_EF_MAX + 1, labels, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, zero, 4, 0, labels, NULL), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_search_batch(ix, NULL, 1, v, 2, 0, labels, NULL, NULL), -EINVAL);
	/* Two vectors in, asked for four: two out, the rest of a batch's slots marked unused. */
	CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 4, 0, labels, NULL), 2);
	CU_ASSERT_EQUAL(vecindex_search_batch(ix, NULL, 1, v, 4, 0, labels, NULL, counts), 0);
	CU_ASSERT_EQUAL(counts[0], 2);
	CU_ASSERT_EQUAL(labels[2], UINT64_MAX);
	CU_ASSERT_EQUAL(labels[3], UINT64_MAX);
	CU_ASSERT_EQUAL(vecindex_add_batch(ix2, 1, NULL, v), -EINVAL);
	CU_ASSERT_EQUAL(vecindex_remove(ix, 1), -EPERM);
	CU_ASSERT_EQUAL(vecindex_remove(ix2, 99), -ENOENT);
	vecindex_close(ix);
	vecindex_close(ix2);
	range_free(&r);
}

/* Every kernel agrees with a plain double-precision sum, at every tail length. */
static void test_kernels(void)
{
	const struct vecdist_ops *ops[8];
	size_t nops = vecdist_variants(ops, 8), v, dim, i;
	float *a = malloc(4096 * sizeof(float)), *b = malloc(4096 * sizeof(float));
	uint64_t s = 3;

	CU_ASSERT_FATAL(nops >= 1 && a != NULL && b != NULL);
	for (i = 0; i < 4096; i++) {
		a[i] = (float)((int64_t)(vecdata_rand(&s) % 2001) - 1000) / 256;
		b[i] = (float)((int64_t)(vecdata_rand(&s) % 2001) - 1000) / 256;
	}
	for (v = 0; v < nops; v++)
		for (dim = 1; dim <= 4096; dim = dim < 200 ? dim + 1 : dim * 2) {
			double l2 = 0, dot = 0;

			for (i = 0; i < dim; i++) {
				l2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
				dot += (double)a[i] * b[i];
			}
			CU_ASSERT(fabs(ops[v]->l2(a, b, dim) - l2) <= 1e-4 * (l2 + 1));
			CU_ASSERT(fabs(ops[v]->dot(a, b, dim) - dot) <= 1e-4 * (fabs(dot) + dim));
		}
	free(a);
	free(b);
}

/* The exact k nearest by a naive double-precision scan: labels base + index. */
static void naive(const float *x, size_t n, uint32_t dim, uint32_t metric, const float *q,
		  unsigned k, uint64_t *out, const uint8_t *gone)
{
	double *best = malloc(k * sizeof(double)), qn = 0;
	size_t i, j, have = 0;

	for (j = 0; j < dim; j++)
		qn += (double)q[j] * q[j];
	for (i = 0; i < n; i++) {
		double d = 0, xn = 0, dot = 0;

		if (gone != NULL && gone[i])
			continue;
		for (j = 0; j < dim; j++) {
			double t = (double)x[i * dim + j] - q[j];

			d += t * t;
			dot += (double)x[i * dim + j] * q[j];
			xn += (double)x[i * dim + j] * x[i * dim + j];
		}
		if (metric == VECINDEX_IP)
			d = 1 - dot;
		else if (metric == VECINDEX_COSINE)
			d = 1 - dot / sqrt(xn * qn);
		for (j = have < k ? have++ : k; j > 0 && best[j - 1] > d; j--) {
			if (j < k) {
				best[j] = best[j - 1];
				out[j] = out[j - 1];
			}
		}
		if (j < k) {
			best[j] = d;
			out[j] = 1000 + i;
		}
	}
	free(best);
}

/* Flat search is exact, for every metric, with results sorted nearest first. */
static void test_flat_exact(void)
{
	const uint32_t dim = 37, k = 10;
	const size_t n = 3000, nq = 50;
	uint32_t metric;

	for (metric = VECINDEX_L2; metric <= VECINDEX_COSINE; metric++) {
		struct range r;
		float *x, *q = queries(dim, nq, 11), d[10];
		struct vecindex *ix = index_new(&r, VECINDEX_FLAT, metric, dim, n, 11, &x);
		uint64_t got[10], want[10], *batch = malloc(nq * k * sizeof(uint64_t));
		unsigned *counts = malloc(nq * sizeof(unsigned));
		size_t i, j, same = 0;

		for (i = 0; i < nq; i++) {
			CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q + i * dim, k, 0, got, d),
					(int)k);
			naive(x, n, dim, metric, q + i * dim, k, want, NULL);
			same += memcmp(got, want, sizeof(got)) == 0;
			for (j = 1; j < k; j++)
				CU_ASSERT(d[j - 1] <= d[j]);
		}
		/* Float sums against double ones may swap a near tie; nearly all must agree. */
		CU_ASSERT(same >= nq - 2);
		/* A batch gives what the single searches gave. */
		CU_ASSERT_EQUAL(vecindex_search_batch(ix, NULL, nq, q, k, 0, batch, NULL, counts),
				0);
		for (i = 0; i < nq; i++) {
			CU_ASSERT_EQUAL(counts[i], k);
			CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q + i * dim, k, 0, got, NULL),
					(int)k);
			CU_ASSERT(memcmp(got, batch + i * k, sizeof(got)) == 0);
		}
		/* A stored vector is its own nearest neighbour, at distance 0 (not so for ip). */
		CU_ASSERT_EQUAL(vecindex_search(ix, NULL, x + 123 * dim, 1, 0, got, d), 1);
		if (metric != VECINDEX_IP) {
			CU_ASSERT_EQUAL(got[0], 1123);
			CU_ASSERT(fabsf(d[0]) < 1e-3f);
		}
		free(batch);
		free(counts);
		free(x);
		free(q);
		vecindex_close(ix);
		range_free(&r);
	}
}

/* recall@k of an index against the naive scan. */
static double recall(struct vecindex *ix, const float *x, size_t n, uint32_t dim, uint32_t metric,
		     const float *q, size_t nq, unsigned k, unsigned ef)
{
	uint64_t *got = malloc(k * sizeof(uint64_t)), *want = malloc(k * sizeof(uint64_t));
	size_t i, a, b, hit = 0;

	for (i = 0; i < nq; i++) {
		CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q + i * dim, k, ef, got, NULL), (int)k);
		naive(x, n, dim, metric, q + i * dim, k, want, NULL);
		for (a = 0; a < k; a++)
			for (b = 0; b < k; b++)
				if (got[a] == want[b]) {
					hit++;
					break;
				}
	}
	free(got);
	free(want);
	return (double)hit / (double)(nq * k);
}

/*
 * HNSW at its default parameters finds at least 95% of the true 10 nearest
 * on clustered data of low intrinsic dimension, for each metric; and the
 * check can fail: a search with ef 1 and k 10 misses more than that.
 */
static void test_hnsw_recall(void)
{
	const uint32_t dim = 128;
	const size_t n = 20000, nq = 200;
	uint32_t metric;

	for (metric = VECINDEX_L2; metric <= VECINDEX_COSINE; metric++) {
		struct range r;
		float *x, *q = queries(dim, nq, 21);
		size_t nn = metric == VECINDEX_L2 ? n : n / 4;
		struct vecindex *ix = index_new(&r, VECINDEX_HNSW, metric, dim, nn, 21, &x);
		struct vecindex_stat st;
		double rc = recall(ix, x, nn, dim, metric, q, nq, 10, 0);

		vecindex_stat(ix, &st);
		CU_ASSERT(st.levels >= 2);
		printf("\n    metric %u: recall@10 %.4f (%zu vectors, %u levels, %s)", metric, rc,
		       nn, st.levels, vecindex_simd(ix));
		CU_ASSERT(rc >= 0.95);
		/* A narrower search (ef = k) finds fewer, but still most. */
		if (metric == VECINDEX_L2) {
			double narrow = recall(ix, x, nn, dim, metric, q, nq, 10, 1);

			printf(", %.4f with ef = k", narrow);
			CU_ASSERT(narrow <= rc && narrow >= 0.5);
		}
		free(x);
		free(q);
		vecindex_close(ix);
		range_free(&r);
	}
}

/* Removed vectors are never found again, by flat or HNSW search. */
static void test_tombstones(void)
{
	const uint32_t dim = 16, k = 20;
	const size_t n = 4000;
	uint32_t kind;

	for (kind = VECINDEX_FLAT; kind <= VECINDEX_HNSW; kind++) {
		struct range r;
		float *x, *q = queries(dim, 100, 5);
		struct vecindex *ix = index_new(&r, kind, VECINDEX_L2, dim, n, 5, &x);
		uint8_t *gone = calloc(n, 1);
		struct vecindex_stat st;
		uint64_t got[20], want[20];
		size_t i, j, hit = 0;

		/* Remove every third vector, and the nearest of each query. */
		for (i = 0; i < n; i += 3) {
			CU_ASSERT_EQUAL(vecindex_remove(ix, 1000 + i), 1);
			gone[i] = 1;
		}
		CU_ASSERT_EQUAL(vecindex_remove(ix, 1000), -ENOENT);
		for (i = 0; i < 100; i++) {
			CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q + i * dim, 1, 0, got, NULL), 1);
			CU_ASSERT(!gone[got[0] - 1000]);
			if (!gone[got[0] - 1000]) {
				CU_ASSERT_EQUAL(vecindex_remove(ix, got[0]), 1);
				gone[got[0] - 1000] = 1;
			}
		}
		vecindex_stat(ix, &st);
		CU_ASSERT_EQUAL(st.deleted, (n + 2) / 3 + 100);
		for (i = 0; i < 100; i++) {
			CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q + i * dim, k, 0, got, NULL),
					(int)k);
			naive(x, n, dim, VECINDEX_L2, q + i * dim, k, want, gone);
			for (j = 0; j < k; j++) {
				size_t b;

				CU_ASSERT_FATAL(got[j] >= 1000 && got[j] < 1000 + n);
				CU_ASSERT(!gone[got[j] - 1000]);
				for (b = 0; b < k; b++)
					hit += got[j] == want[b];
			}
		}
		/* Recall over what is left holds up (exact for flat). */
		if (kind == VECINDEX_FLAT)
			CU_ASSERT(hit >= 100 * k - 4);
		CU_ASSERT((double)hit / (100.0 * k) >= 0.9);
		free(gone);
		free(x);
		free(q);
		vecindex_close(ix);
		range_free(&r);
	}
}

/* A full range fails adds with -ENOSPC and stays searchable. */
static void test_full(void)
{
	uint32_t kind;

	for (kind = VECINDEX_FLAT; kind <= VECINDEX_HNSW; kind++) {
		struct vecindex_params p;
		struct vecindex_stat st;
		struct vecindex *ix;
		struct range r;
		struct vecdata *d = vecdata_new(24, 4, 4, 0.05f, 9);
		float v[24];
		uint64_t i, got[5];
		int rc = 0;

		vecindex_params_init(&p, kind, VECINDEX_L2, 24);
		range_new(&r, 256 * 1024);
		CU_ASSERT_EQUAL_FATAL(vecindex_create(r.base, r.len, &p), 0);
		CU_ASSERT_EQUAL_FATAL(vecindex_open(r.base, r.len, NULL, &ix), 0);
		CU_ASSERT_EQUAL_FATAL(vecindex_writer_acquire(ix, 1, 0, NULL), 0);
		for (i = 0; i < 100000 && rc == 0; i++) {
			vecdata_points(d, i, 1, v);
			rc = vecindex_add(ix, i, v);
		}
		CU_ASSERT_EQUAL(rc, -ENOSPC);
		CU_ASSERT_PTR_NOT_NULL(strstr(vecindex_errmsg(), "full"));
		vecindex_stat(ix, &st);
		CU_ASSERT_EQUAL(st.count, i - 1);
		CU_ASSERT(st.used <= st.size);
		if (kind == VECINDEX_FLAT)
			CU_ASSERT_EQUAL(st.count, st.capacity);
		/* Most of the range is in use. */
		CU_ASSERT(st.used >= r.len / 10 * 9);
		CU_ASSERT_EQUAL(vecindex_add(ix, i, v), -ENOSPC);
		/* Still searchable: the last vector added finds itself. */
		vecdata_points(d, st.count - 1, 1, v);
		CU_ASSERT_EQUAL(vecindex_search(ix, NULL, v, 5, 0, got, NULL), 5);
		CU_ASSERT_EQUAL(got[0], st.count - 1);
		vecdata_free(d);
		vecindex_close(ix);
		range_free(&r);
	}
}

/* One memfd mapped twice, at two addresses: both mappings give identical results. */
static void test_two_mappings(void)
{
	const uint32_t dim = 32, k = 10;
	const size_t n = 3000, nq = 100, len = 8 << 20;
	struct vecindex_params p;
	struct vecindex *a, *b;
	struct vecdata *d = vecdata_new(dim, 8, 6, 0.05f, 13);
	float *x = malloc(n * dim * sizeof(float)), *q = queries(dim, nq, 13);
	uint64_t *la = malloc(nq * k * 8), *lb = malloc(nq * k * 8), labels[3000];
	float *da = malloc(nq * k * 4), *db = malloc(nq * k * 4);
	unsigned ca[100], cb[100];
	uint8_t *ma, *mb;
	size_t i;
	int fd = memfd_create("vecindex-test", MFD_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, len) == 0);
	ma = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	mb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT_FATAL(ma != MAP_FAILED && mb != MAP_FAILED && ma != mb);
	vecdata_points(d, 0, n, x);
	for (i = 0; i < n; i++)
		labels[i] = i * 7;
	vecindex_params_init(&p, VECINDEX_HNSW, VECINDEX_L2, dim);
	CU_ASSERT_EQUAL_FATAL(vecindex_create(ma, len, &p), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(ma, len, NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_writer_acquire(a, 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(vecindex_add_batch(a, n / 2, labels, x), (int)n / 2);
	/* The second half through the other mapping, by another writer. */
	CU_ASSERT_EQUAL(vecindex_writer_release(a), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(mb, len, NULL, &b), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_writer_acquire(b, 2, 0, NULL), 0);
	CU_ASSERT_EQUAL(vecindex_add_batch(b, n - n / 2, labels + n / 2, x + n / 2 * dim),
			(int)(n - n / 2));
	CU_ASSERT_EQUAL(vecindex_search_batch(a, NULL, nq, q, k, 0, la, da, ca), 0);
	CU_ASSERT_EQUAL(vecindex_search_batch(b, NULL, nq, q, k, 0, lb, db, cb), 0);
	CU_ASSERT(memcmp(la, lb, nq * k * 8) == 0);
	CU_ASSERT(memcmp(da, db, nq * k * 4) == 0);
	CU_ASSERT(memcmp(ca, cb, sizeof(ca)) == 0);
	for (i = 0; i < nq; i++)
		CU_ASSERT_EQUAL(ca[i], k);
	/* And both find the vectors the other mapping added. */
	CU_ASSERT_EQUAL(vecindex_search(a, NULL, x + (n - 1) * dim, 1, 0, la, NULL), 1);
	CU_ASSERT_EQUAL(la[0], (n - 1) * 7);
	vecindex_close(a);
	vecindex_close(b);
	munmap(ma, len);
	munmap(mb, len);
	close(fd);
	vecdata_free(d);
	free(x);
	free(q);
	free(la);
	free(lb);
	free(da);
	free(db);
}

/*
 * A writer that died after publishing a node (W1) but before the count
 * (W4): the next writer counts the node in, and it is found.
 */
static void test_recover(void)
{
	struct vecindex_stat st;
	struct range r;
	float *x;
	struct vecindex *ix = index_new(&r, VECINDEX_HNSW, VECINDEX_L2, 16, 500, 17, &x), *ix2;
	uint64_t *count = (uint64_t *)(r.base + 128), got;

	vecindex_stat(ix, &st);
	CU_ASSERT_EQUAL_FATAL(st.count, 500);
	*count = 498; /* the last two adds "did not finish" */
	CU_ASSERT_EQUAL(vecindex_open(r.base, r.len, NULL, &ix2), 0);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix2, 2, 0, NULL), -EBUSY);
	CU_ASSERT_EQUAL(vecindex_writer_acquire(ix2, 2, VECINDEX_TAKEOVER, NULL), 0);
	vecindex_stat(ix2, &st);
	CU_ASSERT_EQUAL(st.count, 500);
	CU_ASSERT_EQUAL(vecindex_search(ix2, NULL, x + 499 * 16, 1, 0, &got, NULL), 1);
	CU_ASSERT_EQUAL(got, 1499);
	vecindex_close(ix);
	vecindex_close(ix2);
	free(x);
	range_free(&r);
}

/*
 * Searches on a corrupted index return at most k results and do not crash;
 * when only offsets were corrupted (n > 0), results are sorted and their
 * labels are labels of the n vectors added.
 */
static void search_survives(struct vecindex *ix, const float *q, size_t nq, uint32_t dim, size_t n)
{
	uint64_t labels[10];
	float d[10];
	size_t i;
	int j;

	for (i = 0; i < nq; i++) {
		int rc = vecindex_search(ix, NULL, q + i * dim, 10, 0, labels, d);

		CU_ASSERT(rc >= 0 && rc <= 10);
		for (j = 0; n > 0 && j < rc; j++) {
			CU_ASSERT(labels[j] >= 1000 && labels[j] < 1000 + n);
			CU_ASSERT(j == 0 || d[j - 1] <= d[j]);
		}
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Crafted corruption of each kind of offset the readers follow. */
static void test_corrupt_crafted(void)
{
	const uint32_t dim = 16;
	struct range r;
	float *x, *q = queries(dim, 20, 19);
	struct vecindex *ix = index_new(&r, VECINDEX_HNSW, VECINDEX_L2, dim, 3000, 19, &x);
	uint8_t *b = r.base, saved[4096];
	uint64_t table, data, rec, m0 = 32, got[10];
	uint32_t shift, recsz;
	size_t i = 0;

	memcpy(&shift, b + 68, 4);
	memcpy(&recsz, b + 56, 4);
	memcpy(&table, b + 80, 8);
	memcpy(&data, b + 88, 8);
	memcpy(&rec, b + table, 8); /* chunk 0 */
	CU_ASSERT_FATAL(rec >= data && rec < r.len);
	/* Every test corrupts something, searches, and puts it back. */
	/* what: names the corruption for the reader */
#define CORRUPT(what, off, len, stmt)                                                              \
	do {                                                                                       \
		memcpy(saved, b + (off), (len));                                                   \
		stmt;                                                                              \
		search_survives(ix, q, 20, dim, 3000);                                             \
		memcpy(b + (off), saved, (len));                                                   \
		CU_ASSERT_EQUAL(vecindex_search(ix, NULL, q, 10, 0, got, NULL), 10);               \
	} while (0)
	/* Chunk offsets past the end, into the header, unaligned, all ones. */
	CORRUPT("chunk", table, 8, put64(b + table, r.len - 8));
	CORRUPT("chunk", table, 8, put64(b + table, 8));
	CORRUPT("chunk", table, 8, put64(b + table, rec + 3));
	CORRUPT("chunk", table, 64, memset(b + table, 0xff, 64));
	/* Link ids out of range; list lengths far beyond the room (in chunk 0's records). */
	for (i = 0; i < 40 && i < (UINT64_C(1) << shift); i++) {
		uint8_t *node = b + rec + i * recsz;

		CORRUPT("links", rec + i * recsz, 4 + 4 * m0, memset(node + 4, 0xee, 4 * m0));
		CORRUPT("length", rec + i * recsz, 4, put32(node, 0xffffffff));
		/* A state with an absurd level; an upper block out of range. */
		CORRUPT("state", rec + i * recsz + 4 + 4 * m0, 4,
			put32(node + 4 + 4 * m0, 0xffff01));
		CORRUPT("upper", rec + i * recsz + recsz - 8, 8,
			put64(node + recsz - 8, r.len - 16));
		CORRUPT("upper", rec + i * recsz + recsz - 8, 8,
			put64(node + recsz - 8, UINT64_MAX - 7));
	}
	/* Count beyond the capacity; entry point beyond it, or at an absurd level. */
	CORRUPT("count", 128, 8, put64(b + 128, UINT64_MAX));
	CORRUPT("entry", 136, 8, put64(b + 136, (UINT64_C(1) << 63) | 0xfffffff0));
	CORRUPT("entry", 136, 8, put64(b + 136, (UINT64_C(1) << 63) | (UINT64_C(200) << 32)));
	/* The lists of chunk 0's first records all point at node 0: a cycle-rich graph. */
	CU_ASSERT_FATAL(shift >= 3 && 8 * recsz <= sizeof(saved));
	memcpy(saved, b + rec, 8 * recsz);
	for (i = 0; i < 8; i++)
		memset(b + rec + i * recsz + 4, 0, 4 * m0);
	search_survives(ix, q, 20, dim, 3000);
	memcpy(b + rec, saved, 8 * recsz);
#undef CORRUPT
	free(x);
	free(q);
	vecindex_close(ix);
	range_free(&r);
}

/* Random words written anywhere past the header, thousands of times. */
static void test_corrupt_random(void)
{
	const uint32_t dim = 8;
	uint32_t kind;

	for (kind = VECINDEX_FLAT; kind <= VECINDEX_HNSW; kind++) {
		struct range r;
		float *q = queries(dim, 4, 23);
		struct vecindex *ix = index_new(&r, kind, VECINDEX_L2, dim, 2000, 23, NULL);
		uint64_t s = 23, i;

		for (i = 0; i < 3000; i++) {
			uint64_t off = 128 + vecdata_rand(&s) % (r.len - 128 - 8);
			uint64_t w = vecdata_rand(&s);

			switch (w % 4) { /* small ids, huge values, ones, zero */
			case 0:
				w %= 4000;
				break;
			case 1:
				break;
			case 2:
				w = UINT64_MAX;
				break;
			default:
				w = 0;
			}
			memcpy(r.base + (off & ~UINT64_C(3)), &w, (w & 1) ? 8 : 4);
			search_survives(ix, q, 4, dim, 0);
		}
		free(q);
		vecindex_close(ix);
		range_free(&r);
	}
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"parameters are checked", test_params},
	    {"vecindex_size fits the vectors", test_size},
	    {"create and open check the header", test_create_open},
	    {"bad input and the writer token", test_bad_input},
	    {"distance kernels agree with a plain sum", test_kernels},
	    {"flat search is exact", test_flat_exact},
	    {"hnsw recall@10 >= 0.95 at default parameters", test_hnsw_recall},
	    {"tombstones are never found", test_tombstones},
	    {"a full range gives ENOSPC", test_full},
	    {"two mappings give identical results", test_two_mappings},
	    {"a new writer counts a dead writer's last nodes", test_recover},
	    {"crafted corruption: no crash", test_corrupt_crafted},
	    {"random corruption: no crash", test_corrupt_random},
	    {NULL, NULL},
	};

	return unit_run("vecindex", tests);
}

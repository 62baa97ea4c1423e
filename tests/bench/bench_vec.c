/*
 * tests/bench/bench_vec.c - pool-bench-vec: our vector indexes through
 * libpool, in regions of a running poold (tests/bench/vec.sh; pool-bench
 * vec). Makes the clustered data set, builds a flat and an HNSW index of
 * it, measures them, and writes the data file (bench_vec.h) with the
 * exact nearest neighbours from the flat index for the baselines to read.
 *
 *	pool-bench-vec [-n N] [-d DIM] [-q NQ] [-f NQ_FLAT] [-k K] [-M M]
 *	               [-c EFC] [-e EF] [-s SEED] [-r REPEATS] [-t SECS] -o DATAFILE
 *
 * Build: one writer adds all vectors in batches of 1,000. Bytes per vector:
 * the bytes of the region the index uses, divided by N. QPS: one query per
 * pool_vec_search() call, from one thread, then from two threads sharing
 * the handle, for at least SECS seconds (0.3), best of REPEATS runs (3);
 * batch: one pool_vec_search_batch() call for all queries, best of REPEATS. The flat index
 * runs only the first NQ_FLAT queries one at a time (its batch runs all
 * NQ, and gives the truth). Each index is then also copied out of its
 * region into this process's own memory and measured there ("pool-private"
 * rows): the same code on other memory.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libpool/libpool.h"
#include "vecindex/vecindex.h"
#include "tests/bench/bench_vec.h"
#include "tests/tools/vecdata.h"

struct run {
	struct pool_vec *v;
	const struct bench_vec_data *d;
	uint64_t *labels;
	_Atomic int rc;
};

static unsigned repeats = 3;
static double min_s = 0.3;

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-bench-vec: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	return 1;
}

static void run_one(void *arg, size_t i)
{
	struct run *r = arg;
	int rc = pool_vec_search(r->v, r->d->queries + i * r->d->dim, r->d->k,
				 r->labels + i * r->d->k, NULL);

	if (rc < 0)
		r->rc = rc;
}

/* Queries [0, nq), one per call, from nthreads threads: queries per second, or -1. */
static double run_queries(struct pool_vec *v, const struct bench_vec_data *d, size_t nq,
			  unsigned nthreads, uint64_t *labels)
{
	struct run r = {v, d, labels, 0};
	double qps = bench_vec_qps(nq, nthreads, min_s, repeats, run_one, &r);

	if (r.rc < 0)
		return fail("search", r.rc), -1;
	return qps;
}

/*
 * The same index copied out of its region into this process's own memory
 * (the layout has no pointers, so a copy is an index), searched by the
 * same code through libvecindex: what the memory the index lives in costs.
 */
struct private_run {
	const struct vecindex *ix;
	const struct bench_vec_data *d;
	uint64_t *labels;
};

static pthread_key_t private_key; /* each thread's search context, freed when it ends */

static void private_one(void *arg, size_t i)
{
	struct vecindex_ctx *ctx = pthread_getspecific(private_key);
	struct private_run *r = arg;

	if (ctx == NULL && (vecindex_ctx_new(&ctx) < 0 || pthread_setspecific(private_key, ctx)))
		return;
	vecindex_search(r->ix, ctx, r->d->queries + i * r->d->dim, r->d->k, 0,
			r->labels + i * r->d->k, NULL);
}

static int bench_private(struct pool *pool, const char *name, const char *kind,
			 const struct bench_vec_data *d, size_t nq_single, double bytes)
{
	uint64_t *found = malloc(d->nq * d->k * sizeof(uint64_t));
	unsigned *counts = malloc(d->nq * sizeof(unsigned));
	struct private_run r = {NULL, d, found};
	struct pool_region *reg;
	struct vecindex *ix;
	double q1, q2, batch, t0;
	uint64_t size;
	unsigned i;
	void *copy;
	int rc;

	if ((rc = pool_region_open(pool, name, 0, &reg)) < 0)
		return fail("open the region", rc);
	size = pool_region_size(reg);
	copy = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
	if (found == NULL || counts == NULL || copy == NULL)
		return fail("memory", -ENOMEM);
	if ((rc = pool_region_read(reg, 0, copy, size)) < 0)
		return fail("read the region", rc);
	pool_region_close(reg);
	if ((rc = vecindex_open(copy, size, NULL, &ix)) < 0) {
		fprintf(stderr, "pool-bench-vec: the copy: %s\n", vecindex_errmsg());
		return 1;
	}
	r.ix = ix;
	for (i = 0, batch = 0; i < repeats; i++) {
		t0 = bench_vec_now();
		if ((rc = vecindex_search_batch(ix, NULL, d->nq, d->queries, d->k, 0, found, NULL,
						counts)) < 0)
			return fail("search the copy", rc);
		t0 = (double)d->nq / (bench_vec_now() - t0);
		batch = t0 > batch ? t0 : batch;
	}
	q1 = bench_vec_qps(nq_single, 1, min_s, repeats, private_one, &r);
	q2 = bench_vec_qps(nq_single, 2, min_s, repeats, private_one, &r);
	{
		struct bench_vec_data sub = *d;

		sub.nq = nq_single;
		bench_vec_result("pool-private", kind, -1, bytes, q1, q2, batch,
				 bench_vec_recall(&sub, found));
	}
	vecindex_close(ix);
	free(copy);
	free(found);
	free(counts);
	return 0;
}

/* Build an index of kind in region name and measure it; truth: fill in d->truth (flat). */
static int bench(struct pool *pool, const char *name, unsigned kind, struct bench_vec_data *d,
		 const struct pool_vec_opts *o, size_t nq_single, int truth)
{
	uint64_t size, *labels = malloc(d->n * sizeof(uint64_t));
	uint64_t *found = malloc(d->nq * d->k * sizeof(uint64_t));
	unsigned *counts = malloc(d->nq * sizeof(unsigned));
	struct pool_vec_info *info;
	struct pool_vec *v;
	double t0, build, bytes, q1, q2, batch, recall;
	size_t i;
	int rc;

	if (labels == NULL || found == NULL || counts == NULL)
		return fail("memory", -ENOMEM);
	for (i = 0; i < d->n; i++)
		labels[i] = i;
	pool_region_destroy(pool, name); /* left from an earlier run */
	if ((rc = pool_vec_size(kind, d->dim, d->n, o, &size)) < 0 ||
	    (rc = pool_vec_create(pool, name, kind, POOL_VEC_L2, d->dim, size, o, 0, &v)) < 0)
		return fail("create", rc);
	t0 = bench_vec_now();
	for (i = 0; i < d->n; i += 1000) {
		size_t m = d->n - i < 1000 ? d->n - i : 1000;

		if ((rc = pool_vec_add_batch(v, m, labels + i, d->base + i * d->dim)) != (int)m)
			return fail("add", rc < 0 ? rc : -EIO);
	}
	build = bench_vec_now() - t0;
	if ((rc = pool_vec_stat(v, &info)) < 0)
		return fail("stat", rc);
	bytes = (double)pool_vec_info_used(info) / (double)d->n;
	pool_vec_info_free(info);
	for (i = 0, batch = 0; i < repeats; i++) {
		t0 = bench_vec_now();
		if ((rc = pool_vec_search_batch(v, d->nq, d->queries, d->k,
						truth ? d->truth : found, NULL, counts)) < 0)
			return fail("search", rc);
		t0 = (double)d->nq / (bench_vec_now() - t0);
		batch = t0 > batch ? t0 : batch;
	}
	memset(found, 0xff, d->nq * d->k * sizeof(uint64_t));
	if ((q1 = run_queries(v, d, nq_single, 1, found)) < 0 ||
	    (q2 = run_queries(v, d, nq_single, 2, found)) < 0)
		return 1;
	{
		struct bench_vec_data sub = *d;

		sub.nq = nq_single;
		recall = bench_vec_recall(&sub, found);
	}
	bench_vec_result("pool", kind == POOL_VEC_FLAT ? "flat" : "hnsw", build, bytes, q1, q2,
			 batch, recall);
	pool_vec_close(v);
	if (bench_private(pool, name, kind == POOL_VEC_FLAT ? "flat" : "hnsw", d, nq_single,
			  bytes) != 0)
		return 1;
	pool_region_destroy(pool, name);
	free(labels);
	free(found);
	free(counts);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_vec_data d = {.dim = 128, .k = 10, .n = 100000, .nq = 1000};
	unsigned m = 16, efc = 200, ef = 64;
	uint64_t seed = 1;
	size_t nq_flat = 200;
	const char *out = NULL;
	struct pool_vec_opts *o;
	struct vecdata *g;
	struct pool *pool;
	double t0;
	int opt, rc;

	while ((opt = getopt(argc, argv, "n:d:q:f:k:M:c:e:s:o:r:t:")) != -1) {
		switch (opt) {
		case 'r':
			repeats = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 't':
			min_s = strtod(optarg, NULL);
			break;
		case 'n':
			d.n = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			d.dim = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			d.nq = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			nq_flat = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			d.k = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'M':
			m = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			efc = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'e':
			ef = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (out == NULL || d.n == 0 || d.nq == 0 || d.dim == 0 || d.k == 0 || optind != argc)
		goto usage;
	if (nq_flat == 0 || nq_flat > d.nq)
		nq_flat = d.nq;
	t0 = bench_vec_now();
	g = vecdata_new(d.dim, 16, d.dim < 8 ? d.dim : 8, 0.05f, seed);
	d.base = malloc(d.n * d.dim * sizeof(float));
	d.queries = malloc(d.nq * d.dim * sizeof(float));
	d.truth = malloc(d.nq * d.k * sizeof(uint64_t));
	if (g == NULL || d.base == NULL || d.queries == NULL || d.truth == NULL)
		return fail("memory", -ENOMEM);
	vecdata_points(g, 0, d.n, d.base);
	vecdata_queries(g, 0, d.nq, d.queries);
	printf("# %" PRIu64 " vectors of %u dimensions (16 clusters of 8 dimensions, noise 0.05, "
	       "seed %" PRIu64 "), %" PRIu64 " queries, k %u, M %u, ef_construction %u, ef %u; "
	       "made in %.1f s\n",
	       d.n, d.dim, seed, d.nq, d.k, m, efc, ef, bench_vec_now() - t0);
	fflush(stdout);
	if ((rc = pool_open(NULL, 0, &pool)) < 0)
		return fail("open pool", rc);
	if (pthread_key_create(&private_key, (void (*)(void *))vecindex_ctx_free) != 0)
		return fail("thread key", -ENOMEM);
	pool_vec_opts_new(&o);
	if ((rc = pool_vec_opts_set_hnsw(o, m, efc, ef)) < 0)
		return fail("options", rc);
	if (bench(pool, "bench-vec-flat", POOL_VEC_FLAT, &d, o, nq_flat, 1) != 0)
		return 1;
	if (bench_vec_file(out, &d, 1) < 0) {
		fprintf(stderr, "pool-bench-vec: cannot write %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (bench(pool, "bench-vec-hnsw", POOL_VEC_HNSW, &d, o, d.nq, 0) != 0)
		return 1;
	pool_vec_opts_free(o);
	pool_close(pool);
	vecdata_free(g);
	return 0;
usage:
	fprintf(stderr, "usage: pool-bench-vec [-n N] [-d DIM] [-q NQ] [-f NQ_FLAT] [-k K] [-M M] "
			"[-c EFC] [-e EF] [-s SEED] [-r REPEATS] [-t SECS] -o DATAFILE\n");
	return 2;
}

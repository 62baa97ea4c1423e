/*
 * tests/bench/bench_vec.h - what pool-bench-vec and its baselines share:
 * the data file, timing, recall and the result line.
 *
 * pool-bench-vec writes the data file (base vectors, queries, and the
 * exact k nearest of each query from the flat index); each baseline reads
 * it, so that all of them search the same data in the same run:
 *
 *	"poolvecb" | dim u32 | k u32 | n u64 | nq u64 |
 *	base f32[n * dim] | queries f32[nq * dim] | truth u64[nq * k]
 *
 * Labels are the base vectors' positions. Every program prints one line a
 * configuration, which tests/bench/vec.sh puts in a table:
 *
 *	RESULT impl=NAME kind=KIND build_s=S bytes=B qps1=Q qps2=Q batch=Q recall=R
 *
 * (bytes: per vector; batch: queries per second through one call for all
 * queries, or - when there is no such call; build_s - when nothing was
 * built). Queries per second are
 * measured the same way by all (bench_vec_qps()).
 */
#ifndef POOL_BENCH_VEC_H
#define POOL_BENCH_VEC_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench_vec_data {
	uint32_t dim, k;
	uint64_t n, nq;
	float *base, *queries;
	uint64_t *truth;
};

static inline double bench_vec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_vec_io(FILE *f, void *p, size_t len, int write)
{
	return (write ? fwrite(p, 1, len, f) : fread(p, 1, len, f)) == len ? 0 : -1;
}

/* Write (write != 0) or read the data file; 0 or -1. */
static inline int bench_vec_file(const char *path, struct bench_vec_data *d, int write)
{
	char magic[8];
	FILE *f = fopen(path, write ? "wb" : "rb");
	int rc = -1;

	if (f == NULL)
		return -1;
	memcpy(magic, "poolvecb", 8);
	if (bench_vec_io(f, magic, 8, write) < 0 || memcmp(magic, "poolvecb", 8) != 0 ||
	    bench_vec_io(f, &d->dim, 4, write) < 0 || bench_vec_io(f, &d->k, 4, write) < 0 ||
	    bench_vec_io(f, &d->n, 8, write) < 0 || bench_vec_io(f, &d->nq, 8, write) < 0)
		goto out;
	if (!write) {
		d->base = (float *)malloc(d->n * d->dim * sizeof(float));
		d->queries = (float *)malloc(d->nq * d->dim * sizeof(float));
		d->truth = (uint64_t *)malloc(d->nq * d->k * sizeof(uint64_t));
		if (d->base == NULL || d->queries == NULL || d->truth == NULL)
			goto out;
	}
	if (bench_vec_io(f, d->base, d->n * d->dim * sizeof(float), write) == 0 &&
	    bench_vec_io(f, d->queries, d->nq * d->dim * sizeof(float), write) == 0 &&
	    bench_vec_io(f, d->truth, d->nq * d->k * sizeof(uint64_t), write) == 0)
		rc = 0;
out:
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* recall@k: the share of the true k nearest found, over all queries (k labels each). */
static inline double bench_vec_recall(const struct bench_vec_data *d, const uint64_t *labels)
{
	uint64_t hit = 0, i, a, b;

	for (i = 0; i < d->nq; i++)
		for (a = 0; a < d->k; a++)
			for (b = 0; b < d->k; b++)
				if (labels[i * d->k + a] == d->truth[i * d->k + b]) {
					hit++;
					break;
				}
	return (double)hit / (double)(d->nq * d->k);
}

/* One query: search query i (and keep its results). */
typedef void (*bench_vec_search_fn)(void *arg, size_t i);

struct bench_vec_thread {
	pthread_t th;
	bench_vec_search_fn fn;
	void *arg;
	size_t nq, t, nthreads, done;
	double end;
};

static inline void *bench_vec_worker(void *p)
{
	struct bench_vec_thread *w = (struct bench_vec_thread *)p;
	size_t i = w->t;

	/* Round and round its share of the queries until the time is up, once at least. */
	for (;;) {
		w->fn(w->arg, i);
		w->done++;
		if ((i += w->nthreads) >= w->nq) {
			i = w->t;
			if (bench_vec_now() >= w->end)
				break;
		}
	}
	return NULL;
}

/*
 * Queries per second of fn over queries [0, nq) from nthreads threads,
 * each thread taking every nthreads-th query, all of them at least once and
 * again until min_s seconds have passed; the best of repeats runs, since
 * other work on a shared machine only ever slows a run down.
 */
static inline double bench_vec_qps(size_t nq, unsigned nthreads, double min_s, unsigned repeats,
				   bench_vec_search_fn fn, void *arg)
{
	struct bench_vec_thread w[16];
	double best = 0;
	unsigned r, t;

	if (nthreads > 16)
		nthreads = 16;
	for (r = 0; r < repeats; r++) {
		double t0 = bench_vec_now(), qps;
		size_t done = 0;

		for (t = 0; t < nthreads; t++) {
			w[t].fn = fn;
			w[t].arg = arg;
			w[t].nq = nq;
			w[t].t = t;
			w[t].nthreads = nthreads;
			w[t].done = 0;
			w[t].end = t0 + min_s;
			if (pthread_create(&w[t].th, NULL, bench_vec_worker, &w[t]) != 0)
				return -1;
		}
		for (t = 0; t < nthreads; t++) {
			pthread_join(w[t].th, NULL);
			done += w[t].done;
		}
		qps = (double)done / (bench_vec_now() - t0);
		if (qps > best)
			best = qps;
	}
	return best;
}

static inline void bench_vec_result(const char *impl, const char *kind, double build_s,
				    double bytes, double qps1, double qps2, double batch,
				    double recall)
{
	char b[32] = "-", t[32] = "-";

	if (batch > 0)
		snprintf(b, sizeof(b), "%.0f", batch);
	if (build_s >= 0)
		snprintf(t, sizeof(t), "%.2f", build_s);
	printf("RESULT impl=%s kind=%s build_s=%s bytes=%.0f qps1=%.0f qps2=%.0f batch=%s "
	       "recall=%.4f\n",
	       impl, kind, t, bytes, qps1, qps2, b, recall);
	fflush(stdout);
}

#endif

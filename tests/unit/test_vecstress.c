/*
 * tests/unit/test_vecstress.c - one writer adds (and removes) while reader
 * threads search the same index, flat and HNSW. Readers check every
 * result: at most k, sorted, labels of vectors whose add had begun, none
 * removed before the search began, and each distance equal to the distance
 * to that label's vector (so a reader never saw a half-written node). At
 * the end the HNSW index's recall must be within bounds. Built like every
 * test, so a --enable-tsan build runs it under ThreadSanitizer.
 *
 * $VEC_STRESS_N sets the number of vectors (default 6000).
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecindex/vecindex.h"
#include "tests/tools/vecdata.h"
#include "tests/unit/unit.h"

#define DIM 32
#define K 10
#define READERS 3
#define LABEL0 5000000u

struct stress {
	struct vecindex *ix;
	size_t n;
	float *x, *q;
	size_t nq;
	_Atomic size_t started;	       /* adds begun */
	_Atomic uint64_t seq;	       /* removes finished */
	_Atomic uint64_t *removed_seq; /* per vector: seq when its remove finished, or 0 */
	_Atomic int done;
	_Atomic uint64_t searches, late, bad; /* late: in the second half of the adds */
	char first_bad[256];
	pthread_mutex_t lock;
};

static void stress_bad(struct stress *s, const char *what, uint64_t label, double a, double b)
{
	if (atomic_fetch_add(&s->bad, 1) == 0) {
		pthread_mutex_lock(&s->lock);
		snprintf(s->first_bad, sizeof(s->first_bad), "%s (label %llu: %g vs %g)", what,
			 (unsigned long long)label, a, b);
		pthread_mutex_unlock(&s->lock);
	}
}

static double l2(const float *a, const float *b)
{
	double d = 0;
	size_t i;

	for (i = 0; i < DIM; i++)
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
	return d;
}

static void *reader(void *arg)
{
	struct stress *s = arg;
	struct vecindex_ctx *c;
	uint64_t rng = (uintptr_t)&c, labels[K];
	float d[K];

	if (vecindex_ctx_new(&c) < 0)
		return NULL;
	while (!atomic_load(&s->done)) {
		const float *q = s->q + (vecdata_rand(&rng) % s->nq) * DIM;
		uint64_t seq0 = atomic_load(&s->seq);
		int rc = vecindex_search(s->ix, c, q, K, 0, labels, d), j;
		size_t started = atomic_load(&s->started);

		atomic_fetch_add(&s->searches, 1);
		if (rc < 0 || rc > K) {
			stress_bad(s, "search failed or returned more than k", 0, rc, K);
			continue;
		}
		if (started > s->n / 2)
			atomic_fetch_add(&s->late, 1);
		for (j = 0; j < rc; j++) {
			uint64_t i = labels[j] - LABEL0, rs;

			if (labels[j] < LABEL0 || i >= started) {
				stress_bad(s, "label of no vector added", labels[j], (double)i,
					   (double)started);
				continue;
			}
			rs = atomic_load_explicit(&s->removed_seq[i], memory_order_relaxed);
			if (rs != 0 && rs <= seq0)
				stress_bad(s, "removed before the search began", labels[j],
					   (double)rs, (double)seq0);
			if (fabs(d[j] - l2(q, s->x + i * DIM)) > 1e-3 * (1 + d[j]))
				stress_bad(s, "distance is not that of the label's vector",
					   labels[j], d[j], l2(q, s->x + i * DIM));
			if (j > 0 && d[j - 1] > d[j])
				stress_bad(s, "results not sorted", labels[j], d[j - 1], d[j]);
		}
	}
	vecindex_ctx_free(c);
	return NULL;
}

/*
 * The writer: add every vector; after every seventh, remove one added 50
 * before. Every 50 adds it lets the readers run a few searches, so that
 * searches are spread over the whole build.
 */
static void writer(struct stress *s)
{
	uint64_t seen = 0;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (i % 50 == 0) {
			while (atomic_load(&s->searches) < seen + 2 * READERS)
				sched_yield();
			seen = atomic_load(&s->searches);
		}
		atomic_store(&s->started, i + 1);
		if (vecindex_add(s->ix, LABEL0 + i, s->x + i * DIM) < 0) {
			stress_bad(s, "add failed", LABEL0 + i, 0, 0);
			break;
		}
		if (i % 7 == 0 && i >= 50) {
			if (vecindex_remove(s->ix, LABEL0 + i - 50) != 1)
				stress_bad(s, "remove failed", LABEL0 + i - 50, 0, 0);
			/* Mark it with the sequence number the remove is published under. */
			atomic_store_explicit(&s->removed_seq[i - 50], atomic_load(&s->seq) + 1,
					      memory_order_relaxed);
			atomic_fetch_add(&s->seq, 1);
		}
	}
}

/* recall@K of the final index against a naive scan of the live vectors. */
static double final_recall(struct stress *s)
{
	size_t qi, i, a, b, hit = 0, nq = 100;

	for (qi = 0; qi < nq; qi++) {
		const float *q = s->q + qi * DIM;
		uint64_t got[K], want[K];
		double best[K];
		size_t have = 0;

		for (i = 0; i < s->n; i++) {
			double d = l2(q, s->x + i * DIM);

			if (atomic_load(&s->removed_seq[i]) != 0)
				continue;
			for (a = have < K ? have++ : K; a > 0 && best[a - 1] > d; a--)
				if (a < K) {
					best[a] = best[a - 1];
					want[a] = want[a - 1];
				}
			if (a < K) {
				best[a] = d;
				want[a] = LABEL0 + i;
			}
		}
		if (vecindex_search(s->ix, NULL, q, K, 0, got, NULL) != K)
			continue;
		for (a = 0; a < K; a++)
			for (b = 0; b < K; b++)
				hit += got[a] == want[b];
	}
	return (double)hit / (double)(nq * K);
}

static void stress(uint32_t kind)
{
	struct stress *s = calloc(1, sizeof(*s));
	struct vecindex_params p;
	struct vecdata *d = vecdata_new(DIM, 16, 8, 0.05f, 31);
	const char *env = getenv("VEC_STRESS_N");
	pthread_t th[READERS];
	uint64_t size;
	void *mem;
	size_t i;
	double rc;

	CU_ASSERT_FATAL(s != NULL && d != NULL);
	s->n = env ? strtoul(env, NULL, 0) : 6000;
	s->nq = 500;
	s->x = malloc(s->n * DIM * sizeof(float));
	s->q = malloc(s->nq * DIM * sizeof(float));
	s->removed_seq = calloc(s->n, sizeof(*s->removed_seq));
	CU_ASSERT_FATAL(s->x != NULL && s->q != NULL && s->removed_seq != NULL);
	pthread_mutex_init(&s->lock, NULL);
	vecdata_points(d, 0, s->n, s->x);
	vecdata_queries(d, 0, s->nq, s->q);
	vecindex_params_init(&p, kind, VECINDEX_L2, DIM);
	CU_ASSERT_EQUAL_FATAL(vecindex_size(&p, s->n, &size), 0);
	mem = aligned_alloc(64, size);
	CU_ASSERT_FATAL(mem != NULL);
	CU_ASSERT_EQUAL_FATAL(vecindex_create(mem, size, &p), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_open(mem, size, NULL, &s->ix), 0);
	CU_ASSERT_EQUAL_FATAL(vecindex_writer_acquire(s->ix, 1, 0, NULL), 0);
	for (i = 0; i < READERS; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, reader, s) == 0);
	writer(s);
	atomic_store(&s->done, 1);
	for (i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	rc = final_recall(s);
	printf("\n    %s: %zu vectors, %llu searches during the adds (%llu in their second half), "
	       "recall@%d after %.4f",
	       kind == VECINDEX_FLAT ? "flat" : "hnsw", s->n,
	       (unsigned long long)atomic_load(&s->searches),
	       (unsigned long long)atomic_load(&s->late), K, rc);
	if (atomic_load(&s->bad) > 0)
		printf("\n    %llu bad results; first: %s",
		       (unsigned long long)atomic_load(&s->bad), s->first_bad);
	CU_ASSERT_EQUAL(atomic_load(&s->bad), 0);
	CU_ASSERT(atomic_load(&s->late) >= READERS);
	CU_ASSERT(rc >= (kind == VECINDEX_FLAT ? 0.99 : 0.9));
	vecindex_close(s->ix);
	vecdata_free(d);
	free(mem);
	free(s->x);
	free(s->q);
	free(s->removed_seq);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void test_flat(void)
{
	stress(VECINDEX_FLAT);
}

static void test_hnsw(void)
{
	stress(VECINDEX_HNSW);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"flat: readers search while the writer adds and removes", test_flat},
	    {"hnsw: readers search while the writer adds and removes", test_hnsw},
	    {NULL, NULL},
	};

	return unit_run("vecstress", tests);
}

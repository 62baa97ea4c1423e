/*
 * tests/tools/pool-vec.c - drive vector indexes through libpool for the
 * tests. Vectors are clustered synthetic points (tests/tools/vecdata.h) of
 * a seed; vector i has label i.
 *
 *	pool-vec create NAME flat|hnsw l2|ip|cosine DIM SIZE[v] [M EFC EFS]
 *	                               (SIZE bytes, or SIZEv: room for SIZE vectors)
 *	pool-vec add NAME FIRST N SEED [BATCH]
 *	pool-vec search NAME NQ SEED K (one line a query: label:distance ...)
 *	pool-vec recall NAME TRUTH NQ SEED K
 *	                               (recall@K of NAME against the flat index TRUTH)
 *	pool-vec watch NAME SECS SEED  (search again and again; exit 1 on a bad result)
 *	pool-vec remove NAME LABEL
 *	pool-vec stat NAME
 *	pool-vec hold NAME             (hold the writer token until killed)
 *
 * -s (before the command): reserve 1 GiB of address space first, so that
 * this process maps the pool somewhere else than an identical one would;
 * the address is printed on stderr. The socket is $POOL_SOCKET.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libpool/libpool.h"
#include "tests/tools/vecdata.h"

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-vec: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	return 1;
}

static unsigned parse_enum(const char *s, const char *const *names, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i + 1;
	return 0; /* not one of them: the library says why */
}

static struct vecdata *model(struct pool_vec *v, uint64_t seed, unsigned *ret_dim)
{
	struct pool_vec_info *info;

	if (pool_vec_stat(v, &info) < 0)
		return NULL;
	*ret_dim = pool_vec_info_dim(info);
	pool_vec_info_free(info);
	return vecdata_new(*ret_dim, 16, *ret_dim < 8 ? *ret_dim : 8, 0.05f, seed);
}

/* Where this process mapped the region, for the two-mappings test. */
static void show_map(struct pool *pool, const char *name)
{
	struct pool_region *r;
	void *addr;

	if (pool_region_open(pool, name, 0, &r) < 0)
		return;
	if (pool_region_map(r, &addr) == 0)
		fprintf(stderr, "mapped at %p\n", addr);
	pool_region_close(r);
}

static int cmd_create(struct pool *pool, int argc, char **argv)
{
	static const char *const kinds[] = {"flat", "hnsw"};
	static const char *const metrics[] = {"l2", "ip", "cosine"};
	struct pool_vec_opts *o;
	struct pool_vec *v;
	unsigned kind, dim;
	uint64_t size;
	char *end;
	int rc;

	if (argc < 7)
		return 2;
	kind = parse_enum(argv[3], kinds, 2);
	dim = (unsigned)strtoul(argv[5], NULL, 0);
	size = strtoull(argv[6], &end, 0);
	pool_vec_opts_new(&o);
	pool_vec_opts_set_mode(o, 0644);
	rc = argc < 10 ? 0
		       : pool_vec_opts_set_hnsw(o, (unsigned)atoi(argv[7]), (unsigned)atoi(argv[8]),
						(unsigned)atoi(argv[9]));
	if (rc == 0 && *end == 'v')
		rc = pool_vec_size(kind, dim, size, o, &size);
	if (rc == 0)
		rc = pool_vec_create(pool, argv[2], kind, parse_enum(argv[4], metrics, 3), dim,
				     size, o, 0, &v);
	pool_vec_opts_free(o);
	if (rc < 0)
		return fail("create", rc);
	printf("created %s: %" PRIu64 " bytes\n", argv[2], size);
	return pool_vec_close(v) < 0;
}

static int cmd_add(struct pool_vec *v, int argc, char **argv)
{
	uint64_t first, n, seed, batch = 256, i, j;
	struct vecdata *d;
	unsigned dim;
	uint64_t *labels;
	float *x;
	int rc = 0;

	if (argc < 6)
		return 2;
	first = strtoull(argv[3], NULL, 0);
	n = strtoull(argv[4], NULL, 0);
	seed = strtoull(argv[5], NULL, 0);
	if (argc > 6)
		batch = strtoull(argv[6], NULL, 0);
	if (batch == 0 || (d = model(v, seed, &dim)) == NULL)
		return 2;
	x = malloc(batch * dim * sizeof(float));
	labels = malloc(batch * sizeof(uint64_t));
	for (i = 0; i < n; i += batch) {
		uint64_t m = n - i < batch ? n - i : batch;

		vecdata_points(d, first + i, m, x);
		for (j = 0; j < m; j++)
			labels[j] = first + i + j;
		rc = pool_vec_add_batch(v, m, labels, x);
		if (rc >= 0 && (uint64_t)rc < m) /* the rest says why */
			rc = pool_vec_add_batch(v, m - rc, labels + rc, x + (size_t)rc * dim);
		if (rc < 0)
			break;
	}
	free(x);
	free(labels);
	vecdata_free(d);
	if (rc < 0)
		return fail("add", rc);
	printf("added %" PRIu64 "\n", n);
	return 0;
}

/* NQ queries, K results each: labels[NQ * K] and dists; 0 or exit status. */
static int run_search(struct pool_vec *v, uint64_t nq, uint64_t seed, unsigned k,
		      uint64_t **ret_labels, float **ret_dists, unsigned **ret_counts)
{
	struct vecdata *d;
	unsigned dim;
	float *q;
	int rc;

	if (nq == 0 || k == 0 || (d = model(v, seed, &dim)) == NULL)
		return 2;
	q = malloc(nq * dim * sizeof(float));
	*ret_labels = malloc(nq * k * sizeof(uint64_t));
	*ret_dists = malloc(nq * k * sizeof(float));
	*ret_counts = malloc(nq * sizeof(unsigned));
	vecdata_queries(d, 0, nq, q);
	rc = pool_vec_search_batch(v, nq, q, k, *ret_labels, *ret_dists, *ret_counts);
	free(q);
	vecdata_free(d);
	return rc < 0 ? fail("search", rc) : 0;
}

static int cmd_search(struct pool_vec *v, int argc, char **argv)
{
	uint64_t nq, i, *labels;
	unsigned k, j, *counts;
	float *dists;
	int rc;

	if (argc < 6)
		return 2;
	nq = strtoull(argv[3], NULL, 0);
	k = (unsigned)strtoul(argv[5], NULL, 0);
	rc = run_search(v, nq, strtoull(argv[4], NULL, 0), k, &labels, &dists, &counts);
	if (rc != 0)
		return rc;
	for (i = 0; i < nq; i++) {
		printf("q%" PRIu64 ":", i);
		for (j = 0; j < counts[i]; j++)
			printf(" %" PRIu64 ":%.6g", labels[i * k + j], dists[i * k + j]);
		printf("\n");
	}
	free(labels);
	free(dists);
	free(counts);
	return 0;
}

static int cmd_recall(struct pool *pool, struct pool_vec *v, int argc, char **argv)
{
	uint64_t nq, seed, i, hit = 0, *got, *want;
	unsigned k, a, b, *cg, *cw;
	struct pool_vec *t;
	float *dg, *dw;
	int rc;

	if (argc < 7)
		return 2;
	nq = strtoull(argv[4], NULL, 0);
	seed = strtoull(argv[5], NULL, 0);
	k = (unsigned)strtoul(argv[6], NULL, 0);
	if ((rc = pool_vec_open(pool, argv[3], 0, &t)) < 0)
		return fail("open the truth", rc);
	if ((rc = run_search(v, nq, seed, k, &got, &dg, &cg)) != 0 ||
	    (rc = run_search(t, nq, seed, k, &want, &dw, &cw)) != 0)
		return rc;
	for (i = 0; i < nq; i++)
		for (a = 0; a < cg[i]; a++)
			for (b = 0; b < cw[i]; b++)
				hit += got[i * k + a] == want[i * k + b];
	printf("recall@%u %.4f\n", k, (double)hit / (double)(nq * k));
	free(got);
	free(dg);
	free(cg);
	free(want);
	free(dw);
	free(cw);
	return pool_vec_close(t) < 0;
}

/* Search again and again while another process adds; every result must make sense. */
static int cmd_watch(struct pool_vec *v, int argc, char **argv)
{
	struct pool_vec_info *info;
	struct vecdata *d;
	time_t end;
	uint64_t searches = 0, labels[10];
	unsigned dim;
	float dists[10], *q;
	int rc, j;

	if (argc < 5 || (d = model(v, strtoull(argv[4], NULL, 0), &dim)) == NULL)
		return 2;
	q = malloc(64 * dim * sizeof(float));
	vecdata_queries(d, 0, 64, q);
	end = time(NULL) + atoi(argv[3]);
	while (time(NULL) < end) {
		uint64_t count;

		rc = pool_vec_search(v, q + (searches % 64) * dim, 10, labels, dists);
		if (rc < 0)
			return fail("search", rc);
		if (pool_vec_stat(v, &info) < 0)
			return fail("stat", -EIO);
		count = pool_vec_info_count(info);
		pool_vec_info_free(info);
		for (j = 0; j < rc; j++)
			if (labels[j] >= count || (j > 0 && dists[j - 1] > dists[j])) {
				fprintf(stderr,
					"pool-vec: bad result %d: label %" PRIu64 " (count %" PRIu64
					")\n",
					j, labels[j], count);
				return 1;
			}
		searches++;
	}
	printf("watched: %" PRIu64 " searches\n", searches);
	free(q);
	vecdata_free(d);
	return 0;
}

static int cmd_stat(struct pool_vec *v)
{
	static const char *const kinds[] = {"?", "flat", "hnsw"};
	static const char *const metrics[] = {"?", "l2", "ip", "cosine"};
	struct pool_vec_info *i;
	int rc = pool_vec_stat(v, &i);

	if (rc < 0)
		return fail("stat", rc);
	printf("kind %s metric %s dim %u m %u efc %u efs %u count %" PRIu64 " deleted %" PRIu64
	       " capacity %" PRIu64 " used %" PRIu64 " size %" PRIu64 " writer %u\n",
	       kinds[pool_vec_info_kind(i) % 3], metrics[pool_vec_info_metric(i) % 4],
	       pool_vec_info_dim(i), pool_vec_info_m(i), pool_vec_info_ef_construction(i),
	       pool_vec_info_ef_search(i), pool_vec_info_count(i), pool_vec_info_deleted(i),
	       pool_vec_info_capacity(i), pool_vec_info_used(i), pool_vec_info_size(i),
	       pool_vec_info_writer(i));
	pool_vec_info_free(i);
	return 0;
}

int main(int argc, char **argv)
{
	struct pool_vec *v = NULL;
	struct pool *pool;
	const char *cmd;
	int status = 2, rc, write;

	if (argc > 1 && strcmp(argv[1], "-s") == 0) {
		void *hole = mmap(NULL, 1ul << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (hole == MAP_FAILED)
			return 1;
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: pool-vec [-s] create|add|search|recall|watch|remove|stat|"
				"hold NAME ...\n");
		return 2;
	}
	cmd = argv[1];
	if ((rc = pool_open(NULL, 0, &pool)) < 0)
		return fail("open pool", rc);
	if (strcmp(cmd, "create") == 0) {
		status = cmd_create(pool, argc, argv);
		goto out;
	}
	write = strcmp(cmd, "add") == 0 || strcmp(cmd, "remove") == 0 || strcmp(cmd, "hold") == 0;
	if ((rc = pool_vec_open(pool, argv[2], write ? POOL_VEC_WRITE : 0, &v)) < 0) {
		status = fail("open", rc);
		goto out;
	}
	if (strcmp(cmd, "search") == 0)
		show_map(pool, argv[2]);
	if (strcmp(cmd, "add") == 0)
		status = cmd_add(v, argc, argv);
	else if (strcmp(cmd, "search") == 0)
		status = cmd_search(v, argc, argv);
	else if (strcmp(cmd, "recall") == 0)
		status = cmd_recall(pool, v, argc, argv);
	else if (strcmp(cmd, "watch") == 0)
		status = cmd_watch(v, argc, argv);
	else if (strcmp(cmd, "stat") == 0)
		status = cmd_stat(v);
	else if (strcmp(cmd, "remove") == 0 && argc > 3) {
		rc = pool_vec_remove(v, strtoull(argv[3], NULL, 0));
		status = rc < 0 ? fail("remove", rc) : (printf("removed %d\n", rc), 0);
	} else if (strcmp(cmd, "hold") == 0) {
		printf("holding\n");
		fflush(stdout);
		for (;;)
			pause();
	}
out:
	pool_vec_close(v);
	pool_close(pool);
	if (status == 2)
		fprintf(stderr, "pool-vec: bad arguments for %s\n", cmd);
	return status;
}

/*
 * tests/tools/pool-kvload.c - many KV keys through libpool, and a prober
 * of poold's loop, for the tests of bulk KV work (kv-bulk.sh) and its
 * benchmark:
 *
 *	pool-kvload fill NS N SIZE [SEED]  put keys 0..N-1 of SEED (16 bytes,
 *	                                   as block hashes), SIZE-byte values,
 *	                                   4096 per batch; prints the rate
 *	pool-kvload count NS N [SEED]      how many of those keys have a value
 *	pool-kvload probe                  pool_status() round trips, one after
 *	                                   the other, until SIGTERM or SIGINT;
 *	                                   then their count, median, p99 and
 *	                                   longest in ms (the longest is the
 *	                                   longest poold's loop answered nobody);
 *	                                   each probe of 10 ms or more is told
 *	                                   on stderr with the time it ended
 * The socket is $POOL_SOCKET.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libpool/libpool.h"

#define KLEN 16
#define BATCH 4096
#define SLOW_MS 10.0 /* a probe this long is told as it happens */

static volatile sig_atomic_t stop;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-kvload: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	return 1;
}

/* Key i of seed: 16 printable bytes. */
static void key_of(uint64_t seed, uint64_t i, char *key)
{
	char buf[KLEN + 1];

	snprintf(buf, sizeof(buf), "%04" PRIx64 "%012" PRIx64, seed & 0xffff, i);
	memcpy(key, buf, KLEN);
}

/* The keys [first, first + n) of seed in keys (BATCH of KLEN bytes each). */
static void keys_of(uint64_t seed, uint64_t first, size_t n, char *keys)
{
	size_t i;

	for (i = 0; i < n; i++)
		key_of(seed, first + i, keys + i * KLEN);
}

/* Put keys 0..n-1 of seed, values of size bytes. */
static int fill(struct pool_kv *kv, uint64_t n, size_t size, uint64_t seed)
{
	static const void *kp[BATCH], *vp[BATCH];
	static size_t kl[BATCH], vl[BATCH];
	static int st[BATCH];
	char *keys = malloc((size_t)BATCH * KLEN), *val = malloc(size ? size : 1);
	double t0 = now_ms(), ms;
	uint64_t done = 0, at;
	size_t i, k;
	int rc = 0;

	if (keys == NULL || val == NULL) {
		fprintf(stderr, "pool-kvload: out of memory\n");
		rc = 1;
		goto out;
	}
	memset(val, 0x5a, size);
	for (i = 0; i < BATCH; i++) {
		kp[i] = keys + i * KLEN;
		kl[i] = KLEN;
		vp[i] = val;
		vl[i] = size;
	}
	for (at = 0; at < n; at += k) {
		k = (size_t)(n - at < BATCH ? n - at : BATCH);
		keys_of(seed, at, k, keys);
		rc = pool_kv_put_batch(kv, k, kp, kl, vp, vl, st);
		if (rc < 0) {
			rc = fail("put batch", rc);
			goto out;
		}
		done += (uint64_t)rc;
		if ((size_t)rc != k) {
			for (i = 0; i < k && st[i] == 0; i++)
				;
			fprintf(stderr,
				"pool-kvload: %zu of %zu keys not put (key %" PRIu64 ": %s)\n",
				k - (size_t)rc, k, at + i, pool_strerror(st[i]));
			rc = 1;
			goto out;
		}
	}
	rc = 0;
	ms = now_ms() - t0;
	printf("put %" PRIu64 " keys of %zu bytes in %.0f ms (%.0f keys/s)\n", done, size, ms,
	       ms > 0 ? (double)done * 1e3 / ms : 0);
out:
	free(keys);
	free(val);
	return rc;
}

/* How many of keys 0..n-1 of seed have a value: printed. */
static int count(struct pool_kv *kv, uint64_t n, uint64_t seed)
{
	static const void *kp[BATCH];
	static void *bp[BATCH];
	static size_t kl[BATCH], bl[BATCH], vl[BATCH];
	static int st[BATCH];
	static char buf[64];
	char *keys = malloc((size_t)BATCH * KLEN);
	uint64_t found = 0, at;
	size_t i, k;
	int rc;

	if (keys == NULL) {
		fprintf(stderr, "pool-kvload: out of memory\n");
		return 1;
	}
	for (i = 0; i < BATCH; i++) {
		kp[i] = keys + i * KLEN;
		kl[i] = KLEN;
		bp[i] = buf; /* the bytes are not looked at */
		bl[i] = sizeof(buf);
	}
	for (at = 0; at < n; at += k) {
		k = (size_t)(n - at < BATCH ? n - at : BATCH);
		keys_of(seed, at, k, keys);
		rc = pool_kv_get_batch(kv, k, kp, kl, bp, bl, vl, st);
		if (rc < 0) {
			free(keys);
			return fail("get batch", rc);
		}
		for (i = 0; i < k; i++)
			found += st[i] == 0;
	}
	free(keys);
	printf("%" PRIu64 "\n", found);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A probe that waited long: told on stderr with the time it ended, to match poold's log. */
static void slow(double ms)
{
	struct timespec ts;
	struct tm tm;
	char when[16];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(stderr, "slow answer: %.1f ms, at %s.%03ld\n", ms, when, ts.tv_nsec / 1000000);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Status round trips until told to stop: their figures. */
static int probe(struct pool *pool)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct pool_status *st;
	size_t n = 0, cap = 1 << 16;
	double *lat = malloc(cap * sizeof(*lat)), t;
	int rc;

	if (lat == NULL) {
		fprintf(stderr, "pool-kvload: out of memory\n");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		t = now_ms();
		rc = pool_status(pool, &st);
		if (rc < 0) {
			if (stop)
				break;
			free(lat);
			return fail("status", rc);
		}
		pool_status_free(st);
		if (n == cap) {
			double *more = realloc(lat, 2 * cap * sizeof(*lat));

			if (more == NULL)
				break;
			lat = more;
			cap *= 2;
		}
		lat[n] = now_ms() - t;
		if (lat[n] >= SLOW_MS)
			slow(lat[n]);
		n++;
	}
	if (n == 0) {
		printf("probes 0\n");
		free(lat);
		return 0;
	}
	qsort(lat, n, sizeof(*lat), cmp_double);
	printf("probes %zu median_ms %.2f p99_ms %.2f max_ms %.2f\n", n, lat[n / 2],
	       lat[n * 99 / 100], lat[n - 1]);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	struct pool_kv *kv = NULL;
	struct pool *pool;
	int rc, status;

	if (argc < 2 || (strcmp(argv[1], "probe") != 0 && argc < 4) ||
	    (strcmp(argv[1], "fill") == 0 && argc < 5)) {
		fprintf(stderr, "usage: pool-kvload fill NS N SIZE [SEED] | count NS N [SEED] | "
				"probe\n");
		return 2;
	}
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("open pool", rc);
	if (strcmp(argv[1], "probe") == 0) {
		status = probe(pool);
		goto out;
	}
	rc = pool_kv_open(pool, argv[2], &kv);
	if (rc < 0) {
		status = fail("open namespace", rc);
		goto out;
	}
	if (strcmp(argv[1], "fill") == 0)
		status = fill(kv, strtoull(argv[3], NULL, 0), (size_t)strtoull(argv[4], NULL, 0),
			      argc > 5 ? strtoull(argv[5], NULL, 0) : 0);
	else if (strcmp(argv[1], "count") == 0)
		status = count(kv, strtoull(argv[3], NULL, 0),
			       argc > 4 ? strtoull(argv[4], NULL, 0) : 0);
	else
		status = 2;
	pool_kv_close(kv);
out:
	pool_close(pool);
	return status;
}

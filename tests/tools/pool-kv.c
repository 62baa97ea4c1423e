/*
 * tests/tools/pool-kv.c - drive the KV cache through libpool for the tests.
 *
 *	pool-kv NS put KEY SIZE SEED      put a seeded value
 *	pool-kv NS get KEY SEED [BUFLEN]  get and verify it (exit 4 on a miss); its
 *	                                  buffer BUFLEN bytes (default 64 MiB)
 *	pool-kv NS exists KEY             exit 0 if present, 4 if not
 *	pool-kv NS remove KEY
 *	pool-kv NS mput PREFIX N SIZE SEED   batch put of keys PREFIX0..PREFIX<N-1>
 *	pool-kv NS mget PREFIX N SEED        batch get, verify, print hits
 *	                                     (more than 4096 keys: in batches of 4096);
 *	                                     with $POOL_KV_MISSES set, each key missed
 *	                                     first, "miss KEY" a line
 *	pool-kv NS match PREFIX N            leading keys present
 *	pool-kv NS hammer KEY SIZE SECS ID   put and get the same key again and again,
 *	                                     checking that no value is ever torn
 *	pool-kv NS view KEY SEED [hold]   acquire in place (or a copy) and verify;
 *	                                  hold: verify again at EOF on stdin, then release
 *	pool-kv NS vput KEY SIZE SEED [commit|abort|hold]
 *	                                  reserve, fill in place (or staged), then commit or
 *	                                  abort; hold: commit at EOF on stdin
 *	pool-kv NS rput KEY SIZE SEED OFF [striped]   put from a region at OFF
 *	pool-kv NS rget KEY SEED OFF MAXLEN [striped] get into a region at OFF, checking
 *	                                              the bytes around it are untouched
 *	pool-kv NS zbad KEY               the zero-copy calls refuse bad arguments (KEY is
 *	                                  present)
 *	pool-kv NS local PREFIX N         print the i of each PREFIXi whose value is on
 *	                                  this node (acquired in place)
 *	pool-kv NS alongside PREFIX N SEED PLACEMENT [LIST]
 *	                                  get PREFIX0..PREFIX<N-1> (those whose i is a line
 *	                                  of the file LIST) one at a time, each by a handle
 *	                                  of its own into 16 KiB (in one request, through
 *	                                  the window, where the value is on this node),
 *	                                  the values of mput's SEED checked, while another
 *	                                  thread writes and reads a region placed so (on
 *	                                  another node: not mapped); say how many gets
 *	                                  waited (over 20 ms: a shard on its way) and how
 *	                                  many region transfers began and ended within one
 *	                                  of those waits
 * put, view and vput print an FNV-1a checksum of the value. A striped region
 * is never mapped, so the region calls take their unmapped path.
 * The socket is $POOL_SOCKET.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libpool/libpool.h"

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-kv: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	return 1;
}

static uint64_t checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Whether buf holds the first len bytes of seed's value. */
static bool same(const void *buf, size_t len, uint64_t seed)
{
	uint8_t *want = malloc(len);
	bool eq;

	fill(want, len, seed);
	eq = memcmp(buf, want, len) == 0;
	free(want);
	return eq;
}

/* Wait for the test to close our stdin. */
static void wait_eof(void)
{
	char line[64];

	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL)
		;
}

static int view(struct pool_kv *kv, const char *key, uint64_t seed, bool hold)
{
	struct pool_kv_ref *ref;
	const void *data;
	size_t len;
	int rc;

	rc = pool_kv_acquire(kv, key, strlen(key), &data, &len, &ref);
	if (rc == -ENOENT) {
		printf("view %s: miss\n", key);
		return 4;
	}
	if (rc < 0)
		return fail("acquire", rc);
	if (!same(data, len, seed)) {
		fprintf(stderr, "pool-kv: view %s: wrong bytes\n", key);
		return 1;
	}
	printf("view %s: %zu bytes, correct, %s, checksum %016" PRIx64 "\n", key, len,
	       pool_kv_ref_local(ref) == 1 ? "in place" : "copied", checksum(data, len));
	if (hold) {
		wait_eof();
		if (!same(data, len, seed)) {
			fprintf(stderr, "pool-kv: view %s: the value changed while held\n", key);
			return 1;
		}
		printf("view %s: still correct after the hold\n", key);
	}
	rc = pool_kv_release(ref);
	return rc < 0 ? fail("release", rc) : 0;
}

static int vput(struct pool_kv *kv, const char *key, size_t size, uint64_t seed, const char *how)
{
	struct pool_kv_ref *ref;
	void *data;
	int rc;

	rc = pool_kv_reserve(kv, key, strlen(key), size, &data, &ref);
	if (rc < 0)
		return fail("reserve", rc);
	fill(data, size, seed);
	printf("vput %s: %zu bytes %s, checksum %016" PRIx64 "\n", key, size,
	       pool_kv_ref_local(ref) == 1 ? "in place" : "staged", checksum(data, size));
	if (strcmp(how, "hold") == 0) {
		printf("vput %s: reserved, not committed\n", key);
		wait_eof();
	}
	if (strcmp(how, "abort") == 0) {
		rc = pool_kv_abort(ref);
		if (rc < 0)
			return fail("abort", rc);
		printf("vput %s: aborted\n", key);
		return 0;
	}
	rc = pool_kv_commit(ref);
	if (rc < 0)
		return fail("commit", rc);
	printf("vput %s: committed\n", key);
	return 0;
}

/* An anonymous region of size bytes, striped (never mapped) or not, or placed so. */
static int region_placed(struct pool *pool, uint64_t size, bool striped, const char *placement,
			 struct pool_region **ret)
{
	struct pool_region_opts *o;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "pool-kv-%d", (int)getpid());
	rc = pool_region_opts_new(&o);
	if (rc == 0)
		rc = pool_region_opts_set_size(o, size);
	if (rc == 0 && (striped || placement != NULL))
		rc = pool_region_opts_set_placement(o, striped ? "spread" : placement);
	if (rc == 0 && striped)
		rc = pool_region_opts_set_stripe(o, 4096);
	if (rc == 0)
		rc = pool_region_create(pool, name, o, POOL_REGION_ANONYMOUS, ret);
	pool_region_opts_free(o);
	return rc < 0 ? fail("region", rc) : 0;
}

static int region_new(struct pool *pool, uint64_t size, bool striped, struct pool_region **ret)
{
	return region_placed(pool, size, striped, NULL, ret);
}

static const char *region_kind(struct pool_region *r)
{
	void *addr;

	return pool_region_map(r, &addr) == 0 ? "a mapped" : "an unmapped";
}

static int rput(struct pool *pool, struct pool_kv *kv, const char *key, size_t size, uint64_t seed,
		uint64_t off, bool striped)
{
	struct pool_region *r;
	uint8_t *buf = malloc(size);
	int rc;

	if (region_new(pool, off + size, striped, &r) != 0)
		return 1;
	fill(buf, size, seed);
	rc = pool_region_write(r, off, buf, size);
	if (rc < 0)
		return fail("region write", rc);
	rc = pool_kv_put_region(kv, key, strlen(key), r, off, size);
	if (rc < 0)
		return fail("put_region", rc);
	printf("rput %s: %zu bytes from %s region at %" PRIu64 ", checksum %016" PRIx64 "\n", key,
	       size, region_kind(r), off, checksum(buf, size));
	free(buf);
	pool_region_close(r);
	return 0;
}

/* Get into a region filled with 0xa5: the value lands at off, nothing else changes. */
static int rget(struct pool *pool, struct pool_kv *kv, const char *key, uint64_t seed, uint64_t off,
		size_t maxlen, bool striped)
{
	size_t size = off + maxlen + 4096, vlen = 0, n, i;
	uint8_t *buf = malloc(size);
	struct pool_region *r;
	int rc;

	if (region_new(pool, size, striped, &r) != 0)
		return 1;
	memset(buf, 0xa5, size);
	rc = pool_region_write(r, 0, buf, size);
	if (rc < 0)
		return fail("region write", rc);
	rc = pool_kv_get_region(kv, key, strlen(key), r, off, maxlen, &vlen);
	if (rc == -ENOENT) {
		printf("rget %s: miss\n", key);
		free(buf);
		pool_region_close(r);
		return 4;
	}
	if (rc < 0)
		return fail("get_region", rc);
	n = vlen < maxlen ? vlen : maxlen;
	rc = pool_region_read(r, 0, buf, size);
	if (rc < 0)
		return fail("region read", rc);
	if (!same(buf + off, n, seed)) {
		fprintf(stderr, "pool-kv: rget %s: wrong bytes\n", key);
		return 1;
	}
	for (i = 0; i < size; i++)
		if ((i < off || i >= off + n) && buf[i] != 0xa5) {
			fprintf(stderr, "pool-kv: rget %s: byte %zu outside the value changed\n",
				key, i);
			return 1;
		}
	printf("rget %s: %zu of %zu bytes into %s region at %" PRIu64 ", correct, checksum "
	       "%016" PRIx64 ", the rest untouched\n",
	       key, n, vlen, region_kind(r), off, checksum(buf + off, n));
	free(buf);
	pool_region_close(r);
	return 0;
}

static int nbad; /* bad calls that were not refused as they should be */

/* One bad call: it must fail with want, and say why. */
static void bad(const char *what, int got, int want)
{
	if (got != want) {
		printf("FAIL: %s: returned %d (%s), wanted %d (%s)\n", what, got,
		       pool_strerror(got), want, pool_strerror(want));
		nbad++;
		return;
	}
	printf("ok: %s: %s\n", what, pool_errormsg());
}

static int zbad(struct pool *pool, struct pool_kv *kv, const char *key)
{
	size_t klen = strlen(key), len;
	struct pool_region *r, *ro;
	struct pool_kv_ref *ref;
	char longkey[300], name[64];
	const void *cdata;
	void *data;
	int rc;

	memset(longkey, 'k', sizeof(longkey));
	bad("acquire, no namespace", pool_kv_acquire(NULL, key, klen, &cdata, &len, &ref), -EINVAL);
	bad("acquire, no key", pool_kv_acquire(kv, NULL, 1, &cdata, &len, &ref), -EINVAL);
	bad("acquire, empty key", pool_kv_acquire(kv, key, 0, &cdata, &len, &ref), -EINVAL);
	bad("acquire, 257-byte key",
	    pool_kv_acquire(kv, longkey, POOL_KV_KEY_MAX + 1, &cdata, &len, &ref), -EINVAL);
	bad("acquire, no ret_data", pool_kv_acquire(kv, key, klen, NULL, &len, &ref), -EINVAL);
	bad("acquire, missing key", pool_kv_acquire(kv, "no-such-key", 11, &cdata, &len, &ref),
	    -ENOENT);
	bad("reserve, empty value", pool_kv_reserve(kv, key, klen, 0, &data, &ref), -EINVAL);
	bad("reserve, value over 64M",
	    pool_kv_reserve(kv, key, klen, POOL_KV_VALUE_MAX + 1, &data, &ref), -EINVAL);
	bad("reserve, no ret_ref", pool_kv_reserve(kv, key, klen, 8, &data, NULL), -EINVAL);
	bad("release NULL", pool_kv_release(NULL), -EINVAL);
	bad("commit NULL", pool_kv_commit(NULL), -EINVAL);
	bad("abort NULL", pool_kv_abort(NULL), -EINVAL);
	bad("ref_local NULL", pool_kv_ref_local(NULL), -EINVAL);

	/* A ref given to the wrong end is refused and stays usable. */
	rc = pool_kv_reserve(kv, "zbad-reserved", 13, 4096, &data, &ref);
	if (rc < 0)
		return fail("reserve", rc);
	bad("release of a reservation", pool_kv_release(ref), -EINVAL);
	rc = pool_kv_abort(ref);
	if (rc < 0)
		return fail("abort", rc);
	rc = pool_kv_acquire(kv, key, klen, &cdata, &len, &ref);
	if (rc < 0)
		return fail("acquire", rc);
	bad("commit of an acquired value", pool_kv_commit(ref), -EINVAL);
	bad("abort of an acquired value", pool_kv_abort(ref), -EINVAL);
	rc = pool_kv_release(ref);
	if (rc < 0)
		return fail("release", rc);

	if (region_new(pool, 65536, false, &r) != 0)
		return 1;
	bad("get_region past the end", pool_kv_get_region(kv, key, klen, r, 61440, 8192, &len),
	    -ERANGE);
	bad("get_region at an offset past the end",
	    pool_kv_get_region(kv, key, klen, r, 65537, 1, &len), -ERANGE);
	bad("put_region past the end", pool_kv_put_region(kv, key, klen, r, 65535, 2), -ERANGE);
	bad("get_region, maxlen 0", pool_kv_get_region(kv, key, klen, r, 0, 0, &len), -EINVAL);
	bad("put_region, length 0", pool_kv_put_region(kv, key, klen, r, 0, 0), -EINVAL);
	bad("put_region, no region", pool_kv_put_region(kv, key, klen, NULL, 0, 8), -EINVAL);
	bad("get_region, 257-byte key",
	    pool_kv_get_region(kv, longkey, POOL_KV_KEY_MAX + 1, r, 0, 8, &len), -EINVAL);
	snprintf(name, sizeof(name), "pool-kv-%d", (int)getpid()); /* r, read-only */
	rc = pool_region_open(pool, name, 0, &ro);
	if (rc < 0)
		return fail("region open", rc);
	bad("get_region into a read-only region", pool_kv_get_region(kv, key, klen, ro, 0, 8, &len),
	    -EBADF);
	bad("get_region, missing key", pool_kv_get_region(kv, "no-such-key", 11, r, 0, 8, &len),
	    -ENOENT);
	pool_region_close(ro);
	pool_region_close(r);
	printf("zbad: %s\n",
	       nbad == 0 ? "every bad call refused" : "some bad calls were not refused");
	return nbad == 0 ? 0 : 1;
}

/* The command needs argc to be at least n. */
static void need(int argc, int n)
{
	if (argc >= n)
		return;
	fprintf(stderr, "pool-kv: too few arguments (see tests/tools/pool-kv.c)\n");
	exit(2);
}

/* A torn value would mix writers: every value starts with its writer's seed, repeated. */
static int hammer(struct pool_kv *kv, const char *key, size_t size, int secs, uint64_t id)
{
	uint8_t *buf = malloc(size), *got = malloc(size);
	time_t end = time(NULL) + secs;
	unsigned puts = 0, gets = 0, misses = 0;
	uint64_t n = 0;
	int status = 0;
	size_t vlen;

	while (status == 0 && time(NULL) < end) {
		uint64_t seed = id * 1000000 + n++;
		size_t i;
		int rc;

		for (i = 0; i + 8 <= size; i += 8)
			memcpy(buf + i, &seed, 8);
		rc = pool_kv_put(kv, key, strlen(key), buf, size);
		if (rc < 0) {
			status = fail("put", rc);
			break;
		}
		puts++;
		rc = pool_kv_get(kv, key, strlen(key), got, size, &vlen);
		if (rc == -ENOENT) {
			misses++;
			continue;
		}
		if (rc < 0) {
			status = fail("get", rc);
			break;
		}
		gets++;
		for (i = 8; i + 8 <= size && status == 0; i += 8)
			if (memcmp(got + i, got, 8) != 0) {
				fprintf(stderr, "pool-kv: torn value at byte %zu\n", i);
				status = 1;
			}
	}
	if (status == 0)
		printf("hammer %s: %u puts, %u gets, %u misses, no torn value\n", key, puts, gets,
		       misses);
	free(buf);
	free(got);
	return status;
}

/* put KEY SIZE SEED [soft|hard], or get KEY SEED [BUFLEN]: 0, 4 on a miss, 1 on failure. */
static int put_get(struct pool_kv *kv, const char *cmd, const char *key, int argc, char **argv)
{
	size_t size = cmd[0] == 'p' ? strtoull(argv[4], NULL, 0)
		      : argc > 5    ? strtoull(argv[5], NULL, 0)
				    : POOL_KV_VALUE_MAX,
	       vlen;
	uint64_t seed = strtoull(argv[cmd[0] == 'p' ? 5 : 4], NULL, 0);
	uint8_t *buf = malloc(size), *want = NULL;
	int rc, status = 0;

	if (cmd[0] == 'p') {
		fill(buf, size, seed);
		rc = pool_kv_put_pinned(kv, key, strlen(key), buf, size,
					argc <= 6		       ? POOL_KV_PIN_KEEP
					: strcmp(argv[6], "hard") == 0 ? POOL_KV_PIN_HARD
								       : POOL_KV_PIN_SOFT,
					0);
		if (rc < 0)
			status = fail("put", rc);
		else
			printf("put %s: %zu bytes, checksum %016" PRIx64 "\n", key, size,
			       checksum(buf, size));
	} else {
		rc = pool_kv_get(kv, key, strlen(key), buf, size, &vlen);
		if (rc == -ENOENT) {
			printf("get %s: miss\n", key);
			status = 4;
		} else if (rc < 0) {
			status = fail("get", rc);
		} else {
			want = malloc(vlen);
			fill(want, vlen, seed);
			if (memcmp(buf, want, vlen) != 0) {
				fprintf(stderr, "pool-kv: get %s: wrong bytes\n", key);
				status = 1;
			} else {
				printf("get %s: %zu bytes, correct\n", key, vlen);
			}
		}
	}
	free(want);
	free(buf);
	return status;
}

/* The most keys of one batch call (pool_kv_put_batch(3)). */
#define BATCH_MAX 4096
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/* mput PREFIX N SIZE SEED, mget PREFIX N SEED, match PREFIX N: 0, or 1 on failure. */
static int batch(struct pool_kv *kv, const char *cmd, const char *key, char **argv)
{
	size_t n = strtoull(argv[4], NULL, 0), i, size = 0, count, hits = 0;
	uint64_t seed = 0;
	char **keys = calloc(n, sizeof(*keys));
	size_t *klens = calloc(n, sizeof(*klens)), *lens = calloc(n, sizeof(*lens));
	size_t *vlens = calloc(n, sizeof(*vlens));
	void **bufs = calloc(n, sizeof(*bufs));
	int *st = calloc(n, sizeof(*st));
	int rc, status = 0;

	if (cmd[1] == 'p') {
		size = strtoull(argv[5], NULL, 0);
		seed = strtoull(argv[6], NULL, 0);
	} else if (cmd[1] == 'g') {
		seed = strtoull(argv[5], NULL, 0);
	}
	for (i = 0; i < n; i++) {
		if (asprintf(&keys[i], "%s%zu", key, i) < 0) {
			keys[i] = NULL;
			status = 1;
			goto out;
		}
		klens[i] = strlen(keys[i]);
		/* (a get of more than one batch takes values up to 64K, not 4M each) */
		lens[i] = cmd[1] == 'p' ? size : n > BATCH_MAX ? 64u << 10 : 4u << 20;
		bufs[i] = malloc(lens[i]);
		if (cmd[1] == 'p')
			fill(bufs[i], size, seed + i);
	}
	if (cmd[1] == 'a') {
		rc = pool_kv_match(kv, n, (const void *const *)keys, klens, &count);
		if (rc < 0)
			status = fail("match", rc);
		else
			printf("match %s: %zu of %zu\n", key, count, n);
	} else if (cmd[1] == 'p') {
		size_t stored = 0;

		for (i = 0, rc = 0; i < n && rc >= 0; i += BATCH_MAX) {
			rc = pool_kv_put_batch(kv, MIN(BATCH_MAX, n - i),
					       (const void *const *)keys + i, klens + i,
					       (const void *const *)bufs + i, lens + i, st + i);
			stored += rc > 0 ? (size_t)rc : 0;
		}
		if (rc < 0)
			status = fail("mput", rc);
		else
			printf("mput %s: %zu of %zu stored\n", key, stored, n);
	} else {
		for (i = 0, rc = 0; i < n && rc >= 0; i += BATCH_MAX)
			rc = pool_kv_get_batch(kv, MIN(BATCH_MAX, n - i),
					       (const void *const *)keys + i, klens + i, bufs + i,
					       lens + i, vlens + i, st + i);
		if (rc < 0)
			status = fail("mget", rc);
		for (i = 0; rc >= 0 && status == 0 && i < n; i++) {
			uint8_t *want;

			if (st[i] != 0) {
				if (getenv("POOL_KV_MISSES") != NULL)
					printf("miss %s\n", keys[i]);
				continue;
			}
			want = malloc(vlens[i]);
			fill(want, vlens[i], seed + i);
			if (memcmp(bufs[i], want, vlens[i]) != 0) {
				size_t at = 0, zeros = 0, j;

				while (at < vlens[i] && ((uint8_t *)bufs[i])[at] == want[at])
					at++;
				for (j = 0; j < vlens[i]; j++)
					zeros += ((uint8_t *)bufs[i])[j] == 0;
				fprintf(stderr,
					"pool-kv: %s: wrong bytes from offset %zu of %zu "
					"(%zu zero bytes)\n",
					keys[i], at, vlens[i], zeros);
				status = 1;
			}
			free(want);
			hits++;
		}
		if (rc >= 0 && status == 0)
			printf("mget %s: %zu hits of %zu, all correct\n", key, hits, n);
	}
out:
	for (i = 0; i < n; i++) {
		free(keys[i]);
		free(bufs[i]);
	}
	free(keys);
	free(klens);
	free(lens);
	free(vlens);
	free(bufs);
	free(st);
	return status;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * The region side of alongside: a write and a read back, again and again
 * until told to stop, each pair's [begin, end) in us.
 */
struct alongside {
	struct pool_region *r;
	atomic_bool stop;
	uint64_t (*spans)[2];
	size_t n, cap, failed;
};

static void *alongside_transfers(void *arg)
{
	struct alongside *a = arg;
	uint8_t out[4096], in[4096];
	uint64_t round = 0;

	while (!atomic_load(&a->stop)) {
		uint64_t t0 = now_us();
		int rc;

		fill(out, sizeof(out), round++);
		rc = pool_region_write(a->r, 0, out, sizeof(out));
		if (rc == 0)
			rc = pool_region_read(a->r, 0, in, sizeof(in));
		if (rc < 0 || memcmp(in, out, sizeof(in)) != 0) {
			a->failed++;
			continue;
		}
		if (a->n == a->cap) {
			void *grown = realloc(a->spans, (a->cap * 2 + 256) * sizeof(*a->spans));

			if (grown == NULL)
				break;
			a->spans = grown;
			a->cap = a->cap * 2 + 256;
		}
		a->spans[a->n][0] = t0;
		a->spans[a->n++][1] = now_us();
	}
	return NULL;
}

static int alongside(struct pool *pool, const char *ns, const char *prefix, size_t n, uint64_t seed,
		     const char *placement, const char *list)
{
	struct alongside a = {0};
	struct pool_kv *kv;
	uint64_t(*waits)[2] = calloc(n, sizeof(*waits)), longest = 0;
	size_t i, hits = 0, misses = 0, errors = 0, waited = 0, within = 0, j, k, vlen;
	int first_error = 0;
	uint8_t *buf = malloc(4u << 20), *want = malloc(4u << 20);
	pthread_t t;
	int status = 0;

	if (waits == NULL || buf == NULL || want == NULL ||
	    region_placed(pool, 4096, false, placement, &a.r) != 0)
		return 1;
	bool *want_i = calloc(n, sizeof(*want_i));
	size_t gets = 0;
	FILE *f = list != NULL ? fopen(list, "r") : NULL;

	if (want_i == NULL || (list != NULL && f == NULL))
		return fail("list", -errno);
	for (i = 0; i < n; i++)
		want_i[i] = list == NULL;
	while (f != NULL && fscanf(f, "%zu", &i) == 1)
		if (i < n)
			want_i[i] = true;
	if (f != NULL)
		fclose(f);
	if ((status = pthread_create(&t, NULL, alongside_transfers, &a)) != 0)
		return fail("thread", -status);
	for (i = 0; i < n; i++) {
		char key[256];
		uint64_t t0 = 0, took;
		int rc;

		if (!want_i[i])
			continue;
		gets++;
		snprintf(key, sizeof(key), "%s%zu", prefix, i);
		/*
		 * A handle of its own (a handle whose get found its value on
		 * another node gets the two-phase way from then on), and a
		 * buffer of 16 KiB: the get goes in one request, through the
		 * window, where its value is on this node.
		 */
		rc = pool_kv_open(pool, ns, &kv);
		if (rc == 0) {
			t0 = now_us();
			rc = pool_kv_get(kv, key, strlen(key), buf, 16u << 10, &vlen);
			pool_kv_close(kv);
		}
		took = t0 != 0 ? now_us() - t0 : 0;
		if (took > 20000) {
			waits[waited][0] = t0;
			waits[waited++][1] = t0 + took;
			longest = took > longest ? took : longest;
		}
		if (rc == 0) {
			fill(want, vlen, seed + i);
			if (memcmp(buf, want, vlen) != 0) {
				fprintf(stderr, "pool-kv: %s: wrong bytes\n", key);
				status = 1;
			}
			hits++;
		} else if (rc == -ENOENT) {
			misses++;
		} else if (errors++ == 0) {
			first_error = rc;
		}
	}
	atomic_store(&a.stop, true);
	pthread_join(t, NULL);
	for (j = 0; j < a.n; j++)
		for (k = 0; k < waited; k++)
			if (a.spans[j][0] > waits[k][0] && a.spans[j][1] < waits[k][1]) {
				within++;
				break;
			}
	printf("alongside %s: %zu gets, %zu hits, %zu misses, %zu errors%s%s, %zu waited (longest "
	       "%llu ms); %zu region transfers, %zu failed, %zu of them within a waiting get\n",
	       prefix, gets, hits, misses, errors, errors > 0 ? ": " : "",
	       errors > 0 ? strerror(-first_error) : "", waited,
	       (unsigned long long)(longest / 1000), a.n, a.failed, within);
	pool_region_close(a.r);
	free(a.spans);
	free(waits);
	free(want_i);
	free(buf);
	free(want);
	return status || a.failed > 0;
}

/* local PREFIX N: the i of each key of PREFIX0..PREFIX<N-1> whose value is in place here. */
static int local(struct pool_kv *kv, const char *prefix, size_t n)
{
	struct pool_kv_ref *ref;
	const void *data;
	size_t i, len;
	char key[256];

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%zu", prefix, i);
		if (pool_kv_acquire(kv, key, strlen(key), &data, &len, &ref) != 0)
			continue;
		if (pool_kv_ref_local(ref) == 1)
			printf("%zu\n", i);
		pool_kv_release(ref);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pool_kv *kv;
	struct pool *pool;
	const char *ns, *cmd, *key;
	int rc, status = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: pool-kv NS put|get|exists|remove|mput|mget|match|hammer|"
				"view|vput|rput|rget|zbad|alongside ...\n");
		return 2;
	}
	ns = argv[1];
	cmd = argv[2];
	key = argv[3];
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("open pool", rc);
	rc = pool_kv_open(pool, ns, &kv);
	if (rc < 0) {
		status = fail("open namespace", rc);
		pool_close(pool);
		return status;
	}
	if (strcmp(cmd, "put") == 0 || strcmp(cmd, "get") == 0) {
		status = put_get(kv, cmd, key, argc, argv);
	} else if (strcmp(cmd, "exists") == 0) {
		rc = pool_kv_exists(kv, key, strlen(key));
		if (rc < 0) {
			status = fail("exists", rc);
			goto out;
		}
		printf("%s %s\n", key, rc ? "exists" : "does not exist");
		status = rc ? 0 : 4;
	} else if (strcmp(cmd, "remove") == 0) {
		rc = pool_kv_remove(kv, key, strlen(key));
		if (rc < 0) {
			status = fail("remove", rc);
			goto out;
		}
	} else if (strcmp(cmd, "mput") == 0 || strcmp(cmd, "mget") == 0 ||
		   strcmp(cmd, "match") == 0) {
		status = batch(kv, cmd, key, argv);
	} else if (strcmp(cmd, "hammer") == 0) {
		rc = hammer(kv, key, strtoull(argv[4], NULL, 0), atoi(argv[5]),
			    strtoull(argv[6], NULL, 0));
		if (rc != 0)
			status = rc;
	} else if (strcmp(cmd, "view") == 0) {
		need(argc, 5);
		status = view(kv, key, strtoull(argv[4], NULL, 0),
			      argc > 5 && strcmp(argv[5], "hold") == 0);
	} else if (strcmp(cmd, "vput") == 0) {
		need(argc, 6);
		status = vput(kv, key, strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0),
			      argc > 6 ? argv[6] : "commit");
	} else if (strcmp(cmd, "rput") == 0) {
		need(argc, 7);
		status =
		    rput(pool, kv, key, strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0),
			 strtoull(argv[6], NULL, 0), argc > 7 && strcmp(argv[7], "striped") == 0);
	} else if (strcmp(cmd, "rget") == 0) {
		need(argc, 7);
		status =
		    rget(pool, kv, key, strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0),
			 strtoull(argv[6], NULL, 0), argc > 7 && strcmp(argv[7], "striped") == 0);
	} else if (strcmp(cmd, "local") == 0 && argc > 4) {
		status = local(kv, key, strtoull(argv[4], NULL, 0));
	} else if (strcmp(cmd, "alongside") == 0 && argc > 6) {
		status = alongside(pool, ns, key, strtoull(argv[4], NULL, 0),
				   strtoull(argv[5], NULL, 0), argv[6], argc > 7 ? argv[7] : NULL);
	} else if (strcmp(cmd, "zbad") == 0) {
		status = zbad(pool, kv, key);
	} else {
		fprintf(stderr, "pool-kv: unknown command %s\n", cmd);
		status = 2;
	}
out:
	pool_kv_close(kv);
	pool_close(pool);
	return status;
}

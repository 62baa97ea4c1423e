/*
 * tests/tools/pool-kv.c - drive the KV cache through libpool for the tests.
 *
 *	pool-kv NS put KEY SIZE SEED      put a seeded value
 *	pool-kv NS get KEY SEED           get and verify it (exit 4 on a miss)
 *	pool-kv NS exists KEY             exit 0 if present, 4 if not
 *	pool-kv NS remove KEY
 *	pool-kv NS mput PREFIX N SIZE SEED   batch put of keys PREFIX0..PREFIX<N-1>
 *	pool-kv NS mget PREFIX N SEED        batch get, verify, print hits
 *	pool-kv NS match PREFIX N            leading keys present
 *	pool-kv NS hammer KEY SIZE SECS ID   put and get the same key again and again,
 *	                                     checking that no value is ever torn
 * The socket is $POOL_SOCKET.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* A torn value would mix writers: every value starts with its writer's seed, repeated. */
static int hammer(struct pool_kv *kv, const char *key, size_t size, int secs, uint64_t id)
{
	uint8_t *buf = malloc(size), *got = malloc(size);
	time_t end = time(NULL) + secs;
	unsigned puts = 0, gets = 0, misses = 0;
	uint64_t n = 0;
	size_t vlen;

	while (time(NULL) < end) {
		uint64_t seed = id * 1000000 + n++;
		size_t i;
		int rc;

		for (i = 0; i + 8 <= size; i += 8)
			memcpy(buf + i, &seed, 8);
		rc = pool_kv_put(kv, key, strlen(key), buf, size);
		if (rc < 0)
			return fail("put", rc);
		puts++;
		rc = pool_kv_get(kv, key, strlen(key), got, size, &vlen);
		if (rc == -ENOENT) {
			misses++;
			continue;
		}
		if (rc < 0)
			return fail("get", rc);
		gets++;
		for (i = 8; i + 8 <= size; i += 8)
			if (memcmp(got + i, got, 8) != 0) {
				fprintf(stderr, "pool-kv: torn value at byte %zu\n", i);
				return 1;
			}
	}
	printf("hammer %s: %u puts, %u gets, %u misses, no torn value\n", key, puts, gets, misses);
	free(buf);
	free(got);
	return 0;
}

int main(int argc, char **argv)
{
	struct pool_kv *kv;
	struct pool *pool;
	const char *ns, *cmd, *key;
	size_t vlen;
	int rc, status = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: pool-kv NS put|get|exists|remove|mput|mget|match|hammer ...\n");
		return 2;
	}
	ns = argv[1];
	cmd = argv[2];
	key = argv[3];
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("open pool", rc);
	rc = pool_kv_open(pool, ns, &kv);
	if (rc < 0)
		return fail("open namespace", rc);
	if (strcmp(cmd, "put") == 0 || strcmp(cmd, "get") == 0) {
		size_t size = cmd[0] == 'p' ? strtoull(argv[4], NULL, 0) : POOL_KV_VALUE_MAX;
		uint64_t seed = strtoull(argv[cmd[0] == 'p' ? 5 : 4], NULL, 0);
		uint8_t *buf = malloc(size), *want;

		if (cmd[0] == 'p') {
			fill(buf, size, seed);
			rc = pool_kv_put(kv, key, strlen(key), buf, size);
			if (rc < 0)
				return fail("put", rc);
			printf("put %s: %zu bytes\n", key, size);
		} else {
			rc = pool_kv_get(kv, key, strlen(key), buf, size, &vlen);
			if (rc == -ENOENT) {
				printf("get %s: miss\n", key);
				free(buf);
				status = 4;
				goto out;
			}
			if (rc < 0)
				return fail("get", rc);
			want = malloc(vlen);
			fill(want, vlen, seed);
			if (memcmp(buf, want, vlen) != 0) {
				fprintf(stderr, "pool-kv: get %s: wrong bytes\n", key);
				return 1;
			}
			printf("get %s: %zu bytes, correct\n", key, vlen);
			free(want);
		}
		free(buf);
	} else if (strcmp(cmd, "exists") == 0) {
		rc = pool_kv_exists(kv, key, strlen(key));
		if (rc < 0)
			return fail("exists", rc);
		printf("%s %s\n", key, rc ? "exists" : "does not exist");
		status = rc ? 0 : 4;
	} else if (strcmp(cmd, "remove") == 0) {
		rc = pool_kv_remove(kv, key, strlen(key));
		if (rc < 0)
			return fail("remove", rc);
	} else if (strcmp(cmd, "mput") == 0 || strcmp(cmd, "mget") == 0 ||
		   strcmp(cmd, "match") == 0) {
		size_t n = strtoull(argv[4], NULL, 0), i, size = 0, count, hits = 0;
		uint64_t seed = 0;
		char **keys = calloc(n, sizeof(*keys));
		size_t *klens = calloc(n, sizeof(*klens)), *lens = calloc(n, sizeof(*lens));
		size_t *vlens = calloc(n, sizeof(*vlens));
		void **bufs = calloc(n, sizeof(*bufs));
		int *st = calloc(n, sizeof(*st));

		if (cmd[1] == 'p') {
			size = strtoull(argv[5], NULL, 0);
			seed = strtoull(argv[6], NULL, 0);
		} else if (cmd[1] == 'g') {
			seed = strtoull(argv[5], NULL, 0);
		}
		for (i = 0; i < n; i++) {
			if (asprintf(&keys[i], "%s%zu", key, i) < 0)
				return 1;
			klens[i] = strlen(keys[i]);
			lens[i] = cmd[1] == 'p' ? size : 4u << 20;
			bufs[i] = malloc(lens[i]);
			if (cmd[1] == 'p')
				fill(bufs[i], size, seed + i);
		}
		if (cmd[1] == 'a') {
			rc = pool_kv_match(kv, n, (const void *const *)keys, klens, &count);
			if (rc < 0)
				return fail("match", rc);
			printf("match %s: %zu of %zu\n", key, count, n);
		} else if (cmd[1] == 'p') {
			rc = pool_kv_put_batch(kv, n, (const void *const *)keys, klens,
					       (const void *const *)bufs, lens, st);
			if (rc < 0)
				return fail("mput", rc);
			printf("mput %s: %d of %zu stored\n", key, rc, n);
		} else {
			rc = pool_kv_get_batch(kv, n, (const void *const *)keys, klens, bufs, lens,
					       vlens, st);
			if (rc < 0)
				return fail("mget", rc);
			for (i = 0; i < n; i++) {
				uint8_t *want;

				if (st[i] != 0)
					continue;
				want = malloc(vlens[i]);
				fill(want, vlens[i], seed + i);
				if (memcmp(bufs[i], want, vlens[i]) != 0) {
					fprintf(stderr, "pool-kv: %s: wrong bytes\n", keys[i]);
					return 1;
				}
				free(want);
				hits++;
			}
			printf("mget %s: %zu hits of %zu, all correct\n", key, hits, n);
		}
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
	} else if (strcmp(cmd, "hammer") == 0) {
		rc = hammer(kv, key, strtoull(argv[4], NULL, 0), atoi(argv[5]),
			    strtoull(argv[6], NULL, 0));
		if (rc != 0)
			status = rc;
	} else {
		fprintf(stderr, "pool-kv: unknown command %s\n", cmd);
		status = 2;
	}
out:
	pool_kv_close(kv);
	pool_close(pool);
	return status;
}

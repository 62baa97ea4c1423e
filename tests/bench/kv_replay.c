/*
 * tests/bench/kv_replay.c - pool-kv-replay: replay an LLM-serving trace
 * through the pool's KV cache.
 *
 *	pool-kv-replay [-s SOCKET] [-n NS] [-b BLOCK] [-c PCT] [-l REQUESTS]
 *	               [-B BATCH] [-g] [-K] [-d | -S] TRACE.jsonl
 *
 * TRACE has one JSON object per line with "hash_ids": [ids...], one id per
 * prompt block, equal ids meaning equal prefix blocks (the Mooncake trace
 * format). For each request, in order: pool_kv_match of its ids (keys: the
 * id as 8 bytes little-endian) gives the cached prefix (hits); the blocks
 * after it are misses and are stored with pool_kv_put_batch (BLOCK bytes
 * each, default 64K, BATCH keys a call, default 64). With -g the hit
 * blocks are also read back with pool_kv_get_batch, as an engine loading
 * them would.
 *
 * The namespace (default kv-replay-PID) is created with a capacity of PCT
 * percent (default 100) of the unique blocks' bytes, and dropped at the end
 * (-K keeps it); with -d in DRAM alone (its LRU evicts, nothing spills),
 * with -S sharded (DRAM alone too; each shard owner evicts its part by its
 * own LRU). The same run computes the hit rate of an unbounded cache
 * with an in-memory set, for comparison.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libpool/libpool.h"

struct req {
	uint64_t *ids;
	size_t n;
};

/* An open-addressing set of ids (the id plus one, so 0 is empty). */
struct set {
	uint64_t *slot;
	size_t cap, n;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static bool set_has(const struct set *s, uint64_t id)
{
	size_t i;

	if (s->cap == 0)
		return false;
	for (i = mix(id) & (s->cap - 1); s->slot[i] != 0; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == id + 1)
			return true;
	return false;
}

static bool set_add(struct set *s, uint64_t id);

static void set_grow(struct set *s)
{
	struct set t = {calloc(s->cap ? 2 * s->cap : 1024, sizeof(uint64_t)),
			s->cap ? 2 * s->cap : 1024, 0};
	size_t i;

	if (t.slot == NULL) {
		fprintf(stderr, "pool-kv-replay: out of memory\n");
		exit(1);
	}
	for (i = 0; i < s->cap; i++)
		if (s->slot[i] != 0)
			set_add(&t, s->slot[i] - 1);
	free(s->slot);
	*s = t;
}

/* Add id; true if it was new. */
static bool set_add(struct set *s, uint64_t id)
{
	size_t i;

	if (2 * (s->n + 1) > s->cap)
		set_grow(s);
	for (i = mix(id) & (s->cap - 1); s->slot[i] != 0; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == id + 1)
			return false;
	s->slot[i] = id + 1;
	s->n++;
	return true;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Read the trace: from each line, the integers of the array after
 * "hash_ids": (whitespace allowed around the colon). Lines without one are
 * skipped and counted.
 */
static struct req *read_trace(const char *path, size_t limit, size_t *ret_n, size_t *ret_skipped)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	struct req *r = NULL;
	size_t n = 0, cap = 0, skipped = 0, len = 0;
	char *line = NULL;
	ssize_t got;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	while ((limit == 0 || n < limit) && (got = getline(&line, &len, f)) >= 0) {
		char *p = strstr(line, "\"hash_ids\""), *end;
		size_t icap = 0;
		struct req q = {NULL, 0};

		if (p == NULL) {
			skipped += strspn(line, " \t\r\n") != (size_t)got;
			continue;
		}
		p += strlen("\"hash_ids\"");
		p += strspn(p, " \t");
		if (*p++ != ':')
			goto bad;
		p += strspn(p, " \t");
		if (*p++ != '[')
			goto bad;
		for (;;) {
			unsigned long long v;

			p += strspn(p, " \t\r\n");
			if (*p == ']')
				break;
			errno = 0;
			v = strtoull(p, &end, 10);
			if (end == p || errno != 0 || *p == '-')
				goto bad;
			if (q.n == icap) {
				icap = icap ? 2 * icap : 64;
				q.ids = realloc(q.ids, icap * sizeof(*q.ids));
				if (q.ids == NULL)
					goto oom;
			}
			q.ids[q.n++] = v;
			p = end + strspn(end, " \t\r\n");
			if (*p == ',')
				p++;
			else if (*p != ']')
				goto bad;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			r = realloc(r, cap * sizeof(*r));
			if (r == NULL)
				goto oom;
		}
		r[n++] = q;
		continue;
	bad:
		free(q.ids);
		skipped++;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	*ret_n = n;
	*ret_skipped = skipped;
	return r;
oom:
	fprintf(stderr, "pool-kv-replay: out of memory\n");
	exit(1);
}

static void __attribute__((noreturn)) die(const char *what, int rc)
{
	fprintf(stderr, "pool-kv-replay: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pool-kv-replay [-s SOCKET] [-n NS] [-b BLOCK] [-c PCT] [-l REQUESTS]\n"
		"                      [-B BATCH] [-g] [-K] [-d | -S] TRACE.jsonl\n");
	exit(2);
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		break;
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *ns_arg = NULL;
	char ns[64];
	size_t block = 64 << 10, limit = 0, bmax = 64, nreq, skipped, i, j, maxn = 0;
	double pct = 100, t0, t_match = 0, t_put = 0, t_get = 0, el, ta;
	bool get_hits = false, keep = false;
	unsigned flags = 0;
	uint64_t blocks = 0, hits = 0, ref_hits = 0, put_fail = 0, get_miss = 0, calls = 0;
	uint64_t capacity, put_bytes = 0, get_bytes = 0;
	struct set uniq = {0}, ref = {0};
	struct pool *pool;
	struct pool_kv *kv;
	struct req *reqs;
	uint8_t *keybuf, *val, **gbufs;
	const void **keys;
	size_t *klens, *vlens, *rvlens;
	const void **vals;
	int *status, opt, rc;

	while ((opt = getopt(argc, argv, "s:n:b:c:l:B:gKdS")) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'n':
			ns_arg = optarg;
			break;
		case 'b':
			block = parse_size(optarg);
			break;
		case 'c':
			pct = atof(optarg);
			break;
		case 'l':
			limit = strtoul(optarg, NULL, 0);
			break;
		case 'B':
			bmax = strtoul(optarg, NULL, 0);
			break;
		case 'g':
			get_hits = true;
			break;
		case 'K':
			keep = true;
			break;
		case 'd':
			flags = POOL_KV_DRAM_ONLY;
			break;
		case 'S':
			flags = POOL_KV_SHARDED;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc || block == 0 || block > POOL_KV_VALUE_MAX || pct <= 0 || bmax == 0)
		usage();
	if (ns_arg != NULL)
		snprintf(ns, sizeof(ns), "%s", ns_arg);
	else
		snprintf(ns, sizeof(ns), "kv-replay-%d", (int)getpid());

	reqs = read_trace(argv[optind], limit, &nreq, &skipped);
	if (nreq == 0) {
		fprintf(stderr, "pool-kv-replay: %s: no request with \"hash_ids\"\n", argv[optind]);
		return 1;
	}
	for (i = 0; i < nreq; i++) {
		blocks += reqs[i].n;
		if (reqs[i].n > maxn)
			maxn = reqs[i].n;
		for (j = 0; j < reqs[i].n; j++)
			set_add(&uniq, reqs[i].ids[j]);
	}
	capacity = (uint64_t)(pct / 100.0 * (double)uniq.n * (double)block);
	if (capacity < (1u << 20))
		capacity = 1u << 20;

	keybuf = calloc(maxn ? maxn : 1, 8);
	keys = calloc(maxn ? maxn : 1, sizeof(*keys));
	klens = calloc(maxn ? maxn : 1, sizeof(*klens));
	vals = calloc(bmax, sizeof(*vals));
	vlens = calloc(bmax, sizeof(*vlens));
	rvlens = calloc(bmax, sizeof(*rvlens));
	status = calloc(bmax, sizeof(*status));
	gbufs = calloc(bmax, sizeof(*gbufs));
	val = malloc(block);
	if (!keybuf || !keys || !klens || !vals || !vlens || !rvlens || !status || !gbufs || !val) {
		fprintf(stderr, "pool-kv-replay: out of memory\n");
		return 1;
	}
	for (i = 0; i < block; i++)
		val[i] = (uint8_t)(i * 131 + 7);
	for (i = 0; i < bmax; i++) {
		vals[i] = val;
		vlens[i] = block;
		if (get_hits) {
			gbufs[i] = malloc(block);
			memset(gbufs[i], 0, block);
		}
	}

	rc = pool_open(sock, 0, &pool);
	if (rc < 0)
		die("pool_open", rc);
	rc = pool_kv_create(pool, ns, capacity, flags);
	if (rc < 0)
		die("pool_kv_create", rc);
	rc = pool_kv_open(pool, ns, &kv);
	if (rc < 0)
		die("pool_kv_open", rc);

	t0 = now();
	for (i = 0; i < nreq; i++) {
		const struct req *q = &reqs[i];
		size_t count = 0, k, n;

		for (j = 0; j < q->n; j++) {
			uint64_t id = q->ids[j];

			for (k = 0; k < 8; k++)
				keybuf[8 * j + k] = (uint8_t)(id >> (8 * k));
			keys[j] = keybuf + 8 * j;
			klens[j] = 8;
		}
		/* The unbounded cache: leading ids already seen. */
		for (j = 0; j < q->n && set_has(&ref, q->ids[j]); j++)
			;
		ref_hits += j;
		for (j = 0; j < q->n; j++)
			set_add(&ref, q->ids[j]);
		if (q->n == 0)
			continue;

		ta = now();
		rc = pool_kv_match(kv, q->n, keys, klens, &count);
		if (rc < 0)
			die("pool_kv_match", rc);
		calls++;
		t_match += now() - ta;
		hits += count;
		if (get_hits) {
			ta = now();
			for (j = 0; j < count; j += n) {
				n = count - j < bmax ? count - j : bmax;
				rc = pool_kv_get_batch(kv, n, keys + j, klens + j,
						       (void *const *)gbufs, vlens, rvlens, status);
				if (rc < 0)
					die("pool_kv_get_batch", rc);
				calls++;
				get_miss += n - (size_t)rc;
				get_bytes += (uint64_t)rc * block;
			}
			t_get += now() - ta;
		}
		ta = now();
		for (j = count; j < q->n; j += n) {
			n = q->n - j < bmax ? q->n - j : bmax;
			rc = pool_kv_put_batch(kv, n, keys + j, klens + j, vals, vlens, status);
			if (rc < 0)
				die("pool_kv_put_batch", rc);
			calls++;
			put_fail += n - (size_t)rc;
			put_bytes += (uint64_t)rc * block;
		}
		t_put += now() - ta;
	}
	el = now() - t0;

	printf("trace           %s%s\n", argv[optind], skipped ? " (some lines skipped)" : "");
	printf("requests        %zu%s\n", nreq, limit ? " (limited)" : "");
	if (skipped)
		printf("skipped lines   %zu\n", skipped);
	printf("blocks          %" PRIu64 "\n", blocks);
	printf("unique blocks   %zu (%.2f GiB of %zu-byte blocks)\n", uniq.n,
	       (double)uniq.n * block / (1 << 30), block);
	printf("capacity        %.0f%% of unique = %" PRIu64 " bytes (%.2f GiB), namespace %s%s\n",
	       pct, capacity, (double)capacity / (1 << 30), ns,
	       flags & POOL_KV_SHARDED	   ? " (sharded)"
	       : flags & POOL_KV_DRAM_ONLY ? " (dram)"
					   : "");
	printf("hits            %" PRIu64 "  misses %" PRIu64 "\n", hits, blocks - hits);
	printf("hit rate        %.2f%%  (unbounded cache, same run: %.2f%%)\n",
	       100.0 * hits / blocks, 100.0 * ref_hits / blocks);
	if (put_fail)
		printf("failed puts     %" PRIu64 "\n", put_fail);
	if (get_hits)
		printf("hit blocks read %" PRIu64 " bytes, %" PRIu64 " missing when read\n",
		       get_bytes, get_miss);
	printf("replay          %.2f s: %.0f requests/s, %.0f blocks/s, %.0f KV calls/s\n", el,
	       nreq / el, blocks / el, calls / el);
	printf("time split      match %.2f s (%.0f us/request), put %.2f s (%.2f GB/s)%s", t_match,
	       t_match / nreq * 1e6, t_put, t_put > 0 ? put_bytes / t_put / 1e9 : 0.0,
	       get_hits ? "" : "\n");
	if (get_hits)
		printf(", get %.2f s (%.2f GB/s)\n", t_get,
		       t_get > 0 ? get_bytes / t_get / 1e9 : 0.0);
	printf("RESULT pct=%.0f hit=%.2f unbounded=%.2f reqps=%.0f blocksps=%.0f\n", pct,
	       100.0 * hits / blocks, 100.0 * ref_hits / blocks, nreq / el, blocks / el);

	pool_kv_close(kv);
	if (!keep) {
		rc = pool_kv_drop(pool, ns);
		if (rc < 0)
			die("pool_kv_drop", rc);
	}
	pool_close(pool);
	for (i = 0; i < nreq; i++)
		free(reqs[i].ids);
	free(reqs);
	free(uniq.slot);
	free(ref.slot);
	free(keybuf);
	free(keys);
	free(klens);
	free(vals);
	free(vlens);
	free(rvlens);
	free(status);
	for (i = 0; i < bmax; i++)
		free(gbufs[i]);
	free(gbufs);
	free(val);
	return 0;
}

/*
 * tests/bench/bench_kv.c - pool-bench-kv: the KV cache through libpool,
 * next to Redis (hiredis) doing the same operations in the same run.
 *
 *	pool-bench-kv [-s SOCKET] [-n NS] [-r redis-unix:PATH | -r redis-tcp:HOST:PORT]...
 *	              [-T SECS] [-b BATCH] [-W BYTES] [-S SIZES] [-m KEYS] [-B]
 *
 * For each value size (default 16K, 256K, 2M) and each target (the pool
 * namespace NS through the local poold, then every -r Redis server), one
 * client, one call in flight:
 *	put     pool_kv_put           / SET
 *	get     pool_kv_get           / GET (value copied to the caller's buffer)
 *	acq     pool_kv_acquire + pool_kv_release (pool only): the value in place,
 *	        not read; a copy the library makes when it is not local
 *	mput    pool_kv_put_batch     / BATCH SETs pipelined (redisAppendCommand)
 *	mget    pool_kv_get_batch     / BATCH GETs pipelined
 * over a working set of W bytes (default 128 MiB) of keys, each for T
 * seconds (default 0.5). Keys are 16 bytes, like block hashes. Then the
 * prefix match of M keys (default 1000), all present: pool_kv_match vs M
 * pipelined EXISTS, microseconds per call. With -B the value buffers are
 * one pool_buf_alloc() buffer of the pool's, which its poold moves values
 * into and out of in place (the Redis targets use the same memory).
 *
 * With -c CONNS,... (and -P the poold's pid) it measures instead single
 * gets and puts from that many client processes at once, each with its
 * own connection, on random keys of the working set: ops/s of all, and
 * the server's CPU time per op (poold's from /proc, Redis's too, its pid
 * from INFO), for each size, next to each -r Redis target.
 *
 * Prints one row per size and operation: ops/s (values per second) and
 * GB/s (10^9 bytes) of each target, then pool/target ratios. Every get, and
 * every acquire, is checked once for the right bytes before timing; a
 * comment after each size says how many acquires were in place.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "libpool/libpool.h"

#define KLEN 16
#define MAXT 5

enum op { OP_PUT, OP_GET, OP_ACQ, OP_MPUT, OP_MGET, OP_N };
static const char *op_name[OP_N] = {"put", "get", "acq", "mput", "mget"};

struct target {
	char name[32];
	bool redis;
	redisContext *rc;
	struct pool *pool;
	struct pool_kv *kv;
	double ops[OP_N], gbs[OP_N];
	double match_us;
	size_t acquired, in_place; /* the checked acquires of a size, and those in place */
};

static double secs = 0.5;
static size_t batch = 32, wset = 128u << 20, match_n = 1000;
static int use_buf;    /* -B: buffers from pool_buf_alloc() */
static void *shared;   /* ... that buffer */
static uint8_t **keys; /* the working set's keys */
static size_t *klens;  /* all KLEN */
static uint8_t **vals; /* batch value buffers (puts) */
static uint8_t **bufs; /* batch get buffers */
static size_t *vlens, *rvlens;
static int *status;
static uint64_t run_id;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noreturn)) die(const char *what, const char *msg)
{
	fprintf(stderr, "pool-bench-kv: %s: %s\n", what, msg);
	exit(1);
}

static void pdie(const char *what, int rc)
{
	fprintf(stderr, "pool-bench-kv: %s: %s (%s)\n", what, pool_errormsg(), pool_strerror(rc));
	exit(1);
}

/* Key i of a size: run id, size, index; 16 bytes. */
static void make_key(uint8_t *k, size_t size, size_t i)
{
	uint64_t a = run_id ^ ((uint64_t)size << 32), b = i;

	memcpy(k, &a, 8);
	memcpy(k + 8, &b, 8);
}

/* A value's bytes: the key's index repeated, so a get can be checked. */
static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		memcpy(buf + i, &seed, 8);
}

static bool check(const uint8_t *buf, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 4096) /* one word a page is enough to catch a mix-up */
		if (memcmp(buf + i, &seed, 8) != 0)
			return false;
	return len < 8 || memcmp(buf + (len & ~(size_t)7) - 8, &seed, 8) == 0;
}

static redisContext *redis_connect(const char *spec)
{
	redisContext *c = NULL;

	if (strncmp(spec, "redis-unix:", 11) == 0) {
		c = redisConnectUnix(spec + 11);
	} else if (strncmp(spec, "redis-tcp:", 10) == 0) {
		char host[256];
		const char *colon = strrchr(spec + 10, ':');

		if (colon == NULL || (size_t)(colon - spec - 10) >= sizeof(host))
			die(spec, "expected redis-tcp:HOST:PORT");
		memcpy(host, spec + 10, colon - spec - 10);
		host[colon - spec - 10] = '\0';
		c = redisConnect(host, atoi(colon + 1));
	} else {
		die(spec, "expected redis-unix:PATH or redis-tcp:HOST:PORT");
	}
	if (c == NULL || c->err)
		die(spec, c ? c->errstr : "cannot allocate a context");
	return c;
}

static redisReply *rcmd(redisContext *c, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = redisCommandArgv(c, argc, argv, lens);

	if (r == NULL)
		die("redis", c->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		die("redis", r->str);
	return r;
}

static void rappend(redisContext *c, int argc, const char **argv, const size_t *lens)
{
	if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
		die("redis append", c->errstr);
}

static redisReply *rreply(redisContext *c)
{
	void *r;

	if (redisGetReply(c, &r) != REDIS_OK || r == NULL)
		die("redis", c->errstr);
	if (((redisReply *)r)->type == REDIS_REPLY_ERROR)
		die("redis", ((redisReply *)r)->str);
	return r;
}

/* n puts of keys first.. (wrapping in the working set) with values vals[0..n). */
static void do_put(struct target *t, size_t first, size_t n, size_t nkeys, size_t size)
{
	size_t i;

	if (!t->redis) {
		const void *k[n];
		size_t kl[n];
		int rc;

		for (i = 0; i < n; i++) {
			k[i] = keys[(first + i) % nkeys];
			kl[i] = KLEN;
		}
		if (n == 1) {
			rc = pool_kv_put(t->kv, k[0], KLEN, vals[0], size);
			if (rc < 0)
				pdie("pool_kv_put", rc);
			return;
		}
		rc = pool_kv_put_batch(t->kv, n, k, kl, (const void *const *)vals, vlens, status);
		if (rc < 0)
			pdie("pool_kv_put_batch", rc);
		if ((size_t)rc != n)
			pdie("pool_kv_put_batch: not all stored", status[0]);
		return;
	}
	for (i = 0; i < n; i++) {
		const char *argv[3] = {"SET", (const char *)keys[(first + i) % nkeys],
				       (const char *)vals[i]};
		size_t lens[3] = {3, KLEN, size};

		if (n == 1) {
			freeReplyObject(rcmd(t->rc, 3, argv, lens));
			return;
		}
		rappend(t->rc, 3, argv, lens);
	}
	for (i = 0; i < n; i++)
		freeReplyObject(rreply(t->rc));
}

/* n gets of keys first.. into bufs[0..n); returns how many hit. */
static size_t do_get(struct target *t, size_t first, size_t n, size_t nkeys, size_t size)
{
	size_t i, hits = 0;

	if (!t->redis) {
		const void *k[n];
		size_t kl[n];
		int rc;

		for (i = 0; i < n; i++) {
			k[i] = keys[(first + i) % nkeys];
			kl[i] = KLEN;
		}
		if (n == 1) {
			rc = pool_kv_get(t->kv, k[0], KLEN, bufs[0], size, &rvlens[0]);
			if (rc == -ENOENT)
				return 0;
			if (rc < 0)
				pdie("pool_kv_get", rc);
			return 1;
		}
		rc = pool_kv_get_batch(t->kv, n, k, kl, (void *const *)bufs, vlens, rvlens, status);
		if (rc < 0)
			pdie("pool_kv_get_batch", rc);
		return (size_t)rc;
	}
	for (i = 0; i < n; i++) {
		const char *argv[2] = {"GET", (const char *)keys[(first + i) % nkeys]};
		size_t lens[2] = {3, KLEN};
		redisReply *r;

		if (n == 1) {
			r = rcmd(t->rc, 2, argv, lens);
			if (r->type == REDIS_REPLY_STRING) {
				memcpy(bufs[0], r->str, r->len < size ? r->len : size);
				rvlens[0] = r->len;
				hits++;
			}
			freeReplyObject(r);
			return hits;
		}
		rappend(t->rc, 2, argv, lens);
	}
	for (i = 0; i < n; i++) {
		redisReply *r = rreply(t->rc);

		if (r->type == REDIS_REPLY_STRING) {
			memcpy(bufs[i], r->str, r->len < size ? r->len : size);
			rvlens[i] = r->len;
			hits++;
		}
		freeReplyObject(r);
	}
	return hits;
}

/* Acquire key i and release it: 1 on a hit; with check, verify it is value i. */
static size_t do_acquire(struct target *t, size_t i, size_t size, bool check_it)
{
	struct pool_kv_ref *ref;
	const void *data;
	size_t len;
	int rc;

	rc = pool_kv_acquire(t->kv, keys[i], KLEN, &data, &len, &ref);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		pdie("pool_kv_acquire", rc);
	if (check_it) {
		if (len != size || !check(data, size, i))
			die(t->name, "an acquire returned the wrong bytes");
		t->acquired++;
		t->in_place += pool_kv_ref_local(ref) == 1;
	}
	rc = pool_kv_release(ref);
	if (rc < 0)
		pdie("pool_kv_release", rc);
	return 1;
}

static void bench_size(struct target *t, size_t size)
{
	size_t nkeys = wset / size, i, n, done, misses = 0;
	double t0, el;
	int op;

	if (nkeys < 2 * batch)
		nkeys = 2 * batch;
	for (i = 0; i < nkeys; i++)
		make_key(keys[i], size, i);
	for (i = 0; i < batch; i++) {
		vlens[i] = size;
		fill(vals[i], size, 0x5a5a5a5a00000000ull + i);
	}
	/* Load the working set (untimed), each value tagged with its index, and check it. */
	for (i = 0; i < nkeys; i += n) {
		size_t k;

		n = nkeys - i < batch ? nkeys - i : batch;
		for (k = 0; k < n; k++)
			fill(vals[k], size, i + k);
		do_put(t, i, n, nkeys, size);
	}
	for (i = 0; i < nkeys; i += n) {
		size_t k;

		n = nkeys - i < batch ? nkeys - i : batch;
		if (do_get(t, i, n, nkeys, size) != n)
			die(t->name, "a value just stored is missing (namespace too small?)");
		for (k = 0; k < n; k++)
			if (rvlens[k] != size || !check(bufs[k], size, i + k))
				die(t->name, "a get returned the wrong bytes");
	}
	t->acquired = t->in_place = 0;
	for (i = 0; !t->redis && i < nkeys; i++)
		if (do_acquire(t, i, size, true) != 1)
			die(t->name, "a value just stored is missing (namespace too small?)");
	for (op = 0; op < OP_N; op++) {
		if (op == OP_ACQ && t->redis)
			continue;
		n = op == OP_MPUT || op == OP_MGET ? batch : 1;
		done = 0;
		i = 0;
		t0 = now();
		do {
			if (op == OP_PUT || op == OP_MPUT)
				do_put(t, i, n, nkeys, size);
			else if (op == OP_ACQ)
				misses += 1 - do_acquire(t, i, size, false);
			else
				misses += n - do_get(t, i, n, nkeys, size);
			i = (i + n) % nkeys;
			done += n;
		} while ((el = now() - t0) < secs);
		t->ops[op] = done / el;
		t->gbs[op] = done * (double)size / el / 1e9;
	}
	if (misses)
		fprintf(stderr, "pool-bench-kv: %s: %zu misses while timing %zu-byte gets\n",
			t->name, misses, size);
}

/* Prefix match of match_n present keys: microseconds per call. */
static void bench_match(struct target *t)
{
	size_t i, calls = 0, count = 0;
	const void **k = calloc(match_n, sizeof(*k));
	size_t *kl = calloc(match_n, sizeof(*kl));
	const char **argv = NULL;
	size_t *lens = NULL;
	double t0, el;

	for (i = 0; i < match_n; i++) {
		make_key(keys[i], 1, i);
		k[i] = keys[i];
		kl[i] = KLEN;
	}
	for (i = 0; i < match_n; i += batch) { /* small values: the match is about the index */
		size_t n = match_n - i < batch ? match_n - i : batch, j;

		for (j = 0; j < n; j++)
			vlens[j] = 4096;
		do_put(t, i, n, match_n, 4096);
	}
	t0 = now();
	do {
		if (!t->redis) {
			int rc = pool_kv_match(t->kv, match_n, k, kl, &count);

			if (rc < 0)
				pdie("pool_kv_match", rc);
		} else {
			/* The leading keys present: match_n pipelined EXISTS. */
			bool run = true;

			count = 0;
			for (i = 0; i < match_n; i++) {
				const char *a[2] = {"EXISTS", (const char *)keys[i]};
				size_t l[2] = {6, KLEN};

				rappend(t->rc, 2, a, l);
			}
			for (i = 0; i < match_n; i++) {
				redisReply *r = rreply(t->rc);

				if (run && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
					count++;
				else
					run = false;
				freeReplyObject(r);
			}
		}
		calls++;
	} while ((el = now() - t0) < secs);
	if (count != match_n)
		fprintf(stderr, "pool-bench-kv: %s: match found %zu of %zu\n", t->name, count,
			match_n);
	t->match_us = el / calls * 1e6;
	free(k);
	free(kl);
	free(argv);
	free(lens);
}

/* CPU time (user + system, all threads) of process pid so far, in seconds. */
static double cpu_of(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		die(path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* fields 14 and 15 after the command's name */
	for (i = 0; p != NULL && i < 12; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p, " %llu %llu", &ut, &st) != 2)
		die(path, "cannot read its CPU times");
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The pid of the Redis server behind c (INFO server's process_id). */
static pid_t redis_pid(redisContext *c)
{
	const char *argv[2] = {"INFO", "server"};
	size_t lens[2] = {4, 6};
	redisReply *r = rcmd(c, 2, argv, lens);
	const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "process_id:") : NULL;
	pid_t pid = at != NULL ? (pid_t)atol(at + 11) : 0;

	freeReplyObject(r);
	if (pid <= 0)
		die("redis", "INFO server has no process_id");
	return pid;
}

/*
 * One client process of bench_conns(): its own connection to target spec
 * (NULL: the pool), waits for the start byte on go, then single ops of op
 * on random keys of nkeys for secs; writes its count to out.
 */
static void __attribute__((noreturn))
conns_client(const char *sock, const char *ns, const char *spec, int op, size_t size, size_t nkeys,
	     int go, int out, unsigned seed)
{
	struct target t = {0};
	uint64_t done = 0;
	double t0;
	char c;

	if (spec == NULL) {
		int rc = pool_open(sock, 0, &t.pool);

		if (rc < 0 || (rc = pool_kv_open(t.pool, ns, &t.kv)) < 0)
			pdie("pool_open", rc);
	} else {
		t.redis = true;
		t.rc = redis_connect(spec);
	}
	if (read(go, &c, 1) != 1)
		_exit(1);
	t0 = now();
	do {
		size_t i = (size_t)rand_r(&seed) % nkeys;

		if (op == OP_PUT)
			do_put(&t, i, 1, nkeys, size);
		else
			do_get(&t, i, 1, nkeys, size);
		done++;
	} while (now() - t0 < secs);
	if (write(out, &done, sizeof(done)) != sizeof(done))
		_exit(1);
	_exit(0);
}

/*
 * Single ops op of size from conns client processes at once against a
 * target (spec: how a client reaches it, NULL for the pool), the server
 * being pid: ops/s of them all and the server's CPU µs per op.
 */
static void bench_conns_point(const char *sock, const char *ns, const char *spec, pid_t pid, int op,
			      size_t size, size_t nkeys, int conns, double *ops, double *us)
{
	int go[2], out[2], k, st;
	uint64_t done = 0, one;
	double t0, c0, el;
	pid_t kids[256];

	if (pipe(go) < 0 || pipe(out) < 0)
		die("pipe", strerror(errno));
	for (k = 0; k < conns; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			die("fork", strerror(errno));
		if (kids[k] == 0)
			conns_client(sock, ns, spec, op, size, nkeys, go[0], out[1],
				     (unsigned)(run_id + (uint64_t)k * 7919));
	}
	usleep(200000); /* (the clients connect) */
	c0 = cpu_of(pid);
	t0 = now();
	for (k = 0; k < conns; k++)
		if (write(go[1], "g", 1) != 1)
			die("pipe", strerror(errno));
	for (k = 0; k < conns; k++) {
		if (read(out[0], &one, sizeof(one)) != sizeof(one))
			die("a client", "ended without its count");
		done += one;
	}
	el = now() - t0;
	*us = (cpu_of(pid) - c0) / (double)done * 1e6;
	*ops = (double)done / el;
	for (k = 0; k < conns; k++)
		if (waitpid(kids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("a client", "failed");
	close(go[0]);
	close(go[1]);
	close(out[0]);
	close(out[1]);
}

/* -c: single ops from many connections at once, each target, each size. */
static void bench_conns(struct target *t, int nt, const char *sock, const char *ns,
			const char *const *rspec, pid_t poold, const int *conns, size_t nconns,
			const size_t *sizes, size_t nsizes)
{
	static const int ops[] = {OP_GET, OP_PUT};
	double o[MAXT], u[MAXT];
	size_t i, c, j, n, nkeys;
	pid_t pids[MAXT];
	int k;

	for (k = 0; k < nt; k++)
		pids[k] = t[k].redis ? redis_pid(t[k].rc) : poold;
	printf("# pool-bench-kv -c: single gets and puts on random keys, each client process its "
	       "own connection; %.2f s per point\n",
	       secs);
	printf("# ops/s of all clients; us = the server's CPU time per op (all its threads); x_T = "
	       "pool ops/s / T ops/s\n");
	printf("%-5s %-8s %-4s", "conns", "size", "op");
	for (k = 0; k < nt; k++)
		printf(" %12s %7s", t[k].name, "us");
	for (k = 1; k < nt; k++)
		printf(" x_%-*s", (int)strlen(t[k].name) + 1, t[k].name);
	printf("\n");
	for (i = 0; i < nsizes; i++) {
		nkeys = wset / sizes[i] < 4096 ? wset / sizes[i] : 4096;
		if (nkeys < 2 * batch)
			nkeys = 2 * batch;
		for (j = 0; j < nkeys; j++)
			make_key(keys[j], sizes[i], j);
		for (j = 0; j < batch; j++) {
			vlens[j] = sizes[i];
			fill(vals[j], sizes[i], j);
		}
		for (k = 0; k < nt; k++)
			for (j = 0; j < nkeys; j += n) {
				n = nkeys - j < batch ? nkeys - j : batch;
				do_put(&t[k], j, n, nkeys, sizes[i]);
			}
		for (c = 0; c < nconns; c++)
			for (j = 0; j < sizeof(ops) / sizeof(ops[0]); j++) {
				for (k = 0; k < nt; k++)
					bench_conns_point(
					    sock, ns, t[k].redis ? rspec[k - (ns != NULL)] : NULL,
					    pids[k], ops[j], sizes[i], nkeys, conns[c], &o[k],
					    &u[k]);
				printf("%-5d %-8zu %-4s", conns[c], sizes[i], op_name[ops[j]]);
				for (k = 0; k < nt; k++)
					printf(" %12.0f %7.2f", o[k], u[k]);
				for (k = 1; ns != NULL && k < nt; k++)
					printf(" %*.2f", (int)strlen(t[k].name) + 3, o[0] / o[k]);
				printf("\n");
				fflush(stdout);
			}
	}
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
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		break;
	}
	return (size_t)v;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: pool-bench-kv [-s SOCKET] [-n NS] [-r redis-unix:PATH|redis-tcp:HOST:PORT]...\n"
	    "                     [-T SECS] [-b BATCH] [-W BYTES] [-S SIZE,SIZE,...] [-m KEYS]\n"
	    "                     [-c CONNS,CONNS,... -P POOLD_PID]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *ns = NULL, *sizes_arg = "16K,256K,2M";
	const char *rspec[MAXT];
	struct target t[MAXT];
	size_t sizes[8], nsizes = 0, maxsize = 0, maxkeys, i, nconns = 0;
	int nt = 0, nr = 0, opt, k, op, conns[8];
	pid_t poold = 0;
	char *s, *tok, *save;

	while ((opt = getopt(argc, argv, "s:n:r:T:b:W:S:m:Bc:P:")) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'n':
			ns = optarg;
			break;
		case 'r':
			if (nr == MAXT - 1)
				usage();
			rspec[nr++] = optarg;
			break;
		case 'T':
			secs = atof(optarg);
			break;
		case 'b':
			batch = strtoul(optarg, NULL, 0);
			break;
		case 'W':
			wset = parse_size(optarg);
			break;
		case 'S':
			sizes_arg = optarg;
			break;
		case 'm':
			match_n = strtoul(optarg, NULL, 0);
			break;
		case 'B':
			use_buf = 1;
			break;
		case 'c':
			s = strdup(optarg);
			for (tok = strtok_r(s, ",", &save); tok && nconns < 8;
			     tok = strtok_r(NULL, ",", &save))
				if ((conns[nconns++] = atoi(tok)) < 1 || conns[nconns - 1] > 256)
					usage();
			free(s);
			break;
		case 'P':
			poold = (pid_t)atol(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (ns == NULL && nr == 0) || batch < 2 || match_n == 0 ||
	    (nconns > 0 && ns != NULL && poold <= 0))
		usage();
	s = strdup(sizes_arg);
	for (tok = strtok_r(s, ",", &save); tok && nsizes < 8; tok = strtok_r(NULL, ",", &save)) {
		sizes[nsizes] = parse_size(tok);
		if (sizes[nsizes] == 0 || sizes[nsizes] > POOL_KV_VALUE_MAX)
			usage();
		if (sizes[nsizes] > maxsize)
			maxsize = sizes[nsizes];
		nsizes++;
	}
	free(s);
	run_id = (uint64_t)getpid() << 40 ^ (uint64_t)time(NULL);
	signal(SIGPIPE,
	       SIG_IGN); /* a server that closes the connection is an error, not a silent death */

	memset(t, 0, sizeof(t));
	if (ns != NULL) {
		int rc = pool_open(sock, 0, &t[nt].pool);

		if (rc < 0)
			pdie("pool_open", rc);
		rc = pool_kv_open(t[nt].pool, ns, &t[nt].kv);
		if (rc < 0)
			pdie("pool_kv_open", rc);
		snprintf(t[nt].name, sizeof(t[nt].name), "pool");
		nt++;
	}
	for (k = 0; k < nr; k++, nt++) {
		const char *colon = strchr(rspec[k], ':');

		t[nt].redis = true;
		t[nt].rc = redis_connect(rspec[k]);
		snprintf(t[nt].name, sizeof(t[nt].name), "%.*s", (int)(colon - rspec[k]), rspec[k]);
	}

	maxkeys = 2 * batch;
	for (i = 0; i < nsizes; i++)
		if (wset / sizes[i] > maxkeys)
			maxkeys = wset / sizes[i];
	if (match_n > maxkeys)
		maxkeys = match_n;
	keys = calloc(maxkeys, sizeof(*keys));
	klens = calloc(maxkeys, sizeof(*klens));
	for (i = 0; i < maxkeys; i++) {
		keys[i] = malloc(KLEN);
		klens[i] = KLEN;
	}
	vals = calloc(batch, sizeof(*vals));
	bufs = calloc(batch, sizeof(*bufs));
	vlens = calloc(batch, sizeof(*vlens));
	rvlens = calloc(batch, sizeof(*rvlens));
	status = calloc(batch, sizeof(*status));
	/* -B: the values come from and go to one pool_buf_alloc() buffer (moved in place). */
	if (use_buf && nt > 0 && t[0].pool != NULL) {
		int rc = pool_buf_alloc(t[0].pool, 2 * batch * maxsize, &shared);

		if (rc < 0)
			pdie("pool_buf_alloc", rc);
	}
	for (i = 0; i < batch; i++) {
		if (shared != NULL) {
			vals[i] = (uint8_t *)shared + 2 * i * maxsize;
			bufs[i] = vals[i] + maxsize;
		} else {
			vals[i] = malloc(maxsize);
			bufs[i] = malloc(maxsize);
		}
		memset(bufs[i], 1, maxsize); /* fault the pages in before timing */
	}

	if (nconns > 0) {
		bench_conns(t, nt, sock, ns, rspec, poold, conns, nconns, sizes, nsizes);
		goto out;
	}
	printf("# pool-bench-kv: one client, one call in flight; batch %zu keys (mput/mget; Redis: "
	       "pipelined SET/GET); working set %zu MiB per size; %.2f s per point\n",
	       batch, wset >> 20, secs);
	printf("# ops/s = values/s, GB/s = 10^9 bytes/s; x_T = pool ops/s / T ops/s\n");
	printf("%-8s %-5s", "size", "op");
	for (k = 0; k < nt; k++)
		printf(" %12s %9s", t[k].name, "GB/s");
	if (ns != NULL)
		for (k = 1; k < nt; k++)
			printf(" x_%-*s", (int)strlen(t[k].name) + 1, t[k].name);
	printf("\n");
	fflush(stdout);
	for (i = 0; i < nsizes; i++) {
		for (k = 0; k < nt; k++)
			bench_size(&t[k], sizes[i]);
		for (op = 0; op < OP_N; op++) {
			printf("%-8zu %-5s", sizes[i], op_name[op]);
			for (k = 0; k < nt; k++) {
				if (op == OP_ACQ && t[k].redis) /* Redis has no such call */
					printf(" %12s %9s", "-", "-");
				else
					printf(" %12.0f %9.2f", t[k].ops[op], t[k].gbs[op]);
			}
			for (k = 1; ns != NULL && k < nt; k++) {
				if (op == OP_ACQ)
					printf(" %*s", (int)strlen(t[k].name) + 3, "-");
				else
					printf(" %*.2f", (int)strlen(t[k].name) + 3,
					       t[0].ops[op] / t[k].ops[op]);
			}
			printf("\n");
		}
		if (ns != NULL)
			printf("# acq %zu: %zu of %zu in place, the rest copied\n", sizes[i],
			       t[0].in_place, t[0].acquired);
		fflush(stdout);
	}
	for (k = 0; k < nt; k++)
		bench_match(&t[k]);
	printf("match%-3zu %-5s", match_n, "us");
	for (k = 0; k < nt; k++)
		printf(" %12.1f %9s", t[k].match_us, "-");
	if (ns != NULL)
		for (k = 1; k < nt; k++)
			printf(" %*.2f", (int)strlen(t[k].name) + 3, t[k].match_us / t[0].match_us);
	printf("\n");
out:
	for (k = 0; k < nt; k++) {
		if (t[k].redis) {
			redisFree(t[k].rc);
		} else {
			pool_kv_close(t[k].kv);
			pool_close(t[k].pool);
		}
	}
	for (i = 0; i < maxkeys; i++)
		free(keys[i]);
	for (i = 0; shared == NULL && i < batch; i++) {
		free(vals[i]);
		free(bufs[i]);
	}
	free(keys);
	free(klens);
	free(vals);
	free(bufs);
	free(vlens);
	free(rvlens);
	free(status);
	return 0;
}

/*
 * tests/tools/pool-snap.c - snapshot images and restores for the tests.
 *
 *   pool-snap mkimg FILE MIB SEED SHARED_SEED SHARED% ZERO%
 *       an image of 4 KiB pages: ZERO% all zero, SHARED% the same in every
 *       image made with SHARED_SEED, the rest unique to SEED
 *   pool-snap sum FILE           XXH3-64 of a file
 *   pool-snap read NAME          XXH3-64 of a snapshot's image, read through libpool
 *   pool-snap putregion NAME REGION
 *       put a snapshot of a region's bytes; print the XXH3-64 of the region
 *   pool-snap clones NAME N PROCS SUM
 *       PROCS processes make N copy-on-write clones in all; each writes a page
 *       of its own; checks every 100th clone whole against SUM (XXH3-64 of
 *       the image) and every clone's own page and a page it did not write;
 *       prints the time, the node's shared memory growth (the node copy) and
 *       the private pages the clones made
 *   pool-snap clonefd NAME SUM   the fd of the node copy is sealed, read-only
 *                                and close-on-exec, and maps only private
 *   pool-snap lazyclone NAME SUM [N]
 *       N (1-64) lazy clones from one handle, the first making the node's
 *       copy: touches the last one's pages last to first (ahead of the
 *       fill), checks each whole against SUM, writes a page in each; once
 *       the copy is full, each write is still its clone's own and a clone
 *       of the copy is the image; prints the times
 *   pool-snap record NAME STEP
 *       a lazy restore of NAME from the store (no node's copy made) that
 *       touches every STEP-th page, last to first, recorded as its working
 *       set; prints how many pages it touched
 *   pool-snap restore NAME SUM MODE
 *       a lazy restore of NAME (pool_snap_restore_lazy()) into fresh
 *       anonymous memory, MODE a comma list of remote (from the store, else
 *       the node's copy), prefetch, record, fill, and huge (the memory in
 *       2 MiB hugetlbfs pages); touches every 4 KiB page last to first,
 *       checks the memory whole against SUM; prints how long its first
 *       touch took
 *   pool-snap lazyclones NAME N SUM
 *       N processes at once each make a lazy clone as lazyclone does: one
 *       fills the node's copy, the others follow its fill
 *   pool-snap save PARENT NAME N SEED [CLASS]
 *       a clone of PARENT reads every page and writes N pages spread over
 *       it (the first all zero, the second with the bytes it had, the rest
 *       with SEED's), is saved as NAME (class CLASS), and writes N other
 *       pages during the save, after pool_snap_save_begin(): prints the
 *       pages the save found written, the XXH3-64 of the clone when it was
 *       saved, and how long the save held the clone and how long it took;
 *       then the XXH3-64 of a fork of NAME (a lazy clone) read whole while
 *       the first clone writes a quarter of its pages
 *   pool-snap servestop NAME
 *       pool_snap_serve() of NAME on a listening socket, stopped by
 *       pool_snap_serve_stop() called before it, from another thread and
 *       from a signal handler; then a VMM's handshake of garbage, whose
 *       refusal reaches the log callback of pool_set_log(); prints each
 *       stop's time and the logged line
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "libpool/libpool.h"

#define PAGE 4096

static int usage(void)
{
	fprintf(stderr, "usage: pool-snap mkimg FILE MIB SEED SHARED_SEED SHARED%% ZERO%%\n"
			"       pool-snap sum FILE\n"
			"       pool-snap read NAME\n"
			"       pool-snap putregion NAME REGION\n"
			"       pool-snap clones NAME N PROCS SUM\n"
			"       pool-snap clonefd NAME SUM\n"
			"       pool-snap lazyclone NAME SUM [N]\n"
			"       pool-snap servestop NAME\n"
			"       pool-snap record NAME STEP\n"
			"       pool-snap restore NAME SUM MODE\n"
			"       pool-snap lazyclones NAME N SUM\n"
			"       pool-snap save PARENT NAME N SEED [CLASS]\n");
	return 2;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "pool-snap: %s: %s\n", what,
		pool_errormsg()[0] != '\0' ? pool_errormsg() : pool_strerror(rc));
	return 1;
}

/* A page of bytes determined by (seed, index) alone. */
static void fill_page(uint8_t *p, uint64_t seed, uint64_t idx)
{
	uint64_t x = XXH3_64bits_withSeed(&idx, sizeof(idx), seed);
	size_t i;

	for (i = 0; i < PAGE; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

static int mkimg(char **argv)
{
	uint64_t pages = strtoull(argv[1], NULL, 10) * 256, i;
	uint64_t seed = strtoull(argv[2], NULL, 10), sseed = strtoull(argv[3], NULL, 10);
	unsigned shared = (unsigned)atoi(argv[4]), zero = (unsigned)atoi(argv[5]);
	uint8_t page[PAGE];
	FILE *f = fopen(argv[0], "wb");

	if (f == NULL || pages == 0 || shared + zero > 100) {
		fprintf(stderr, "pool-snap: mkimg %s: %s\n", argv[0],
			f == NULL ? strerror(errno) : "bad sizes");
		return 1;
	}
	for (i = 0; i < pages; i++) {
		unsigned x = (unsigned)((i * 2654435761u) % 100);

		if (x < zero)
			memset(page, 0, PAGE);
		else
			fill_page(page, x < zero + shared ? sseed : seed, i);
		fwrite(page, PAGE, 1, f);
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "pool-snap: mkimg %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	return 0;
}

static int sum(const char *path)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		fprintf(stderr, "pool-snap: %s: %s\n", path, fd < 0 ? strerror(errno) : "empty");
		return 1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return 1;
	printf("%016llx\n", (unsigned long long)XXH3_64bits(p, (size_t)st.st_size));
	munmap(p, (size_t)st.st_size);
	return 0;
}

static int snap_read(struct pool *pool, const char *name)
{
	struct pool_snap *s;
	uint64_t size;
	void *buf;
	int rc;

	rc = pool_snap_open(pool, name, &s);
	if (rc < 0)
		return fail(name, rc);
	size = pool_snap_size(s);
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		pool_snap_close(s);
		return 1;
	}
	rc = pool_snap_read(s, 0, buf, size);
	if (rc == 0)
		printf("%016llx\n", (unsigned long long)XXH3_64bits(buf, size));
	munmap(buf, size);
	pool_snap_close(s);
	return rc < 0 ? fail(name, rc) : 0;
}

static int put_region(struct pool *pool, const char *name, const char *rname)
{
	struct pool_region *r;
	uint64_t size;
	void *buf;
	int rc;

	rc = pool_region_open(pool, rname, 0, &r);
	if (rc < 0)
		return fail(rname, rc);
	size = pool_region_size(r);
	buf = malloc(size);
	rc = buf == NULL ? -ENOMEM : pool_region_read(r, 0, buf, size);
	if (rc == 0)
		rc = pool_snap_put_region(pool, name, r, NULL);
	if (rc == 0)
		printf("%016llx\n", (unsigned long long)XXH3_64bits(buf, size));
	free(buf);
	pool_region_close(r);
	return rc < 0 ? fail(name, rc) : 0;
}

/* A field of /proc/meminfo or /proc/self/smaps_rollup, in KiB. */
static long kib(const char *file, const char *field)
{
	char line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f = fopen(file, "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f != NULL)
		fclose(f);
	return v;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * One process's share of the clones: the time they took (ms) and the
 * private KiB they made, through a pipe; exit status 0 when all were right.
 */
static int clone_some(const char *name, int first, int n, uint64_t sum, int out)
{
	struct pool_snap *s;
	struct pool *pool;
	uint8_t **addr = calloc((size_t)n, sizeof(*addr));
	uint64_t size, ps, pages, mark;
	long anon0;
	double t0, t;
	int i, bad = 0, rc;

	if (addr == NULL || pool_open(NULL, 0, &pool) < 0 || pool_snap_open(pool, name, &s) < 0)
		return fail(name, -EIO);
	size = pool_snap_size(s);
	ps = pool_snap_page_size(s);
	pages = size / ps;
	anon0 = kib("/proc/self/smaps_rollup", "Anonymous");
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		rc = pool_snap_clone(s, (void **)&addr[i]);
		if (rc < 0)
			return fail("pool_snap_clone", rc);
	}
	t = now_ms() - t0;
	for (i = 0; i < n; i++) {
		uint64_t pg = (uint64_t)(first + i) % pages, other = (pg + 1) % pages;

		if ((first + i) % 100 == 0 && XXH3_64bits(addr[i], size) != sum)
			bad++;
		/* a page nobody wrote reads the same in two clones */
		if (i > 0 && memcmp(addr[i] + other * ps, addr[i - 1] + other * ps, 8) != 0)
			bad++;
		mark = UINT64_C(0xc10e000000000000) | (uint64_t)(first + i);
		memcpy(addr[i] + pg * ps, &mark, 8);
	}
	for (i = 0; i < n; i++) {
		uint64_t pg = (uint64_t)(first + i) % pages, got;

		memcpy(&got, addr[i] + pg * ps, 8);
		if (got != (UINT64_C(0xc10e000000000000) | (uint64_t)(first + i)))
			bad++;
	}
	/* Each clone's writes stayed its own: the clone before it still has the image there. */
	for (i = 1; i < n; i++) {
		uint64_t pg = (uint64_t)(first + i) % pages, got;

		memcpy(&got, addr[i - 1] + pg * ps, 8);
		if (got == (UINT64_C(0xc10e000000000000) | (uint64_t)(first + i)))
			bad++;
	}
	dprintf(out, "%.3f %ld %d\n", t, kib("/proc/self/smaps_rollup", "Anonymous") - anon0, bad);
	for (i = 0; i < n; i++)
		munmap(addr[i], size);
	pool_snap_close(s);
	pool_close(pool);
	free(addr);
	return bad != 0;
}

static int clones(const char *name, int n, int procs, uint64_t sum)
{
	long shmem0 = kib("/proc/meminfo", "Shmem"), priv = 0, p;
	double wall0 = now_ms(), ms = 0, t;
	int fds[2], i, status, bad = 0, b, failed = 0;
	FILE *in;

	if (n < 1 || procs < 1 || procs > n || pipe(fds) < 0)
		return usage();
	for (i = 0; i < procs; i++) {
		int first = (int)((long)n * i / procs), last = (int)((long)n * (i + 1) / procs);

		if (fork() == 0) {
			close(fds[0]);
			_exit(clone_some(name, first, last - first, sum, fds[1]));
		}
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in != NULL && fscanf(in, "%lf %ld %d", &t, &p, &b) == 3) {
		ms = t > ms ? t : ms;
		priv += p;
		bad += b;
	}
	while (wait(&status) > 0)
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	printf("%d clones by %d processes: %.1f ms to map them all (%.1f ms wall), "
	       "shmem %+ld KiB, private %ld KiB, %d bad, %d failed\n",
	       n, procs, ms, now_ms() - wall0, kib("/proc/meminfo", "Shmem") - shmem0, priv, bad,
	       failed);
	if (in != NULL)
		fclose(in);
	return bad == 0 && failed == 0 ? 0 : 1;
}

static int clone_fd(struct pool *pool, const char *name, uint64_t sum)
{
	struct pool_snap *s;
	uint64_t size;
	void *p;
	int rc, fd;

	rc = pool_snap_open(pool, name, &s);
	if (rc == 0)
		rc = pool_snap_clone_fd(s, &fd);
	if (rc < 0)
		return fail(name, rc);
	size = pool_snap_size(s);
	pool_snap_close(s);
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY || !(fcntl(fd, F_GETFD) & FD_CLOEXEC) ||
	    fcntl(fd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		fprintf(stderr, "pool-snap: the fd is not read-only, close-on-exec and sealed\n");
		return 1;
	}
	if (mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED) {
		fprintf(stderr, "pool-snap: the fd maps shared and writable\n");
		return 1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED || XXH3_64bits(p, size) != sum) {
		fprintf(stderr, "pool-snap: the private mapping is not the image\n");
		return 1;
	}
	munmap(p, size);
	return 0;
}

static volatile uint64_t touched_sum; /* keeps the touches */

/* Each of n lazy clones, touched last page to first, is the image; a write is its own. */
static int lazy_clone(struct pool *pool, const char *name, uint64_t sum, int n)
{
	struct pool_snap *s;
	double t0, usable, touched, full;
	uint8_t *p[64], *q, mine[PAGE];
	uint64_t size, i, rest;
	int rc, k;

	if (n < 1 || n > 64)
		return usage();
	if ((rc = pool_snap_open(pool, name, &s)) < 0)
		return fail(name, rc);
	size = pool_snap_size(s);
	t0 = now_ms();
	for (k = 0; k < n; k++)
		if ((rc = pool_snap_clone_lazy(s, (void **)&p[k])) < 0)
			return fail("pool_snap_clone_lazy", rc);
	usable = now_ms() - t0;
	for (i = size / PAGE; i-- > 0;)
		touched_sum += p[n - 1][i * PAGE];
	touched = now_ms() - t0;
	memset(mine, 0xa5, sizeof(mine));
	for (k = 0; k < n; k++) {
		if (XXH3_64bits(p[k], size) != sum) {
			fprintf(stderr, "pool-snap: lazy clone %d is not the image\n", k);
			return 1;
		}
		mine[0] = (uint8_t)k;
		memcpy(p[k] + PAGE, mine, PAGE);
	}
	if ((rc = pool_snap_clone_wait(s)) < 0)
		return fail("pool_snap_clone_wait", rc);
	full = now_ms() - t0;
	rest = XXH3_64bits(p[0] + 2 * PAGE, size - 2 * PAGE);
	for (k = 0; k < n; k++) {
		mine[0] = (uint8_t)k;
		if (memcmp(p[k] + PAGE, mine, PAGE) != 0 ||
		    XXH3_64bits(p[k] + 2 * PAGE, size - 2 * PAGE) != rest) {
			fprintf(stderr, "pool-snap: lazy clone %d lost its own write, or more\n",
				k);
			return 1;
		}
		munmap(p[k], size);
	}
	if ((rc = pool_snap_clone(s, (void **)&q)) < 0)
		return fail("pool_snap_clone", rc);
	if (XXH3_64bits(q, size) != sum) {
		fprintf(stderr, "pool-snap: a clone of the copy the lazy clones left is not the "
				"image\n");
		return 1;
	}
	munmap(q, size);
	pool_snap_close(s);
	printf("%d lazy clone(s) usable in %.2f ms, every page of the last touched at %.2f ms, the "
	       "node's copy full at %.2f ms\n",
	       n, usable, touched, full);
	return 0;
}

static int lazy_clones(const char *name, int n, uint64_t sum)
{
	struct pool *pool;
	int i, status, bad = 0, rc;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return fail("fork", -errno);
		if (pid > 0)
			continue;
		rc = pool_open(NULL, 0, &pool);
		rc = rc < 0 ? fail("pool_open", rc) : lazy_clone(pool, name, sum, 1);
		fflush(stdout);
		_exit(rc);
	}
	for (i = 0; i < n; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	printf("%d lazy clones at once, %d failed\n", n, bad);
	return bad != 0;
}

/* Write pages [0, n) of the clone at c (npages) spread over it, the first two as save says. */
static void save_write(uint8_t *c, uint64_t npages, uint64_t n, uint64_t seed, uint64_t off)
{
	uint64_t stride = npages / n, i;

	for (i = 0; i < n; i++) {
		uint8_t *p = c + ((i * stride + off) % npages) * PAGE;

		if (i == 0 && off == 0)
			memset(p, 0, PAGE);
		else if (i == 1 && off == 0)
			*(volatile uint8_t *)p = *(volatile uint8_t *)p; /* the same bytes */
		else
			fill_page(p, seed, i);
	}
}

/* A fork of the save, read whole while the clone it came from writes on. */
static int save_fork(struct pool *pool, const char *name, uint8_t *parent, uint64_t npages,
		     uint64_t seed)
{
	struct pool_snap *s;
	uint8_t *f;
	int rc;

	rc = pool_snap_open(pool, name, &s);
	if (rc == 0)
		rc = pool_snap_clone_lazy(s, (void **)&f);
	if (rc < 0)
		return rc;
	save_write(parent, npages, npages / 4, seed + 2, 2);
	printf("fork sum %016llx\n", (unsigned long long)XXH3_64bits(f, pool_snap_size(s)));
	munmap(f, pool_snap_size(s));
	pool_snap_close(s);
	return 0;
}

static int save(struct pool *pool, char **argv, const char *cls)
{
	uint64_t n = strtoull(argv[2], NULL, 0), seed = strtoull(argv[3], NULL, 0), npages, sum;
	volatile uint64_t read_sum = 0;
	struct pool_snap_opts *opts = NULL;
	struct pool_snap_save *sv;
	struct pool_snap *s;
	double t0, t1, t2;
	uint8_t *c;
	int rc;

	rc = pool_snap_open(pool, argv[0], &s);
	if (rc < 0)
		return fail(argv[0], rc);
	rc = pool_snap_clone(s, (void **)&c);
	if (rc < 0) {
		pool_snap_close(s);
		return fail("pool_snap_clone", rc);
	}
	npages = pool_snap_size(s) / PAGE;
	if (n < 2 || n > npages / 2) {
		fprintf(stderr, "pool-snap: save: N from 2 to %llu\n",
			(unsigned long long)npages / 2);
		return 2;
	}
	read_sum = XXH3_64bits(c, pool_snap_size(s)); /* reads are not writes */
	save_write(c, npages, n, seed, 0);
	rc = pool_snap_save_new(s, c, &sv);
	if (rc < 0)
		return fail("pool_snap_save_new", rc);
	t0 = now_ms();
	rc = pool_snap_save_begin(sv);
	t1 = now_ms();
	if (rc < 0)
		return fail("pool_snap_save_begin", rc);
	sum = XXH3_64bits(c, pool_snap_size(s));
	save_write(c, npages, n, seed + 1, 1); /* the clone runs on: none of this is saved */
	if (cls != NULL &&
	    (pool_snap_opts_new(&opts) < 0 || pool_snap_opts_set_class(opts, cls) < 0))
		return fail("pool_snap_opts", -EINVAL);
	t2 = now_ms();
	rc = pool_snap_save_end(sv, argv[1], opts);
	printf("written %llu pages\nsum %016llx\nheld %.2f ms, stored in %.2f ms more\n",
	       (unsigned long long)pool_snap_save_pages(sv), (unsigned long long)sum, t1 - t0,
	       now_ms() - t2);
	if (rc == 0)
		rc = save_fork(pool, argv[1], c, npages, seed);
	pool_snap_save_free(sv);
	pool_snap_opts_free(opts);
	munmap(c, pool_snap_size(s));
	pool_snap_close(s);
	(void)read_sum;
	return rc < 0 ? fail("pool_snap_save_end", rc) : 0;
}

/* pool-snap record: see the top of the file. */
static int record(struct pool *pool, const char *name, uint64_t step)
{
	struct pool_snap_restore *r;
	struct pool_snap *s;
	volatile uint8_t *p;
	uint64_t size, pg, n = 0;
	int rc;

	rc = pool_snap_open(pool, name, &s);
	if (rc < 0)
		return fail(name, rc);
	size = pool_snap_size(s);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || step == 0)
		return fail("mmap", -ENOMEM);
	rc = pool_snap_restore_lazy(s, (void *)p, POOL_SNAP_REMOTE | POOL_SNAP_RECORD, &r);
	if (rc < 0)
		return fail("pool_snap_restore_lazy", rc);
	for (pg = size / PAGE; pg >= step; n++) {
		pg -= step;
		(void)p[pg * PAGE];
	}
	rc = pool_snap_restore_end(r);
	munmap((void *)p, size);
	pool_snap_close(s);
	if (rc < 0)
		return fail("pool_snap_restore_end", rc);
	printf("recorded %llu pages\n", (unsigned long long)n);
	return 0;
}

/* pool-snap restore: see the top of the file. */
static int restore(struct pool *pool, const char *name, uint64_t sum, const char *mode)
{
	static const struct {
		const char *word;
		unsigned flag;
	} flags[] = {{"remote", POOL_SNAP_REMOTE},
		     {"prefetch", POOL_SNAP_PREFETCH},
		     {"record", POOL_SNAP_RECORD},
		     {"fill", POOL_SNAP_FILL}};
	struct pool_snap_restore *r;
	struct pool_snap *s;
	volatile uint8_t *p;
	unsigned f = 0;
	uint64_t size, pg;
	double t0, first;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strstr(mode, flags[i].word) != NULL)
			f |= flags[i].flag;
	if ((rc = pool_snap_open(pool, name, &s)) < 0)
		return fail(name, rc);
	size = pool_snap_size(s);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | (strstr(mode, "huge") ? MAP_HUGETLB : 0), -1, 0);
	if (p == MAP_FAILED)
		return fail("mmap", -errno);
	t0 = now_ms();
	if ((rc = pool_snap_restore_lazy(s, (void *)p, f, &r)) < 0)
		return fail("pool_snap_restore_lazy", rc);
	(void)p[size - PAGE];
	first = now_ms() - t0;
	for (pg = size / PAGE; pg-- > 0;)
		touched_sum += p[pg * PAGE];
	if (XXH3_64bits((const void *)p, size) != sum) {
		fprintf(stderr, "pool-snap: the restored memory is not the image\n");
		return 1;
	}
	rc = pool_snap_restore_end(r);
	munmap((void *)p, size);
	pool_snap_close(s);
	if (rc < 0)
		return fail("pool_snap_restore_end", rc);
	printf("restored, every page right; the first touch took %.2f ms\n", first);
	return 0;
}

static struct pool_snap *stop_snap; /* what serve_stop's thread and signal stop */
static char logged[512];

static void *stop_later(void *arg)
{
	(void)arg;
	usleep(200000);
	pool_snap_serve_stop(stop_snap);
	return NULL;
}

static void stop_on_signal(int sig)
{
	(void)sig;
	pool_snap_serve_stop(stop_snap);
}

static void keep_line(int level, const char *line, void *arg)
{
	(void)arg;
	snprintf(logged, sizeof(logged), "%d %s", level, line);
}

/* The CPU time this process used, in ms. */
static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* One pool_snap_serve() on fd: its result and how long it ran, in ms. */
static int serve_once(int fd, unsigned max, double *ms)
{
	double t0 = now_ms();
	int rc = pool_snap_serve(stop_snap, fd, 0, max);

	*ms = now_ms() - t0;
	return rc;
}

static int serve_stop(struct pool *pool, const char *name)
{
	struct sigaction sa = {.sa_handler = stop_on_signal};
	struct itimerval later = {.it_value = {0, 150000}};
	struct sockaddr_un sun;
	socklen_t len = sizeof(sun);
	pthread_t thread;
	double ms, cpu;
	int fd, vmm, rc;

	rc = pool_snap_open(pool, name, &stop_snap);
	if (rc < 0)
		return fail("pool_snap_open", rc);
	/* (a bind of the family alone gives the socket a name of the abstract namespace) */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    bind(fd, (struct sockaddr *)&(sa_family_t){AF_UNIX}, sizeof(sa_family_t)) < 0 ||
	    listen(fd, 4) < 0) {
		fprintf(stderr, "pool-snap: listen: %s\n", strerror(errno));
		return 1;
	}
	pool_snap_serve_stop(stop_snap);
	rc = serve_once(fd, 0, &ms);
	printf("stopped before it began: %d failed, returned after %.1f ms\n", rc, ms);
	pthread_create(&thread, NULL, stop_later, NULL);
	rc = serve_once(fd, 0, &ms);
	pthread_join(thread, NULL);
	printf("stopped by another thread 200 ms in: %d failed, returned after %.1f ms\n", rc, ms);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &later, NULL);
	rc = serve_once(fd, 0, &ms);
	printf("stopped by a signal 150 ms in: %d failed, returned after %.1f ms\n", rc, ms);
	/* A stop while none runs is taken by the next serve; the one after must not spin on its
	 * wake-up. */
	pool_snap_serve_stop(stop_snap);
	rc = serve_once(fd, 0, &ms);
	cpu = cpu_ms();
	pthread_create(&thread, NULL, stop_later, NULL);
	rc = serve_once(fd, 0, &ms);
	pthread_join(thread, NULL);
	printf("the serve after a kept stop: %d failed, %.0f ms of CPU in %.1f ms\n", rc,
	       cpu_ms() - cpu, ms);
	/* A VMM whose handshake (a JSON array) is garbage: refused, logged through the callback. */
	pool_set_log(keep_line, NULL);
	vmm = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (vmm < 0 || getsockname(fd, (struct sockaddr *)&sun, &len) < 0 ||
	    connect(vmm, (struct sockaddr *)&sun, len) < 0 || write(vmm, "[garbage", 8) != 8) {
		fprintf(stderr, "pool-snap: connect: %s\n", strerror(errno));
		return 1;
	}
	shutdown(vmm, SHUT_WR);
	rc = serve_once(fd, 1, &ms);
	pool_set_log(NULL, NULL);
	printf("a garbage handshake: %d failed\nlogged: %s\n", rc, logged);
	close(vmm);
	close(fd);
	pool_snap_close(stop_snap);
	return 0;
}

int main(int argc, char **argv)
{
	struct pool *pool;
	int rc;

	if (argc == 8 && strcmp(argv[1], "mkimg") == 0)
		return mkimg(argv + 2);
	if (argc == 3 && strcmp(argv[1], "sum") == 0)
		return sum(argv[2]);
	if (argc == 5 && strcmp(argv[1], "lazyclones") == 0)
		return lazy_clones(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 16));
	if (argc == 6 && strcmp(argv[1], "clones") == 0)
		return clones(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 16));
	if (argc < 3)
		return usage();
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("pool_open", rc);
	if (strcmp(argv[1], "read") == 0 && argc == 3)
		rc = snap_read(pool, argv[2]);
	else if (strcmp(argv[1], "putregion") == 0 && argc == 4)
		rc = put_region(pool, argv[2], argv[3]);
	else if (strcmp(argv[1], "clonefd") == 0 && argc == 4)
		rc = clone_fd(pool, argv[2], strtoull(argv[3], NULL, 16));
	else if (strcmp(argv[1], "save") == 0 && (argc == 6 || argc == 7))
		rc = save(pool, argv + 2, argc == 7 ? argv[6] : NULL);
	else if (strcmp(argv[1], "restore") == 0 && argc == 5)
		rc = restore(pool, argv[2], strtoull(argv[3], NULL, 16), argv[4]);
	else if (strcmp(argv[1], "servestop") == 0 && argc == 3)
		rc = serve_stop(pool, argv[2]);
	else if (strcmp(argv[1], "record") == 0 && argc == 4)
		rc = record(pool, argv[2], strtoull(argv[3], NULL, 0));
	else if (strcmp(argv[1], "lazyclone") == 0 && (argc == 4 || argc == 5))
		rc = lazy_clone(pool, argv[2], strtoull(argv[3], NULL, 16),
				argc == 5 ? atoi(argv[4]) : 1);
	else
		rc = usage();
	pool_close(pool);
	return rc;
}

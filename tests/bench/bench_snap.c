/*
 * tests/bench/bench_snap.c - pool-bench-snap: restoring a snapshot, next to
 * the same image read from a file in the page cache.
 *
 *   pool-bench-snap NAME FILE [WS_PCT]
 *
 * NAME is a snapshot of FILE's bytes (poolctl snap put NAME FILE). For each
 * way of getting the image into a process it prints the time until the
 * memory is usable (the call returned) and until every page is resident
 * (each page touched once), in ms:
 *
 *   file read         read() of the whole file into anonymous memory
 *   file mmap         mmap(MAP_PRIVATE) of the file (the kernel's COW)
 *   clone, first      pool_snap_clone() when the node has no copy: the copy
 *                     is filled from the store, then mapped
 *   clone             pool_snap_clone() of the node's copy
 *   clone, first, lazy  pool_snap_clone_lazy() when the node has no copy (of
 *                     NAME.lazy, the same image put again): usable at once,
 *                     the pages fetched on fault while this process fills
 *                     the copy behind it; then when the copy is full
 *   lazy, copy        pool_snap_restore_lazy() served from the node's copy
 *   lazy, store       ... each fault fetched from the store (POOL_SNAP_REMOTE)
 *
 * Then a working set: WS_PCT% of the pages (default 10), scattered, touched
 * in a fixed random order by a recording restore; then the time to have
 * touched them all, from the start of a restore, without and with the
 * recorded set prefetched (from the store, and from the node's copy); and
 * the first lazy clone on the node touching it, of a snapshot with no
 * recorded set, and of one whose node's copy is filled with it first.
 * Last, 1,000 clones of the node's copy in this process.
 *
 *   pool-bench-snap fleet NAME N RESTORE_EVERY
 *
 * N sandboxes from NAME in this process, one after the other as fast as
 * they come: every RESTORE_EVERY-th a lazy restore from the store
 * (pool_snap_restore_lazy(), POOL_SNAP_REMOTE) into fresh memory, the
 * others lazy clones (pool_snap_clone_lazy(): the first on the node fills
 * its copy behind it). A sandbox is usable once its call returned and it
 * read one of its pages and wrote another. Prints the wall time for all N,
 * the time one took (median, 99th percentile, largest) and when the last
 * was usable (Unix time, for runs on several hosts at once).
 *
 *   pool-bench-snap save NAME MIB...
 *
 * A clone of NAME writes MIB MiB of its pages (spread over it, bytes no
 * snapshot has) and is saved (pool_snap_save_begin/end), for each MIB in
 * turn, each save removed after: how long the clone was held (begin; the
 * copy's memory taken before by pool_snap_save_new()) and
 * how long the store took after it, next to a memcpy of the written bytes
 * (the least any save holds a clone).
 *
 *   pool-bench-snap lifecycle NAME MIB N
 *
 * A sandbox's life: a clone of NAME writes MIB MiB and is saved as
 * NAME.life; forked N ways from that save (pool_snap_clone_lazy() of it,
 * the first making the node's copy behind it), each fork usable once its
 * call returned and it read a page and wrote one (the first, the median
 * and the largest of the others); then hibernated (the clone and its forks
 * unmapped) and woken from the store
 * into fresh memory (pool_snap_open() and pool_snap_restore_lazy() with
 * POOL_SNAP_REMOTE): the time until its first byte was read.
 *
 *   pool-bench-snap forks NAME N
 *
 * A clone of NAME writes 10 MiB and is saved as NAME.forks; N processes
 * at once each fork that save (pool_snap_open(), then
 * pool_snap_clone_lazy()), usable once it read a page and wrote another:
 * the median and the largest time, and the wall time until the last was
 * usable (the processes' start included). Twice: while one of them makes
 * the node's copy, then with the copy made.
 *
 *   pool-bench-snap density NAME N READ_MIB WRITE_MIB
 *
 * N idle sandboxes: clones of NAME (the node's copy made first), each
 * having read its first READ_MIB MiB and written WRITE_MIB MiB of pages
 * spread over them, all kept: the node memory each costs, its page tables
 * (VmPTE) and pages of its own (RssAnon), and the node's one copy of the
 * image shared by all of them, over N.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libpool/libpool.h"

#define CLONES 1000
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static uint64_t size, page, npages;
static uint64_t *ws; /* the working set, in touch order */
static size_t nws;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void __attribute__((noreturn)) die(const char *what, int rc)
{
	fprintf(stderr, "pool-bench-snap: %s: %s (%s)\n", what, pool_strerror(rc), pool_errormsg());
	exit(1);
}

/* Touch one byte of every page (or of the working set): the sum keeps the reads. */
static volatile uint64_t sink;

static void touch_all(const uint8_t *p)
{
	uint64_t i, s = 0;

	for (i = 0; i < npages; i++)
		s += p[i * page];
	sink += s;
}

static void touch_ws(const uint8_t *p)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < nws; i++)
		s += p[ws[i] * page];
	sink += s;
}

static void row(const char *what, double usable, double resident)
{
	printf("  %-34s %10.2f %10.2f\n", what, usable, resident);
}

static void *anon(void)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void file_read(const char *path)
{
	uint8_t *p = anon();
	double t0 = now_ms(), t;
	uint64_t off = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	while (fd >= 0 && off < size && (n = read(fd, p + off, size - off)) > 0)
		off += (uint64_t)n;
	t = now_ms() - t0;
	if (fd < 0 || off != size) {
		perror(path);
		exit(1);
	}
	close(fd);
	row("file read() (page cache)", t, t);
	munmap(p, size);
}

static void file_mmap(const char *path)
{
	int fd = open(path, O_RDONLY);
	double t0 = now_ms(), t1;
	uint8_t *p =
	    fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	t1 = now_ms() - t0;
	touch_all(p);
	row("file mmap(MAP_PRIVATE)", t1, now_ms() - t0);
	munmap(p, size);
	close(fd);
}

static void clone_row(struct pool_snap *s, const char *what)
{
	double t0 = now_ms(), t1;
	void *p;
	int rc = pool_snap_clone(s, &p);

	if (rc < 0)
		die("pool_snap_clone", rc);
	t1 = now_ms() - t0;
	touch_all(p);
	row(what, t1, now_ms() - t0);
	munmap(p, size);
}

/* Put file's image again as lname, and open it: a snapshot no node has a copy of. */
static struct pool_snap *put_open(struct pool *pool, const char *lname, const char *file)
{
	struct pool_snap *s;
	int rc, fd;

	if ((fd = open(file, O_RDONLY)) < 0) {
		perror(file);
		exit(1);
	}
	rc = pool_snap_put_fd(pool, lname, fd, NULL);
	close(fd);
	if (rc == 0)
		rc = pool_snap_open(pool, lname, &s);
	if (rc < 0)
		die(lname, rc);
	return s;
}

/* The first clone of a copy nobody made yet (a second snapshot of the image), made lazily. */
static void lazy_clone_row(struct pool *pool, const char *name, const char *file)
{
	struct pool_snap *s;
	char lname[POOL_SNAP_NAME_MAX + 1];
	double t0, t1, t2;
	void *p;
	int rc;

	snprintf(lname, sizeof(lname), "%.53s.lazy", name);
	s = put_open(pool, lname, file);
	t0 = now_ms();
	if ((rc = pool_snap_clone_lazy(s, &p)) < 0)
		die("pool_snap_clone_lazy", rc);
	t1 = now_ms() - t0;
	touch_all(p);
	t2 = now_ms() - t0;
	if ((rc = pool_snap_clone_wait(s)) < 0)
		die("pool_snap_clone_wait", rc);
	row("clone, first on the node, lazy", t1, t2);
	printf("  %-34s %10s %10.2f\n", "  (the node's copy full)", "", now_ms() - t0);
	munmap(p, size);
	pool_snap_close(s);
	pool_snap_remove(pool, lname);
}

/* A lazy restore: until it returns, until all pages (or the working set) are touched. */
static double lazy(struct pool_snap *s, unsigned flags, bool only_ws, double *ret_usable)
{
	struct pool_snap_restore *r;
	uint8_t *p = anon();
	double t0 = now_ms(), t;
	int rc = pool_snap_restore_lazy(s, p, flags, &r);

	if (rc < 0)
		die("pool_snap_restore_lazy", rc);
	if (ret_usable != NULL)
		*ret_usable = now_ms() - t0;
	if (only_ws)
		touch_ws(p);
	else
		touch_all(p);
	t = now_ms() - t0;
	rc = pool_snap_restore_end(r);
	if (rc < 0)
		die("pool_snap_restore_end", rc);
	munmap(p, size);
	return t;
}

static void lazy_row(struct pool_snap *s, unsigned flags, const char *what)
{
	double usable, resident = lazy(s, flags, false, &usable);

	row(what, usable, resident);
}

/*
 * The first lazy clone on the node, touching the working set: of a
 * snapshot with no recorded working set, then of one whose set a restore
 * recorded (the node's copy filled with it first).
 */
static void lazy_clone_ws_rows(struct pool *pool, const char *name, const char *file)
{
	static const char *const what[] = {"no set recorded", "the set recorded: filled first"};
	struct pool_snap *s;
	char lname[POOL_SNAP_NAME_MAX + 1];
	double t0, t;
	int pass, rc;
	void *p;

	snprintf(lname, sizeof(lname), "%.53s.lws", name);
	for (pass = 0; pass < 2; pass++) {
		s = put_open(pool, lname, file);
		if (pass == 1) /* from the store: no node's copy made */
			lazy(s, POOL_SNAP_REMOTE | POOL_SNAP_RECORD, true, NULL);
		t0 = now_ms();
		if ((rc = pool_snap_clone_lazy(s, &p)) < 0)
			die("pool_snap_clone_lazy", rc);
		touch_ws(p);
		t = now_ms() - t0;
		if ((rc = pool_snap_clone_wait(s)) < 0)
			die("pool_snap_clone_wait", rc);
		printf("  %-34s %10.2f ms (%s)\n", "first lazy clone, working set", t, what[pass]);
		munmap(p, size);
		pool_snap_close(s);
		pool_snap_remove(pool, lname);
	}
}

/* A scattered working set in a fixed random order (xorshift, seed 1). */
static void make_ws(unsigned pct)
{
	uint8_t *seen = calloc(npages, 1);
	uint64_t x = 88172645463325252ull;

	nws = npages * pct / 100;
	ws = malloc((nws ? nws : 1) * sizeof(*ws));
	for (size_t i = 0; seen != NULL && ws != NULL && i < nws;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (!seen[x % npages]) {
			seen[x % npages] = 1;
			ws[i++] = x % npages;
		}
	}
	free(seen);
}

static void clones(struct pool_snap *s)
{
	void **addr = calloc(CLONES, sizeof(*addr));
	double t0 = now_ms(), t;
	int i, rc;

	for (i = 0; i < CLONES; i++)
		if ((rc = pool_snap_clone(s, &addr[i])) < 0)
			die("pool_snap_clone", rc);
	t = now_ms() - t0;
	for (i = 0; i < CLONES; i++)
		munmap(addr[i], size);
	free(addr);
	printf("  %d clones of the node's copy:     %10.2f ms (%.1f us each)\n", CLONES, t,
	       t * 1e3 / CLONES);
}

/* Write mib MiB of c's pages, spread over it, with bytes of round r. */
static uint64_t save_dirty(uint8_t *c, uint64_t mib, uint64_t r)
{
	uint64_t n = (mib << 20) / page, stride, i, k;

	if (n > npages)
		n = npages;
	stride = n > 0 ? npages / n : 1;
	for (i = 0; i < n; i++) {
		uint64_t *p = (uint64_t *)(void *)(c + i * stride * page);

		for (k = 0; k < page / 8; k++)
			p[k] = (r << 48) ^ (i * 0x9e3779b97f4a7c15ULL) ^ k;
	}
	return n;
}

/* Open snapshot name; size, page and npages become its. */
static struct pool_snap *bench_open(struct pool *pool, const char *name)
{
	struct pool_snap *s;
	int rc;

	if ((rc = pool_snap_open(pool, name, &s)) < 0)
		die(name, rc);
	size = pool_snap_size(s);
	page = pool_snap_page_size(s);
	npages = size / page;
	return s;
}

/* Save clone c of s as sname: how long it was held and how long the store took (ms). */
static uint64_t save_timed(struct pool_snap *s, uint8_t *c, const char *sname, double *held,
			   double *stored)
{
	struct pool_snap_save *sv;
	uint64_t n;
	double t0;
	int rc;

	if ((rc = pool_snap_save_new(s, c, &sv)) < 0)
		die("pool_snap_save_new", rc);
	t0 = now_ms();
	if ((rc = pool_snap_save_begin(sv)) < 0)
		die("pool_snap_save_begin", rc);
	*held = now_ms() - t0;
	t0 = now_ms();
	if ((rc = pool_snap_save_end(sv, sname, NULL)) < 0)
		die("pool_snap_save_end", rc);
	*stored = now_ms() - t0;
	n = pool_snap_save_pages(sv);
	pool_snap_save_free(sv);
	return n;
}

static int save_rows(struct pool *pool, const char *name, int nmib, char **mibs)
{
	struct pool_snap *s;
	double t0, held, stored, copy;
	uint8_t *c, *buf;
	uint64_t n, k;
	int rc, i;

	s = bench_open(pool, name);
	if ((rc = pool_snap_clone(s, (void **)&c)) < 0)
		die("pool_snap_clone", rc);
	buf = anon();
	memset(buf, 1, size); /* its pages faulted in: the floor is the copy alone */
	printf("%s: %llu MiB; a clone saved after writing:\n", name,
	       (unsigned long long)(size >> 20));
	printf("  %10s %10s %14s %14s %16s\n", "MiB", "pages", "held ms", "stored ms",
	       "memcpy ms (floor)");
	for (i = 0; i < nmib; i++) {
		char sname[64];

		n = save_dirty(c, strtoull(mibs[i], NULL, 0), (uint64_t)i + 1);
		t0 = now_ms();
		for (k = 0; k < n; k++) /* the bytes a save must copy, at least */
			memcpy(buf + k * page, c + k * (npages / n) * page, page);
		copy = now_ms() - t0;
		snprintf(sname, sizeof(sname), "%.50s.save%d", name, i % 100);
		n = save_timed(s, c, sname, &held, &stored);
		printf("  %10s %10llu %14.2f %14.2f %16.2f\n", mibs[i], (unsigned long long)n, held,
		       stored, copy);
		pool_snap_remove(pool, sname);
	}
	munmap(buf, size);
	munmap(c, size);
	pool_snap_close(s);
	return 0;
}

static int cmp_double(const void *a, const void *b);
static void usable_touch(uint8_t *p, uint64_t i);

/* N processes fork name at once, each sending its time (ms) through a pipe. */
static int forks_at_once(const char *name, int n, const char *what)
{
	double *ms = calloc((size_t)n, sizeof(*ms)), start = now_ms(), wall;
	int fds[2], i, got = 0;

	if (n < 1 || ms == NULL || pipe(fds) < 0)
		return 2;
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0) {
			struct pool *pool;
			struct pool_snap *s;
			uint8_t *c;
			double t0 = now_ms(), t;
			int rc = pool_open(NULL, 0, &pool);

			if (rc == 0)
				rc = pool_snap_open(pool, name, &s);
			if (rc == 0)
				rc = pool_snap_clone_lazy(s, (void **)&c);
			if (rc < 0)
				_exit(1);
			size = pool_snap_size(s);
			page = pool_snap_page_size(s);
			npages = size / page;
			usable_touch(c, (uint64_t)i);
			t = now_ms() - t0;
			if (write(fds[1], &t, sizeof(t)) != sizeof(t))
				_exit(1);
			pool_snap_close(s); /* (waits for the node's copy when this one fills it) */
			_exit(0);
		}
	}
	close(fds[1]);
	while (got < n && read(fds[0], &ms[got], sizeof(*ms)) == sizeof(*ms))
		got++;
	wall = now_ms() - start; /* (the last one usable) */
	for (i = 0; i < n; i++)
		wait(NULL);
	qsort(ms, (size_t)got, sizeof(*ms), cmp_double);
	printf("  %s: %d processes fork it at once, %d usable: each in a median %.2f ms, the "
	       "largest %.2f ms; all in %.2f ms (%.2f ms a fork)\n",
	       what, n, got, got > 0 ? ms[got / 2] : 0.0, got > 0 ? ms[got - 1] : 0.0, wall,
	       wall / n);
	free(ms);
	return got == n ? 0 : 1;
}

/* N forks of a fresh save of name at once: while its node's copy is made, and after. */
static int forks(struct pool *pool, const char *name, int n)
{
	char fname[POOL_SNAP_NAME_MAX + 1];
	struct pool_snap *s;
	double held, stored;
	uint8_t *c;
	int rc;

	s = bench_open(pool, name);
	snprintf(fname, sizeof(fname), "%.52s.forks", name);
	if ((rc = pool_snap_clone(s, (void **)&c)) < 0)
		die("pool_snap_clone", rc);
	save_dirty(c, 10, 11);
	save_timed(s, c, fname, &held, &stored);
	munmap(c, size);
	pool_snap_close(s);
	printf("%s: %llu MiB; forks of a save of it (10 MiB written)\n", name,
	       (unsigned long long)(size >> 20));
	fflush(stdout);
	rc = forks_at_once(fname, n, "the node's copy made behind them");
	if (rc == 0)
		rc = forks_at_once(fname, n, "the node's copy made");
	pool_snap_remove(pool, fname);
	return rc;
}

/* A fork or a wake is usable: it read a page and wrote another. */
static void usable_touch(uint8_t *p, uint64_t i)
{
	sink += p[((i * 7919) % npages) * page];
	p[((i * 104729 + 1) % npages) * page] = 1;
}

static int lifecycle(struct pool *pool, const char *name, uint64_t mib, int n)
{
	struct pool_snap_restore *r;
	struct pool_snap *s, *life;
	char lname[POOL_SNAP_NAME_MAX + 1];
	double t0, held, stored, *fork_ms;
	uint8_t *c, **forks, *w;
	int rc, i;

	if (n < 2 || (fork_ms = calloc((size_t)n, sizeof(*fork_ms))) == NULL ||
	    (forks = calloc((size_t)n, sizeof(*forks))) == NULL)
		return 2;
	s = bench_open(pool, name);
	snprintf(lname, sizeof(lname), "%.53s.life", name);
	if ((rc = pool_snap_clone(s, (void **)&c)) < 0)
		die("pool_snap_clone", rc);
	save_dirty(c, mib, 7);
	save_timed(s, c, lname, &held, &stored);
	printf("%s: %llu MiB; a clone wrote %llu MiB\n", name, (unsigned long long)(size >> 20),
	       (unsigned long long)mib);
	printf("  %-44s %10.2f ms (then stored in %.2f ms)\n", "saved, the clone held", held,
	       stored);
	if ((rc = pool_snap_open(pool, lname, &life)) < 0)
		die(lname, rc);
	for (i = 0; i < n; i++) {
		t0 = now_ms();
		if ((rc = pool_snap_clone_lazy(life, (void **)&forks[i])) < 0)
			die("pool_snap_clone_lazy", rc);
		usable_touch(forks[i], (uint64_t)i);
		fork_ms[i] = now_ms() - t0;
	}
	printf("  %-44s %10.2f ms\n", "fork 1, usable (the node's copy made behind it)",
	       fork_ms[0]);
	qsort(fork_ms + 1, (size_t)n - 1, sizeof(*fork_ms), cmp_double);
	printf("  forks 2-%d, each usable: median %.2f ms, largest %.2f ms\n", n,
	       fork_ms[1 + (n - 1) / 2], fork_ms[n - 1]);
	if ((rc = pool_snap_clone_wait(life)) < 0)
		die("pool_snap_clone_wait", rc);
	for (i = 0; i < n; i++)
		munmap(forks[i], size);
	munmap(c, size);
	pool_snap_close(life);
	pool_snap_close(s);
	/* Hibernated: nothing of it mapped; woken from the store, not the node's copy. */
	w = anon();
	t0 = now_ms();
	if ((rc = pool_snap_open(pool, lname, &life)) < 0)
		die(lname, rc);
	held = now_ms() - t0;
	if ((rc = pool_snap_restore_lazy(life, w, POOL_SNAP_REMOTE, &r)) < 0)
		die("pool_snap_restore_lazy", rc);
	usable_touch(w, 3);
	printf("  %-44s %10.2f ms (%.2f of it opening the snapshot)\n",
	       "woken from the store, its first byte read", now_ms() - t0, held);
	pool_snap_restore_end(r);
	munmap(w, size);
	pool_snap_close(life);
	pool_snap_remove(pool, lname);
	free(forks);
	free(fork_ms);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A page of the image, away from the start: the sandboxes' first read and write. */
#define FLEET_READ(n) ((n) / 2 * page)
#define FLEET_WRITE(n) ((n) / 3 * page)

static int fleet(struct pool *pool, const char *name, int n, int restore_every)
{
	struct pool_snap_restore **rs = calloc((size_t)n, sizeof(*rs));
	uint8_t **addr = calloc((size_t)n, sizeof(*addr));
	double *t = calloc((size_t)n, sizeof(*t)), t0, wall;
	struct pool_snap *s;
	struct timespec end;
	int i, rc, nrestores = 0, slowest = 0;

	if (rs == NULL || addr == NULL || t == NULL || n < 1 || restore_every < 1)
		return 2;
	s = bench_open(pool, name);
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		double t1 = now_ms();
		bool restore = i % restore_every == restore_every - 1;

		if (restore) {
			addr[i] = anon();
			rc = pool_snap_restore_lazy(s, addr[i], POOL_SNAP_REMOTE, &rs[i]);
			nrestores++;
		} else {
			rc = pool_snap_clone_lazy(s, (void **)&addr[i]);
		}
		if (rc < 0)
			die(restore ? "pool_snap_restore_lazy" : "pool_snap_clone_lazy", rc);
		sink += addr[i][FLEET_READ(npages)];
		addr[i][FLEET_WRITE(npages)] = (uint8_t)i;
		t[i] = now_ms() - t1;
	}
	wall = now_ms() - t0;
	for (i = 0; i < n; i++)
		slowest = t[i] > t[slowest] ? i : slowest;
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	clock_gettime(CLOCK_REALTIME, &end);
	printf("fleet: %d sandboxes (%d lazy clones, %d lazy restores) usable in %.1f ms; "
	       "one took %.3f ms median, %.3f ms at p99, %.3f ms at most (number %d, a %s); "
	       "done at %lld.%03ld\n",
	       n, n - nrestores, nrestores, wall, t[n / 2], t[(size_t)n * 99 / 100], t[n - 1],
	       slowest + 1, rs[slowest] != NULL ? "restore" : "clone", (long long)end.tv_sec,
	       end.tv_nsec / 1000000);
	fflush(stdout);
	/* Not timed: the restores place the rest of the image when they end. */
	for (i = 0; i < n; i++) {
		if (rs[i] != NULL && (rc = pool_snap_restore_end(rs[i])) < 0)
			die("pool_snap_restore_end", rc);
		munmap(addr[i], size);
	}
	if ((rc = pool_snap_clone_wait(s)) < 0)
		die("pool_snap_clone_wait", rc);
	pool_snap_close(s);
	free(rs);
	free(addr);
	free(t);
	return 0;
}

/* A line of /proc/meminfo or /proc/self/status, in KiB. */
static long long kib_of(const char *file, const char *key)
{
	char line[256];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f = fopen(file, "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = atoll(line + n + 1);
	if (f != NULL)
		fclose(f);
	return v;
}

/*
 * Clone i reads its first read pages (as a guest's resident memory is
 * mostly together, and the same in each clone of an image) and writes
 * written pages spread over them.
 */
static void density_touch(uint8_t *c, uint64_t read, uint64_t written, int i)
{
	uint64_t k, step;

	for (k = 0; k < read; k++)
		sink += c[k * page];
	for (k = 0, step = MAX(read, written) / (written + 1); k < written; k++)
		c[(k * step + (uint64_t)i) % MAX(read, written) * page + 8] = (uint8_t)(i + 1);
}

static int density(struct pool *pool, const char *name, int n, uint64_t read_mib,
		   uint64_t write_mib)
{
	struct pool_snap *s = bench_open(pool, name);
	uint8_t **c = calloc((size_t)n, sizeof(*c));
	long long pte, anon;
	double t0;
	int i, rc;

	if (c == NULL || n <= 0 || (read_mib << 20) > size || (write_mib << 20) > size) {
		fprintf(stderr, "pool-bench-snap density: N > 0, and MiB within the image\n");
		return 2;
	}
	if ((rc = pool_snap_place(s)) < 0) /* the node's copy, before the baseline */
		die("pool_snap_place", rc);
	pte = kib_of("/proc/self/status", "VmPTE");
	anon = kib_of("/proc/self/status", "RssAnon");
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		if ((rc = pool_snap_clone(s, (void **)&c[i])) < 0)
			die("pool_snap_clone", rc);
		density_touch(c[i], (read_mib << 20) / page, (write_mib << 20) / page, i);
	}
	pte = kib_of("/proc/self/status", "VmPTE") - pte;
	anon = kib_of("/proc/self/status", "RssAnon") - anon;
	printf("density: %d idle clones of %s (%llu MiB), each read %llu MiB and wrote %llu MiB, "
	       "made in %.0f ms\n",
	       n, name, (unsigned long long)(size >> 20), (unsigned long long)read_mib,
	       (unsigned long long)write_mib, now_ms() - t0);
	printf("  node memory per clone %.2f MiB: page tables %.2f, own pages %.2f, "
	       "the node's copy shared %.2f\n",
	       ((double)(pte + anon) / 1024 + (double)(size >> 20)) / n, (double)pte / 1024 / n,
	       (double)anon / 1024 / n, (double)(size >> 20) / n);
	for (i = 0; i < n; i++)
		munmap(c[i], size);
	free(c);
	pool_snap_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct pool_snap *s;
	struct pool *pool;
	struct stat st;
	double with, without, wcopy, u;
	int rc;

	if (argc == 5 && strcmp(argv[1], "fleet") == 0) {
		if ((rc = pool_open(NULL, 0, &pool)) < 0)
			die("pool_open", rc);
		rc = fleet(pool, argv[2], atoi(argv[3]), atoi(argv[4]));
		pool_close(pool);
		return rc;
	}
	if (argc == 6 && strcmp(argv[1], "density") == 0) {
		if ((rc = pool_open(NULL, 0, &pool)) < 0)
			die("pool_open", rc);
		rc = density(pool, argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
			     strtoull(argv[5], NULL, 0));
		pool_close(pool);
		return rc;
	}
	if (argc == 4 && strcmp(argv[1], "forks") == 0) {
		if ((rc = pool_open(NULL, 0, &pool)) < 0)
			die("pool_open", rc);
		rc = forks(pool, argv[2], atoi(argv[3]));
		pool_close(pool);
		return rc;
	}
	if (argc == 5 && strcmp(argv[1], "lifecycle") == 0) {
		if ((rc = pool_open(NULL, 0, &pool)) < 0)
			die("pool_open", rc);
		rc = lifecycle(pool, argv[2], strtoull(argv[3], NULL, 0), atoi(argv[4]));
		pool_close(pool);
		return rc;
	}
	if (argc >= 4 && strcmp(argv[1], "save") == 0) {
		if ((rc = pool_open(NULL, 0, &pool)) < 0)
			die("pool_open", rc);
		rc = save_rows(pool, argv[2], argc - 3, argv + 3);
		pool_close(pool);
		return rc;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: pool-bench-snap NAME FILE [WS_PCT]\n"
				"       pool-bench-snap fleet NAME N RESTORE_EVERY\n"
				"       pool-bench-snap save NAME MIB...\n"
				"       pool-bench-snap lifecycle NAME MIB N\n"
				"       pool-bench-snap forks NAME N\n"
				"       pool-bench-snap density NAME N READ_MIB WRITE_MIB\n");
		return 2;
	}
	rc = pool_open(NULL, 0, &pool);
	if (rc == 0)
		rc = pool_snap_open(pool, argv[1], &s);
	if (rc < 0)
		die(argv[1], rc);
	size = pool_snap_size(s);
	page = pool_snap_page_size(s);
	npages = size / page;
	if (stat(argv[2], &st) < 0 || (uint64_t)st.st_size != size) {
		fprintf(stderr, "pool-bench-snap: %s is not the snapshot's image\n", argv[2]);
		return 1;
	}
	make_ws(argc > 3 ? (unsigned)atoi(argv[3]) : 10);
	printf("%s: %llu MiB, %llu pages\n", argv[1], (unsigned long long)(size >> 20),
	       (unsigned long long)npages);
	printf("  %-34s %10s %10s\n", "ms", "usable", "resident");
	file_read(argv[2]); /* also brings it into the page cache */
	file_read(argv[2]);
	file_mmap(argv[2]);
	clone_row(s, "clone, first on the node (fill)");
	clone_row(s, "clone of the node's copy");
	lazy_clone_row(pool, argv[1], argv[2]);
	lazy_row(s, 0, "lazy uffd, from the node's copy");
	lazy_row(s, POOL_SNAP_REMOTE, "lazy uffd, from the store");
	/* Record the working set, then restore it without and with the prefetch. */
	lazy(s, POOL_SNAP_REMOTE | POOL_SNAP_RECORD, true, NULL);
	without = lazy(s, POOL_SNAP_REMOTE, true, NULL);
	with = lazy(s, POOL_SNAP_REMOTE | POOL_SNAP_PREFETCH, true, &u);
	wcopy = lazy(s, POOL_SNAP_PREFETCH, true, NULL);
	printf("  working set of %zu pages (%zu MiB), touched from the restore's start:\n", nws,
	       (size_t)(nws * page >> 20));
	printf("  %-34s %10.2f ms\n", "from the store, on demand", without);
	printf("  %-34s %10.2f ms (%.2f ms prefetching): %.1fx\n", "from the store, prefetched",
	       with, u, without / with);
	printf("  %-34s %10.2f ms\n", "from the node's copy, prefetched", wcopy);
	lazy_clone_ws_rows(pool, argv[1], argv[2]);
	clones(s);
	pool_snap_close(s);
	pool_close(pool);
	return 0;
}

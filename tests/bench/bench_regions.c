/*
 * bench_regions.c - pool-bench-regions: regions through libpool, each figure
 * next to its baseline from the same process.
 *
 *   pool-bench-regions [-T SECONDS] [-W WINDOW] local SIZE
 *       create a region placed "local", map it, and copy into and out of the
 *       mapping (plain memcpy on the pointer, and pool_region_write/read)
 *       next to memcpy between two malloc'd buffers of the same footprint.
 *   pool-bench-regions [-T SECONDS] [-W WINDOW] [-B] [-S SIZE] remote NAME
 *       open an existing region for writing; pool_region_read/write MiB/s
 *       one call at a time (sync) and WINDOW transfers per pool_batch_wait
 *       (batched) for 4 KiB..4 MiB; then 8-byte and 4 KiB latency. The
 *       buffers are plain memory (poold's window is staged through), or
 *       with -B from pool_buf_alloc() (moved in place).
 *   pool-bench-regions [-j CLIENTS] ops N [SIZE [PLACEMENT]]
 *       N x (pool_region_create + pool_region_close + pool_region_destroy)
 *       through the daemon; with -j, CLIENTS processes each do N/CLIENTS.
 *   pool-bench-regions create NAME SIZE [PLACEMENT [STRIPE]]
 *   pool-bench-regions destroy NAME
 *   pool-bench-regions fill N SIZE
 *       N regions fill0..fillN-1 of SIZE bytes, kept: a pool that holds
 *       many (ops then measures what they cost); prints the seconds taken.
 *
 * The socket is $POOL_SOCKET. Bandwidth is MiB/s (2^20 bytes per second),
 * latency microseconds. Every bandwidth figure is the best of ROUNDS
 * interleaved rounds (the VMs this runs on are noisy).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libpool/libpool.h"

#define ROUNDS 3
#define MAX_WINDOW 64

static const size_t bw_sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
static const size_t lat_sizes[] = {8, 4096};

static double secs = 0.3;
static int window = 8;
static int use_buf;	 /* -B: transfer buffers from pool_buf_alloc() */
static size_t only_size; /* -S: only this transfer size (0: all) */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((noreturn)) die(const char *what, int rc)
{
	fprintf(stderr, "pool-bench-regions: %s: %s (%s)\n", what, pool_errormsg(),
		pool_strerror(rc));
	exit(1);
}

static void *xmap(size_t len, int fill)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("pool-bench-regions: mmap");
		exit(1);
	}
	memset(p, fill, len); /* fault every page in before measuring */
	return p;
}

/* A size with an optional K/M/G suffix (powers of 1024). */
static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k':
	case 'K':
		return v << 10;
	case 'm':
	case 'M':
		return v << 20;
	case 'g':
	case 'G':
		return v << 30;
	default:
		return v;
	}
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

/* ------------------------------------------------------------------ local */

enum copy_kind { CP_MEMCPY, CP_MAP_STORE, CP_MAP_LOAD, CP_REGION_WRITE, CP_REGION_READ };

/* MiB/s of one kind of copy of SIZE-byte pieces cycling through FOOTPRINT bytes. */
static double run_copy(enum copy_kind k, struct pool_region *r, char *map, char *a, char *b,
		       size_t size, size_t footprint)
{
	uint64_t n = 0, slots = footprint / size;
	double t0 = now(), deadline = t0 + secs;
	int rc = 0;

	if (slots == 0)
		slots = 1;
	do {
		for (int i = 0; i < 16; i++, n++) {
			size_t off = (n % slots) * size;

			switch (k) {
			case CP_MEMCPY:
				memcpy(b + off, a + off, size);
				break;
			case CP_MAP_STORE:
				memcpy(map + off, a + off, size);
				break;
			case CP_MAP_LOAD:
				memcpy(b + off, map + off, size);
				break;
			case CP_REGION_WRITE:
				rc = pool_region_write(r, off, a + off, size);
				break;
			case CP_REGION_READ:
				rc = pool_region_read(r, off, b + off, size);
				break;
			}
			if (rc < 0)
				die("copy", rc);
		}
		__asm__ __volatile__("" ::: "memory");
	} while (now() < deadline);
	return (double)n * size / (now() - t0) / (1024.0 * 1024.0);
}

static int cmd_local(struct pool *pool, uint64_t size)
{
	struct pool_region_opts *o;
	struct pool_region *r;
	char name[64], *a, *b;
	void *map;
	int rc;

	snprintf(name, sizeof(name), "bench-local-%d", (int)getpid());
	pool_region_opts_new(&o);
	pool_region_opts_set_size(o, size);
	pool_region_opts_set_placement(o, "local");
	rc = pool_region_create(pool, name, o, 0, &r);
	pool_region_opts_free(o);
	if (rc < 0)
		die("create local region", rc);
	rc = pool_region_map(r, &map);
	if (rc < 0) {
		pool_region_close(r);
		pool_region_destroy(pool, name);
		die("map local region", rc);
	}
	memset(map, 3, size);
	a = xmap(size, 1);
	b = xmap(size, 2);
	printf("# local region %s: %" PRIu64 " bytes mapped at %p; footprint %" PRIu64
	       " MiB per buffer; best of %d rounds of %.2fs\n",
	       name, size, map, size >> 20, ROUNDS, secs);
	printf("%-9s %10s %10s %10s %10s %10s %8s %8s\n", "size", "memcpy", "map_store", "map_load",
	       "reg_write", "reg_read", "store%", "load%");
	for (size_t i = 0; i < sizeof(bw_sizes) / sizeof(bw_sizes[0]); i++) {
		size_t s = bw_sizes[i];
		double m = 0, st = 0, ld = 0, rw = 0, rr = 0;

		if (s > size)
			continue;
		for (int round = 0; round < ROUNDS; round++) {
			m = max2(m, run_copy(CP_MEMCPY, r, map, a, b, s, size));
			st = max2(st, run_copy(CP_MAP_STORE, r, map, a, b, s, size));
			ld = max2(ld, run_copy(CP_MAP_LOAD, r, map, a, b, s, size));
			rw = max2(rw, run_copy(CP_REGION_WRITE, r, map, a, b, s, size));
			rr = max2(rr, run_copy(CP_REGION_READ, r, map, a, b, s, size));
		}
		printf("%-9zu %10.0f %10.0f %10.0f %10.0f %10.0f %7.0f%% %7.0f%%\n", s, m, st, ld,
		       rw, rr, 100 * st / m, 100 * ld / m);
		fflush(stdout);
	}
	pool_region_close(r);
	rc = pool_region_destroy(pool, name);
	if (rc < 0)
		die("destroy", rc);
	munmap(a, size);
	munmap(b, size);
	return 0;
}

/* ----------------------------------------------------------------- remote */

/* MiB/s of SIZE-byte reads or writes cycling through the region; w == 0: sync. */
static double run_rw(struct pool *pool, struct pool_region *r, char *buf, size_t bufsz, size_t size,
		     int write, int w)
{
	uint64_t rsize = pool_region_size(r), slots = rsize / size, bslots = bufsz / size, n = 0;
	struct pool_batch *b = NULL;
	double t0, deadline;
	int rc;

	if (w > 0 && (rc = pool_batch_new(pool, &b)) < 0)
		die("batch", rc);
	/* warm-up: endpoint, rkeys, TCP windows */
	for (int i = 0; i < 4; i++) {
		rc = write ? pool_region_write(r, 0, buf, size) : pool_region_read(r, 0, buf, size);
		if (rc < 0)
			die("warm-up", rc);
	}
	t0 = now();
	deadline = t0 + secs;
	do {
		if (w == 0) {
			uint64_t off = (n % slots) * size;
			char *p = buf + (n % bslots) * size;

			rc = write ? pool_region_write(r, off, p, size)
				   : pool_region_read(r, off, p, size);
			if (rc < 0)
				die(write ? "pool_region_write" : "pool_region_read", rc);
			n++;
			continue;
		}
		for (int i = 0; i < w; i++, n++) {
			uint64_t off = (n % slots) * size;
			char *p = buf + (n % bslots) * size;

			rc = write ? pool_batch_write(b, r, off, p, size)
				   : pool_batch_read(b, r, off, p, size);
			if (rc < 0)
				die(write ? "pool_batch_write" : "pool_batch_read", rc);
		}
		rc = pool_batch_wait(b);
		if (rc < 0)
			die("pool_batch_wait", rc);
	} while (now() < deadline);
	if (b != NULL)
		pool_batch_free(b);
	return (double)n * size / (now() - t0) / (1024.0 * 1024.0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Latency in us of one blocking read or write (a write returns once visible: a round trip). */
static void run_lat(struct pool_region *r, char *buf, size_t size, int write, double *mean,
		    double *p50)
{
	enum { MAXS = 200000 };
	static double lat[MAXS];
	double t0 = now(), deadline = t0 + secs, t;
	uint64_t n = 0;
	int rc;

	for (int i = 0; i < 50; i++)
		if ((rc = pool_region_read(r, 0, buf, size)) < 0)
			die("warm-up", rc);
	t0 = now();
	deadline = t0 + secs;
	do {
		t = now();
		rc = write ? pool_region_write(r, 64, buf, size)
			   : pool_region_read(r, 64, buf, size);
		if (rc < 0)
			die("latency op", rc);
		if (n < MAXS)
			lat[n] = now() - t;
		n++;
	} while (now() < deadline);
	*mean = (now() - t0) / n * 1e6;
	if (n > MAXS)
		n = MAXS;
	qsort(lat, n, sizeof(lat[0]), cmp_double);
	*p50 = lat[n / 2] * 1e6;
}

static int cmd_remote(struct pool *pool, const char *name)
{
	struct pool_region *r;
	size_t bufsz = (size_t)MAX_WINDOW * (4u << 20);
	void *map;
	char *buf;
	int rc;

	rc = pool_region_open(pool, name, POOL_REGION_WRITE, &r);
	if (rc < 0)
		die("open region", rc);
	if (pool_region_map(r, &map) == 0)
		printf("# note: region %s is mapped here: reads and writes are memcpy\n", name);
	if (!use_buf) {
		buf = xmap(bufsz, 5);
	} else {
		rc = pool_buf_alloc(pool, bufsz, (void **)&buf);
		if (rc < 0)
			die("pool_buf_alloc", rc);
		memset(buf, 5, bufsz);
	}
	printf("# region %s: %" PRIu64 " MiB; sync = one call at a time; b%d = %d transfers per "
	       "pool_batch_wait; best of %d rounds of %.2fs; buffers %s\n",
	       name, pool_region_size(r) >> 20, window, window, ROUNDS, secs,
	       use_buf ? "from pool_buf_alloc (in place)" : "plain memory (staged)");
	printf("%-9s %10s %10s %10s %10s\n", "size", "read_sync", "write_sync", "read_batch",
	       "write_batch");
	for (size_t i = 0; i < sizeof(bw_sizes) / sizeof(bw_sizes[0]); i++) {
		size_t s = bw_sizes[i];
		double rs = 0, ws = 0, rb = 0, wb = 0;

		if (s > pool_region_size(r) || (only_size != 0 && s != only_size))
			continue;
		for (int round = 0; round < ROUNDS; round++) {
			rs = max2(rs, run_rw(pool, r, buf, bufsz, s, 0, 0));
			ws = max2(ws, run_rw(pool, r, buf, bufsz, s, 1, 0));
			rb = max2(rb, run_rw(pool, r, buf, bufsz, s, 0, window));
			wb = max2(wb, run_rw(pool, r, buf, bufsz, s, 1, window));
		}
		printf("%-9zu %10.1f %10.1f %10.1f %10.1f\n", s, rs, ws, rb, wb);
		fflush(stdout);
	}
	printf("%-9s %10s %10s %10s %10s\n", "size", "read_mean", "read_p50", "write_mean",
	       "write_p50");
	for (size_t i = 0; i < sizeof(lat_sizes) / sizeof(lat_sizes[0]); i++) {
		double rm, rp, wm, wp;

		run_lat(r, buf, lat_sizes[i], 0, &rm, &rp);
		run_lat(r, buf, lat_sizes[i], 1, &wm, &wp);
		printf("%-9zu %10.2f %10.2f %10.2f %10.2f\n", lat_sizes[i], rm, rp, wm, wp);
		fflush(stdout);
	}
	pool_region_close(r);
	if (use_buf)
		pool_buf_free(pool, buf);
	else
		munmap(buf, bufsz);
	return 0;
}

/* -------------------------------------------------------------------- ops */

/* N x create+close+destroy; prints "create_us close_us destroy_us" totals per op. */
static void ops_worker(uint64_t n, uint64_t size, const char *placement, int id, double *t_c,
		       double *t_x, double *t_d)
{
	struct pool_region_opts *o;
	struct pool_region *r;
	struct pool *pool;
	char name[64];
	double t;
	int rc;

	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		die("open pool", rc);
	pool_region_opts_new(&o);
	pool_region_opts_set_size(o, size);
	pool_region_opts_set_placement(o, placement);
	/* warm-up: the first create starts this process's fabric context */
	snprintf(name, sizeof(name), "bench-op-%d-%d-w", (int)getpid(), id);
	if ((rc = pool_region_create(pool, name, o, 0, &r)) < 0)
		die("create", rc);
	pool_region_close(r);
	if ((rc = pool_region_destroy(pool, name)) < 0)
		die("destroy", rc);
	*t_c = *t_x = *t_d = 0;
	for (uint64_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "bench-op-%d-%d-%" PRIu64, (int)getpid(), id, i);
		t = now();
		rc = pool_region_create(pool, name, o, 0, &r);
		if (rc < 0)
			die("create", rc);
		*t_c += now() - t;
		t = now();
		pool_region_close(r);
		*t_x += now() - t;
		t = now();
		rc = pool_region_destroy(pool, name);
		if (rc < 0)
			die("destroy", rc);
		*t_d += now() - t;
	}
	pool_region_opts_free(o);
	pool_close(pool);
}

static int cmd_ops(uint64_t n, int clients, uint64_t size, const char *placement)
{
	double t0 = now(), el, c = 0, x = 0, d = 0;
	int pfd[2];

	if (pipe(pfd) < 0)
		return perror("pipe"), 1;
	for (int j = 0; j < clients; j++) {
		pid_t pid = fork();

		if (pid < 0)
			return perror("fork"), 1;
		if (pid == 0) {
			double v[3];

			close(pfd[0]);
			ops_worker(n / clients, size, placement, j, &v[0], &v[1], &v[2]);
			if (write(pfd[1], v, sizeof(v)) != sizeof(v))
				_exit(1);
			_exit(0);
		}
	}
	close(pfd[1]);
	for (int j = 0; j < clients; j++) {
		double v[3];

		if (read(pfd[0], v, sizeof(v)) != sizeof(v)) {
			fprintf(stderr, "pool-bench-regions: a worker failed\n");
			return 1;
		}
		c += v[0], x += v[1], d += v[2];
	}
	el = now() - t0;
	while (wait(NULL) > 0)
		;
	n = n / clients * clients;
	/* elapsed includes the workers' pool_open and warm-up; per-op times are in the loop */
	printf("%-8d %-9s %8" PRIu64 " %9.0f %9.0f %9.1f %9.1f %9.1f\n", clients, placement, n,
	       n / el, (double)n / ((c + x + d) / clients), c / n * 1e6, x / n * 1e6, d / n * 1e6);
	return 0;
}

/* ------------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: pool-bench-regions [-T SECONDS] [-W WINDOW] [-j CLIENTS] [-B] [-S SIZE]\n"
		"         local SIZE | remote NAME | ops N [SIZE [PLACEMENT]] | ops-header | fill "
		"N SIZE\n"
		"         | create NAME SIZE [PLACEMENT [STRIPE]] | destroy NAME\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct pool *pool;
	int c, clients = 1, rc;
	const char *cmd;

	while ((c = getopt(argc, argv, "T:W:j:S:Bh")) != -1) {
		switch (c) {
		case 'S':
			only_size = parse_size(optarg);
			break;
		case 'T':
			secs = atof(optarg);
			break;
		case 'W':
			window = atoi(optarg);
			break;
		case 'B':
			use_buf = 1;
			break;
		case 'j':
			clients = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc || secs <= 0 || window < 1 || window > MAX_WINDOW || clients < 1)
		usage();
	cmd = argv[optind++];
	argc -= optind;
	argv += optind;
	if (strcmp(cmd, "ops-header") == 0) {
		printf("%-8s %-9s %8s %9s %9s %9s %9s %9s\n", "clients", "placement", "n", "ops/s",
		       "loop_op/s", "create_us", "close_us", "destroy_us");
		return 0;
	}
	if (strcmp(cmd, "ops") == 0) {
		if (argc < 1)
			usage();
		return cmd_ops(strtoull(argv[0], NULL, 0), clients,
			       argc > 1 ? parse_size(argv[1]) : 65536,
			       argc > 2 ? argv[2] : "local");
	}
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		die("open pool", rc);
	if (strcmp(cmd, "local") == 0 && argc >= 1)
		rc = cmd_local(pool, parse_size(argv[0]));
	else if (strcmp(cmd, "remote") == 0 && argc >= 1)
		rc = cmd_remote(pool, argv[0]);
	else if (strcmp(cmd, "create") == 0 && argc >= 2) {
		struct pool_region_opts *o;
		struct pool_region *r;

		pool_region_opts_new(&o);
		pool_region_opts_set_size(o, parse_size(argv[1]));
		pool_region_opts_set_mode(o, 0666);
		if (argc > 2)
			pool_region_opts_set_placement(o, argv[2]);
		if (argc > 3)
			pool_region_opts_set_stripe(o, parse_size(argv[3]));
		rc = pool_region_create(pool, argv[0], o, 0, &r);
		pool_region_opts_free(o);
		if (rc < 0)
			die("create", rc);
		pool_region_close(r);
	} else if (strcmp(cmd, "fill") == 0 && argc >= 2) {
		uint64_t n = strtoull(argv[0], NULL, 0), size = parse_size(argv[1]), i;
		struct pool_region_opts *o;
		struct pool_region *r;
		double t0 = now();
		char name[32];

		pool_region_opts_new(&o);
		pool_region_opts_set_size(o, size);
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "fill%" PRIu64, i);
			rc = pool_region_create(pool, name, o, 0, &r);
			if (rc < 0)
				die("create", rc);
			pool_region_close(r);
		}
		pool_region_opts_free(o);
		printf("made %" PRIu64 " regions of %" PRIu64 " bytes in %.1f s\n", n, size,
		       now() - t0);
	} else if (strcmp(cmd, "destroy") == 0 && argc >= 1) {
		rc = pool_region_destroy(pool, argv[0]);
		if (rc < 0)
			die("destroy", rc);
	} else
		usage();
	pool_close(pool);
	return rc < 0;
}

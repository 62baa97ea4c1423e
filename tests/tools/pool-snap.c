/*
 * tests/tools/pool-snap.c - snapshot images and restores for the tests.
 *
 *   pool-snap mkimg FILE MIB SEED SHARED_SEED SHARED% ZERO%
 *       an image of 4 KiB pages: ZERO% all zero, SHARED% the same in every
 *       image made with SHARED_SEED, the rest unique to SEED
 *   pool-snap sum FILE           XXH3-64 of a file
 *   pool-snap read NAME          XXH3-64 of a snapshot's image, read through libpool
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "libpool/libpool.h"

#define PAGE 4096

static int usage(void)
{
	fprintf(stderr, "usage: pool-snap mkimg FILE MIB SEED SHARED_SEED SHARED%% ZERO%%\n"
			"       pool-snap sum FILE\n"
			"       pool-snap read NAME\n");
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

int main(int argc, char **argv)
{
	struct pool *pool;
	int rc;

	if (argc == 8 && strcmp(argv[1], "mkimg") == 0)
		return mkimg(argv + 2);
	if (argc == 3 && strcmp(argv[1], "sum") == 0)
		return sum(argv[2]);
	if (argc < 3)
		return usage();
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		return fail("pool_open", rc);
	if (strcmp(argv[1], "read") == 0 && argc == 3)
		rc = snap_read(pool, argv[2]);
	else
		rc = usage();
	pool_close(pool);
	return rc;
}

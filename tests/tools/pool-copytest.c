/*
 * tests/tools/pool-copytest.c - clones from the node's shared copy through
 * libpool's own code, for snapcopy.sh.
 *
 * Built from libpool's sources, so that this snap_fill() (a pattern, or a
 * failure) stands in for the store's and the snapshot handle can be made by
 * hand: the snapshot store itself is not needed.
 *
 *   pool-copytest clones N SIZE	N processes clone one image at once: all see
 *				it, each writes its own pages, one fills it
 *   pool-copytest fd SIZE	the fd of a clone is sealed and read-only
 *   pool-copytest fail SIZE	a fill that fails is aborted; the next one works
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libpool/snap.h"

#define PATTERN(i) ((uint8_t)((i) * 7 + 3))

static int fills;
static bool fail_fill;

int snap_fill(struct pool_snap *snap, void *dst)
{
	uint8_t *p = dst;
	uint64_t i;

	if (fail_fill)
		return pool_err(-EIO, "fill failed on purpose");
	for (i = 0; i < snap->hdr.image_len; i++)
		p[i] = PATTERN(i);
	fills++;
	return 0;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "pool-copytest: %s: %s (%s)\n", what, pool_strerror(rc), pool_errormsg());
	exit(1);
}

static void snap_init(struct pool_snap *s, struct pool *pool, uint64_t size)
{
	memset(s, 0, sizeof(*s));
	s->pool = pool;
	snprintf(s->name, sizeof(s->name), "copytest");
	s->hdr.id = UINT64_C(0x1234567890abcdef);
	s->hdr.image_len = size;
}

static bool image_ok(const uint8_t *p, uint64_t size)
{
	uint64_t i;

	for (i = 0; i < size; i++)
		if (p[i] != PATTERN(i))
			return false;
	return true;
}

/* One clone: the image, and writes of its own. Exit status 10 + fills. */
static int one_clone(uint64_t size)
{
	struct pool_snap s;
	struct pool *pool;
	uint8_t *p;
	int rc;

	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		die("pool_open", rc);
	snap_init(&s, pool, size);
	rc = pool_snap_clone(&s, (void **)&p);
	if (rc < 0)
		die("pool_snap_clone", rc);
	if (!image_ok(p, size))
		return 1;
	memset(p, 0xee, (size_t)size);
	munmap(p, (size_t)size);
	pool_close(pool);
	return 10 + fills;
}

static int clones(int n, uint64_t size)
{
	int i, status, total = 0, bad = 0;

	for (i = 0; i < n; i++)
		if (fork() == 0)
			_exit(one_clone(size));
	while (wait(&status) > 0) {
		if (!WIFEXITED(status) || WEXITSTATUS(status) < 10)
			bad++;
		else
			total += WEXITSTATUS(status) - 10;
	}
	printf("%d clones, %d bad, %d fills\n", n, bad, total);
	return bad == 0 && total <= 1 ? 0 : 1;
}

static int clone_fd(struct pool *pool, uint64_t size)
{
	struct pool_snap s;
	void *p;
	int rc, fd;

	snap_init(&s, pool, size);
	rc = pool_snap_clone_fd(&s, &fd);
	if (rc < 0)
		die("pool_snap_clone_fd", rc);
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY || !(fcntl(fd, F_GETFD) & FD_CLOEXEC) ||
	    fcntl(fd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		fprintf(stderr, "pool-copytest: the fd is not read-only, close-on-exec and sealed\n");
		return 1;
	}
	if (mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED) {
		fprintf(stderr, "pool-copytest: the fd maps shared and writable\n");
		return 1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED || !image_ok(p, size)) {
		fprintf(stderr, "pool-copytest: no private mapping of the image\n");
		return 1;
	}
	close(fd);
	return pool_snap_place(&s) < 0;
}

static int fail(struct pool *pool, uint64_t size)
{
	struct pool_snap s;
	int rc;

	snap_init(&s, pool, size);
	fail_fill = true;
	rc = pool_snap_place(&s);
	if (rc != -EIO) {
		fprintf(stderr, "pool-copytest: a failed fill gave %d\n", rc);
		return 1;
	}
	fail_fill = false;
	rc = pool_snap_place(&s);
	if (rc < 0)
		die("pool_snap_place after a failed fill", rc);
	return fills == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct pool *pool;
	uint64_t size;
	int rc;

	if (argc < 3)
		goto usage;
	size = strtoull(argv[argc - 1], NULL, 0);
	if (strcmp(argv[1], "clones") == 0 && argc == 4)
		return clones(atoi(argv[2]), size);
	rc = pool_open(NULL, 0, &pool);
	if (rc < 0)
		die("pool_open", rc);
	if (strcmp(argv[1], "fd") == 0)
		rc = clone_fd(pool, size);
	else if (strcmp(argv[1], "fail") == 0)
		rc = fail(pool, size);
	else
		goto usage;
	pool_close(pool);
	return rc;
usage:
	fprintf(stderr, "usage: pool-copytest clones N SIZE | fd SIZE | fail SIZE\n");
	return 2;
}

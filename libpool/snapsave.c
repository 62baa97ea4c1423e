/*
 * libpool/snapsave.c - a running clone saved as a snapshot of its own: the
 * pages it wrote since it was cloned, laid over the snapshot it came from.
 *
 * Which pages. A clone (pool_snap_clone()) is a private mapping of the
 * node's copy of its parent: a page it never wrote is the copy's (a file
 * page in /proc/self/pagemap), a page it wrote became its own (anonymous,
 * or swapped out since). So the pagemap says which pages changed, exactly,
 * and costs nothing while the clone runs: no write-protect fault on a first
 * write, no soft-dirty bit that one clone's reset would take from another's.
 * A snapshot page (4 KiB or 2 MiB) changed when any base page of it did.
 *
 * The pause. Only pool_snap_save_begin() needs the clone still: it reads
 * the pagemap of the range (1-2 ms for 1 GiB) and copies the changed pages
 * aside. The memory they are copied into is taken and touched before, by
 * pool_snap_save_new() while the clone runs, for the pages written by then
 * and a margin: a page's first write costs more than its copy (in a VM,
 * about 7 us against 0.4), and the set written only grows. Then the
 * clone may run again while pool_snap_save_end() stores the snapshot: the
 * parent's page keys for the pages that stayed (no hashing; when the new
 * snapshot keys pages as the parent did), the copies' for the others, the
 * whole put deduplicated like any other, so only pages the store lacks
 * are sent. The pages that stayed are read, when they must be, from the
 * node's copy of the parent, never from the clone, which has moved on.
 *
 * The new snapshot names the one the clone came from as its parent. A
 * later save of the same clone saves again every page it wrote since it
 * was cloned: what the store has already costs one reference each.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/snap.h"

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_SWAP (UINT64_C(1) << 62)
#define PM_FILE (UINT64_C(1) << 61)
#define SAVE_PAGEMAP_BATCH 8192 /* pagemap entries read at once */

struct pool_snap_save {
	struct pool_snap *parent;
	const uint8_t *addr; /* the clone */
	uint32_t *slot;	     /* per snapshot page: its copy's index in over, or SNAP_NO_SLOT */
	uint8_t *over;	     /* the pages the clone wrote, copied */
	uint64_t nover;	     /* how many */
	size_t over_len;     /* the mapping's length */
	bool begun;
};

/* Whether a base page, by its pagemap entry, is the clone's own (written). */
static bool save_written(uint64_t entry)
{
	return (entry & PM_SWAP) || ((entry & PM_PRESENT) && !(entry & PM_FILE));
}

/* Mark in save->slot (SNAP_NO_SLOT or 0: written) the pages of the clone written. */
static int save_scan(struct pool_snap_save *save)
{
	const uint8_t *addr = save->addr;
	uint64_t len = save->parent->hdr.image_len;
	uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE), per = save->parent->hdr.page_size / base;
	uint64_t total = len / base, at = 0, i;
	uint64_t *entries = malloc(SAVE_PAGEMAP_BATCH * sizeof(*entries));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), rc = 0;

	if (entries == NULL || fd < 0) {
		rc = entries == NULL ? pool_err(-ENOMEM, "out of memory")
				     : pool_err(-errno, "/proc/self/pagemap: %s", strerror(errno));
		goto out;
	}
	while (at < total) {
		size_t n = (size_t)MIN(total - at, (uint64_t)SAVE_PAGEMAP_BATCH);
		off_t off = (off_t)(((uintptr_t)addr / base + at) * sizeof(*entries));
		ssize_t got = pread(fd, entries, n * sizeof(*entries), off);

		if (got != (ssize_t)(n * sizeof(*entries))) {
			rc = pool_err(got < 0 ? -errno : -EIO, "/proc/self/pagemap: %s",
				      got < 0 ? strerror(errno) : "short read");
			goto out;
		}
		for (i = 0; i < n; i++)
			if (save_written(entries[i]) &&
			    save->slot[(at + i) / per] == SNAP_NO_SLOT) {
				save->slot[(at + i) / per] = 0;
				save->nover++;
			}
		at += n;
	}
out:
	if (fd >= 0)
		close(fd);
	free(entries);
	return rc;
}

/* Room, faulted in, to copy n pages into (at least what there is). */
static int save_room(struct pool_snap_save *save, uint64_t n)
{
	size_t len = (size_t)(MAX(n, (uint64_t)1) * save->parent->hdr.page_size), at;
	size_t base = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p;

	if (len <= save->over_len)
		return 0;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return pool_err(-errno, "room to copy %llu written pages: %s",
				(unsigned long long)n, strerror(errno));
	/*
	 * Each page written once now: its first write faults, and under a
	 * hypervisor that keeps shadow page tables a page the kernel mapped
	 * (MAP_POPULATE) faults again on its first write (about 7 us a page,
	 * the copy 0.4).
	 */
	for (at = 0; at < len; at += base)
		p[at] = 0;
	if (save->over != NULL)
		munmap(save->over, save->over_len);
	save->over = p;
	save->over_len = len;
	return 0;
}

/* Copy the written pages aside, numbering their slots. */
static void save_copy(struct pool_snap_save *save)
{
	uint64_t ps = save->parent->hdr.page_size, p, k = 0;

	for (p = 0; p < save->parent->hdr.npages; p++)
		if (save->slot[p] != SNAP_NO_SLOT) {
			memcpy(save->over + k * ps, save->addr + p * ps, ps);
			save->slot[p] = (uint32_t)k++;
		}
}

/* Every page unwritten, as far as save knows. */
static void save_clear(struct pool_snap_save *save)
{
	uint64_t p;

	for (p = 0; p < save->parent->hdr.npages; p++)
		save->slot[p] = SNAP_NO_SLOT;
	save->nover = 0;
}

POOL_EXPORT void pool_snap_save_free(struct pool_snap_save *save)
{
	if (save == NULL)
		return;
	if (save->over != NULL)
		munmap(save->over, save->over_len);
	free(save->slot);
	free(save);
}

POOL_EXPORT int pool_snap_save_new(struct pool_snap *parent, const void *addr,
				   struct pool_snap_save **ret_save)
{
	struct pool_snap_save *save;
	int rc;

	if (parent == NULL || addr == NULL || ret_save == NULL ||
	    (uintptr_t)addr % (uintptr_t)sysconf(_SC_PAGESIZE) != 0)
		return pool_err(-EINVAL, "pool_snap_save_new: invalid argument");
	save = calloc(1, sizeof(*save));
	if (save == NULL)
		return pool_err(-ENOMEM, "out of memory");
	save->parent = parent;
	save->addr = addr;
	save->slot = malloc(parent->hdr.npages * sizeof(*save->slot));
	if (save->slot == NULL) {
		free(save);
		return pool_err(-ENOMEM, "out of memory");
	}
	save_clear(save);
	/* What is written by now, and an eighth more (at least 16 MiB), ready for the copy. */
	rc = save_scan(save);
	if (rc == 0)
		rc = save_room(save,
			       MIN(parent->hdr.npages,
				   save->nover + MAX(save->nover / 8, (uint64_t)(16 << 20) /
									  parent->hdr.page_size)));
	if (rc < 0) {
		pool_snap_save_free(save);
		return rc;
	}
	*ret_save = save;
	return 0;
}

POOL_EXPORT int pool_snap_save_begin(struct pool_snap_save *save)
{
	int rc;

	if (save == NULL || save->begun)
		return pool_err(-EINVAL, "pool_snap_save_begin: invalid argument (begun already?)");
	save_clear(save);
	rc = save_scan(save);
	if (rc == 0)
		rc = save_room(save, save->nover);
	if (rc < 0)
		return rc;
	save_copy(save);
	save->begun = true;
	return 0;
}

POOL_EXPORT uint64_t pool_snap_save_pages(const struct pool_snap_save *save)
{
	return save != NULL ? save->nover : 0;
}

POOL_EXPORT int pool_snap_save_end(struct pool_snap_save *save, const char *name,
				   const struct pool_snap_opts *opts)
{
	struct pool_snap *parent = save != NULL ? save->parent : NULL;
	struct snap_pages src;
	void *copy;
	int fd, rc;

	if (save == NULL || !save->begun)
		return pool_err(-EINVAL, "pool_snap_save_end: invalid argument (not begun?)");
	/* The pages that stayed, should the store lack one: the node's copy of the parent. */
	rc = snap_copy_fd(parent, &fd);
	if (rc < 0)
		return rc;
	copy = mmap(NULL, parent->hdr.image_len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (copy == MAP_FAILED)
		return pool_err(-errno, "the node's copy of %s: %s", parent->name, strerror(errno));
	src = (struct snap_pages){copy, save->over, save->slot};
	rc = snap_put_pages(parent->pool, name, &src, parent->hdr.image_len, parent, opts);
	munmap(copy, parent->hdr.image_len);
	return rc;
}

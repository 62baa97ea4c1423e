/*
 * daemon/lend/carve.c - a region's own memory file: the pages of one DRAM extent
 * moved out of their arena's memfd into a memfd of their own, mapped over
 * the same addresses in poold, so that a local client can be handed a file
 * that holds exactly the bytes it was granted (region-fd-serve.c) and map it.
 *
 * The arena stays one registered range at one address: peers, carried
 * transfers and the ledger see the same bytes as before, now from the
 * carve's pages. Carving copies what the extent holds into the new file and
 * then swaps the mapping, so a write landing between the two would be
 * lost: it is done only when none can land, that is when every remote write
 * is applied by this poold's own loop (checked transfers, or with
 * fabric.transfer = rma fab_ctx_writes_in_progress(), e.g. UCX over TCP) or
 * when no other node is a member. Everything
 * else that writes the range runs in this event loop, or writes the carve.
 *
 * Root may instead be handed a window of the arena's own file; such a range
 * is recorded too and never carved later (root's mapping would then show
 * the arena's old pages while everyone else saw the carve's).
 *
 * A carve lasts until its extent is scrubbed (freed, or its region moved
 * away): its file is emptied, so that every mapping of it reads zeros from
 * then on and none holds memory lent to anyone else; then the arena's
 * memfd is mapped back over the range, which the scrub backs again
 * (lend_scrub()).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "daemon/lend/lend.h"
#include "fabric/fabric.h"

#define CARVE_MAX 4096 /* extents per node with a file of their own: one fd each */

struct carve {
	uint32_t arena;
	uint64_t off, len;
	int fd; /* -1: root was handed a window of the arena's file instead */
};

struct carves {
	struct carve *v; /* by (arena, off); extents do not overlap */
	size_t n, cap;
};

/* The first carve at or after (arena, off). */
static size_t carve_seek(const struct carves *cs, uint32_t arena, uint64_t off)
{
	size_t lo = 0, hi = cs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct carve *c = &cs->v[mid];

		if (c->arena < arena || (c->arena == arena && c->off < off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int carve_insert(struct poold *pd, const struct carve *c)
{
	struct carves *cs = pd->carves;
	size_t at;

	if (cs == NULL && (cs = pd->carves = calloc(1, sizeof(*cs))) == NULL)
		return -ENOMEM;
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 64;
		struct carve *v = reallocarray(cs->v, cap, sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		cs->v = v;
		cs->cap = cap;
	}
	at = carve_seek(cs, c->arena, c->off);
	memmove(&cs->v[at + 1], &cs->v[at], (cs->n - at) * sizeof(*cs->v));
	cs->v[at] = *c;
	cs->n++;
	return 0;
}

/* Whether a range can be swapped now without losing a write (see the top). */
static bool carve_safe(struct poold *pd)
{
	struct member *m;

	if (pd->fab == NULL || fab_ctx_writes_in_progress(pd->fab))
		return true;
	if (pd->peer != NULL)
		return false; /* a node of a cluster */
	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->info->id != pd->node_id)
			return false;
	return true;
}

/* Map the arena's file over [off, off+len) again. */
static int carve_map_back(struct arena *a, uint64_t off, uint64_t len)
{
	int rc;

	if (mmap((char *)a->base + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)off) == MAP_FAILED) {
		rc = -errno;
		log_warnx("arena %u: cannot map [%llu, +%llu) back: %s", a->id,
			  (unsigned long long)off, (unsigned long long)len, err_str(rc));
		return rc;
	}
	return 0;
}

/* Copy n bytes of the arena's file at from to the carve's file at to. */
static int carve_copy(int from_fd, int to_fd, off_t from, off_t to, uint64_t n)
{
	while (n > 0) {
		ssize_t got = copy_file_range(from_fd, &from, to_fd, &to, n, 0);

		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		n -= (uint64_t)got;
	}
	return 0;
}

/*
 * Which pages of [p, p+len) of the arena's mapping hold something, one
 * byte each (bit 0), or NULL: copy them all. A page that mincore() does
 * not find is a hole or was never written (a scrub's, lend_renew()), and
 * reads zeros, unless tmpfs swapped it out: with swap on, every page is
 * copied.
 */
static unsigned char *carve_resident(void *p, uint64_t len, size_t page)
{
	unsigned char *v;
	struct sysinfo si;

	if (sysinfo(&si) < 0 || si.totalswap != 0 || (v = malloc(len / page)) == NULL)
		return NULL;
	if (mincore(p, len, v) < 0) {
		free(v);
		return NULL;
	}
	return v;
}

/*
 * Put the new file fd over [off, off+len) of the arena, holding what the
 * range holds: mapped there first, so that its shared NUMA policy is set
 * before any of its pages exists, then filled from the arena's file by the
 * kernel (copy_file_range()), the pages that hold something only. A copy
 * of the whole range would take a fresh region's pages as well, which
 * hold nothing (a gigabyte in 0.3-1.8 s, all of it memory taken at once),
 * and a hunt for its holes with SEEK_HOLE or SEEK_DATA walks the arena's
 * pages far past the range (doc/benchmarks.md); mincore() looks at the
 * range only. No page passes through a mapping of poold's: a mapping made
 * for the copy and unmapped after it cost a TLB shootdown every carve.
 * Huge page files cannot be written that way: read into the new mapping.
 */
static int carve_fill(struct arena *a, int fd, uint64_t off, uint64_t len, bool huge)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), i = 0, run, npages = len / page;
	unsigned char *resident = huge ? NULL : carve_resident((char *)a->base + off, len, page);
	int rc = 0;

	if (mmap((char *)a->base + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0) == MAP_FAILED) {
		free(resident);
		return -errno;
	}
	lend_numa_bind((char *)a->base + off, len, a->numa);
	if (huge) {
		for (uint64_t to = 0; rc == 0 && to < len;) {
			ssize_t n =
			    pread(a->fd, (char *)a->base + off + to, len - to, (off_t)(off + to));

			rc = n < 0 ? -errno : n == 0 ? -EIO : 0;
			to += n > 0 ? (uint64_t)n : 0;
		}
	} else if (resident == NULL) {
		rc = carve_copy(a->fd, fd, (off_t)off, 0, len);
	} else {
		while (rc == 0 && i < npages) {
			for (; i < npages && !(resident[i] & 1); i++)
				;
			for (run = 0; i + run < npages && (resident[i + run] & 1); run++)
				;
			if (run > 0)
				rc = carve_copy(a->fd, fd, (off_t)(off + i * page),
						(off_t)(i * page), run * page);
			i += run;
		}
	}
	free(resident);
	if (rc < 0)
		carve_map_back(a, off, len);
	return rc;
}

/* Move [off, off+len) of a DRAM arena into a sealed memfd of its own; its fd. */
static int carve_make(struct poold *pd, struct arena *a, uint64_t off, uint64_t len, int *ret_fd)
{
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	uint64_t align = lend_page_size(pd);
	int fd, rc;

	if (off % align != 0 || len % align != 0 || len == 0)
		return -EOPNOTSUPP;
	if (pd->conf->lend_hugepages)
		flags |= MFD_HUGETLB;
	fd = memfd_create("poold-region", flags);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((rc = carve_fill(a, fd, off, len, pd->conf->lend_hugepages)) < 0) {
		close(fd);
		return rc;
	}
	/* The arena's old pages go back to the kernel; the carve's now serve the range. */
	if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) <
	    0)
		log_warn("arena %u: cannot release the pages of a carved range", a->id);
	/* Nobody can shrink it under poold's mapping (SIGBUS) or grow it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		log_warn("cannot seal a region's memfd");
	*ret_fd = fd;
	return 0;
}

/*
 * A file to hand a local client for the extent [off, off+len) of an arena,
 * and where the extent starts in it: its carve (made now if it can be),
 * or, for root (may_share), the arena's own file. -EOPNOTSUPP when the
 * client must use carried transfers instead; -EMFILE when too many extents
 * have a file already. The fd stays poold's.
 */
int carve_fd(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, bool may_share,
	     int *ret_fd, uint64_t *ret_off)
{
	struct arena *a = arena < pd->narenas ? &pd->arenas[arena] : NULL;
	struct carves *cs = pd->carves;
	struct carve c = {arena, off, len, -1};
	size_t at;
	int rc;

	if (a == NULL || off > a->size || len > a->size - off)
		return -ERANGE;
	if (a->tier != TIER_DRAM) {
		/* A pmem tier's file: never carved, so root may always have a window of it. */
		if (!may_share)
			return -EOPNOTSUPP;
		*ret_fd = a->fd;
		*ret_off = off;
		return 0;
	}
	at = cs ? carve_seek(cs, arena, off) : 0;
	if (cs != NULL && at < cs->n && cs->v[at].arena == arena && cs->v[at].off == off) {
		if (cs->v[at].len != len)
			return -ERANGE;
		c = cs->v[at];
	} else {
		if (cs != NULL && cs->n >= CARVE_MAX)
			return -EMFILE;
		if (carve_safe(pd) && (rc = carve_make(pd, a, off, len, &c.fd)) < 0 &&
		    rc != -EOPNOTSUPP)
			log_warnx("arena %u: cannot give [%llu, +%llu) a file of its own: %s",
				  arena, (unsigned long long)off, (unsigned long long)len,
				  err_str(rc));
		/* Nothing to record for a tenant refused: it may be carved later. */
		if (c.fd < 0 && !may_share)
			return -EOPNOTSUPP;
		if ((rc = carve_insert(pd, &c)) < 0) {
			if (c.fd >= 0) {
				carve_map_back(a, off, len);
				lend_renew(pd, arena, off, len);
				close(c.fd);
			}
			return rc;
		}
	}
	if (c.fd < 0 && !may_share)
		return -EOPNOTSUPP;
	*ret_fd = c.fd >= 0 ? c.fd : a->fd;
	*ret_off = c.fd >= 0 ? 0 : off;
	return 0;
}

/*
 * [off, off+len) of an arena is being scrubbed: take the first carve in
 * it out of use; root's windows in the range are forgotten with it. Its
 * file, returned, is the caller's to map the arena's file back over
 * (carve_put_back(), whose pages there the scrub gives back and takes
 * again), to empty (its mappings then read zeros, and none holds memory
 * lent to anyone else) and to close; *ret_off and *ret_len say where it
 * was. -1 when none is left.
 */
int carve_take(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, uint64_t *ret_off,
	       uint64_t *ret_len)
{
	struct carves *cs = pd->carves;
	size_t at;
	int fd = -1;

	if (cs == NULL || cs->n == 0 || arena >= pd->narenas)
		return -1;
	at = carve_seek(cs, arena, off);
	if (at > 0 && cs->v[at - 1].arena == arena && cs->v[at - 1].off + cs->v[at - 1].len > off)
		at--; /* begins before the range and reaches into it */
	while (fd < 0 && at < cs->n && cs->v[at].arena == arena && cs->v[at].off < off + len) {
		struct carve c = cs->v[at];

		memmove(&cs->v[at], &cs->v[at + 1], (cs->n - at - 1) * sizeof(*cs->v));
		cs->n--;
		if (c.fd < 0)
			continue;
		*ret_off = c.off;
		*ret_len = c.len;
		fd = c.fd;
	}
	return fd;
}

/* Map the arena's file again over [off, off+len), part of a carve taken out of use. */
void carve_put_back(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	if (arena < pd->narenas)
		carve_map_back(&pd->arenas[arena], off, len);
}

/* Empty [off, off+len) of a carve's file taken out of use. */
void carve_empty(int fd, uint64_t off, uint64_t len)
{
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		log_warn("cannot empty a region's memfd");
}

/* Every carve in [off, off+len) of an arena taken out of use and emptied now (carve_take()). */
void carve_release(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	uint64_t coff, clen;
	int fd;

	while ((fd = carve_take(pd, arena, off, len, &coff, &clen)) >= 0) {
		carve_put_back(pd, arena, coff, clen);
		carve_empty(fd, 0, clen);
		close(fd);
	}
}

/* At exit: close the carves' files (poold's mappings go with the arenas). */
void carve_close(struct poold *pd)
{
	struct carves *cs = pd->carves;
	size_t i;

	if (cs == NULL)
		return;
	for (i = 0; i < cs->n; i++)
		if (cs->v[i].fd >= 0)
			close(cs->v[i].fd);
	free(cs->v);
	free(cs);
	pd->carves = NULL;
}

/* How many extents have a file of their own, and how many root windows are recorded. */
void carve_count(const struct poold *pd, size_t *ret_carved, size_t *ret_windows)
{
	const struct carves *cs = pd->carves;
	size_t i, carved = 0;

	for (i = 0; cs != NULL && i < cs->n; i++)
		carved += cs->v[i].fd >= 0;
	*ret_carved = carved;
	*ret_windows = (cs ? cs->n : 0) - carved;
}

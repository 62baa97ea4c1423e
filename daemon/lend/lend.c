/*
 * daemon/lend/lend.c - the lend pool: the memory this node offers to the pool.
 *
 * One DRAM arena per NUMA node with memory: a memfd (so local clients can
 * map it zero-copy), bound to its NUMA node with mbind() before any page
 * exists, then allocated with fallocate() so start-up fails now, not later,
 * when the memory cannot be had. Fresh memfd pages are zero; freed extents
 * are scrubbed. Optionally a persistent arena: a file or DAX device mapped
 * with libpmem2. Every arena is registered once with UCX; its rkey is in
 * this node's registration record.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/lend/journal.h"
#include "daemon/lend/lend.h"
#include "daemon/util/util.h"
#include "fabric/fabric.h"

#define LEND_ALIGN (2ull << 20)

/* With fabric.transfer = rma, peers reach the arena one-sidedly: it is registered with UCX. */
static int lend_register(struct poold *pd, struct arena *a)
{
	int rc;

	if (pd->fab == NULL)
		return 0;
	rc = fab_mem_register(pd->fab, a->base, a->size, &a->mem);
	if (rc == 0)
		rc = fab_mem_rkey_pack(a->mem, &a->rkey, &a->rkey_len);
	if (rc < 0)
		log_warnx("cannot register arena %u (%s) with the fabric: %s", a->id,
			  tier_name(a->tier), err_str(rc));
	return rc;
}

/*
 * Bind the pages of a memfd mapped at [base, base+len) to a NUMA node,
 * before any exists: the memfd's shared policy, which every later mapping
 * of it keeps. A machine of one node leaves nothing to choose: no call
 * (libnuma's check and the bind are two system calls of every carve).
 */
void lend_numa_bind(void *base, size_t len, int numa)
{
	static int max_node = -2; /* -1: no NUMA support */
	struct bitmask *mask;

	if (max_node == -2)
		max_node = numa_available() < 0 ? -1 : numa_max_node();
	if (numa < 0 || max_node <= 0)
		return;
	mask = numa_allocate_nodemask();
	numa_bitmask_setbit(mask, (unsigned)numa);
	if (mbind(base, len, MPOL_BIND, mask->maskp, mask->size + 1, 0) < 0)
		log_warn("lend: mbind to NUMA node %d (memory not pinned to it)", numa);
	numa_free_nodemask(mask);
}

static int lend_dram(struct poold *pd, struct arena *a, int numa, uint64_t size, uint64_t lent)
{
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	char name[32];
	int rc;

	if (pd->conf->lend_hugepages)
		flags |= MFD_HUGETLB;
	snprintf(name, sizeof(name), "poold-lend-numa%d", numa);
	a->tier = TIER_DRAM;
	a->numa = numa;
	a->size = size;
	a->lent = a->backed = lent;
	a->fd = memfd_create(name, flags);
	if (a->fd < 0) {
		log_warn("lend.size: memfd for NUMA node %d", numa);
		return -errno;
	}
	if (ftruncate(a->fd, (off_t)size) < 0) {
		log_warn("lend.size: cannot size the arena of NUMA node %d to %llu bytes", numa,
			 (unsigned long long)size);
		return -errno;
	}
	a->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		log_warn("lend.size: cannot map the arena of NUMA node %d", numa);
		return -errno;
	}
	lend_numa_bind(a->base, size, numa);
	if (lent > 0 && (rc = posix_fallocate(a->fd, 0, (off_t)lent)) != 0) {
		errno = rc;
		log_warn("lend.size: cannot reserve %llu bytes on NUMA node %d%s",
			 (unsigned long long)lent, numa,
			 pd->conf->lend_hugepages ? " (are enough huge pages reserved?)" : "");
		return -rc;
	}
	return lend_register(pd, a);
}

/*
 * Group commit on a tier whose persistence is msync(2) (a file: store
 * granularity PAGE; a DAX device flushes cache lines and gains nothing):
 * while a batch of holdings is recorded (hold_add()), persists are only
 * noted, by part of the tier, and each part is then made durable with one
 * persist of the span of what was noted in it, which writes back just its
 * dirty pages: the values (the lent part) first, then the records that
 * name them (the journal part), so that a record never reaches the media
 * before its value. Not the whole part: that would write back, in the
 * loop, what clients stored in the tier and did not persist yet (a
 * gigabyte written to a region took a quarter of a second at the next
 * scrub). One pmem tier per poold: its real persist function is kept here.
 *
 * Scrubs group the same way: frees come in bursts (a snapshot of thousands
 * of pages removed), and one msync per extent, each a disk write, kept the
 * event loop from its heartbeats for seconds. A scrub starts a group that
 * the loop ends (lend_flush()) once it has handled what is ready; the peer
 * link acknowledges scrubs only after that. A restart zeroes what the
 * journal does not name, so only the records of the ends need be durable.
 */
/* What a group noted in one part of the tier: [lo, hi), or lo NULL. */
struct lend_span {
	const char *lo, *hi;
};

static struct {
	void (*persist)(const void *ptr, size_t len); /* the tier's, when it groups */
	const char *journal;		  /* where the journal part starts, after the lent part */
	bool groups;			  /* a file: persists are msyncs, worth grouping */
	bool on;			  /* grouping */
	struct lend_span values, records; /* what each part has to write */
	struct event *flush_ev;		  /* ends a group that scrubs started */
	uint64_t flushes;		  /* persists that reached the media */
} lend_group;

#define LEND_BACKING_STEP (2ull << 20) /* bytes backed or given back between looks at the clock */
#define LEND_BACKING_SLICE_US 1000     /* loop time a slice may take */

/*
 * DRAM arenas whose memory follows what they lend: a grown range is backed
 * (fallocated), a withdrawn one (free and scrubbed) given back to the
 * kernel, a step at a time from a timer; in one callback a gigabyte took
 * a tenth of a second of the loop either way. Until its step comes, a
 * grown range's pages come when first written.
 */
static struct {
	struct poold *pd;
	struct event *ev;
} lend_backing;

static void lend_media_persist(const void *ptr, size_t len)
{
	lend_group.flushes++;
	lend_group.persist(ptr, len);
}

static void lend_span_note(struct lend_span *s, const char *p, size_t len)
{
	if (s->lo == NULL || p < s->lo)
		s->lo = p;
	if (s->hi == NULL || p + len > s->hi)
		s->hi = p + len;
}

/* Persist what s spans, if anything, and empty it. */
static void lend_span_persist(struct lend_span *s)
{
	if (s->lo != NULL)
		lend_media_persist(s->lo, (size_t)(s->hi - s->lo));
	*s = (struct lend_span){NULL, NULL};
}

static void lend_group_persist(const void *ptr, size_t len)
{
	if (!lend_group.on)
		lend_media_persist(ptr, len);
	else
		lend_span_note((const char *)ptr >= lend_group.journal ? &lend_group.records
								       : &lend_group.values,
			       ptr, len);
}

void lend_group_begin(void)
{
	lend_group.on = lend_group.groups;
}

/* Make the values noted so far durable (before the records that name them are written). */
void lend_group_values(void)
{
	if (lend_group.on)
		lend_span_persist(&lend_group.values);
}

/* Make everything noted durable and stop grouping; whether it was grouping. */
bool lend_group_end(void)
{
	bool was = lend_group.on;

	lend_group_values();
	if (lend_group.on)
		lend_span_persist(&lend_group.records);
	lend_group.on = false;
	return was;
}

/* How many persists of the pmem tier reached its media (0 without one). */
uint64_t lend_flushes(void)
{
	return lend_group.flushes;
}

/* Make durable what scrubs left noted (the peer link, before it acknowledges them). */
void lend_flush(void)
{
	lend_group_end();
}

static void lend_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	lend_flush();
}

/* A scrub's writes join a group the event loop ends soon. */
static void lend_group_scrub(void)
{
	static const struct timeval now = {0, 0};

	if (!lend_group.groups || lend_group.on)
		return;
	lend_group_begin();
	evtimer_add(lend_group.flush_ev, &now);
}

/*
 * The end of a tier of bytes keeps the record of what it holds for
 * persistent namespaces (hold.c): a 64th of it, 2 MiB to 256 MiB; the rest
 * is lent. -EINVAL when it is too small for both.
 */
static int lend_pmem_layout(uint64_t bytes, uint64_t *ret_lent, size_t *ret_journal)
{
	uint64_t total = bytes / LEND_ALIGN * LEND_ALIGN, journal;

	journal = MIN(MAX(total / 64, LEND_ALIGN), 128 * LEND_ALIGN);
	journal = (journal + LEND_ALIGN - 1) / LEND_ALIGN * LEND_ALIGN;
	if (total <= journal)
		return -EINVAL;
	*ret_lent = total - journal;
	*ret_journal = (size_t)journal;
	return 0;
}

/*
 * Whether the file at path may become (or is) this node's pmem tier: it
 * does not exist, holds no data (a new or sparse file), or is a pool tier
 * already (its record at the end is a journal). Anything else would be
 * overwritten: -EEXIST, with why in err. A device is checked once mapped.
 */
int lend_pmem_check(const char *path, uint64_t size, char *err, size_t errlen)
{
	uint8_t hdr[JOURNAL_MIN_SIZE];
	uint64_t lent;
	size_t journal;
	struct stat st;
	int fd, probe = -1;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO would block */
	if (fd < 0)
		return 0; /* made at start-up (or it says why it cannot be) */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return 0;
	}
	if (lseek(fd, 0, SEEK_DATA) < 0) { /* ENXIO: all holes */
		close(fd);
		return 0;
	}
	/* Its record is at the end of what is mapped: pmem.size, when the file is that long. */
	if (size == 0 || size > (uint64_t)st.st_size)
		size = (uint64_t)st.st_size;
	if (lend_pmem_layout(size, &lent, &journal) == 0 &&
	    pread(fd, hdr, sizeof(hdr), (off_t)lent) == (ssize_t)sizeof(hdr))
		probe = journal_probe(hdr, journal);
	close(fd);
	if (probe == 1)
		return 0;
	snprintf(err, errlen,
		 "pmem.path %s holds data but no pool tier's record; set pmem.init = "
		 "yes to format it (what it holds is lost)",
		 path);
	return -EEXIST;
}

static int lend_pmem(struct poold *pd, struct arena *a)
{
	struct poold_conf *conf = pd->conf;
	struct pmem2_config *cfg = NULL;
	struct stat st;
	char err[512];
	int rc;

	a->tier = TIER_PMEM;
	a->numa = -1;
	if (!conf->pmem_init &&
	    lend_pmem_check(conf->pmem_path, (uint64_t)conf->pmem_size, err, sizeof(err)) < 0) {
		log_warnx("%s", err);
		return -EEXIST;
	}
	a->fd = open(conf->pmem_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (a->fd < 0) {
		log_warn("pmem.path %s", conf->pmem_path);
		return -errno;
	}
	if (fstat(a->fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) && conf->pmem_size > 0 && st.st_size < conf->pmem_size &&
	    (rc = posix_fallocate(a->fd, 0, (off_t)conf->pmem_size)) != 0) {
		errno = rc;
		log_warn("pmem.size: cannot make %s %lld bytes", conf->pmem_path,
			 (long long)conf->pmem_size);
		return -rc;
	}
	if (pmem2_config_new(&cfg) != 0 || pmem2_source_from_fd(&a->src, a->fd) != 0 ||
	    pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE) != 0 ||
	    (conf->pmem_size > 0 && pmem2_config_set_length(cfg, (size_t)conf->pmem_size) != 0) ||
	    pmem2_map_new(&a->map, cfg, a->src) != 0) {
		log_warnx("pmem.path %s: %s", conf->pmem_path, pmem2_errormsg());
		pmem2_config_delete(&cfg);
		return -EIO;
	}
	pmem2_config_delete(&cfg);
	a->base = pmem2_map_get_address(a->map);
	a->persist = pmem2_get_persist_fn(a->map);

	if (lend_pmem_layout(pmem2_map_get_size(a->map), &a->size, &a->journal_len) < 0) {
		log_warnx("pmem.path %s: smaller than 4 MiB (2 MiB to lend, 2 MiB for its "
			  "record)",
			  conf->pmem_path);
		return -EINVAL;
	}
	a->journal = (char *)a->base + a->size;
	/* A device cannot be looked at before it is mapped: what it holds must be a tier's. */
	if (!S_ISREG(st.st_mode) && !conf->pmem_init &&
	    journal_probe(a->journal, a->journal_len) < 0) {
		log_warnx("pmem.path %s holds something that is not a pool tier; set pmem.init = "
			  "yes to format it (what it holds is lost)",
			  conf->pmem_path);
		return -EEXIST;
	}
	lend_group = (typeof(lend_group)){.persist = a->persist,
					  .journal = a->journal,
					  .groups = pmem2_map_get_store_granularity(a->map) ==
						    PMEM2_GRANULARITY_PAGE};
	if ((lend_group.flush_ev = evtimer_new(pd->base, lend_flush_cb, NULL)) == NULL)
		return -ENOMEM;
	a->persist = lend_group_persist;
	a->lent = a->size;
	return lend_register(pd, a);
}

static void lend_arena_close(struct arena *a)
{
	free(a->rkey);
	if (a->mem != NULL)
		fab_mem_deregister(a->mem);
	if (a->map != NULL) {
		lend_flush();
		if (lend_group.flush_ev != NULL)
			event_free(lend_group.flush_ev);
		pmem2_map_delete(&a->map);
		lend_group = (typeof(lend_group)){0};
	} else if (a->base != NULL)
		munmap(a->base, a->size);
	if (a->src != NULL)
		pmem2_source_delete(&a->src);
	if (a->fd >= 0)
		close(a->fd);
}

/* Create the arenas this node lends: DRAM per NUMA node, and the pmem tier if set. */
int lend_open(struct poold *pd)
{
	struct node_numa *numa;
	size_t n, i;
	int rc;

	uint64_t max = (uint64_t)(pd->conf->lend_max ? pd->conf->lend_max : pd->conf->lend_size);
	struct node_numa *lent;
	size_t nlent;

	/* What each NUMA node may lend (lend.max) and what it lends now (lend.size). */
	rc = numa_layout(pd->conf->lend_numa, max, &numa, &n);
	if (rc < 0)
		return rc;
	rc = numa_layout(pd->conf->lend_numa, (uint64_t)pd->conf->lend_size, &lent, &nlent);
	if (rc < 0) {
		free(numa);
		return rc;
	}
	pd->arenas = calloc(n + 1, sizeof(*pd->arenas));
	if (pd->arenas == NULL) {
		free(numa);
		free(lent);
		return -ENOMEM;
	}
	for (i = 0; i < n && rc == 0; i++) {
		uint64_t size = numa[i].lend_capacity / LEND_ALIGN * LEND_ALIGN;
		uint64_t now = lent[i].lend_capacity / LEND_ALIGN * LEND_ALIGN;
		struct arena *a = &pd->arenas[pd->narenas];

		if (size == 0)
			continue;
		a->id = (uint32_t)pd->narenas;
		a->fd = -1;
		pd->narenas++;
		rc = lend_dram(pd, a, (int)numa[i].id, size, MIN(now, size));
	}
	free(numa);
	free(lent);
	if (rc == 0 && pd->conf->kv_shard_size > 0) {
		/* (its own: the values of the KV shards this node owns, kvstore.c) */
		uint64_t size = (uint64_t)pd->conf->kv_shard_size / LEND_ALIGN * LEND_ALIGN;

		pd->kv_arena.id = KV_STORE_ARENA;
		pd->kv_arena.fd = -1;
		rc = size > 0 ? lend_dram(pd, &pd->kv_arena, -1, size, size) : -EINVAL;
		if (rc == 0)
			log_info("keeping %llu MiB for the values of the KV shards it owns",
				 (unsigned long long)(size >> 20));
	}
	if (rc == 0 && pd->conf->pmem_path[0] != '\0') {
		struct arena *a = &pd->arenas[pd->narenas];

		a->id = (uint32_t)pd->narenas;
		a->fd = -1;
		pd->narenas++;
		rc = lend_pmem(pd, a);
	}
	if (rc < 0)
		return rc;
	for (i = 0; i < pd->narenas; i++)
		log_info("lending arena %zu: %s%s%d, %llu MiB", i, tier_name(pd->arenas[i].tier),
			 pd->arenas[i].tier == TIER_DRAM ? " NUMA node " : "", pd->arenas[i].numa,
			 (unsigned long long)(pd->arenas[i].size >> 20));
	return 0;
}

/* Release every arena. */
void lend_close(struct poold *pd)
{
	size_t i;

	if (lend_backing.ev != NULL && lend_backing.pd == pd) {
		event_free(lend_backing.ev);
		lend_backing.ev = NULL;
	}
	for (i = 0; i < pd->narenas; i++)
		lend_arena_close(&pd->arenas[i]);
	if (pd->kv_arena.base != NULL)
		lend_arena_close(&pd->kv_arena);
	pd->kv_arena = (struct arena){.fd = -1};
	free(pd->arenas);
	pd->arenas = NULL;
	pd->narenas = 0;
}

/* The arena holding [off, off+len), or NULL when there is none or the range is outside it. */
static struct arena *lend_range(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = arena < pd->narenas ? &pd->arenas[arena]
			  : arena == KV_STORE_ARENA && pd->kv_arena.base != NULL ? &pd->kv_arena
										 : NULL;

	return a != NULL && off <= a->size && len <= a->size - off ? a : NULL;
}

/* The same file opened again for reading only: a client cannot map it writable or change it. */
int fd_read_only(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

const char *tier_name(enum tier tier)
{
	return tier == TIER_DRAM ? "dram" : "pmem";
}

/* One of this node's arenas, lent or kept for its KV shards (KV_STORE_ARENA), or NULL. */
struct arena *lend_arena(struct poold *pd, uint32_t arena)
{
	return lend_range(pd, arena, 0, 0);
}

/* This node's mapping of [off, off+len) of an arena, or NULL when it is not all there. */
void *lend_ptr(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = lend_range(pd, arena, off, len);

	return a != NULL ? (char *)a->base + off : NULL;
}

/* Make [off, off+len) of an arena durable (nothing to do for DRAM). */
int lend_persist(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = lend_range(pd, arena, off, len);

	if (a == NULL)
		return -ERANGE;
	if (a->persist != NULL && len > 0)
		a->persist((char *)a->base + off, len);
	return 0;
}

/*
 * Zero [off, off+len) of an arena nobody holds, cheaply: a hole punched in
 * its file (which also gives the space back), else zeroes written.
 */
void lend_zero(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = lend_range(pd, arena, off, len);

	if (a == NULL || len == 0 ||
	    fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) ==
		0)
		return;
	memset((char *)a->base + off, 0, len);
	lend_persist(pd, arena, off, len);
}

/* The unit of a DRAM arena's pages: 2 MiB with lend.hugepages, else the base page. */
uint64_t lend_page_size(const struct poold *pd)
{
	return pd->conf->lend_hugepages ? 2ull << 20 : (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Give the pages of [off, off+len) of a DRAM arena back to the kernel and
 * take them again: the range then reads zeros, its pages are not up to
 * date for mincore() (so a carve copies none of them), and poold wrote no
 * page. Writing zeros instead first faults each page into poold's mapping,
 * about 3.5 s a GiB on the VMs measured against 0.2 s for this
 * (doc/benchmarks.md).
 * -EINVAL for a range not in whole pages, or not DRAM.
 */
int lend_renew(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = lend_range(pd, arena, off, len);
	uint64_t page;
	int rc;

	if (a == NULL || a->tier != TIER_DRAM)
		return -EINVAL;
	page = lend_page_size(pd);
	if (off % page != 0 || len % page != 0)
		return -EINVAL;
	if (len == 0)
		return 0;
	if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) <
	    0)
		return -errno;
	if (off < a->lent &&
	    (rc = posix_fallocate(a->fd, (off_t)off, (off_t)(MIN(off + len, a->lent) - off))) != 0)
		log_warnx("arena %u: cannot back [%llu, +%llu) again: %s (pages come when touched)",
			  a->id, (unsigned long long)off, (unsigned long long)len, strerror(rc));
	return 0;
}

/*
 * Zero [off, off+len) of an arena before its memory is lent again
 * (hold_scrub()): pages given back and taken again (lend_renew()) from
 * LEND_RENEW_MIN on, zeroes written below it. A small extent is most
 * often a KV value just replaced, whose pages were just written: zeroing
 * them costs less than a hole punched (its pages unmapped from every
 * process that maps the arena), the pages taken again, and the faults of
 * the next value written there (a 16 KiB put cost poold 20 µs).
 */
#define LEND_RENEW_MIN (256u << 10)

void lend_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct arena *a = lend_range(pd, arena, off, len);

	if (a == NULL || (len >= LEND_RENEW_MIN && lend_renew(pd, arena, off, len) == 0))
		return;
	lend_group_scrub();
	memset((char *)a->base + off, 0, len);
	lend_persist(pd, arena, off, len);
}

static void lend_backing_slice(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	struct poold *pd = arg;
	uint64_t until = units_now_us() + LEND_BACKING_SLICE_US;
	bool more = false;
	size_t i;

	(void)fd, (void)what;
	for (i = 0; i < pd->narenas; i++) {
		struct arena *a = &pd->arenas[i];

		while (a->tier == TIER_DRAM && a->backed != a->lent) {
			if (units_now_us() >= until) {
				more = true;
				break;
			}
			if (a->backed < a->lent) {
				uint64_t len = MIN(LEND_BACKING_STEP, a->lent - a->backed);
				int rc = posix_fallocate(a->fd, (off_t)a->backed, (off_t)len);

				if (rc != 0) { /* (its pages come when written, as they can) */
					errno = rc;
					log_warn("lend: cannot back arena %u up to %llu bytes",
						 a->id, (unsigned long long)a->lent);
					a->backed = a->lent;
					break;
				}
				a->backed += len;
			} else {
				uint64_t len = MIN(LEND_BACKING_STEP, a->backed - a->lent);

				if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      (off_t)(a->backed - len), (off_t)len) < 0)
					log_warn("lend: cannot release the tail of arena %u",
						 a->id);
				a->backed -= len;
			}
			if (a->backed == a->lent)
				log_info("arena %u: its memory follows: %llu MiB", a->id,
					 (unsigned long long)(a->backed >> 20));
		}
	}
	if (more)
		evtimer_add(lend_backing.ev, &now);
}

/* The coordinator changed how much of an arena is lent: its memory follows (above). */
void lend_set_limit(struct poold *pd, uint32_t arena, uint64_t limit)
{
	static const struct timeval now = {0, 0};
	struct arena *a;

	if (arena >= pd->narenas || limit > pd->arenas[arena].size)
		return;
	a = &pd->arenas[arena];
	log_info("arena %u now lends %llu MiB (was %llu MiB)", arena,
		 (unsigned long long)(limit >> 20), (unsigned long long)(a->lent >> 20));
	a->lent = limit;
	if (a->tier != TIER_DRAM || a->backed == a->lent)
		return;
	if (lend_backing.ev == NULL &&
	    (lend_backing.ev = evtimer_new(pd->base, lend_backing_slice, pd)) == NULL) {
		a->backed = a->lent; /* (without a timer: pages come and go as written) */
		return;
	}
	lend_backing.pd = pd;
	if (!evtimer_pending(lend_backing.ev, NULL))
		evtimer_add(lend_backing.ev, &now);
}

/*
 * Copy between two of this node's arenas (KV spill and promotion); 0 or
 * -errno. Not flushed to persistence: a lender that restarts forgets what
 * it held, so a spilled value could not be found again anyway, and on a
 * file-backed tier each flush is an msync.
 */
int lend_copy(struct poold *pd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
	      uint64_t len)
{
	struct arena *s = lend_range(pd, src, src_off, len), *d = lend_range(pd, dst, dst_off, len);

	if (src >= pd->narenas || dst >= pd->narenas)
		return -EINVAL;
	if (s == NULL || d == NULL)
		return -ERANGE;
	memcpy((char *)d->base + dst_off, (char *)s->base + src_off, len);
	return 0;
}

/* This node's arenas as its record in the member table has them; free with node_info_free(). */
int lend_arenas_info(struct poold *pd, struct node_arena **ret_arenas, size_t *ret_n)
{
	struct node_arena *out = calloc(pd->narenas ? pd->narenas : 1, sizeof(*out));
	size_t i;

	if (out == NULL)
		return -ENOMEM;
	for (i = 0; i < pd->narenas; i++) {
		const struct arena *a = &pd->arenas[i];

		out[i].id = a->id;
		out[i].tier = a->tier;
		out[i].numa = a->numa;
		out[i].size = a->size;
		out[i].lent = a->lent;
		out[i].addr = (uint64_t)(uintptr_t)a->base;
		out[i].rkey.data = malloc(a->rkey_len ? a->rkey_len : 1);
		if (out[i].rkey.data == NULL) {
			while (i-- > 0)
				free(out[i].rkey.data);
			free(out);
			return -ENOMEM;
		}
		if (a->rkey_len > 0)
			memcpy(out[i].rkey.data, a->rkey, a->rkey_len);
		out[i].rkey.len = a->rkey_len;
	}
	*ret_arenas = out;
	*ret_n = pd->narenas;
	return 0;
}

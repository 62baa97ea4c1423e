/*
 * daemon/lend/kvstore.c - the memory a node keeps for the values of the KV
 * shards it owns (kv.shard_size): one DRAM arena of its own, not lent to
 * the pool (lend.c makes it, arena KV_STORE_ARENA), and its allocator.
 *
 * The values of a sharded namespace live where their shard's index entry
 * lives, on the shard's owner, which allocates them here without asking
 * the coordinator. The allocator's record of what it gave out is what a
 * peer's checked transfer is held to (as a lender's holdings are for lent
 * memory): only a range inside one allocation, from where it starts, is
 * reached; freed memory is zeroed before it is given out again.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/lend/extent.h"
#include "daemon/lend/lend.h"

/* The allocations: an open-addressing table of their offsets (+1: 0 is empty) and lengths. */
struct kvstore {
	struct extent_arena *alloc;
	uint64_t *off1;
	uint64_t *len;
	size_t nslots, nused; /* nslots: a power of 2, at most half used */
};

static size_t kvstore_slot(const struct kvstore *ks, uint64_t off)
{
	uint64_t h = (off >> 6) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h >> 20) & (ks->nslots - 1);
}

static size_t kvstore_find(const struct kvstore *ks, uint64_t off)
{
	size_t i = kvstore_slot(ks, off);

	while (ks->off1[i] != 0 && ks->off1[i] != off + 1)
		i = (i + 1) & (ks->nslots - 1);
	return i;
}

static int kvstore_grow(struct kvstore *ks)
{
	size_t n = ks->nslots ? ks->nslots * 2 : 1024, i, old = ks->nslots;
	uint64_t *off1 = calloc(n, sizeof(*off1)), *len = calloc(n, sizeof(*len));
	uint64_t *ooff1 = ks->off1, *olen = ks->len;

	if (off1 == NULL || len == NULL) {
		free(off1);
		free(len);
		return -ENOMEM;
	}
	ks->off1 = off1;
	ks->len = len;
	ks->nslots = n;
	for (i = 0; i < old; i++)
		if (ooff1[i] != 0) {
			size_t j = kvstore_find(ks, ooff1[i] - 1);

			off1[j] = ooff1[i];
			len[j] = olen[i];
		}
	free(ooff1);
	free(olen);
	return 0;
}

/* Forget the allocation at slot i (backward-shift: no tombstones). */
static void kvstore_unrecord(struct kvstore *ks, size_t i)
{
	size_t j = i;

	ks->off1[i] = 0;
	ks->nused--;
	for (;;) {
		size_t home;

		j = (j + 1) & (ks->nslots - 1);
		if (ks->off1[j] == 0)
			return;
		home = kvstore_slot(ks, ks->off1[j] - 1);
		/* (j's entry may move to i when its home is not in (i, j]) */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			ks->off1[i] = ks->off1[j];
			ks->len[i] = ks->len[j];
			ks->off1[j] = 0;
			i = j;
		}
	}
}

/* Start the allocator of the arena lend.c made (none without kv.shard_size). */
int kvstore_open(struct poold *pd)
{
	struct kvstore *ks;

	if (lend_ptr(pd, KV_STORE_ARENA, 0, 0) == NULL)
		return 0;
	ks = calloc(1, sizeof(*ks));
	/* (the arena as lend.c made it: kv.shard_size rounded down to whole extents) */
	if (ks == NULL ||
	    extent_arena_new(pd->kv_arena.size / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT, 0, 0,
			     &ks->alloc) < 0 ||
	    kvstore_grow(ks) < 0) {
		log_warnx("out of memory for the allocator of the KV shards' values");
		if (ks != NULL && ks->alloc != NULL)
			extent_arena_free(ks->alloc);
		free(ks);
		return -ENOMEM;
	}
	pd->kvstore = ks;
	return 0;
}

void kvstore_close(struct poold *pd)
{
	struct kvstore *ks = pd->kvstore;

	if (ks == NULL)
		return;
	extent_arena_free(ks->alloc);
	free(ks->off1);
	free(ks->len);
	free(ks);
	pd->kvstore = NULL;
}

/* Room for len bytes: 0 with the offset and rounded length, -ENOSPC, -ENOMEM, -ENODEV (none). */
int kvstore_alloc(struct poold *pd, uint64_t len, uint64_t *ret_off, uint64_t *ret_len)
{
	struct kvstore *ks = pd->kvstore;
	size_t i;
	int rc;

	if (ks == NULL)
		return -ENODEV;
	if ((ks->nused + 1) * 2 > ks->nslots && kvstore_grow(ks) < 0)
		return -ENOMEM;
	rc = extent_alloc_fine(ks->alloc, len, ret_off, ret_len);
	if (rc < 0)
		return rc;
	i = kvstore_find(ks, *ret_off);
	ks->off1[i] = *ret_off + 1;
	ks->len[i] = *ret_len;
	ks->nused++;
	return 0;
}

/* Give back what kvstore_alloc() gave at off, zeroed first. */
void kvstore_free(struct poold *pd, uint64_t off, uint64_t len)
{
	struct kvstore *ks = pd->kvstore;
	size_t i;

	if (ks == NULL)
		return;
	i = kvstore_find(ks, off);
	if (ks->off1[i] == 0 || ks->len[i] != len)
		return; /* (not an allocation as given) */
	kvstore_unrecord(ks, i);
	lend_scrub(pd, KV_STORE_ARENA, off, len);
	extent_release(ks->alloc, off, len);
}

/*
 * Where [off, off+len) of the allocation at ext is, for a checked transfer
 * (carry_memory()): 0 and *ret_ptr, -ENOENT when no allocation starts at
 * ext, -ERANGE past its end.
 */
int kvstore_reach(struct poold *pd, uint64_t ext, uint64_t off, uint64_t len, void **ret_ptr)
{
	struct kvstore *ks = pd->kvstore;
	size_t i;

	if (ks == NULL)
		return -ENOENT;
	i = kvstore_find(ks, ext);
	if (ks->off1[i] == 0)
		return -ENOENT;
	if (off > ks->len[i] || len > ks->len[i] - off)
		return -ERANGE;
	*ret_ptr = lend_ptr(pd, KV_STORE_ARENA, ext + off, len);
	return *ret_ptr != NULL ? 0 : -ERANGE;
}

/* Its size and the bytes given out (0, 0 without one). */
void kvstore_stats(struct poold *pd, uint64_t *ret_size, uint64_t *ret_used)
{
	struct extent_stats st = {0};

	if (pd->kvstore != NULL)
		extent_stats(pd->kvstore->alloc, &st);
	*ret_size = st.size;
	*ret_used = st.used;
}

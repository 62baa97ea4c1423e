/* tests/unit/test_extent.c - the extent allocator, against a shadow model of the arena. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

#include "daemon/lend/extent.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: a fixed sequence on every platform. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi) /* [lo, hi] */
{
	return lo + rnd() % (hi - lo + 1);
}

static struct extent_arena *arena(uint64_t size, uint64_t unit, uint64_t grain)
{
	struct extent_arena *a = NULL;

	CU_ASSERT_FATAL(extent_arena_new(size, unit, grain, &a) == 0);
	CU_ASSERT_FATAL(a != NULL);
	return a;
}

static void stats(const struct extent_arena *a, struct extent_stats *st)
{
	extent_stats(a, st);
	CU_ASSERT_EQUAL(st->used + st->free, st->size);
	CU_ASSERT_EQUAL(extent_arena_check(a), 0);
}

static void test_new_args(void)
{
	struct extent_arena *a = (void *)&a;

	CU_ASSERT_EQUAL(extent_arena_new(8 * MiB, 3 * MiB, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_new(8 * MiB, 2 * MiB, 6 * KiB, &a), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_new(8 * MiB, 2 * MiB, 4 * MiB, &a), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_new(9 * MiB, 2 * MiB, 0, &a), -EINVAL);
	CU_ASSERT_PTR_EQUAL(a, (void *)&a); /* untouched on failure */
	a = arena(0, 0, 0);
	CU_ASSERT_EQUAL(extent_arena_grow(a, 4 * MiB), 0);
	CU_ASSERT_EQUAL(extent_arena_check(a), 0);
	extent_arena_free(a);
	extent_arena_free(NULL);
}

static void test_rounding(void)
{
	struct extent_arena *a = arena(32 * MiB, 0, 0); /* 2 MiB units, 4 KiB grain */
	struct extent_stats st;
	uint64_t off = 1, len = 1;

	CU_ASSERT_EQUAL(extent_alloc(a, 0, &off, &len), -EINVAL);
	CU_ASSERT_EQUAL(extent_alloc(a, 33 * MiB, &off, &len), -ENOSPC);
	CU_ASSERT(off == 1 && len == 1);

	CU_ASSERT_EQUAL(extent_alloc(a, 2 * MiB, &off, &len), 0);
	CU_ASSERT_EQUAL(off % (2 * MiB), 0);
	CU_ASSERT_EQUAL(len, 2 * MiB);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * MiB + 1, &off, &len), 0);
	CU_ASSERT_EQUAL(off % (2 * MiB), 0);
	CU_ASSERT_EQUAL(len, 4 * MiB);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * MiB - 1, &off, &len), 0); /* rounds to a unit */
	CU_ASSERT_EQUAL(off % (2 * MiB), 0);
	CU_ASSERT_EQUAL(len, 2 * MiB);
	CU_ASSERT_EQUAL(extent_alloc(a, 1, &off, &len), 0);
	CU_ASSERT_EQUAL(off % (4 * KiB), 0);
	CU_ASSERT_EQUAL(len, 4 * KiB);
	CU_ASSERT_EQUAL(extent_alloc(a, 5000, &off, &len), 0);
	CU_ASSERT_EQUAL(off % (4 * KiB), 0);
	CU_ASSERT_EQUAL(len, 8 * KiB);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * MiB - 4 * KiB, &off, NULL), 0);
	CU_ASSERT_EQUAL(off % (4 * KiB), 0);

	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, 6);
	CU_ASSERT_EQUAL(st.used, 8 * MiB + 12 * KiB + 2 * MiB - 4 * KiB);
	CU_ASSERT_EQUAL(st.nsmall_units, 2);
	extent_arena_free(a);
}

static void test_small_packing(void)
{
	uint64_t unit = 64 * KiB, grain = 4 * KiB;
	struct extent_arena *a = arena(4 * unit, unit, grain);
	struct extent_stats st;
	uint64_t off[17], len, big;
	int i;

	for (i = 0; i < 17; i++) {
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, grain - 100, &off[i], &len), 0);
		CU_ASSERT_EQUAL(len, grain);
	}
	/* The first 16 share one unit; the 17th needs another. */
	for (i = 1; i < 16; i++)
		CU_ASSERT_EQUAL(off[i] / unit, off[0] / unit);
	CU_ASSERT_NOT_EQUAL(off[16] / unit, off[0] / unit);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 2);
	CU_ASSERT_EQUAL(st.largest_free, 2 * unit);
	CU_ASSERT_EQUAL(extent_alloc(a, 3 * unit, &big, &len), -ENOSPC);

	/* Freeing all but one keeps the unit; the last one returns it to the big pool. */
	for (i = 0; i < 15; i++)
		CU_ASSERT_EQUAL(extent_release(a, off[i], grain), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 2);
	CU_ASSERT_EQUAL(extent_release(a, off[15], grain), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 1);
	CU_ASSERT_EQUAL(st.used, grain);
	CU_ASSERT_EQUAL(st.nfree_runs, 3); /* unit 0, units 2-3, the rest of unit 1 */
	CU_ASSERT_EQUAL(extent_alloc(a, unit, &big, &len), 0);
	CU_ASSERT_EQUAL(big, off[0] / unit * unit); /* best fit: the returned unit */
	CU_ASSERT_EQUAL(extent_release(a, big, unit), 0);
	CU_ASSERT_EQUAL(extent_release(a, off[16], 1), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 0);
	CU_ASSERT_EQUAL(st.nfree_runs, 1);
	CU_ASSERT_EQUAL(st.largest_free, 4 * unit);
	extent_arena_free(a);
}

/* Fine extents: packed at 64 bytes in units of their own, apart from page-grain ones. */
static void test_fine(void)
{
	uint64_t unit = 64 * KiB, g = 4 * KiB, off[1024], len, pg, big;
	struct extent_arena *a = arena(4 * unit, unit, g);
	struct extent_stats st;
	int i;

	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 100, &pg, &len), 0); /* page grain */
	CU_ASSERT_EQUAL(len, g);
	for (i = 0; i < 1024; i++) {
		CU_ASSERT_EQUAL_FATAL(extent_alloc_fine(a, 16, &off[i], &len), 0);
		CU_ASSERT_EQUAL(len, EXTENT_FINE_GRAIN);
		CU_ASSERT_EQUAL(off[i] % EXTENT_FINE_GRAIN, 0);
		CU_ASSERT_NOT_EQUAL(off[i] / unit, pg / unit); /* never in a page-grain unit */
	}
	CU_ASSERT_EQUAL(off[1] - off[0], EXTENT_FINE_GRAIN); /* packed */
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 2); /* one of each: 1,024 x 64 B fill one 64 KiB unit */
	CU_ASSERT_EQUAL(st.used, g + 1024 * EXTENT_FINE_GRAIN);
	/*
	 * The fine unit is full: the next fine extent opens another, page-grain ones never go
	 * there.
	 */
	CU_ASSERT_EQUAL(extent_alloc(a, g, &big, &len), 0);
	CU_ASSERT_EQUAL(big / unit, pg / unit);
	CU_ASSERT_EQUAL(extent_release(a, big, g), 0);
	/* Above EXTENT_FINE_MAX a fine request is a page-grain one. */
	CU_ASSERT_EQUAL(extent_alloc_fine(a, EXTENT_FINE_MAX + 1, &big, &len), 0);
	CU_ASSERT_EQUAL(len, g);
	CU_ASSERT_EQUAL(big / unit, pg / unit);
	CU_ASSERT_EQUAL(extent_release(a, big, EXTENT_FINE_MAX + 1), 0);
	CU_ASSERT_EQUAL(extent_alloc_fine(a, EXTENT_FINE_MAX, &big, &len), 0);
	CU_ASSERT_EQUAL(len, EXTENT_FINE_MAX);
	CU_ASSERT_EQUAL(extent_release(a, big, EXTENT_FINE_MAX), 0);
	stats(a, &st);
	/* A release checks the rounding of the extent's own grain. */
	CU_ASSERT_EQUAL(extent_release(a, off[5], 65), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, off[5], 1), 0);
	/* Replay: a fine extent where a page-grain unit is open, and the other way, are refused. */
	CU_ASSERT_EQUAL(extent_reserve_fine(a, pg + g, 64), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, off[5] / g * g, g), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve_fine(a, off[5] + 1, 64), -EINVAL); /* off the grain */
	CU_ASSERT_EQUAL(extent_reserve_fine(a, off[5], 64), 0);
	CU_ASSERT_EQUAL(extent_reserve_fine(a, off[5], 64), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve_fine(a, 3 * unit + 128, 100), 0); /* opens a fine unit */
	CU_ASSERT_EQUAL(extent_alloc(a, g, &big, &len), 0);
	CU_ASSERT_NOT_EQUAL(big / unit, 3); /* not into it */
	CU_ASSERT_EQUAL(extent_release(a, big, g), 0);
	CU_ASSERT_EQUAL(extent_release(a, 3 * unit + 128, 128), 0);
	stats(a, &st);
	for (i = 0; i < 1024; i++)
		CU_ASSERT_EQUAL(extent_release(a, off[i], 64), 0);
	CU_ASSERT_EQUAL(extent_release(a, pg, 100), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 0);
	CU_ASSERT_EQUAL(st.nfree_runs, 1);
	CU_ASSERT_EQUAL(st.used, 0);
	extent_arena_free(a);
}

static void coalesce_one(uint64_t len, const int order[3])
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(8 * unit, unit, 4 * KiB);
	struct extent_stats st;
	uint64_t off[3], rlen[3];
	int i;

	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, len, &off[i], &rlen[i]), 0);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(extent_release(a, off[order[i]], len), 0);
		stats(a, &st);
	}
	CU_ASSERT_EQUAL(st.nfree_runs, 1);
	CU_ASSERT_EQUAL(st.largest_free, 8 * unit);
	CU_ASSERT_EQUAL(st.free, 8 * unit);
	CU_ASSERT_EQUAL(st.nextents, 0);
	CU_ASSERT_EQUAL(st.nsmall_units, 0);
	CU_ASSERT_EQUAL(st.fragmentation, 0.0);
	extent_arena_free(a);
}

static void test_coalesce(void)
{
	static const int orders[6][3] = {{1, 0, 2}, {0, 1, 2}, {0, 2, 1},
					 {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
	int i;

	for (i = 0; i < 6; i++) {
		coalesce_one(64 * KiB, orders[i]);  /* big */
		coalesce_one(128 * KiB, orders[i]); /* big, two units */
		coalesce_one(8 * KiB, orders[i]);   /* small, inside one unit */
	}
}

static void test_enospc(void)
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(8 * unit, unit, 4 * KiB);
	struct extent_stats st;
	uint64_t off[8], o = 0, l = 0;
	int i;

	for (i = 0; i < 8; i++)
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, unit, &off[i], NULL), 0);
	CU_ASSERT_EQUAL(extent_alloc(a, unit, &o, &l), -ENOSPC);
	CU_ASSERT_EQUAL(extent_alloc(a, 1, &o, &l), -ENOSPC);
	CU_ASSERT(o == 0 && l == 0);
	stats(a, &st);
	CU_ASSERT(st.free == 0 && st.largest_free == 0 && st.nfree_runs == 0);
	CU_ASSERT_EQUAL(st.fragmentation, 0.0);

	CU_ASSERT_EQUAL(extent_release(a, off[5], unit), 0);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * unit, &o, &l), -ENOSPC);
	CU_ASSERT_EQUAL(extent_alloc(a, 1, &o, &l), 0);
	CU_ASSERT_EQUAL(o, off[5]);
	CU_ASSERT_EQUAL(extent_release(a, o, l), 0);
	CU_ASSERT_EQUAL(extent_alloc(a, unit, &o, &l), 0);
	CU_ASSERT_EQUAL(o, off[5]);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.used, 8 * unit);
	extent_arena_free(a);
}

static void test_bad_release(void)
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(8 * unit, unit, 4 * KiB);
	struct extent_stats before, after;
	uint64_t big, small, len;

	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 2 * unit, &big, &len), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 8 * KiB, &small, &len), 0);
	stats(a, &before);

	CU_ASSERT_EQUAL(extent_release(a, big + unit, unit), -EINVAL); /* inside */
	CU_ASSERT_EQUAL(extent_release(a, big, unit), -EINVAL);	       /* short */
	CU_ASSERT_EQUAL(extent_release(a, big, 3 * unit), -EINVAL);    /* long */
	CU_ASSERT_EQUAL(extent_release(a, big, 0), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, small + 4 * KiB, 4 * KiB), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, small, 4 * KiB), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, 5 * unit, unit), -EINVAL);   /* free space */
	CU_ASSERT_EQUAL(extent_release(a, 100 * unit, unit), -EINVAL); /* outside */
	CU_ASSERT_EQUAL(extent_release(a, big, UINT64_MAX), -EINVAL);
	stats(a, &after);
	CU_ASSERT_EQUAL(memcmp(&before, &after, sizeof(before)), 0);

	CU_ASSERT_EQUAL(extent_release(a, small, 5000), 0); /* any length that rounds the same */
	CU_ASSERT_EQUAL(extent_release(a, small, 8 * KiB), -EINVAL); /* double */
	CU_ASSERT_EQUAL(extent_release(a, big, 2 * unit), 0);
	CU_ASSERT_EQUAL(extent_release(a, big, 2 * unit), -EINVAL); /* double */
	stats(a, &after);
	CU_ASSERT_EQUAL(after.used, 0);
	CU_ASSERT_EQUAL(after.nfree_runs, 1);
	extent_arena_free(a);
}

static void test_reserve(void)
{
	uint64_t unit = 64 * KiB, g = 4 * KiB;
	struct extent_arena *a = arena(8 * unit, unit, g);
	struct extent_stats st;
	uint64_t off, len;
	int i;

	CU_ASSERT_EQUAL(extent_reserve(a, unit, 2 * unit), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 2 * unit, unit), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, 0, 2 * unit), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, unit + g, g), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, unit, 2 * unit), -EBUSY);

	/* Small extents in a free unit make it a small unit. */
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit + 3 * g, 2 * g), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit + 4 * g, g), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit + 2 * g, 2 * g), -EBUSY);
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit + 5 * g, 1), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit, 3 * g), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 4 * unit, unit), -EBUSY);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nsmall_units, 1);
	CU_ASSERT_EQUAL(st.nextents, 4);
	CU_ASSERT_EQUAL(st.used, 2 * unit + 6 * g);

	/* Misplaced or out of the arena. */
	CU_ASSERT_EQUAL(extent_reserve(a, 5 * unit + g, unit), -EINVAL);
	CU_ASSERT_EQUAL(extent_reserve(a, 5 * unit + 1, g), -EINVAL);
	CU_ASSERT_EQUAL(extent_reserve(a, 6 * unit - g, 2 * g), -EINVAL); /* crosses a unit */
	CU_ASSERT_EQUAL(extent_reserve(a, 7 * unit, 2 * unit), -EINVAL);
	CU_ASSERT_EQUAL(extent_reserve(a, 8 * unit, g), -EINVAL);
	CU_ASSERT_EQUAL(extent_reserve(a, UINT64_MAX - g + 1, g), -EINVAL);
	CU_ASSERT_EQUAL(extent_reserve(a, 0, 0), -EINVAL);

	/* Allocation works around reserved extents and fills the small unit first. */
	CU_ASSERT_EQUAL(extent_alloc(a, g, &off, &len), 0);
	CU_ASSERT_EQUAL(off / unit, 4);
	for (i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(extent_alloc(a, unit, &off, &len), 0);
		CU_ASSERT(off == 0 || off >= 3 * unit);
		CU_ASSERT_NOT_EQUAL(off, 4 * unit);
	}
	CU_ASSERT_EQUAL(extent_alloc(a, unit, &off, &len), -ENOSPC);
	CU_ASSERT_EQUAL(extent_release(a, unit, 2 * unit), 0);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * unit, &off, &len), 0);
	CU_ASSERT_EQUAL(off, unit);
	stats(a, &st);
	extent_arena_free(a);
}

static void test_grow_shrink(void)
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(4 * unit, unit, 4 * KiB);
	struct extent_stats st;
	uint64_t off[4], busy = 7, s;
	int i;

	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, unit, &off[i], NULL), 0);
	CU_ASSERT_EQUAL(extent_arena_grow(a, 3 * unit), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_grow(a, 5 * unit + 1), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 5 * unit, &busy), -EINVAL);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, unit / 2, &busy), -EINVAL);
	CU_ASSERT_EQUAL(busy, 7);

	CU_ASSERT_EQUAL(extent_arena_grow(a, 6 * unit), 0);
	stats(a, &st);
	CU_ASSERT(st.size == 6 * unit && st.free == 2 * unit && st.nfree_runs == 1);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 5 * unit, &busy), 0);
	CU_ASSERT_EQUAL(busy, 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 4 * unit, NULL), 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 4 * unit, NULL), 0);
	stats(a, &st);
	CU_ASSERT(st.size == 4 * unit && st.free == 0 && st.nfree_runs == 0);

	/* The last unit is in use: refused, with the bytes in use. */
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(extent_release(a, off[i], unit), 0);
	s = off[3];
	CU_ASSERT_EQUAL(s, 3 * unit);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 2 * unit, &busy), -EBUSY);
	CU_ASSERT_EQUAL(busy, unit);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 0, &busy), -EBUSY);
	CU_ASSERT_EQUAL(busy, unit);
	CU_ASSERT_EQUAL(extent_release(a, s, unit), 0);

	/* A small unit at the end: busy counts only the bytes lent from it. */
	CU_ASSERT_EQUAL(extent_reserve(a, 3 * unit + 8 * KiB, 12 * KiB), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 2 * unit, 2 * unit), -EBUSY);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 2 * unit, &busy), -EBUSY);
	CU_ASSERT_EQUAL(busy, 12 * KiB);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 3 * unit, &busy), -EBUSY);
	CU_ASSERT_EQUAL(extent_release(a, 3 * unit + 8 * KiB, 12 * KiB), 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 2 * unit, &busy), 0);
	stats(a, &st);
	CU_ASSERT(st.size == 2 * unit && st.free == 2 * unit && st.nfree_runs == 1);

	/* Grown space joins the free run before it. */
	CU_ASSERT_EQUAL(extent_arena_grow(a, 10 * unit), 0);
	stats(a, &st);
	CU_ASSERT(st.nfree_runs == 1 && st.largest_free == 10 * unit);
	CU_ASSERT_EQUAL(extent_alloc(a, 10 * unit, &s, NULL), 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 0, &busy), -EBUSY);
	CU_ASSERT_EQUAL(busy, 10 * unit);
	CU_ASSERT_EQUAL(extent_release(a, s, 10 * unit), 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 0, &busy), 0);
	stats(a, &st);
	CU_ASSERT(st.size == 0 && st.nfree_runs == 0 && st.fragmentation == 0.0);
	CU_ASSERT_EQUAL(extent_alloc(a, 1, &s, NULL), -ENOSPC);
	extent_arena_free(a);
}

static void test_fragmentation(void)
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(16 * unit, unit, 4 * KiB);
	struct extent_stats st;
	uint64_t off[16];
	int i;

	stats(a, &st);
	CU_ASSERT_EQUAL(st.fragmentation, 0.0);
	for (i = 0; i < 16; i++)
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, unit, &off[i], NULL), 0);
	/* Checkerboard: every other unit free. */
	for (i = 0; i < 16; i += 2)
		CU_ASSERT_EQUAL(extent_release(a, off[i], unit), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.free, 8 * unit);
	CU_ASSERT_EQUAL(st.largest_free, unit);
	CU_ASSERT_EQUAL(st.nfree_runs, 8);
	CU_ASSERT_EQUAL(st.nextents, 8);
	CU_ASSERT_DOUBLE_EQUAL(st.fragmentation, 1.0 - 1.0 / 8, 1e-12);
	CU_ASSERT_EQUAL(extent_alloc(a, 2 * unit, &off[0], NULL), -ENOSPC);

	/* Free two neighbours of one hole: a run of three. */
	CU_ASSERT_EQUAL(extent_release(a, off[1], unit), 0);
	CU_ASSERT_EQUAL(extent_release(a, off[3], unit), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.largest_free, 5 * unit);
	CU_ASSERT_EQUAL(st.nfree_runs, 6);
	CU_ASSERT_DOUBLE_EQUAL(st.fragmentation, 1.0 - 5.0 / 10, 1e-12);

	for (i = 5; i < 16; i += 2)
		CU_ASSERT_EQUAL(extent_release(a, off[i], unit), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nfree_runs, 1);
	CU_ASSERT_EQUAL(st.fragmentation, 0.0);
	extent_arena_free(a);
}

struct walk {
	uint64_t off[8], len[8];
	int n, stop_at;
};

static int walk_cb(uint64_t off, uint64_t len, void *arg)
{
	struct walk *w = arg;

	if (w->n == w->stop_at)
		return 42;
	w->off[w->n] = off;
	w->len[w->n] = len;
	w->n++;
	return 0;
}

/*
 * A fine unit's extents are in its maps, not in nodes: each is released
 * only whole, with its own length, once; the walk and the check see them
 * in order among the others.
 */
static void test_fine_map(void)
{
	uint64_t unit = 64 * KiB, g = 4 * KiB, x, y, z, pg, len;
	struct extent_arena *a = arena(4 * unit, unit, g);
	struct walk w = {.stop_at = -1};
	struct extent_stats st;

	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, g, &pg, &len), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc_fine(a, 64, &x, &len), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc_fine(a, 100, &y, &len), 0); /* two grains */
	CU_ASSERT_EQUAL(len, 128);
	CU_ASSERT_EQUAL_FATAL(extent_alloc_fine(a, 64, &z, &len), 0);
	CU_ASSERT_EQUAL(y, x + 64);
	CU_ASSERT_EQUAL(z, y + 128);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, 4);
	CU_ASSERT_EQUAL(extent_foreach(a, walk_cb, &w), 0);
	CU_ASSERT_EQUAL_FATAL(w.n, 4);
	CU_ASSERT_EQUAL(w.off[0], pg < x ? pg : x);
	CU_ASSERT_EQUAL(w.len[pg < x ? 2 : 1], 128); /* y, in offset order */
	/* Only the extent itself: not shorter, longer, from its middle, or off the grain. */
	CU_ASSERT_EQUAL(extent_release(a, y, 64), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, y, 192), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, x, 128), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, y + 64, 64), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, y + 1, 64), -EINVAL);
	CU_ASSERT_EQUAL(extent_release(a, y, EXTENT_FINE_MAX + 1), -EINVAL);
	stats(a, &st);
	CU_ASSERT_EQUAL(extent_release(a, y, 128), 0);
	CU_ASSERT_EQUAL(extent_release(a, y, 128), -EINVAL); /* once */
	CU_ASSERT_EQUAL(extent_reserve_fine(a, y, 64), 0);   /* its place is free again */
	CU_ASSERT_EQUAL(extent_reserve_fine(a, y + 64, 64), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, 5);
	CU_ASSERT_EQUAL(st.used, g + 4 * 64);
	/* Shrinking counts them as busy. */
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 0, &len), -EBUSY);
	CU_ASSERT_EQUAL(len, g + 4 * 64);
	CU_ASSERT_EQUAL(extent_release(a, x, 64), 0);
	CU_ASSERT_EQUAL(extent_release(a, y, 64), 0);
	CU_ASSERT_EQUAL(extent_release(a, y + 64, 64), 0);
	CU_ASSERT_EQUAL(extent_release(a, z, 64), 0);
	CU_ASSERT_EQUAL(extent_release(a, pg, g), 0);
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, 0);
	CU_ASSERT_EQUAL(st.nsmall_units, 0);
	CU_ASSERT_EQUAL(extent_arena_shrink(a, 0, NULL), 0);
	extent_arena_free(a);
}

static void test_foreach(void)
{
	uint64_t unit = 64 * KiB;
	struct extent_arena *a = arena(8 * unit, unit, 4 * KiB);
	struct walk w = {.stop_at = -1};

	CU_ASSERT_EQUAL(extent_foreach(a, walk_cb, &w), 0);
	CU_ASSERT_EQUAL(w.n, 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 5 * unit, 2 * unit), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, unit + 8 * KiB, 4 * KiB), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, 0, unit), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, unit, 100), 0);
	CU_ASSERT_EQUAL(extent_foreach(a, walk_cb, &w), 0);
	CU_ASSERT_EQUAL_FATAL(w.n, 4);
	CU_ASSERT(w.off[0] == 0 && w.len[0] == unit);
	CU_ASSERT(w.off[1] == unit && w.len[1] == 4 * KiB);
	CU_ASSERT(w.off[2] == unit + 8 * KiB && w.len[2] == 4 * KiB);
	CU_ASSERT(w.off[3] == 5 * unit && w.len[3] == 2 * unit);
	w = (struct walk){.stop_at = 2};
	CU_ASSERT_EQUAL(extent_foreach(a, walk_cb, &w), 42);
	CU_ASSERT_EQUAL(w.n, 2);
	extent_arena_free(a);
}

/*
 * Randomised operations against a shadow map of the arena, one owner per
 * grain. After every operation the arena must agree with the model: no
 * overlap, all inside, used + free == size, and the same free runs, largest
 * run and unit count. The model also predicts every -ENOSPC and -EBUSY.
 */
#define S_UNIT (64 * KiB)
#define S_GRAIN (4 * KiB)
#define S_GPU ((int)(S_UNIT / S_GRAIN)) /* grains per unit */
#define S_MAXUNITS 96
#define S_MAXG (S_MAXUNITS * S_GPU)
#define S_MAXLIVE 4096

struct live {
	uint64_t off, len;
};

static struct {
	struct extent_arena *a;
	uint64_t size;
	int owner[S_MAXG]; /* 0: free, else 1 + index in live[] */
	struct live live[S_MAXLIVE];
	int nlive;
	uint64_t used;
} sh;

static int sh_ngrains(void)
{
	return (int)(sh.size / S_GRAIN);
}

static int sh_unit_used(int u) /* grains in use in unit u */
{
	int g, n = 0;

	for (g = u * S_GPU; g < (u + 1) * S_GPU; g++)
		n += sh.owner[g] != 0;
	return n;
}

static int sh_unit_big(int u) /* unit u is (part of) a big extent */
{
	int o = sh.owner[u * S_GPU];

	return o && sh.live[o - 1].len >= S_UNIT;
}

static int sh_range_free(uint64_t off, uint64_t len)
{
	uint64_t g;

	for (g = off / S_GRAIN; g < (off + len) / S_GRAIN; g++)
		if (sh.owner[g])
			return 0;
	return 1;
}

static void sh_add(uint64_t off, uint64_t len)
{
	uint64_t g;
	int id;

	CU_ASSERT_FATAL(sh.nlive < S_MAXLIVE);
	CU_ASSERT_FATAL(off + len <= sh.size && off + len > off);
	id = sh.nlive++;
	sh.live[id] = (struct live){off, len};
	for (g = off / S_GRAIN; g < (off + len) / S_GRAIN; g++) {
		CU_ASSERT_FATAL(sh.owner[g] == 0); /* overlap */
		sh.owner[g] = id + 1;
	}
	sh.used += len;
}

static void sh_del(int id)
{
	struct live e = sh.live[id];
	uint64_t g;
	int last = sh.nlive - 1;

	for (g = e.off / S_GRAIN; g < (e.off + e.len) / S_GRAIN; g++)
		sh.owner[g] = 0;
	if (id != last) {
		sh.live[id] = sh.live[last];
		for (g = sh.live[id].off / S_GRAIN;
		     g < (sh.live[id].off + sh.live[id].len) / S_GRAIN; g++)
			sh.owner[g] = id + 1;
	}
	sh.nlive--;
	sh.used -= e.len;
}

/* What the arena must report: free runs as the allocator keeps them. */
static void sh_expect(struct extent_stats *st)
{
	int u, g, nunits = sh_ngrains() / S_GPU, run = 0;
	uint64_t largest = 0, nruns = 0, nsmall = 0;

	memset(st, 0, sizeof(*st));
	for (u = 0; u < nunits; u++) {
		if (sh_unit_used(u) == 0) {
			if (run++ == 0)
				nruns++;
			if ((uint64_t)run * S_UNIT > largest)
				largest = (uint64_t)run * S_UNIT;
			continue;
		}
		run = 0;
		if (sh_unit_big(u))
			continue;
		nsmall++;
		for (g = u * S_GPU; g < (u + 1) * S_GPU;) {
			int n = 0;

			while (g < (u + 1) * S_GPU && sh.owner[g] == 0) {
				n++;
				g++;
			}
			if (n) {
				nruns++;
				if ((uint64_t)n * S_GRAIN > largest)
					largest = (uint64_t)n * S_GRAIN;
			}
			while (g < (u + 1) * S_GPU && sh.owner[g] != 0)
				g++;
		}
	}
	st->size = sh.size;
	st->used = sh.used;
	st->free = sh.size - sh.used;
	st->largest_free = largest;
	st->nfree_runs = nruns;
	st->nextents = (uint64_t)sh.nlive;
	st->nsmall_units = nsmall;
}

static void sh_verify(void)
{
	struct extent_stats st, want;

	extent_stats(sh.a, &st);
	sh_expect(&want);
	CU_ASSERT_EQUAL_FATAL(st.size, want.size);
	CU_ASSERT_EQUAL_FATAL(st.used, want.used);
	CU_ASSERT_EQUAL_FATAL(st.free, want.free);
	CU_ASSERT_EQUAL_FATAL(st.used + st.free, st.size);
	CU_ASSERT_EQUAL_FATAL(st.largest_free, want.largest_free);
	CU_ASSERT_EQUAL_FATAL(st.nfree_runs, want.nfree_runs);
	CU_ASSERT_EQUAL_FATAL(st.nextents, want.nextents);
	CU_ASSERT_EQUAL_FATAL(st.nsmall_units, want.nsmall_units);
	CU_ASSERT_EQUAL_FATAL(extent_arena_check(sh.a), 0);
}

/* Would a request of rlen bytes fit? Big: n free units in a row; small: a hole. */
static int sh_fits(uint64_t rlen, int *ret_in_small)
{
	int u, g, run = 0, nunits = sh_ngrains() / S_GPU, need;

	*ret_in_small = 0;
	if (rlen >= S_UNIT) {
		need = (int)(rlen / S_UNIT);
		for (u = 0; u < nunits; u++) {
			run = sh_unit_used(u) == 0 ? run + 1 : 0;
			if (run >= need)
				return 1;
		}
		return 0;
	}
	need = (int)(rlen / S_GRAIN);
	for (u = 0; u < nunits; u++) {
		if (sh_unit_used(u) == 0 || sh_unit_big(u))
			continue;
		for (g = u * S_GPU, run = 0; g < (u + 1) * S_GPU; g++) {
			run = sh.owner[g] == 0 ? run + 1 : 0;
			if (run >= need) {
				*ret_in_small = 1;
				return 1;
			}
		}
	}
	for (u = 0; u < nunits; u++)
		if (sh_unit_used(u) == 0)
			return 1;
	return 0;
}

static uint64_t sh_round(uint64_t len)
{
	uint64_t r = (len + S_GRAIN - 1) / S_GRAIN * S_GRAIN;

	return r < S_UNIT ? r : (len + S_UNIT - 1) / S_UNIT * S_UNIT;
}

static void sh_op_alloc(void)
{
	uint64_t len, rlen, off = 0, got = 0;
	int rc, fits, in_small, was_free;

	len = rnd() % 5 < 3 ? rnd_range(1, S_UNIT - 1) : rnd_range(1, 6 * S_UNIT);
	rlen = sh_round(len);
	fits = sh_fits(rlen, &in_small);
	rc = extent_alloc(sh.a, len, &off, &got);
	CU_ASSERT_EQUAL_FATAL(rc, fits ? 0 : -ENOSPC);
	if (rc)
		return;
	CU_ASSERT_EQUAL_FATAL(got, rlen);
	if (rlen >= S_UNIT) {
		CU_ASSERT_EQUAL_FATAL(off % S_UNIT, 0);
	} else {
		CU_ASSERT_EQUAL_FATAL(off % S_GRAIN, 0);
		CU_ASSERT_EQUAL_FATAL(off / S_UNIT, (off + rlen - 1) / S_UNIT);
		/* Packed: a fresh unit only when no small unit had room. */
		was_free = sh_unit_used((int)(off / S_UNIT)) == 0;
		CU_ASSERT_EQUAL_FATAL(was_free, !in_small);
	}
	sh_add(off, rlen);
}

static void sh_op_reserve(void)
{
	uint64_t off, len, rlen;
	int rc, want, nunits = sh_ngrains() / S_GPU;

	if (nunits == 0)
		return;
	if (rnd() % 2) {
		off = rnd_range(0, (uint64_t)nunits - 1) * S_UNIT;
		len = rnd_range(1, 3 * S_UNIT);
	} else {
		off = rnd_range(0, sh.size / S_GRAIN - 1) * S_GRAIN;
		len = rnd_range(1, S_UNIT - 1);
	}
	if (rnd() % 10 == 0)
		off += rnd_range(1, S_GRAIN - 1); /* misaligned */
	rlen = sh_round(len);
	if (off % (rlen >= S_UNIT ? S_UNIT : S_GRAIN) || off + rlen > sh.size ||
	    (rlen < S_UNIT && off / S_UNIT != (off + rlen - 1) / S_UNIT))
		want = -EINVAL;
	else
		want = sh_range_free(off, rlen) ? 0 : -EBUSY;
	rc = extent_reserve(sh.a, off, len);
	CU_ASSERT_EQUAL_FATAL(rc, want);
	if (rc == 0)
		sh_add(off, rlen);
}

static void sh_op_release(void)
{
	int id;
	struct live e;

	if (sh.nlive == 0)
		return;
	id = (int)(rnd() % (uint64_t)sh.nlive);
	e = sh.live[id];
	/* Any length that rounds to the extent's will do. */
	CU_ASSERT_EQUAL_FATAL(extent_release(sh.a, e.off, rnd() % 2 ? e.len : e.len - S_GRAIN + 1),
			      0);
	sh_del(id);
	/* Releasing it again must be refused. */
	if (rnd() % 4 == 0)
		CU_ASSERT_EQUAL_FATAL(extent_release(sh.a, e.off, e.len), -EINVAL);
}

static void sh_op_bogus(void)
{
	uint64_t off = rnd_range(0, sh.size + S_UNIT) / S_GRAIN * S_GRAIN, len;
	uint64_t g = off / S_GRAIN;
	int id;

	len = rnd_range(1, 2 * S_UNIT);
	if (off < sh.size && sh.owner[g]) {
		id = sh.owner[g] - 1;
		if (sh.live[id].off == off && sh_round(len) == sh.live[id].len)
			return; /* that would be a real release */
	}
	CU_ASSERT_EQUAL_FATAL(extent_release(sh.a, off, len), -EINVAL);
}

static void sh_op_resize(void)
{
	uint64_t new_size = rnd_range(0, S_MAXUNITS) * S_UNIT, busy = 12345, want_busy = 0, g;
	int rc;

	if (new_size >= sh.size) {
		CU_ASSERT_EQUAL_FATAL(extent_arena_grow(sh.a, new_size), 0);
		sh.size = new_size;
		return;
	}
	for (g = new_size / S_GRAIN; g < sh.size / S_GRAIN; g++)
		want_busy += sh.owner[g] ? S_GRAIN : 0;
	rc = extent_arena_shrink(sh.a, new_size, &busy);
	CU_ASSERT_EQUAL_FATAL(rc, want_busy ? -EBUSY : 0);
	CU_ASSERT_EQUAL_FATAL(busy, want_busy);
	if (rc == 0)
		sh.size = new_size;
}

static int sh_walk_cb(uint64_t off, uint64_t len, void *arg)
{
	uint64_t *prev_end = arg;
	int id;

	if (off < *prev_end || off >= sh.size || !sh.owner[off / S_GRAIN])
		return -1;
	id = sh.owner[off / S_GRAIN] - 1;
	if (sh.live[id].off != off || sh.live[id].len != len)
		return -1;
	*prev_end = off + len;
	return 0;
}

static void test_stress(void)
{
	uint64_t prev_end;
	int i, op, count;

	memset(&sh, 0, sizeof(sh));
	rng_state = 0x123456789abcdefULL;
	sh.size = 64 * S_UNIT;
	CU_ASSERT_EQUAL_FATAL(extent_arena_new(sh.size, S_UNIT, S_GRAIN, &sh.a), 0);
	for (i = 0; i < 30000; i++) {
		op = (int)(rnd() % 100);
		if (op < 45)
			sh_op_alloc();
		else if (op < 80)
			sh_op_release();
		else if (op < 90)
			sh_op_reserve();
		else if (op < 98)
			sh_op_bogus();
		else
			sh_op_resize();
		sh_verify();
		if (sh.size > 0) { /* extent_busy() says what the model does of a random range */
			uint64_t g = rnd_range(0, sh.size / S_GRAIN - 1),
				 n = rnd_range(1, MIN(3 * (uint64_t)S_GPU, sh.size / S_GRAIN - g));

			CU_ASSERT_EQUAL_FATAL(extent_busy(sh.a, g * S_GRAIN, n * S_GRAIN),
					      !sh_range_free(g * S_GRAIN, n * S_GRAIN));
		}
		if (i % 1000 == 0) {
			prev_end = 0;
			CU_ASSERT_EQUAL_FATAL(extent_foreach(sh.a, sh_walk_cb, &prev_end), 0);
		}
	}
	/* Drain: everything coalesces back into one run. */
	count = sh.nlive;
	while (sh.nlive) {
		CU_ASSERT_EQUAL_FATAL(extent_release(sh.a, sh.live[0].off, sh.live[0].len), 0);
		sh_del(0);
	}
	sh_verify();
	CU_ASSERT(count > 0);
	if (sh.size) {
		struct extent_stats st;

		extent_stats(sh.a, &st);
		CU_ASSERT(st.nfree_runs == 1 && st.largest_free == sh.size);
	}
	extent_arena_free(sh.a);
}

/*
 * A watched arena lists each extent allocated, reserved and released, by
 * rounded length, and nothing that failed; the watcher forgets its own
 * changes; past its bound, or unwatched, the list is not to be trusted.
 */
static void test_watch(void)
{
	struct extent_arena *a = arena(8 * 64 * KiB, 64 * KiB, 4 * KiB);
	const struct extent_change *c;
	uint64_t off, len;
	size_t n;

	CU_ASSERT_EQUAL(extent_changes(a, &c, &n), -EOVERFLOW); /* (nobody watches) */
	CU_ASSERT_EQUAL_FATAL(extent_watch(a, 4), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 5000, &off, &len), 0);
	CU_ASSERT_EQUAL(extent_reserve(a, off, 4096), -EBUSY);
	CU_ASSERT_EQUAL_FATAL(extent_reserve(a, 128 * KiB, 64 * KiB), 0);
	CU_ASSERT_EQUAL(extent_release(a, off + 4096, 4096), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(extent_release(a, off, 5000), 0);
	CU_ASSERT_EQUAL_FATAL(extent_changes(a, &c, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT(c[0].off == off && c[0].len == 8192);
	CU_ASSERT(c[1].off == 128 * KiB && c[1].len == 64 * KiB);
	CU_ASSERT(c[2].off == off && c[2].len == 8192);
	CU_ASSERT(extent_busy(a, 128 * KiB + 60 * KiB, 8 * KiB));
	CU_ASSERT(!extent_busy(a, off, 8192));
	extent_changes_forget(a, 1);
	CU_ASSERT_EQUAL(extent_changes(a, &c, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 4096, &off, &len), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 4096, &off, &len), 0);
	CU_ASSERT_EQUAL_FATAL(extent_alloc(a, 4096, &off, &len), 0);
	CU_ASSERT_EQUAL(extent_alloc(a, 4096, &off, &len), 0); /* (a fifth: over the bound) */
	CU_ASSERT_EQUAL(extent_changes(a, &c, &n), -EOVERFLOW);
	CU_ASSERT_EQUAL_FATAL(extent_watch(a, 4), 0); /* (watched again: from now) */
	CU_ASSERT_EQUAL(extent_changes(a, &c, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	extent_unwatch(a);
	CU_ASSERT_EQUAL(extent_changes(a, &c, &n), -EOVERFLOW);
	CU_ASSERT_EQUAL_FATAL(extent_watch(a, 4), 0);
	extent_arena_free(a); /* (with its list) */
}

/* 100k extents of random sizes in a 1 TiB arena, freed in random order, then churn. */
static void test_perf(void)
{
	enum { N = 100000 };
	struct extent_arena *a = arena(UINT64_C(1) << 40, 0, 0);
	struct extent_stats st;
	uint64_t *off = calloc(N, sizeof(*off)), *len = calloc(N, sizeof(*len)), t;
	int i, j;

	CU_ASSERT_FATAL(off != NULL && len != NULL);
	rng_state = 42;
	for (i = 0; i < N; i++) {
		t = rnd() % 3 ? rnd_range(1, 2 * MiB - 1) : rnd_range(1, 16 * MiB);
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, t, &off[i], &len[i]), 0);
	}
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, N);
	for (i = N - 1; i > 0; i--) { /* shuffle */
		j = (int)(rnd() % (uint64_t)(i + 1));
		t = off[i], off[i] = off[j], off[j] = t;
		t = len[i], len[i] = len[j], len[j] = t;
	}
	/* Churn: free half, allocate again, then free everything. */
	for (i = 0; i < N / 2; i++)
		CU_ASSERT_EQUAL_FATAL(extent_release(a, off[i], len[i]), 0);
	for (i = 0; i < N / 2; i++) {
		t = rnd() % 3 ? rnd_range(1, 2 * MiB - 1) : rnd_range(1, 16 * MiB);
		CU_ASSERT_EQUAL_FATAL(extent_alloc(a, t, &off[i], &len[i]), 0);
	}
	stats(a, &st);
	CU_ASSERT_EQUAL(st.nextents, N);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL_FATAL(extent_release(a, off[i], len[i]), 0);
	stats(a, &st);
	CU_ASSERT(st.used == 0 && st.nextents == 0 && st.nfree_runs == 1);
	CU_ASSERT_EQUAL(st.largest_free, UINT64_C(1) << 40);
	free(off);
	free(len);
	extent_arena_free(a);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"arena arguments", test_new_args},
	    {"unit rounding and alignment", test_rounding},
	    {"small extents packed, units returned", test_small_packing},
	    {"fine extents packed in units of their own", test_fine},
	    {"fine extents in their units' maps", test_fine_map},
	    {"coalescing in every order", test_coalesce},
	    {"exhaustion, then success after a release", test_enospc},
	    {"double and bogus release", test_bad_release},
	    {"reserve exact ranges and conflicts", test_reserve},
	    {"grow and shrink", test_grow_shrink},
	    {"fragmentation on a checkerboard", test_fragmentation},
	    {"foreach order and early stop", test_foreach},
	    {"random operations against a shadow map", test_stress},
	    {"a watched arena lists its changes", test_watch},
	    {"100k extents", test_perf},
	    {NULL, NULL},
	};

	return unit_run("extent", tests);
}

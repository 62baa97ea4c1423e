/*
 * daemon/hold/ledger.h - comparing two records of who holds which extent.
 *
 * The coordinator's map says which extents of a lender belong to which
 * region; the lender keeps its own record of what it holds. ledger_diff()
 * sorts both and reports what only one side has. It depends on nothing
 * else in poold, so it is unit-tested on its own.
 */
#ifndef POOLD_LEDGER_H
#define POOLD_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ledger_extent {
	uint32_t arena;
	uint32_t ref; /* the caller's: where the extent came from (not compared) */
	uint64_t off, len;
	uint64_t region;
};

/* Sort extents by arena, offset, length and region (ledger_diff() does). */
void ledger_sort(struct ledger_extent *e, size_t n);

/* Append one extent to a growable array (*cap grows as needed); -ENOMEM. */
int ledger_append(struct ledger_extent **arr, size_t *n, size_t *cap, uint32_t arena, uint64_t off,
		  uint64_t len, uint64_t region);

/*
 * Compare the coordinator's extents of one lender (want) with the lender's
 * record (have). missing: in want, not (identically) in have; orphans: in
 * have, not in want. The arrays are sorted in place. Outputs are allocated
 * (free() them), counts written on success.
 */
int ledger_diff(struct ledger_extent *want, size_t nwant, struct ledger_extent *have, size_t nhave,
		struct ledger_extent **ret_missing, size_t *ret_nmissing,
		struct ledger_extent **ret_orphans, size_t *ret_norphans);

/* A sort of ledger_sort()'s, done in slices (struct ledger_job). */
struct ledger_sorter {
	struct ledger_extent *e, *tmp, *from, *to;
	size_t n, i;
	size_t count[12][256];
	unsigned d;
	int stage;
};

/*
 * ledger_diff() a slice at a time, for records of millions of extents: a
 * ledger pass must not hold poold's loop for the whole comparison.
 */
struct ledger_job {
	struct ledger_extent *want, *have;
	size_t nwant, nhave;
	struct ledger_sorter sort_want, sort_have;
	size_t i, k;				 /* the comparison's place in want and have */
	struct ledger_extent *missing, *orphans; /* as ledger_diff()'s, NULL while none */
	size_t nmissing, norphans, cap_missing, cap_orphans;
};

/* Start comparing want and have (sorted in place as the job goes, and kept by the caller). */
void ledger_job_start(struct ledger_job *j, struct ledger_extent *want, size_t nwant,
		      struct ledger_extent *have, size_t nhave);

/*
 * Sort or compare about max extents more: 1 while there is more to do, 0
 * once missing and orphans are whole, -ENOMEM. An extent listed twice on
 * one side (a record walked while it grew) counts once.
 */
int ledger_job_step(struct ledger_job *j, size_t max);

/*
 * Give the pages of an array of bytes bytes back to the system, a few MiB
 * a call, *done (0 at first) of it given back so far: true while more is
 * left. free() then costs little: a gigabyte freed at once held poold's
 * loop for a third of a second.
 */
bool ledger_release(void *arr, size_t bytes, size_t *done);

/* Free what the job allocated (missing and orphans included). */
void ledger_job_free(struct ledger_job *j);

#endif

/*
 * daemon/ledger.h - comparing two records of who holds which extent.
 *
 * The coordinator's map says which extents of a lender belong to which
 * region; the lender keeps its own record of what it holds. ledger_diff()
 * sorts both and reports what only one side has. It depends on nothing
 * else in poold, so it is unit-tested on its own.
 */
#ifndef POOLD_LEDGER_H
#define POOLD_LEDGER_H

#include <stddef.h>
#include <stdint.h>

struct ledger_extent {
	uint32_t arena;
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

#endif

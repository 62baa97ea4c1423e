/*
 * daemon/util/placement.h - which lender gets a new extent.
 *
 * Pure policy over a list of candidates, so it is unit-tested on its own:
 * the caller (region.c) fills in what the allocators and the member table
 * say about each lender.
 */
#ifndef POOLD_PLACEMENT_H
#define POOLD_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct placement_candidate {
	uint64_t size; /* what the lender offers */
	uint64_t used;
	uint64_t largest_free; /* the largest single extent it can give */
	bool usable;	       /* up, not draining, right tier/node/NUMA */
};

/*
 * The candidate for len bytes: it must be usable and have one extent of
 * len; among those, the ones that stay at or below watermark percent used
 * come first, then the most free space wins (ties: the first). -1 if none.
 */
long placement_choose(const struct placement_candidate *c, size_t n, uint64_t len,
		      unsigned watermark);

#endif

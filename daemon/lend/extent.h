/*
 * daemon/lend/extent.h - the extent allocator of one arena of lendable memory.
 *
 * An arena is [0, size) of a node's lend pool. Requests of at least one lend
 * unit are rounded up to whole units and placed on unit boundaries; smaller
 * ones are rounded up to the grain and packed into units set aside for small
 * extents, which go back to the big pool once their last extent is released.
 * Unit and grain are powers of two, grain <= unit; sizes are whole units.
 * extent_alloc_fine() packs requests of up to EXTENT_FINE_MAX bytes tighter,
 * at EXTENT_FINE_GRAIN, in fine units of their own (for small KV values: an
 * extent there is never page-aligned, nor alone in its page).
 * Not thread-safe: the caller serialises.
 */
#ifndef POOLD_EXTENT_H
#define POOLD_EXTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXTENT_UNIT_DEFAULT (UINT64_C(2) << 20)
#define EXTENT_GRAIN_DEFAULT (UINT64_C(4) << 10)
#define EXTENT_FINE_GRAIN UINT64_C(64) /* a cache line */
#define EXTENT_FINE_MAX UINT64_C(2048)

struct extent_arena;

/*
 * A free run is a big-pool run or a free run inside a small unit (those never
 * merge with their neighbours). largest_free is thus the largest request that
 * extent_alloc() will grant; fragmentation is 1 - largest_free / free.
 */
struct extent_stats {
	uint64_t size;
	uint64_t used;
	uint64_t free;
	uint64_t largest_free;
	uint64_t nfree_runs;
	uint64_t nextents;
	uint64_t nsmall_units;
	double fragmentation;
};

/* Make an arena of size bytes, all free; unit and grain 0 take the defaults. */
int extent_arena_new(uint64_t size, uint64_t unit, uint64_t grain, struct extent_arena **ret);

/* Free the arena and all its bookkeeping (the memory it describes is not touched). */
void extent_arena_free(struct extent_arena *a);

/* Allocate len bytes, rounded as described above: -ENOSPC when nothing fits. */
int extent_alloc(struct extent_arena *a, uint64_t len, uint64_t *ret_off, uint64_t *ret_len);

/* The same, in a fine unit when len <= EXTENT_FINE_MAX. */
int extent_alloc_fine(struct extent_arena *a, uint64_t len, uint64_t *ret_off, uint64_t *ret_len);

/*
 * Mark exactly [off, off + rounded len) allocated (ledger replay): -EBUSY if
 * any part is taken, or (_fine) it lies in a unit of the other grain.
 */
int extent_reserve(struct extent_arena *a, uint64_t off, uint64_t len);
int extent_reserve_fine(struct extent_arena *a, uint64_t off, uint64_t len);

/*
 * Release the extent at off, allocated or reserved with a len that rounds
 * the same: 0, -EINVAL for anything else, -ENOMEM (nothing changed).
 */
int extent_release(struct extent_arena *a, uint64_t off, uint64_t len);

/* Add [size, new_size) at the end of the arena as free space. */
int extent_arena_grow(struct extent_arena *a, uint64_t new_size);

/*
 * Cut the arena down to new_size if [new_size, size) is all free; otherwise
 * -EBUSY, and *ret_busy (written on success as 0 and on -EBUSY) says how many
 * bytes in that range are allocated. ret_busy may be NULL.
 */
int extent_arena_shrink(struct extent_arena *a, uint64_t new_size, uint64_t *ret_busy);

/* Fill *ret with the arena's figures. */
void extent_stats(const struct extent_arena *a, struct extent_stats *ret);

/*
 * Call cb on each allocated extent in offset order; a non-zero return stops
 * the walk and is returned. cb must not change the arena.
 */
int extent_foreach(const struct extent_arena *a, int (*cb)(uint64_t off, uint64_t len, void *arg),
		   void *arg);

/*
 * Whether any byte of [off, off + len) is allocated or reserved (a ledger
 * pass's last look before it takes back or scrubs what a lender holds).
 */
bool extent_busy(const struct extent_arena *a, uint64_t off, uint64_t len);

/*
 * What a ledger pass that runs in slices needs to know of the arena's
 * changes meanwhile: once watched, every extent allocated, reserved or
 * released is listed (its offset and rounded length), up to max of them.
 * extent_changes() gives the list (valid until the arena changes), or
 * -EOVERFLOW when more than max changed, memory ran out, or nothing
 * watches; extent_changes_forget() drops those after the first n (the
 * watcher's own); extent_unwatch() ends it (extent_arena_free() too).
 */
struct extent_change {
	uint64_t off, len;
};
int extent_watch(struct extent_arena *a, size_t max);
int extent_changes(const struct extent_arena *a, const struct extent_change **ret, size_t *ret_n);
void extent_changes_forget(struct extent_arena *a, size_t n);
void extent_unwatch(struct extent_arena *a);

/* Verify every internal invariant (for tests): 0, -EUCLEAN if one is broken, or -ENOMEM. */
int extent_arena_check(const struct extent_arena *a);

#endif

/*
 * daemon/util/usage.h - what each uid makes the pool hold, for quota.bytes and
 * quota.regions.
 *
 * Regions, KV namespaces' values and snapshot pages are charged to a uid
 * when they are placed and uncharged when they go, so a quota check costs a
 * lookup, not a walk over every region. It depends on nothing else in
 * poold, so it is unit-tested on its own.
 */
#ifndef POOLD_USAGE_H
#define POOLD_USAGE_H

#include <stddef.h>
#include <stdint.h>

struct usage {
	uint32_t uid;
	uint64_t bytes;	  /* regions, KV values and snapshot pages */
	uint64_t regions; /* regions owned */
};

/* Sorted by uid; a uid that holds nothing has no entry. */
struct usage_table {
	struct usage *v;
	size_t n, cap;
};

/*
 * Add bytes and regions (negative: remove) to uid's charge. -ENOMEM when a
 * uid charged for the first time finds no memory (nothing changes);
 * removing never fails, and never goes below zero.
 */
int usage_charge(struct usage_table *t, uint32_t uid, int64_t bytes, int64_t regions);

/* What uid is charged for (zeros when nothing). */
struct usage usage_of(const struct usage_table *t, uint32_t uid);

void usage_clear(struct usage_table *t);

#endif

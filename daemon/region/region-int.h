/*
 * daemon/region/region-int.h - the address space's internals shared by its files:
 * region.c (regions made, opened and destroyed, leases, lenders' arenas)
 * and region-rebuild.c (regions rebuilt after a coordinator restart).
 */
#ifndef POOL_DAEMON_REGIONINT_H
#define POOL_DAEMON_REGIONINT_H

#include "daemon/poold.h"

#define REGION_MAX_SIZE (UINT64_C(1) << 44)
#define LEASE_CONFIRM_MS 60000 /* a journal's lease whose node does not register ends then */

bool region_name_ok(const char *name);
int region_link(struct poold *pd, struct region *r);
void region_unlink(struct poold *pd, struct region *r);
void region_lease_drop(struct poold *pd, struct region *r, struct lease *l);
uint64_t region_gva_len(uint64_t size);

#endif

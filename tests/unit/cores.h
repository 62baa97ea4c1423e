/*
 * tests/unit/cores.h - a coordinator's cores on their own, for the unit
 * tests of the address space and the KV index: lenders that each lend one
 * 64 MiB DRAM arena, up and holding nothing, and no network.
 */
#ifndef POOL_TESTS_CORES_H
#define POOL_TESTS_CORES_H

#include "daemon/coord/coord.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"

#define CORES_ARENA (64u << 20)

void cores_open(struct poold *pd, unsigned lenders);
void cores_lender_add(struct poold *pd, uint32_t node);
void cores_lender_add_tier(struct poold *pd, uint32_t node, enum tier tier);
void cores_close(struct poold *pd);
void cores_holding_again(const struct holding *h, struct holding_unpacked *ret);
uint8_t *cores_defs_kept(struct poold *pd, size_t *ret_len);
void cores_defs_told(struct poold *pd, const uint8_t *buf, size_t len);

#endif

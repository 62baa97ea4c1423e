/*
 * daemon/lend/lend.h - this node's lend pool: its arenas, their allocator,
 * extents with a file of their own, the memory kept for KV shards, the pmem
 * journal. The interface of lend/ to the rest of poold.
 */
#ifndef POOLD_LEND_H
#define POOLD_LEND_H

#include "daemon/poold.h"
#include "daemon/lend/extent.h"
#include "daemon/lend/journal.h"

/*
 * The arenas the coordinator lends from: ids below 2^16 - 1 and offsets
 * below 2^48, so that a KV value's place packs into 8 bytes (struct
 * kv_val), its last id naming a node's memory for its KV shards
 * (KV_STORE_ARENA). An arena beyond them is not lent
 * (region_lender_update()).
 */
#define LENDER_ARENA_IDS (1u << 16)
#define LENDER_ARENA_BYTES (1ull << 48)

/* a node's memory for its KV shards' values: the last arena id a KV place packs */
#define KV_STORE_ARENA (LENDER_ARENA_IDS - 1)
/* kvstore.c: the memory a node keeps for the values of the KV shards it owns */
int kvstore_open(struct poold *pd);
void kvstore_close(struct poold *pd);
int kvstore_alloc(struct poold *pd, uint64_t len, uint64_t *ret_off, uint64_t *ret_len);
void kvstore_free(struct poold *pd, uint64_t off, uint64_t len);
int kvstore_reach(struct poold *pd, uint64_t ext, uint64_t off, uint64_t len, void **ret_ptr);
void kvstore_stats(struct poold *pd, uint64_t *ret_size, uint64_t *ret_used);
/* carve.c: extents with a memory file of their own, for local mappings */
int carve_fd(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, bool may_share,
	     int *ret_fd, uint64_t *ret_off);
int carve_take(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, uint64_t *ret_off,
	       uint64_t *ret_len);
void carve_put_back(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void carve_empty(int fd, uint64_t off, uint64_t len);
void carve_release(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void carve_close(struct poold *pd);
void carve_count(const struct poold *pd, size_t *ret_carved, size_t *ret_windows);

/* lend.c: this node's lend pool */
/* The same file opened again for reading only, or -1 (errno): a client cannot map it writable. */
int fd_read_only(int fd);
int lend_open(struct poold *pd);
void lend_close(struct poold *pd);
void lend_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
struct arena *lend_arena(struct poold *pd, uint32_t arena);
int lend_renew(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
uint64_t lend_page_size(const struct poold *pd);
void lend_numa_bind(void *base, size_t len, int numa);
int lend_pmem_check(const char *path, uint64_t size, char *err, size_t errlen);
void lend_set_limit(struct poold *pd, uint32_t arena, uint64_t limit);
int lend_copy(struct poold *pd, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off,
	      uint64_t len);
const char *tier_name(enum tier tier);
void *lend_ptr(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int lend_persist(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
void lend_group_begin(void);
void lend_group_values(void);
bool lend_group_end(void);
void lend_flush(void);
uint64_t lend_flushes(void);
void lend_zero(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int lend_arenas_info(struct poold *pd, struct node_arena **ret_arenas, size_t *ret_n);

#endif /* POOLD_LEND_H */

/*
 * libpool.h - client library of the pool service.
 *
 * The man pages (libpool(3) and one page per function) are the reference;
 * comments here are reminders only. All functions return 0 (or a count) on
 * success and a negative code on failure: -errno, or one of the POOL_E*
 * codes below. pool_strerror() describes any of them; pool_errormsg()
 * returns the calling thread's message for its last failed call.
 */
#ifndef LIBPOOL_H
#define LIBPOOL_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pool_contract.h" /* the error codes (POOL_E*) and limits (POOL_*_MAX) */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(POOL_BUILDING_LIB)
#define POOL_EXPORT __attribute__((visibility("default")))
#else
#define POOL_EXPORT
#endif

struct pool;
struct pool_status;
struct pool_region;
struct pool_region_opts;
struct pool_batch;
struct pool_region_info;
struct pool_kv;
struct pool_kv_ref;

/* pool_region_create() flags */
#define POOL_REGION_ANONYMOUS 0x1 /* freed when its last lease ends */
/* pool_region_open() flags */
#define POOL_REGION_WRITE 0x1 /* open for reading and writing (default: reading) */

/* Connect to the local poold; socket NULL means $POOL_SOCKET or the default. */
POOL_EXPORT int pool_open(const char *socket, unsigned flags, struct pool **ret_pool);
/* Close a connection and free everything it holds. */
POOL_EXPORT int pool_close(struct pool *pool);

/* Ask poold for its status; free the result with pool_status_free(). */
POOL_EXPORT int pool_status(struct pool *pool, struct pool_status **ret_status);
POOL_EXPORT void pool_status_free(struct pool_status *status);
POOL_EXPORT const char *pool_status_version(const struct pool_status *status);
POOL_EXPORT const char *pool_status_role(const struct pool_status *status);
POOL_EXPORT uint32_t pool_status_node_id(const struct pool_status *status);
POOL_EXPORT uint64_t pool_status_uptime_ms(const struct pool_status *status);
POOL_EXPORT uint32_t pool_status_clients(const struct pool_status *status);

/*
 * Transfer buffers: memory this process shares with its poold. Reads and
 * writes of regions and KV values into or from such a buffer move no byte
 * through a staging copy. Free with pool_buf_free() (or pool_close()).
 */
POOL_EXPORT int pool_buf_alloc(struct pool *pool, size_t len, void **ret_buf);
POOL_EXPORT int pool_buf_free(struct pool *pool, void *buf);

/* Options of a new region; free with pool_region_opts_free(). */
POOL_EXPORT int pool_region_opts_new(struct pool_region_opts **ret_opts);
POOL_EXPORT void pool_region_opts_free(struct pool_region_opts *opts);
POOL_EXPORT int pool_region_opts_set_size(struct pool_region_opts *opts, uint64_t size);
/* "pinned" (default), "cache" or "persistent" */
POOL_EXPORT int pool_region_opts_set_class(struct pool_region_opts *opts, const char *cls);
/* "any" (default), "local", "node=N", "numa=M", "spread", "spread=N" */
POOL_EXPORT int pool_region_opts_set_placement(struct pool_region_opts *opts,
					       const char *placement);
POOL_EXPORT int pool_region_opts_set_mode(struct pool_region_opts *opts, unsigned mode);
POOL_EXPORT int pool_region_opts_set_stripe(struct pool_region_opts *opts, uint64_t stripe);

/* Create a region and open it for reading and writing. */
POOL_EXPORT int pool_region_create(struct pool *pool, const char *name,
				   const struct pool_region_opts *opts, unsigned flags,
				   struct pool_region **ret_region);
/* Open an existing region. */
POOL_EXPORT int pool_region_open(struct pool *pool, const char *name, unsigned flags,
				 struct pool_region **ret_region);
/* Close a region: unmap it and end its lease. */
POOL_EXPORT int pool_region_close(struct pool_region *region);
/* Destroy a region by name (its owner or an admin). */
POOL_EXPORT int pool_region_destroy(struct pool *pool, const char *name);
/* Keep an anonymous region after its last lease ends (its owner or an admin). */
POOL_EXPORT int pool_region_keep(struct pool *pool, const char *name);
/* What a region is, by name; free with pool_region_info_free(). */
POOL_EXPORT int pool_region_stat(struct pool *pool, const char *name,
				 struct pool_region_info **ret_info);
POOL_EXPORT void pool_region_info_free(struct pool_region_info *info);
POOL_EXPORT uint64_t pool_region_info_size(const struct pool_region_info *info);
POOL_EXPORT const char *pool_region_info_class(const struct pool_region_info *info);
POOL_EXPORT const char *pool_region_info_placement(const struct pool_region_info *info);
POOL_EXPORT unsigned pool_region_info_mode(const struct pool_region_info *info);
POOL_EXPORT uint32_t pool_region_info_uid(const struct pool_region_info *info);
POOL_EXPORT uint32_t pool_region_info_gid(const struct pool_region_info *info);
POOL_EXPORT uint32_t pool_region_info_leases(const struct pool_region_info *info);
/* Number of distinct lender nodes (0 when the caller may not read the region). */
POOL_EXPORT uint32_t pool_region_info_nodes(const struct pool_region_info *info);
POOL_EXPORT uint64_t pool_region_size(const struct pool_region *region);
/* The region's global virtual address. */
POOL_EXPORT uint64_t pool_region_gva(const struct pool_region *region);
/* Copy len bytes at offset of the region into buf. */
POOL_EXPORT int pool_region_read(struct pool_region *region, uint64_t offset, void *buf,
				 size_t len);
/* Copy len bytes from buf to offset of the region; visible to others on return. */
POOL_EXPORT int pool_region_write(struct pool_region *region, uint64_t offset, const void *buf,
				  size_t len);
/* A pointer to the whole region for load/store; -EREMOTE unless it lives on this node. */
POOL_EXPORT int pool_region_map(struct pool_region *region, void **ret_addr);

/*
 * Batches: many reads and writes in flight, one wait. Each call starts its
 * transfer at once; pool_batch_wait() returns when all are complete (writes
 * visible to others) with the first error, and the batch can be used again.
 * Buffers must stay valid until then. A batch belongs to one thread.
 */
POOL_EXPORT int pool_batch_new(struct pool *pool, struct pool_batch **ret_batch);
POOL_EXPORT void pool_batch_free(struct pool_batch *batch);
POOL_EXPORT int pool_batch_read(struct pool_batch *batch, struct pool_region *region,
				uint64_t offset, void *buf, size_t len);
POOL_EXPORT int pool_batch_write(struct pool_batch *batch, struct pool_region *region,
				 uint64_t offset, const void *buf, size_t len);
POOL_EXPORT int pool_batch_wait(struct pool_batch *batch);

/* 64-bit atomics on an 8-byte aligned offset; *ret_old gets the previous value. */
POOL_EXPORT int pool_region_fetch_add(struct pool_region *region, uint64_t offset, uint64_t add,
				      uint64_t *ret_old);
POOL_EXPORT int pool_region_compare_swap(struct pool_region *region, uint64_t offset,
					 uint64_t expect, uint64_t desired, uint64_t *ret_old);

/*
 * KV cache: namespaces of keys (byte strings up to 256 bytes, e.g. block
 * hashes) to values (bytes, up to 64 MiB) stored in pool memory. A put is
 * reserve, one-sided write, commit: a reader never sees a partial value.
 * A get pins the value while it is read. pool_kv_get() returns 0 and the
 * value's length, or -ENOENT for a miss (evicted values and values on a lost
 * lender are misses too).
 */
/* Open a namespace (created with pool_kv_create() or poolctl kv create). */
POOL_EXPORT int pool_kv_open(struct pool *pool, const char *ns, struct pool_kv **ret_kv);
POOL_EXPORT void pool_kv_close(struct pool_kv *kv);
/*
 * Create a namespace holding at most capacity bytes of values in DRAM; the
 * least recently used beyond it spill to the lenders' pmem tier, or with
 * POOL_KV_DRAM_ONLY are evicted. With POOL_KV_PERSISTENT the values live in
 * the lenders' pmem tier and survive restarts. With POOL_KV_NO_EVICT a full
 * namespace refuses puts (-ENOSPC) instead of evicting. POOL_KV_REPLICAS(n)
 * keeps each value on n lenders (1 to 4): gets still hit when one dies.
 */
#define POOL_KV_DRAM_ONLY 0x1u
#define POOL_KV_PERSISTENT 0x2u
#define POOL_KV_NO_EVICT 0x4u
#define POOL_KV_SHARDED 0x8u
#define POOL_KV_REPLICAS(n) (((unsigned)(n)&0xfu) << 8)
/* Its permission bits (owner: the caller; default 0600), as for regions. */
#define POOL_KV_MODE(m) (((((unsigned)(m)) & 0777u) | 01000u) << 16)
POOL_EXPORT int pool_kv_create(struct pool *pool, const char *ns, uint64_t capacity,
			       unsigned flags);
POOL_EXPORT int pool_kv_drop(struct pool *pool, const char *ns);
POOL_EXPORT int pool_kv_put(struct pool_kv *kv, const void *key, size_t klen, const void *value,
			    size_t vlen);
/*
 * A put that pins what it writes against eviction: POOL_KV_PIN_SOFT keeps
 * the values over the namespace's unpinned ones (they are evicted only when
 * none of those can be), POOL_KV_PIN_HARD from eviction altogether (they
 * go when removed, flushed or overwritten; a namespace full of them refuses
 * puts with -ENOSPC); for pin_ms milliseconds, or with 0 for as long as the
 * value lives. POOL_KV_PIN_NONE unpins; POOL_KV_PIN_KEEP (and every put
 * without a pin) leaves a key's pin as it was.
 */
#define POOL_KV_PIN_KEEP 0u
#define POOL_KV_PIN_NONE 1u
#define POOL_KV_PIN_SOFT 2u
#define POOL_KV_PIN_HARD 3u
#define POOL_KV_PIN_MS_MAX (1ull << 40)
POOL_EXPORT int pool_kv_put_pinned(struct pool_kv *kv, const void *key, size_t klen,
				   const void *value, size_t vlen, unsigned pin, uint64_t pin_ms);
/* Copy the value into buf (up to buflen); *ret_vlen gets its full length. */
POOL_EXPORT int pool_kv_get(struct pool_kv *kv, const void *key, size_t klen, void *buf,
			    size_t buflen, size_t *ret_vlen);
/* 1 if the key is present, 0 if not. */
POOL_EXPORT int pool_kv_exists(struct pool_kv *kv, const void *key, size_t klen);
POOL_EXPORT int pool_kv_remove(struct pool_kv *kv, const void *key, size_t klen);
/*
 * Batches: n keys at once, one round trip to the coordinator each way.
 * ret_status[i] gets 0 or -errno (-ENOENT: miss) per key; the call returns
 * the number of keys that succeeded.
 */
POOL_EXPORT int pool_kv_put_batch(struct pool_kv *kv, size_t n, const void *const *keys,
				  const size_t *klens, const void *const *values,
				  const size_t *vlens, int *ret_status);
POOL_EXPORT int pool_kv_put_batch_pinned(struct pool_kv *kv, size_t n, const void *const *keys,
					 const size_t *klens, const void *const *values,
					 const size_t *vlens, unsigned pin, uint64_t pin_ms,
					 int *ret_status);
POOL_EXPORT int pool_kv_get_batch(struct pool_kv *kv, size_t n, const void *const *keys,
				  const size_t *klens, void *const *bufs, const size_t *buflens,
				  size_t *ret_vlens, int *ret_status);
/*
 * Zero-copy: a value read in place, pinned until released, when it lives
 * in an arena this process maps (else a copy the ref owns); a value written
 * in place (else staged), visible at commit. A ref ends with exactly one
 * of release (acquired), commit or abort (reserved).
 */
POOL_EXPORT int pool_kv_acquire(struct pool_kv *kv, const void *key, size_t klen,
				const void **ret_data, size_t *ret_len,
				struct pool_kv_ref **ret_ref);
POOL_EXPORT int pool_kv_release(struct pool_kv_ref *ref);
POOL_EXPORT int pool_kv_reserve(struct pool_kv *kv, const void *key, size_t klen, size_t vlen,
				void **ret_data, struct pool_kv_ref **ret_ref);
POOL_EXPORT int pool_kv_commit(struct pool_kv_ref *ref);
POOL_EXPORT int pool_kv_commit_pinned(struct pool_kv_ref *ref, unsigned pin, uint64_t pin_ms);
POOL_EXPORT int pool_kv_abort(struct pool_kv_ref *ref);
/* 1 if the ref's data is in place in pool memory, 0 if it is a copy or staging buffer. */
POOL_EXPORT int pool_kv_ref_local(const struct pool_kv_ref *ref);
/* Get a value into, or put one from, [offset, offset + len) of a region. */
POOL_EXPORT int pool_kv_get_region(struct pool_kv *kv, const void *key, size_t klen,
				   struct pool_region *region, uint64_t offset, size_t maxlen,
				   size_t *ret_vlen);
POOL_EXPORT int pool_kv_put_region(struct pool_kv *kv, const void *key, size_t klen,
				   struct pool_region *region, uint64_t offset, size_t len);
/* How many leading keys of an ordered list (a prompt's block hashes) are present. */
POOL_EXPORT int pool_kv_match(struct pool_kv *kv, size_t n, const void *const *keys,
			      const size_t *klens, size_t *ret_count);
/*
 * Chained block hashes of token ids, as inference engines key KV blocks:
 * block i's 16-byte hash is XXH3-128 (seed 0) over parent[16] || salt ||
 * the block's tokens as little-endian uint32, parent being block i-1's hash
 * (the given parent, or 16 zero bytes, for block 0). Only whole blocks are
 * hashed; the number written to ret_hashes (16 bytes each) is returned.
 */
POOL_EXPORT int pool_kv_hash_chain(const uint32_t *tokens, size_t ntokens, size_t block_tokens,
				   const uint8_t *parent, const void *salt, size_t salt_len,
				   uint8_t *ret_hashes, size_t max_hashes);

/*
 * Vector indexes: flat (exact) or HNSW, over float vectors of 1 to 4096
 * dimensions with 64-bit labels, laid out with offsets inside one region
 * that processes on its node map and search in place, while one writer
 * adds. Searches return the k nearest labels, nearest first, and their
 * distances (squared L2; 1 - dot for ip; 1 - cosine for cosine). A region
 * this process cannot map gives -EREMOTE for now.
 */
#define POOL_VEC_FLAT 1u
#define POOL_VEC_HNSW 2u
#define POOL_VEC_L2 1u
#define POOL_VEC_IP 2u
#define POOL_VEC_COSINE 3u
#define POOL_VEC_NONE UINT64_MAX /* label of an unused result slot */
/* pool_vec_open() flags */
#define POOL_VEC_WRITE 0x1u /* become the index's writer */
struct pool_vec;
struct pool_vec_opts;
struct pool_vec_info;
/* Options of a new index (HNSW M 16, ef_construction 200, ef_search 64; mode 0600; local). */
POOL_EXPORT int pool_vec_opts_new(struct pool_vec_opts **ret_opts);
POOL_EXPORT void pool_vec_opts_free(struct pool_vec_opts *opts);
/* 0 keeps a parameter's default. */
POOL_EXPORT int pool_vec_opts_set_hnsw(struct pool_vec_opts *opts, unsigned m,
				       unsigned ef_construction, unsigned ef_search);
POOL_EXPORT int pool_vec_opts_set_mode(struct pool_vec_opts *opts, unsigned mode);
POOL_EXPORT int pool_vec_opts_set_placement(struct pool_vec_opts *opts, const char *placement);
/* The region's class: "pinned" (the default) or "persistent" (the pmem tier: survives restarts). */
POOL_EXPORT int pool_vec_opts_set_class(struct pool_vec_opts *opts, const char *cls);
/* Bytes of region an index needs for n vectors (opts may be NULL). */
POOL_EXPORT int pool_vec_size(unsigned kind, unsigned dim, uint64_t n,
			      const struct pool_vec_opts *opts, uint64_t *ret_size);
/* Create an index in a new region of size bytes; the handle is its writer. */
POOL_EXPORT int pool_vec_create(struct pool *pool, const char *name, unsigned kind, unsigned metric,
				unsigned dim, uint64_t size, const struct pool_vec_opts *opts,
				unsigned flags, struct pool_vec **ret_vec);
/* Open an index to search it, and with POOL_VEC_WRITE to add to it. */
POOL_EXPORT int pool_vec_open(struct pool *pool, const char *name, unsigned flags,
			      struct pool_vec **ret_vec);
/* Close an index: give up the writer token, unmap and end the region's lease. */
POOL_EXPORT int pool_vec_close(struct pool_vec *vec);
POOL_EXPORT int pool_vec_add(struct pool_vec *vec, uint64_t label, const float *vector);
/* n vectors of dim floats each: the number added, fewer than n only if the next one failed. */
POOL_EXPORT int pool_vec_add_batch(struct pool_vec *vec, size_t n, const uint64_t *labels,
				   const float *vectors);
/* Tombstone the vectors under a label: how many, or -ENOENT. */
POOL_EXPORT int pool_vec_remove(struct pool_vec *vec, uint64_t label);
/* The k nearest: the number found; ret_dists may be NULL. */
POOL_EXPORT int pool_vec_search(struct pool_vec *vec, const float *query, unsigned k,
				uint64_t *ret_labels, float *ret_dists);
/* n queries: query i's results at [i * k, (i + 1) * k), its count in ret_counts[i]. */
POOL_EXPORT int pool_vec_search_batch(struct pool_vec *vec, size_t n, const float *queries,
				      unsigned k, uint64_t *ret_labels, float *ret_dists,
				      unsigned *ret_counts);
/* This handle's HNSW search breadth (0: the index's ef_search). */
POOL_EXPORT int pool_vec_set_ef(struct pool_vec *vec, unsigned ef);
/* What an open index is now; free with pool_vec_info_free(). */
POOL_EXPORT int pool_vec_stat(struct pool_vec *vec, struct pool_vec_info **ret_info);
POOL_EXPORT void pool_vec_info_free(struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_kind(const struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_metric(const struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_dim(const struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_m(const struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_ef_construction(const struct pool_vec_info *info);
POOL_EXPORT unsigned pool_vec_info_ef_search(const struct pool_vec_info *info);
/* Vectors added (removed ones included), and removed. */
POOL_EXPORT uint64_t pool_vec_info_count(const struct pool_vec_info *info);
POOL_EXPORT uint64_t pool_vec_info_deleted(const struct pool_vec_info *info);
/* At most this many vectors fit (HNSW: fewer, as upper levels take room too). */
POOL_EXPORT uint64_t pool_vec_info_capacity(const struct pool_vec_info *info);
/* Bytes of the region in use, and in all. */
POOL_EXPORT uint64_t pool_vec_info_used(const struct pool_vec_info *info);
POOL_EXPORT uint64_t pool_vec_info_size(const struct pool_vec_info *info);
/* The pid of the process holding the writer token (0: none). */
POOL_EXPORT uint32_t pool_vec_info_writer(const struct pool_vec_info *info);

/*
 * Snapshots: immutable named memory images (a VMM's guest memory) with an
 * optional state blob, stored once for the whole pool as pages addressed by
 * content (identical pages kept once across all snapshots, zero pages not
 * kept). Restored as a copy-on-write clone of the node's shared copy, or
 * lazily through userfaultfd (Firecracker's UFFD handshake).
 */
struct pool_snap;
struct pool_snap_opts;
struct pool_snap_info;
/* Options of a new snapshot: page size 4096, class "pinned", mode 0600, no parent, no state. */
POOL_EXPORT int pool_snap_opts_new(struct pool_snap_opts **ret_opts);
POOL_EXPORT void pool_snap_opts_free(struct pool_snap_opts *opts);
/* 4096 or 2 MiB; the image length must be a multiple of it. */
POOL_EXPORT int pool_snap_opts_set_page_size(struct pool_snap_opts *opts, uint64_t page_size);
/* "pinned" (DRAM) or "persistent" (the pmem tier: survives restarts). */
POOL_EXPORT int pool_snap_opts_set_class(struct pool_snap_opts *opts, const char *cls);
POOL_EXPORT int pool_snap_opts_set_mode(struct pool_snap_opts *opts, unsigned mode);
/* The snapshot this one was taken on top of (recorded; pages are shared by content anyway). */
POOL_EXPORT int pool_snap_opts_set_parent(struct pool_snap_opts *opts, const char *parent);
POOL_EXPORT int pool_snap_opts_set_diff(struct pool_snap_opts *opts, int diff);
/* The VMM's device/vCPU state, stored with the image (copied). */
POOL_EXPORT int pool_snap_opts_set_state(struct pool_snap_opts *opts, const void *state,
					 size_t len);
/* Store an image from memory, a file (read from offset 0 to its end), or a region. */
POOL_EXPORT int pool_snap_put(struct pool *pool, const char *name, const void *image, uint64_t len,
			      const struct pool_snap_opts *opts);
POOL_EXPORT int pool_snap_put_fd(struct pool *pool, const char *name, int fd,
				 const struct pool_snap_opts *opts);
POOL_EXPORT int pool_snap_put_region(struct pool *pool, const char *name,
				     struct pool_region *region, const struct pool_snap_opts *opts);
/* Delete a snapshot: its pages nobody else uses are freed. */
POOL_EXPORT int pool_snap_remove(struct pool *pool, const char *name);
/* The names of all snapshots, as one malloc'd array of n strings; free with free(). */
POOL_EXPORT int pool_snap_list(struct pool *pool, char ***ret_names, size_t *ret_n);
POOL_EXPORT int pool_snap_open(struct pool *pool, const char *name, struct pool_snap **ret_snap);
POOL_EXPORT void pool_snap_close(struct pool_snap *snap);
POOL_EXPORT uint64_t pool_snap_size(const struct pool_snap *snap);
POOL_EXPORT uint64_t pool_snap_page_size(const struct pool_snap *snap);
/* Copy bytes of the image (any offset and length inside it). */
POOL_EXPORT int pool_snap_read(struct pool_snap *snap, uint64_t offset, void *buf, size_t len);
/* Copy the state blob into buf (up to buflen); *ret_len gets its full length. */
POOL_EXPORT int pool_snap_state(struct pool_snap *snap, void *buf, size_t buflen, size_t *ret_len);
/*
 * A copy-on-write clone: a private mapping of the node's shared copy of the
 * image (made by the first clone on the node, or by poolctl snap place).
 * Unmap it with munmap(addr, pool_snap_size()).
 */
POOL_EXPORT int pool_snap_clone(struct pool_snap *snap, void **ret_addr);
/*
 * The same, usable at once when this call has to make the node's copy: a
 * thread of this process fills the copy, first serving the pages the clone
 * touches (userfaultfd). pool_snap_clone_wait() or pool_snap_close() waits
 * for the fill; do not fork before.
 */
POOL_EXPORT int pool_snap_clone_lazy(struct pool_snap *snap, void **ret_addr);
POOL_EXPORT int pool_snap_clone_wait(struct pool_snap *snap);
/* The node's shared copy as a sealed, read-only memfd, for a VMM to map MAP_PRIVATE. */
POOL_EXPORT int pool_snap_clone_fd(struct pool_snap *snap, int *ret_fd);
/* Make the node's shared copy now (what poolctl snap place runs on each node). */
POOL_EXPORT int pool_snap_place(struct pool_snap *snap);
/*
 * Save a running clone of parent (the mapping pool_snap_clone() gave) as a
 * snapshot of its own: the pages it wrote since it was cloned, laid over
 * parent, which it names as its parent. pool_snap_save_new() makes ready
 * while the clone runs (the memory to copy what it wrote); nothing may
 * write the clone during pool_snap_save_begin(), which finds the pages
 * written and copies them aside; once it returns the clone may run on
 * while pool_snap_save_end() stores the snapshot (the pages the store has
 * cost a reference, not a transfer). pool_snap_save_pages() says how many
 * pages were written; pool_snap_save_free() frees the save, stored or not.
 */
struct pool_snap_save;
POOL_EXPORT int pool_snap_save_new(struct pool_snap *parent, const void *addr,
				   struct pool_snap_save **ret_save);
POOL_EXPORT int pool_snap_save_begin(struct pool_snap_save *save);
POOL_EXPORT uint64_t pool_snap_save_pages(const struct pool_snap_save *save);
POOL_EXPORT int pool_snap_save_end(struct pool_snap_save *save, const char *name,
				   const struct pool_snap_opts *opts);
POOL_EXPORT void pool_snap_save_free(struct pool_snap_save *save);
/*
 * Lazy restore into [addr, addr + size) of this process (page aligned,
 * anonymous, private, not yet touched): pages arrive through userfaultfd
 * when first touched, the recorded working set first. Ends with
 * pool_snap_restore_end(), which waits for nothing and keeps the pages.
 */
#define POOL_SNAP_PREFETCH 0x1u /* place the recorded working set first */
#define POOL_SNAP_RECORD 0x2u	/* add this restore's first touches to the working set */
#define POOL_SNAP_FILL 0x4u	/* fill the rest in the background */
#define POOL_SNAP_REMOTE 0x8u	/* fetch pages from the lenders, not the node's copy */
#define POOL_SNAP_TRACK 0x10u	/* pool_snap_serve(): see writes, for pool_snap_serve_save() */
struct pool_snap_restore;
POOL_EXPORT int pool_snap_restore_lazy(struct pool_snap *snap, void *addr, unsigned flags,
				       struct pool_snap_restore **ret_restore);
POOL_EXPORT int pool_snap_restore_end(struct pool_snap_restore *restore);
/*
 * Serve Firecracker-style UFFD restores of the snapshot: accept on the
 * listening unix socket listen_fd, take each VMM's handshake (guest region
 * mappings as JSON, the userfaultfd as SCM_RIGHTS) and serve its faults;
 * flags as pool_snap_restore_lazy(). Runs until pool_snap_serve_stop() or
 * until max_restores VMMs have come and gone (0: no limit). Returns the
 * number of restores that failed, or -errno.
 */
POOL_EXPORT int pool_snap_serve(struct pool_snap *snap, int listen_fd, unsigned flags,
				unsigned max_restores);
/*
 * Make pool_snap_serve() of snap return: the one running, or else the next
 * one, at once. Safe in a signal handler and from any thread.
 */
POOL_EXPORT void pool_snap_serve_stop(struct pool_snap *snap);
/*
 * Save the sandbox whose VMM (pid vmm) a pool_snap_serve() with
 * POOL_SNAP_TRACK serves on the unix socket path socket, as snapshot name:
 * the pages it wrote since its restore, over the snapshot it was restored
 * from (its parent). Pause the VM first (Firecracker: PATCH /vm Paused)
 * for a save of one instant; the VMM is held for writes only while the
 * pages written since its last save are copied. Returns once the snapshot
 * is stored: 0 with those pages, the pages of the whole diff and the time
 * held (NULL: not wanted), or -errno.
 */
POOL_EXPORT int pool_snap_serve_save(const char *socket, pid_t vmm, const char *name,
				     uint64_t *ret_pages, uint64_t *ret_diff,
				     uint64_t *ret_held_us);
/* What a snapshot is; free with pool_snap_info_free(). */
POOL_EXPORT int pool_snap_stat(struct pool *pool, const char *name,
			       struct pool_snap_info **ret_info);
POOL_EXPORT void pool_snap_info_free(struct pool_snap_info *info);
POOL_EXPORT uint64_t pool_snap_info_size(const struct pool_snap_info *info);
POOL_EXPORT uint64_t pool_snap_info_page_size(const struct pool_snap_info *info);
/* Pages of the image that are all zero (not stored). */
POOL_EXPORT uint64_t pool_snap_info_zero_pages(const struct pool_snap_info *info);
/* Distinct non-zero pages of the image (the pages it needs stored). */
POOL_EXPORT uint64_t pool_snap_info_distinct_pages(const struct pool_snap_info *info);
/* Of those, pages this snapshot's put stored (the rest were in the store already). */
POOL_EXPORT uint64_t pool_snap_info_new_pages(const struct pool_snap_info *info);
POOL_EXPORT uint64_t pool_snap_info_state_len(const struct pool_snap_info *info);
POOL_EXPORT uint64_t pool_snap_info_created_ms(const struct pool_snap_info *info);
POOL_EXPORT uint32_t pool_snap_info_uid(const struct pool_snap_info *info);
POOL_EXPORT const char *pool_snap_info_class(const struct pool_snap_info *info);
POOL_EXPORT const char *pool_snap_info_parent(const struct pool_snap_info *info);
/* Pages in the recorded working set, and restores merged into it. */
POOL_EXPORT uint64_t pool_snap_info_ws_pages(const struct pool_snap_info *info);
POOL_EXPORT uint64_t pool_snap_info_ws_runs(const struct pool_snap_info *info);
/* "sealed", or "writing" while its put runs (or after the put failed: remove it). */
POOL_EXPORT const char *pool_snap_info_state(const struct pool_snap_info *info);
/*
 * After a coordinator restart (admin): tell it again which pages every
 * snapshot holds, so that removes free pages again; pages no snapshot holds
 * are freed (*ret_freed). Fails while a snapshot cannot be read.
 */
POOL_EXPORT int pool_snap_recount(struct pool *pool, uint64_t *ret_freed);
/* Bytes the whole store keeps for all snapshots' pages, per class ("pinned" or "persistent"). */
POOL_EXPORT int pool_snap_store_bytes(struct pool *pool, const char *cls, uint64_t *ret_bytes,
				      uint64_t *ret_pages);

/* Describe an error code returned by any libpool function. */
POOL_EXPORT const char *pool_strerror(int code);
/* The calling thread's message for its last failed libpool call. */
POOL_EXPORT const char *pool_errormsg(void);
/* The library's version string. */
POOL_EXPORT const char *pool_version(void);
/*
 * Where the library's messages go (those that are not a call's error, such
 * as a restore pool_snap_serve() served that failed): fn(level, line, arg),
 * from the thread that logs, a level of syslog(3)'s numbers below and a line
 * without its newline; fn NULL: standard error (the default).
 */
#define POOL_LOG_ERR 3
#define POOL_LOG_WARNING 4
#define POOL_LOG_INFO 6
typedef void pool_log_fn(int level, const char *line, void *arg);
POOL_EXPORT void pool_set_log(pool_log_fn *fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif

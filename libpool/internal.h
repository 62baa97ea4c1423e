/*
 * libpool/internal.h - what libpool's files share. Nothing here is exported.
 */
#ifndef LIBPOOL_INTERNAL_H
#define LIBPOOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "fabric/fabric.h"
#include "libpool/libpool.h"
#include "proto/wire.h"

#define POOL_DEFAULT_SOCKET "/run/poold/poold.sock"
#define POOL_CALL_TIMEOUT_MS 30000
#define REGION_IO_TIMEOUT_MS 30000

struct pool {
	pthread_mutex_t lock; /* serialises calls on the control connection */
	struct wire_client *wc;
	pthread_mutex_t data_lock; /* serialises the transfer window */
	char *win;		   /* the window shared with poold (xfer.c), made on first use */
	uint64_t win_size;
	uint32_t win_id;
	struct pool_buf *bufs;	     /* the windows of pool_buf_alloc() (under data_lock) */
	struct pool_region *regions; /* open regions, for notices (under lock) */
	/*
	 * Local arenas mapped once, whole, for the regions that live in them
	 * (under lock). refused: poold would not pass them to this caller.
	 */
	struct pool_arena_map {
		uint32_t arena;
		void *base;
		size_t len;
	} amaps[8];
	size_t namaps;
	bool amap_refused;
};

/* error.c */
int pool_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* log.c: a message to the application's log callback, or to stderr (pool_set_log()). */
void pool_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* region.c */
void pool_region_notice(void *arg, uint16_t type, const uint8_t *payload, size_t len);
void pool_arenas_unmap(struct pool *pool);
int pool_arena_map(struct pool *pool, uint32_t arena, void **ret_base, uint64_t *ret_size);
int pool_region_window(struct pool_region *r, uint64_t off, size_t len, bool store,
		       const char *what, void **ret_addr);

/* xfer.c: transfers poold carries, through the window */
enum {
	POOL_XFER_READ = POOL__XFER_KIND__XFER_KIND_READ,
	POOL_XFER_WRITE = POOL__XFER_KIND__XFER_KIND_WRITE,
	POOL_XFER_FADD = POOL__XFER_KIND__XFER_KIND_FETCH_ADD,
	POOL_XFER_CSWAP = POOL__XFER_KIND__XFER_KIND_COMPARE_SWAP
};
struct pool_xfer_item {
	unsigned op;
	bool place; /* a KV place (node, arena, off), else a region (by id, at off) */
	uint64_t region;
	uint32_t node, arena;
	uint64_t off;
	void *buf;    /* read or write: the caller's bytes */
	uint64_t len; /* 0 for atomics */
	uint64_t
	    max_op; /* the most one op may carry (striped regions: pieces poold splits), 0: any */
	uint64_t a, b; /* atomics' operands */
	int status;    /* out: 0 or -errno */
	uint64_t old;  /* out: an atomic's old value */
};
int pool_xfer_run(struct pool *pool, struct pool_xfer_item *items, size_t n);
int pool_xfer_lay(struct pool *pool, size_t n, void *const *bufs, const size_t *lens,
		  uint32_t *ret_window, uint64_t *offs, char **ret_stage);
void pool_xfer_close(struct pool *pool);

/* kv.c */
void kv_set_holder(struct pool_kv *kv, const char *region);
/*
 * pool_kv_put_batch() of values a dedup namespace most likely has (a
 * snapshot's pages its parent holds): the two-phase way, so that a value
 * the store has costs its key, not a copy of its bytes (the one-request
 * way copies every value out first); one it lacks is written all the same.
 */
int kv_put_batch_known(struct pool_kv *kv, size_t n, const void *const *keys, const size_t *klens,
		       const void *const *values, const size_t *vlens, int *ret_status);
int kv_count_op(struct pool_kv *kv, Pool__KvOp op, size_t n, const void *const *keys,
		const size_t *klens, uint64_t *ret_count);
int kv_ns_usage(struct pool *pool, const char *ns, uint64_t *ret_bytes, uint64_t *ret_values);

/* pool.c */
int pool_call(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	      ProtobufCMessage **ret_reply);
int pool_call_fd(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
		 ProtobufCMessage **ret_reply, int *ret_fd);
int pool_send(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type);

#endif

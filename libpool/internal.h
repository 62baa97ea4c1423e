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

struct pool_node;

struct pool {
	pthread_mutex_t lock; /* serialises calls on the control connection */
	struct wire_client *wc;
	pthread_mutex_t data_lock; /* serialises the fabric data path */
	struct fab_ctx *fab;	   /* made on the first remote access */
	struct pool_node *nodes;   /* endpoints to lenders, by node id */
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
	/* The one-sided transfers told to poold (under lock), and when. */
	struct fab_rma_stats rma_told;
	uint64_t rma_told_ms; /* read without the lock too: atomically */
};

/* error.c */
int pool_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* pool.c */
void pool_rma_report(struct pool *pool, bool closing);

/* region.c */
void pool_nodes_free(struct pool *pool);
void pool_region_notice(void *arg, uint16_t type, const uint8_t *payload, size_t len);
void pool_arenas_unmap(struct pool *pool);
int pool_arena_map(struct pool *pool, uint32_t arena, uint64_t size, void **ret_base);
int pool_node_get(struct pool *pool, const Pool__NodeInfo *info, struct pool_node **ret);
int pool_region_window(struct pool_region *r, uint64_t off, size_t len, bool store,
		       const char *what, void **ret_addr);

/* A lender this process talks to: its endpoint and the rkeys of its arenas. */
struct pool_node {
	struct pool_node *next;
	uint32_t id;
	uint64_t incarnation;
	struct fab_ep *ep;
	size_t narenas;
	struct pool_node_arena {
		uint32_t id;
		uint64_t addr;
		uint64_t size;
		struct fab_rkey *rkey;
	} *arenas;
};

/* kv.c */
void kv_set_holder(struct pool_kv *kv, const char *region);
int kv_count_op(struct pool_kv *kv, const char *op, size_t n, const void *const *keys,
		const size_t *klens, uint64_t *ret_count);
int kv_ns_usage(struct pool *pool, const char *ns, uint64_t *ret_bytes, uint64_t *ret_values);

/* pool.c */
int pool_call(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	      ProtobufCMessage **ret_reply);
int pool_call_fd(struct pool *pool, uint16_t type, const ProtobufCMessage *req,
		 uint16_t reply_type, ProtobufCMessage **ret_reply, int *ret_fd);
int pool_send(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type);

#endif

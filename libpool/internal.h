/*
 * libpool/internal.h - what libpool's files share. Nothing here is exported.
 */
#ifndef LIBPOOL_INTERNAL_H
#define LIBPOOL_INTERNAL_H

#include <pthread.h>

#include "libpool/libpool.h"
#include "proto/wire.h"

#define POOL_DEFAULT_SOCKET "/run/poold/poold.sock"
#define POOL_CALL_TIMEOUT_MS 30000

struct pool {
	pthread_mutex_t lock; /* serialises calls on the control connection */
	struct wire_client *wc;
};

/* error.c */
int pool_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* pool.c */
int pool_call(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	      ProtobufCMessage **ret_reply);

#endif

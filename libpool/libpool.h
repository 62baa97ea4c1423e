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

#ifdef __cplusplus
extern "C" {
#endif

#if defined(POOL_BUILDING_LIB)
#define POOL_EXPORT __attribute__((visibility("default")))
#else
#define POOL_EXPORT
#endif

/* Library-only error codes; everything else is a negative errno. */
#define POOL_E_FIRST (-100000)
#define POOL_EVERSION (-100001)   /* peer speaks another protocol version */
#define POOL_EPROTOCOL (-100002)  /* peer sent a malformed or unexpected message */
#define POOL_ECOORD (-100003)     /* coordinator unavailable */
#define POOL_ELOST (-100004)      /* the data's lender is gone */
#define POOL_E_LAST (-100004)

struct pool;
struct pool_status;

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

/* Describe an error code returned by any libpool function. */
POOL_EXPORT const char *pool_strerror(int code);
/* The calling thread's message for its last failed libpool call. */
POOL_EXPORT const char *pool_errormsg(void);
/* The library's version string. */
POOL_EXPORT const char *pool_version(void);

#ifdef __cplusplus
}
#endif
#endif

/*
 * fabric.h - the fabric layer: UCX context/worker, endpoints, registered
 * memory, remote keys, one-sided put/get/atomics and worker wake-up inside a
 * libevent loop.
 *
 * This is the only interface the rest of the tree uses; no UCX type appears
 * here and no file outside fabric/ includes a UCX header. Every function
 * returns 0 (or a count) on success and -errno on failure; out-parameters are
 * named ret_*, come last and are written only on success. The layer never
 * prints: UCX status codes are turned into -errno by fab_status_errno().
 *
 * Threading: a fab_ctx and everything made from it is used by one thread at
 * a time unless fab_config.thread_multi is set; then operations may be
 * issued from any thread, but one thread should do the progress (and an
 * attached event_base needs evthread_use_pthreads()).
 *
 * Callbacks (fab_done_cb, fab_ep_err_cb) run inside fab_ctx_progress(); they
 * may issue new operations but must not destroy the endpoint or context they
 * were called for.
 *
 * UCX's own log is set to "fatal" by fab_ctx_create() unless UCX_LOG_LEVEL
 * is in the environment, since the fabric layer must not print.
 *
 * Progress: UCX over TCP (and software atomics on any transport) needs the
 * *target* worker to progress too. A process that lends memory must keep its
 * fab_ctx progressing: fab_ctx_attach() to its event loop does this.
 */
#ifndef POOL_FABRIC_H
#define POOL_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

struct fab_ctx;	 /* one UCP context + one worker */
struct fab_ep;	 /* endpoint to a peer worker */
struct fab_mem;	 /* registered local memory */
struct fab_rkey; /* unpacked remote key, tied to one endpoint */

/* Options for fab_ctx_create(); zero-initialise and set what you need. */
struct fab_config {
	const char *transports; /* UCX_TLS style list ("tcp", "shm", "posix,cma,self"); NULL = UCX
				   default */
	const char *devices;	/* UCX_NET_DEVICES style list ("lo", "eth0"); NULL = all */
	const char *tcp_ports;	/* "LO-HI": the TCP listener's port range; NULL = any */
	int thread_multi;	/* nonzero: the ctx may be used from several threads */
	size_t tcp_seg_size;	/* UCX TCP TX/RX segment size; 0 = our tuned default */
	unsigned op_timeout_ms; /* bound on blocking calls; 0 = 10000 */
	size_t rma_chunk;	/* split put/get above this size into chunks in flight together;
				   0 = never (chunking gave no consistent gain on TCP loopback;
				   pool-bench-fabric -C) */
	const char *const *ucx_opts; /* extra "KEY=VALUE" UCX settings, NULL-terminated, may be
					NULL; no UCX_ prefix, and transport keys without theirs
					("SNDBUF=4M", not "TCP_SNDBUF") */
};

/* Completion callback of a non-blocking operation: status 0 or -errno. */
typedef void (*fab_done_cb)(void *arg, int status);
/* Called once, from progress, when an endpoint fails; err is -errno. */
typedef void (*fab_ep_err_cb)(struct fab_ep *ep, int err, void *arg);

/* status.c */
/* Convert a UCX ucs_status_t (passed as int) to 0 or -errno. */
int fab_status_errno(int ucs_status);

/* ctx.c */
/* Create a context and its worker (features RMA, AMO64, WAKEUP). */
int fab_ctx_create(const struct fab_config *cfg, struct fab_ctx **ret_ctx);
/* Destroy a context; endpoints, memory and rkeys made from it must be gone. */
void fab_ctx_destroy(struct fab_ctx *ctx);
/* Copy of the worker address to give to peers; free() it. */
int fab_ctx_address(struct fab_ctx *ctx, void **ret_addr, size_t *ret_len);
/* The worker's wake-up fd: readable when fab_ctx_progress() has work. */
int fab_ctx_event_fd(struct fab_ctx *ctx, int *ret_fd);
/* Arm the wake-up fd: 0 = armed (safe to sleep on it), -EAGAIN = progress again. */
int fab_ctx_arm(struct fab_ctx *ctx);
/* Progress the worker once; returns the number of events handled. */
unsigned fab_ctx_progress(struct fab_ctx *ctx);
/* How many calls of progress moved something so far: it changes while traffic flows. */
uint64_t fab_ctx_busy(const struct fab_ctx *ctx);
/* Human readable list of the transports the context was configured with. */
int fab_ctx_transports(struct fab_ctx *ctx, char *buf, size_t len);
/*
 * Whether every remote write into this context's registered memory is
 * applied by its own worker's progress, never by another process or a
 * device while this process runs other code.
 */
bool fab_ctx_writes_in_progress(const struct fab_ctx *ctx);

/* The one-sided transfers a context issued (put and get, each counted once however split). */
struct fab_rma_stats {
	uint64_t get_ops, get_bytes;
	uint64_t put_ops, put_bytes;
};
void fab_ctx_rma_stats(struct fab_ctx *ctx, struct fab_rma_stats *st);

/* wait.c */
/* Progress until *done becomes nonzero, sleeping on the wake-up fd; -ETIMEDOUT after timeout_ms. */
int fab_ctx_wait(struct fab_ctx *ctx, const volatile int *done, unsigned timeout_ms);

/* evloop.c */
/* Drive the worker from a libevent loop: progress on wake-up, re-arm, never miss a completion. */
int fab_ctx_attach(struct fab_ctx *ctx, struct event_base *base);
/* Remove the worker from its libevent loop (also done by fab_ctx_destroy). */
void fab_ctx_detach(struct fab_ctx *ctx);

/* ep.c */
/* Connect to a peer worker address; cb (may be NULL) is told once if the endpoint fails. */
int fab_ep_create(struct fab_ctx *ctx, const void *addr, size_t len, fab_ep_err_cb cb, void *arg,
		  struct fab_ep **ret_ep);
/* 0 while the endpoint is usable, else the -errno it failed with. */
int fab_ep_error(const struct fab_ep *ep);
/*
 * Close the endpoint (forced if it failed) without waiting; pending operations complete with
 * -ECANCELED or their result.
 */
void fab_ep_destroy(struct fab_ep *ep);
/* Close without flushing (forced), for a peer that is gone or stuck; never waits. */
void fab_ep_abort(struct fab_ep *ep);
/* Describe the transports the endpoint uses ("tcp/lo", "cma/memory posix/memory"), if UCX tells. */
int fab_ep_transports(struct fab_ep *ep, char *buf, size_t len);

/* mem.c */
/* Register [addr, addr+len) for remote access. */
int fab_mem_register(struct fab_ctx *ctx, void *addr, size_t len, struct fab_mem **ret_mem);
/* Allocate registered memory that same-host peers reach at memcpy speed (see mem.c). */
int fab_mem_alloc(struct fab_ctx *ctx, size_t len, struct fab_mem **ret_mem, void **ret_addr);
/* Pack a remote key for the memory, to give to peers; free() it. */
int fab_mem_rkey_pack(struct fab_mem *mem, void **ret_buf, size_t *ret_len);
/* Deregister memory (freeing it if fab_mem_alloc made it); peers holding its rkey lose access. */
void fab_mem_deregister(struct fab_mem *mem);

/* rkey.c */
/* Unpack a peer's packed rkey for use on ep. */
int fab_rkey_unpack(struct fab_ep *ep, const void *buf, size_t len, struct fab_rkey **ret_rkey);
/* Release an unpacked rkey (before its endpoint is destroyed). */
void fab_rkey_destroy(struct fab_rkey *rkey);

/* rma.c */
/*
 * Non-blocking put/get. 0: queued, cb is called exactly once later from
 * fab_ctx_progress() (never from inside this call); -errno: nothing queued,
 * cb is never called. buf must stay valid until cb.
 */
/* Write len bytes from buf to raddr at the peer. */
int fab_put_nb(struct fab_ep *ep, const void *buf, size_t len, uint64_t raddr,
	       struct fab_rkey *rkey, fab_done_cb cb, void *arg);
/* Read len bytes at raddr at the peer into buf. */
int fab_get_nb(struct fab_ep *ep, void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey,
	       fab_done_cb cb, void *arg);
/* Blocking put: returns when buf may be reused (use fab_flush for remote completion). */
int fab_put(struct fab_ep *ep, const void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey);
/* Blocking get: returns when the data is in buf. */
int fab_get(struct fab_ep *ep, void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey);
/* Non-blocking flush: cb once, from progress, when all issued on ep is complete at the target. */
int fab_flush_nb(struct fab_ep *ep, fab_done_cb cb, void *arg);
/* Blocking flush: every put/get/atomic issued on ep so far is complete at the target. */
int fab_flush(struct fab_ep *ep);

/* amo.c */
/*
 * 64-bit atomics on an 8-byte aligned remote word. Transports without device
 * atomics (tcp, shm) use UCX software atomics, served by the target's
 * progress. -ENOTSUP means the endpoint/rkey cannot do atomics at all:
 * callers detect support by trying one fadd of 0 and checking for -ENOTSUP.
 */
/* Fetch-and-add: *ret_old = old value, remote += add. */
int fab_atomic_fadd64(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t add,
		      uint64_t *ret_old);
/* Compare-and-swap: if remote == expect then remote = desired; *ret_old = old value. */
int fab_atomic_cswap64(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t expect,
		       uint64_t desired, uint64_t *ret_old);

/* The same without waiting: 0, then cb once from progress (*ret_old written first), or -errno. */
int fab_atomic_fadd64_nb(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t add,
			 uint64_t *ret_old, fab_done_cb cb, void *arg);
int fab_atomic_cswap64_nb(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t expect,
			  uint64_t desired, uint64_t *ret_old, fab_done_cb cb, void *arg);

#endif /* POOL_FABRIC_H */

/*
 * fabric.h - the fabric layer: the checked transport (links between
 * processes that prove a shared key, every request checked by its target:
 * link*.c), and UCX (context/worker, endpoints, registered memory, remote
 * keys, one-sided put/get/atomics and worker wake-up inside a libevent
 * loop) for fabrics that enforce keys in hardware.
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
struct sockaddr;

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

/*
 * link*.c: the checked transport, for fabrics that enforce no keys in
 * hardware (TCP, shared memory). Nothing here is one-sided: every transfer
 * is a request that the target's owner checks (fab_link_ops.check) before
 * a byte moves, on a TCP connection whose two ends proved they know the
 * cluster's key. The bytes move straight between the socket and the memory
 * the check names, or the requester's buffer: never through a copy of
 * their own. See link_int.h for the wire.
 *
 * Callbacks run from the event loop, never from inside the call that
 * queued the operation; a link closed or failed completes what it had
 * pending with -ECANCELED or its error, later, from the loop.
 */
#define FAB_LINK_KEY_LEN 32
#define FAB_LINK_MAX_LEN (16u << 20) /* the largest request a target takes */
#define FAB_LINK_CALL_MAX (4u << 20) /* the largest call, and answer, a target takes */

struct fab_links; /* this process's listener and all its links */
struct fab_link;  /* a link to one target */

/* What the requests of a link ask for, as the wire numbers them. */
enum fab_link_op {
	FAB_LINK_READ = 1,
	FAB_LINK_WRITE = 2,
	FAB_LINK_FADD = 3,  /* 64-bit fetch-and-add of a */
	FAB_LINK_CSWAP = 4, /* 64-bit compare (a) and swap (b) */
	FAB_LINK_CALL = 5,  /* len bytes to the owner; an answer of at most a back */
};

/* A call's place among its link's replies, held until the owner answers it. */
struct fab_link_answer;

/* Who is at the other end of a link, as its hello said and its proof showed. */
struct fab_link_peer {
	uint32_t node;
	uint64_t incarnation;
	uint64_t epoch; /* the requester's membership epoch (0 at a target) */
};

/* One request as a target sees it: len bytes at off in the extent at ext of arena. */
struct fab_link_req {
	enum fab_link_op op;
	uint32_t arena;
	uint64_t ext, off, len;
	uint64_t a, b;
};

/* What a target's owner decides. */
struct fab_link_ops {
	/*
	 * Where the bytes of req from peer are: 0 and *ret_ptr, or -errno to
	 * refuse it. -EAGAIN (only while !last) means "not known yet": the link
	 * reads nothing more until fab_links_kick() or its wait ends, then asks
	 * again (last = true on the final try). -ECONNABORTED closes the link:
	 * its peer may be served no more on it (fenced). Called again before
	 * every slice of a transfer that takes several; its answer must not
	 * change the memory.
	 */
	int (*check)(void *arg, const struct fab_link_peer *peer, const struct fab_link_req *req,
		     bool last, void **ret_ptr);
	/*
	 * Something was refused: a stranger's handshake, a request, a link over
	 * a limit. who is the peer's address (and node, once known); err the
	 * reason. For the owner's (rate-limited) log.
	 */
	void (*refused)(void *arg, const char *who, const char *what, int err);
	/*
	 * A call from peer: in, len bytes, readable only until it returns.
	 * The owner answers it with fab_link_answer(), at once or later, with
	 * at most max bytes; the replies behind it wait for that answer (they
	 * go in order). It must not close links. No check is asked first: the
	 * owner decides what peer may call. NULL: calls are refused.
	 */
	void (*call)(void *arg, const struct fab_link_peer *peer, const void *in, size_t len,
		     size_t max, struct fab_link_answer *ans);
};

struct fab_links_config {
	const char *bind;	   /* numeric address to listen on; NULL = every address */
	uint16_t port_lo, port_hi; /* the listener's port range; 0, 0 = any */
	uint8_t key[FAB_LINK_KEY_LEN];
	struct fab_link_peer self; /* this process as a requester and as a target */
	unsigned handshake_ms;	   /* a hello must come within it; 0 = 2000 */
	unsigned wait_ms;	   /* how long a request waits for its check's yes; 0 = 2000 */
	unsigned stall_ms;   /* a target whose replies are not read is closed after it; 0 = 30000 */
	unsigned max_unauth; /* connections in their handshake at once; 0 = 64 */
	unsigned max_unauth_per_addr; /* ... from one address; 0 = 8 */
	unsigned max_links;	      /* authenticated inbound links; 0 = 1024 */
	unsigned slice;		      /* bytes a link moves per turn of the loop; 0 = 4 MiB */
	int sndbuf; /* each link socket's SO_SNDBUF; 0 = 512 KiB, -1 = autotuned */
	const struct fab_link_ops *ops;
	void *arg;
};

/* Counts, for the metrics. */
struct fab_link_stats {
	uint64_t read_ops, read_bytes, write_ops, write_bytes, atomic_ops, call_ops; /* issued */
	uint64_t served_ops, served_bytes; /* requests this target carried out */
	uint64_t refused_requests;	   /* requests its owner refused */
	uint64_t refused_links;		   /* connections closed unauthenticated or over a limit */
	uint64_t moved; /* bytes through the sockets, either way: it changes while
			   links are busy */
};

/* Listen (if cfg->bind or any address) and serve checked requests from authenticated peers. */
int fab_links_create(struct event_base *base, const struct fab_links_config *cfg,
		     struct fab_links **ret_links);
/* Close every link and the listener; calls still pending are dropped (no callback runs). */
void fab_links_destroy(struct fab_links *ls);
/* The port the listener took. */
uint16_t fab_links_port(const struct fab_links *ls);
/* This process's identity changed (it joined again): new links say so. */
void fab_links_set_self(struct fab_links *ls, const struct fab_link_peer *self);
/* What the owner's checks depend on changed: requests waiting for one are checked again. */
void fab_links_kick(struct fab_links *ls);
/* Close every inbound link from node (it is fenced), dropping what it asked; how many. */
unsigned fab_links_drop_peer(struct fab_links *ls, uint32_t node);
void fab_links_stats(const struct fab_links *ls, struct fab_link_stats *ret);

/* A link to the target to (node, incarnation) at addr ("a.b.c.d:port", "[v6]:port"). */
int fab_link_open(struct fab_links *ls, const struct fab_link_peer *to, const char *addr,
		  struct fab_link **ret_link);
/* Close it; what it had pending completes with -ECANCELED, from the loop. */
void fab_link_close(struct fab_link *k);
/* 0 while the link is usable, else the -errno it failed with. */
int fab_link_error(const struct fab_link *k);
/* Whether nothing is queued or waiting for its reply on the link. */
bool fab_link_idle(const struct fab_link *k);
/* Read len bytes at off in the extent at ext of arena into buf. */
int fab_link_read(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		  void *buf, fab_done_cb cb, void *arg);
/* Write len bytes of buf there; cb comes once the target has them in its memory. */
int fab_link_write(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		   const void *buf, fab_done_cb cb, void *arg);
/* 64-bit atomics on the 8-byte aligned word there; *ret_old is written before cb. */
int fab_link_fadd(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t add,
		  uint64_t *ret_old, fab_done_cb cb, void *arg);
int fab_link_cswap(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t expect,
		   uint64_t desired, uint64_t *ret_old, fab_done_cb cb, void *arg);

/*
 * Call the target's owner (fab_link_ops.call) with len bytes of in; its
 * answer, at most max bytes, goes into out and its length into *ret_len
 * before cb. Both buffers stay the caller's until cb.
 */
int fab_link_call(struct fab_link *k, const void *in, size_t len, void *out, size_t max,
		  size_t *ret_len, fab_done_cb cb, void *arg);
/*
 * Answer a call: status 0 with len bytes of out (copied), or -errno.
 * Frees ans; a call whose link closed meanwhile is only forgotten.
 */
void fab_link_answer(struct fab_link_answer *ans, int status, const void *out, size_t len);

#endif /* POOL_FABRIC_H */

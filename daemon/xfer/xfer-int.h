/*
 * daemon/xfer/xfer-int.h - what the files of client transfers share: windows
 * (xfer-window.c), requests (xfer.c) and the tenants' shares of the loop
 * and of the ways to other lenders (xfer-share.c). Nothing else includes
 * it; the rest of poold uses poold.h's xfer_* functions.
 */
#ifndef POOLD_XFERINT_H
#define POOLD_XFERINT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "daemon/xfer/xfer.h"

/*
 * A request is started in chunks, each checked against the session's
 * grants when it starts: a copy on this node of XFER_COPY bytes at most,
 * or up to XFER_CHUNK bytes carried to other lenders. A turn of the loop
 * starts chunks for XFER_TURN_US at most, and XFER_TURN_BYTES of work
 * (copies count their bytes, a chunk carried XFER_CARRY_COST, an op at
 * least XFER_OP_COST), XFER_STEP_BYTES of it for one session before the
 * next; a copy can take longer than its bytes say when poold first touches
 * the pages of a window (faults: 20 us a page on a loaded VM), hence the
 * clock.
 */
#define XFER_CHUNK (1u << 20)
#define XFER_COPY (256u << 10)
#define XFER_TURN_US 1000
#define XFER_TURN_BYTES (4u << 20)
#define XFER_STEP_BYTES (1u << 20)
#define XFER_CARRY_COST (64u << 10)
#define XFER_OP_COST (4u << 10)

#define XFER_MAX_OPS 4096
#define XFER_REQUESTS_PER_SESSION 4 /* in progress at once; more are refused (EBUSY) */
#define XFER_REQUESTS_PER_UID 64

/* A window: a sealed memfd both poold and the client map. */
struct xfer_window {
	LIST_ENTRY(xfer_window) entry;
	uint64_t session;
	uid_t uid; /* of its session: bounded by control.max_window_bytes_per_uid */
	uint32_t id;
	char *base;
	size_t size;
	struct fab_mem *mem;
	unsigned busy; /* requests that move bytes into or out of it */
	bool closed;   /* its session ended, or it was retired: unmapped once not busy */
};

int xfer_window_request(struct req *r, const ProtobufCMessage *msg);
int xfer_window_take(uint64_t session, uint32_t id, struct xfer_window **ret_w);
void xfer_window_put(struct xfer_window *w);
void xfer_window_session_end(uint64_t session);
void xfer_window_close_all(void);

/* One op of a request, as checked when it came. */
struct xfer_op {
	struct xfer *x;
	uint64_t off;		 /* in the region; a KV place's within */
	uint64_t len, done;	 /* bytes to move (8 for an atomic), and started */
	uint64_t a, b;		 /* an atomic's operands */
	uint64_t region;	 /* its region; a KV place's offset in its arena */
	uint32_t node, arena;	 /* a KV place's */
	char *buf;		 /* where its bytes are in the window */
	struct xfer_window *win; /* held busy */
	uint32_t last_node;	 /* the node of its last chunk carried */
	uint32_t pending;	 /* its chunks carried and not back */
	uint8_t kind;		 /* XferKind */
	bool place;		 /* a KV place rather than a region */
};

/* One Xfer request in progress. */
struct xfer {
	TAILQ_ENTRY(xfer) entry; /* among its session's */
	struct xfer_share *share;
	struct poold *pd;
	struct req *r;
	size_t n, next; /* its ops, and the first not fully started */
	int32_t *status;
	uint64_t *old;
	struct xfer_op *ops;
	struct xfer_flush {
		uint32_t node;
		uint64_t gen;
	} * flush; /* ways written on (fabric.transfer = rma): flushed before the reply */
	size_t nflush, flush_cap;
	unsigned outstanding; /* carried chunks and flushes not back, and a step running */
	unsigned carrying;    /* of those, carried chunks */
	bool flushing, replied;
	bool lost_wait;	     /* lenders went silent: their ways were closed, the chunks wait */
	bool stopped;	     /* nothing more is started (answered anyway, or its session ended) */
	bool cancelled;	     /* its session ended: no reply */
	struct event *timer; /* no progress for a heartbeat window: the lender is gone */
	struct timeval window;
};

enum xfer_step { XFER_STEP_MORE, XFER_STEP_DONE, XFER_STEP_WAIT };
enum xfer_step xfer_step(struct xfer *x, size_t *budget, uint64_t until);
void xfer_cancel(struct xfer *x);

/* xfer-share.c */
enum xfer_wait { XFER_WAIT_NONE, XFER_WAIT_SESSION, XFER_WAIT_UID };
int xfer_share_join(struct xfer *x, uint64_t session, uid_t uid, char *why, size_t whylen);
void xfer_share_leave(struct xfer *x);
void xfer_share_ready(struct xfer *x);
bool xfer_share_room(struct xfer *x, uint64_t len);
void xfer_share_wait_own(struct xfer *x);
void xfer_share_carry(struct xfer *x, uint64_t len);
void xfer_share_back(struct xfer *x, uint64_t len);
void xfer_share_session_end(uint64_t session);
void xfer_share_close(void);
void xfer_share_stats(uint64_t ret[XFER_STATS]);

#endif

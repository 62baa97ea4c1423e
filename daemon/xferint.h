/*
 * daemon/xferint.h - what the files of client transfers share: windows
 * (xfer-window.c) and requests (xfer.c). Nothing else includes it; the
 * rest of poold uses poold.h's xfer_* functions.
 */
#ifndef POOLD_XFERINT_H
#define POOLD_XFERINT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "daemon/poold.h"

#define XFER_MAX_OPS 4096

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

#endif

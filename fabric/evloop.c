/* evloop.c - a fabric worker inside a libevent loop, woken by its event fd. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "fabric/ucx_int.h"

/* Rounds of progress per wake-up before yielding to other events. */
#define FAB_EV_ROUNDS 64

struct fab_evloop {
	struct event *ev;
	int kicked;
};

/*
 * Progress until the worker arms: only then can the loop sleep without
 * missing a completion. Under sustained traffic, yield after a bounded number
 * of rounds and re-activate ourselves so other events get their turn.
 */
static void fab_evloop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fab_ctx *ctx = arg;
	struct fab_evloop *ev = ctx->ev;

	ev->kicked = 0;
	for (int round = 0; round < FAB_EV_ROUNDS; round++) {
		while (fab_ctx_progress(ctx) != 0)
			;
		if (ctx->ev == NULL)
			return; /* a callback detached us */
		int rc = fab_ctx_arm(ctx);
		if (rc != -EAGAIN)
			return; /* armed, or an error: nothing more we can do */
	}
	fab_evloop_kick(ctx);
}

/* Drive the worker from a libevent loop: progress on wake-up, re-arm, never miss a completion. */
int fab_ctx_attach(struct fab_ctx *ctx, struct event_base *base)
{
	struct fab_evloop *ev;

	if (ctx->ev != NULL)
		return -EBUSY;
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL)
		return -ENOMEM;
	ev->ev = event_new(base, ctx->efd, EV_READ | EV_PERSIST, fab_evloop_cb, ctx);
	if (ev->ev == NULL) {
		free(ev);
		return -ENOMEM;
	}
	if (event_add(ev->ev, NULL) < 0) {
		event_free(ev->ev);
		free(ev);
		return -EIO;
	}
	ctx->ev = ev;
	/* Work may already be pending: run once before the first sleep. */
	fab_evloop_kick(ctx);
	return 0;
}

/* Remove the worker from its libevent loop (also done by fab_ctx_destroy). */
void fab_ctx_detach(struct fab_ctx *ctx)
{
	if (ctx->ev == NULL)
		return;
	event_free(ctx->ev->ev);
	free(ctx->ev);
	ctx->ev = NULL;
}

/* Make the loop progress the worker soon: work was queued that the fd may not signal. */
void fab_evloop_kick(struct fab_ctx *ctx)
{
	struct fab_evloop *ev = ctx->ev;

	if (ev == NULL || ev->kicked)
		return;
	ev->kicked = 1;
	event_active(ev->ev, EV_READ, 0);
}

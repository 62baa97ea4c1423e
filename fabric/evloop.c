/* evloop.c - a fabric worker inside a libevent loop, woken by its event fd. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "fabric/ucx_int.h"

/* Calls of progress per wake-up before yielding to other events. */
#define FAB_EV_ROUNDS 256

struct fab_evloop {
	struct event *ev;
	struct event *kick; /* a zero timer: runs after the loop polled its fds again */
	int kicked;
};

/*
 * Progress until the worker arms: only then can the loop sleep without
 * missing a completion. Under sustained traffic (a poold carrying its
 * clients' transfers progresses without pause), yield after a bounded
 * number of calls and come back through a zero timer, so that the loop
 * polls its other fds first (heartbeats, control connections): an event
 * made active again from its own callback would run before any poll.
 */
static void fab_evloop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fab_ctx *ctx = arg;
	struct fab_evloop *ev = ctx->ev;

	ev->kicked = 0;
	for (int round = 0; round < FAB_EV_ROUNDS; round++) {
		if (fab_ctx_progress(ctx) != 0) {
			if (ctx->ev == NULL)
				return; /* a callback detached us */
			continue;
		}
		if (ctx->ev == NULL)
			return;
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
	ev->kick = evtimer_new(base, fab_evloop_cb, ctx);
	if (ev->ev == NULL || ev->kick == NULL) {
		if (ev->ev != NULL)
			event_free(ev->ev);
		if (ev->kick != NULL)
			event_free(ev->kick);
		free(ev);
		return -ENOMEM;
	}
	if (event_add(ev->ev, NULL) < 0) {
		event_free(ev->ev);
		event_free(ev->kick);
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
	event_free(ctx->ev->kick);
	free(ctx->ev);
	ctx->ev = NULL;
}

/* Make the loop progress the worker soon: work was queued that the fd may not signal. */
void fab_evloop_kick(struct fab_ctx *ctx)
{
	static const struct timeval now = {0, 0};
	struct fab_evloop *ev = ctx->ev;

	if (ev == NULL || ev->kicked)
		return;
	ev->kicked = 1;
	evtimer_add(ev->kick, &now);
}

/* wait.c - blocking waits: progress, then sleep on the wake-up fd, bounded in time. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "fabric/ucx_int.h"

/* How long to keep progressing before sleeping: covers a loopback round trip. */
#define FAB_SPIN_NS 50000LL

static long long fab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Progress until *done becomes nonzero, sleeping on the wake-up fd; -ETIMEDOUT after timeout_ms. */
int fab_ctx_wait(struct fab_ctx *ctx, const volatile int *done, unsigned timeout_ms)
{
	long long deadline = fab_now_ns() + (long long)timeout_ms * 1000000LL;

	for (;;) {
		long long spin_end = fab_now_ns() + FAB_SPIN_NS;
		long long now;
		struct pollfd pfd;
		int rc;

		do {
			while (fab_ctx_progress(ctx) != 0)
				if (*done)
					return 0;
			if (*done)
				return 0;
			now = fab_now_ns();
		} while (now < spin_end);
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = fab_ctx_arm(ctx);
		if (rc == -EAGAIN)
			continue;
		if (rc < 0)
			return rc;
		pfd.fd = ctx->efd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		long long left_ms = (deadline - now) / 1000000LL + 1;
		rc = poll(&pfd, 1, left_ms > 100 ? 100 : (int)left_ms);
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
}

static int fab_req_done(void *req)
{
	return ucp_request_check_status(req) != UCS_INPROGRESS;
}

/* Progress until request req is no longer in progress; 0, or -ETIMEDOUT (req still pending). */
int fab_ctx_wait_request(struct fab_ctx *ctx, void *req, unsigned timeout_ms)
{
	long long deadline = fab_now_ns() + (long long)timeout_ms * 1000000LL;

	while (!fab_req_done(req)) {
		struct pollfd pfd = {.fd = ctx->efd, .events = POLLIN};

		if (fab_ctx_progress(ctx) != 0)
			continue;
		if (fab_req_done(req))
			break;
		if (fab_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (fab_ctx_arm(ctx) == 0)
			(void)poll(&pfd, 1, 10);
	}
	return 0;
}

/* A heap completion record for blocking calls, freed by whoever finishes last. */
struct fab_waiter *fab_waiter_new(void)
{
	return calloc(1, sizeof(struct fab_waiter));
}

/* Completion callback for a fab_waiter. */
void fab_waiter_cb(void *arg, int status)
{
	struct fab_waiter *w = arg;

	if (w->abandoned) {
		free(w);
		return;
	}
	w->status = status;
	w->done = 1;
}

/*
 * Wait for w's operation on ep and free w. If the wait times out the
 * operation is still owned by UCX: w is left for the callback to free and
 * the endpoint is failed with -ETIMEDOUT, so nothing more is issued on it
 * and fab_ep_destroy() cancels what is left.
 */
int fab_waiter_wait(struct fab_ep *ep, struct fab_waiter *w)
{
	int rc = fab_ctx_wait(ep->ctx, &w->done, ep->ctx->timeout_ms);

	if (rc < 0) {
		w->abandoned = 1;
		fab_ep_fail(ep, rc);
		return rc;
	}
	rc = w->status;
	free(w);
	return rc;
}

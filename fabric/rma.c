/* rma.c - one-sided put and get, non-blocking and blocking, and endpoint flush. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "fabric/ucx_int.h"

static int fab_rma_one(struct fab_ep *ep, int is_put, void *buf, size_t len, uint64_t raddr,
		       struct fab_rkey *rkey, fab_done_cb cb, void *arg)
{
	ucp_request_param_t param;
	struct fab_op *op;
	ucs_status_ptr_t sp;
	int rc;

	if ((rc = fab_op_check(ep, rkey)) < 0)
		return rc;
	if (rkey == NULL || (buf == NULL && len != 0))
		return -EINVAL;
	op = fab_op_new(ep, cb, arg);
	if (op == NULL)
		return -ENOMEM;
	fab_op_param(op, &param);
	if (is_put)
		sp = ucp_put_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param);
	else
		sp = ucp_get_nbx(ep->ep, buf, len, raddr, rkey->rkey, &param);
	return fab_op_issued(op, sp);
}

/* A large transfer split into chunks: one user callback when the last chunk is done. */
struct fab_multi {
	fab_done_cb cb;
	void *arg;
	size_t left;
	int status;
};

static void fab_multi_done(void *arg, int status)
{
	struct fab_multi *m = arg;

	if (status != 0 && m->status == 0)
		m->status = status;
	if (--m->left > 0)
		return;
	if (m->cb != NULL)
		m->cb(m->arg, m->status);
	free(m);
}

/*
 * Transfers above the chunk size are issued as several operations in
 * flight at once: over TCP this keeps the pipe full (the target sends chunk
 * k while we are still receiving chunk k-1) instead of one long train
 * serialised behind a single request.
 */
static int fab_rma_split(struct fab_ep *ep, int is_put, void *buf, size_t len, uint64_t raddr,
			 struct fab_rkey *rkey, fab_done_cb cb, void *arg)
{
	size_t chunk = ep->ctx->rma_chunk, n, i;
	struct fab_multi *m;
	int rc;

	if (chunk == 0 || len <= chunk || (buf == NULL && len != 0))
		return fab_rma_one(ep, is_put, buf, len, raddr, rkey, cb, arg);
	if ((rc = fab_op_check(ep, rkey)) < 0)
		return rc;
	if (rkey == NULL)
		return -EINVAL;
	n = (len + chunk - 1) / chunk;
	m = malloc(sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->cb = cb;
	m->arg = arg;
	m->left = n;
	m->status = 0;
	for (i = 0; i < n; i++) {
		size_t off = i * chunk, l = len - off < chunk ? len - off : chunk;

		rc = fab_rma_one(ep, is_put, (char *)buf + off, l, raddr + off, rkey,
				 fab_multi_done, m);
		if (rc < 0)
			break;
	}
	if (i == n)
		return 0;
	if (i == 0) {
		free(m);
		return rc;
	}
	/* Some chunks are in flight: they report the error when they finish. */
	m->status = rc;
	m->left -= n - i;
	return 0;
}

/* A transfer issued, and counted once it is. */
static int fab_rma_nb(struct fab_ep *ep, int is_put, void *buf, size_t len, uint64_t raddr,
		      struct fab_rkey *rkey, fab_done_cb cb, void *arg)
{
	int rc = fab_rma_split(ep, is_put, buf, len, raddr, rkey, cb, arg);
	struct fab_rma_stats *st = &ep->ctx->rma;

	if (rc == 0) {
		__atomic_fetch_add(is_put ? &st->put_ops : &st->get_ops, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(is_put ? &st->put_bytes : &st->get_bytes, len, __ATOMIC_RELAXED);
	}
	return rc;
}

/* Write len bytes from buf to raddr at the peer. */
int fab_put_nb(struct fab_ep *ep, const void *buf, size_t len, uint64_t raddr,
	       struct fab_rkey *rkey, fab_done_cb cb, void *arg)
{
	return fab_rma_nb(ep, 1, (void *)buf, len, raddr, rkey, cb, arg);
}

/* Read len bytes at raddr at the peer into buf. */
int fab_get_nb(struct fab_ep *ep, void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey,
	       fab_done_cb cb, void *arg)
{
	return fab_rma_nb(ep, 0, buf, len, raddr, rkey, cb, arg);
}

void fab_ctx_rma_stats(struct fab_ctx *ctx, struct fab_rma_stats *st)
{
	st->get_ops = __atomic_load_n(&ctx->rma.get_ops, __ATOMIC_RELAXED);
	st->get_bytes = __atomic_load_n(&ctx->rma.get_bytes, __ATOMIC_RELAXED);
	st->put_ops = __atomic_load_n(&ctx->rma.put_ops, __ATOMIC_RELAXED);
	st->put_bytes = __atomic_load_n(&ctx->rma.put_bytes, __ATOMIC_RELAXED);
}

static int fab_rma(struct fab_ep *ep, int is_put, void *buf, size_t len, uint64_t raddr,
		   struct fab_rkey *rkey)
{
	struct fab_waiter *w = fab_waiter_new();
	int rc;

	if (w == NULL)
		return -ENOMEM;
	rc = fab_rma_nb(ep, is_put, buf, len, raddr, rkey, fab_waiter_cb, w);
	if (rc < 0) {
		free(w);
		return rc;
	}
	return fab_waiter_wait(ep, w);
}

/* Blocking put: returns when buf may be reused (use fab_flush for remote completion). */
int fab_put(struct fab_ep *ep, const void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey)
{
	return fab_rma(ep, 1, (void *)buf, len, raddr, rkey);
}

/* Blocking get: returns when the data is in buf. */
int fab_get(struct fab_ep *ep, void *buf, size_t len, uint64_t raddr, struct fab_rkey *rkey)
{
	return fab_rma(ep, 0, buf, len, raddr, rkey);
}

/*
 * Non-blocking flush: cb is called once, from progress, when every put, get
 * and atomic issued on ep so far is complete at the target.
 */
int fab_flush_nb(struct fab_ep *ep, fab_done_cb cb, void *arg)
{
	ucp_request_param_t param;
	struct fab_op *op;
	int rc;

	if ((rc = fab_op_check(ep, NULL)) < 0)
		return rc;
	op = fab_op_new(ep, cb, arg);
	if (op == NULL)
		return -ENOMEM;
	fab_op_param(op, &param);
	return fab_op_issued(op, ucp_ep_flush_nbx(ep->ep, &param));
}

/* Blocking flush: every put/get/atomic issued on ep so far is complete at the target. */
int fab_flush(struct fab_ep *ep)
{
	struct fab_waiter *w = fab_waiter_new();
	int rc;

	if (w == NULL)
		return -ENOMEM;
	rc = fab_flush_nb(ep, fab_waiter_cb, w);
	if (rc < 0) {
		free(w);
		return rc;
	}
	return fab_waiter_wait(ep, w);
}

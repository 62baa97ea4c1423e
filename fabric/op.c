/* op.c - one in-flight UCX operation and its single completion callback. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "fabric/ucx_int.h"

static void fab_op_finish(struct fab_op *op, int status)
{
	struct fab_ep *ep = op->ep;
	fab_done_cb cb = op->cb;
	void *arg = op->arg;

	if (status == 0 && op->ret_result != NULL)
		*op->ret_result = op->result;
	/* An operation failing for connection reasons fails the endpoint. */
	if (status != 0 && status != -ECANCELED && status != -EINVAL && status != -ENOTSUP &&
	    status != -ENOMEM && !ep->closing)
		fab_ep_fail(ep, status);
	free(op);
	if (cb != NULL)
		cb(arg, status);
}

/*
 * UCX 1.13 may run the callback inside the ucp_*_nbx call even with
 * UCP_OP_ATTR_FLAG_NO_IMM_CMPL (seen with shared-memory puts). Our contract
 * is "never inline": an op completing while still being issued is parked
 * and finished from fab_ctx_progress().
 */
static void fab_op_done(void *request, ucs_status_t status, void *user_data)
{
	struct fab_op *op = user_data;

	ucp_request_free(request);
	if (op->issuing) {
		op->inline_done = 1;
		op->status = fab_status_errno(status);
		return;
	}
	fab_op_finish(op, fab_status_errno(status));
}

/* New operation on ep that will call cb(arg, status) exactly once. */
struct fab_op *fab_op_new(struct fab_ep *ep, fab_done_cb cb, void *arg)
{
	struct fab_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->ep = ep;
	op->cb = cb;
	op->arg = arg;
	op->issuing = 1;
	return op;
}

/* Fill a request parameter block so UCX completes op from progress only. */
void fab_op_param(struct fab_op *op, ucp_request_param_t *param)
{
	param->op_attr_mask =
	    UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
	param->cb.send = fab_op_done;
	param->user_data = op;
}

/* Account for the status pointer a ucp_*_nbx call returned for op. */
int fab_op_issued(struct fab_op *op, ucs_status_ptr_t sp)
{
	struct fab_ctx *ctx = op->ep->ctx;

	op->issuing = 0;
	if (UCS_PTR_IS_ERR(sp)) {
		int err = fab_status_errno(UCS_PTR_STATUS(sp));

		free(op);
		return err;
	}
	if (sp == NULL || op->inline_done) {
		/* Done already: still complete from progress, in issue order. */
		if (!op->inline_done)
			op->status = 0;
		op->next = NULL;
		if (ctx->mt)
			pthread_mutex_lock(&ctx->lock);
		if (ctx->deferred_tail != NULL)
			ctx->deferred_tail->next = op;
		else
			ctx->deferred = op;
		ctx->deferred_tail = op;
		if (ctx->mt)
			pthread_mutex_unlock(&ctx->lock);
	}
	fab_evloop_kick(ctx);
	return 0;
}

/* Run callbacks of operations that completed at issue time. */
unsigned fab_op_run_deferred(struct fab_ctx *ctx)
{
	struct fab_op *op;
	unsigned n = 0;

	if (ctx->mt)
		pthread_mutex_lock(&ctx->lock);
	op = ctx->deferred;
	ctx->deferred = NULL;
	ctx->deferred_tail = NULL;
	if (ctx->mt)
		pthread_mutex_unlock(&ctx->lock);
	while (op != NULL) {
		struct fab_op *next = op->next;

		fab_op_finish(op, op->status);
		op = next;
		n++;
	}
	return n;
}

/* Validate an operation's endpoint and rkey: 0, the endpoint's error, or -EINVAL. */
int fab_op_check(struct fab_ep *ep, struct fab_rkey *rkey)
{
	if (ep == NULL)
		return -EINVAL;
	if (ep->err != 0)
		return ep->err;
	if (ep->closing)
		return -ESHUTDOWN;
	if (rkey != NULL && rkey->ep != ep)
		return -EINVAL;
	return 0;
}

/* amo.c - 64-bit remote atomics: fetch-and-add and compare-and-swap. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "fabric/ucx_int.h"

static int fab_amo(struct fab_ep *ep, ucp_atomic_op_t opcode, uint64_t raddr, struct fab_rkey *rkey,
		   uint64_t value, uint64_t reply_in, uint64_t *ret_old)
{
	ucp_request_param_t param;
	struct fab_waiter *w;
	struct fab_op *op;
	int rc;

	if ((rc = fab_op_check(ep, rkey)) < 0)
		return rc;
	if (rkey == NULL || (raddr & 7) != 0)
		return -EINVAL;
	w = fab_waiter_new();
	if (w == NULL)
		return -ENOMEM;
	op = fab_op_new(ep, fab_waiter_cb, w);
	if (op == NULL) {
		free(w);
		return -ENOMEM;
	}
	fab_op_param(op, &param);
	/*
	 * UCX semantics: ADD: remote += buffer. CSWAP: if (buffer == remote)
	 * remote = reply_buffer; the reply buffer returns the old value.
	 */
	op->result = reply_in;
	op->ret_result = &w->result;
	param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
	param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
	param.reply_buffer = &op->result;
	rc = fab_op_issued(op,
			   ucp_atomic_op_nbx(ep->ep, opcode, &value, 1, raddr, rkey->rkey, &param));
	if (rc < 0) {
		free(w);
		return rc;
	}
	uint64_t old;
	rc = fab_ctx_wait(ep->ctx, &w->done, ep->ctx->timeout_ms);
	if (rc < 0) {
		w->abandoned = 1;
		fab_ep_fail(ep, rc);
		return rc;
	}
	rc = w->status;
	old = w->result;
	free(w);
	if (rc == 0)
		*ret_old = old;
	return rc;
}

/* Fetch-and-add: *ret_old = old value, remote += add. */
int fab_atomic_fadd64(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t add,
		      uint64_t *ret_old)
{
	return fab_amo(ep, UCP_ATOMIC_OP_ADD, raddr, rkey, add, 0, ret_old);
}

/* Compare-and-swap: if remote == expect then remote = desired; *ret_old = old value. */
int fab_atomic_cswap64(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t expect,
		       uint64_t desired, uint64_t *ret_old)
{
	return fab_amo(ep, UCP_ATOMIC_OP_CSWAP, raddr, rkey, expect, desired, ret_old);
}

/*
 * Non-blocking atomics: 0 and cb(arg, status) later from progress, with
 * *ret_old written before cb on success; or -errno and no callback.
 */
static int fab_amo_nb(struct fab_ep *ep, ucp_atomic_op_t opcode, uint64_t raddr,
		      struct fab_rkey *rkey, uint64_t value, uint64_t reply_in, uint64_t *ret_old,
		      fab_done_cb cb, void *arg)
{
	ucp_request_param_t param;
	struct fab_op *op;
	int rc;

	if ((rc = fab_op_check(ep, rkey)) < 0)
		return rc;
	if (rkey == NULL || (raddr & 7) != 0 || ret_old == NULL)
		return -EINVAL;
	op = fab_op_new(ep, cb, arg);
	if (op == NULL)
		return -ENOMEM;
	fab_op_param(op, &param);
	op->result = reply_in;
	op->ret_result = ret_old;
	param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
	param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
	param.reply_buffer = &op->result;
	return fab_op_issued(
	    op, ucp_atomic_op_nbx(ep->ep, opcode, &value, 1, raddr, rkey->rkey, &param));
}

/* Non-blocking fetch-and-add. */
int fab_atomic_fadd64_nb(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t add,
			 uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	return fab_amo_nb(ep, UCP_ATOMIC_OP_ADD, raddr, rkey, add, 0, ret_old, cb, arg);
}

/* Non-blocking compare-and-swap. */
int fab_atomic_cswap64_nb(struct fab_ep *ep, uint64_t raddr, struct fab_rkey *rkey, uint64_t expect,
			  uint64_t desired, uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	return fab_amo_nb(ep, UCP_ATOMIC_OP_CSWAP, raddr, rkey, expect, desired, ret_old, cb, arg);
}

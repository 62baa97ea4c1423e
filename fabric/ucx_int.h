/*
 * ucx_int.h - private to fabric/: the UCX-typed insides of the opaque
 * fabric objects. Nothing outside fabric/ may include this file.
 */
#ifndef POOL_FABRIC_UCX_INT_H
#define POOL_FABRIC_UCX_INT_H

#include <pthread.h>

#include <ucp/api/ucp.h>

#include "fabric/fabric.h"

#define FAB_DEFAULT_TIMEOUT_MS 10000u

struct fab_evloop;

struct fab_ctx {
	ucp_context_h context;
	ucp_worker_h worker;
	int efd;
	unsigned timeout_ms;
	size_t rma_chunk; /* split put/get above this size; 0 = never */
	char tls[128];
	struct fab_evloop *ev;	 /* set by fab_ctx_attach() */
	struct fab_op *deferred; /* completed inline: callbacks run from progress */
	struct fab_op *deferred_tail;
	struct fab_ep *closing; /* endpoints whose close is still in progress */
	int mt;			/* thread_multi: deferred list under lock */
	pthread_mutex_t lock;
	struct fab_rma_stats rma; /* updated atomically: any thread may issue */
	uint64_t busy;		  /* calls of progress that moved something */
};

struct fab_ep {
	struct fab_ctx *ctx;
	ucp_ep_h ep;
	int err; /* 0 or the -errno the endpoint failed with */
	int closing;
	int no_peer_err; /* connected without UCX peer failure detection */
	fab_ep_err_cb err_cb;
	void *err_arg;
	void *close_req;	   /* the close in progress, until UCX completes it */
	int in_close;		   /* inside ucp_ep_close_nbx() */
	int close_done;		   /* its callback ran inside that call */
	struct fab_ep *close_next; /* on ctx->closing */
	struct fab_ep *close_prev;
};

struct fab_mem {
	struct fab_ctx *ctx;
	ucp_mem_h memh;
};

struct fab_rkey {
	struct fab_ep *ep;
	ucp_rkey_h rkey;
};

/*
 * One in-flight operation. Allocated when the operation is issued and freed
 * by its completion callback, so a blocking call that gives up (timeout)
 * can leave it behind safely.
 */
struct fab_op {
	struct fab_ep *ep;
	fab_done_cb cb;
	void *arg;
	uint64_t result;      /* atomics: reply buffer */
	uint64_t *ret_result; /* atomics: where result goes on success */
	int status;	      /* deferred completion status */
	int issuing;	      /* inside the ucp_*_nbx call */
	int inline_done;      /* UCX completed it during that call */
	struct fab_op *next;  /* on ctx->deferred */
};

/* op.c */
struct fab_op *fab_op_new(struct fab_ep *ep, fab_done_cb cb, void *arg);
void fab_op_param(struct fab_op *op, ucp_request_param_t *param);
int fab_op_issued(struct fab_op *op, ucs_status_ptr_t sp);
unsigned fab_op_run_deferred(struct fab_ctx *ctx);
int fab_op_check(struct fab_ep *ep, struct fab_rkey *rkey);
/* wait.c */
struct fab_waiter {
	volatile int done;
	int status;
	int abandoned;
	uint64_t result;
};
struct fab_waiter *fab_waiter_new(void);
void fab_waiter_cb(void *arg, int status);
int fab_waiter_wait(struct fab_ep *ep, struct fab_waiter *w);
int fab_ctx_wait_request(struct fab_ctx *ctx, void *req, unsigned timeout_ms);
/* ep.c */
void fab_ep_fail(struct fab_ep *ep, int err);
void fab_ep_release_closing(struct fab_ctx *ctx);
void fab_ep_reap_closing(struct fab_ctx *ctx);
/* evloop.c */
void fab_evloop_kick(struct fab_ctx *ctx);

#endif /* POOL_FABRIC_UCX_INT_H */

/*
 * daemon/xfer.c - transfers poold carries for its local clients.
 *
 * A client reaches pool memory only through its own poold: it asks for a
 * window (a sealed memfd both map), puts its data there or reads it from
 * there, and sends Xfer requests naming what to move between the window
 * and memory it was granted (grant.c). Each op is checked against the
 * session's grants, then carried: a copy when the memory lives on this
 * node, else a read, write or atomic of this poold's to the lender's poold
 * (carry.c), which checks it again against what it holds. The payload is
 * never copied on the way. The reply comes when every op is done (writes
 * complete at their lenders), or failed, or when the lender did not answer
 * within the heartbeat window. Windows are xfer-window.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/xferint.h"
#include "proto/pool_contract.h"

#define XFER_MAX_PIECES 256 /* extents one op may span */

/* The kinds of transfer, as the wire numbers them (in this order). */
#define XFER_READ POOL__XFER_KIND__XFER_KIND_READ
#define XFER_WRITE POOL__XFER_KIND__XFER_KIND_WRITE
#define XFER_FADD POOL__XFER_KIND__XFER_KIND_FETCH_ADD
#define XFER_CSWAP POOL__XFER_KIND__XFER_KIND_COMPARE_SWAP

/* One Xfer request in flight. */
struct xfer {
	struct poold *pd;
	struct req *r;
	size_t n;
	int32_t *status;
	uint64_t *old;
	/* Each op's state; an op's completions get its own as their argument. */
	struct xfer_op {
		struct xfer *x;
		size_t i;
		struct xfer_window *win; /* held busy */
		bool write;		 /* a failed flush fails it */
		unsigned pending;	 /* its pieces in flight */
		uint32_t node;		 /* the node of its last piece in flight */
	} * ops;
	struct xfer_flush {
		uint32_t node;
		uint64_t gen;
	} * flush; /* endpoints written to: flushed before the reply */
	size_t nflush, flush_cap;
	unsigned outstanding;
	bool flushing, replied, timed_out;
	struct event *timer; /* no progress for a heartbeat window: the lender is gone */
	struct timeval window;
};

static size_t xfer_in_flight; /* requests started and not answered yet */

static void xfer_free(struct xfer *x)
{
	size_t i;

	for (i = 0; x->ops != NULL && i < x->n; i++)
		xfer_window_put(x->ops[i].win);
	if (x->timer != NULL)
		event_free(x->timer);
	free(x->status);
	free(x->old);
	free(x->ops);
	free(x->flush);
	free(x);
	xfer_in_flight--;
}

static void xfer_reply(struct xfer *x)
{
	Pool__XferReply reply = POOL__XFER_REPLY__INIT;
	size_t i, bad = 0;

	for (i = 0; i < x->n; i++)
		bad += x->status[i] < 0;
	if (bad > 0)
		log_debug("%s: %zu of %zu transfers failed (%s)", conn_desc(x->r->conn), bad, x->n,
			  err_str(x->status[0] < 0 ? x->status[0] : x->status[x->n - 1]));
	reply.status = x->status;
	reply.n_status = x->n;
	reply.old = x->old;
	reply.n_old = x->n;
	x->replied = true;
	req_reply(x->r, WIRE_XFER_REPLY, &reply.base);
	req_finish(x->r, 0);
	x->r = NULL;
}

static void xfer_flush_done(void *arg, int status);

/* Nothing is in flight any more: flush the writes, then answer. */
static void xfer_settle(struct xfer *x)
{
	size_t i;

	if (x->outstanding > 0)
		return;
	if (!x->flushing && x->nflush > 0 && !x->replied) {
		x->flushing = true;
		for (i = 0; i < x->nflush; i++) {
			int rc = carry_flush(x->pd, x->flush[i].node, x->flush[i].gen,
					     xfer_flush_done, x);

			if (rc >= 0) {
				x->outstanding += rc == 0;
				continue;
			}
			/* Closed meanwhile (its transfers were cancelled): the writes are lost. */
			for (size_t k = 0; k < x->n; k++)
				if (x->status[k] == 0 && x->ops[k].write)
					x->status[k] = POOL_ELOST;
		}
		if (x->outstanding > 0)
			return;
	}
	if (!x->replied)
		xfer_reply(x);
	xfer_free(x);
}

static void xfer_flush_done(void *arg, int status)
{
	struct xfer *x = arg;
	size_t i;

	/* A write is complete only once flushed: a failed flush fails every write. */
	if (status < 0)
		for (i = 0; i < x->n; i++)
			if (x->status[i] == 0 && x->ops[i].write)
				x->status[i] = POOL_ELOST;
	x->outstanding--;
	xfer_settle(x);
}

static void xfer_op_done(void *arg, int status)
{
	struct xfer_op *c = arg;
	struct xfer *x = c->x;

	c->pending--;
	if (status < 0 && x->status[c->i] == 0)
		x->status[c->i] = carry_lost(status) ? POOL_ELOST : status;
	x->outstanding--;
	if (!x->replied && !x->timed_out && x->outstanding > 0)
		evtimer_add(x->timer, &x->window); /* it moves: wait again */
	xfer_settle(x);
}

/*
 * Nothing came back for a heartbeat window: the ways to the lenders that
 * did not answer are closed, which cancels their transfers, and the reply
 * goes once they are all back, never before: a transfer still in flight
 * would move bytes into or out of a window the client uses again once
 * answered. The next transfer to those lenders starts on a new way. (UCX
 * 1.13 over TCP can leave an endpoint to a live peer silent after another
 * peer died.) Should the cancelled transfers not come back within a
 * heartbeat interval (UCX can hold them while the peer is stopped), the
 * reply goes all the same.
 */
static void xfer_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct xfer *x = arg;
	struct timeval interval;
	struct member *m;
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i < x->n; i++)
		if (x->status[i] == 0 &&
		    (x->ops[i].pending > 0 || (x->flushing && x->ops[i].write)))
			x->status[i] = POOL_ELOST;
	if (x->timed_out) {
		/*
		 * An interval more and the cancelled transfers are not back (UCX
		 * can hold them while the peer is stopped): answer anyway, and
		 * retire the windows they move into, so that what may still land
		 * there reaches no later transfer (the client gets a new one).
		 */
		for (i = 0; i < x->n; i++)
			if (x->ops[i].pending > 0 && x->ops[i].win != NULL &&
			    !x->ops[i].win->closed) {
				log_warnx("%s: transfers into window %u still out: the window is "
					  "retired",
					  conn_desc(x->r->conn), x->ops[i].win->id);
				x->ops[i].win->closed = true;
			}
		if (!x->replied)
			xfer_reply(x);
		return;
	}
	x->timed_out = true;
	interval = units_timeval((uint64_t)x->pd->conf->heartbeat_ms);
	evtimer_add(x->timer, &interval);
	for (i = 0; i < x->n + x->nflush; i++) {
		uint32_t node = i < x->n ? x->ops[i].node : x->flush[i - x->n].node;

		if ((i < x->n ? x->ops[i].pending == 0 : !x->flushing) ||
		    (m = cluster_find(x->pd, node)) == NULL || (m->ep == NULL && m->link == NULL))
			continue;
		log_warnx("node %u (%s) did not answer transfers for a heartbeat window: "
			  "closing the way to it",
			  m->info->id, m->info->name);
		carry_drop(x->pd, m);
	}
}

/* Note an endpoint written to (once); -ENOMEM when it cannot be noted. */
static int xfer_flush_add(struct xfer *x, uint32_t node, uint64_t gen)
{
	size_t i;

	for (i = 0; i < x->nflush && (x->flush[i].node != node || x->flush[i].gen != gen); i++)
		;
	if (i < x->nflush)
		return 0;
	if (x->nflush == x->flush_cap) {
		size_t cap = x->flush_cap ? 2 * x->flush_cap : 4;
		struct xfer_flush *more = realloc(x->flush, cap * sizeof(*more));

		if (more == NULL)
			return -ENOMEM;
		x->flush = more;
		x->flush_cap = cap;
	}
	x->flush[x->nflush++] = (struct xfer_flush){node, gen};
	return 0;
}

/* One piece of an op at memory of this node: done here and now. */
static int xfer_local(struct xfer *x, const Pool__XferOp *op, const struct grant_piece *p,
		      char *buf, size_t i)
{
	char *mem = lend_ptr(x->pd, p->arena, p->off, p->len);

	if (mem == NULL)
		return -ERANGE;
	switch (op->op) {
	case XFER_READ:
		memcpy(buf, mem, p->len);
		break;
	case XFER_WRITE:
		memcpy(mem, buf, p->len);
		break;
	case XFER_FADD:
		x->old[i] = __atomic_fetch_add((uint64_t *)mem, op->a, __ATOMIC_SEQ_CST);
		break;
	default: {
		uint64_t expect = op->a;

		__atomic_compare_exchange_n((uint64_t *)mem, &expect, op->b, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		x->old[i] = expect;
		break;
	}
	}
	return 0;
}

/* One piece of an op at another node's memory: carried to its lender's poold. */
static int xfer_remote(struct xfer *x, const Pool__XferOp *op, const struct grant_piece *p,
		       char *buf, size_t i)
{
	static const enum carry_op ops[] = {
	    [XFER_READ] = CARRY_READ,
	    [XFER_WRITE] = CARRY_WRITE,
	    [XFER_FADD] = CARRY_FADD,
	    [XFER_CSWAP] = CARRY_CSWAP,
	};
	struct carry_place place = {p->node, p->arena, p->ext, p->off - p->ext, p->len};
	uint64_t gen;
	int rc;

	x->outstanding++;
	rc = carry_start(x->pd, ops[op->op], &place, buf, op->a, op->b, &x->old[i], xfer_op_done,
			 &x->ops[i], &gen);
	if (rc < 0) {
		x->outstanding--;
		return rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ENOTCONN ? POOL_ELOST
										   : rc;
	}
	x->ops[i].pending++;
	x->ops[i].node = p->node;
	/* (Unflushed, a write would not be known complete: fail it rather.) */
	if (op->op != XFER_READ && xfer_flush_add(x, p->node, gen) < 0)
		return -ENOMEM;
	return 0;
}

/* Check one op against the session's window and grants, and start it. */
static int xfer_start(struct xfer *x, const Pool__XferOp *op, size_t i)
{
	static struct grant_piece pieces[XFER_MAX_PIECES];
	bool write = op->op != XFER_READ;
	uint64_t len = op->op >= XFER_FADD ? 8 : op->len;
	struct xfer_window *w;
	size_t k;
	int n, rc;

	if (op->op < XFER_READ || op->op > XFER_CSWAP)
		return -EINVAL;
	if (op->op >= XFER_FADD && op->off % 8 != 0)
		return -EINVAL;
	if (op->op <= XFER_WRITE) {
		rc = op->has_window ? xfer_window_take(x->r->session, op->window, &w) : -EBADF;
		if (rc < 0)
			return rc;
		x->ops[i].win = w;
		if (op->win_off > w->size || len > w->size - op->win_off)
			return -ERANGE;
	}
	if (len == 0)
		return 0;
	if (op->has_region) {
		n = grant_region_pieces(x->pd, x->r->session, op->region, op->off, len, write,
					pieces, XFER_MAX_PIECES);
	} else if (op->has_node && op->has_arena) {
		uint64_t within = op->has_within ? op->within : 0;

		n = grant_place_check(x->pd, x->r->session, op->node, op->arena, op->off, within,
				      len, write);
		pieces[0] =
		    (struct grant_piece){op->node, op->arena, op->off, op->off + within, len, 0};
		n = n < 0 ? n : 1;
	} else {
		return -EINVAL;
	}
	if (n < 0)
		return n;
	for (k = 0; k < (size_t)n; k++) {
		char *buf =
		    x->ops[i].win ? x->ops[i].win->base + op->win_off + pieces[k].pos : NULL;

		rc = pieces[k].node == x->pd->node_id ? xfer_local(x, op, &pieces[k], buf, i)
						      : xfer_remote(x, op, &pieces[k], buf, i);
		if (rc < 0)
			return rc;
	}
	if (op->op == XFER_READ) {
		x->pd->client_rma.get_ops++;
		x->pd->client_rma.get_bytes += len;
	} else if (op->op == XFER_WRITE) {
		x->pd->client_rma.put_ops++;
		x->pd->client_rma.put_bytes += len;
	}
	return 0;
}

static int xfer_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__Xfer *m = (const Pool__Xfer *)msg;
	struct poold *pd = r->pd;
	/* What the coordinator waits before it declares a silent node dead. */
	uint64_t window_ms =
	    (uint64_t)pd->conf->heartbeat_ms * (uint64_t)pd->conf->heartbeat_misses;
	struct xfer *x;
	size_t i;

	if (m->n_ops == 0 || m->n_ops > XFER_MAX_OPS)
		return req_errorf(r, -EINVAL, "an xfer has 1 to %d ops", XFER_MAX_OPS);
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	xfer_in_flight++;
	x->pd = pd;
	x->window = units_timeval(window_ms);
	x->n = m->n_ops;
	x->status = calloc(x->n, sizeof(*x->status));
	x->old = calloc(x->n, sizeof(*x->old));
	x->ops = calloc(x->n, sizeof(*x->ops));
	x->timer = evtimer_new(pd->base, xfer_timeout, x);
	if (x->status == NULL || x->old == NULL || x->ops == NULL || x->timer == NULL ||
	    (x->r = req_hold(r)) == NULL) {
		xfer_free(x);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	x->outstanding = 1; /* until every op is started */
	for (i = 0; i < x->n; i++) {
		x->ops[i] = (struct xfer_op){.x = x, .i = i, .write = m->ops[i]->op != XFER_READ};
		x->status[i] = xfer_start(x, m->ops[i], i);
		if (x->status[i] < 0)
			log_debug("%s: xfer op %zu refused: %s", conn_desc(r->conn), i,
				  err_str(x->status[i]));
	}
	evtimer_add(x->timer, &x->window);
	x->outstanding--;
	xfer_settle(x);
	return 0;
}

/* Whether transfers are being carried now: poold then polls the fabric rather than sleep. */
bool xfer_busy(void)
{
	return xfer_in_flight > 0;
}

/* The client session ended: its windows go once nothing moves into them. */
void xfer_session_end(struct poold *pd, uint64_t session)
{
	(void)pd;
	xfer_window_session_end(session);
}

/* poold stops: every window goes. */
void xfer_close(struct poold *pd)
{
	(void)pd;
	xfer_window_close_all();
}

const struct ctl_handler xfer_handlers[] = {
    {WIRE_XFER_WINDOW, CTL_ANY, AT_HERE, xfer_window_request, NULL},
    {WIRE_XFER, CTL_ANY, AT_HERE, xfer_request, NULL},
    {0, 0, 0, NULL, NULL},
};

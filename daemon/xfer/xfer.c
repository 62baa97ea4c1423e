/*
 * daemon/xfer/xfer.c - transfers poold carries for its local clients.
 *
 * A client reaches pool memory only through its own poold: it moves its
 * data through a window (xfer-window.c) and sends Xfer requests naming
 * what to move between the window and memory it was granted (grant.c).
 * Each op is moved as a copy when the memory lives on this node, else as a
 * read, write or atomic of this poold's to the lender's poold (carry.c),
 * which checks it again against what it holds. The payload is never
 * copied on the way. The reply comes when every op is done (writes
 * complete at their lenders), or failed, or when a lender did not answer
 * within the heartbeat window.
 *
 * A request may name 4096 ops of any length (64 GiB of copies with ops of
 * 16 MiB): far more work than one turn of the loop may do, and copied in
 * one go it kept the loop from every other client and from the heartbeats
 * for 10 to 20 s, long enough for the coordinator to declare the node
 * dead. So ops are started in order, in chunks (XFER_COPY bytes copied
 * here, or up to XFER_CHUNK carried), each checked against the session's
 * grants when it starts (a grant that ends midway stops the op there), for
 * about a millisecond a turn, the turns going round the sessions with work
 * (xfer-share.c); chunks on this node are copied in the turn, others handed
 * to the ways to their lenders, which move them a slice per turn too.
 * Other clients' requests and the peer links' heartbeats are served
 * between turns. How many bytes a session, and a uid, may have carried at
 * once is bounded (control.max_xfer_bytes_per_session and _per_uid): past
 * it, its chunks wait until earlier ones come back.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/xfer/xfer-int.h"
#include "proto/pool_contract.h"
#include "daemon/control/control.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/xfer/xfer.h"

#define XFER_MAX_PIECES (XFER_CHUNK / 4096 + 2) /* of a chunk: stripes are 4K at least */

/* The kinds of transfer, as the wire numbers them (in this order). */
#define XFER_READ POOL__XFER_KIND__XFER_KIND_READ
#define XFER_WRITE POOL__XFER_KIND__XFER_KIND_WRITE
#define XFER_FADD POOL__XFER_KIND__XFER_KIND_FETCH_ADD
#define XFER_CSWAP POOL__XFER_KIND__XFER_KIND_COMPARE_SWAP

/* One chunk carried to a lender: the bytes it holds of its session's share. */
struct xfer_carry {
	struct xfer_op *o;
	uint64_t len;
};

static size_t xfer_in_flight; /* requests started and not answered yet */

static void xfer_free(struct xfer *x)
{
	size_t i;

	xfer_share_leave(x);
	for (i = 0; x->ops != NULL && i < x->n; i++)
		xfer_window_put(x->ops[i].win);
	if (x->timer != NULL)
		event_free(x->timer);
	if (x->r != NULL)
		req_finish(x->r, 0);
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

	x->replied = true;
	if (x->cancelled)
		return;
	for (i = 0; i < x->n; i++)
		bad += x->status[i] < 0;
	if (bad > 0)
		log_debug("%s: %zu of %zu transfers failed (%s)", conn_desc(x->r->conn), bad, x->n,
			  err_str(x->status[0] < 0 ? x->status[0] : x->status[x->n - 1]));
	reply.status = x->status;
	reply.n_status = x->n;
	reply.old = x->old;
	reply.n_old = x->n;
	req_reply(x->r, WIRE_XFER_REPLY, &reply.base);
}

/* The ops not complete yet fail with err (nothing more of theirs is started). */
static void xfer_fail_rest(struct xfer *x, int err)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		if (x->status[i] == 0 && (x->ops[i].pending > 0 || x->ops[i].done < x->ops[i].len))
			x->status[i] = err;
}

static void xfer_flush_done(void *arg, int status);

/* Nothing is in flight any more and everything was started: flush the writes, then answer. */
static void xfer_settle(struct xfer *x)
{
	size_t i;

	if (x->outstanding > 0 || (x->next < x->n && !x->stopped))
		return;
	if (!x->flushing && x->nflush > 0 && !x->replied && !x->cancelled) {
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
				if (x->status[k] == 0 && x->ops[k].kind != XFER_READ)
					x->status[k] = POOL_ELOST;
		}
		if (x->outstanding > 0) {
			evtimer_add(x->timer, &x->window);
			return;
		}
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
			if (x->status[i] == 0 && x->ops[i].kind != XFER_READ)
				x->status[i] = POOL_ELOST;
	x->outstanding--;
	xfer_settle(x);
}

static void xfer_carry_done(void *arg, int status)
{
	struct xfer_carry *c = arg;
	struct xfer_op *o = c->o;
	struct xfer *x = o->x;
	size_t i = (size_t)(o - x->ops);

	xfer_share_back(x, c->len);
	free(c);
	o->pending--;
	if (status < 0 && x->status[i] == 0)
		x->status[i] = carry_lost(status) ? POOL_ELOST : status;
	x->outstanding--;
	x->carrying--;
	if (x->lost_wait && x->carrying == 0) {
		x->lost_wait = false; /* the cancelled chunks are back: go on */
		evtimer_del(x->timer);
		if (!x->stopped && x->next < x->n)
			xfer_share_ready(x);
	} else if (!x->lost_wait && !x->stopped) {
		if (x->carrying > 0)
			evtimer_add(x->timer, &x->window); /* it moves: wait again */
		else
			evtimer_del(x->timer);
	}
	xfer_settle(x);
}

/*
 * Nothing came back for a heartbeat window: the ops in flight fail with
 * POOL_ELOST and the ways to the lenders that did not answer are closed,
 * which cancels their chunks; the request goes on once they are all back,
 * never before: a chunk still in flight would move bytes into or out of
 * a window the client uses again once answered. The next chunk to those
 * lenders starts on a new way. (UCX 1.13 over TCP can leave an endpoint to
 * a live peer silent after another peer died.) Should the cancelled
 * chunks not come back within a heartbeat interval (UCX can hold them
 * while the peer is stopped), the reply goes all the same, every op not
 * complete by then failed.
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
		    (x->ops[i].pending > 0 || (x->flushing && x->ops[i].kind != XFER_READ)))
			x->status[i] = POOL_ELOST;
	if (x->lost_wait) {
		/*
		 * An interval more and the cancelled chunks are not back: answer
		 * anyway, and retire the windows they move into, so that what
		 * may still land there reaches no later transfer (the client
		 * gets a new one).
		 */
		xfer_fail_rest(x, POOL_ELOST);
		x->stopped = true;
		for (i = 0; i < x->n; i++)
			if (x->ops[i].pending > 0 && x->ops[i].win != NULL &&
			    !x->ops[i].win->closed && !x->cancelled) {
				log_warnx("%s: transfers into window %u still out: the window is "
					  "retired",
					  conn_desc(x->r->conn), x->ops[i].win->id);
				x->ops[i].win->closed = true;
			}
		if (!x->replied)
			xfer_reply(x);
		xfer_share_ready(x); /* (its session's next requests go on) */
		return;
	}
	x->lost_wait = true;
	interval = units_timeval((uint64_t)x->pd->conf->heartbeat_ms);
	evtimer_add(x->timer, &interval);
	for (i = 0; i < x->n + x->nflush; i++) {
		uint32_t node = i < x->n ? x->ops[i].last_node : x->flush[i - x->n].node;

		if ((i < x->n ? x->ops[i].pending == 0 : !x->flushing) ||
		    (m = member_find(x->pd, node)) == NULL || (m->ep == NULL && m->link == NULL))
			continue;
		log_warnx("node %u (%s) did not answer transfers for a heartbeat window: "
			  "closing the way to it",
			  m->info->id, m->info->name);
		carry_drop(x->pd, m);
	}
}

/* Note a way written on (once); -ENOMEM when it cannot be noted. */
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

/* One piece of a chunk at memory of this node: done here and now. */
static int xfer_local(struct xfer *x, struct xfer_op *o, const struct grant_piece *p, char *buf)
{
	char *mem = lend_ptr(x->pd, p->arena, p->off, p->len);
	size_t i = (size_t)(o - x->ops);

	if (mem == NULL)
		return -ERANGE;
	switch (o->kind) {
	case XFER_READ:
		memcpy(buf, mem, p->len);
		break;
	case XFER_WRITE:
		memcpy(mem, buf, p->len);
		break;
	case XFER_FADD:
		x->old[i] = __atomic_fetch_add((uint64_t *)mem, o->a, __ATOMIC_SEQ_CST);
		break;
	default: {
		uint64_t expect = o->a;

		__atomic_compare_exchange_n((uint64_t *)mem, &expect, o->b, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		x->old[i] = expect;
		break;
	}
	}
	return 0;
}

/* One piece of a chunk at another node's memory: carried to its lender's poold. */
static int xfer_remote(struct xfer *x, struct xfer_op *o, const struct grant_piece *p, char *buf)
{
	static const enum carry_op ops[] = {
	    [XFER_READ] = CARRY_READ,
	    [XFER_WRITE] = CARRY_WRITE,
	    [XFER_FADD] = CARRY_FADD,
	    [XFER_CSWAP] = CARRY_CSWAP,
	};
	struct carry_place place = {p->node, p->arena, p->ext, p->off - p->ext, p->len};
	size_t i = (size_t)(o - x->ops);
	struct xfer_carry *c = malloc(sizeof(*c));
	uint64_t gen;
	int rc;

	if (c == NULL)
		return -ENOMEM;
	*c = (struct xfer_carry){o, p->len};
	rc = carry_start(x->pd, ops[o->kind], &place, buf, o->a, o->b, &x->old[i], xfer_carry_done,
			 c, &gen);
	if (rc < 0) {
		free(c);
		return rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ENOTCONN ? POOL_ELOST
										   : rc;
	}
	x->outstanding++;
	x->carrying++;
	xfer_share_carry(x, p->len);
	if (!evtimer_pending(x->timer, NULL))
		evtimer_add(x->timer, &x->window);
	o->pending++;
	o->last_node = p->node;
	/* (Unflushed, a write would not be known complete: fail it rather.) */
	if (o->kind != XFER_READ && xfer_flush_add(x, p->node, gen) < 0)
		return -ENOMEM;
	return 0;
}

/* The pieces of [done, done + len) of op o, as the session's grants say now. */
static int xfer_pieces(struct xfer *x, const struct xfer_op *o, uint64_t len,
		       struct grant_piece *pieces)
{
	bool write = o->kind != XFER_READ;
	uint64_t at = o->off + o->done;
	int n;

	if (!o->place)
		return grant_region_pieces(x->pd, x->r->session, o->region, at, len, write, pieces,
					   XFER_MAX_PIECES);
	n = grant_place_check(x->pd, x->r->session, o->node, o->arena, o->region, at, len, write);
	if (n < 0)
		return n;
	pieces[0] = (struct grant_piece){o->node, o->arena, o->region, o->region + at, len, 0};
	return 1;
}

/*
 * Start the next chunk of op o: a copy on this node of XFER_COPY bytes at
 * most, or the pieces carried to other lenders up to the next piece on
 * this node (XFER_CHUNK bytes at most). 0: started, or the op failed;
 * XFER_STEP_WAIT: to be carried, and its session or uid has no room for
 * it now. *cost: what it took of the turn.
 */
static int xfer_chunk(struct xfer *x, struct xfer_op *o, size_t *cost)
{
	static struct grant_piece pieces[XFER_MAX_PIECES];
	size_t i = (size_t)(o - x->ops), k;
	uint64_t len = MIN(o->len - o->done, (uint64_t)XFER_CHUNK);
	int n, rc = 0;

	*cost = XFER_OP_COST;
	n = xfer_pieces(x, o, len, pieces);
	if (n < 0) {
		rc = n;
		goto out_fail;
	}
	if (pieces[0].node == x->pd->node_id) {
		n = 1;
		len = pieces[0].len = MIN(pieces[0].len, (uint64_t)XFER_COPY);
	} else {
		for (k = 0, len = 0; k < (size_t)n && pieces[k].node != x->pd->node_id; k++)
			len += pieces[k].len;
		n = (int)k;
		if (!xfer_share_room(x, len))
			return XFER_STEP_WAIT;
	}
	if (o->done == 0 && o->kind == XFER_READ) {
		x->pd->client_rma.get_ops++;
		x->pd->client_rma.get_bytes += o->len;
	} else if (o->done == 0 && o->kind == XFER_WRITE) {
		x->pd->client_rma.put_ops++;
		x->pd->client_rma.put_bytes += o->len;
	}
	for (k = 0; k < (size_t)n; k++) {
		char *buf = o->buf != NULL ? o->buf + o->done + pieces[k].pos : NULL;

		if (pieces[k].node == x->pd->node_id) {
			rc = xfer_local(x, o, &pieces[k], buf);
			*cost += pieces[k].len;
		} else {
			rc = xfer_remote(x, o, &pieces[k], buf);
			*cost += XFER_CARRY_COST;
		}
		if (rc < 0)
			goto out_fail;
	}
	o->done += len;
	return 0;
out_fail:
	x->status[i] = rc;
	o->done = o->len; /* nothing more of it starts */
	log_debug("%s: xfer op %zu refused: %s", conn_desc(x->r->conn), i, err_str(rc));
	return 0;
}

/*
 * A step of the request for xfer-share.c: start chunks of its ops, in
 * order, for at most *budget of the turn and until the clock reads until
 * (µs). XFER_STEP_MORE: it has more to start; XFER_STEP_DONE: it started
 * all it will (x may be gone); XFER_STEP_WAIT: its next chunk waits for
 * room (xfer_share_room() said where), or for chunks cancelled after a
 * silence to come back.
 */
enum xfer_step xfer_step(struct xfer *x, size_t *budget, uint64_t until)
{
	enum xfer_step step = XFER_STEP_MORE;
	size_t cost;

	x->outstanding++; /* (x stays while it steps) */
	while (x->next < x->n && !x->stopped && *budget > 0) {
		struct xfer_op *o = &x->ops[x->next];

		if (x->lost_wait) {
			xfer_share_wait_own(x);
			step = XFER_STEP_WAIT;
			break;
		}
		if (x->status[x->next] < 0 || o->done == o->len) {
			x->next++;
			continue;
		}
		if (xfer_chunk(x, o, &cost) == XFER_STEP_WAIT) {
			step = XFER_STEP_WAIT;
			break;
		}
		*budget -= MIN(cost, *budget);
		if (units_now_us() >= until)
			*budget = 0;
	}
	if (x->next == x->n || x->stopped)
		step = XFER_STEP_DONE;
	x->outstanding--;
	xfer_settle(x);
	return step;
}

/* The request's session ended: nothing more is started, nor answered; it goes once all is back. */
void xfer_cancel(struct xfer *x)
{
	x->cancelled = x->stopped = true;
	xfer_settle(x);
}

/* Check op m against the session's windows, and note it as ops[i]: 0 or its error. */
static int xfer_op_take(struct xfer *x, const Pool__XferOp *m, size_t i)
{
	struct xfer_op *o = &x->ops[i];
	int rc;

	*o = (struct xfer_op){.x = x, .kind = (uint8_t)m->op, .off = m->off, .a = m->a, .b = m->b};
	o->len = m->op >= XFER_FADD ? 8 : m->len;
	o->done = o->len; /* (until it is found good) */
	if (m->op < XFER_READ || m->op > XFER_CSWAP)
		return -EINVAL;
	if (m->op >= XFER_FADD && m->off % 8 != 0)
		return -EINVAL;
	if (m->op <= XFER_WRITE) {
		rc = m->has_window ? xfer_window_take(x->r->session, m->window, &o->win) : -EBADF;
		if (rc < 0)
			return rc;
		if (m->win_off > o->win->size || o->len > o->win->size - m->win_off)
			return -ERANGE;
		o->buf = o->win->base + m->win_off;
	}
	if (o->len == 0)
		return 0;
	if (m->has_region) {
		o->region = m->region;
	} else if (m->has_node && m->has_arena) {
		o->place = true;
		o->node = m->node;
		o->arena = m->arena;
		o->region = m->off;
		o->off = m->has_within ? m->within : 0;
	} else {
		return -EINVAL;
	}
	o->done = 0;
	return 0;
}

static int xfer_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__Xfer *m = (const Pool__Xfer *)msg;
	struct poold *pd = r->pd;
	/* What the coordinator waits before it declares a silent node dead. */
	uint64_t window_ms =
	    (uint64_t)pd->conf->heartbeat_ms * (uint64_t)pd->conf->heartbeat_misses;
	char why[160];
	struct xfer *x;
	size_t i;
	int rc;

	if (m->n_ops == 0 || m->n_ops > XFER_MAX_OPS)
		return req_errorf(r, -EINVAL, "an xfer has 1 to %d ops", XFER_MAX_OPS);
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	xfer_in_flight++;
	x->pd = pd;
	x->window = units_timeval(window_ms);
	x->n = m->n_ops;
	rc = xfer_share_join(x, r->session, r->uid, why, sizeof(why));
	if (rc < 0) {
		xfer_free(x);
		return req_errorf(r, rc, "%s", why);
	}
	x->status = calloc(x->n, sizeof(*x->status));
	x->old = calloc(x->n, sizeof(*x->old));
	x->ops = calloc(x->n, sizeof(*x->ops));
	x->timer = evtimer_new(pd->base, xfer_timeout, x);
	if (x->status == NULL || x->old == NULL || x->ops == NULL || x->timer == NULL ||
	    (x->r = req_hold(r)) == NULL) {
		xfer_free(x);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	for (i = 0; i < x->n; i++) {
		x->status[i] = xfer_op_take(x, m->ops[i], i);
		if (x->status[i] < 0)
			log_debug("%s: xfer op %zu refused: %s", conn_desc(r->conn), i,
				  err_str(x->status[i]));
	}
	xfer_share_ready(x);
	return 0;
}

/* Whether transfers are being carried now: poold then polls the fabric rather than sleep. */
bool xfer_busy(void)
{
	return xfer_in_flight > 0;
}

/* The client session ended: its requests stop, its windows go once nothing moves into them. */
void xfer_session_end(struct poold *pd, uint64_t session)
{
	(void)pd;
	xfer_share_session_end(session);
	xfer_window_session_end(session);
}

/*
 * poold stops: the requests not waiting on a way go, and every window. (A
 * request with chunks out stays: the ways, closed after this, may still
 * complete them.)
 */
void xfer_close(struct poold *pd)
{
	(void)pd;
	xfer_share_close();
	xfer_window_close_all();
}

/* What the requests did so far (xfer-share.c counts them). */
void xfer_stats(struct poold *pd, uint64_t ret[XFER_STATS])
{
	(void)pd;
	xfer_share_stats(ret);
	ret[0] = xfer_in_flight;
}

const struct ctl_handler xfer_handlers[] = {
    {WIRE_XFER_WINDOW, CTL_ANY, AT_HERE, xfer_window_request, NULL},
    {WIRE_XFER, CTL_ANY, AT_HERE, xfer_request, NULL},
    {0, 0, 0, NULL, NULL},
};

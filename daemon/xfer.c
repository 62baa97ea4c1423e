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
 * within the heartbeat window.
 *
 * The window is sealed against shrinking and growing before the client
 * sees it: a client cannot make poold's mapping of it fault. (With
 * fabric.transfer = rma, its pages are registered with UCX once.) Windows are
 * bounded per session (16, of 1 GiB in all) and per uid
 * (control.max_window_bytes_per_uid, admins excepted): a uid's many
 * connections cannot make poold map and register without end.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/poold.h"
#include "proto/pool_contract.h"

#define XFER_WINDOW_MIN (64u << 10)
#define XFER_WINDOW_MAX (1ull << 30)
#define XFER_WINDOWS_PER_SESSION 16
#define XFER_BYTES_PER_SESSION (1ull << 30)
#define XFER_MAX_OPS 4096
#define XFER_MAX_PIECES 256 /* extents one op may span */

/* The kinds of transfer, as the wire numbers them (in this order). */
#define XFER_READ POOL__XFER_KIND__XFER_KIND_READ
#define XFER_WRITE POOL__XFER_KIND__XFER_KIND_WRITE
#define XFER_FADD POOL__XFER_KIND__XFER_KIND_FETCH_ADD
#define XFER_CSWAP POOL__XFER_KIND__XFER_KIND_COMPARE_SWAP

struct xfer_window {
	LIST_ENTRY(xfer_window) entry;
	uint64_t session;
	uid_t uid; /* of its session: bounded by control.max_window_bytes_per_uid */
	uint32_t id;
	char *base;
	size_t size;
	struct fab_mem *mem;
	unsigned busy; /* transfers in flight into or out of it */
	bool closed;   /* its session ended: unmapped once not busy */
};

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

static LIST_HEAD(, xfer_window) xfer_windows = LIST_HEAD_INITIALIZER(xfer_windows);
static uint32_t xfer_next_window;
static size_t xfer_in_flight; /* requests started and not answered yet */

static void xfer_window_free(struct xfer_window *w)
{
	LIST_REMOVE(w, entry);
	if (w->mem != NULL)
		fab_mem_deregister(w->mem);
	munmap(w->base, w->size);
	free(w);
}

static void xfer_window_put(struct xfer_window *w)
{
	if (w != NULL && --w->busy == 0 && w->closed)
		xfer_window_free(w);
}

static struct xfer_window *xfer_window_find(uint64_t session, uint32_t id)
{
	struct xfer_window *w;

	LIST_FOREACH(w, &xfer_windows, entry)
		if (w->session == session && w->id == id && !w->closed)
			return w;
	return NULL;
}

/* Whether the session's window id was retired (closed while transfers were still out). */
static bool xfer_window_retired(uint64_t session, uint32_t id)
{
	struct xfer_window *w;

	LIST_FOREACH(w, &xfer_windows, entry)
		if (w->session == session && w->id == id && w->closed)
			return true;
	return false;
}

/* A new window for the caller's session: its memfd goes with the reply. */
static int xfer_window_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__XferWindow *m = (const Pool__XferWindow *)msg;
	Pool__XferWindowReply reply = POOL__XFER_WINDOW_REPLY__INIT;
	uint64_t uid_max = (uint64_t)r->pd->conf->max_window_bytes_per_uid;
	uint64_t size = (m->size + 4095) & ~4095ull, held = 0, uid_held = 0;
	struct xfer_window *w;
	unsigned count = 0;
	int fd, rc;

	if (m->size == 0 && m->has_window) {
		Pool__Ok ok = POOL__OK__INIT;

		w = xfer_window_find(r->session, m->window);
		if (w == NULL)
			return req_errorf(r, -ENOENT, "no window %u in this session", m->window);
		w->closed = true; /* transfers into it are refused from now on */
		if (w->busy == 0)
			xfer_window_free(w);
		return req_reply(r, WIRE_OK, &ok.base);
	}
	if (m->size < XFER_WINDOW_MIN || m->size > XFER_WINDOW_MAX)
		return req_errorf(r, -EINVAL, "a window is 64K to 1G, not %llu bytes",
				  (unsigned long long)m->size);
	LIST_FOREACH(w, &xfer_windows, entry) {
		if (w->session == r->session && !w->closed) {
			count++;
			held += w->size;
		}
		/* Retired windows too: poold holds them until the fabric lets go. */
		if (w->uid == r->uid)
			uid_held += w->size;
	}
	if (count >= XFER_WINDOWS_PER_SESSION || held + size > XFER_BYTES_PER_SESSION)
		return req_errorf(r, -EUSERS, "a session holds at most %d windows, of 1G in all",
				  XFER_WINDOWS_PER_SESSION);
	if (!r->admin && uid_held + size > uid_max)
		return req_errorf(r, -EUSERS,
				  "the windows of uid %u may take %llu bytes "
				  "(control.max_window_bytes_per_uid); it holds %llu, and this "
				  "one has %llu",
				  (unsigned)r->uid, (unsigned long long)uid_max,
				  (unsigned long long)uid_held, (unsigned long long)size);
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	fd = memfd_create("pool-window", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = req_errorf(r, -errno, "cannot make a window: %s", err_str(-errno));
		goto out_fd;
	}
	w->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w->base == MAP_FAILED) {
		rc = req_errorf(r, -errno, "cannot map a window: %s", err_str(-errno));
		goto out_fd;
	}
	w->size = size;
	rc = r->pd->fab != NULL ? fab_mem_register(r->pd->fab, w->base, size, &w->mem) : 0;
	if (rc < 0) {
		req_errorf(r, rc, "cannot register a window: %s", err_str(rc));
		goto out_unmap;
	}
	w->session = r->session;
	w->uid = r->uid;
	w->id = ++xfer_next_window;
	reply.window = w->id;
	reply.size = size;
	rc = conn_send_fd(r->conn, WIRE_XFER_WINDOW_REPLY, r->id, &reply.base, fd);
	if (rc < 0) {
		req_errorf(r, rc, "cannot pass the window: %s", err_str(rc));
		if (w->mem != NULL)
			fab_mem_deregister(w->mem);
		goto out_unmap;
	}
	close(fd);
	LIST_INSERT_HEAD(&xfer_windows, w, entry);
	return 0;
out_unmap:
	munmap(w->base, size);
out_fd:
	if (fd >= 0)
		close(fd);
	free(w);
	return rc;
}

/* The client session ended: its windows go once nothing moves into them. */
void xfer_session_end(struct poold *pd, uint64_t session)
{
	struct xfer_window *w, *next;

	(void)pd;
	for (w = LIST_FIRST(&xfer_windows); w != NULL; w = next) {
		next = LIST_NEXT(w, entry);
		if (w->session != session)
			continue;
		w->closed = true;
		if (w->busy == 0)
			xfer_window_free(w);
	}
}

/* poold stops: every window goes. */
void xfer_close(struct poold *pd)
{
	(void)pd;
	while (!LIST_EMPTY(&xfer_windows))
		xfer_window_free(LIST_FIRST(&xfer_windows));
}

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
		w = op->has_window ? xfer_window_find(x->r->session, op->window) : NULL;
		if (w == NULL)
			return op->has_window && xfer_window_retired(x->r->session, op->window)
				   ? -EBADFD /* retired: the client takes a new one */
				   : -EBADF;
		if (op->win_off > w->size || len > w->size - op->win_off)
			return -ERANGE;
		w->busy++;
		x->ops[i].win = w;
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

const struct ctl_handler xfer_handlers[] = {
    {WIRE_XFER_WINDOW, CTL_ANY, AT_HERE, xfer_window_request, NULL},
    {WIRE_XFER, CTL_ANY, AT_HERE, xfer_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * daemon/xfer/xfer-share.c - how client transfers share the loop and the ways
 * to other lenders between tenants.
 *
 * Each session with requests in progress has a share: its requests in the
 * order they came. Sessions with chunks to start wait in one run queue; a
 * turn of the loop (a zero timer, so that the sockets ready meanwhile are
 * served first) takes the session at its head, starts chunks of its
 * oldest request for a slice of the turn (xfer_step()), and puts it back
 * at the tail while it has more: sessions go round, however much each
 * asked for, and a turn does about a millisecond of work in all.
 *
 * What a session has carried to other lenders and not had back is
 * bounded, per session (control.max_xfer_bytes_per_session) and per uid
 * (control.max_xfer_bytes_per_uid, every uid alike): a chunk that would
 * pass a bound waits (one is always let go when nothing of the session,
 * or the uid, is out). A session waiting on its own bound runs again when
 * one of its chunks comes back; sessions waiting on their uid's, in the
 * order they began to wait, one for each chunk of the uid that comes back.
 * So one tenant's huge request holds at most that much of the links ahead
 * of another's, and is never refused for its size.
 *
 * Requests in progress are bounded too, XFER_REQUESTS_PER_SESSION per
 * session and XFER_REQUESTS_PER_UID per uid: each holds its ops (about
 * 100 bytes each); one more is refused with EBUSY. libpool sends one at
 * a time per handle, and sends one refused so again a little later.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "daemon/xfer/xfer-int.h"
#include "daemon/xfer/xfer.h"

struct xfer_uid;

struct xfer_share {
	LIST_ENTRY(xfer_share) entry;
	TAILQ_ENTRY(xfer_share) queue; /* in the run queue, or its uid's waiters */
	uint64_t session;
	struct xfer_uid *u;
	TAILQ_HEAD(, xfer) xfers; /* in the order they came */
	unsigned n;
	uint64_t carried; /* bytes of its chunks out */
	enum xfer_wait wait;
	bool queued;   /* in the run queue */
	unsigned busy; /* in a turn: not freed */
};
TAILQ_HEAD(xfer_share_list, xfer_share);

struct xfer_uid {
	LIST_ENTRY(xfer_uid) entry;
	uid_t uid;
	unsigned shares, n; /* its sessions with requests, and their requests */
	uint64_t carried;
	struct xfer_share_list waiters; /* waiting for room under the uid's bound */
};

static LIST_HEAD(, xfer_share) shares = LIST_HEAD_INITIALIZER(shares);
static LIST_HEAD(, xfer_uid) uids = LIST_HEAD_INITIALIZER(uids);
static struct xfer_share_list runq = TAILQ_HEAD_INITIALIZER(runq);
static struct event *turn_ev;
static uint64_t carried_now; /* bytes of every session out */
static uint64_t st_turns, st_turn_max_us, st_turn_cpu_max_us, st_waits, st_busy;

/* The CPU time this thread used, in µs: what a turn did, whether or not the host let it run. */
static uint64_t share_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void share_turn(evutil_socket_t fd, short what, void *arg);

static struct xfer_uid *share_uid(uid_t uid)
{
	struct xfer_uid *u;

	LIST_FOREACH(u, &uids, entry)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->uid = uid;
	TAILQ_INIT(&u->waiters);
	LIST_INSERT_HEAD(&uids, u, entry);
	return u;
}

/* The share goes once it has no request and no turn holds it. */
static void share_put(struct xfer_share *s)
{
	if (s->n > 0 || s->busy > 0)
		return;
	if (s->queued)
		TAILQ_REMOVE(&runq, s, queue);
	else if (s->wait == XFER_WAIT_UID)
		TAILQ_REMOVE(&s->u->waiters, s, queue);
	LIST_REMOVE(s, entry);
	if (--s->u->shares == 0) {
		LIST_REMOVE(s->u, entry);
		free(s->u);
	}
	free(s);
}

/*
 * Count x among its session's requests (and its uid's): 0, or -EBUSY
 * (too many in progress, said in why) or -ENOMEM.
 */
int xfer_share_join(struct xfer *x, uint64_t session, uid_t uid, char *why, size_t whylen)
{
	struct xfer_share *s;
	struct xfer_uid *u;

	if (turn_ev == NULL && (turn_ev = evtimer_new(x->pd->base, share_turn, NULL)) == NULL)
		goto out_nomem;
	LIST_FOREACH(s, &shares, entry)
		if (s->session == session)
			break;
	if (s != NULL && s->n >= XFER_REQUESTS_PER_SESSION) {
		st_busy++;
		snprintf(why, whylen,
			 "a session has at most %d transfer requests in progress; send it again "
			 "once one is answered",
			 XFER_REQUESTS_PER_SESSION);
		return -EBUSY;
	}
	u = s != NULL ? s->u : share_uid(uid);
	if (u == NULL)
		goto out_nomem;
	if (u->n >= XFER_REQUESTS_PER_UID) {
		st_busy++;
		snprintf(why, whylen,
			 "uid %u has %d transfer requests in progress, the most it may; send it "
			 "again once one is answered",
			 (unsigned)uid, XFER_REQUESTS_PER_UID);
		if (u->shares == 0) {
			LIST_REMOVE(u, entry);
			free(u);
		}
		return -EBUSY;
	}
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL) {
			if (u->shares == 0) {
				LIST_REMOVE(u, entry);
				free(u);
			}
			goto out_nomem;
		}
		s->session = session;
		s->u = u;
		u->shares++;
		TAILQ_INIT(&s->xfers);
		LIST_INSERT_HEAD(&shares, s, entry);
	}
	s->n++;
	u->n++;
	TAILQ_INSERT_TAIL(&s->xfers, x, entry);
	x->share = s;
	return 0;
out_nomem:
	snprintf(why, whylen, "out of memory");
	return -ENOMEM;
}

/* x is done: its session has one request fewer. */
void xfer_share_leave(struct xfer *x)
{
	struct xfer_share *s = x->share;

	if (s == NULL)
		return;
	TAILQ_REMOVE(&s->xfers, x, entry);
	x->share = NULL;
	s->n--;
	s->u->n--;
	share_put(s);
}

/* Queue s for a turn, at the tail. */
static void share_queue(struct xfer_share *s)
{
	static const struct timeval now = {0, 0};

	if (s->queued)
		return;
	if (s->wait == XFER_WAIT_UID)
		TAILQ_REMOVE(&s->u->waiters, s, queue);
	s->wait = XFER_WAIT_NONE;
	s->queued = true;
	TAILQ_INSERT_TAIL(&runq, s, queue);
	if (!evtimer_pending(turn_ev, NULL))
		evtimer_add(turn_ev, &now);
}

/* x has chunks to start: its session takes its turns (and sees again whether it must wait). */
void xfer_share_ready(struct xfer *x)
{
	share_queue(x->share);
}

/*
 * Whether len more bytes of x's session may be carried now; if not, the
 * session waits (on its own bound or its uid's) until chunks come back.
 */
bool xfer_share_room(struct xfer *x, uint64_t len)
{
	struct xfer_share *s = x->share;
	uint64_t smax = (uint64_t)x->pd->conf->max_xfer_bytes_per_session;
	uint64_t umax = (uint64_t)x->pd->conf->max_xfer_bytes_per_uid;

	if (s->carried > 0 && s->carried + len > smax)
		s->wait = XFER_WAIT_SESSION;
	else if (s->u->carried > 0 && s->u->carried + len > umax)
		s->wait = XFER_WAIT_UID;
	else
		return true;
	st_waits++;
	return false;
}

/* x waits for chunks of its own to come back. */
void xfer_share_wait_own(struct xfer *x)
{
	x->share->wait = XFER_WAIT_SESSION;
}

/* len bytes of x's session are carried now. */
void xfer_share_carry(struct xfer *x, uint64_t len)
{
	x->share->carried += len;
	x->share->u->carried += len;
	carried_now += len;
}

/* len bytes of x's session came back: a session waiting for them takes its turn. */
void xfer_share_back(struct xfer *x, uint64_t len)
{
	struct xfer_share *s = x->share, *w;

	s->carried -= len;
	s->u->carried -= len;
	carried_now -= len;
	if (s->wait == XFER_WAIT_SESSION && !TAILQ_EMPTY(&s->xfers))
		share_queue(s);
	if ((w = TAILQ_FIRST(&s->u->waiters)) != NULL)
		share_queue(w);
}

/* The oldest request of s with chunks to start, if any. */
static struct xfer *share_next(struct xfer_share *s)
{
	struct xfer *x;

	TAILQ_FOREACH(x, &s->xfers, entry)
		if (x->next < x->n && !x->stopped)
			return x;
	return NULL;
}

/* A turn: sessions in the run queue, each a slice of it, until it is used or none waits. */
static void share_turn(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	size_t budget = XFER_TURN_BYTES;
	uint64_t t0 = units_now_us(), cpu0 = share_cpu_us();
	struct xfer_share *s;
	struct xfer *x;

	(void)fd;
	(void)what;
	(void)arg;
	while (budget > 0 && (s = TAILQ_FIRST(&runq)) != NULL) {
		size_t slice = MIN(budget, (size_t)XFER_STEP_BYTES);
		size_t left = slice;
		enum xfer_step step;

		TAILQ_REMOVE(&runq, s, queue);
		s->queued = false;
		x = share_next(s);
		if (x == NULL)
			continue;
		s->busy++;
		step = xfer_step(x, &left, t0 + XFER_TURN_US); /* (x may be gone after) */
		budget = units_now_us() >= t0 + XFER_TURN_US ? 0 : budget - (slice - left);
		s->busy--;
		if (step == XFER_STEP_WAIT) {
			if (s->wait == XFER_WAIT_UID && !s->queued)
				TAILQ_INSERT_TAIL(&s->u->waiters, s, queue);
		} else if (share_next(s) != NULL) {
			share_queue(s);
		}
		share_put(s);
	}
	st_turns++;
	st_turn_max_us = MAX(st_turn_max_us, units_now_us() - t0);
	st_turn_cpu_max_us = MAX(st_turn_cpu_max_us, share_cpu_us() - cpu0);
	if (!TAILQ_EMPTY(&runq))
		evtimer_add(turn_ev, &now);
}

/* The session ended: its requests stop (each goes once its chunks out are back). */
void xfer_share_session_end(uint64_t session)
{
	struct xfer_share *s;
	struct xfer *x, *next;

	LIST_FOREACH(s, &shares, entry)
		if (s->session == session)
			break;
	if (s == NULL)
		return;
	s->busy++;
	for (x = TAILQ_FIRST(&s->xfers); x != NULL; x = next) {
		next = TAILQ_NEXT(x, entry);
		xfer_cancel(x); /* (may free x) */
	}
	s->busy--;
	share_put(s);
}

/* poold stops: the requests without chunks out go, and the turns. */
void xfer_share_close(void)
{
	struct xfer_share *s, *snext;
	struct xfer *x, *next;

	for (s = LIST_FIRST(&shares); s != NULL; s = snext) {
		s->busy++;
		for (x = TAILQ_FIRST(&s->xfers); x != NULL; x = next) {
			next = TAILQ_NEXT(x, entry);
			xfer_cancel(x);
		}
		s->busy--;
		snext = LIST_NEXT(s, entry);
		share_put(s);
	}
	if (turn_ev != NULL)
		event_free(turn_ev);
	turn_ev = NULL;
}

/*
 * xfer_stats()'s counts from here: [1] bytes carried now, [2] turns, [3]
 * the longest turn (µs, by the clock), [4] the most CPU time a turn took
 * (µs), [5] chunks that waited for room, [6] requests refused.
 */
void xfer_share_stats(uint64_t ret[XFER_STATS])
{
	ret[1] = carried_now;
	ret[2] = st_turns;
	ret[3] = st_turn_max_us;
	ret[4] = st_turn_cpu_max_us;
	ret[5] = st_waits;
	ret[6] = st_busy;
}

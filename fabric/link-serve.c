/*
 * fabric/link-serve.c - the target's end of links: the handshake of every
 * connection the listener accepts, then the requests of an authenticated
 * peer, each checked by the owner (fab_link_ops.check) before a byte moves.
 *
 * Until it proved itself, a connection gets a nonce and nothing more, and
 * is bounded: LINK handshake_ms to say hello, max_unauth of them at once,
 * max_unauth_per_addr from one address. A hello that fails is closed and
 * reported (fab_link_ops.refused). Served, a link reads a request only when
 * fewer than LINK_MAX_OUT replies wait to be sent, moves at most its slice
 * bytes per turn of the loop, and a request whose check says "not yet"
 * stops its link (the requests behind it wait too, in order) until the
 * owner kicks it or wait_ms pass. A read's bytes are checked again before
 * each slice of them is sent, a write's before each slice is received: a
 * range given back meanwhile is never reached. A write refused, or refused
 * midway, is received and dropped; a read refused midway cannot be told in
 * its reply any more, so the link is closed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/event.h>

#include "fabric/link_int.h"

#define LINK_STAGE (64u << 10)
#define LINK_MAX_OUT 64 /* replies waiting to be sent: no more requests are read */
#define LINK_IOV 32

/* One reply on its way out; a read's bytes, or a call's answer, follow its header. */
struct link_rep {
	uint8_t hdr[LINK_REP_LEN];
	uint32_t hdr_done;
	struct fab_link_req req;	 /* a read's, checked again before each slice */
	uint64_t len, done;		 /* its bytes, and how many were sent */
	uint8_t *data;			 /* a call's answer */
	struct fab_link_answer *waiting; /* a call not answered yet: nothing from here on goes */
};

/* A call the owner has yet to answer: its reply's place in its link's ring. */
struct fab_link_answer {
	struct link_in *li; /* NULL once the link closed */
	unsigned slot;
	uint64_t id, max;
};

struct link_in {
	LIST_ENTRY(link_in) entry;
	LIST_ENTRY(link_in) park_entry;
	struct fab_links *ls;
	int fd;
	struct event *rd, *wr;
	struct event *deadline; /* the hello's, or a waiting request's */
	struct event *stall;	/* replies not read by the requester */
	struct event *more;	/* a zero timer: the slice ended with bytes still staged */
	bool authed, parked, last_try, reading_stopped;
	char who[96];
	struct sockaddr_storage sa;
	uint8_t nonce[LINK_NONCE_LEN];
	struct fab_link_peer peer;
	uint8_t *rbuf;
	size_t rpos, rlen;
	/* the write (or call) whose bytes are being received */
	bool writing;
	struct fab_link_req wreq;
	uint64_t wid, wdone;
	int wstatus;
	uint8_t *wbuf; /* a call's bytes */
	struct link_rep out[LINK_MAX_OUT];
	unsigned out_head, out_n;
};

static const struct timeval link_now = {0, 0};

static struct link_in_list *in_list(struct fab_links *ls)
{
	return &ls->ins;
}

static struct link_in_list *park_list(struct fab_links *ls)
{
	return &ls->parked;
}

static void in_close(struct link_in *li)
{
	struct fab_links *ls = li->ls;

	unsigned k;

	for (k = 0; k < li->out_n; k++) {
		struct link_rep *r = &li->out[(li->out_head + k) % LINK_MAX_OUT];

		if (r->waiting != NULL)
			r->waiting->li = NULL; /* (its answer only frees it) */
		free(r->data);
	}
	if (li->parked)
		LIST_REMOVE(li, park_entry);
	LIST_REMOVE(li, entry);
	ls->nins--;
	if (!li->authed)
		ls->nunauth--;
	if (li->rd != NULL)
		event_free(li->rd);
	if (li->wr != NULL)
		event_free(li->wr);
	if (li->deadline != NULL)
		event_free(li->deadline);
	if (li->stall != NULL)
		event_free(li->stall);
	if (li->more != NULL)
		event_free(li->more);
	close(li->fd);
	free(li->rbuf);
	free(li->wbuf);
	free(li);
}

/* Close li and say why (a stranger's failed handshake, a peer's broken request); false. */
static bool in_refuse(struct link_in *li, const char *what, int err)
{
	li->ls->stats.refused_links += !li->authed;
	li->ls->ops->refused(li->ls->arg, li->who, what, err);
	in_close(li);
	return false;
}

static size_t in_avail(const struct link_in *li)
{
	return li->rlen - li->rpos;
}

/* More bytes into the staging buffer: >0, 0 at the end of the stream, -errno (-EAGAIN). */
static ssize_t in_fill(struct link_in *li)
{
	ssize_t n;

	if (li->rpos > 0 && li->rpos == li->rlen)
		li->rpos = li->rlen = 0;
	else if (li->rpos > LINK_STAGE / 2) {
		memmove(li->rbuf, li->rbuf + li->rpos, li->rlen - li->rpos);
		li->rlen -= li->rpos;
		li->rpos = 0;
	}
	n = recv(li->fd, li->rbuf + li->rlen, LINK_STAGE - li->rlen, 0);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : errno == EWOULDBLOCK ? -EAGAIN : -errno;
	li->rlen += (size_t)n;
	li->ls->stats.moved += (uint64_t)n;
	return n;
}

static int in_check(struct link_in *li, const struct fab_link_req *req, bool last, void **ret_ptr)
{
	int rc = li->ls->ops->check(li->ls->arg, &li->peer, req, last, ret_ptr);

	return rc == -EAGAIN && last ? -ETIMEDOUT : rc;
}

static void in_send(struct link_in *li, size_t *budget);

/* Queue a reply; a read's len bytes follow it. */
static struct link_rep *in_reply(struct link_in *li, uint64_t id, int status, uint64_t old,
				 const struct fab_link_req *req, uint64_t len)
{
	struct link_rep *r = &li->out[(li->out_head + li->out_n) % LINK_MAX_OUT];

	memset(r, 0, sizeof(*r));
	link_put_rep(r->hdr, id, status, old);
	if (req != NULL)
		r->req = *req;
	r->len = len;
	li->out_n++;
	if (status < 0)
		li->ls->stats.refused_requests++;
	else
		li->ls->stats.served_ops++;
	return r;
}

void fab_link_answer(struct fab_link_answer *ans, int status, const void *out, size_t len)
{
	struct link_in *li = ans->li;
	struct link_rep *r;

	if (li == NULL) {
		free(ans);
		return;
	}
	r = &li->out[ans->slot];
	if (status == 0 && len > ans->max)
		status = -EMSGSIZE;
	if (status == 0 && len > 0 && (r->data = malloc(len)) == NULL)
		status = -ENOMEM;
	if (status == 0 && len > 0)
		memcpy(r->data, out, len);
	if (status > 0 || status < -4095)
		status = -EIO;
	link_put_rep(r->hdr, ans->id, status, status == 0 ? len : 0);
	r->len = status == 0 ? len : 0;
	r->waiting = NULL;
	if (status < 0) {
		li->ls->stats.refused_requests++;
		li->ls->stats.served_ops--;
	}
	free(ans);
	event_add(li->wr, NULL); /* (in_send() goes on from it) */
}

/* A call's bytes all came: its reply waits in the ring for the owner's answer. */
static void in_call(struct link_in *li)
{
	struct fab_link_answer *ans = malloc(sizeof(*ans));
	struct link_rep *r;

	if (ans == NULL) {
		in_reply(li, li->wid, -ENOMEM, 0, NULL, 0);
		return;
	}
	*ans = (struct fab_link_answer){li, (li->out_head + li->out_n) % LINK_MAX_OUT, li->wid,
					li->wreq.a};
	r = in_reply(li, li->wid, 0, 0, NULL, 0);
	r->waiting = ans;
	li->ls->ops->call(li->ls->arg, &li->peer, li->wbuf, (size_t)li->wreq.len,
			  (size_t)li->wreq.a, ans);
}

/* Carry out one checked request (status 0 and ptr) or refuse it (status < 0). */
static void in_handle(struct link_in *li, const struct fab_link_req *req, uint64_t id, int status,
		      void *ptr)
{
	uint64_t old = 0;

	if (status < 0) {
		char what[64];

		snprintf(what, sizeof(what), "request (op %u, arena %u) refused", (unsigned)req->op,
			 req->arena);
		li->ls->ops->refused(li->ls->arg, li->who, what, status);
	}
	switch (req->op) {
	case FAB_LINK_READ:
		in_reply(li, id, status, 0, status == 0 ? req : NULL, status == 0 ? req->len : 0);
		return;
	case FAB_LINK_WRITE:
	case FAB_LINK_CALL:
		li->writing = true;
		li->wreq = *req;
		li->wid = id;
		li->wdone = 0;
		li->wstatus = status;
		if (req->op == FAB_LINK_CALL && status == 0 && req->len > 0 &&
		    (li->wbuf = malloc(req->len)) == NULL)
			li->wstatus = -ENOMEM;
		return;
	case FAB_LINK_FADD:
	case FAB_LINK_CSWAP:
		if (status == 0 && (uintptr_t)ptr % 8 != 0)
			status = -EINVAL;
		if (status == 0 && req->op == FAB_LINK_FADD) {
			old = __atomic_fetch_add((uint64_t *)ptr, req->a, __ATOMIC_SEQ_CST);
		} else if (status == 0) {
			old = req->a;
			__atomic_compare_exchange_n((uint64_t *)ptr, &old, req->b, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		}
		in_reply(li, id, status, old, NULL, 0);
		return;
	}
}

/*
 * The bytes of the write being received: from the staging buffer, or
 * straight from the socket into the memory the check names (again, before
 * each slice); its reply is queued as soon as the last came. 1: moved
 * some, 0: it is complete, -EAGAIN: wait for more, other -errno: the link
 * is broken.
 */
static int in_write_bytes(struct link_in *li, size_t *budget)
{
	uint64_t left = li->wreq.len - li->wdone;
	size_t n = (size_t)MIN(MIN(left, (uint64_t)in_avail(li)), (uint64_t)*budget);
	void *ptr = NULL;
	ssize_t got;

	if (li->wreq.op == FAB_LINK_CALL)
		ptr = li->wbuf;
	else if (left > 0 && li->wstatus == 0)
		li->wstatus = in_check(li, &li->wreq, true, &ptr);
	if (left == 0) {
		got = 0;
	} else if (n > 0) {
		if (li->wstatus == 0)
			memcpy((char *)ptr + li->wdone, li->rbuf + li->rpos, n);
		li->rpos += n;
		got = (ssize_t)n;
	} else if (left < LINK_STAGE / 2) {
		got = in_fill(li);
		return got > 0 ? 1 : got == 0 ? -ECONNRESET : (int)got;
	} else {
		n = (size_t)MIN(left, (uint64_t)*budget);
		if (li->wstatus == 0)
			got = recv(li->fd, (char *)ptr + li->wdone, n, 0);
		else
			got = recv(li->fd, NULL, n,
				   MSG_TRUNC); /* (TCP drops what it would have copied) */
		if (got == 0)
			return -ECONNRESET;
		if (got < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN
											 : -errno;
		li->ls->stats.moved += (uint64_t)got;
	}
	li->wdone += (uint64_t)got;
	*budget -= (size_t)got;
	if (li->wdone < li->wreq.len)
		return 1;
	li->writing = false;
	if (li->wstatus == 0)
		li->ls->stats.served_bytes += li->wreq.len;
	if (li->wreq.op == FAB_LINK_CALL && li->wstatus == 0)
		in_call(li);
	else
		in_reply(li, li->wid, li->wstatus, 0, NULL, 0);
	free(li->wbuf);
	li->wbuf = NULL;
	return 0;
}

/*
 * The requester's hello: check it and its proof, then prove ourselves.
 * false: li was refused, and is gone.
 */
static bool in_hello(struct link_in *li)
{
	const struct fab_link_peer *self = &li->ls->cfg.self;
	uint8_t *hello = li->rbuf + li->rpos, proof[LINK_PROOF_LEN], welcome[LINK_WELCOME_LEN];
	struct link_hello h;
	int rc = link_get_hello(hello, &h);
	char who[sizeof(li->who) + 24];

	if (rc < 0)
		return in_refuse(li, "not a link hello", rc);
	if (link_proof(li->ls->cfg.key, false, li->nonce, hello, proof) < 0)
		return in_refuse(li, "cannot compute a proof", -EIO);
	if (!link_proof_equal(proof, h.proof))
		return in_refuse(li, "failed authentication (not a member, or another key)",
				 -EACCES);
	if (h.to_node != self->node || h.to_incarnation != self->incarnation)
		return in_refuse(li, "asked for another node or incarnation", -ESTALE);
	if (li->ls->nins - li->ls->nunauth >= li->ls->cfg.max_links)
		return in_refuse(li, "too many links", -EUSERS);
	li->rpos += LINK_HELLO_LEN;
	li->authed = true;
	li->ls->nunauth--;
	li->peer = (struct fab_link_peer){h.from_node, h.from_incarnation, h.from_epoch};
	snprintf(who, sizeof(who), "node %u (%s)", h.from_node, li->who);
	snprintf(li->who, sizeof(li->who), "%.*s", (int)sizeof(li->who) - 1, who);
	evtimer_del(li->deadline);
	if (link_proof(li->ls->cfg.key, true, li->nonce, hello, proof) < 0)
		return in_refuse(li, "cannot compute a proof", -EIO);
	link_put_welcome(welcome, proof);
	if (send(li->fd, welcome, sizeof(welcome), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof(welcome)) {
		in_close(li);
		return false;
	}
	return true;
}

/* Stop reading until kicked or until the wait ends: the check said "not yet". */
static void in_park(struct link_in *li)
{
	struct timeval tv = {li->ls->cfg.wait_ms / 1000, (li->ls->cfg.wait_ms % 1000) * 1000};

	li->parked = true;
	LIST_INSERT_HEAD(park_list(li->ls), li, park_entry);
	event_del(li->rd);
	evtimer_add(li->deadline, &tv);
}

static void in_unpark(struct link_in *li, bool last)
{
	if (!li->parked)
		return;
	li->parked = false;
	li->last_try = last;
	LIST_REMOVE(li, park_entry);
	evtimer_del(li->deadline);
	event_add(li->rd, NULL);
	event_active(li->rd, EV_READ, 0);
}

/*
 * Serve what came, for at most *budget bytes: the hello, then requests
 * and the bytes of writes. Returns false when li was closed.
 */
static bool in_serve(struct link_in *li, size_t *budget)
{
	struct fab_link_req req;
	void *ptr = NULL;
	uint64_t id;
	ssize_t got;
	int rc;

	while (*budget > 0) {
		if (!li->authed) {
			if (in_avail(li) >= LINK_HELLO_LEN) {
				if (!in_hello(li))
					return false;
				continue;
			}
		} else if (li->writing) {
			rc = in_write_bytes(li, budget);
			if (rc == -EAGAIN)
				return true;
			if (rc < 0) {
				in_close(li);
				return false;
			}
			continue;
		} else if (li->parked) {
			return true;
		} else if (li->out_n == LINK_MAX_OUT) {
			li->reading_stopped = true;
			event_del(li->rd);
			return true;
		} else if (in_avail(li) >= LINK_REQ_LEN) {
			rc = link_get_req(li->rbuf + li->rpos, &req, &id);
			if (rc < 0)
				return in_refuse(li, "sent a malformed request", rc);
			rc = link_req_check(&req);
			if (rc == 0 && req.op == FAB_LINK_CALL)
				rc = li->ls->ops->call != NULL ? 0 : -EOPNOTSUPP;
			else if (rc == 0)
				rc = in_check(li, &req, li->last_try, &ptr);
			if (rc == -EAGAIN) {
				in_park(li);
				return true;
			}
			if (rc == -ECONNABORTED)
				return in_refuse(
				    li, "not served: no member as its hello said, or fenced", rc);
			li->last_try = false;
			li->rpos += LINK_REQ_LEN;
			in_handle(li, &req, id, rc, ptr);
			continue;
		}
		got = in_fill(li);
		if (got == -EAGAIN)
			return true;
		if (got <= 0) {
			if (got < 0 || !li->authed || in_avail(li) > 0 || li->writing)
				li->ls->ops->refused(li->ls->arg, li->who, "closed midway",
						     got < 0 ? (int)got : -ECONNRESET);
			in_close(li);
			return false;
		}
	}
	return true;
}

static void in_read(evutil_socket_t fd, short what, void *arg)
{
	struct link_in *li = arg;
	size_t budget = li->ls->cfg.slice;

	(void)fd;
	(void)what;
	if (!in_serve(li, &budget))
		return;
	/*
	 * The slice ended with what came still staged: the socket may say
	 * nothing more, so the rest is served at the next turn, after the
	 * loop polled its other fds.
	 */
	if (budget == 0 && !li->parked && !li->reading_stopped && (in_avail(li) > 0 || li->writing))
		evtimer_add(li->more, &link_now);
	in_send(li, &budget);
}

/*
 * Send what is queued, at most *budget bytes of it. A read's bytes are
 * checked again first; refused midway, the link closes (its reply said yes).
 */
static void in_send(struct link_in *li, size_t *budget)
{
	struct iovec iov[LINK_IOV];
	struct msghdr msg = {.msg_iov = iov};
	size_t niov = 0, total = 0, k;
	ssize_t n;

	if (*budget == 0) { /* (the next turn sends) */
		if (li->out_n > 0)
			event_add(li->wr, NULL);
		return;
	}
	for (k = 0; k < li->out_n && niov + 2 <= LINK_IOV && total < *budget; k++) {
		struct link_rep *r = &li->out[(li->out_head + k) % LINK_MAX_OUT];

		if (r->waiting != NULL)
			break; /* (replies go in order) */
		if (r->hdr_done < LINK_REP_LEN) {
			iov[niov++] =
			    (struct iovec){r->hdr + r->hdr_done, LINK_REP_LEN - r->hdr_done};
			total += LINK_REP_LEN - r->hdr_done;
		}
		if (r->done < r->len && total < *budget && r->data != NULL) {
			iov[niov] = (struct iovec){r->data + r->done,
						   (size_t)MIN(r->len - r->done, *budget - total)};
			total += iov[niov++].iov_len;
		} else if (r->done < r->len && total < *budget) {
			void *ptr;
			int rc = in_check(li, &r->req, true, &ptr);

			if (rc < 0) {
				in_refuse(li, "lost a read's range while sending it", rc);
				return;
			}
			iov[niov] = (struct iovec){(char *)ptr + r->done,
						   (size_t)MIN(r->len - r->done, *budget - total)};
			total += iov[niov++].iov_len;
		}
	}
	if (niov == 0)
		goto out_idle;
	msg.msg_iovlen = niov;
	n = sendmsg(li->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			in_close(li);
			return;
		}
		n = 0;
	}
	li->ls->stats.moved += (uint64_t)n;
	*budget -= MIN((size_t)n, *budget);
	while (n > 0 && li->out_n > 0) {
		struct link_rep *r = &li->out[li->out_head];
		size_t step = MIN((size_t)n, (size_t)(LINK_REP_LEN - r->hdr_done));

		r->hdr_done += (uint32_t)step;
		n -= (ssize_t)step;
		step = (size_t)MIN((uint64_t)n, r->len - r->done);
		r->done += step;
		n -= (ssize_t)step;
		if (r->hdr_done == LINK_REP_LEN && r->done == r->len) {
			li->ls->stats.served_bytes += r->len;
			free(r->data);
			r->data = NULL;
			li->out_head = (li->out_head + 1) % LINK_MAX_OUT;
			li->out_n--;
		}
	}
	if (li->reading_stopped && li->out_n < LINK_MAX_OUT / 2) {
		li->reading_stopped = false;
		if (!li->parked) {
			event_add(li->rd, NULL);
			event_active(li->rd, EV_READ, 0);
		}
	}
	if (li->out_n > 0) {
		struct timeval tv = {li->ls->cfg.stall_ms / 1000,
				     (li->ls->cfg.stall_ms % 1000) * 1000};

		event_add(li->wr, NULL);
		evtimer_add(li->stall, &tv); /* from the last progress */
		return;
	}
out_idle:
	event_del(li->wr);
	evtimer_del(li->stall);
}

static void in_writable(evutil_socket_t fd, short what, void *arg)
{
	struct link_in *li = arg;
	size_t budget = li->ls->cfg.slice;

	(void)fd;
	(void)what;
	in_send(li, &budget);
}

/* The hello did not come in time, or a request waited its whole wait. */
static void in_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct link_in *li = arg;

	(void)fd;
	(void)what;
	if (!li->authed)
		in_refuse(li, "said no hello in time", -ETIMEDOUT);
	else
		in_unpark(li, true);
}

static void in_stalled(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	in_refuse(arg, "did not read its replies", -ETIMEDOUT);
}

static bool in_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

/*
 * The oldest connection still in its handshake from sa's host, or (sa
 * NULL) from the host that holds the most of them.
 */
static struct link_in *in_oldest_unauth(struct fab_links *ls, const struct sockaddr_storage *sa)
{
	struct link_in *li, *o, *oldest = NULL;
	unsigned most = 0, n;

	LIST_FOREACH(li, in_list(ls),
		     entry) { /* (newest first: the last one found is the oldest) */
		if (li->authed)
			continue;
		if (sa != NULL) {
			if (in_same_host(&li->sa, sa))
				oldest = li;
			continue;
		}
		n = 0;
		LIST_FOREACH(o, in_list(ls), entry)
			n += !o->authed && in_same_host(&o->sa, &li->sa);
		if (n >= most) {
			most = n;
			oldest = li;
		}
	}
	return oldest;
}

/* A connection the listener accepted: bounded, then challenged. */
void link_serve_accept(struct fab_links *ls, int fd, const struct sockaddr *sa)
{
	struct link_in *li = calloc(1, sizeof(*li)), *o;
	struct timeval tv = {ls->cfg.handshake_ms / 1000, (ls->cfg.handshake_ms % 1000) * 1000};
	uint8_t challenge[LINK_CHALLENGE_LEN];
	unsigned same = 0;

	if (li == NULL) {
		close(fd);
		return;
	}
	li->ls = ls;
	li->fd = fd;
	memcpy(&li->sa, sa,
	       sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in));
	link_addr_str(sa, li->who, sizeof(li->who));
	LIST_FOREACH(o, in_list(ls), entry)
		same += !o->authed && in_same_host(&o->sa, &li->sa);
	/*
	 * Over a limit, the oldest connection in its handshake gives way,
	 * from this address, or else from the address holding the most: a
	 * member's connection proves itself within a round trip, so a flood,
	 * even from the member's own host, never keeps it out for longer.
	 */
	if (same >= ls->cfg.max_unauth_per_addr)
		in_refuse(in_oldest_unauth(ls, &li->sa),
			  "gave way to a newer connection from its address", -EUSERS);
	else if (ls->nunauth >= ls->cfg.max_unauth)
		in_refuse(in_oldest_unauth(ls, NULL),
			  "gave way to a newer connection (too many in their handshake)", -EUSERS);
	LIST_INSERT_HEAD(in_list(ls), li, entry);
	ls->nins++;
	ls->nunauth++;
	link_sockopts(ls, fd);
	li->rbuf = malloc(LINK_STAGE);
	li->rd = event_new(ls->base, fd, EV_READ | EV_PERSIST, in_read, li);
	li->wr = event_new(ls->base, fd, EV_WRITE | EV_PERSIST, in_writable, li);
	li->deadline = evtimer_new(ls->base, in_deadline, li);
	li->stall = evtimer_new(ls->base, in_stalled, li);
	li->more = evtimer_new(ls->base, in_read, li);
	if (li->rbuf == NULL || li->rd == NULL || li->wr == NULL || li->deadline == NULL ||
	    li->stall == NULL || li->more == NULL || link_nonce(li->nonce) < 0) {
		in_close(li);
		return;
	}
	link_put_challenge(challenge, li->nonce);
	if (send(fd, challenge, sizeof(challenge), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof(challenge)) {
		in_close(li);
		return;
	}
	event_add(li->rd, NULL);
	evtimer_add(li->deadline, &tv);
}

/* What the checks depend on changed: every waiting link asks again. */
void link_serve_kick(struct fab_links *ls)
{
	while (!LIST_EMPTY(park_list(ls)))
		in_unpark(LIST_FIRST(park_list(ls)), false);
}

unsigned link_serve_drop_peer(struct fab_links *ls, uint32_t node)
{
	struct link_in *li, *next;
	unsigned n = 0;

	for (li = LIST_FIRST(in_list(ls)); li != NULL; li = next) {
		next = LIST_NEXT(li, entry);
		if (li->authed && li->peer.node == node) {
			in_close(li);
			n++;
		}
	}
	return n;
}

void link_serve_close_all(struct fab_links *ls)
{
	while (!LIST_EMPTY(in_list(ls)))
		in_close(LIST_FIRST(in_list(ls)));
}

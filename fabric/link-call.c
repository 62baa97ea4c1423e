/*
 * fabric/link-call.c - the requester's end of a link: connect, answer the
 * target's challenge and check its proof, then send requests and take
 * their replies, in order.
 *
 * A call (one read, write or atomic) is one request, or several of at most
 * LINK_CHUNK bytes when it is larger, all on the same link, in flight
 * together. The bytes of a write are sent from the caller's buffer and
 * those of a read received into it, straight from the socket once more
 * than a staging buffer's worth is left. Requests go after the hello,
 * before the target's proof came back (it must come before any reply).
 * Every callback runs from the loop: a call is completed from a link's
 * read event, or, when its link failed or was closed, from the context's
 * orphan event, never from inside fab_link_*().
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/event.h>

#include "fabric/link_int.h"

#define LINK_STAGE (64u << 10)
#define LINK_CHUNK (4u << 20) /* the largest request a call is cut into */
#define LINK_IOV 64

enum link_state { OUT_CONNECTING, OUT_CHALLENGE, OUT_WELCOME, OUT_UP, OUT_FAILED };

struct link_req {
	TAILQ_ENTRY(link_req) entry;
	struct link_call *call;
	uint8_t hdr[LINK_REQ_LEN];
	uint32_t hdr_done;
	enum fab_link_op op;
	uint8_t *buf; /* a read's destination, a write's or a call's source */
	uint64_t len, done;
	uint64_t id;
	uint8_t *out; /* a call's answer goes there: at most max bytes */
	uint64_t max;
};
TAILQ_HEAD(link_req_list, link_req);

struct link_call {
	struct link_call *next; /* among the orphans */
	fab_done_cb cb;
	void *arg;
	uint64_t *ret_old;
	size_t *ret_len; /* a call's answer */
	unsigned pending;
	int status;
	struct link_req reqs[];
};

struct fab_link {
	LIST_ENTRY(fab_link) entry;
	struct fab_links *ls;
	int fd;
	struct event *rd, *wr;
	struct event *more; /* a zero timer: the slice ended with bytes still staged */
	enum link_state state;
	int error;
	unsigned busy; /* inside its callbacks: freed after them when closed */
	bool closed;
	struct fab_link_peer to;
	char addr[64];
	uint8_t nonce_t[LINK_NONCE_LEN];
	uint8_t hello[LINK_HELLO_LEN];
	uint32_t hello_done;	    /* bytes of the hello sent (it goes before any request) */
	struct link_req_list sendq; /* not sent in full yet */
	struct link_req_list waitq; /* sent, waiting for their replies */
	uint8_t *rbuf;
	size_t rpos, rlen;
	struct link_req *receiving; /* the read whose bytes come now */
	uint64_t next_id;
};

static const struct timeval link_now = {0, 0};

static void call_finish(struct link_call *c)
{
	c->cb(c->arg, c->status);
	free(c);
}

/* The calls of failed and closed links, completed with their errors. */
void link_call_orphans(struct fab_links *ls)
{
	struct link_call *c;

	while ((c = ls->orphans) != NULL) {
		ls->orphans = c->next;
		call_finish(c);
	}
}

/* The context goes: the calls of closed links are dropped, their callbacks never run. */
void link_call_drop_orphans(struct fab_links *ls)
{
	struct link_call *c;

	while ((c = ls->orphans) != NULL) {
		ls->orphans = c->next;
		free(c);
	}
}

/* One request of a call is over; the call completes with its last. */
static void req_over(struct fab_link *k, struct link_req *r, int status, bool defer)
{
	struct link_call *c = r->call;

	if (status < 0 && c->status == 0)
		c->status = status;
	if (--c->pending > 0)
		return;
	if (defer) {
		c->next = k->ls->orphans;
		k->ls->orphans = c;
		event_active(k->ls->orphan_ev, EV_TIMEOUT, 0);
		return;
	}
	k->busy++;
	call_finish(c);
	k->busy--;
}

/* The link is broken (or closed): every call on it ends with err, from the loop. */
static void link_fail(struct fab_link *k, int err)
{
	struct link_req *r;

	if (k->state == OUT_FAILED)
		return;
	k->state = OUT_FAILED;
	k->error = err;
	event_del(k->rd);
	event_del(k->wr);
	evtimer_del(k->more);
	while ((r = TAILQ_FIRST(&k->sendq)) != NULL) {
		TAILQ_REMOVE(&k->sendq, r, entry);
		req_over(k, r, err, true);
	}
	while ((r = TAILQ_FIRST(&k->waitq)) != NULL) {
		TAILQ_REMOVE(&k->waitq, r, entry);
		req_over(k, r, err, true);
	}
	k->receiving = NULL;
}

static void link_free(struct fab_link *k)
{
	LIST_REMOVE(k, entry);
	if (k->rd != NULL)
		event_free(k->rd);
	if (k->wr != NULL)
		event_free(k->wr);
	if (k->more != NULL)
		event_free(k->more);
	if (k->fd >= 0)
		close(k->fd);
	free(k->rbuf);
	free(k);
}

/* Send the hello and what is queued behind it, at most *budget bytes. */
static void link_send(struct fab_link *k, size_t *budget)
{
	struct iovec iov[LINK_IOV];
	struct msghdr msg = {.msg_iov = iov};
	size_t niov = 0, total = 0;
	struct link_req *r;
	ssize_t n;

	if (k->state != OUT_WELCOME && k->state != OUT_UP)
		return;
	if (k->hello_done < LINK_HELLO_LEN) {
		iov[niov++] =
		    (struct iovec){k->hello + k->hello_done, LINK_HELLO_LEN - k->hello_done};
		total += LINK_HELLO_LEN - k->hello_done;
	}
	TAILQ_FOREACH(r, &k->sendq, entry) {
		if (niov + 2 > LINK_IOV || total >= *budget)
			break;
		if (r->hdr_done < LINK_REQ_LEN) {
			iov[niov++] =
			    (struct iovec){r->hdr + r->hdr_done, LINK_REQ_LEN - r->hdr_done};
			total += LINK_REQ_LEN - r->hdr_done;
		}
		if ((r->op == FAB_LINK_WRITE || r->op == FAB_LINK_CALL) && r->done < r->len &&
		    total < *budget) {
			iov[niov] = (struct iovec){r->buf + r->done,
						   (size_t)MIN(r->len - r->done, *budget - total)};
			total += iov[niov++].iov_len;
		}
	}
	if (niov == 0) {
		event_del(k->wr);
		return;
	}
	msg.msg_iovlen = niov;
	n = sendmsg(k->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return link_fail(k, -errno);
		n = 0;
	}
	k->ls->stats.moved += (uint64_t)n;
	*budget -= MIN((size_t)n, *budget);
	if (k->hello_done < LINK_HELLO_LEN) {
		size_t step = MIN((size_t)n, (size_t)(LINK_HELLO_LEN - k->hello_done));

		k->hello_done += (uint32_t)step;
		n -= (ssize_t)step;
	}
	while (n > 0 && (r = TAILQ_FIRST(&k->sendq)) != NULL) {
		size_t step = MIN((size_t)n, (size_t)(LINK_REQ_LEN - r->hdr_done));

		r->hdr_done += (uint32_t)step;
		n -= (ssize_t)step;
		if (r->op == FAB_LINK_WRITE || r->op == FAB_LINK_CALL) {
			step = (size_t)MIN((uint64_t)n, r->len - r->done);
			r->done += step;
			n -= (ssize_t)step;
		}
		if (r->hdr_done < LINK_REQ_LEN ||
		    ((r->op == FAB_LINK_WRITE || r->op == FAB_LINK_CALL) && r->done < r->len))
			break;
		TAILQ_REMOVE(&k->sendq, r, entry);
		r->done = 0; /* (a read counts what it receives) */
		TAILQ_INSERT_TAIL(&k->waitq, r, entry);
	}
	if (k->hello_done < LINK_HELLO_LEN || !TAILQ_EMPTY(&k->sendq))
		event_add(k->wr, NULL);
	else
		event_del(k->wr);
}

/* More bytes into the staging buffer: >0, -ECONNRESET at the end of the stream, -errno. */
static ssize_t link_fill(struct fab_link *k)
{
	ssize_t n;

	if (k->rpos == k->rlen)
		k->rpos = k->rlen = 0;
	else if (k->rpos > LINK_STAGE / 2) {
		memmove(k->rbuf, k->rbuf + k->rpos, k->rlen - k->rpos);
		k->rlen -= k->rpos;
		k->rpos = 0;
	}
	n = recv(k->fd, k->rbuf + k->rlen, LINK_STAGE - k->rlen, 0);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
	k->rlen += (size_t)n;
	k->ls->stats.moved += (uint64_t)n;
	return n;
}

/* The target's challenge: answer it with the hello, proof included. */
static int link_challenged(struct fab_link *k)
{
	const struct fab_link_peer *self = &k->ls->cfg.self;
	struct link_hello h = {
	    .from_node = self->node,
	    .to_node = k->to.node,
	    .from_incarnation = self->incarnation,
	    .from_epoch = self->epoch,
	    .to_incarnation = k->to.incarnation,
	};
	int rc = link_get_challenge(k->rbuf + k->rpos, k->nonce_t);

	if (rc < 0 || (rc = link_nonce(h.nonce)) < 0)
		return rc;
	k->rpos += LINK_CHALLENGE_LEN;
	link_put_hello(k->hello, &h);
	rc = link_proof(k->ls->cfg.key, false, k->nonce_t, k->hello, h.proof);
	if (rc < 0)
		return rc;
	link_put_hello(k->hello, &h);
	k->state = OUT_WELCOME;
	return 0;
}

/* The target's proof: only a member knows the key. */
static int link_welcomed(struct fab_link *k)
{
	uint8_t got[LINK_PROOF_LEN], want[LINK_PROOF_LEN];
	int rc = link_get_welcome(k->rbuf + k->rpos, got);

	if (rc < 0)
		return rc;
	k->rpos += LINK_WELCOME_LEN;
	rc = link_proof(k->ls->cfg.key, true, k->nonce_t, k->hello, want);
	if (rc < 0)
		return rc;
	if (!link_proof_equal(got, want))
		return -EACCES;
	k->state = OUT_UP;
	return 0;
}

/* A reply's header: it answers the oldest request waiting, or the target is broken. */
static int link_reply(struct fab_link *k)
{
	struct link_req *r = TAILQ_FIRST(&k->waitq);
	uint64_t id, old;
	int32_t status;

	link_get_rep(k->rbuf + k->rpos, &id, &status, &old);
	if (r == NULL || id != r->id || status > 0 || status < -4095)
		return -EPROTO;
	k->rpos += LINK_REP_LEN;
	if (status == 0 && r->op == FAB_LINK_READ && r->len > 0) {
		k->receiving = r;
		return 0;
	}
	if (status == 0 && r->op == FAB_LINK_CALL) {
		if (old > r->max)
			return -EPROTO; /* (more than it was asked for) */
		*r->call->ret_len = (size_t)old;
		r->buf = r->out;
		r->len = old;
		r->done = 0;
		if (old > 0) {
			k->receiving = r;
			return 0;
		}
	}
	if (status == 0 && r->call->ret_old != NULL)
		*r->call->ret_old = old;
	TAILQ_REMOVE(&k->waitq, r, entry);
	req_over(k, r, status, false);
	return 0;
}

/* The bytes of the read being received: 1 moved some, -EAGAIN wait, -errno broken. */
static int link_read_bytes(struct fab_link *k, size_t *budget)
{
	struct link_req *r = k->receiving;
	uint64_t left = r->len - r->done;
	size_t n = (size_t)MIN(MIN(left, (uint64_t)(k->rlen - k->rpos)), (uint64_t)*budget);
	ssize_t got;

	if (n > 0) {
		memcpy(r->buf + r->done, k->rbuf + k->rpos, n);
		k->rpos += n;
	} else if (left < LINK_STAGE / 2) {
		got = link_fill(k);
		return got < 0 ? (int)got : 1;
	} else {
		got = recv(k->fd, r->buf + r->done, (size_t)MIN(left, (uint64_t)*budget), 0);
		if (got == 0)
			return -ECONNRESET;
		if (got < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN
											 : -errno;
		n = (size_t)got;
		k->ls->stats.moved += n;
	}
	r->done += n;
	*budget -= n;
	if (r->done == r->len) {
		k->receiving = NULL;
		TAILQ_REMOVE(&k->waitq, r, entry);
		req_over(k, r, 0, false);
	}
	return 1;
}

/* What came: the challenge, the welcome, then replies and the bytes of reads. */
static int link_take(struct fab_link *k, size_t *budget)
{
	size_t need;
	ssize_t got;
	int rc;

	while (*budget > 0 && k->state != OUT_FAILED && !k->closed) {
		if (k->receiving != NULL) {
			rc = link_read_bytes(k, budget);
			if (rc < 0)
				return rc;
			continue;
		}
		need = k->state == OUT_CHALLENGE ? LINK_CHALLENGE_LEN
		       : k->state == OUT_WELCOME ? LINK_WELCOME_LEN
						 : LINK_REP_LEN;
		if (k->rlen - k->rpos < need) {
			got = link_fill(k);
			if (got < 0)
				return (int)got;
			continue;
		}
		if (k->state == OUT_CHALLENGE) {
			rc = link_challenged(k);
			if (rc == 0)
				link_send(k, budget);
		} else if (k->state == OUT_WELCOME) {
			rc = link_welcomed(k);
		} else {
			rc = link_reply(k);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void link_readable(evutil_socket_t fd, short what, void *arg)
{
	struct fab_link *k = arg;
	size_t budget = k->ls->cfg.slice;
	int rc;

	(void)fd;
	(void)what;
	k->busy++;
	rc = link_take(k, &budget);
	if (rc < 0 && rc != -EAGAIN && !k->closed)
		link_fail(k, rc);
	else if (rc == 0 && budget == 0 && !k->closed && k->state != OUT_FAILED)
		evtimer_add(k->more, &link_now); /* (the rest, at the next turn) */
	k->busy--;
	if (k->closed && k->busy == 0)
		link_free(k);
}

static void link_writable(evutil_socket_t fd, short what, void *arg)
{
	struct fab_link *k = arg;
	size_t budget = k->ls->cfg.slice;
	socklen_t sl = sizeof(int);
	int err = 0;

	(void)fd;
	(void)what;
	if (k->state == OUT_CONNECTING) {
		if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
			err = errno;
		if (err != 0)
			return link_fail(k, -err);
		k->state = OUT_CHALLENGE;
		event_del(k->wr);
		event_add(k->rd, NULL);
		return;
	}
	link_send(k, &budget);
}

/* "a.b.c.d:port" or "[v6]:port" as a socket address. */
static int link_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *ret_len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(addr, ':');
	unsigned long port;
	char *end;
	size_t hl;

	if (colon == NULL || colon == addr)
		return -EINVAL;
	port = strtoul(colon + 1, &end, 10);
	hl = (size_t)(colon - addr);
	if (*end != '\0' || port == 0 || port > 65535 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(*in);
	}
	return 0;
}

int fab_link_open(struct fab_links *ls, const struct fab_link_peer *to, const char *addr,
		  struct fab_link **ret_link)
{
	struct sockaddr_storage ss;
	struct fab_link *k;
	socklen_t sl;
	int rc;

	rc = link_parse_addr(addr, &ss, &sl);
	if (rc < 0)
		return rc;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -ENOMEM;
	k->ls = ls;
	k->to = *to;
	k->fd = -1;
	snprintf(k->addr, sizeof(k->addr), "%s", addr);
	TAILQ_INIT(&k->sendq);
	TAILQ_INIT(&k->waitq);
	LIST_INSERT_HEAD(&ls->outs, k, entry);
	k->rbuf = malloc(LINK_STAGE);
	k->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (k->rbuf == NULL || k->fd < 0) {
		rc = k->rbuf == NULL ? -ENOMEM : -errno;
		goto out_free;
	}
	link_sockopts(ls, k->fd);
	k->rd = event_new(ls->base, k->fd, EV_READ | EV_PERSIST, link_readable, k);
	k->wr = event_new(ls->base, k->fd, EV_WRITE | EV_PERSIST, link_writable, k);
	k->more = evtimer_new(ls->base, link_readable, k);
	if (k->rd == NULL || k->wr == NULL || k->more == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if (connect(k->fd, (struct sockaddr *)&ss, sl) == 0) {
		k->state = OUT_CHALLENGE;
		event_add(k->rd, NULL);
	} else if (errno == EINPROGRESS) {
		k->state = OUT_CONNECTING;
		event_add(k->wr, NULL);
	} else {
		rc = -errno;
		goto out_free;
	}
	*ret_link = k;
	return 0;
out_free:
	link_free(k);
	return rc;
}

void fab_link_close(struct fab_link *k)
{
	if (k == NULL || k->closed)
		return;
	link_fail(k, -ECANCELED);
	k->closed = true;
	if (k->busy == 0)
		link_free(k);
}

int fab_link_error(const struct fab_link *k)
{
	return k->state == OUT_FAILED ? k->error : 0;
}

bool fab_link_idle(const struct fab_link *k)
{
	return TAILQ_EMPTY(&k->sendq) && TAILQ_EMPTY(&k->waitq);
}

/* Where a call's answer goes. */
struct link_answer_to {
	void *out;
	size_t max, *ret_len;
};

/*
 * Queue a call of one op, cut into requests of at most LINK_CHUNK bytes;
 * ret_old for atomics, to for a call (never cut: FAB_LINK_CALL_MAX is one).
 */
static int link_call(struct fab_link *k, const struct fab_link_req *req, void *buf,
		     uint64_t *ret_old, const struct link_answer_to *to, fab_done_cb cb, void *arg)
{
	size_t n = req->len > LINK_CHUNK ? (size_t)((req->len + LINK_CHUNK - 1) / LINK_CHUNK) : 1,
	       i;
	bool idle = TAILQ_EMPTY(&k->sendq);
	struct link_call *c;

	if (k->state == OUT_FAILED)
		return k->error;
	if (link_req_check(req) < 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + n * sizeof(c->reqs[0]));
	if (c == NULL)
		return -ENOMEM;
	c->cb = cb;
	c->arg = arg;
	c->ret_old = ret_old;
	c->ret_len = to != NULL ? to->ret_len : NULL;
	c->pending = (unsigned)n;
	for (i = 0; i < n; i++) {
		struct link_req *r = &c->reqs[i];
		struct fab_link_req part = *req;

		part.off = req->off + (uint64_t)i * LINK_CHUNK;
		part.len = MIN(req->len - (uint64_t)i * LINK_CHUNK, (uint64_t)LINK_CHUNK);
		r->call = c;
		r->op = req->op;
		r->buf = buf != NULL ? (uint8_t *)buf + (uint64_t)i * LINK_CHUNK : NULL;
		r->len = req->op == FAB_LINK_READ || req->op == FAB_LINK_WRITE ||
				 req->op == FAB_LINK_CALL
			     ? part.len
			     : 0;
		r->out = to != NULL ? to->out : NULL;
		r->max = to != NULL ? to->max : 0;
		r->id = ++k->next_id;
		link_put_req(r->hdr, &part, r->id);
		TAILQ_INSERT_TAIL(&k->sendq, r, entry);
	}
	if (idle) {
		size_t budget = k->ls->cfg.slice;

		link_send(k, &budget); /* (a failure completes the call later, from the loop) */
	}
	return 0;
}

int fab_link_read(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		  void *buf, fab_done_cb cb, void *arg)
{
	struct fab_link_req req = {FAB_LINK_READ, arena, ext, off, len, 0, 0};
	int rc = link_call(k, &req, buf, NULL, NULL, cb, arg);

	if (rc == 0) {
		k->ls->stats.read_ops++;
		k->ls->stats.read_bytes += len;
	}
	return rc;
}

int fab_link_write(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		   const void *buf, fab_done_cb cb, void *arg)
{
	struct fab_link_req req = {FAB_LINK_WRITE, arena, ext, off, len, 0, 0};
	int rc = link_call(k, &req, (void *)(uintptr_t)buf, NULL, NULL, cb, arg);

	if (rc == 0) {
		k->ls->stats.write_ops++;
		k->ls->stats.write_bytes += len;
	}
	return rc;
}

int fab_link_fadd(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t add,
		  uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	struct fab_link_req req = {FAB_LINK_FADD, arena, ext, off, 8, add, 0};
	int rc = link_call(k, &req, NULL, ret_old, NULL, cb, arg);

	k->ls->stats.atomic_ops += rc == 0;
	return rc;
}

int fab_link_cswap(struct fab_link *k, uint32_t arena, uint64_t ext, uint64_t off, uint64_t expect,
		   uint64_t desired, uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	struct fab_link_req req = {FAB_LINK_CSWAP, arena, ext, off, 8, expect, desired};
	int rc = link_call(k, &req, NULL, ret_old, NULL, cb, arg);

	k->ls->stats.atomic_ops += rc == 0;
	return rc;
}

int fab_link_call(struct fab_link *k, const void *in, size_t len, void *out, size_t max,
		  size_t *ret_len, fab_done_cb cb, void *arg)
{
	struct fab_link_req req = {FAB_LINK_CALL, 0, 0, 0, len, max, 0};
	struct link_answer_to to = {out, max, ret_len};
	int rc;

	if (link_req_check(&req) < 0)
		return -EMSGSIZE;
	*ret_len = 0;
	rc = link_call(k, &req, (void *)(uintptr_t)in, NULL, &to, cb, arg);
	k->ls->stats.call_ops += rc == 0;
	return rc;
}

/* The context goes: every link with it. */
void link_call_close_all(struct fab_links *ls)
{
	struct fab_link *k, *next;

	for (k = LIST_FIRST(&ls->outs); k != NULL; k = next) {
		next = LIST_NEXT(k, entry);
		fab_link_close(k);
	}
}

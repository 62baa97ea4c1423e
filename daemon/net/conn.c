/*
 * daemon/net/conn.c - a framed connection over a bufferevent: the control
 * socket's clients and the TCP links between poolds both use it.
 *
 * Frames are parsed as they arrive: the header is checked (version, length
 * cap) before the payload is buffered. A frame with another protocol
 * version or an oversize length is answered with an error and the
 * connection is closed once the reply is written. A peer that does not read
 * its replies stops being read (back-pressure). The owner sees complete
 * frames and, once, the end of the connection.
 *
 * Lifetime: the owner may call conn_free() at any time, even from inside
 * one of the connection's callbacks; the memory goes when no callback of
 * this connection is running any more and nobody holds a reference
 * (conn_ref(), taken by requests answered later). Sending on a connection
 * that has ended does nothing and returns -ENOTCONN.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <event2/event.h>

#include "daemon/net/net.h"
#include "daemon/util/util.h"
#include "proto/pool_contract.h"

/* Stop reading from a peer whose unread replies exceed this many frames. */
#define CONN_OUTPUT_FRAMES 4

struct conn {
	struct bufferevent *bev;
	const struct conn_ops *ops;
	void *arg;
	size_t max_frame;
	size_t max_send;	/* the largest payload the other end takes; 0: not known */
	const char *limit_name; /* the option that sets max_frame, for error messages */
	char desc[64];
	int busy;				    /* callbacks of this connection running */
	int refs;				    /* conn_ref() holders */
	bool closing;				    /* close once the output is written */
	bool dead;				    /* conn_free() called: free when not busy */
	bool ended;				    /* ops->closed already called */
	bool plain;				    /* no TLS: conn_write() may write at once */
	unsigned read_timeout_ms, write_timeout_ms; /* 0: none */
};

/*
 * A plain socket is closed here, not where libevent would close it: it
 * finalizes a freed bufferevent on a later turn of the loop, and a loop
 * that accepts a burst of links and closes as many to make room (coord.c)
 * would hold both until then, over the bound it keeps.
 */
static void conn_release(struct conn *c)
{
	if (c->bev != NULL) {
		evutil_socket_t fd = c->plain ? bufferevent_getfd(c->bev) : -1;

		heap_trim_soon(bufferevent_get_base(c->bev));
		if (fd >= 0)
			bufferevent_setfd(c->bev, -1);
		bufferevent_free(c->bev);
		c->bev = NULL;
		if (fd >= 0)
			evutil_closesocket(fd);
	}
	if (c->refs == 0)
		free(c);
}

/* Keep the struct alive (not the link) for a reply sent later. */
struct conn *conn_ref(struct conn *c)
{
	c->refs++;
	return c;
}

/* Drop a reference taken with conn_ref(). */
void conn_unref(struct conn *c)
{
	if (--c->refs == 0 && c->bev == NULL)
		free(c);
}

/* Tell the owner the connection ended (once), then free it. */
static void conn_end(struct conn *c)
{
	if (!c->ended && !c->dead) {
		c->ended = true;
		c->busy++;
		if (c->ops->closed != NULL)
			c->ops->closed(c, c->arg);
		c->busy--;
	}
	c->dead = true;
	if (c->busy == 0)
		conn_release(c);
}

/* Free a connection without calling its closed callback. */
void conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	c->dead = true;
	c->ended = true;
	if (c->bev != NULL)
		bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	if (c->busy == 0)
		conn_release(c);
}

/* Make the coming close a reset: what the kernel still holds to send is dropped. */
static void conn_set_reset(struct conn *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	evutil_socket_t fd = c->bev != NULL ? bufferevent_getfd(c->bev) : -1;

	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/*
 * End at once for a fenced peer: what is queued, here and in the kernel, is
 * thrown away (the socket is reset) so that nothing sent before the fence
 * reaches the peer after its link comes back. With closed, the closed
 * callback follows; without, it does not (as conn_free()).
 */
void conn_abort(struct conn *c, bool closed)
{
	conn_set_reset(c);
	if (closed)
		conn_end(c);
	else
		conn_free(c);
}

/* Close after the queued frames are written; the closed callback follows. */
void conn_close_later(struct conn *c)
{
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 && c->busy == 0)
		conn_end(c);
}

/*
 * Whether the other end takes a payload of len bytes of a type: 0, or
 * -EMSGSIZE, said here. It would refuse a larger frame and close the link:
 * the sender is told instead (a reply becomes an error reply), and the
 * link stays.
 */
int conn_fits(const struct conn *c, uint16_t type, size_t len)
{
	if (c->max_send == 0 || len <= c->max_send)
		return 0;
	log_warnx("%s: a %s of %zu bytes exceeds the %zu the other end takes: not sent", c->desc,
		  wire_type_name(type), len, c->max_send);
	return -EMSGSIZE;
}

/* Queue one frame. */
/*
 * Queue the bytes of iov (n pieces). When nothing waits before them (most
 * replies) they are written at once: through the buffer, libevent would
 * watch the socket for writability and stop again, two epoll_ctl calls and
 * a turn of the loop a frame, a quarter of poold's system calls in a run
 * of region creates. What the socket does not take, and all of a TLS
 * link's bytes, go through the buffer; an error is left for the buffer's
 * write to find.
 */
static int conn_writev(struct conn *c, struct iovec *iov, int n)
{
	ssize_t sent = 0;
	int i;

	if (c->plain && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};

		sent = sendmsg(bufferevent_getfd(c->bev), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent < 0)
			sent = 0;
	}
	for (i = 0; i < n; i++) {
		size_t skip = MIN((size_t)sent, iov[i].iov_len);

		sent -= (ssize_t)skip;
		if (skip < iov[i].iov_len &&
		    bufferevent_write(c->bev, (const uint8_t *)iov[i].iov_base + skip,
				      iov[i].iov_len - skip) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int conn_write(struct conn *c, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return conn_writev(c, &iov, 1);
}

int conn_send(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (c->dead || c->closing)
		return -ENOTCONN;
	rc = wire_frame_pack(type, req_id, msg, &buf, &len);
	if (rc < 0) {
		log_warnx("%s: cannot pack %s: %s", c->desc, wire_type_name(type), err_str(rc));
		return rc;
	}
	if ((rc = conn_fits(c, type, len - WIRE_HDR_LEN)) < 0) {
		free(buf);
		return rc;
	}
	rc = conn_write(c, buf, len);
	free(buf);
	return rc;
}

/* Queue a whole frame, header and payload, packed before (a reply that waited). */
int conn_send_frame(struct conn *c, const uint8_t *frame, size_t len)
{
	if (c->dead || c->closing)
		return -ENOTCONN;
	return conn_write(c, frame, len);
}

/* Queue a frame whose payload is already packed (relaying a peer's reply). */
int conn_send_raw(struct conn *c, uint16_t type, uint64_t req_id, const uint8_t *payload,
		  size_t len)
{
	struct wire_hdr hdr = {
	    .len = (uint32_t)len, .type = type, .version = WIRE_VERSION, .req_id = req_id};
	uint8_t hbuf[WIRE_HDR_LEN];

	struct iovec iov[2] = {{.iov_base = hbuf, .iov_len = sizeof(hbuf)},
			       {.iov_base = (void *)payload, .iov_len = len}};

	if (c->dead || c->closing)
		return -ENOTCONN;
	wire_hdr_encode(&hdr, hbuf);
	return conn_writev(c, iov, 2);
}

/*
 * Send a frame with a file descriptor attached (SCM_RIGHTS). The descriptor
 * travels with the first byte of the frame, so the frame is written
 * directly, and only when nothing else is queued (-EAGAIN otherwise; a
 * client waiting for this reply has read everything before it).
 */
int conn_send_fd(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg,
		 int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct msghdr mh = {0};
	struct cmsghdr *cm;
	struct iovec iov;
	uint8_t *buf;
	size_t len;
	ssize_t n;
	int rc;

	if (c->dead || c->closing)
		return -ENOTCONN;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) != 0)
		return -EAGAIN;
	rc = wire_frame_pack(type, req_id, msg, &buf, &len);
	if (rc < 0)
		return rc;
	iov.iov_base = buf;
	iov.iov_len = len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	n = sendmsg(bufferevent_getfd(c->bev), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		rc = -errno;
	} else {
		/* The rest of a partly written frame follows through the buffer. */
		if ((size_t)n < len && bufferevent_write(c->bev, buf + n, len - (size_t)n) < 0)
			rc = -ENOMEM;
	}
	free(buf);
	return rc;
}

/* Whether the connection can still carry frames. */
bool conn_alive(const struct conn *c)
{
	return !c->dead && !c->closing;
}

/* Queue an error reply; a NULL or empty msg means the code's own text. */
int conn_send_error(struct conn *c, uint64_t req_id, int code, const char *msg)
{
	Pool__Error err = POOL__ERROR__INIT;

	err.code = code;
	err.message = (char *)(msg && *msg ? msg : err_str(code));
	return conn_send(c, WIRE_ERROR, req_id, &err.base);
}

/* Change the largest frame the peer may send (a link that proved who it is may send more). */
void conn_set_max_frame(struct conn *c, size_t max_frame)
{
	c->max_frame = max_frame;
}

/*
 * Set the largest payload the other end accepts (its frame limit): a larger
 * frame is not queued, and conn_send() fails with -EMSGSIZE.
 */
void conn_set_max_send(struct conn *c, size_t max_send)
{
	c->max_send = max_send;
}

/* Name the option that sets the frame limit, for the error sent to peers over it. */
void conn_set_limit_name(struct conn *c, const char *name)
{
	c->limit_name = name;
}

/* A short description for logs ("client pid 42 uid 0", "node 3 10.0.0.3:7400"). */
const char *conn_desc(const struct conn *c)
{
	return c->desc;
}

/* Its socket, for getsockname() and the like: never to read or write. */
int conn_fd(const struct conn *c)
{
	return (int)bufferevent_getfd(c->bev);
}

/* Change the description used in logs. */
void conn_set_desc(struct conn *c, const char *desc)
{
	snprintf(c->desc, sizeof(c->desc), "%s", desc);
}

static bool conn_check_header(struct conn *c, const struct wire_hdr *hdr, int rc)
{
	/* Once per 10 s each: a loop of new connections sending one bad header each. */
	static struct log_limit version_said, size_said;
	char msg[128];

	if (rc == 0)
		return true;
	if (rc == POOL_EVERSION) {
		log_warnx_limited(&version_said, 10000, "%s speaks protocol version %u, not %u",
				  c->desc, hdr->version, WIRE_VERSION);
		snprintf(msg, sizeof(msg),
			 "protocol version %u is not supported: this poold speaks version %u",
			 hdr->version, WIRE_VERSION);
	} else {
		log_warnx_limited(&size_said, 10000, "%s sent a %u-byte frame, over the %zu limit",
				  c->desc, hdr->len, c->max_frame);
		snprintf(msg, sizeof(msg), "frame of %u bytes exceeds %s (%zu)", hdr->len,
			 c->limit_name, c->max_frame);
	}
	conn_send_error(c, hdr->req_id, rc, msg);
	conn_close_later(c);
	return false;
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t hbuf[WIRE_HDR_LEN];
	struct wire_hdr hdr;
	size_t out;

	c->busy++;
	while (!c->closing && !c->dead) {
		size_t avail = evbuffer_get_length(in);
		const uint8_t *frame;

		if (avail < WIRE_HDR_LEN)
			break;
		/* Replies wait unread: take no more requests until they are out. */
		out = evbuffer_get_length(bufferevent_get_output(bev));
		if (out > 0 && (out > CONN_OUTPUT_FRAMES * c->max_frame ||
				(c->ops->may_read != NULL && !c->ops->may_read(c, c->arg)))) {
			bufferevent_disable(bev, EV_READ); /* again from conn_write_cb() */
			break;
		}
		evbuffer_copyout(in, hbuf, WIRE_HDR_LEN);
		if (!conn_check_header(c, &hdr,
				       wire_hdr_decode(hbuf, WIRE_HDR_LEN, c->max_frame, &hdr)))
			break;
		if (avail < WIRE_HDR_LEN + (size_t)hdr.len) {
			/* Wake only when the whole frame is here. */
			bufferevent_setwatermark(bev, EV_READ, WIRE_HDR_LEN + (size_t)hdr.len, 0);
			c->busy--;
			return;
		}
		frame = evbuffer_pullup(in, (ssize_t)(WIRE_HDR_LEN + hdr.len));
		if (frame == NULL) {
			log_warnx("%s: out of memory", c->desc);
			conn_close_later(c);
			break;
		}
		c->ops->frame(c, &hdr, frame + WIRE_HDR_LEN, c->arg);
		evbuffer_drain(in, WIRE_HDR_LEN + hdr.len);
	}
	c->busy--;
	if (c->dead) {
		if (c->busy == 0)
			conn_release(c);
		return;
	}
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	if (!c->closing &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > CONN_OUTPUT_FRAMES * c->max_frame)
		bufferevent_disable(bev, EV_READ);
	if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_end(c);
}

/* Bytes of replies waiting to go out. */
size_t conn_output_len(const struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->closing) {
		conn_end(c);
		return;
	}
	if (!(bufferevent_get_enabled(bev) & EV_READ)) {
		bufferevent_enable(bev, EV_READ);
		conn_read_cb(bev, c);
	}
}

/*
 * Replies and requests are small frames, often two back to back (a send-only
 * release, then the next lookup): on TCP, Nagle would hold the second until
 * the first is acknowledged. (A unix socket refuses the option: no matter.)
 */
static void conn_nodelay(struct bufferevent *bev)
{
	int one = 1;

	setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_CONNECTED) {
		conn_nodelay(bev);
		c->busy++;
		if (c->ops->connected != NULL)
			c->ops->connected(c, c->arg);
		c->busy--;
		if (c->dead && c->busy == 0)
			conn_release(c);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		unsigned long tls = bufferevent_openssl_get_ssl(bev) != NULL
					? bufferevent_get_openssl_error(bev)
					: 0;
		char why[256];

		if (tls !=
		    0) { /* a handshake refused, a bad record: worth a warning, not a flood */
			/* Said once per 10 s for each reason, so one does not hide another. */
			static struct {
				unsigned long reason;
				struct log_limit said;
			} said[8];
			unsigned long reason = ERR_GET_REASON(tls);
			size_t k = reason % 8;

			if (said[k].reason != reason)
				said[k] = (typeof(said[k])){reason, {0, 0}};
			ERR_error_string_n(tls, why, sizeof(why));
			log_warnx_limited(&said[k].said, 10000, "%s: TLS: %s", c->desc, why);
		} else {
			log_debug("%s: %s", c->desc,
				  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		}
	}
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_WRITING)) {
		static struct log_limit said;

		log_warnx_limited(&said, 10000,
				  "%s: read none of its replies for %u ms: "
				  "disconnected",
				  c->desc, c->write_timeout_ms);
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_end(c);
}

static struct conn *conn_alloc(struct bufferevent *bev, size_t max_frame,
			       const struct conn_ops *ops, void *arg, const char *desc)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->bev = bev;
	c->ops = ops;
	c->arg = arg;
	c->max_frame = max_frame;
	c->limit_name = "the frame limit";
	c->plain = bufferevent_openssl_get_ssl(bev) == NULL;
	conn_set_desc(c, desc);
	bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	return c;
}

/*
 * A bufferevent on fd (-1: one to connect), through TLS when ssl is given;
 * the bufferevent owns fd and ssl from now on, and frees them if it cannot be made.
 */
static struct bufferevent *conn_bev(struct event_base *base, int fd, SSL *ssl, bool accepting)
{
	struct bufferevent *bev;

	if (ssl == NULL) {
		bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (bev == NULL && fd >= 0)
			evutil_closesocket(fd);
		return bev;
	}
	bev = bufferevent_openssl_socket_new(
	    base, fd, ssl, accepting ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		if (fd >= 0)
			evutil_closesocket(fd);
		return NULL;
	}
	/* A peer that goes away without a close_notify is a closed link, not an attack. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/* Wrap an accepted socket (through TLS when ssl is given); the connection owns fd and ssl. */
int conn_new(struct event_base *base, int fd, SSL *ssl, size_t max_frame,
	     const struct conn_ops *ops, void *arg, const char *desc, struct conn **ret_conn)
{
	struct bufferevent *bev = conn_bev(base, fd, ssl, true);
	struct conn *c;

	if (bev == NULL)
		return -ENOMEM;
	c = conn_alloc(bev, max_frame, ops, arg, desc);
	if (c == NULL) {
		bufferevent_free(bev);
		return -ENOMEM;
	}
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	conn_nodelay(bev);
	*ret_conn = c;
	return 0;
}

/*
 * Start connecting to a TCP peer (through TLS when ssl is given, which the
 * connection owns); ops->connected (after the TLS handshake) or
 * ops->closed tells how it went.
 */
int conn_connect(struct event_base *base, const struct sockaddr *sa, unsigned salen, SSL *ssl,
		 size_t max_frame, const struct conn_ops *ops, void *arg, const char *desc,
		 struct conn **ret_conn)
{
	struct bufferevent *bev = conn_bev(base, -1, ssl, false);
	struct conn *c;

	if (bev == NULL)
		return -ENOMEM;
	c = conn_alloc(bev, max_frame, ops, arg, desc);
	if (c == NULL) {
		bufferevent_free(bev);
		return -ENOMEM;
	}
	if (bufferevent_socket_connect(bev, sa, (int)salen) < 0) {
		conn_release(c);
		return -ECONNREFUSED;
	}
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	*ret_conn = c;
	return 0;
}

static void conn_apply_timeouts(struct conn *c)
{
	struct timeval r = units_timeval(c->read_timeout_ms),
		       w = units_timeval(c->write_timeout_ms);

	bufferevent_set_timeouts(c->bev, c->read_timeout_ms ? &r : NULL,
				 c->write_timeout_ms ? &w : NULL);
}

/* Time out the connection if nothing arrives for timeout_ms (0: never). */
void conn_set_read_timeout(struct conn *c, unsigned timeout_ms)
{
	c->read_timeout_ms = timeout_ms;
	conn_apply_timeouts(c);
}

/*
 * Close the connection when replies wait and none of them can be written
 * for timeout_ms (0: never): its peer stopped reading. libevent times the
 * write only while output is pending, so an idle connection is not touched.
 */
void conn_set_write_timeout(struct conn *c, unsigned timeout_ms)
{
	c->write_timeout_ms = timeout_ms;
	conn_apply_timeouts(c);
}

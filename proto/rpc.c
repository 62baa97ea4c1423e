/*
 * proto/rpc.c - blocking request/reply over a control socket.
 *
 * Used by poolctl and libpool. A wire_client is one connection that has
 * completed the Hello handshake; calls on it are serialised by its caller.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <time.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/pool_contract.h"
#include "proto/wire.h"

struct wire_client {
	int fd;
	int timeout_ms;
	int broken; /* transport error that desynchronised the stream, or 0 */
	uint64_t next_id;
	uint64_t unanswered[32]; /* ids sent with wire_client_send(): replies to drop */
	unsigned nunanswered;
	uint32_t node_id;
	char server_version[64];
	char transports[128];
	wire_notice_cb notice; /* unsolicited frames (request id 0) */
	void *notice_arg;
};

/*
 * How long a caller waiting for a reply checks for it before it sleeps: a
 * reply that comes within it is seen without a wake-up (tens of
 * microseconds when the server runs on another CPU of a VM). It yields
 * between checks, so a server on the same CPU runs meanwhile.
 */
#define WIRE_SPIN_NS 60000

static int wire_wait(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = poll(&pfd, 1, 0);
		if (n != 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > WIRE_SPIN_NS)
			break;
		sched_yield();
	}
	if (n > 0)
		return 0;
	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	return 0;
}

static int wire_write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly len bytes; with ret_fd, also take a descriptor passed with them. */
static int wire_read_all(int fd, uint8_t *buf, size_t len, int timeout_ms, int *ret_fd)
{
	while (len > 0) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {.iov_base = buf, .iov_len = len};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		struct cmsghdr *cm;
		ssize_t n;
		int rc = wire_wait(fd, POLLIN, timeout_ms);

		if (rc < 0)
			return rc;
		if (ret_fd != NULL) {
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof(cbuf);
		}
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		for (cm = ret_fd ? CMSG_FIRSTHDR(&mh) : NULL; n > 0 && cm != NULL;
		     cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send one frame on a blocking socket. */
int wire_send_frame(int fd, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg)
{
	uint8_t *buf;
	size_t len;
	int rc;

	rc = wire_frame_pack(type, req_id, msg, &buf, &len);
	if (rc < 0)
		return rc;
	rc = wire_write_all(fd, buf, len);
	free(buf);
	return rc;
}

/*
 * Receive one frame: header checked against max_payload before the payload
 * is read. The payload (possibly NULL when empty) is the caller's to free().
 */
int wire_recv_frame(int fd, size_t max_payload, int timeout_ms, struct wire_hdr *ret_hdr,
		    uint8_t **ret_payload)
{
	return wire_recv_frame_fd(fd, max_payload, timeout_ms, ret_hdr, ret_payload, NULL);
}

/* wire_recv_frame(), also taking a descriptor sent with the frame (-1 if none). */
int wire_recv_frame_fd(int fd, size_t max_payload, int timeout_ms, struct wire_hdr *ret_hdr,
		       uint8_t **ret_payload, int *ret_fd)
{
	uint8_t hbuf[WIRE_HDR_LEN];
	struct wire_hdr hdr;
	uint8_t *payload = NULL;
	int rc;

	rc = wire_read_all(fd, hbuf, sizeof(hbuf), timeout_ms, ret_fd);
	if (rc < 0)
		return rc;
	rc = wire_hdr_decode(hbuf, sizeof(hbuf), max_payload, &hdr);
	if (rc < 0)
		return rc;
	if (hdr.len > 0) {
		payload = malloc(hdr.len);
		if (payload == NULL)
			return -ENOMEM;
		rc = wire_read_all(fd, payload, hdr.len, timeout_ms, NULL);
		if (rc < 0) {
			free(payload);
			return rc;
		}
	}
	*ret_hdr = hdr;
	*ret_payload = payload;
	return 0;
}

/*
 * Hand an unsolicited frame to the notice callback, or drop the reply to a
 * request sent with wire_client_send(); false if it is neither.
 */
static bool wire_client_notice(struct wire_client *c, const struct wire_hdr *hdr,
			       const uint8_t *payload)
{
	unsigned i;

	for (i = 0; hdr->req_id != 0 && i < c->nunanswered; i++)
		if (c->unanswered[i] == hdr->req_id) {
			c->unanswered[i] = c->unanswered[--c->nunanswered];
			return true;
		}
	if (hdr->req_id != 0 || hdr->type == WIRE_ERROR)
		return false;
	if (c->notice != NULL)
		c->notice(c->notice_arg, hdr->type, payload, hdr->len);
	return true;
}

/* Receive unsolicited frames (request id 0) through cb, during calls and wire_client_poll(). */
void wire_client_set_notice(struct wire_client *c, wire_notice_cb cb, void *arg)
{
	c->notice = cb;
	c->notice_arg = arg;
}

/*
 * Deliver the notices already waiting on the socket, without blocking when
 * there are none. Callers serialise it with their calls.
 */
int wire_client_poll(struct wire_client *c)
{
	uint8_t peek[WIRE_HDR_LEN];
	struct wire_hdr hdr;
	uint8_t *payload;
	int rc;

	if (c->broken)
		return c->broken;
	while (recv(c->fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT) == (ssize_t)sizeof(peek)) {
		rc = wire_recv_frame(c->fd, WIRE_MAX_FRAME_LIMIT, c->timeout_ms, &hdr, &payload);
		if (rc < 0)
			return c->broken = rc;
		if (!wire_client_notice(c, &hdr, payload)) {
			free(payload);
			return c->broken = -EPROTO;
		}
		free(payload);
	}
	return 0;
}

/*
 * Send req without waiting for its reply, which a later call or poll drops,
 * error or not: for requests whose outcome the caller does not need, such
 * as releases, so they cost no round trip. -EBUSY when too many replies are
 * due already (make a call instead).
 */
int wire_client_send(struct wire_client *c, uint16_t type, const ProtobufCMessage *req)
{
	int rc;

	if (c->broken)
		return c->broken;
	if (c->nunanswered == sizeof(c->unanswered) / sizeof(c->unanswered[0]))
		return -EBUSY;
	rc = wire_send_frame(c->fd, type, c->next_id, req);
	if (rc < 0)
		return c->broken = rc;
	c->unanswered[c->nunanswered++] = c->next_id++;
	return 0;
}

/*
 * Send req and wait for its reply. Returns 0 and the reply when the peer
 * answered with reply_type; the peer's error code (message in errbuf) when it
 * answered WIRE_ERROR; a local -errno when the exchange itself failed.
 */
int wire_client_call(struct wire_client *c, uint16_t type, const ProtobufCMessage *req,
		     uint16_t reply_type, ProtobufCMessage **ret_reply, char *errbuf, size_t errlen)
{
	return wire_client_call_fd(c, type, req, reply_type, ret_reply, NULL, errbuf, errlen);
}

/* wire_client_call() for a reply that carries a file descriptor (*ret_fd, -1 if none). */
int wire_client_call_fd(struct wire_client *c, uint16_t type, const ProtobufCMessage *req,
			uint16_t reply_type, ProtobufCMessage **ret_reply, int *ret_fd,
			char *errbuf, size_t errlen)
{
	uint64_t id = c->next_id++;
	struct wire_hdr hdr;
	ProtobufCMessage *msg = NULL;
	uint8_t *payload;
	int rc;

	if (errbuf != NULL && errlen > 0)
		errbuf[0] = '\0';
	if (c->broken)
		return c->broken;
	rc = wire_send_frame(c->fd, type, id, req);
	if (rc == -EPIPE || rc == -ECONNRESET) {
		/* The server may have refused us (a limit) before reading: its reason is queued. */
		if (wire_recv_frame(c->fd, WIRE_MAX_FRAME_LIMIT, 1000, &hdr, &payload) == 0 &&
		    hdr.type == WIRE_ERROR)
			goto unpack;
		c->broken = rc;
		return rc;
	}
	if (rc < 0)
		return c->broken = rc;
	if (ret_fd != NULL)
		*ret_fd = -1;
	for (;;) {
		rc = wire_recv_frame_fd(c->fd, WIRE_MAX_FRAME_LIMIT, c->timeout_ms, &hdr, &payload,
					ret_fd);
		if (rc < 0)
			/*
			 * A late reply would be taken for the next call's: the connection is done.
			 */
			return c->broken = rc;
		if (!wire_client_notice(c, &hdr, payload))
			break;
		free(payload);
	}
	/* Request id 0 is a connection-level error, such as a refusal over a limit. */
	if ((hdr.req_id != id && !(hdr.req_id == 0 && hdr.type == WIRE_ERROR)) ||
	    (hdr.type != reply_type && hdr.type != WIRE_ERROR)) {
		rc = c->broken = -EPROTO;
		goto out;
	}
unpack:
	rc = wire_msg_unpack(hdr.type, payload, hdr.len, &msg);
	if (rc < 0)
		goto out;
	if (hdr.type == WIRE_ERROR) {
		Pool__Error *err = (Pool__Error *)msg;

		if (errbuf != NULL)
			snprintf(errbuf, errlen, "%s", err->message);
		rc = err->code < 0 ? err->code : -EPROTO;
		wire_msg_free(msg);
		goto out;
	}
	*ret_reply = msg;
out:
	free(payload);
	return rc;
}

/*
 * Connect to a control socket and complete the Hello handshake.
 * A server that speaks another protocol version yields POOL_EVERSION; a
 * server that refuses us puts its reason in errbuf.
 */
int wire_client_connect(const char *path, const char *name, int timeout_ms,
			struct wire_client **ret_client, char *errbuf, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	Pool__Hello hello = POOL__HELLO__INIT;
	Pool__HelloReply *reply = NULL;
	struct wire_client *c;
	int rc;

	if (errbuf != NULL && errlen > 0)
		errbuf[0] = '\0';
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->timeout_ms = timeout_ms;
	c->next_id = 1;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		rc = -errno;
		goto out_free;
	}
	if (connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = -errno;
		goto out_close;
	}
	hello.version = WIRE_VERSION;
	hello.name = (char *)name;
	rc = wire_client_call(c, WIRE_HELLO, &hello.base, WIRE_HELLO_REPLY,
			      (ProtobufCMessage **)&reply, errbuf, errlen);
	if (rc < 0)
		goto out_close;
	c->node_id = reply->node_id;
	snprintf(c->server_version, sizeof(c->server_version), "%s", reply->server_version);
	snprintf(c->transports, sizeof(c->transports), "%s",
		 reply->transports ? reply->transports : "");
	wire_msg_free(&reply->base);
	*ret_client = c;
	return 0;
out_close:
	close(c->fd);
out_free:
	free(c);
	return rc;
}

/* Close a client connection; NULL is a no-op. */
void wire_client_close(struct wire_client *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c);
}

/* The connected socket, for callers that pass file descriptors over it. */
int wire_client_fd(const struct wire_client *c)
{
	return c->fd;
}

/* The node id the server announced in its HelloReply. */
uint32_t wire_client_node_id(const struct wire_client *c)
{
	return c->node_id;
}

/* The fabric transports the server uses ("" when UCX chooses). */
const char *wire_client_transports(const struct wire_client *c)
{
	return c->transports;
}

/* The software version the server announced in its HelloReply. */
const char *wire_client_server_version(const struct wire_client *c)
{
	return c->server_version;
}

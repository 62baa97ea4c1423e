/*
 * tests/tools/pool-fake-nodes.c - a load generator of nodes: N peer links
 * to a coordinator on the real peer protocol (Hello with a nonce, the
 * coordinator's proof checked, Register with the node's proof of the peer
 * secret, then heartbeats at the interval the coordinator gives), each a
 * node that lends nothing. It measures what membership costs the cluster.
 *
 *	pool-fake-nodes [-S SECRET] [-l] [-p PARALLEL] [-t SECONDS] [-n PREFIX]
 *	                HOST:PORT N
 *
 * -S is peer.secret (default: $POOL_SECRET, or none); -l binds node i's
 * link to a loopback address of its own (127.10.x.y), as N hosts would
 * (a coordinator takes few unregistered links from one host at a time);
 * -p bounds the links between their connect and their RegisterReply
 * (default 16); -t keeps the nodes up, beating, for SECONDS after the
 * last joined (default 0); -n names them PREFIX0, PREFIX1... ("fake").
 *
 * It prints one line "joined N of N in MS ms: FRAMES frames (BYTES bytes)
 * to the nodes while they joined, FRAMES2 frames (BYTES2 bytes) in the
 * SECONDS s after; K closed" and exits 0 when every node joined and none
 * was closed, 1 otherwise.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/net/net.h"
#include "proto/wire.h"

enum fake_state { FAKE_IDLE, FAKE_CONNECTING, FAKE_HELLO, FAKE_REGISTERING, FAKE_UP, FAKE_CLOSED };

struct fake {
	int fd;
	enum fake_state state;
	uint32_t id;
	uint64_t next_beat_ms, next_req, incarnation;
	uint8_t nonce[PEERAUTH_NONCE_LEN];
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_off;
};

static struct fake *fakes;
static int nfakes, epfd;
static const char *secret = "", *prefix = "fake";
static bool own_address;
static struct sockaddr_in coord;
static uint32_t heartbeat_ms = 1000;
static uint64_t frames_in, bytes_in;
static int joined, closed;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fake_name(int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s%d", prefix, i);
}

static void fake_close(struct fake *f, const char *why)
{
	if (f->state == FAKE_CLOSED)
		return;
	if (f->state == FAKE_UP)
		joined--;
	if (closed < 5)
		fprintf(stderr, "pool-fake-nodes: %s%d: %s\n", prefix, (int)(f - fakes), why);
	close(f->fd);
	f->state = FAKE_CLOSED;
	closed++;
}

/* Queue a frame and write what the socket takes now. */
static void fake_send(struct fake *f, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg)
{
	uint8_t *frame;
	size_t len;
	ssize_t n;

	if (f->state == FAKE_CLOSED)
		return;
	if (wire_frame_pack(type, req_id, msg, &frame, &len) < 0) {
		fake_close(f, "cannot pack a frame");
		return;
	}
	f->out = realloc(f->out, f->out_len + len);
	memcpy(f->out + f->out_len, frame, len);
	f->out_len += len;
	free(frame);
	while (f->out_off < f->out_len) {
		n = write(f->fd, f->out + f->out_off, f->out_len - f->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct epoll_event ev = {EPOLLIN | EPOLLOUT, {.ptr = f}};

			epoll_ctl(epfd, EPOLL_CTL_MOD, f->fd, &ev);
			return;
		}
		if (n <= 0) {
			fake_close(f, "write failed");
			return;
		}
		f->out_off += (size_t)n;
	}
	f->out_len = f->out_off = 0;
}

static void fake_connect(struct fake *f)
{
	struct epoll_event ev = {EPOLLIN | EPOLLOUT, {.ptr = f}};
	int i = (int)(f - fakes), one = 1;

	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->fd < 0) {
		perror("pool-fake-nodes: socket");
		exit(1);
	}
	setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (own_address) {
		struct sockaddr_in src = {.sin_family = AF_INET};

		src.sin_addr.s_addr =
		    htonl(0x7f0a0000u | (uint32_t)((i / 250) << 8) | (uint32_t)(i % 250 + 1));
		if (bind(f->fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
			perror("pool-fake-nodes: bind");
			exit(1);
		}
	}
	if (connect(f->fd, (struct sockaddr *)&coord, sizeof(coord)) < 0 && errno != EINPROGRESS) {
		fake_close(f, strerror(errno));
		return;
	}
	epoll_ctl(epfd, EPOLL_CTL_ADD, f->fd, &ev);
	f->state = FAKE_CONNECTING;
}

static void fake_hello(struct fake *f)
{
	Pool__Hello hello = POOL__HELLO__INIT;
	struct epoll_event ev = {EPOLLIN, {.ptr = f}};

	epoll_ctl(epfd, EPOLL_CTL_MOD, f->fd, &ev);
	peer_auth_nonce(f->nonce);
	hello.version = WIRE_VERSION;
	hello.has_nonce = 1;
	hello.nonce.data = f->nonce;
	hello.nonce.len = sizeof(f->nonce);
	f->state = FAKE_HELLO;
	fake_send(f, WIRE_HELLO, ++f->next_req, &hello.base);
}

static void fake_register(struct fake *f, const Pool__HelloReply *hr)
{
	Pool__Register reg = POOL__REGISTER__INIT;
	Pool__NodeInfo info = POOL__NODE_INFO__INIT;
	uint8_t want[PEERAUTH_PROOF_LEN], proof[PEERAUTH_PROOF_LEN];
	char name[64];

	fake_name((int)(f - fakes), name, sizeof(name));
	if (secret[0] != '\0') {
		if (!hr->has_nonce || hr->nonce.len != PEERAUTH_NONCE_LEN ||
		    peer_auth_coord_proof(secret, f->nonce, hr->nonce.data, want) < 0 ||
		    !peer_auth_equal(want, hr->proof.data, hr->has_proof ? hr->proof.len : 0)) {
			fake_close(f, "the coordinator's proof does not check");
			return;
		}
		peer_auth_node_proof(secret, hr->nonce.data, f->nonce, name, proof);
		reg.has_proof = 1;
		reg.proof.data = proof;
		reg.proof.len = sizeof(proof);
	}
	info.name = name;
	info.addr = "";
	/* Checked transfers (the default): links at a port, though none come to a node that lends
	 * nothing. */
	info.has_link_port = 1;
	info.link_port = 9;
	info.version = PACKAGE_VERSION;
	info.role = "node";
	info.probe_rkey.data = (uint8_t *)"";
	f->incarnation = (uint64_t)time(NULL) * 1000000 + (uint64_t)(f - fakes);
	info.incarnation = f->incarnation;
	reg.node = &info;
	f->state = FAKE_REGISTERING;
	fake_send(f, WIRE_REGISTER, ++f->next_req, &reg.base);
}

static void fake_beat(struct fake *f)
{
	Pool__Heartbeat beat = POOL__HEARTBEAT__INIT;

	beat.node_id = f->id;
	beat.incarnation = f->incarnation;
	fake_send(f, WIRE_HEARTBEAT, ++f->next_req, &beat.base);
	f->next_beat_ms = now_ms() + heartbeat_ms;
}

/* One frame from the coordinator. */
static void fake_frame(struct fake *f, const struct wire_hdr *hdr, const uint8_t *payload)
{
	ProtobufCMessage *msg;

	frames_in++;
	bytes_in += WIRE_HDR_LEN + hdr->len;
	if (hdr->type != WIRE_HELLO_REPLY && hdr->type != WIRE_REGISTER_REPLY &&
	    hdr->type != WIRE_ERROR)
		return; /* member events, acks, definitions: counted, not read */
	if (wire_msg_unpack(hdr->type, payload, hdr->len, &msg) < 0) {
		fake_close(f, "a malformed frame");
		return;
	}
	if (hdr->type == WIRE_ERROR) {
		char why[300];

		snprintf(why, sizeof(why), "refused: %s", ((Pool__Error *)msg)->message);
		fake_close(f, why);
	} else if (hdr->type == WIRE_HELLO_REPLY && f->state == FAKE_HELLO) {
		fake_register(f, (Pool__HelloReply *)msg);
	} else if (hdr->type == WIRE_REGISTER_REPLY && f->state == FAKE_REGISTERING) {
		Pool__RegisterReply *rr = (Pool__RegisterReply *)msg;

		f->id = rr->node_id;
		heartbeat_ms = rr->heartbeat_ms ? rr->heartbeat_ms : heartbeat_ms;
		f->state = FAKE_UP;
		joined++;
		fake_beat(f);
	}
	wire_msg_free(msg);
}

static void fake_read(struct fake *f)
{
	struct wire_hdr hdr;
	size_t off = 0;
	ssize_t n;

	for (;;) {
		if (f->in_cap - f->in_len < 65536) {
			f->in_cap = f->in_cap ? f->in_cap * 2 : 131072;
			f->in = realloc(f->in, f->in_cap);
		}
		n = read(f->fd, f->in + f->in_len, f->in_cap - f->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			fake_close(f, n == 0 ? "the coordinator closed the link" : strerror(errno));
			return;
		}
		f->in_len += (size_t)n;
	}
	while (f->state != FAKE_CLOSED &&
	       wire_hdr_decode(f->in + off, f->in_len - off, WIRE_MAX_FRAME_LIMIT, &hdr) == 0 &&
	       f->in_len - off >= WIRE_HDR_LEN + hdr.len) {
		fake_frame(f, &hdr, f->in + off + WIRE_HDR_LEN);
		off += WIRE_HDR_LEN + hdr.len;
	}
	memmove(f->in, f->in + off, f->in_len - off);
	f->in_len -= off;
}

static void fake_event(struct fake *f, uint32_t events)
{
	if (f->state == FAKE_CONNECTING && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err != 0) {
			fake_close(f, strerror(err));
			return;
		}
		fake_hello(f);
		return;
	}
	if ((events & EPOLLOUT) && f->out_off < f->out_len) {
		ssize_t n = write(f->fd, f->out + f->out_off, f->out_len - f->out_off);

		if (n > 0)
			f->out_off += (size_t)n;
		if (f->out_off == f->out_len) {
			struct epoll_event ev = {EPOLLIN, {.ptr = f}};

			f->out_len = f->out_off = 0;
			epoll_ctl(epfd, EPOLL_CTL_MOD, f->fd, &ev);
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		fake_read(f);
}

/* Run the links until done() or the deadline (ms since the epoch of now_ms()). */
static void fake_run(int parallel, uint64_t deadline, bool (*done)(void))
{
	static int next; /* the links opened so far */
	struct epoll_event evs[256];
	int i, n;

	while (!done() && now_ms() < deadline) {
		int pending = 0;
		uint64_t now;

		for (i = 0; i < next; i++)
			pending += fakes[i].state >= FAKE_CONNECTING && fakes[i].state < FAKE_UP;
		while (next < nfakes && pending < parallel) {
			fake_connect(&fakes[next++]);
			pending++;
		}
		n = epoll_wait(epfd, evs, 256, 5);
		for (i = 0; i < n; i++)
			fake_event(evs[i].data.ptr, evs[i].events);
		now = now_ms();
		for (i = 0; i < next; i++)
			if (fakes[i].state == FAKE_UP && now >= fakes[i].next_beat_ms)
				fake_beat(&fakes[i]);
	}
}

static bool all_joined(void)
{
	return joined + closed >= nfakes;
}

static bool never(void)
{
	return closed > 0 && joined == 0;
}

int main(int argc, char **argv)
{
	int c, parallel = 16;
	double hold = 0;
	uint64_t t0, t_join, f_join, b_join;
	char *colon;

	if (getenv("POOL_SECRET") != NULL)
		secret = getenv("POOL_SECRET");
	while ((c = getopt(argc, argv, "S:lp:t:n:")) != -1) {
		switch (c) {
		case 'S':
			secret = optarg;
			break;
		case 'l':
			own_address = true;
			break;
		case 'p':
			parallel = atoi(optarg);
			break;
		case 't':
			hold = atof(optarg);
			break;
		case 'n':
			prefix = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || (colon = strrchr(argv[optind], ':')) == NULL)
		goto usage;
	*colon = '\0';
	coord.sin_family = AF_INET;
	coord.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, argv[optind], &coord.sin_addr) != 1 || parallel < 1 ||
	    (nfakes = atoi(argv[optind + 1])) < 1 || nfakes > 62500)
		goto usage;
	fakes = calloc((size_t)nfakes, sizeof(*fakes));
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (fakes == NULL || epfd < 0) {
		perror("pool-fake-nodes");
		return 1;
	}
	t0 = now_ms();
	fake_run(parallel, t0 + 600 * 1000, all_joined);
	t_join = now_ms() - t0;
	f_join = frames_in;
	b_join = bytes_in;
	fake_run(parallel, now_ms() + (uint64_t)(hold * 1000), never);
	printf("joined %d of %d in %llu ms: %llu frames (%llu bytes) to the nodes while they "
	       "joined, %llu frames (%llu bytes) in the %.1f s after; %d closed\n",
	       joined, nfakes, (unsigned long long)t_join, (unsigned long long)f_join,
	       (unsigned long long)b_join, (unsigned long long)(frames_in - f_join),
	       (unsigned long long)(bytes_in - b_join), hold, closed);
	return joined == nfakes && closed == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: pool-fake-nodes [-S SECRET] [-l] [-p PARALLEL] [-t SECONDS] "
			"[-n PREFIX] HOST:PORT N\n");
	return 2;
}

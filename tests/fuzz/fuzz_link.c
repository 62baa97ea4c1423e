/*
 * tests/fuzz/fuzz_link.c - libFuzzer target: a byte stream as the target
 * end of a fabric link (fabric/link-serve.c) reads it, over a real TCP
 * connection to its listener, after a valid handshake (the first input
 * byte odd) or as the hello itself (even): request headers, the bytes of
 * writes, whatever follows. The target's check admits one extent of a
 * buffer; whatever comes, nothing outside that extent is written, every
 * pointer the check hands out lies in it, and the connection is gone once
 * the client closes (no link left behind).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "fabric/fabric.h"
#include "fabric/link_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUF_SIZE (256u << 10)
#define EXT_OFF 4096u
#define EXT_LEN (64u << 10)

static struct event_base *base;
static struct fab_links *ls;
static uint8_t *buf;
static const uint8_t key[FAB_LINK_KEY_LEN] = {1};

static int f_check(void *arg, const struct fab_link_peer *peer, const struct fab_link_req *req,
		   bool last, void **ret_ptr)
{
	(void)arg;
	(void)peer;
	if (req->arena == 1 && req->ext == 0 && !last)
		return -EAGAIN; /* (a request that waits, for the wait's paths) */
	if (req->arena != 7 || req->ext != EXT_OFF)
		return -ENOENT;
	if (req->off > EXT_LEN || req->len > EXT_LEN - req->off)
		return -ERANGE;
	*ret_ptr = buf + req->ext + req->off;
	return 0;
}

static void f_refused(void *arg, const char *who, const char *what, int err)
{
	(void)arg;
	(void)who;
	(void)what;
	(void)err;
}

/* Calls: every other one answered at once (its first bytes back), the rest when the next comes. */
static struct fab_link_answer *held;

static void f_call(void *arg, const struct fab_link_peer *peer, const void *in, size_t len,
		   size_t max, struct fab_link_answer *ans)
{
	(void)arg;
	(void)peer;
	if (held != NULL) {
		fab_link_answer(held, -ENOENT, NULL, 0);
		held = NULL;
	}
	if (len % 2 == 1) {
		held = ans;
		return;
	}
	fab_link_answer(ans, 0, in, MIN(len, MIN(max, (size_t)64)));
}

static const struct fab_link_ops f_ops = {.check = f_check, .refused = f_refused, .call = f_call};

static void setup(void)
{
	struct fab_links_config cfg = {.bind = "127.0.0.1", .ops = &f_ops, .wait_ms = 1};

	base = event_base_new();
	buf = malloc(BUF_SIZE);
	memcpy(cfg.key, key, sizeof(key));
	cfg.self = (struct fab_link_peer){2, 100, 0};
	if (base == NULL || buf == NULL || fab_links_create(base, &cfg, &ls) < 0)
		abort();
	memset(buf, 0xee, BUF_SIZE);
}

static void turn(void)
{
	event_base_loop(base, EVLOOP_NONBLOCK);
}

/* Read what the target says (and drop it), without waiting. */
static ssize_t drain(int fd)
{
	uint8_t sink[65536];
	ssize_t n, total = 0;

	while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		total += n;
	return n == 0 ? -1 : total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct linger lg = {1, 0};
	uint8_t challenge[LINK_CHALLENGE_LEN], nonce[LINK_NONCE_LEN], hello[LINK_HELLO_LEN];
	struct link_hello h = {
	    .from_node = 9, .to_node = 2, .from_incarnation = 1, .to_incarnation = 100};
	size_t got = 0, sent = 0;
	int fd, i;

	if (base == NULL)
		setup();
	if (size == 0)
		return 0;
	sa.sin_port = htons(fab_links_port(ls));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	for (i = 0; i < 1000 && got < sizeof(challenge); i++) {
		ssize_t n;

		turn();
		n = recv(fd, challenge + got, sizeof(challenge) - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	}
	if (got != sizeof(challenge) || link_get_challenge(challenge, nonce) < 0)
		abort(); /* every stranger hears the challenge */
	if (data[0] & 1) {
		link_put_hello(hello, &h);
		link_proof(key, false, nonce, hello, h.proof);
		link_put_hello(hello, &h);
		if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
			abort();
	}
	data++;
	size--;
	/* The input, as fast as the target takes it; its replies are read and dropped. */
	for (i = 0; i < 100000 && sent < size; i++) {
		ssize_t n = send(fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			sent += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
		turn();
		if (drain(fd) < 0)
			break;
	}
	for (i = 0; i < 200; i++) {
		turn();
		if (drain(fd) < 0)
			break;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	for (i = 0; i < 20000 && ls->nins > 0; i++) { /* (a waiting request's 1 ms too) */
		turn();
		usleep(100);
	}
	if (ls->nins != 0)
		abort();    /* a connection gone must leave nothing behind */
	if (held != NULL) { /* (its link is gone: the answer only frees it) */
		fab_link_answer(held, 0, NULL, 0);
		held = NULL;
	}
	for (i = 0; i < (int)BUF_SIZE; i++)
		if ((i < (int)EXT_OFF || i >= (int)(EXT_OFF + EXT_LEN)) && buf[i] != 0xee)
			abort(); /* a byte written outside the one extent admitted */
	return 0;
}

/*
 * test_link.c - unit tests of the checked transport (fabric/link*.c): two
 * contexts on one event loop over TCP loopback, a requester and a target
 * whose check admits one extent of its "arena". What a member may do, and
 * what a stranger, a wrong key or a malformed request gets: a refusal, and
 * no byte outside the extent read or written.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <event2/event.h>

#include "fabric/fabric.h"
#include "fabric/link_int.h"
#include "tests/unit/unit.h"

#define ARENA_SIZE (48u << 20)
#define EXT_OFF (1u << 20) /* the one extent the target admits: [EXT_OFF, EXT_OFF + EXT_LEN) */
#define EXT_LEN (40u << 20)

static struct event_base *base;
static uint8_t *arena;
static bool target_waits; /* the check says "not yet" until this is cleared */
static int checks, refusals;
static uint32_t fenced_node = UINT32_MAX;

static int t_check(void *arg, const struct fab_link_peer *peer, const struct fab_link_req *req,
		   bool last, void **ret_ptr)
{
	(void)arg;
	checks++;
	if (peer->node == fenced_node)
		return -EACCES;
	if (target_waits)
		return last ? -ENOENT : -EAGAIN;
	if (req->arena != 7 || req->ext != EXT_OFF)
		return -ENOENT;
	if (req->off > EXT_LEN || req->len > EXT_LEN - req->off)
		return -ERANGE;
	*ret_ptr = arena + req->ext + req->off;
	return 0;
}

static void t_refused(void *arg, const char *who, const char *what, int err)
{
	(void)arg;
	(void)who;
	(void)what;
	(void)err;
	refusals++;
}

/*
 * The owner's calls: answered at once with the bytes reversed (and, when
 * a call asks for it by its first byte 'L', kept to be answered later);
 * 'B' answers more than the caller takes.
 */
static struct fab_link_answer *later[4];
static int nlater, ncalls;
static uint32_t last_caller;

static void t_call(void *arg, const struct fab_link_peer *peer, const void *in, size_t len,
		   size_t max, struct fab_link_answer *ans)
{
	const uint8_t *p = in;
	static uint8_t out[1u << 20];
	size_t i;

	(void)arg;
	ncalls++;
	last_caller = peer->node;
	if (len > 0 && p[0] == 'L' && nlater < 4) {
		later[nlater++] = ans;
		return;
	}
	if (len > 0 && p[0] == 'B') {
		fab_link_answer(ans, 0, out, max + 1);
		return;
	}
	for (i = 0; i < len && i < sizeof(out); i++)
		out[i] = p[len - 1 - i];
	fab_link_answer(ans, 0, out, MIN(len, sizeof(out)));
}

static const struct fab_link_ops t_ops = {.check = t_check, .refused = t_refused, .call = t_call};

static unsigned slice; /* of the contexts made next; 0: the default */

static struct fab_links *make(uint32_t node, uint64_t inc, uint8_t keybyte)
{
	struct fab_links_config cfg = {
	    .bind = "127.0.0.1", .ops = &t_ops, .wait_ms = 300, .slice = slice};
	struct fab_links *ls = NULL;

	memset(cfg.key, keybyte, sizeof(cfg.key));
	cfg.self = (struct fab_link_peer){node, inc, 42};
	CU_ASSERT_EQUAL_FATAL(fab_links_create(base, &cfg, &ls), 0);
	return ls;
}

static void target_addr(struct fab_links *t, char *buf, size_t len)
{
	snprintf(buf, len, "127.0.0.1:%u", fab_links_port(t));
}

struct done {
	int n, status;
};

static void done_cb(void *arg, int status)
{
	struct done *d = arg;

	d->n++;
	if (status < 0 && d->status == 0)
		d->status = status;
}

/* Run the loop until d has n completions (or 5 s pass). */
static void wait_for(struct done *d, int n)
{
	for (int i = 0; i < 5000 && d->n < n; i++) {
		struct timeval tv = {0, 1000};

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static void spin(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static struct fab_link *open_to(struct fab_links *r, struct fab_links *t, uint64_t to_inc)
{
	struct fab_link_peer to = {2, to_inc, 0};
	struct fab_link *k = NULL;
	char addr[64];

	target_addr(t, addr, sizeof(addr));
	CU_ASSERT_EQUAL_FATAL(fab_link_open(r, &to, addr, &k), 0);
	return k;
}

static void t_setup(void)
{
	base = event_base_new();
	if (arena == NULL)
		arena = malloc(ARENA_SIZE);
	memset(arena, 0xee, ARENA_SIZE);
	target_waits = false;
	fenced_node = UINT32_MAX;
	checks = refusals = 0;
	nlater = ncalls = 0;
}

static void t_teardown(struct fab_links *r, struct fab_links *t)
{
	fab_links_destroy(r);
	fab_links_destroy(t);
	event_base_free(base);
}

/* Reads, writes and atomics within the extent, small and chunked. */
static void test_read_write_atomics(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d = {0};
	size_t big = 20u << 20, i;
	uint8_t *buf = malloc(big), *back = malloc(big);
	uint64_t old = 0;

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	for (i = 0; i < big; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 12));
	CU_ASSERT_EQUAL(fab_link_write(k, 7, EXT_OFF, 8, 5, "hello", done_cb, &d), 0);
	CU_ASSERT_EQUAL(d.n, 0); /* never from inside the call */
	wait_for(&d, 1);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(memcmp(arena + EXT_OFF + 8, "hello", 5), 0);
	CU_ASSERT_EQUAL(arena[EXT_OFF + 7], 0xee);
	CU_ASSERT_EQUAL(arena[EXT_OFF + 13], 0xee);
	/* 20 MiB each way: five requests of 4 MiB, in flight together */
	CU_ASSERT_EQUAL(fab_link_write(k, 7, EXT_OFF, 4096, big, buf, done_cb, &d), 0);
	wait_for(&d, 2);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(memcmp(arena + EXT_OFF + 4096, buf, big), 0);
	memset(back, 0, big);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 4096, big, back, done_cb, &d), 0);
	wait_for(&d, 3);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(memcmp(back, buf, big), 0);
	/* many small ones pipelined */
	for (i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 8 + i % 5, 1, back + i, done_cb, &d),
				0);
	wait_for(&d, 1003);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(back[999], "hello"[999 % 5]);
	memset(arena + EXT_OFF + 64, 0, 8);
	CU_ASSERT_EQUAL(fab_link_fadd(k, 7, EXT_OFF, 64, 5, &old, done_cb, &d), 0);
	wait_for(&d, 1004);
	CU_ASSERT_EQUAL(old, 0);
	CU_ASSERT_EQUAL(fab_link_cswap(k, 7, EXT_OFF, 64, 5, 99, &old, done_cb, &d), 0);
	wait_for(&d, 1005);
	CU_ASSERT_EQUAL(old, 5);
	CU_ASSERT_EQUAL(*(uint64_t *)(arena + EXT_OFF + 64), 99);
	CU_ASSERT_EQUAL(d.status, 0);
	fab_link_close(k);
	t_teardown(r, t);
	free(buf);
	free(back);
}

/*
 * Writes and reads of exactly a slice (4 KiB here), one at a time: the last
 * bytes of each end a slice, and the transfer must complete all the same.
 */
static void test_slice_writes(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d = {0};
	static uint8_t buf[4096];
	int i;

	t_setup();
	slice = sizeof(buf);
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	slice = 0;
	k = open_to(r, t, 100);
	for (i = 0; i < 20; i++) {
		memset(buf, i, sizeof(buf));
		CU_ASSERT_EQUAL_FATAL(
		    fab_link_write(k, 7, EXT_OFF, 0, sizeof(buf), buf, done_cb, &d), 0);
		wait_for(&d, i + 1);
		CU_ASSERT_EQUAL_FATAL(d.n, i + 1);
		CU_ASSERT_EQUAL(arena[EXT_OFF + sizeof(buf) - 1], i);
	}
	for (i = 0; i < 20; i++) { /* (and reads of a slice: the requester's end) */
		CU_ASSERT_EQUAL_FATAL(
		    fab_link_read(k, 7, EXT_OFF, 0, sizeof(buf), buf, done_cb, &d), 0);
		wait_for(&d, 21 + i);
		CU_ASSERT_EQUAL_FATAL(d.n, 21 + i);
	}
	CU_ASSERT_EQUAL(buf[sizeof(buf) - 1], 19);
	CU_ASSERT_EQUAL(d.status, 0);
	fab_link_close(k);
	t_teardown(r, t);
}

/* Outside the extent, another extent, a misaligned atomic: refused, nothing moves. */
static void test_refused(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d1 = {0}, d2 = {0}, d3 = {0}, d4 = {0}, d5 = {0};
	uint8_t buf[64] = {0};
	uint64_t old = 0;

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, EXT_LEN - 8, 16, buf, done_cb, &d1), 0);
	CU_ASSERT_EQUAL(fab_link_write(k, 7, 0, 0, 64, buf, done_cb, &d2), 0);
	CU_ASSERT_EQUAL(fab_link_write(k, 7, EXT_OFF, EXT_LEN, 1, buf, done_cb, &d3), 0);
	CU_ASSERT_EQUAL(fab_link_fadd(k, 7, EXT_OFF, 3, 1, &old, done_cb, &d4), -EINVAL);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d5), 0);
	wait_for(&d5, 1);
	CU_ASSERT_EQUAL(d1.status, -ERANGE);
	CU_ASSERT_EQUAL(d2.status, -ENOENT);
	CU_ASSERT_EQUAL(d3.status, -ERANGE);
	CU_ASSERT_EQUAL(d4.n, 0);
	CU_ASSERT_EQUAL(d5.status, 0); /* the link goes on */
	CU_ASSERT_EQUAL(arena[0], 0xee);
	CU_ASSERT_EQUAL(arena[EXT_OFF + EXT_LEN], 0xee);
	fab_link_close(k);
	t_teardown(r, t);
}

/* A requester with another key, or asking for another incarnation, is closed unserved. */
static void test_auth(void)
{
	struct fab_links *t, *r, *stranger;
	struct fab_link *k;
	struct done d = {0};
	uint8_t buf[8];

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	stranger = make(3, 300, 2);
	k = open_to(stranger, t, 100);
	CU_ASSERT_EQUAL(fab_link_write(k, 7, EXT_OFF, 0, 8, "intruder", done_cb, &d), 0);
	wait_for(&d, 1);
	CU_ASSERT(d.status < 0);
	CU_ASSERT_NOT_EQUAL(fab_link_error(k), 0);
	CU_ASSERT_EQUAL(checks, 0);
	CU_ASSERT(refusals >= 1);
	CU_ASSERT_EQUAL(arena[EXT_OFF], 0xee);
	fab_link_close(k);
	k = open_to(r, t, 101); /* (the target restarted: incarnation 100 is gone) */
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d), 0);
	wait_for(&d, 2);
	CU_ASSERT_EQUAL(checks, 0);
	CU_ASSERT_NOT_EQUAL(fab_link_error(k), 0);
	fab_link_close(k);
	fab_links_destroy(stranger);
	t_teardown(r, t);
}

/* A raw TCP client: the challenge is all it hears; garbage or silence closes it. */
static void test_stranger_raw(void)
{
	struct fab_links *t;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint8_t got[256], junk[LINK_HELLO_LEN];
	int fd, i;
	ssize_t n;

	t_setup();
	t = make(2, 100, 1);
	sa.sin_port = htons(fab_links_port(t));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 2; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		spin(20);
		n = recv(fd, got, sizeof(got), MSG_DONTWAIT);
		CU_ASSERT_EQUAL(n, LINK_CHALLENGE_LEN);
		if (i == 0) {
			memset(junk, 0x41, sizeof(junk));
			CU_ASSERT_EQUAL(send(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
			spin(50);
		} else {
			spin(2200); /* the handshake deadline */
		}
		n = recv(fd, got, sizeof(got), MSG_DONTWAIT);
		CU_ASSERT_EQUAL(n, 0); /* closed, nothing more said */
		close(fd);
	}
	CU_ASSERT_EQUAL(checks, 0);
	CU_ASSERT_EQUAL(refusals, 2);
	fab_links_destroy(t);
	event_base_free(base);
}

/*
 * More strangers at once than the limits, from the member's own address:
 * the oldest give way, and the member's link, made while they are all
 * there, is served.
 */
static void test_unauth_limits(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct done d = {0};
	int fds[20], i, closed = 0;
	uint8_t buf[8], got[64];

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	sa.sin_port = htons(fab_links_port(t));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 20; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		CU_ASSERT_EQUAL(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		spin(2);
	}
	spin(50);
	for (i = 0; i < 20; i++) {
		while (recv(fds[i], got, sizeof(got), MSG_DONTWAIT) > 0)
			;
		closed += recv(fds[i], got, sizeof(got), MSG_DONTWAIT) == 0;
	}
	CU_ASSERT_EQUAL(closed, 12); /* the 12 oldest: 8 from one address wait for their hello */
	CU_ASSERT_EQUAL(recv(fds[19], got, sizeof(got), MSG_DONTWAIT),
			-1); /* (the newest is open) */
	k = open_to(r, t, 100);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d), 0);
	wait_for(&d, 1);
	CU_ASSERT_EQUAL(d.status, 0);
	for (i = 0; i < 20; i++)
		close(fds[i]);
	fab_link_close(k);
	t_teardown(r, t);
}

/* "Not yet": the request waits for a kick, or fails when its wait ends. */
static void test_wait_kick(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d1 = {0}, d2 = {0};
	uint8_t buf[8];

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	target_waits = true;
	CU_ASSERT_EQUAL(fab_link_write(k, 7, EXT_OFF, 0, 8, "waitedok", done_cb, &d1), 0);
	spin(100);
	CU_ASSERT_EQUAL(d1.n, 0);
	target_waits = false;
	fab_links_kick(t);
	wait_for(&d1, 1);
	CU_ASSERT_EQUAL(d1.status, 0);
	CU_ASSERT_EQUAL(memcmp(arena + EXT_OFF, "waitedok", 8), 0);
	target_waits = true;
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d2), 0);
	wait_for(&d2, 1); /* wait_ms = 300 */
	CU_ASSERT_EQUAL(d2.status, -ENOENT);
	CU_ASSERT_EQUAL(fab_link_error(k), 0); /* the link goes on */
	fab_link_close(k);
	t_teardown(r, t);
}

/* Closed with calls pending: each completes once, with -ECANCELED, from the loop. */
static void test_close_pending(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d = {0};
	static uint8_t buf[8u << 20];
	int i;

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, sizeof(buf), buf, done_cb, &d), 0);
	fab_link_close(k);
	CU_ASSERT_EQUAL(d.n, 0);
	wait_for(&d, 4);
	CU_ASSERT_EQUAL(d.n, 4);
	CU_ASSERT_EQUAL(d.status, -ECANCELED);
	spin(20);
	CU_ASSERT_EQUAL(d.n, 4);
	t_teardown(r, t);
}

/* A fenced requester: its link is dropped and its requests refused. */
static void test_drop_peer(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d = {0};
	uint8_t buf[8];

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d), 0);
	wait_for(&d, 1);
	CU_ASSERT_EQUAL(d.status, 0);
	fenced_node = 1;
	fab_links_drop_peer(t, 1);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d), 0);
	wait_for(&d, 2);
	CU_ASSERT(d.status < 0);
	fab_link_close(k);
	k = open_to(r, t, 100);
	d.status = 0;
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, buf, done_cb, &d), 0);
	wait_for(&d, 3);
	CU_ASSERT_EQUAL(d.status, -EACCES);
	fab_link_close(k);
	t_teardown(r, t);
}

/*
 * Calls: answered in order, at once or later, with what the owner said;
 * an answer larger than the caller takes is refused, and so is a call
 * larger than the most a target takes; a link that closes with a call
 * unanswered leaves its answer harmless.
 */
static void test_calls(void)
{
	struct fab_links *t, *r;
	struct fab_link *k;
	struct done d = {0}, dl = {0}, dr = {0};
	static uint8_t in[FAB_LINK_CALL_MAX + 1], out[1u << 20], out2[64], out3[64];
	size_t n = 1, n2 = 1, n3 = 1, i;
	uint8_t b8[8];

	t_setup();
	t = make(2, 100, 1);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	for (i = 0; i < sizeof(out); i++)
		in[i] = (uint8_t)(i * 13 + 1);
	in[0] = 'x';
	CU_ASSERT_EQUAL(fab_link_call(k, in, sizeof(out), out, sizeof(out), &n, done_cb, &d), 0);
	CU_ASSERT_EQUAL(d.n, 0);
	wait_for(&d, 1);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(n, sizeof(out));
	CU_ASSERT_EQUAL(out[0], in[sizeof(out) - 1]);
	CU_ASSERT_EQUAL(out[sizeof(out) - 1], 'x');
	CU_ASSERT_EQUAL(last_caller, 1);
	/* nothing either way */
	CU_ASSERT_EQUAL(fab_link_call(k, in, 0, out, 0, &n, done_cb, &d), 0);
	wait_for(&d, 2);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(n, 0);
	/* one answered later holds up a read and a call behind it, then all three come */
	CU_ASSERT_EQUAL(fab_link_call(k, "Later", 5, out2, sizeof(out2), &n2, done_cb, &dl), 0);
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, b8, done_cb, &dr), 0);
	CU_ASSERT_EQUAL(fab_link_call(k, "abc", 3, out3, sizeof(out3), &n3, done_cb, &dr), 0);
	spin(50);
	CU_ASSERT_EQUAL(nlater, 1);
	CU_ASSERT_EQUAL(dl.n + dr.n, 0);
	fab_link_answer(later[0], 0, "done", 4);
	wait_for(&dr, 2);
	CU_ASSERT_EQUAL(dl.n, 1);
	CU_ASSERT_EQUAL(dl.status, 0);
	CU_ASSERT_EQUAL(n2, 4);
	CU_ASSERT_EQUAL(memcmp(out2, "done", 4), 0);
	CU_ASSERT_EQUAL(dr.status, 0);
	CU_ASSERT_EQUAL(n3, 3);
	CU_ASSERT_EQUAL(memcmp(out3, "cba", 3), 0);
	/* an error answered later */
	CU_ASSERT_EQUAL(fab_link_call(k, "L", 1, out2, sizeof(out2), &n2, done_cb, &dl), 0);
	spin(20);
	CU_ASSERT_EQUAL_FATAL(nlater, 2);
	fab_link_answer(later[1], -ENOENT, NULL, 0);
	wait_for(&dl, 2);
	CU_ASSERT_EQUAL(dl.status, -ENOENT);
	/* more than the caller takes, and more than a target takes */
	d.status = 0;
	CU_ASSERT_EQUAL(fab_link_call(k, "B", 1, out2, sizeof(out2), &n2, done_cb, &d), 0);
	wait_for(&d, 3);
	CU_ASSERT_EQUAL(d.status, -EMSGSIZE);
	CU_ASSERT_EQUAL(fab_link_call(k, in, FAB_LINK_CALL_MAX + 1, out, 8, &n, done_cb, &d),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(fab_link_call(k, in, 8, out, FAB_LINK_CALL_MAX + 1, &n, done_cb, &d),
			-EMSGSIZE);
	/* the link still serves */
	d.status = 0;
	CU_ASSERT_EQUAL(fab_link_call(k, "xyz", 3, out3, sizeof(out3), &n3, done_cb, &d), 0);
	wait_for(&d, 4);
	CU_ASSERT_EQUAL(d.status, 0);
	CU_ASSERT_EQUAL(memcmp(out3, "zyx", 3), 0);
	/* closed with a call unanswered: the answer after it only frees */
	dl.status = 0;
	CU_ASSERT_EQUAL(fab_link_call(k, "L", 1, out2, sizeof(out2), &n2, done_cb, &dl), 0);
	spin(20);
	CU_ASSERT_EQUAL_FATAL(nlater, 3);
	fab_link_close(k);
	wait_for(&dl, 3);
	CU_ASSERT_EQUAL(dl.status, -ECANCELED);
	spin(20); /* (the target saw it close) */
	fab_link_answer(later[2], 0, "late", 4);
	spin(20);
	t_teardown(r, t);
}

/* A target that takes no calls refuses them; its link goes on. */
static void test_calls_unserved(void)
{
	static const struct fab_link_ops no_calls = {.check = t_check, .refused = t_refused};
	struct fab_links_config cfg = {.bind = "127.0.0.1", .ops = &no_calls, .wait_ms = 300};
	struct fab_links *t = NULL, *r;
	struct fab_link *k;
	struct done d = {0};
	uint8_t out[8], b8[8];
	size_t n;

	t_setup();
	memset(cfg.key, 1, sizeof(cfg.key));
	cfg.self = (struct fab_link_peer){2, 100, 42};
	CU_ASSERT_EQUAL_FATAL(fab_links_create(base, &cfg, &t), 0);
	r = make(1, 200, 1);
	k = open_to(r, t, 100);
	CU_ASSERT_EQUAL(fab_link_call(k, "abcdef", 6, out, sizeof(out), &n, done_cb, &d), 0);
	wait_for(&d, 1);
	CU_ASSERT_EQUAL(d.status, -EOPNOTSUPP);
	d.status = 0;
	CU_ASSERT_EQUAL(fab_link_read(k, 7, EXT_OFF, 0, 8, b8, done_cb, &d), 0);
	wait_for(&d, 2);
	CU_ASSERT_EQUAL(d.status, 0);
	fab_link_close(k);
	t_teardown(r, t);
}

/* Read exactly len bytes from a blocking socket (within 2 s): 0, or -1. */
static int recv_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t n;

		spin(1);
		if (poll(&p, 1, 0) <= 0)
			continue;
		n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (n <= 0)
			return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ? -1 : 0;
		got += (size_t)n;
	}
	return 0;
}

/* A member written by hand: a handshake with the key, as node 9; its fd. */
static int raw_member(struct fab_links *t)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct link_hello h = {
	    .from_node = 9, .to_node = 2, .from_incarnation = 1, .to_incarnation = 100};
	uint8_t key[FAB_LINK_KEY_LEN], challenge[LINK_CHALLENGE_LEN], nonce[LINK_NONCE_LEN];
	uint8_t hello[LINK_HELLO_LEN], welcome[LINK_WELCOME_LEN];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(key, 1, sizeof(key));
	sa.sin_port = htons(fab_links_port(t));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CU_ASSERT_EQUAL_FATAL(recv_all(fd, challenge, sizeof(challenge)), 0);
	CU_ASSERT_EQUAL_FATAL(link_get_challenge(challenge, nonce), 0);
	link_put_hello(hello, &h);
	CU_ASSERT_EQUAL_FATAL(link_proof(key, false, nonce, hello, h.proof), 0);
	link_put_hello(hello, &h);
	CU_ASSERT_EQUAL_FATAL(send(fd, hello, sizeof(hello), 0), (ssize_t)sizeof(hello));
	CU_ASSERT_EQUAL_FATAL(recv_all(fd, welcome, sizeof(welcome)), 0);
	return fd;
}

static int32_t raw_call(int fd, const struct fab_link_req *req, uint64_t id, const void *data,
			size_t dlen)
{
	uint8_t hdr[LINK_REQ_LEN], rep[LINK_REP_LEN];
	uint64_t rid = 0, old;
	int32_t status = 1;

	link_put_req(hdr, req, id);
	if (send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != (ssize_t)sizeof(hdr) ||
	    (dlen > 0 && send(fd, data, dlen, MSG_NOSIGNAL) != (ssize_t)dlen) ||
	    recv_all(fd, rep, sizeof(rep)) < 0)
		return 1;
	link_get_rep(rep, &rid, &status, &old);
	CU_ASSERT_EQUAL(rid, id);
	return status;
}

/* A member's hand-made requests the requester's end would never send: answered, or closed. */
static void test_raw_member(void)
{
	struct fab_links *t;
	uint8_t got[8], junk[16];
	struct fab_link_req req;
	int fd;

	t_setup();
	t = make(2, 100, 1);
	fd = raw_member(t);
	memset(junk, 0x55, sizeof(junk));
	req = (struct fab_link_req){FAB_LINK_CSWAP, 7, EXT_OFF, 4, 8, 0, 1};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 1, NULL, 0), -EINVAL);
	req = (struct fab_link_req){FAB_LINK_WRITE, 7, EXT_OFF, UINT64_MAX - 4, 16, 0, 0};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 2, junk, sizeof(junk)), -EINVAL);
	req = (struct fab_link_req){FAB_LINK_WRITE, 7, 0, 0, 16, 0, 0}; /* not the extent */
	CU_ASSERT_EQUAL(raw_call(fd, &req, 3, junk, sizeof(junk)), -ENOENT);
	req = (struct fab_link_req){FAB_LINK_READ, 7, EXT_OFF, 0, 8, 0, 0};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 4, NULL, 0), 0); /* the junk was dropped, not taken */
	CU_ASSERT_EQUAL(recv_all(fd, got, sizeof(got)), 0);
	CU_ASSERT_EQUAL(got[0], 0xee);
	CU_ASSERT_EQUAL(arena[0], 0xee);
	CU_ASSERT_EQUAL(arena[EXT_OFF], 0xee);
	/* calls that name a place, or ask for more than a target answers */
	ncalls = 0;
	req = (struct fab_link_req){FAB_LINK_CALL, 7, 0, 0, 16, 8, 0};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 5, junk, sizeof(junk)), -EINVAL);
	req = (struct fab_link_req){FAB_LINK_CALL, 0, 0, 0, 16, FAB_LINK_CALL_MAX + 1ull, 0};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 6, junk, sizeof(junk)), -EINVAL);
	CU_ASSERT_EQUAL(ncalls, 0);
	req = (struct fab_link_req){FAB_LINK_CALL, 0, 0, 0, 4, 8, 0};
	CU_ASSERT_EQUAL(raw_call(fd, &req, 7, "wxyz", 4), 0);
	CU_ASSERT_EQUAL(recv_all(fd, got, 4), 0);
	CU_ASSERT_EQUAL(memcmp(got, "zyxw", 4), 0);
	CU_ASSERT_EQUAL(last_caller, 9);
	req = (struct fab_link_req){FAB_LINK_READ, 7, EXT_OFF, 0, 8, 0, 0};
	req.len = FAB_LINK_MAX_LEN + 1ull;
	CU_ASSERT_EQUAL(raw_call(fd, &req, 8, NULL, 0), 1); /* closed */
	close(fd);
	fab_links_destroy(t);
	event_base_free(base);
}

/* The wire's own checks: every byte of a request header that a target must refuse. */
static void test_wire(void)
{
	struct fab_link_req req = {FAB_LINK_READ, 1, 4096, 8, 100, 0, 0}, got;
	uint8_t buf[LINK_REQ_LEN];
	uint64_t id;

	link_put_req(buf, &req, 77);
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), 0);
	CU_ASSERT_EQUAL(id, 77);
	CU_ASSERT_EQUAL(got.len, 100);
	buf[0] = 9;
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), -EPROTO);
	buf[0] = FAB_LINK_READ;
	buf[2] = 1;
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), -EPROTO);
	req.len = FAB_LINK_MAX_LEN + 1ull;
	link_put_req(buf, &req, 1);
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), -EMSGSIZE);
	req.len = 8;
	req.off = UINT64_MAX - 2;
	link_put_req(buf, &req, 1);
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), 0);
	CU_ASSERT_EQUAL(link_req_check(&got), -EINVAL);
	req = (struct fab_link_req){FAB_LINK_CSWAP, 1, 4096, 4, 8, 1, 2};
	link_put_req(buf, &req, 1);
	CU_ASSERT_EQUAL(link_get_req(buf, &got, &id), 0);
	CU_ASSERT_EQUAL(link_req_check(&got), -EINVAL);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"read, write and atomics within the extent", test_read_write_atomics},
	    {"writes of exactly a slice", test_slice_writes},
	    {"out of range and malformed: refused", test_refused},
	    {"another key or incarnation: unserved", test_auth},
	    {"a raw stranger hears a nonce, then is closed", test_stranger_raw},
	    {"limits on connections in their handshake", test_unauth_limits},
	    {"a check that says not yet: kick or wait", test_wait_kick},
	    {"close with calls pending", test_close_pending},
	    {"a fenced requester", test_drop_peer},
	    {"calls answered in order, at once or later", test_calls},
	    {"a target that takes no calls", test_calls_unserved},
	    {"a member's hand-made requests", test_raw_member},
	    {"request headers", test_wire},
	    {NULL, NULL},
	};

	return unit_run("link", tests);
}

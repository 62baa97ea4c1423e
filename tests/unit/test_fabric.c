/*
 * test_fabric.c - unit tests of the fabric layer: put/get/flush, callbacks,
 * atomics, peer failure and libevent integration, over shared memory and TCP
 * loopback. The target is a forked child driven by its own libevent loop
 * (fab_ctx_attach), bootstrapped over a socketpair.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <event2/event.h>

#include "fabric/fabric.h"

#define SRV_SIZE (4u << 20)
#define TLS_SHM "posix,cma,self"
#define TLS_TCP "tcp"

/* Target memory: fab_mem_register() of our own buffer (0) or fab_mem_alloc() (1). */
static int g_alloc;

struct cmd {
	uint8_t op; /* 'V' verify pattern, 'Q' quit */
	uint64_t off, len, seed;
};

struct server {
	pid_t pid;
	int sock;
	struct fab_ctx *ctx;
	struct fab_ep *ep;
	struct fab_rkey *rkey;
	uint64_t base;
	int err_cb_calls;
	int err_cb_err;
};

static uint8_t pattern(uint64_t seed, uint64_t i)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 9));
}

static void fill(void *buf, uint64_t len, uint64_t seed, uint64_t off)
{
	for (uint64_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = pattern(seed, off + i);
}

static int check(const void *buf, uint64_t len, uint64_t seed, uint64_t off)
{
	for (uint64_t i = 0; i < len; i++)
		if (((const uint8_t *)buf)[i] != pattern(seed, off + i))
			return 0;
	return 1;
}

static int xwrite(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int xread(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_blob(int fd, const void *buf, uint64_t len)
{
	return xwrite(fd, &len, sizeof(len)) || xwrite(fd, buf, len) ? -1 : 0;
}

static void *recv_blob(int fd, size_t *ret_len)
{
	uint64_t len;
	void *buf;

	if (xread(fd, &len, sizeof(len)) || len == 0 || len > (1u << 20))
		return NULL;
	buf = malloc(len);
	if (buf == NULL || xread(fd, buf, len)) {
		free(buf);
		return NULL;
	}
	*ret_len = len;
	return buf;
}

/* --- the target process --- */

struct child {
	struct event_base *base;
	uint8_t *buf;
	int sock;
};

static void child_cmd(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	struct cmd cmd;
	uint8_t ok;

	if (xread(fd, &cmd, sizeof(cmd)) || cmd.op == 'Q') {
		event_base_loopbreak(c->base);
		return;
	}
	ok = cmd.off + cmd.len <= SRV_SIZE && check(c->buf + cmd.off, cmd.len, cmd.seed, cmd.off);
	if (xwrite(fd, &ok, 1))
		event_base_loopbreak(c->base);
}

static void child_main(int sock, const char *tls)
{
	struct fab_config cfg = {.transports = tls, .devices = strcmp(tls, TLS_TCP) ? NULL : "lo"};
	struct child c = {.sock = sock};
	struct fab_ctx *ctx;
	struct fab_mem *mem;
	struct event *ev;
	void *addr, *rkey;
	size_t alen, rlen;
	uint64_t base, size = SRV_SIZE;

	if (fab_ctx_create(&cfg, &ctx))
		_exit(2);
	if (g_alloc) {
		void *p;

		if (fab_mem_alloc(ctx, SRV_SIZE, &mem, &p))
			_exit(2);
		c.buf = p;
	} else {
		c.buf = aligned_alloc(4096, SRV_SIZE);
		if (c.buf == NULL || fab_mem_register(ctx, c.buf, SRV_SIZE, &mem))
			_exit(2);
	}
	fill(c.buf, SRV_SIZE, 1, 0);
	memset(c.buf, 0, 64); /* words 0..7 for atomics */
	if (fab_ctx_address(ctx, &addr, &alen) || fab_mem_rkey_pack(mem, &rkey, &rlen))
		_exit(3);
	base = (uint64_t)(uintptr_t)c.buf;
	if (send_blob(sock, addr, alen) || send_blob(sock, rkey, rlen) ||
	    xwrite(sock, &base, sizeof(base)) || xwrite(sock, &size, sizeof(size)))
		_exit(4);
	free(addr);
	free(rkey);
	c.base = event_base_new();
	ev = event_new(c.base, sock, EV_READ | EV_PERSIST, child_cmd, &c);
	if (c.base == NULL || ev == NULL || event_add(ev, NULL) || fab_ctx_attach(ctx, c.base))
		_exit(5);
	event_base_dispatch(c.base);
	event_free(ev);
	fab_ctx_detach(ctx);
	event_base_free(c.base);
	fab_mem_deregister(mem);
	fab_ctx_destroy(ctx);
	_exit(0);
}

/* --- the initiator side --- */

static void on_ep_err(struct fab_ep *ep, int err, void *arg)
{
	struct server *s = arg;

	s->err_cb_calls++;
	s->err_cb_err = err;
}

static int server_start(struct server *s, const char *tls, unsigned timeout_ms)
{
	struct fab_config cfg = {.transports = tls,
				 .devices = strcmp(tls, TLS_TCP) ? NULL : "lo",
				 .op_timeout_ms = timeout_ms};
	int sv[2];
	void *addr = NULL, *rkey = NULL;
	size_t alen, rlen;
	uint64_t size;

	memset(s, 0, sizeof(*s));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		close(sv[0]);
		child_main(sv[1], tls);
	}
	close(sv[1]);
	s->sock = sv[0];
	if (fab_ctx_create(&cfg, &s->ctx))
		return -1;
	addr = recv_blob(s->sock, &alen);
	rkey = recv_blob(s->sock, &rlen);
	if (addr == NULL || rkey == NULL || xread(s->sock, &s->base, 8) || xread(s->sock, &size, 8))
		goto fail;
	if (fab_ep_create(s->ctx, addr, alen, on_ep_err, s, &s->ep) ||
	    fab_rkey_unpack(s->ep, rkey, rlen, &s->rkey))
		goto fail;
	free(addr);
	free(rkey);
	return 0;
fail:
	free(addr);
	free(rkey);
	return -1;
}

static int server_verify(struct server *s, uint64_t off, uint64_t len, uint64_t seed)
{
	struct cmd cmd = {.op = 'V', .off = off, .len = len, .seed = seed};
	uint8_t ok = 0;

	if (xwrite(s->sock, &cmd, sizeof(cmd)) || xread(s->sock, &ok, 1))
		return 0;
	return ok;
}

static void server_stop(struct server *s)
{
	struct cmd cmd = {.op = 'Q'};
	int status;

	fab_rkey_destroy(s->rkey);
	fab_ep_destroy(s->ep);
	fab_ctx_destroy(s->ctx);
	if (s->pid > 0) {
		(void)xwrite(s->sock, &cmd, sizeof(cmd));
		waitpid(s->pid, &status, 0);
	}
	close(s->sock);
}

static void nb_ops(const char *tls, struct event_base *base);
static void atomics(const char *tls);

/* put/get/flush of patterned buffers, several sizes and offsets, byte exact. */
static void rma_roundtrip(const char *tls)
{
	static const size_t sizes[] = {1, 8, 63, 4096, 65536 + 3, 1u << 20, 3u << 20};
	struct server s;
	uint8_t *buf = malloc(SRV_SIZE);

	CU_ASSERT_FATAL(buf != NULL);
	CU_ASSERT_FATAL(server_start(&s, tls, 5000) == 0);
	/* get the server's initial pattern */
	CU_ASSERT_EQUAL(fab_get(s.ep, buf, SRV_SIZE - 4096, s.base + 4096, s.rkey), 0);
	CU_ASSERT(check(buf, SRV_SIZE - 4096, 1, 4096));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t off = (i * 4099) % 65536 + 64, len = sizes[i], seed = 100 + i;

		fill(buf, len, seed, off);
		CU_ASSERT_EQUAL(fab_put(s.ep, buf, len, s.base + off, s.rkey), 0);
		CU_ASSERT_EQUAL(fab_flush(s.ep), 0);
		CU_ASSERT(server_verify(&s, off, len, seed));
		memset(buf, 0, len);
		CU_ASSERT_EQUAL(fab_get(s.ep, buf, len, s.base + off, s.rkey), 0);
		CU_ASSERT(check(buf, len, seed, off));
	}
	CU_ASSERT_EQUAL(fab_ep_error(s.ep), 0);
	server_stop(&s);
	free(buf);
}

static void test_rma_shm(void)
{
	rma_roundtrip(TLS_SHM);
}

static void test_rma_tcp(void)
{
	rma_roundtrip(TLS_TCP);
}

/* Same over fab_mem_alloc() memory (direct shared-memory mapping on shm). */
static void test_rma_alloc(void)
{
	g_alloc = 1;
	rma_roundtrip(TLS_SHM);
	rma_roundtrip(TLS_TCP);
	nb_ops(TLS_SHM, NULL);
	atomics(TLS_SHM);
	g_alloc = 0;
}

/* Non-blocking ops: each callback runs exactly once, from progress, never inline. */
#define NB_OPS 64
struct nb_state {
	int calls[NB_OPS];
	int status[NB_OPS];
	int total;
};
struct nb_arg {
	struct nb_state *st;
	int i;
};

static void nb_done(void *arg, int status)
{
	struct nb_arg *a = arg;

	a->st->calls[a->i]++;
	a->st->status[a->i] = status;
	a->st->total++;
}

static void nb_ops(const char *tls, struct event_base *base)
{
	struct nb_state st;
	struct nb_arg args[NB_OPS];
	struct server s;
	size_t chunk = 16384;
	uint8_t *buf = malloc(NB_OPS * chunk);

	memset(&st, 0, sizeof(st));
	CU_ASSERT_FATAL(buf != NULL);
	CU_ASSERT_FATAL(server_start(&s, tls, 5000) == 0);
	if (base != NULL)
		CU_ASSERT_EQUAL(fab_ctx_attach(s.ctx, base), 0);
	fill(buf, NB_OPS / 2 * chunk, 7, 0);
	for (int i = 0; i < NB_OPS; i++) {
		args[i].st = &st;
		args[i].i = i;
		int rc;

		if (i < NB_OPS / 2)
			rc = fab_put_nb(s.ep, buf + i * chunk, chunk, s.base + i * chunk, s.rkey,
					nb_done, &args[i]);
		else
			rc = fab_get_nb(s.ep, buf + i * chunk, chunk, s.base + i * chunk, s.rkey,
					nb_done, &args[i]);
		CU_ASSERT_EQUAL(rc, 0);
	}
	CU_ASSERT_EQUAL(st.total, 0); /* never inline */
	for (time_t end = time(NULL) + 15; st.total < NB_OPS && time(NULL) < end;) {
		if (base != NULL)
			event_base_loop(base, EVLOOP_ONCE);
		else
			fab_ctx_progress(s.ctx);
	}
	CU_ASSERT_EQUAL(st.total, NB_OPS);
	for (int i = 0; i < NB_OPS; i++) {
		CU_ASSERT_EQUAL(st.calls[i], 1);
		CU_ASSERT_EQUAL(st.status[i], 0);
	}
	CU_ASSERT(check(buf + NB_OPS / 2 * chunk, NB_OPS / 2 * chunk, 1, NB_OPS / 2 * chunk));
	CU_ASSERT_EQUAL(fab_flush(s.ep), 0);
	CU_ASSERT(server_verify(&s, 0, NB_OPS / 2 * chunk, 7));
	if (base != NULL)
		fab_ctx_detach(s.ctx);
	server_stop(&s);
	free(buf);
	for (int i = 0; i < NB_OPS; i++)
		CU_ASSERT_EQUAL(st.calls[i], 1); /* nothing more after teardown */
}

static void test_nb_shm(void)
{
	nb_ops(TLS_SHM, NULL);
}

static void test_nb_tcp(void)
{
	nb_ops(TLS_TCP, NULL);
}

/* fab_ctx_attach: a libevent loop alone drives the completions. */
static void test_evloop_tcp(void)
{
	struct event_base *base = event_base_new();

	CU_ASSERT_FATAL(base != NULL);
	nb_ops(TLS_TCP, base);
	event_base_free(base);
}

static void test_evloop_shm(void)
{
	struct event_base *base = event_base_new();

	CU_ASSERT_FATAL(base != NULL);
	nb_ops(TLS_SHM, base);
	event_base_free(base);
}

/* fadd and cswap on word 0/1 of the server buffer; -ENOTSUP is accepted. */
static void atomics(const char *tls)
{
	struct server s;
	uint64_t old = 12345;
	int rc;

	CU_ASSERT_FATAL(server_start(&s, tls, 5000) == 0);
	rc = fab_atomic_fadd64(s.ep, s.base, s.rkey, 5, &old);
	if (rc == -ENOTSUP) {
		server_stop(&s);
		return;
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(old, 0);
	CU_ASSERT_EQUAL(fab_atomic_fadd64(s.ep, s.base, s.rkey, 7, &old), 0);
	CU_ASSERT_EQUAL(old, 5);
	CU_ASSERT_EQUAL(fab_atomic_cswap64(s.ep, s.base, s.rkey, 99, 1, &old), 0);
	CU_ASSERT_EQUAL(old, 12); /* no swap */
	CU_ASSERT_EQUAL(fab_atomic_cswap64(s.ep, s.base, s.rkey, 12, 1000, &old), 0);
	CU_ASSERT_EQUAL(old, 12);
	old = 0;
	CU_ASSERT_EQUAL(fab_get(s.ep, &old, 8, s.base, s.rkey), 0);
	CU_ASSERT_EQUAL(old, 1000);
	CU_ASSERT_EQUAL(fab_atomic_fadd64(s.ep, s.base + 3, s.rkey, 1, &old), -EINVAL);
	server_stop(&s);
}

static void test_amo_shm(void)
{
	atomics(TLS_SHM);
}

static void test_amo_tcp(void)
{
	atomics(TLS_TCP);
}

/* A killed peer: the next get fails (no hang), ep_error is set, later ops fail at once. */
static void test_dead_peer_tcp(void)
{
	struct server s;
	uint8_t buf[4096];
	int rc, status;

	CU_ASSERT_FATAL(server_start(&s, TLS_TCP, 3000) == 0);
	CU_ASSERT_EQUAL(fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey), 0);
	kill(s.pid, SIGKILL);
	waitpid(s.pid, &status, 0);
	s.pid = 0;
	rc = fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey);
	for (int i = 0; rc == 0 && i < 100; i++) /* a get may still be served from socket buffers */
		rc = fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey);
	CU_ASSERT(rc < 0);
	CU_ASSERT(fab_ep_error(s.ep) < 0);
	CU_ASSERT(s.err_cb_calls <= 1);
	if (rc < 0) {
		int again = fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey);
		CU_ASSERT_EQUAL(again, fab_ep_error(s.ep));
		CU_ASSERT_EQUAL(fab_put_nb(s.ep, buf, 8, s.base, s.rkey, NULL, NULL),
				fab_ep_error(s.ep));
		CU_ASSERT_EQUAL(fab_flush(s.ep), fab_ep_error(s.ep));
	}
	server_stop(&s);
}

/* A stopped (hung) peer: blocking get gives -ETIMEDOUT after op_timeout_ms, then fails fast. */
static void test_hung_peer_tcp(void)
{
	struct server s;
	uint8_t buf[4096];
	int status;

	CU_ASSERT_FATAL(server_start(&s, TLS_TCP, 300) == 0);
	CU_ASSERT_EQUAL(fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey), 0);
	kill(s.pid, SIGSTOP);
	CU_ASSERT_EQUAL(fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey), -ETIMEDOUT);
	CU_ASSERT_EQUAL(fab_ep_error(s.ep), -ETIMEDOUT);
	CU_ASSERT_EQUAL(fab_get(s.ep, buf, sizeof(buf), s.base, s.rkey), -ETIMEDOUT);
	kill(s.pid, SIGKILL);
	kill(s.pid, SIGCONT);
	waitpid(s.pid, &status, 0);
	s.pid = 0;
	server_stop(&s); /* force-closes the ep, cancelling the abandoned get */
}

/* Argument checks and an rkey used on the wrong endpoint. */
static void test_args(void)
{
	struct server s;
	struct fab_ctx *ctx;
	struct fab_config bad = {.transports = "tcp",
				 .ucx_opts = (const char *const[]){"NOEQUALS", NULL}};
	char tls[64];
	uint8_t b[8];
	int fd;

	CU_ASSERT_EQUAL(fab_ctx_create(&bad, &ctx), -EINVAL);
	CU_ASSERT_FATAL(server_start(&s, TLS_TCP, 5000) == 0);
	CU_ASSERT_EQUAL(fab_ctx_event_fd(s.ctx, &fd), 0);
	CU_ASSERT(fd >= 0);
	CU_ASSERT_EQUAL(fab_ctx_transports(s.ctx, tls, sizeof(tls)), 0);
	CU_ASSERT_STRING_EQUAL(tls, "tcp");
	CU_ASSERT_EQUAL(fab_get(s.ep, b, sizeof(b), s.base, NULL), -EINVAL);
	CU_ASSERT_EQUAL(fab_ep_create(s.ctx, NULL, 0, NULL, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(fab_get(s.ep, b, sizeof(b), s.base, s.rkey), 0);
	server_stop(&s);
}

int main(void)
{
	CU_pSuite suite;
	unsigned failed;

	signal(SIGPIPE, SIG_IGN);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	suite = CU_add_suite("fabric", NULL, NULL);
	if (suite == NULL || !CU_add_test(suite, "args", test_args) ||
	    !CU_add_test(suite, "rma_shm", test_rma_shm) ||
	    !CU_add_test(suite, "rma_tcp", test_rma_tcp) ||
	    !CU_add_test(suite, "nb_shm", test_nb_shm) ||
	    !CU_add_test(suite, "nb_tcp", test_nb_tcp) ||
	    !CU_add_test(suite, "evloop_shm", test_evloop_shm) ||
	    !CU_add_test(suite, "evloop_tcp", test_evloop_tcp) ||
	    !CU_add_test(suite, "amo_shm", test_amo_shm) ||
	    !CU_add_test(suite, "amo_tcp", test_amo_tcp) ||
	    !CU_add_test(suite, "dead_peer_tcp", test_dead_peer_tcp) ||
	    !CU_add_test(suite, "hung_peer_tcp", test_hung_peer_tcp) ||
	    !CU_add_test(suite, "rma_alloc", test_rma_alloc)) {
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

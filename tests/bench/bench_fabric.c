/*
 * bench_fabric.c - pool-bench-fabric: put/get bandwidth and latency through
 * fabric/. A server registers a buffer and publishes its worker address and
 * rkey over a bootstrap channel (a socketpair to a forked child, or TCP for
 * runs across hosts or network namespaces); the client measures and prints
 * a table. With -t link the same runs over the checked transport (link*.c):
 * the server's check admits the whole buffer, the client reads and writes
 * it with fab_link_read/write, both driven by their libevent loops.
 *
 *   pool-bench-fabric [-t tcp|shm|link|TLS] [-d DEV] [-W WINDOW] [-T SECONDS]
 *                     [-S SEGSIZE] [-C CHUNK] [-z SIZE] [-o KEY=VAL]... [-P] [-R]
 *   pool-bench-fabric -s [-p PORT] [-b BINDADDR] ...   server only
 *   pool-bench-fabric -c HOST [-p PORT] ...            client only
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "fabric/fabric.h"

#define BUF_SIZE (64u << 20) /* server buffer; client ops cycle through it */
#define MAX_OPTS 16

static const size_t bw_sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
static const size_t lat_sizes[] = {8, 64, 512, 4096};

struct opts {
	const char *tls;
	int link; /* -t link: the checked transport instead of UCX */
	const char *dev;
	const char *host;
	const char *bind;
	int port;
	int server_only;
	int reg;  /* -R: target registers its own mmap() memory instead of fab_mem_alloc() */
	int busy; /* -P: busy-polling initiator and target, as ucx_perftest */
	int window;
	double seconds;
	size_t seg;
	size_t chunk;
	size_t only; /* -z: one bandwidth size, no latency table */
	const char *ucx_opts[MAX_OPTS + 1];
	int nopts;
};

struct peer {
	uint64_t base, size;
	void *addr, *rkey;
	size_t alen, rlen;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((noreturn)) die(const char *what, int rc)
{
	fprintf(stderr, "pool-bench-fabric: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static int xio(int fd, void *buf, size_t len, int wr)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);
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

static void send_blob(int fd, const void *buf, uint64_t len)
{
	if (xio(fd, &len, 8, 1) || xio(fd, (void *)buf, len, 1))
		die("bootstrap write", EPIPE);
}

static void *recv_blob(int fd, size_t *ret_len)
{
	uint64_t len;
	void *buf;

	if (xio(fd, &len, 8, 0) || len == 0 || len > (1u << 20))
		die("bootstrap read", EPROTO);
	buf = malloc(len);
	if (buf == NULL || xio(fd, buf, len, 0))
		die("bootstrap read", EPROTO);
	*ret_len = len;
	return buf;
}

static struct fab_config make_config(const struct opts *o)
{
	struct fab_config cfg = {0};

	cfg.transports = o->tls;
	cfg.devices = o->dev;
	cfg.tcp_seg_size = o->seg;
	cfg.rma_chunk = o->chunk;
	cfg.ucx_opts = o->ucx_opts;
	return cfg;
}

/* --- server --- */

static void srv_quit(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(arg);
}

static void server(const struct opts *o, int sock)
{
	struct fab_config cfg = make_config(o);
	struct fab_ctx *ctx;
	struct fab_mem *mem;
	void *buf, *addr, *rkey;
	size_t alen, rlen;
	uint64_t base, size = BUF_SIZE;
	int rc;

	if ((rc = fab_ctx_create(&cfg, &ctx)))
		die("server setup", rc);
	if (o->reg) {
		buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		if (buf == MAP_FAILED)
			die("mmap", errno);
		if ((rc = fab_mem_register(ctx, buf, BUF_SIZE, &mem)))
			die("register", rc);
	} else if ((rc = fab_mem_alloc(ctx, BUF_SIZE, &mem, &buf))) {
		die("alloc", rc);
	}
	memset(buf, 0x5a, BUF_SIZE);
	if ((rc = fab_ctx_address(ctx, &addr, &alen)) ||
	    (rc = fab_mem_rkey_pack(mem, &rkey, &rlen)))
		die("server setup", rc);
	base = (uint64_t)(uintptr_t)buf;
	send_blob(sock, addr, alen);
	send_blob(sock, rkey, rlen);
	if (xio(sock, &base, 8, 1) || xio(sock, &size, 8, 1))
		die("bootstrap write", EPIPE);
	free(addr);
	free(rkey);
	if (!o->busy) {
		/* Event driven target: the worker sleeps on its fd inside libevent. */
		struct event_base *eb = event_base_new();
		struct event *ev = event_new(eb, sock, EV_READ, srv_quit, eb);

		if (eb == NULL || ev == NULL || event_add(ev, NULL) || fab_ctx_attach(ctx, eb))
			die("libevent", ENOMEM);
		event_base_dispatch(eb);
		fab_ctx_detach(ctx);
		event_free(ev);
		event_base_free(eb);
	} else {
		/* Busy-polling target, as ucx_perftest does. */
		struct pollfd pfd = {.fd = sock, .events = POLLIN};

		for (unsigned i = 0;; i++) {
			fab_ctx_progress(ctx);
			if ((i & 1023) == 0 && poll(&pfd, 1, 0) > 0)
				break;
		}
	}
	fab_mem_deregister(mem);
	fab_ctx_destroy(ctx);
	if (o->reg)
		munmap(buf, BUF_SIZE);
}

/* --- client --- */

struct bw_state {
	int inflight;
	int errors;
	int first_err;
};

static void bw_done(void *arg, int status)
{
	struct bw_state *st = arg;

	st->inflight--;
	if (status != 0 && st->errors++ == 0)
		st->first_err = status;
}

/*
 * Nothing to progress: sleep on the worker fd until there is. On a small
 * machine a spinning initiator and a spinning target starve the kernel's
 * loopback TCP work (softirq) and throughput collapses to scheduler ticks.
 */
static void fab_sleep(struct fab_ctx *ctx)
{
	struct pollfd pfd = {.events = POLLIN};

	if (fab_ctx_event_fd(ctx, &pfd.fd) == 0 && fab_ctx_arm(ctx) == 0)
		(void)poll(&pfd, 1, 100);
}

/* Bandwidth in MiB/s of back-to-back ops of one size with `window` in flight. */
static double run_bw(struct fab_ctx *ctx, struct fab_ep *ep, struct fab_rkey *rk,
		     const struct peer *p, char *lbuf, size_t size, int is_put, int window,
		     double seconds, int busy)
{
	struct bw_state st = {0};
	uint64_t slots = p->size / size, n = 0, done_bytes;
	double t0, t1, deadline;
	int rc;

	if (slots > (uint64_t)window)
		slots = window;
	/* warm-up */
	if ((rc = is_put ? fab_put(ep, lbuf, size, p->base, rk)
			 : fab_get(ep, lbuf, size, p->base, rk)))
		die("warm-up", rc);
	t0 = now();
	deadline = t0 + seconds;
	for (;;) {
		while (st.inflight < window && now() < deadline) {
			uint64_t slot = n % slots;
			uint64_t raddr = p->base + slot * size;
			char *l = lbuf + slot * size;

			rc = is_put ? fab_put_nb(ep, l, size, raddr, rk, bw_done, &st)
				    : fab_get_nb(ep, l, size, raddr, rk, bw_done, &st);
			if (rc)
				die("issue", rc);
			st.inflight++;
			n++;
		}
		if (st.inflight == 0)
			break;
		if (fab_ctx_progress(ctx) == 0 && !busy)
			fab_sleep(ctx);
	}
	if (is_put && (rc = fab_flush(ep)))
		die("flush", rc);
	t1 = now();
	if (st.errors)
		die("transfer", st.first_err);
	/* the server's buffer is all 0x5a: check what the gets brought */
	for (uint64_t i = 0; !is_put && i < size * (n < slots ? n : slots); i += 4093)
		if ((uint8_t)lbuf[i] != 0x5a)
			die("get data mismatch", EIO);
	done_bytes = n * size;
	return done_bytes / (t1 - t0) / (1024.0 * 1024.0);
}

/* Average blocking op time in microseconds (put: put + flush, i.e. remote completion). */
static double run_lat(struct fab_ep *ep, struct fab_rkey *rk, const struct peer *p, char *lbuf,
		      size_t size, int is_put, double seconds)
{
	double t0, deadline;
	uint64_t n = 0;
	int rc;

	for (int i = 0; i < 100; i++)
		if ((rc = fab_get(ep, lbuf, size, p->base, rk)))
			die("warm-up", rc);
	t0 = now();
	deadline = t0 + seconds;
	do {
		for (int i = 0; i < 64; i++, n++) {
			if (is_put)
				rc = fab_put(ep, lbuf, size, p->base, rk) ?: fab_flush(ep);
			else
				rc = fab_get(ep, lbuf, size, p->base, rk);
			if (rc)
				die("latency op", rc);
		}
	} while (now() < deadline);
	return (now() - t0) / n * 1e6;
}

/* memcpy MiB/s of one size, cycling through the same footprint as the RMA test. */
static double run_memcpy(char *dst, const char *src, size_t size, int window, double seconds)
{
	uint64_t n = 0, slots = (uint64_t)window;
	double t0 = now(), deadline = t0 + seconds;

	if (slots * size > BUF_SIZE)
		slots = BUF_SIZE / size;
	do {
		for (int i = 0; i < 16; i++, n++)
			memcpy(dst + (n % slots) * size, src + (n % slots) * size, size);
		__asm__ __volatile__("" ::: "memory");
	} while (now() < deadline);
	return (double)n * size / (now() - t0) / (1024.0 * 1024.0);
}

/* How the client moves bytes: UCX one-sided, or a checked link. */
struct way {
	double (*bw)(struct way *w, char *lbuf, size_t size, int is_put, int window,
		     double seconds);
	double (*lat)(struct way *w, char *lbuf, size_t size, int is_put, double seconds);
	/* UCX */
	struct fab_ctx *ctx;
	struct fab_ep *ep;
	struct fab_rkey *rk;
	struct peer *p;
	int busy;
	/* link */
	struct event_base *eb;
	struct fab_links *ls;
	struct fab_link *k;
};

/* The two tables: bandwidth of every size (and memcpy's), then latency. */
static void report(const struct opts *o, struct way *w, char *lbuf, char *src)
{
	printf("%-10s %14s %14s %14s\n", "size", "get MiB/s", "put MiB/s", "memcpy MiB/s");
	for (size_t i = 0; i < sizeof(bw_sizes) / sizeof(bw_sizes[0]); i++) {
		size_t s = bw_sizes[i];

		if (o->only != 0 && s != o->only)
			continue;
		memset(lbuf, 1,
		       s * (size_t)o->window < BUF_SIZE ? s * (size_t)o->window : BUF_SIZE);
		double g = w->bw(w, lbuf, s, 0, o->window, o->seconds);
		memset(lbuf, 0x5a, BUF_SIZE);
		double p = w->bw(w, lbuf, s, 1, o->window, o->seconds);
		double m = run_memcpy(lbuf, src, s, o->window, o->seconds / 2);

		printf("%-10zu %14.1f %14.1f %14.1f\n", s, g, p, m);
		fflush(stdout);
	}
	if (o->only == 0)
		printf("%-10s %14s %14s\n", "size", "get lat us", "put+flush us");
	for (size_t i = 0; o->only == 0 && i < sizeof(lat_sizes) / sizeof(lat_sizes[0]); i++) {
		size_t s = lat_sizes[i];
		double g = w->lat(w, lbuf, s, 0, o->seconds);
		double p = w->lat(w, lbuf, s, 1, o->seconds);

		printf("%-10zu %14.2f %14.2f\n", s, g, p);
		fflush(stdout);
	}
}

static double ucx_bw(struct way *w, char *lbuf, size_t size, int is_put, int window, double seconds)
{
	return run_bw(w->ctx, w->ep, w->rk, w->p, lbuf, size, is_put, window, seconds, w->busy);
}

static double ucx_lat(struct way *w, char *lbuf, size_t size, int is_put, double seconds)
{
	return run_lat(w->ep, w->rk, w->p, lbuf, size, is_put, seconds);
}

/* --- the checked transport (-t link) --- */

static const uint8_t bench_key[FAB_LINK_KEY_LEN] = {0x5a};
static void *link_buf;

/* The server admits its whole buffer, as arena 0 extent 0. */
static int link_check(void *arg, const struct fab_link_peer *peer, const struct fab_link_req *req,
		      bool last, void **ret_ptr)
{
	(void)arg;
	(void)peer;
	(void)last;
	if (req->arena != 0 || req->ext != 0 || req->off > BUF_SIZE ||
	    req->len > BUF_SIZE - req->off)
		return -ERANGE;
	*ret_ptr = (char *)link_buf + req->off;
	return 0;
}

static void link_refused(void *arg, const char *who, const char *what, int err)
{
	(void)arg;
	fprintf(stderr, "pool-bench-fabric: link from %s: %s (%s)\n", who, what, strerror(-err));
}

static const struct fab_link_ops link_ops = {.check = link_check, .refused = link_refused};

static struct fab_links *link_ctx(struct event_base *eb, const char *bind, uint32_t node)
{
	struct fab_links_config cfg = {.bind = bind, .self = {node, 1, 1}, .ops = &link_ops};
	struct fab_links *ls;
	int rc;

	memcpy(cfg.key, bench_key, sizeof(bench_key));
	if ((rc = fab_links_create(eb, &cfg, &ls)))
		die("links", rc);
	return ls;
}

/*
 * Turn the loop without sleeping while bytes move, and for 50 us after
 * they stop, then sleep in it: as poold does (poold_run()) and as the UCX
 * client waits for its worker (fab_ctx_wait()).
 */
static void link_turn(struct event_base *eb, struct fab_links *ls)
{
	struct fab_link_stats st;
	uint64_t before;
	double until = now() + 50e-6;

	fab_links_stats(ls, &st);
	before = st.moved;
	do {
		event_base_loop(eb, EVLOOP_NONBLOCK);
		fab_links_stats(ls, &st);
		if (st.moved != before)
			return;
	} while (now() < until);
	event_base_loop(eb, EVLOOP_ONCE);
}

static void link_server(const struct opts *o, int sock)
{
	struct event_base *eb = event_base_new();
	struct event *ev = event_new(eb, sock, EV_READ, srv_quit, eb);
	struct fab_links *ls;
	uint16_t port;
	uint64_t base = 0, size = BUF_SIZE;

	link_buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (eb == NULL || ev == NULL || link_buf == MAP_FAILED)
		die("server setup", ENOMEM);
	memset(link_buf, 0x5a, BUF_SIZE);
	ls = link_ctx(eb, o->bind != NULL ? o->bind : "127.0.0.1", 2);
	port = fab_links_port(ls);
	send_blob(sock, &port, sizeof(port));
	send_blob(sock, &port,
		  sizeof(port)); /* (no key: the client proves it knows the link key) */
	if (xio(sock, &base, 8, 1) || xio(sock, &size, 8, 1))
		die("bootstrap write", EPIPE);
	event_add(ev, NULL);
	while (!event_base_got_break(eb))
		link_turn(eb, ls);
	fab_links_destroy(ls);
	event_free(ev);
	event_base_free(eb);
	munmap(link_buf, BUF_SIZE);
}

static double link_bw(struct way *w, char *lbuf, size_t size, int is_put, int window,
		      double seconds)
{
	struct fab_link *k = w->k;
	struct bw_state st = {0};
	uint64_t slots = BUF_SIZE / size, n = 0;
	double t0, deadline;
	int rc;

	if (slots > (uint64_t)window)
		slots = window;
	t0 = now();
	deadline = t0 + seconds;
	for (;;) {
		while (st.inflight < window && now() < deadline) {
			uint64_t slot = n % slots;
			char *l = lbuf + slot * size;

			rc = is_put ? fab_link_write(k, 0, 0, slot * size, size, l, bw_done, &st)
				    : fab_link_read(k, 0, 0, slot * size, size, l, bw_done, &st);
			if (rc)
				die("issue", rc);
			st.inflight++;
			n++;
		}
		if (st.inflight == 0)
			break;
		link_turn(w->eb, w->ls);
	}
	if (st.errors)
		die("transfer", st.first_err);
	for (uint64_t i = 0; !is_put && i < size * (n < slots ? n : slots); i += 4093)
		if ((uint8_t)lbuf[i] != 0x5a)
			die("get data mismatch", EIO);
	return n * size / (now() - t0) / (1024.0 * 1024.0);
}

/* Average time of one op alone, in microseconds (a write returns once it is in the target's
 * memory). */
static double link_lat(struct way *w, char *lbuf, size_t size, int is_put, double seconds)
{
	struct fab_link *k = w->k;
	double t0 = now(), deadline = t0 + seconds;
	uint64_t n = 0;

	do {
		struct bw_state st = {.inflight = 1};
		int rc = is_put ? fab_link_write(k, 0, 0, 0, size, lbuf, bw_done, &st)
				: fab_link_read(k, 0, 0, 0, size, lbuf, bw_done, &st);

		if (rc)
			die("latency op", rc);
		while (st.inflight > 0)
			link_turn(w->eb, w->ls);
		if (st.errors)
			die("latency op", st.first_err);
		n++;
	} while (now() < deadline);
	return (now() - t0) / n * 1e6;
}

static void link_client(const struct opts *o, int sock)
{
	struct event_base *eb = event_base_new();
	struct fab_link_peer to = {2, 1, 0};
	struct fab_links *ls;
	struct fab_link *k;
	size_t len;
	uint16_t *port;
	uint64_t base, size;
	char addr[96], *lbuf, *src;
	uint8_t q = 'Q';
	int rc;

	port = recv_blob(sock, &len);
	free(recv_blob(sock, &len));
	if (len != sizeof(*port) || xio(sock, &base, 8, 0) || xio(sock, &size, 8, 0) || eb == NULL)
		die("bootstrap read", EPROTO);
	snprintf(addr, sizeof(addr), "%s:%u", o->host != NULL ? o->host : "127.0.0.1", *port);
	ls = link_ctx(eb, NULL, 1);
	if ((rc = fab_link_open(ls, &to, addr, &k)))
		die("link", rc);
	lbuf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lbuf == MAP_FAILED || src == MAP_FAILED)
		die("mmap", errno);
	memset(lbuf, 1, BUF_SIZE);
	memset(src, 2, BUF_SIZE);
	printf("# pool-bench-fabric: transports=link (checked, TCP %s) window=%d event-driven\n",
	       addr, o->window);
	report(o, &(struct way){.bw = link_bw, .lat = link_lat, .eb = eb, .ls = ls, .k = k}, lbuf,
	       src);
	(void)xio(sock, &q, 1, 1);
	fab_link_close(k);
	fab_links_destroy(ls);
	event_base_free(eb);
	free(port);
}

static void client(const struct opts *o, int sock)
{
	struct fab_config cfg = make_config(o);
	struct fab_ctx *ctx;
	struct fab_ep *ep;
	struct fab_rkey *rk;
	struct peer p;
	char tls[128];
	char *lbuf, *src;
	uint8_t q = 'Q';
	int rc;

	p.addr = recv_blob(sock, &p.alen);
	p.rkey = recv_blob(sock, &p.rlen);
	if (xio(sock, &p.base, 8, 0) || xio(sock, &p.size, 8, 0))
		die("bootstrap read", EPROTO);
	if ((rc = fab_ctx_create(&cfg, &ctx)) ||
	    (rc = fab_ep_create(ctx, p.addr, p.alen, NULL, NULL, &ep)) ||
	    (rc = fab_rkey_unpack(ep, p.rkey, p.rlen, &rk)))
		die("client setup", rc);
	lbuf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lbuf == MAP_FAILED || src == MAP_FAILED)
		die("mmap", errno);
	memset(lbuf, 1, BUF_SIZE);
	memset(src, 2, BUF_SIZE);
	/* The local buffer is registered too, as a pool client would. */
	struct fab_mem *lmem;
	if ((rc = fab_mem_register(ctx, lbuf, BUF_SIZE, &lmem)))
		die("register", rc);
	fab_ep_transports(ep, tls, sizeof(tls));
	printf("# pool-bench-fabric: transports=%s ep=[%s] window=%d seg=%zu chunk=%zu%s%s\n",
	       o->tls ? o->tls : "default", tls, o->window, o->seg, o->chunk,
	       o->busy ? " busy-poll" : " event-driven",
	       o->reg ? " target=fab_mem_register" : " target=fab_mem_alloc");
	report(o,
	       &(struct way){.bw = ucx_bw,
			     .lat = ucx_lat,
			     .ctx = ctx,
			     .ep = ep,
			     .rk = rk,
			     .p = &p,
			     .busy = o->busy},
	       lbuf, src);
	(void)xio(sock, &q, 1, 1);
	fab_mem_deregister(lmem);
	fab_rkey_destroy(rk);
	fab_ep_destroy(ep);
	fab_ctx_destroy(ctx);
	free(p.addr);
	free(p.rkey);
}

static int tcp_listen_accept(const struct opts *o)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(o->port)};
	int one = 1, ls, s;

	if (inet_pton(AF_INET, o->bind ? o->bind : "0.0.0.0", &sa.sin_addr) != 1)
		die("bind address", EINVAL);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		die("listen", errno);
	s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		die("accept", errno);
	close(ls);
	return s;
}

static int tcp_connect(const struct opts *o)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	char port[16];
	int s = -1;

	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->host, port, &hints, &ai))
		die("resolve", EHOSTUNREACH);
	for (int tries = 0; tries < 50; tries++) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(s);
		s = -1;
		usleep(100000);
	}
	freeaddrinfo(ai);
	if (s < 0)
		die("connect", errno);
	return s;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pool-bench-fabric [-t tcp|shm|link|TLS] [-d DEV] [-W window] [-T seconds]\n"
		"         [-S tcp-seg-size] [-C chunk] [-z size] [-o KEY=VAL]... [-P] [-R] [-s | "
		"-c HOST] [-p PORT] [-b ADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.port = 13390, .window = 8, .seconds = 0.5};
	int c;

	while ((c = getopt(argc, argv, "t:d:W:T:S:C:o:PRsc:p:b:z:h")) != -1) {
		switch (c) {
		case 't':
			o.link = strcmp(optarg, "link") == 0;
			o.tls = strcmp(optarg, "shm") == 0 ? "posix,cma,self"
				: o.link		   ? NULL
							   : optarg;
			break;
		case 'd':
			o.dev = optarg;
			break;
		case 'W':
			o.window = atoi(optarg);
			break;
		case 'T':
			o.seconds = atof(optarg);
			break;
		case 'S':
			o.seg = strtoul(optarg, NULL, 0);
			break;
		case 'C':
			o.chunk = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			if (o.nopts == MAX_OPTS)
				usage();
			o.ucx_opts[o.nopts++] = optarg;
			break;
		case 'P':
			o.busy = 1;
			break;
		case 'R':
			o.reg = 1;
			break;
		case 's':
			o.server_only = 1;
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'b':
			o.bind = optarg;
			break;
		case 'z':
			o.only = strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (o.window < 1 || o.seconds <= 0)
		usage();
	if (o.tls != NULL && strcmp(o.tls, "tcp") == 0 && o.dev == NULL && o.host == NULL &&
	    !o.server_only)
		o.dev = "lo";
	signal(SIGPIPE, SIG_IGN);
	if (o.server_only) {
		int s = tcp_listen_accept(&o);
		(o.link ? link_server : server)(&o, s);
		close(s);
		return 0;
	}
	if (o.host != NULL) {
		int s = tcp_connect(&o);
		(o.link ? link_client : client)(&o, s);
		close(s);
		return 0;
	}
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair", errno);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		close(sv[0]);
		(o.link ? link_server : server)(&o, sv[1]);
		_exit(0);
	}
	close(sv[1]);
	(o.link ? link_client : client)(&o, sv[0]);
	close(sv[0]);
	waitpid(pid, &status, 0);
	return 0;
}

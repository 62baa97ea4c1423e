/*
 * daemon/net/zmqgate.c - bounds on the connections a bound ZMQ socket takes:
 * at most max at once, per_uid of one uid on this host, per_addr of one
 * address elsewhere (clientkey.c says who a connection counts as).
 *
 * libzmq accepts every connection that comes, in its own I/O thread, and
 * has no option to bound them. So poold watches the socket with a monitor
 * (an inproc PAIR it reads in its loop): ZMQ_EVENT_ACCEPTED gives the fd of
 * each connection, ZMQ_EVENT_DISCONNECTED its end. A connection over a
 * bound is shut down (shutdown(2), not close(2): the fd stays libzmq's,
 * which sees the end, closes it and says DISCONNECTED like for any other).
 * Other ways were weighed and left:
 * - a ZAP handler sees a peer only once it has sent its greeting, so
 *   silent connections would hold fds until the handshake times out, and
 *   ZAP tells the address without the port, so not the uid of a local peer;
 * - ZMQ_TCP_ACCEPT_FILTER is a fixed list of addresses, not counts;
 * - unbinding while full closes every connection already accepted.
 *
 * The events come in the order libzmq made them, but later than the fd
 * numbers they name: by the time an ACCEPTED is read, its connection may
 * be gone and its number taken by another socket. So an fd is acted on
 * only while its local address is the listener's (then it is one of this
 * socket's connections, which tells its own ACCEPTED after this one), and
 * a connection counted is known by its socket cookie: one counted whose fd
 * has another cookie now is gone, and a sweep (at most once a second)
 * forgets it before a client is refused for want of room.
 *
 * A TCP connection may also be held to in_max bytes received over its life,
 * which the gate reads from TCP_INFO every ZMQGATE_CHECK_MS: what a peer
 * sends a PUB socket is subscriptions, and libzmq files each in a trie that
 * grows without bound (about 32 bytes of it per byte received: a peer that
 * subscribed to 200,000 random topics made poold grow by 1.3 GB). Between
 * two checks, a socket whose ZMQ_RCVHWM is 1 files at most one message per
 * pipe each time poold sends on it (libzmq reads the pipes then, at most
 * once a millisecond).
 *
 * What libzmq accepts before the loop reads the monitor is over the bounds
 * until then: the fds poold holds are max, plus those accepted within one
 * turn of the loop, plus those shut down and not yet closed by libzmq
 * (its next turn). The monitor's pipe has no high-water mark, so libzmq's
 * I/O thread never waits on poold's loop.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (Linux 4.1) */
#include <zmq.h>

#include <event2/event.h>

#include "daemon/net/net.h"

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

#define ZMQGATE_EVENTS_PER_TURN 64  /* monitor events read before other work gets a turn */
#define ZMQGATE_CHECK_MS 100	    /* how often bytes received are read (in_max), a slice a time */
#define ZMQGATE_CHECKS_PER_TURN 512 /* connections whose bytes one timer callback reads */
#define ZMQGATE_SWEEP_MS 1000	    /* how often a refusal may look for counted ones gone */
#define ZMQGATE_EVENTS                                                                             \
	(ZMQ_EVENT_LISTENING | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_ACCEPT_FAILED |                      \
	 ZMQ_EVENT_DISCONNECTED)

struct zmqgate_conn {
	int fd;
	uint64_t cookie;
	struct clientkey key;
	bool cut; /* shut down for what it sent: its end is on the way */
};

struct zmqgate {
	struct poold *pd;
	void *sock, *mon;
	struct event *ev, *check_ev;
	struct clientkey_ctx *ck;
	struct zmqgate_limits lim;
	struct sockaddr_storage listen; /* the listener's address, once it says LISTENING */
	socklen_t listen_len;
	struct zmqgate_conn *conns; /* lim.max of them */
	unsigned n, next_check;
	uint64_t refused, swept_ms;
	struct log_limit said, said_cut;
};

static uint64_t zmqgate_cookie(int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0)
		return 0;
	return cookie;
}

static bool zmqgate_wildcard(const struct sockaddr_storage *sa)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (sa->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return memcmp(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, &any6,
		      sizeof(any6)) == 0;
}

/* Whether fd is, now, a connection accepted by the listener (its local end is the listener's). */
static bool zmqgate_ours(const struct zmqgate *g, int fd)
{
	const struct sockaddr_storage *l = &g->listen;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (g->listen_len == 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
	    sa.ss_family != l->ss_family)
		return false;
	switch (l->ss_family) {
	case AF_UNIX:
		return len == g->listen_len && memcmp(&sa, l, len) == 0;
	case AF_INET:
		return ((struct sockaddr_in *)(void *)&sa)->sin_port ==
			   ((const struct sockaddr_in *)(const void *)l)->sin_port &&
		       (zmqgate_wildcard(l) ||
			((struct sockaddr_in *)(void *)&sa)->sin_addr.s_addr ==
			    ((const struct sockaddr_in *)(const void *)l)->sin_addr.s_addr);
	case AF_INET6:
		return ((struct sockaddr_in6 *)(void *)&sa)->sin6_port ==
			   ((const struct sockaddr_in6 *)(const void *)l)->sin6_port &&
		       (zmqgate_wildcard(l) ||
			memcmp(&((struct sockaddr_in6 *)(void *)&sa)->sin6_addr,
			       &((const struct sockaddr_in6 *)(const void *)l)->sin6_addr,
			       sizeof(struct in6_addr)) == 0);
	default:
		return false;
	}
}

static void zmqgate_drop(struct zmqgate *g, unsigned i)
{
	g->conns[i] = g->conns[--g->n];
}

/* A connection has ended (or its fd number is about to be counted afresh). */
static void zmqgate_forget(struct zmqgate *g, int fd)
{
	unsigned i;

	for (i = 0; i < g->n; i++)
		if (g->conns[i].fd == fd) {
			zmqgate_drop(g, i);
			return;
		}
}

/*
 * Forget the connections counted whose fd is another socket now (their end
 * was not told); false if it was done less than ZMQGATE_SWEEP_MS ago: a
 * flood of refusals must not cost a pass over every connection each.
 */
static bool zmqgate_sweep(struct zmqgate *g)
{
	uint64_t now = units_now_ms();
	unsigned i = 0;

	if (now - g->swept_ms < ZMQGATE_SWEEP_MS)
		return false;
	g->swept_ms = now;
	while (i < g->n)
		if (zmqgate_cookie(g->conns[i].fd) != g->conns[i].cookie)
			zmqgate_drop(g, i);
		else
			i++;
	return true;
}

/* Connections counted for key. */
static unsigned zmqgate_count(const struct zmqgate *g, const struct clientkey *key)
{
	unsigned i, same = 0;

	for (i = 0; i < g->n; i++)
		if (clientkey_eq(&g->conns[i].key, key))
			same++;
	return same;
}

/* libzmq accepted fd: count it, or shut it down if it is over a bound. */
static void zmqgate_accepted(struct zmqgate *g, int fd)
{
	struct clientkey key;
	unsigned limit, same;
	const char *option;
	char who[64];

	if (!zmqgate_ours(g, fd))
		return; /* gone already, and its number is another socket's */
	zmqgate_forget(g, fd);
	if (clientkey_of(g->ck, fd, &key) < 0)
		return; /* its peer is gone: libzmq says DISCONNECTED next */
	limit = key.kind == CLIENTKEY_UID ? g->lim.per_uid : g->lim.per_addr;
	option = key.kind == CLIENTKEY_UID ? g->lim.per_uid_option : g->lim.per_addr_option;
	same = zmqgate_count(g, &key);
	if ((same >= limit || g->n >= g->lim.max) && zmqgate_sweep(g))
		same = zmqgate_count(g, &key);
	if (same < limit && g->n < g->lim.max) {
		g->conns[g->n++] = (struct zmqgate_conn){fd, zmqgate_cookie(fd), key, false};
		return;
	}
	g->refused++;
	if (same >= limit)
		log_warnx_limited(&g->said, 10000, "%s: refusing a connection of %s: %u open (%s)",
				  g->lim.what, clientkey_str(&key, who, sizeof(who)), same, option);
	else
		log_warnx_limited(&g->said, 10000, "%s: refusing a connection of %s: %u open (%s)",
				  g->lim.what, clientkey_str(&key, who, sizeof(who)), g->n,
				  g->lim.max_option);
	shutdown(fd, SHUT_RDWR);
}

/* Bytes a connection received over its life; false when TCP_INFO does not tell them. */
static bool zmqgate_received(int fd, uint64_t *ret)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return false;
	*ret = ti.tcpi_bytes_received;
	return true;
}

/* Every ZMQGATE_CHECK_MS: shut down the connections that sent more than in_max, a slice a time. */
static void zmqgate_check(evutil_socket_t fd, short what, void *arg)
{
	struct zmqgate *g = arg;
	struct zmqgate_conn *c;
	unsigned i;
	uint64_t got;
	char who[64];

	(void)fd;
	(void)what;
	for (i = 0; i < g->n && i < ZMQGATE_CHECKS_PER_TURN; i++) {
		if (g->next_check >= g->n)
			g->next_check = 0;
		c = &g->conns[g->next_check++];
		if (c->cut || !zmqgate_received(c->fd, &got) || got <= g->lim.in_max ||
		    zmqgate_cookie(c->fd) != c->cookie)
			continue;
		c->cut = true;
		g->refused++;
		log_warnx_limited(&g->said_cut, 10000,
				  "%s: shutting down a connection of %s: it sent %llu bytes, "
				  "more than %llu",
				  g->lim.what, clientkey_str(&c->key, who, sizeof(who)),
				  (unsigned long long)got, (unsigned long long)g->lim.in_max);
		shutdown(c->fd, SHUT_RDWR);
	}
}

/* The listener is up on fd: its address tells its connections from other sockets. */
static void zmqgate_listening(struct zmqgate *g, int fd)
{
	socklen_t len = sizeof(g->listen);

	if (getsockname(fd, (struct sockaddr *)&g->listen, &len) < 0)
		log_warn("%s: the listener's address", g->lim.what);
	else
		g->listen_len = len;
}

/* Read one monitor event (two frames: event and value, then the endpoint); false if none. */
static bool zmqgate_event(struct zmqgate *g)
{
	zmq_msg_t m;
	uint16_t what = 0;
	uint32_t value = 0;
	bool got = false;
	int more;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, g->mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		return false;
	}
	if (zmq_msg_size(&m) >= 6) {
		memcpy(&what, zmq_msg_data(&m), sizeof(what));
		memcpy(&value, (uint8_t *)zmq_msg_data(&m) + 2, sizeof(value));
		got = true;
	}
	more = zmq_msg_more(&m);
	while (more) { /* the endpoint: not needed */
		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, g->mon, ZMQ_DONTWAIT) < 0)
			break;
		more = zmq_msg_more(&m);
	}
	zmq_msg_close(&m);
	if (!got)
		return true;
	switch (what) {
	case ZMQ_EVENT_LISTENING:
		zmqgate_listening(g, (int)value);
		break;
	case ZMQ_EVENT_ACCEPTED:
		zmqgate_accepted(g, (int)value);
		break;
	case ZMQ_EVENT_DISCONNECTED:
		zmqgate_forget(g, (int)value);
		break;
	case ZMQ_EVENT_ACCEPT_FAILED:
		log_warnx_limited(&g->said, 10000, "%s: accept: %s", g->lim.what,
				  strerror((int)value));
		break;
	default:
		break;
	}
	return true;
}

/*
 * The monitor's ZMQ_FD is readable. That fd only signals a change, so
 * after a slice of events, if more wait, this runs again at once.
 */
static void zmqgate_cb(evutil_socket_t fd, short what, void *arg)
{
	struct zmqgate *g = arg;
	unsigned n;
	int events = 0;
	size_t len;

	(void)fd;
	(void)what;
	for (n = 0;; n++) {
		len = sizeof(events);
		if (zmq_getsockopt(g->mon, ZMQ_EVENTS, &events, &len) < 0 || !(events & ZMQ_POLLIN))
			return;
		if (n == ZMQGATE_EVENTS_PER_TURN)
			break;
		zmqgate_event(g);
	}
	event_active(g->ev, EV_READ, 0);
}

/*
 * Watch sock (of ZMQ context ctx) and hold its connections to lim; before
 * sock is bound, so that the gate sees every connection. 0, or -errno
 * said in the log.
 */
int zmqgate_open(struct poold *pd, void *ctx, void *sock, const struct zmqgate_limits *lim,
		 struct zmqgate **ret)
{
	struct zmqgate *g;
	char endpoint[64];
	size_t len;
	int fd, zero = 0, rc;

	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return -ENOMEM;
	g->pd = pd;
	g->sock = sock;
	g->lim = *lim;
	g->conns = calloc(lim->max, sizeof(*g->conns));
	if (g->conns == NULL) {
		free(g);
		return -ENOMEM;
	}
	rc = clientkey_open(&g->ck);
	if (rc < 0)
		goto out_free;
	snprintf(endpoint, sizeof(endpoint), "inproc://poold-zmqgate-%p", (void *)g);
	rc = -EINVAL;
	if (zmq_socket_monitor(sock, endpoint, ZMQGATE_EVENTS) < 0) {
		log_warnx("%s: monitor: %s", lim->what, zmq_strerror(zmq_errno()));
		goto out_ck;
	}
	/* No high-water mark: libzmq's thread must never wait for this loop to read. */
	len = sizeof(fd);
	if ((g->mon = zmq_socket(ctx, ZMQ_PAIR)) == NULL ||
	    zmq_setsockopt(g->mon, ZMQ_RCVHWM, &zero, sizeof(zero)) < 0 ||
	    zmq_setsockopt(g->mon, ZMQ_SNDHWM, &zero, sizeof(zero)) < 0 ||
	    zmq_setsockopt(g->mon, ZMQ_LINGER, &zero, sizeof(zero)) < 0 ||
	    zmq_connect(g->mon, endpoint) < 0 || zmq_getsockopt(g->mon, ZMQ_FD, &fd, &len) < 0) {
		log_warnx("%s: monitor: %s", lim->what, zmq_strerror(zmq_errno()));
		goto out_monitor;
	}
	rc = -ENOMEM;
	g->ev = event_new(pd->base, fd, EV_READ | EV_PERSIST, zmqgate_cb, g);
	if (g->ev == NULL || event_add(g->ev, NULL) < 0)
		goto out_monitor;
	/* The fd tells only of changes after a first look: that look is the first callback. */
	event_active(g->ev, EV_READ, 0);
	if (lim->in_max > 0) {
		struct timeval tv = units_timeval(ZMQGATE_CHECK_MS);

		g->check_ev = event_new(pd->base, -1, EV_PERSIST, zmqgate_check, g);
		if (g->check_ev == NULL || event_add(g->check_ev, &tv) < 0)
			goto out_monitor;
	}
	*ret = g;
	return 0;
out_monitor:
	if (g->check_ev != NULL)
		event_free(g->check_ev);
	if (g->ev != NULL)
		event_free(g->ev);
	zmq_socket_monitor(sock, NULL, 0);
	if (g->mon != NULL)
		zmq_close(g->mon);
out_ck:
	clientkey_close(g->ck);
out_free:
	free(g->conns);
	free(g);
	return rc;
}

/* Stop watching; before the socket is closed (NULL: none). */
void zmqgate_close(struct zmqgate *g)
{
	if (g == NULL)
		return;
	/* The monitor first: with its reader gone, libzmq's thread would wait on its sends. */
	zmq_socket_monitor(g->sock, NULL, 0);
	if (g->check_ev != NULL)
		event_free(g->check_ev);
	event_free(g->ev);
	zmq_close(g->mon);
	clientkey_close(g->ck);
	free(g->conns);
	free(g);
}

/* Connections counted now, and refused since the gate opened. */
void zmqgate_stats(const struct zmqgate *g, uint64_t *ret_open, uint64_t *ret_refused)
{
	*ret_open = g->n;
	*ret_refused = g->refused;
}

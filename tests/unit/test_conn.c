/*
 * tests/unit/test_conn.c - a connection's socket (daemon/net/conn.c) is closed
 * when the connection is released, not a turn of the loop later when
 * libevent finalizes its bufferevent: the other end sees the end at once
 * (a reset after conn_abort()), and the fd number, free again, is not
 * closed under its next owner when the loop runs the finalizer.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/net/net.h"
#include "tests/unit/unit.h"

static unsigned closed_calls;

static void no_frame(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload, void *arg)
{
	(void)c, (void)hdr, (void)payload, (void)arg;
}

static void closed(struct conn *c, void *arg)
{
	(void)c, (void)arg;
	closed_calls++;
}

static const struct conn_ops ops = {.frame = no_frame, .closed = closed};

static struct conn *conn_on(struct event_base *base, int fd)
{
	struct conn *c = NULL;

	CU_ASSERT_EQUAL_FATAL(conn_new(base, fd, NULL, 1u << 16, &ops, NULL, "test", &c), 0);
	return c;
}

/* A connected TCP pair on loopback: *a (accepted) and *b; the listener is returned. */
static int tcp_pair(int *a, int *b)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CU_ASSERT_FATAL(l >= 0);
	CU_ASSERT_EQUAL_FATAL(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	CU_ASSERT_EQUAL_FATAL(listen(l, 1), 0);
	CU_ASSERT_EQUAL_FATAL(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	*b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_EQUAL_FATAL(connect(*b, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CU_ASSERT_FATAL(*a >= 0);
	return l;
}

/* Freed, a connection's socket is closed before the loop runs: the other end reads its end. */
static void test_closed_at_release(void)
{
	struct event_base *base = event_base_new();
	char byte;
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	conn_free(conn_on(base, sv[0]));
	CU_ASSERT_EQUAL(recv(sv[1], &byte, 1, MSG_DONTWAIT), 0);
	CU_ASSERT(fcntl(sv[0], F_GETFD) < 0 && errno == EBADF);
	event_base_loop(base, EVLOOP_NONBLOCK);
	close(sv[1]);
	event_base_free(base);
}

/*
 * Aborted, a TCP link is reset at once; its fd number, taken by the next
 * socket meanwhile, stays that socket's when the loop finalizes the old
 * bufferevent.
 */
static void test_reset_at_abort(void)
{
	struct event_base *base = event_base_new();
	int a, b, l, again[2];
	char byte;

	l = tcp_pair(&a, &b);
	closed_calls = 0;
	conn_abort(conn_on(base, a), true);
	CU_ASSERT_EQUAL(closed_calls, 1);
	CU_ASSERT_EQUAL(recv(b, &byte, 1, MSG_DONTWAIT), -1);
	CU_ASSERT_EQUAL(errno, ECONNRESET);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, again), 0);
	CU_ASSERT_EQUAL(again[0], a); /* (the lowest free number: the one just closed) */
	event_base_loop(base, EVLOOP_NONBLOCK);
	CU_ASSERT_EQUAL(fcntl(again[0], F_GETFD), FD_CLOEXEC);
	CU_ASSERT_EQUAL(send(again[1], "x", 1, 0), 1);
	CU_ASSERT_EQUAL(recv(again[0], &byte, 1, MSG_DONTWAIT), 1);
	close(again[0]);
	close(again[1]);
	close(b);
	close(l);
	event_base_free(base);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a released connection's socket is closed at once", test_closed_at_release},
	    {"an aborted link is reset at once, its fd number left to the next",
	     test_reset_at_abort},
	    {NULL, NULL},
	};

	return unit_run("conn", tests);
}

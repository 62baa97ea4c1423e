/*
 * tests/tools/pool-elect.c - one candidate of daemon/ha/ha-elect.c's election,
 * on a real etcd: prints each change of its standing, one line each after
 * the wall clock's milliseconds (so that lines of several candidates can
 * be ordered), until killed. tests/integration/elect.sh runs several and
 * kills them.
 *
 *	pool-elect ENDPOINTS KEY NAME TTL_S
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "daemon/ha/ha-elect.h"
#include "daemon/etcd/etcd.h"

static struct elect *el;
static bool said_acting;

static void stamp(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("%lld ", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static void changed(void *arg, bool leading, const char *leader, int64_t epoch, const char *why)
{
	(void)arg;
	stamp();
	if (leading)
		printf("leader %s epoch %" PRId64 "\n", leader, epoch);
	else if (leader != NULL)
		printf("follower of %s epoch %" PRId64 "\n", leader, epoch);
	else
		printf("none: %s\n", why);
	fflush(stdout);
}

/* Every 50 ms: whether it may act as leader now, by the clock (elect_leading()). */
static void check(evutil_socket_t fd, short what, void *arg)
{
	bool acting = elect_leading(el, NULL);

	(void)fd;
	(void)what;
	(void)arg;
	if (acting != said_acting) {
		stamp();
		printf("acting %s\n", acting ? "yes" : "no");
		fflush(stdout);
		said_acting = acting;
	}
}

static void stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
	struct timeval tick = {0, 50000};
	struct event_base *base;
	struct event *timer, *term;
	struct etcd *e;
	char err[256];

	if (argc != 5) {
		fprintf(stderr, "usage: pool-elect ENDPOINTS KEY NAME TTL_S\n");
		return 2;
	}
	base = event_base_new();
	e = etcd_new(base, argv[1], 1000, err, sizeof(err));
	if (e == NULL) {
		fprintf(stderr, "pool-elect: %s\n", err);
		return 1;
	}
	el = elect_new(base, e, argv[2], argv[3], (unsigned)atoi(argv[4]), changed, NULL);
	timer = event_new(base, -1, EV_PERSIST, check, NULL);
	term = evsignal_new(base, SIGTERM, stop, base);
	if (el == NULL || timer == NULL || term == NULL)
		return 1;
	evtimer_add(timer, &tick);
	evsignal_add(term, NULL);
	event_base_dispatch(base);
	event_free(timer);
	event_free(term);
	elect_free(el);
	etcd_free(e);
	event_base_free(base);
	return 0;
}

/*
 * daemon/util/looplag.c - how late poold's event loop runs. A timer due every
 * LOOPLAG_TICK_MS measures how late it fires: the lateness is time the
 * loop spent in one turn (a callback that did not yield) or that the host
 * did not run poold. Every turn is meant to be short (work is done a
 * bounded slice at a time); this is where an operator sees whether it is
 * (pool_loop_lag_* on the metrics endpoint). The watchdog of sdnotify.c is
 * the same idea with systemd as the judge.
 */
#include "config.h"

#include <stdlib.h>

#include <event2/event.h>

#include "daemon/util/util.h"

#define LOOPLAG_TICK_MS 50
#define LOOPLAG_WINDOW_S 10 /* the longest lateness is kept per window of this long */
#define LOOPLAG_WINDOWS 6   /* ... over the last minute */

struct looplag {
	struct event *tick;
	uint64_t due_us;
	uint64_t total_us;
	uint64_t stalls[LOOPLAG_STALL_LEVELS];
	struct {
		uint64_t n;	 /* which window: its start / LOOPLAG_WINDOW_S */
		uint64_t max_us; /* the longest lateness in it */
	} win[LOOPLAG_WINDOWS];
};

const uint64_t looplag_stall_us[LOOPLAG_STALL_LEVELS] = {10000, 100000, 1000000};

static void looplag_tick(evutil_socket_t fd, short what, void *arg)
{
	struct looplag *l = arg;
	uint64_t now = units_now_us(), late = now > l->due_us ? now - l->due_us : 0;
	uint64_t w = now / 1000000 / LOOPLAG_WINDOW_S;
	size_t i;

	(void)fd;
	(void)what;
	l->total_us += late;
	for (i = 0; i < LOOPLAG_STALL_LEVELS; i++)
		l->stalls[i] += late > looplag_stall_us[i];
	if (l->win[w % LOOPLAG_WINDOWS].n != w)
		l->win[w % LOOPLAG_WINDOWS].n = w, l->win[w % LOOPLAG_WINDOWS].max_us = 0;
	if (late > l->win[w % LOOPLAG_WINDOWS].max_us)
		l->win[w % LOOPLAG_WINDOWS].max_us = late;
	l->due_us = now + LOOPLAG_TICK_MS * 1000;
}

int looplag_open(struct poold *pd)
{
	struct timeval every = {0, LOOPLAG_TICK_MS * 1000};
	struct looplag *l = calloc(1, sizeof(*l));

	if (l == NULL || (l->tick = event_new(pd->base, -1, EV_PERSIST, looplag_tick, l)) == NULL ||
	    event_add(l->tick, &every) < 0) {
		log_warnx("cannot start the loop's lag timer");
		if (l != NULL && l->tick != NULL)
			event_free(l->tick);
		free(l);
		return -1;
	}
	l->due_us = units_now_us() + LOOPLAG_TICK_MS * 1000;
	pd->looplag = l;
	return 0;
}

void looplag_stats(const struct poold *pd, struct looplag_stats *st)
{
	const struct looplag *l = pd->looplag;
	uint64_t w = units_now_us() / 1000000 / LOOPLAG_WINDOW_S;
	size_t i;

	*st = (struct looplag_stats){0};
	if (l == NULL)
		return;
	st->total_us = l->total_us;
	for (i = 0; i < LOOPLAG_STALL_LEVELS; i++)
		st->stalls[i] = l->stalls[i];
	/* The windows of the last minute (a turn still running is counted once it ends). */
	for (i = 0; i < LOOPLAG_WINDOWS; i++)
		if (w - l->win[i].n < LOOPLAG_WINDOWS && l->win[i].max_us > st->max_us)
			st->max_us = l->win[i].max_us;
}

void looplag_close(struct poold *pd)
{
	struct looplag *l = pd->looplag;

	if (l == NULL)
		return;
	event_free(l->tick);
	free(l);
	pd->looplag = NULL;
}

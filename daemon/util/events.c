/*
 * daemon/util/events.c - the recent events of this poold: membership changes,
 * lost and rebuilt data, reclaims, failures. A ring of the last
 * EVENTS_MAX; events-serve.c shows them to poolctl events.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "daemon/util/util.h"

#define EVENTS_MAX 256

struct events {
	struct event_rec ring[EVENTS_MAX];
	uint64_t next_seq;
};

/* Record an event of kind (member, region, kv, reclaim, journal, coordinator) and log it. */
void events_add(struct poold *pd, const char *kind, const char *fmt, ...)
{
	struct event_rec *e;
	struct timeval tv;
	va_list ap;

	if (pd->events == NULL && (pd->events = calloc(1, sizeof(*pd->events))) == NULL)
		return;
	e = &pd->events->ring[pd->events->next_seq % EVENTS_MAX];
	gettimeofday(&tv, NULL);
	e->seq = ++pd->events->next_seq;
	e->time_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

void events_free(struct poold *pd)
{
	free(pd->events);
	pd->events = NULL;
}

/* How many events the ring holds now. */
size_t events_count(const struct poold *pd)
{
	return pd->events ? (size_t)MIN(pd->events->next_seq, EVENTS_MAX) : 0;
}

/* The events the ring holds, oldest first. */
void events_each(const struct poold *pd, void (*cb)(void *arg, const struct event_rec *e),
		 void *arg)
{
	size_t n = events_count(pd), i;
	uint64_t first = n ? pd->events->next_seq - n : 0;

	for (i = 0; i < n; i++)
		cb(arg, &pd->events->ring[(first + i) % EVENTS_MAX]);
}

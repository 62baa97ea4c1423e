/*
 * daemon/events.c - the recent events of this poold: membership changes,
 * lost and rebuilt data, reclaims, failures. A ring of the last
 * EVENTS_MAX, each also logged; poolctl events shows them.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "daemon/poold.h"

#define EVENTS_MAX 256

struct event_rec {
	uint64_t seq;
	uint64_t time_ms; /* wall clock, ms since the epoch */
	char kind[16];
	char text[200];
};

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

/*
 * Whether the caller may see an event: admins all of them, others the
 * cluster's health (members, the coordinator), not the events that name
 * regions, namespaces or their owners.
 */
static bool events_visible(const struct req *r, const struct event_rec *x)
{
	return r->admin || strcmp(x->kind, "member") == 0 || strcmp(x->kind, "coordinator") == 0;
}

/* The events the caller may see, oldest first (the last max of them when max is set). */
static int events_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__EventsRequest *er = (const Pool__EventsRequest *)msg;
	Pool__EventsReply reply = POOL__EVENTS_REPLY__INIT;
	struct events *ev = r->pd->events;
	uint64_t n = ev ? MIN(ev->next_seq, EVENTS_MAX) : 0, first, i, k = 0;
	Pool__Event *e = NULL, **ep = NULL;
	int rc;

	if (n > 0) {
		e = calloc(n, sizeof(*e));
		ep = calloc(n, sizeof(*ep));
		if (e == NULL || ep == NULL) {
			free(e);
			free(ep);
			return req_errorf(r, -ENOMEM, "out of memory");
		}
	}
	first = n ? ev->next_seq - n : 0;
	for (i = 0; i < n; i++) {
		const struct event_rec *x = &ev->ring[(first + i) % EVENTS_MAX];

		if (!events_visible(r, x))
			continue;
		pool__event__init(&e[k]);
		e[k].seq = x->seq;
		e[k].time_ms = x->time_ms;
		e[k].kind = (char *)x->kind;
		e[k].text = (char *)x->text;
		ep[k] = &e[k];
		k++;
	}
	reply.events = ep;
	reply.n_events = k;
	if (er->has_max && er->max > 0 && er->max < k) { /* the last max of them */
		reply.events = ep + (k - er->max);
		reply.n_events = er->max;
	}
	rc = req_reply(r, WIRE_EVENTS_REPLY, &reply.base);
	free(e);
	free(ep);
	return rc;
}

const struct ctl_handler events_handlers[] = {
    {WIRE_EVENTS, CTL_ANY, AT_HERE, events_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * daemon/admin/events-serve.c - poolctl events: the recent events (events.c) a
 * caller may see, as an EventsReply.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/admin/admin.h"
#include "daemon/control/control.h"
#include "daemon/util/util.h"

/*
 * Whether the caller may see an event: admins all of them, others the
 * cluster's health (members, the coordinator), not the events that name
 * regions, namespaces or their owners.
 */
static bool events_visible(const struct req *r, const struct event_rec *x)
{
	return r->admin || strcmp(x->kind, "member") == 0 || strcmp(x->kind, "coordinator") == 0;
}

struct events_listing {
	const struct req *r;
	Pool__Event *e, **ep;
	size_t n;
};

static void events_list_one(void *arg, const struct event_rec *x)
{
	struct events_listing *l = arg;
	Pool__Event *e = &l->e[l->n];

	if (!events_visible(l->r, x))
		return;
	pool__event__init(e);
	e->seq = x->seq;
	e->time_ms = x->time_ms;
	e->kind = (char *)x->kind;
	e->text = (char *)x->text;
	l->ep[l->n++] = e;
}

/* The events the caller may see, oldest first (the last max of them when max is set). */
static int events_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__EventsRequest *er = (const Pool__EventsRequest *)msg;
	Pool__EventsReply reply = POOL__EVENTS_REPLY__INIT;
	size_t n = events_count(r->pd);
	struct events_listing l = {.r = r};
	int rc;

	if (n > 0) {
		l.e = calloc(n, sizeof(*l.e));
		l.ep = calloc(n, sizeof(*l.ep));
		if (l.e == NULL || l.ep == NULL) {
			free(l.e);
			free(l.ep);
			return req_errorf(r, -ENOMEM, "out of memory");
		}
	}
	events_each(r->pd, events_list_one, &l);
	reply.events = l.ep;
	reply.n_events = l.n;
	if (er->has_max && er->max > 0 && er->max < l.n) { /* the last max of them */
		reply.events = l.ep + (l.n - er->max);
		reply.n_events = er->max;
	}
	rc = req_reply(r, WIRE_EVENTS_REPLY, &reply.base);
	free(l.e);
	free(l.ep);
	return rc;
}

const struct ctl_handler events_handlers[] = {
    {WIRE_EVENTS, CTL_ANY, AT_HERE, events_request, NULL},
    {0, 0, 0, NULL, NULL},
};

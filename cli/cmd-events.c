/* cli/cmd-events.c - poolctl events [N]: the recent events of the local poold. */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "cli/poolctl.h"

enum { E_SEQ, E_TIME, E_WHEN, E_KIND, E_TEXT, E_FIELDS };

static const struct field event_fields[E_FIELDS] = {
    [E_SEQ] = {"seq", NULL, FIELD_U64, IN_BOTH},
    [E_TIME] = {"time_ms", NULL, FIELD_U64, IN_BOTH},
    [E_WHEN] = {NULL, "TIME", FIELD_STR, IN_BOTH},
    [E_KIND] = {"kind", "KIND", FIELD_STR, IN_BOTH},
    [E_TEXT] = {"text", "EVENT", FIELD_STR, IN_BOTH},
};

static int cmd_events_exec(struct cmd_ctx *ctx)
{
	const struct admin_events *rep;
	struct json *j = NULL;
	unsigned max = 0;
	struct listing *l;
	size_t i;
	int rc;

	if (ctx->argc > 0) {
		char *end;
		unsigned long n = strtoul(ctx->argv[0], &end, 10);

		if (ctx->argv[0][0] == '\0' || *end != '\0' || n == 0 || n > 100000) {
			fprintf(stderr, "poolctl: '%s' is not a count of events\n", ctx->argv[0]);
			return EXIT_USAGE;
		}
		max = (unsigned)n;
	}
	rc = admin_events(ctx->admin, max, &rep);
	if (rc != EXIT_OK)
		return rc;
	l = listing_open(ctx, &j, "events", event_fields, E_FIELDS, false);
	for (i = 0; i < rep->n; i++) {
		time_t sec = (time_t)(rep->events[i].time_ms / 1000);
		char when[32];
		struct tm tm;
		struct value v[E_FIELDS] = {
		    [E_SEQ].u = rep->events[i].seq,
		    [E_TIME].u = rep->events[i].time_ms,
		    [E_WHEN].s = when,
		    [E_KIND].s = rep->events[i].kind,
		    [E_TEXT].s = rep->events[i].text,
		};

		strftime(when, sizeof(when), "%F %T", localtime_r(&sec, &tm));
		listing_row(l, v);
	}
	return listing_close(l, j, rep);
}

const struct cmd_entry cmd_events_entry = {
    "events",
    "[N]",
    0,
    1,
    DAEMON_NEEDED,
    cmd_events_exec,
    "recent membership, data, reclaim and journal events of this poold",
};

/* cli/cmd-events.c - poolctl events [N]: the recent events of the local poold. */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "cli/poolctl.h"

static int cmd_events_exec(struct cmd_ctx *ctx)
{
	static const char *const headers[] = {"TIME", "KIND", "EVENT"};
	Pool__EventsRequest req = POOL__EVENTS_REQUEST__INIT;
	Pool__EventsReply *rep;
	size_t i;
	int rc;

	if (ctx->argc > 0) {
		char *end;
		unsigned long n = strtoul(ctx->argv[0], &end, 10);

		if (ctx->argv[0][0] == '\0' || *end != '\0' || n == 0 || n > 100000) {
			fprintf(stderr, "poolctl: '%s' is not a count of events\n", ctx->argv[0]);
			return EXIT_USAGE;
		}
		req.has_max = 1;
		req.max = (uint32_t)n;
	}
	rc = cmd_call(ctx, WIRE_EVENTS, &req.base, WIRE_EVENTS_REPLY, (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_array(j, "events");
		for (i = 0; i < rep->n_events; i++) {
			json_object(j, NULL);
			json_u64(j, "seq", rep->events[i]->seq);
			json_u64(j, "time_ms", rep->events[i]->time_ms);
			json_str(j, "kind", rep->events[i]->kind);
			json_str(j, "text", rep->events[i]->text);
			json_end(j);
		}
		json_finish(j);
	} else {
		struct table *t = table_new(3, headers);

		for (i = 0; i < rep->n_events; i++) {
			time_t sec = (time_t)(rep->events[i]->time_ms / 1000);
			char when[32];
			struct tm tm;

			strftime(when, sizeof(when), "%F %T", localtime_r(&sec, &tm));
			table_row(t, when, rep->events[i]->kind, rep->events[i]->text);
		}
		table_print(t, stdout);
		table_free(t);
	}
	wire_msg_free(&rep->base);
	return EXIT_OK;
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

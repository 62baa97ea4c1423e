/*
 * cli/cmd-top.c - poolctl top [INTERVAL [COUNT]]: the pool at a glance,
 * again every INTERVAL seconds: the members, the lend pools, the KV
 * namespaces and the vector indexes, as their own commands show them.
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/poolctl.h"

static int cmd_top_exec(struct cmd_ctx *ctx)
{
	static const struct cmd_entry *const parts[] = {
	    &cmd_nodes_entry,
	    &cmd_ledger_entry,
	    &cmd_kv_ls_entry,
	    &cmd_vec_ls_entry,
	};
	double interval = 2;
	unsigned long count = 0, i;
	char *end;
	size_t k;
	int rc;

	if (ctx->argc > 0) {
		interval = strtod(ctx->argv[0], &end);
		if (*end != '\0' || !(interval >= 0.1 && interval <= 3600)) {
			fprintf(stderr, "poolctl: '%s': the interval is 0.1 to 3600 seconds\n",
				ctx->argv[0]);
			return EXIT_USAGE;
		}
	}
	if (ctx->argc > 1) {
		count = strtoul(ctx->argv[1], &end, 10);
		if (ctx->argv[1][0] == '\0' || *end != '\0' || count == 0) {
			fprintf(stderr, "poolctl: '%s' is not a count\n", ctx->argv[1]);
			return EXIT_USAGE;
		}
	}
	if (ctx->json) {
		fprintf(stderr, "poolctl: top has no --json: ask nodes, ledger, kv ls, vec ls\n");
		return EXIT_USAGE;
	}
	ctx->argc = 0; /* the parts take no arguments of their own */
	for (i = 0; count == 0 || i < count; i++) {
		struct timespec ts = {(time_t)interval,
				      (long)((interval - (double)(time_t)interval) * 1e9)};
		time_t now = time(NULL);
		char when[32];

		if (i > 0)
			nanosleep(&ts, NULL);
		if (isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		strftime(when, sizeof(when), "%F %T", localtime(&now));
		printf("poolctl top: %s, every %gs\n", when, interval);
		for (k = 0; k < ARRAY_SIZE(parts); k++) {
			printf("\n");
			rc = parts[k]->exec(ctx);
			if (rc == EXIT_UNREACHABLE)
				return rc;
		}
		fflush(stdout);
	}
	return EXIT_OK;
}

const struct cmd_entry cmd_top_entry = {
    "top",
    "[INTERVAL [COUNT]]",
    0,
    2,
    DAEMON_NEEDED,
    cmd_top_exec,
    "nodes, lend pools, KV namespaces and vector indexes, again every INTERVAL seconds",
};

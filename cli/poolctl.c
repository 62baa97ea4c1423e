/*
 * cli/poolctl.c - poolctl: option parsing, the command table, and the
 * connection to poold. Each family of commands (snap, kv, region...)
 * lives in a cmd-*.c file of its own; what they ask poold goes through
 * admin.c, and what a library client could do itself through libpool.
 */
#include "config.h"

#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"
#include "libpool/libpool.h"

#define POOLCTL_TIMEOUT_MS 30000

static const struct cmd_entry *const cmd_table[] = {
    &cmd_status_entry,	      &cmd_config_show_entry, &cmd_config_check_entry,
    &cmd_reload_entry,	      &cmd_version_entry,     &cmd_nodes_entry,
    &cmd_fabric_probe_entry,  &cmd_fabric_entry,      &cmd_regions_entry,
    &cmd_region_create_entry, &cmd_region_info_entry, &cmd_region_destroy_entry,
    &cmd_lend_entry,	      &cmd_reclaim_entry,     &cmd_drain_entry,
    &cmd_ledger_entry,	      &cmd_kv_ls_entry,	      &cmd_kv_stats_entry,
    &cmd_kv_create_entry,     &cmd_kv_drop_entry,     &cmd_kv_flush_entry,
    &cmd_vec_ls_entry,	      &cmd_vec_info_entry,    &cmd_vec_create_entry,
    &cmd_vec_drop_entry,      &cmd_events_entry,      &cmd_top_entry,
    &cmd_snap_put_entry,      &cmd_snap_ls_entry,     &cmd_snap_info_entry,
    &cmd_snap_rm_entry,	      &cmd_snap_get_entry,    &cmd_snap_copies_entry,
    &cmd_snap_serve_entry,    &cmd_snap_save_entry,   &cmd_snap_place_entry,
    &cmd_snap_gc_entry,	      &cmd_completion_entry,
};

const struct cmd_entry *const *cmd_entries(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(cmd_table);
	return cmd_table;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: poolctl [-s socket] [--json] command [args]\n\ncommands:\n");
	for (i = 0; i < ARRAY_SIZE(cmd_table); i++) {
		char words[256];
		int n =
		    snprintf(words, sizeof(words), "%s %s", cmd_table[i]->name, cmd_table[i]->args);

		/* A long synopsis gets a line of its own, the help under it. */
		if (n > 28)
			fprintf(f, "  %s\n  %-28s %s\n", words, "", cmd_table[i]->help);
		else
			fprintf(f, "  %-28s %s\n", words, cmd_table[i]->help);
	}
}

/* Count how many of argv's leading words match the entry's name words; 0 if not all. */
static int cmd_match(const struct cmd_entry *e, int argc, char **argv)
{
	char words[64], *save, *w;
	int n = 0;

	snprintf(words, sizeof(words), "%s", e->name);
	for (w = strtok_r(words, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		if (n >= argc || strcmp(argv[n], w) != 0)
			return 0;
		n++;
	}
	return n;
}

/* Open a libpool connection to poold, for the commands libpool serves. */
int cmd_pool_open(struct cmd_ctx *ctx, struct pool **ret)
{
	if (pool_open(ctx->socket, 0, ret) < 0) {
		fprintf(stderr, "poolctl: cannot reach poold: %s\n", pool_errormsg());
		return EXIT_UNREACHABLE;
	}
	return EXIT_OK;
}

/* A libpool call failed with rc: say what (libpool's message) and yield EXIT_ERROR. */
int cmd_pool_fail(const char *what, int rc)
{
	const char *msg = pool_errormsg();

	fprintf(stderr, "poolctl: %s: %s\n", what, msg[0] != '\0' ? msg : pool_strerror(rc));
	return EXIT_ERROR;
}

/* Connect to poold, waiting up to timeout_ms for each reply (0: the default). */
/* A node id argument (as poolctl nodes shows them): 0, or -EINVAL with the error said. */
int cmd_node_arg(const char *arg, uint32_t *ret)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || n > UINT32_MAX) {
		fprintf(stderr, "poolctl: '%s' is not a node id (see poolctl nodes)\n", arg);
		return -EINVAL;
	}
	*ret = (uint32_t)n;
	return 0;
}

int cmd_connect(struct cmd_ctx *ctx, int timeout_ms)
{
	return admin_connect(ctx->socket, timeout_ms > 0 ? timeout_ms : POOLCTL_TIMEOUT_MS, false,
			     &ctx->admin);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"socket", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct cmd_ctx ctx = {0};
	const struct cmd_entry *e = NULL;
	int ch, n = 0, rc;
	size_t i;

	ctx.socket = getenv("POOL_SOCKET");
	if (ctx.socket == NULL || *ctx.socket == '\0')
		ctx.socket = "/run/poold/poold.sock";
	while ((ch = getopt_long(argc, argv, "+hjs:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			ctx.json = true;
			break;
		case 's':
			ctx.socket = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (i = 0; i < ARRAY_SIZE(cmd_table) && e == NULL; i++) {
		n = cmd_match(cmd_table[i], argc, argv);
		if (n > 0)
			e = cmd_table[i];
	}
	if (e == NULL) {
		fprintf(stderr, "poolctl: unknown command '%s'\n", argv[0]);
		usage(stderr);
		return EXIT_USAGE;
	}
	ctx.argc = argc - n;
	ctx.argv = argv + n;
	if (ctx.argc < e->min_args || ctx.argc > e->max_args) {
		fprintf(stderr, "usage: poolctl %s %s\n", e->name, e->args);
		return EXIT_USAGE;
	}
	if (e->daemon == DAEMON_NEEDED) {
		rc = cmd_connect(&ctx, 0);
		if (rc != EXIT_OK)
			return rc;
	} else if (e->daemon == DAEMON_OPTIONAL) {
		admin_connect(ctx.socket, POOLCTL_TIMEOUT_MS, true, &ctx.admin);
	}
	rc = e->exec(&ctx);
	admin_close(ctx.admin);
	return rc;
}

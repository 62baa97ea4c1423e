/* cli/cmd-lend.c - poolctl lend | reclaim | drain NODE [SIZE], and poolctl ledger. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

static int lend_exec(struct cmd_ctx *ctx, enum admin_lend_op op)
{
	const struct admin_said *said;
	unsigned long node;
	uint64_t size = 0;
	char *end;
	int rc;

	node = strtoul(ctx->argv[0], &end, 10);
	if (ctx->argv[0][0] == '\0' || *end != '\0' || node == 0 || node > 65535) {
		fprintf(stderr, "poolctl: '%s' is not a node id\n", ctx->argv[0]);
		return EXIT_USAGE;
	}
	if (ctx->argc > 1 && units_parse_size(ctx->argv[1], &size) < 0) {
		fprintf(stderr, "poolctl: '%s' is not a size (use e.g. 64M, 2G)\n", ctx->argv[1]);
		return EXIT_USAGE;
	}
	rc = admin_lend(ctx->admin, op, (uint32_t)node, size, &said);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "result", said->message);
		json_finish(j);
	} else {
		printf("%s\n", said->message);
	}
	admin_free(said);
	return EXIT_OK;
}

static int cmd_lend_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, ADMIN_LEND);
}

static int cmd_reclaim_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, ADMIN_RECLAIM);
}

static int cmd_drain_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, ADMIN_DRAIN);
}

enum {
	L_NODE,
	L_ARENA,
	L_TIER,
	L_BORROWER,
	L_UID,
	L_SIZE,
	L_LENT,
	L_USED,
	L_REGIONS,
	L_STATE,
	L_DRAINING,
	L_FIELDS
};

static const struct field ledger_fields[L_FIELDS] = {
    [L_NODE] = {"node", "NODE", FIELD_U64, IN_BOTH},
    [L_ARENA] = {"arena", "ARENA", FIELD_U64, IN_BOTH},
    [L_TIER] = {"tier", "TIER", FIELD_STR, IN_BOTH},
    [L_BORROWER] = {NULL, "BORROWER", FIELD_STR, IN_BOTH},
    [L_UID] = {"uid", NULL, FIELD_U64, IN_BOTH},
    [L_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [L_LENT] = {"lent", "LENT", FIELD_SIZE, IN_BOTH},
    [L_USED] = {"used", "USED", FIELD_SIZE, IN_BOTH},
    [L_REGIONS] = {"regions", "REGIONS", FIELD_U64, IN_BOTH},
    [L_STATE] = {NULL, "STATE", FIELD_STR, IN_BOTH},
    [L_DRAINING] = {"draining", NULL, FIELD_BOOL, IN_BOTH},
};

static int cmd_ledger_exec(struct cmd_ctx *ctx)
{
	const struct admin_ledger *rep;
	struct json *j = NULL;
	struct listing *l;
	size_t i;
	int rc;

	rc = admin_ledger(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	l = listing_open(ctx, &j, "ledger", ledger_fields, L_FIELDS, false);
	for (i = 0; i < rep->n; i++) {
		const struct admin_lending *e = &rep->entries[i];
		bool all = e->uid == UINT32_MAX; /* the arena as a whole */
		char who[24];
		struct value v[L_FIELDS] = {
		    [L_NODE].u = e->node,
		    [L_ARENA].u = e->arena,
		    [L_TIER].s = e->tier,
		    [L_BORROWER].s = who,
		    [L_UID] = {.u = e->uid, .absent = all},
		    [L_SIZE].u = e->size,
		    [L_LENT].u = e->lent,
		    [L_USED].u = e->used,
		    [L_REGIONS].u = e->regions,
		    [L_STATE].s = e->draining ? "draining" : "lending",
		    [L_DRAINING].b = e->draining,
		};

		if (all)
			snprintf(who, sizeof(who), "(all)");
		else
			snprintf(who, sizeof(who), "uid %u", e->uid);
		listing_row(l, v);
	}
	return listing_close(l, j, rep);
}

const struct cmd_entry cmd_lend_entry = {
    "lend",
    "NODE SIZE",
    2,
    2,
    DAEMON_NEEDED,
    cmd_lend_exec,
    "set how much DRAM a node lends (up to its lend.max)",
};

const struct cmd_entry cmd_reclaim_entry = {
    "reclaim",
    "NODE SIZE",
    2,
    2,
    DAEMON_NEEDED,
    cmd_reclaim_exec,
    "take memory back from a node: evict cache regions, move the others",
};

const struct cmd_entry cmd_drain_entry = {
    "drain",
    "NODE",
    1,
    1,
    DAEMON_NEEDED,
    cmd_drain_exec,
    "empty a node for maintenance (poolctl lend gives it back)",
};

const struct cmd_entry cmd_ledger_entry = {
    "ledger", "", 0, 0, DAEMON_NEEDED, cmd_ledger_exec, "who lends what, and who borrows it",
};

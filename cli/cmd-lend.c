/* cli/cmd-lend.c - poolctl lend | reclaim | drain NODE [SIZE], and poolctl ledger. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

static int lend_exec(struct cmd_ctx *ctx, Pool__LendOp op)
{
	Pool__LendRequest req = POOL__LEND_REQUEST__INIT;
	unsigned long node;
	uint64_t size = 0;
	Pool__Ok *ok;
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
	req.node = (uint32_t)node;
	req.size = size;
	req.op = op;
	rc = cmd_call(ctx, WIRE_LEND, &req.base, WIRE_OK, (ProtobufCMessage **)&ok);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "result", ok->message);
		json_finish(j);
	} else {
		printf("%s\n", ok->message);
	}
	wire_msg_free(&ok->base);
	return EXIT_OK;
}

static int cmd_lend_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, POOL__LEND_OP__LEND_OP_LEND);
}

static int cmd_reclaim_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, POOL__LEND_OP__LEND_OP_RECLAIM);
}

static int cmd_drain_exec(struct cmd_ctx *ctx)
{
	return lend_exec(ctx, POOL__LEND_OP__LEND_OP_DRAIN);
}

static int cmd_ledger_exec(struct cmd_ctx *ctx)
{
	static const char *const headers[] = {"NODE", "ARENA", "TIER",	  "BORROWER", "SIZE",
					      "LENT", "USED",  "REGIONS", "STATE"};
	Pool__LedgerRequest req = POOL__LEDGER_REQUEST__INIT;
	Pool__Ledger *rep;
	struct table *t;
	size_t i;
	int rc;

	rc = cmd_call(ctx, WIRE_LEDGER, &req.base, WIRE_LEDGER_REPLY, (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_array(j, "ledger");
		for (i = 0; i < rep->n_entries; i++) {
			const Pool__LedgerEntry *e = rep->entries[i];

			json_object(j, NULL);
			json_u64(j, "node", e->node);
			json_u64(j, "arena", e->arena);
			json_str(j, "tier", e->tier);
			if (e->uid != UINT32_MAX)
				json_u64(j, "uid", e->uid);
			json_u64(j, "size", e->size);
			json_u64(j, "lent", e->lent);
			json_u64(j, "used", e->used);
			json_u64(j, "regions", e->regions);
			json_bool(j, "draining", e->draining);
			json_end(j);
		}
		json_finish(j);
		wire_msg_free(&rep->base);
		return EXIT_OK;
	}
	t = table_new(9, headers);
	for (i = 0; i < rep->n_entries; i++) {
		const Pool__LedgerEntry *e = rep->entries[i];
		char node[16], arena[16], who[24], size[24], lent[24], used[24], regions[16];

		snprintf(node, sizeof(node), "%u", e->node);
		snprintf(arena, sizeof(arena), "%u", e->arena);
		if (e->uid == UINT32_MAX)
			snprintf(who, sizeof(who), "(all)");
		else
			snprintf(who, sizeof(who), "uid %u", e->uid);
		units_fmt_size(e->size, size, sizeof(size));
		units_fmt_size(e->lent, lent, sizeof(lent));
		units_fmt_size(e->used, used, sizeof(used));
		snprintf(regions, sizeof(regions), "%llu", (unsigned long long)e->regions);
		table_row(t, node, arena, e->tier, who, size, lent, used, regions,
			  e->draining ? "draining" : "lending");
	}
	table_print(t, stdout);
	table_free(t);
	wire_msg_free(&rep->base);
	return EXIT_OK;
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

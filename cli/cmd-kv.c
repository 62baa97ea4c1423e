/*
 * cli/cmd-kv.c - poolctl kv ls | stats [NS] | create NS CAPACITY [tier=T] [evict=E] [replicas=N] |
 * drop NS | flush NS.
 */
#include "config.h"

#include <grp.h>
#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

static int kv_exec(struct cmd_ctx *ctx, Pool__KvNsOp op, const char *name, uint64_t capacity,
		   const char *tier, const char *evict, unsigned replicas, uint64_t hint, long mode,
		   long gid, bool stats)
{
	static const char *const short_h[] = {"NAMESPACE", "CAPACITY", "USED", "ENTRIES"};
	static const char *const long_h[] = {"NAMESPACE", "CAPACITY", "TIER",	    "EVICT",
					     "REPLICAS",  "DRAM",     "PMEM",	    "ENTRIES",
					     "HITS",	  "MISSES",   "HIT RATE",   "PMEM HITS",
					     "EVICTIONS", "SPILLS",   "PROMOTIONS", "PUTS"};
	Pool__KvNsRequest req = POOL__KV_NS_REQUEST__INIT;
	Pool__KvNsReply *rep;
	struct table *t;
	size_t i;
	int rc;

	req.op = op;
	req.name = (char *)name;
	req.tier = (char *)tier;
	req.evict = (char *)evict;
	req.has_replicas = replicas > 0;
	req.replicas = replicas;
	req.has_size_hint = hint > 0;
	req.size_hint = hint;
	req.has_mode = mode >= 0;
	req.mode = mode >= 0 ? (uint32_t)mode : 0;
	req.has_gid = gid >= 0;
	req.gid = gid >= 0 ? (uint32_t)gid : 0;
	if (capacity) {
		req.has_capacity = 1;
		req.capacity = capacity;
	}
	rc = cmd_call(ctx, WIRE_KV_NS, &req.base, WIRE_KV_NS_REPLY, (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_array(j, "namespaces");
		for (i = 0; i < rep->n_namespaces; i++) {
			const Pool__KvNamespace *n = rep->namespaces[i];

			json_object(j, NULL);
			json_str(j, "name", n->name);
			json_u64(j, "capacity", n->capacity);
			if (n->has_mode) {
				json_u64(j, "uid", n->uid);
				json_u64(j, "gid", n->gid);
				json_u64(j, "mode", n->mode);
			}
			json_u64(j, "used", n->used);
			json_u64(j, "entries", n->entries);
			json_u64(j, "hits", n->hits);
			json_u64(j, "misses", n->misses);
			json_u64(j, "evictions", n->evictions);
			json_u64(j, "puts", n->puts);
			json_u64(j, "pmem_used", n->pmem_used);
			json_u64(j, "spills", n->spills);
			json_u64(j, "promotions", n->promotions);
			json_u64(j, "pmem_hits", n->pmem_hits);
			json_str(j, "tier", n->tier ? n->tier : "");
			json_str(j, "evict", n->evict ? n->evict : "");
			json_u64(j, "replicas", n->replicas);
			json_u64(j, "size_hint", n->size_hint);
			json_end(j);
		}
		json_finish(j);
		wire_msg_free(&rep->base);
		return EXIT_OK;
	}
	if (op == POOL__KV_NS_OP__KV_NS_OP_DROP) {
		printf("KV namespace %s dropped\n", name);
		wire_msg_free(&rep->base);
		return EXIT_OK;
	}
	t = stats ? table_new(16, long_h) : table_new(4, short_h);
	for (i = 0; i < rep->n_namespaces; i++) {
		const Pool__KvNamespace *n = rep->namespaces[i];
		char cap[24], used[24], ent[24], hits[24], miss[24], rate[16], ev[24], puts[24];
		char pmem[24], phits[24], spills[24], proms[24], reps[16];
		uint64_t total = n->hits + n->misses;

		units_fmt_size(n->capacity, cap, sizeof(cap));
		/* ls: bytes in any tier; stats: per tier */
		units_fmt_size(stats ? n->used : n->used + n->pmem_used, used, sizeof(used));
		snprintf(ent, sizeof(ent), "%llu", (unsigned long long)n->entries);
		snprintf(hits, sizeof(hits), "%llu", (unsigned long long)n->hits);
		snprintf(miss, sizeof(miss), "%llu", (unsigned long long)n->misses);
		snprintf(rate, sizeof(rate), total ? "%.1f%%" : "-",
			 total ? 100.0 * (double)n->hits / (double)total : 0.0);
		snprintf(ev, sizeof(ev), "%llu", (unsigned long long)n->evictions);
		snprintf(puts, sizeof(puts), "%llu", (unsigned long long)n->puts);
		units_fmt_size(n->pmem_used, pmem, sizeof(pmem));
		snprintf(phits, sizeof(phits), "%llu", (unsigned long long)n->pmem_hits);
		snprintf(spills, sizeof(spills), "%llu", (unsigned long long)n->spills);
		snprintf(proms, sizeof(proms), "%llu", (unsigned long long)n->promotions);
		snprintf(reps, sizeof(reps), "%u", n->has_replicas ? n->replicas : 1);
		if (stats)
			table_row(t, n->name, cap, n->tier ? n->tier : "-",
				  n->evict ? n->evict : "-", reps, used, pmem, ent, hits, miss,
				  rate, phits, ev, spills, proms, puts);
		else
			table_row(t, n->name, cap, used, ent);
	}
	table_print(t, stdout);
	table_free(t);
	wire_msg_free(&rep->base);
	return EXIT_OK;
}

static int cmd_kv_ls_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, POOL__KV_NS_OP__KV_NS_OP_STATS, "", 0, NULL, NULL, 0, 0, -1, -1, false);
}

static int cmd_kv_stats_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, POOL__KV_NS_OP__KV_NS_OP_STATS, ctx->argc ? ctx->argv[0] : "", 0, NULL,
		       NULL, 0, 0, -1, -1, true);
}

static int cmd_kv_create_exec(struct cmd_ctx *ctx)
{
	const char *tier = NULL, *evict = NULL;
	unsigned replicas = 0;
	uint64_t cap, hint = 0;
	long mode = -1, gid = -1;
	int i;

	if (units_parse_size(ctx->argv[1], &cap) < 0) {
		fprintf(stderr, "poolctl: '%s' is not a size (use e.g. 64M, 2G)\n", ctx->argv[1]);
		return EXIT_USAGE;
	}
	for (i = 2; i < ctx->argc; i++) {
		if (strncmp(ctx->argv[i], "tier=", 5) == 0) {
			tier = ctx->argv[i] + 5;
		} else if (strncmp(ctx->argv[i], "evict=", 6) == 0) {
			evict = ctx->argv[i] + 6;
		} else if (strncmp(ctx->argv[i], "hint=", 5) == 0) {
			if (units_parse_size(ctx->argv[i] + 5, &hint) < 0 || hint == 0) {
				fprintf(stderr, "poolctl: '%s': hint is a size, such as 64K\n",
					ctx->argv[i]);
				return EXIT_USAGE;
			}
		} else if (strncmp(ctx->argv[i], "mode=", 5) == 0) {
			char *end;

			mode = strtol(ctx->argv[i] + 5, &end, 8);
			if (end == ctx->argv[i] + 5 || *end != '\0' || mode < 0 || mode > 0777) {
				fprintf(stderr,
					"poolctl: '%s': mode is octal permission bits, such "
					"as 0660\n",
					ctx->argv[i]);
				return EXIT_USAGE;
			}
		} else if (strncmp(ctx->argv[i], "group=", 6) == 0) {
			const struct group *g = getgrnam(ctx->argv[i] + 6);
			char *end;

			gid = g != NULL ? (long)g->gr_gid : strtol(ctx->argv[i] + 6, &end, 10);
			if (g == NULL && (end == ctx->argv[i] + 6 || *end != '\0' || gid < 0)) {
				fprintf(stderr, "poolctl: '%s': no such group\n", ctx->argv[i]);
				return EXIT_USAGE;
			}
		} else if (strncmp(ctx->argv[i], "replicas=", 9) == 0) {
			char *end;
			unsigned long r = strtoul(ctx->argv[i] + 9, &end, 10);

			if (end == ctx->argv[i] + 9 || *end != '\0' || r == 0 || r > 64) {
				fprintf(stderr, "poolctl: '%s': replicas is a count, such as 2\n",
					ctx->argv[i]);
				return EXIT_USAGE;
			}
			replicas = (unsigned)r;
		} else {
			fprintf(stderr,
				"poolctl: unknown option '%s' (tier=dram|dram+pmem|pmem, "
				"evict=lru|none, replicas=N, hint=SIZE, mode=OCTAL, group=NAME)\n",
				ctx->argv[i]);
			return EXIT_USAGE;
		}
	}
	return kv_exec(ctx, POOL__KV_NS_OP__KV_NS_OP_CREATE, ctx->argv[0], cap, tier, evict,
		       replicas, hint, mode, gid, true);
}

static int cmd_kv_drop_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, POOL__KV_NS_OP__KV_NS_OP_DROP, ctx->argv[0], 0, NULL, NULL, 0, 0, -1,
		       -1, false);
}

static int cmd_kv_flush_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, POOL__KV_NS_OP__KV_NS_OP_FLUSH, ctx->argv[0], 0, NULL, NULL, 0, 0, -1,
		       -1, true);
}

const struct cmd_entry cmd_kv_ls_entry = {
    "kv ls", "", 0, 0, DAEMON_NEEDED, cmd_kv_ls_exec, "list the KV cache namespaces",
};
const struct cmd_entry cmd_kv_stats_entry = {
    "kv stats",
    "[NS]",
    0,
    1,
    DAEMON_NEEDED,
    cmd_kv_stats_exec,
    "entries, bytes per tier, hits, misses, hit rate, evictions, spills, promotions, puts",
};
const struct cmd_entry cmd_kv_create_entry = {
    "kv create",
    "NS CAPACITY [OPT]",
    2,
    8,
    DAEMON_NEEDED,
    cmd_kv_create_exec,
    "a namespace of CAPACITY bytes (tier= evict= replicas=N hint=SIZE)",
};
const struct cmd_entry cmd_kv_drop_entry = {
    "kv drop", "NS", 1, 1, DAEMON_NEEDED, cmd_kv_drop_exec, "drop a namespace and its values",
};
const struct cmd_entry cmd_kv_flush_entry = {
    "kv flush", "NS", 1, 1, DAEMON_NEEDED, cmd_kv_flush_exec, "remove every value of a namespace",
};

/*
 * cli/cmd-kv.c - poolctl kv ls | stats [NS] | create NS CAPACITY [tier=T] [evict=E] [replicas=N] |
 * drop NS | flush NS.
 */
#include "config.h"

#include <grp.h>
#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

/*
 * A namespace's fields: kv stats shows the full table, kv ls the brief one
 * (its USED counts both tiers); --json has every field with a key.
 */
enum {
	K_NAME,
	K_CAPACITY,
	K_UID,
	K_GID,
	K_MODE,
	K_TIER,
	K_EVICT,
	K_REPLICAS,
	K_USED_ALL,
	K_USED,
	K_PMEM_USED,
	K_ENTRIES,
	K_HITS,
	K_MISSES,
	K_RATE,
	K_PMEM_HITS,
	K_EVICTIONS,
	K_SPILLS,
	K_PROMOTIONS,
	K_PUTS,
	K_SIZE_HINT,
	K_FIELDS
};

static const struct field kv_fields[K_FIELDS] = {
    [K_NAME] = {"name", "NAMESPACE", FIELD_STR, IN_BOTH},
    [K_CAPACITY] = {"capacity", "CAPACITY", FIELD_SIZE, IN_BOTH},
    [K_UID] = {"uid", NULL, FIELD_U64, IN_BOTH},
    [K_GID] = {"gid", NULL, FIELD_U64, IN_BOTH},
    [K_MODE] = {"mode", NULL, FIELD_U64, IN_BOTH},
    [K_TIER] = {"tier", "TIER", FIELD_STR, IN_FULL},
    [K_EVICT] = {"evict", "EVICT", FIELD_STR, IN_FULL},
    [K_REPLICAS] = {"replicas", "REPLICAS", FIELD_U64, IN_FULL},
    [K_USED_ALL] = {NULL, "USED", FIELD_SIZE, IN_BRIEF},
    [K_USED] = {"used", "DRAM", FIELD_SIZE, IN_FULL},
    [K_PMEM_USED] = {"pmem_used", "PMEM", FIELD_SIZE, IN_FULL},
    [K_ENTRIES] = {"entries", "ENTRIES", FIELD_U64, IN_BOTH},
    [K_HITS] = {"hits", "HITS", FIELD_U64, IN_FULL},
    [K_MISSES] = {"misses", "MISSES", FIELD_U64, IN_FULL},
    [K_RATE] = {NULL, "HIT RATE", FIELD_STR, IN_FULL},
    [K_PMEM_HITS] = {"pmem_hits", "PMEM HITS", FIELD_U64, IN_FULL},
    [K_EVICTIONS] = {"evictions", "EVICTIONS", FIELD_U64, IN_FULL},
    [K_SPILLS] = {"spills", "SPILLS", FIELD_U64, IN_FULL},
    [K_PROMOTIONS] = {"promotions", "PROMOTIONS", FIELD_U64, IN_FULL},
    [K_PUTS] = {"puts", "PUTS", FIELD_U64, IN_FULL},
    [K_SIZE_HINT] = {"size_hint", NULL, FIELD_U64, IN_BOTH},
};

static int kv_exec(struct cmd_ctx *ctx, Pool__KvNsOp op, const char *name, uint64_t capacity,
		   const char *tier, const char *evict, unsigned replicas, uint64_t hint, long mode,
		   long gid, bool stats)
{
	Pool__KvNsRequest req = POOL__KV_NS_REQUEST__INIT;
	Pool__KvNsReply *rep;
	struct json *j = NULL;
	struct listing *l;
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
	if (op == POOL__KV_NS_OP__KV_NS_OP_DROP && !ctx->json) {
		printf("KV namespace %s dropped\n", name);
		wire_msg_free(&rep->base);
		return EXIT_OK;
	}
	if (ctx->json)
		j = json_new(stdout);
	l = listing_new(j, "namespaces", kv_fields, K_FIELDS, !stats);
	for (i = 0; i < rep->n_namespaces; i++) {
		const Pool__KvNamespace *n = rep->namespaces[i];
		uint64_t total = n->hits + n->misses;
		char rate[16];
		struct value v[K_FIELDS] = {
		    [K_NAME].s = n->name,
		    [K_CAPACITY].u = n->capacity,
		    [K_UID] = {.u = n->uid, .absent = !n->has_mode},
		    [K_GID] = {.u = n->gid, .absent = !n->has_mode},
		    [K_MODE] = {.u = n->mode, .absent = !n->has_mode},
		    [K_TIER].s = n->tier,
		    [K_EVICT].s = n->evict,
		    [K_REPLICAS].u = n->has_replicas ? n->replicas : 1,
		    [K_USED_ALL].u = n->used + n->pmem_used,
		    [K_USED].u = n->used,
		    [K_PMEM_USED].u = n->pmem_used,
		    [K_ENTRIES].u = n->entries,
		    [K_HITS].u = n->hits,
		    [K_MISSES].u = n->misses,
		    [K_RATE].s = rate,
		    [K_PMEM_HITS].u = n->pmem_hits,
		    [K_EVICTIONS].u = n->evictions,
		    [K_SPILLS].u = n->spills,
		    [K_PROMOTIONS].u = n->promotions,
		    [K_PUTS].u = n->puts,
		    [K_SIZE_HINT].u = n->size_hint,
		};

		snprintf(rate, sizeof(rate), total ? "%.1f%%" : "-",
			 total ? 100.0 * (double)n->hits / (double)total : 0.0);
		listing_row(l, v);
	}
	listing_end(l);
	if (j != NULL)
		json_finish(j);
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

/*
 * cli/cmd-kv.c - poolctl kv ls | stats [NS] | create NS CAPACITY [tier=T] [evict=E] [replicas=N] |
 * drop NS | flush NS.
 */
#include "config.h"

#include <grp.h>
#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

/* proto/kvstats.h's statistics: a field each, its column, its value in a row. */
#define K_STAT(name, ...) K_##name,
#define K_STAT_COLUMN(name, source, metric, kind, help, head, table)                               \
	[K_##name] = {#name, head, FIELD_U64, table},
#define K_STAT_VALUE(name, ...) v[K_##name].u = n->name;

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
	KV_STATS(K_STAT) /* K_entries, K_hits... (proto/kvstats.h) */
	K_RATE,
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
    [K_RATE] = {NULL, "HIT RATE", FIELD_STR, IN_FULL},
    [K_SIZE_HINT] = {"size_hint", NULL, FIELD_U64, IN_BOTH},
    KV_STATS(K_STAT_COLUMN) /* ENTRIES, HITS... (their place: the enum's) */
};

/* Ask op of namespace name (spec: create's) and show the namespaces in the reply. */
static int kv_exec(struct cmd_ctx *ctx, enum admin_kv_op op, const char *name,
		   const struct admin_kv_spec *spec, bool stats)
{
	const struct admin_kv *rep;
	struct json *j = NULL;
	struct listing *l;
	size_t i;
	int rc;

	rc = admin_kv(ctx->admin, op, name, spec, &rep);
	if (rc != EXIT_OK)
		return rc;
	if (op == ADMIN_KV_DROP && !ctx->json) {
		printf("KV namespace %s dropped\n", name);
		admin_free(rep);
		return EXIT_OK;
	}
	l = listing_open(ctx, &j, "namespaces", kv_fields, K_FIELDS, !stats);
	for (i = 0; i < rep->n; i++) {
		const struct admin_kv_ns *n = &rep->namespaces[i];
		uint64_t total = n->hits + n->misses;
		char rate[16];
		struct value v[K_FIELDS] = {
		    [K_NAME].s = n->name,
		    [K_CAPACITY].u = n->capacity,
		    [K_UID] = {.u = n->uid, .absent = !n->has_owner},
		    [K_GID] = {.u = n->gid, .absent = !n->has_owner},
		    [K_MODE] = {.u = n->mode, .absent = !n->has_owner},
		    [K_TIER].s = n->tier,
		    [K_EVICT].s = n->evict,
		    [K_REPLICAS].u = n->replicas,
		    [K_USED_ALL].u = n->used + n->pmem_used,
		    [K_USED].u = n->used,
		    [K_PMEM_USED].u = n->pmem_used,
		    [K_RATE].s = rate,
		    [K_SIZE_HINT].u = n->size_hint,
		};

		KV_STATS(K_STAT_VALUE) /* entries, hits... */
		snprintf(rate, sizeof(rate), total ? "%.1f%%" : "-",
			 total ? 100.0 * (double)n->hits / (double)total : 0.0);
		listing_row(l, v);
	}
	return listing_close(l, j, rep);
}

static int cmd_kv_ls_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, ADMIN_KV_STATS, "", NULL, false);
}

static int cmd_kv_stats_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, ADMIN_KV_STATS, ctx->argc ? ctx->argv[0] : "", NULL, true);
}

static int cmd_kv_create_exec(struct cmd_ctx *ctx)
{
	struct admin_kv_spec spec = {.mode = -1, .gid = -1};
	int i;

	if (units_parse_size(ctx->argv[1], &spec.capacity) < 0) {
		fprintf(stderr, "poolctl: '%s' is not a size (use e.g. 64M, 2G)\n", ctx->argv[1]);
		return EXIT_USAGE;
	}
	for (i = 2; i < ctx->argc; i++) {
		if (strcmp(ctx->argv[i], "sharded") == 0) {
			spec.sharded = true;
		} else if (strncmp(ctx->argv[i], "tier=", 5) == 0) {
			spec.tier = ctx->argv[i] + 5;
		} else if (strncmp(ctx->argv[i], "evict=", 6) == 0) {
			spec.evict = ctx->argv[i] + 6;
		} else if (strncmp(ctx->argv[i], "hint=", 5) == 0) {
			if (units_parse_size(ctx->argv[i] + 5, &spec.size_hint) < 0 ||
			    spec.size_hint == 0) {
				fprintf(stderr, "poolctl: '%s': hint is a size, such as 64K\n",
					ctx->argv[i]);
				return EXIT_USAGE;
			}
		} else if (strncmp(ctx->argv[i], "mode=", 5) == 0) {
			char *end;

			spec.mode = strtol(ctx->argv[i] + 5, &end, 8);
			if (end == ctx->argv[i] + 5 || *end != '\0' || spec.mode < 0 ||
			    spec.mode > 0777) {
				fprintf(stderr,
					"poolctl: '%s': mode is octal permission bits, such "
					"as 0660\n",
					ctx->argv[i]);
				return EXIT_USAGE;
			}
		} else if (strncmp(ctx->argv[i], "group=", 6) == 0) {
			const struct group *g = getgrnam(ctx->argv[i] + 6);
			char *end;

			spec.gid = g != NULL ? (long)g->gr_gid : strtol(ctx->argv[i] + 6, &end, 10);
			if (g == NULL &&
			    (end == ctx->argv[i] + 6 || *end != '\0' || spec.gid < 0)) {
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
			spec.replicas = (unsigned)r;
		} else {
			fprintf(stderr,
				"poolctl: unknown option '%s' (tier=dram|dram+pmem|pmem, "
				"evict=lru|none, replicas=N, hint=SIZE, mode=OCTAL, group=NAME, "
				"sharded)\n",
				ctx->argv[i]);
			return EXIT_USAGE;
		}
	}
	return kv_exec(ctx, ADMIN_KV_CREATE, ctx->argv[0], &spec, true);
}

static int cmd_kv_drop_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, ADMIN_KV_DROP, ctx->argv[0], NULL, false);
}

static int cmd_kv_flush_exec(struct cmd_ctx *ctx)
{
	return kv_exec(ctx, ADMIN_KV_FLUSH, ctx->argv[0], NULL, true);
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

/* cli/cmd-nodes.c - poolctl nodes: the members of the cluster. */
#include "config.h"

#include <string.h>

#include "cli/poolctl.h"

/* Sum a member's DRAM lend capacity and use over its NUMA nodes. */
static void nodes_dram(const struct admin_node *n, uint64_t *cap, uint64_t *used)
{
	size_t i;

	*cap = *used = 0;
	for (i = 0; i < n->n_numa; i++) {
		*cap += n->numa[i].lend_capacity;
		*used += n->numa[i].lend_used;
	}
}

/* An arena: in the table of poolctl nodes -v, and in each node's "arenas" in JSON. */
enum {
	A_NODE,
	A_ID,
	A_TIER,
	A_NUMA,
	A_NUMA_SHOWN,
	A_SIZE,
	A_LENT,
	A_USED,
	A_FREE,
	A_LARGEST,
	A_RUNS,
	A_FRAG,
	A_EXTENTS,
	A_FIELDS
};

static const struct field arena_fields[A_FIELDS] = {
    [A_NODE] = {NULL, "NODE", FIELD_U64, IN_BOTH}, /* (in JSON, under its node) */
    [A_ID] = {"id", "ARENA", FIELD_U64, IN_BOTH},
    [A_TIER] = {"tier", "TIER", FIELD_STR, IN_BOTH},
    [A_NUMA] = {"numa", NULL, FIELD_I64, IN_BOTH},
    [A_NUMA_SHOWN] = {NULL, "NUMA", FIELD_I64, IN_BOTH}, /* ("-" for none) */
    [A_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [A_LENT] = {"lent", "LENT", FIELD_SIZE, IN_BOTH},
    [A_USED] = {"used", "USED", FIELD_SIZE, IN_BOTH},
    [A_FREE] = {NULL, "FREE", FIELD_SIZE, IN_BOTH},
    [A_LARGEST] = {"largest_free", "LARGEST", FIELD_SIZE, IN_BOTH},
    [A_RUNS] = {"free_runs", "RUNS", FIELD_U64, IN_BOTH},
    [A_FRAG] = {NULL, "FRAG", FIELD_STR, IN_BOTH},
    [A_EXTENTS] = {"extents", NULL, FIELD_U64, IN_BOTH},
};

/* Node ni's arena a as a row of a listing. */
static void nodes_arena_row(struct listing *l, const struct admin_node *ni,
			    const struct admin_arena *a)
{
	uint64_t free = a->lent > a->used ? a->lent - a->used : 0;
	char frag[16];
	const struct value v[A_FIELDS] = {
	    [A_NODE].u = ni->id,
	    [A_ID].u = a->id,
	    [A_TIER].s = a->tier,
	    [A_NUMA].i = a->numa,
	    [A_NUMA_SHOWN] = {.i = a->numa, .absent = a->numa < 0},
	    [A_SIZE].u = a->size,
	    [A_LENT].u = a->lent,
	    [A_USED].u = a->used,
	    [A_FREE].u = free,
	    [A_LARGEST].u = a->largest_free,
	    [A_RUNS].u = a->free_runs,
	    [A_FRAG].s = frag,
	    [A_EXTENTS].u = a->extents,
	};

	snprintf(frag, sizeof(frag), "%.1f%%",
		 free ? 100.0 * (1.0 - (double)a->largest_free / (double)free) : 0.0);
	listing_row(l, v);
}

/* poolctl nodes -v: each member's arenas as the coordinator's allocators see them. */
static void nodes_print_arenas(const struct admin_nodes *nodes)
{
	struct listing *l;
	size_t i, k;

	printf("\n");
	l = listing_new(NULL, "arenas", arena_fields, A_FIELDS, false);
	for (i = 0; i < nodes->n; i++)
		for (k = 0; k < nodes->nodes[i].n_arenas; k++)
			nodes_arena_row(l, &nodes->nodes[i], &nodes->nodes[i].arenas[k]);
	listing_end(l);
}

enum {
	N_ID,
	N_NAME,
	N_ADDRESS,
	N_STATE,
	N_ROLE,
	N_DRAM,
	N_DRAM_CAPACITY,
	N_DRAM_USED,
	N_PMEM,
	N_PMEM_CAPACITY,
	N_PMEM_USED,
	N_HEARTBEAT,
	N_HEARTBEAT_AGE,
	N_VERSION,
	N_INCARNATION,
	N_FIELDS
};

static const struct field node_fields[N_FIELDS] = {
    [N_ID] = {"id", "ID", FIELD_U64, IN_BOTH},
    [N_NAME] = {"name", "NAME", FIELD_STR, IN_BOTH},
    [N_ADDRESS] = {"address", "ADDRESS", FIELD_STR, IN_BOTH},
    [N_STATE] = {"state", "STATE", FIELD_STR, IN_BOTH},
    [N_ROLE] = {"role", "ROLE", FIELD_STR, IN_BOTH},
    [N_DRAM] = {NULL, "DRAM", FIELD_STR, IN_BOTH},
    [N_DRAM_CAPACITY] = {"dram_capacity", NULL, FIELD_U64, IN_BOTH},
    [N_DRAM_USED] = {"dram_used", NULL, FIELD_U64, IN_BOTH},
    [N_PMEM] = {NULL, "PMEM", FIELD_STR, IN_BOTH},
    [N_PMEM_CAPACITY] = {"pmem_capacity", NULL, FIELD_U64, IN_BOTH},
    [N_PMEM_USED] = {"pmem_used", NULL, FIELD_U64, IN_BOTH},
    [N_HEARTBEAT] = {NULL, "HEARTBEAT", FIELD_STR, IN_BOTH},
    [N_HEARTBEAT_AGE] = {"heartbeat_age_ms", NULL, FIELD_U64, IN_BOTH},
    [N_VERSION] = {"version", "VERSION", FIELD_STR, IN_BOTH},
    [N_INCARNATION] = {"incarnation", NULL, FIELD_U64, IN_BOTH},
};

/* In JSON, a member's NUMA nodes and arenas. */
static void nodes_numa_arenas_json(struct json *j, const void *arg)
{
	const struct admin_node *ni = arg;
	struct listing *l;
	size_t k;

	json_array(j, "numa");
	for (k = 0; k < ni->n_numa; k++) {
		json_object(j, NULL);
		json_u64(j, "id", ni->numa[k].id);
		json_u64(j, "mem_total", ni->numa[k].mem_total);
		json_u64(j, "lend_capacity", ni->numa[k].lend_capacity);
		json_u64(j, "lend_used", ni->numa[k].lend_used);
		json_end(j);
	}
	json_end(j);
	l = listing_new(j, "arenas", arena_fields, A_FIELDS, false);
	for (k = 0; k < ni->n_arenas; k++)
		nodes_arena_row(l, ni, &ni->arenas[k]);
	listing_end(l);
}

/* "used/capacity" of a tier, for the table. */
static void nodes_used_of(uint64_t used, uint64_t cap, char *buf, size_t len)
{
	char a[24], b[24];

	units_fmt_size(used, a, sizeof(a));
	units_fmt_size(cap, b, sizeof(b));
	snprintf(buf, len, "%s/%s", a, b);
}

/* Print the members as a table, or as a JSON array "nodes" of j. */
static void nodes_print(struct cmd_ctx *ctx, struct json *j, const struct admin_nodes *nodes)
{
	struct listing *l = listing_new(j, "nodes", node_fields, N_FIELDS, false);
	size_t i;

	for (i = 0; i < nodes->n; i++) {
		const struct admin_node *ni = &nodes->nodes[i];
		char dram[64], pmem[64], hb[32];
		uint64_t cap, used;
		struct value v[N_FIELDS] = {
		    [N_ID].u = ni->id,
		    [N_NAME].s = ni->name,
		    [N_ADDRESS].s = j != NULL || ni->addr[0] ? ni->addr : "-",
		    [N_STATE].s = ni->state,
		    [N_ROLE].s = ni->role,
		    [N_DRAM].s = dram,
		    [N_PMEM].s = pmem,
		    [N_PMEM_CAPACITY].u = ni->pmem_capacity,
		    [N_PMEM_USED].u = ni->pmem_used,
		    [N_HEARTBEAT].s = hb,
		    [N_HEARTBEAT_AGE].u = ni->heartbeat_age_ms,
		    [N_VERSION].s = ni->version,
		    [N_INCARNATION].u = ni->incarnation,
		};

		nodes_dram(ni, &cap, &used);
		v[N_DRAM_CAPACITY].u = cap;
		v[N_DRAM_USED].u = used;
		nodes_used_of(used, cap, dram, sizeof(dram));
		nodes_used_of(ni->pmem_used, ni->pmem_capacity, pmem, sizeof(pmem));
		snprintf(hb, sizeof(hb), "%.1fs ago", (double)ni->heartbeat_age_ms / 1000);
		listing_row_more(l, v, nodes_numa_arenas_json, ni);
	}
	listing_end(l);
	if (j != NULL)
		return;
	if (ctx->argc > 0)
		nodes_print_arenas(nodes);
}

static int cmd_nodes_exec(struct cmd_ctx *ctx)
{
	const struct admin_nodes *rep;
	int rc;

	if (ctx->argc > 0 && strcmp(ctx->argv[0], "-v") != 0) {
		fprintf(stderr, "usage: poolctl nodes [-v]\n");
		return EXIT_USAGE;
	}
	rc = admin_nodes(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		nodes_print(ctx, j, rep);
		json_finish(j);
	} else {
		nodes_print(ctx, NULL, rep);
	}
	admin_free(rep);
	return EXIT_OK;
}

const struct cmd_entry cmd_nodes_entry = {
    "nodes",
    "[-v]",
    0,
    1,
    DAEMON_NEEDED,
    cmd_nodes_exec,
    "list the nodes of the cluster and their state; -v: their arenas",
};

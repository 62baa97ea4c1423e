/* cli/cmd-nodes.c - poolctl nodes: the members of the cluster. */
#include "config.h"

#include <string.h>

#include "cli/poolctl.h"

/* Sum a member's DRAM lend capacity and use over its NUMA nodes. */
static void nodes_dram(const Pool__NodeInfo *n, uint64_t *cap, uint64_t *used)
{
	size_t i;

	*cap = *used = 0;
	for (i = 0; i < n->n_numa; i++) {
		*cap += n->numa[i]->lend_capacity;
		*used += n->numa[i]->lend_used;
	}
}

/* poolctl nodes -v: each member's arenas as the coordinator's allocators see them. */
static void nodes_print_arenas(Pool__Member **members, size_t n)
{
	static const char *const headers[] = {"NODE", "ARENA", "TIER",	  "NUMA", "SIZE", "LENT",
					      "USED", "FREE",  "LARGEST", "RUNS", "FRAG"};
	struct table *t = table_new(11, headers);
	size_t i, k;

	for (i = 0; i < n; i++) {
		const Pool__NodeInfo *ni = members[i]->node;

		for (k = 0; k < ni->n_arenas; k++) {
			const Pool__Arena *a = ni->arenas[k];
			char node[16], id[16], numa[16], size[24], lent[24], used[24], fr[24],
			    lg[24];
			char runs[16], frag[16];
			uint64_t free = a->lent > a->used ? a->lent - a->used : 0;

			snprintf(node, sizeof(node), "%u", ni->id);
			snprintf(id, sizeof(id), "%u", a->id);
			snprintf(numa, sizeof(numa), a->numa < 0 ? "-" : "%d", a->numa);
			units_fmt_size(a->size, size, sizeof(size));
			units_fmt_size(a->lent, lent, sizeof(lent));
			units_fmt_size(a->used, used, sizeof(used));
			units_fmt_size(free, fr, sizeof(fr));
			units_fmt_size(a->largest_free, lg, sizeof(lg));
			snprintf(runs, sizeof(runs), "%llu", (unsigned long long)a->free_runs);
			snprintf(frag, sizeof(frag), "%.1f%%",
				 free ? 100.0 * (1.0 - (double)a->largest_free / (double)free)
				      : 0.0);
			table_row(t, node, id, a->tier, numa, size, lent, used, fr, lg, runs, frag);
		}
	}
	printf("\n");
	table_print(t, stdout);
	table_free(t);
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
	const Pool__NodeInfo *ni = arg;
	size_t k;

	json_array(j, "numa");
	for (k = 0; k < ni->n_numa; k++) {
		json_object(j, NULL);
		json_u64(j, "id", ni->numa[k]->id);
		json_u64(j, "mem_total", ni->numa[k]->mem_total);
		json_u64(j, "lend_capacity", ni->numa[k]->lend_capacity);
		json_u64(j, "lend_used", ni->numa[k]->lend_used);
		json_end(j);
	}
	json_end(j);
	json_array(j, "arenas");
	for (k = 0; k < ni->n_arenas; k++) {
		const Pool__Arena *a = ni->arenas[k];

		json_object(j, NULL);
		json_u64(j, "id", a->id);
		json_str(j, "tier", a->tier);
		json_i64(j, "numa", a->numa);
		json_u64(j, "size", a->size);
		json_u64(j, "lent", a->lent);
		json_u64(j, "used", a->used);
		json_u64(j, "largest_free", a->largest_free);
		json_u64(j, "free_runs", a->free_runs);
		json_u64(j, "extents", a->extents);
		json_end(j);
	}
	json_end(j);
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
void nodes_print(struct cmd_ctx *ctx, struct json *j, Pool__Member **members, size_t n)
{
	struct listing *l = listing_new(j, "nodes", node_fields, N_FIELDS, false);
	size_t i;

	for (i = 0; i < n; i++) {
		const Pool__NodeInfo *ni = members[i]->node;
		char dram[64], pmem[64], hb[32], state[WIRE_ENUM_NAME_MAX];
		uint64_t cap, used;
		struct value v[N_FIELDS] = {
		    [N_ID].u = ni->id,
		    [N_NAME].s = ni->name,
		    [N_ADDRESS].s = j != NULL || ni->addr[0] ? ni->addr : "-",
		    [N_STATE].s = wire_enum_name(&pool__member_state__descriptor, members[i]->state,
						 state, sizeof(state)),
		    [N_ROLE].s = ni->role,
		    [N_DRAM].s = dram,
		    [N_PMEM].s = pmem,
		    [N_PMEM_CAPACITY].u = ni->pmem_capacity,
		    [N_PMEM_USED].u = ni->pmem_used,
		    [N_HEARTBEAT].s = hb,
		    [N_HEARTBEAT_AGE].u = members[i]->heartbeat_age_ms,
		    [N_VERSION].s = ni->version,
		    [N_INCARNATION].u = ni->incarnation,
		};

		nodes_dram(ni, &cap, &used);
		v[N_DRAM_CAPACITY].u = cap;
		v[N_DRAM_USED].u = used;
		nodes_used_of(used, cap, dram, sizeof(dram));
		nodes_used_of(ni->pmem_used, ni->pmem_capacity, pmem, sizeof(pmem));
		snprintf(hb, sizeof(hb), "%.1fs ago", (double)members[i]->heartbeat_age_ms / 1000);
		listing_row_more(l, v, nodes_numa_arenas_json, ni);
	}
	listing_end(l);
	if (j != NULL)
		return;
	if (ctx->argc > 0)
		nodes_print_arenas(members, n);
}

static int cmd_nodes_exec(struct cmd_ctx *ctx)
{
	Pool__NodesRequest req = POOL__NODES_REQUEST__INIT;
	Pool__NodesReply *rep;
	int rc;

	if (ctx->argc > 0 && strcmp(ctx->argv[0], "-v") != 0) {
		fprintf(stderr, "usage: poolctl nodes [-v]\n");
		return EXIT_USAGE;
	}
	rc = cmd_call(ctx, WIRE_NODES, &req.base, WIRE_NODES_REPLY, (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		nodes_print(ctx, j, rep->members, rep->n_members);
		json_finish(j);
	} else {
		nodes_print(ctx, NULL, rep->members, rep->n_members);
	}
	wire_msg_free(&rep->base);
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

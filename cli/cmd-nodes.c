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

/* Print the members as a table, or as a JSON array named key. */
void nodes_print(struct cmd_ctx *ctx, struct json *j, Pool__Member **members, size_t n)
{
	static const char *const headers[] = {"ID",   "NAME", "ADDRESS",   "STATE", "ROLE",
					      "DRAM", "PMEM", "HEARTBEAT", "VERSION"};
	struct table *t;
	size_t i, k;

	if (j != NULL) {
		json_array(j, "nodes");
		for (i = 0; i < n; i++) {
			const Pool__NodeInfo *ni = members[i]->node;
			uint64_t cap, used;

			nodes_dram(ni, &cap, &used);
			json_object(j, NULL);
			json_u64(j, "id", ni->id);
			json_str(j, "name", ni->name);
			json_str(j, "address", ni->addr);
			json_str(j, "state", members[i]->state);
			json_str(j, "role", ni->role);
			json_u64(j, "dram_capacity", cap);
			json_u64(j, "dram_used", used);
			json_u64(j, "pmem_capacity", ni->pmem_capacity);
			json_u64(j, "pmem_used", ni->pmem_used);
			json_u64(j, "heartbeat_age_ms", members[i]->heartbeat_age_ms);
			json_str(j, "version", ni->version);
			json_u64(j, "incarnation", ni->incarnation);
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
			json_end(j);
		}
		json_end(j);
		return;
	}
	t = table_new(9, headers);
	for (i = 0; i < n; i++) {
		const Pool__NodeInfo *ni = members[i]->node;
		char id[16], dram[64], pmem[64], hb[32], a[24], b[24];
		uint64_t cap, used;

		nodes_dram(ni, &cap, &used);
		snprintf(id, sizeof(id), "%u", ni->id);
		units_fmt_size(used, a, sizeof(a));
		units_fmt_size(cap, b, sizeof(b));
		snprintf(dram, sizeof(dram), "%s/%s", a, b);
		units_fmt_size(ni->pmem_used, a, sizeof(a));
		units_fmt_size(ni->pmem_capacity, b, sizeof(b));
		snprintf(pmem, sizeof(pmem), "%s/%s", a, b);
		snprintf(hb, sizeof(hb), "%.1fs ago", (double)members[i]->heartbeat_age_ms / 1000);
		table_row(t, id, ni->name, ni->addr[0] ? ni->addr : "-", members[i]->state, ni->role,
			  dram, pmem, hb, ni->version);
	}
	table_print(t, stdout);
	table_free(t);
	(void)ctx;
}

static int cmd_nodes_exec(struct cmd_ctx *ctx)
{
	Pool__NodesRequest req = POOL__NODES_REQUEST__INIT;
	Pool__NodesReply *rep;
	int rc;

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
	"nodes", "", 0, 0, DAEMON_NEEDED, cmd_nodes_exec,
	"list the nodes of the cluster and their state",
};

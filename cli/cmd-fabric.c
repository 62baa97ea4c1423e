/* cli/cmd-fabric.c - poolctl fabric [probe]: the measured links between nodes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

static const Pool__ProbeResult *fabric_find(const Pool__FabricReply *rep, uint32_t src,
					    uint32_t dst)
{
	size_t i;

	for (i = 0; i < rep->n_results; i++)
		if (rep->results[i]->src == src && rep->results[i]->dst == dst)
			return rep->results[i];
	return NULL;
}

static void fabric_print_json(const Pool__FabricReply *rep)
{
	struct json *j = json_new(stdout);
	size_t i;

	json_array(j, "links");
	for (i = 0; i < rep->n_results; i++) {
		const Pool__ProbeResult *r = rep->results[i];

		json_object(j, NULL);
		json_u64(j, "src", r->src);
		json_u64(j, "dst", r->dst);
		json_i64(j, "error", r->error);
		if (r->error != 0)
			json_str(j, "error_text", err_str(r->error));
		json_u64(j, "latency_ns", r->latency_ns);
		json_u64(j, "bandwidth_bps", r->bandwidth);
		json_str(j, "transport", r->transport);
		json_u64(j, "measured_at_ms", r->when_ms);
		json_end(j);
	}
	json_end(j);
	json_finish(j);
}

/* A matrix per figure: rows read from columns' memory. */
static void fabric_print_matrix(const Pool__FabricReply *rep, bool bandwidth)
{
	size_t n = rep->n_members, i, k;
	const char **headers = calloc(n + 1, sizeof(*headers));
	char(*names)[16] = calloc(n + 1, sizeof(*names));
	struct table *t;

	if (headers == NULL || names == NULL)
		goto out;
	if (n > 64) {
		printf("(%zu nodes: too many for a matrix, use --json)\n", n);
		goto out;
	}
	headers[0] = bandwidth ? "GB/s" : "latency";
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "%u", rep->members[i]->node->id);
		headers[i + 1] = names[i];
	}
	t = table_new((int)n + 1, headers);
	for (i = 0; i < n; i++) {
		char cells[64][24];
		const char *row[65];

		row[0] = names[i];
		for (k = 0; k < n; k++) {
			const Pool__ProbeResult *r =
			    fabric_find(rep, rep->members[i]->node->id, rep->members[k]->node->id);
			if (i == k)
				snprintf(cells[k], sizeof(cells[k]), "-");
			else if (r == NULL)
				snprintf(cells[k], sizeof(cells[k]), "?");
			else if (r->error != 0)
				snprintf(cells[k], sizeof(cells[k]), "error");
			else if (bandwidth)
				snprintf(cells[k], sizeof(cells[k]), "%.2f",
					 (double)r->bandwidth / 1e9);
			else
				snprintf(cells[k], sizeof(cells[k]), "%.1fus",
					 (double)r->latency_ns / 1e3);
			row[k + 1] = cells[k];
		}
		table_row_v(t, row);
	}
	table_print(t, stdout);
	table_free(t);
out:
	free(names);
	free(headers);
}

static void fabric_print(const Pool__FabricReply *rep)
{
	size_t i;

	if (rep->n_results == 0) {
		printf("no link measured yet: run 'poolctl fabric probe'\n");
		return;
	}
	printf("latency (median 8-byte get, row reads column):\n");
	fabric_print_matrix(rep, false);
	printf("\nbandwidth (1 MiB gets, 4 in flight, row reads column):\n");
	fabric_print_matrix(rep, true);
	printf("\nlinks:\n");
	for (i = 0; i < rep->n_results; i++) {
		const Pool__ProbeResult *r = rep->results[i];

		if (r->error != 0)
			printf("  %u -> %u: %s\n", r->src, r->dst, err_str(r->error));
		else
			printf("  %u -> %u: %s\n", r->src, r->dst,
			       r->transport[0] ? r->transport : "(transport unknown)");
	}
}

static int fabric_exec(struct cmd_ctx *ctx, uint16_t type, const ProtobufCMessage *req)
{
	Pool__FabricReply *rep;
	int rc;

	rc = cmd_call(ctx, type, req, WIRE_FABRIC_REPLY, (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json)
		fabric_print_json(rep);
	else
		fabric_print(rep);
	wire_msg_free(&rep->base);
	return EXIT_OK;
}

static int cmd_fabric_exec(struct cmd_ctx *ctx)
{
	Pool__FabricRequest req = POOL__FABRIC_REQUEST__INIT;

	return fabric_exec(ctx, WIRE_FABRIC, &req.base);
}

static int cmd_fabric_probe_exec(struct cmd_ctx *ctx)
{
	Pool__ProbeRequest req = POOL__PROBE_REQUEST__INIT;

	return fabric_exec(ctx, WIRE_PROBE, &req.base);
}

const struct cmd_entry cmd_fabric_probe_entry = {
    "fabric probe",
    "",
    0,
    0,
    DAEMON_NEEDED,
    cmd_fabric_probe_exec,
    "measure every link now and show the results",
};

const struct cmd_entry cmd_fabric_entry = {
    "fabric",
    "",
    0,
    0,
    DAEMON_NEEDED,
    cmd_fabric_exec,
    "show the latest latency and bandwidth between nodes",
};

/* cli/cmd-fabric.c - poolctl fabric [probe]: the measured links between nodes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

static const struct admin_link *fabric_find(const struct admin_fabric *f, uint32_t src,
					    uint32_t dst)
{
	size_t i;

	for (i = 0; i < f->n_links; i++)
		if (f->links[i].src == src && f->links[i].dst == dst)
			return &f->links[i];
	return NULL;
}

static void fabric_print_json(const struct admin_fabric *rep)
{
	struct json *j = json_new(stdout);
	size_t i;

	json_array(j, "links");
	for (i = 0; i < rep->n_links; i++) {
		const struct admin_link *r = &rep->links[i];

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
static void fabric_print_matrix(const struct admin_fabric *rep, bool bandwidth)
{
	size_t n = rep->n_nodes, i, k;
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
		snprintf(names[i], sizeof(names[i]), "%u", rep->nodes[i]);
		headers[i + 1] = names[i];
	}
	t = table_new((int)n + 1, headers);
	for (i = 0; i < n; i++) {
		char cells[64][24];
		const char *row[65];

		row[0] = names[i];
		for (k = 0; k < n; k++) {
			const struct admin_link *r = fabric_find(rep, rep->nodes[i], rep->nodes[k]);
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

static void fabric_print(const struct admin_fabric *rep)
{
	size_t i;

	if (rep->n_links == 0) {
		printf("no link measured yet: run 'poolctl fabric probe'\n");
		return;
	}
	printf("latency (median 8-byte get, row reads column):\n");
	fabric_print_matrix(rep, false);
	printf("\nbandwidth (1 MiB gets, 4 in flight, row reads column):\n");
	fabric_print_matrix(rep, true);
	printf("\nlinks:\n");
	for (i = 0; i < rep->n_links; i++) {
		const struct admin_link *r = &rep->links[i];

		if (r->error != 0)
			printf("  %u -> %u: %s\n", r->src, r->dst, err_str(r->error));
		else
			printf("  %u -> %u: %s\n", r->src, r->dst,
			       r->transport[0] ? r->transport : "(transport unknown)");
	}
}

/* probe: measure the links now; else show the latest measures. */
static int fabric_exec(struct cmd_ctx *ctx, bool probe)
{
	const struct admin_fabric *rep;
	int rc;

	rc = admin_fabric(ctx->admin, probe, &rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json)
		fabric_print_json(rep);
	else
		fabric_print(rep);
	admin_free(rep);
	return EXIT_OK;
}

static int cmd_fabric_exec(struct cmd_ctx *ctx)
{
	return fabric_exec(ctx, false);
}

static int cmd_fabric_probe_exec(struct cmd_ctx *ctx)
{
	return fabric_exec(ctx, true);
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

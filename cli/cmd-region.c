/* cli/cmd-region.c - poolctl regions | region create | region info | region destroy. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

/* The distinct lender nodes of a region, as "2,3,4". */
static void region_nodes(const struct admin_region *r, char *buf, size_t len)
{
	size_t i, k, off = 0;

	buf[0] = '\0';
	for (i = 0; i < r->n_extents && off < len; i++) {
		for (k = 0; k < i && r->extents[k].node != r->extents[i].node; k++)
			;
		if (k == i)
			off += (size_t)snprintf(buf + off, len - off, "%s%u", off ? "," : "",
						r->extents[i].node);
	}
}

/* "whole", "lost", or "lost 1/2" while its extents come back from their lenders. */
static void region_state(const struct admin_region *r, char *buf, size_t len)
{
	if (!r->lost)
		snprintf(buf, len, "whole");
	else if (r->want_extents > 0)
		snprintf(buf, len, "lost %zu/%u", r->n_extents, r->want_extents);
	else
		snprintf(buf, len, "lost");
}

enum {
	R_NAME,
	R_ID,
	R_SIZE,
	R_CLASS,
	R_PLACEMENT,
	R_NODES,
	R_LEASES,
	R_OWNER,
	R_UID,
	R_GID,
	R_MODE,
	R_STATE,
	R_GVA,
	R_STRIPE,
	R_ANONYMOUS,
	R_LOST,
	R_WANT,
	R_FIELDS
};

static const struct field region_fields[R_FIELDS] = {
    [R_NAME] = {"name", "NAME", FIELD_STR, IN_BOTH},
    [R_ID] = {"id", NULL, FIELD_U64, IN_BOTH},
    [R_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [R_CLASS] = {"class", "CLASS", FIELD_STR, IN_BOTH},
    [R_PLACEMENT] = {"placement", "PLACEMENT", FIELD_STR, IN_BOTH},
    [R_NODES] = {NULL, "NODES", FIELD_STR, IN_BOTH},
    [R_LEASES] = {"leases", "LEASES", FIELD_U64, IN_BOTH},
    [R_OWNER] = {NULL, "OWNER", FIELD_STR, IN_BOTH},
    [R_UID] = {"uid", NULL, FIELD_U64, IN_BOTH},
    [R_GID] = {"gid", NULL, FIELD_U64, IN_BOTH},
    [R_MODE] = {"mode", "MODE", FIELD_MODE, IN_BOTH},
    [R_STATE] = {NULL, "STATE", FIELD_STR, IN_BOTH},
    [R_GVA] = {"gva", NULL, FIELD_U64, IN_BOTH},
    [R_STRIPE] = {"stripe", NULL, FIELD_U64, IN_BOTH},
    [R_ANONYMOUS] = {"anonymous", NULL, FIELD_BOOL, IN_BOTH},
    [R_LOST] = {"lost", NULL, FIELD_BOOL, IN_BOTH},
    [R_WANT] = {"want_extents", NULL, FIELD_U64, IN_BOTH},
};

/* In JSON, a region's extents. */
static void region_extents_json(struct json *j, const void *arg)
{
	const struct admin_region *r = arg;
	size_t i;

	json_array(j, "extents");
	for (i = 0; i < r->n_extents; i++) {
		json_object(j, NULL);
		json_u64(j, "node", r->extents[i].node);
		json_u64(j, "arena", r->extents[i].arena);
		json_u64(j, "offset", r->extents[i].off);
		json_u64(j, "length", r->extents[i].len);
		json_end(j);
	}
	json_end(j);
}

/* A region as a row of a listing. */
static void region_row(struct listing *l, const struct admin_region *r)
{
	char nodes[128], owner[32], state[32];
	struct value v[R_FIELDS] = {
	    [R_NAME].s = r->name,
	    [R_ID].u = r->id,
	    [R_SIZE].u = r->size,
	    [R_CLASS].s = r->class_name,
	    [R_PLACEMENT].s = r->placement,
	    [R_NODES].s = nodes,
	    [R_LEASES].u = r->leases,
	    [R_OWNER].s = owner,
	    [R_UID].u = r->uid,
	    [R_GID].u = r->gid,
	    [R_MODE].u = r->mode,
	    [R_STATE].s = state,
	    [R_GVA].u = r->gva,
	    [R_STRIPE].u = r->stripe,
	    [R_ANONYMOUS].b = r->anonymous,
	    [R_LOST].b = r->lost,
	    [R_WANT] = {.u = r->want_extents, .absent = !r->lost || r->want_extents == 0},
	};

	region_nodes(r, nodes, sizeof(nodes));
	snprintf(owner, sizeof(owner), "%u:%u", r->uid, r->gid);
	region_state(r, state, sizeof(state));
	listing_row_more(l, v, region_extents_json, r);
}

static int cmd_regions_exec(struct cmd_ctx *ctx)
{
	const struct admin_regions *rep;
	struct json *j = NULL;
	struct listing *l;
	size_t i;
	int rc;

	rc = admin_regions(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	l = listing_open(ctx, &j, "regions", region_fields, R_FIELDS, false);
	for (i = 0; i < rep->n; i++)
		region_row(l, &rep->regions[i]);
	return listing_close(l, j, rep);
}

/* A region as region info shows it. */
static void region_print(struct cmd_ctx *ctx, const struct admin_region *r)
{
	char size[24], nodes[128], state[32];
	size_t i;

	if (ctx->json) {
		struct json *j = json_new(stdout);
		struct listing *l = listing_new(j, "region", region_fields, R_FIELDS, false);

		region_row(l, r);
		listing_end(l);
		json_finish(j);
		return;
	}
	units_fmt_size(r->size, size, sizeof(size));
	region_nodes(r, nodes, sizeof(nodes));
	printf("region %s (id %llu)\n", r->name, (unsigned long long)r->id);
	printf("  size        %s (%llu bytes)\n", size, (unsigned long long)r->size);
	printf("  class       %s%s\n", r->class_name, r->anonymous ? ", anonymous" : "");
	printf("  placement   %s, nodes %s\n", r->placement, nodes);
	printf("  owner       uid %u gid %u, mode %03o\n", r->uid, r->gid, r->mode);
	printf("  gva         0x%llx\n", (unsigned long long)r->gva);
	if (r->stripe)
		printf("  stripe      %llu bytes\n", (unsigned long long)r->stripe);
	printf("  leases      %u\n", r->leases);
	region_state(r, state, sizeof(state));
	printf("  state       %s\n", state);
	for (i = 0; i < r->n_extents; i++)
		printf("  extent %zu    node %u arena %u offset %llu length %llu\n", i,
		       r->extents[i].node, r->extents[i].arena,
		       (unsigned long long)r->extents[i].off,
		       (unsigned long long)r->extents[i].len);
}

/* A region a call returned (create, info), printed. */
static int region_print_result(struct cmd_ctx *ctx, int rc, const struct admin_region *r)
{
	if (rc != EXIT_OK)
		return rc;
	region_print(ctx, r);
	admin_free(r);
	return EXIT_OK;
}

static int cmd_region_create_exec(struct cmd_ctx *ctx)
{
	struct admin_region_spec spec = {
	    .name = ctx->argv[0], .class_name = "pinned", .placement = "any", .mode = 0600};
	const struct admin_region *r = NULL;
	uint64_t size = 0, stripe = 0;
	int i, rc;

	if (units_parse_size(ctx->argv[1], &size) < 0 || size == 0) {
		fprintf(stderr, "poolctl: '%s' is not a size (use e.g. 64M, 2G)\n", ctx->argv[1]);
		return EXIT_USAGE;
	}
	spec.size = size;
	for (i = 2; i < ctx->argc; i++) {
		const char *a = ctx->argv[i];
		char *end;

		if (strncmp(a, "class=", 6) == 0) {
			spec.class_name = a + 6;
		} else if (strncmp(a, "placement=", 10) == 0) {
			spec.placement = a + 10;
		} else if (strncmp(a, "mode=", 5) == 0) {
			unsigned long m = strtoul(a + 5, &end, 8);

			if (a[5] == '\0' || *end != '\0' || m > 0777) {
				fprintf(stderr, "poolctl: '%s' is not an octal mode\n", a + 5);
				return EXIT_USAGE;
			}
			spec.mode = (unsigned)m;
		} else if (strncmp(a, "stripe=", 7) == 0) {
			if (units_parse_size(a + 7, &stripe) < 0) {
				fprintf(stderr, "poolctl: '%s' is not a size\n", a + 7);
				return EXIT_USAGE;
			}
			spec.stripe = stripe;
		} else if (strcmp(a, "anonymous") == 0) {
			spec.anonymous = true;
		} else {
			fprintf(stderr, "poolctl: unknown region option '%s'\n", a);
			return EXIT_USAGE;
		}
	}
	rc = admin_region_create(ctx->admin, &spec, &r);
	return region_print_result(ctx, rc, r);
}

static int cmd_region_info_exec(struct cmd_ctx *ctx)
{
	const struct admin_region *r = NULL;
	int rc = admin_region_stat(ctx->admin, ctx->argv[0], &r);

	return region_print_result(ctx, rc, r);
}

static int cmd_region_destroy_exec(struct cmd_ctx *ctx)
{
	int rc = admin_region_destroy(ctx->admin, ctx->argv[0]);

	if (rc != EXIT_OK)
		return rc;
	if (!ctx->json)
		printf("region %s destroyed\n", ctx->argv[0]);
	else
		printf("{\"destroyed\":true}\n");
	return EXIT_OK;
}

const struct cmd_entry cmd_regions_entry = {
    "regions", "", 0, 0, DAEMON_NEEDED, cmd_regions_exec, "list the regions of the pool",
};

const struct cmd_entry cmd_region_create_entry = {
    "region create",
    "NAME SIZE [class=C] [placement=P] [mode=M] [stripe=S] [anonymous]",
    2,
    7,
    DAEMON_NEEDED,
    cmd_region_create_exec,
    "create a region",
};

const struct cmd_entry cmd_region_info_entry = {
    "region info",
    "NAME",
    1,
    1,
    DAEMON_NEEDED,
    cmd_region_info_exec,
    "show a region and where it lives",
};

const struct cmd_entry cmd_region_destroy_entry = {
    "region destroy", "NAME", 1, 1, DAEMON_NEEDED, cmd_region_destroy_exec, "destroy a region",
};

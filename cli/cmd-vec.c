/*
 * cli/cmd-vec.c - poolctl vec ls | info NAME | create NAME KIND METRIC DIM SIZE [options] |
 * drop NAME.
 *
 * An index is a region of one extent that its lender's poold can open as
 * one (daemon/vec/vec-serve.c): create is libpool's pool_vec_create() (the region,
 * and the index laid out in it); ls asks every such region.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"
#include "libpool/libpool.h"

static const char *const vec_kinds[] = {"", "flat", "hnsw"};
static const char *const vec_metrics[] = {"", "l2", "ip", "cosine"};

static const char *vec_name(const char *const *names, size_t n, uint32_t v)
{
	return v > 0 && v < n ? names[v] : "?";
}

static uint32_t vec_lookup(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (uint32_t)i;
	return 0;
}

enum {
	V_NAME,
	V_KIND,
	V_METRIC,
	V_DIM,
	V_M,
	V_EF_CONSTRUCTION,
	V_EF_SEARCH,
	V_COUNT,
	V_DELETED,
	V_CAPACITY,
	V_SIZE,
	V_USED,
	V_LEVELS,
	V_WRITER,
	V_NODE,
	V_FIELDS
};

static const struct field vec_fields[V_FIELDS] = {
    [V_NAME] = {"name", "NAME", FIELD_STR, IN_BOTH},
    [V_KIND] = {"kind", "KIND", FIELD_STR, IN_BOTH},
    [V_METRIC] = {"metric", "METRIC", FIELD_STR, IN_BOTH},
    [V_DIM] = {"dim", "DIM", FIELD_U64, IN_BOTH},
    [V_M] = {"m", NULL, FIELD_U64, IN_BOTH},
    [V_EF_CONSTRUCTION] = {"ef_construction", NULL, FIELD_U64, IN_BOTH},
    [V_EF_SEARCH] = {"ef_search", NULL, FIELD_U64, IN_BOTH},
    [V_COUNT] = {"count", "VECTORS", FIELD_U64, IN_BOTH},
    [V_DELETED] = {"deleted", "DELETED", FIELD_U64, IN_BOTH},
    [V_CAPACITY] = {"capacity", NULL, FIELD_U64, IN_BOTH},
    [V_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [V_USED] = {"used", "USED", FIELD_SIZE, IN_BOTH},
    [V_LEVELS] = {"levels", NULL, FIELD_U64, IN_BOTH},
    [V_WRITER] = {"writer_pid", NULL, FIELD_U64, IN_BOTH},
    [V_NODE] = {"node", "NODE", FIELD_U64, IN_BOTH},
};

/* Print indexes: names[i] with indexes[i]. */
static void vec_print(struct cmd_ctx *ctx, const char *const *names,
		      const struct admin_vec *const *indexes, size_t n)
{
	struct json *j = ctx->json ? json_new(stdout) : NULL;
	struct listing *l = listing_new(j, "indexes", vec_fields, V_FIELDS, false);
	size_t i;

	for (i = 0; i < n; i++) {
		const struct admin_vec *v = indexes[i];
		struct value row[V_FIELDS] = {
		    [V_NAME].s = names[i],
		    [V_KIND].s = vec_name(vec_kinds, ARRAY_SIZE(vec_kinds), v->kind),
		    [V_METRIC].s = vec_name(vec_metrics, ARRAY_SIZE(vec_metrics), v->metric),
		    [V_DIM].u = v->dim,
		    [V_M].u = v->m,
		    [V_EF_CONSTRUCTION].u = v->ef_construction,
		    [V_EF_SEARCH].u = v->ef_search,
		    [V_COUNT].u = v->count,
		    [V_DELETED].u = v->deleted,
		    [V_CAPACITY].u = v->capacity,
		    [V_SIZE].u = v->size,
		    [V_USED].u = v->used,
		    [V_LEVELS].u = v->levels,
		    [V_WRITER].u = v->writer_pid,
		    [V_NODE].u = v->node,
		};

		listing_row(l, row);
	}
	listing_end(l);
	if (j != NULL)
		json_finish(j);
}

static int cmd_vec_ls_exec(struct cmd_ctx *ctx)
{
	const struct admin_vec **indexes;
	const struct admin_regions *rep;
	const char **names;
	size_t i, n = 0;
	int rc;

	rc = admin_regions(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	indexes = calloc(rep->n + 1, sizeof(*indexes));
	names = calloc(rep->n + 1, sizeof(*names));
	if (indexes == NULL || names == NULL) {
		fprintf(stderr, "poolctl: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	/* Regions of one extent whose lender opens them as an index. */
	for (i = 0; i < rep->n; i++)
		if (rep->regions[i].n_extents == 1 &&
		    admin_vec_stat(ctx->admin, rep->regions[i].name, true, &indexes[n]) == EXIT_OK)
			names[n++] = rep->regions[i].name;
	vec_print(ctx, names, indexes, n);
out:
	for (i = 0; i < n; i++)
		admin_free(indexes[i]);
	free(indexes);
	free(names);
	admin_free(rep);
	return rc;
}

/* vec info and vec create: the index, from its lender. */
static int vec_info(struct cmd_ctx *ctx, const char *name)
{
	const struct admin_vec *v;
	int rc = admin_vec_stat(ctx->admin, name, false, &v);

	if (rc != EXIT_OK)
		return rc;
	vec_print(ctx, &name, &v, 1);
	admin_free(v);
	return EXIT_OK;
}

static int cmd_vec_info_exec(struct cmd_ctx *ctx)
{
	return vec_info(ctx, ctx->argv[0]);
}

/* A count option (name=N) into *v: 0, or a usage error. */
static int vec_count_opt(const char *a, const char *name, uint32_t *v)
{
	size_t len = strlen(name);
	unsigned long n;
	char *end;

	if (strncmp(a, name, len) != 0 || a[len] != '=')
		return 1;
	n = strtoul(a + len + 1, &end, 10);
	if (a[len + 1] == '\0' || *end != '\0' || n == 0 || n > 100000) {
		fprintf(stderr, "poolctl: '%s': %s is a count\n", a, name);
		return -1;
	}
	*v = (uint32_t)n;
	return 0;
}

/* The options of vec create (m=, efc=, efs=, placement=, class=, mode=) into opts. */
static int vec_create_opts(struct cmd_ctx *ctx, struct pool_vec_opts *opts)
{
	uint32_t m = 0, efc = 0, efs = 0;
	const char *placement = "any"; /* poolctl's default: wherever there is room */
	unsigned mode = 0600;
	char *end;
	int i, rc;

	for (i = 5; i < ctx->argc; i++) {
		const char *a = ctx->argv[i];

		if ((rc = vec_count_opt(a, "m", &m)) <= 0 ||
		    (rc = vec_count_opt(a, "efc", &efc)) <= 0 ||
		    (rc = vec_count_opt(a, "efs", &efs)) <= 0) {
			if (rc < 0)
				return EXIT_USAGE;
		} else if (strncmp(a, "placement=", 10) == 0) {
			placement = a + 10;
		} else if (strncmp(a, "class=", 6) == 0) {
			if ((rc = pool_vec_opts_set_class(opts, a + 6)) < 0)
				return cmd_pool_fail("vec create", rc);
		} else if (strncmp(a, "mode=", 5) == 0) {
			unsigned long v = strtoul(a + 5, &end, 8);

			if (a[5] == '\0' || *end != '\0' || v > 0777) {
				fprintf(stderr,
					"poolctl: '%s': mode is octal permission bits, such as "
					"0644\n",
					a);
				return EXIT_USAGE;
			}
			mode = (unsigned)v;
		} else {
			fprintf(stderr,
				"poolctl: unknown option '%s' (m=, efc=, efs=, placement=, "
				"class=, mode=)\n",
				a);
			return EXIT_USAGE;
		}
	}
	if ((rc = pool_vec_opts_set_hnsw(opts, m, efc, efs)) < 0 ||
	    (rc = pool_vec_opts_set_placement(opts, placement)) < 0 ||
	    (rc = pool_vec_opts_set_mode(opts, mode)) < 0)
		return cmd_pool_fail("vec create", rc);
	return EXIT_OK;
}

/* Made by pool_vec_create(), as any libpool client makes an index; then shown as vec info. */
static int cmd_vec_create_exec(struct cmd_ctx *ctx)
{
	const char *name = ctx->argv[0];
	struct pool_vec_opts *opts = NULL;
	struct pool_vec *vec;
	struct pool *pool;
	uint32_t kind, metric, dim;
	uint64_t size;
	char *end;
	int rc;

	kind = vec_lookup(vec_kinds, ARRAY_SIZE(vec_kinds), ctx->argv[1]);
	metric = vec_lookup(vec_metrics, ARRAY_SIZE(vec_metrics), ctx->argv[2]);
	dim = (uint32_t)strtoul(ctx->argv[3], &end, 10);
	if (kind == 0 || metric == 0 || *end != '\0' || dim == 0) {
		fprintf(stderr, "poolctl: vec create NAME flat|hnsw l2|ip|cosine DIM SIZE\n");
		return EXIT_USAGE;
	}
	if (units_parse_size(ctx->argv[4], &size) < 0 || size == 0) {
		fprintf(stderr, "poolctl: '%s' is not a size (use e.g. 64M, 2G)\n", ctx->argv[4]);
		return EXIT_USAGE;
	}
	if ((rc = pool_vec_opts_new(&opts)) < 0)
		return cmd_pool_fail("vec create", rc);
	if ((rc = vec_create_opts(ctx, opts)) != EXIT_OK ||
	    (rc = cmd_pool_open(ctx, &pool)) != EXIT_OK) {
		pool_vec_opts_free(opts);
		return rc;
	}
	rc = pool_vec_create(pool, name, kind, metric, dim, size, opts, 0, &vec);
	pool_vec_opts_free(opts);
	if (rc < 0) {
		rc = cmd_pool_fail("vec create", rc);
		pool_close(pool);
		return rc;
	}
	pool_vec_close(vec);
	pool_close(pool);
	return vec_info(ctx, name);
}

static int cmd_vec_drop_exec(struct cmd_ctx *ctx)
{
	const struct admin_vec *v;
	int rc = admin_vec_stat(ctx->admin, ctx->argv[0], false, &v);

	if (rc != EXIT_OK)
		return rc;
	admin_free(v);
	rc = admin_region_destroy(ctx->admin, ctx->argv[0]);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json)
		printf("{\"dropped\":true}\n");
	else
		printf("vector index %s dropped\n", ctx->argv[0]);
	return EXIT_OK;
}

const struct cmd_entry cmd_vec_ls_entry = {
    "vec ls",
    "",
    0,
    0,
    DAEMON_NEEDED,
    cmd_vec_ls_exec,
    "list the vector indexes: kind, metric, dimension, vectors, size, lender",
};
const struct cmd_entry cmd_vec_info_entry = {
    "vec info",
    "NAME",
    1,
    1,
    DAEMON_NEEDED,
    cmd_vec_info_exec,
    "what a vector index holds, from its lender",
};
const struct cmd_entry cmd_vec_create_entry = {
    "vec create",
    "NAME KIND METRIC DIM SIZE [OPT]",
    5,
    10,
    DAEMON_NEEDED,
    cmd_vec_create_exec,
    "an empty index (flat|hnsw, l2|ip|cosine; m= efc= efs= placement= class=) in a new region",
};
const struct cmd_entry cmd_vec_drop_entry = {
    "vec drop",
    "NAME",
    1,
    1,
    DAEMON_NEEDED,
    cmd_vec_drop_exec,
    "destroy a vector index and its region",
};

/*
 * cli/cmd-snap.c - poolctl snap put NAME FILE [options] | ls | info NAME | rm NAME |
 * get NAME FILE | copies | place NAME [NODE...]: snapshots, through libpool (a put
 * hashes the image here), and the node's shared copies of their images.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/poolctl.h"
#include "libpool/libpool.h"

/* Read a whole (small) file: the state blob. */
static int read_file(const char *path, void **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 65536, len = 0, n;
	char *buf = malloc(cap), *nb;

	while (f != NULL && buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap && (cap > POOL_SNAP_STATE_MAX ||
				   (nb = realloc(buf, cap *= 2)) == NULL || !(buf = nb)))
			break;
	}
	if (f == NULL || buf == NULL || ferror(f) || len > POOL_SNAP_STATE_MAX) {
		fprintf(stderr, "poolctl: state file '%s': %s\n", path,
			f == NULL ? strerror(errno) : "unreadable or over 64M");
		if (f != NULL)
			fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int snap_put_opt(struct pool_snap_opts *o, const char *arg)
{
	const char *v = strchr(arg, '=');
	uint64_t size;
	char *end;
	int rc = -EINVAL;

	if (v == NULL)
		goto bad;
	v++;
	if (strncmp(arg, "class=", 6) == 0) {
		rc = pool_snap_opts_set_class(o, v);
	} else if (strncmp(arg, "page=", 5) == 0) {
		if (units_parse_size(v, &size) == 0)
			rc = pool_snap_opts_set_page_size(o, size);
	} else if (strncmp(arg, "parent=", 7) == 0) {
		rc = pool_snap_opts_set_parent(o, v);
	} else if (strncmp(arg, "diff=", 5) == 0) {
		if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0)
			rc = pool_snap_opts_set_diff(o, strcmp(v, "yes") == 0);
	} else if (strncmp(arg, "mode=", 5) == 0) {
		unsigned long m = strtoul(v, &end, 8);

		if (*v != '\0' && *end == '\0')
			rc = pool_snap_opts_set_mode(o, (unsigned)m);
	} else if (strncmp(arg, "state=", 6) == 0) {
		void *state;
		size_t len;

		if (read_file(v, &state, &len) < 0)
			return -1;
		rc = pool_snap_opts_set_state(o, state, len);
		free(state);
	}
	if (rc == 0)
		return 0;
bad:
	fprintf(stderr,
		"poolctl: bad option '%s' (class=pinned|persistent|shared, page=4K|2M, "
		"parent=NAME, diff=yes|no, mode=OCTAL, state=FILE)\n",
		arg);
	return -1;
}

static void fmt_time(uint64_t ms, char *out, size_t len)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;

	strftime(out, len, "%F %T", localtime_r(&sec, &tm));
}

/* A snapshot's fields: snap ls's table, and its JSON in snap ls, info and put. */
enum {
	SN_NAME,
	SN_SIZE,
	SN_STORED,
	SN_ZERO,
	SN_CLASS,
	SN_STATE,
	SN_CREATED,
	SN_PAGE_SIZE,
	SN_PAGES,
	SN_ZERO_PAGES,
	SN_DISTINCT_PAGES,
	SN_NEW_PAGES,
	SN_STATE_BYTES,
	SN_PARENT,
	SN_CREATED_MS,
	SN_UID,
	SN_WS_PAGES,
	SN_WS_RUNS,
	SN_FIELDS
};

static const struct field snap_fields[SN_FIELDS] = {
    [SN_NAME] = {"name", "NAME", FIELD_STR, IN_BOTH},
    [SN_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [SN_STORED] = {"stored_bytes", "STORED", FIELD_SIZE, IN_BOTH},
    [SN_ZERO] = {NULL, "ZERO", FIELD_SIZE, IN_BOTH},
    [SN_CLASS] = {"class", "CLASS", FIELD_STR, IN_BOTH},
    [SN_STATE] = {"state", "STATE", FIELD_STR, IN_BOTH},
    [SN_CREATED] = {NULL, "CREATED", FIELD_STR, IN_BOTH},
    [SN_PAGE_SIZE] = {"page_size", NULL, FIELD_U64, IN_BOTH},
    [SN_PAGES] = {"pages", NULL, FIELD_U64, IN_BOTH},
    [SN_ZERO_PAGES] = {"zero_pages", NULL, FIELD_U64, IN_BOTH},
    [SN_DISTINCT_PAGES] = {"distinct_pages", NULL, FIELD_U64, IN_BOTH},
    [SN_NEW_PAGES] = {"new_pages", NULL, FIELD_U64, IN_BOTH},
    [SN_STATE_BYTES] = {"state_bytes", NULL, FIELD_U64, IN_BOTH},
    [SN_PARENT] = {"parent", NULL, FIELD_STR, IN_BOTH},
    [SN_CREATED_MS] = {"created_ms", NULL, FIELD_U64, IN_BOTH},
    [SN_UID] = {"uid", NULL, FIELD_U64, IN_BOTH},
    [SN_WS_PAGES] = {"working_set_pages", NULL, FIELD_U64, IN_BOTH},
    [SN_WS_RUNS] = {"working_set_runs", NULL, FIELD_U64, IN_BOTH},
};

/* Snapshot name (whose info is in) as a row of a listing. */
static void snap_row(struct listing *l, const char *name, const struct pool_snap_info *in)
{
	uint64_t ps = pool_snap_info_page_size(in);
	char created[32];
	const struct value v[SN_FIELDS] = {
	    [SN_NAME].s = name,
	    [SN_SIZE].u = pool_snap_info_size(in),
	    [SN_STORED].u = pool_snap_info_distinct_pages(in) * ps,
	    [SN_ZERO].u = pool_snap_info_zero_pages(in) * ps,
	    [SN_CLASS].s = pool_snap_info_class(in),
	    [SN_STATE].s = pool_snap_info_state(in),
	    [SN_CREATED].s = created,
	    [SN_PAGE_SIZE].u = ps,
	    [SN_PAGES].u = pool_snap_info_size(in) / ps,
	    [SN_ZERO_PAGES].u = pool_snap_info_zero_pages(in),
	    [SN_DISTINCT_PAGES].u = pool_snap_info_distinct_pages(in),
	    [SN_NEW_PAGES].u = pool_snap_info_new_pages(in),
	    [SN_STATE_BYTES].u = pool_snap_info_state_len(in),
	    [SN_PARENT].s = pool_snap_info_parent(in),
	    [SN_CREATED_MS].u = pool_snap_info_created_ms(in),
	    [SN_UID].u = pool_snap_info_uid(in),
	    [SN_WS_PAGES].u = pool_snap_info_ws_pages(in),
	    [SN_WS_RUNS].u = pool_snap_info_ws_runs(in),
	};

	fmt_time(pool_snap_info_created_ms(in), created, sizeof(created));
	listing_row(l, v);
}

/* In JSON, the array "snapshots" of one snapshot. */
static void snap_one_json(struct json *j, const char *name, const struct pool_snap_info *in)
{
	struct listing *l = listing_new(j, "snapshots", snap_fields, SN_FIELDS, false);

	snap_row(l, name, in);
	listing_end(l);
}

static int cmd_snap_put_exec(struct cmd_ctx *ctx)
{
	struct pool_snap_opts *o;
	struct pool_snap_info *info;
	struct pool *pool = NULL;
	int fd, i, rc = EXIT_USAGE;

	if (pool_snap_opts_new(&o) < 0)
		return EXIT_ERROR;
	for (i = 2; i < ctx->argc; i++)
		if (snap_put_opt(o, ctx->argv[i]) < 0)
			goto out;
	fd = open(ctx->argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "poolctl: %s: %s\n", ctx->argv[1], strerror(errno));
		rc = EXIT_ERROR;
		goto out;
	}
	rc = cmd_pool_open(ctx, &pool);
	if (rc == EXIT_OK && (rc = pool_snap_put_fd(pool, ctx->argv[0], fd, o)) < 0)
		rc = cmd_pool_fail("snap put", rc);
	close(fd);
	if (rc == EXIT_OK && pool_snap_stat(pool, ctx->argv[0], &info) == 0) {
		uint64_t ps = pool_snap_info_page_size(info);

		if (ctx->json) {
			struct json *j = json_new(stdout);

			snap_one_json(j, ctx->argv[0], info);
			json_finish(j);
		} else {
			printf("%s: %llu pages, %llu zero, %llu distinct, %llu new (%llu bytes "
			       "stored)\n",
			       ctx->argv[0], (unsigned long long)(pool_snap_info_size(info) / ps),
			       (unsigned long long)pool_snap_info_zero_pages(info),
			       (unsigned long long)pool_snap_info_distinct_pages(info),
			       (unsigned long long)pool_snap_info_new_pages(info),
			       (unsigned long long)(pool_snap_info_new_pages(info) * ps));
		}
		pool_snap_info_free(info);
	}
out:
	if (pool != NULL)
		pool_close(pool);
	pool_snap_opts_free(o);
	return rc;
}

static int cmd_snap_ls_exec(struct cmd_ctx *ctx)
{
	struct json *j = NULL;
	struct listing *l;
	struct pool *pool;
	char **names;
	size_t n, i;
	int rc;

	rc = cmd_pool_open(ctx, &pool);
	if (rc != EXIT_OK)
		return rc;
	rc = pool_snap_list(pool, &names, &n);
	if (rc < 0) {
		pool_close(pool);
		return cmd_pool_fail("snap ls", rc);
	}
	l = listing_open(ctx, &j, "snapshots", snap_fields, SN_FIELDS, false);
	for (i = 0; i < n; i++) {
		struct pool_snap_info *in;

		if (pool_snap_stat(pool, names[i], &in) < 0)
			continue; /* not readable by this caller, or just removed */
		snap_row(l, names[i], in);
		pool_snap_info_free(in);
	}
	rc = listing_close(l, j, NULL); /* (the table holds the names until it is printed) */
	free(names);
	pool_close(pool);
	return rc;
}

static int cmd_snap_info_exec(struct cmd_ctx *ctx)
{
	struct pool_snap_info *in;
	uint64_t ps, bytes[3] = {0}, pages[3] = {0};
	struct pool *pool;
	char created[32];
	int rc;

	rc = cmd_pool_open(ctx, &pool);
	if (rc != EXIT_OK)
		return rc;
	rc = pool_snap_stat(pool, ctx->argv[0], &in);
	if (rc < 0) {
		pool_close(pool);
		return cmd_pool_fail("snap info", rc);
	}
	pool_snap_store_bytes(pool, "pinned", &bytes[0], &pages[0]);
	pool_snap_store_bytes(pool, "persistent", &bytes[1], &pages[1]);
	pool_snap_store_bytes(pool, "shared", &bytes[2], &pages[2]);
	ps = pool_snap_info_page_size(in);
	if (ctx->json) {
		struct json *j = json_new(stdout);

		snap_one_json(j, ctx->argv[0], in);
		json_object(j, "store");
		json_u64(j, "pinned_bytes", bytes[0]);
		json_u64(j, "pinned_pages", pages[0]);
		json_u64(j, "persistent_bytes", bytes[1]);
		json_u64(j, "persistent_pages", pages[1]);
		json_u64(j, "shared_bytes", bytes[2]);
		json_u64(j, "shared_pages", pages[2]);
		json_end(j);
		json_finish(j);
	} else {
		fmt_time(pool_snap_info_created_ms(in), created, sizeof(created));
		printf("name:           %s\n", ctx->argv[0]);
		printf("state:          %s\n", pool_snap_info_state(in));
		printf("class:          %s\n", pool_snap_info_class(in));
		printf("logical bytes:  %llu\n", (unsigned long long)pool_snap_info_size(in));
		printf("page size:      %llu\n", (unsigned long long)ps);
		printf("pages:          %llu\n",
		       (unsigned long long)(pool_snap_info_size(in) / ps));
		printf("zero pages:     %llu (not stored)\n",
		       (unsigned long long)pool_snap_info_zero_pages(in));
		printf("distinct pages: %llu\n",
		       (unsigned long long)pool_snap_info_distinct_pages(in));
		printf("stored bytes:   %llu (its distinct pages, shared with other snapshots)\n",
		       (unsigned long long)(pool_snap_info_distinct_pages(in) * ps));
		printf("new pages:      %llu (stored by its put; the rest were in the store)\n",
		       (unsigned long long)pool_snap_info_new_pages(in));
		printf("state bytes:    %llu\n", (unsigned long long)pool_snap_info_state_len(in));
		printf("parent:         %s\n",
		       pool_snap_info_parent(in)[0] != '\0' ? pool_snap_info_parent(in) : "-");
		printf("created:        %s by uid %u\n", created, pool_snap_info_uid(in));
		printf("working set:    %llu pages from %llu restores\n",
		       (unsigned long long)pool_snap_info_ws_pages(in),
		       (unsigned long long)pool_snap_info_ws_runs(in));
		printf("store:          %llu bytes in %llu pages (pinned), %llu bytes in %llu "
		       "pages (persistent), %llu bytes in %llu pages (shared), all snapshots\n",
		       (unsigned long long)bytes[0], (unsigned long long)pages[0],
		       (unsigned long long)bytes[1], (unsigned long long)pages[1],
		       (unsigned long long)bytes[2], (unsigned long long)pages[2]);
	}
	pool_snap_info_free(in);
	pool_close(pool);
	return EXIT_OK;
}

static int cmd_snap_rm_exec(struct cmd_ctx *ctx)
{
	struct pool *pool;
	int rc;

	rc = cmd_pool_open(ctx, &pool);
	if (rc != EXIT_OK)
		return rc;
	rc = pool_snap_remove(pool, ctx->argv[0]);
	pool_close(pool);
	return rc < 0 ? cmd_pool_fail("snap rm", rc) : EXIT_OK;
}

/* The image into FILE, in pieces of 4 MiB (a check that a restore is bit-exact). */
static int cmd_snap_get_exec(struct cmd_ctx *ctx)
{
	size_t chunk = 4u << 20;
	struct pool_snap *s = NULL;
	struct pool *pool;
	uint64_t off, size;
	char *buf = malloc(chunk);
	int fd = -1, rc;

	rc = buf != NULL ? cmd_pool_open(ctx, &pool) : EXIT_ERROR;
	if (rc != EXIT_OK) {
		free(buf);
		return rc;
	}
	rc = pool_snap_open(pool, ctx->argv[0], &s);
	if (rc < 0) {
		rc = cmd_pool_fail("snap get", rc);
		goto out;
	}
	fd = open(ctx->argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "poolctl: %s: %s\n", ctx->argv[1], strerror(errno));
		rc = EXIT_ERROR;
		goto out;
	}
	size = pool_snap_size(s);
	for (off = 0; off < size && rc == 0; off += chunk) {
		size_t n = (size_t)MIN(chunk, size - off);

		rc = pool_snap_read(s, off, buf, n);
		if (rc == 0 && write(fd, buf, n) != (ssize_t)n)
			rc = -errno;
	}
	if (rc < 0)
		rc = cmd_pool_fail("snap get", rc);
out:
	if (fd >= 0)
		close(fd);
	pool_snap_close(s);
	pool_close(pool);
	free(buf);
	return rc;
}

/* A node's copy of a snapshot image; its id only when poold told it (admins and its maker). */
enum { C_NAME, C_ID, C_SIZE, C_STATE, C_CLONES, C_UID, C_WAITERS, C_FIELDS };

static const struct field copy_fields[C_FIELDS] = {
    [C_NAME] = {"name", "NAME", FIELD_STR, IN_BOTH},
    [C_ID] = {"id", "ID", FIELD_ID, IN_BOTH},
    [C_SIZE] = {"size", "SIZE", FIELD_SIZE, IN_BOTH},
    [C_STATE] = {"state", "STATE", FIELD_STR, IN_BOTH},
    [C_CLONES] = {"clones", "CLONES", FIELD_U64, IN_BOTH},
    [C_UID] = {"uid", "UID", FIELD_U64, IN_BOTH},
    [C_WAITERS] = {"waiters", "WAITING", FIELD_U64, IN_BOTH},
};

/* poolctl snap copies: the shared copies of snapshot images the local poold keeps. */
static int cmd_snap_copies(struct cmd_ctx *ctx)
{
	const struct admin_copies *rep;
	struct json *j = NULL;
	struct listing *l;
	size_t i;
	int rc;

	rc = admin_snap_copies(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	l = listing_open(ctx, &j, "copies", copy_fields, C_FIELDS, false);
	for (i = 0; i < rep->n; i++) {
		const struct admin_copy *e = &rep->copies[i];
		struct value v[C_FIELDS] = {
		    [C_NAME].s = e->name,	[C_ID] = {.u = e->id, .absent = !e->has_id},
		    [C_SIZE].u = e->size,	[C_STATE].s = e->state,
		    [C_CLONES].u = e->clones,	[C_UID].u = e->uid,
		    [C_WAITERS].u = e->waiters,
		};

		listing_row(l, v);
	}
	return listing_close(l, j, rep);
}

/* One node's result of a place, as a line or as JSON. */
static void snap_place_print(struct json *j, uint32_t node, int code, const char *msg)
{
	if (j != NULL) {
		json_object(j, NULL);
		json_u64(j, "node", node);
		json_str(j, "status", code < 0 ? "error" : "placed");
		if (code < 0)
			json_str(j, "message", msg);
		json_end(j);
	} else if (code < 0) {
		printf("node %u: error: %s\n", node, msg);
	} else {
		printf("node %u: placed\n", node);
	}
}

/*
 * snap place NAME: this node's copy, through libpool, as a clone would
 * make it. It is also what poold runs on each node for the form with
 * nodes, and its first line on stderr is then the node's error.
 */
static int snap_place_here(struct cmd_ctx *ctx)
{
	struct pool_status *st = NULL;
	struct pool_snap *s = NULL;
	struct pool *pool;
	struct json *j = NULL;
	int rc;

	rc = cmd_pool_open(ctx, &pool);
	if (rc != EXIT_OK)
		return rc;
	rc = pool_snap_open(pool, ctx->argv[0], &s);
	if (rc == 0)
		rc = pool_snap_place(s);
	if (rc == 0)
		rc = pool_status(pool, &st);
	if (rc < 0) {
		rc = cmd_pool_fail("snap place", rc);
		goto out;
	}
	if (ctx->json) {
		j = json_new(stdout);
		json_array(j, "results");
	}
	snap_place_print(j, pool_status_node_id(st), 0, NULL);
	if (j != NULL)
		json_finish(j);
	rc = EXIT_OK;
out:
	pool_status_free(st);
	pool_snap_close(s);
	pool_close(pool);
	return rc;
}

/* Helpers may fill for minutes (poold stops one at 5): wait for the nodes past that. */
#define SNAP_PLACE_TIMEOUT_MS (6 * 60 * 1000)

/* snap place NAME NODE...: the coordinator has each node's poold place it. */
static int snap_place_nodes(struct cmd_ctx *ctx)
{
	const struct admin_places *rep;
	uint32_t nodes[64];
	struct json *j = NULL;
	bool failed = false;
	size_t i;
	int rc;

	for (i = 0; i + 1 < (size_t)ctx->argc; i++)
		if (cmd_node_arg(ctx->argv[i + 1], &nodes[i]) < 0)
			return EXIT_USAGE;
	rc = cmd_connect(ctx, SNAP_PLACE_TIMEOUT_MS);
	if (rc == EXIT_OK)
		rc = admin_snap_place(ctx->admin, ctx->argv[0], nodes, i, &rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		j = json_new(stdout);
		json_array(j, "results");
	}
	for (i = 0; i < rep->n; i++) {
		const struct admin_placed *r = &rep->results[i];

		snap_place_print(j, r->node, r->code, r->message);
		failed |= r->code < 0;
	}
	if (j != NULL)
		json_finish(j);
	admin_free(rep);
	return failed ? EXIT_ERROR : EXIT_OK;
}

/* poolctl snap place NAME [NODE...]: make the node copy ahead of the first clone. */
static int cmd_snap_place(struct cmd_ctx *ctx)
{
	return ctx->argc == 1 ? snap_place_here(ctx) : snap_place_nodes(ctx);
}

const struct cmd_entry cmd_snap_place_entry = {
    "snap place",
    "NAME [NODE...]",
    1,
    65,
    DAEMON_NONE,
    cmd_snap_place,
    "make a snapshot's node copy now, here or on the nodes named (admin)",
};

const struct cmd_entry cmd_snap_copies_entry = {
    "snap copies",
    "",
    0,
    0,
    DAEMON_NEEDED,
    cmd_snap_copies,
    "the shared copies of snapshot images this node keeps for clones",
};

/* After a coordinator restart: the snapshots' pages counted again. */
static int cmd_snap_gc_exec(struct cmd_ctx *ctx)
{
	struct pool *pool;
	uint64_t freed;
	int rc;

	rc = cmd_pool_open(ctx, &pool);
	if (rc != EXIT_OK)
		return rc;
	rc = pool_snap_recount(pool, &freed);
	pool_close(pool);
	if (rc < 0)
		return cmd_pool_fail("snap gc", rc);
	printf("references counted again: %llu page(s) nobody holds freed\n",
	       (unsigned long long)freed);
	return EXIT_OK;
}

const struct cmd_entry cmd_snap_gc_entry = {
    "snap gc",
    "",
    0,
    0,
    DAEMON_NONE,
    cmd_snap_gc_exec,
    "after a coordinator restart: count snapshot pages again (admin)",
};

const struct cmd_entry cmd_snap_put_entry = {
    "snap put",
    "NAME FILE [opts]",
    2,
    7,
    DAEMON_NONE,
    cmd_snap_put_exec,
    "store a memory image (class= page= parent= diff= mode= state=FILE)",
};
const struct cmd_entry cmd_snap_ls_entry = {
    "snap ls", "", 0, 0, DAEMON_NONE, cmd_snap_ls_exec, "the snapshots this caller can read",
};
const struct cmd_entry cmd_snap_info_entry = {
    "snap info",
    "NAME",
    1,
    1,
    DAEMON_NONE,
    cmd_snap_info_exec,
    "a snapshot: logical vs stored bytes, pages, working set",
};
const struct cmd_entry cmd_snap_rm_entry = {
    "snap rm",
    "NAME",
    1,
    1,
    DAEMON_NONE,
    cmd_snap_rm_exec,
    "delete a snapshot (pages other snapshots use stay)",
};
const struct cmd_entry cmd_snap_get_entry = {
    "snap get",
    "NAME FILE",
    2,
    2,
    DAEMON_NONE,
    cmd_snap_get_exec,
    "write a snapshot's image to FILE",
};

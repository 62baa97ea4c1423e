/*
 * cli/poolctl.h - poolctl internals: the command table and output helpers.
 */
#ifndef POOLCTL_H
#define POOLCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/admin.h"
#include "common/common.h"

struct cmd_ctx {
	const char *socket;
	bool json;
	struct admin *admin; /* connected when the command needs poold */
	int argc;	     /* arguments after the command words */
	char **argv;
};

struct cmd_entry {
	const char *name; /* one or two words, e.g. "config show" */
	const char *args; /* usage of the arguments */
	int min_args, max_args;
	enum { DAEMON_NONE, DAEMON_NEEDED, DAEMON_OPTIONAL } daemon;
	int (*exec)(struct cmd_ctx *ctx);
	const char *help;
};

extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_version_entry;
extern const struct cmd_entry cmd_config_show_entry;
extern const struct cmd_entry cmd_config_check_entry;
extern const struct cmd_entry cmd_reload_entry;
extern const struct cmd_entry cmd_nodes_entry;
extern const struct cmd_entry cmd_fabric_entry;
extern const struct cmd_entry cmd_fabric_probe_entry;
extern const struct cmd_entry cmd_regions_entry;
extern const struct cmd_entry cmd_region_create_entry;
extern const struct cmd_entry cmd_region_info_entry;
extern const struct cmd_entry cmd_region_destroy_entry;
extern const struct cmd_entry cmd_lend_entry;
extern const struct cmd_entry cmd_reclaim_entry;
extern const struct cmd_entry cmd_drain_entry;
extern const struct cmd_entry cmd_ledger_entry;
extern const struct cmd_entry cmd_kv_ls_entry;
extern const struct cmd_entry cmd_kv_stats_entry;
extern const struct cmd_entry cmd_kv_create_entry;
extern const struct cmd_entry cmd_kv_drop_entry;
extern const struct cmd_entry cmd_kv_flush_entry;
extern const struct cmd_entry cmd_vec_ls_entry;
extern const struct cmd_entry cmd_vec_info_entry;
extern const struct cmd_entry cmd_vec_create_entry;
extern const struct cmd_entry cmd_vec_drop_entry;
extern const struct cmd_entry cmd_events_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_snap_put_entry;
extern const struct cmd_entry cmd_snap_ls_entry;
extern const struct cmd_entry cmd_snap_info_entry;
extern const struct cmd_entry cmd_snap_rm_entry;
extern const struct cmd_entry cmd_snap_get_entry;
extern const struct cmd_entry cmd_snap_gc_entry;
extern const struct cmd_entry cmd_snap_copies_entry;
extern const struct cmd_entry cmd_snap_serve_entry;
extern const struct cmd_entry cmd_snap_save_entry;
extern const struct cmd_entry cmd_snap_place_entry;
extern const struct cmd_entry cmd_completion_entry;

/* poolctl.c */
struct pool;
int cmd_pool_open(struct cmd_ctx *ctx, struct pool **ret);
int cmd_pool_fail(const char *what, int rc);
int cmd_connect(struct cmd_ctx *ctx, int timeout_ms);
int cmd_node_arg(const char *arg, uint32_t *ret);
/* The command table, for cmd-completion.c. */
const struct cmd_entry *const *cmd_entries(size_t *ret_n);

/* cmd-snap-serve.c */
int cmd_snap_serve(struct cmd_ctx *ctx);

/* out.c: JSON writer */
struct json;
struct json *json_new(FILE *f);
void json_finish(struct json *j);
void json_object(struct json *j, const char *key);
void json_array(struct json *j, const char *key);
void json_end(struct json *j);
void json_str(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
void json_bool(struct json *j, const char *key, bool value);

/* out.c: aligned text tables */
struct table;
struct table *table_new(int ncols, const char *const *headers);
void table_row(struct table *t, ...);
void table_row_v(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *f);
void table_free(struct table *t);

/*
 * listing.c: rows whose fields are described once for the table and for
 * --json. key: the field's name in JSON (NULL: the table only); head: its
 * column (NULL: JSON only); in: which of a command's two tables (its full
 * and its brief one, as kv stats and kv ls) show it.
 */
enum field_kind {
	FIELD_STR,  /* text (NULL: "" in JSON, "-" in the table) */
	FIELD_U64,  /* a number */
	FIELD_I64,  /* a signed number */
	FIELD_SIZE, /* bytes: 67108864 in JSON, 64M in the table */
	FIELD_MODE, /* permission bits: 416 in JSON, 640 in the table */
	FIELD_ID,   /* an identity: a number in JSON, 16 hex digits in the table */
	FIELD_BOOL,
};

enum field_in {
	IN_BOTH,  /* (and in commands with one table) */
	IN_FULL,  /* not in the brief table */
	IN_BRIEF, /* in the brief table only */
};

struct field {
	const char *key;
	const char *head;
	enum field_kind kind;
	enum field_in in;
};

struct value {
	union {
		const char *s;
		uint64_t u;
		int64_t i;
		bool b;
	};
	bool absent; /* not in the JSON; "-" in the table */
};

struct listing;
struct listing *listing_new(struct json *j, const char *name, const struct field *fields,
			    size_t nfields, bool brief);
void listing_row(struct listing *l, const struct value *values);
void listing_row_more(struct listing *l, const struct value *values,
		      void (*more)(struct json *j, const void *arg), const void *arg);
void listing_end(struct listing *l);
struct listing *listing_open(const struct cmd_ctx *ctx, struct json **ret_j, const char *name,
			     const struct field *fields, size_t nfields, bool brief);
int listing_close(struct listing *l, struct json *j, const void *rep);
void listing_record(struct json *j, const struct field *fields, const struct value *values,
		    size_t nfields);

#endif

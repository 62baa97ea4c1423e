/*
 * cli/listing.c - a command's rows described once, printed as a table or
 * as JSON.
 *
 * A command lists its fields in one array (struct field): the key each
 * has in --json, the header it has in the table, and the kind of its
 * value, which says how each output writes it (a size is a number of
 * bytes in JSON and "64M" in the table). Each row is an array of values
 * in the same order, so a field is named once, not once per output.
 * A record is one such row on its own: an object's members in JSON, a
 * line per field in the text.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cli/poolctl.h"

#define LISTING_MAX_FIELDS 32

struct listing {
	struct json *j;	 /* --json: the array rows go to; else NULL */
	struct table *t; /* else the table */
	const struct field *fields;
	size_t nfields;
	bool brief;
};

/* Whether the table shows a field. */
static bool listing_shows(const struct listing *l, const struct field *f)
{
	return f->head != NULL && (f->in == IN_BOTH || (f->in == IN_BRIEF) == l->brief);
}

/*
 * A listing of rows named name: into j as an array (j NULL: a table on
 * stdout). brief: the brief table, of the fields IN_BOTH and IN_BRIEF; else
 * those IN_BOTH and IN_FULL. JSON has every field with a key.
 */
struct listing *listing_new(struct json *j, const char *name, const struct field *fields,
			    size_t nfields, bool brief)
{
	struct listing *l = calloc(1, sizeof(*l));
	const char *heads[LISTING_MAX_FIELDS];
	int n = 0;
	size_t i;

	if (l == NULL || nfields > LISTING_MAX_FIELDS) {
		free(l);
		return NULL;
	}
	l->j = j;
	l->fields = fields;
	l->nfields = nfields;
	l->brief = brief;
	if (j != NULL) {
		json_array(j, name);
		return l;
	}
	for (i = 0; i < nfields; i++)
		if (listing_shows(l, &fields[i]))
			heads[n++] = fields[i].head;
	if ((l->t = table_new(n, heads)) == NULL) {
		free(l);
		return NULL;
	}
	return l;
}

static void listing_json(struct json *j, const struct field *f, const struct value *v)
{
	switch (f->kind) {
	case FIELD_STR:
		json_str(j, f->key, v->s != NULL ? v->s : "");
		break;
	case FIELD_I64:
		json_i64(j, f->key, v->i);
		break;
	case FIELD_BOOL:
		json_bool(j, f->key, v->b);
		break;
	default: /* numbers, sizes, modes, identities */
		json_u64(j, f->key, v->u);
		break;
	}
}

/* A value as the table shows it, in buf (or the string itself). */
static const char *listing_text(const struct field *f, const struct value *v, char *buf, size_t len)
{
	if (v->absent)
		return "-";
	switch (f->kind) {
	case FIELD_STR:
		return v->s != NULL ? v->s : "-";
	case FIELD_SIZE:
		units_fmt_size(v->u, buf, len);
		return buf;
	case FIELD_MODE:
		snprintf(buf, len, "%03" PRIo64, v->u);
		return buf;
	case FIELD_ID:
		snprintf(buf, len, "%016" PRIx64, v->u);
		return buf;
	case FIELD_I64:
		snprintf(buf, len, "%" PRId64, v->i);
		return buf;
	case FIELD_BOOL:
		return v->b ? "yes" : "no";
	default:
		snprintf(buf, len, "%" PRIu64, v->u);
		return buf;
	}
}

/*
 * One row: values[i] is fields[i]'s. In JSON, more (if not NULL) adds to
 * the row's object what a table has no room for (a region's extents).
 */
void listing_row_more(struct listing *l, const struct value *values,
		      void (*more)(struct json *j, const void *arg), const void *arg)
{
	char bufs[LISTING_MAX_FIELDS][32];
	const char *cells[LISTING_MAX_FIELDS];
	size_t i;
	int n = 0;

	if (l == NULL)
		return;
	if (l->j != NULL) {
		json_object(l->j, NULL);
		for (i = 0; i < l->nfields; i++)
			if (l->fields[i].key != NULL && !values[i].absent)
				listing_json(l->j, &l->fields[i], &values[i]);
		if (more != NULL)
			more(l->j, arg);
		json_end(l->j);
		return;
	}
	for (i = 0; i < l->nfields; i++)
		if (listing_shows(l, &l->fields[i]))
			cells[n++] =
			    listing_text(&l->fields[i], &values[i], bufs[i], sizeof(bufs[i]));
	table_row_v(l->t, cells);
}

void listing_row(struct listing *l, const struct value *values)
{
	listing_row_more(l, values, NULL, NULL);
}

/* The end of the rows: the table printed, or the JSON array closed. */
void listing_end(struct listing *l)
{
	if (l == NULL)
		return;
	if (l->j != NULL) {
		json_end(l->j);
	} else {
		table_print(l->t, stdout);
		table_free(l->t);
	}
	free(l);
}

/*
 * One record: its fields as members of j's open object (j NULL: a line
 * "  head  value" each on stdout). A field without a value (absent, or a
 * NULL string) has no line.
 */
void listing_record(struct json *j, const struct field *fields, const struct value *values,
		    size_t nfields)
{
	char buf[32];
	size_t i;

	for (i = 0; i < nfields; i++) {
		const struct field *f = &fields[i];

		if (j != NULL && f->key != NULL && !values[i].absent)
			listing_json(j, f, &values[i]);
		else if (j == NULL && f->head != NULL && !values[i].absent &&
			 !(f->kind == FIELD_STR && values[i].s == NULL))
			printf("  %-12s%s\n", f->head,
			       listing_text(f, &values[i], buf, sizeof(buf)));
	}
}

/*
 * A command's output that is one listing, as --json asks: *ret_j is the
 * JSON document (NULL without --json) for the caller's other members, and
 * the listing the array name in it, or the table.
 */
struct listing *listing_open(const struct cmd_ctx *ctx, struct json **ret_j, const char *name,
			     const struct field *fields, size_t nfields, bool brief)
{
	*ret_j = ctx->json ? json_new(stdout) : NULL;
	return listing_new(*ret_j, name, fields, nfields, brief);
}

/* The end of a command's listing: printed, the JSON ended, rep (admin's reply, or NULL) freed. */
int listing_close(struct listing *l, struct json *j, const void *rep)
{
	listing_end(l);
	if (j != NULL)
		json_finish(j);
	admin_free(rep);
	return EXIT_OK;
}

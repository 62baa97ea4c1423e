/*
 * cli/out.c - output helpers: a streaming JSON writer for --json, and text
 * tables whose columns are sized to their widest cell.
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/poolctl.h"

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
	char close[JSON_MAX_DEPTH];
};

static void json_escape(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_key(struct json *j, const char *key)
{
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->f);
		j->first[j->depth] = false;
	}
	if (key != NULL) {
		json_escape(j->f, key);
		fputc(':', j->f);
	}
}

static void json_open(struct json *j, const char *key, char open, char close)
{
	json_key(j, key);
	fputc(open, j->f);
	if (j->depth + 1 >= JSON_MAX_DEPTH)
		abort();
	j->depth++;
	j->first[j->depth] = true;
	j->close[j->depth] = close;
}

/* Start a JSON document: an object that json_finish() closes. */
struct json *json_new(FILE *f)
{
	struct json *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->f = f;
	json_open(j, NULL, '{', '}');
	return j;
}

/* Close every open container and free the writer. */
void json_finish(struct json *j)
{
	while (j->depth > 0)
		json_end(j);
	fputc('\n', j->f);
	free(j);
}

/* Open an object; key is NULL inside arrays. */
void json_object(struct json *j, const char *key)
{
	json_open(j, key, '{', '}');
}

/* Open an array; key is NULL inside arrays. */
void json_array(struct json *j, const char *key)
{
	json_open(j, key, '[', ']');
}

/* Close the innermost object or array. */
void json_end(struct json *j)
{
	fputc(j->close[j->depth], j->f);
	j->depth--;
}

/* A string member. */
void json_str(struct json *j, const char *key, const char *value)
{
	json_key(j, key);
	json_escape(j->f, value ? value : "");
}

/* An unsigned number member. */
void json_u64(struct json *j, const char *key, uint64_t value)
{
	json_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)value);
}

/* A signed number member. */
void json_i64(struct json *j, const char *key, int64_t value)
{
	json_key(j, key);
	fprintf(j->f, "%lld", (long long)value);
}

/* A boolean member. */
void json_bool(struct json *j, const char *key, bool value)
{
	json_key(j, key);
	fputs(value ? "true" : "false", j->f);
}

#define TABLE_MAX_COLS 72

struct table {
	int ncols;
	size_t nrows, cap;
	char **cells; /* row-major; row 0 is the header */
};

/* A table with the given column headers. */
struct table *table_new(int ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));
	int i;

	if (t == NULL)
		return NULL;
	t->ncols = ncols;
	t->cells = calloc((size_t)ncols, sizeof(char *));
	if (t->cells == NULL) {
		free(t);
		return NULL;
	}
	t->cap = t->nrows = 1;
	for (i = 0; i < ncols; i++)
		t->cells[i] = strdup(headers[i]);
	return t;
}

/* Append a row from an array of ncols strings. */
void table_row_v(struct table *t, const char *const *cells)
{
	int i;

	if (t->nrows == t->cap) {
		char **grown = realloc(t->cells, t->cap * 2 * (size_t)t->ncols * sizeof(char *));

		if (grown == NULL)
			return;
		t->cells = grown;
		t->cap *= 2;
	}
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * (size_t)t->ncols + (size_t)i] =
		    strdup(cells[i] ? cells[i] : "");
	t->nrows++;
}

/* Append a row of ncols strings. */
void table_row(struct table *t, ...)
{
	const char *cells[TABLE_MAX_COLS];
	va_list ap;
	int i;

	va_start(ap, t);
	for (i = 0; i < t->ncols && i < TABLE_MAX_COLS; i++)
		cells[i] = va_arg(ap, const char *);
	va_end(ap);
	table_row_v(t, cells);
}

/* Print the table with columns padded to their widest cell. */
void table_print(struct table *t, FILE *f)
{
	size_t r, width[TABLE_MAX_COLS] = {0};
	int c;

	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols && c < TABLE_MAX_COLS; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
			size_t len = s ? strlen(s) : 0;

			width[c] = MAX(width[c], len);
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];

			if (c == t->ncols - 1)
				fprintf(f, "%s\n", s ? s : "");
			else
				fprintf(f, "%-*s  ", (int)width[MIN(c, TABLE_MAX_COLS - 1)],
					s ? s : "");
		}
	}
}

/* Free a table. */
void table_free(struct table *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

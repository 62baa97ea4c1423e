/*
 * tests/fuzz/fuzz_resp.c - libFuzzer target: a byte stream as the RESP
 * endpoint would read it (arrays of bulk strings, inline commands), in two
 * pieces (a command split anywhere; the rest of a big argument put straight
 * into it), parsed into commands until it errs or needs more; and the keys
 * the endpoint's prefetch peeks at in it, each within the bytes given.
 * Every other big argument goes to a place of the owner's, exactly as long
 * as it (so that a byte past it is a sanitizer's report), given back once,
 * and every third command with one is kept (resp_parser_keep()).
 *
 * And an oracle for the parser's decisions, not only its crashes: the same
 * bytes, under small limits that inputs reach, parsed all in one piece
 * (where whole commands take the fast path) and a byte at a time (the path
 * that reads piece by piece) must give the same commands, argument for
 * argument, and end the same way, with the same error. (A header line too
 * long is "too big ... count string" while its CRLF has not come and
 * "invalid ... length" once it has, as in Redis; a client that did not
 * AUTH yet hears "unauthenticated" for either: those count as one.)
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "daemon/resp/resp-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The owner's places: one at most, as the endpoint has. */
struct owner {
	char *place;
	unsigned asked, kept;
};

static char *place(void *arg, const struct resp_parser *p, size_t len)
{
	struct owner *o = arg;

	if (o->place != NULL || p->have >= p->nargs)
		__builtin_trap();
	if (o->asked++ % 2 == 1)
		return NULL;
	o->place = malloc(len ? len : 1);
	return o->place;
}

static void unplace(void *arg, const struct resp_parser *p)
{
	struct owner *o = arg;

	if (o->place == NULL || p->argv[p->placed] != o->place)
		__builtin_trap();
	free(o->place);
	o->place = NULL;
}

/* Parse what in holds; 0 while the stream is well-formed so far. */
static int feed(struct resp_parser *p, struct evbuffer *in, struct owner *o)
{
	const char *err;
	long i;
	int rc;

	while ((rc = resp_parse(p, in, &err)) == 1) {
		/* A whole command: all its arguments, each as long as it says, NUL-terminated. */
		if (p->nargs < 1 || p->have != p->nargs)
			__builtin_trap();
		if (p->placed >= 0 && o->kept++ % 3 == 0 && resp_parser_keep(p) < 0)
			__builtin_trap();
		for (i = 0; i < p->nargs; i++)
			if (i != p->placed && p->argv[i][p->argl[i]] != '\0')
				__builtin_trap();
		resp_parser_reset(p);
		if (o->place != NULL)
			__builtin_trap(); /* the place was not given back */
	}
	return rc < 0 ? -1 : 0;
}

/* resp_peek_keys() reads nothing past the bytes it is given, and says so. */
static void peek(const uint8_t *data, size_t size)
{
	const char *keys[64], *buf = (const char *)data;
	size_t klens[64], n, i;

	n = resp_peek_keys(buf, size, keys, klens, 64);
	if (n > 64)
		__builtin_trap();
	for (i = 0; i < n; i++)
		if (keys[i] < buf || klens[i] > size || (size_t)(keys[i] - buf) > size - klens[i])
			__builtin_trap();
}

/* What parsing gave: each command's arguments, length-prefixed, then how it ended. */
struct transcript {
	uint8_t *buf;
	size_t len, cap;
};

static void note(struct transcript *t, const void *data, size_t len)
{
	if (t->len + len > t->cap) {
		t->cap = 2 * (t->len + len) + 256;
		if ((t->buf = realloc(t->buf, t->cap)) == NULL)
			abort();
	}
	memcpy(t->buf + t->len, data, len);
	t->len += len;
}

/* An error as the oracle compares it: the kinds one header line's may differ by, as one. */
static const char *error_kind(const char *err)
{
	if (strstr(err, "multibulk length") != NULL ||
	    strcmp(err, "too big mbulk count string") == 0)
		return "multibulk length";
	if (strstr(err, "bulk length") != NULL || strcmp(err, "too big bulk count string") == 0)
		return "bulk length";
	return err;
}

/* Take every command in; false once the parser erred (noted with its error). */
static bool take(struct resp_parser *p, struct evbuffer *in, struct transcript *t)
{
	const char *err;
	long i;
	int rc;

	while ((rc = resp_parse(p, in, &err)) == 1) {
		note(t, &p->nargs, sizeof(p->nargs));
		for (i = 0; i < p->nargs; i++) {
			note(t, &p->argl[i], sizeof(p->argl[i]));
			note(t, p->argv[i], p->argl[i]);
		}
		resp_parser_reset(p);
	}
	if (rc < 0) {
		err = error_kind(err);
		note(t, err, strlen(err) + 1);
	}
	return rc == 0;
}

static void transcribe(const uint8_t *data, size_t size, bool bytewise, bool unauth,
		       struct transcript *t)
{
	struct evbuffer *in = evbuffer_new();
	struct resp_parser p;
	size_t i;

	if (in == NULL)
		abort();
	resp_parser_init(&p, 6, 24, 160, unauth);
	if (!bytewise) {
		evbuffer_add(in, data, size);
		take(&p, in, t);
	}
	for (i = 0; bytewise && i < size; i++) {
		evbuffer_add(in, data + i, 1);
		if (!take(&p, in, t))
			break;
	}
	resp_parser_free(&p);
	evbuffer_free(in);
}

static void differential(const uint8_t *data, size_t size, bool unauth)
{
	struct transcript whole = {NULL, 0, 0}, bytes = {NULL, 0, 0};

	if (size > 4096)
		return; /* (a byte at a time: quadratic in the worst case) */
	transcribe(data, size, false, unauth, &whole);
	transcribe(data, size, true, unauth, &bytes);
	if (whole.len != bytes.len ||
	    (whole.len > 0 && memcmp(whole.buf, bytes.buf, whole.len) != 0))
		__builtin_trap();
	free(whole.buf);
	free(bytes.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	struct owner o = {NULL, 0, 0};
	const struct resp_placer placer = {place, unplace, &o};
	struct resp_parser p;
	size_t cut = size ? data[0] % (size + 1) : 0;
	bool unauth;

	peek(data, size);
	if (in == NULL)
		return 0;
	/* Odd first bytes: the limits of a client that did not AUTH yet. */
	unauth = size > 0 && (data[0] & 1);
	differential(data, size, unauth);
	resp_parser_init(&p, unauth ? 10 : RESP_MAX_ARGS, unauth ? 16384 : 1 << 16, 1 << 20,
			 unauth);
	p.placer = &placer;
	evbuffer_add(in, data, cut);
	if (feed(&p, in, &o) == 0) {
		const uint8_t *rest = data + cut;
		size_t left = size - cut, room, n;
		char *dst;

		/* The rest of a big argument goes straight into it, as the endpoint reads it. */
		while (left > 0 && evbuffer_get_length(in) == 0 &&
		       (dst = resp_parser_room(&p, &room)) != NULL) {
			n = room < left ? room : left;
			memcpy(dst, rest, n);
			resp_parser_took(&p, n);
			rest += n;
			left -= n;
			if (feed(&p, in, &o) < 0)
				goto out;
		}
		evbuffer_add(in, rest, left);
		feed(&p, in, &o);
	}
out:
	resp_parser_free(&p);
	if (o.place != NULL)
		__builtin_trap();
	evbuffer_free(in);
	return 0;
}

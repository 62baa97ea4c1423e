/*
 * daemon/resp/resp-parse.c - the request side of the Redis protocol.
 *
 * What clients send: an array of bulk strings, or an inline command (a
 * line of words, as redis-cli and telnet users type them, split as Redis
 * splits them: "double quotes" with \n \r \t \b \a \\ \" \xHH escapes,
 * 'single quotes' with \' only). Every length is bounded before anything
 * is allocated (max_args arguments, max_bulk bytes each, max_total bytes in
 * all with RESP_ARG_COST more for each argument, RESP_MAX_LINE bytes of a
 * header line, RESP_INLINE_MAX of an inline command), and every bulk must
 * end with CRLF. The argument arrays grow as arguments arrive, so a
 * header announcing many costs nothing until they come. A client that did
 * not AUTH yet gets small limits, as Redis gives it (10 arguments of
 * 16 KiB). An array of length 0 or less, and an empty line, are no
 * command, as in Redis.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "common/common.h"
#include "daemon/resp/resp-parse.h"
#include "daemon/resp/resp.h"

#define RESP_ARG_COST 16  /* what an argument costs beyond its bytes, against max_total */
#define RESP_KEEP_ARGS 16 /* argument arrays up to this many kept from one command to the next */
#define RESP_FAST_ARGS 8  /* commands of up to this many arguments are parsed at once */
#define RESP_PART_BULK (16 << 10) /* arguments from this long on are kept as they come */

void resp_parser_init(struct resp_parser *p, long max_args, long max_bulk, uint64_t max_total,
		      bool unauth)
{
	memset(p, 0, sizeof(*p));
	p->bulk = -1;
	p->placed = -1;
	resp_parser_limit(p, max_args, max_bulk, max_total, unauth);
}

void resp_parser_limit(struct resp_parser *p, long max_args, long max_bulk, uint64_t max_total,
		       bool unauth)
{
	p->max_args = MIN(max_args, RESP_MAX_ARGS);
	p->max_bulk = max_bulk;
	p->max_total = max_total;
	p->unauth = unauth;
}

/*
 * Ready for the next command. The argument arrays of a small command are
 * kept for it (most commands are; a pipeline of them then allocates only
 * their arguments); a big command's go.
 */
void resp_parser_reset(struct resp_parser *p)
{
	long i;

	if (p->placed >= 0) {
		p->placer->unplace(p->placer->arg, p);
		p->argv[p->placed] = NULL;
		p->placed = -1;
	}
	for (i = 0; i < p->have; i++)
		free(p->argv[i]);
	if (p->part)
		free(p->argv[p->have]);
	p->part = false;
	if (p->cap > RESP_KEEP_ARGS) {
		free(p->argv);
		free(p->argl);
		p->argv = NULL;
		p->argl = NULL;
		p->cap = 0;
	}
	p->nargs = p->have = 0;
	p->total = 0;
	p->bulk = -1;
}

/* Free what the parser holds (the connection goes). */
void resp_parser_free(struct resp_parser *p)
{
	resp_parser_reset(p);
	free(p->argv);
	free(p->argl);
	p->argv = NULL;
	p->argl = NULL;
	p->cap = 0;
}

/* Room for one more argument of len bytes (counted against max_total); -1 with *err. */
static int resp_arg_room(struct resp_parser *p, size_t len, const char **err)
{
	if (p->have >= p->max_args) {
		*err = p->unauth ? "unauthenticated multibulk length" : "invalid multibulk length";
		return -1;
	}
	if (len + RESP_ARG_COST > p->max_total - MIN(p->total, p->max_total)) {
		*err = "request too large (resp.max_request)";
		return -1;
	}
	p->total += len + RESP_ARG_COST;
	if (p->have == p->cap) {
		long cap = p->cap ? p->cap * 2 : 8;
		char **argv = reallocarray(p->argv, (size_t)cap, sizeof(*argv));
		size_t *argl;

		if (argv == NULL) {
			*err = "out of memory";
			return -1;
		}
		p->argv = argv;
		argl = reallocarray(p->argl, (size_t)cap, sizeof(*argl));
		if (argl == NULL) {
			*err = "out of memory";
			return -1;
		}
		p->argl = argl;
		p->cap = cap;
	}
	return 0;
}

/* Append an argument (copied, NUL-terminated); -1 with *err. */
static int resp_arg(struct resp_parser *p, const char *data, size_t len, const char **err)
{
	char *a;

	if (resp_arg_room(p, len, err) < 0)
		return -1;
	a = malloc(len + 1);
	if (a == NULL) {
		*err = "out of memory";
		return -1;
	}
	memcpy(a, data, len);
	a[len] = '\0';
	p->argv[p->have] = a;
	p->argl[p->have++] = len;
	return 0;
}

static int resp_hex(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/*
 * Split an inline command into arguments as Redis does (sdssplitargs());
 * 0, or -1 with *err (unbalanced quotes, or a limit).
 */
static int resp_split(struct resp_parser *p, const char *s, size_t n, const char **err)
{
	const char *end = s + n;
	char *word = malloc(n + 1);
	size_t len;

	if (word == NULL) {
		*err = "out of memory";
		return -1;
	}
	for (;;) {
		while (s < end && isspace((unsigned char)*s))
			s++;
		if (s == end)
			break;
		len = 0;
		if (*s == '"' || *s == '\'') {
			char q = *s++;

			for (;; s++) {
				if (s == end)
					goto unbalanced;
				if (q == '"' && *s == '\\' && s + 3 < end && s[1] == 'x' &&
				    resp_hex(s[2]) >= 0 && resp_hex(s[3]) >= 0) {
					word[len++] = (char)(resp_hex(s[2]) * 16 + resp_hex(s[3]));
					s += 3;
				} else if (*s == '\\' && s + 1 < end &&
					   (q == '"' || s[1] == '\'')) {
					char c = *++s;

					word[len++] = q == '\''	 ? c
						      : c == 'n' ? '\n'
						      : c == 'r' ? '\r'
						      : c == 't' ? '\t'
						      : c == 'b' ? '\b'
						      : c == 'a' ? '\a'
								 : c;
				} else if (*s == q) {
					/* The closing quote must end the word. */
					if (s + 1 < end && !isspace((unsigned char)s[1]))
						goto unbalanced;
					s++;
					break;
				} else {
					word[len++] = *s;
				}
			}
		} else {
			while (s < end && !isspace((unsigned char)*s))
				word[len++] = *s++;
		}
		if (resp_arg(p, word, len, err) < 0) {
			free(word);
			return -1;
		}
	}
	free(word);
	return 0;
unbalanced:
	free(word);
	*err = "unbalanced quotes in request";
	return -1;
}

/* An inline command line: 1 with its arguments, 2 when it was empty, 0 if incomplete, -1. */
static int resp_inline(struct resp_parser *p, struct evbuffer *in, const char **err)
{
	struct evbuffer_ptr nl = evbuffer_search(in, "\n", 1, NULL);
	size_t len;
	char *line;
	int rc;

	if (nl.pos < 0) {
		if (evbuffer_get_length(in) > RESP_INLINE_MAX) {
			*err = "too big inline request";
			return -1;
		}
		return 0;
	}
	if ((size_t)nl.pos > RESP_INLINE_MAX) {
		*err = "too big inline request";
		return -1;
	}
	len = (size_t)nl.pos;
	line = malloc(len + 1);
	if (line == NULL) {
		*err = "out of memory";
		return -1;
	}
	evbuffer_remove(in, line, len + 1);
	if (len > 0 && line[len - 1] == '\r')
		len--;
	rc = resp_split(p, line, len, err);
	free(line);
	if (rc < 0)
		return -1;
	p->nargs = p->have;
	return p->have > 0 ? 1 : 2;
}

/* A CRLF-terminated header line ("*3", "$5"): 1 and its number, 0 if incomplete, -1. */
static int resp_line(struct evbuffer *in, char want, long *ret, const char **err)
{
	static char got[] = "expected '$', got ' '";
	struct evbuffer_ptr p = evbuffer_search(in, "\r\n", 2, NULL);
	char line[RESP_MAX_LINE + 2]; /* the line and its CRLF */
	long long v;

	if (p.pos < 0) {
		/* (a line of RESP_MAX_LINE and its CR may be in, its LF on the way) */
		if (evbuffer_get_length(in) > RESP_MAX_LINE + 1) {
			*err = want == '*' ? "too big mbulk count string"
					   : "too big bulk count string";
			return -1;
		}
		return 0;
	}
	if (p.pos > RESP_MAX_LINE) {
		*err = want == '*' ? "invalid multibulk length" : "invalid bulk length";
		return -1;
	}
	evbuffer_remove(in, line, (size_t)p.pos + 2);
	line[p.pos] = '\0';
	if (line[0] != want) { /* only '$' can be wanted and missed: '*' was seen first */
		got[sizeof(got) - 3] = p.pos > 0 ? line[0] : '\r';
		*err = got;
		return -1;
	}
	/* As Redis reads it (string2ll()): digits only, no sign but '-', no leading 0. */
	if (!resp_ll(line + 1, (size_t)p.pos - 1, &v) || v > INT_MAX || (want == '$' && v < 0)) {
		*err = want == '*' ? "invalid multibulk length" : "invalid bulk length";
		return -1;
	}
	*ret = (long)v;
	return 1;
}

/*
 * A "*N" or "$N" header at *at: N, or -1 (and *at unchanged) if it is not
 * a whole one, or not one resp_line() takes as it is (a leading 0).
 */
static long resp_peek_num(const char *buf, size_t len, size_t *at, char want)
{
	size_t i = *at;
	long n = 0;

	if (i >= len || buf[i] != want || (i + 2 < len && buf[i + 1] == '0' && buf[i + 2] != '\r'))
		return -1;
	for (i++; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		if (n > RESP_MAX_ARGS)
			return -1;
		n = n * 10 + (buf[i] - '0');
	}
	if (i == *at + 1 || i + 1 >= len || buf[i] != '\r' || buf[i + 1] != '\n')
		return -1;
	*at = i + 2;
	return n;
}

/*
 * The common case at once: a whole array command of a few arguments in
 * the buffer's first chunk, within every limit, taken with one pass over
 * contiguous bytes and one drain. 1 when it was, 0 to go the way that
 * reads piece by piece (which gives every error), with nothing changed.
 */
static int resp_parse_whole(struct resp_parser *p, struct evbuffer *in, const char **err)
{
	size_t at = 0, off[RESP_FAST_ARGS], len[RESP_FAST_ARGS];
	uint64_t total = 0;
	struct evbuffer_iovec v;
	const char *buf;
	long n, k, bulk;

	if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
		return 0;
	buf = v.iov_base;
	n = resp_peek_num(buf, v.iov_len, &at, '*');
	if (n < 1 || n > RESP_FAST_ARGS || n > p->max_args)
		return 0;
	for (k = 0; k < n; k++) {
		bulk = resp_peek_num(buf, v.iov_len, &at, '$');
		if (bulk < 0 || bulk > p->max_bulk || (size_t)bulk + 2 > v.iov_len - at ||
		    buf[at + (size_t)bulk] != '\r' || buf[at + (size_t)bulk + 1] != '\n')
			return 0;
		total += (uint64_t)bulk + RESP_ARG_COST;
		off[k] = at;
		len[k] = (size_t)bulk;
		at += (size_t)bulk + 2;
	}
	if (total > p->max_total)
		return 0;
	for (k = 0; k < n; k++) {
		if (resp_arg_room(p, len[k], err) < 0)
			return -1;
		if ((p->argv[p->have] = malloc(len[k] + 1)) == NULL) {
			*err = "out of memory";
			return -1;
		}
		memcpy(p->argv[p->have], buf + off[k], len[k]);
		p->argv[p->have][len[k]] = '\0';
		p->argl[p->have++] = len[k];
	}
	p->nargs = n;
	evbuffer_drain(in, at);
	return 1;
}

int resp_parse(struct resp_parser *p, struct evbuffer *in, const char **err)
{
	unsigned char first;
	char crlf[2];
	long n;
	int rc;

	if (p->nargs == 0 && (rc = resp_parse_whole(p, in, err)) != 0)
		return rc;
	for (;;) {
		if (p->nargs == 0) {
			if (evbuffer_copyout(in, &first, 1) < 1)
				return 0;
			if (first != '*') {
				rc = resp_inline(p, in, err);
				if (rc == 2)
					continue; /* an empty line: no command */
				return rc;
			}
			rc = resp_line(in, '*', &n, err);
			if (rc <= 0)
				return rc;
			if (n > p->max_args) {
				*err = p->unauth ? "unauthenticated multibulk length"
						 : "invalid multibulk length";
				return -1;
			}
			if (n <= 0)
				continue; /* no command */
			p->nargs = n;
			p->have = 0;
			p->bulk = -1;
		}
		if (p->bulk < 0) {
			rc = resp_line(in, '$', &p->bulk, err);
			if (rc < 0 && p->unauth && strncmp(*err, "invalid bulk", 12) == 0)
				*err = "unauthenticated bulk length";
			if (rc <= 0)
				return rc;
			if (p->bulk > p->max_bulk) {
				*err = p->unauth ? "unauthenticated bulk length"
						 : "invalid bulk length";
				return -1;
			}
			/* Counted, and its slot made, before any of it is kept. */
			if (resp_arg_room(p, (size_t)p->bulk, err) < 0)
				return -1;
		}
		if (p->bulk >= RESP_PART_BULK) {
			/* Big: its bytes go to it as they come, here or by resp_parser_room(). */
			size_t take;

			if (!p->part) {
				p->argv[p->have] = NULL;
				if (p->placer != NULL &&
				    (p->argv[p->have] = p->placer->place(p->placer->arg, p,
									 (size_t)p->bulk)) != NULL)
					p->placed = p->have;
				else
					p->argv[p->have] = malloc((size_t)p->bulk + 1);
				if (p->argv[p->have] == NULL) {
					*err = "out of memory";
					return -1;
				}
				p->part = true;
				p->got = 0;
			}
			take = MIN(evbuffer_get_length(in), (size_t)p->bulk - p->got);
			evbuffer_remove(in, p->argv[p->have] + p->got, take);
			p->got += take;
			if (p->got < (size_t)p->bulk || evbuffer_get_length(in) < 2)
				return 0;
			p->part = false;
		} else {
			if (evbuffer_get_length(in) < (size_t)p->bulk + 2)
				return 0;
			p->argv[p->have] = malloc((size_t)p->bulk + 1);
			if (p->argv[p->have] == NULL) {
				*err = "out of memory";
				return -1;
			}
			evbuffer_remove(in, p->argv[p->have], (size_t)p->bulk);
		}
		if (p->placed != p->have)
			p->argv[p->have][p->bulk] = '\0';
		p->argl[p->have] = (size_t)p->bulk;
		p->have++;
		evbuffer_remove(in, crlf, 2);
		if (crlf[0] != '\r' || crlf[1] != '\n') {
			*err = "a bulk string does not end with CRLF";
			return -1;
		}
		p->bulk = -1;
		if (p->have == p->nargs)
			return 1;
	}
}

int resp_parser_keep(struct resp_parser *p)
{
	char *copy;

	if (p->placed < 0)
		return 0;
	/* (Only a whole argument is ever kept: a command is taken once whole.) */
	copy = malloc(p->argl[p->placed] + 1);
	if (copy == NULL)
		return -1;
	memcpy(copy, p->argv[p->placed], p->argl[p->placed]);
	copy[p->argl[p->placed]] = '\0';
	p->placer->unplace(p->placer->arg, p);
	p->argv[p->placed] = copy;
	p->placed = -1;
	return 0;
}

/*
 * Where the rest of the big argument being read goes, and how much of it
 * is missing (*ret_len), for a caller that reads it from the socket itself
 * once in is empty; NULL when none is being read.
 */
char *resp_parser_room(struct resp_parser *p, size_t *ret_len)
{
	if (!p->part || p->got >= (size_t)p->bulk)
		return NULL;
	*ret_len = (size_t)p->bulk - p->got;
	return p->argv[p->have] + p->got;
}

/* n bytes were put where resp_parser_room() said. */
void resp_parser_took(struct resp_parser *p, size_t n)
{
	p->got += n;
}

size_t resp_peek_keys(const char *buf, size_t len, const char **keys, size_t *klens, size_t max)
{
	size_t at = 0, n = 0;

	while (n < max) {
		long argc = resp_peek_num(buf, len, &at, '*'), k;
		const char *key = NULL;
		size_t klen = 0;

		if (argc < 1)
			break;
		for (k = 0; k < argc; k++) {
			long bulk = resp_peek_num(buf, len, &at, '$');

			if (bulk < 0 || (size_t)bulk + 2 > len - at)
				return n;
			if (k == 1) {
				key = buf + at;
				klen = (size_t)bulk;
			}
			at += (size_t)bulk + 2;
		}
		if (key != NULL) {
			keys[n] = key;
			klens[n++] = klen;
		}
	}
	return n;
}

/* Redis's string2ll(): an optional '-', digits, no leading zero, within 64 bits. */
bool resp_ll(const char *s, size_t len, long long *ret)
{
	unsigned long long v = 0, limit;
	bool neg = false;
	size_t i = 0;

	if (len == 0 || len > 20)
		return false;
	if (len == 1 && s[0] == '0') {
		*ret = 0;
		return true;
	}
	if (s[0] == '-') {
		neg = true;
		if (++i == len)
			return false;
	}
	if (s[i] < '1' || s[i] > '9')
		return false;
	limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (limit - (unsigned)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*ret = neg ? (long long)(0 - v) : (long long)v;
	return true;
}

/*
 * daemon/respparse.c - the request side of the Redis protocol.
 *
 * Only what clients send: an array of bulk strings. Every length is
 * bounded before anything is allocated (max_args arguments, max_bulk
 * bytes each, max_total bytes in all, RESP_MAX_LINE bytes of a header
 * line), and every bulk must end with CRLF. A client that did not AUTH yet
 * gets small limits, as Redis gives it (10 arguments of 16 KiB).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "common/common.h"
#include "daemon/respparse.h"

void resp_parser_init(struct resp_parser *p, long max_args, long max_bulk, uint64_t max_total,
		      bool unauth)
{
	memset(p, 0, sizeof(*p));
	p->bulk = -1;
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

void resp_parser_reset(struct resp_parser *p)
{
	long i;

	for (i = 0; i < p->have; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->argl);
	p->argv = NULL;
	p->argl = NULL;
	p->nargs = p->have = 0;
	p->total = 0;
	p->bulk = -1;
}

/* A CRLF-terminated header line ("*3", "$5"): 1 and its number, 0 if incomplete, -1. */
static int resp_line(struct evbuffer *in, char want, long max, long *ret, const char **err)
{
	struct evbuffer_ptr p = evbuffer_search(in, "\r\n", 2, NULL);
	char line[RESP_MAX_LINE + 2], *end; /* the line and its CRLF */
	long v;

	if (p.pos < 0) {
		if (evbuffer_get_length(in) > RESP_MAX_LINE) {
			*err = "header line too long";
			return -1;
		}
		return 0;
	}
	if (p.pos > RESP_MAX_LINE || p.pos < 2) {
		*err = "bad header line";
		return -1;
	}
	evbuffer_remove(in, line, (size_t)p.pos + 2);
	line[p.pos] = '\0';
	if (line[0] != want) {
		*err = want == '*' ? "expected '*' (RESP arrays of bulk strings only)" : "expected '$'";
		return -1;
	}
	v = strtol(line + 1, &end, 10);
	if (*end != '\0' || v < 1 || v > max) {
		*err = want == '*' ? "invalid multibulk length" : "invalid bulk length";
		return -1;
	}
	*ret = v;
	return 1;
}

int resp_parse(struct resp_parser *p, struct evbuffer *in, const char **err)
{
	char crlf[2];
	int rc;

	for (;;) {
		if (p->nargs == 0) {
			rc = resp_line(in, '*', p->max_args, &p->nargs, err);
			if (rc < 0 && p->unauth)
				*err = "unauthenticated multibulk length";
			if (rc <= 0)
				return rc;
			p->argv = calloc((size_t)p->nargs, sizeof(*p->argv));
			p->argl = calloc((size_t)p->nargs, sizeof(*p->argl));
			if (p->argv == NULL || p->argl == NULL) {
				*err = "out of memory";
				return -1;
			}
			p->have = 0;
			p->bulk = -1;
		}
		if (p->bulk < 0) {
			rc = resp_line(in, '$', p->max_bulk, &p->bulk, err);
			if (rc < 0 && p->unauth)
				*err = "unauthenticated bulk length";
			if (rc <= 0)
				return rc;
			if ((uint64_t)p->bulk > p->max_total - p->total) {
				*err = "request too large (resp.max_request)";
				return -1;
			}
			p->total += (uint64_t)p->bulk;
		}
		if (evbuffer_get_length(in) < (size_t)p->bulk + 2)
			return 0;
		p->argv[p->have] = malloc((size_t)p->bulk + 1);
		if (p->argv[p->have] == NULL) {
			*err = "out of memory";
			return -1;
		}
		evbuffer_remove(in, p->argv[p->have], (size_t)p->bulk);
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

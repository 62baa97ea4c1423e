/*
 * tests/unit/test_resp_parse.c - the RESP parser's bounds (daemon/resp/resp-parse.c)
 * decide the same whichever way a command comes: whole in one chunk (the
 * fast path) or a piece at a time. A command past a bound is an error with
 * Redis's words, before its bytes are kept; one within them is taken
 * whole, its arguments as sent.
 */
#include "config.h"

#include <string.h>

#include <event2/buffer.h>

#include "daemon/resp/resp-parse.h"
#include "tests/unit/unit.h"

#define MAX_ARGS 4
#define MAX_BULK 16
#define MAX_TOTAL 1024

/*
 * Parse data as a client sends it: in one chunk, or a byte at a time. The
 * parser's answer once the data is all in (or its first error).
 */
static int parse(struct resp_parser *p, const char *data, size_t len, bool bytewise,
		 const char **err)
{
	struct evbuffer *in = evbuffer_new();
	size_t i;
	int rc = 0;

	*err = NULL;
	if (!bytewise) {
		evbuffer_add(in, data, len);
		rc = resp_parse(p, in, err);
	}
	for (i = 0; bytewise && i < len && rc == 0; i++) {
		evbuffer_add(in, data + i, 1);
		rc = resp_parse(p, in, err);
	}
	evbuffer_free(in);
	return rc;
}

/* data against a fresh parser with the test's bounds, both ways: the same answer. */
static int parse_both(const char *data, bool unauth, const char **err)
{
	struct resp_parser p;
	const char *err2;
	int rc, rc2;

	resp_parser_init(&p, MAX_ARGS, MAX_BULK, MAX_TOTAL, unauth);
	rc = parse(&p, data, strlen(data), false, err);
	resp_parser_free(&p);
	resp_parser_init(&p, MAX_ARGS, MAX_BULK, MAX_TOTAL, unauth);
	rc2 = parse(&p, data, strlen(data), true, &err2);
	resp_parser_free(&p);
	CU_ASSERT_EQUAL(rc, rc2);
	if (rc < 0 && rc2 < 0)
		CU_ASSERT_STRING_EQUAL(*err, err2);
	return rc;
}

static void test_within(void)
{
	static const char cmd[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16\r\n0123456789abcdef\r\n";
	struct resp_parser p;
	const char *err;
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		resp_parser_init(&p, MAX_ARGS, MAX_BULK, MAX_TOTAL, false);
		CU_ASSERT_EQUAL_FATAL(parse(&p, cmd, sizeof(cmd) - 1, bytewise, &err), 1);
		CU_ASSERT_EQUAL_FATAL(p.nargs, 3);
		CU_ASSERT_STRING_EQUAL(p.argv[0], "SET");
		CU_ASSERT_EQUAL(p.argl[1], 1);
		CU_ASSERT_EQUAL(p.argl[2], 16);
		CU_ASSERT_EQUAL(memcmp(p.argv[2], "0123456789abcdef", 16), 0);
		resp_parser_free(&p);
	}
}

static void test_bulk_bound(void)
{
	const char *err;

	CU_ASSERT_EQUAL(parse_both("*2\r\n$3\r\nGET\r\n$17\r\n0123456789abcdefg\r\n", false, &err),
			-1);
	CU_ASSERT_STRING_EQUAL(err, "invalid bulk length");
	CU_ASSERT_EQUAL(parse_both("*2\r\n$3\r\nGET\r\n$17\r\n0123456789abcdefg\r\n", true, &err),
			-1);
	CU_ASSERT_STRING_EQUAL(err, "unauthenticated bulk length");
	CU_ASSERT_EQUAL(parse_both("*1\r\n$-5\r\n", false, &err), -1);
}

static void test_args_bound(void)
{
	const char *err;

	CU_ASSERT_EQUAL(parse_both("*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
				   false, &err),
			-1);
	CU_ASSERT_STRING_EQUAL(err, "invalid multibulk length");
	CU_ASSERT_EQUAL(
	    parse_both("*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n", true, &err),
	    -1);
	CU_ASSERT_STRING_EQUAL(err, "unauthenticated multibulk length");
	CU_ASSERT_EQUAL(
	    parse_both("*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", false, &err), 1);
}

static void test_total_bound(void)
{
	static const char cmd[] = "*3\r\n$16\r\n0123456789abcdef\r\n$16\r\n0123456789abcdef\r\n"
				  "$16\r\n0123456789abcdef\r\n";
	struct resp_parser p;
	const char *err;
	int bytewise;

	/* 3 arguments of 16 bytes, each costing more: past a total of 64. */
	for (bytewise = 0; bytewise < 2; bytewise++) {
		resp_parser_init(&p, MAX_ARGS, MAX_BULK, 64, false);
		CU_ASSERT_EQUAL(parse(&p, cmd, sizeof(cmd) - 1, bytewise, &err), -1);
		CU_ASSERT_STRING_EQUAL(err, "request too large (resp.max_request)");
		resp_parser_free(&p);
	}
}

/*
 * Header lines as Redis reads them: digits only (a NUL ends no number), no
 * leading 0, no '+' or space; a line of the longest length read whole,
 * not refused as too long while its LF is still on the way.
 */
static void test_header_lines(void)
{
	static const char nul[] = "*2\0junk\r\n$3\r\nGET\r\n$1\r\nk\r\n";
	char longest[RESP_MAX_LINE + 64];
	struct resp_parser p;
	const char *err;
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		resp_parser_init(&p, MAX_ARGS, MAX_BULK, MAX_TOTAL, false);
		CU_ASSERT_EQUAL(parse(&p, nul, sizeof(nul) - 1, bytewise, &err), -1);
		CU_ASSERT_STRING_EQUAL(err, "invalid multibulk length");
		resp_parser_free(&p);
	}
	CU_ASSERT_EQUAL(parse_both("*02\r\n$3\r\nGET\r\n$1\r\nk\r\n", false, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "invalid multibulk length");
	CU_ASSERT_EQUAL(parse_both("*+2\r\n$3\r\nGET\r\n$1\r\nk\r\n", false, &err), -1);
	CU_ASSERT_EQUAL(parse_both("* 2\r\n$3\r\nGET\r\n$1\r\nk\r\n", false, &err), -1);
	CU_ASSERT_EQUAL(parse_both("*2\r\n$3\r\nGET\r\n$01\r\nk\r\n", false, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "invalid bulk length");
	CU_ASSERT_EQUAL(parse_both("*2\r\n$3\r\nGET\r\n$0\r\n\r\n", false, &err), 1);
	CU_ASSERT_EQUAL(parse_both("*2\r\n$3\r\nGET\r\n$\r\n\r\n", false, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "invalid bulk length");
	/* A line of RESP_MAX_LINE characters: the same error whole or while its LF is on its way.
	 */
	snprintf(longest, sizeof(longest), "*2\r\n$3\r\nGET\r\n$%0*d\r\n0123456789\r\n",
		 RESP_MAX_LINE - 1, 10);
	CU_ASSERT_EQUAL(parse_both(longest, false, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "invalid bulk length");
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a command within the bounds, whole or byte by byte", test_within},
	    {"an argument past the bulk bound", test_bulk_bound},
	    {"a command past the argument count", test_args_bound},
	    {"a command past the total bound", test_total_bound},
	    {"header lines read as Redis reads them", test_header_lines},
	    {NULL, NULL},
	};

	return unit_run("respparse", tests);
}

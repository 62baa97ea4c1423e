/*
 * tests/tools/resp-hiredis.c - what a C cache client does through hiredis
 * (Debian's libhiredis), printed: run against poold and against
 * redis-server, the two outputs must be the same
 * (tests/integration/resp-compat.sh).
 *
 *   resp-hiredis PORT
 *
 * Binary values (NULs, CR and LF inside), expiry, counters, MGET, a
 * pipeline of 1,000 SETs through redisAppendCommand(), MULTI/EXEC, and
 * hiredis's own reading of every reply type it gets.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

static void show(const redisReply *r, int depth)
{
	size_t i;

	printf("%*s", depth * 2, "");
	if (r == NULL) {
		printf("(no reply)\n");
		return;
	}
	switch (r->type) {
	case REDIS_REPLY_STRING:
		printf("string %zu:", r->len);
		for (i = 0; i < r->len; i++)
			printf(r->str[i] >= ' ' && r->str[i] <= '~' ? "%c" : "\\x%02x",
			       (unsigned char)r->str[i]);
		printf("\n");
		break;
	case REDIS_REPLY_STATUS:
		printf("status %s\n", r->str);
		break;
	case REDIS_REPLY_ERROR:
		printf("error %s\n", r->str);
		break;
	case REDIS_REPLY_INTEGER:
		printf("integer %lld\n", r->integer);
		break;
	case REDIS_REPLY_NIL:
		printf("nil\n");
		break;
	case REDIS_REPLY_ARRAY:
		printf("array %zu\n", r->elements);
		for (i = 0; i < r->elements; i++)
			show(r->element[i], depth + 1);
		break;
	default:
		printf("type %d\n", r->type);
	}
}

/* One command, its reply shown. */
static void run(redisContext *c, int argc, const char **argv, const size_t *argl)
{
	redisReply *r = redisCommandArgv(c, argc, argv, argl);

	show(r, 0);
	freeReplyObject(r);
}

#define RUN(...)                                                                                   \
	do {                                                                                       \
		const char *a_[] = {__VA_ARGS__};                                                  \
		run(c, (int)(sizeof(a_) / sizeof(a_[0])), a_, NULL);                               \
	} while (0)

int main(int argc, char **argv)
{
	static const char bin[] = "a\0b\r\nc\0";
	const char *set[] = {"SET", "bin", bin};
	size_t setl[] = {3, 3, sizeof(bin) - 1};
	redisContext *c;
	redisReply *r;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: resp-hiredis PORT\n");
		return 2;
	}
	c = redisConnect("127.0.0.1", atoi(argv[1]));
	if (c == NULL || c->err) {
		fprintf(stderr, "resp-hiredis: %s\n", c ? c->errstr : "out of memory");
		return 1;
	}
	RUN("FLUSHALL");
	run(c, 3, set, setl);
	RUN("GET", "bin");
	RUN("STRLEN", "bin");
	RUN("SET", "t", "v", "EX", "100");
	RUN("TTL", "t");
	RUN("SET", "n", "41");
	RUN("INCR", "n");
	RUN("INCRBY", "n", "-50");
	RUN("MGET", "bin", "nokey", "n");
	RUN("SET", "", "");
	RUN("GET", "");
	for (i = 0; i < 1000; i++)
		redisAppendCommand(c, "SET p%d %d", i, i * 7);
	redisAppendCommand(c, "MGET p0 p500 p999");
	for (i = 0; i <= 1000; i++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK) {
			fprintf(stderr, "resp-hiredis: pipeline: %s\n", c->errstr);
			return 1;
		}
		if (i == 1000 || r->type != REDIS_REPLY_STATUS)
			show(r, 0);
		freeReplyObject(r);
	}
	RUN("MULTI");
	RUN("INCR", "tx");
	RUN("APPEND", "tx", "0");
	RUN("EXEC");
	RUN("GETRANGE", "bin", "1", "-2");
	RUN("FOO", "bar");
	RUN("DBSIZE");
	redisFree(c);
	return 0;
}

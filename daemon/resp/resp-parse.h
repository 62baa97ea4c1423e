/*
 * daemon/resp/resp-parse.h - the request side of the Redis protocol: arrays of
 * bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") and inline commands
 * ("GET k\r\n"), parsed incrementally from an evbuffer. It depends only on
 * libevent's buffers, so a fuzz target drives it on its own.
 */
#ifndef POOLD_RESPPARSE_H
#define POOLD_RESPPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct resp_parser;

/*
 * A big argument can be read straight into a place of the parser's owner
 * (a SET's value into its reservation, resp-place.c): place() is asked when
 * the argument's header comes, with the arguments before it in argv, and
 * returns where its len bytes go, or NULL for a buffer of the parser's.
 * Such an argument is not NUL-terminated. unplace() is told, with argv
 * still there, when the parser lets go of it: its command served or not,
 * or the connection ending.
 */
struct resp_placer {
	char *(*place)(void *arg, const struct resp_parser *p, size_t len);
	void (*unplace)(void *arg, const struct resp_parser *p);
	void *arg;
};

#define RESP_MAX_ARGS (1L << 20)    /* as many as MGET of a million keys */
#define RESP_MAX_LINE 64	    /* of a "*N" or "$N" header */
#define RESP_INLINE_MAX (64u << 10) /* of an inline command, as in Redis */

struct resp_parser {
	long max_args;	    /* the most arguments a command may have */
	long max_bulk;	    /* the longest argument accepted */
	uint64_t max_total; /* the most bytes of arguments a command may have */
	bool unauth;	    /* the limits are a client's that did not AUTH yet (for the errors) */
	uint64_t total;	    /* bytes of arguments of the current command so far */
	long nargs, have, cap; /* announced, read, room for */
	long bulk;	       /* length of the bulk being read, -1 between bulks */
	char **argv;	       /* the command's arguments, NUL-terminated (they may hold NULs) */
	size_t *argl;
	bool part; /* argv[have] is a big argument being read, got bytes of it so far */
	size_t got;
	const struct resp_placer *placer; /* NULL: every argument in the parser's buffers */
	long placed;			  /* the argument in the placer's place, or -1 */
};

void resp_parser_init(struct resp_parser *p, long max_args, long max_bulk, uint64_t max_total,
		      bool unauth);
/* New limits, from the next header line on (a client that just passed AUTH). */
void resp_parser_limit(struct resp_parser *p, long max_args, long max_bulk, uint64_t max_total,
		       bool unauth);
/*
 * Take what in holds of a command: 1 when argv/argc hold a whole command
 * (call resp_parser_reset() once it is served), 0 when more is needed,
 * -1 on a protocol error (*err says what; the connection should end).
 * Every length is checked against the limits before anything is kept.
 */
int resp_parse(struct resp_parser *p, struct evbuffer *in, const char **err);
/*
 * A big argument's bytes can be read straight into it: where the rest goes
 * and how much (NULL when none is being read; only when in is empty, as
 * resp_parse() leaves it), then resp_parser_took() with how much was put
 * there, and resp_parse() again.
 */
char *resp_parser_room(struct resp_parser *p, size_t *ret_len);
void resp_parser_took(struct resp_parser *p, size_t n);
/*
 * The argument in the placer's place copied into a buffer of the parser's
 * (its command is kept to run later, its argv taken away): 0, or -1 when
 * out of memory.
 */
int resp_parser_keep(struct resp_parser *p);
/* Forget the current command (and free its arguments). */
void resp_parser_reset(struct resp_parser *p);
/* Free all it holds. */
void resp_parser_free(struct resp_parser *p);
/*
 * The keys (second arguments) of the whole commands at the front of buf,
 * at most max: how many it found. Only a hint, for prefetching what
 * looking them up touches: it reads nothing past len and never fails, it
 * stops at whatever it does not expect.
 */
size_t resp_peek_keys(const char *buf, size_t len, const char **keys, size_t *klens, size_t max);
/* An argument as an integer, as Redis reads one (string2ll()): true, or false if it is not one. */
bool resp_ll(const char *s, size_t len, long long *ret);

#endif

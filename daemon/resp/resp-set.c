/*
 * daemon/resp/resp-set.c - the set commands of the RESP endpoint: SADD, SREM,
 * SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SRANDMEMBER, SPOP, SMOVE, and
 * SINTER, SUNION, SDIFF with their STORE forms, with Redis 7's replies and
 * errors. A set is one value (resp-type.c), its members in the order they
 * came, read whole and written whole by each command that changes it; an
 * empty set is no key. SMEMBERS and the set operations answer in that
 * order, which Redis does not promise either.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"

/* A set read for a command: its members, and the value they point into. */
struct resp_set {
	struct resp_val v;
	struct resp_elems els;
	bool have;
};

/* Key's set into s: 0, or -1 after an error reply (WRONGTYPE). */
static int resp_set_get(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			struct resp_set *s)
{
	int rc = resp_get_typed(c, ns, key, klen, RESP_TYPE_SET, &s->v, &s->els);

	s->have = rc == 0;
	if (rc == -EPROTOTYPE)
		resp_wrongtype(c);
	else if (rc == -ENOMEM)
		resp_err(c, "ERR out of memory");
	return rc == -EPROTOTYPE || rc == -ENOMEM ? -1 : 0;
}

static void resp_set_done(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			  struct resp_set *s)
{
	if (s->have)
		resp_put_back(c, ns, key, klen, &s->v);
	s->have = false;
	resp_elems_free(&s->els);
}

static int resp_set_put(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			struct resp_set *s)
{
	int rc = resp_put_typed(c, ns, key, klen, RESP_TYPE_SET, &s->els, s->have ? &s->v : NULL);

	s->have = false;
	resp_elems_free(&s->els);
	if (rc < 0)
		resp_typed_failed(c, rc, key, klen);
	return rc < 0 ? -1 : 0;
}

/* The place of member m in els, or els->n. */
static size_t resp_set_find(const struct resp_elems *els, const char *m, size_t len)
{
	size_t i;

	for (i = 0; i < els->n; i++)
		if (els->e[i].len == len && memcmp(els->e[i].p, m, len) == 0)
			break;
	return i;
}

static void cmd_sadd(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_index ix = {0};
	struct resp_set s = {0};
	long i, added = 0;
	char ns[32];
	int rc = 0;

	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	rc = resp_index_build(&s.els, (size_t)MIN(argc - 2, RESP_TYPED_MAX), &ix);
	for (i = 2; rc == 0 && i < argc; i++) {
		if (resp_index_find(&s.els, &ix, argv[i], argl[i]) < s.els.n)
			continue;
		if (s.els.n >= RESP_TYPED_MAX)
			rc = -E2BIG;
		else if ((rc = resp_elems_room(&s.els, s.els.n + 1)) == 0) {
			s.els.e[s.els.n++] = (struct resp_elem){argv[i], argl[i]};
			resp_index_add(&s.els, &ix, s.els.n - 1);
			added++;
		}
	}
	resp_index_free(&ix);
	if (rc < 0) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_typed_failed(c, rc, argv[1], argl[1]);
		return;
	}
	if (added == 0) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_int(c, 0);
	} else if (resp_set_put(c, ns, argv[1], argl[1], &s) == 0) {
		resp_int(c, added);
	}
}

/* Take member i out of s (the last takes its place: order is not kept). */
static void resp_set_drop(struct resp_set *s, size_t i)
{
	s->els.e[i] = s->els.e[--s->els.n];
}

static void cmd_srem(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_index ix = {0};
	struct resp_set s = {0};
	long i, removed = 0;
	bool *gone = NULL;
	char ns[32];
	size_t at, k;

	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	if ((gone = calloc(s.els.n + 1, sizeof(*gone))) == NULL ||
	    resp_index_build(&s.els, 0, &ix) < 0) {
		free(gone);
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_err(c, "ERR out of memory");
		return;
	}
	for (i = 2; i < argc; i++)
		if ((at = resp_index_find(&s.els, &ix, argv[i], argl[i])) < s.els.n && !gone[at]) {
			gone[at] = true;
			removed++;
		}
	for (at = 0, k = 0; at < s.els.n; at++)
		if (!gone[at])
			s.els.e[k++] = s.els.e[at];
	s.els.n = k;
	resp_index_free(&ix);
	free(gone);
	if (removed == 0) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_int(c, 0);
	} else if (resp_set_put(c, ns, argv[1], argl[1], &s) == 0) {
		resp_int(c, removed);
	}
}

static void cmd_scard(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_set s = {0};
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	resp_int(c, (long long)s.els.n);
	resp_set_done(c, ns, argv[1], argl[1], &s);
}

/* SISMEMBER key member, SMISMEMBER key member [member ...] */
static void cmd_sismember(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool multi = argl[0] == 10;
	struct resp_index ix = {0};
	struct resp_set s = {0};
	char ns[32];
	long i;

	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	/* (a few members are looked for, many looked up: the index costs a pass itself) */
	if (argc > 10 && resp_index_build(&s.els, 0, &ix) < 0) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_err(c, "ERR out of memory");
		return;
	}
	if (multi)
		resp_array(c, (size_t)(argc - 2));
	for (i = 2; i < argc; i++)
		resp_int(c, (ix.node != NULL ? resp_index_find(&s.els, &ix, argv[i], argl[i])
					     : resp_set_find(&s.els, argv[i], argl[i])) < s.els.n);
	resp_index_free(&ix);
	resp_set_done(c, ns, argv[1], argl[1], &s);
}

static void resp_set_reply(struct resp_conn *c, const struct resp_elems *els)
{
	size_t i;

	if (c->proto == 3)
		resp_head(resp_output(c), '~', (long long)els->n);
	else
		resp_array(c, els->n);
	for (i = 0; i < els->n; i++)
		resp_bulk(c, els->e[i].p, els->e[i].len);
}

static void cmd_smembers(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_set s = {0};
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	resp_set_reply(c, &s.els);
	resp_set_done(c, ns, argv[1], argl[1], &s);
}

/* SRANDMEMBER key [count]: count < 0 may repeat members; SPOP key [count] takes them out. */
static void cmd_srandmember(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool pop = argl[0] == 4;
	struct resp_set s = {0};
	long long count = 1, i, n;
	char ns[32];

	if (argc > 3) {
		resp_err(c, RESP_ERR_SYNTAX);
		return;
	}
	if (argc == 3 && (pop ? !resp_count_arg(c, argv[2], argl[2], &count)
			      : !resp_ll(argv[2], argl[2], &count))) {
		if (!pop)
			resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	if (argc == 2 && s.els.n == 0) {
		resp_null(c);
		resp_set_done(c, ns, argv[1], argl[1], &s);
		return;
	}
	if (count == LLONG_MIN) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		resp_err(c, "ERR value is out of range");
		return;
	}
	n = count < 0 ? -count : MIN(count, (long long)s.els.n);
	/* (a count of a billion repeats: bounded by the connection's output, not built first) */
	if (s.els.n > 0 && !resp_room(c, (size_t)MIN(n, 1LL << 32) * 16)) {
		resp_set_done(c, ns, argv[1], argl[1], &s);
		return;
	}
	if (argc == 3)
		resp_array(c, (size_t)(s.els.n == 0 ? 0 : n));
	for (i = 0; s.els.n > 0 && i < n; i++) {
		size_t at = (size_t)random() % s.els.n;

		resp_bulk(c, s.els.e[at].p, s.els.e[at].len);
		if (count > 0) /* (distinct: each taken out of those left to pick) */
			resp_set_drop(&s, at);
	}
	if (!pop || n == 0)
		resp_set_done(c, ns, argv[1], argl[1], &s);
	else
		resp_set_put(c, ns, argv[1], argl[1], &s);
}

/* SMOVE source destination member */
static void cmd_smove(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool same = argl[1] == argl[2] && memcmp(argv[1], argv[2], argl[1]) == 0;
	struct resp_set src = {0}, dst = {0};
	char ns[32], *own = NULL;
	size_t at;
	int rc = 0;

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &src) < 0)
		return;
	if (!same && resp_set_get(c, ns, argv[2], argl[2], &dst) < 0) {
		resp_set_done(c, ns, argv[1], argl[1], &src);
		return;
	}
	at = resp_set_find(&src.els, argv[3], argl[3]);
	if (at == src.els.n || same) {
		resp_int(c, at < src.els.n);
		resp_set_done(c, ns, argv[2], argl[2], &dst);
		resp_set_done(c, ns, argv[1], argl[1], &src);
		return;
	}
	resp_set_drop(&src, at);
	if (resp_set_find(&dst.els, argv[3], argl[3]) == dst.els.n) {
		if (dst.els.n >= RESP_TYPED_MAX)
			rc = -E2BIG;
		else if ((rc = resp_elems_room(&dst.els, dst.els.n + 1)) == 0)
			dst.els.e[dst.els.n++] = (struct resp_elem){argv[3], argl[3]};
	}
	/* (the destination's members copied out: the source is written first) */
	if (rc == 0)
		rc = resp_elems_own(&dst.els, &own);
	if (rc < 0) {
		resp_set_done(c, ns, argv[2], argl[2], &dst);
		resp_set_done(c, ns, argv[1], argl[1], &src);
		resp_typed_failed(c, rc, argv[2], argl[2]);
	} else if (resp_set_put(c, ns, argv[1], argl[1], &src) < 0) {
		resp_set_done(c, ns, argv[2], argl[2], &dst);
	} else if (resp_set_put(c, ns, argv[2], argl[2], &dst) == 0) {
		resp_int(c, 1);
	}
	free(own);
}

/*
 * SSCAN key cursor [MATCH pattern] [COUNT count]: a set is one value, so
 * one call returns all its members (that match) and the cursor 0, as
 * Redis does for its small encodings; a cursor of another call gets none.
 */
static void cmd_sscan(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	const char *pattern = NULL;
	struct resp_set s = {0};
	unsigned long long cursor;
	size_t plen = 0, i, n = 0;
	long long count;
	char ns[32], *end;
	long a;

	cursor = strtoull(argv[2], &end, 10);
	if (argl[2] == 0 || *end != '\0' || argv[2][0] == '-') {
		resp_err(c, "ERR invalid cursor");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_set_get(c, ns, argv[1], argl[1], &s) < 0)
		return;
	/* (as Redis: the options are looked at only for a set there is) */
	for (a = 3; s.have && a < argc; a += 2) {
		const char *err = NULL;

		if (a + 1 >= argc) {
			err = RESP_ERR_SYNTAX;
		} else if (strcasecmp(argv[a], "MATCH") == 0) {
			pattern = argv[a + 1];
			plen = argl[a + 1];
		} else if (strcasecmp(argv[a], "COUNT") == 0) {
			if (!resp_ll(argv[a + 1], argl[a + 1], &count))
				err = RESP_ERR_INT;
			else if (count < 1)
				err = RESP_ERR_SYNTAX;
		} else {
			err = RESP_ERR_SYNTAX;
		}
		if (err != NULL) {
			resp_err(c, "%s", err);
			resp_set_done(c, ns, argv[1], argl[1], &s);
			return;
		}
	}
	for (i = 0; cursor == 0 && i < s.els.n; i++)
		if (pattern == NULL || resp_match(pattern, plen, s.els.e[i].p, s.els.e[i].len))
			s.els.e[n++] = s.els.e[i];
	s.els.n = cursor == 0 ? n : 0;
	resp_array(c, 2);
	resp_bulk(c, "0", 1);
	resp_array(c, s.els.n);
	for (i = 0; i < s.els.n; i++)
		resp_bulk(c, s.els.e[i].p, s.els.e[i].len);
	resp_set_done(c, ns, argv[1], argl[1], &s);
}

enum resp_setop { SETOP_INTER, SETOP_UNION, SETOP_DIFF };

/*
 * SINTER, SUNION, SDIFF key [key ...] and their STORE forms (destination
 * first): the members of the first set in its order, then the others'
 * that are new (union).
 */
static void cmd_setop(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	enum resp_setop op = strncasecmp(argv[0], "sinter", 6) == 0   ? SETOP_INTER
			     : strncasecmp(argv[0], "sunion", 6) == 0 ? SETOP_UNION
								      : SETOP_DIFF;
	bool store = argl[0] > 6;
	long first = store ? 2 : 1, nsets = argc - first, k, j;
	struct resp_set *sets = calloc((size_t)nsets, sizeof(*sets)), out = {0};
	struct resp_index *ix = calloc((size_t)nsets, sizeof(*ix)), oix = {0};
	size_t i, all = 0;
	char ns[32];
	int rc = 0;

	if (sets == NULL || ix == NULL) {
		free(sets);
		free(ix);
		resp_err(c, "ERR out of memory");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	for (k = 0; k < nsets && rc == 0; k++)
		rc = resp_set_get(c, ns, argv[first + k], argl[first + k], &sets[k]);
	/* (each set's members indexed: the others are looked up in it, not searched) */
	for (k = 0; rc == 0 && k < nsets; k++) {
		all += sets[k].els.n;
		if (k > 0 && op != SETOP_UNION)
			rc = resp_index_build(&sets[k].els, 0, &ix[k]);
	}
	if (rc == 0 && op == SETOP_UNION)
		rc = resp_index_build(&out.els, all, &oix);
	for (i = 0; rc == 0 && i < sets[0].els.n; i++) {
		const struct resp_elem *e = &sets[0].els.e[i];
		bool in = true;

		for (j = 1; j < nsets && op != SETOP_UNION && in; j++) {
			bool there =
			    resp_index_find(&sets[j].els, &ix[j], e->p, e->len) < sets[j].els.n;

			in = op == SETOP_INTER ? there : !there;
		}
		if ((op == SETOP_UNION || in) &&
		    (rc = resp_elems_room(&out.els, out.els.n + 1)) == 0) {
			out.els.e[out.els.n++] = *e;
			if (op == SETOP_UNION)
				resp_index_add(&out.els, &oix, out.els.n - 1);
		}
	}
	for (k = 1; rc == 0 && op == SETOP_UNION && k < nsets; k++)
		for (i = 0; rc == 0 && i < sets[k].els.n; i++) {
			const struct resp_elem *e = &sets[k].els.e[i];

			if (resp_index_find(&out.els, &oix, e->p, e->len) < out.els.n)
				continue;
			if ((rc = resp_elems_room(&out.els, out.els.n + 1)) == 0) {
				out.els.e[out.els.n++] = *e;
				resp_index_add(&out.els, &oix, out.els.n - 1);
			}
		}
	for (k = 0; k < nsets; k++)
		resp_index_free(&ix[k]);
	resp_index_free(&oix);
	free(ix);
	if (rc < 0 && rc != -1)
		resp_err(c, "ERR out of memory");
	else if (rc == 0 && !store)
		resp_set_reply(c, &out.els);
	if (rc == 0 && store) {
		/*
		 * (its members are copied out of the sources by the write itself,
		 * before it writes; the destination's old value, if it is one of
		 * them, is put back with it)
		 */
		for (k = 0; k < nsets; k++)
			if (sets[k].have && argl[first + k] == argl[1] &&
			    memcmp(argv[first + k], argv[1], argl[1]) == 0)
				break;
		rc = resp_put_typed(c, ns, argv[1], argl[1], RESP_TYPE_SET, &out.els,
				    k < nsets ? &sets[k].v : NULL);
		if (k < nsets)
			sets[k].have = false;
		if (rc < 0)
			resp_typed_failed(c, rc, argv[1], argl[1]);
		else
			resp_int(c, (long long)out.els.n);
	}
	for (k = 0; k < nsets; k++)
		resp_set_done(c, ns, argv[first + k], argl[first + k], &sets[k]);
	resp_elems_free(&out.els);
	free(sets);
}

#define SET_CMD_READS (RESP_CMD_KEYS | RESP_CMD_READS)
#define SET_CMD_WRITES (RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES)
#define SET_CMD_ALL (RESP_CMD_KEYS | RESP_CMD_KEYS_ALL | RESP_CMD_READS_ALL)

const struct resp_cmd resp_set_cmds[] = {
    {"sadd", -3, SET_CMD_WRITES, cmd_sadd},
    {"scard", 2, SET_CMD_READS, cmd_scard},
    {"sdiff", -2, SET_CMD_ALL, cmd_setop},
    {"sdiffstore", -3, SET_CMD_ALL | RESP_CMD_WRITES, cmd_setop},
    {"sinter", -2, SET_CMD_ALL, cmd_setop},
    {"sinterstore", -3, SET_CMD_ALL | RESP_CMD_WRITES, cmd_setop},
    {"sismember", 3, SET_CMD_READS, cmd_sismember},
    {"smembers", 2, SET_CMD_READS, cmd_smembers},
    {"smismember", -3, SET_CMD_READS, cmd_sismember},
    {"smove", 4, SET_CMD_WRITES | RESP_CMD_KEYS_TWO, cmd_smove},
    {"spop", -2, SET_CMD_WRITES, cmd_srandmember},
    {"srandmember", -2, SET_CMD_READS, cmd_srandmember},
    {"srem", -3, SET_CMD_WRITES, cmd_srem},
    {"sscan", -3, SET_CMD_READS, cmd_sscan},
    {"sunion", -2, SET_CMD_ALL, cmd_setop},
    {"sunionstore", -3, SET_CMD_ALL | RESP_CMD_WRITES, cmd_setop},
};
const size_t n_resp_set_cmds = ARRAY_SIZE(resp_set_cmds);

/*
 * daemon/resp/resp-list.c - the list commands of the RESP endpoint: LPUSH,
 * RPUSH and their X forms, LPOP and RPOP (with a count), LLEN, LRANGE,
 * LINDEX, LSET, LREM, LTRIM, LINSERT, LMOVE and RPOPLPUSH, with Redis 7's
 * replies and errors. A list is one value (resp-type.c), read whole and
 * written whole by each command that changes it; an empty list is no key.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"

/* A list read for a command: its elements, and the value they point into. */
struct resp_list {
	struct resp_val v;
	struct resp_elems els;
	bool have; /* the key holds a list (else it has none) */
};

/* Key's list into l: 0 (l->have says whether it has one), or -1 after an error reply. */
static int resp_list_get(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			 struct resp_list *l)
{
	int rc = resp_get_typed(c, ns, key, klen, RESP_TYPE_LIST, &l->v, &l->els);

	l->have = rc == 0;
	if (rc == -EPROTOTYPE || rc == -ENOMEM) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_err(c, "ERR out of memory");
		return -1;
	}
	return 0;
}

/* Done with l, unchanged. */
static void resp_list_done(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			   struct resp_list *l)
{
	if (l->have)
		resp_put_back(c, ns, key, klen, &l->v);
	resp_elems_free(&l->els);
}

/* Store l as key's list (or none, when empty): 0, or -1 after an error reply. */
static int resp_list_put(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			 struct resp_list *l)
{
	int rc = resp_put_typed(c, ns, key, klen, RESP_TYPE_LIST, &l->els, l->have ? &l->v : NULL);

	l->have = false; /* (put back) */
	resp_elems_free(&l->els);
	if (rc < 0)
		resp_typed_failed(c, rc, key, klen);
	return rc < 0 ? -1 : 0;
}

/* Insert n elements at place at of l (each before the next: LPUSH gives them reversed). */
static int resp_list_insert(struct resp_list *l, size_t at, char **argv, const size_t *argl, long n,
			    bool reversed)
{
	long i;

	if (l->els.n + (size_t)n > RESP_TYPED_MAX)
		return -E2BIG;
	if (resp_elems_room(&l->els, l->els.n + (size_t)n) < 0)
		return -ENOMEM;
	memmove(&l->els.e[at + (size_t)n], &l->els.e[at], (l->els.n - at) * sizeof(l->els.e[0]));
	for (i = 0; i < n; i++) {
		long from = reversed ? n - 1 - i : i;

		l->els.e[at + (size_t)i] = (struct resp_elem){argv[from], argl[from]};
	}
	l->els.n += (size_t)n;
	return 0;
}

/* LPUSH, RPUSH, LPUSHX, RPUSHX key element [element ...] */
static void cmd_push(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool left = argv[0][0] == 'l' || argv[0][0] == 'L', x = argl[0] == 6;
	struct resp_list l = {0};
	char ns[32];
	size_t n;
	int rc;

	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if (x && !l.have) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_int(c, 0);
		return;
	}
	rc = resp_list_insert(&l, left ? 0 : l.els.n, argv + 2, argl + 2, argc - 2, left);
	if (rc < 0) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_typed_failed(c, rc, argv[1], argl[1]);
		return;
	}
	n = l.els.n;
	if (resp_list_put(c, ns, argv[1], argl[1], &l) == 0)
		resp_int(c, (long long)n);
}

/* A count argument that must be positive (LPOP, SPOP): false after its error. */
bool resp_count_arg(struct resp_conn *c, const char *arg, size_t len, long long *ret)
{
	if (!resp_ll(arg, len, ret) || *ret < 0) {
		resp_err(c, "ERR value is out of range, must be positive");
		return false;
	}
	return true;
}

/* LPOP, RPOP key [count] */
static void cmd_pop(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool left = argv[0][0] == 'l' || argv[0][0] == 'L';
	struct resp_list l = {0};
	long long count = 1;
	char ns[32];
	size_t n, i, from;

	if (argc > 3) {
		resp_err(c, "ERR wrong number of arguments for '%s' command",
			 left ? "lpop" : "rpop");
		return;
	}
	if (argc == 3 && !resp_count_arg(c, argv[2], argl[2], &count))
		return;
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if (!l.have) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		if (argc == 3)
			resp_out(c, c->proto == 3 ? "_\r\n" : "*-1\r\n");
		else
			resp_null(c);
		return;
	}
	if (argc == 3 && count == 0) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_array(c, 0);
		return;
	}
	n = MIN((size_t)count, l.els.n);
	from = left ? 0 : l.els.n - n;
	if (argc == 3)
		resp_array(c, n);
	for (i = 0; i < n; i++) { /* (RPOP with a count: the last first) */
		const struct resp_elem *e = &l.els.e[left ? from + i : from + n - 1 - i];

		resp_bulk(c, e->p, e->len);
	}
	if (left)
		memmove(&l.els.e[0], &l.els.e[n], (l.els.n - n) * sizeof(l.els.e[0]));
	l.els.n -= n;
	resp_list_put(c, ns, argv[1], argl[1], &l);
}

static void cmd_llen(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	resp_int(c, (long long)l.els.n);
	resp_list_done(c, ns, argv[1], argl[1], &l);
}

/* A range of a list of len elements, as Redis's LRANGE and LTRIM make it: false when empty. */
static bool resp_list_range(long long len, long long *start, long long *end)
{
	if (*start < 0)
		*start = len + *start;
	if (*end < 0)
		*end = len + *end;
	if (*start < 0)
		*start = 0;
	if (*start > *end || *start >= len)
		return false;
	if (*end >= len)
		*end = len - 1;
	return true;
}

static void cmd_lrange(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	long long start, end, i;
	char ns[32];

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &start) || !resp_ll(argv[3], argl[3], &end)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if (!resp_list_range((long long)l.els.n, &start, &end)) {
		resp_array(c, 0);
	} else {
		resp_array(c, (size_t)(end - start + 1));
		for (i = start; i <= end; i++)
			resp_bulk(c, l.els.e[i].p, l.els.e[i].len);
	}
	resp_list_done(c, ns, argv[1], argl[1], &l);
}

static void cmd_ltrim(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	long long start, end;
	char ns[32];

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &start) || !resp_ll(argv[3], argl[3], &end)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if (!l.have) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_ok(c);
		return;
	}
	if (!resp_list_range((long long)l.els.n, &start, &end)) {
		l.els.n = 0;
	} else {
		memmove(&l.els.e[0], &l.els.e[start],
			(size_t)(end - start + 1) * sizeof(l.els.e[0]));
		l.els.n = (size_t)(end - start + 1);
	}
	if (resp_list_put(c, ns, argv[1], argl[1], &l) == 0)
		resp_ok(c);
}

/* An index argument of a list of n elements (negative from the end): its place, or -1 outside. */
static long long resp_list_index(long long index, size_t n)
{
	if (index < 0)
		index += (long long)n;
	return index >= 0 && index < (long long)n ? index : -1;
}

static void cmd_lindex(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	long long index;
	char ns[32];

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &index)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if ((index = resp_list_index(index, l.els.n)) < 0)
		resp_null(c);
	else
		resp_bulk(c, l.els.e[index].p, l.els.e[index].len);
	resp_list_done(c, ns, argv[1], argl[1], &l);
}

static void cmd_lset(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	long long index;
	char ns[32];

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &index)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	if (!l.have || (index = resp_list_index(index, l.els.n)) < 0) {
		resp_err(c, l.have ? "ERR index out of range" : "ERR no such key");
		resp_list_done(c, ns, argv[1], argl[1], &l);
		return;
	}
	l.els.e[index] = (struct resp_elem){argv[3], argl[3]};
	if (resp_list_put(c, ns, argv[1], argl[1], &l) == 0)
		resp_ok(c);
}

static bool resp_elem_is(const struct resp_elem *e, const char *p, size_t len)
{
	return e->len == len && memcmp(e->p, p, len) == 0;
}

/* LREM key count element: count > 0 from the head, < 0 from the tail, 0 all. */
static void cmd_lrem(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_list l = {0};
	long long count, removed = 0;
	size_t i, k, n;
	char ns[32];

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &count)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	n = l.els.n;
	if (count >= 0) {
		for (i = 0, k = 0; i < n; i++)
			if (resp_elem_is(&l.els.e[i], argv[3], argl[3]) &&
			    (count == 0 || removed < count))
				removed++;
			else
				l.els.e[k++] = l.els.e[i];
	} else {
		for (i = n, k = n; i-- > 0;)
			if (resp_elem_is(&l.els.e[i], argv[3], argl[3]) && removed < -count)
				removed++;
			else
				l.els.e[--k] = l.els.e[i];
		memmove(&l.els.e[0], &l.els.e[k], (n - k) * sizeof(l.els.e[0]));
		k = n - k;
	}
	l.els.n = k;
	if (removed == 0) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_int(c, 0);
	} else if (resp_list_put(c, ns, argv[1], argl[1], &l) == 0) {
		resp_int(c, removed);
	}
}

/* LINSERT key BEFORE | AFTER pivot element */
static void cmd_linsert(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool after = strcasecmp(argv[2], "AFTER") == 0;
	struct resp_list l = {0};
	char ns[32];
	size_t i, n;
	int rc;

	(void)argc;
	if (!after && strcasecmp(argv[2], "BEFORE") != 0) {
		resp_err(c, RESP_ERR_SYNTAX);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &l) < 0)
		return;
	for (i = 0; i < l.els.n && !resp_elem_is(&l.els.e[i], argv[3], argl[3]); i++)
		;
	if (!l.have || i == l.els.n) {
		resp_int(c, l.have ? -1 : 0);
		resp_list_done(c, ns, argv[1], argl[1], &l);
		return;
	}
	if ((rc = resp_list_insert(&l, after ? i + 1 : i, argv + 4, argl + 4, 1, false)) < 0) {
		resp_list_done(c, ns, argv[1], argl[1], &l);
		resp_typed_failed(c, rc, argv[1], argl[1]);
		return;
	}
	n = l.els.n;
	if (resp_list_put(c, ns, argv[1], argl[1], &l) == 0)
		resp_int(c, (long long)n);
}

/* LMOVE source destination LEFT | RIGHT LEFT | RIGHT, and RPOPLPUSH source destination. */
static void cmd_lmove(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool from_left = false, to_left = true;
	bool same = argl[1] == argl[2] && memcmp(argv[1], argv[2], argl[1]) == 0;
	struct resp_list src = {0}, dst = {0}, *to = same ? &src : &dst;
	char ns[32], *moved = NULL, *own = NULL;
	size_t len;
	int rc;

	if (argc == 5) { /* (RPOPLPUSH: from the right to the left) */
		if ((strcasecmp(argv[3], "LEFT") != 0 && strcasecmp(argv[3], "RIGHT") != 0) ||
		    (strcasecmp(argv[4], "LEFT") != 0 && strcasecmp(argv[4], "RIGHT") != 0)) {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
		from_left = strcasecmp(argv[3], "LEFT") == 0;
		to_left = strcasecmp(argv[4], "LEFT") == 0;
	}
	resp_ns(c, ns, sizeof(ns));
	if (resp_list_get(c, ns, argv[1], argl[1], &src) < 0)
		return;
	if (!src.have) {
		resp_list_done(c, ns, argv[1], argl[1], &src);
		resp_null(c);
		return;
	}
	if (!same && resp_list_get(c, ns, argv[2], argl[2], &dst) < 0) {
		resp_list_done(c, ns, argv[1], argl[1], &src);
		return;
	}
	len = src.els.e[from_left ? 0 : src.els.n - 1].len;
	/* (the element, and the destination's, copied out: the source is written first) */
	rc = (moved = malloc(len ? len : 1)) == NULL ? -ENOMEM : 0;
	if (rc == 0) {
		memcpy(moved, src.els.e[from_left ? 0 : src.els.n - 1].p, len);
		if (from_left)
			memmove(&src.els.e[0], &src.els.e[1],
				(src.els.n - 1) * sizeof(src.els.e[0]));
		src.els.n--;
		rc = resp_list_insert(to, to_left ? 0 : to->els.n, &moved, &len, 1, false);
	}
	if (rc == 0 && !same)
		rc = resp_elems_own(&dst.els, &own);
	if (rc < 0) {
		resp_list_done(c, ns, argv[2], argl[2], &dst);
		resp_list_done(c, ns, argv[1], argl[1], &src);
		resp_typed_failed(c, rc, argv[2], argl[2]);
	} else if (same) {
		rc = resp_list_put(c, ns, argv[1], argl[1], &src);
	} else if ((rc = resp_list_put(c, ns, argv[1], argl[1], &src)) == 0) {
		rc = resp_list_put(c, ns, argv[2], argl[2], &dst);
	} else {
		resp_list_done(c, ns, argv[2], argl[2], &dst);
	}
	if (rc == 0)
		resp_bulk(c, moved, len);
	free(own);
	free(moved);
}

const struct resp_cmd resp_list_cmds[] = {
    {"lindex", 3, RESP_CMD_KEYS | RESP_CMD_READS, cmd_lindex},
    {"linsert", 5, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_linsert},
    {"llen", 2, RESP_CMD_KEYS | RESP_CMD_READS, cmd_llen},
    {"lmove", 5, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS | RESP_CMD_WRITES, cmd_lmove},
    {"lpop", -2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_pop},
    {"lpush", -3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_push},
    {"lpushx", -3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_push},
    {"lrange", 4, RESP_CMD_KEYS | RESP_CMD_READS, cmd_lrange},
    {"lrem", 4, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_lrem},
    {"lset", 4, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_lset},
    {"ltrim", 4, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_ltrim},
    {"rpop", -2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_pop},
    {"rpoplpush", 3, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS | RESP_CMD_WRITES,
     cmd_lmove},
    {"rpush", -3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_push},
    {"rpushx", -3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_push},
};
const size_t n_resp_list_cmds = ARRAY_SIZE(resp_list_cmds);

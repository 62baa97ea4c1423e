/*
 * daemon/resp/resp-type.c - values of the RESP endpoint that are not strings:
 * how a list or a set is kept in a KV value, and read back.
 *
 * A value is a string unless it begins with RESP_TYPED_MAGIC, eight bytes
 * no text begins with, then a byte for its type: 'l' a list, 'S' a set,
 * or 's' a string whose own bytes begin with the magic (stored behind
 * this head, so that no string is ever taken for a list). A list or a set
 * is then its number of elements and each element, its length first
 * (32-bit little-endian numbers). The type is in the value's bytes, not in
 * the index, so it goes wherever the value goes: to a shard's backup, to
 * its new owner, to a lender's record that a restarted coordinator
 * rebuilds from. A value written by a libpool client that only looks like
 * a list (the magic, then bytes that do not parse) is a string.
 *
 * Each command reads the whole value and writes it whole, as SETRANGE
 * does: cheap for the lists and sets Redis users keep small (queues of
 * jobs, sets of tags), so a list or set holds at most RESP_TYPED_MAX
 * elements, and a command that would pass it is refused.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/util/util.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"
#include "proto/pool_contract.h"

static uint32_t resp_u32(const char *p)
{
	const uint8_t *u = (const uint8_t *)p;

	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static void resp_put_u32(char *p, uint32_t v)
{
	uint8_t *u = (uint8_t *)p;

	u[0] = (uint8_t)v, u[1] = (uint8_t)(v >> 8), u[2] = (uint8_t)(v >> 16),
	u[3] = (uint8_t)(v >> 24);
}

/* Whether a + b (a string about to be stored) begins with the magic. */
bool resp_typed_head(const void *a, size_t alen, const void *b, size_t blen)
{
	char first[sizeof(RESP_TYPED_MAGIC) - 1];
	size_t n = sizeof(first), from_a = MIN(alen, n);

	if (alen + blen < n)
		return false;
	if (from_a > 0)
		memcpy(first, a, from_a);
	if (from_a < n)
		memcpy(first + from_a, b, n - from_a);
	return memcmp(first, RESP_TYPED_MAGIC, n) == 0;
}

void resp_typed_start(char *buf, enum resp_type type)
{
	memcpy(buf, RESP_TYPED_MAGIC, sizeof(RESP_TYPED_MAGIC) - 1);
	buf[RESP_TYPED_HEAD - 1] = (char)type;
}

/*
 * Elements of a list or set payload (after the head) into els, pointing
 * into it: 0, or -EINVAL when it does not parse (-ENOMEM without memory).
 */
static int resp_elems_parse(const char *p, size_t len, struct resp_elems *els)
{
	size_t at = 4, i, n;

	els->n = 0;
	if (len < 4 || (n = resp_u32(p)) > RESP_TYPED_MAX)
		return -EINVAL;
	if (resp_elems_room(els, n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t elen;

		if (len - at < 4 || (elen = resp_u32(p + at)) > len - at - 4)
			return -EINVAL;
		els->e[i] = (struct resp_elem){p + at + 4, elen};
		at += 4 + elen;
	}
	els->n = n;
	return at == len ? 0 : -EINVAL;
}

enum resp_type resp_type_of(const char *data, size_t len, size_t *ret_head)
{
	struct resp_elems els = {0};
	enum resp_type type = RESP_TYPE_STRING;

	*ret_head = 0;
	if (len < RESP_TYPED_HEAD ||
	    memcmp(data, RESP_TYPED_MAGIC, sizeof(RESP_TYPED_MAGIC) - 1) != 0)
		return RESP_TYPE_STRING;
	switch (data[RESP_TYPED_HEAD - 1]) {
	case RESP_TYPE_STRING:
		*ret_head = RESP_TYPED_HEAD;
		return RESP_TYPE_STRING;
	case RESP_TYPE_LIST:
	case RESP_TYPE_SET:
		/* (parsed whole: a value that only looks typed is a string) */
		if (resp_elems_parse(data + RESP_TYPED_HEAD, len - RESP_TYPED_HEAD, &els) == 0)
			type = (enum resp_type)data[RESP_TYPED_HEAD - 1];
		resp_elems_free(&els);
		return type;
	default:
		return RESP_TYPE_STRING;
	}
}

int resp_elems_room(struct resp_elems *els, size_t n)
{
	struct resp_elem *e;
	size_t cap = els->cap ? els->cap : 8;

	if (n <= els->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if ((e = realloc(els->e, cap * sizeof(*e))) == NULL)
		return -ENOMEM;
	els->e = e;
	els->cap = cap;
	return 0;
}

/*
 * Copy the elements' bytes into a buffer of their own (*ret_buf, for the
 * caller to free), so that they outlive the value they point into: a
 * command that writes two keys writes the second after the first, which
 * may evict or overwrite the value the second's elements were read from.
 */
int resp_elems_own(struct resp_elems *els, char **ret_buf)
{
	size_t i, len = 0;
	char *buf, *at;

	for (i = 0; i < els->n; i++)
		len += els->e[i].len;
	if ((buf = malloc(len ? len : 1)) == NULL)
		return -ENOMEM;
	for (i = 0, at = buf; i < els->n; i++) {
		memcpy(at, els->e[i].p, els->e[i].len);
		els->e[i].p = at;
		at += els->e[i].len;
	}
	*ret_buf = buf;
	return 0;
}

static uint64_t resp_elem_hash(const struct resp_elem *e)
{
	return XXH3_64bits(e->p, e->len);
}

int resp_index_build(const struct resp_elems *els, size_t extra, struct resp_index *ix)
{
	size_t i;

	*ix = (struct resp_index){0};
	if ((ix->node = calloc(els->n + extra + 1, sizeof(*ix->node))) == NULL)
		return -ENOMEM;
	for (i = 0; i < els->n; i++)
		resp_index_add(els, ix, i);
	return 0;
}

size_t resp_index_find(const struct resp_elems *els, const struct resp_index *ix, const char *p,
		       size_t len)
{
	struct resp_elem want = {p, len};
	struct htab_node *n;

	for (n = htab_first(&ix->t, resp_elem_hash(&want)); n != NULL; n = htab_next(n)) {
		const struct resp_elem *e = &els->e[n - ix->node];

		if (e->len == len && memcmp(e->p, p, len) == 0)
			return (size_t)(n - ix->node);
	}
	return els->n;
}

void resp_index_add(const struct resp_elems *els, struct resp_index *ix, size_t i)
{
	htab_add(&ix->t, &ix->node[i], resp_elem_hash(&els->e[i]));
}

void resp_index_free(struct resp_index *ix)
{
	htab_free(&ix->t);
	free(ix->node);
	*ix = (struct resp_index){0};
}

void resp_elems_free(struct resp_elems *els)
{
	free(els->e);
	*els = (struct resp_elems){0};
}

int resp_get_typed(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   enum resp_type want, struct resp_val *v, struct resp_elems *els)
{
	int rc;

	els->n = 0;
	if ((rc = resp_get_raw(c, ns, key, klen, v)) < 0)
		return rc;
	/* (one that does not parse is a string: the wrong type too) */
	if (v->len < RESP_TYPED_HEAD ||
	    memcmp(v->data, RESP_TYPED_MAGIC, sizeof(RESP_TYPED_MAGIC) - 1) != 0 ||
	    v->data[RESP_TYPED_HEAD - 1] != (char)want ||
	    (rc = resp_elems_parse(v->data + RESP_TYPED_HEAD, v->len - RESP_TYPED_HEAD, els)) ==
		-EINVAL) {
		resp_put_back(c, ns, key, klen, v);
		return -EPROTOTYPE;
	}
	if (rc < 0)
		resp_put_back(c, ns, key, klen, v);
	return rc;
}

int resp_put_typed(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   enum resp_type type, const struct resp_elems *els, const struct resp_val *old)
{
	size_t len = RESP_TYPED_HEAD + 4, i, at;
	char *buf = NULL;
	int rc = 0;

	for (i = 0; i < els->n; i++)
		len += 4 + els->e[i].len;
	if (els->n > RESP_TYPED_MAX)
		rc = -E2BIG;
	else if (len > POOL_KV_VALUE_MAX)
		rc = -EINVAL;
	else if (els->n > 0 && (buf = malloc(len)) == NULL)
		rc = -ENOMEM;
	if (rc < 0 || els->n == 0) { /* (an empty list or set is no key, as in Redis) */
		if (old != NULL)
			resp_put_back(c, ns, key, klen, old);
		if (rc == 0)
			resp_del(c, ns, key, klen);
		return rc;
	}
	resp_typed_start(buf, type);
	resp_put_u32(buf + RESP_TYPED_HEAD, (uint32_t)els->n);
	for (i = 0, at = RESP_TYPED_HEAD + 4; i < els->n; i++) {
		resp_put_u32(buf + at, (uint32_t)els->e[i].len);
		memcpy(buf + at + 4, els->e[i].p, els->e[i].len);
		at += 4 + els->e[i].len;
	}
	/* (the elements are copied out of the old value: it may be written over now) */
	if (old != NULL)
		resp_put_back(c, ns, key, klen, old);
	rc = resp_put_raw(c, ns, key, klen, buf, len, NULL, 0, KV_EXPIRE_KEEP);
	free(buf);
	return rc;
}

void resp_typed_failed(struct resp_conn *c, int rc, const char *key, size_t klen)
{
	if (rc == -EPROTOTYPE)
		resp_wrongtype(c);
	else if (rc == -E2BIG)
		resp_err(c, "ERR a list or set of this server holds at most %d elements",
			 RESP_TYPED_MAX);
	else
		resp_put_failed(c, rc, key, klen);
}

void resp_wrongtype(struct resp_conn *c)
{
	resp_err(c, "WRONGTYPE Operation against a key holding the wrong kind of value");
}

/*
 * How Redis 7.0 would keep a value (OBJECT ENCODING): a string from its
 * bytes (an integer, a short string, raw); a list as a quicklist; a set of
 * at most 512 integers as an intset, another as a hash table.
 */
const char *resp_type_encoding(const char *data, size_t len)
{
	struct resp_elems els = {0};
	size_t head, i;
	long long n;
	const char *enc;

	switch (resp_type_of(data, len, &head)) {
	case RESP_TYPE_LIST:
		return "quicklist";
	case RESP_TYPE_SET:
		if (resp_elems_parse(data + RESP_TYPED_HEAD, len - RESP_TYPED_HEAD, &els) < 0)
			return "hashtable";
		for (i = 0; i < els.n && resp_ll(els.e[i].p, els.e[i].len, &n); i++)
			;
		enc = i == els.n && els.n <= 512 ? "intset" : "hashtable";
		resp_elems_free(&els);
		return enc;
	default:
		len -= head;
		if (len <= 20 && resp_ll(data + head, len, &n))
			return "int";
		return len <= 44 ? "embstr" : "raw";
	}
}

const char *resp_type_name(enum resp_type type)
{
	return type == RESP_TYPE_LIST ? "list" : type == RESP_TYPE_SET ? "set" : "string";
}

/*
 * daemon/resp/resp-keys.c - the string keyspace of the RESP endpoint: GET, SET
 * and its options, the expiry, counter and range commands, DEL, EXISTS,
 * KEYS, SCAN... on the KV namespaces of the client's databases. Replies
 * and errors are Redis 7's, byte for byte where Redis defines them
 * (tests/integration/resp-compat.py compares them with a real
 * redis-server).
 *
 * A value in this node's arena is copied from there into the reply (GET)
 * or into its place (SET: reserve, copy, commit); one on another node was
 * fetched before the command ran, or is put there and committed once it
 * landed (resp-remote.c), with the reply held until then. A command
 * that changes part of a value (APPEND, SETRANGE, INCR) reads it, builds
 * the new one and writes it as SET does; its expiry stays. Expiry is the KV
 * index's (kv_local_expire()): lazy on every access and active in the
 * sweep, so other clients of the namespace see keys expire too.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "proto/pool_contract.h"

int64_t resp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void resp_ns(const struct resp_conn *c, char *ns, size_t len)
{
	resp_db_name(c, c->db, ns, len);
}

/* Redis's MAX_LONG_DOUBLE_CHARS: INCRBYFLOAT's numbers, read and written. */
#define RESP_LD_CHARS (5 * 1024)

/* Values sent by reference (resp_bulk_reference()) rather than copied into the output. */
#define RESP_BY_REFERENCE (64u << 10)

/* 0 with the value as it is stored (a typed one with its head: resp-type.c), or -ENOENT. */
int resp_get_raw(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		 struct resp_val *v)
{
	struct poold *pd = c->rs->pd;
	const void *data;
	struct kv_where w;
	size_t len;
	int rc;

	if (klen > POOL_KV_KEY_MAX)
		return -ENOENT; /* too long to have been stored */
	/* Copied out before anything else runs: no pin needed (the common case). */
	rc = kv_local_read(pd, c->uid, ns, (const uint8_t *)key, klen, &data, &len);
	if (rc == 0) {
		*v = (struct resp_val){data, len, 0, false};
		return 0;
	}
	if (rc != -EREMOTE)
		return -ENOENT;
	/* Another node's: fetched before the command ran (resp-remote.c). */
	if (kv_local_where(pd, c->uid, ns, (const uint8_t *)key, klen, &w) == 0 &&
	    w.node != pd->node_id) {
		data = resp_remote_value(c, ns, key, klen, w.version, &len);
		if (data == NULL)
			return -ENOENT;
		*v = (struct resp_val){data, len, 0, true};
		return 0;
	}
	rc = kv_local_op(pd, c->session, c->uid, ns, KV_LOOKUP, (const uint8_t *)key, klen, 0, &w);
	if (rc != 0)
		return -ENOENT;
	/* (this node's lent arenas, or the one of its KV shards' values: lend_arena()) */
	if (w.node != pd->node_id || lend_arena(pd, w.arena) == NULL) {
		kv_local_op(pd, c->session, c->uid, ns, KV_RELEASE, (const uint8_t *)key, klen,
			    w.version, NULL);
		return -ENOENT;
	}
	*v = (struct resp_val){(const char *)lend_arena(pd, w.arena)->base + w.off, w.len,
			       w.version, false};
	return 0;
}

/*
 * 0 with a string value (one stored with a typed head, its bytes after it),
 * -ENOENT, or -EPROTOTYPE when the key holds a list or a set (the caller
 * replies WRONGTYPE: resp_wrongtype()).
 */
int resp_get(struct resp_conn *c, const char *ns, const char *key, size_t klen, struct resp_val *v)
{
	int rc = resp_get_raw(c, ns, key, klen, v);
	size_t head;

	if (rc < 0)
		return rc;
	if (resp_type_of(v->data, v->len, &head) != RESP_TYPE_STRING) {
		resp_put_back(c, ns, key, klen, v);
		return -EPROTOTYPE;
	}
	v->data += head;
	v->len -= head;
	return 0;
}

void resp_put_back(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		   const struct resp_val *v)
{
	if (v->version != 0)
		kv_local_op(c->rs->pd, c->session, c->uid, ns, KV_RELEASE, (const uint8_t *)key,
			    klen, v->version, NULL);
}

bool resp_exists(struct resp_conn *c, const char *ns, const char *key, size_t klen)
{
	return klen <= POOL_KV_KEY_MAX && kv_local_op(c->rs->pd, c->session, c->uid, ns, KV_EXISTS,
						      (const uint8_t *)key, klen, 0, NULL) == 0;
}

/*
 * Store a value made of up to two pieces (a + b, for APPEND): over the old
 * one where it fits and nobody reads it, else reserve, copy into this
 * node's arena, commit. expire: the key's expiry after (Unix ms, 0 for
 * none: SET), or KV_EXPIRE_KEEP (APPEND, INCR...). 0 or -errno.
 */
int resp_put_raw(struct resp_conn *c, const char *ns, const char *key, size_t klen, const void *a,
		 size_t alen, const void *b, size_t blen, int64_t expire)
{
	struct poold *pd = c->rs->pd;
	struct kv_where w;
	char *dst;
	int rc;

	if (klen > POOL_KV_KEY_MAX || alen + blen > POOL_KV_VALUE_MAX)
		return -EINVAL;
	/*
	 * Read straight into its reservation (resp-place.c): published, unless overtaken meanwhile.
	 */
	if (a != NULL && a == c->placed.at && blen == 0 &&
	    (rc = resp_place_commit(c, ns, key, klen, expire)) != -ESTALE)
		return rc;
	/* A key that has a value of this size, that nobody reads: over it, one copy. */
	if (kv_local_overwrite(pd, c->uid, ns, (const uint8_t *)key, klen, a, alen, b, blen,
			       expire) == 0)
		return 0;
	rc = kv_local_reserve(pd, c->session, c->uid, ns, (const uint8_t *)key, klen, alen + blen,
			      c->in_exec, &w);
	if (rc < 0)
		return rc;
	if (w.node != pd->node_id) {
		/* Put there, committed once it landed; the reply waits for that. */
		rc = resp_remote_put(c, ns, key, klen, a, alen, b, blen, expire, &w);
		if (rc < 0)
			kv_local_op(pd, c->session, c->uid, ns, KV_ABORT, (const uint8_t *)key,
				    klen, w.version, NULL);
		return rc;
	}
	if (lend_arena(pd, w.arena) == NULL) {
		kv_local_op(pd, c->session, c->uid, ns, KV_ABORT, (const uint8_t *)key, klen,
			    w.version, NULL);
		return -EREMOTE;
	}
	dst = (char *)lend_arena(pd, w.arena)->base + w.off;
	if (alen > 0)
		memmove(dst, a, alen);
	if (blen > 0)
		memmove(dst + alen, b, blen);
	rc = kv_local_op(pd, c->session, c->uid, ns, KV_COMMIT, (const uint8_t *)key, klen,
			 w.version, NULL);
	if (rc == 0 && expire != KV_EXPIRE_KEEP)
		kv_local_expire(pd, c->uid, ns, (const uint8_t *)key, klen, expire);
	return rc;
}

/*
 * A string value a + b: as it is, but for one whose first bytes are a
 * typed value's head, stored behind a string's head (resp-type.c).
 */
int resp_put(struct resp_conn *c, const char *ns, const char *key, size_t klen, const void *a,
	     size_t alen, const void *b, size_t blen, int64_t expire)
{
	char *buf;
	int rc;

	if (!resp_typed_head(a, alen, b, blen))
		return resp_put_raw(c, ns, key, klen, a, alen, b, blen, expire);
	if (alen + blen > POOL_KV_VALUE_MAX - RESP_TYPED_HEAD)
		return -EINVAL;
	if ((buf = malloc(RESP_TYPED_HEAD + alen + blen)) == NULL)
		return -ENOMEM;
	resp_typed_start(buf, RESP_TYPE_STRING);
	if (alen > 0)
		memcpy(buf + RESP_TYPED_HEAD, a, alen);
	if (blen > 0)
		memcpy(buf + RESP_TYPED_HEAD + alen, b, blen);
	rc = resp_put_raw(c, ns, key, klen, buf, RESP_TYPED_HEAD + alen + blen, NULL, 0, expire);
	free(buf);
	return rc;
}

bool resp_del(struct resp_conn *c, const char *ns, const char *key, size_t klen)
{
	return resp_exists(c, ns, key, klen) &&
	       kv_local_op(c->rs->pd, c->session, c->uid, ns, KV_REMOVE, (const uint8_t *)key, klen,
			   0, NULL) == 0;
}

void resp_put_failed(struct resp_conn *c, int rc, const char *key, size_t klen)
{
	if (klen > POOL_KV_KEY_MAX)
		resp_err(c, "ERR key too long: this server stores keys of at most %d bytes",
			 POOL_KV_KEY_MAX);
	else if (rc == -EINVAL)
		resp_err(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
	else if (rc == -EDQUOT)
		resp_err(c,
			 "OOM command not allowed when used memory > 'maxmemory' (quota.bytes "
			 "or quota.share of uid %u).",
			 (unsigned)c->uid);
	else if (rc == -ENOSPC || rc == -ENOMEM)
		resp_err(c, "OOM command not allowed when used memory > 'maxmemory'.");
	else if (rc == POOL_ELOST) /* its place is on a lender that did not answer */
		resp_err(c, "TRYAGAIN the value's lender (node %u) did not answer: %s",
			 (unsigned)c->lost_node, err_str(rc));
	else
		resp_err(c, "ERR %s", err_str(rc));
}

/* A large value sent by reference, pinned until the socket has taken it. */
struct resp_sent {
	struct poold *pd;
	uint64_t session, version;
	uint32_t uid;
	char ns[32];
	size_t klen;
	uint8_t key[];
};

static void resp_sent_cb(const void *data, size_t len, void *arg)
{
	struct resp_sent *sv = arg;

	(void)data, (void)len;
	/* After the session's end (the connection closed first) there is nothing to release. */
	kv_local_op(sv->pd, sv->session, sv->uid, sv->ns, KV_RELEASE, sv->key, sv->klen,
		    sv->version, NULL);
	free(sv);
}

/*
 * The bulk of a value of RESP_BY_REFERENCE bytes or more without copying
 * it: the evbuffer points into the arena, and a pin keeps the value there
 * (an overwrite goes elsewhere, a delete waits) until the kernel has it.
 * Takes v's pin, or pins it. false when it cannot (then the caller copies).
 */
static bool resp_bulk_reference(struct resp_conn *c, const char *ns, const char *key, size_t klen,
				struct resp_val *v)
{
	struct evbuffer *out = resp_output(c);
	struct resp_sent *sv;

	if (v->len < RESP_BY_REFERENCE)
		return false;
	if (v->fetched) { /* its own buffer, no pin */
		resp_head(out, '$', (long long)v->len);
		if (!resp_remote_send(c, out, v->data, v->len))
			evbuffer_add(out, v->data, v->len);
		evbuffer_add(out, "\r\n", 2);
		return true;
	}
	if (strlen(ns) >= sizeof(sv->ns) || (sv = malloc(sizeof(*sv) + klen)) == NULL)
		return false;
	if (v->version == 0 && (v->version = kv_local_pin(c->rs->pd, c->session, c->uid, ns,
							  (const uint8_t *)key, klen)) == 0) {
		free(sv);
		return false;
	}
	*sv = (struct resp_sent){c->rs->pd, c->session, v->version, c->uid, "", klen};
	snprintf(sv->ns, sizeof(sv->ns), "%s", ns);
	memcpy(sv->key, key, klen);
	resp_head(out, '$', (long long)v->len);
	if (evbuffer_add_reference(out, v->data, v->len, resp_sent_cb, sv) < 0) {
		evbuffer_add(out, v->data, v->len);
		resp_sent_cb(NULL, 0, sv);
	}
	evbuffer_add(out, "\r\n", 2);
	return true;
}

/*
 * A key's value as a bulk reply, or a null; a list's or set's: WRONGTYPE,
 * or a null in MGET. 0, or -EPROTOTYPE for those.
 */
static int resp_reply_val(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			  bool mget)
{
	struct resp_val v;
	int rc = resp_get(c, ns, key, klen, &v);

	if (rc == -EPROTOTYPE && !mget)
		resp_wrongtype(c);
	else if (rc < 0)
		resp_null(c);
	if (rc < 0)
		return rc == -EPROTOTYPE ? rc : 0;
	if (resp_room(c, v.len) && resp_bulk_reference(c, ns, key, klen, &v))
		return 0;
	resp_bulk(c, v.data, v.len);
	resp_put_back(c, ns, key, klen, &v);
	return 0;
}

/* ------------------------------------------------------------ strings */

static void cmd_get(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	resp_reply_val(c, ns, argv[1], argl[1], false);
}

static void cmd_mget(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32];
	long i;

	resp_ns(c, ns, sizeof(ns));
	resp_array(c, (size_t)(argc - 1));
	for (i = 1; i < argc; i++)
		resp_reply_val(c, ns, argv[i], argl[i], true);
}

/* Whether an option of SET or GETEX is one of the expiry's: EX, PX, EXAT, PXAT. */
static bool resp_is_expire_opt(const char *o)
{
	return strcasecmp(o, "EX") == 0 || strcasecmp(o, "PX") == 0 || strcasecmp(o, "EXAT") == 0 ||
	       strcasecmp(o, "PXAT") == 0;
}

/* The expiry options' value: EX s, PX ms, EXAT s, PXAT ms (Unix ms in *at). */
static int resp_expire_arg(struct resp_conn *c, const char *unit, const char *arg, size_t len,
			   const char *cmd, int64_t *at)
{
	bool secs = unit[0] == 'E' || unit[0] == 'e';
	long long v;

	if (!resp_ll(arg, len, &v)) {
		resp_err(c, RESP_ERR_INT);
		return -1;
	}
	if (v <= 0 || (secs && v > LLONG_MAX / 1000)) {
		resp_err(c, "ERR invalid expire time in '%s' command", cmd);
		return -1;
	}
	if (strcasecmp(unit, "EX") == 0)
		*at = resp_now_ms() + v * 1000;
	else if (strcasecmp(unit, "PX") == 0)
		*at = resp_now_ms() + v;
	else if (strcasecmp(unit, "EXAT") == 0)
		*at = v * 1000;
	else
		*at = v;
	if (*at <= 0) {
		resp_err(c, "ERR invalid expire time in '%s' command", cmd);
		return -1;
	}
	return 0;
}

#define SET_NX 0x1
#define SET_XX 0x2
#define SET_GET 0x4
#define SET_KEEPTTL 0x8
#define SET_EXPIRE 0x10

/*
 * The one SET underneath SET, SETNX, SETEX, PSETEX and GETSET: flags as
 * above, at the expiry (Unix ms) with SET_EXPIRE. What it replies is up to
 * the caller: 1 when the value was stored, 0 when NX/XX said no, -1 when
 * it already replied with an error.
 */
static int resp_set(struct resp_conn *c, const char *key, size_t klen, const char *val, size_t vlen,
		    unsigned flags, int64_t at, bool reply_old)
{
	struct resp_val v;
	char ns[32], *old = NULL;
	size_t oldlen = 0;
	bool exists;
	int rc;

	resp_ns(c, ns, sizeof(ns));
	exists = !reply_old && (flags & (SET_NX | SET_XX)) && resp_exists(c, ns, key, klen);
	if (reply_old && (rc = resp_get(c, ns, key, klen, &v)) == -EPROTOTYPE) {
		resp_wrongtype(c); /* (GET of a list: nothing is written) */
		return -1;
	}
	/* The old value is kept aside: it is the reply only if the write works. */
	if (reply_old && (exists = rc == 0)) {
		old = malloc(v.len ? v.len : 1);
		oldlen = v.len;
		if (old != NULL)
			memcpy(old, v.data, v.len);
		resp_put_back(c, ns, key, klen, &v);
		if (old == NULL) {
			resp_err(c, "ERR out of memory");
			return -1;
		}
	}
	if (((flags & SET_NX) && exists) || ((flags & SET_XX) && !exists)) {
		rc = 0;
	} else if ((rc = resp_put(c, ns, key, klen, val, vlen, NULL, 0,
				  (flags & SET_KEEPTTL)	 ? KV_EXPIRE_KEEP
				  : (flags & SET_EXPIRE) ? at
							 : 0)) < 0) {
		free(old);
		resp_put_failed(c, rc, key, klen);
		return -1;
	} else {
		rc = 1;
	}
	if (reply_old) {
		if (exists)
			resp_bulk(c, old, oldlen);
		else
			resp_null(c);
	}
	free(old);
	return rc;
}

static void cmd_set(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	unsigned flags = 0;
	int64_t at = 0;
	long i, exp = 0; /* the expiry option's index */
	int rc;

	for (i = 3; i < argc; i++) {
		const char *o = argv[i];

		if (strcasecmp(o, "NX") == 0 && !(flags & SET_XX))
			flags |= SET_NX;
		else if (strcasecmp(o, "XX") == 0 && !(flags & SET_NX))
			flags |= SET_XX;
		else if (strcasecmp(o, "GET") == 0)
			flags |= SET_GET;
		else if (strcasecmp(o, "KEEPTTL") == 0 && !(flags & SET_EXPIRE))
			flags |= SET_KEEPTTL;
		else if (resp_is_expire_opt(o) && !(flags & (SET_KEEPTTL | SET_EXPIRE)) &&
			 i + 1 < argc) {
			flags |= SET_EXPIRE;
			exp = i++;
		} else {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
	}
	/* The expiry is checked once the options are known to be right, as Redis does. */
	if (exp != 0 && resp_expire_arg(c, argv[exp], argv[exp + 1], argl[exp + 1], "set", &at) < 0)
		return;
	rc = resp_set(c, argv[1], argl[1], argv[2], argl[2], flags, at, flags & SET_GET);
	if (rc < 0 || (flags & SET_GET))
		return;
	if (rc == 0)
		resp_null(c);
	else
		resp_ok(c);
}

static void cmd_setnx(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	int rc = resp_set(c, argv[1], argl[1], argv[2], argl[2], SET_NX, 0, false);

	(void)argc;
	if (rc >= 0)
		resp_int(c, rc);
}

static void cmd_setex(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	const char *unit = argv[0][0] == 'p' || argv[0][0] == 'P' ? "PX" : "EX";
	int64_t at;

	(void)argc;
	if (resp_expire_arg(c, unit, argv[2], argl[2], unit[0] == 'P' ? "psetex" : "setex", &at) <
	    0)
		return;
	if (resp_set(c, argv[1], argl[1], argv[3], argl[3], SET_EXPIRE, at, false) > 0)
		resp_ok(c);
}

static void cmd_getset(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc;
	resp_set(c, argv[1], argl[1], argv[2], argl[2], 0, 0, true);
}

static void cmd_mset(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool nx = argv[0][4] != '\0'; /* MSETNX */
	char ns[32];
	long i;
	int rc;

	if (argc % 2 == 0) {
		resp_err(c, "ERR wrong number of arguments for '%s' command",
			 nx ? "msetnx" : "mset");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (nx)
		for (i = 1; i < argc; i += 2)
			if (resp_exists(c, ns, argv[i], argl[i])) {
				resp_int(c, 0);
				return;
			}
	for (i = 1; i < argc; i += 2) {
		rc = resp_set(c, argv[i], argl[i], argv[i + 1], argl[i + 1], 0, 0, false);
		if (rc < 0)
			return;
	}
	if (nx)
		resp_int(c, 1);
	else
		resp_ok(c);
}

static void cmd_getdel(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (resp_reply_val(c, ns, argv[1], argl[1], false) == 0)
		resp_del(c, ns, argv[1], argl[1]);
}

static void cmd_getex(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool persist = false;
	int64_t at = 0;
	long i, exp = 0; /* the expiry option's index */
	char ns[32];

	for (i = 2; i < argc; i++) {
		if (strcasecmp(argv[i], "PERSIST") == 0 && exp == 0 && !persist) {
			persist = true;
		} else if (resp_is_expire_opt(argv[i]) && exp == 0 && !persist && i + 1 < argc) {
			exp = i++;
		} else {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
	}
	if (exp != 0 &&
	    resp_expire_arg(c, argv[exp], argv[exp + 1], argl[exp + 1], "getex", &at) < 0)
		return;
	resp_ns(c, ns, sizeof(ns));
	if (!resp_exists(c, ns, argv[1], argl[1])) {
		resp_null(c);
		return;
	}
	if (resp_reply_val(c, ns, argv[1], argl[1], false) == 0 && (exp != 0 || persist))
		kv_local_expire(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1], at);
}

static void cmd_strlen(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_val v;
	char ns[32];
	int rc;

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) < 0) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_int(c, 0);
		return;
	}
	resp_int(c, (long long)v.len);
	resp_put_back(c, ns, argv[1], argl[1], &v);
}

static void cmd_getrange(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long start, end, len;
	struct resp_val v;
	char ns[32];
	int rc;

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &start) || !resp_ll(argv[3], argl[3], &end)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) < 0) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_bulk(c, "", 0);
		return;
	}
	len = (long long)v.len;
	/* Redis's getrangeCommand(): negative from the end, clamped, empty when crossed. */
	if (start < 0 && end < 0 && start > end) {
		resp_bulk(c, "", 0);
	} else {
		if (start < 0)
			start = len + start;
		if (end < 0)
			end = len + end;
		if (start < 0)
			start = 0;
		if (end < 0)
			end = 0;
		if (end >= len)
			end = len - 1;
		if (start > end || len == 0)
			resp_bulk(c, "", 0);
		else
			resp_bulk(c, v.data + start, (size_t)(end - start + 1));
	}
	resp_put_back(c, ns, argv[1], argl[1], &v);
}

/*
 * A copy of key's string value, grown with zero bytes to min bytes when it
 * is shorter, for a command that changes part of it (SETRANGE, SETBIT):
 * its length in *ret_len; NULL after an error reply (WRONGTYPE, no memory).
 */
char *resp_value_copy(struct resp_conn *c, const char *ns, const char *key, size_t klen, size_t min,
		      size_t *ret_len)
{
	struct resp_val v;
	int rc = resp_get(c, ns, key, klen, &v);
	size_t len = rc == 0 ? v.len : 0;
	char *buf;

	if (rc == -EPROTOTYPE) {
		resp_wrongtype(c);
		return NULL;
	}
	*ret_len = MAX(len, min);
	if ((buf = calloc(1, *ret_len ? *ret_len : 1)) == NULL)
		resp_err(c, "ERR out of memory");
	if (buf != NULL && len > 0)
		memcpy(buf, v.data, len);
	if (rc == 0)
		resp_put_back(c, ns, key, klen, &v);
	return buf;
}

/*
 * Store a value a command made by changing the last one (SETRANGE,
 * SETBIT, APPEND: a + b), its expiry kept: 0, or -errno after its error
 * reply. Redis keeps such a value raw: OBJECT ENCODING says so from now on.
 */
int resp_put_edited(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		    const void *a, size_t alen, const void *b, size_t blen)
{
	int rc = resp_put(c, ns, key, klen, a, alen, b, blen, KV_EXPIRE_KEEP);

	if (rc < 0)
		resp_put_failed(c, rc, key, klen);
	else
		kv_local_edited(c->rs->pd, c->uid, ns, (const uint8_t *)key, klen, true);
	return rc;
}

static void cmd_setrange(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long off;
	size_t len;
	char ns[32], *buf;

	(void)argc;
	if (!resp_ll(argv[2], argl[2], &off)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (off < 0) {
		resp_err(c, "ERR offset is out of range");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (argl[3] == 0) { /* nothing to write: the length as it is, no key made */
		if ((buf = resp_value_copy(c, ns, argv[1], argl[1], 0, &len)) != NULL)
			resp_int(c, (long long)len);
		free(buf);
		return;
	}
	if ((unsigned long long)off + argl[3] > POOL_KV_VALUE_MAX) {
		if ((buf = resp_value_copy(c, ns, argv[1], argl[1], 0, &len)) != NULL)
			resp_err(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
		free(buf);
		return;
	}
	if ((buf = resp_value_copy(c, ns, argv[1], argl[1], (size_t)off + argl[3], &len)) == NULL)
		return;
	memcpy(buf + off, argv[3], argl[3]);
	if (resp_put_edited(c, ns, argv[1], argl[1], buf, len, NULL, 0) == 0)
		resp_int(c, (long long)len);
	free(buf);
}

static void cmd_append(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_val v;
	char ns[32], *old = NULL;
	size_t len = 0;
	int rc;

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) == -EPROTOTYPE) {
		resp_wrongtype(c);
		return;
	}
	if (rc == 0) {
		/* The old bytes are copied out first: the new value may take their place. */
		len = v.len;
		old = malloc(len ? len : 1);
		if (old != NULL)
			memcpy(old, v.data, len);
		resp_put_back(c, ns, argv[1], argl[1], &v);
		if (old == NULL) {
			resp_err(c, "ERR out of memory");
			return;
		}
	}
	if (len + argl[2] > POOL_KV_VALUE_MAX) {
		free(old);
		resp_err(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
		return;
	}
	rc = resp_put_edited(c, ns, argv[1], argl[1], old, len, argv[2], argl[2]);
	free(old);
	if (rc == 0)
		resp_int(c, (long long)(len + argl[2]));
}

/* INCR, INCRBY, DECR, DECRBY: by is the increment, already negated for DECR*. */
static void resp_incr(struct resp_conn *c, const char *key, size_t klen, long long by)
{
	struct resp_val v;
	long long cur = 0;
	char ns[32], num[24];
	int rc, n;

	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, key, klen, &v)) == -EPROTOTYPE) {
		resp_wrongtype(c);
		return;
	}
	if (rc == 0) {
		bool ok = resp_ll(v.data, v.len, &cur);

		resp_put_back(c, ns, key, klen, &v);
		if (!ok) {
			resp_err(c, RESP_ERR_INT);
			return;
		}
	}
	if ((by < 0 && cur < 0 && by < LLONG_MIN - cur) ||
	    (by > 0 && cur > 0 && by > LLONG_MAX - cur)) {
		resp_err(c, "ERR increment or decrement would overflow");
		return;
	}
	cur += by;
	n = snprintf(num, sizeof(num), "%lld", cur);
	rc = resp_put(c, ns, key, klen, num, (size_t)n, NULL, 0, KV_EXPIRE_KEEP);
	if (rc < 0)
		resp_put_failed(c, rc, key, klen);
	else
		resp_int(c, cur);
}

static void cmd_incr(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool decr = argv[0][0] == 'd' || argv[0][0] == 'D';
	long long by = 1;

	if (argc == 3 && !resp_ll(argv[2], argl[2], &by)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (decr && by == LLONG_MIN) {
		resp_err(c, "ERR decrement would overflow");
		return;
	}
	resp_incr(c, argv[1], argl[1], decr ? -by : by);
}

/*
 * A long double as Redis's string2ld() takes it: the whole argument,
 * nothing before it (no space) or after it, not NaN, not out of range.
 */
static bool resp_ld(const char *s, size_t len, long double *ret)
{
	char buf[RESP_LD_CHARS], *end;
	long double v;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtold(buf, &end);
	if (isspace((unsigned char)buf[0]) || *end != '\0' || (size_t)(end - buf) != len ||
	    (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) ||
	    errno == EINVAL || isnan(v))
		return false;
	*ret = v;
	return true;
}

/* INCRBYFLOAT: the sum written as Redis writes it (17 decimals, trailing zeros cut, no -0). */
static void cmd_incrbyfloat(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long double cur = 0, by;
	struct resp_val v;
	char ns[32], num[RESP_LD_CHARS];
	int rc, n;

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) == -EPROTOTYPE) {
		resp_wrongtype(c);
		return;
	}
	if (rc == 0) {
		bool ok = resp_ld(v.data, v.len, &cur);

		resp_put_back(c, ns, argv[1], argl[1], &v);
		if (!ok) {
			resp_err(c, "ERR value is not a valid float");
			return;
		}
	}
	if (!resp_ld(argv[2], argl[2], &by)) {
		resp_err(c, "ERR value is not a valid float");
		return;
	}
	cur += by;
	if (isnan(cur) || isinf(cur)) {
		resp_err(c, "ERR increment would produce NaN or Infinity");
		return;
	}
	n = snprintf(num, sizeof(num), "%.17Lf", cur);
	if (n <= 0 || (size_t)n >= sizeof(num)) {
		resp_err(c, "ERR increment would produce NaN or Infinity");
		return;
	}
	if (strchr(num, '.') != NULL) {
		while (num[n - 1] == '0')
			n--;
		if (num[n - 1] == '.')
			n--;
	}
	if (n == 2 && num[0] == '-' && num[1] == '0')
		num[0] = '0', n = 1;
	rc = resp_put(c, ns, argv[1], argl[1], num, (size_t)n, NULL, 0, KV_EXPIRE_KEEP);
	if (rc < 0)
		resp_put_failed(c, rc, argv[1], argl[1]);
	else
		resp_bulk(c, num, (size_t)n);
}

/* ------------------------------------------------------------ keys */

static void cmd_del(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long i, n = 0;
	char ns[32];

	resp_ns(c, ns, sizeof(ns));
	for (i = 1; i < argc; i++)
		n += resp_del(c, ns, argv[i], argl[i]);
	resp_int(c, n);
}

static void cmd_exists(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long i, n = 0;
	char ns[32];

	resp_ns(c, ns, sizeof(ns));
	for (i = 1; i < argc; i++)
		n += resp_exists(c, ns, argv[i], argl[i]);
	resp_int(c, n);
}

/*
 * The type of key's value, from its first bytes (resp-type.c), and how Redis
 * would keep it (OBJECT ENCODING); false when it has none.
 */
static bool resp_key_type(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			  enum resp_type *ret, const char **ret_encoding)
{
	struct resp_val v;
	size_t head;

	if (resp_get_raw(c, ns, key, klen, &v) < 0)
		return false;
	*ret = resp_type_of(v.data, v.len, &head);
	if (ret_encoding != NULL)
		*ret_encoding =
		    *ret == RESP_TYPE_STRING && kv_local_edited(c->rs->pd, c->uid, ns,
								(const uint8_t *)key, klen, false)
			? "raw" /* (APPEND, SETRANGE, SETBIT made it) */
			: resp_type_encoding(v.data, v.len);
	resp_put_back(c, ns, key, klen, &v);
	return true;
}

static void cmd_type(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	enum resp_type type;
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (!resp_key_type(c, ns, argv[1], argl[1], &type, NULL))
		resp_out(c, "+none\r\n");
	else
		resp_out(c, "+%s\r\n", resp_type_name(type));
}

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT [NX | XX | GT | LT]. */
static void cmd_expire(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	const char *name = argv[0];
	bool ms = name[0] == 'p' || name[0] == 'P';
	bool abs = strlen(name) > (ms ? 7u : 6u); /* ...AT */
	bool nx = false, xx = false, gt = false, lt = false;
	int64_t now = resp_now_ms(), at, cur;
	long long v;
	char ns[32], lname[16];
	long i;

	for (i = 0; name[i] != '\0' && i < (long)sizeof(lname) - 1; i++)
		lname[i] = (char)(name[i] | 0x20);
	lname[i] = '\0';
	for (i = 3; i < argc; i++) {
		if (strcasecmp(argv[i], "NX") == 0)
			nx = true;
		else if (strcasecmp(argv[i], "XX") == 0)
			xx = true;
		else if (strcasecmp(argv[i], "GT") == 0)
			gt = true;
		else if (strcasecmp(argv[i], "LT") == 0)
			lt = true;
		else {
			resp_err(c, "ERR Unsupported option %s", argv[i]);
			return;
		}
	}
	if (nx && (xx || gt || lt)) {
		resp_err(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
		return;
	}
	if (gt && lt) {
		resp_err(c, "ERR GT and LT options at the same time are not compatible");
		return;
	}
	if (!resp_ll(argv[2], argl[2], &v)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (!ms && (v > LLONG_MAX / 1000 || v < LLONG_MIN / 1000)) {
		resp_err(c, "ERR invalid expire time in '%s' command", lname);
		return;
	}
	v = ms ? v : v * 1000;
	if (!abs && ((v > 0 && now > LLONG_MAX - v) || (v < 0 && now < LLONG_MIN - v))) {
		resp_err(c, "ERR invalid expire time in '%s' command", lname);
		return;
	}
	at = abs ? v : now + v;
	resp_ns(c, ns, sizeof(ns));
	if (kv_local_ttl(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1], &cur) < 0) {
		resp_int(c, 0);
		return;
	}
	/* No expiry counts as an infinite one for GT and LT. */
	if ((nx && cur != 0) || (xx && cur == 0) || (gt && (cur == 0 || at <= cur)) ||
	    (lt && cur != 0 && at >= cur)) {
		resp_int(c, 0);
		return;
	}
	if (kv_local_expire(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1],
			    at <= 0 ? 1 : at) == -ENOMEM) {
		resp_err(c, "OOM command not allowed when used memory > 'maxmemory'.");
		return;
	}
	resp_int(c, 1);
}

/* TTL, PTTL, EXPIRETIME, PEXPIRETIME. */
static void cmd_ttl(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	const char *name = argv[0];
	bool ms = name[0] == 'p' || name[0] == 'P';
	bool abs = strlen(name) > (ms ? 4u : 3u); /* ...EXPIRETIME */
	int64_t at, left;
	char ns[32];

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (kv_local_ttl(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1], &at) < 0) {
		resp_int(c, -2);
		return;
	}
	if (at == 0) {
		resp_int(c, -1);
		return;
	}
	if (abs) {
		resp_int(c, ms ? at : at / 1000);
		return;
	}
	left = at - resp_now_ms();
	if (left < 0)
		left = 0;
	resp_int(c, ms ? left : (left + 500) / 1000);
}

static void cmd_persist(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32];
	int64_t at;

	(void)argc;
	resp_ns(c, ns, sizeof(ns));
	if (kv_local_ttl(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1], &at) < 0 ||
	    at == 0) {
		resp_int(c, 0);
		return;
	}
	kv_local_expire(c->rs->pd, c->uid, ns, (const uint8_t *)argv[1], argl[1], 0);
	resp_int(c, 1);
}

/*
 * One element of a pattern ('?', a [set] with ^ and ranges, an escaped or a
 * plain byte) against the byte ch: whether it matches; *pp and *plenp move
 * past it. An unclosed [set] matches nothing.
 */
static bool resp_match_elem(const char **pp, size_t *plenp, unsigned char ch)
{
	const char *p = *pp;
	size_t plen = *plenp;
	bool match = false, neg;

	if (p[0] == '?') {
		match = true;
	} else if (p[0] == '[') {
		p++, plen--;
		neg = plen > 0 && p[0] == '^';
		if (neg)
			p++, plen--;
		for (; plen > 0 && p[0] != ']'; p++, plen--) {
			if (p[0] == '\\' && plen >= 2) {
				p++, plen--;
				match |= (unsigned char)p[0] == ch;
			} else if (plen >= 3 && p[1] == '-') {
				unsigned char lo = (unsigned char)p[0], hi = (unsigned char)p[2];

				match |= lo <= hi ? ch >= lo && ch <= hi : ch >= hi && ch <= lo;
				p += 2, plen -= 2;
			} else {
				match |= (unsigned char)p[0] == ch;
			}
		}
		if (plen == 0) {
			*pp = p;
			*plenp = 0;
			return false;
		}
		match = match != neg;
	} else {
		if (p[0] == '\\' && plen >= 2)
			p++, plen--;
		match = (unsigned char)p[0] == ch;
	}
	*pp = p + 1;
	*plenp = plen - 1;
	return match;
}

/*
 * Redis's pattern syntax (stringmatchlen()) on bytes: *, and the elements
 * above. Every element but * takes one byte, so a mismatch needs to go
 * back only to the last star, which then takes one byte more: at most
 * pattern x key steps, whatever the pattern (a tenant's KEYS "*a*a*a...b"
 * would otherwise take exponential time in the event loop).
 */
bool resp_match(const char *p, size_t plen, const char *s, size_t slen)
{
	const char *star = NULL, *resume = NULL;
	size_t starlen = 0, resumelen = 0;

	while (slen > 0) {
		if (plen > 0 && p[0] == '*') {
			while (plen > 0 && p[0] == '*')
				p++, plen--;
			if (plen == 0)
				return true;
			star = p, starlen = plen;
			resume = s, resumelen = slen;
			continue;
		}
		if (plen > 0 && resp_match_elem(&p, &plen, (unsigned char)s[0])) {
			s++, slen--;
			continue;
		}
		if (star == NULL)
			return false;
		p = star, plen = starlen;
		s = ++resume, slen = --resumelen;
	}
	while (plen > 0 && p[0] == '*')
		p++, plen--;
	return plen == 0;
}

struct resp_keys {
	struct resp_conn *c;
	struct evbuffer *body;
	const char *pattern;
	size_t plen, n;
	const char *ns; /* SCAN TYPE: the database, and the type wanted (or NULL) */
	const char *type;
};

static void resp_key_cb(void *arg, const uint8_t *key, size_t klen)
{
	struct resp_keys *k = arg;

	if (k->pattern != NULL && !resp_match(k->pattern, k->plen, (const char *)key, klen))
		return;
	if (k->type != NULL) {
		/* (read where it lies: a value on another lender counts as a string) */
		const void *data;
		size_t len, head;
		enum resp_type t = RESP_TYPE_STRING;

		if (kv_local_read(k->c->rs->pd, k->c->uid, k->ns, key, klen, &data, &len) == 0)
			t = resp_type_of(data, len, &head);
		if (strcasecmp(k->type, resp_type_name(t)) != 0)
			return;
	}
	/* The keys wait in a side buffer: they count against resp.max_output all the same. */
	if (!resp_room(k->c, evbuffer_get_length(k->body) + klen + 16))
		return;
	resp_head(k->body, '$', (long long)klen);
	evbuffer_add(k->body, key, klen);
	evbuffer_add(k->body, "\r\n", 2);
	k->n++;
}

static void cmd_keys(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_keys k = {c, evbuffer_new(), argv[1], argl[1], 0, NULL, NULL};
	uint64_t cursor = 0, next;
	char ns[32];

	(void)argc;
	if (k.body == NULL) {
		resp_err(c, "ERR out of memory");
		return;
	}
	if (argl[1] == 1 && argv[1][0] == '*')
		k.pattern = NULL;
	resp_ns(c, ns, sizeof(ns));
	do {
		kv_local_scan(c->rs->pd, ns, cursor, 1024, resp_key_cb, &k, &next);
		cursor = next;
	} while (cursor != 0 && !c->overflow);
	resp_array(c, k.n);
	evbuffer_add_buffer(resp_output(c), k.body);
	evbuffer_free(k.body);
}

static void cmd_scan(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_keys k = {c, NULL, NULL, 0, 0, NULL, NULL};
	unsigned long long cursor;
	long long count = 10;
	bool none = false;
	uint64_t next;
	char ns[32], *end, num[24];
	long i;

	cursor = strtoull(argv[1], &end, 10);
	if (argl[1] == 0 || *end != '\0' || argv[1][0] == '-') {
		resp_err(c, "ERR invalid cursor");
		return;
	}
	for (i = 2; i < argc; i += 2) {
		if (i + 1 >= argc) {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
		if (strcasecmp(argv[i], "COUNT") == 0) {
			if (!resp_ll(argv[i + 1], argl[i + 1], &count)) {
				resp_err(c, RESP_ERR_INT);
				return;
			}
			if (count < 1) {
				resp_err(c, RESP_ERR_SYNTAX);
				return;
			}
		} else if (strcasecmp(argv[i], "MATCH") == 0) {
			k.pattern = argv[i + 1];
			k.plen = argl[i + 1];
		} else if (strcasecmp(argv[i], "TYPE") == 0) {
			k.type = argv[i + 1];
			none = strcasecmp(k.type, "string") != 0 &&
			       strcasecmp(k.type, "list") != 0 &&
			       strcasecmp(k.type, "set") != 0; /* (the types there are) */
		} else {
			resp_err(c, RESP_ERR_SYNTAX);
			return;
		}
	}
	k.body = evbuffer_new();
	if (k.body == NULL) {
		resp_err(c, "ERR out of memory");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	k.ns = ns;
	next = 0;
	if (!none)
		kv_local_scan(c->rs->pd, ns, cursor, (size_t)MIN(count, 1 << 20), resp_key_cb, &k,
			      &next);
	resp_array(c, 2);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)next);
	resp_bulk(c, num, strlen(num));
	resp_array(c, k.n);
	evbuffer_add_buffer(resp_output(c), k.body);
	evbuffer_free(k.body);
}

/* The key RANDOMKEY picked, copied: the index may drop it (expired) before it is replied. */
struct resp_pick {
	char *key;
	size_t klen;
};

static void resp_pick_cb(void *arg, const uint8_t *key, size_t klen)
{
	struct resp_pick *p = arg;

	if ((p->key = malloc(klen ? klen : 1)) != NULL) {
		memcpy(p->key, key, klen);
		p->klen = klen;
	}
}

/* RANDOMKEY: a key of a bucket picked at random; expired ones dropped as it goes, as Redis does. */
static void cmd_randomkey(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_pick p = {NULL, 0};
	char ns[32];
	int tries;

	(void)argc, (void)argv, (void)argl;
	resp_ns(c, ns, sizeof(ns));
	for (tries = 0; tries < 100; tries++) {
		uint64_t rnd = (uint64_t)random() << 31 ^ (uint64_t)random();

		if (!kv_local_random(c->rs->pd, ns, rnd, resp_pick_cb, &p) || p.key == NULL)
			break;
		if (resp_exists(c, ns, p.key,
				p.klen)) { /* (not expired: resp_exists() drops those) */
			resp_bulk(c, p.key, p.klen);
			free(p.key);
			return;
		}
		free(p.key);
		p.key = NULL;
	}
	free(p.key);
	resp_null(c);
}

/* OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key, OBJECT HELP. */
static void cmd_object(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	static const char *const help[] = {
	    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	    "ENCODING <key>",
	    "    Return the kind of internal representation used in order to store the value",
	    "    associated with a <key>.",
	    "FREQ <key>",
	    "    Return the access frequency index of the <key>. The returned integer is",
	    "    proportional to the logarithm of the recent access frequency of the key.",
	    "IDLETIME <key>",
	    "    Return the idle time of the <key>, that is the approximated number of",
	    "    seconds elapsed since the last access to the key.",
	    "REFCOUNT <key>",
	    "    Return the number of references of the value associated with the specified",
	    "    <key>.",
	    "HELP",
	    "    Print this help.",
	};
	const char *sub = argv[1], *enc;
	enum resp_type type;
	char ns[32];
	size_t i;

	if (argc == 2 && strcasecmp(sub, "HELP") == 0) {
		resp_array(c, ARRAY_SIZE(help));
		for (i = 0; i < ARRAY_SIZE(help); i++)
			resp_out(c, "+%s\r\n", help[i]);
		return;
	}
	if (strcasecmp(sub, "ENCODING") != 0 && strcasecmp(sub, "REFCOUNT") != 0 &&
	    strcasecmp(sub, "IDLETIME") != 0 && strcasecmp(sub, "FREQ") != 0 &&
	    strcasecmp(sub, "HELP") != 0) {
		resp_err(c, "ERR unknown subcommand '%.128s'. Try OBJECT HELP.", sub);
		return;
	}
	if (argc != (strcasecmp(sub, "HELP") == 0 ? 2 : 3)) {
		for (i = 0; sub[i] != '\0' && i < sizeof(ns) - 1; i++)
			ns[i] = (char)(sub[i] | 0x20);
		ns[i] = '\0';
		resp_err(c, "ERR wrong number of arguments for 'object|%s' command", ns);
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if (!resp_key_type(c, ns, argv[2], argl[2], &type, &enc)) {
		resp_null(c);
		return;
	}
	if (strcasecmp(sub, "ENCODING") == 0) {
		resp_bulk(c, enc, strlen(enc));
	} else if (strcasecmp(sub, "REFCOUNT") == 0) {
		resp_int(c, 1);
	} else if (strcasecmp(sub, "IDLETIME") == 0) {
		resp_int(c, 0); /* (not kept: the index orders keys by use, with no time) */
	} else {
		resp_err(c, "ERR An LFU maxmemory policy is not selected, access frequency not "
			    "tracked. Please note that when switching between policies at runtime "
			    "LRU and LFU data will take some time to adjust.");
	}
}

static void cmd_dbsize(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	char ns[32];

	(void)argc, (void)argv, (void)argl;
	resp_ns(c, ns, sizeof(ns));
	resp_int(c, (long long)kv_local_size(c->rs->pd, ns));
}

static void cmd_flush(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool all = argv[0][5] == 'a' || argv[0][5] == 'A'; /* FLUSHALL */
	char ns[32];
	int db;

	(void)argl;
	if (argc > 2 ||
	    (argc == 2 && strcasecmp(argv[1], "ASYNC") != 0 && strcasecmp(argv[1], "SYNC") != 0)) {
		resp_err(c, RESP_ERR_SYNTAX);
		return;
	}
	for (db = all ? 0 : c->db; db < (all ? RESP_DBS : c->db + 1); db++) {
		resp_db_name(c, db, ns, sizeof(ns));
		kv_local_flush(c->rs->pd, ns, c->uid); /* the client's own databases only */
	}
	resp_ok(c);
}

/* Sorted by name (resp_cmd_find() searches it); arity as in Redis 7's command table. */
const struct resp_cmd resp_key_cmds[] = {
    {"append", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_append},
    {"dbsize", 1, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_dbsize},
    {"decr", 2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_incr},
    {"decrby", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_incr},
    {"del", -2, RESP_CMD_KEYS | RESP_CMD_KEYS_ALL | RESP_CMD_WRITES, cmd_del},
    {"exists", -2, RESP_CMD_KEYS | RESP_CMD_KEYS_ALL, cmd_exists},
    {"expire", -3, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_expire},
    {"expireat", -3, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_expire},
    {"expiretime", 2, RESP_CMD_KEYS, cmd_ttl},
    {"flushall", -1, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_flush},
    {"flushdb", -1, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_flush},
    {"get", 2, RESP_CMD_KEYS | RESP_CMD_READS, cmd_get},
    {"getdel", 2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_getdel},
    {"getex", -2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_getex},
    {"getrange", 4, RESP_CMD_KEYS | RESP_CMD_READS, cmd_getrange},
    {"getset", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_getset},
    {"incr", 2, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_incr},
    {"incrby", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_incr},
    {"incrbyfloat", 3, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_incrbyfloat},
    {"keys", 2, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_keys},
    {"mget", -2, RESP_CMD_KEYS | RESP_CMD_READS_ALL | RESP_CMD_KEYS_ALL, cmd_mget},
    {"mset", -3, RESP_CMD_KEYS | RESP_CMD_BLIND | RESP_CMD_KEYS_PAIRS | RESP_CMD_WRITES, cmd_mset},
    {"msetnx", -3, RESP_CMD_KEYS | RESP_CMD_KEYS_PAIRS | RESP_CMD_WRITES, cmd_mset},
    {"object", -2, RESP_CMD_KEYS | RESP_CMD_KEY_SECOND | RESP_CMD_READS, cmd_object},
    {"persist", 2, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_persist},
    {"pexpire", -3, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_expire},
    {"pexpireat", -3, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_expire},
    {"pexpiretime", 2, RESP_CMD_KEYS, cmd_ttl},
    {"psetex", 4, RESP_CMD_KEYS | RESP_CMD_BLIND | RESP_CMD_WRITES, cmd_setex},
    {"pttl", 2, RESP_CMD_KEYS, cmd_ttl},
    {"randomkey", 1, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_randomkey},
    {"scan", -2, RESP_CMD_KEYS | RESP_CMD_KEYLESS, cmd_scan},
    {"set", -3, RESP_CMD_KEYS | RESP_CMD_READS_GET | RESP_CMD_BLIND | RESP_CMD_WRITES, cmd_set},
    {"setex", 4, RESP_CMD_KEYS | RESP_CMD_BLIND | RESP_CMD_WRITES, cmd_setex},
    {"setnx", 3, RESP_CMD_KEYS | RESP_CMD_WRITES, cmd_setnx},
    {"setrange", 4, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_setrange},
    {"strlen", 2, RESP_CMD_KEYS | RESP_CMD_READS, cmd_strlen},
    {"substr", 4, RESP_CMD_KEYS | RESP_CMD_READS, cmd_getrange},
    {"ttl", 2, RESP_CMD_KEYS, cmd_ttl},
    {"type", 2, RESP_CMD_KEYS | RESP_CMD_READS, cmd_type},
    {"unlink", -2, RESP_CMD_KEYS | RESP_CMD_KEYS_ALL | RESP_CMD_WRITES, cmd_del},
};
const size_t n_resp_key_cmds = ARRAY_SIZE(resp_key_cmds);

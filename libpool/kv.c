/*
 * libpool/kv.c - the KV cache client: puts and gets move values between
 * the caller's buffers and the lenders' memory, carried by this process's
 * poold within what the coordinator granted (xfer.c); the coordinator only
 * says where.
 *
 *	put:  reserve (where, and a version) -> put + flush -> commit
 *	get:  lookup (where, pinned) -> get -> release
 *
 * Batches do each step for all their keys at once. A transfer that fails
 * makes the key a miss (-ENOENT) and tells the coordinator that its lender
 * is suspect.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "common/common.h"
#include "libpool/internal.h"

/*
 * Values up to this size are got and put in one request, poold copying
 * them between this process's window and their places itself, when they
 * are on its node (below, kv_inline()); larger ones are mapped or carried
 * (a copy in poold's loop would cost it more than the round trip saved).
 * A get goes in one request when its buffers are that small: a caller
 * whose buffer is larger expects a larger value.
 */
#define KV_INLINE_VALUE_MAX (16u << 10)

struct pool_kv {
	struct pool *pool;
	bool no_inline; /* poold moves none of this handle's values in one request */
	char ns[POOL_REGION_NAME_MAX + 1];
	char holder[POOL_REGION_NAME_MAX +
		    1]; /* dedup namespaces: the region holding what this handle puts */
};

/* kv_ns_call()'s flag of a stats call that asks the client's own poold alone. */
#define KV_NS_HERE (1u << 30)

static int kv_ns_call(struct pool *pool, Pool__KvNsOp op, const char *ns, uint64_t capacity,
		      unsigned flags, Pool__KvNsReply **ret)
{
	Pool__KvNsRequest req = POOL__KV_NS_REQUEST__INIT;

	req.has_here = req.here = (flags & KV_NS_HERE) != 0;
	req.op = op;
	req.name = (char *)ns;
	req.tier = flags & POOL_KV_DRAM_ONLY ? "dram" : flags & POOL_KV_PERSISTENT ? "pmem" : NULL;
	req.evict = flags & POOL_KV_NO_EVICT ? "none" : NULL;
	req.has_sharded = req.sharded = (flags & POOL_KV_SHARDED) != 0;
	req.replicas = (flags >> 8) & 0xfu;
	req.has_replicas = req.replicas != 0;
	req.has_mode = (flags >> 16) & 01000u;
	req.mode = (flags >> 16) & 0777u;
	if (capacity) {
		req.has_capacity = 1;
		req.capacity = capacity;
	}
	return pool_call(pool, WIRE_KV_NS, &req.base, WIRE_KV_NS_REPLY, (ProtobufCMessage **)ret);
}

POOL_EXPORT int pool_kv_create(struct pool *pool, const char *ns, uint64_t capacity, unsigned flags)
{
	Pool__KvNsReply *rep;
	int rc;

	if (pool == NULL || ns == NULL ||
	    (flags & ~(POOL_KV_DRAM_ONLY | POOL_KV_PERSISTENT | POOL_KV_NO_EVICT | POOL_KV_SHARDED |
		       POOL_KV_REPLICAS(0xf) | POOL_KV_MODE(0777))) != 0 ||
	    ((flags >> 8) & 0xfu) > 4 || (flags & POOL_KV_DRAM_ONLY && flags & POOL_KV_PERSISTENT))
		return pool_err(-EINVAL, "pool_kv_create: invalid argument");
	rc = kv_ns_call(pool, POOL__KV_NS_OP__KV_NS_OP_CREATE, ns, capacity, flags, &rep);
	if (rc == 0)
		wire_msg_free(&rep->base);
	return rc;
}

POOL_EXPORT int pool_kv_drop(struct pool *pool, const char *ns)
{
	Pool__KvNsReply *rep;
	int rc;

	if (pool == NULL || ns == NULL)
		return pool_err(-EINVAL, "pool_kv_drop: invalid argument");
	rc = kv_ns_call(pool, POOL__KV_NS_OP__KV_NS_OP_DROP, ns, 0, 0, &rep);
	if (rc == 0)
		wire_msg_free(&rep->base);
	return rc;
}

POOL_EXPORT int pool_kv_open(struct pool *pool, const char *ns, struct pool_kv **ret_kv)
{
	Pool__KvNsReply *rep;
	struct pool_kv *kv;
	int rc;

	if (pool == NULL || ns == NULL || ret_kv == NULL || *ns == '\0' || strlen(ns) > 63)
		return pool_err(-EINVAL, "pool_kv_open: invalid argument");
	/* (whether it is there: a sharded one's owners are not all asked, nor needed up) */
	rc = kv_ns_call(pool, POOL__KV_NS_OP__KV_NS_OP_STATS, ns, 0, KV_NS_HERE, &rep);
	if (rc < 0)
		return rc;
	wire_msg_free(&rep->base);
	kv = calloc(1, sizeof(*kv));
	if (kv == NULL)
		return pool_err(-ENOMEM, "out of memory");
	kv->pool = pool;
	snprintf(kv->ns, sizeof(kv->ns), "%s", ns);
	*ret_kv = kv;
	return 0;
}

POOL_EXPORT void pool_kv_close(struct pool_kv *kv)
{
	free(kv);
}

/*
 * The keys of a sharded namespace's shard that moves are refused while its
 * keys go to the new owner (-EAGAIN there, -ESTALE where a map is behind,
 * nothing done): a request of op that failed so with rc is asked again,
 * after 1 ms, then twice as long each time up to 64 ms, for at most
 * KV_MOVE_WAIT_MS in all. A commit, an abort or a release is not: what it
 * names was the last owner's.
 */
#define KV_MOVE_WAIT_MS 3000
static bool kv_move_again(int rc, Pool__KvOp op, uint64_t waited_ms)
{
	return (rc == -EAGAIN || rc == -ESTALE) && op != POOL__KV_OP__KV_OP_COMMIT &&
	       op != POOL__KV_OP__KV_OP_ABORT && op != POOL__KV_OP__KV_OP_RELEASE &&
	       waited_ms < KV_MOVE_WAIT_MS;
}

static void kv_move_wait(uint64_t *waited_ms)
{
	uint64_t ms = *waited_ms == 0 ? 1 : MIN(*waited_ms, (uint64_t)64);
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
	*waited_ms += ms;
}

static bool kv_moving(int rc, Pool__KvOp op, uint64_t *waited_ms)
{
	if (!kv_move_again(rc, op, *waited_ms))
		return false;
	kv_move_wait(waited_ms);
	return true;
}

/* A put's pin (pool_kv_put_pinned()), as a commit or put request asks it. */
struct kv_pin_ask {
	unsigned pin; /* POOL_KV_PIN_*: POOL_KV_PIN_KEEP asks nothing */
	uint64_t ms;
};

static void kv_pin_req(Pool__KvRequest *req, const struct kv_pin_ask *pin)
{
	if (pin == NULL || pin->pin == POOL_KV_PIN_KEEP)
		return;
	req->has_retain = 1;
	req->retain = pin->pin == POOL_KV_PIN_HARD   ? POOL__KV_RETAIN__KV_RETAIN_HARD
		      : pin->pin == POOL_KV_PIN_SOFT ? POOL__KV_RETAIN__KV_RETAIN_SOFT
						     : POOL__KV_RETAIN__KV_RETAIN_NONE;
	req->has_retain_ms = pin->ms > 0;
	req->retain_ms = pin->ms;
}

/* A pin a put may ask (POOL_KV_PIN_*): 0, or -EINVAL said. */
static int kv_check_pin(unsigned pin, uint64_t pin_ms)
{
	if (pin > POOL_KV_PIN_HARD || pin_ms > POOL_KV_PIN_MS_MAX ||
	    (pin_ms > 0 && pin != POOL_KV_PIN_SOFT && pin != POOL_KV_PIN_HARD))
		return pool_err(-EINVAL,
				"pin %u for %llu ms: POOL_KV_PIN_KEEP, _NONE, or _SOFT or _HARD "
				"for up to 2^40 ms (0: as long as the value lives)",
				pin, (unsigned long long)pin_ms);
	return 0;
}

/* A request on n keys, a commit pinning them as pin asks (NULL: nothing). */
static int kv_call_pinned(struct pool_kv *kv, Pool__KvOp op, size_t n, const void *const *keys,
			  const size_t *klens, uint64_t *sizes, uint64_t *versions,
			  const struct kv_pin_ask *pin, Pool__KvReply **ret)
{
	Pool__KvRequest req = POOL__KV_REQUEST__INIT;
	ProtobufCBinaryData *k;
	uint64_t waited = 0;
	size_t i;
	int rc;

	k = calloc(n ? n : 1, sizeof(*k));
	if (k == NULL)
		return pool_err(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		if (keys[i] == NULL || klens[i] == 0 || klens[i] > POOL_KV_KEY_MAX) {
			free(k);
			return pool_err(-EINVAL, "key %zu: 1 to %d bytes", i, POOL_KV_KEY_MAX);
		}
		k[i].data = (uint8_t *)keys[i];
		k[i].len = klens[i];
	}
	req.op = op;
	req.ns = kv->ns;
	req.keys = k;
	req.n_keys = n;
	req.sizes = sizes;
	req.n_sizes = sizes ? n : 0;
	req.versions = versions;
	req.n_versions = versions ? n : 0;
	req.holder = kv->holder[0] != '\0' ? kv->holder : NULL;
	kv_pin_req(&req, pin);
	if (ret == NULL) { /* the outcome does not matter: no round trip */
		rc = pool_send(kv->pool, WIRE_KV, &req.base, WIRE_KV_REPLY);
		free(k);
		return rc;
	}
	do
		rc = pool_call(kv->pool, WIRE_KV, &req.base, WIRE_KV_REPLY,
			       (ProtobufCMessage **)ret);
	while (rc < 0 && kv_moving(rc, op, &waited));
	free(k);
	/* match, and the dedup namespaces' adopt, adopted and recount, answer with a count */
	if (rc == 0 && op != POOL__KV_OP__KV_OP_MATCH && op != POOL__KV_OP__KV_OP_ADOPT &&
	    op != POOL__KV_OP__KV_OP_ADOPTED && op != POOL__KV_OP__KV_OP_RECOUNT &&
	    (*ret)->n_locations != n) {
		wire_msg_free(&(*ret)->base);
		return pool_err(POOL_EPROTOCOL, "the coordinator answered %zu keys of %zu",
				(*ret)->n_locations, n);
	}
	return rc;
}

static int kv_call(struct pool_kv *kv, Pool__KvOp op, size_t n, const void *const *keys,
		   const size_t *klens, uint64_t *sizes, uint64_t *versions, Pool__KvReply **ret)
{
	return kv_call_pinned(kv, op, n, keys, klens, sizes, versions, NULL, ret);
}

/*
 * Tell the coordinator a lender failed a transfer of key (best effort); the
 * key shows it is a transfer this caller was given.
 */
static void kv_report(struct pool_kv *kv, uint32_t node, const void *key, size_t klen)
{
	Pool__KvRequest req = POOL__KV_REQUEST__INIT;
	ProtobufCBinaryData k = {.len = klen, .data = (uint8_t *)key};
	Pool__KvReply *rep;

	req.op = POOL__KV_OP__KV_OP_FAILED;
	req.ns = kv->ns;
	req.has_node = 1;
	req.node = node;
	req.keys = &k;
	req.n_keys = 1;
	if (pool_call(kv->pool, WIRE_KV, &req.base, WIRE_KV_REPLY, (ProtobufCMessage **)&rep) == 0)
		wire_msg_free(&rep->base);
}

/*
 * The value at loc in this process's mapping of its arena, when its lender
 * is this node and poold passes the arena to this caller (root); NULL
 * otherwise, and poold carries the value.
 */
static void *kv_map(struct pool *pool, const Pool__KvLocation *loc, size_t len)
{
	uint64_t size = 0;
	void *base;
	int rc;

	if (!loc->has_node || loc->node != wire_client_node_id(pool->wc))
		return NULL;
	pthread_mutex_lock(&pool->lock);
	rc = pool_arena_map(pool, loc->arena, &base, &size);
	pthread_mutex_unlock(&pool->lock);
	if (rc < 0 || loc->off > size || len > size - loc->off)
		return NULL;
	return (char *)base + loc->off;
}

/* Place p of a location: 0 is its own, 1.. its copies (as a location of its own). */
static void kv_place_of(const Pool__KvLocation *loc, size_t p, Pool__KvLocation *where)
{
	*where = *loc;
	if (p == 0)
		return;
	where->node = loc->copies[p - 1]->node;
	where->arena = loc->copies[p - 1]->arena;
	where->off = loc->copies[p - 1]->off;
}

/* A transfer that failed because its lender is unreachable means the value is lost to us. */
static int kv_lost(int rc)
{
	return rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ETIMEDOUT || rc == -ECANCELED
		   ? POOL_ELOST
		   : rc;
}

/*
 * Move the located keys' values (status[i] == 0): a put goes to every place
 * of its key, a get reads its key's first place and, when that transfer
 * fails, the next one. A round's transfers are carried together by poold
 * (values in this process's mapping of a local arena are copied here); a
 * key whose transfers fail gets the error in status[], and the lenders that
 * failed are reported.
 */
static int kv_transfer(struct pool_kv *kv, Pool__KvReply *rep, size_t n, const void *const *keys,
		       const size_t *klens, void *const *bufs, const size_t *lens, bool write,
		       int *status)
{
	struct pool *pool = kv->pool;
	struct pool_xfer_item *items;
	size_t *key_of, *failed;
	size_t i, k, p, nitems = 0, round, places = 1, nfailed = 0;
	int rc = 0;

	for (i = 0; i < n; i++)
		places = MAX(places, 1 + rep->locations[i]->n_copies);
	items = calloc(n * places + 1, sizeof(*items));
	key_of = calloc(n * places + 1, sizeof(*key_of));
	failed = calloc(n * places + 1, sizeof(*failed));
	if (items == NULL || key_of == NULL || failed == NULL) {
		rc = pool_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (round = 0; round < (write ? 1 : places) && rc == 0; round++) {
		size_t first = nitems;

		for (i = 0; i < n; i++) {
			const Pool__KvLocation *loc = rep->locations[i];

			/* Located keys only; a get tries a next place when the last one failed. */
			if (loc->status != 0 || (round == 0 && status[i] != 0) ||
			    (round > 0 && (status[i] == 0 || loc->n_copies < round)))
				continue;
			status[i] = 0;
			for (p = write ? 0 : round; p <= (write ? loc->n_copies : round); p++) {
				Pool__KvLocation where;
				void *local;

				if (lens[i] == 0)
					continue; /* a get of the length alone: nothing to move */
				kv_place_of(loc, p, &where);
				local = kv_map(pool, &where, lens[i]);
				if (local != NULL) {
					if (write)
						memcpy(local, bufs[i], lens[i]);
					else
						memcpy(bufs[i], local, lens[i]);
					continue;
				}
				key_of[nitems] = i;
				items[nitems++] = (struct pool_xfer_item){
				    .op = write ? POOL_XFER_WRITE : POOL_XFER_READ,
				    .place = true,
				    .node = where.node,
				    .arena = where.arena,
				    .off = where.off,
				    .buf = bufs[i],
				    .len = lens[i]};
			}
		}
		rc = pool_xfer_run(pool, items + first, nitems - first);
		for (k = first; rc == 0 && k < nitems; k++)
			if (items[k].status < 0) {
				status[key_of[k]] = kv_lost(items[k].status);
				failed[nfailed++] = k;
			}
	}
	for (k = 0; k < nfailed; k++) {
		const struct pool_xfer_item *it = &items[failed[k]];

		for (i = 0; i < k && items[failed[i]].node != it->node; i++)
			;
		if (i == k && status[key_of[failed[k]]] == POOL_ELOST) /* once per lender */
			kv_report(kv, it->node, keys[key_of[failed[k]]], klens[key_of[failed[k]]]);
	}
out:
	free(items);
	free(key_of);
	free(failed);
	return rc;
}

/* A batch put the two-phase way: reserve, write each place, commit (arguments checked). */
static int kv_put_phased(struct pool_kv *kv, size_t n, const void *const *keys, const size_t *klens,
			 const void *const *values, const size_t *vlens,
			 const struct kv_pin_ask *pin, int *ret_status)
{
	uint64_t *sizes = NULL, *versions = NULL;
	Pool__KvReply *rep = NULL, *crep = NULL;
	const void **akeys = NULL;
	size_t *aklens = NULL;
	int *status = ret_status, rc;
	size_t i, k, good = 0;

	sizes = calloc(n ? n : 1, sizeof(*sizes));
	versions = calloc(n ? n : 1, sizeof(*versions));
	akeys = calloc(n ? n : 1, sizeof(*akeys));
	aklens = calloc(n ? n : 1, sizeof(*aklens));
	if (sizes == NULL || versions == NULL || akeys == NULL || aklens == NULL) {
		rc = pool_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		sizes[i] = vlens[i];
	rc = kv_call(kv, POOL__KV_OP__KV_OP_RESERVE, n, keys, klens, sizes, NULL, &rep);
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i++)
		status[i] = rep->locations[i]->status;
	rc = kv_transfer(kv, rep, n, keys, klens, (void *const *)values, vlens, true, status);
	if (rc < 0)
		goto out;
	/* Writes that failed give their reservation back at once. */
	for (i = 0, k = 0; i < n; i++)
		if (status[i] < 0 && rep->locations[i]->status == 0) {
			versions[k] = rep->locations[i]->version;
			akeys[k] = keys[i];
			aklens[k++] = klens[i];
		}
	if (k > 0 &&
	    kv_call(kv, POOL__KV_OP__KV_OP_ABORT, k, akeys, aklens, NULL, versions, &crep) == 0) {
		wire_msg_free(&crep->base);
		crep = NULL;
	}
	for (i = 0, k = 0; i < n; i++) {
		versions[i] = status[i] == 0 ? rep->locations[i]->version : 0;
		k += status[i] == 0;
	}
	if (k == 0) { /* nothing was reserved (a dedup store had every value): nothing to commit */
		rc = 0;
		goto out;
	}
	/* Commit what was written; failed keys commit nothing (their version is 0). */
	rc = kv_call_pinned(kv, POOL__KV_OP__KV_OP_COMMIT, n, keys, klens, NULL, versions, pin,
			    &crep);
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (status[i] == 0)
			status[i] = crep->locations[i]->status;
		good += status[i] == 0;
	}
	rc = (int)good;
out:
	if (rep != NULL)
		wire_msg_free(&rep->base);
	if (crep != NULL)
		wire_msg_free(&crep->base);
	free(sizes);
	free(versions);
	free(akeys);
	free(aklens);
	return rc;
}

/*
 * A batch get the two-phase way: look up (pinned), read a place of each,
 * release (arguments checked).
 */
static int kv_get_phased(struct pool_kv *kv, size_t n, const void *const *keys, const size_t *klens,
			 void *const *bufs, const size_t *buflens, size_t *ret_vlens,
			 int *ret_status)
{
	Pool__KvReply *rep = NULL;
	uint64_t *versions = NULL;
	size_t *lens = NULL, i, good = 0, pinned = 0;
	int *status = ret_status, rc;

	versions = calloc(n ? n : 1, sizeof(*versions));
	lens = calloc(n ? n : 1, sizeof(*lens));
	if (versions == NULL || lens == NULL) {
		rc = pool_err(-ENOMEM, "out of memory");
		goto out;
	}
	rc = kv_call(kv, POOL__KV_OP__KV_OP_LOOKUP, n, keys, klens, NULL, NULL, &rep);
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i++) {
		status[i] = rep->locations[i]->status;
		if (status[i] != 0)
			continue;
		versions[i] = rep->locations[i]->version;
		ret_vlens[i] = rep->locations[i]->len;
		lens[i] = MIN(ret_vlens[i], buflens[i]);
		pinned++;
	}
	rc = kv_transfer(kv, rep, n, keys, klens, bufs, lens, false, status);
	/* Unpin what lookup pinned, whatever the transfers did. */
	if (pinned > 0) {
		const void **rkeys = calloc(pinned, sizeof(*rkeys));
		size_t *rklens = calloc(pinned, sizeof(*rklens)), k = 0;
		uint64_t *rv = calloc(pinned, sizeof(*rv));

		for (i = 0; rkeys && rklens && rv && i < n; i++)
			if (versions[i] != 0) {
				rkeys[k] = keys[i];
				rklens[k] = klens[i];
				rv[k++] = versions[i];
			}
		if (k == pinned)
			kv_call(kv, POOL__KV_OP__KV_OP_RELEASE, k, rkeys, rklens, NULL, rv, NULL);
		free(rkeys);
		free(rklens);
		free(rv);
	}
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (status[i] < 0 && status[i] != -ENOENT && status[i] != -EINVAL)
			status[i] = -ENOENT; /* a lost value is a miss: the engine recomputes */
		good += status[i] == 0;
	}
	rc = (int)good;
out:
	if (rep != NULL)
		wire_msg_free(&rep->base);
	free(versions);
	free(lens);
	return rc;
}

/*
 * Whether a get or put of n values (buffers) of lens[i] bytes goes in one
 * request: each up to KV_INLINE_VALUE_MAX, POOL_KV_INLINE_MAX in all as
 * laid out in the window, to a namespace that is not a dedup store,
 * unless poold moved none of this handle's values so before.
 */
static bool kv_inline_fits(const struct pool_kv *kv, size_t n, const size_t *lens)
{
	uint64_t total = 0;
	size_t i;

	if (kv->no_inline || kv->holder[0] != '\0' || n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (lens[i] > KV_INLINE_VALUE_MAX)
			return false;
		total += (lens[i] + 63) & ~(uint64_t)63;
	}
	return total <= POOL_KV_INLINE_MAX;
}

/*
 * One try of kv_inline()'s request, data_lock held: the values laid out in
 * a window (a put's copied into the staging one), then asked for.
 */
static int kv_inline_call(struct pool_kv *kv, Pool__KvOp op, size_t n, ProtobufCBinaryData *k,
			  uint64_t *sizes, uint64_t *offs, void *const *bufs, const size_t *lens,
			  const struct kv_pin_ask *pin, char **ret_stage, Pool__KvReply **ret)
{
	Pool__KvRequest req = POOL__KV_REQUEST__INIT;
	uint32_t window = 0;
	size_t i;
	int rc = pool_xfer_lay(kv->pool, n, bufs, lens, &window, offs, ret_stage);

	for (i = 0; rc == 0 && *ret_stage != NULL && op == POOL__KV_OP__KV_OP_PUT && i < n; i++)
		memcpy(*ret_stage + offs[i], bufs[i], lens[i]);
	if (rc < 0)
		return rc;
	req.op = op;
	req.ns = kv->ns;
	req.keys = k;
	req.n_keys = n;
	req.sizes = sizes;
	req.n_sizes = n;
	req.has_window = 1;
	req.window = window;
	req.offs = offs;
	req.n_offs = n;
	kv_pin_req(&req, pin);
	return pool_call(kv->pool, WIRE_KV, &req.base, WIRE_KV_REPLY, (ProtobufCMessage **)ret);
}

/*
 * A get or put in one request (KV_OP_GET, KV_OP_PUT): the values go
 * through a window poold maps (the caller's own pool_buf_alloc() buffer,
 * else the staging window), and poold copies them from or to their places
 * on its node and answers each key: 0, a miss, an error, or -EXDEV for a
 * value it does not hold on its node, which the caller moves the
 * two-phase way (so is a get's value longer than its buffer, -EMSGSIZE). No
 * pin is held, no reservation left. Returns the keys done, or a -errno of
 * the whole request (then this handle goes the two-phase way from now on,
 * as it does when poold moved none of the keys for want of them on its
 * node).
 */
static int kv_inline(struct pool_kv *kv, Pool__KvOp op, size_t n, const void *const *keys,
		     const size_t *klens, void *const *bufs, const size_t *lens, size_t *ret_vlens,
		     const struct kv_pin_ask *pin, int *status)
{
	struct pool *pool = kv->pool;
	Pool__KvReply *rep = NULL;
	ProtobufCBinaryData *k = calloc(n, sizeof(*k));
	uint64_t *sizes = calloc(n, sizeof(*sizes)), *offs = calloc(n, sizeof(*offs)), waited = 0;
	size_t i, done = 0, moved = 0, remote = 0;
	char *stage = NULL;
	int rc = 0;

	if (k == NULL || sizes == NULL || offs == NULL)
		rc = pool_err(-ENOMEM, "out of memory");
	for (i = 0; rc == 0 && i < n; i++) {
		k[i].data = (uint8_t *)keys[i];
		k[i].len = klens[i];
		sizes[i] = lens[i];
	}
	/*
	 * A shard that moves is waited for without the window held: other
	 * threads' transfers share it, and the values are laid out (and a
	 * put's copied in) again for each try.
	 */
	for (;;) {
		pthread_mutex_lock(&pool->data_lock);
		if (rc == 0)
			rc = kv_inline_call(kv, op, n, k, sizes, offs, bufs, lens, pin, &stage,
					    &rep);
		if (rc == 0 || !kv_move_again(rc, op, waited))
			break;
		pthread_mutex_unlock(&pool->data_lock);
		kv_move_wait(&waited);
		rc = 0;
	}
	if (rc == 0 && rep->n_locations != n)
		rc =
		    pool_err(POOL_EPROTOCOL, "poold answered %zu keys of %zu", rep->n_locations, n);
	for (i = 0; rc == 0 && i < n; i++) {
		const Pool__KvLocation *loc = rep->locations[i];

		status[i] = loc->status;
		moved += status[i] != -EXDEV && status[i] != -EMSGSIZE;
		remote += status[i] == -EXDEV;
		if (status[i] != 0)
			continue;
		done++;
		if (op == POOL__KV_OP__KV_OP_GET) {
			ret_vlens[i] = loc->len;
			if (stage != NULL)
				memcpy(bufs[i], stage + offs[i], MIN(loc->len, lens[i]));
		}
	}
	pthread_mutex_unlock(&pool->data_lock);
	if (rc < 0 || (moved == 0 && remote > 0))
		kv->no_inline = true;
	if (rep != NULL)
		wire_msg_free(&rep->base);
	free(k);
	free(sizes);
	free(offs);
	return rc < 0 ? rc : (int)done;
}

/*
 * The keys kv_inline() left to the two-phase way (-EXDEV, -EMSGSIZE), moved that way;
 * done, the keys it did. The keys done in all, or -errno.
 */
static int kv_rest(struct pool_kv *kv, bool put, size_t n, const void *const *keys,
		   const size_t *klens, void *const *bufs, const size_t *lens, size_t *ret_vlens,
		   const struct kv_pin_ask *pin, int *status, int done)
{
	const void **rk = NULL;
	void **rb = NULL;
	size_t *rkl = NULL, *rl = NULL, *rv = NULL, m = 0, i, j;
	int *rs = NULL, rc;

	for (i = 0; i < n; i++)
		m += status[i] == -EXDEV || status[i] == -EMSGSIZE;
	if (m == 0)
		return done;
	rk = calloc(m, sizeof(*rk));
	rb = calloc(m, sizeof(*rb));
	rkl = calloc(m, sizeof(*rkl));
	rl = calloc(m, sizeof(*rl));
	rv = calloc(m, sizeof(*rv));
	rs = calloc(m, sizeof(*rs));
	if (rk == NULL || rb == NULL || rkl == NULL || rl == NULL || rv == NULL || rs == NULL) {
		rc = pool_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0, j = 0; i < n; i++)
		if (status[i] == -EXDEV || status[i] == -EMSGSIZE) {
			rk[j] = keys[i];
			rkl[j] = klens[i];
			rb[j] = bufs[i];
			rl[j++] = lens[i];
		}
	rc = put ? kv_put_phased(kv, m, rk, rkl, (const void *const *)rb, rl, pin, rs)
		 : kv_get_phased(kv, m, rk, rkl, rb, rl, rv, rs);
	for (i = 0, j = 0; rc >= 0 && i < n; i++)
		if (status[i] == -EXDEV || status[i] == -EMSGSIZE) {
			status[i] = rs[j];
			if (!put && rs[j] == 0)
				ret_vlens[i] = rv[j];
			j++;
		}
	if (rc >= 0)
		rc += done;
out:
	free(rk);
	free(rb);
	free(rkl);
	free(rl);
	free(rv);
	free(rs);
	return rc;
}

POOL_EXPORT int pool_kv_put_batch_pinned(struct pool_kv *kv, size_t n, const void *const *keys,
					 const size_t *klens, const void *const *values,
					 const size_t *vlens, unsigned pin, uint64_t pin_ms,
					 int *ret_status)
{
	struct kv_pin_ask ask = {pin, pin_ms};
	size_t i;
	int rc;

	if (kv == NULL || (n > 0 && (keys == NULL || klens == NULL || values == NULL ||
				     vlens == NULL || ret_status == NULL)))
		return pool_err(-EINVAL, "pool_kv_put_batch: invalid argument");
	rc = kv_check_pin(pin, pin_ms);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		if (keys[i] == NULL || klens[i] == 0 || klens[i] > POOL_KV_KEY_MAX)
			return pool_err(-EINVAL, "key %zu: 1 to %d bytes", i, POOL_KV_KEY_MAX);
		if (values[i] == NULL || vlens[i] == 0 || vlens[i] > POOL_KV_VALUE_MAX)
			return pool_err(-EINVAL, "value %zu: 1 byte to 64 MiB", i);
	}
	if (kv_inline_fits(kv, n, vlens) &&
	    (rc = kv_inline(kv, POOL__KV_OP__KV_OP_PUT, n, keys, klens, (void *const *)values,
			    vlens, NULL, &ask, ret_status)) >= 0)
		return kv_rest(kv, true, n, keys, klens, (void *const *)values, vlens, NULL, &ask,
			       ret_status, rc);
	return kv_put_phased(kv, n, keys, klens, values, vlens, &ask, ret_status);
}

/* A put of values a dedup store likely has (see internal.h): the two-phase way. */
int kv_put_batch_known(struct pool_kv *kv, size_t n, const void *const *keys, const size_t *klens,
		       const void *const *values, const size_t *vlens, int *ret_status)
{
	static const struct kv_pin_ask keep = {POOL_KV_PIN_KEEP, 0};

	return kv_put_phased(kv, n, keys, klens, values, vlens, &keep, ret_status);
}

POOL_EXPORT int pool_kv_put_batch(struct pool_kv *kv, size_t n, const void *const *keys,
				  const size_t *klens, const void *const *values,
				  const size_t *vlens, int *ret_status)
{
	return pool_kv_put_batch_pinned(kv, n, keys, klens, values, vlens, POOL_KV_PIN_KEEP, 0,
					ret_status);
}

POOL_EXPORT int pool_kv_get_batch(struct pool_kv *kv, size_t n, const void *const *keys,
				  const size_t *klens, void *const *bufs, const size_t *buflens,
				  size_t *ret_vlens, int *ret_status)
{
	size_t i;
	int rc;

	if (kv == NULL || (n > 0 && (keys == NULL || klens == NULL || bufs == NULL ||
				     buflens == NULL || ret_vlens == NULL || ret_status == NULL)))
		return pool_err(-EINVAL, "pool_kv_get_batch: invalid argument");
	for (i = 0; i < n; i++)
		if (keys[i] == NULL || klens[i] == 0 || klens[i] > POOL_KV_KEY_MAX)
			return pool_err(-EINVAL, "key %zu: 1 to %d bytes", i, POOL_KV_KEY_MAX);
	if (kv_inline_fits(kv, n, buflens) &&
	    (rc = kv_inline(kv, POOL__KV_OP__KV_OP_GET, n, keys, klens, bufs, buflens, ret_vlens,
			    NULL, ret_status)) >= 0)
		return kv_rest(kv, false, n, keys, klens, bufs, buflens, ret_vlens, NULL,
			       ret_status, rc);
	return kv_get_phased(kv, n, keys, klens, bufs, buflens, ret_vlens, ret_status);
}

POOL_EXPORT int pool_kv_put_pinned(struct pool_kv *kv, const void *key, size_t klen,
				   const void *value, size_t vlen, unsigned pin, uint64_t pin_ms)
{
	int status = 0, rc;

	rc = pool_kv_put_batch_pinned(kv, 1, &key, &klen, &value, &vlen, pin, pin_ms, &status);
	if (rc < 0)
		return rc;
	return status < 0 ? pool_err(status, "put: %s", err_str(status)) : 0;
}

POOL_EXPORT int pool_kv_put(struct pool_kv *kv, const void *key, size_t klen, const void *value,
			    size_t vlen)
{
	return pool_kv_put_pinned(kv, key, klen, value, vlen, POOL_KV_PIN_KEEP, 0);
}

POOL_EXPORT int pool_kv_get(struct pool_kv *kv, const void *key, size_t klen, void *buf,
			    size_t buflen, size_t *ret_vlen)
{
	size_t vlen = 0;
	int status = 0, rc;

	rc = pool_kv_get_batch(kv, 1, &key, &klen, &buf, &buflen, &vlen, &status);
	if (rc < 0)
		return rc;
	if (status < 0)
		return pool_err(status, "get: %s",
				status == -ENOENT ? "not found" : err_str(status));
	if (ret_vlen != NULL)
		*ret_vlen = vlen;
	return 0;
}

/*
 * Zero-copy access. A ref holds a value for its caller: an acquired one
 * pinned in place in the arena mapping (version != 0) or copied into buf;
 * a reserved one's reservation (version), written in place or in buf
 * (staging, put at commit). The server keeps a pinned or reserved version's
 * memory out of reuse until the ref ends, or the session does.
 */
struct pool_kv_ref {
	struct pool_kv *kv;
	void *data; /* the value: in the arena mapping, or buf */
	void *buf;  /* a copy or a staging buffer, when not in place */
	size_t len;
	uint64_t version;   /* pinned or reserved; 0: nothing held at the server */
	Pool__KvReply *rep; /* a staged reservation: where the value goes */
	bool reserved;	    /* from pool_kv_reserve(): ends with commit or abort */
	bool local;	    /* data is in place */
	size_t klen;
	uint8_t key[];
};

static int kv_check(struct pool_kv *kv, const void *key, size_t klen, const char *what)
{
	if (kv == NULL || key == NULL)
		return pool_err(-EINVAL, "%s: invalid argument", what);
	if (klen == 0 || klen > POOL_KV_KEY_MAX)
		return pool_err(-EINVAL, "%s: a key is 1 to %d bytes, not %zu", what,
				POOL_KV_KEY_MAX, klen);
	return 0;
}

static int kv_check_vlen(size_t vlen, const char *what)
{
	if (vlen == 0 || vlen > POOL_KV_VALUE_MAX)
		return pool_err(-EINVAL, "%s: a value is 1 byte to 64 MiB, not %zu", what, vlen);
	return 0;
}

static struct pool_kv_ref *kv_ref_new(struct pool_kv *kv, const void *key, size_t klen)
{
	struct pool_kv_ref *ref = calloc(1, sizeof(*ref) + klen);

	if (ref == NULL)
		return NULL;
	ref->kv = kv;
	ref->klen = klen;
	memcpy(ref->key, key, klen);
	return ref;
}

static void kv_ref_free(struct pool_kv_ref *ref)
{
	if (ref->rep != NULL)
		wire_msg_free(&ref->rep->base);
	free(ref->buf);
	free(ref);
}

/*
 * Release a ref's pin, or commit or abort its reservation: the key's status
 * at the server (0, or a negative code without a message).
 */
static int kv_ref_end(struct pool_kv_ref *ref, Pool__KvOp op, const struct kv_pin_ask *pin)
{
	const void *key = ref->key;
	Pool__KvReply *rep;
	int rc;

	if (op == POOL__KV_OP__KV_OP_RELEASE) { /* nothing to learn from its reply */
		rc = kv_call(ref->kv, op, 1, &key, &ref->klen, NULL, &ref->version, NULL);
		ref->version = 0;
		return rc;
	}
	rc = kv_call_pinned(ref->kv, op, 1, &key, &ref->klen, NULL, &ref->version, pin, &rep);
	if (rc < 0)
		return rc;
	rc = rep->locations[0]->status;
	wire_msg_free(&rep->base);
	ref->version = 0;
	return rc;
}

/* A value that is not in place: one get into a buffer of the ref's own, then unpin. */
static int kv_acquire_copy(struct pool_kv_ref *ref, Pool__KvReply *rep)
{
	const void *key = ref->key;
	int status = 0, rc;

	ref->buf = malloc(ref->len);
	if (ref->buf == NULL)
		rc = pool_err(-ENOMEM, "out of memory");
	else
		rc = kv_transfer(ref->kv, rep, 1, &key, &ref->klen, &ref->buf, &ref->len, false,
				 &status);
	kv_ref_end(ref, POOL__KV_OP__KV_OP_RELEASE, NULL);
	if (rc < 0)
		return rc;
	if (status < 0) /* a lost value is a miss, as for pool_kv_get() */
		return pool_err(-ENOENT, "acquire: the value could not be read: %s",
				err_str(status));
	ref->data = ref->buf;
	return 0;
}

POOL_EXPORT int pool_kv_acquire(struct pool_kv *kv, const void *key, size_t klen,
				const void **ret_data, size_t *ret_len,
				struct pool_kv_ref **ret_ref)
{
	struct pool_kv_ref *ref;
	Pool__KvReply *rep;
	int rc;

	rc = kv_check(kv, key, klen, "pool_kv_acquire");
	if (rc == 0 && (ret_data == NULL || ret_len == NULL || ret_ref == NULL))
		rc = pool_err(-EINVAL, "pool_kv_acquire: invalid argument");
	if (rc < 0)
		return rc;
	ref = kv_ref_new(kv, key, klen);
	if (ref == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = kv_call(kv, POOL__KV_OP__KV_OP_LOOKUP, 1, &key, &klen, NULL, NULL, &rep);
	if (rc < 0)
		goto out_ref;
	rc = rep->locations[0]->status;
	if (rc < 0) {
		rc = pool_err(rc, "acquire: %s", rc == -ENOENT ? "not found" : err_str(rc));
		goto out_rep;
	}
	ref->version = rep->locations[0]->version;
	ref->len = rep->locations[0]->len;
	/* In place, the pin stays until pool_kv_release(): nobody reuses the memory. */
	ref->data = kv_map(kv->pool, rep->locations[0], ref->len);
	ref->local = ref->data != NULL;
	if (!ref->local)
		rc = kv_acquire_copy(ref, rep);
	if (rc < 0)
		goto out_rep;
	wire_msg_free(&rep->base);
	*ret_data = ref->data;
	*ret_len = ref->len;
	*ret_ref = ref;
	return 0;
out_rep:
	wire_msg_free(&rep->base);
out_ref:
	kv_ref_free(ref);
	return rc;
}

POOL_EXPORT int pool_kv_release(struct pool_kv_ref *ref)
{
	int rc = 0;

	if (ref == NULL)
		return pool_err(-EINVAL, "pool_kv_release: invalid argument");
	if (ref->reserved)
		return pool_err(-EINVAL, "pool_kv_release: a reserved value ends with "
					 "pool_kv_commit() or pool_kv_abort()");
	if (ref->version != 0)
		rc = kv_ref_end(ref, POOL__KV_OP__KV_OP_RELEASE, NULL);
	kv_ref_free(ref);
	return rc < 0 ? pool_err(rc, "release: %s", err_str(rc)) : 0;
}

POOL_EXPORT int pool_kv_ref_local(const struct pool_kv_ref *ref)
{
	if (ref == NULL)
		return pool_err(-EINVAL, "pool_kv_ref_local: invalid argument");
	return ref->local;
}

POOL_EXPORT int pool_kv_reserve(struct pool_kv *kv, const void *key, size_t klen, size_t vlen,
				void **ret_data, struct pool_kv_ref **ret_ref)
{
	struct pool_kv_ref *ref;
	uint64_t size = vlen;
	Pool__KvReply *rep;
	int rc;

	rc = kv_check(kv, key, klen, "pool_kv_reserve");
	if (rc == 0)
		rc = kv_check_vlen(vlen, "pool_kv_reserve");
	if (rc == 0 && (ret_data == NULL || ret_ref == NULL))
		rc = pool_err(-EINVAL, "pool_kv_reserve: invalid argument");
	if (rc < 0)
		return rc;
	ref = kv_ref_new(kv, key, klen);
	if (ref == NULL)
		return pool_err(-ENOMEM, "out of memory");
	ref->reserved = true;
	ref->len = vlen;
	rc = kv_call(kv, POOL__KV_OP__KV_OP_RESERVE, 1, &key, &klen, &size, NULL, &rep);
	if (rc < 0)
		goto out_ref;
	rc = rep->locations[0]->status;
	if (rc < 0) {
		rc = pool_err(rc, "reserve: %s", err_str(rc));
		goto out_rep;
	}
	ref->version = rep->locations[0]->version;
	/* In place when it is here, unless copies elsewhere are to be written too. */
	if (rep->locations[0]->n_copies == 0)
		ref->data = kv_map(kv->pool, rep->locations[0], vlen);
	ref->local = ref->data != NULL;
	if (!ref->local) { /* staged here, put at commit: keep where it goes */
		ref->data = ref->buf = malloc(vlen);
		if (ref->buf == NULL) {
			kv_ref_end(ref, POOL__KV_OP__KV_OP_ABORT, NULL);
			rc = pool_err(-ENOMEM, "out of memory");
			goto out_rep;
		}
		ref->rep = rep;
		rep = NULL;
	}
	if (rep != NULL)
		wire_msg_free(&rep->base);
	*ret_data = ref->data;
	*ret_ref = ref;
	return 0;
out_rep:
	wire_msg_free(&rep->base);
out_ref:
	kv_ref_free(ref);
	return rc;
}

/* Check a ref given to commit or abort. */
static int kv_check_reserved(struct pool_kv_ref *ref, const char *what)
{
	if (ref == NULL)
		return pool_err(-EINVAL, "%s: invalid argument", what);
	if (!ref->reserved)
		return pool_err(-EINVAL, "%s: an acquired value ends with pool_kv_release()", what);
	return 0;
}

POOL_EXPORT int pool_kv_commit_pinned(struct pool_kv_ref *ref, unsigned pin, uint64_t pin_ms)
{
	struct kv_pin_ask ask = {pin, pin_ms};
	int status = 0, rc;

	rc = kv_check_reserved(ref, "pool_kv_commit");
	if (rc == 0)
		rc = kv_check_pin(pin, pin_ms);
	if (rc < 0)
		return rc;
	if (!ref->local) {
		const void *key = ref->key;

		rc = kv_transfer(ref->kv, ref->rep, 1, &key, &ref->klen, &ref->buf, &ref->len, true,
				 &status);
		if (rc == 0)
			rc = status;
		if (rc < 0) { /* nothing to commit: the reservation goes back at once */
			kv_ref_end(ref, POOL__KV_OP__KV_OP_ABORT, NULL);
			kv_ref_free(ref);
			return pool_err(rc, "commit: the value could not be written: %s",
					err_str(rc));
		}
	}
	rc = kv_ref_end(ref, POOL__KV_OP__KV_OP_COMMIT, &ask);
	kv_ref_free(ref);
	if (rc == -ESTALE)
		return pool_err(rc, "commit: the reservation is no longer there");
	return rc < 0 ? pool_err(rc, "commit: %s", err_str(rc)) : 0;
}

POOL_EXPORT int pool_kv_commit(struct pool_kv_ref *ref)
{
	return pool_kv_commit_pinned(ref, POOL_KV_PIN_KEEP, 0);
}

POOL_EXPORT int pool_kv_abort(struct pool_kv_ref *ref)
{
	int rc;

	rc = kv_check_reserved(ref, "pool_kv_abort");
	if (rc < 0)
		return rc;
	rc = kv_ref_end(ref, POOL__KV_OP__KV_OP_ABORT, NULL);
	kv_ref_free(ref);
	return rc < 0 ? pool_err(rc, "abort: %s", err_str(rc)) : 0;
}

/*
 * A region mapped here is the buffer of a plain get or put: one transfer
 * between it and the lender, or one copy. Otherwise the value is acquired
 * or reserved (in place when it is on this node, else a buffer) and moved
 * with one region write or read.
 */
POOL_EXPORT int pool_kv_get_region(struct pool_kv *kv, const void *key, size_t klen,
				   struct pool_region *region, uint64_t offset, size_t maxlen,
				   size_t *ret_vlen)
{
	struct pool_kv_ref *ref;
	const void *data;
	size_t vlen;
	void *win;
	int rc;

	rc = kv_check(kv, key, klen, "pool_kv_get_region");
	if (rc == 0 && (region == NULL || maxlen == 0))
		rc = pool_err(-EINVAL, "pool_kv_get_region: %s",
			      region == NULL ? "no region" : "maxlen is 0");
	if (rc == 0)
		rc = pool_region_window(region, offset, maxlen, true, "pool_kv_get_region", &win);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return pool_kv_get(kv, key, klen, win, maxlen, ret_vlen);
	rc = pool_kv_acquire(kv, key, klen, &data, &vlen, &ref);
	if (rc < 0)
		return rc;
	rc = pool_region_write(region, offset, data, MIN(vlen, maxlen));
	if (ref->version != 0) /* quietly: a failed write keeps its message */
		kv_ref_end(ref, POOL__KV_OP__KV_OP_RELEASE, NULL);
	kv_ref_free(ref);
	if (rc == 0 && ret_vlen != NULL)
		*ret_vlen = vlen;
	return rc;
}

POOL_EXPORT int pool_kv_put_region(struct pool_kv *kv, const void *key, size_t klen,
				   struct pool_region *region, uint64_t offset, size_t len)
{
	struct pool_kv_ref *ref;
	void *data, *win;
	int rc;

	rc = kv_check(kv, key, klen, "pool_kv_put_region");
	if (rc == 0)
		rc = kv_check_vlen(len, "pool_kv_put_region");
	if (rc == 0 && region == NULL)
		rc = pool_err(-EINVAL, "pool_kv_put_region: no region");
	if (rc == 0)
		rc = pool_region_window(region, offset, len, false, "pool_kv_put_region", &win);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return pool_kv_put(kv, key, klen, win, len);
	rc = pool_kv_reserve(kv, key, klen, len, &data, &ref);
	if (rc < 0)
		return rc;
	rc = pool_region_read(region, offset, data, len);
	if (rc < 0) {
		kv_ref_end(ref, POOL__KV_OP__KV_OP_ABORT, NULL);
		kv_ref_free(ref);
		return rc;
	}
	return pool_kv_commit(ref);
}

POOL_EXPORT int pool_kv_exists(struct pool_kv *kv, const void *key, size_t klen)
{
	Pool__KvReply *rep;
	int rc;

	if (kv == NULL)
		return pool_err(-EINVAL, "pool_kv_exists: invalid argument");
	rc = kv_call(kv, POOL__KV_OP__KV_OP_EXISTS, 1, &key, &klen, NULL, NULL, &rep);
	if (rc < 0)
		return rc;
	rc = rep->locations[0]->status == 0;
	wire_msg_free(&rep->base);
	return rc;
}

POOL_EXPORT int pool_kv_remove(struct pool_kv *kv, const void *key, size_t klen)
{
	Pool__KvReply *rep;
	int rc;

	if (kv == NULL)
		return pool_err(-EINVAL, "pool_kv_remove: invalid argument");
	rc = kv_call(kv, POOL__KV_OP__KV_OP_REMOVE, 1, &key, &klen, NULL, NULL, &rep);
	if (rc < 0)
		return rc;
	rc = rep->locations[0]->status;
	wire_msg_free(&rep->base);
	return rc < 0 ? pool_err(rc, "remove: %s", err_str(rc)) : 0;
}

POOL_EXPORT int pool_kv_match(struct pool_kv *kv, size_t n, const void *const *keys,
			      const size_t *klens, size_t *ret_count)
{
	Pool__KvReply *rep;
	int rc;

	if (kv == NULL || ret_count == NULL || (n > 0 && (keys == NULL || klens == NULL)))
		return pool_err(-EINVAL, "pool_kv_match: invalid argument");
	rc = kv_call(kv, POOL__KV_OP__KV_OP_MATCH, n, keys, klens, NULL, NULL, &rep);
	if (rc < 0)
		return rc;
	*ret_count = (size_t)rep->count;
	wire_msg_free(&rep->base);
	return 0;
}

POOL_EXPORT int pool_kv_hash_chain(const uint32_t *tokens, size_t ntokens, size_t block_tokens,
				   const uint8_t *parent, const void *salt, size_t salt_len,
				   uint8_t *ret_hashes, size_t max_hashes)
{
	uint8_t prev[16] = {0}, le[4];
	size_t b, t, nblocks;

	if ((tokens == NULL && ntokens > 0) || block_tokens == 0 || ret_hashes == NULL ||
	    (salt == NULL && salt_len > 0))
		return pool_err(-EINVAL, "pool_kv_hash_chain: invalid argument");
	if (parent != NULL)
		memcpy(prev, parent, sizeof(prev));
	nblocks = MIN(ntokens / block_tokens, max_hashes);
	for (b = 0; b < nblocks; b++) {
		XXH3_state_t *st = XXH3_createState();
		XXH128_canonical_t out;

		if (st == NULL || XXH3_128bits_reset(st) != XXH_OK) {
			XXH3_freeState(st);
			return pool_err(-ENOMEM, "out of memory");
		}
		XXH3_128bits_update(st, prev, sizeof(prev));
		if (salt_len > 0)
			XXH3_128bits_update(st, salt, salt_len);
		for (t = 0; t < block_tokens; t++) {
			uint32_t v = tokens[b * block_tokens + t];

			le[0] = (uint8_t)v;
			le[1] = (uint8_t)(v >> 8);
			le[2] = (uint8_t)(v >> 16);
			le[3] = (uint8_t)(v >> 24);
			XXH3_128bits_update(st, le, sizeof(le));
		}
		XXH128_canonicalFromHash(&out, XXH3_128bits_digest(st));
		XXH3_freeState(st);
		memcpy(ret_hashes + b * 16, out.digest, 16);
		memcpy(prev, out.digest, 16);
	}
	return (int)nblocks;
}

/* Name the region that holds the references this handle's puts take (a dedup namespace). */
void kv_set_holder(struct pool_kv *kv, const char *region)
{
	snprintf(kv->holder, sizeof(kv->holder), "%s", region);
}

/* An operation that answers with a count (snap.c: adopt, adopted, recount). */
int kv_count_op(struct pool_kv *kv, Pool__KvOp op, size_t n, const void *const *keys,
		const size_t *klens, uint64_t *ret_count)
{
	Pool__KvReply *rep;
	int rc;

	rc = kv_call(kv, op, n, keys, klens, NULL, NULL, &rep);
	if (rc < 0)
		return rc;
	if (ret_count != NULL)
		*ret_count = rep->count;
	wire_msg_free(&rep->base);
	return 0;
}

/* Bytes (in either tier) and values a namespace holds now. */
int kv_ns_usage(struct pool *pool, const char *ns, uint64_t *ret_bytes, uint64_t *ret_values)
{
	Pool__KvNsReply *rep;
	int rc;

	rc = kv_ns_call(pool, POOL__KV_NS_OP__KV_NS_OP_STATS, ns, 0, 0, &rep);
	if (rc < 0)
		return rc;
	if (rep->n_namespaces != 1) {
		wire_msg_free(&rep->base);
		return pool_err(POOL_EPROTOCOL, "stats of namespace '%s': %zu answers", ns,
				rep->n_namespaces);
	}
	*ret_bytes = rep->namespaces[0]->used + rep->namespaces[0]->pmem_used;
	*ret_values = rep->namespaces[0]->entries;
	wire_msg_free(&rep->base);
	return 0;
}

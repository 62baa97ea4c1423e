/*
 * daemon/resp/resp-remote.c - the RESP endpoint's values on other lenders. A
 * database spreads its values over the lenders as any KV namespace does
 * (resp.placement = spread), so a command may need bytes that are not in
 * this node's memory, or write a value to a place on another node.
 *
 * Commands stay plain functions that run in one go. Before one runs, the
 * values it reads (its key arguments, as its table entry says) that live on
 * other nodes are fetched from their lenders (carry.c), each
 * pinned while it is read; the commands the client sent after it are read
 * ahead meanwhile (RESP_AHEAD) and their values fetched too, so a pipeline
 * of GETs waits for one round trip, not one each. The commands then run in
 * order, each checking that what it reads is here at the version the index
 * still names (else it waits again); a lender that did not answer fails
 * them with TRYAGAIN. A value a command writes to another node is put
 * there, flushed and then committed, and the command's replies are held
 * (resp.c's segments) until then: a client is told OK only for a value
 * others can read, TRYAGAIN when the write failed. Blind writes (SET, MSET,
 * SETEX) after it run meanwhile, the last write of a key winning in the
 * index as it would; any other command waits for the writes, so a
 * connection reads its own writes in order.
 *
 * An operation outlives its connection when the connection goes first: it
 * owns its buffer and frees it when the fabric is done with it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/kv/kv.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "proto/pool_contract.h"

enum resp_remote_kind { RESP_FETCH, RESP_PUT };

/*
 * A connection's KV session, which ends (its pins and reservations go)
 * only once no operation of it is in flight: a put still landing in a
 * place given back and reused would write over another value.
 */
struct resp_session {
	struct poold *pd;
	uint64_t id;
	unsigned ops;
	bool closed; /* its connection is gone */
};

struct resp_remote {
	LIST_ENTRY(resp_remote) entry;
	struct poold *pd;
	struct resp_conn *c; /* NULL once its connection no longer waits for it */
	struct resp_session *sess;
	enum resp_remote_kind kind;
	bool done;    /* a fetch: its bytes are here */
	unsigned seg; /* a put: the segment of its command's replies (c->segs) */
	uint32_t node;
	uint64_t gen; /* of the way it went over (carry.c) */
	uint64_t session, version;
	uint32_t uid;
	int64_t expire; /* a put's: as resp_put() was given it */
	char ns[32];
	struct resp_remote *flush_next; /* a put waiting for its way's flush (resp_flush) */
	struct resp_blob *blob;		/* its bytes */
	char *data;			/* blob->data */
	size_t len, klen;
	uint8_t key[];
};

static unsigned resp_remote_in_flight; /* of all connections: poold polls meanwhile */

bool resp_remote_busy(void)
{
	return resp_remote_in_flight > 0;
}

/* Bytes a fetch brought, shared with the replies that send them by reference. */
struct resp_blob {
	unsigned refs;
	char data[];
};

static void resp_blob_put(struct resp_blob *b)
{
	if (b != NULL && --b->refs == 0)
		free(b);
}

static void resp_blob_sent(const void *data, size_t len, void *arg)
{
	(void)data, (void)len;
	resp_blob_put(arg);
}

/* op's buffer of len bytes; -ENOMEM. */
static int resp_remote_buffer(struct resp_remote *op, size_t len)
{
	if ((op->blob = malloc(sizeof(*op->blob) + (len ? len : 1))) == NULL)
		return -ENOMEM;
	op->blob->refs = 1;
	op->data = op->blob->data;
	op->len = len;
	return 0;
}

static void resp_session_put(struct resp_session *s)
{
	if (--s->ops > 0 || !s->closed)
		return;
	kv_session_end(s->pd, s->pd->node_id, s->id, false);
	free(s);
}

static void resp_remote_free(struct resp_remote *op)
{
	if (op->sess != NULL)
		resp_session_put(op->sess);
	resp_blob_put(op->blob);
	free(op);
}

static struct resp_remote *resp_remote_new(struct resp_conn *c, enum resp_remote_kind kind,
					   const char *ns, const char *key, size_t klen)
{
	struct resp_remote *op;

	if (c->rsess == NULL && (c->rsess = calloc(1, sizeof(*c->rsess))) != NULL)
		*c->rsess = (struct resp_session){c->rs->pd, c->session, 0, false};
	if (c->rsess == NULL || strlen(ns) >= sizeof(op->ns) ||
	    (op = calloc(1, sizeof(*op) + klen)) == NULL)
		return NULL;
	op->sess = c->rsess;
	op->sess->ops++;
	op->pd = c->rs->pd;
	op->c = c;
	op->kind = kind;
	op->session = c->session;
	op->uid = c->uid;
	memcpy(op->ns, ns, strlen(ns) + 1);
	memcpy(op->key, key, klen);
	op->klen = klen;
	return op;
}

/* The connection's operations in flight are over: the command goes on. */
static void resp_remote_settled(struct resp_conn *c)
{
	if (c->remote_timer != NULL)
		evtimer_del(c->remote_timer);
	resp_resume(c); /* may end c */
}

/*
 * op failed: its command's replies become TRYAGAIN (a put), and after a
 * transfer that failed its node is out for the rest of this run.
 */
static void resp_remote_failed(struct resp_conn *c, const struct resp_remote *op, int status)
{
	if (op->kind == RESP_PUT && op->seg < RESP_SEGS && c->segs[op->seg].err == 0)
		c->segs[op->seg].err = status, c->segs[op->seg].node = op->node;
	if (status == POOL_ELOST || op->kind == RESP_FETCH) {
		c->lost_err = status;
		c->lost_node = op->node;
	}
}

/* op is over for its connection (status: 0, or why it failed). */
static void resp_remote_finish(struct resp_remote *op, int status)
{
	struct resp_conn *c = op->c;

	resp_remote_in_flight--;
	if (c == NULL) { /* given up on: nobody waits */
		resp_remote_free(op);
		return;
	}
	if (status < 0)
		resp_remote_failed(c, op, status);
	if (op->kind == RESP_FETCH && status == 0) {
		op->done = true; /* kept for the command, in c->remote */
	} else {
		LIST_REMOVE(op, entry);
		c->remote_bytes -= op->len;
		resp_remote_free(op);
	}
	if (--c->inflight == 0)
		resp_remote_settled(c);
	else if (c->remote_timer != NULL)
		evtimer_add(c->remote_timer, &c->remote_window); /* it moves: wait again */
}

static void resp_fetched_cb(void *arg, int status)
{
	struct resp_remote *op = arg;

	/* Read: nothing needs the pin any more (after the session's end there is none). */
	kv_local_op(op->pd, op->session, op->uid, op->ns, KV_RELEASE, op->key, op->klen,
		    op->version, NULL);
	resp_remote_finish(op, status);
}

static void resp_put_flushed(void *arg, int status)
{
	struct resp_remote *op = arg;
	int rc;

	if (status < 0 || op->c == NULL) {
		/* Not known written, or nobody waits to be told: no value. */
		kv_local_op(op->pd, op->session, op->uid, op->ns, KV_ABORT, op->key, op->klen,
			    op->version, NULL);
		resp_remote_finish(op, status < 0 ? POOL_ELOST : 0);
		return;
	}
	rc = kv_local_op(op->pd, op->session, op->uid, op->ns, KV_COMMIT, op->key, op->klen,
			 op->version, NULL);
	if (rc == -ESTALE)
		rc = 0; /* a later write of the key came first: as if overwritten at once */
	else if (rc == 0 && op->expire != KV_EXPIRE_KEEP)
		kv_local_expire(op->pd, op->uid, op->ns, op->key, op->klen, op->expire);
	resp_remote_finish(op, rc);
}

/*
 * A write is complete at its lender only once flushed (with fabric.transfer
 * = rma; a checked write is complete when it is answered), and one flush of
 * a way covers every write issued on it before. So the puts that land in
 * one pass of the event loop (a pipeline's, usually together) wait for one
 * flush per way, issued at the end of the pass, not one each.
 */
struct resp_flush {
	LIST_ENTRY(resp_flush) entry;
	struct poold *pd;
	uint32_t node;
	uint64_t gen;
	struct resp_remote *ops; /* linked by flush_next */
};

static LIST_HEAD(, resp_flush) resp_flushes = LIST_HEAD_INITIALIZER(resp_flushes);
static struct event *resp_flush_ev; /* runs resp_flush_issue() at the end of the pass */

static void resp_flush_done(void *arg, int status)
{
	struct resp_flush *f = arg;
	struct resp_remote *op, *next;

	for (op = f->ops; op != NULL; op = next) {
		next = op->flush_next;
		resp_put_flushed(op, status);
	}
	free(f);
}

static void resp_flush_issue(evutil_socket_t fd, short what, void *arg)
{
	struct resp_flush *f;
	int rc;

	(void)fd, (void)what, (void)arg;
	while ((f = LIST_FIRST(&resp_flushes)) != NULL) {
		LIST_REMOVE(f, entry);
		rc = carry_flush(f->pd, f->node, f->gen, resp_flush_done, f);
		if (rc != 0)
			resp_flush_done(f, rc < 0 ? POOL_ELOST : 0);
	}
}

static void resp_put_cb(void *arg, int status)
{
	struct resp_remote *op = arg;
	struct resp_flush *f;

	if (status < 0 || op->c == NULL) {
		resp_put_flushed(op, status < 0 ? status : POOL_ELOST);
		return;
	}
	LIST_FOREACH(f, &resp_flushes, entry)
		if (f->node == op->node && f->gen == op->gen)
			break;
	if (f == NULL &&
	    (resp_flush_ev != NULL ||
	     (resp_flush_ev = event_new(op->pd->base, -1, 0, resp_flush_issue, NULL)) != NULL) &&
	    (f = calloc(1, sizeof(*f))) != NULL) {
		*f = (struct resp_flush){.pd = op->pd, .node = op->node, .gen = op->gen};
		LIST_INSERT_HEAD(&resp_flushes, f, entry);
		if (!event_pending(resp_flush_ev, EV_TIMEOUT, NULL))
			event_active(resp_flush_ev, EV_TIMEOUT, 0);
	}
	if (f == NULL) {
		resp_put_flushed(op, -ENOMEM);
		return;
	}
	op->flush_next = f->ops;
	f->ops = op;
}

/* The flushes not issued yet go out now, and what ran them goes (poold stops). */
void resp_remote_close(void)
{
	resp_flush_issue(-1, 0, NULL);
	if (resp_flush_ev != NULL)
		event_free(resp_flush_ev);
	resp_flush_ev = NULL;
}

/* Start op's transfer at w; 0, or -errno (op not started: the caller frees it). */
static int resp_remote_start(struct resp_conn *c, struct resp_remote *op, const struct kv_where *w)
{
	struct carry_place p = {w->node, w->arena, w->off, 0, op->len};
	int rc;

	if (op->kind == RESP_FETCH)
		rc = carry_read(c->rs->pd, &p, op->data, resp_fetched_cb, op, &op->gen);
	else
		rc = carry_write(c->rs->pd, &p, op->data, resp_put_cb, op, &op->gen);
	if (rc < 0)
		return carry_lost(rc) ? POOL_ELOST : rc;
	op->node = w->node;
	op->version = w->version;
	LIST_INSERT_HEAD(&c->remote, op, entry);
	c->remote_bytes += op->len;
	c->inflight++;
	resp_remote_in_flight++;
	if (c->remote_timer == NULL) {
		const struct poold_conf *conf = c->rs->pd->conf;

		c->remote_timer = evtimer_new(c->rs->pd->base, resp_remote_timeout, c);
		c->remote_window =
		    units_timeval((uint64_t)conf->heartbeat_ms * (uint64_t)conf->heartbeat_misses);
	}
	/* No progress for a heartbeat window: a lender is gone (resp_remote_timeout()). */
	if (c->remote_timer != NULL && !evtimer_pending(c->remote_timer, NULL))
		evtimer_add(c->remote_timer, &c->remote_window);
	return 0;
}

/* The fetched value of key in ns at version, or NULL. */
static struct resp_remote *resp_fetched(struct resp_conn *c, const char *ns, const char *key,
					size_t klen, uint64_t version, bool in_flight_too)
{
	struct resp_remote *op;

	LIST_FOREACH(op, &c->remote, entry)
		if (op->kind == RESP_FETCH && (op->done || in_flight_too) &&
		    op->version == version && op->klen == klen && strcmp(op->ns, ns) == 0 &&
		    memcmp(op->key, key, klen) == 0)
			return op;
	return NULL;
}

const char *resp_remote_value(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			      uint64_t version, size_t *ret_len)
{
	struct resp_remote *op = resp_fetched(c, ns, key, klen, version, false);

	if (op == NULL)
		return NULL;
	*ret_len = op->len;
	return op->data;
}

/*
 * Add a fetched value (data, from resp_remote_value()) to out by
 * reference: the bytes stay until the kernel took them. false when data is
 * not a fetched value's (then the caller copies).
 */
bool resp_remote_send(struct resp_conn *c, struct evbuffer *out, const char *data, size_t len)
{
	struct resp_remote *op;

	LIST_FOREACH(op, &c->remote, entry)
		if (op->done && op->data == data && op->len == len)
			break;
	if (op == NULL)
		return false;
	op->blob->refs++;
	if (evbuffer_add_reference(out, data, len, resp_blob_sent, op->blob) < 0) {
		op->blob->refs--;
		return false;
	}
	return true;
}

/* Fetch key's value unless it is here or being fetched: 1 when it now waits, 0, or -errno. */
static int resp_fetch_key(struct resp_conn *c, const char *ns, const char *key, size_t klen)
{
	struct poold *pd = c->rs->pd;
	struct resp_remote *op;
	struct kv_where w;
	int rc;

	if (klen > POOL_KV_KEY_MAX ||
	    kv_local_where(pd, c->uid, ns, (const uint8_t *)key, klen, &w) < 0 ||
	    w.node == pd->node_id || resp_fetched(c, ns, key, klen, w.version, true) != NULL)
		return 0;
	if (c->lost_err != 0 && w.node == c->lost_node)
		return c->lost_err; /* it failed in this run of commands already */
	/* What the replies may hold at most: past it the reply could not be sent anyway. */
	if (c->remote_bytes + w.len > (uint64_t)pd->conf->resp_max_output) {
		c->overflow = "resp.max_output";
		return -EFBIG;
	}
	if ((op = resp_remote_new(c, RESP_FETCH, ns, key, klen)) == NULL)
		return -ENOMEM;
	if (resp_remote_buffer(op, w.len) < 0) {
		resp_remote_free(op);
		return -ENOMEM;
	}
	/* Pinned, so that its place is not reused while it is read. */
	rc = kv_local_op(pd, c->session, c->uid, ns, KV_LOOKUP, (const uint8_t *)key, klen, 0, &w);
	if (rc == 0 && w.node != pd->node_id && w.len == op->len) {
		if ((rc = resp_remote_start(c, op, &w)) == 0)
			return 1;
		kv_local_op(pd, c->session, c->uid, ns, KV_RELEASE, (const uint8_t *)key, klen,
			    w.version, NULL);
		c->lost_err = rc;
		c->lost_node = w.node;
	} else if (rc == 0) { /* moved here or changed meanwhile: it is read as it is */
		kv_local_op(pd, c->session, c->uid, ns, KV_RELEASE, (const uint8_t *)key, klen,
			    w.version, NULL);
	}
	resp_remote_free(op);
	return rc;
}

/* Whether another node lends: else every value is here, and no command waits. */
bool resp_remote_lenders(struct poold *pd)
{
	const struct lender_pool *lp;

	if (pd->regions == NULL) /* (a node's endpoint: sharded databases, resp-shard.c) */
		return false;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		if (lp->node != pd->node_id)
			return true;
	return false;
}

/* Whether an argument list (SET's) has an option of these, after the key and value. */
static bool resp_has_opt(long argc, char **argv, const char *const *opts)
{
	long i;
	size_t k;

	for (i = 3; i < argc; i++)
		for (k = 0; opts[k] != NULL; k++)
			if (strcasecmp(argv[i], opts[k]) == 0)
				return true;
	return false;
}

static const char *const resp_get_opt[] = {"GET", NULL};

/*
 * Whether a command only writes and its reply depends on nothing stored
 * (SET without NX, XX, GET; MSET; SETEX): it may run while earlier writes
 * are in flight, as the last write of a key wins in the index anyway.
 */
bool resp_blind_write(const struct resp_cmd *cmd, long argc, char **argv)
{
	static const char *const conditions[] = {"NX", "XX", "GET", NULL};

	return (cmd->flags & RESP_CMD_BLIND) &&
	       (strcmp(cmd->name, "set") != 0 || !resp_has_opt(argc, argv, conditions));
}

int resp_remote_fetch(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		      const size_t *argl)
{
	char ns[32];
	long i, first, last, step;
	int rc, waits = 0;

	if (cmd == NULL ||
	    !(cmd->flags & (RESP_CMD_READS | RESP_CMD_READS_ALL | RESP_CMD_READS_GET)) ||
	    !resp_remote_lenders(c->rs->pd) ||
	    ((cmd->flags & RESP_CMD_READS_GET) && !resp_has_opt(argc, argv, resp_get_opt)))
		return 0;
	resp_db_name(c, c->db, ns, sizeof(ns));
	resp_cmd_keys(cmd, argc, &first, &last, &step);
	if (!(cmd->flags & (RESP_CMD_READS_ALL | RESP_CMD_KEYS_TWO)))
		last = first; /* (its first key's alone) */
	for (i = first; i > 0 && i <= last && i < argc; i += step) {
		rc = resp_fetch_key(c, ns, argv[i], argl[i]);
		if (rc < 0)
			return rc;
		waits |= rc;
	}
	return waits;
}

int resp_remote_put(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		    const void *a, size_t alen, const void *b, size_t blen, int64_t expire,
		    const struct kv_where *w)
{
	struct resp_remote *op;
	int rc;

	if (c->lost_err != 0 && w->node == c->lost_node)
		return c->lost_err; /* it failed in this run of commands already */
	if ((op = resp_remote_new(c, RESP_PUT, ns, key, klen)) == NULL)
		return -ENOMEM;

	/* Its own copy: the connection may go, and its arguments with it, before the put ends. */
	if (resp_remote_buffer(op, alen + blen) < 0) {
		resp_remote_free(op);
		return -ENOMEM;
	}
	if (alen > 0)
		memcpy(op->data, a, alen);
	if (blen > 0)
		memcpy(op->data + alen, b, blen);
	op->expire = expire;
	op->seg = c->nsegs; /* the one its command gets (resp_command()) */
	rc = resp_remote_start(c, op, w);
	if (rc < 0) {
		resp_remote_free(op);
		return rc;
	}
	c->puts++;
	return 0;
}

/* Let go of the fetched values once the command that needed them ran. */
void resp_remote_clear(struct resp_conn *c)
{
	struct resp_remote *op, *next;

	for (op = LIST_FIRST(&c->remote); op != NULL; op = next) {
		next = LIST_NEXT(op, entry);
		if (!op->done)
			continue;
		LIST_REMOVE(op, entry);
		c->remote_bytes -= op->len;
		resp_remote_free(op);
	}
}

/*
 * Stop waiting for c's operations in flight (its end, or a timeout): they
 * finish on their own and free themselves; a put not flushed yet is then
 * aborted, so nothing the client was not told about is stored.
 */
static void resp_remote_abandon(struct resp_conn *c)
{
	struct resp_remote *op;

	resp_remote_clear(c);
	while ((op = LIST_FIRST(&c->remote)) != NULL) {
		LIST_REMOVE(op, entry);
		op->c = NULL;
	}
	c->remote_bytes = 0;
	c->inflight = 0;
}

/* c is gone: its session ends now, or when its last operation in flight does. */
void resp_remote_end(struct resp_conn *c)
{
	struct poold *pd = c->rs->pd;

	resp_remote_abandon(c);
	if (c->remote_timer != NULL)
		event_free(c->remote_timer);
	c->remote_timer = NULL;
	if (c->rsess == NULL) {
		kv_session_end(pd, pd->node_id, c->session, false);
		return;
	}
	c->rsess->closed = true;
	c->rsess->ops++;
	resp_session_put(c->rsess);
	c->rsess = NULL;
}

/*
 * Nothing came back for a heartbeat window: the ways to the lenders that
 * did not answer are closed (which cancels what is in flight on them, as
 * xfer.c does), and the command fails with TRYAGAIN.
 */
void resp_remote_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct resp_conn *c = arg;
	struct poold *pd = c->rs->pd;
	struct resp_remote *op;
	uint32_t silent[8];
	size_t n = 0, i;
	struct member *m;

	(void)fd, (void)what;
	LIST_FOREACH(op, &c->remote, entry) {
		if (op->done)
			continue;
		resp_remote_failed(c, op, POOL_ELOST);
		for (i = 0; i < n && silent[i] != op->node; i++)
			;
		if (i == n && n < ARRAY_SIZE(silent) && carry_current(pd, op->node, op->gen))
			silent[n++] = op->node;
	}
	resp_remote_abandon(c);
	for (i = 0; i < n; i++) {
		if ((m = member_find(pd, silent[i])) == NULL || (m->ep == NULL && m->link == NULL))
			continue;
		log_warnx("node %u (%s) did not answer the RESP endpoint's transfers for a "
			  "heartbeat window: closing the way to it",
			  m->info->id, m->info->name);
		carry_drop(pd, m);
	}
	resp_remote_settled(c);
}

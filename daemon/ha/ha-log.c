/*
 * daemon/ha/ha-log.c - the coordinator's records in etcd (coord.etcd).
 *
 * The records are those of the pmem journal (coord-log.c), kept under
 * PREFIX/state/: generation G's records are PREFIX/state/G/SEQ (both in
 * hex of fixed width, so that etcd's key order is the records' order), and
 * PREFIX/state/gen names the generation in force.
 *
 * Appended records wait in memory and go to etcd in one transaction per
 * turn of the loop (a group commit), at most ETCDLOG_BATCH_OPS writes or
 * ETCDLOG_BATCH_BYTES of records in each. Every transaction holds only
 * while the leader key still has this leader's epoch: etcd itself refuses
 * a deposed leader's writes, whatever that leader believes. The owner is
 * told when everything up to a sequence number is in etcd, and its replies
 * wait for that. A transaction etcd did not answer is sent again, the same
 * (its puts are idempotent), until it is answered or the leader steps down.
 *
 * A rewrite (the checkpoint) appends the live set under generation G+1;
 * then one transaction makes G+1 the generation in force and deletes G's
 * keys. Records appended meanwhile follow, in G+1. A rewrite cut short
 * leaves keys of G+1 that nothing reads; the next open deletes them.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "common/common.h"
#include "daemon/etcd/etcd.h"
#include "daemon/ha/ha.h"
#include "daemon/lend/lend.h"
#include "daemon/ha/ha-log.h"

#define ETCDLOG_BATCH_OPS 100		/* etcd refuses more than 128 (--max-txn-ops) */
#define ETCDLOG_BATCH_BYTES (512 << 10) /* base64 in JSON: well under its 1.5 MiB requests */
#define ETCDLOG_RETRY_MS 200
#define ETCDLOG_KEY 160
#define ETCDLOG_PAGE 1000 /* records per range read at open: answers well under 8 MiB */

enum ha_log_kind {
	EL_PUT,	   /* a record */
	EL_SWITCH, /* the generation in force becomes gen; the one before goes */
	EL_DROP,   /* a generation left by a rewrite cut short */
};

struct ha_log_rec {
	STAILQ_ENTRY(ha_log_rec) entry;
	enum ha_log_kind kind;
	uint64_t seq;
	uint64_t gen;
	size_t len;
	uint8_t data[]; /* EL_PUT */
};
STAILQ_HEAD(ha_log_queue, ha_log_rec);

struct etcdlog {
	struct etcd *etcd;
	char prefix[100];
	char guard[ETCDLOG_KEY]; /* the leader key, which must still be of epoch */
	int64_t epoch;
	uint64_t rewrite_min; /* records of a generation past which a rewrite is worth it */
	uint64_t gen;	      /* new records go to this generation */
	uint64_t next_seq;    /* of the next record */
	uint64_t durable;     /* every record up to this one is in etcd */
	bool rewriting;	      /* a switch not yet in etcd */
	struct ha_log_queue pending;
	struct ha_log_queue sent; /* the transaction in flight (sent again if unanswered) */
	bool in_flight;
	bool closed;  /* ha_log_close() came with a transaction in flight: its answer frees */
	bool failing; /* etcd did not answer the last try: said once */
	struct event *flush_ev;
	ha_log_durable_fn *durable_fn;
	ha_log_deposed_fn *deposed_fn;
	void *arg;
	struct ha_log_stats st;
	/* open: the replay */
	journal_record_fn replay;
	int replay_rc;
	bool answered, more;
	char last[ETCDLOG_KEY]; /* the last key of the page before */
	char why[300];
};

static void ha_log_key(const struct etcdlog *el, char *buf, size_t len, uint64_t gen,
		       const uint64_t *seq)
{
	if (seq != NULL)
		snprintf(buf, len, "%s/state/%016" PRIx64 "/%016" PRIx64, el->prefix, gen, *seq);
	else
		snprintf(buf, len, "%s/state/%016" PRIx64 "/", el->prefix, gen);
}

static void ha_log_schedule(struct etcdlog *el, uint64_t ms)
{
	struct timeval tv = units_timeval(ms);

	if (!evtimer_pending(el->flush_ev, NULL) || ms > 0)
		evtimer_add(el->flush_ev, &tv);
}

static void ha_log_free_queue(struct ha_log_queue *q)
{
	struct ha_log_rec *r;

	while ((r = STAILQ_FIRST(q)) != NULL) {
		STAILQ_REMOVE_HEAD(q, entry);
		free(r);
	}
}

static void ha_log_flush(evutil_socket_t fd, short what, void *arg);

static void ha_log_committed(void *arg, const struct etcd_result *res)
{
	struct etcdlog *el = arg;
	struct ha_log_rec *r;
	uint64_t upto = 0;

	el->in_flight = false;
	if (el->closed) {
		ha_log_close(el);
		return;
	}
	if (res->status < 0) {
		if (!el->failing)
			log_warnx("etcd: the coordinator's state is not written: %s; trying again",
				  res->error);
		el->failing = true;
		el->st.failures++;
		snprintf(el->st.last_error, sizeof(el->st.last_error), "%s", res->error);
		ha_log_schedule(el, ETCDLOG_RETRY_MS);
		return;
	}
	if (!res->succeeded) {
		ha_log_free_queue(&el->sent);
		el->deposed_fn(el->arg, "etcd refused the coordinator's state: its leader key is "
					"no longer of this epoch");
		return;
	}
	if (el->failing)
		log_info("etcd: the coordinator's state is written again");
	el->failing = false;
	el->st.txns++;
	while ((r = STAILQ_FIRST(&el->sent)) != NULL) {
		STAILQ_REMOVE_HEAD(&el->sent, entry);
		if (r->kind == EL_SWITCH)
			el->rewriting = false;
		if (r->kind == EL_PUT)
			upto = r->seq;
		free(r);
	}
	if (upto > el->durable) {
		el->durable = upto;
		el->durable_fn(el->arg, upto);
	}
	if (!STAILQ_EMPTY(&el->pending))
		ha_log_schedule(el, 0);
}

/* Send what waits (or what etcd did not answer) in one guarded transaction. */
static void ha_log_flush(evutil_socket_t fd, short what, void *arg)
{
	struct etcdlog *el = arg;
	struct etcd_op ops[ETCDLOG_BATCH_OPS];
	char keys[ETCDLOG_BATCH_OPS][ETCDLOG_KEY];
	char gen[17];
	struct ha_log_rec *r;
	uint64_t switch_gen = 0;
	size_t n = 0, bytes = 0;

	(void)fd;
	(void)what;
	if (el->in_flight)
		return;
	if (STAILQ_EMPTY(&el->sent)) { /* take a batch from what waits */
		while ((r = STAILQ_FIRST(&el->pending)) != NULL) {
			size_t need = r->kind == EL_SWITCH ? 2 : 1;

			if (n + need > ETCDLOG_BATCH_OPS ||
			    (n > 0 && bytes + r->len > ETCDLOG_BATCH_BYTES) ||
			    (n > 0 && r->kind == EL_DROP))
				break;
			STAILQ_REMOVE_HEAD(&el->pending, entry);
			STAILQ_INSERT_TAIL(&el->sent, r, entry);
			n += need;
			bytes += r->len;
			if (r->kind ==
			    EL_DROP) /* (alone: a rewrite's puts may fall in its range) */
				break;
		}
		n = 0;
	}
	/*
	 * A switch deletes the generation before it, and etcd refuses a put
	 * inside a range the same transaction deletes: that generation's last
	 * records are left out, which the live set after them holds anyway.
	 */
	STAILQ_FOREACH(r, &el->sent, entry)
		if (r->kind == EL_SWITCH)
			switch_gen = r->gen;
	STAILQ_FOREACH(r, &el->sent, entry) {
		switch (r->kind) {
		case EL_PUT:
			if (r->gen < switch_gen)
				break;
			ha_log_key(el, keys[n], sizeof(keys[n]), r->gen, &r->seq);
			ops[n] = (struct etcd_op){.key = keys[n], .value = r->data, .vlen = r->len};
			n++;
			break;
		case EL_SWITCH:
			snprintf(keys[n], sizeof(keys[n]), "%s/state/gen", el->prefix);
			snprintf(gen, sizeof(gen), "%016" PRIx64, r->gen);
			ops[n] =
			    (struct etcd_op){.key = keys[n], .value = gen, .vlen = strlen(gen)};
			n++;
			ha_log_key(el, keys[n], sizeof(keys[n]), r->gen - 1, NULL);
			ops[n] = (struct etcd_op){.key = keys[n], .prefix = true};
			n++;
			break;
		case EL_DROP:
			ha_log_key(el, keys[n], sizeof(keys[n]), r->gen, NULL);
			ops[n] = (struct etcd_op){.key = keys[n], .prefix = true};
			n++;
			break;
		}
	}
	if (n == 0)
		return;
	if (etcd_txn(el->etcd, el->guard, el->epoch, ops, n, ha_log_committed, el) < 0) {
		ha_log_schedule(el, ETCDLOG_RETRY_MS); /* (out of memory: the batch waits) */
		return;
	}
	el->in_flight = true;
	el->st.puts += n;
}

static struct ha_log_rec *ha_log_queue(struct etcdlog *el, enum ha_log_kind kind, uint64_t gen,
				       const void *data, size_t len)
{
	struct ha_log_rec *r = malloc(sizeof(*r) + len);

	if (r == NULL)
		return NULL;
	r->kind = kind;
	r->gen = gen;
	r->len = len;
	r->seq = kind == EL_PUT ? el->next_seq++ : 0;
	if (len > 0)
		memcpy(r->data, data, len);
	STAILQ_INSERT_TAIL(&el->pending, r, entry);
	ha_log_schedule(el, 0);
	return r;
}

/* Append a record: in etcd once the owner's durable callback has passed its number. */
int ha_log_append(struct etcdlog *el, const void *rec, size_t len)
{
	if (ha_log_queue(el, EL_PUT, el->gen, rec, len) == NULL)
		return -ENOMEM;
	el->st.records++;
	el->st.bytes += len;
	return 0;
}

/* The newest record not yet in etcd (0: none). */
uint64_t ha_log_unsynced(const struct etcdlog *el)
{
	return el->next_seq - 1 > el->durable ? el->next_seq - 1 : 0;
}

/* Whether the records of the generation in force are many more than the live set. */
bool ha_log_wants_rewrite(const struct etcdlog *el)
{
	return !el->rewriting && el->st.records > el->rewrite_min &&
	       el->st.records > 2 * el->st.live;
}

/* Start a new generation with what fill appends (the live set); 0 or -errno. */
int ha_log_rewrite(struct etcdlog *el, int (*fill)(void *arg, struct etcdlog *el), void *arg)
{
	uint64_t before = el->st.records;
	int rc;

	if (el->rewriting)
		return 0;
	el->gen++;
	el->st.records = 0;
	rc = fill(arg, el);
	if (rc == 0 && ha_log_queue(el, EL_SWITCH, el->gen, NULL, 0) == NULL)
		rc = -ENOMEM;
	if (rc < 0) { /* (what fill queued is written, and dropped at the next open) */
		el->gen--;
		el->st.records = before + el->st.records;
		return rc;
	}
	el->rewriting = true;
	el->st.live = el->st.records;
	el->st.rewrites++;
	return 0;
}

void ha_log_stats(const struct etcdlog *el, struct ha_log_stats *ret)
{
	*ret = el->st;
	ret->waiting = ha_log_unsynced(el) != 0 ? ha_log_unsynced(el) - el->durable : 0;
}

/* The generation in force (1 when there is none yet). */
static void ha_log_got_gen(void *arg, const struct etcd_result *res)
{
	struct etcdlog *el = arg;
	char text[17];

	el->answered = true;
	if (res->status < 0) {
		snprintf(el->why, sizeof(el->why), "%s", res->error);
		el->replay_rc = res->status;
		return;
	}
	el->gen = 1;
	if (res->nkvs == 1) {
		snprintf(text, sizeof(text), "%.*s", (int)MIN(res->kvs[0].vlen, 16),
			 (const char *)res->kvs[0].value);
		el->gen = strtoull(text, NULL, 16);
	}
}

/* A page of that generation's records, in order: replayed. */
static void ha_log_got_page(void *arg, const struct etcd_result *res)
{
	struct etcdlog *el = arg;
	char dir[ETCDLOG_KEY];
	size_t i, dlen;

	el->answered = true;
	el->more = false;
	if (res->status < 0) {
		snprintf(el->why, sizeof(el->why), "%s", res->error);
		el->replay_rc = res->status;
		return;
	}
	ha_log_key(el, dir, sizeof(dir), el->gen, NULL);
	dlen = strlen(dir);
	for (i = 0; i < res->nkvs; i++) {
		const struct etcd_kv *kv = &res->kvs[i];

		el->next_seq = MAX(el->next_seq, strtoull(kv->key + dlen, NULL, 16) + 1);
		el->st.records++;
		if ((el->replay_rc = el->replay(el->arg, kv->value, kv->vlen)) < 0) {
			snprintf(el->why, sizeof(el->why), "a record does not replay");
			return;
		}
	}
	if (res->nkvs > 0)
		snprintf(el->last, sizeof(el->last), "%s", res->kvs[res->nkvs - 1].key);
	el->more = res->more && res->nkvs > 0;
}

/* Run the loop until the request in flight is answered: its status. */
static int ha_log_wait(struct etcdlog *el, struct event_base *base, int sent)
{
	if (sent < 0) {
		snprintf(el->why, sizeof(el->why), "out of memory");
		return sent;
	}
	while (!el->answered)
		if (event_base_loop(base, EVLOOP_ONCE) < 0) {
			snprintf(el->why, sizeof(el->why), "the event loop failed");
			return -EIO;
		}
	el->answered = false;
	return el->replay_rc;
}

/*
 * Read the records in etcd under prefix and replay them through replay
 * (waiting for them: the coordinator serves nothing before), a page at a
 * time, then keep appending as the leader of epoch, whose key is guard,
 * rewriting past rewrite_min records (and twice the live set). NULL with
 * the reason in err.
 */
struct etcdlog *ha_log_open(struct event_base *base, struct etcd *etcd, const char *prefix,
			    const char *guard, int64_t epoch, uint64_t rewrite_min,
			    journal_record_fn replay, ha_log_durable_fn *durable_fn,
			    ha_log_deposed_fn *deposed_fn, void *arg, char *err, size_t errlen)
{
	struct etcdlog *el = calloc(1, sizeof(*el));
	char key[ETCDLOG_KEY];
	int rc;

	if (el == NULL || (el->flush_ev = evtimer_new(base, ha_log_flush, el)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(el);
		return NULL;
	}
	el->etcd = etcd;
	snprintf(el->prefix, sizeof(el->prefix), "%s", prefix);
	snprintf(el->guard, sizeof(el->guard), "%s", guard);
	el->epoch = epoch;
	el->rewrite_min = rewrite_min;
	el->next_seq = 1;
	el->replay = replay;
	el->durable_fn = durable_fn;
	el->deposed_fn = deposed_fn;
	el->arg = arg;
	STAILQ_INIT(&el->pending);
	STAILQ_INIT(&el->sent);
	snprintf(key, sizeof(key), "%s/state/gen", prefix);
	rc = ha_log_wait(el, base, etcd_range(etcd, key, false, ha_log_got_gen, el));
	ha_log_key(el, key, sizeof(key), el->gen, NULL);
	while (rc == 0) {
		rc = ha_log_wait(el, base,
				 etcd_range_page(etcd, key, el->last[0] != '\0' ? el->last : NULL,
						 ETCDLOG_PAGE, ha_log_got_page, el));
		if (!el->more)
			break;
	}
	/* (a rewrite cut short left keys of the next generation: they go first) */
	if (rc == 0 && ha_log_queue(el, EL_DROP, el->gen + 1, NULL, 0) == NULL) {
		snprintf(el->why, sizeof(el->why), "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0) {
		snprintf(err, errlen, "reading the coordinator's state from etcd: %s", el->why);
		ha_log_close(el);
		return NULL;
	}
	el->st.live = el->st.records;
	el->durable = el->next_seq - 1;
	return el;
}

/* Close. What was not written yet is not: its replies were never sent. */
void ha_log_close(struct etcdlog *el)
{
	if (el == NULL)
		return;
	if (el->in_flight) { /* (its answer, or the client's end, frees it) */
		evtimer_del(el->flush_ev);
		el->closed = true;
		return;
	}
	ha_log_free_queue(&el->pending);
	ha_log_free_queue(&el->sent);
	event_free(el->flush_ev);
	free(el);
}

/*
 * daemon/hold/hold-codec.c - a lender's holdings on the wire and in its pmem
 * journal: a struct holding to and from the wire's Holding, the messages
 * that carry them from the coordinator to a lender (Hold, HoldingsRequest;
 * peer.c records what a lender is told and reports its record), and one
 * holding packed as a journal record.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/hold.h"
#include "daemon/member/member.h"

/* A region's record in a Holding (h->region, h->arena, h->off and h->len aside). */
static void region_record_to_msg(const struct region_record *rec, Pool__Holding *h)
{
	h->rname = (char *)rec->name;
	h->rplacement = (char *)rec->placement;
	h->has_rsize = h->has_rextents = h->has_rindex = h->has_rmode = 1;
	h->has_ruid = h->has_rgid = h->has_rstripe = h->has_rclass = 1;
	h->rsize = rec->size;
	h->rextents = rec->extents;
	h->rindex = rec->index;
	h->rmode = rec->mode;
	h->ruid = rec->uid;
	h->rgid = rec->gid;
	h->rstripe = rec->stripe;
	h->rclass = rec->cls;
	h->has_ranonymous = rec->anonymous;
	h->ranonymous = rec->anonymous;
}

/*
 * A Holding's record of a region, pointing into h. A record without a
 * class is of a persistent region (the lenders' records before classes);
 * false for a class this poold does not know.
 */
static bool region_record_of_msg(const Pool__Holding *h, struct region_record *rec)
{
	if (h->has_rclass && h->rclass > CLASS_PERSISTENT)
		return false;
	*rec = (struct region_record){
	    .id = h->region,
	    .name = h->rname,
	    .placement = h->rplacement,
	    .size = h->rsize,
	    .extents = h->rextents,
	    .index = h->rindex,
	    .mode = h->rmode,
	    .uid = h->ruid,
	    .gid = h->rgid,
	    .stripe = h->rstripe,
	    .cls = h->has_rclass ? (enum region_class)h->rclass : CLASS_PERSISTENT,
	    .anonymous = h->ranonymous,
	};
	return true;
}

/* A value's record in a Holding, pointing into rec (h's extent aside). */
static void kv_record_to_msg(const struct kv_record *rec, Pool__Holding *h)
{
	h->ns = (char *)rec->ns;
	h->has_key = h->has_vlen = h->has_version = h->has_ns_capacity = h->has_ns_flags = 1;
	h->key.data = (uint8_t *)rec->key;
	h->key.len = rec->klen;
	h->vlen = rec->vlen;
	h->version = rec->version;
	h->ns_capacity = rec->ns_capacity;
	h->ns_flags = rec->ns_flags;
	h->has_ns_replicas = rec->ns_replicas != 0;
	h->ns_replicas = rec->ns_replicas;
	h->has_ns_size_hint = rec->ns_size_hint != 0;
	h->ns_size_hint = rec->ns_size_hint;
	h->has_ruid = rec->has_owner;
	h->ruid = rec->owner;
}

/* A Holding's record of a value, pointing into h. */
static void kv_record_of_msg(const Pool__Holding *h, struct kv_record *rec)
{
	*rec = (struct kv_record){
	    .ns = h->ns,
	    .ns_capacity = h->ns_capacity,
	    .ns_flags = h->ns_flags,
	    .ns_replicas = h->has_ns_replicas ? h->ns_replicas : 0,
	    .ns_size_hint = h->has_ns_size_hint ? h->ns_size_hint : 0,
	    .key = h->key.data,
	    .klen = h->key.len,
	    .vlen = h->vlen,
	    .version = h->version,
	    .has_owner = h->has_ruid,
	    .owner = h->ruid,
	};
}

/* A holding as a Holding, pointing into h. */
void holding_to_msg(const struct holding *h, Pool__Holding *m)
{
	pool__holding__init(m);
	m->arena = h->e.arena;
	m->off = h->e.off;
	m->len = h->e.len;
	m->region = h->e.region;
	if (h->has_region)
		region_record_to_msg(&h->region, m);
	if (h->has_kv)
		kv_record_to_msg(&h->kv, m);
}

/*
 * A Holding as a holding, pointing into m: it names a region when it has
 * the region's name (and a class this poold knows), a KV value when it has
 * the value's namespace and key.
 */
void holding_of_msg(const Pool__Holding *m, struct holding *h)
{
	memset(h, 0, sizeof(*h));
	h->e = (struct ledger_extent){
	    .arena = m->arena, .off = m->off, .len = m->len, .region = m->region};
	h->has_region =
	    m->rname != NULL && m->rname[0] != '\0' && region_record_of_msg(m, &h->region);
	h->has_kv = m->ns != NULL && m->ns[0] != '\0' && m->has_key;
	if (h->has_kv)
		kv_record_of_msg(m, &h->kv);
}

/* One holding as a journal record: its length, or -E2BIG when it exceeds cap. */
ssize_t holding_pack(const struct holding *h, uint8_t *buf, size_t cap)
{
	Pool__Holding m;
	size_t len;

	holding_to_msg(h, &m);
	len = pool__holding__get_packed_size(&m);
	if (len > cap)
		return -E2BIG;
	return (ssize_t)pool__holding__pack(&m, buf);
}

/* A journal record as a holding, pointing into ret (holding_unpacked_free() it); -EINVAL. */
int holding_unpack(const uint8_t *buf, size_t len, struct holding_unpacked *ret)
{
	Pool__Holding *m = pool__holding__unpack(NULL, len, buf);

	if (m == NULL)
		return -EINVAL;
	holding_of_msg(m, &ret->h);
	ret->msg = m;
	return 0;
}

void holding_unpacked_free(struct holding_unpacked *u)
{
	if (u->msg != NULL)
		pool__holding__free_unpacked(u->msg, NULL);
	u->msg = NULL;
}

/* The holdings of a message, pointing into it: free() the array; NULL for no memory. */
struct holding *holdings_of_msg(const Pool__Holdings *hs)
{
	struct holding *h = calloc(hs->n_holdings ? hs->n_holdings : 1, sizeof(*h));
	size_t i;

	for (i = 0; h != NULL && i < hs->n_holdings; i++)
		holding_of_msg(hs->holdings[i], &h[i]);
	return h;
}

/* n holdings as a message pointing into them; holdings_msg_free() it. */
int holdings_msg(const struct holding *h, size_t n, Pool__Holdings *hs)
{
	Pool__Holding *m = calloc(n ? n : 1, sizeof(*m));
	size_t i;

	pool__holdings__init(hs);
	hs->holdings = calloc(n ? n : 1, sizeof(*hs->holdings));
	if (m == NULL || hs->holdings == NULL) {
		free(m);
		free(hs->holdings);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		holding_to_msg(&h[i], &m[i]);
		hs->holdings[i] = &m[i];
	}
	hs->n_holdings = n;
	if (n == 0)
		free(m); /* else holdings_msg_free() finds it as the first holding */
	return 0;
}

void holdings_msg_free(Pool__Holdings *hs)
{
	if (hs->n_holdings > 0)
		free(hs->holdings[0]);
	free(hs->holdings);
}

/* Bytes a holding takes in a Holdings message. */
size_t holding_wire_len(const struct holding *h)
{
	Pool__Holding m;

	holding_to_msg(h, &m);
	return wire_elem_len(pool__holding__get_packed_size(&m));
}

/* The Holds of one holdings_send(): done once each chunk is answered. */
struct holds_sent {
	coord_done_cb done;
	void *arg;
	unsigned pending;
	int rc; /* the first error */
};

static void holds_chunk_done(struct poold *pd, void *arg, int rc)
{
	struct holds_sent *hs = arg;

	if (rc < 0 && hs->rc == 0)
		hs->rc = rc;
	if (--hs->pending > 0)
		return;
	hs->done(pd, hs->arg, hs->rc);
	free(hs);
}

/* Send n holdings as one Hold, a notice or, with hs, a request answered to hs. */
static int holds_chunk_send(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
			    struct holds_sent *hs)
{
	Pool__Holdings msg;
	int rc;

	if ((rc = holdings_msg(h, n, &msg)) < 0)
		return rc;
	if (hs == NULL) {
		coord_notice(pd, node, WIRE_HOLD, &msg.base);
	} else if ((rc = coord_request(pd, node, WIRE_HOLD, &msg.base, holds_chunk_done, hs)) ==
		   0) {
		hs->pending++;
	}
	holdings_msg_free(&msg);
	return rc;
}

/*
 * Coordinator: tell another node the n holdings it now holds (Hold), in
 * chunks of at most peer.chunk_size bytes, queued at once and in order (a
 * Scrub that follows comes after them all). With done, it answers each
 * once they are recorded (and journaled, for persistent values): done gets
 * 0 or the first error, once every chunk was answered.
 */
void holdings_send(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
		   coord_done_cb done, void *arg)
{
	size_t max = (size_t)pd->conf->peer_chunk_size, first = 0, bytes = 0, i;
	struct holds_sent *hs = NULL;
	int rc = 0;

	if (done != NULL) {
		if ((hs = calloc(1, sizeof(*hs))) == NULL) {
			done(pd, arg, -ENOMEM);
			return;
		}
		*hs = (struct holds_sent){.done = done, .arg = arg, .pending = 1};
	}
	for (i = 0; i < n && rc == 0; i++) {
		size_t len = holding_wire_len(&h[i]);

		if (i > first && bytes + len > max) {
			rc = holds_chunk_send(pd, node, h + first, i - first, hs);
			first = i;
			bytes = 0;
		}
		bytes += len;
	}
	if (rc == 0 && (n > first || n == 0))
		rc = holds_chunk_send(pd, node, h + first, n - first, hs);
	if (rc < 0 && rc != -ENOTCONN) /* (a node away is told again when it registers) */
		log_warnx("node %u: cannot tell it %zu holding(s): %s", node, n, err_str(rc));
	if (hs != NULL)
		holds_chunk_done(pd, hs, rc); /* (the sending's own count) */
}

/*
 * The bytes of a report a lender sends beyond the chunks the coordinator
 * said it read (two chunks at least): a heartbeat on the same link waits
 * behind them at most, however slowly a busy coordinator reads.
 */
#define HOLDINGS_AHEAD (1u << 20)

/*
 * Coordinator: ask another node for its record (HoldingsRequest); it answers
 * with Holdings, in chunks of at most peer.chunk_size bytes, and at most
 * HOLDINGS_AHEAD bytes of them beyond those acknowledged (coord.c).
 */
void holdings_ask(struct poold *pd, uint32_t node)
{
	Pool__HoldingsRequest req = POOL__HOLDINGS_REQUEST__INIT;

	req.has_chunk_size = 1;
	req.chunk_size = (uint32_t)pd->conf->peer_chunk_size;
	req.has_window = 1;
	req.window = (uint32_t)MAX(HOLDINGS_AHEAD / req.chunk_size, 2u);
	coord_notice(pd, node, WIRE_HOLDINGS, &req.base);
}

/* Bytes a holding that ended takes in a Holdings message's gone list. */
size_t hold_place_wire_len(const struct hold_place *g)
{
	Pool__HoldingEnd m = POOL__HOLDING_END__INIT;

	m.arena = g->arena;
	m.off = g->off;
	return wire_elem_len(pool__holding_end__get_packed_size(&m));
}

/*
 * A chunk of a lender's report (holdreport_chunk()) as a Holdings message,
 * numbered seq of the report, pointing into c; holdings_chunk_free() it.
 * 0 or -ENOMEM.
 */
int holdings_chunk_msg(uint64_t report, uint32_t seq, const struct holdreport_chunk *c,
		       Pool__Holdings *ret)
{
	Pool__HoldingEnd *ends;
	size_t i;
	int rc;

	if ((rc = holdings_msg(c->h, c->n, ret)) < 0)
		return rc;
	ret->gone = calloc(c->ngone ? c->ngone : 1, sizeof(*ret->gone));
	ends = calloc(c->ngone ? c->ngone : 1, sizeof(*ends));
	if (ret->gone == NULL || ends == NULL) {
		free(ret->gone);
		free(ends);
		holdings_msg_free(ret);
		return -ENOMEM;
	}
	for (i = 0; i < c->ngone; i++) {
		pool__holding_end__init(&ends[i]);
		ends[i].arena = c->gone[i].arena;
		ends[i].off = c->gone[i].off;
		ret->gone[i] = &ends[i];
	}
	ret->n_gone = c->ngone;
	if (c->ngone == 0)
		free(ends); /* else holdings_chunk_free() finds it as the first end */
	ret->has_report = ret->has_seq = ret->has_more = 1;
	ret->report = report;
	ret->seq = seq;
	ret->more = c->more;
	return 0;
}

void holdings_chunk_free(Pool__Holdings *hs)
{
	if (hs->n_gone > 0)
		free(hs->gone[0]);
	free(hs->gone);
	holdings_msg_free(hs);
}

/* The places a chunk tells as gone: free() the array; NULL for no memory. */
struct hold_place *holding_ends_of_msg(const Pool__Holdings *hs)
{
	struct hold_place *g = calloc(hs->n_gone ? hs->n_gone : 1, sizeof(*g));
	size_t i;

	for (i = 0; g != NULL && i < hs->n_gone; i++)
		g[i] = (struct hold_place){hs->gone[i]->arena, hs->gone[i]->off};
	return g;
}

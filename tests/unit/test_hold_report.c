/*
 * tests/unit/test_hold_report.c - a lender's holdings in chunks, both ways.
 *
 * A lender's report of its record (hold.c, hold-report.c, hold-codec.c)
 * goes over a real framed connection to a socket pair, one chunk of at
 * most a small bound per turn of the loop (stream.c), while the record
 * changes under it: gathered again (hold-report.c), it is the record as it
 * is at its last chunk, each holding once. A report cut short, or with a chunk out of its
 * order, is never given as a record; a whole one brings every value back
 * into a restarted coordinator's index (reconcile.c). The coordinator's
 * Holds to a lender go in chunks of the same bound, answered once for all.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/coord/coord.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "tests/unit/cores.h"
#include "tests/unit/unit.h"

#define CHUNK 4096u /* the chunk bound of these tests */
#define NVALUES 20000u
#define LENDER 2 /* the lender cores_open() makes */
#define VALUE_ID (UINT64_C(1) << 63 | 5)

static struct poold lender;
static char keys[NVALUES + 64][24];

/* Value i of namespace "big": 48 bytes in a 64-byte extent at i * 64 of arena 0. */
static struct holding value(unsigned i, const char *key, uint64_t version)
{
	struct holding h = {
	    .e = {.arena = 0, .off = (uint64_t)i * 64, .len = 64, .region = VALUE_ID},
	    .has_kv = true};

	snprintf(keys[i], sizeof(keys[i]), "%s", key);
	h.kv = (struct kv_record){.ns = "big",
				  .ns_capacity = 64u << 20,
				  .key = (const uint8_t *)keys[i],
				  .klen = strlen(keys[i]),
				  .vlen = 48,
				  .version = version,
				  .has_owner = true,
				  .owner = 1000};
	return h;
}

static void value_add(unsigned i, const char *prefix, uint64_t version)
{
	char key[24];
	struct holding h;

	snprintf(key, sizeof(key), "%s%06u", prefix, i);
	h = value(i, key, version);
	CU_ASSERT_EQUAL_FATAL(hold_add(&lender, &h, 1), 0);
}

/* A lender without arenas holding n values, and a link to nowhere yet. */
static void lender_open(unsigned n)
{
	unsigned i;

	memset(&lender, 0, sizeof(lender));
	TAILQ_INIT(&lender.holds);
	CU_ASSERT_FATAL(conf_defaults(&lender.conf) == 0);
	CU_ASSERT_FATAL((lender.base = event_base_new()) != NULL);
	for (i = 0; i < n; i++)
		value_add(i, "key-", i + 1);
	CU_ASSERT_EQUAL(lender.nholds, n);
}

static void lender_close(void)
{
	hold_clear(&lender);
	event_base_free(lender.base);
	conf_free(lender.conf);
}

/* The lender's record now, by place: the report must hold each of its holdings, once. */
static void is_the_record(const struct holding *got, size_t n)
{
	struct holding *rec;
	size_t nrec, i, *at = calloc(NVALUES + 64, sizeof(*at));
	unsigned char *seen = calloc(NVALUES + 64, 1);

	CU_ASSERT_FATAL(at != NULL && seen != NULL);
	CU_ASSERT_EQUAL_FATAL(hold_list(&lender, &rec, &nrec), 0);
	CU_ASSERT_EQUAL(n, nrec);
	for (i = 0; i < nrec; i++)
		at[rec[i].e.off / 64] = i + 1;
	for (i = 0; i < n; i++) {
		size_t place = (size_t)(got[i].e.off / 64), k;

		CU_ASSERT_FATAL(place < NVALUES + 64 && at[place] != 0);
		CU_ASSERT_EQUAL(seen[place]++, 0);
		k = at[place] - 1;
		CU_ASSERT(got[i].has_kv && rec[k].has_kv);
		CU_ASSERT_EQUAL(got[i].kv.klen, rec[k].kv.klen);
		CU_ASSERT(memcmp(got[i].kv.key, rec[k].kv.key, rec[k].kv.klen) == 0);
		CU_ASSERT_EQUAL(got[i].kv.version, rec[k].kv.version);
		CU_ASSERT_STRING_EQUAL(got[i].kv.ns, "big");
	}
	free(seen);
	free(at);
	free(rec);
}

/* Bytes read from the far end of a link, not yet whole frames. */
struct far {
	int fd;
	uint8_t *buf;
	size_t have, cap;
	size_t used; /* by the frame given last */
};

/*
 * The next whole frame come to the far end while base's loop turns (its
 * payload points into f until the next call); false after a second
 * without one.
 */
static bool far_frame(struct event_base *base, struct far *f, struct wire_hdr *hdr,
		      const uint8_t **ret_payload)
{
	int i;

	if (f->used > 0)
		memmove(f->buf, f->buf + f->used, f->have - f->used);
	f->have -= f->used;
	f->used = 0;
	for (i = 0; i < 100000; i++) {
		struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
		ssize_t got;

		if (f->have >= WIRE_HDR_LEN &&
		    wire_hdr_decode(f->buf, f->have, 1u << 20, hdr) == 0 &&
		    f->have >= WIRE_HDR_LEN + hdr->len) {
			f->used = WIRE_HDR_LEN + hdr->len;
			*ret_payload = f->buf + WIRE_HDR_LEN;
			return true;
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 0) <= 0) {
			usleep(10);
			continue;
		}
		if (f->cap - f->have < 65536) {
			f->cap = f->cap ? f->cap * 2 : 1u << 20;
			CU_ASSERT_FATAL((f->buf = realloc(f->buf, f->cap)) != NULL);
		}
		got = recv(f->fd, f->buf + f->have, f->cap - f->have, MSG_DONTWAIT);
		CU_ASSERT_FATAL(got > 0);
		f->have += (size_t)got;
	}
	return false;
}

/*
 * One chunk as the coordinator reads it (packed, within the bound, then
 * unpacked): added to the report gathered at *rp; holdreport_add()'s result.
 */
static int chunk_read(const uint8_t *payload, size_t len, struct holdreport **rp, bool *ret_more)
{
	ProtobufCMessage *msg;
	Pool__Holdings *hs;
	struct holding *h;
	struct hold_place *gone;
	int rc;

	CU_ASSERT_FATAL(wire_msg_unpack(WIRE_HOLDINGS_REPLY, payload, len, &msg) == 0);
	hs = (Pool__Holdings *)msg;
	CU_ASSERT(len <= CHUNK || hs->n_holdings + hs->n_gone == 1);
	CU_ASSERT(hs->has_report && hs->has_seq && hs->has_more);
	h = holdings_of_msg(hs);
	gone = holding_ends_of_msg(hs);
	CU_ASSERT_FATAL(h != NULL && gone != NULL);
	rc = holdreport_add(rp, hs->report, hs->seq, hs->more, h, hs->n_holdings, gone, hs->n_gone);
	*ret_more = hs->more;
	free(h);
	free(gone);
	wire_msg_free(msg);
	return rc;
}

/* The next chunk of the report on its way, packed (free it); whether more follow. */
static uint8_t *chunk_make(uint32_t seq, size_t *ret_len, bool *ret_more)
{
	struct holdreport_chunk chunk;
	Pool__Holdings hs;
	uint8_t *buf;

	CU_ASSERT_EQUAL_FATAL(holdreport_chunk(&lender, CHUNK, &chunk), 0);
	CU_ASSERT_EQUAL_FATAL(holdings_chunk_msg(7, seq, &chunk, &hs), 0);
	*ret_len = pool__holdings__get_packed_size(&hs);
	buf = malloc(*ret_len ? *ret_len : 1);
	CU_ASSERT_FATAL(buf != NULL);
	pool__holdings__pack(&hs, buf);
	*ret_more = hs.more;
	holdings_chunk_free(&hs);
	holdreport_chunk_free(&chunk);
	return buf;
}

/* The lender's end of the link: a real connection over a socket pair. */
static void frame_ignored(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload,
			  void *arg)
{
	(void)c, (void)hdr, (void)payload, (void)arg;
}

static void closed(struct conn *c, void *arg)
{
	(void)c, (void)arg;
}

static const struct conn_ops link_ops = {.frame = frame_ignored, .closed = closed};

struct sending {
	struct conn *conn;
	uint32_t seq;
	size_t most_queued; /* the most unwritten bytes the link held after a chunk */
	int end_rc;
	bool ended;
};

static int send_next(struct poold *pd, struct conn *c, void *arg)
{
	struct sending *s = arg;
	struct holdreport_chunk chunk;
	Pool__Holdings hs;
	bool more;
	int rc;

	if ((rc = holdreport_chunk(pd, CHUNK, &chunk)) < 0)
		return rc;
	CU_ASSERT_EQUAL_FATAL(holdings_chunk_msg(7, s->seq, &chunk, &hs), 0);
	rc = conn_send(c, WIRE_HOLDINGS_REPLY, 0, &hs.base);
	more = chunk.more;
	holdings_chunk_free(&hs);
	holdreport_chunk_free(&chunk);
	s->seq++;
	s->most_queued = MAX(s->most_queued, conn_output_len(c));
	return rc < 0 ? rc : more;
}

static void send_end(struct poold *pd, void *arg, int rc)
{
	struct sending *s = arg;

	hold_report_end(pd);
	s->ended = true;
	s->end_rc = rc;
}

/*
 * The record changes under a report on its way: after its third chunk, ten
 * holdings it told end, one it has not told yet ends, one it told changes,
 * ten new ones come.
 */
static void record_changes(void)
{
	unsigned i;

	for (i = 0; i < 10; i++)
		hold_scrub(&lender, 0, (uint64_t)i * 64, 64);
	hold_scrub(&lender, 0, (uint64_t)(NVALUES - 1) * 64, 64);
	value_add(20, "changed-", 100000);
	for (i = NVALUES; i < NVALUES + 10; i++)
		value_add(i, "new-", i + 1);
}

/*
 * The report goes over the link one chunk per turn of the loop, queued
 * behind at most two chunks, while the record changes; gathered again, it
 * is the record as it is at its end, each holding once.
 */
static void test_report_over_a_link(void)
{
	struct sending s = {0};
	struct holdreport *r = NULL;
	struct stream *st = NULL;
	const struct holding *got;
	const uint8_t *payload;
	struct wire_hdr hdr;
	struct far far = {0};
	unsigned chunks = 0;
	bool more = true;
	size_t n;
	int sv[2];

	lender_open(NVALUES);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(
	    conn_new(lender.base, sv[0], NULL, 1u << 20, &link_ops, NULL, "coordinator", &s.conn),
	    0);
	far.fd = sv[1];
	CU_ASSERT_EQUAL_FATAL(hold_report_begin(&lender), 0);
	CU_ASSERT_EQUAL_FATAL(
	    stream_start(&lender, s.conn, 2 * CHUNK, send_next, send_end, &s, &st), 0);
	CU_ASSERT_EQUAL(s.seq, 0); /* (nothing before the loop turns) */
	while (more && far_frame(lender.base, &far, &hdr, &payload)) {
		int rc;

		CU_ASSERT_EQUAL(hdr.type, WIRE_HOLDINGS_REPLY);
		rc = chunk_read(payload, hdr.len, &r, &more);
		CU_ASSERT_EQUAL(rc, more ? 0 : 1);
		if (++chunks == 3)
			record_changes();
	}
	CU_ASSERT_FALSE(more);
	CU_ASSERT(chunks > NVALUES * 40 / CHUNK); /* (a value takes 40 bytes or more) */
	CU_ASSERT_EQUAL(chunks, s.seq);
	CU_ASSERT(s.most_queued <= 3 * CHUNK);
	event_base_loop(lender.base, EVLOOP_NONBLOCK);
	CU_ASSERT(s.ended);
	CU_ASSERT_EQUAL(s.end_rc, 0);
	CU_ASSERT_PTR_NULL(lender.hold_report);
	CU_ASSERT_EQUAL_FATAL(holdreport_result(r, &got, &n), 0);
	CU_ASSERT_EQUAL(n, NVALUES - 11 + 10);
	is_the_record(got, n);
	holdreport_free(r);
	free(far.buf);
	conn_free(s.conn);
	close(far.fd);
	lender_close();
}

/* A link that goes ends the stream with -ECONNRESET, and the report with it. */
static void test_report_link_goes(void)
{
	struct sending s = {0};
	struct stream *st = NULL;
	int sv[2], i;

	lender_open(NVALUES);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(
	    conn_new(lender.base, sv[0], NULL, 1u << 20, &link_ops, NULL, "coordinator", &s.conn),
	    0);
	CU_ASSERT_EQUAL_FATAL(hold_report_begin(&lender), 0);
	CU_ASSERT_EQUAL_FATAL(
	    stream_start(&lender, s.conn, 2 * CHUNK, send_next, send_end, &s, &st), 0);
	for (i = 0; i < 3; i++)
		event_base_loop(lender.base, EVLOOP_NONBLOCK);
	CU_ASSERT(s.seq > 0 && !s.ended);
	close(sv[1]);
	for (i = 0; i < 100 && !s.ended; i++) {
		event_base_loop(lender.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	CU_ASSERT(s.ended);
	CU_ASSERT_EQUAL(s.end_rc, -ECONNRESET);
	CU_ASSERT_PTR_NULL(lender.hold_report);
	lender_close();
}

/*
 * A report is the lender's record only whole: cut short, or with a chunk
 * out of its order, it is never given; whole, every value comes back into
 * a restarted coordinator's index.
 */
static void test_whole_reports_only(void)
{
	struct poold coord;
	struct holdreport *r = NULL;
	const struct holding *got;
	struct kv_ns *ns;
	uint8_t *buf;
	size_t len, n;
	uint32_t seq;
	bool more = true;

	lender_open(NVALUES);
	cores_open(&coord, 1);
	/* All chunks but the last: no record, and nothing of it reaches the index. */
	CU_ASSERT_EQUAL_FATAL(hold_report_begin(&lender), 0);
	for (seq = 0; more; seq++) {
		buf = chunk_make(seq, &len, &more);
		if (!more) { /* the link goes before the last chunk */
			free(buf);
			break;
		}
		CU_ASSERT_EQUAL(chunk_read(buf, len, &r, &more), 0);
		free(buf);
		CU_ASSERT_EQUAL(holdreport_result(r, &got, &n), -EAGAIN);
	}
	CU_ASSERT(seq > 10);
	holdreport_free(r); /* (as the coordinator does when the link goes) */
	r = NULL;
	CU_ASSERT_PTR_NULL(kv_ns_find(&coord, "big"));
	hold_report_end(&lender);

	/* A chunk skipped: the report is dropped, and its later chunks are not taken. */
	CU_ASSERT_EQUAL_FATAL(hold_report_begin(&lender), 0);
	buf = chunk_make(0, &len, &more);
	CU_ASSERT_EQUAL(chunk_read(buf, len, &r, &more), 0);
	free(buf);
	free(chunk_make(1, &len, &more));
	buf = chunk_make(2, &len, &more);
	CU_ASSERT_EQUAL(chunk_read(buf, len, &r, &more), -EPROTO);
	free(buf);
	CU_ASSERT_PTR_NULL(r);
	buf = chunk_make(3, &len, &more);
	CU_ASSERT_EQUAL(chunk_read(buf, len, &r, &more), -EPROTO);
	free(buf);
	hold_report_end(&lender);

	/* The report told again, whole: every value is back, once. */
	CU_ASSERT_EQUAL_FATAL(hold_report_begin(&lender), 0);
	for (seq = 0, more = true; more; seq++) {
		buf = chunk_make(seq, &len, &more);
		CU_ASSERT_EQUAL(chunk_read(buf, len, &r, &more), more ? 0 : 1);
		free(buf);
	}
	hold_report_end(&lender);
	CU_ASSERT_EQUAL_FATAL(holdreport_result(r, &got, &n), 0);
	CU_ASSERT_EQUAL(n, NVALUES);
	is_the_record(got, n);
	reconcile_holdings(&coord, LENDER, got, n);
	reconcile_run(&coord, 0);
	ns = kv_ns_find(&coord, "big");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
	CU_ASSERT_EQUAL(ns->nentries, NVALUES);
	holdreport_free(r);
	cores_close(&coord);
	lender_close();
}

/* A Hold of many holdings goes as several, each within the bound, answered once for all. */
struct answer {
	unsigned calls;
	int rc;
};

static void hold_done(struct poold *pd, void *arg, int rc)
{
	struct answer *a = arg;

	(void)pd;
	a->calls++;
	a->rc = rc;
}

static void test_holds_in_chunks(void)
{
	struct poold coord;
	struct holding *h = calloc(NVALUES, sizeof(*h));
	struct answer a = {0};
	struct far far = {0};
	const uint8_t *payload;
	struct wire_hdr hdr;
	uint64_t ids[4096];
	size_t told = 0, nids = 0, i;
	int sv[2];

	CU_ASSERT_FATAL(h != NULL);
	cores_open(&coord, 1);
	coord.conf->peer_chunk_size = CHUNK;
	CU_ASSERT_EQUAL_FATAL(member_call_open(&coord), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(conn_new(coord.base, sv[0], NULL, 1u << 20, &link_ops, NULL, "node 2",
				       &member_find(&coord, LENDER)->conn),
			      0);
	for (i = 0; i < NVALUES; i++) {
		char key[24];

		snprintf(key, sizeof(key), "key-%06zu", i);
		h[i] = value((unsigned)i, key, i + 1);
	}
	far.fd = sv[1];
	holdings_send(&coord, LENDER, h, NVALUES, hold_done, &a);
	while (told < NVALUES && nids < 4096 && far_frame(coord.base, &far, &hdr, &payload)) {
		ProtobufCMessage *msg;

		CU_ASSERT_EQUAL(hdr.type, WIRE_HOLD);
		CU_ASSERT(hdr.len <= CHUNK);
		CU_ASSERT_EQUAL_FATAL(wire_msg_unpack(WIRE_HOLD, payload, hdr.len, &msg), 0);
		told += ((Pool__Holdings *)msg)->n_holdings;
		ids[nids++] = hdr.req_id;
		wire_msg_free(msg);
	}
	CU_ASSERT_EQUAL(told, NVALUES);
	CU_ASSERT(nids > 10);
	for (i = 0; i < nids; i++) {
		struct wire_hdr ok_hdr = {.type = WIRE_OK, .req_id = ids[i]};
		Pool__Ok ok = POOL__OK__INIT;
		uint8_t buf[16];

		CU_ASSERT_EQUAL(a.calls, 0);
		ok_hdr.len = (uint32_t)pool__ok__pack(&ok, buf);
		member_call_answer(&coord, &ok_hdr, buf);
	}
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_EQUAL(a.rc, 0);
	member_call_close(&coord);
	conn_free(member_find(&coord, LENDER)->conn);
	member_find(&coord, LENDER)->conn = NULL;
	close(far.fd);
	free(far.buf);
	cores_close(&coord);
	free(h);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a report over a link, as the record changes", test_report_over_a_link},
	    {"a link that goes ends the report", test_report_link_goes},
	    {"only whole reports are records", test_whole_reports_only},
	    {"holds in chunks, answered once", test_holds_in_chunks},
	    {NULL, NULL},
	};

	signal(SIGPIPE, SIG_IGN); /* (as poold: a link that went is an error, not a signal) */
	return unit_run("holdreport", tests);
}

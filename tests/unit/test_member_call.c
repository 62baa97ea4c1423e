/*
 * tests/unit/test_member_call.c - the coordinator's calls to its nodes
 * (daemon/member/member-call.c) over a real framed connection to a socket pair: a
 * request reaches the node with its own id, and its answer (Ok, an Error,
 * any frame) goes to its caller once; a dropped link fails that node's
 * calls, a cancelled call is never called back, a stopping coordinator
 * fails the calls that want their frame.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "tests/unit/cores.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "tests/unit/unit.h"

#define NODE 2 /* the lender cores_open() makes */

static struct poold pd;
static int far_end; /* the node's side of the link */

struct answer {
	unsigned calls;
	int rc;
	uint16_t type; /* of the frame given to a coord_call() reply, or 0 */
};

static void no_frame(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload, void *arg)
{
	(void)c;
	(void)hdr;
	(void)payload;
	(void)arg;
}

static void closed(struct conn *c, void *arg)
{
	(void)c;
	(void)arg;
}

static const struct conn_ops link_ops = {.frame = no_frame, .closed = closed};

static void link_open(void)
{
	int sv[2];

	cores_open(&pd, 1);
	CU_ASSERT_EQUAL_FATAL(member_call_open(&pd), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(conn_new(pd.base, sv[0], NULL, 1u << 20, &link_ops, NULL, "node 2",
				       &member_find(&pd, NODE)->conn),
			      0);
	far_end = sv[1];
}

static void link_close(void)
{
	struct member *m = member_find(&pd, NODE);

	member_call_close(&pd);
	if (m->conn != NULL)
		conn_free(m->conn);
	m->conn = NULL;
	close(far_end);
	cores_close(&pd);
}

/* The next frame the node got: its header (the loop runs until it is out). */
static struct wire_hdr node_reads(void)
{
	struct wire_hdr hdr;
	uint8_t *payload = NULL;
	int i;

	for (i = 0; i < 100 && conn_output_len(member_find(&pd, NODE)->conn) > 0; i++)
		event_base_loop(pd.base, EVLOOP_NONBLOCK);
	CU_ASSERT_EQUAL_FATAL(wire_recv_frame(far_end, 1u << 20, 1000, &hdr, &payload), 0);
	free(payload);
	return hdr;
}

static void done(struct poold *p, void *arg, int rc)
{
	struct answer *a = arg;

	(void)p;
	a->calls++;
	a->rc = rc;
}

static void replied(struct poold *p, void *arg, int rc, const struct wire_hdr *hdr,
		    const uint8_t *payload)
{
	struct answer *a = arg;

	(void)p;
	(void)payload;
	a->calls++;
	a->rc = rc;
	a->type = hdr != NULL ? hdr->type : 0;
}

/* The node answers request id with a frame of type (an Error of code when type is WIRE_ERROR). */
static void node_answers(uint64_t id, uint16_t type, int code)
{
	Pool__Error err = POOL__ERROR__INIT;
	struct wire_hdr hdr = {.type = type, .req_id = id};
	uint8_t buf[256];

	if (type == WIRE_ERROR) {
		err.code = code;
		err.message = "refused";
		hdr.len = (uint32_t)pool__error__pack(&err, buf);
	}
	member_call_answer(&pd, &hdr, buf);
}

/* Requests answered Ok or with an Error, each to its own caller, once. */
static void test_answers(void)
{
	Pool__Scrub sc = POOL__SCRUB__INIT;
	struct answer a = {0}, b = {0};
	struct wire_hdr first, second;

	link_open();
	CU_ASSERT_EQUAL(coord_request(&pd, NODE, WIRE_SCRUB, &sc.base, done, &a), 0);
	CU_ASSERT_EQUAL(coord_request(&pd, NODE, WIRE_SCRUB, &sc.base, done, &b), 0);
	first = node_reads();
	second = node_reads();
	CU_ASSERT_EQUAL(first.type, WIRE_SCRUB);
	CU_ASSERT_NOT_EQUAL(first.req_id, second.req_id);
	node_answers(second.req_id, WIRE_ERROR, -EACCES);
	CU_ASSERT_EQUAL(a.calls, 0);
	CU_ASSERT_EQUAL(b.calls, 1);
	CU_ASSERT_EQUAL(b.rc, -EACCES);
	node_answers(first.req_id, WIRE_OK, 0);
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_EQUAL(a.rc, 0);
	/* Answered again, or an id never asked: nobody is called. */
	node_answers(first.req_id, WIRE_OK, 0);
	node_answers(first.req_id + 100, WIRE_OK, 0);
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_EQUAL(b.calls, 1);
	/* A node without a link, or none at all: not sent, no callback. */
	CU_ASSERT_EQUAL(coord_request(&pd, 9, WIRE_SCRUB, &sc.base, done, &a), -ENOTCONN);
	CU_ASSERT_EQUAL(a.calls, 1);
	link_close();
}

/* A call's reply gets the frame whatever its type; a cancelled one is never called. */
static void test_calls_and_cancel(void)
{
	Pool__ProbeRequest pr = POOL__PROBE_REQUEST__INIT;
	struct answer a = {0}, b = {0};
	struct wire_hdr first, second;

	link_open();
	CU_ASSERT_EQUAL(coord_call(&pd, NODE, WIRE_PROBE, &pr.base, replied, &a), 0);
	CU_ASSERT_EQUAL(coord_call(&pd, NODE, WIRE_PROBE, &pr.base, replied, &b), 0);
	first = node_reads();
	second = node_reads();
	node_answers(first.req_id, WIRE_PROBE_REPORT, 0);
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_EQUAL(a.rc, 0);
	CU_ASSERT_EQUAL(a.type, WIRE_PROBE_REPORT);
	member_call_cancel(&pd, &b);
	node_answers(second.req_id, WIRE_PROBE_REPORT, 0);
	member_call_fail(&pd, NODE);
	CU_ASSERT_EQUAL(b.calls, 0);
	link_close();
}

/* A dropped link fails its node's calls; a stopping coordinator those that want a frame. */
static void test_fail_and_close(void)
{
	Pool__Scrub sc = POOL__SCRUB__INIT;
	struct answer a = {0}, b = {0}, c = {0}, d = {0};

	link_open();
	CU_ASSERT_EQUAL(coord_request(&pd, NODE, WIRE_SCRUB, &sc.base, done, &a), 0);
	CU_ASSERT_EQUAL(coord_call(&pd, NODE, WIRE_SCRUB, &sc.base, replied, &b), 0);
	member_call_fail(&pd, NODE + 1); /* another node's link: nothing */
	CU_ASSERT_EQUAL(a.calls + b.calls, 0);
	member_call_fail(&pd, NODE);
	CU_ASSERT_EQUAL(a.calls, 1);
	CU_ASSERT_EQUAL(a.rc, -ECONNRESET);
	CU_ASSERT_EQUAL(b.calls, 1);
	CU_ASSERT_EQUAL(b.rc, -ECONNRESET);
	CU_ASSERT_EQUAL(b.type, 0);
	CU_ASSERT_EQUAL(coord_request(&pd, NODE, WIRE_SCRUB, &sc.base, done, &c), 0);
	CU_ASSERT_EQUAL(coord_call(&pd, NODE, WIRE_SCRUB, &sc.base, replied, &d), 0);
	member_call_close(&pd);
	CU_ASSERT_EQUAL(c.calls, 0); /* (a request's caller learns of the stop otherwise) */
	CU_ASSERT_EQUAL(d.calls, 1);
	CU_ASSERT_EQUAL(d.rc, -ESHUTDOWN);
	CU_ASSERT_EQUAL(coord_request(&pd, NODE, WIRE_SCRUB, &sc.base, done, &c), -ENOTCONN);
	link_close();
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"answers go to their caller once", test_answers},
	    {"calls get their frame; cancelled ones nothing", test_calls_and_cancel},
	    {"a dropped link and a stop fail the calls", test_fail_and_close},
	    {NULL, NULL},
	};

	return unit_run("member_calls", tests);
}

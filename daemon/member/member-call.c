/*
 * daemon/member/member-call.c - the coordinator's calls to its nodes over their
 * links: requests whose answer (Ok or an Error, or any reply frame) comes
 * back to a callback, and notices that want none. A dropped link fails its
 * node's calls; a stopping coordinator fails them all. The cores send
 * through here (by their *wire.c codecs) and nothing here calls a core.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/member/member.h"
#include "daemon/net/net.h"

/* A request sent to a node, waiting for its answer. */
struct coord_call {
	TAILQ_ENTRY(coord_call) entry;
	uint64_t id;
	uint32_t node;
	coord_done_cb cb;     /* a request of coord_request(), or */
	coord_reply_cb reply; /* one of coord_call() */
	void *arg;
};

struct member_calls {
	TAILQ_HEAD(coord_calls, coord_call) calls;
	uint64_t next_req;
};

/* Send a request to a node, answered to cb or reply: 0, or -ENOTCONN or -ENOMEM (not sent). */
static int member_call_send(struct poold *pd, uint32_t node, uint16_t type,
			    const ProtobufCMessage *msg, coord_done_cb cb, coord_reply_cb reply,
			    void *arg)
{
	struct member_calls *cl = pd->member_calls;
	struct member *m = member_find(pd, node);
	struct coord_call *call;

	if (cl == NULL || m == NULL || m->conn == NULL)
		return -ENOTCONN;
	if ((call = calloc(1, sizeof(*call))) == NULL)
		return -ENOMEM;
	*call = (struct coord_call){
	    .id = ++cl->next_req, .node = node, .cb = cb, .reply = reply, .arg = arg};
	if (conn_send(m->conn, type, call->id, msg) < 0) {
		free(call);
		return -ENOTCONN;
	}
	TAILQ_INSERT_TAIL(&cl->calls, call, entry);
	return 0;
}

/*
 * Send a request to a node; cb gets 0 when it answers Ok, or the error (also
 * -ECONNRESET when its link drops first). -ENOTCONN: not sent, no callback.
 */
int coord_request(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		  coord_done_cb cb, void *arg)
{
	return member_call_send(pd, node, type, msg, cb, NULL, arg);
}

/*
 * Send a request to a node; reply gets its answer frame, whatever its type
 * (hdr NULL and rc < 0 when the link drops first or poold stops). -ENOTCONN:
 * not sent, no callback.
 */
int coord_call(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
	       coord_reply_cb reply, void *arg)
{
	return member_call_send(pd, node, type, msg, NULL, reply, arg);
}

/* Send a notice (request id 0) to a node, if it is connected. */
void coord_notice(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg)
{
	struct member *m = member_find(pd, node);

	if (m != NULL && m->conn != NULL)
		conn_send(m->conn, type, 0, msg);
}

/* Forget a call of coord_call() without calling it back (whoever made it gave up). */
void member_call_cancel(struct poold *pd, const void *arg)
{
	struct coord_call *call;

	if (pd->member_calls == NULL)
		return;
	TAILQ_FOREACH(call, &pd->member_calls->calls, entry)
		if (call->arg == arg) {
			TAILQ_REMOVE(&pd->member_calls->calls, call, entry);
			free(call);
			return;
		}
}

/* A node's answer to one of our calls, if it is still waited for. */
void member_call_answer(struct poold *pd, const struct wire_hdr *hdr, const uint8_t *payload)
{
	struct member_calls *cl = pd->member_calls;
	struct coord_call *call;
	Pool__Error *err = NULL;
	int rc = 0;

	TAILQ_FOREACH(call, &cl->calls, entry)
		if (call->id == hdr->req_id)
			break;
	if (call == NULL)
		return; /* its caller gave up on it */
	TAILQ_REMOVE(&cl->calls, call, entry);
	if (call->reply != NULL) {
		call->reply(pd, call->arg, 0, hdr, payload);
	} else if (call->cb != NULL) {
		if (hdr->type == WIRE_ERROR &&
		    wire_msg_unpack(hdr->type, payload, hdr->len, (ProtobufCMessage **)&err) == 0) {
			rc = err->code < 0 ? err->code : -EPROTO;
			wire_msg_free(&err->base);
		} else if (hdr->type == WIRE_ERROR) {
			rc = -EPROTO;
		}
		call->cb(pd, call->arg, rc);
	}
	free(call);
}

/*
 * A node's link dropped: fail the calls it will never answer. (Its member's
 * link is gone first, so a caller that asks again is refused, not queued.)
 */
void member_call_fail(struct poold *pd, uint32_t node)
{
	struct member_calls *cl = pd->member_calls;
	struct coord_call *call;

	/* (A callback may make or end other calls: look again from the start after each.) */
	for (;;) {
		TAILQ_FOREACH(call, &cl->calls, entry)
			if (call->node == node)
				break;
		if (call == NULL)
			return;
		TAILQ_REMOVE(&cl->calls, call, entry);
		if (call->reply != NULL)
			call->reply(pd, call->arg, -ECONNRESET, NULL, NULL);
		else if (call->cb != NULL)
			call->cb(pd, call->arg, -ECONNRESET);
		free(call);
	}
}

int member_call_open(struct poold *pd)
{
	if ((pd->member_calls = calloc(1, sizeof(*pd->member_calls))) == NULL)
		return -ENOMEM;
	TAILQ_INIT(&pd->member_calls->calls);
	return 0;
}

/* The coordinator stops: a call that wants its answer frame gets -ESHUTDOWN. */
void member_call_close(struct poold *pd)
{
	struct member_calls *cl = pd->member_calls;
	struct coord_call *call;

	if (cl == NULL)
		return;
	while ((call = TAILQ_FIRST(&cl->calls)) != NULL) {
		TAILQ_REMOVE(&cl->calls, call, entry);
		if (call->reply != NULL)
			call->reply(pd, call->arg, -ESHUTDOWN, NULL, NULL);
		free(call);
	}
	free(cl);
	pd->member_calls = NULL;
}

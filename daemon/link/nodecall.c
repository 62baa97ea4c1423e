/*
 * daemon/link/nodecall.c - requests between nodes' poolds, not through the
 * coordinator: this poold asks another member's poold to serve a request
 * of one of its clients, as a call on the checked link between them
 * (fabric/link*.c), and relays the answer; and serves such calls.
 *
 * A call carries the wire's Forward (the request, its type, and the
 * client's uid, gid and admin standing as its own poold saw them, as
 * nodes forward requests to the coordinator); the answer is the reply's
 * type (2 bytes, little-endian) and then the reply. Only members this
 * poold serves may call (carry-link.c's check of the link's peer), only
 * the types nodecall_served() lists are served, and only to a local
 * client's request is another node asked: a call never makes another.
 * With fabric.transfer = rma there are no links, and so no calls.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "fabric/fabric.h"

/* A request sent to another node, until its answer comes. */
struct nodecall {
	struct poold *pd;
	uint32_t node;
	nodecall_cb cb;
	void *arg;
	size_t in_len, out_len;
	uint8_t *in, *out;
};

/* The types another node may ask this poold to serve. */
static bool nodecall_served(uint32_t type)
{
	return type == WIRE_STATUS || type == WIRE_KV || type == WIRE_KV_NS ||
	       type == WIRE_SESSION_END || type == WIRE_KV_HANDOVER || type == WIRE_KV_BACKUP ||
	       type == WIRE_RESP_COMMAND || type == WIRE_KV_DEMAND || type == WIRE_KV_PART;
}

static void nodecall_free(struct nodecall *nc)
{
	free(nc->in);
	free(nc->out);
	free(nc);
}

static void nodecall_done(void *arg, int status)
{
	struct nodecall *nc = arg;

	if (status == 0 && nc->out_len < 2)
		status = -EPROTO;
	if (status < 0)
		nc->cb(nc->pd, nc->arg, status, 0, NULL, 0);
	else
		nc->cb(nc->pd, nc->arg, 0, (uint16_t)(nc->out[0] | nc->out[1] << 8), nc->out + 2,
		       nc->out_len - 2);
	nodecall_free(nc);
}

/*
 * Ask node's poold to serve msg, a request of type, for the client as
 * says; cb gets the reply (its type and bytes, at most max of them: a
 * larger one fails with -EMSGSIZE) or the error, from the loop. 0, or
 * -errno (cb never runs).
 */
static int nodecall_start(struct poold *pd, uint32_t node, bool side, const struct nodecall_as *as,
			  uint16_t type, const ProtobufCMessage *msg, size_t max, nodecall_cb cb,
			  void *arg)
{
	Pool__Forward fw = POOL__FORWARD__INIT;
	struct member *m = member_find(pd, node);
	struct nodecall *nc;
	size_t plen;
	int rc;

	/*
	 * (a suspect member, late with its heartbeats, is still asked: the call
	 * waits on its link, which closes if it is declared dead)
	 */
	if (m == NULL || m->state == MEMBER_DEAD)
		return -EHOSTUNREACH;
	if (max > FAB_LINK_CALL_MAX - 2)
		return -EMSGSIZE;
	rc = side ? carry_link_side(pd, m) : carry_link_way(pd, m);
	if (rc < 0)
		return rc;
	nc = calloc(1, sizeof(*nc));
	plen = protobuf_c_message_get_packed_size(msg);
	fw.uid = as->uid;
	fw.gid = as->gid;
	fw.pid = as->pid;
	fw.admin = as->admin;
	fw.type = type;
	fw.has_session = 1;
	fw.session = as->session;
	if (nc == NULL || (fw.payload.data = malloc(plen ? plen : 1)) == NULL) {
		free(nc);
		return -ENOMEM;
	}
	fw.payload.len = protobuf_c_message_pack(msg, fw.payload.data);
	*nc = (struct nodecall){.pd = pd, .node = node, .cb = cb, .arg = arg};
	nc->in_len = protobuf_c_message_get_packed_size(&fw.base);
	nc->in = malloc(nc->in_len);
	nc->out = malloc(max + 2);
	if (nc->in == NULL || nc->out == NULL) {
		free(fw.payload.data);
		nodecall_free(nc);
		return -ENOMEM;
	}
	protobuf_c_message_pack(&fw.base, nc->in);
	free(fw.payload.data);
	rc = fab_link_call(side ? m->side_link : m->link, nc->in, nc->in_len, nc->out, max + 2,
			   &nc->out_len, nodecall_done, nc);
	if (rc < 0)
		nodecall_free(nc);
	return rc;
}

/* nodecall_start() on the link to node, where the transfers carried to it go too. */
int nodecall_send(struct poold *pd, uint32_t node, const struct nodecall_as *as, uint16_t type,
		  const ProtobufCMessage *msg, size_t max, nodecall_cb cb, void *arg)
{
	return nodecall_start(pd, node, false, as, type, msg, max, cb, arg);
}

/*
 * nodecall_send() on the side link to node, for a call that node answers
 * at once: its answer never waits behind one node holds on the link (a
 * request answered once its own calls are, as a put of a namespace of 2
 * replicas is): such calls on one link would wait on each other in a
 * cycle between poolds.
 */
int nodecall_send_apart(struct poold *pd, uint32_t node, const struct nodecall_as *as,
			uint16_t type, const ProtobufCMessage *msg, size_t max, nodecall_cb cb,
			void *arg)
{
	return nodecall_start(pd, node, true, as, type, msg, max, cb, arg);
}

int nodecall_reply(int status, uint16_t type, const uint8_t *bytes, size_t len, uint16_t want,
		   ProtobufCMessage **ret)
{
	ProtobufCMessage *msg = NULL;

	*ret = NULL;
	if (status == 0 && wire_msg_unpack(type, bytes, len, &msg) < 0)
		status = -EBADMSG;
	if (status == 0 && type == WIRE_ERROR)
		status = ((Pool__Error *)msg)->code < 0 ? ((Pool__Error *)msg)->code : -EPROTO;
	else if (status == 0 && type != want)
		status = -EPROTO;
	if (status == 0)
		*ret = msg;
	else if (msg != NULL)
		wire_msg_free(msg);
	return status;
}

/* Who the client of r is, as a call says it. */
void nodecall_as_req(const struct req *r, struct nodecall_as *ret)
{
	*ret = (struct nodecall_as){(uint32_t)r->uid, (uint32_t)r->gid, (uint32_t)r->pid, r->admin,
				    r->session};
}

/* The answer to a request of a client of this poold: to the client, as it is. */
static void nodecall_relay(struct poold *pd, void *arg, int status, uint16_t type,
			   const uint8_t *reply, size_t len)
{
	struct req *r = arg;
	ProtobufCMessage *msg;

	if (status < 0) {
		req_finish(r, req_errorf(r, status, "a node did not answer: %s", err_str(status)));
		return;
	}
	/* What the owner granted the client: its transfers go through this poold. */
	if ((type == WIRE_KV_REPLY || type == WIRE_REGION_REPLY) &&
	    wire_msg_unpack(type, reply, len, &msg) == 0) {
		grant_reply(pd, r->session, type, msg);
		wire_msg_free(msg);
	}
	conn_send_raw(r->conn, type, r->id, reply, len);
	req_finish(r, 0);
}

/*
 * Ask node to serve msg (a request of type) for r's client; the answer (at
 * most max bytes) is relayed to the client when it comes.
 */
int nodecall_forward(struct req *r, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		     size_t max)
{
	struct nodecall_as as;
	struct req *held;
	int rc;

	if (r->conn == NULL)
		return req_errorf(r, -EOPNOTSUPP, "a request from another node asks no further");
	if ((held = req_hold(r)) == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	nodecall_as_req(r, &as);
	rc = nodecall_send(r->pd, node, &as, type, msg, max, nodecall_relay, held);
	if (rc < 0) {
		req_finish(held, 0);
		return req_errorf(r, rc,
				  rc == -EHOSTUNREACH ? "node %u is not a live member"
						      : "cannot ask node %u: %s",
				  node, err_str(rc));
	}
	return 0;
}

/* The reply to a request another node asked for: its answer on the link. */
int nodecall_answer(struct req *r, uint16_t type, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len + 2);
	struct fab_link_answer *ans = r->answer_to;

	r->answer = NULL; /* (once) */
	if (buf == NULL) {
		fab_link_answer(ans, -ENOMEM, NULL, 0);
		return -ENOMEM;
	}
	buf[0] = (uint8_t)type;
	buf[1] = (uint8_t)(type >> 8);
	protobuf_c_message_pack(msg, buf + 2);
	fab_link_answer(ans, 0, buf, len + 2);
	free(buf);
	return 0;
}

/* A call from another node (fab_link_ops.call): served as a request of its client. */
static void nodecall_serve(struct poold *pd, const struct fab_link_peer *peer, const void *in,
			   size_t len, struct fab_link_answer *ans)
{
	struct req r = {.pd = pd, .answer = nodecall_answer, .answer_to = ans, .node = peer->node};
	Pool__Forward *fw = NULL;
	int rc = carry_link_member(pd, peer);

	if (rc < 0) {
		fab_link_answer(ans, -EACCES, NULL, 0);
		return;
	}
	if (wire_msg_unpack(WIRE_FORWARD, in, len, (ProtobufCMessage **)&fw) < 0) {
		rc = req_errorf(&r, -EBADMSG, "malformed call from node %u", peer->node);
	} else if (!nodecall_served(fw->type)) {
		rc = req_errorf(&r, -EOPNOTSUPP, "%s is not a request nodes ask of each other",
				wire_type_name((uint16_t)fw->type));
	} else if (fw->type == WIRE_SESSION_END) {
		/* A client of the caller's went: its pins and reservations of this node's shards.
		 */
		Pool__Ok ok = POOL__OK__INIT;

		pd->node_session_end(pd, peer->node, fw->session, false);
		nodecall_answer(&r, WIRE_OK, &ok.base);
	} else {
		r.uid = fw->uid;
		r.gid = fw->gid;
		r.pid = (pid_t)fw->pid;
		r.admin = fw->admin;
		r.session = fw->session;
		control_dispatch(&r, (uint16_t)fw->type, fw->payload.data, fw->payload.len);
	}
	if (fw != NULL)
		wire_msg_free(&fw->base);
	if (rc < 0)
		req_send_error(&r, rc);
}

/*
 * Serve other nodes' calls from now on (the links hand them here:
 * pd->node_call); session_end ends what a client of theirs that went held.
 */
void nodecall_open(struct poold *pd,
		   void (*session_end)(struct poold *pd, uint32_t node, uint64_t session, bool all))
{
	pd->node_call = nodecall_serve;
	pd->node_session_end = session_end;
}

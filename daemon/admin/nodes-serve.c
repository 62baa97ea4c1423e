/*
 * daemon/admin/nodes-serve.c - cluster requests served by the coordinator: the member
 * list, the fabric matrix, and a round of link probes. A node forwards them.
 */
#include "config.h"

#include <errno.h>

#include "daemon/admin/admin.h"
#include "daemon/control/control.h"
#include "daemon/coord/coord.h"
#include "daemon/member/member.h"

static int nodes_request(struct req *r, const ProtobufCMessage *msg)
{
	Pool__NodesReply reply = POOL__NODES_REPLY__INIT;
	int rc;

	rc = members_msg(r->pd, true, &reply.members, &reply.n_members);
	if (rc < 0)
		return req_errorf(r, rc, "out of memory");
	rc = req_reply(r, WIRE_NODES_REPLY, &reply.base);
	members_msg_free(reply.members, reply.n_members);
	return rc;
}

static int nodes_fabric(struct req *r, const ProtobufCMessage *msg)
{
	Pool__FabricReply reply = POOL__FABRIC_REPLY__INIT;
	int rc;

	rc = members_msg(r->pd, true, &reply.members, &reply.n_members);
	if (rc < 0)
		return req_errorf(r, rc, "out of memory");
	reply.results = r->pd->probes;
	reply.n_results = r->pd->nprobes;
	rc = req_reply(r, WIRE_FABRIC_REPLY, &reply.base);
	members_msg_free(reply.members, reply.n_members);
	return rc;
}

static int nodes_probe(struct req *r, const ProtobufCMessage *msg)
{
	return coord_probe_all(r->pd, r);
}

const struct ctl_handler nodes_handlers[] = {
    {WIRE_NODES, CTL_ANY, AT_COORD, nodes_request, NULL},
    {WIRE_FABRIC, CTL_ANY, AT_COORD, nodes_fabric, NULL},
    {WIRE_PROBE, CTL_ADMIN, AT_COORD, nodes_probe, NULL},
    {0, 0, 0, NULL, NULL},
};

/* daemon/status.c - the status request: who this poold is and how it runs. */
#include "config.h"

#include <unistd.h>

#include "daemon/poold.h"

static int status_request(struct req *r, const ProtobufCMessage *msg)
{
	struct poold *pd = r->pd;
	Pool__StatusReply reply = POOL__STATUS_REPLY__INIT;
	char role[32];

	conf_format(pd->conf, conf_find("role"), role, sizeof(role));
	reply.version = PACKAGE_VERSION;
	reply.uptime_ms = units_now_ms() - pd->start_ms;
	reply.node_id = pd->node_id;
	reply.role = role;
	reply.clients = control_nclients(pd->control);
	reply.pid = (uint32_t)getpid();
	reply.config_file = (char *)(pd->conf_path ? pd->conf_path : "");
	reply.lend_size = (uint64_t)pd->conf->lend_size;
	reply.socket = pd->conf->socket;
	reply.reloads = pd->reloads;
	reply.requests = pd->requests;
	return req_reply(r, WIRE_STATUS_REPLY, &reply.base);
}

const struct ctl_handler status_handlers[] = {
	{WIRE_STATUS, CTL_ANY, AT_HERE, status_request},
	{0, 0, 0, NULL},
};

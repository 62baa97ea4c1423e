/* daemon/status.c - the status request: who this poold is and how it runs. */
#include "config.h"

#include <unistd.h>

#include "daemon/poold.h"

static int status_request(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg)
{
	struct poold *pd = ctl_poold(c);
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
	return ctl_reply(c, req_id, WIRE_STATUS_REPLY, &reply.base);
}

const struct ctl_handler status_handlers[] = {
	{WIRE_STATUS, CTL_ANY, status_request},
	{0, 0, NULL},
};

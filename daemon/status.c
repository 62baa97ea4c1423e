/* daemon/status.c - the status request: who this poold is and how it runs. */
#include "config.h"

#include <unistd.h>

#include "daemon/journal.h"
#include "daemon/poold.h"

static int status_request(struct req *r, const ProtobufCMessage *msg)
{
	struct poold *pd = r->pd;
	Pool__StatusReply reply = POOL__STATUS_REPLY__INIT;
	Pool__JournalInfo ji[2], *jp[2];
	struct journal_stats st[2];
	const char *names[2];
	char role[32];
	size_t n, i;

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
	n = journals_stats(pd, names, st);
	for (i = 0; i < n; i++) {
		pool__journal_info__init(&ji[i]);
		ji[i].name = (char *)names[i];
		ji[i].records = st[i].records;
		ji[i].used = st[i].used;
		ji[i].half = st[i].size;
		ji[i].rewrites = st[i].rewrites;
		ji[i].dropped = st[i].dropped;
		jp[i] = &ji[i];
	}
	reply.fabric_firewall = (char *)firewall_state(pd);
	reply.journals = jp;
	reply.n_journals = n;
	return req_reply(r, WIRE_STATUS_REPLY, &reply.base);
}

const struct ctl_handler status_handlers[] = {
    {WIRE_STATUS, CTL_ANY, AT_HERE, status_request, NULL},
    {0, 0, 0, NULL, NULL},
};

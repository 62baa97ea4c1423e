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
	struct journal_stats st;
	char role[32];
	size_t n = 0, i;

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
	for (i = 0; i < 2; i++) {
		if (i == 0 ? pd->journal == NULL : !coordlog_stats(pd, &st))
			continue;
		if (i == 0)
			journal_stats(pd->journal, &st);
		pool__journal_info__init(&ji[n]);
		ji[n].name = i == 0 ? "lender" : "coordinator";
		ji[n].records = st.records;
		ji[n].used = st.used;
		ji[n].half = st.size;
		ji[n].rewrites = st.rewrites;
		ji[n].dropped = st.dropped;
		jp[n] = &ji[n];
		n++;
	}
	reply.journals = jp;
	reply.n_journals = n;
	return req_reply(r, WIRE_STATUS_REPLY, &reply.base);
}

const struct ctl_handler status_handlers[] = {
	{WIRE_STATUS, CTL_ANY, AT_HERE, status_request},
	{0, 0, 0, NULL},
};

/* daemon/admin/status-serve.c - the status request: who this poold is and how it runs. */
#include "config.h"

#include <unistd.h>

#include "daemon/admin/admin.h"
#include "daemon/control/control.h"
#include "daemon/coord/coord.h"
#include "daemon/ha/ha.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "proto/statusstats.h"

#define STATUS_REPLY_MAX (64u << 10) /* another node's, asked for through this poold */

/* Each figure of a journal and of the leader's state in etcd (proto/statusstats.h). */
#define JOURNAL_INFO(name, ...) ji[i].name = st[i].name;
#define ETCD_INFO(name, ...) etcd.has_##name = 1, etcd.name = es.name;

/* Each figure of the KV shards (proto/kvshardstats.h) to the reply, but those not told. */
#define SHARD_INFO(name, type, part, ...) SHARD_INFO_##part(name)
#define SHARD_INFO_MAP(name) info->name = st->name;
#define SHARD_INFO_STORE(name) info->has_##name = 1, info->name = st->name;
#define SHARD_INFO_MOVES(name)                                                                     \
	if (st->told_moves)                                                                        \
		info->has_##name = 1, info->name = st->name;
#define SHARD_INFO_BACKUPS(name)                                                                   \
	if (st->told_backups)                                                                      \
		info->has_##name = 1, info->name = st->name;
static void status_kv_shards(const struct kv_shard_stats *st, Pool__KvShardInfo *info)
{
	KV_SHARD_STATS(SHARD_INFO)
}

static int status_request(struct req *r, const ProtobufCMessage *msg)
{
	struct poold *pd = r->pd;
	Pool__StatusReply reply = POOL__STATUS_REPLY__INIT;
	Pool__JournalInfo ji[2], *jp[2];
	Pool__EtcdInfo etcd = POOL__ETCD_INFO__INIT;
	Pool__KvShardInfo shards = POOL__KV_SHARD_INFO__INIT;
	struct kv_shard_stats ks;
	struct journal_stats st[2];
	struct ha_log_stats es;
	struct ha_info ha;
	const char *names[2];
	char role[32];
	size_t n, i;

	if (((const Pool__StatusRequest *)msg)->has_node &&
	    ((const Pool__StatusRequest *)msg)->node != pd->node_id) {
		Pool__StatusRequest there = POOL__STATUS_REQUEST__INIT; /* (its own) */

		return nodecall_forward(r, ((const Pool__StatusRequest *)msg)->node, WIRE_STATUS,
					&there.base, STATUS_REPLY_MAX);
	}
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
		JOURNAL_STATS(JOURNAL_INFO)
		jp[i] = &ji[i];
	}
	reply.fabric_firewall = (char *)firewall_state(pd);
	reply.journals = jp;
	reply.n_journals = n;
	ha_describe(pd, &ha);
	if (ha.on) {
		etcd.endpoint = (char *)ha.endpoint;
		etcd.standing = ha.leading			     ? "leader"
				: pd->conf->role == ROLE_COORDINATOR ? "standby"
								     : "node";
		etcd.leader = (char *)ha.leader;
		etcd.has_epoch = etcd.has_leader_changes = 1;
		etcd.epoch = ha.epoch;
		etcd.leader_changes = ha.changes;
		etcd.why = ha.why[0] != '\0' ? (char *)ha.why : NULL;
		if (coord_log_etcd_stats(pd, &es)) {
			ETCD_STATS(ETCD_INFO)
			if (es.failures > 0 && etcd.why == NULL)
				etcd.why = es.last_error;
		}
		reply.etcd = &etcd;
	}
	kv_shard_stats(pd, &ks);
	status_kv_shards(&ks, &shards);
	reply.kv_shards = &shards;
	return req_reply(r, WIRE_STATUS_REPLY, &reply.base);
}

const struct ctl_handler status_handlers[] = {
    {WIRE_STATUS, CTL_ANY, AT_HERE, status_request, NULL},
    {0, 0, 0, NULL, NULL},
};

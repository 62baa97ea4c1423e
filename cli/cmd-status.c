/* cli/cmd-status.c - poolctl status: who poold is and how it runs. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_status_exec(struct cmd_ctx *ctx)
{
	Pool__StatusRequest req = POOL__STATUS_REQUEST__INIT;
	Pool__StatusReply *st;
	char up[32], lend[32];
	size_t i;
	int rc;

	rc = cmd_call(ctx, WIRE_STATUS, &req.base, WIRE_STATUS_REPLY, (ProtobufCMessage **)&st);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "version", st->version);
		json_u64(j, "uptime_ms", st->uptime_ms);
		json_u64(j, "node_id", st->node_id);
		json_str(j, "role", st->role);
		json_u64(j, "pid", st->pid);
		json_u64(j, "clients", st->clients);
		json_str(j, "config_file", st->config_file);
		json_str(j, "socket", st->socket);
		json_u64(j, "lend_size", st->lend_size);
		json_u64(j, "reloads", st->reloads);
		json_u64(j, "requests", st->requests);
		json_str(j, "fabric_firewall", st->fabric_firewall ? st->fabric_firewall : "");
		json_array(j, "journals");
		for (i = 0; i < st->n_journals; i++) {
			const Pool__JournalInfo *ji = st->journals[i];

			json_object(j, NULL);
			json_str(j, "name", ji->name);
			json_u64(j, "records", ji->records);
			json_u64(j, "used", ji->used);
			json_u64(j, "half", ji->half);
			json_u64(j, "rewrites", ji->rewrites);
			json_u64(j, "dropped", ji->dropped);
			json_end(j);
		}
		json_end(j);
		if (st->etcd != NULL) {
			const Pool__EtcdInfo *e = st->etcd;

			json_object(j, "etcd");
			json_str(j, "endpoint", e->endpoint);
			json_str(j, "standing", e->standing);
			json_str(j, "leader", e->leader ? e->leader : "");
			json_i64(j, "epoch", e->epoch);
			json_u64(j, "leader_changes", e->leader_changes);
			json_str(j, "why", e->why ? e->why : "");
			if (e->has_records) {
				json_u64(j, "records", e->records);
				json_u64(j, "waiting", e->waiting);
				json_u64(j, "txns", e->txns);
				json_u64(j, "failures", e->failures);
				json_u64(j, "rewrites", e->rewrites);
			}
			json_end(j);
		}
		json_finish(j);
	} else {
		units_fmt_duration(st->uptime_ms / 1000 * 1000, up, sizeof(up));
		units_fmt_size(st->lend_size, lend, sizeof(lend));
		printf("poold %s, pid %u, up %s\n", st->version, st->pid, up);
		printf("  node id     %u\n", st->node_id);
		printf("  role        %s\n", st->role);
		printf("  config      %s\n",
		       st->config_file[0] ? st->config_file : "(built-in defaults)");
		printf("  socket      %s\n", st->socket);
		printf("  lend size   %s\n", lend);
		printf("  clients     %u\n", st->clients);
		printf("  requests    %llu\n", (unsigned long long)st->requests);
		printf("  reloads     %llu\n", (unsigned long long)st->reloads);
		if (st->fabric_firewall != NULL)
			printf("  firewall    %s\n", st->fabric_firewall);
		for (i = 0; i < st->n_journals; i++) {
			const Pool__JournalInfo *ji = st->journals[i];
			char used[32], half[32];

			units_fmt_size(ji->used, used, sizeof(used));
			units_fmt_size(ji->half, half, sizeof(half));
			printf("  journal     %s: %llu record(s), %s of a %s half, %llu "
			       "rewrite(s)%s\n",
			       ji->name, (unsigned long long)ji->records, used, half,
			       (unsigned long long)ji->rewrites,
			       ji->dropped ? ", a torn tail cut at start" : "");
		}
		if (st->etcd != NULL) {
			const Pool__EtcdInfo *e = st->etcd;

			printf("  etcd        %s, %s", e->endpoint, e->standing);
			if (e->leader != NULL && e->leader[0] != '\0')
				printf("; coordinator %s, epoch %lld", e->leader,
				       (long long)e->epoch);
			printf("%s%s\n", e->why != NULL ? "; " : "", e->why != NULL ? e->why : "");
			if (e->has_records)
				printf("  state       %llu record(s) in etcd, %llu waiting, %llu "
				       "transaction(s), %llu failed, %llu rewrite(s)\n",
				       (unsigned long long)e->records,
				       (unsigned long long)e->waiting, (unsigned long long)e->txns,
				       (unsigned long long)e->failures,
				       (unsigned long long)e->rewrites);
		}
	}
	wire_msg_free(&st->base);
	return EXIT_OK;
}

const struct cmd_entry cmd_status_entry = {
    "status", "", 0, 0, DAEMON_NEEDED, cmd_status_exec, "show poold's version, role and uptime",
};

/* cli/cmd-status.c - poolctl status: who poold is and how it runs. */
#include "config.h"

#include "cli/poolctl.h"

/* poold's own fields: --json has each with a key, the text each with a head. */
enum {
	S_VERSION,
	S_UPTIME,
	S_PID,
	S_NODE_ID,
	S_ROLE,
	S_CONFIG_FILE,
	S_CONFIG_SHOWN,
	S_SOCKET,
	S_LEND_SIZE,
	S_CLIENTS,
	S_REQUESTS,
	S_RELOADS,
	S_FIREWALL,
	S_FIELDS
};

static const struct field status_fields[S_FIELDS] = {
    [S_VERSION] = {"version", NULL, FIELD_STR, IN_BOTH}, /* (the text's first line) */
    [S_UPTIME] = {"uptime_ms", NULL, FIELD_U64, IN_BOTH},
    [S_PID] = {"pid", NULL, FIELD_U64, IN_BOTH},
    [S_NODE_ID] = {"node_id", "node id", FIELD_U64, IN_BOTH},
    [S_ROLE] = {"role", "role", FIELD_STR, IN_BOTH},
    [S_CONFIG_FILE] = {"config_file", NULL, FIELD_STR, IN_BOTH},
    [S_CONFIG_SHOWN] = {NULL, "config", FIELD_STR, IN_BOTH},
    [S_SOCKET] = {"socket", "socket", FIELD_STR, IN_BOTH},
    [S_LEND_SIZE] = {"lend_size", "lend size", FIELD_SIZE, IN_BOTH},
    [S_CLIENTS] = {"clients", "clients", FIELD_U64, IN_BOTH},
    [S_REQUESTS] = {"requests", "requests", FIELD_U64, IN_BOTH},
    [S_RELOADS] = {"reloads", "reloads", FIELD_U64, IN_BOTH},
    [S_FIREWALL] = {"fabric_firewall", "firewall", FIELD_STR, IN_BOTH},
};

/* A figure of proto/statusstats.h: a count, or a size. */
#define STAT_FIELD(name, view, ...) {#name, NULL, STAT_KIND_##view, IN_BOTH},
#define STAT_KIND_COUNT FIELD_U64
#define STAT_KIND_BYTES FIELD_SIZE

/* A journal: its name, then each of JOURNAL_STATS' figures. */
static const struct field journal_fields[] = {{"name", NULL, FIELD_STR, IN_BOTH},
					      JOURNAL_STATS(STAT_FIELD)};
#define J_FIELDS (sizeof(journal_fields) / sizeof(journal_fields[0]))

/* The etcd standing, then each of ETCD_STATS' figures (the leader's). */
enum { T_ENDPOINT, T_STANDING, T_LEADER, T_EPOCH, T_LEADER_CHANGES, T_WHY };

static const struct field etcd_fields[] = {
    [T_ENDPOINT] = {"endpoint", NULL, FIELD_STR, IN_BOTH},
    [T_STANDING] = {"standing", NULL, FIELD_STR, IN_BOTH},
    [T_LEADER] = {"leader", NULL, FIELD_STR, IN_BOTH},
    [T_EPOCH] = {"epoch", NULL, FIELD_I64, IN_BOTH},
    [T_LEADER_CHANGES] = {"leader_changes", NULL, FIELD_U64, IN_BOTH},
    [T_WHY] = {"why", NULL, FIELD_STR, IN_BOTH},
    ETCD_STATS(STAT_FIELD)};
#define T_FIELDS (sizeof(etcd_fields) / sizeof(etcd_fields[0]))

/* The KV shards' figures (proto/kvshardstats.h): a count, or the map's digest in hex. */
#define SHARD_FIELD(name, type, part, view, ...) {#name, NULL, SHARD_KIND_##view, IN_BOTH},
#define SHARD_KIND_NUM FIELD_U64
#define SHARD_KIND_HEX FIELD_STR
static const struct field shard_fields[] = {KV_SHARD_STATS(SHARD_FIELD)};
#define SHARD_FIELDS (sizeof(shard_fields) / sizeof(shard_fields[0]))

/* The KV shards as poold maps them: in JSON, their fields; in the text, a line. */
static void status_kv_shards(struct json *j, const struct admin_kv_shards *k)
{
	char digest[17];
	struct value v[SHARD_FIELDS];
	size_t i = 0;

	snprintf(digest, sizeof(digest), "%016llx", (unsigned long long)k->digest);
#define SHARD_VALUE(name, type, part, view, ...) SHARD_VALUE_##view(name)
#define SHARD_VALUE_NUM(name) v[i++] = (struct value){.u = k->name};
#define SHARD_VALUE_HEX(name) v[i++] = (struct value){.s = digest};
	KV_SHARD_STATS(SHARD_VALUE)
	if (j != NULL) {
		json_object(j, "kv_shards");
		listing_record(j, shard_fields, v, SHARD_FIELDS);
		json_end(j);
		return;
	}
	printf("  kv shards   %u of %u here, %u owner(s), map %s; %llu change(s), %llu shard(s) "
	       "moved\n",
	       k->owned, k->shards, k->owners, digest, (unsigned long long)k->changes,
	       (unsigned long long)k->moves);
	if (k->arriving > 0 || k->leaving > 0 || k->keys_in + k->keys_out + k->keys_lost > 0)
		printf("  kv moves    %u shard(s) arriving, %u leaving; %llu key(s) taken, %llu "
		       "handed over, %llu lost\n",
		       k->arriving, k->leaving, (unsigned long long)k->keys_in,
		       (unsigned long long)k->keys_out, (unsigned long long)k->keys_lost);
	if (k->backups)
		printf("  kv backups  %u shard(s) backed here, %u of its own not yet copied whole; "
		       "%llu change(s) sent, %llu missed\n",
		       k->backed, k->unbacked, (unsigned long long)k->backup_keys,
		       (unsigned long long)k->backup_missed);
	if (k->store_size > 0)
		printf("  kv store    %llu of %llu MiB given to the values of its shards\n",
		       (unsigned long long)(k->store_used >> 20),
		       (unsigned long long)(k->store_size >> 20));
}

/* The journals: in JSON, their fields; in the text, a line each. */
static void status_journals(struct json *j, const struct admin_status *st)
{
	struct listing *l =
	    j != NULL ? listing_new(j, "journals", journal_fields, J_FIELDS, false) : NULL;
	size_t i;

	for (i = 0; i < st->n_journals; i++) {
		const struct admin_journal *ji = &st->journals[i];
#define STAT_VALUE(name, ...) {.u = ji->name},
		const struct value v[J_FIELDS] = {{.s = ji->name}, JOURNAL_STATS(STAT_VALUE)};
#undef STAT_VALUE
		char used[32], half[32];

		if (j != NULL) {
			listing_row(l, v);
			continue;
		}
		units_fmt_size(ji->used, used, sizeof(used));
		units_fmt_size(ji->half, half, sizeof(half));
		printf("  journal     %s: %llu record(s), %s of a %s half, %llu rewrite(s)%s\n",
		       ji->name, (unsigned long long)ji->records, used, half,
		       (unsigned long long)ji->rewrites,
		       ji->dropped ? ", a torn tail cut at start" : "");
	}
	listing_end(l);
}

/* The etcd standing (coord.etcd): in JSON, its fields; in the text, two lines. */
static void status_etcd(struct json *j, const struct admin_etcd *e)
{
#define STAT_VALUE(name, ...) {.u = e->name, .absent = !e->has_records},
	const struct value v[T_FIELDS] = {[T_ENDPOINT] = {.s = e->endpoint},
					  [T_STANDING] = {.s = e->standing},
					  [T_LEADER] = {.s = e->leader},
					  [T_EPOCH] = {.i = e->epoch},
					  [T_LEADER_CHANGES] = {.u = e->leader_changes},
					  [T_WHY] = {.s = e->why},
					  ETCD_STATS(STAT_VALUE)};
#undef STAT_VALUE

	if (j != NULL) {
		json_object(j, "etcd");
		listing_record(j, etcd_fields, v, T_FIELDS);
		json_end(j);
		return;
	}
	printf("  etcd        %s, %s", e->endpoint, e->standing);
	if (e->leader[0] != '\0')
		printf("; coordinator %s, epoch %lld", e->leader, (long long)e->epoch);
	printf("%s%s\n", e->why[0] != '\0' ? "; " : "", e->why);
	if (e->has_records)
		printf("  state       %llu record(s) in etcd, %llu waiting, %llu transaction(s), "
		       "%llu failed, %llu rewrite(s)\n",
		       (unsigned long long)e->records, (unsigned long long)e->waiting,
		       (unsigned long long)e->txns, (unsigned long long)e->failures,
		       (unsigned long long)e->rewrites);
}

/* poold's own fields, after the text's first line. */
static void status_self(struct json *j, const struct admin_status *st)
{
	const struct value v[S_FIELDS] = {
	    [S_VERSION].s = st->version,
	    [S_UPTIME].u = st->uptime_ms,
	    [S_PID].u = st->pid,
	    [S_NODE_ID].u = st->node_id,
	    [S_ROLE].s = st->role,
	    [S_CONFIG_FILE].s = st->config_file,
	    [S_CONFIG_SHOWN].s = st->config_file[0] ? st->config_file : "(built-in defaults)",
	    [S_SOCKET].s = st->socket,
	    [S_LEND_SIZE].u = st->lend_size,
	    [S_CLIENTS].u = st->clients,
	    [S_REQUESTS].u = st->requests,
	    [S_RELOADS].u = st->reloads,
	    [S_FIREWALL].s = st->fabric_firewall,
	};
	char up[32];

	if (j == NULL) {
		units_fmt_duration(st->uptime_ms / 1000 * 1000, up, sizeof(up));
		printf("poold %s, pid %u, up %s\n", st->version, st->pid, up);
	}
	listing_record(j, status_fields, v, S_FIELDS);
}

static int cmd_status_exec(struct cmd_ctx *ctx)
{
	const struct admin_status *st;
	struct json *j = NULL;
	int64_t node = -1;
	int rc;

	if (ctx->argc == 1) {
		uint32_t id;

		if (cmd_node_arg(ctx->argv[0], &id) < 0)
			return EXIT_USAGE;
		node = id;
	}
	rc = admin_status(ctx->admin, node, &st);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json)
		j = json_new(stdout);
	status_self(j, st);
	status_journals(j, st);
	if (st->etcd != NULL)
		status_etcd(j, st->etcd);
	if (st->kv_shards != NULL)
		status_kv_shards(j, st->kv_shards);
	if (j != NULL)
		json_finish(j);
	admin_free(st);
	return EXIT_OK;
}

const struct cmd_entry cmd_status_entry = {
    "status",
    "[NODE]",
    0,
    1,
    DAEMON_NEEDED,
    cmd_status_exec,
    "show poold's version, role and uptime (or another node's, asked through it)",
};

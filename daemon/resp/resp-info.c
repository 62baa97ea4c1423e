/*
 * daemon/resp/resp-info.c - what the RESP endpoint says of itself: INFO's
 * sections, CONFIG GET's parameters, and the counts per command that
 * INFO commandstats shows (kept here as commands run, resp_cmd_run());
 * and the server commands a client is refused (CONFIG SET, SAVE,
 * SHUTDOWN).
 *
 * INFO has Redis 7's sections and field names where this server has the
 * thing they count (memory and CPU are poold's, as a process); the ones a
 * Redis client reads to learn what it talks to (role, cluster_enabled,
 * persistence) say what this endpoint is: a master of its own, not a Redis
 * Cluster, no RDB or AOF (the pool keeps the values). CONFIG GET answers
 * the parameters of Redis's that this endpoint has a value for, from
 * poold.conf; CONFIG SET changes nothing (poold's configuration is its
 * file, read again on `poolctl reload`), and says so in Redis's words.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <event2/buffer.h>

#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "proto/pool_contract.h"

#define RESP_VERSION "7.0.0" /* the Redis we answer as (HELLO, INFO) */

/* A command's counts (INFO commandstats). */
struct resp_cmdstat {
	uint64_t calls, usec, rejected, failed;
};

static struct resp_cmdstat *resp_cmdstats; /* one per command, in resp_cmd_at()'s order */

static struct resp_cmdstat *resp_stat(const struct resp_cmd *cmd)
{
	size_t n = resp_cmd_count();

	if (resp_cmdstats == NULL &&
	    (resp_cmdstats = calloc(n ? n : 1, sizeof(*resp_cmdstats))) == NULL)
		return NULL;
	return &resp_cmdstats[resp_cmd_slot(cmd)];
}

static uint64_t resp_usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A command that was refused before it ran (its arity, AUTH). */
void resp_stat_rejected(const struct resp_cmd *cmd)
{
	struct resp_cmdstat *st = resp_stat(cmd);

	if (st != NULL)
		st->rejected++;
}

/* Run cmd as resp_cmd_run() does, counting its call, its time, and whether it replied an error. */
void resp_stat_run(struct resp_conn *c, const struct resp_cmd *cmd, long argc, char **argv,
		   const size_t *argl)
{
	struct resp_cmdstat *st = resp_stat(cmd);
	struct evbuffer *out = resp_output(c);
	size_t before = evbuffer_get_length(out);
	uint64_t t0 = resp_usec_now();
	struct evbuffer_ptr at;
	char first = 0;

	cmd->run(c, argc, argv, argl);
	if (st == NULL)
		return;
	st->calls++;
	st->usec += resp_usec_now() - t0;
	out = resp_output(c); /* (the same, unless a write in flight set one apart) */
	if (evbuffer_get_length(out) > before &&
	    evbuffer_ptr_set(out, &at, before, EVBUFFER_PTR_SET) == 0 &&
	    evbuffer_copyout_from(out, &at, &first, 1) == 1 && first == '-')
		st->failed++;
}

/* ------------------------------------------------------------ INFO */

static void info_server(struct resp_conn *c, struct evbuffer *b)
{
	struct poold *pd = c->rs->pd;

	evbuffer_add_printf(b,
			    "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\n"
			    "pool_version:%s\r\nos:Linux\r\nprocess_id:%d\r\nuptime_in_seconds:"
			    "%llu\r\n",
			    RESP_VERSION, PACKAGE_VERSION, (int)getpid(),
			    (unsigned long long)((units_now_ms() - pd->start_ms) / 1000));
}

static void info_clients(struct resp_conn *c, struct evbuffer *b)
{
	evbuffer_add_printf(b, "# Clients\r\nconnected_clients:%u\r\nmaxclients:%lld\r\n",
			    c->rs->nconns, (long long)c->rs->pd->conf->resp_max_clients);
}

/* poold's resident memory: the process's, as Redis counts its own. */
static void info_memory(struct resp_conn *c, struct evbuffer *b)
{
	long long pages = 0, rss;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%*s %lld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	rss = pages * sysconf(_SC_PAGESIZE);
	evbuffer_add_printf(
	    b,
	    "# Memory\r\nused_memory:%lld\r\nused_memory_human:%.2fM\r\n"
	    "used_memory_rss:%lld\r\nused_memory_peak:%lld\r\nmaxmemory:%lld\r\n"
	    "maxmemory_policy:allkeys-lru\r\nmem_allocator:libc\r\nresp_buffers:%llu\r\n",
	    rss, (double)rss / (1 << 20), rss, rss, (long long)c->rs->pd->conf->resp_capacity,
	    (unsigned long long)c->rs->bytes);
}

static void info_persistence(struct resp_conn *c, struct evbuffer *b)
{
	(void)c;
	evbuffer_add_printf(b, "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
			       "rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n"
			       "aof_enabled:0\r\naof_rewrite_in_progress:0\r\n");
}

static void info_stats(struct resp_conn *c, struct evbuffer *b)
{
	evbuffer_add_printf(b,
			    "# Stats\r\ntotal_commands_processed:%llu\r\n"
			    "rejected_connections:%llu\r\n",
			    (unsigned long long)c->rs->commands,
			    (unsigned long long)c->rs->refused);
}

static void info_replication(struct resp_conn *c, struct evbuffer *b)
{
	(void)c;
	evbuffer_add_printf(b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
			       "master_failover_state:no-failover\r\nmaster_repl_offset:0\r\n"
			       "second_repl_offset:-1\r\nrepl_backlog_active:0\r\n");
}

static void info_cpu(struct resp_conn *c, struct evbuffer *b)
{
	struct rusage self, children;

	(void)c;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	evbuffer_add_printf(
	    b,
	    "# CPU\r\nused_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n"
	    "used_cpu_sys_children:%ld.%06ld\r\nused_cpu_user_children:%ld.%06ld\r\n",
	    (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec, (long)self.ru_utime.tv_sec,
	    (long)self.ru_utime.tv_usec, (long)children.ru_stime.tv_sec,
	    (long)children.ru_stime.tv_usec, (long)children.ru_utime.tv_sec,
	    (long)children.ru_utime.tv_usec);
}

static void info_commandstats(struct resp_conn *c, struct evbuffer *b)
{
	size_t i, n = resp_cmd_count();

	(void)c;
	evbuffer_add_printf(b, "# Commandstats\r\n");
	for (i = 0; resp_cmdstats != NULL && i < n; i++) {
		const struct resp_cmdstat *st = &resp_cmdstats[i];

		if (st->calls == 0 && st->rejected == 0)
			continue;
		evbuffer_add_printf(b,
				    "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
				    "rejected_calls=%llu,failed_calls=%llu\r\n",
				    resp_cmd_at(i)->name, (unsigned long long)st->calls,
				    (unsigned long long)st->usec,
				    st->calls ? (double)st->usec / (double)st->calls : 0.0,
				    (unsigned long long)st->rejected,
				    (unsigned long long)st->failed);
	}
}

static void info_cluster(struct resp_conn *c, struct evbuffer *b)
{
	(void)c;
	evbuffer_add_printf(b, "# Cluster\r\ncluster_enabled:0\r\n");
}

static void info_keyspace(struct resp_conn *c, struct evbuffer *b)
{
	struct poold *pd = c->rs->pd;
	char ns[32];
	int db;

	evbuffer_add_printf(b, "# Keyspace\r\n");
	for (db = 0; db < RESP_DBS; db++) {
		uint64_t keys;

		resp_db_name(c, db, ns, sizeof(ns));
		keys = kv_local_size(pd, ns);
		if (keys > 0)
			evbuffer_add_printf(b, "db%d:keys=%llu,expires=%llu,avg_ttl=0\r\n", db,
					    (unsigned long long)keys,
					    (unsigned long long)kv_local_volatile(pd, ns));
	}
}

/* INFO's sections in Redis's order; default: in INFO and INFO default, not only in all. */
static const struct {
	const char *name;
	bool in_default;
	void (*add)(struct resp_conn *c, struct evbuffer *b);
} info_sections[] = {
    {"server", true, info_server},   {"clients", true, info_clients},
    {"memory", true, info_memory},   {"persistence", true, info_persistence},
    {"stats", true, info_stats},     {"replication", true, info_replication},
    {"cpu", true, info_cpu},	     {"commandstats", false, info_commandstats},
    {"cluster", true, info_cluster}, {"keyspace", true, info_keyspace},
};

/* INFO [section ...]: the default sections with none; all and everything add commandstats. */
static void cmd_info(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool want[ARRAY_SIZE(info_sections)] = {false};
	struct evbuffer *b = evbuffer_new();
	size_t k, i, len;
	char *text;
	long a;

	(void)argl;
	if (b == NULL) {
		resp_err(c, "ERR out of memory");
		return;
	}
	for (a = 1; a < argc || (argc == 1 && a == 1); a++) {
		const char *s = argc == 1 ? "default" : argv[a];
		bool all = strcasecmp(s, "all") == 0 || strcasecmp(s, "everything") == 0;
		bool deflt = strcasecmp(s, "default") == 0;

		for (k = 0; k < ARRAY_SIZE(info_sections); k++)
			want[k] |= all || (deflt && info_sections[k].in_default) ||
				   strcasecmp(s, info_sections[k].name) == 0;
	}
	for (k = 0, i = 0; k < ARRAY_SIZE(info_sections); k++) {
		if (!want[k])
			continue;
		if (i++ > 0)
			evbuffer_add(b, "\r\n", 2);
		info_sections[k].add(c, b);
	}
	len = evbuffer_get_length(b);
	text = len ? (char *)evbuffer_pullup(b, -1) : NULL;
	resp_verbatim(c, text ? text : "", len);
	evbuffer_free(b);
}

/* ------------------------------------------------------------ CONFIG */

/* Redis's parameters this endpoint has a value for, as CONFIG GET shows them. */
static void config_value(struct resp_conn *c, const char *name, char *buf, size_t len)
{
	const struct poold_conf *conf = c->rs->pd->conf;

	if (strcmp(name, "maxmemory") == 0)
		snprintf(buf, len, "%lld", (long long)conf->resp_capacity);
	else if (strcmp(name, "maxclients") == 0)
		snprintf(buf, len, "%lld", (long long)conf->resp_max_clients);
	else if (strcmp(name, "databases") == 0)
		snprintf(buf, len, "%d", RESP_DBS);
	else if (strcmp(name, "proto-max-bulk-len") == 0)
		snprintf(buf, len, "%llu", (unsigned long long)POOL_KV_VALUE_MAX);
	else if (strcmp(name, "maxmemory-policy") == 0)
		snprintf(buf, len, "allkeys-lru");
	else if (strcmp(name, "appendonly") == 0)
		snprintf(buf, len, "no");
	else if (strcmp(name, "cluster-enabled") == 0)
		snprintf(buf, len, "no");
	else
		buf[0] = '\0'; /* save, timeout... */
}

static const char *const config_names[] = {
    "appendonly",	"cluster-enabled",    "databases", "maxclients", "maxmemory",
    "maxmemory-policy", "proto-max-bulk-len", "save",	   "timeout",
};

static void config_get(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool hit[ARRAY_SIZE(config_names)] = {false};
	size_t k, n = 0;
	char value[32];
	long a;

	for (a = 2; a < argc; a++)
		for (k = 0; k < ARRAY_SIZE(config_names); k++)
			if (!hit[k] && resp_match(argv[a], argl[a], config_names[k],
						  strlen(config_names[k]))) {
				hit[k] = true;
				n++;
			}
	resp_map(c, n);
	for (k = 0; k < ARRAY_SIZE(config_names); k++) {
		if (!hit[k])
			continue;
		config_value(c, config_names[k], value, sizeof(value));
		if (strcmp(config_names[k], "timeout") == 0)
			snprintf(value, sizeof(value), "0");
		resp_bulk(c, config_names[k], strlen(config_names[k]));
		resp_bulk(c, value, strlen(value));
	}
}

static void cmd_config(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	size_t n = resp_cmd_count();

	if (strcasecmp(argv[1], "GET") == 0 && argc >= 3) {
		config_get(c, argc, argv, argl);
	} else if (strcasecmp(argv[1], "SET") == 0 && argc >= 4 && argc % 2 == 0) {
		resp_err(c,
			 "ERR CONFIG SET failed (possibly related to argument '%.128s') - this "
			 "server is configured by poold.conf (poolctl reload), not by its clients",
			 argv[2]);
	} else if (strcasecmp(argv[1], "RESETSTAT") == 0 && argc == 2) {
		if (resp_cmdstats != NULL)
			memset(resp_cmdstats, 0, n * sizeof(*resp_cmdstats));
		resp_ok(c);
	} else {
		resp_err(c,
			 "ERR unknown subcommand or wrong number of arguments for '%.128s'. Try "
			 "CONFIG HELP.",
			 argv[1]);
	}
}

/*
 * SAVE, BGSAVE, SHUTDOWN: a tenant neither snapshots nor stops the server.
 * The pool keeps the values (there is no RDB), and poold stops as a
 * service; inside MULTI they are refused as Redis refuses them there.
 */
static void cmd_server_only(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	(void)argc, (void)argl;
	if (strcasecmp(argv[0], "SHUTDOWN") == 0)
		resp_err(c, "ERR SHUTDOWN is refused: poold is stopped by its service manager, not "
			    "by its clients");
	else
		resp_err(c,
			 "ERR %s is not supported: the pool keeps the values (there is no RDB "
			 "file)",
			 strcasecmp(argv[0], "SAVE") == 0 ? "SAVE" : "BGSAVE");
}

const struct resp_cmd resp_info_cmds[] = {
    {"bgsave", -1, 0, cmd_server_only},
    {"config", -2, 0, cmd_config},
    {"info", -1, 0, cmd_info},
    {"save", 1, RESP_CMD_NOMULTI, cmd_server_only},
    {"shutdown", -1, RESP_CMD_NOMULTI, cmd_server_only},
};
const size_t n_resp_info_cmds = ARRAY_SIZE(resp_info_cmds);

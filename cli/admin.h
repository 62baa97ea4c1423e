/*
 * cli/admin.h - poolctl's requests to poold, as C calls on C structs.
 *
 * admin.c is the one file of poolctl that speaks the control protocol:
 * the commands ask through these calls and print what comes back, and
 * name no protobuf type. A call returns one of poolctl's exit statuses
 * (EXIT_OK, or EXIT_ERROR / EXIT_UNREACHABLE with the reason printed on
 * stderr) and its result, which admin_free() frees with everything in it:
 * its strings live as long as it does.
 */
#ifndef POOLCTL_ADMIN_H
#define POOLCTL_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kvshardstats.h"
#include "proto/statusstats.h"
#include "proto/kvstats.h"

struct admin; /* a connection to poold's control socket */

/* Exit codes, as documented in poolctl(8). */
#define EXIT_OK 0
#define EXIT_ERROR 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3

/* The control protocol's version this poolctl speaks. */
unsigned admin_protocol(void);

/* quiet: say nothing when poold cannot be reached (the command goes on without it). */
int admin_connect(const char *socket, int timeout_ms, bool quiet, struct admin **ret);
void admin_close(struct admin *a);
const char *admin_server_version(const struct admin *a);

/* Free a call's result (NULL: nothing). */
void admin_free(const void *result);

/* poolctl status */
/* A journal: each figure of proto/statusstats.h's JOURNAL_STATS. */
struct admin_journal {
	const char *name;
	JOURNAL_STATS(STATUS_STAT_FIELD)
};

struct admin_etcd {
	const char *endpoint, *standing, *leader, *why; /* leader, why: "" when not known */
	int64_t epoch;
	uint64_t leader_changes;
	bool has_records; /* the leader's: its state in etcd (ETCD_STATS' figures) */
	ETCD_STATS(STATUS_STAT_FIELD)
};

/* The KV shards as a poold reports them: each figure of proto/kvshardstats.h. */
struct admin_kv_shards {
	KV_SHARD_STATS(KV_SHARD_STAT_FIELD)
	bool backups; /* backed...backup_missed are told (a namespace of 2 replicas) */
};

struct admin_status {
	const char *version, *role, *config_file, *socket;
	const char *fabric_firewall; /* NULL: poold does not say */
	uint64_t uptime_ms, lend_size, reloads, requests;
	uint32_t node_id, pid, clients;
	const struct admin_journal *journals;
	size_t n_journals;
	const struct admin_etcd *etcd;		 /* NULL without coord.etcd */
	const struct admin_kv_shards *kv_shards; /* NULL: poold does not say */
};

/* node: another member's poold, asked through this one; -1: this one */
int admin_status(struct admin *a, int64_t node, const struct admin_status **ret);

/* poolctl config show, reload */
struct admin_option {
	const char *name, *type, *value, *default_value, *help;
	bool is_default;
};

struct admin_config {
	const char *config_file; /* "": the built-in defaults */
	const struct admin_option *options;
	size_t n_options;
};

/* What poold said about a change it made (its warnings, or what it did). */
struct admin_said {
	const char *message; /* "" when nothing */
};

int admin_config(struct admin *a, const struct admin_config **ret);
int admin_reload(struct admin *a, const struct admin_said **ret);

/* poolctl nodes */
struct admin_numa {
	uint32_t id;
	uint64_t mem_total, lend_capacity, lend_used;
};

struct admin_arena {
	uint32_t id;
	const char *tier;
	int32_t numa; /* -1: none (pmem) */
	uint64_t size, lent, used, largest_free, free_runs, extents;
};

struct admin_node {
	uint32_t id;
	const char *name, *addr, *role, *version, *state;
	uint64_t heartbeat_age_ms, incarnation, pmem_capacity, pmem_used;
	const struct admin_numa *numa;
	size_t n_numa;
	const struct admin_arena *arenas;
	size_t n_arenas;
};

struct admin_nodes {
	const struct admin_node *nodes;
	size_t n;
};

int admin_nodes(struct admin *a, const struct admin_nodes **ret);

/* poolctl fabric [probe] */
struct admin_link {
	uint32_t src, dst;
	int error; /* 0, or why the probe failed (-errno) */
	uint64_t latency_ns, bandwidth, when_ms;
	const char *transport;
};

struct admin_fabric {
	const struct admin_link *links;
	size_t n_links;
	const uint32_t *nodes; /* the members, in the coordinator's order */
	size_t n_nodes;
};

/* probe: measure every link now; else the latest measures. */
int admin_fabric(struct admin *a, bool probe, const struct admin_fabric **ret);

/* poolctl regions, region create | info | destroy */
struct admin_extent {
	uint32_t node, arena;
	uint64_t off, len;
};

struct admin_region {
	const char *name, *class_name, *placement;
	uint64_t id, size, gva, stripe;
	uint32_t leases, uid, gid, mode;
	bool anonymous, lost;
	uint32_t want_extents; /* lost: the extents it is whole with, once back (0: unknown) */
	const struct admin_extent *extents;
	size_t n_extents;
};

struct admin_regions {
	const struct admin_region *regions;
	size_t n;
};

struct admin_region_spec {
	const char *name, *class_name, *placement;
	uint64_t size, stripe;
	unsigned mode;
	bool anonymous;
};

int admin_regions(struct admin *a, const struct admin_regions **ret);
int admin_region_create(struct admin *a, const struct admin_region_spec *spec,
			const struct admin_region **ret);
int admin_region_stat(struct admin *a, const char *name, const struct admin_region **ret);
int admin_region_destroy(struct admin *a, const char *name);

/* poolctl lend | reclaim | drain, ledger */
enum admin_lend_op { ADMIN_LEND, ADMIN_RECLAIM, ADMIN_DRAIN };

struct admin_lending {
	uint32_t node, arena;
	const char *tier;
	uint32_t uid; /* the borrower; UINT32_MAX: the arena as a whole */
	uint64_t size, lent, used, regions;
	bool draining;
};

struct admin_ledger {
	const struct admin_lending *entries;
	size_t n;
};

int admin_lend(struct admin *a, enum admin_lend_op op, uint32_t node, uint64_t size,
	       const struct admin_said **ret);
int admin_ledger(struct admin *a, const struct admin_ledger **ret);

/* poolctl kv */
enum admin_kv_op { ADMIN_KV_STATS, ADMIN_KV_CREATE, ADMIN_KV_DROP, ADMIN_KV_FLUSH };

/* A namespace to create; zeros, NULLs and -1s leave poold's defaults. */
struct admin_kv_spec {
	uint64_t capacity, size_hint;
	const char *tier, *evict;
	unsigned replicas;
	long mode, gid;
	bool sharded;
};

struct admin_kv_ns {
	const char *name, *tier, *evict;
	uint64_t capacity, used, pmem_used, size_hint;
	KV_STATS(KV_STAT_FIELD) /* entries, hits, misses... (proto/kvstats.h) */
	uint32_t replicas;
	bool has_owner; /* an older definition has none */
	uint32_t uid, gid, mode;
};

struct admin_kv {
	const struct admin_kv_ns *namespaces;
	size_t n;
};

/* name "" with ADMIN_KV_STATS: every namespace; spec: ADMIN_KV_CREATE's only. */
int admin_kv(struct admin *a, enum admin_kv_op op, const char *name,
	     const struct admin_kv_spec *spec, const struct admin_kv **ret);

/* poolctl vec */
struct admin_vec {
	uint32_t node; /* its lender */
	uint32_t kind, metric, dim, m, ef_construction, ef_search, levels;
	uint64_t count, deleted, capacity, used, size;
	uint32_t writer_pid; /* 0: no writer */
};

/* quiet: say nothing when it is not an index (vec ls asks every region). */
int admin_vec_stat(struct admin *a, const char *name, bool quiet, const struct admin_vec **ret);

/* poolctl events */
struct admin_event {
	uint64_t seq, time_ms;
	const char *kind, *text;
};

struct admin_events {
	const struct admin_event *events;
	size_t n;
};

/* max: at most that many, the latest (0: poold's default). */
int admin_events(struct admin *a, unsigned max, const struct admin_events **ret);

/* poolctl snap copies, snap place */
struct admin_copy {
	const char *name, *state;
	bool has_id; /* told to admins and to its maker only */
	uint64_t id, size, clones;
	uint32_t uid, waiters;
};

struct admin_copies {
	const struct admin_copy *copies;
	size_t n;
};

struct admin_placed {
	uint32_t node;
	int code;	     /* 0: placed, or -errno */
	const char *message; /* why not */
};

struct admin_places {
	const struct admin_placed *results;
	size_t n;
};

int admin_snap_copies(struct admin *a, const struct admin_copies **ret);
int admin_snap_place(struct admin *a, const char *name, const uint32_t *nodes, size_t n,
		     const struct admin_places **ret);

#endif

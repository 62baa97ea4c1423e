/*
 * daemon/admin/metrics.c - a Prometheus endpoint (served by httpd.c), off unless
 * metrics.listen names an address.
 *
 * GET /metrics answers in the Prometheus text format (version 0.0.4). Every
 * poold tells what it is and what it lends; the coordinator also tells the
 * pool's map: what each lender has in use, the regions and the KV
 * namespaces. Counters are since poold started. Nothing here changes
 * state, so a scrape can never disturb the pool.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

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
#include "daemon/region/region.h"
#include "daemon/resp/resp.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"
#include "daemon/xfer/xfer.h"

struct metrics {
	struct httpd *httpd;
	uint64_t scrapes;
};

/* A label value with ", \ and newlines escaped, as the format wants. */
static void metrics_label(struct evbuffer *b, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '"' || *v == '\\')
			evbuffer_add_printf(b, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, v, 1);
	}
}

/* The # HELP and # TYPE lines of a metric. */
static void metrics_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample without labels. */
static void metrics_one(struct evbuffer *b, const char *name, const char *type, const char *help,
			uint64_t v)
{
	metrics_head(b, name, type, help);
	evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* This node's shared copies of snapshot images (snap-copy.c). */
static void metrics_snap(struct poold *pd, struct evbuffer *b)
{
	uint64_t st[SNAPCOPY_STATS];

	snap_copy_stats(pd, st);
	metrics_one(b, "pool_snap_copies", "gauge", "shared copies of snapshot images on this node",
		    st[0]);
	metrics_one(b, "pool_snap_copy_bytes", "gauge", "bytes of those copies", st[1]);
	metrics_one(b, "pool_snap_clones_total", "counter",
		    "clones served here: gets answered with a ready copy", st[2]);
	metrics_one(b, "pool_snap_fills_total", "counter",
		    "copies a client was asked to fill (first fills and refills)", st[3]);
	metrics_one(b, "pool_snap_copy_evictions_total", "counter",
		    "ready copies dropped to make room (snap.copies)", st[4]);
	metrics_one(b, "pool_snap_restores_total", "counter",
		    "lazy restores of this node's clients that ended", st[5]);
	metrics_one(b, "pool_snap_restores_failed_total", "counter",
		    "of those, restores that failed or were refused", st[6]);
	metrics_one(b, "pool_snap_faults_total", "counter", "page faults the lazy restores served",
		    st[7]);
	metrics_one(b, "pool_snap_restore_pages_total", "counter", "pages the lazy restores placed",
		    st[8]);
	metrics_one(b, "pool_snap_restore_prefetched_total", "counter",
		    "of those, placed ahead of a fault (working set, fill, fault-around)", st[9]);
}

/* One figure of the KV shards, its family's head before the first of a family. */
static void metrics_shard(struct evbuffer *b, const char **family, const char *metric,
			  const char *label, const char *kind, const char *help, uint64_t v)
{
	if (metric == NULL)
		return;
	if (label == NULL) {
		metrics_one(b, metric, kind, help, v);
		return;
	}
	if (*family == NULL || strcmp(*family, metric) != 0)
		metrics_head(b, metric, kind, help);
	*family = metric;
	evbuffer_add_printf(b, "%s{%s} %llu\n", metric, label, (unsigned long long)v);
}

/*
 * The KV index's shards as this poold maps them (each figure of
 * proto/kvshardstats.h with a metric; those of the shards' moves and
 * backups where there is a KV index), and the KV requests it served: those
 * other nodes sent are the coordinator's load that the shards take off it.
 */
#define SHARD_TOLD_MAP(st) true
#define SHARD_TOLD_STORE(st) true
#define SHARD_TOLD_MOVES(st) (st).told_moves
#define SHARD_TOLD_BACKUPS(st) (st).told_moves
#define SHARD_METRIC(name, type, part, view, metric, label, kind, help)                            \
	if (SHARD_TOLD_##part(st))                                                                 \
		metrics_shard(b, &family, metric, label, kind, help, st.name);
static void metrics_kv_shards(struct poold *pd, struct evbuffer *b)
{
	struct kv_shard_stats st;
	const char *family = NULL;

	kv_shard_stats(pd, &st);
	KV_SHARD_STATS(SHARD_METRIC)
	metrics_head(b, "pool_kv_requests_total", "counter",
		     "KV requests the coordinator's index served: from this node's clients, or "
		     "sent by other nodes");
	evbuffer_add_printf(b,
			    "pool_kv_requests_total{from=\"here\"} %llu\n"
			    "pool_kv_requests_total{from=\"nodes\"} %llu\n",
			    (unsigned long long)pd->kv_requests_here,
			    (unsigned long long)pd->kv_requests_nodes);
	metrics_head(b, "pool_kv_shard_requests_total", "counter",
		     "KV requests to sharded namespaces served here, as their keys' owner");
	evbuffer_add_printf(b,
			    "pool_kv_shard_requests_total{from=\"here\"} %llu\n"
			    "pool_kv_shard_requests_total{from=\"nodes\"} %llu\n",
			    (unsigned long long)pd->kv_shard_requests[0],
			    (unsigned long long)pd->kv_shard_requests[1]);
}

/* Regions of this node that local clients map (carve.c). */
static void metrics_carves(struct poold *pd, struct evbuffer *b)
{
	size_t carved, windows;

	carve_count(pd, &carved, &windows);
	metrics_one(b, "pool_region_files", "gauge",
		    "extents of this node with a memory file of their own, for local mappings",
		    carved);
	metrics_one(b, "pool_region_arena_windows", "gauge",
		    "extents root maps as a window of the arena's file instead", windows);
}

/* Transfers: this poold's own, and its local clients' as they tell them. */
static void metrics_rma(struct poold *pd, struct evbuffer *b)
{
	static const char *const by[] = {"poold", "clients"};
	struct fab_rma_stats st[2] = {{0}, pd->client_rma};
	size_t k;

	carry_stats(pd, &st[0]);
	metrics_head(b, "pool_rma_ops_total", "counter",
		     "reads (get) and writes (put) of other nodes' memory issued on this node, by "
		     "poold itself (transfers it carries for clients, spills, moves) or by its "
		     "clients (as they report them)");
	for (k = 0; k < 2; k++)
		evbuffer_add_printf(b,
				    "pool_rma_ops_total{by=\"%s\",op=\"get\"} %llu\n"
				    "pool_rma_ops_total{by=\"%s\",op=\"put\"} %llu\n",
				    by[k], (unsigned long long)st[k].get_ops, by[k],
				    (unsigned long long)st[k].put_ops);
	metrics_head(b, "pool_rma_bytes_total", "counter", "bytes of those gets and puts");
	for (k = 0; k < 2; k++)
		evbuffer_add_printf(b,
				    "pool_rma_bytes_total{by=\"%s\",op=\"get\"} %llu\n"
				    "pool_rma_bytes_total{by=\"%s\",op=\"put\"} %llu\n",
				    by[k], (unsigned long long)st[k].get_bytes, by[k],
				    (unsigned long long)st[k].put_bytes);
}

/* The transfers this poold carries for its local clients (xfer.c), and their turns on its loop. */
static void metrics_xfer(struct poold *pd, struct evbuffer *b)
{
	uint64_t st[XFER_STATS];

	xfer_stats(pd, st);
	metrics_one(b, "pool_xfer_requests", "gauge", "clients' transfer requests in progress",
		    st[0]);
	metrics_one(b, "pool_xfer_carried_bytes", "gauge",
		    "bytes of those carried to other lenders and not back yet", st[1]);
	metrics_one(b, "pool_xfer_turns_total", "counter",
		    "turns of the loop that started chunks of transfers", st[2]);
	metrics_one(b, "pool_xfer_turn_max_us", "gauge",
		    "the longest of those turns by the clock, in microseconds (a loaded host may "
		    "run something else meanwhile)",
		    st[3]);
	metrics_one(b, "pool_xfer_turn_cpu_max_us", "gauge",
		    "the most CPU time one of those turns took, in microseconds", st[4]);
	metrics_one(b, "pool_xfer_waits_total", "counter",
		    "chunks that waited for room under control.max_xfer_bytes_per_session or "
		    "_per_uid",
		    st[5]);
	metrics_one(b, "pool_xfer_busy_total", "counter",
		    "transfer requests refused as one too many in progress (EBUSY)", st[6]);
}

/* What this poold served of other poolds' checked requests, and what it refused. */
static void metrics_links(struct poold *pd, struct evbuffer *b)
{
	struct fab_link_stats st;

	if (pd->links == NULL)
		return;
	fab_links_stats(pd->links, &st);
	metrics_head(b, "pool_fabric_requests_total", "counter",
		     "other poolds' checked transfers this poold served, and those it refused "
		     "(outside what it holds, or from a fenced node)");
	evbuffer_add_printf(b,
			    "pool_fabric_requests_total{result=\"served\"} %llu\n"
			    "pool_fabric_requests_total{result=\"refused\"} %llu\n",
			    (unsigned long long)st.served_ops,
			    (unsigned long long)st.refused_requests);
	metrics_head(b, "pool_fabric_served_bytes_total", "counter",
		     "bytes of the checked transfers this poold served");
	evbuffer_add_printf(b, "pool_fabric_served_bytes_total %llu\n",
			    (unsigned long long)st.served_bytes);
	metrics_head(b, "pool_fabric_refused_links_total", "counter",
		     "connections to the fabric's links closed before they proved they know the "
		     "cluster's key, or over the limits on them");
	evbuffer_add_printf(b, "pool_fabric_refused_links_total %llu\n",
			    (unsigned long long)st.refused_links);
}

/*
 * A local client's one-sided transfers since it last told (ClientStats).
 * Counted as told: a client can only skew this node's metrics, by at most
 * 2^48 a report.
 */
static int metrics_client_stats(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__ClientStats *m = (const Pool__ClientStats *)msg;
	const uint64_t most = UINT64_C(1) << 48;
	struct fab_rma_stats *st = &r->pd->client_rma;
	Pool__Ok ok = POOL__OK__INIT;

	if (r->node != r->pd->node_id)
		return req_errorf(r, -EOPNOTSUPP, "client stats come from local clients only");
	st->get_ops += MIN(m->get_ops, most);
	st->get_bytes += MIN(m->get_bytes, most);
	st->put_ops += MIN(m->put_ops, most);
	st->put_bytes += MIN(m->put_bytes, most);
	return req_reply(r, WIRE_OK, &ok.base);
}

const struct ctl_handler metrics_handlers[] = {
    {WIRE_CLIENT_STATS, CTL_ANY, AT_HERE, metrics_client_stats, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * The journals here: the lender's (pmem tier) and the coordinator's
 * (coord.journal), a sample of each figure (proto/statusstats.h) per journal.
 */
#define JOURNAL_METRIC(name, view, metric, kind, help)                                             \
	metrics_head(b, metric, kind, help);                                                       \
	for (k = 0; k < n; k++)                                                                    \
		evbuffer_add_printf(b, "%s{journal=\"%s\"} %llu\n", metric, names[k],              \
				    (unsigned long long)st[k].name);
static void metrics_journals(struct poold *pd, struct evbuffer *b)
{
	struct journal_stats st[2];
	const char *names[2];
	size_t n = journals_stats(pd, names, st), k;

	if (n == 0)
		return;
	JOURNAL_STATS(JOURNAL_METRIC)
}

/* coord.etcd: the election and, at the leader, its state in etcd (proto/statusstats.h). */
#define ETCD_METRIC(name, view, metric, kind, help) metrics_one(b, metric, kind, help, es.name);
static void metrics_etcd(struct poold *pd, struct evbuffer *b)
{
	struct ha_log_stats es;
	struct ha_info ha;

	ha_describe(pd, &ha);
	if (!ha.on)
		return;
	metrics_head(b, "pool_coord_leader", "gauge", "1 while this poold leads (coord.etcd)");
	evbuffer_add_printf(b, "pool_coord_leader %d\n", ha.leading);
	metrics_head(b, "pool_coord_epoch", "gauge", "the epoch of the coordinator as last known");
	evbuffer_add_printf(b, "pool_coord_epoch %lld\n", (long long)ha.epoch);
	metrics_head(b, "pool_coord_leader_changes_total", "counter",
		     "leaders seen since poold started");
	evbuffer_add_printf(b, "pool_coord_leader_changes_total %llu\n",
			    (unsigned long long)ha.changes);
	if (!coord_log_etcd_stats(pd, &es))
		return;
	ETCD_STATS(ETCD_METRIC)
}

/* How long control requests took here, per type, as Prometheus histograms. */
static void metrics_latency(struct poold *pd, struct evbuffer *b)
{
	static const uint64_t bounds[] = REQ_LATENCY_BOUNDS_US;
	unsigned t;
	size_t i;

	metrics_head(b, "pool_request_duration_seconds", "histogram",
		     "control requests served here, from arrival to reply, by type");
	for (t = 0; pd->latency != NULL && t < WIRE_TYPE_MAX; t++) {
		const struct req_latency *l = &pd->latency[t];
		const char *name = wire_type_name((uint16_t)t);
		uint64_t cum = 0;

		if (l->count == 0)
			continue;
		for (i = 0; i < REQ_LATENCY_BUCKETS; i++) {
			cum += l->bucket[i];
			if (i < ARRAY_SIZE(bounds))
				evbuffer_add_printf(
				    b,
				    "pool_request_duration_seconds_bucket{type=\"%s\","
				    "le=\"%g\"} %llu\n",
				    name, bounds[i] / 1e6, (unsigned long long)cum);
			else
				evbuffer_add_printf(
				    b,
				    "pool_request_duration_seconds_bucket{type=\"%s\","
				    "le=\"+Inf\"} %llu\n",
				    name, (unsigned long long)cum);
		}
		evbuffer_add_printf(b, "pool_request_duration_seconds_sum{type=\"%s\"} %.6f\n",
				    name, l->sum_us / 1e6);
		evbuffer_add_printf(b, "pool_request_duration_seconds_count{type=\"%s\"} %llu\n",
				    name, (unsigned long long)l->count);
	}
}

/* What this poold is and lends. */
/* How late the event loop runs (looplag.c). */
static void metrics_loop(struct poold *pd, struct evbuffer *b)
{
	struct looplag_stats st;
	size_t i;

	looplag_stats(pd, &st);
	metrics_head(b, "pool_loop_lag_seconds_total", "counter",
		     "how late the event loop ran its timer, summed: time it spent in one turn, "
		     "or not run");
	evbuffer_add_printf(b, "pool_loop_lag_seconds_total %.6f\n", st.total_us / 1e6);
	metrics_head(b, "pool_loop_lag_max_seconds", "gauge",
		     "the longest of those delays in the last minute");
	evbuffer_add_printf(b, "pool_loop_lag_max_seconds %.6f\n", st.max_us / 1e6);
	metrics_head(b, "pool_loop_stalls_total", "counter",
		     "delays of the event loop's timer longer than the level");
	for (i = 0; i < LOOPLAG_STALL_LEVELS; i++)
		evbuffer_add_printf(b, "pool_loop_stalls_total{over=\"%g\"} %llu\n",
				    looplag_stall_us[i] / 1e6, (unsigned long long)st.stalls[i]);
}

static void metrics_node(struct poold *pd, struct metrics *mt, struct evbuffer *b)
{
	static const char *const states[] = {"up", "suspect", "dead"};
	unsigned count[3] = {0, 0, 0};
	struct member *m;
	size_t i;

	metrics_head(b, "pool_info", "gauge", "this poold: version, role, node");
	evbuffer_add_printf(b, "pool_info{version=\"%s\",role=\"%s\",node=\"%u\",name=\"",
			    PACKAGE_VERSION, pd->coord != NULL ? "coordinator" : "node",
			    pd->node_id);
	metrics_label(b, pd->conf->node_name);
	evbuffer_add(b, "\"} 1\n", 5);
	metrics_one(b, "pool_uptime_seconds", "gauge", "seconds since poold started",
		    (units_now_ms() - pd->start_ms) / 1000);
	metrics_one(b, "pool_requests_total", "counter", "control requests served", pd->requests);
	metrics_one(b, "pool_reloads_total", "counter", "configuration reloads", pd->reloads);
	metrics_one(b, "pool_clients", "gauge", "clients connected to the control socket",
		    control_nclients(pd->control));
	metrics_one(b, "pool_scrapes_total", "counter", "requests to this endpoint", mt->scrapes);
	metrics_head(b, "pool_arena_bytes", "gauge", "bytes of each arena this node lends");
	for (i = 0; i < pd->narenas; i++)
		evbuffer_add_printf(b,
				    "pool_arena_bytes{arena=\"%u\",tier=\"%s\",numa=\"%d\"} "
				    "%llu\n",
				    pd->arenas[i].id, tier_name(pd->arenas[i].tier),
				    pd->arenas[i].numa, (unsigned long long)pd->arenas[i].lent);
	metrics_one(b, "pool_holdings", "gauge", "extents this node holds for the pool",
		    pd->nholds);
	metrics_one(b, "pool_pmem_flushes_total", "counter",
		    "persists of the pmem tier that reached its media (on a file, each an msync)",
		    lend_flushes());
	TAILQ_FOREACH(m, &pd->members, entry)
		count[m->state]++;
	metrics_head(b, "pool_members", "gauge", "members of the cluster as this poold sees them");
	for (i = 0; i < 3; i++)
		evbuffer_add_printf(b, "pool_members{state=\"%s\"} %u\n", states[i], count[i]);
	metrics_one(b, "pool_fabric_firewall", "gauge",
		    "1 while fabric.firewall's rule keeps other uids off the fabric's ports",
		    firewall_is_on(pd));
	metrics_one(b, "pool_member_changes_total", "counter",
		    "changes of a member's state (up, suspect, dead) seen here",
		    pd->member_changes);
	metrics_kv_shards(pd, b);
	metrics_one(b, "pool_vec_searches_total", "counter",
		    "vector searches served here for other processes", pd->vec_searches);
	metrics_one(b, "pool_vec_queries_total", "counter", "vector queries in those searches",
		    pd->vec_queries);
	metrics_snap(pd, b);
	metrics_carves(pd, b);
	metrics_loop(pd, b);
}

/* A family of proto/kvstats.h's statistics. */
#define KV_STAT_METRIC(name, source, metric, kind, help, ...)                                      \
	{metric, kind, help, offsetof(struct kv_ns_stats, name), NULL},

/* The KV families: each one's samples come together, one per namespace (and tier). */
static const struct metrics_kv {
	const char *name, *type, *help;
	size_t off;	  /* of the value in struct kv_ns_stats */
	const char *tier; /* a tier label, or NULL */
} metrics_kv[] = {
    KV_STATS(KV_STAT_METRIC) /* (entries, hits, misses...: proto/kvstats.h) */
    {"pool_kv_bytes", "gauge", "bytes of a KV namespace's values per tier",
     offsetof(struct kv_ns_stats, used), "dram"},
    {"pool_kv_bytes", NULL, NULL, offsetof(struct kv_ns_stats, pmem_used), "pmem"},
    {"pool_kv_capacity_bytes", "gauge", "a KV namespace's capacity",
     offsetof(struct kv_ns_stats, def.capacity), NULL},
};

struct metrics_kv_arg {
	struct evbuffer *b;
	const struct metrics_kv *f;
};

/* One namespace's sample of a family, for kv_stats_each(). */
static void metrics_kv_ns(void *arg, const struct kv_ns_stats *n)
{
	const struct metrics_kv_arg *a = arg;

	evbuffer_add_printf(a->b, "%s{ns=\"", a->f->name);
	metrics_label(a->b, n->def.name);
	if (a->f->tier != NULL)
		evbuffer_add_printf(a->b, "\",tier=\"%s", a->f->tier);
	evbuffer_add_printf(a->b, "\"} %llu\n",
			    (unsigned long long)*(const uint64_t *)((const char *)n + a->f->off));
}

/* The pool's map (coordinator): lenders, regions. */
static void metrics_pool(struct poold *pd, struct evbuffer *b)
{
	struct lender_pool *lp;
	struct region *r;
	uint64_t bytes = 0, leases = 0;

	metrics_head(b, "pool_lender_bytes", "gauge", "what each lender's arena offers the pool");
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		evbuffer_add_printf(b,
				    "pool_lender_bytes{node=\"%u\",arena=\"%u\",tier=\"%s\"} "
				    "%llu\n",
				    lp->node, lp->arena, tier_name(lp->tier),
				    (unsigned long long)lp->lent);
	metrics_head(b, "pool_lender_used_bytes", "gauge", "bytes in use in each lender's arena");
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		extent_stats(lp->alloc, &st);
		evbuffer_add_printf(b,
				    "pool_lender_used_bytes{node=\"%u\",arena=\"%u\","
				    "tier=\"%s\"} %llu\n",
				    lp->node, lp->arena, tier_name(lp->tier),
				    (unsigned long long)st.used);
	}
	TAILQ_FOREACH(r, &pd->regions->list, entry) {
		bytes += r->size;
		leases += r->leases;
	}
	metrics_one(b, "pool_regions", "gauge", "regions in the pool", pd->regions->count);
	metrics_one(b, "pool_region_bytes", "gauge", "bytes of all regions", bytes);
	metrics_one(b, "pool_leases", "gauge", "leases of clients on regions", leases);
}

/*
 * The KV namespaces this poold keeps: at the coordinator every one, at a
 * node the sharded ones. A sharded namespace's counts and bytes are each
 * poold's part (those of the shards it owns: add them up over the
 * poolds), its capacity the namespace's.
 */
static void metrics_kv_namespaces(struct poold *pd, struct evbuffer *b)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(metrics_kv); i++) {
		struct metrics_kv_arg a = {b, &metrics_kv[i]};

		if (metrics_kv[i].type != NULL) /* else more of the family above */
			metrics_head(b, metrics_kv[i].name, metrics_kv[i].type, metrics_kv[i].help);
		kv_stats_each(pd, metrics_kv_ns, &a);
	}
}

/* KV events (coordinator, when published). */
static void metrics_kv_events(struct poold *pd, struct evbuffer *b)
{
	struct kv_events_stats st;

	if (!kv_events_stats(pd, &st))
		return;
	metrics_one(b, "pool_kv_events_batches_total", "counter", "KV event batches published",
		    st.published);
	metrics_one(b, "pool_kv_events_kept_batches", "gauge", "batches kept for replay", st.kept);
	metrics_one(b, "pool_kv_events_kept_bytes", "gauge", "bytes of batches kept for replay",
		    st.kept_bytes);
	metrics_one(b, "pool_kv_events_held_bytes", "gauge",
		    "bytes of batches out of the replay ring that subscribers have yet to take",
		    st.held_bytes);
	metrics_one(b, "pool_kv_events_bad_replays_total", "counter",
		    "malformed replay requests ignored", st.bad_replays);
	metrics_one(b, "pool_kv_events_refused_replays_total", "counter",
		    "replay requests refused while too many bytes were still being sent",
		    st.refused_replays);
	metrics_head(b, "pool_kv_events_connections", "gauge",
		     "connections to the KV events sockets now (kv_events.max_subscribers)");
	evbuffer_add_printf(b,
			    "pool_kv_events_connections{socket=\"events\"} %llu\n"
			    "pool_kv_events_connections{socket=\"replay\"} %llu\n",
			    (unsigned long long)st.connections[0],
			    (unsigned long long)st.connections[1]);
	metrics_head(b, "pool_kv_events_refused_connections_total", "counter",
		     "connections to the KV events sockets shut down over a bound");
	evbuffer_add_printf(b,
			    "pool_kv_events_refused_connections_total{socket=\"events\"} %llu\n"
			    "pool_kv_events_refused_connections_total{socket=\"replay\"} %llu\n",
			    (unsigned long long)st.refused_connections[0],
			    (unsigned long long)st.refused_connections[1]);
}

/* The RESP endpoint: the coordinator's own, or a node's relay to it. */
static void metrics_resp(struct poold *pd, struct evbuffer *b)
{
	struct resp_stats st;
	uint64_t to_owners, from_nodes;

	if (resp_sharded(pd)) { /* (an owner serves other nodes' clients, endpoint or not) */
		resp_shard_stats(&to_owners, &from_nodes);
		metrics_head(b, "pool_resp_shard_commands_total", "counter",
			     "RESP commands (or parts of them) of sharded databases sent to "
			     "their keys' owners, and served for other nodes' clients");
		evbuffer_add_printf(b,
				    "pool_resp_shard_commands_total{to=\"owners\"} %llu\n"
				    "pool_resp_shard_commands_total{from=\"nodes\"} %llu\n",
				    (unsigned long long)to_owners, (unsigned long long)from_nodes);
	}
	if (!resp_stats(pd, &st) && !resp_relay_stats(pd, &st))
		return;
	metrics_one(b, "pool_resp_connections", "gauge",
		    st.relay ? "RESP connections relayed to the coordinator now"
			     : "RESP connections now",
		    st.connections);
	metrics_one(
	    b, "pool_resp_refused_total", "counter",
	    "RESP connections refused (resp.max_clients, or no coordinator endpoint to relay "
	    "to)",
	    st.refused);
	if (!st.relay) {
		metrics_one(b, "pool_resp_commands_total", "counter", "RESP commands run",
			    st.commands);
		return;
	}
	metrics_head(b, "pool_resp_relayed_bytes_total", "counter",
		     "bytes a node's RESP endpoint relayed, by direction");
	evbuffer_add_printf(b,
			    "pool_resp_relayed_bytes_total{to=\"coordinator\"} %llu\n"
			    "pool_resp_relayed_bytes_total{to=\"client\"} %llu\n",
			    (unsigned long long)st.to_coordinator,
			    (unsigned long long)st.to_client);
}

/* The text of GET /metrics. */
static int metrics_text(struct poold *pd, struct evbuffer *b)
{
	struct metrics *mt = pd->metrics;

	mt->scrapes++;
	metrics_node(pd, mt, b);
	metrics_latency(pd, b);
	metrics_rma(pd, b);
	metrics_xfer(pd, b);
	metrics_links(pd, b);
	metrics_journals(pd, b);
	metrics_etcd(pd, b);
	if (pd->coord != NULL && pd->regions != NULL)
		metrics_pool(pd, b);
	if (pd->kv != NULL)
		metrics_kv_namespaces(pd, b);
	metrics_kv_events(pd, b);
	metrics_resp(pd, b);
	return 0;
}

/* Start the endpoint if metrics.listen is set. */
int metrics_open(struct poold *pd)
{
	const struct poold_conf *conf = pd->conf;
	const struct httpd_limits lim = {
	    (unsigned)conf->metrics_max_clients,
	    (unsigned)conf->metrics_max_clients_per_uid,
	    (unsigned)conf->metrics_max_clients_per_addr,
	    (unsigned)conf->metrics_timeout_ms,
	    "metrics.max_clients_per_uid",
	    "metrics.max_clients_per_addr",
	};
	struct metrics *mt;
	int rc;

	if (conf->metrics_listen[0] == '\0')
		return 0;
	mt = calloc(1, sizeof(*mt));
	if (mt == NULL)
		return -ENOMEM;
	pd->metrics = mt;
	rc = httpd_open(pd, conf->metrics_listen, "metrics.listen", "/metrics", &lim, metrics_text,
			&mt->httpd);
	if (rc < 0) {
		pd->metrics = NULL;
		free(mt);
		return rc;
	}
	log_info("metrics on http://%s/metrics", conf->metrics_listen);
	return 0;
}

void metrics_close(struct poold *pd)
{
	if (pd->metrics == NULL)
		return;
	httpd_close(pd->metrics->httpd);
	free(pd->metrics);
	pd->metrics = NULL;
}

/*
 * proto/statusstats.h - the figures a poold's status reply gives of its
 * journals and of the coordinator's state in etcd, each described once
 * (the KV shards' are proto/kvshardstats.h).
 *
 * JOURNAL_STATS(X) calls X(name, view, metric, kind, help) for each figure
 * of a journal (the lender's pmem one, the coordinator's): name is its
 * field in the wire's JournalInfo, in poold's struct journal_stats and in
 * poolctl's struct admin_journal, and its key in `poolctl status --json`;
 * view is how poolctl shows it (COUNT, or BYTES: a size); metric, kind and
 * help its family on the metrics endpoint, a sample per journal labelled
 * journal="lender" or "coordinator".
 *
 * ETCD_STATS(X) does the same for the leader's state in etcd (coord.etcd):
 * name is its field in the wire's EtcdInfo (told by the leader only), in
 * poold's struct ha_log_stats and in poolctl's struct admin_etcd.
 *
 * A new figure is a line here, its field in pool.proto and what counts it.
 */
#ifndef POOL_STATUSSTATS_H
#define POOL_STATUSSTATS_H

#define JOURNAL_STATS(X)                                                                           \
	X(records, COUNT, "pool_journal_records", "gauge", "records in the journal's active half") \
	X(used, BYTES, "pool_journal_used_bytes", "gauge", "bytes of the active half in use")      \
	X(half, BYTES, "pool_journal_half_bytes", "gauge",                                         \
	  "bytes of a half: more is rewritten to the live set")                                    \
	X(rewrites, COUNT, "pool_journal_rewrites_total", "counter",                               \
	  "rewrites to the live set since poold started")                                          \
	X(dropped, BYTES, "pool_journal_dropped_bytes", "gauge",                                   \
	  "bytes of a torn or corrupt tail cut off when poold started")

#define ETCD_STATS(X)                                                                              \
	X(records, COUNT, "pool_coord_etcd_records", "gauge",                                      \
	  "records of the coordinator's state in etcd's generation in force")                      \
	X(waiting, COUNT, "pool_coord_etcd_waiting", "gauge",                                      \
	  "records of the coordinator's state not yet in etcd (their replies wait)")               \
	X(txns, COUNT, "pool_coord_etcd_txns_total", "counter",                                    \
	  "transactions of the coordinator's state etcd took")                                     \
	X(failures, COUNT, "pool_coord_etcd_failures_total", "counter",                            \
	  "transactions of the coordinator's state etcd did not answer (sent again)")              \
	X(rewrites, COUNT, "pool_coord_etcd_rewrites_total", "counter",                            \
	  "generations of the coordinator's state in etcd rewritten to the live set")

/* A figure as a uint64_t field of a C struct. */
#define STATUS_STAT_FIELD(name, ...) uint64_t name;

#endif

/*
 * proto/kvshardstats.h - the KV index's shards as a poold reports them,
 * each figure described once.
 *
 * KV_SHARD_STATS(X) calls X(name, type, part, view, metric, label, kind,
 * help) for each: name is its field in the wire's KvShardInfo (pool.proto), in
 * poold's struct kv_shard_stats and in poolctl's struct admin_kv_shards,
 * and its key in `poolctl status --json`; type is its C type. part says
 * when it is told: MAP (the shard map: always, a required field), STORE
 * (the memory kept for the shards' values: always), MOVES (the shards'
 * moves: once the poold has a KV index) or BACKUPS (once a namespace of 2
 * replicas exists). view is how poolctl shows it: NUM, or HEX (the map's
 * digest, a string of 16 hex digits in JSON). metric, label, kind and
 * help are its line on the metrics endpoint: metric NULL, none; label
 * NULL, a family of its own, else its value of the family's label, the
 * family's kind and help taken from its first ("" in the others).
 * A new figure is a line here, its field in KvShardInfo and what counts
 * it (kv_shard_stats(), daemon/kv/kv-owner.c).
 */
#ifndef POOL_KVSHARDSTATS_H
#define POOL_KVSHARDSTATS_H

#define KV_SHARD_STATS(X)                                                                          \
	X(shards, uint32_t, MAP, NUM, NULL, NULL, "", "")                                          \
	X(owners, uint32_t, MAP, NUM, "pool_kv_shard_owners", NULL, "gauge",                       \
	  "nodes owning KV shards, as this poold maps them")                                       \
	X(owned, uint32_t, MAP, NUM, "pool_kv_shards_owned", NULL, "gauge",                        \
	  "KV shards this node owns")                                                              \
	X(digest, uint64_t, MAP, HEX, NULL, NULL, "", "")                                          \
	X(changes, uint64_t, MAP, NUM, "pool_kv_shard_changes_total", NULL, "counter",             \
	  "changes of the KV shard map seen here")                                                 \
	X(moves, uint64_t, MAP, NUM, "pool_kv_shard_moves_total", NULL, "counter",                 \
	  "KV shards that changed owner in those changes")                                         \
	X(store_size, uint64_t, STORE, NUM, "pool_kv_store_bytes", NULL, "gauge",                  \
	  "memory kept for the values of the KV shards this node owns (kv.shard_size)")            \
	X(store_used, uint64_t, STORE, NUM, "pool_kv_store_used_bytes", NULL, "gauge",             \
	  "... of it given to values")                                                             \
	X(arriving, uint32_t, MOVES, NUM, "pool_kv_shards_arriving", NULL, "gauge",                \
	  "KV shards owned here whose keys their last owner still hands over")                     \
	X(leaving, uint32_t, MOVES, NUM, "pool_kv_shards_leaving", NULL, "gauge",                  \
	  "KV shards lost here whose keys their new owners have not all taken")                    \
	X(keys_in, uint64_t, MOVES, NUM, "pool_kv_shard_keys_total", "way=\"in\"", "counter",      \
	  "keys of moved KV shards: taken from their last owner, handed to their new one, or "     \
	  "lost on the way")                                                                       \
	X(keys_out, uint64_t, MOVES, NUM, "pool_kv_shard_keys_total", "way=\"out\"", "", "")       \
	X(keys_lost, uint64_t, MOVES, NUM, "pool_kv_shard_keys_total", "way=\"lost\"", "", "")     \
	X(demand_reports, uint64_t, MOVES, NUM, "pool_kv_demand_reports_total", NULL, "counter",   \
	  "reports of sharded KV namespaces' use sent to their keepers")                           \
	X(part_changes, uint64_t, MOVES, NUM, "pool_kv_part_changes_total", NULL, "counter",       \
	  "changes of this node's parts of sharded KV namespaces' capacity, as their keepers "     \
	  "gave them")                                                                             \
	X(backed, uint32_t, BACKUPS, NUM, "pool_kv_shards_backed", NULL, "gauge",                  \
	  "KV shards whose backup copy is here (namespaces of 2 replicas)")                        \
	X(unbacked, uint32_t, BACKUPS, NUM, "pool_kv_shards_unbacked", NULL, "gauge",              \
	  "KV shards owned here whose backup does not hold them whole yet")                        \
	X(backup_keys, uint64_t, BACKUPS, NUM, "pool_kv_backup_changes_total", "result=\"sent\"",  \
	  "counter",                                                                               \
	  "puts and removals of KV shards owned here sent to their backups, and those not taken")  \
	X(backup_missed, uint64_t, BACKUPS, NUM, "pool_kv_backup_changes_total",                   \
	  "result=\"missed\"", "", "")

/* A figure as a field of a C struct. */
#define KV_SHARD_STAT_FIELD(name, type, ...) type name;

#endif

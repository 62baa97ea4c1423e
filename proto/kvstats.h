/*
 * proto/kvstats.h - a KV namespace's statistics, each described once.
 *
 * KV_STATS(X) calls X(name, source, metric, kind, help, head, table) for
 * each: name is its field in poold's struct kv_ns_stats, in the wire's
 * KvNamespace and in poolctl's struct admin_kv_ns; source is COUNTED (a
 * counter of struct kv_ns of the same name, which poold increments) or
 * DERIVED (poold works it out when asked: kv_ns_stats()); metric, kind and
 * help are its family on the metrics endpoint; head and table its column
 * in `poolctl kv stats` (IN_BOTH also in kv ls). Every output is made from
 * this list, so a new statistic is a line here, its field in KvNamespace
 * (pool.proto) and what counts it.
 */
#ifndef POOL_KVSTATS_H
#define POOL_KVSTATS_H

#define KV_STATS(X)                                                                                \
	X(entries, DERIVED, "pool_kv_entries", "gauge", "keys of a KV namespace", "ENTRIES",       \
	  IN_BOTH)                                                                                 \
	X(hits, COUNTED, "pool_kv_hits_total", "counter", "KV gets that found a value", "HITS",    \
	  IN_FULL)                                                                                 \
	X(misses, COUNTED, "pool_kv_misses_total", "counter", "KV gets that found none", "MISSES", \
	  IN_FULL)                                                                                 \
	X(pmem_hits, COUNTED, "pool_kv_pmem_hits_total", "counter",                                \
	  "KV hits served from the pmem tier", "PMEM HITS", IN_FULL)                               \
	X(evictions, COUNTED, "pool_kv_evictions_total", "counter",                                \
	  "KV values dropped to make room", "EVICTIONS", IN_FULL)                                  \
	X(spills, COUNTED, "pool_kv_spills_total", "counter", "KV values moved to the pmem tier",  \
	  "SPILLS", IN_FULL)                                                                       \
	X(promotions, COUNTED, "pool_kv_promotions_total", "counter",                              \
	  "KV values moved back to DRAM", "PROMOTIONS", IN_FULL)                                   \
	X(puts, COUNTED, "pool_kv_puts_total", "counter", "KV puts committed", "PUTS", IN_FULL)    \
	X(soft_pinned, DERIVED, "pool_kv_soft_pinned", "gauge",                                    \
	  "values of a KV namespace soft pinned against eviction", "SOFT PINNED", IN_FULL)         \
	X(hard_pinned, DERIVED, "pool_kv_hard_pinned", "gauge",                                    \
	  "values of a KV namespace hard pinned against eviction", "HARD PINNED", IN_FULL)         \
	X(part, DERIVED, "pool_kv_part_bytes", "gauge",                                            \
	  "bytes of a KV namespace's values this index may hold: its capacity, or a sharded "      \
	  "one's part on this node",                                                               \
	  "PART", IN_FULL)

/* A statistic as a uint64_t field of a struct, whatever its source. */
#define KV_STAT_FIELD(name, ...) uint64_t name;
/* A counted one only (struct kv_ns's counters). */
#define KV_STAT_COUNTER(name, source, ...) KV_STAT_COUNTER_##source(name)
#define KV_STAT_COUNTER_COUNTED(name) uint64_t name;
#define KV_STAT_COUNTER_DERIVED(name)

#endif

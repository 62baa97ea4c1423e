#!/bin/bash
# pool-bench kv-lru: how far a sharded namespace's eviction (each shard
# owner's own LRU over its part of the capacity) is from one exact LRU, on
# the Mooncake trace (../shared/data/kv-synthetic-trace.jsonl): a 4-node
# cluster (network namespaces, checked links over TCP), a client on h2
# replays the trace (pool-kv-replay: for each request a prefix match, then
# a batched put of the blocks missed) into a namespace of the coordinator's
# index (tier dram: one LRU over the namespace, the baseline) and into a
# sharded one (tier dram, 4 owners), each of the same capacity, PCT
# percent of the trace's unique blocks; the hit rates side by side.
#   tests/bench/pool-bench kv-lru [BUILDDIR]
#   env: LRU_PCTS ("25 50 75"), LRU_BLOCK (16K), LRU_TRACE (the Mooncake trace)
. "$(dirname "$0")/kvcluster.sh"
REPLAY=$top_builddir/tests/bench/pool-kv-replay
trace=${LRU_TRACE:-$top_srcdir/../shared/data/kv-synthetic-trace.jsonl}
pcts=${LRU_PCTS:-25 50 75} block=${LRU_BLOCK:-16K}
[ -r "$trace" ] || { echo "pool-bench kv-lru: no trace at $trace" >&2; exit 1; }

# 43,924 unique blocks of 16 KiB: 0.7 GB; a node's part of a sharded
# namespace at 75% with room to spare, and lenders for the other.
POOL_OPTS="-o kv.shard_size=320M -o lend.size=512M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
echo "## Exact LRU against the shard owners' LRUs on the Mooncake trace: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), $block blocks, 4 nodes"
printf '%-6s %-22s %10s %12s %10s\n' pct namespace "hit %" "unbounded %" "s"
for pct in $pcts; do
	for mode in d S; do
		out=$(cluster_exec 2 "$REPLAY" -s "$(pool_sock 2)" -b "$block" -c "$pct" -"$mode" "$trace" 2>&1)
		res=$(grep '^RESULT' <<<"$out") || { echo "# $mode $pct: $out"; continue; }
		secs=$(sed -n 's/^replay *\([0-9.]*\) s.*/\1/p' <<<"$out")
		hit=$(sed -n 's/.* hit=\([0-9.]*\) .*/\1/p' <<<"$res")
		unb=$(sed -n 's/.* unbounded=\([0-9.]*\) .*/\1/p' <<<"$res")
		printf '%-6s %-22s %10s %12s %10s\n' "$pct" \
			"$([ $mode = d ] && echo "coordinator's (exact)" || echo "sharded (4 owners)")" "$hit" "$unb" "$secs"
		grep -q '^failed puts' <<<"$out" && echo "# $(grep '^failed puts' <<<"$out")"
	done
done

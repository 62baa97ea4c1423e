#!/bin/bash
# pool-bench kv-lru: how far a sharded namespace's eviction (each shard
# owner's own LRU over its part of the capacity) is from one exact LRU, on
# the Mooncake trace (../shared/data/kv-synthetic-trace.jsonl): a 4-node
# cluster (network namespaces, checked links over TCP), a client on h2
# replays the trace (pool-kv-replay: for each request a prefix match, then
# a batched put of the blocks missed) into a namespace of the coordinator's
# index (tier dram: one LRU over the namespace, the baseline) and into a
# sharded one (tier dram, 4 owners, parts of the capacity by their demand),
# each of the same capacity, PCT percent of the trace's unique blocks; the
# hit rates side by side. A key's shard follows its namespace's name, so
# each sharded run (lru-PCT-R) splits the keys over the owners anew.
#   tests/bench/pool-bench kv-lru [BUILDDIR]
#   env: LRU_PCTS ("25 50 75"), LRU_RUNS (3 sharded runs a PCT), LRU_BLOCK (16K),
#        LRU_TRACE (the Mooncake trace)
. "$(dirname "$0")/kvcluster.sh"
REPLAY=$top_builddir/tests/bench/pool-kv-replay
trace=${LRU_TRACE:-$top_srcdir/../shared/data/kv-synthetic-trace.jsonl}
pcts=${LRU_PCTS:-25 50 75} block=${LRU_BLOCK:-16K} runs=${LRU_RUNS:-3}
[ -r "$trace" ] || { echo "pool-bench kv-lru: no trace at $trace" >&2; exit 1; }

# 43,924 unique blocks of 16 KiB: 0.7 GB; a node's part of a sharded
# namespace at 75% with room to spare, and lenders for the other.
POOL_OPTS="-o kv.shard_size=320M -o lend.size=512M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
echo "## Exact LRU against the shard owners' LRUs on the Mooncake trace: poold $(git -C "$top_builddir" rev-parse --short HEAD 2>/dev/null), $block blocks, 4 nodes"
printf '%-6s %-26s %10s %12s %10s\n' pct namespace "hit %" "unbounded %" "s"
# replay PCT MODE NAME: one replay into a namespace NAME (the keys' shards
# follow its name), a line of its hit rate; the rate alone in $hit.
replay() {
	local out res secs unb
	out=$(cluster_exec 2 "$REPLAY" -s "$(pool_sock 2)" -b "$block" -c "$1" -"$2" -n "$3" "$trace" 2>&1)
	res=$(grep '^RESULT' <<<"$out") || { echo "# $2 $1: $out"; hit=; return 1; }
	secs=$(sed -n 's/^replay *\([0-9.]*\) s.*/\1/p' <<<"$out")
	hit=$(sed -n 's/.* hit=\([0-9.]*\) .*/\1/p' <<<"$res")
	unb=$(sed -n 's/.* unbounded=\([0-9.]*\) .*/\1/p' <<<"$res")
	printf '%-6s %-26s %10s %12s %10s\n' "$1" \
		"$([ "$2" = d ] && echo "coordinator's (exact)" || echo "sharded, $3")" "$hit" "$unb" "$secs"
	grep -q '^failed puts' <<<"$out" && echo "# $(grep '^failed puts' <<<"$out")"
	return 0
}
for pct in $pcts; do
	replay "$pct" d "lru-exact-$pct" || continue
	exact=$hit gaps=
	for r in $(seq "$runs"); do
		replay "$pct" S "lru-$pct-$r" && gaps="$gaps $(awk -v e="$exact" -v h="$hit" 'BEGIN { printf "%.2f", e - h }')"
	done
	echo "# $pct%: below the exact LRU by$gaps points (mean $(tr ' ' '\n' <<<"$gaps" | awk 'NF { s += $1; n++ } END { printf "%.2f", n ? s / n : 0 }'))"
done

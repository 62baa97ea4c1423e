#!/bin/bash
# pool-bench kv-handover: how fast a sharded KV namespace's keys move with
# their shards, on a 4-node cluster (network namespaces, checked links over
# TCP). KEYS values of SIZE bytes are put while three nodes own the
# shards; then the fourth joins and takes about a quarter of them with
# their keys, and later is drained (poolctl drain) and gives them all
# back. For each move: the keys and bytes that moved, the time from the
# change to the last shard served (polled every 50 ms), and the rate; the
# baseline, in the same run, is a client on the joining node reading every
# value (pool-kv mget) from the same owners over the same links.
#   tests/bench/pool-bench kv-handover [BUILDDIR]
#   env: HANDOVER_KEYS (60000), HANDOVER_SIZE (4096)
. "$(dirname "$0")/kvcluster.sh"
keys=${HANDOVER_KEYS:-60000} size=${HANDOVER_SIZE:-4096}
moves() {
	pctl "$1" --json status 2>/dev/null | python3 -c 'import json, sys
k = json.load(sys.stdin)["kv_shards"]
print(k["owned"], k.get("arriving", 0), k.get("leaving", 0), k.get("keys_in", 0), k.get("keys_out", 0), k.get("store_used", 0))' 2>/dev/null ||
		echo "0 1 0 0 0 0" # (not up yet: not settled)
}
# settled: every host 1-4 up has no shard arriving; the time in ms it took from $1.
settled() {
	local t0=$1 i m
	while :; do
		m=0
		for i in 1 2 3 4; do
			[ "$(moves "$i" | cut -d' ' -f2)" = 0 ] && m=$((m + 1))
		done
		[ $m = 4 ] && break
		sleep 0.05
	done
	echo $(($(now_ms) - t0))
}
total_in() { local i s=0; for i in 1 2 3 4; do s=$((s + $(moves "$i" | cut -d' ' -f4))); done; echo $s; }

mem=$(((keys * (size + 512) / 3 + (64 << 20)) >> 20))
POOL_OPTS="-o kv.shard_size=${mem}M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || exit 1
pctl 1 kv create sh $((mem * 3))M sharded >/dev/null || exit 1
sleep 1
for ((at = 0; at < keys; at += 4096)); do
	n=$((keys - at < 4096 ? keys - at : 4096))
	kv 2 sh mput "k$at-" "$n" "$size" 7 >/dev/null || exit 1
done

echo "## A sharded namespace's keys moving with their shards: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), $keys keys of $size bytes, 4 nodes"
in0=$(total_in)
t0=$(now_ms)
pool_node_start 4
ms=$(settled "$t0")
moved=$(($(total_in) - in0))
printf '%-28s ' "join (h4 takes its shards)"
rate "$moved" $((moved * size)) "$ms"

# Baseline: h4's client reads every value from the owners, over the same links.
t0=$(now_ms)
for ((at = 0; at < keys; at += 4096)); do
	n=$((keys - at < 4096 ? keys - at : 4096))
	kv 4 sh mget "k$at-" "$n" 7 | grep -q "^mget k$at-: $n hits of $n, all correct$" || echo "# mget k$at- incomplete"
done
ms=$(($(now_ms) - t0))
printf '%-28s ' "baseline: client mget, all"
rate "$keys" $((keys * size)) "$ms"

in0=$(total_in)
t0=$(now_ms)
pctl 1 drain "$(pctl 4 --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["node_id"])')" >/dev/null
ms=$(settled "$t0")
moved=$(($(total_in) - in0))
printf '%-28s ' "drain (h4 gives them back)"
rate "$moved" $((moved * size)) "$ms"

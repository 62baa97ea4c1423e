#!/bin/bash
# pool-bench kv-shards: single KV gets and puts from the clients of every
# node of a 4-node cluster (network namespaces, checked links over TCP),
# into a namespace whose index is the coordinator's, into a sharded one
# (its keys' index and values on their shards' owners) and into a sharded
# one of 2 replicas (each put also sent to its shard's backup before it is
# answered), and into a sharded one whose KV events every owner publishes
# (kv_events.endpoint on each node; no subscriber connected, so ZMQ drops
# the batches poold builds and hands it), in one run: each
# node runs pool-bench-kv -c (CONNS client processes, one op in flight
# each, 1 KiB values on random keys of 4,096) against its own poold, the
# four at once. For each: the ops/s of all clients, the CPU time of all
# four poolds per op, and the coordinator's poold's alone, per op and as
# a share of all. On one machine the four poolds share its CPUs, so the
# ops/s say less than the CPU: what scales with more machines is the work
# no single poold has to do for all the others.
#   tests/bench/pool-bench kv-shards [BUILDDIR]
#   env: SHARDS_CONNS (4), SHARDS_SECS (3), SHARDS_SIZE (1K)
. "$(dirname "$0")/kvcluster.sh"
BENCH=$top_builddir/tests/bench/pool-bench-kv
conns=${SHARDS_CONNS:-4} secs=${SHARDS_SECS:-3} size=${SHARDS_SIZE:-1K}
OUT=$(mktemp -d /tmp/pool-bench-kv-shards.XXXXXX)

cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"; }

events_at() { echo "-o kv_events.endpoint=tcp://$(cluster_addr "$1"):$(cluster_port "$1" 5557)"; }
POOL_NODE_OPTS=events_at
POOL_OPTS="-o kv.shard_size=256M -o lend.size=512M -o kv_events.namespace=events"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
pctl 1 kv create plain 256M tier=dram >/dev/null || exit 1
pctl 1 kv create sharded 256M sharded >/dev/null || exit 1
pctl 1 kv create backed 256M sharded replicas=2 >/dev/null || exit 1
pctl 1 kv create events 256M sharded >/dev/null || exit 1
sleep 1

# run NS: the four nodes' clients at once; $OUT/NS-I their outputs, $OUT/NS-cpu the poolds' CPU ms.
run() {
	local ns=$1 i before=() after=()
	for i in 1 2 3 4; do before[i]=$(cpu_ms "${POOL_PIDS[$i]}"); done
	for i in 1 2 3 4; do
		cluster_exec "$i" "$BENCH" -s "$(pool_sock "$i")" -n "$ns" -c "$conns" -S "$size" \
			-T "$secs" -P "${POOL_PIDS[$i]}" >"$OUT/$ns-$i" 2>&1 &
	done
	wait
	for i in 1 2 3 4; do after[i]=$(cpu_ms "${POOL_PIDS[$i]}"); done
	for i in 1 2 3 4; do echo "$i $((after[i] - before[i]))"; done >"$OUT/$ns-cpu"
}
run plain
run sharded
run backed
run events

echo "## KV on a 4-node cluster: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), $conns client processes a node, $size values, ${secs} s a point"
printf '%-8s %-4s %12s %14s %14s %9s\n' ns op "ops/s" "us cpu/op all" "us coord/op" "coord %"
for ns in plain sharded backed events; do
	for op in get put; do
		# ops/s and us (this poold's CPU per op in that window) of each node's clients
		awk -v op="$op" -v c="$conns" '$1 == c && $3 == op { ops += $4; cpu += $4 * $5 }
			END { printf "%d %.0f\n", ops, cpu }' "$OUT/$ns-1" "$OUT/$ns-2" "$OUT/$ns-3" "$OUT/$ns-4" >"$OUT/sum"
		read -r ops cpu <"$OUT/sum"
		coord=$(awk -v op="$op" -v c="$conns" '$1 == c && $3 == op { print $4 * $5 }' "$OUT/$ns-1")
		printf '%-8s %-4s %12s %14s %14s %9s\n' "$ns" "$op" "$ops" \
			"$(awk -v a="$cpu" -v b="$ops" 'BEGIN { if (b > 0) printf "%.1f", a / b }')" \
			"$(awk -v a="$coord" -v b="$ops" 'BEGIN { if (b > 0) printf "%.1f", a / b }')" \
			"$(awk -v a="$coord" -v b="$cpu" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b }')"
	done
done
for ns in plain sharded backed events; do
	printf '# %s: poolds CPU over the whole run (ms, fill included): %s\n' "$ns" "$(tr '\n' ' ' <"$OUT/$ns-cpu")"
done
for f in "$OUT"/*-[1-4]; do grep -q '^# \|^conns' "$f" || { echo "# $(basename "$f"):"; head -5 "$f"; }; done

#!/bin/bash
# pool-bench resp-cluster: the RESP endpoint of a 3-node cluster (network
# namespaces, UCX over TCP) with its values spread over the lenders
# (resp.placement = spread) against the same cluster keeping them in the
# coordinator's pool (local), and redis-server on the coordinator's host,
# in one run: redis-benchmark from host 2, SET (the second round, over the
# keys the first made) and GET pipelined 16 deep, 20 clients, values of
# 1000 B (20,000 keys) and 256 KiB (2,000 keys).
#   tests/bench/pool-bench resp-cluster [BUILDDIR]
set -u
top_builddir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_builddir top_srcdir
REDIS=$(command -v redis-server) || { echo "resp-cluster.sh: redis-server is not installed"; exit 1; }
command -v redis-benchmark >/dev/null || { echo "resp-cluster.sh: redis-benchmark is not installed"; exit 1; }
. "$top_srcdir/tests/cluster/pool.sh"
finish() { :; }

# rate HOST-ADDR PORT TEST SIZE N KEYS: requests per second of one redis-benchmark test, from host 2.
rate() {
	cluster_exec 2 timeout 300 redis-benchmark -h "$1" -p "$2" -t "$3" -d "$4" -n "$5" -P 16 \
		-c 20 -r "$6" -q 2>/dev/null | tr '\r' '\n' |
		awk -v t="$3" 'toupper($1) == toupper(t) ":" && $2 + 0 > 0 { v = $2 } END { print int(v) }'
}
# run PLACEMENT: a fresh cluster, its figures in $OUT/PLACEMENT-TEST-SIZE (and Redis's once).
run() {
	local placement=$1 i a
	cluster_create 3 || exit 1
	a=$(cluster_addr 1)
	pool_node_start 1 -o "resp.listen=$a:6379" -o resp.capacity=1G -o lend.size=1G \
		-o "resp.placement=$placement" || exit 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	for i in 2 3; do pool_node_start "$i" -o lend.size=1G || exit 1; done
	for i in 2 3; do pool_wait_state 1 "h$i" up 20 || exit 1; done
	cluster_wait_tcp 2 "$a" 6379 || exit 1
	if [ ! -e "$OUT/redis-set-1000" ]; then
		cluster_spawn 1 "$OUT/redis.log" "$REDIS" --bind "$a" --port 6380 --save "" \
			--appendonly no --protected-mode no --dir "$OUT" >/dev/null
		cluster_wait_tcp 2 "$a" 6380 || exit 1
	fi
	# The keys fit the coordinator's pool (local): 20,000 of 1000 B, 2,000 of 256 KiB. The
	# first SET round makes them (and touches new memory); the second, measured, overwrites.
	for size in 1000 262144; do
		n=$([ "$size" -gt 1000 ] && echo 4000 || echo 200000)
		keys=$([ "$size" -gt 1000 ] && echo 2000 || echo 20000)
		for t in set set get; do
			rate "$a" 6379 $t $size $n $keys >"$OUT/$placement-$t-$size"
			[ -e "$OUT/redis-get-$size" ] || rate "$a" 6380 $t $size $n $keys >"$OUT/redis-$t-$size"
		done
	done
	pctl 1 --json ledger | python3 -c '
import json, sys
used = {}
for e in json.load(sys.stdin)["ledger"]:
    if "uid" not in e:
        used[e["node"]] = used.get(e["node"], 0) + e["used"]
print(" ".join("%d:%dM" % (k, v >> 20) for k, v in sorted(used.items())))' >"$OUT/$placement-spread"
	cluster_destroy
}
OUT=$(mktemp -d /tmp/pool-bench-resp-cluster.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
run local
run spread
echo "## RESP on a 3-node cluster: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), redis-benchmark -P 16 -c 20 from host 2 (ops/s)"
printf '%-5s %-7s %12s %12s %12s %7s\n' test value spread local redis spread/local
for size in 1000 262144; do
	for t in set get; do
		s=$(cat "$OUT/spread-$t-$size"); l=$(cat "$OUT/local-$t-$size"); r=$(cat "$OUT/redis-$t-$size")
		printf '%-5s %-7s %12s %12s %12s %7s\n' "$t" "$size" "$s" "$l" "$r" \
			"$(awk -v a="$s" -v b="$l" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
	done
done
echo "bytes used per lender (node:MiB): spread $(cat "$OUT/spread-spread"); local $(cat "$OUT/local-spread")"

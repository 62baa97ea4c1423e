#!/bin/bash
# pool-bench resp-shards: the RESP endpoints of a 4-node cluster (network
# namespaces, UCX over TCP) with sharded databases (resp.placement =
# sharded: each node runs commands, each key at its shard's owner, h2-h4
# owning shards) against the same cluster relaying every node's clients to
# the coordinator, whose databases keep their values in its own pool
# (local, the relay's fastest case), and against one redis-server on h1;
# sharded2 is sharded with resp.replicas = 2 (each write on the shard's
# backup too before its reply):
# redis-benchmark on h2, h3 and h4 at once, each against its own node's
# endpoint (Redis: against h1's), SET then GET of 100 B values over 100,000
# keys, pipelined 16 deep, 10 clients each. Printed: the ops/s of the three
# together, the CPU seconds of every poold together and of the
# coordinator's alone during each test, and ops per poold CPU second.
#   tests/bench/pool-bench resp-shards [BUILDDIR]
set -u
top_builddir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_builddir top_srcdir
REDIS=$(command -v redis-server) || { echo "resp-shards.sh: redis-server is not installed"; exit 1; }
command -v redis-benchmark >/dev/null || { echo "resp-shards.sh: redis-benchmark is not installed"; exit 1; }
. "$top_srcdir/tests/cluster/pool.sh"
finish() { :; }
N=100000

# cpu PID: its user + system time in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# load NAME TEST PORT HOSTADDR...: redis-benchmark on h2-h4 at once, each against the
# address given for it; the sum of their ops/s in $OUT/NAME-TEST, the poolds' CPU in
# $OUT/NAME-TEST-cpu ("all coordinator", seconds).
load() {
	local name=$1 t=$2 port=$3 i before=() after=() all=0 c0 pids=()
	shift 3
	for i in 1 2 3 4; do before[$i]=$(cpu "${POOL_PIDS[$i]:-0}"); done
	for i in 2 3 4; do
		cluster_exec "$i" timeout 300 redis-benchmark -h "$1" -p "$port" -a pw -t "$t" -d 100 \
			-n $N -P 16 -c 10 -r $N -q 2>/dev/null | tr '\r' '\n' |
			awk -v t="$t" 'toupper($1) == toupper(t) ":" && $2 + 0 > 0 { v = $2 } END { print int(v) }' \
				>"$OUT/$name-$t-h$i" &
		pids+=($!)
		shift
	done
	wait "${pids[@]}" # (not redis-server, started from this shell too)
	for i in 1 2 3 4; do after[$i]=$(cpu "${POOL_PIDS[$i]:-0}"); done
	for i in 1 2 3 4; do all=$((all + after[i] - before[i])); done
	c0=$((after[1] - before[1]))
	cat "$OUT/$name-$t-h2" "$OUT/$name-$t-h3" "$OUT/$name-$t-h4" | awk '{ s += $1 } END { print s }' \
		>"$OUT/$name-$t"
	echo "$all $c0" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f %.2f\n", $1 / hz, $2 / hz }' \
		>"$OUT/$name-$t-cpu"
}
# run MODE: a fresh cluster (sharded or relay), its figures in $OUT.
run() {
	local mode=$1 i addrs=()
	cluster_create 4 || exit 1
	for i in 1 2 3 4; do addrs[$i]=$(cluster_addr "$i"); done
	if [ "$mode" != relay ]; then
		POOL_OPTS="-o resp.placement=sharded -o resp.password=pw -o kv.shard_size=256M -o resp.capacity=512M"
		[ "$mode" = sharded2 ] && POOL_OPTS="$POOL_OPTS -o resp.replicas=2"
		pool_node_start 1 -o "resp.listen=${addrs[1]}:6379" -o kv.shard_size=0 || exit 1
	else
		POOL_OPTS="-o resp.password=pw"
		pool_node_start 1 -o "resp.listen=0.0.0.0:6379" -o resp.placement=local \
			-o lend.size=1G -o resp.capacity=512M || exit 1
	fi
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	for i in 2 3 4; do pool_node_start "$i" -o "resp.listen=${addrs[$i]}:6379" || exit 1; done
	for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || exit 1; done
	for i in 2 3 4; do cluster_wait_tcp "$i" "${addrs[$i]}" 6379 || exit 1; done
	sleep 1 # (the shards' first map, the relays' coordinator endpoint)
	for t in set get; do load "$mode" $t 6379 "${addrs[2]}" "${addrs[3]}" "${addrs[4]}"; done
	if [ ! -e "$OUT/redis-get" ]; then
		cluster_spawn 1 "$OUT/redis.log" "$REDIS" --bind "${addrs[1]}" --port 6380 --save "" \
			--appendonly no --protected-mode no --requirepass pw --dir "$OUT" >/dev/null
		cluster_wait_tcp 2 "${addrs[1]}" 6380 || exit 1
		for t in set get; do load redis $t 6380 "${addrs[1]}" "${addrs[1]}" "${addrs[1]}"; done
	fi
	POOL_PIDS=()
	cluster_destroy
}
OUT=$(mktemp -d /tmp/pool-bench-resp-shards.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
run relay
run sharded
run sharded2
echo "## RESP on a 4-node cluster: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), redis-benchmark -P 16 -c 10 -d 100 on h2, h3 and h4 at once"
printf '%-8s %-4s %10s %12s %14s %14s\n' mode test "ops/s" "poold CPU s" "coordinator s" "ops/poold-CPU-s"
for mode in sharded sharded2 relay redis; do
	for t in set get; do
		read -r all c0 <"$OUT/$mode-$t-cpu"
		ops=$(cat "$OUT/$mode-$t")
		printf '%-8s %-4s %10s %12s %14s %14s\n' "$mode" "$t" "$ops" \
			"$([ $mode = redis ] && echo - || echo "$all")" "$([ $mode = redis ] && echo - || echo "$c0")" \
			"$([ $mode = redis ] && echo - || awk -v o="$ops" -v a="$all" -v n=$((3 * N)) 'BEGIN { if (a > 0 && o > 0) printf "%d", n / a }')"
	done
done

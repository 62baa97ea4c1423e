#!/bin/bash
# kv.sh - pool-bench kv: the KV cache through libpool, next to Redis doing
# the same operations in the same run, and an LLM-serving trace replayed.
#
#  1. One node: a private poold and a redis-server (unix socket and TCP on
#     127.0.0.1); pool-bench-kv against the pool, redis-unix and redis-tcp:
#     put/get/batched put/get of 16 KiB, 256 KiB and 2 MiB values, the
#     zero-copy get (pool_kv_acquire, in place), prefix match of 1,000 keys;
#     then the batched 256 KiB put and get from Python (kv_python.py: the
#     binding, numpy buffers) next to the C client's; single gets and
#     puts of 1 KiB and 16 KiB from 1, 8 and 32 client processes at once,
#     with the server's CPU time per op (pool and redis-unix); then 16 KiB
#     with poold and the client on one CPU.
#  2. Two hosts in network namespaces (UCX tcp over veth + bridge): the
#     client on host 2, which lends nothing, so every value lives on host 1;
#     redis-server inside host 1 on its address, the hiredis client on host
#     2: the KV cache vs Redis over TCP between namespaces.
#  3. pool-kv-replay of the Mooncake synthetic trace (64 KiB blocks) on the
#     one-node poold, with a DRAM capacity of 100%, 25% and 10% of its unique
#     blocks and a 1 GiB pmem tier (a file under TMPDIR) for the spills, the
#     hit blocks read back; block hit rate per tier next to the unbounded
#     cache's.
#
#   tests/bench/kv.sh [BUILDDIR]
# env: KV_BENCH_TIME (s/point, 0.5), KV_TRACE (the trace; default
# shared/data/kv-synthetic-trace.jsonl next to or above the source tree),
# KV_BENCH / KV_REPLAY (the programs, default BUILDDIR/tests/bench/...).
# Needs root for part 2 (else it says so and skips it), redis-server and
# hiredis for the Redis columns (scripts/deps.sh installs them).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
export top_srcdir top_builddir
bench=${KV_BENCH:-$top_builddir/tests/bench/pool-bench-kv}
replay=${KV_REPLAY:-$top_builddir/tests/bench/pool-kv-replay}
POOLD=$top_builddir/daemon/poold
POOLCTL=$top_builddir/cli/poolctl
t=${KV_BENCH_TIME:-0.5}
trace=${KV_TRACE:-}
if [ -z "$trace" ]; then
	for d in "$top_srcdir/shared/data" "$top_srcdir/../shared/data"; do
		[ -f "$d/kv-synthetic-trace.jsonl" ] && trace=$d/kv-synthetic-trace.jsonl && break
	done
fi
for b in "$bench" "$replay" "$POOLD" "$POOLCTL"; do
	[ -x "$b" ] || { echo "kv.sh: $b not built (make)" >&2; exit 1; }
done
REDIS=$(command -v redis-server || true)
[ -n "$REDIS" ] || echo "kv.sh: redis-server not installed: Redis columns skipped"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A cache-like redis: no persistence, bounded memory; protected mode off
# because it refuses clients from other hosts (namespaces) without a password.
REDIS_ARGS=(--save "" --appendonly no --protected-mode no --maxmemory 3gb --maxmemory-policy noeviction)

# ---------------------------------------------------------------- one node
sn=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-kv.XXXXXX")
spid='' rpid=''
single_stop() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	spid='' rpid=''
	rm -rf -- "$sn"
}
trap single_stop EXIT # the cluster library's own trap replaces it below
trap 'exit 130' INT TERM HUP

echo "# pool-bench kv, $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs"
echo
# 3G: the replay at 100% keeps 2.68 GiB of 64 KiB blocks.
"$POOLD" -d -o "runtime_dir=$sn" -o lend.size=3G -o "pmem.path=$sn/pmem" -o pmem.size=1G \
	>"$sn/poold.log" 2>&1 &
spid=$!
for _ in $(seq 200); do [ -S "$sn/poold.sock" ] && break; sleep 0.05; done
[ -S "$sn/poold.sock" ] || { echo "kv.sh: poold did not start"; cat "$sn/poold.log"; exit 1; }
export POOL_SOCKET=$sn/poold.sock
targets=()
if [ -n "$REDIS" ]; then
	port=$(free_port)
	"$REDIS" --bind 127.0.0.1 --port "$port" --unixsocket "$sn/redis.sock" --unixsocketperm 700 \
		"${REDIS_ARGS[@]}" --dir "$sn" >"$sn/redis.log" 2>&1 &
	rpid=$!
	for _ in $(seq 100); do [ -S "$sn/redis.sock" ] && break; sleep 0.05; done
	targets=(-r "redis-unix:$sn/redis.sock" -r "redis-tcp:127.0.0.1:$port")
fi
"$POOLCTL" kv create kvbench 1G >/dev/null || { cat "$sn/poold.log"; exit 1; }
echo "## one node: KV cache (poold, lend 3G, namespace of 1G) vs redis-server $("$REDIS" --version 2>/dev/null | sed 's/.*v=\([^ ]*\).*/\1/') (unix socket; TCP on 127.0.0.1)"
"$bench" -n kvbench -T "$t" "${targets[@]}" | tee "$sn/single.out" || { cat "$sn/poold.log"; exit 1; }
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "## the same batches of 256 KiB from Python (pool.KV, numpy arrays in and out; tier-: pool.vllm's secondary tier, 32-block jobs) vs the C client (above, and again after)"
	# The C client's 256 KiB points again, right after: both then overwrite
	# memory that earlier versions touched, where the first pass above
	# partly ran on memory never touched yet (see doc/benchmarks.md).
	PYTHONPATH="$top_srcdir/python" POOL_LIBPOOL="$top_builddir/libpool/.libs/libpool.so.0" \
		/usr/bin/python3 "$here/kv_python.py" kvbench "$t" >"$sn/python.out" || { cat "$sn/poold.log"; exit 1; }
	"$bench" -n kvbench -T "$t" -S 256K >"$sn/again.out" || { cat "$sn/poold.log"; exit 1; }
	awk 'FILENAME == ARGV[1] { if ($1 == 262144) c1[$2] = $4; next }
	     FILENAME == ARGV[2] { if ($1 == 262144) c2[$2] = $4; next }
	     FNR == 1 { printf "%-10s %13s %13s %9s %7s\n", "op", "C GB/s first", "C GB/s again", "Py GB/s", "Py/C" }
	     { c = $1 == "tier-store" ? "mput" : $1 == "tier-load" ? "mget" : $1
	       printf "%-10s %13.2f %13.2f %9.2f %7.2f\n", $1, c1[c], c2[c], $3, (c2[c] > 0 ? $3 / c2[c] : 0) }' \
		"$sn/single.out" "$sn/again.out" "$sn/python.out"
else
	echo "kv.sh: /usr/bin/python3 has no numpy: Python column skipped"
fi
echo "## one node, many connections: single gets and puts on random keys from 1, 8 and 32 client processes at once, each its own connection; the server's CPU time per op"
"$bench" -n kvbench -T "$t" -c 1,8,32 -S 1K,16K -P "$spid" ${REDIS:+-r "redis-unix:$sn/redis.sock"} ||
	{ cat "$sn/poold.log"; exit 1; }
# A host with more busy processes than CPUs: poold and its client on one
# CPU. poold's poll after a request must give the CPU up to the client, or
# every request waits for the poll's quiet to run out.
if command -v taskset >/dev/null; then
	echo "## one CPU: poold and the client both on CPU 0 (16 KiB; a host busier than its CPUs)"
	taskset -a -p -c 0 "$spid" >/dev/null &&
		taskset -c 0 "$bench" -n kvbench -T "$t" -S 16K | grep -v '^#'
	taskset -a -p -c "0-$(($(nproc) - 1))" "$spid" >/dev/null
fi
"$POOLCTL" kv drop kvbench >/dev/null
echo

if [ -n "$trace" ]; then
	echo "## trace replay: $trace, 64 KiB blocks, match, get the hit blocks, put the missing ones (batches of 64); 1 GiB pmem tier"
	for pct in 100 25 10; do
		echo "### DRAM capacity $pct% of the unique blocks"
		"$replay" -n "replay$pct" -K -g -c "$pct" -b 64K "$trace" | tee -a "$sn/replay.out" | grep -v '^RESULT'
		"$POOLCTL" kv stats "replay$pct" | sed 's/^/    /'
		# Per tier: the gets of the hit blocks count hits, and those served from pmem.
		"$POOLCTL" --json kv stats "replay$pct" | python3 -c '
import json, sys
n = json.load(sys.stdin)["namespaces"][0]
print("TIERS pct=%s dram=%d pmem=%d" % (sys.argv[1], n["hits"] - n["pmem_hits"], n["pmem_hits"]))' "$pct" >>"$sn/replay.out"
		"$POOLCTL" kv drop "replay$pct" >/dev/null
	done
	echo
else
	echo "kv.sh: no trace (set KV_TRACE): replay skipped"
fi
unset POOL_SOCKET
single_out=$(cat "$sn/single.out")
replay_out=$(cat "$sn/replay.out" 2>/dev/null)
single_stop
trap - EXIT

# ---------------------------------------------------------------- 2 hosts
cluster_out=
cluster_part() {
	. "$top_srcdir/tests/cluster/pool.sh"
	CLUSTER_QUIET=1 cluster_create 2 || return 1
	if [ "$CLUSTER_MODE" != netns ]; then
		echo "kv.sh: network namespaces unavailable (not root?): cluster part skipped"
		return 0
	fi
	# Host 2 (the client) lends nothing: every value crosses the link.
	pool_node_start 1 -o lend.size=1G
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	pool_node_start 2 -o lend.size=0
	pool_wait_state 1 h2 up 20 || { echo "h2 did not join"; pool_cluster_logs; return 1; }
	pctl 2 kv create kvbench 768M >/dev/null || { pool_cluster_logs; return 1; }
	local a1 dir=$CLUSTER_TMP rargs=()
	a1=$(cluster_addr 1)
	if [ -n "$REDIS" ]; then
		cluster_spawn 1 "$dir/redis.log" "$REDIS" --bind "$a1" --port 6379 "${REDIS_ARGS[@]}" --dir "$dir" >/dev/null
		cluster_wait_tcp 2 "$a1" 6379 10 || { echo "redis on host 1 did not start"; cat "$dir/redis.log"; return 1; }
		rargs=(-r "redis-tcp:$a1:6379")
	fi
	echo "## 2 hosts in network namespaces (veth + bridge, UCX tcp), client on host 2 (lends 0), values on host 1; redis-server on host 1 ($a1)"
	cluster_exec 2 timeout 300 env POOL_SOCKET="$(pool_sock 2)" "$bench" -n kvbench -T "$t" "${rargs[@]}" |
		tee "$dir/cluster.out" || { pool_cluster_logs; return 1; }
	echo "## where the namespace's values are (ledger: used per lender)"
	pctl 1 ledger | sed 's/^/    /'
	pctl 2 kv drop kvbench >/dev/null
	cluster_out=$(cat "$dir/cluster.out")
	echo
}
cluster_part
cstatus=$?

# ---------------------------------------------------------------- verdict
# col OUT SIZE OP FIELD
col() { awk -v s="$2" -v o="$3" -v f="$4" '$1 == s && $2 == o { print $f }' <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
echo "## verdict vs targets (pool ops/s / Redis ops/s, 256 KiB values)"
for op in get mget; do
	p=$(col "$single_out" 262144 $op 3)
	ru=$(col "$single_out" 262144 $op 5)
	rt=$(col "$single_out" 262144 $op 7)
	echo "same node, $op: pool $p/s vs redis-unix ${ru:--}/s = $(ratio "$p" "$ru")x, vs redis-tcp ${rt:--}/s = $(ratio "$p" "$rt")x (target >= 5x)"
done
if [ -n "$cluster_out" ]; then
	for op in get mget; do
		p=$(col "$cluster_out" 262144 $op 3)
		rt=$(col "$cluster_out" 262144 $op 5)
		echo "between namespaces over TCP, $op: pool $p/s vs redis-tcp ${rt:--}/s = $(ratio "$p" "$rt")x (target >= 2x)"
	done
fi
m=$(awk '$1 ~ /^match/ { print $3 }' <<<"$single_out")
mc=$(awk '$1 ~ /^match/ { print $3 }' <<<"$cluster_out")
echo "prefix match of 1,000 keys: ${m:--} us on one node, ${mc:--} us from host 2 (target < 1000 us)"
if [ -n "$replay_out" ]; then
	blocks=$(awk '/^blocks / { print $2; exit }' <<<"$replay_out")
	echo "trace replay block hit rate (64 KiB blocks, DRAM capacity as % of the unique blocks, 1 GiB pmem tier):"
	awk -v blocks="$blocks" '
/^RESULT/ { split($2, p, "="); split($3, h, "="); split($4, u, "="); split($5, r, "="); hit[p[2]] = h[2]; rps[p[2]] = r[2]; ub = u[2]; order[++n] = p[2] }
/^TIERS/ { split($2, p, "="); split($3, d, "="); split($4, m, "="); dram[p[2]] = d[2]; pmem[p[2]] = m[2] }
END {
	for (i = 1; i <= n; i++) { c = order[i]
		printf "  %3s%%: %s%% (DRAM %.2f%%, pmem %.2f%%), %s requests/s\n", c, hit[c], 100 * dram[c] / blocks, 100 * pmem[c] / blocks, rps[c] }
	printf "  unbounded cache: %s%%\n", ub
}' <<<"$replay_out"
fi
exit $cstatus

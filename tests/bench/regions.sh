#!/bin/bash
# regions.sh - pool-bench regions: regions through libpool, each figure next
# to its baseline from the same run.
#
#  1. One node (a private poold): a local region mapped and copied into/out
#     of, vs memcpy between two malloc'd buffers in the same process; region
#     create+close+destroy through the daemon, ops/s, without and with the
#     coordinator's journal.
#  2. Four hosts in network namespaces (TCP over veth + bridge): from host
#     4, pool_region_read/write of a region on node 2, sync and batched, 4 KiB
#     to 4 MiB, and latency, with the poolds moving bytes each way
#     (fabric.transfer = checked, the default, and rma, UCX one-sided), the
#     clusters alternated (rma, checked, rma, checked); then regions striped
#     over 3 lenders (1 MiB and 256 KiB stripes); next to pool-bench-fabric's
#     raw figures (UCX and links) and iperf3 on the same path (host 4 <->
#     host 2).
#
#   tests/bench/regions.sh [BUILDDIR]    env: REGIONS_BENCH_TIME (s/point, 0.2)
# Needs root for part 2 (else it says so and stops after part 1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
export top_srcdir top_builddir
bench=$top_builddir/tests/bench/pool-bench-regions
fab=$top_builddir/tests/bench/pool-bench-fabric
POOLD=$top_builddir/daemon/poold
t=${REGIONS_BENCH_TIME:-0.2}
for b in "$bench" "$fab" "$POOLD"; do
	[ -x "$b" ] || { echo "regions.sh: $b not built (make)" >&2; exit 1; }
done

# ---------------------------------------------------------------- one node
sn=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-regions.XXXXXX")
spid=
single_stop() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	spid=
	rm -rf -- "$sn"
}
trap single_stop EXIT # chained by the cluster library's own trap below

echo "# pool-bench regions, $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs"
echo
"$POOLD" -d -o "runtime_dir=$sn" -o lend.size=512M >"$sn/poold.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sn/poold.sock" ] && break; sleep 0.05; done
export POOL_SOCKET=$sn/poold.sock
echo "## one node: local region mapped (MiB/s); memcpy = malloc'd -> malloc'd, same process, same footprint"
echo "## map_store/map_load = memcpy into/out of the mapping; reg_write/reg_read = pool_region_write/read on it"
"$bench" -T "$t" local 64M | tee "$sn/local.out" | grep -v '^#'
echo
echo "## one node: region create + close + destroy through poold (64 KiB regions)"
echo "## ops/s = wall clock incl. connect; loop_op/s = per-client loop rate x clients; *_us = per call"
"$bench" ops-header
for p in local any; do "$bench" ops 20000 64K $p; done
"$bench" -j 2 ops 20000 64K local
"$bench" ops 20000 64K local | tee "$sn/ops.out" >/dev/null # rerun for the verdict
echo
echo "## the same with the coordinator's journal (coord.journal, a file next to the socket):"
echo "## each create and destroy is a durable record before its reply; without, then with"
"$bench" ops-header
"$bench" ops 20000 64K local
kill "$spid" && wait "$spid" 2>/dev/null
"$POOLD" -d -o "runtime_dir=$sn" -o lend.size=512M -o "coord.journal=$sn/coord.journal" \
	>"$sn/poold.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sn/poold.sock" ] && break; sleep 0.05; done
"$bench" ops 20000 64K local
echo
kill "$spid" && wait "$spid" 2>/dev/null
echo "## region create + close + destroy with 20,000 regions of 4 KiB held, and with none"
"$POOLD" -d -o "runtime_dir=$sn" -o lend.size=2G -o regions.max=100000 -o quota.regions=100000 \
	>"$sn/poold.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sn/poold.sock" ] && break; sleep 0.05; done
"$bench" ops-header
"$bench" ops 2000 4096 local
"$bench" fill 20000 4096
"$bench" ops 2000 4096 local
echo
unset POOL_SOCKET
local_out=$(cat "$sn/local.out")
ops_out=$(cat "$sn/ops.out")
single_stop
trap - EXIT

# ---------------------------------------------------------------- 4 hosts
. "$top_srcdir/tests/cluster/pool.sh"
CLUSTER_QUIET=1 cluster_create 4 || exit 1
if [ "$CLUSTER_MODE" != netns ]; then
	echo "regions.sh: network namespaces unavailable (not root?): cluster part skipped"
	exit 77
fi
# Host 4 (the client) lends only 64M, so that a 256M region spread=3 lands on
# three other nodes and every byte the client moves crosses the link.
# cluster_up MODE: the four poolds, moving bytes MODE's way (fabric.transfer).
cluster_up() {
	local i
	export POOL_OPTS="-o fabric.transfer=$1"
	pool_node_start 1 -o lend.size=1G
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	for i in 2 3; do pool_node_start "$i" -o lend.size=1G; done
	pool_node_start 4 -o lend.size=64M
	for i in 2 3 4; do
		pool_wait_state 1 "h$i" up 20 || { echo "h$i did not join"; pool_cluster_logs; exit 1; }
	done
}
cluster_down() {
	local i
	for i in 1 2 3 4; do pool_node_kill "$i" TERM; done
	for i in 1 2 3 4; do while kill -0 "${POOL_PIDS[$i]}" 2>/dev/null; do sleep 0.1; done; done
	rm -f "$CLUSTER_TMP"/h*/run/poold.sock
}
dir=$CLUSTER_TMP
a2=$(cluster_addr 2)
# rb HOST ARGS...: the bench inside host HOST against its own poold.
rb() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$bench" "$@"; }
extents() { # region -> "2" or "1,2,3"
	pctl 4 --json region info "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["region"][0]
print(",".join(sorted({str(e["node"]) for e in r["extents"]}, key=int)), r.get("stripe", 0))'
}

echo "## 4 hosts in network namespaces (veth + bridge, TCP), $(date -u +%FT%TZ); client on host 4"
for mode in rma checked rma checked; do
	cluster_up $mode
	rb 4 create r_node2 256M node=2 || { pool_cluster_logs; exit 1; }
	rb 4 -T "$t" -W 8 remote r_node2 >>"$dir/$mode.r_node2.out"
	cluster_down
done
cluster_up checked
rb 4 create r_node2 256M node=2 || { pool_cluster_logs; exit 1; }
rb 4 create r_spread 256M spread=3 || { pool_cluster_logs; exit 1; }
rb 4 create r_spread256k 256M spread=3 256K || { pool_cluster_logs; exit 1; }
cp "$dir/checked.r_node2.out" "$dir/r_node2.out"
for r in r_spread r_spread256k; do
	read -r nodes stripe <<<"$(extents $r)"
	echo "## region $r: 256 MiB on node(s) $nodes, stripe $stripe; MiB/s, b8 = 8 per pool_batch_wait"
	rb 4 -T "$t" -W 8 remote $r | tee "$dir/$r.out" | grep -v '^#'
	echo
done

# The raw fabric figures, best of 3 runs as the region figures are (server on host 2).
port=13600
fabrun() { # OUT [options]
	local out=$1; shift
	port=$((port + 1))
	cluster_spawn 2 "$dir/fab.log" "$fab" -t tcp -s -b "$a2" -p $port >/dev/null
	sleep 0.5
	cluster_exec 4 timeout 60 "$fab" -t tcp -c "$a2" -p $port -T "$t" "$@" >>"$out" 2>&1
}
linkrun() { # OUT [options]: the same over the checked transport
	local out=$1; shift
	port=$((port + 1))
	cluster_spawn 2 "$dir/fab.log" "$fab" -t link -s -b "$a2" -p $port >/dev/null
	sleep 0.5
	cluster_exec 4 timeout 60 "$fab" -t link -c "$a2" -p $port -T "$t" "$@" >>"$out" 2>&1
}
for _ in 1 2 3; do
	fabrun "$dir/fab8.out"; fabrun "$dir/fab1.out" -W 1
	linkrun "$dir/link8.out"; linkrun "$dir/link1.out" -W 1
done
iperf() { # [-R] -> MiB/s, host 4 -> host 2 (or 2 -> 4 with -R), 1 MiB writes
	port=$((port + 1))
	cluster_spawn 2 "$dir/iperf.log" timeout 30 iperf3 -s -1 -p $port >/dev/null
	sleep 0.3
	cluster_exec 4 iperf3 -c "$a2" -p $port -t 2 -l 1M -f M "$@" 2>/dev/null |
		awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "MBytes/sec") print $(i - 1) }'
}
ip_w=$(iperf)
ip_r=$(iperf -R)

# col SIZE COLUMN FILE: the best (largest) bandwidth figure of SIZE over the runs in FILE.
col() { awk -v s="$1" -v c="$2" '/^size/ { lat = /lat|mean/ } !lat && $1 == s && $c > m { m = $c } END { if (m != "") print m }' "$3"; }
# lcol SIZE COLUMN FILE: the best (smallest) latency figure.
lcol() { awk -v s="$1" -v c="$2" '/^size/ { lat = /lat|mean/ } lat && $1 == s && (m == "" || $c < m) { m = $c } END { if (m != "") print m }' "$3"; }
echo "## same path (host 4 -> node 2), raw fabric vs regions, MiB/s"
echo "## fab_get/fab_put = pool-bench-fabric, 8 in flight (sliding); fab_*_w1 one at a time; best of 3 runs"
echo "## reg_*_sync = pool_region_read/write one call at a time; reg_*_b8 = batches of 8 (region on node 2)"
printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" size fab_get_w1 reg_r_sync fab_get reg_r_b8 \
	fab_put_w1 reg_w_sync fab_put reg_w_b8
for s in 4096 16384 65536 262144 1048576 4194304; do
	printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" $s "$(col $s 2 "$dir/fab1.out")" \
		"$(col $s 2 "$dir/r_node2.out")" "$(col $s 2 "$dir/fab8.out")" "$(col $s 4 "$dir/r_node2.out")" \
		"$(col $s 3 "$dir/fab1.out")" "$(col $s 3 "$dir/r_node2.out")" "$(col $s 3 "$dir/fab8.out")" \
		"$(col $s 5 "$dir/r_node2.out")"
done
echo "iperf3 single stream, 1 MiB writes: host 4 -> 2 ${ip_w:--} MiB/s, host 2 -> 4 (-R) ${ip_r:--} MiB/s"
echo "## latency us: fab_get, fab_put+flush (raw, mean, best of 3 runs); region read, write (returns when visible), mean and p50"
printf "%-9s %9s %9s %9s %9s %9s %9s\n" size fab_get reg_read reg_rd_p50 fab_put reg_write reg_wr_p50
for s in 8 4096; do
	printf "%-9s %9s %9s %9s %9s %9s %9s\n" $s "$(lcol $s 2 "$dir/fab8.out")" "$(lcol $s 2 "$dir/r_node2.out")" \
		"$(lcol $s 3 "$dir/r_node2.out")" "$(lcol $s 3 "$dir/fab8.out")" "$(lcol $s 4 "$dir/r_node2.out")" \
		"$(lcol $s 5 "$dir/r_node2.out")"
done
echo "## regions on node 2, the poolds moving bytes checked (the default) vs rma (UCX one-sided), MiB/s,"
echo "## best of 2 alternated clusters; sync = one call at a time, b8 = batches of 8"
printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" size rma_r_sync chk_r_sync rma_r_b8 chk_r_b8 \
	rma_w_sync chk_w_sync rma_w_b8 chk_w_b8
for s in 4096 65536 1048576 4194304; do
	printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" $s \
		"$(col $s 2 "$dir/rma.r_node2.out")" "$(col $s 2 "$dir/checked.r_node2.out")" \
		"$(col $s 4 "$dir/rma.r_node2.out")" "$(col $s 4 "$dir/checked.r_node2.out")" \
		"$(col $s 3 "$dir/rma.r_node2.out")" "$(col $s 3 "$dir/checked.r_node2.out")" \
		"$(col $s 5 "$dir/rma.r_node2.out")" "$(col $s 5 "$dir/checked.r_node2.out")"
done
echo "## latency us, mean: region read, write (returns when visible); raw: fab (UCX) get, put+flush; link read, write"
printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" size rma_read chk_read rma_write chk_write \
	fab_get link_get fab_put link_put
for s in 8 4096; do
	printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s\n" $s \
		"$(lcol $s 2 "$dir/rma.r_node2.out")" "$(lcol $s 2 "$dir/checked.r_node2.out")" \
		"$(lcol $s 4 "$dir/rma.r_node2.out")" "$(lcol $s 4 "$dir/checked.r_node2.out")" \
		"$(lcol $s 2 "$dir/fab8.out")" "$(lcol $s 2 "$dir/link8.out")" \
		"$(lcol $s 3 "$dir/fab8.out")" "$(lcol $s 3 "$dir/link8.out")"
done
echo "## raw links across the same path, MiB/s (8 in flight, one at a time): get, put"
for s in 1048576 4194304; do
	echo "$s link_get $(col $s 2 "$dir/link8.out") link_get_w1 $(col $s 2 "$dir/link1.out") link_put $(col $s 3 "$dir/link8.out") link_put_w1 $(col $s 3 "$dir/link1.out")"
done
echo "## striped over 3 lenders vs one, MiB/s (read_sync read_b8 write_sync write_b8)"
printf "%-9s %-27s %-27s %-27s\n" size node=2 "spread=3 (1M stripe)" "spread=3 (256K stripe)"
for s in 65536 1048576 4194304; do
	row=$s
	for r in r_node2 r_spread r_spread256k; do
		row="$row|$(awk -v s=$s '$1 == s && !seen++ { printf "%.0f %.0f %.0f %.0f", $2, $4, $3, $5 }' "$dir/$r.out")"
	done
	IFS='|' read -r a b c d <<<"$row"
	printf "%-9s %-27s %-27s %-27s\n" "$a" "$b" "$c" "$d"
done
echo
echo "## region create + close + destroy from host 4 through its poold and the coordinator"
rb 4 ops-header
rb 4 ops 2000 64K node=2
rb 4 ops 2000 64K local
echo

# ---------------------------------------------------------------- verdict
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.0f", 100 * a / b }'; }
m1=$(echo "$local_out" | awk '$1 == 1048576 { print $2 }')
st1=$(echo "$local_out" | awk '$1 == 1048576 { print $3 }')
ld1=$(echo "$local_out" | awk '$1 == 1048576 { print $4 }')
lo=$(echo "$local_out" | awk '$1 ~ /^[0-9]+$/ { for (i = 3; i <= 6; i++) { p = 100 * $i / $2; if (min == "" || p < min) min = p } } END { printf "%.0f", min }')
ops=$(echo "$ops_out" | awk '{ print $4 }')
echo "## verdict vs targets"
echo "local mapped >= 90% of memcpy: at 1 MiB store $(pct "$st1" "$m1")%, load $(pct "$ld1" "$m1")%; worst over all sizes and kinds ${lo}%"
for k in "fab_get_w1:2:fab1:reg_read_sync:2" "fab_get:2:fab8:reg_read_b8:4" \
	"fab_put_w1:3:fab1:reg_write_sync:3" "fab_put:3:fab8:reg_write_b8:5"; do
	IFS=: read -r fn fc ff rn rc <<<"$k"
	f=$(col 1048576 "$fc" "$dir/$ff.out")
	r=$(col 1048576 "$rc" "$dir/r_node2.out")
	echo "remote 1 MiB within 10% of fabric: $rn $r vs $fn $f MiB/s = $(pct "$r" "$f")%"
done
echo "create+destroy >= 20000/s on one node: $ops/s (one client, local placement)"
for k in "reg_read_sync:2" "reg_read_b8:4" "reg_write_sync:3" "reg_write_b8:5"; do
	IFS=: read -r rn rc <<<"$k"
	c=$(col 1048576 "$rc" "$dir/checked.r_node2.out")
	r=$(col 1048576 "$rc" "$dir/rma.r_node2.out")
	echo "checked within 10% of rma, remote 1 MiB $rn: $c vs $r MiB/s = $(pct "$c" "$r")%"
done
for k in "read:2" "write:4"; do
	IFS=: read -r rn rc <<<"$k"
	c=$(lcol 8 "$rc" "$dir/checked.r_node2.out")
	r=$(lcol 8 "$rc" "$dir/rma.r_node2.out")
	echo "checked 8-byte $rn latency within 10% of rma (<= 110%): $c vs $r us = $(pct "$c" "$r")%"
done

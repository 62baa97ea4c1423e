#!/bin/bash
# fabric-netns.sh - fabric/ get/put between two network namespaces joined by a
# veth bridge (two "hosts", UCX over TCP on eth0), next to ucx_perftest and
# iperf3 across the same link, same sizes. Needs root (else it says so and
# exits 77).
#
#   tests/bench/fabric-netns.sh [BUILDDIR]     env: FAB_BENCH_TIME (s/point, 0.5)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${1:-$here/../..}
top_srcdir=$(cd "$here/../.." && pwd)
bench=$top/tests/bench/pool-bench-fabric
t=${FAB_BENCH_TIME:-0.5}
. "$top_srcdir/tests/cluster/lib.sh"
[ -x "$bench" ] || { echo "fabric-netns.sh: $bench not built (make)" >&2; exit 1; }
CLUSTER_QUIET=1 cluster_create 2 || exit 1
if [ "$CLUSTER_MODE" != netns ]; then
	echo "fabric-netns.sh: network namespaces unavailable (not root?): skipped"
	exit 77
fi
a1=$(cluster_addr 1)
dir=$(cluster_dir 1)
port=13500
ucx=(env UCX_TLS=tcp UCX_NET_DEVICES=eth0)

next() { port=$((port + 1)); }

# perftest TEST SIZE [extra env] -> "MiB/s usec"
perftest() {
	local test=$1 size=$2 n; shift 2
	n=$((268435456 / size)); [ $n -gt 20000 ] && n=20000; [ $n -lt 200 ] && n=200
	next
	cluster_spawn 1 "$dir/pt.log" "${ucx[@]}" "$@" timeout 60 ucx_perftest -p $port >/dev/null
	sleep 0.3
	cluster_exec 2 "${ucx[@]}" "$@" timeout 60 ucx_perftest "$a1" -p $port -t "$test" -s "$size" -n $n 2>/dev/null |
		awk '/^Final:/ { printf "%.1f %.2f\n", $7, $3 }'
}

iperf() { # SIZE -> MiB/s
	next
	cluster_spawn 1 "$dir/iperf.log" timeout 30 iperf3 -s -1 -p $port >/dev/null
	sleep 0.3
	cluster_exec 2 iperf3 -c "$a1" -p $port -t 2 -l "$1" -f M 2>/dev/null |
		awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "MBytes/sec") print $(i - 1) }'
}

fab() { # [bench options] -> the bench's output
	next
	cluster_spawn 1 "$dir/fab.log" "$bench" -t tcp -s -b "$a1" -p $port "$@" >/dev/null
	sleep 0.5
	cluster_exec 2 "$bench" -t tcp -c "$a1" -p $port -T "$t" "$@" 2>&1
}

link() { # [bench options] -> the bench's output, over the checked transport
	next
	cluster_spawn 1 "$dir/fab.log" "$bench" -t link -s -b "$a1" -p $port "$@" >/dev/null
	sleep 0.5
	cluster_exec 2 "$bench" -t link -c "$a1" -p $port -T "$t" "$@" 2>&1
}

col() { awk -v s="$1" -v c="$2" '$1 == s && !seen[$1]++ { print $c }' "$3"; }
lcol() { awk -v s="$1" -v c="$2" 'f && $1 == s { print $c } /lat us/ { f = 1 }' "$3"; }

fab >"$dir/fab.out"
fab -W 1 >"$dir/fab1.out"
echo "# pool-bench fabric across two network namespaces (veth + bridge, UCX tcp on eth0), $(date -u +%FT%TZ)"
echo "## bandwidth MiB/s: fab_get (8 in flight), fab_get_w1 (one at a time), fab_put; pt_* = ucx_perftest; iperf3 single stream"
printf "%-9s %9s %10s %9s %9s %10s %9s %9s\n" size fab_get fab_get_w1 fab_put pt_get pt_get_tun pt_put_bw iperf3
for s in 65536 1048576 4194304; do
	g=$(perftest ucp_get $s | cut -d' ' -f1)
	gt=$(perftest ucp_get $s UCX_TCP_TX_SEG_SIZE=512k UCX_TCP_RX_SEG_SIZE=512k | cut -d' ' -f1)
	p=$(perftest ucp_put_bw $s | cut -d' ' -f1)
	l=$s; [ $l -gt 1048576 ] && l=1048576
	ip=$(iperf $l)
	printf "%-9s %9s %10s %9s %9s %10s %9s %9s\n" $s "$(col $s 2 "$dir/fab.out")" \
		"$(col $s 2 "$dir/fab1.out")" "$(col $s 3 "$dir/fab.out")" "${g:--}" "${gt:--}" "${p:--}" "${ip:--}"
done
echo "## latency us: fab_get (blocking), fab_put (+flush, a round trip); pt_get, pt_put_lat (half a ping-pong)"
printf "%-9s %10s %10s %10s %10s\n" size fab_get pt_get fab_put pt_put_lat
for s in 8 4096; do
	g=$(perftest ucp_get $s | cut -d' ' -f2)
	p=$(perftest ucp_put_lat $s | cut -d' ' -f2)
	printf "%-9s %10s %10s %10s %10s\n" $s "$(lcol $s 2 "$dir/fab.out")" "${g:--}" \
		"$(lcol $s 3 "$dir/fab.out")" "${p:--}"
done

# The checked transport (what poold uses by default) against UCX's
# one-sided path on the same link, runs alternated, best of AB_RUNS (3).
. "$here/ab.sh"
for _ in $(seq "${AB_RUNS:-3}"); do
	fab >>"$dir/ab.rma"
	link >>"$dir/ab.link"
	fab -W 1 >>"$dir/ab1.rma"
	link -W 1 >>"$dir/ab1.link"
done
echo "## checked links (link_*) vs UCX one-sided (rma_*) across the namespaces, MiB/s, best of ${AB_RUNS:-3}"
echo "##   alternated runs; 8 in flight, and _w1 one at a time"
ab_tables "65536 1048576 4194304" "8 4096" "$dir/ab.rma" "$dir/ab.link" "$dir/ab1.rma" "$dir/ab1.link"

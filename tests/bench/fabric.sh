#!/bin/sh
# fabric.sh - pool-bench fabric: fabric/ put/get next to raw UCX
# (ucx_perftest), iperf3 single-stream and memcpy, in one run, same sizes;
# then the checked transport (link*.c, what poold uses by default) against
# UCX's one-sided path over TCP (fabric.transfer = rma), runs alternated.
#
#   tests/bench/fabric.sh [BUILDDIR]      (default: the directory above tests/)
#   env: FAB_BENCH_TIME (seconds per point, default 0.5), FAB_PORT (13400)
# Needs ucx_perftest (ucx-utils) and iperf3; all traffic on 127.0.0.1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${1:-$here/../..}
bench=$top/tests/bench/pool-bench-fabric
t=${FAB_BENCH_TIME:-0.5}
port=${FAB_PORT:-13400}
bw_sizes="4096 16384 65536 262144 1048576 4194304"
lat_sizes="8 64 512 4096"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT INT TERM

[ -x "$bench" ] || { echo "fabric.sh: $bench not built (make)" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# a fresh port per server: callers run in $(...) subshells, so count in a file
echo "$port" >"$tmp/port"
next_port() { p=$(($(cat "$tmp/port") + 1)); echo $p >"$tmp/port"; echo $p; }

# perftest TEST SIZE ENV... -> "bw_MiBps lat_us" (overall bandwidth, typical latency)
perftest() {
	test=$1 size=$2; shift 2
	n=$((268435456 / size)); [ $n -gt 20000 ] && n=20000; [ $n -lt 200 ] && n=200
	port=$(next_port)
	env "$@" timeout 60 ucx_perftest -p $port >/dev/null 2>&1 &
	srv=$!
	sleep 0.3
	env "$@" timeout 60 ucx_perftest 127.0.0.1 -p $port -t "$test" -s "$size" -n $n 2>/dev/null |
		awk '/^Final:/ { printf "%.1f %.2f\n", $7, $3 }'
	wait $srv 2>/dev/null
}

iperf() { # SIZE -> MiB/s receiver
	port=$(next_port)
	timeout 30 iperf3 -s -1 -p $port >/dev/null 2>&1 &
	srv=$!
	sleep 0.3
	iperf3 -c 127.0.0.1 -p $port -t 2 -l "$1" -f M 2>/dev/null |
		awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "MBytes/sec") print $(i - 1) }'
	wait $srv 2>/dev/null
}

col() { awk -v s="$1" -v c="$2" '$1 == s && !seen[$1]++ { print $c }' "$3"; }
lcol() { awk -v s="$1" -v c="$2" 'f && $1 == s { print $c } /lat us/ { f = 1 }' "$3"; }

echo "# pool-bench fabric: $(date -u +%FT%TZ) $(uname -n) $(nproc) cpus, $(ucx_info -v 2>/dev/null | sed -n 's/.*[Vv]ersion[ =]*\([0-9.]*\).*/ucx \1/p' | head -1)"
for mode in tcp shm; do
	if [ $mode = tcp ]; then
		set -- UCX_TLS=tcp UCX_NET_DEVICES=lo
		tuned="UCX_TCP_TX_SEG_SIZE=512k UCX_TCP_RX_SEG_SIZE=512k"
	else
		set -- UCX_TLS=posix,cma,self
		tuned=""
	fi
	"$bench" -t $mode -T "$t" >"$tmp/fab.$mode" 2>"$tmp/fab.$mode.err" ||
		{ echo "pool-bench-fabric -t $mode failed:"; cat "$tmp/fab.$mode.err"; }
	"$bench" -t $mode -T "$t" -W 1 >"$tmp/fab1.$mode" 2>&1
	"$bench" -t $mode -T "$t" -R >"$tmp/fabr.$mode" 2>&1
	echo
	head -1 "$tmp/fab.$mode"
	echo "## $mode bandwidth, MiB/s. fab_* = pool-bench-fabric (8 ops in flight; _w1 = one at a time;"
	echo "##   _reg = target memory from fab_mem_register instead of fab_mem_alloc); pt_* = ucx_perftest"
	echo "##   (pt_get_tun with UCX_TCP_{TX,RX}_SEG_SIZE=512k); iperf3 -l min(size,1M) single stream; memcpy in one process"
	printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n" size fab_get fab_get_w1 fab_get_reg pt_get pt_get_tun fab_put pt_put_bw iperf3 memcpy
	for s in $bw_sizes; do
		g=$(perftest ucp_get $s "$@" | cut -d' ' -f1)
		if [ -n "$tuned" ]; then gt=$(perftest ucp_get $s "$@" $tuned | cut -d' ' -f1); else gt=-; fi
		p=$(perftest ucp_put_bw $s "$@" | cut -d' ' -f1)
		l=$s; [ $l -gt 1048576 ] && l=1048576 # iperf3's largest TCP block
		if [ $mode = tcp ] && have iperf3; then ip=$(iperf $l); else ip=-; fi
		printf "%-9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n" $s \
			"$(col $s 2 "$tmp/fab.$mode")" "$(col $s 2 "$tmp/fab1.$mode")" "$(col $s 2 "$tmp/fabr.$mode")" \
			"${g:--}" "${gt:--}" \
			"$(col $s 3 "$tmp/fab.$mode")" "${p:--}" "${ip:--}" "$(col $s 4 "$tmp/fab.$mode")"
	done
	echo "## $mode latency, us (fab_get = blocking fab_get; fab_put = fab_put + fab_flush (round trip);"
	echo "##   pt_get = ucp_get typical; pt_put_lat = ucp_put_lat typical, which is half a ping-pong)"
	printf "%-9s %10s %10s %10s %10s\n" size fab_get pt_get fab_put pt_put_lat
	for s in $lat_sizes; do
		g=$(perftest ucp_get $s "$@" | cut -d' ' -f2)
		p=$(perftest ucp_put_lat $s "$@" | cut -d' ' -f2)
		printf "%-9s %10s %10s %10s %10s\n" $s "$(lcol $s 2 "$tmp/fab.$mode")" "${g:--}" \
			"$(lcol $s 3 "$tmp/fab.$mode")" "${p:--}"
	done
done

# The checked transport against UCX's one-sided path, both over TCP on
# loopback, runs alternated (rma, link, rma, link...), best of AB_RUNS (3).
. "$here/ab.sh"
for _ in $(seq "${AB_RUNS:-3}"); do
	"$bench" -t tcp -T "$t" >>"$tmp/ab.rma" 2>&1
	"$bench" -t link -T "$t" >>"$tmp/ab.link" 2>&1
	"$bench" -t tcp -T "$t" -W 1 >>"$tmp/ab1.rma" 2>&1
	"$bench" -t link -T "$t" -W 1 >>"$tmp/ab1.link" 2>&1
done
echo
echo "## checked links (link_*) vs UCX one-sided (rma_*) over TCP loopback, MiB/s, best of ${AB_RUNS:-3}"
echo "##   alternated runs; 8 in flight, and _w1 one at a time"
ab_tables "$bw_sizes" "$lat_sizes" "$tmp/ab.rma" "$tmp/ab.link" "$tmp/ab1.rma" "$tmp/ab1.link"

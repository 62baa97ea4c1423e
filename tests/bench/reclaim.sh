#!/bin/bash
# pool-bench reclaim: a reclaim of 1 GiB and the loops of the poolds it
# involves. A 3-node cluster (network namespaces, UCX over TCP): a pinned
# region of RECLAIM_SIZE (1G) on node 2, written; then `poolctl reclaim 2`
# of all node 2 lends, which moves the region to node 3 (its bytes copied
# through the coordinator, node 1, 4 MiB at a time) and has node 2 scrub
# the old extent, while pool-kvload probe times pool_status() round trips
# to each of the three poolds back to back. Printed: how long the reclaim
# took, each prober's answers, median, p99 and longest wait (ms), and
# whether the region reads back the bytes written. With RECLAIM_BASE=DIR
# (another build tree) the same runs first on that build's poold.
#   tests/bench/pool-bench reclaim [BUILDDIR]
set -u
top_builddir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_builddir top_srcdir
. "$top_srcdir/tests/cluster/pool.sh"
finish() { :; }
IO="$top_builddir/tests/tools/pool-io"
KL="$top_builddir/tests/tools/pool-kvload"
size=$(numfmt --from=iec "${RECLAIM_SIZE:-1G}")
lend=$((size * 3 / 2 >> 20))M
builds=("$top_builddir")
[ -n "${RECLAIM_BASE:-}" ] && builds=("$(cd "$RECLAIM_BASE" && pwd)" "$top_builddir")
io() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$IO" "$@"; }
label() { [ "$1" = "$top_builddir" ] && echo this || echo base; }

echo "# pool-bench reclaim: $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs, a region of ${RECLAIM_SIZE:-1G}"
printf "%-6s %10s %-6s %9s %8s %8s %8s %s\n" build reclaim_ms poold probes median p99 max intact
for b in "${builds[@]}"; do
	POOLD=$b/daemon/poold
	cluster_create 3 || exit 1
	pool_node_start 1 -o lend.size=64M || exit 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	for i in 2 3; do pool_node_start "$i" -o "lend.size=$lend" || exit 1; done
	for i in 2 3; do pool_wait_state 1 "h$i" up 20 || exit 1; done
	io 1 create big "$size" node=2 >/dev/null || echo "reclaim.sh: the create failed" >&2
	sum=$(io 2 write big 7 | awk '{ print $NF }')
	probers=()
	for i in 1 2 3; do
		POOL_SOCKET=$(pool_sock "$i") "$KL" probe >"$CLUSTER_TMP/probe$i" 2>/dev/null &
		probers+=($!)
	done
	sleep 0.5
	t0=$(date +%s%N)
	pctl 1 reclaim 2 "$lend" >"$CLUSTER_TMP/out" 2>&1 || { echo "reclaim.sh: the reclaim failed:" >&2; cat "$CLUSTER_TMP/out" >&2; }
	t1=$(date +%s%N)
	sleep 2 # (the old extent's scrub on node 2)
	kill -INT "${probers[@]}"
	wait "${probers[@]}"
	intact=no
	[ "$(io 3 read big 7 | awk '{ print $NF }')" = "$sum" ] && intact=yes
	for i in 1 2 3; do
		read -r _ n _ med _ p99 _ max <"$CLUSTER_TMP/probe$i"
		printf "%-6s %10s %-6s %9s %8s %8s %8s %s\n" "$(label "$b")" $(((t1 - t0) / 1000000)) "h$i" \
			"$n" "$med" "$p99" "$max" "$intact"
	done
	cluster_destroy
done

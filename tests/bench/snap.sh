#!/bin/bash
# snap.sh - pool-bench snap: restoring 256 MiB and 1 GiB snapshots through
# the pool, next to reading and mapping the same image file from the page
# cache in the same run (tests/bench/bench_snap.c says what each row is).
#
#  1. One node: a private poold lending 3G; the snapshot's pages are in its
#     own arena, so "from the store" is a memcpy out of the lender's memory.
#     Then a clone saved after writing 0, 10, 100 MiB and a quarter of it
#     (pool-bench-snap save), beside a memcpy of those bytes; and a
#     sandbox's life: saved, forked 50 ways, woken from the store
#     (pool-bench-snap lifecycle); 50 processes forking it at once. The
#     same saves of a VMM served by snap serve --track (tests/tools/fc-client,
#     restoring as Firecracker does), and 1,000 idle clones' memory
#     (pool-bench-snap density). CubeSandbox's published figures last.
#  2. Two hosts in network namespaces (UCX tcp over veth + bridge): the
#     snapshot put from host 2, which lends nothing, so its pages live on
#     host 1; the benchmark on host 2: its first clone and its lazy
#     restores "from the store" fetch every page over the fabric.
#  3. Four hosts making 7,500 sandboxes each at once (snap-fleet.sh).
#
#   tests/bench/snap.sh [BUILDDIR]
# env: SNAP_BENCH_SIZES (MiB, default "256 1024"), SNAP_BENCH_WS (percent of
# the pages in the working set, 10), SNAP_BENCH_CLASSES (snapshot classes of
# part 1, "pinned shared"). Needs root for part 2.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
export top_srcdir top_builddir
bench=$top_builddir/tests/bench/pool-bench-snap
FC=$top_builddir/tests/tools/fc-client
mkimg=$top_builddir/tests/tools/pool-snap
POOLD=$top_builddir/daemon/poold
POOLCTL=$top_builddir/cli/poolctl
sizes=${SNAP_BENCH_SIZES:-256 1024}
wspct=${SNAP_BENCH_WS:-10}
# pinned: dedup within a uid (XXH3 keys); shared: across uids (SHA-256 keys,
# each page hashed again by poold at its commit): the cost of the check.
classes=${SNAP_BENCH_CLASSES:-pinned shared}
for b in "$bench" "$mkimg" "$POOLD" "$POOLCTL" "$FC"; do
	[ -x "$b" ] || { echo "snap.sh: $b not built (make)" >&2; exit 1; }
done

sn=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-snap.XXXXXX")
spid=''
single_stop() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	spid=''
}
trap 'single_stop; rm -rf -- "$sn"' EXIT
trap 'exit 130' INT TERM HUP

# vmm_saves NAME MIB...: a VMM restored from NAME by snap serve --track
# writes MIB MiB and is saved (poolctl snap save), for each MIB: how long
# the VMM was held, and how long the store took after.
vmm_saves() {
	local name=$1 mib sock=$sn/vm.sock vmm spid_serve t0 out held wall; shift
	"$POOLCTL" snap serve "$name" "$sock" --track >"$sn/serve.out" 2>"$sn/serve.err" &
	spid_serve=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
	echo "  VMM saved (snap serve --track, a Firecracker-like VMM): MiB written, held ms, read and stored after, ms"
	for mib in "$@"; do
		rm -f "$sn/vm.in"; mkfifo "$sn/vm.in"
		"$FC" --timeout 600 --rounds 1 --write $((mib * 256)) "$sock" \
			"$(($("$POOLCTL" snap info "$name" | awk '/^pages:/ { print $2 }') * 4096))" \
			<"$sn/vm.in" >"$sn/vm.out" 2>&1 &
		vmm=$!
		exec 8>"$sn/vm.in"
		for _ in $(seq 1200); do grep -q '^round 1' "$sn/vm.out" && break; sleep 0.1; done
		t0=$(date +%s%N)
		out=$("$POOLCTL" snap save "$sock" "$vmm" "$name.vm$mib") || { echo "$out"; cat "$sn/serve.err"; }
		wall=$((($(date +%s%N) - t0) / 1000000))
		held=$(sed -n 's/.*held \([0-9.]*\) ms.*/\1/p' <<<"$out")
		printf "  %8s MiB %10s ms %10s ms\n" "$mib" "$held" "$((wall - ${held%.*}))"
		exec 8>&-; wait "$vmm"
		"$POOLCTL" snap rm "$name.vm$mib" >/dev/null
	done
	kill "$spid_serve"; wait "$spid_serve" 2>/dev/null
}

echo "# pool-bench snap, $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs"
echo
# Images: 30% zero pages, the rest random.
for mib in $sizes; do
	"$mkimg" mkimg "$sn/img$mib" "$mib" "$mib" 0 0 30 || exit 1
done

"$POOLD" -d -o "runtime_dir=$sn/run" -o lend.size=3G >"$sn/poold.log" 2>&1 &
spid=$!
for _ in $(seq 200); do [ -S "$sn/run/poold.sock" ] && break; sleep 0.05; done
[ -S "$sn/run/poold.sock" ] || { echo "snap.sh: poold did not start"; cat "$sn/poold.log"; exit 1; }
export POOL_SOCKET=$sn/run/poold.sock
echo "## one node (poold lending 3G): the snapshot's pages in this node's arena"
for mib in $sizes; do
	for cls in $classes; do
		t0=$(date +%s%N)
		"$POOLCTL" snap put "img$mib" "$sn/img$mib" class="$cls" >/dev/null ||
			{ cat "$sn/poold.log"; exit 1; }
		echo "class $cls, put: $((($(date +%s%N) - t0) / 1000000)) ms"
		"$bench" "img$mib" "$sn/img$mib" "$wspct" || { cat "$sn/poold.log"; exit 1; }
		if [ "$cls" = pinned ]; then
			"$bench" save "img$mib" 0 10 100 $((mib / 4)) || { cat "$sn/poold.log"; exit 1; }
			"$bench" lifecycle "img$mib" 10 50 || { cat "$sn/poold.log"; exit 1; }
			"$bench" forks "img$mib" 50 || { cat "$sn/poold.log"; exit 1; }
			vmm_saves "img$mib" 0 10 100 $((mib / 4))
			"$bench" density "img$mib" 1000 16 4 || { cat "$sn/poold.log"; exit 1; }
		fi
		"$POOLCTL" snap rm "img$mib" >/dev/null
		echo
	done
done
unset POOL_SOCKET
single_stop

cluster_part() {
	. "$top_srcdir/tests/cluster/pool.sh"
	CLUSTER_QUIET=1 cluster_create 2 || return 1
	if [ "$CLUSTER_MODE" != netns ]; then
		echo "snap.sh: network namespaces unavailable (not root?): cluster part skipped"
		return 0
	fi
	pool_node_start 1 -o lend.size=3G
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	pool_node_start 2 -o lend.size=0
	pool_wait_state 1 h2 up 20 || { echo "h2 did not join"; pool_cluster_logs; return 1; }
	echo "## 2 hosts in network namespaces (veth + bridge, UCX tcp): the benchmark on host 2 (lends 0), the pages on host 1"
	for mib in $sizes; do
		pctl 2 snap put "img$mib" "$sn/img$mib" >/dev/null || { pool_cluster_logs; return 1; }
		cluster_exec 2 timeout 600 env POOL_SOCKET="$(pool_sock 2)" "$bench" "img$mib" \
			"$sn/img$mib" "$wspct" || { pool_cluster_logs; return 1; }
		pctl 2 snap rm "img$mib" >/dev/null
		echo
	done
}
cluster_part
echo
"$here/snap-fleet.sh" "$top_builddir"
echo
echo "## reference: CubeSandbox's published figures (2 GiB guests), not measured here"
echo "  create from a snapshot 64 ms serial, 3.6 ms each at 50 at once;"
echo "  snapshot of a running sandbox 46 ms + about 40 ms per 100 MB written (soft-dirty);"
echo "  clone of a running sandbox 220 ms, 5.4 ms each at 50 at once; about 25 MB per idle sandbox at 1,000"

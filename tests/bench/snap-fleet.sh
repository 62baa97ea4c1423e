#!/bin/bash
# snap-fleet.sh - part of pool-bench snap: sandboxes at fleet scale. Four
# hosts in network namespaces (UCX tcp over veth + bridge); a snapshot put
# from host 2 has its pages spread over the lenders; then every host at
# once makes SNAP_FLEET_PER_HOST sandboxes from it (pool-bench-snap fleet:
# lazy clones, the first on each host filling that host's copy, and every
# 250th a lazy restore fetched from the store). Prints each host's figures
# and the time from the start of all to the last sandbox usable.
#
#   tests/bench/snap-fleet.sh [BUILDDIR]
# env: SNAP_FLEET_PER_HOST (7500), SNAP_FLEET_MIB (image size, 64). Root.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
export top_srcdir top_builddir
bench=$top_builddir/tests/bench/pool-bench-snap
mkimg=$top_builddir/tests/tools/pool-snap
per_host=${SNAP_FLEET_PER_HOST:-7500}
mib=${SNAP_FLEET_MIB:-64}
. "$top_srcdir/tests/cluster/pool.sh"
CLUSTER_QUIET=1 cluster_create 4 || exit 1
if [ "$CLUSTER_MODE" != netns ]; then
	echo "snap-fleet.sh: network namespaces unavailable (not root?): skipped"
	exit 0
fi
pool_node_start 1 -o lend.size=1G
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
for i in 2 3 4; do pool_node_start "$i" -o lend.size=1G; done
for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || { pool_cluster_logs; exit 1; }; done
"$mkimg" mkimg "$CLUSTER_TMP/fleet.img" "$mib" 7 0 0 30 || exit 1
pctl 2 snap put fleet "$CLUSTER_TMP/fleet.img" mode=0644 >/dev/null || { pool_cluster_logs; exit 1; }
echo "## fleet: 4 hosts, $per_host sandboxes each at once from a $mib MiB snapshot" \
	"(lazy clones, every 250th a lazy restore from the store)"
t0=$(date +%s.%N)
for i in 1 2 3 4; do
	cluster_exec "$i" timeout 600 env POOL_SOCKET="$(pool_sock "$i")" "$bench" fleet fleet \
		"$per_host" 250 >"$CLUSTER_TMP/fleet.$i" 2>&1 &
done
wait
bad=0
for i in 1 2 3 4; do
	echo "host $i: $(cat "$CLUSTER_TMP/fleet.$i")"
	grep -q '^fleet: ' "$CLUSTER_TMP/fleet.$i" || bad=1
done
[ "$bad" -eq 0 ] || { pool_cluster_logs; exit 1; }
last=$(sed -n 's/.*done at \([0-9.]*\)$/\1/p' "$CLUSTER_TMP"/fleet.* | sort -n | tail -1)
python3 -c 'import sys; print("%d sandboxes on 4 hosts: the last usable %.0f ms after all started" %
	(4 * int(sys.argv[3]), (float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$t0" "$last" "$per_host"

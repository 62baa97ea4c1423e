# tests/integration/etcdlib.sh - sourced by the tests of the etcd client and
# the election, after lib.sh: a cluster of three etcd members on loopback
# (Debian's etcd-server), started by etcd_cluster and killed when the test
# exits, with whatever the test started in the background (BG_PIDS).
#
# After etcd_cluster: CLIENTS[1..3] the members' client URLs, ETCD_PID[1..3]
# their processes, ALL the three URLs as one endpoint list. ETCD_FLAGS, set
# before, adds flags to each member's command line.

ETCD_BIN=$(command -v etcd || true)
BG_PIDS=()
declare -a CLIENTS ETCD_PID ETCD_PEERS
ETCD_FLAGS=("${ETCD_FLAGS[@]}")
ETCD_CLIENT_OPS=("${ETCD_CLIENT_OPS[@]}")

etcd_stop_all() {
	local p
	for p in "${ETCD_PID[@]}" "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap 'etcd_stop_all; pool_cleanup' EXIT

# kill_now PID...: SIGKILL and reap, without the shell's word about it.
kill_now() {
	{ kill -KILL "$@"; wait "$@"; } 2>/dev/null
}

# etcd_member_start I: start member I (again, after kill_now: it keeps its data).
etcd_member_start() {
	"$ETCD_BIN" --name "m$1" --data-dir "$TEST_DIR/m$1" \
		--listen-client-urls "${CLIENTS[$1]}" --advertise-client-urls "${CLIENTS[$1]}" \
		--listen-peer-urls "${ETCD_PEERS[$1]}" --initial-advertise-peer-urls "${ETCD_PEERS[$1]}" \
		--initial-cluster "$ETCD_INITIAL" --initial-cluster-state new \
		--heartbeat-interval 100 --election-timeout 1000 "${ETCD_FLAGS[@]}" \
		>>"$TEST_DIR/m$1.log" 2>&1 &
	ETCD_PID[$1]=$!
}

# etcd_cluster: three members; with ETCD_SCHEME=https, TLS client URLs (ETCD_FLAGS then
# names the certificates, and ETCD_CLIENT_OPS the pool-etcd operations that set up TLS).
etcd_cluster() {
	local i
	if [ -z "$ETCD_BIN" ]; then
		echo "etcd is not installed (Debian's etcd-server): scripts/test.sh installs it" >&2
		exit 1
	fi
	ETCD_INITIAL=
	for i in 1 2 3; do
		CLIENTS[$i]="${ETCD_SCHEME:-http}://127.0.0.1:$(free_port)"
		ETCD_PEERS[$i]="http://127.0.0.1:$(free_port)"
		ETCD_INITIAL+="${ETCD_INITIAL:+,}m$i=${ETCD_PEERS[$i]}"
	done
	for i in 1 2 3; do etcd_member_start "$i"; done
	ALL="${CLIENTS[1]},${CLIENTS[2]},${CLIENTS[3]}"
	for _ in $(seq 100); do
		"$top_builddir/tests/tools/pool-etcd" "$ALL" "${ETCD_CLIENT_OPS[@]}" put:/ready=1 \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "the etcd cluster did not come up" >&2
	return 1
}

# tests/cluster/pool.sh - run poolds on a cluster made by lib.sh.
#
# Host 1 runs the coordinator (peer listener on its address, port 7400);
# the others join it. Each poold has its own runtime directory and log in
# the host's scratch directory and speaks UCX over TCP only.

. "${top_srcdir:-.}/tests/cluster/lib.sh"
. "${top_srcdir:-.}/tests/tap.sh"
: "${top_builddir:=.}"
POOLD="$top_builddir/daemon/poold"
POOLCTL="$top_builddir/cli/poolctl"
POOL_HB=${POOL_HB:-500ms}
POOL_SECRET=${POOL_SECRET:-cluster-test-secret}
POOL_PIDS=()

pool_coord_addr() { echo "$(cluster_addr 1):$(cluster_port 1 7400)"; }
pool_sock() { echo "$(cluster_dir "$1")/run/poold.sock"; }
# pool_metrics_at I: where host I's poold serves its metrics, when started
# with -o metrics.listen=$(pool_metrics_at I).
pool_metrics_at() { echo "$(cluster_addr "$1"):$(cluster_port "$1" 9400)"; }
# pool_metric I NAME: host I's sample of a metric (by its full name and labels).
pool_metric() {
	cluster_exec "$1" python3 -c 'import sys, urllib.request
for line in urllib.request.urlopen("http://" + sys.argv[1] + "/metrics", timeout=10).read().decode().splitlines():
    if line.split(" ")[0] == sys.argv[2]:
        print(line.split(" ")[1])' "$(pool_metrics_at "$1")" "$2"
}

# pool_node_start I [poold -o options...]: start poold on host I; with
# POOL_PMEM=SIZE set, it lends a pmem tier of that size too; POOL_OPTS adds
# options to every poold (word-split), POOL_NODE_OPTS names a function that
# prints more for host I (word-split), POOL_LOG_LEVEL sets log.level.
pool_node_start() {
	local i=$1 dir role pmem=(); shift
	dir=$(cluster_dir "$i")
	mkdir -p "$dir/run"
	if [ "$i" -eq 1 ]; then
		role=(-o role=coordinator -o "peer.listen=$(pool_coord_addr)")
	else
		role=(-o role=node -o "coordinator=$(pool_coord_addr)")
	fi
	[ -n "${POOL_PMEM:-}" ] && pmem=(-o "pmem.path=$dir/pmem" -o "pmem.size=$POOL_PMEM")
	POOL_PIDS[$i]=$(cluster_spawn "$i" "$dir/poold.log" "$POOLD" -d \
		-o "runtime_dir=$dir/run" -o "node.name=h$i" -o "node.id=$i" -o "heartbeat.interval=$POOL_HB" \
		-o "peer.secret=$POOL_SECRET" -o fabric.transports=tcp -o log.level=${POOL_LOG_LEVEL:-info} "${role[@]}" "${pmem[@]}" ${POOL_OPTS:-} \
		${POOL_NODE_OPTS:+$("$POOL_NODE_OPTS" "$i")} "$@")
}

# pool_node_kill I [SIGNAL]: signal host I's poold (SIGKILL by default); a
# SIGKILL returns once the process is gone (a zombie), up to 60 s: a poold
# gives its memory back and holds its pid file until then, so one started
# again at once would find the file still locked.
pool_node_kill() {
	local pid=${POOL_PIDS[$1]} sig=${2:-KILL} state
	cluster_kill "$pid" "$sig" || return 1
	[ "$sig" = KILL ] || return 0
	for _ in $(seq 600); do
		state=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null) || return 0
		[ "$state" = Z ] && return 0
		sleep 0.1
	done
}

# pctl I ARGS...: poolctl against host I's poold, run inside host I.
pctl() { local i=$1; shift; cluster_exec "$i" "$POOLCTL" -s "$(pool_sock "$i")" "$@"; }

# pool_wait_state I NODE-NAME STATE SECONDS: poll host I's view until NODE is in STATE.
pool_wait_state() {
	local i=$1 name=$2 state=$3 deadline=$((SECONDS + $4))
	while [ $SECONDS -le $deadline ]; do
		pctl "$i" --json nodes 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(n["name"] == sys.argv[1] and n["state"] == sys.argv[2] for n in d["nodes"]) else 1)
' "$name" "$state" 2>/dev/null && return 0 # (no answer yet: not JSON)
		sleep 0.1
	done
	return 1
}

# pool_cluster_start N: a cluster of N poolds, all up.
pool_cluster_start() {
	local n=$1 i
	cluster_create "$n" || return 1
	pool_node_start 1 || return 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	for i in $(seq 2 "$n"); do pool_node_start "$i" || return 1; done
	for i in $(seq 2 "$n"); do pool_wait_state 1 "h$i" up 20 || { echo "h$i did not join"; return 1; }; done
}

# pool_known_abort: print the first host whose poold aborted on the UCX
# 1.13 wireup assertion (a peer killed while UCX was still setting up an
# endpoint; fixed upstream by openucx/ucx pull request 8175); false if none.
pool_known_abort() {
	local i
	for i in $(seq "$CLUSTER_N"); do
		if grep -q "ucp_request.c:[0-9]*  *Assertion .*got RE[PQ] message" \
			"$(cluster_dir "$i")/poold.log" 2>/dev/null; then
			echo "h$i"
			return 0
		fi
	done
	return 1
}

# pool_kv_shard I FIELD: a field of host I's kv_shards status (0 when absent).
pool_kv_shard() {
	pctl "$1" --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["kv_shards"].get(sys.argv[1], 0))' "$2"
}

# pool_kv_settled SECONDS HOSTS...: until no shard of hosts HOSTS is arriving,
# leaving or waiting for its backup's whole copy; false after SECONDS.
pool_kv_settled() {
	local deadline=$((SECONDS + $1)) i m
	shift
	while [ $SECONDS -le $deadline ]; do
		m=0
		for i in "$@"; do
			[ "$(pool_kv_shard "$i" arriving) $(pool_kv_shard "$i" leaving) $(pool_kv_shard "$i" unbacked)" = "0 0 0" ] &&
				m=$((m + 1))
		done
		[ $m = $# ] && return 0
		sleep 0.2
	done
	return 1
}

# Show the poolds' logs of a failed test.
pool_cluster_logs() {
	local i
	for i in $(seq "$CLUSTER_N"); do
		echo "--- h$i poold.log"; tail -n 30 "$(cluster_dir "$i")/poold.log"
	done
}

# tests/integration/lib.sh - helpers for the shell integration tests.
#
# Each test sources this, calls pool_start to run its own poold in a private
# directory, and gets the daemon stopped and the directory removed on exit.

set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
POOLD="$top_builddir/daemon/poold"
POOLCTL="$top_builddir/cli/poolctl"
TEST_NAME=$(basename "$0" .sh)
TEST_DIR=$(mktemp -d "/tmp/pool-$TEST_NAME.XXXXXX")
POOL_SOCKET="$TEST_DIR/run/poold.sock"
export POOL_SOCKET
POOLD_PID=
. "$top_srcdir/tests/tap.sh"

pool_cleanup() {
	if [ -n "$POOLD_PID" ] && kill -0 "$POOLD_PID" 2>/dev/null; then
		kill -TERM "$POOLD_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$POOLD_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$POOLD_PID" 2>/dev/null
	fi
	# The fabric rules of poolds killed here (a clean stop removes its own).
	if [ -f "$TEST_DIR/poold.log" ] && command -v nft >/dev/null; then
		for t in $(grep -o 'table inet poold_fabric_[0-9a-f]*' "$TEST_DIR/poold.log" | sort -u | cut -d' ' -f3); do
			nft delete table inet "$t" 2>/dev/null
		done
	fi
	[ -n "$REMOTE_NS" ] && ip netns del "$REMOTE_NS" 2>/dev/null
	hugepages_restore
	if [ "$FAILS" -gt 0 ] && [ -f "$TEST_DIR/poold.log" ]; then
		echo "--- poold.log"; tail -n 40 "$TEST_DIR/poold.log"
	fi
	rm -rf "$TEST_DIR"
}
trap pool_cleanup EXIT
trap 'exit 130' INT TERM

# hugepages_set N: vm.nr_hugepages to N (2 MiB pages, where the kernel has
# them), until hugepages_restore (or the end of the test) puts back what it
# was. vm.nr_hugepages is the machine's: the tests that change it take turns
# (a lock on the file itself), or under make -j one would take or free
# another's pages.
hugepages_set() {
	[ -r /proc/sys/vm/nr_hugepages ] || return 0 # no hugetlbfs: the tests skip
	if [ -z "${HUGEPAGES_WAS:-}" ]; then
		exec {HUGEPAGES_LOCK}</proc/sys/vm/nr_hugepages
		flock "$HUGEPAGES_LOCK"
		HUGEPAGES_WAS=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	fi
	{ echo "$1" >/proc/sys/vm/nr_hugepages; } 2>/dev/null
}
# hugepages_add N: N more than it was.
hugepages_add() { hugepages_set $(($(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0) + $1)); }
hugepages_free() { awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo; }
hugepages_restore() {
	[ -n "${HUGEPAGES_WAS:-}" ] || return 0
	{ echo "$HUGEPAGES_WAS" >/proc/sys/vm/nr_hugepages; } 2>/dev/null
	HUGEPAGES_WAS=
	exec {HUGEPAGES_LOCK}>&-
}

# check DESCRIPTION COMMAND...: the command must succeed.
check() {
	local what=$1; shift
	if "$@" >"$TEST_DIR/out" 2>&1; then ok "$what"; else not_ok "$what"; sed 's/^/  | /' "$TEST_DIR/out"; fi
}

# check_exit CODE DESCRIPTION COMMAND...: the command must exit with CODE.
check_exit() {
	local want=$1 what=$2 rc; shift 2
	"$@" >"$TEST_DIR/out" 2>&1; rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$what"; else
		not_ok "$what (exit $rc, wanted $want)"; sed 's/^/  | /' "$TEST_DIR/out"; fi
}

# check_out PATTERN DESCRIPTION: the last command's output must match PATTERN (grep -E).
check_out() {
	if grep -Eq -- "$1" "$TEST_DIR/out"; then ok "$2"; else
		not_ok "$2 (no /$1/ in output)"; sed 's/^/  | /' "$TEST_DIR/out"; fi
}

# pool_start [poold args...]: start poold in the foreground with a private runtime dir;
# POOLD_WRAP, when set, is a command poold runs under (word-split: setpriv ...).
# free_port: a TCP port of loopback nobody listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listen PORT: until something listens on loopback's PORT (10 s at most).
wait_listen() {
	local _
	for _ in $(seq 200); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# remote_up: a network namespace that plays other hosts, joined to this one
# by a veth pair: commands run there with ip netns exec "$REMOTE_NS" reach
# this host at REMOTE_HOST from either of REMOTE_ADDRS. False where it
# cannot be made (not root, no netns or veth); removed at exit.
REMOTE_NS=
remote_up() {
	local net=10.214.$((RANDOM % 200 + 20)) ns=pt$$
	ip netns add "$ns" 2>/dev/null || return 1
	REMOTE_NS=$ns
	ip link add "${ns}h" type veth peer name "${ns}r" netns "$ns" 2>/dev/null &&
		ip addr add "$net.1/24" dev "${ns}h" && ip link set "${ns}h" up &&
		ip -n "$ns" addr add "$net.2/24" dev "${ns}r" && ip -n "$ns" addr add "$net.3/24" dev "${ns}r" &&
		ip -n "$ns" link set "${ns}r" up && ip -n "$ns" link set lo up || return 1
	REMOTE_HOST=$net.1 REMOTE_ADDRS="$net.2 $net.3"
}

pool_start() {
	mkdir -p "$TEST_DIR/run"
	# shellcheck disable=SC2086
	${POOLD_WRAP:-} "$POOLD" -d -o runtime_dir="$TEST_DIR/run" "$@" >>"$TEST_DIR/poold.log" 2>&1 &
	POOLD_PID=$!
	pool_wait_socket
}

pool_wait_socket() {
	for _ in $(seq 100); do
		[ -S "$POOL_SOCKET" ] && "$POOLCTL" status >/dev/null 2>&1 && return 0
		kill -0 "$POOLD_PID" 2>/dev/null || { echo "poold exited:"; cat "$TEST_DIR/poold.log"; return 1; }
		sleep 0.05
	done
	echo "poold did not come up"; return 1
}

# pool_stop: SIGTERM poold and wait for it; fails if it does not exit cleanly.
pool_stop() {
	local rc
	kill -TERM "$POOLD_PID" || return 1
	wait "$POOLD_PID"; rc=$?
	POOLD_PID=
	return $rc
}

pool_alive() { kill -0 "$POOLD_PID" 2>/dev/null; }

# ns_holds NS EXPR: the KV namespace's `kv stats --json` (as n) satisfy the Python expression EXPR.
ns_holds() {
	"$POOLCTL" --json kv stats "$1" >"$TEST_DIR/out" &&
		python3 -c 'import json, sys
n = json.load(open(sys.argv[1]))["namespaces"][0]
assert eval(sys.argv[2]), n' "$TEST_DIR/out" "$2"
}

# Finish: print a summary line and exit non-zero on any failure.
pool_done() {
	echo "$TEST_NAME: $PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

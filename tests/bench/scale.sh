#!/bin/bash
# scale.sh - pool-bench scale: what size costs a poold, each figure next to
# its baseline from the same run.
#
#  1. Membership: N nodes of pool-fake-nodes (the real peer protocol, with
#     the peer secret, each from a loopback address of its own) join one
#     coordinator: the time until the last joined, the frames and bytes the
#     nodes got meanwhile beside what one frame per join per member would
#     be (N(N-1)/2 member events and N RegisterReplies), the coordinator's
#     CPU time and its memory per node.
#  2. Region create + map + close + destroy (4 KiB, local) on a fresh arena
#     and on one where 512 MiB were written and freed, without and with the
#     coordinator's journal.
#
# With SCALE_BASE=DIR (another build tree) every point runs on that build's
# poold too, alternated, as the baseline.
#
#   tests/bench/scale.sh [BUILDDIR]   env: SCALE_NODES ("256 512 1023"), SCALE_BASE
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
fake=$top_builddir/tests/tools/pool-fake-nodes
bench=$top_builddir/tests/bench/pool-bench-regions
builds=("$top_builddir")
[ -n "${SCALE_BASE:-}" ] && builds=("$(cd "$SCALE_BASE" && pwd)" "$top_builddir")
for b in "$fake" "$bench" "${builds[@]/%//daemon/poold}"; do
	[ -x "$b" ] || { echo "scale.sh: $b not built (make)" >&2; exit 1; }
done
secret=scale-bench-secret-$$
dir=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-scale.XXXXXX")
pid=
stop() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid=
}
trap 'stop; rm -rf -- "$dir"' EXIT

# start BUILD OPTS...: a poold of BUILD in $dir, its socket in POOL_SOCKET.
start() {
	local build=$1
	shift
	rm -rf "$dir/run" && mkdir -p "$dir/run"
	"$build/daemon/poold" -d -o "runtime_dir=$dir/run" -o node.name=coord "$@" >"$dir/poold.log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do [ -S "$dir/run/poold.sock" ] && break; sleep 0.05; done
	export POOL_SOCKET=$dir/run/poold.sock
}
cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$pid/stat"; }
rss_kb() { awk '/VmRSS/ { print $2 }' "/proc/$pid/status"; }
label() { [ "$1" = "$top_builddir" ] && echo this || echo base; }

echo "# pool-bench scale: $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs"
echo
echo "## membership: N fake nodes join one coordinator (loopback, 16 handshakes at a time)"
echo "## frames/bytes: to the nodes until the last joined; per_join_frames = N(N-1)/2 + N,"
echo "## what one frame per join per member and the RegisterReplies are"
printf "%-6s %-5s %8s %9s %12s %15s %8s %8s\n" build N join_ms frames bytes per_join_frames cpu_ms B/node
for n in ${SCALE_NODES:-256 512 1023}; do
	port=$((17400 + RANDOM % 1000))
	for b in "${builds[@]}"; do
		start "$b" -o lend.size=64M -o role=coordinator -o "peer.listen=127.0.0.1:$port" \
			-o "peer.secret=$secret" -o peer.max_nodes=4096
		sleep 0.5
		c0=$(cpu_ms) r0=$(rss_kb)
		out=$("$fake" -S "$secret" -l "127.0.0.1:$port" "$n" 2>/dev/null)
		c1=$(cpu_ms) r1=$(rss_kb)
		stop
		# "joined N of N in MS ms: FRAMES frames (BYTES bytes) ..."
		set -- $out
		printf "%-6s %-5s %8s %9s %12s %15s %8s %8s\n" "$(label "$b")" "$n" "$6" "$8" "${10#(}" \
			$((n * (n - 1) / 2 + n)) $((c1 - c0)) $(((r1 - r0) * 1024 / n))
	done
done
echo

echo "## region create + map + close + destroy, 4 KiB, local, 2000 each (ops/s): a fresh arena,"
echo "## then after 512 MiB of it were written and freed; without, then with coord.journal"
printf "%-6s %-8s %10s %10s\n" build journal fresh used
for b in "${builds[@]}"; do
	for j in no yes; do
		opts=(-o lend.size=1G)
		[ $j = yes ] && opts+=(-o "coord.journal=$dir/coord.journal") && rm -f "$dir/coord.journal"
		start "$b" "${opts[@]}"
		fresh=$("$bench" ops 2000 4096 local | awk 'END { print $4 }')
		"$bench" -T 0.3 local 512M >/dev/null 2>&1
		used=$("$bench" ops 2000 4096 local | awk 'END { print $4 }')
		stop
		printf "%-6s %-8s %10s %10s\n" "$(label "$b")" $j "$fresh" "$used"
	done
done

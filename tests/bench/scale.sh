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
#     and on one where 512 MiB were written and freed, by one client and
#     by 16, without the coordinator's journal, with it in a file on disk
#     (TMPDIR) and in /dev/shm (tmpfs); beside them what a durable write
#     costs on that disk (dd oflag=dsync), which bounds one client's
#     cycles with the journal there; then the first map of a fresh
#     SCALE_SCRUB (1G) region (its create with the file).
#  3. A large region's scrub: SCALE_SCRUB (1G) written, then destroyed
#     while a prober times poold's answers; then that much again reads
#     zeros. In DRAM, then in the pmem tier (a file on disk).
#  4. KV metadata: N keys of 16 bytes with 32-byte values put into one
#     poold (the coordinator's index and the lender's record of each value
#     on one node): its RssAnon growth per key, beside redis-server's
#     used_memory growth per key for the same keys and values.
#
# With SCALE_BASE=DIR (another build tree) every point runs on that build's
# poold too, alternated, as the baseline.
#
#   tests/bench/scale.sh [BUILDDIR]
#   env: SCALE_PARTS ("nodes regions scrub keys": which of the four),
#        SCALE_NODES ("256 512 1023"), SCALE_KEYS ("1000000"), SCALE_SCRUB ("1G"),
#        SCALE_BASE
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
fake=$top_builddir/tests/tools/pool-fake-nodes
bench=$top_builddir/tests/bench/pool-bench-regions
kvload=$top_builddir/tests/tools/pool-kvload
io=$top_builddir/tests/tools/pool-io
builds=("$top_builddir")
[ -n "${SCALE_BASE:-}" ] && builds=("$(cd "$SCALE_BASE" && pwd)" "$top_builddir")
for b in "$fake" "$bench" "$kvload" "$io" "${builds[@]/%//daemon/poold}"; do
	[ -x "$b" ] || { echo "scale.sh: $b not built (make)" >&2; exit 1; }
done
secret=scale-bench-secret-$$
dir=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-scale.XXXXXX")
pid=
stop() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid=
}
shm_journal=/dev/shm/pool-bench-scale-$$.journal
trap 'stop; rm -rf -- "$dir" "$shm_journal"' EXIT

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
anon_kb() { awk '/RssAnon/ { print $2 }' "/proc/$pid/status"; }
label() { [ "$1" = "$top_builddir" ] && echo this || echo base; }
part() { [[ " ${SCALE_PARTS:-nodes regions scrub keys} " == *" $1 "* ]]; }

echo "# pool-bench scale: $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs"
if part nodes; then
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
fi

if part regions; then
	echo
	echo "## region create + map + close + destroy, 4 KiB, local (ops/s): 2000 cycles by one"
	echo "## client on a fresh arena, then after 512 MiB of it were written and freed; 4000 by 16"
	echo "## clients; without coord.journal, with it on disk ($dir) and in /dev/shm"
	printf "%-6s %-8s %10s %10s %12s\n" build journal fresh used 16_clients
	for b in "${builds[@]}"; do
		for j in no disk shm; do
			opts=(-o lend.size=1G)
			case $j in
			disk) journal=$dir/coord.journal ;;
			shm) journal=$shm_journal ;;
			esac
			[ $j != no ] && rm -f "$journal" && opts+=(-o "coord.journal=$journal")
			start "$b" "${opts[@]}"
			fresh=$("$bench" ops 2000 4096 local | awk 'END { print $4 }')
			"$bench" -T 0.3 local 512M >/dev/null 2>&1
			used=$("$bench" ops 2000 4096 local | awk 'END { print $4 }')
			many=$("$bench" -j 16 ops 4000 4096 local | awk 'END { print $4 }')
			stop
			[ $j != no ] && rm -f "$journal"
			printf "%-6s %-8s %10s %10s %12s\n" "$(label "$b")" $j "$fresh" "$used" "$many"
		done
	done
	# One client waits for each create's and each destroy's record to be
	# durable: two such writes a cycle at least.
	dsync=$( { dd if=/dev/zero of="$dir/dsync" bs=4k count=2000 oflag=dsync 2>&1 >/dev/null; } |
		awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print int($(i - 1) / 2000 * 1e6) }')
	rm -f "$dir/dsync"
	echo "## a durable 4 KiB write on that disk (dd oflag=dsync, 2000 of them): $dsync us each"
	echo
	echo "## the create of a fresh region of ${SCALE_SCRUB:-1G}, local, with its file (ms, pool-io's run)"
	echo "## and the memory its file took (MiB, the file's allocated blocks in poold)"
	bytes=$(numfmt --from=iec "${SCALE_SCRUB:-1G}")
	printf "%-6s %10s %10s\n" build ms MiB
	for b in "${builds[@]}"; do
		start "$b" -o lend.size=$((bytes * 3 / 2 >> 20))M
		t0=$(date +%s%N)
		"$io" create fresh "$bytes" local >/dev/null || echo "scale.sh: the create failed" >&2
		t1=$(date +%s%N)
		taken=$(for f in /proc/"$pid"/fd/*; do
			[ "$(readlink "$f")" = "/memfd:poold-region (deleted)" ] && stat -L -c %b "$f"
		done | awk '{ n += $1 } END { print int(n * 512 / 1048576) }')
		stop
		printf "%-6s %10s %10s\n" "$(label "$b")" $(((t1 - t0) / 1000000)) "$taken"
	done
fi

if part scrub; then
	echo
	echo "## a region of SCALE_SCRUB (1G) written, then destroyed while pool-kvload probe times"
	echo "## poold's answers to pool_status() (ms); then a region of that size again reads zeros;"
	echo "## in DRAM, then in the pmem tier (a file in $dir)"
	printf "%-6s %-5s %9s %8s %8s %8s %s\n" build tier probes median p99 max "zeros"
	size=$(numfmt --from=iec "${SCALE_SCRUB:-1G}")
	for tier in dram pmem; do
		for b in "${builds[@]}"; do
			if [ $tier = dram ]; then
				opts=(-o lend.size=$((size * 3 / 2 >> 20))M) where=(local)
			else
				rm -f "$dir/pmem"
				opts=(-o lend.size=64M -o "pmem.path=$dir/pmem" -o pmem.size=$((size * 3 / 2 >> 20))M)
				where=(any persistent)
			fi
			start "$b" "${opts[@]}"
			"$io" create big "$size" "${where[@]}" >/dev/null &&
				"$io" write big 7 >/dev/null || echo "scale.sh: $(label "$b"): the region failed" >&2
			"$kvload" probe >"$dir/probe" 2>/dev/null &
			prober=$!
			sleep 0.5
			"$io" destroy big >/dev/null || echo "scale.sh: $(label "$b"): the destroy failed" >&2
			sleep 2
			kill -INT "$prober" && wait "$prober"
			zeros=no
			for _ in $(seq 100); do
				"$io" create big "$size" "${where[@]}" >/dev/null 2>&1 && break
				sleep 0.1
			done
			"$io" zero big >/dev/null 2>&1 && zeros=yes
			stop
			rm -f "$dir/pmem"
			read -r _ n _ med _ p99 _ max <"$dir/probe"
			printf "%-6s %-5s %9s %8s %8s %8s %s\n" "$(label "$b")" $tier "$n" "$med" "$p99" "$max" "$zeros"
		done
	done
fi

if part keys; then
	echo
	echo "## KV metadata: N keys of 16 bytes, values of 32 bytes, one poold (coordinator and lender)"
	echo "## B/key: its RssAnon growth per key; redis: redis-server's used_memory growth per key"
	printf "%-6s %-9s %8s %8s %10s\n" build N B/key redis fill_s
	# resp_sets N: SET commands for pool-kvload's keys (seed 0) and values of 32 bytes, as RESP.
	resp_sets() {
		python3 -c 'import sys
n = int(sys.argv[1]); v = b"v" * 32; out = sys.stdout.buffer
for i in range(n):
    out.write(b"*3\r\n$3\r\nSET\r\n$16\r\n%04x%012x\r\n$32\r\n%s\r\n" % (0, i, v))' "$1"
	}
	for n in ${SCALE_KEYS:-1000000}; do
		port=$((16400 + RANDOM % 1000))
		redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
			>"$dir/redis.log" 2>&1 &
		rpid=$!
		for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
		used() { redis-cli -p "$port" info memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }
		m0=$(used)
		resp_sets "$n" | redis-cli -p "$port" --pipe >/dev/null
		m1=$(used)
		kill "$rpid" && wait "$rpid" 2>/dev/null
		for b in "${builds[@]}"; do
			# (a 32-byte value takes a 64-byte extent: room for all, none evicted)
			start "$b" -o lend.size=$(((n * 64 >> 20) + 256))M
			"$b/cli/poolctl" kv create scale $(((n * 64 >> 20) + 64))M tier=dram >/dev/null
			a0=$(anon_kb) t0=$(date +%s%N)
			"$kvload" fill scale "$n" 32 >/dev/null || echo "scale.sh: the fill of $n keys failed" >&2
			t1=$(date +%s%N) a1=$(anon_kb)
			held=$("$b/cli/poolctl" --json kv stats scale |
				python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])')
			[ "$held" = "$n" ] || echo "scale.sh: $(label "$b") holds $held of the $n keys" >&2
			stop
			printf "%-6s %-9s %8s %8s %10s\n" "$(label "$b")" "$n" $(((a1 - a0) * 1024 / n)) \
				$(((m1 - m0) / n)) "$(awk -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", t / 1e9 }')"
		done
	done
fi

#!/bin/bash
# pool-bench resp: the RESP endpoint against redis-server, side by side in
# one run: redis-benchmark SET and GET, pipelined 16 deep, 50 clients,
# small (16 B) and 256 KiB values, each target twice, interleaved; once
# with servers and client sharing the cores, once with the servers on
# CPU 0 and the client on CPU 1. Both servers on 127.0.0.1 TCP; poold
# lends 3G with resp.capacity 2G, Redis keeps everything in memory with no
# persistence. Beside them, the same client against resp-null, a server
# that keeps nothing (the most that client reaches on those cores), and
# each server's CPU time per request (what it would cost where the client
# is not the limit).
#   tests/bench/pool-bench resp [BUILDDIR]
set -u
B=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
REDIS=$(command -v redis-server) || { echo "resp.sh: redis-server is not installed"; exit 1; }
command -v redis-benchmark >/dev/null || { echo "resp.sh: redis-benchmark is not installed"; exit 1; }
dir=$(mktemp -d /tmp/pool-bench-resp.XXXXXX)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PP=$(free_port); RP=$(free_port); NP=$(free_port)
mkdir -p "$dir/run"
"$B/daemon/poold" -d -o runtime_dir="$dir/run" -o lend.size=3G -o resp.capacity=2G \
	-o resp.listen=127.0.0.1:$PP >"$dir/poold.log" 2>&1 &
PPID_=$!
"$REDIS" --bind 127.0.0.1 --port "$RP" --save "" --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
RPID=$!
trap 'kill $PPID_ $RPID $NPID 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
# resp-null answers GETs with a value of the size of the run's: restarted for each size.
NPID=
null_start() {
	[ -n "$NPID" ] && { kill "$NPID"; wait "$NPID" 2>/dev/null; }
	"${SERVER_CPU[@]}" "$B/tests/tools/resp-null" "$NP" "$1" & NPID=$!
	for _ in $(seq 100); do redis-cli -p "$NP" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
SERVER_CPU=()
for p in $PP $RP; do
	for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
# rate PORT TEST SIZE N KEYS [PID]: requests per second of one redis-benchmark test ($CLIENT
# runs it); with PID, also the microseconds of CPU time that process took per request.
CLIENT=()
rate() {
	local t0 t1 r
	[ -n "${6:-}" ] && t0=$(cpu_ticks "$6")
	r=$("${CLIENT[@]}" redis-benchmark -p "$1" -t "$2" -d "$3" -n "$4" -P 16 -c 50 -r "$5" -q 2>/dev/null | tr '\r' '\n' |
		awk -v t="$2" 'toupper($1) == toupper(t) ":" && $2 + 0 > 0 { v = $2 } END { print int(v) }')
	[ -n "${6:-}" ] && t1=$(cpu_ticks "$6") &&
		r="$r $(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$4" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }')"
	echo "$r"
}
# user + system CPU ticks of a process and its threads
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# table HOW: SET (the first round makes the keys, the second overwrites them) and GET, each
# target twice, interleaved; both databases emptied first. Columns: ops/s of each run,
# the ratio of the sums, resp-null's ops/s, and each server's CPU microseconds per request.
table() {
	redis-cli -p "$PP" flushall >/dev/null; redis-cli -p "$RP" flushall >/dev/null
	echo "## RESP: poold $(git -C "$B" rev-parse --short HEAD 2>/dev/null) vs redis-server $("$REDIS" --version | sed 's/.*v=\([^ ]*\).*/\1/'), redis-benchmark -P 16 -c 50, 127.0.0.1, $1"
	printf '%-4s %-7s %16s %16s %6s %10s %12s %12s\n' test value "poold ops/s" "redis ops/s" ratio "null ops/s" "poold us/req" "redis us/req"
	for size in 16 262144; do
		# 400,000 requests over 100,000 keys of 16 B; 20,000 over 4,000 keys of 256 KiB
		# (1 GiB, within resp.capacity: Redis has no bound, so poold must not evict either).
		n=400000 keys=100000
		[ "$size" -gt 1024 ] && n=20000 keys=4000
		null_start "$size"
		for t in set get; do
			local p1 p2 r1 r2 nl
			p1=($(rate $PP $t $size $n $keys $PPID_)); r1=($(rate $RP $t $size $n $keys $RPID))
			p2=($(rate $PP $t $size $n $keys $PPID_)); r2=($(rate $RP $t $size $n $keys $RPID))
			nl=$(rate $NP $t $size $n $keys)
			printf '%-4s %-7s %16s %16s %6s %10s %12s %12s\n' "$t" "$size" "${p1[0]}, ${p2[0]}" "${r1[0]}, ${r2[0]}" \
				"$(awk -v a="${p1[0]}" -v b="${p2[0]}" -v c="${r1[0]}" -v d="${r2[0]}" 'BEGIN { if (c + d > 0) printf "%.2f", (a + b) / (c + d) }')" \
				"$nl" "${p1[1]}, ${p2[1]}" "${r1[1]}, ${r2[1]}"
		done
	done
}
table "servers and client sharing every core"
# The same with the servers on one core and the client on another, when there are two:
# each server then has a core of its own, as on a server machine, and runs vary less.
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	taskset -a -p -c 0 $PPID_ >/dev/null && taskset -a -p -c 0 $RPID >/dev/null
	CLIENT=(taskset -c 1) SERVER_CPU=(taskset -c 0)
	echo
	table "servers on CPU 0, client on CPU 1"
	CLIENT=() SERVER_CPU=()
	taskset -a -p -c "0-$(($(nproc) - 1))" $PPID_ >/dev/null; taskset -a -p -c "0-$(($(nproc) - 1))" $RPID >/dev/null
fi
# Connection churn with the keys of the runs above held: 2,000 connections
# opened, PINGed and closed one after the other (each close ends a session).
churn() {
	/usr/bin/python3 - "$1" <<'PY'
import socket, sys, time
t = time.time()
for i in range(2000):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"PING\r\n"); s.recv(16); s.close()
print("%.0f" % (2000 / (time.time() - t)))
PY
}
echo
echo "## connection churn, $(redis-cli -p "$PP" dbsize) keys held: connect + PING + close per second"
printf '%-14s %14s %14s\n' "" "poold" "redis"
printf '%-14s %14s %14s\n' "churn" "$(churn $PP), $(churn $PP)" "$(churn $RP), $(churn $RP)"

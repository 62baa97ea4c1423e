#!/bin/bash
# No message between poolds grows with the data (pool-protocol(7)), on a
# 4-node cluster in network namespaces with peer.chunk_size = 512: node 2
# lends the memory of CHUNKS_VALUES (200,000) small KV values, whose report
# (some 20 MB) never fitted the 16 MiB a peer frame takes, and 60 empty
# namespaces are defined; nodes 3 and 4 lend nothing and read, node 4
# getting its member table in chunks. The coordinator is SIGKILLed and restarted from
# its journal; node 2's report comes back in tens of thousands of chunks,
# no more of it sent than the coordinator's window beyond what it read
# (with the coordinator stopped, and its sockets' buffers grown), its
# link cut in the middle of one (a partial report is dropped, never
# reconciled: values are taken back only from the whole record, and the
# coordinator's count of them only rises) and node 2 stopped during the
# next (suspect, then up): every value
# comes back and reads back bit-exact from node 3. Restarted once more without its journal, the coordinator gets the
# namespaces' definitions back from the nodes, in chunks, and the values
# again. No poold says a message was too large, and node 2 is never dead.
# CHUNKS_VALUES=3000000 (scripts/ci-extra.sh, stage chunks) makes it a run
# of millions; CHUNKS_LEDGER (ledger.interval, 2s) and CHUNKS_MISSES
# (heartbeat.misses, 20) widen what such a run needs: a ledger pass every
# 2 s of millions of values would keep the coordinator comparing.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
N=${CHUNKS_VALUES:-200000}
NS=60
WAIT=$((60 + N / 2000)) # seconds for the values to come back (160 for 200,000)
LEDGER=${CHUNKS_LEDGER:-2s}
MISSES=${CHUNKS_MISSES:-20}
PREFIX=a-key-long-enough-to-make-the-report-of-the-values-large-
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "chunks: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
on() { local i=$1; shift; cluster_exec "$i" timeout 600 env POOL_SOCKET="$(pool_sock "$i")" "$@"; }
export POOL_OPTS="${POOL_OPTS:-} -o peer.chunk_size=512"
JOURNAL=
# (a heartbeat window of 10 s: node 2 is stopped for 2 s, and is suspect, not dead)
coord_start() {
	pool_node_start 1 -o lend.size=0 -o ledger.interval="$LEDGER" -o heartbeat.misses="$MISSES" \
		-o "coord.journal=$JOURNAL" "$@" || return 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && return 0; sleep 0.05; done
	return 1
}
# entries: the coordinator's count of values of namespace chunky ("none" without it).
entries() {
	pctl 1 --json kv stats chunky 2>/dev/null | python3 -c '
import json, sys
try:
    print(json.load(sys.stdin)["namespaces"][0]["entries"])
except Exception:
    print("none")'
}
# watch_entries FILE SECONDS: every count the coordinator gives, until all N are back.
watch_entries() {
	local deadline=$((SECONDS + $2)) e
	: >"$1"
	while [ $SECONDS -le $deadline ]; do
		e=$(entries)
		echo "$e" >>"$1"
		[ "$e" = "$N" ] && return 0
		sleep 0.05
	done
	return 1
}
# registered I: the coordinator's log says node I registered, for the COUNT-th time.
registered() { grep -c "node $1 (h$1) at .* registered" "$(cluster_dir 1)/poold.log"; }
wait_registered() {
	local deadline=$((SECONDS + 20))
	while [ $SECONDS -le $deadline ]; do
		[ "$(registered "$1")" -ge "$2" ] && return 0
		sleep 0.02
	done
	return 1
}

watcher=
trap '[ -n "$watcher" ] && kill "$watcher" 2>/dev/null' EXIT # (chained by cluster_create)
cluster_create 4 || exit 1
# The coordinator's sockets take 8 MiB unread from the start, as those of a
# busy coordinator reading slowly grow to: what a lender may send beyond
# what was read is then up to the lender.
cluster_exec 1 sysctl -qw net.ipv4.tcp_rmem="4096 8388608 8388608" ||
	{ not_ok "tcp_rmem in the coordinator's namespace"; finish; exit 1; }
JOURNAL="$(cluster_dir 1)/coord.journal"
coord_start || exit 1
lend=$((N * 64 * 2 / 1048576 + 64))M
pool_node_start 2 -o lend.size="$lend" || exit 1
for i in 2 3 4; do
	[ "$i" -eq 2 ] || pool_node_start "$i" -o lend.size=0 || exit 1
	pool_wait_state 1 "h$i" up 20 || { not_ok "h$i joins"; finish; exit 1; }
done
grep -q "node 4: [0-9]* of 4 members .* in its register reply, the others follow" "$(cluster_dir 1)/poold.log" &&
	ok "node 4's member table came in chunks: $(grep -o "[0-9]* of 4 members" "$(cluster_dir 1)/poold.log" | tail -1) in its register reply, the others as member events" ||
	not_ok "node 4's member table in one message"

for i in $(seq "$NS"); do pctl 2 kv create "empty-namespace-$i" 1M tier=dram >/dev/null || not_ok "namespace $i"; done
pctl 2 kv create chunky "$((N * 128 / 1048576 + 1))M" tier=dram evict=none >/dev/null &&
	ok "$NS empty KV namespaces and one for the values" || not_ok "create namespace chunky"
t0=$SECONDS
on 2 "$KV" chunky mput "$PREFIX" "$N" 48 7 >"$CLUSTER_TMP/out" 2>&1 && grep -q "$N of $N stored" "$CLUSTER_TMP/out" &&
	ok "node 2 lends $N values ($(cat "$CLUSTER_TMP/out"), $((SECONDS - t0)) s)" || { not_ok "mput"; cat "$CLUSTER_TMP/out"; }
[ "$(entries)" = "$N" ] && ok "the coordinator counts $N values" || not_ok "entries before: $(entries)"

# The coordinator dies and comes back from its journal: node 2 reports its
# record again, in chunks. The coordinator stops reading in the middle of
# the report (SIGSTOP: node 2 waits, its link's output full) and node 2's
# link is cut meanwhile: the coordinator drops what it gathered.
sleep 2.5 # (a ledger pass on the way: reports go while the cluster works)
pool_node_kill 1
coord_start || { not_ok "the coordinator restarts"; finish; exit 1; }
watch_entries "$CLUSTER_TMP/counts" "$WAIT" &
watcher=$!
# Once its report is on its way, the coordinator stops: as soon as it has
# read 256 KiB of node 2's new link (a report of 200,000 values is some 24
# MB), and not all of it. The poll, one loop in the coordinator's
# namespace, begins before node 2 registers: a coordinator reads the
# report in well under a second, and a poll begun only once the
# registration shows in its log found it all read on a fast machine.
cluster_exec 1 timeout 20 bash -c 'until ss -tinH state established "( sport = :7400 )" dst "$1" |
	awk -v RS="[[:space:]]+" -F: "\$1 == \"bytes_received\" && \$2 + 0 >= 262144 { f = 1 } END { exit !f }"; do :; done' \
	- "$(cluster_addr 2)"
pool_node_kill 1 STOP
wait_registered 2 2 || not_ok "h2 registers with the restarted coordinator"
sleep 0.5
# Node 2 sends no more of it than the coordinator's window (1 MiB) beyond
# the chunks it said it read: what lies unread at the stopped coordinator
# (a heartbeat would wait behind it) is bounded, whatever the kernels buffer:
# a window of 512-byte chunks with their frames' headers, and a heartbeat.
unread=$(cluster_exec 1 ss -tnH state established "( sport = :7400 )" dst "$(cluster_addr 2)" |
	awk '{ print $1 }' | sort -n | tail -1)
[ "${unread:-0}" -le $((1024 * 1024 * 5 / 4)) ] &&
	ok "with the coordinator stopped, ${unread:-0} bytes of node 2's report lie unread at it (window 1 MiB)" ||
	not_ok "${unread:-0} bytes of node 2's report unread at the stopped coordinator, beyond its window"
if cluster_exec 2 ss -K dst "$(cluster_addr 1)" dport = 7400 >/dev/null 2>&1 &&
	sleep 0.5 && [ "$(grep -c "lost the coordinator" "$(cluster_dir 2)/poold.log")" -ge 2 ]; then
	pool_node_kill 1 CONT
	ok "node 2's link cut during its report (ss -K, the coordinator stopped): it registers again"
	wait_registered 2 3 || not_ok "h2 registers again after its link was cut"
	grep -q "node 2 (h2): its holdings report, cut short after [1-9][0-9]* chunk(s) and [1-9][0-9]* holding(s), is dropped" \
		"$(cluster_dir 1)/poold.log" &&
		ok "the coordinator dropped the report cut short: $(grep -o "cut short after .* holding(s)" "$(cluster_dir 1)/poold.log" | tail -1)" ||
		not_ok "no report cut short at the coordinator"
else
	pool_node_kill 1 CONT
	ok "# SKIP no ss -K here: node 2's link is not cut"
fi
# ... and node 2 stops during the next report for 2 s, whatever this
# script's own pace: suspect, then up once it runs again.
suspects=$(grep -c "node 2 (h2) is suspect" "$(cluster_dir 1)/poold.log")
kill -STOP "${POOL_PIDS[2]}"
(sleep 2; kill -CONT "${POOL_PIDS[2]}") &
cont=$!
e=$(entries)
[ "$e" != "$N" ] && ok "node 2 stopped with its report under way (the coordinator counts $e values)" ||
	ok "# node 2 stopped once its report was in (a fast machine)"
wait $cont
[ "$(grep -c "node 2 (h2) is suspect" "$(cluster_dir 1)/poold.log")" -gt "$suspects" ] &&
	ok "node 2, stopped, was suspect" || not_ok "h2 suspect"
pool_wait_state 1 h2 up 10 && ok "node 2 runs again: up" || not_ok "h2 up again"
t0=$SECONDS
wait $watcher && watcher= && ok "all $N values are back ($((SECONDS - t0)) s after node 2 ran again)" ||
	not_ok "values after the restart: $(tail -1 "$CLUSTER_TMP/counts") of $N"
# (a pass takes the values back a slice at a time: the count rises from none to all and
# never falls, and every pass that took any back compared node 2's whole record)
fell=$(grep -v -x none "$CLUSTER_TMP/counts" | awk 'NR > 1 && $1 < last { print last " -> " $1 } { last = $1 }' | head -3 | tr '\n' ' ')
[ -z "$fell" ] && grep -q -x "$N" "$CLUSTER_TMP/counts" &&
	ok "the coordinator's count only rose, to all of them ($(wc -l <"$CLUSTER_TMP/counts") samples, $(grep -v -x -e 0 -e none -e "$N" "$CLUSTER_TMP/counts" | wc -l) of them in between)" ||
	not_ok "the coordinator's count fell: $fell"
partial=$(grep -o "ledger: node 2: of the [0-9]* extent(s) it records" "$(cluster_dir 1)/poold.log" | grep -v "of the $N extent" | head -3)
grep -q "ledger: node 2: of the $N extent(s) it records, $N taken back" "$(cluster_dir 1)/poold.log" && [ -z "$partial" ] &&
	ok "node 2's values were taken back from its whole record only: $(grep -o "ledger: node 2: of the .*" "$(cluster_dir 1)/poold.log" | head -1)" ||
	not_ok "values taken back from a partial record: ${partial:-none taken back from the whole one}"
on 3 "$KV" chunky mget "$PREFIX" "$N" 7 >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "$N hits of $N, all correct" "$CLUSTER_TMP/out" &&
	ok "node 3 reads every value back, bit-exact: $(cat "$CLUSTER_TMP/out")" ||
	{ not_ok "mget after the restart"; cat "$CLUSTER_TMP/out"; }

# Once more without a journal: the definitions come back from the nodes.
pool_node_kill 1
JOURNAL="$(cluster_dir 1)/coord.journal.new"
coord_start || { not_ok "the coordinator restarts without its journal"; finish; exit 1; }
watch_entries "$CLUSTER_TMP/counts2" "$WAIT" && ok "restarted without its journal: all $N values are back" ||
	not_ok "values after the second restart: $(tail -1 "$CLUSTER_TMP/counts2") of $N"
nns=$(pctl 1 --json kv stats | python3 -c '
import json, sys
print(sum(1 for n in json.load(sys.stdin)["namespaces"] if n["name"].startswith("empty-namespace-")))')
[ "$nns" = "$NS" ] && ok "and the $NS empty namespaces, from the definitions the nodes kept" ||
	not_ok "empty namespaces after the second restart: $nns"
on 4 "$KV" chunky mget "$PREFIX" 4096 7 >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "4096 hits of 4096, all correct" "$CLUSTER_TMP/out" &&
	on 3 "$KV" chunky get "${PREFIX}$((N - 1))" $((7 + N - 1)) >/dev/null &&
	ok "node 4 reads the first 4096 values back, node 3 the last" ||
	{ not_ok "reads after the second restart"; cat "$CLUSTER_TMP/out"; }

# Nothing was too large, nothing was dropped.
for i in 1 2 3 4; do
	if grep -E "exceeds the .* the other end takes|cannot pack|frame of [0-9]* bytes exceeds" "$(cluster_dir "$i")/poold.log"; then
		not_ok "h$i logged a message too large"
	else
		ok "h$i never had a message too large to send"
	fi
done
grep -q "node 2 (h2) is dead" "$(cluster_dir 1)/poold.log" && not_ok "node 2 was declared dead" ||
	ok "node 2 was never declared dead (by any of the three coordinators)"
kill -0 "${POOL_PIDS[1]}" && kill -0 "${POOL_PIDS[2]}" && kill -0 "${POOL_PIDS[3]}" &&
	kill -0 "${POOL_PIDS[4]}" &&
	ok "every poold runs on" || not_ok "a poold died"
finish

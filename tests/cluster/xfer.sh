#!/bin/bash
# One tenant's transfer request cannot get its node declared dead, nor
# hold the ways to other lenders (xfer.c, xfer-share.c), on three poolds
# in network namespaces (heartbeat.interval 500ms: dead after 1.5 s of
# silence):
#  - uid nobody on node 2 sends the largest request the protocol allows
#    over its own region on node 2 (4096 reads of 16 MiB, copies on node
#    2) while root's poolctl status runs in a loop there: the request
#    completes, checked; status answers (longest wait and p99 told); the
#    coordinator never declares node 2 dead;
#  - two such requests of uid nobody's at once over a region on node 3
#    (carried on node 2's link to node 3), under
#    control.max_xfer_bytes_per_session = 16M and _per_uid = 32M: both
#    complete, checked, node 2 never has more than 32M of them out (its
#    metrics, sampled, with root's reads), chunks waited for room;
#    meanwhile root's 1 MiB reads of node 3 on the same link are told how
#    long they waited;
#  - a client that hangs up in the middle of a carried request: node 2
#    cancels the rest, has nothing out after, its fds are flat, and every
#    poold serves on.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
XF="$top_builddir/tests/tools/pool-xfer"
LOOP="$top_srcdir/tests/integration/statusloop.py"
MPORT=9377
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "xfer: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
nobody() { local i=$1; shift; cluster_exec "$i" setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
metric() { cluster_exec 2 python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith(sys.argv[2] + " "): print(l.split()[1])' "$MPORT" "$1"; }
fds() { ls /proc/"${POOL_PIDS[$1]}"/fd 2>/dev/null | wc -l; }
alive() { local i; for i in 1 2 3; do kill -0 "${POOL_PIDS[$i]}" 2>/dev/null || return 1; done; }
# deaths: how many times the coordinator has said node 2 or 3 is dead, and suspect.
deaths() { grep -cE "node [23] \(h[23]\) is dead" "$(cluster_dir 1)/poold.log"; }
suspects() { grep -cE "node [23] \(h[23]\) is suspect" "$(cluster_dir 1)/poold.log"; }
# status_loop_start / status_loop_end: root's poolctl status on node 2, again and again.
status_loop_start() {
	touch "$CLUSTER_TMP/looping"
	cluster_exec 2 python3 "$LOOP" "$POOLCTL" "$(pool_sock 2)" "$CLUSTER_TMP/looping" >"$CLUSTER_TMP/waits" 2>&1 &
	loop=$!
}
status_loop_end() {
	rm -f "$CLUSTER_TMP/looping"
	wait "$loop"
	read -r answered failed worst p99 <"$CLUSTER_TMP/waits"
	[ "${answered:-0}" -gt 0 ] && [ "${failed:-1}" -eq 0 ] &&
		ok "root's poolctl status on node 2 answered $answered times meanwhile: longest wait $worst ms, p99 $p99 ms" ||
		{ not_ok "poolctl status on node 2 during $1"; sed 's/^/  | /' "$CLUSTER_TMP/waits"; }
}

have_nobody "$XF" || exit 77
export POOL_OPTS="-o control.mode=0666 -o lend.size=256M -o lease.grace=100ms"
cluster_create 3 || exit 1
[ "$CLUSTER_MODE" = netns ] || { echo "skip: needs network namespaces"; exit 77; }
chmod 0755 "$CLUSTER_TMP"
pool_node_start 1 || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2 -o "metrics.listen=127.0.0.1:$MPORT" -o control.max_xfer_bytes_per_session=16M \
	-o control.max_xfer_bytes_per_uid=32M || exit 1
pool_node_start 3 || exit 1
for i in 2 3; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i joins"; finish; exit 1; }; done
for i in 1 2 3; do chmod 0755 "$(cluster_dir "$i")" "$(cluster_dir "$i")/run"; done
ok "3 poolds up"

# Copies on node 2.
dead0=$(deaths) suspect0=$(suspects)
status_loop_start
nobody 2 "$XF" "$(pool_sock 2)" flood 32M 4096 16M local >"$CLUSTER_TMP/out" 2>&1; rc=$?
status_loop_end "the flood of copies"
[ "$rc" -eq 0 ] && ok "uid nobody's 4096 reads of 16 MiB of its region on node 2: $(cat "$CLUSTER_TMP/out")" ||
	{ not_ok "the flood of copies (exit $rc)"; sed 's/^/  | /' "$CLUSTER_TMP/out"; }
[ "$(deaths)" = "$dead0" ] && pool_wait_state 1 h2 up 1 &&
	ok "the coordinator never declared node 2 dead (suspect $(($(suspects) - suspect0)) times)" ||
	not_ok "node 2 declared dead during the flood: $(grep -E 'node 2 \(h2\) is' "$(cluster_dir 1)/poold.log" | tail -3)"
echo "# node 2's longest turn on transfers: $(metric pool_xfer_turn_max_us) us by the clock," \
	"$(metric pool_xfer_turn_cpu_max_us) us of CPU"

# Carried to node 3: two of uid nobody's sessions, root's reads beside them.
dead0=$(deaths) suspect0=$(suspects)
touch "$CLUSTER_TMP/sampling"
cluster_exec 2 python3 - "$MPORT" "$CLUSTER_TMP/sampling" >"$CLUSTER_TMP/peak" 2>&1 <<'EOF' &
import os, sys, time, urllib.request
peak = 0
while os.path.exists(sys.argv[2]):
    for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
        if l.startswith("pool_xfer_carried_bytes "):
            peak = max(peak, int(l.split()[1]))
    time.sleep(0.02)
print(peak)
EOF
sampler=$!
status_loop_start
for k in 1 2; do
	nobody 2 "$XF" "$(pool_sock 2)" flood 32M 1024 4M node=3 >"$CLUSTER_TMP/out.$k" 2>&1 &
	eval "flood$k=\$!"
done
for _ in $(seq 100); do [ "$(metric pool_xfer_carried_bytes)" -gt 0 ] && break; sleep 0.1; done
cluster_exec 2 "$XF" "$(pool_sock 2)" read 8M 1M 200 node=3 >"$CLUSTER_TMP/root" 2>&1 ||
	{ not_ok "root's reads beside the floods"; sed 's/^/  | /' "$CLUSTER_TMP/root"; }
wait "$flood1"; rc1=$?
wait "$flood2"; rc2=$?
status_loop_end "the carried floods"
rm -f "$CLUSTER_TMP/sampling"
wait "$sampler"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] &&
	ok "two of uid nobody's requests of 1024 reads of 4 MiB on node 3 complete: $(cat "$CLUSTER_TMP/out.1"); $(cat "$CLUSTER_TMP/out.2")" ||
	{ not_ok "the carried floods (exit $rc1, $rc2)"; sed 's/^/  | /' "$CLUSTER_TMP"/out.*; }
peak=$(cat "$CLUSTER_TMP/peak") waits=$(metric pool_xfer_waits_total)
# (The gauge counts root's read too: one chunk of 1 MiB at most.)
[ "${peak:-0}" -gt 0 ] && [ "$peak" -le $((33 << 20)) ] && [ "${waits:-0}" -gt 0 ] &&
	ok "node 2 had at most $((peak >> 20)) MiB out, root's 1 MiB read with uid nobody's 32 MiB (control.max_xfer_bytes_per_uid), whose chunks waited $waits times" ||
	not_ok "carried bytes: peak $peak, waits $waits"
echo "# root's 1 MiB reads of node 3 beside them: $(cat "$CLUSTER_TMP/root")"
[ "$(deaths)" = "$dead0" ] && ok "no node declared dead (suspect $(($(suspects) - suspect0)) times)" ||
	not_ok "a node declared dead during the carried floods"

# A hang-up in the middle of a carried request.
fds0=$(fds 2)
nobody 2 "$XF" "$(pool_sock 2)" hangup 32M 4096 4M 300 node=3 32M >"$CLUSTER_TMP/out" 2>&1 ||
	{ not_ok "the hang-up"; sed 's/^/  | /' "$CLUSTER_TMP/out"; }
for _ in $(seq 100); do
	[ "$(metric pool_xfer_requests)" = 0 ] && [ "$(metric pool_xfer_carried_bytes)" = 0 ] && break
	sleep 0.1
done
[ "$(metric pool_xfer_requests)" = 0 ] && [ "$(metric pool_xfer_carried_bytes)" = 0 ] &&
	ok "node 2 cancelled the rest of a request whose client hung up, and has nothing out" ||
	not_ok "after the hang-up: $(metric pool_xfer_requests) requests, $(metric pool_xfer_carried_bytes) bytes out"
for _ in $(seq 50); do [ "$(fds 2)" -le "$fds0" ] && break; sleep 0.1; done
[ "$(fds 2)" -le "$fds0" ] && ok "node 2's fds are flat ($fds0 -> $(fds 2))" || not_ok "fds $fds0 -> $(fds 2)"
alive && pctl 2 status >/dev/null && pctl 3 status >/dev/null && ok "every poold serves on" ||
	not_ok "a poold died"
finish

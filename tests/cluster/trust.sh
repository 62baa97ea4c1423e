#!/bin/bash
# Trust on a 4-node cluster in network namespaces: a hostile tenant (uid
# nobody, raw frames) on node 4 reaches none of root's regions on node 2;
# clients killed in the middle of reads and writes of other nodes' memory
# never abort a poold (TRUST_KILLS of them, 100 by default); a lender stopped
# for TRUST_STALL_S seconds (6) fails its readers within the heartbeat window
# and keeps running when it resumes; a stopped node's client regains nothing.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
IO="$top_builddir/tests/tools/pool-io"
HOSTILE="$top_builddir/tests/tools/pool-hostile"
KILLS=${TRUST_KILLS:-100}
STALL=${TRUST_STALL_S:-6}
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "trust: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
io() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$IO" "$@"; }
fds() { ls /proc/"${POOL_PIDS[$1]}"/fd 2>/dev/null | wc -l; }
alive() { local i; for i in 1 2 3 4; do kill -0 "${POOL_PIDS[$i]}" 2>/dev/null || return 1; done; }
aborted() { grep -l "Assertion\|Endpoint timeout\|SIGSEGV\|munmap_chunk\|double free" "$CLUSTER_TMP"/*/poold.log 2>/dev/null; }

have_nobody "$HOSTILE" || exit 77
command -v nft >/dev/null || { echo "1..0 # SKIP: no nft (nftables)"; exit 77; }
# The default fabric.firewall (auto), no fabric.ports: each poold admits only
# its uid to the ports its worker and every member's listen on.
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
chmod 0755 "$CLUSTER_TMP"
for i in 1 2 3 4; do chmod 0755 "$(cluster_dir $i)" "$(cluster_dir $i)/run"; chmod 0666 "$(pool_sock $i)"; done

io 1 create pub $((16 << 20)) node=2 >/dev/null && io 1 write pub 31 >/dev/null &&
	pctl 1 region create priv 16M placement=node=2 mode=0600 >/dev/null && io 1 write priv 32 >/dev/null &&
	ok "root's regions on node 2, one readable by others, one private" || not_ok "regions on node 2"
sum_pub=$(io 1 read pub 31 | awk '{print $NF}')
sum_priv=$(io 1 read priv 32 | awk '{print $NF}')

# The hostile tenant on another node than the lender.
cluster_exec 4 setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOSTILE" "$(pool_sock 4)" pub priv \
	>"$CLUSTER_TMP/hostile" 2>&1; rc=$?
[ "$rc" -eq 0 ] && ok "node 4: every attack on node 2's memory refused ($(grep -c '^refused' "$CLUSTER_TMP/hostile") attacks)" ||
	{ not_ok "node 4: $rc attack(s) not refused"; cat "$CLUSTER_TMP/hostile"; }
[ "$(io 3 read pub 31 | awk '{print $NF}')" = "$sum_pub" ] && [ "$(io 3 read priv 32 | awk '{print $NF}')" = "$sum_priv" ] &&
	ok "root's data unchanged" || not_ok "root's data changed"

# On the lender itself, uid nobody maps pub zero-copy (its own memory file,
# made from what the arena held): it sees what root wrote from node 1, and
# what root writes there next.
nobody_io() { local i=$1; shift; cluster_exec "$i" setpriv --reuid=nobody --regid=nogroup --clear-groups \
	env POOL_SOCKET="$(pool_sock "$i")" timeout 60 "$IO" "$@"; }
nobody_io 2 map pub 31 >"$CLUSTER_TMP/map" 2>&1 && grep -q "^mapped pub" "$CLUSTER_TMP/map" &&
	ok "uid nobody on node 2 maps pub and reads root's bytes from node 1" || not_ok "mapping pub on node 2: $(cat "$CLUSTER_TMP/map")"
io 1 write pub 35 >/dev/null && nobody_io 2 map pub 35 >"$CLUSTER_TMP/map" 2>&1 &&
	ok "and then what root writes from node 1 into the mapped memory" || not_ok "after a remote write: $(cat "$CLUSTER_TMP/map")"
io 1 write pub 31 >/dev/null
[ "$(io 3 read pub 31 | awk '{print $NF}')" = "$sum_pub" ] && ok "node 3 reads the same bytes" || not_ok "node 3 reads other bytes"

# Knowing the port of node 2's fabric listener (which only node 2 and the
# members it registered with know), another uid cannot connect to it, from
# node 4 or from node 2 itself; poold's own uid (root) can.
port=$(cluster_exec 2 ss -ltnpH | awk -v ip="$(cluster_addr 2)" -v pid="pid=${POOL_PIDS[2]}," '
	$0 ~ pid && (index($4, ip ":") == 1 || $4 ~ /^(\*|\[::\]|0\.0\.0\.0):/) { n = split($4, a, ":"); print a[n]; exit }')
conn() { # HOST AS-NOBODY(0/1) -> 0 when the connect succeeds
	local pre=(); [ "$2" = 1 ] && pre=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	cluster_exec "$1" "${pre[@]}" /usr/bin/python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
except OSError as e:
    print("refused:", e); sys.exit(1)
print("connected")' "$(cluster_addr 2)" "$port"
}
if [ -n "$port" ]; then
	for h in 4 2; do
		out=$(conn $h 1 2>&1)
		case $out in
		*"Connection refused"*) ok "uid nobody on node $h cannot connect to node 2's fabric port $port ($out)" ;;
		*) not_ok "uid nobody on node $h and node 2's fabric port $port: $out" ;;
		esac
	done
	conn 4 0 >/dev/null 2>&1 && ok "poold's uid can (the rule admits only it)" || not_ok "root cannot connect to $port"
else
	not_ok "no fabric listener of node 2's poold on $(cluster_addr 2)"; cluster_exec 2 ss -ltnp
fi

# Clients killed mid-transfer, reading node 2 and the coordinator, writing node 3.
io 1 create onc $((16 << 20)) node=1 >/dev/null && io 1 write onc 33 >/dev/null
io 1 create scratch $((16 << 20)) node=3 >/dev/null
before2=$(fds 2) before1=$(fds 1)
for k in $(seq "$KILLS"); do
	case $((k % 3)) in
	0) cmd=(watch pub 31 5) ;;
	1) cmd=(watch onc 33 5) ;;
	*) cmd=(write scratch $k) ;;
	esac
	cluster_exec $((3 + k % 2)) env POOL_SOCKET="$(pool_sock $((3 + k % 2)))" "$IO" "${cmd[@]}" >/dev/null 2>&1 &
	p=$!
	sleep "0.0$((RANDOM % 6 + 2))"
	kill -KILL $p 2>/dev/null
	wait $p 2>/dev/null
done
sleep 1
alive && ok "$KILLS clients killed mid-transfer: every poold is still running" || not_ok "a poold died"
a=$(aborted) && { not_ok "aborts logged in $a"; grep -h "Assertion\|timeout\|SIG\|free" $a | head -5; } ||
	ok "no poold logged an abort"
for _ in $(seq 50); do [ "$(fds 2)" -le $((before2 + 2)) ] && [ "$(fds 1)" -le $((before1 + 2)) ] && break; sleep 0.1; done
[ "$(fds 2)" -le $((before2 + 2)) ] && [ "$(fds 1)" -le $((before1 + 2)) ] &&
	ok "the lenders' fds are back: node 2 $(fds 2) (was $before2), node 1 $(fds 1) (was $before1)" ||
	not_ok "fds grew: node 2 $(fds 2) (was $before2), node 1 $(fds 1) (was $before1)"
[ "$(io 4 read pub 31 | awk '{print $NF}')" = "$sum_pub" ] && ok "and its regions still read bit-exact" || not_ok "read after the kills"

# A lender stopped longer than the heartbeat window: its readers fail fast;
# resumed, it keeps running and is read again.
io 4 watch pub 31 $((STALL + 4)) >"$CLUSTER_TMP/stallwatch" 2>&1 & w=$!
sleep 1
kill -STOP "${POOL_PIDS[2]}"
t0=$(date +%s%N)
wait $w; rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
[ $rc -ne 0 ] && grep -q "lender is gone" "$CLUSTER_TMP/stallwatch" && [ $ms -lt 20000 ] &&
	ok "a reader of the stopped lender fails in ${ms} ms: $(tail -1 "$CLUSTER_TMP/stallwatch")" ||
	{ not_ok "reader of a stopped lender (rc $rc, $ms ms)"; cat "$CLUSTER_TMP/stallwatch"; }
sleep $((STALL > 2 ? STALL - 2 : 0))
kill -CONT "${POOL_PIDS[2]}"
pool_wait_state 1 h2 up 20 && ok "resumed after ${STALL}s, node 2 registers again" || not_ok "node 2 back"
sleep 1
kill -0 "${POOL_PIDS[2]}" && ! aborted >/dev/null && ok "and keeps running (no abort)" || not_ok "node 2 aborted after its stall"
finish

#!/bin/bash
# Peer link slots at the coordinator (peer.max_nodes = 4, 3 poolds): links
# that never register take no real node's place. While ten addresses of a
# hostile host (4, no poold) keep the coordinator's peer port full of links
# that say nothing, half a hello's header or a hello and nothing more, a
# killed node restarts and a new node joins, each within a few heartbeats;
# the coordinator's fds stay bounded, it closes each such link at its
# deadline and says what it does in a few log lines. Then a poold on a host
# whose share of such links is taken is turned away, and says why.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
WIRE="$top_srcdir/tests/integration/wire.py"
SIEGE_S=${SLOTS_SIEGE_S:-15}
POOL_OPTS="-o peer.max_nodes=4"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "slots: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
ms() { date +%s%3N; }
fds1() { ls /proc/"${POOL_PIDS[1]}"/fd 2>/dev/null | wc -l; }
# links1: the coordinator's own sockets on its peer port (not those still in the backlog).
links1() { cluster_exec 1 ss -Htnp state established "( sport = :7400 )" | grep -c "pid=${POOL_PIDS[1]},"; }
hb_ms=500 # POOL_HB

cluster_create 5 || exit 1
[ "$CLUSTER_MODE" = netns ] || { echo "1..0 # SKIP: a host with several addresses needs network namespaces"; exit 77; }
pool_node_start 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2
pool_node_start 3
for i in 2 3; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i did not join"; finish; exit 1; }; done
ok "3 poolds of at most 4 (peer.max_nodes), a hostile host beside them"

hostile=()
for k in $(seq 101 110); do
	cluster_exec 4 ip addr add "$CLUSTER_SUBNET.$k/24" dev eth0 && hostile+=("$CLUSTER_SUBNET.$k")
done
[ "${#hostile[@]}" -eq 10 ] && ok "host 4 holds 10 more addresses" || not_ok "addresses on host 4: ${hostile[*]}"

# The siege: 6 links from each address, each opened again 20 ms after the
# coordinator closes it; more than the coordinator keeps for strangers.
fd0=$(fds1)
(while :; do echo "$(fds1) $(links1)"; sleep 0.1; done) >"$CLUSTER_TMP/fds" 2>/dev/null &
sampler=$!
cluster_exec 4 python3 "$WIRE" "tcp:$(pool_coord_addr)" peer-siege "$SIEGE_S" "$(IFS=,; echo "${hostile[*]}")" 6 \
	>"$CLUSTER_TMP/siege.out" 2>&1 &
siege=$!
sleep 2

# joined I: ms from host I's poold start to its joining, by its log.
joined() {
	awk '/ started: node/ { s = $1 } /joined the coordinator/ { j = $1 }
		function ms(t, a) { split(t, a, "[:.]"); return ((a[1] * 60 + a[2]) * 60 + a[3]) * 1000 + a[4] }
		END { if (s != "" && j != "") print ms(j) - ms(s); else print "?" }' "$(cluster_dir "$1")/poold.log"
}

# A member killed and restarted: it registers again from its own address.
pool_node_kill 3
pool_wait_state 1 h3 suspect 5 || not_ok "killed h3 not suspect"
mv "$(cluster_dir 3)/poold.log" "$(cluster_dir 3)/poold.log.0"
t0=$(ms)
pool_node_start 3
if pool_wait_state 1 h3 up $((SIEGE_S - 4)) && kill -0 "$siege" 2>/dev/null; then
	t=$(($(ms) - t0))
	ok "under the siege, killed h3 is up again $t ms after its restart ($((t / hb_ms)) heartbeats), joined $(joined 3) ms after its poold started"
else
	not_ok "h3 kept out by the siege"
fi

# A node the coordinator has never seen: it waits among the strangers.
t0=$(ms)
pool_node_start 5
if pool_wait_state 1 h5 up $((SIEGE_S - 6)) && kill -0 "$siege" 2>/dev/null; then
	t=$(($(ms) - t0))
	ok "under the siege, new node h5 is up $t ms after its start ($((t / hb_ms)) heartbeats), joined $(joined 5) ms after its poold started"
else
	not_ok "h5 kept out by the siege"
fi
pool_wait_state 3 h5 up 5 && ok "and the other members see it" || not_ok "h3 does not see h5"
wait "$siege"
kill "$sampler"
wait "$sampler" 2>/dev/null
cat "$CLUSTER_TMP/siege.out"

# Its peer links: at most 32 strangers', 4 from members' addresses, and the 3
# members' (one more for a moment, between an accept and the close of the
# link it displaces); its fds: those and the members' fabric links.
peak=$(cut -d' ' -f1 "$CLUSTER_TMP/fds" | sort -n | tail -1)
links=$(cut -d' ' -f2 "$CLUSTER_TMP/fds" | sort -n | tail -1)
[ -n "$links" ] && [ "$links" -le 40 ] &&
	ok "the coordinator's peer links under the siege: at most $links (32 strangers' and the members')" ||
	not_ok "the coordinator's peer links under the siege: $links"
[ -n "$peak" ] && [ $((peak - fd0)) -le 64 ] &&
	ok "the coordinator's fds: $fd0 before, at most $peak under the siege" ||
	not_ok "the coordinator's fds: $fd0 before, $peak under the siege"
python3 - "$CLUSTER_TMP/siege.out" <<'PY' && ok "the siege's links: many turned away with a reason, the others closed to make room" ||
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r"(\d+) turned away with a reason, (\d+) closed without one", out)
assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, out
assert re.search(r"reason: 4 peer links from 10\.\S+ have not registered: no room for another", out), out
PY
	not_ok "what the siege saw"
kill -0 "${POOL_PIDS[1]}" && pctl 1 status >/dev/null && ok "the coordinator runs on" || not_ok "the coordinator died"
for i in 3 5; do
	grep -q "closed the link before answering" "$(cluster_dir $i)/poold.log" &&
		not_ok "h$i's link was closed under it" || ok "h$i's link was never closed under it"
done

# A poold on a host whose 4 links that have not registered are open: it is
# turned away and told why, not left to guess at TLS.
cluster_exec 4 python3 "$WIRE" "tcp:$(pool_coord_addr)" peer-siege 8 "$(cluster_addr 4)" 6 \
	>"$CLUSTER_TMP/squat.out" 2>&1 &
squat=$!
sleep 1
pool_node_start 4
log4="$(cluster_dir 4)/poold.log"
# Until the squatter's links are open (a loaded machine starts python
# slowly), the node is refused as the cluster is full; it tries again.
turned_away="coordinator $(pool_coord_addr) refused: 4 peer links from $(cluster_addr 4) have not registered: no room for another from that host"
for _ in $(seq 70); do grep -q "$turned_away" "$log4" && break; sleep 0.1; done
grep -q "$turned_away" "$log4" &&
	ok "a node turned away says why: $(grep -m1 -o "refused: 4 peer links.*" "$log4")" || { not_ok "the turned-away node's log"; cat "$log4"; }
! grep -q "peer.tls" "$log4" && ok "and does not blame TLS" || not_ok "it blames TLS: $(grep "peer.tls" "$log4")"
pool_node_kill 4
wait "$squat"
cat "$CLUSTER_TMP/squat.out"
python3 - "$CLUSTER_TMP/squat.out" <<'PY' && ok "links that say nothing or half a hello are closed at the deadline, 5 s after their accept" ||
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r"(\d+) closed without one \(the longest lived ([\d.]+)s\)", out)
assert m and int(m.group(1)) >= 4, out
assert 4.5 <= float(m.group(2)) < 10, out
PY
	not_ok "the deadline: $(cat "$CLUSTER_TMP/squat.out")"

# What the coordinator said of all this: one line per kind every 10 s at most.
log1="$(cluster_dir 1)/poold.log"
for pat in "refusing a peer link from .*: 4 links from its host have not registered" \
	"have not registered: closing the oldest from the host with the most" \
	"did not register within 5000 ms of its accept: closed"; do
	n=$(grep -c "$pat" "$log1")
	[ "$n" -ge 1 ] && [ "$n" -le 4 ] && ok "the coordinator said \"$pat\" in $n line(s)" ||
		not_ok "\"$pat\": $n lines"
done
finish

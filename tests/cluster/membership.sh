#!/bin/bash
# A 4-node cluster in network namespaces: it forms, every node sees every
# other, links are probed over UCX/TCP, a killed or cut-off node is dead
# within the heartbeat window and comes back, a wrong secret or another
# protocol version is refused.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "membership: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

# heartbeat 500ms, dead after 3 misses: the window is 1.5s.
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"

for i in 1 3; do
	pctl "$i" --json nodes >"$CLUSTER_TMP/nodes.json"
	python3 - "$CLUSTER_TMP/nodes.json" <<'PY' && ok "host $i sees 4 nodes up with distinct ids" || not_ok "host $i sees 4 nodes up"
import json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
assert sorted(n["name"] for n in nodes) == ["h1", "h2", "h3", "h4"], nodes
assert all(n["state"] == "up" for n in nodes), nodes
assert len({n["id"] for n in nodes}) == 4
assert all(n["dram_capacity"] > 0 and n["numa"] for n in nodes)
PY
done
pctl 2 nodes | grep -q "h4 .* up " && ok "table output lists h4 up" || not_ok "table output lists h4 up"

pctl 2 --json fabric probe >"$CLUSTER_TMP/fabric.json" && ok "fabric probe from a node" || not_ok "fabric probe from a node"
python3 - "$CLUSTER_TMP/fabric.json" <<'PY' && ok "12 links measured over tcp" || not_ok "12 links measured over tcp"
import json, sys
links = json.load(open(sys.argv[1]))["links"]
assert len(links) == 12, links
for l in links:
    assert l["error"] == 0, l
    assert l["latency_ns"] > 0 and l["bandwidth_bps"] > 0, l
    assert "tcp" in l["transport"], l
PY
pctl 4 fabric >"$CLUSTER_TMP/fabric.txt" && grep -q "GB/s" "$CLUSTER_TMP/fabric.txt" && ok "fabric matrix kept at the coordinator" || not_ok "fabric matrix kept"

# SIGKILL: dead within the window (1.5s, checked every 0.25s), back after a restart.
id4=$(python3 -c 'import json,sys; print([n["id"] for n in json.load(open(sys.argv[1]))["nodes"] if n["name"]=="h4"][0])' "$CLUSTER_TMP/nodes.json")
pool_node_kill 4
start=$SECONDS
pool_wait_state 1 h4 suspect 5 && ok "killed node suspect at once" || not_ok "killed node suspect"
pool_wait_state 1 h4 dead 5 && ok "killed node dead after $((SECONDS - start))s" || not_ok "killed node dead"
pool_wait_state 2 h4 dead 2 && ok "other nodes learn it is dead" || not_ok "other nodes learn it is dead"
pool_node_start 4
pool_wait_state 1 h4 up 10 && ok "restarted node is up again" || not_ok "restarted node up"
pctl 1 --json nodes | python3 -c 'import json,sys; assert [n["id"] for n in json.load(sys.stdin)["nodes"] if n["name"]=="h4"] == [int(sys.argv[1])]' "$id4" \
	&& ok "restarted node keeps its id" || not_ok "restarted node keeps its id"
pctl 1 --json events | python3 -c '
import json, sys
t = [e["text"] for e in json.load(sys.stdin)["events"]]
first = lambda p, after=-1: next(i for i, x in enumerate(t) if i > after and x.startswith(p))
first("node 4 (h4) at ", first("node 4 (h4) is dead", first("node 4 (h4) is suspect")))' && ok "poolctl events: h4 suspect, dead, registered again, in order" || { not_ok "events at the coordinator"; pctl 1 events; }
pctl 2 events 3 | grep -q "node 4 (h4) is up" && ok "a node shows the events it saw (last 3)" || { not_ok "events at a node"; pctl 2 events; }

# Link down: detected the same way; healed after link up.
rc=0; cluster_link_down 3 || rc=$?
if [ "$rc" -eq 0 ]; then
	pool_wait_state 1 h3 dead 6 && ok "cut-off node dead" || not_ok "cut-off node dead"
	pool_wait_state 2 h3 dead 2 && ok "others learn the cut-off node is dead" || not_ok "others learn cut-off"
	cluster_link_up 3
	pool_wait_state 1 h3 up 20 && ok "healed node up again" || not_ok "healed node up again"
	pool_wait_state 3 h4 up 5 && ok "healed node sees the others" || not_ok "healed node sees the others"
else
	echo "skip - link cut needs network namespaces"
fi

# A slow node: stopped longer than the heartbeat window, it is dead (its
# sessions' leases end); when it runs again its link is reset and it
# registers again, and what it holds still serves. It is fenced: the
# leases its clients held before are not honoured, though the client
# still runs, so an anonymous region only they held goes.
pctl 3 region create slowreg 1M placement=local >/dev/null
cluster_exec 3 sh -c 'echo $$ >"$0"; exec "$@"' "$CLUSTER_TMP/anon.pid" env POOL_SOCKET="$(pool_sock 3)" \
	"$top_builddir/tests/tools/pool-io" anon fenced 1048576 >"$CLUSTER_TMP/anon" 2>&1 &
for _ in $(seq 50); do grep -q "created fenced" "$CLUSTER_TMP/anon" && break; sleep 0.1; done
pctl 1 region info fenced >/dev/null && ok "a client of node 3 holds an anonymous region" ||
	not_ok "anonymous region of a client of node 3"
lost=$(grep -c "lost the coordinator" "$(cluster_dir 3)/poold.log")
pool_node_kill 3 STOP
pool_wait_state 1 h3 dead 6 && ok "a stopped node is dead after the heartbeat window" || not_ok "stopped node dead"
pool_node_kill 3 CONT
pool_wait_state 1 h3 up 20 && ok "running again, it registers again" || not_ok "stopped node back"
[ "$(grep -c "lost the coordinator" "$(cluster_dir 3)/poold.log")" -gt "$lost" ] \
	&& ok "its old link was reset, not resumed: it lost the coordinator and joined again" || not_ok "old link dropped"
pctl 3 status >/dev/null && pctl 3 region info slowreg >/dev/null && ok "it serves its clients again" || not_ok "stopped node serves"
pctl 1 region destroy slowreg >/dev/null
gone=
for _ in $(seq 100); do pctl 1 region info fenced >/dev/null 2>&1 || { gone=1; break; }; sleep 0.1; done
holder=$(cat "$CLUSTER_TMP/anon.pid")
[ -n "$gone" ] && kill -0 "$holder" 2>/dev/null &&
	ok "fenced: once lease.grace has passed, the old lease of its still-running client is not honoured (its anonymous region is freed)" ||
	not_ok "the anonymous region of a fenced node's client is still there"
kill "$holder" 2>/dev/null

# A node with a wrong secret does not join: the coordinator's proof of the
# secret fails at the node, which never registers nor sends its secret.
pool_node_kill 4
pool_wait_state 1 h4 dead 5
POOL_SECRET=wrong pool_node_start 4
sleep 1.5
grep -q "coordinator $(pool_coord_addr) did not prove it knows peer.secret: not joining" "$(cluster_dir 4)/poold.log" \
	&& ok "a node with another secret refuses the coordinator, and logs why" || not_ok "node logs refusal"
pool_wait_state 1 h4 dead 1 && ok "refused node stays out" || not_ok "refused node stays out"
pool_node_kill 4

# A rogue coordinator (it does not know the secret) learns nothing: the node
# sends no secret and does not register.
fake=$(cluster_port 4 7499)
cluster_exec 4 python3 "$top_srcdir/tests/integration/wire.py" "$fake" fake-coordinator "$POOL_SECRET" 2 \
	>"$CLUSTER_TMP/fake.out" 2>&1 &
fakepid=$!
sleep 0.3
pool_node_start 4 -o "coordinator=$(cluster_addr 4):$fake"
wait $fakepid && ok "$(cat "$CLUSTER_TMP/fake.out")" || { not_ok "a rogue coordinator got the secret or a register"; cat "$CLUSTER_TMP/fake.out"; }
pool_node_kill 4

# Raw peers: a hello without a challenge, a register with the secret in
# clear (what an older poold sends) and one with a forged proof are refused
# and logged; none joins.
for c in peer-no-challenge "peer-clear-secret $POOL_SECRET" peer-forged-proof; do
	# shellcheck disable=SC2086
	out=$(cluster_exec 2 python3 "$top_srcdir/tests/integration/wire.py" "tcp:$(pool_coord_addr)" $c 2>&1)
	case $c in
	peer-no-challenge) want="hello without a challenge" ;;
	peer-clear*) want="node 'rogue' sent a secret in clear" ;;
	*) want="node 'rogue' presented a wrong peer secret" ;;
	esac
	echo "$out" | grep -q "$want" && grep -q "refused peer .*$want" "$(cluster_dir 1)/poold.log" \
		&& ok "${c%% *}: refused and logged ($want)" || { not_ok "${c%% *} refused"; echo "$out"; }
done
pctl 1 --json nodes | python3 -c '
import json, sys
sys.exit(any(n["name"] == "rogue" for n in json.load(sys.stdin)["nodes"]))' \
	&& ok "no rogue node joined" || not_ok "a rogue node joined"

# A flood of links that never register (200 from one host, each trickling a
# byte a second): the coordinator keeps at most 4 of them from that host (a
# member's address: each newer link displaces the oldest from there),
# closes those at 5 s from their accept however they trickle, and a real
# node joins meanwhile. (tests/cluster/slots.sh floods from strangers.)
fds1() { ls /proc/"${POOL_PIDS[1]}"/fd 2>/dev/null | wc -l; }
fd0=$(fds1)
cluster_exec 2 python3 "$top_srcdir/tests/integration/wire.py" "tcp:$(pool_coord_addr)" peer-flood 200 14 \
	>"$CLUSTER_TMP/flood.out" 2>&1 &
floodpid=$!
sleep 2
fd1=$(fds1)
pool_node_start 4
pool_wait_state 1 h4 up 10 && ok "a node joins during the flood" || not_ok "a node kept out by the flood"
wait $floodpid
grep -q "200 links: .* 0 still open after 14s" "$CLUSTER_TMP/flood.out" && [ $((fd1 - fd0)) -le 6 ] &&
	ok "the flood held $((fd1 - fd0)) fds at the coordinator, none past 10 s ($(cat "$CLUSTER_TMP/flood.out"))" ||
	{ not_ok "flood: fds $fd0 -> $fd1"; cat "$CLUSTER_TMP/flood.out"; }
said="peer link from $(cluster_addr 2):[0-9]*, a member's address, gives way to a newer one"
grep -q "$said" "$(cluster_dir 1)/poold.log" && [ "$(grep -c "$said" "$(cluster_dir 1)/poold.log")" -le 3 ] &&
	ok "and said so, in at most 3 log lines" || not_ok "flood log lines: $(grep -c "$said" "$(cluster_dir 1)/poold.log")"
out=$(cluster_exec 2 python3 "$top_srcdir/tests/integration/wire.py" "tcp:$(pool_coord_addr)" big-hello 2>&1)
echo "$out" | grep -q "frame of 1048576 bytes exceeds what a link may send before it registers (262144)" &&
	ok "a 1 MiB frame before registering is refused at its header" || { not_ok "big frame before register"; echo "$out"; }
pool_node_kill 4

# A peer speaking another protocol version is refused with a clear message.
out=$(cluster_exec 2 python3 "$top_srcdir/tests/integration/wire.py" "tcp:$(pool_coord_addr)" version 2>&1)
echo "$out" | grep -q "protocol version 8 is not supported: this poold speaks version 3" \
	&& ok "other protocol version refused clearly" || { not_ok "other protocol version refused"; echo "$out"; }
out=$(cluster_exec 2 python3 "$top_srcdir/tests/integration/wire.py" "tcp:$(pool_coord_addr)" hello-version 2>&1)
echo "$out" | grep -q "protocol version 4 is not supported: this coordinator speaks version 3" \
	&& ok "hello with another version refused clearly" || { not_ok "hello version refused"; echo "$out"; }

# Coordinator gone: a node's cluster requests fail fast, then work once it is back.
pool_node_kill 1
sleep 0.5
t0=$(date +%s%N)
out=$(pctl 2 nodes 2>&1); rc=$?
t1=$(date +%s%N)
[ $rc -eq 1 ] && echo "$out" | grep -q "coordinator unavailable" && ok "coordinator down: clear error in $(( (t1 - t0) / 1000000 ))ms" \
	|| { not_ok "coordinator down error"; echo "$out"; }
pctl 2 status >/dev/null && ok "node still serves local requests" || not_ok "node serves local requests"
pool_node_start 1
pool_wait_state 2 h2 up 20 && ok "nodes rejoin a restarted coordinator" || not_ok "nodes rejoin a restarted coordinator"
pctl 2 --json events | python3 -c '
import json, sys
t = [e["kind"] + ": " + e["text"] for e in json.load(sys.stdin)["events"]]
lost = [i for i, x in enumerate(t) if x.startswith("coordinator: lost the coordinator")]
joined = [i for i, x in enumerate(t) if x.startswith("coordinator: joined the coordinator")]
assert lost and joined and joined[-1] > lost[-1], t' && ok "the node logged losing and rejoining the coordinator" || { not_ok "coordinator events"; pctl 2 events; }
finish

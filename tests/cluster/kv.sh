#!/bin/bash
# The KV cache on a 4-node cluster in network namespaces: values put from
# node 1 are read bit-exact from node 4, spread over the lenders by key;
# values over a namespace's DRAM capacity spill to the lenders' pmem tiers;
# the index comes back after a coordinator restart; a killed lender turns
# gets of its values into misses (no error, no hang); a persistent
# namespace's values survive restarts of the coordinator and of a lender;
# a namespace with 2 replicas loses nothing when a lender dies, makes the
# lost copies again, and so survives a second death. The coordinator
# publishes model-a's KV events (kv_events.*): a subscriber sees the keys
# stored, taken back after the coordinator restart, and removed with the
# lender that died, exactly those that became misses.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
# ns_wait I NS EXPR: poll host I's `kv stats --json` of NS (as n) until the Python expression
# EXPR holds, for up to 10 s (spills to remote lenders finish asynchronously).
ns_wait() {
	for _ in $(seq 100); do
		pctl "$1" --json kv stats "$2" >"$CLUSTER_TMP/out"
		python3 -c 'import json, sys
n = json.load(open(sys.argv[1]))["namespaces"][0]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$CLUSTER_TMP/out" "$3" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

events=ipc://${TMPDIR:-/tmp}/pool-cluster-kvevents-$$
# (the coordinator's only: a node binds its own endpoint too, for a sharded namespace's events)
coord_events() { [ "$1" = 1 ] && echo "-o kv_events.endpoint=$events -o kv_events.replay_endpoint=$events-replay"; }
POOL_NODE_OPTS=coord_events
POOL_OPTS="-o kv_events.namespace=model-a -o kv_events.block_hash=bytes"
# The events subscriber, as a router keeps its index: every event of every batch as a
# JSON line, until told to stop. It follows the publisher across the coordinator's restart
# (ZMQ reconnects): once connected again, or on a break in the sequence, it replays from 0
# what the publisher kept (its first batch clears all blocks). The sequence alone cannot
# tell a restart: the new publisher's may be past the old one's, or just follow it, by the
# time the subscriber is connected again.
/usr/bin/python3 -c '
import json, os, sys, time, msgpack, zmq
from zmq.utils.monitor import recv_monitor_message
ctx = zmq.Context()
sub = ctx.socket(zmq.SUB)
sub.connect(sys.argv[1])
sub.subscribe(b"")
mon = sub.get_monitor_socket(zmq.EVENT_CONNECTED)
out = open(sys.argv[3], "w", buffering=1)
last = -1
def take(seq, payload):
    global last
    for e in msgpack.unpackb(payload)[1]:
        out.write(json.dumps([e["type"], [h.decode() for h in e.get("block_hashes", [])]]) + "\n")
    last = seq
# A request sent while the replay endpoint is not reachable (a publisher that
# just restarted: the link to the old one is gone, the new one not made yet)
# is lost with the old link; a socket of its own per try, asked again until
# an answer comes, leaves no late answer behind to be taken for the next.
def ask(start):
    for _ in range(10):
        replay = ctx.socket(zmq.DEALER)
        replay.setsockopt(zmq.LINGER, 0)
        replay.connect(sys.argv[2])
        replay.send_multipart([b"", start.to_bytes(8, "big")])
        answered = False
        while replay.poll(2000):
            answered = True
            _, _, seq, payload = replay.recv_multipart()
            if not payload:
                break
            if int.from_bytes(seq, "big") >= start:
                take(int.from_bytes(seq, "big"), payload)
        replay.close()
        if answered:
            return
end = time.time() + 900
connected = False
while not os.path.exists(sys.argv[3] + ".stop") and time.time() < end:
    while mon.poll(0):
        connected = recv_monitor_message(mon)["event"] == zmq.EVENT_CONNECTED or connected
    if sub.poll(200):
        _, seq, payload = sub.recv_multipart()
        seq = int.from_bytes(seq, "big")
        if connected or seq != last + 1:
            connected = False
            last = -1
            ask(0)          # (re)connected, or a gap: everything the publisher kept
        if seq > last:
            take(seq, payload)
' "$events" "$events-replay" "${TMPDIR:-/tmp}/pool-cluster-kvevents-$$.log" &
evpid=$!
evlog=${TMPDIR:-/tmp}/pool-cluster-kvevents-$$.log
finish() {
	touch "$evlog.stop"; wait "$evpid"; rm -f "$evlog" "$evlog.stop"
	rm -f "${events#ipc://}" "${events#ipc://}-replay" # (ZMQ leaves its ipc sockets behind)
	[ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]
}
POOL_PMEM=32M pool_cluster_start 4 || { pool_cluster_logs; exit 1; }

pctl 2 kv create model-a 512M >/dev/null && ok "namespace created from node 2" || not_ok "create namespace"
kv 1 model-a mput blk 200 262144 7 >"$CLUSTER_TMP/out" && grep -q "200 of 200" "$CLUSTER_TMP/out" && ok "node 1 puts 200 blocks of 256K" || { not_ok "mput"; cat "$CLUSTER_TMP/out"; }
kv 4 model-a mget blk 200 7 >"$CLUSTER_TMP/out" && grep -q "200 hits of 200, all correct" "$CLUSTER_TMP/out" && ok "node 4 gets all 200 bit-exact" || { not_ok "mget from node 4"; cat "$CLUSTER_TMP/out"; }
kv 3 model-a match blk 250 | grep -q "200 of 250" && ok "prefix match from node 3" || not_ok "match"
pctl 1 --json ledger | python3 -c '
import json, sys
rows = [e for e in json.load(sys.stdin)["ledger"] if "uid" not in e and e["used"] > 0]
assert len({r["node"] for r in rows}) >= 3, rows' && ok "the values spread over at least 3 lenders" || not_ok "values spread"

kv 1 model-a put single 1048576 3 >/dev/null && kv 4 model-a get single 3 >/dev/null && ok "1M value put on node 1, read on node 4" || not_ok "single value"

# Over its DRAM capacity, a namespace spills to the lenders' pmem tiers.
pctl 1 kv create spill 2M >/dev/null
bad=0
for b in a b c; do kv 1 spill mput sp$b 8 262144 9 | grep -q "8 of 8" || bad=1; done
[ $bad -eq 0 ] && ok "3 batches of 8 blocks of 256K put into a 2M namespace" || not_ok "mput over capacity"
ns_wait 1 spill 'n["entries"] == 24 and n["evictions"] == 0 and n["spills"] >= 16 and n["used"] <= n["capacity"]' \
	&& ok "the overflow spilled to pmem, nothing evicted" || { not_ok "spill stats"; cat "$CLUSTER_TMP/out"; }
bad=0
for b in a b c; do kv 4 spill mget sp$b 8 9 | grep -q "8 hits of 8, all correct" || bad=1; done
[ $bad -eq 0 ] && ok "node 4 reads all 24 bit-exact, from either tier" || not_ok "mget across tiers"
# Values replaced while their spill or promotion is in flight: the newer wins, the accounting holds.
# Two 2M batches at once may not both fit the 2M namespace (reservations cannot spill): a batch
# one writer was told was stored must read back new; one that neither could store may stay old.
pids=()
for i in 2 3; do (for b in a b c; do kv $i spill mput sp$b 8 262144 10 >"$CLUSTER_TMP/w$i$b"; kv $i spill mget sp$b 8 10 >/dev/null 2>&1; done) & pids+=($!); done
wait "${pids[@]}"
bad=0 stored=0
for b in a b c; do
	grep -q "8 of 8 stored" "$CLUSTER_TMP/w2$b" "$CLUSTER_TMP/w3$b" || continue
	stored=$((stored + 1))
	kv 4 spill mget sp$b 8 10 >"$CLUSTER_TMP/out" 2>&1
	grep -q "8 hits of 8, all correct" "$CLUSTER_TMP/out" || { bad=1; cat "$CLUSTER_TMP/w2$b" "$CLUSTER_TMP/w3$b" "$CLUSTER_TMP/out"; }
done
[ $bad -eq 0 ] && [ $stored -gt 0 ] && ok "values rewritten by two nodes during spills read back as the new ones ($stored of 3 batches stored)" || not_ok "rewrites during spills"
ns_wait 1 spill 'n["entries"] == 24 and n["used"] <= n["capacity"]' && kv 1 spill mput more 8 262144 11 | grep -q "8 of 8" \
	&& ok "the namespace stays within its DRAM capacity and takes new values" || { not_ok "accounting after rewrites"; cat "$CLUSTER_TMP/out"; }

# A persistent namespace keeps its values in the lenders' pmem tiers, journaled there.
pctl 3 kv create durable 16M tier=pmem >/dev/null && kv 2 durable mput pk 40 65536 4 | grep -q "40 of 40" \
	&& ok "40 values put into a persistent namespace" || not_ok "persistent namespace"
pctl 1 --json ledger | python3 -c '
import json, sys
rows = [e for e in json.load(sys.stdin)["ledger"] if e.get("tier") == "pmem" and e["used"] > 0]
assert len({r["node"] for r in rows}) >= 3, rows' && ok "its values are in the pmem tiers of at least 3 lenders" || not_ok "persistent values spread"

# The coordinator restarts: the lenders are the truth, the index comes back from them.
kv 2 model-a mput keep 60 65536 5 >/dev/null
pctl 1 kv create dram-ns 4M tier=dram >/dev/null && kv 2 dram-ns mput dd 16 65536 1 >/dev/null
pool_node_kill 1
sleep 0.5
POOL_PMEM=32M pool_node_start 1 -o ledger.interval=1s # reconciled often: renumbered holdings repaired
for h in 2 3 4; do pool_wait_state 1 h$h up 20 || not_ok "h$h rejoins the restarted coordinator"; done
sleep 0.5
pctl 1 kv ls >"$CLUSTER_TMP/out" 2>&1
grep -q "^model-a " "$CLUSTER_TMP/out" && ok "the namespace is rebuilt from the lenders" || { not_ok "namespace rebuilt"; cat "$CLUSTER_TMP/out"; }
pctl 1 --json kv stats dram-ns | python3 -c '
import json, sys
n = json.load(sys.stdin)["namespaces"][0]
assert n["tier"] == "dram" and n["capacity"] == 4 << 20 and n["entries"] > 0, n' \
	&& ok "a tier=dram namespace comes back with its tier and capacity" || not_ok "tier after rebuild"
kv 4 model-a mget keep 60 5 >"$CLUSTER_TMP/out" 2>&1
hits=$(sed -n 's/.*: \([0-9]*\) hits of 60.*/\1/p' "$CLUSTER_TMP/out")
# Values that lived on the coordinator itself went with it; the rest must be back.
[ -n "$hits" ] && [ "$hits" -ge 30 ] && grep -q "all correct" "$CLUSTER_TMP/out" \
	&& ok "after the coordinator restart: $hits of 60 values back, bit-exact" || { not_ok "values after coordinator restart"; cat "$CLUSTER_TMP/out"; }
kv 4 durable mget pk 40 4 | grep -q "40 hits of 40, all correct" \
	&& ok "all 40 persistent values are back, those on the coordinator's own pmem too" || not_ok "persistent values after the coordinator restart"
kv 3 model-a mput after 20 65536 2 | grep -q "20 of 20" && kv 4 model-a mget after 20 2 | grep -q "20 hits of 20" \
	&& ok "new puts and gets work after the restart" || not_ok "puts after the restart"

# A replicated namespace: every value on two lenders.
pctl 2 kv create twice 64M replicas=2 >/dev/null && kv 2 twice mput tw 40 65536 6 | grep -q "40 of 40" \
	&& ok "40 values put into a namespace with 2 replicas" || not_ok "replicated namespace"
pctl 1 --json kv stats twice | python3 -c '
import json, sys
n = json.load(sys.stdin)["namespaces"][0]
assert n["replicas"] == 2 and n["entries"] == 40 and n["used"] >= 2 * 40 * 65536, n' \
	&& ok "each value takes room on two lenders" || not_ok "replica accounting"

# A lender dies: its values become misses, the others still hit, nothing hangs.
pool_node_kill 3
kv 4 twice mget tw 40 6 >"$CLUSTER_TMP/out" 2>&1
grep -q "40 hits of 40, all correct" "$CLUSTER_TMP/out" \
	&& ok "with node 3 just killed, every replicated value still reads bit-exact" || { not_ok "replicated gets after a kill"; cat "$CLUSTER_TMP/out"; }
t0=$SECONDS
kv 4 model-a mget blk 200 7 >"$CLUSTER_TMP/out" 2>&1; rc=$?
hits=$(sed -n 's/.*: \([0-9]*\) hits of 200.*/\1/p' "$CLUSTER_TMP/out")
[ $rc -eq 0 ] && [ -n "$hits" ] && [ "$hits" -lt 200 ] && [ "$hits" -gt 0 ] \
	&& ok "with node 3 killed: $hits hits of 200, the rest misses, in $((SECONDS - t0))s" \
	|| { not_ok "gets with a dead lender (rc $rc)"; cat "$CLUSTER_TMP/out"; }
pool_wait_state 1 h3 dead 10
kv 4 model-a mget blk 200 7 >"$CLUSTER_TMP/out" 2>&1
grep -q "all correct" "$CLUSTER_TMP/out" && ok "after it is dead: $(cat "$CLUSTER_TMP/out")" || not_ok "gets after death"
hits=$(sed -n 's/.*: \([0-9]*\) hits of 200.*/\1/p' "$CLUSTER_TMP/out")
sleep 0.5
python3 -c '
import json, sys
index, stored, removed = set(), set(), set()
for line in open(sys.argv[1]):
    kind, keys = json.loads(line)
    keys = {k for k in keys if k.startswith("blk")}
    if kind == "BlockStored":
        index |= keys
        stored |= keys
    elif kind == "BlockRemoved":
        index -= keys
        removed |= keys
    elif kind == "AllBlocksCleared":
        index.clear()
assert stored == {"blk%d" % i for i in range(200)}, sorted(stored)[:5]
assert removed and removed <= stored, len(removed)
assert len(index) == int(sys.argv[2]), (len(index), sys.argv[2])
print("%d keys stored, %d removed with node 3; the index the events build holds the %d that hit" %
      (len(stored), len(removed), len(index)))' \
	"$evlog" "${hits:-0}" >"$CLUSTER_TMP/out" 2>&1 \
	&& ok "KV events: $(cat "$CLUSTER_TMP/out")" || { not_ok "KV events of the lender's death"; cat "$CLUSTER_TMP/out"; }
kv 2 model-a mput new 50 65536 1 | grep -q "50 of 50" && ok "new values go to the live lenders" || not_ok "puts after death"
ns_wait 1 twice 'n["entries"] == 40' && kv 4 twice mget tw 40 6 | grep -q "40 hits of 40, all correct" \
	&& ok "once node 3 is dead, no replicated value is lost" || { not_ok "replicated values after death"; cat "$CLUSTER_TMP/out"; }

# The lender comes back: its persistent values are still in its pmem tier and are taken back.
POOL_PMEM=32M pool_node_start 3
pool_wait_state 1 h3 up 20 || not_ok "h3 rejoins"
ns_wait 1 durable 'n["entries"] == 40' && kv 4 durable mget pk 40 4 | grep -q "40 hits of 40, all correct" \
	&& ok "after node 3 restarts, all 40 persistent values read back bit-exact" || { not_ok "persistent values after a lender restart"; cat "$CLUSTER_TMP/out"; }

# The copies lost with node 3 were made again on the other lenders: a second lender may die.
ns_wait 1 twice 'n["entries"] == 40 and n["used"] == 2 * 40 * 65536' \
	&& ok "every replicated value has two copies again" || { not_ok "copies made again"; cat "$CLUSTER_TMP/out"; }
pool_node_kill 2
pool_wait_state 1 h2 dead 10
kv 4 twice mget tw 40 6 >"$CLUSTER_TMP/out" 2>&1
grep -q "40 hits of 40, all correct" "$CLUSTER_TMP/out" \
	&& ok "with node 2 dead too, every replicated value still reads bit-exact" || { not_ok "replicated values after a second death"; cat "$CLUSTER_TMP/out"; }
finish

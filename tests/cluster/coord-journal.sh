#!/bin/bash
# The coordinator's journal (coord.journal) on a 4-node cluster in network
# namespaces. The coordinator lends nothing; nodes 2-4 lend DRAM and pmem.
# Its journal is small (32K) so that it is rewritten to the live set
# (checkpointed) several times on the way.
#  - A region destroyed while its lender is dead does not come back when
#    the lender returns: its extent is scrubbed (with the coordinator up,
#    and across a coordinator restart).
#  - After a coordinator SIGKILL and restart, regions are known at once,
#    with their ids and addresses, even those whose lender is still down
#    (listed lost until it returns, then whole and bit-exact), and an empty
#    KV namespace is back before any node registers again.
#  - Right after that restart, a create finding no room is retryable while
#    nodes of the journal have not registered again (within the heartbeat
#    window), and refused for want of room after.
#  - A torn last record is cut off and said so; what it recorded comes back
#    from the lenders.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
IO="$top_builddir/tests/tools/pool-io"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "coord-journal: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
on() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$@"; }
JOURNAL=
coord_start() {
	pool_node_start 1 -o lend.size=0 -o ledger.interval=1s -o "coord.journal=$JOURNAL" \
		-o coord.journal_size=32K -o "metrics.listen=$(cluster_addr 1):9477" "$@" || return 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && return 0; sleep 0.05; done
	return 1
}
# metric NAME: a sample of the coordinator's metrics endpoint.
metric() {
	cluster_exec 1 python3 -c '
import sys, urllib.request
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1]).read().decode().splitlines():
    if l.startswith(sys.argv[2] + " "):
        print(l.split()[-1])' "$(cluster_addr 1):9477" "$1"
}
node_start() { POOL_PMEM=32M pool_node_start "$1" -o lend.size=64M && pool_wait_state 1 "h$1" up 20; }
node_kill() { pool_node_kill "$1"; pool_wait_state 1 "h$1" dead 20; }
# field NAME KEY: a field of region NAME in the coordinator's list ("none" if it is not listed).
field() {
	pctl 1 --json regions | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["regions"] if r["name"] == sys.argv[1]]
print(r[0].get(sys.argv[2], "") if r else "none")' "$1" "$2"
}
# logged PATTERN: the coordinator's log has a line matching PATTERN (within 5 s).
logged() {
	local deadline=$((SECONDS + 5))
	while [ $SECONDS -le $deadline ]; do
		grep -q "$1" "$(cluster_dir 1)/poold.log" && return 0
		sleep 0.2
	done
	return 1
}
# wait_field NAME KEY VALUE SECONDS
wait_field() {
	local deadline=$((SECONDS + $4))
	while [ $SECONDS -le $deadline ]; do
		[ "$(field "$1" "$2")" = "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

cluster_create 4 || exit 1
JOURNAL="$(cluster_dir 1)/coord.journal"
coord_start || exit 1
for i in 2 3 4; do node_start "$i" || { not_ok "h$i joins"; finish; exit 1; }; done

on 3 "$IO" create p3 $((8 << 20)) node=3 persistent >/dev/null && on 3 "$IO" write p3 9 >/dev/null &&
	ok "a persistent region on node 3" || not_ok "p3"
on 2 "$IO" create d2 $((4 << 20)) node=2 >/dev/null && on 2 "$IO" write d2 5 >/dev/null &&
	ok "a pinned region on node 2" || not_ok "d2"
for r in gone1 gone2; do on 4 "$IO" create $r $((4 << 20)) node=4 persistent >/dev/null ||
	not_ok "create $r"; done
pctl 2 kv create empty 4M tier=dram replicas=2 >/dev/null && ok "an empty KV namespace" ||
	not_ok "empty namespace"
for i in $(seq 150); do
	pctl 2 region create "churn$i" 64K >/dev/null && pctl 2 region destroy "churn$i" >/dev/null ||
		{ not_ok "churn $i"; break; }
done
ids_before=$(pctl 1 --json regions | python3 -c '
import json, sys
print(" ".join("%s=%d@%d" % (r["name"], r["id"], r["gva"]) for r in sorted(json.load(sys.stdin)["regions"], key=lambda r: r["name"])))')
rewrites=$(metric 'pool_journal_rewrites_total{journal="coordinator"}')
[ "${rewrites:-0}" -ge 1 ] && ok "the journal was rewritten to the live set $rewrites times on the way" ||
	not_ok "journal rewrites: '$rewrites'"

# With the coordinator up: node 4 dies, gone1 is destroyed, node 4 returns.
node_kill 4 || not_ok "h4 dead"
pctl 2 region destroy gone1 >/dev/null && ok "a region is destroyed while its lender is dead" ||
	not_ok "destroy gone1"
node_start 4 || not_ok "h4 returns"
# (a ledger round or two; longer on a loaded machine, under the sanitizers)
wait_field gone1 id none 20 && logged "region 'gone1', destroyed while it was away: scrubbing" && ok "when it returns, its extent is scrubbed, not adopted back" ||
	{ not_ok "gone1 came back: $(field gone1 id)"; }

# Anonymous regions on node 2: one client holds its region throughout; the
# other's client dies while the coordinator is down.
for r in keepme dropme; do
	cluster_exec 2 sh -c 'echo $$ >"$0"; exec "$@"' "$CLUSTER_TMP/$r.pid" \
		env POOL_SOCKET="$(pool_sock 2)" "$IO" anon $r 1048576 node=2 >"$CLUSTER_TMP/$r" 2>&1 &
done
for _ in $(seq 50); do
	grep -q created "$CLUSTER_TMP/keepme" && grep -q created "$CLUSTER_TMP/dropme" && break
	sleep 0.1
done

# Node 3 and node 4 die, gone2 is destroyed, and the coordinator is SIGKILLed.
node_kill 3 || not_ok "h3 dead"
node_kill 4 || not_ok "h4 dead"
pctl 2 region destroy gone2 >/dev/null || not_ok "destroy gone2"
pool_node_kill 1
kill "$(cat "$CLUSTER_TMP/dropme.pid")"
# (a heartbeat window of 6 s: nodes of its state have that long to come back)
coord_start -o heartbeat.misses=12 || { not_ok "the coordinator restarts"; finish; exit 1; }
started=$SECONDS
logged "coordinator journal .*: 4 region(s) back, 1 extent(s) of destroyed regions to scrub" &&
	ok "the restarted coordinator replays its journal: 4 regions, and gone2's extent on node 4 to scrub" ||
	not_ok "journal replay logged"
state=$(field p3 lost)/$(field p3 want_extents)
[ "$state" = "True/1" ] && ok "before node 3 returns, its region is listed, lost (0 of 1 extents back)" ||
	not_ok "p3 right after the restart: $state"
pctl 1 --json kv stats empty | python3 -c '
import json, sys
n = json.load(sys.stdin)["namespaces"][0]
assert n["tier"] == "dram" and n["capacity"] == 4 << 20 and n["replicas"] == 2, n' 2>/dev/null &&
	ok "the empty namespace is back before any node registers" || not_ok "empty namespace from the journal"
pool_wait_state 1 h2 up 20 || not_ok "h2 rejoins"
# No room on node 4, which is away: retryable within the window (it may come back), refused after.
pctl 2 region create settle 1M placement=node=4 >"$CLUSTER_TMP/out" 2>&1
[ $((SECONDS - started)) -lt 6 ] &&
	grep -q "coordinator unavailable: 2 node(s) of the pool not registered again" "$CLUSTER_TMP/out" &&
	ok "no room on node 4 right after the restart: retryable ($(head -1 "$CLUSTER_TMP/out" | cut -c1-100))" ||
	{ not_ok "a create right after the restart"; cat "$CLUSTER_TMP/out"; }
wait_field d2 lost False 10 && on 2 "$IO" read d2 5 >/dev/null &&
	ok "node 2's region is whole again and reads back bit-exact" || not_ok "d2 after the restart"
wait_field keepme lost False 10 && [ "$(field keepme leases)" = 1 ] &&
	ok "an anonymous region comes back whole, with the lease of its live client" ||
	not_ok "keepme after the restart: lost $(field keepme lost), leases $(field keepme leases)"
wait_field dropme id none 15 &&
	ok "the one whose client died while the coordinator was down is freed after lease.grace" ||
	not_ok "dropme is still there: $(field dropme leases) lease(s)"
kill "$(cat "$CLUSTER_TMP/keepme.pid")"
wait_field keepme id none 15 && ok "the other goes once its client goes" || not_ok "keepme stays"
[ $((SECONDS - started)) -lt 7 ] && sleep $((7 - (SECONDS - started)))
pctl 2 region create settle 1M placement=node=4 >"$CLUSTER_TMP/out" 2>&1
grep -q "no room for 1M" "$CLUSTER_TMP/out" && ! grep -q "not registered again" "$CLUSTER_TMP/out" &&
	ok "past the window, it is refused for want of room" ||
	{ not_ok "a create past the window"; cat "$CLUSTER_TMP/out"; }
node_start 3 || not_ok "h3 returns"
node_start 4 || not_ok "h4 returns"
wait_field p3 lost False 10 && on 2 "$IO" read p3 9 >/dev/null &&
	ok "once node 3 returns, its persistent region is whole and reads back bit-exact" ||
	not_ok "p3 after node 3 returned: $(field p3 lost)"
sleep 2.5
[ "$(field gone2 id)" = none ] && logged "region 'gone2', destroyed while it was away: scrubbing" &&
	ok "a region destroyed while its lender was dead stays gone across the coordinator restart" ||
	not_ok "gone2 came back: $(field gone2 id)"
ids_after=$(pctl 1 --json regions | python3 -c '
import json, sys
print(" ".join("%s=%d@%d" % (r["name"], r["id"], r["gva"]) for r in sorted(json.load(sys.stdin)["regions"], key=lambda r: r["name"]) if r["name"] not in ("gone1", "gone2")))')
want=$(echo "$ids_before" | tr ' ' '\n' | grep -v "^gone" | tr '\n' ' ' | sed 's/ $//')
[ "$ids_after" = "$want" ] && ok "regions keep their ids and global addresses: $ids_after" ||
	not_ok "ids before '$want', after '$ids_after'"
pctl 1 region destroy p3 >/dev/null && [ "$(field p3 id)" = none ] && ok "regions can be destroyed" ||
	not_ok "destroy p3"
on 2 "$IO" create late $((4 << 20)) node=2 >/dev/null && on 2 "$IO" write late 4 >/dev/null ||
	not_ok "create late"
late=$(field late id)
max=$(echo "$ids_before" | tr ' ' '\n' | sed 's/.*=\([0-9]*\)@.*/\1/' | sort -n | tail -1)
[ "$late" -gt $((max + 150)) ] 2>/dev/null && ok "a new region's id ($late) follows every id given before" ||
	not_ok "new id $late, largest before $max"

# A torn last record (late's): cut off and logged; late comes back from its lender.
pool_node_kill 1
python3 "$top_srcdir/tests/tools/journal-tear.py" "$JOURNAL" 0 || not_ok "tear the journal"
coord_start || { not_ok "the coordinator restarts on a torn journal"; finish; exit 1; }
logged "coordinator journal: a torn or corrupt record ends it" &&
	pctl 1 events >"$CLUSTER_TMP/events" 2>&1 &&
	grep -q "torn or corrupt record ends the coordinator journal" "$CLUSTER_TMP/events" &&
	ok "a torn last record is detected, logged and shown in the events" ||
	{ not_ok "torn record not reported"; cat "$CLUSTER_TMP/events"; }
pctl 1 --json status | python3 -c '
import json, sys
j = {x["name"]: x for x in json.load(sys.stdin)["journals"]}["coordinator"]
assert j["dropped"] > 0 and j["half"] == (32768 - 4096) // 2, j' &&
	ok "poolctl status shows the coordinator journal and the bytes cut" ||
	not_ok "coordinator journal in poolctl status"
pool_wait_state 1 h2 up 20 || not_ok "h2 rejoins"
wait_field late lost False 10 && on 3 "$IO" read late 4 >/dev/null &&
	ok "the region it recorded comes back from its lender, bit-exact" || not_ok "late after the tear"
[ "$(field p3 id)" = none ] && ok "the records before it hold: p3 stays destroyed" ||
	not_ok "p3 is back after the tear"
kill -0 "${POOL_PIDS[1]}" 2>/dev/null && ok "the coordinator runs on" || not_ok "coordinator died"
finish

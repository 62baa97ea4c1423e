#!/bin/bash
# The failure matrix's coordinator and lender rows on a 4-node cluster in
# network namespaces. The coordinator lends nothing, so all data lives on
# the nodes. It is SIGKILLed while clients read and write: the reads of an
# open region go on (one-sided, no coordinator needed), control calls fail
# fast with "coordinator unavailable", and once it is restarted every
# region, KV namespace, vector index and snapshot is back with the same
# bytes, rebuilt from what the lenders hold. Then a lender is SIGKILLed:
# readers of its region get an error within the heartbeat window, other
# regions are unaffected.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
IO="$top_builddir/tests/tools/pool-io"
KV="$top_builddir/tests/tools/pool-kv"
VEC="$top_builddir/tests/tools/pool-vec"
SNAP="$top_builddir/tests/tools/pool-snap"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "coord-restart: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
on() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$@"; }
coord_start() { pool_node_start 1 -o lend.size=0 -o ledger.interval=1s; }

cluster_create 4 || exit 1
coord_start || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
for i in 2 3 4; do POOL_PMEM=32M pool_node_start "$i" -o lend.size=192M || exit 1; done
for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i joins"; finish; exit 1; }; done

# What must come back.
on 2 "$IO" create spread $((48 << 20)) spread=3 pinned $((1 << 20)) >/dev/null && on 2 "$IO" write spread 7 >/dev/null &&
	ok "a 48 MiB region spread over the lenders" || not_ok "spread region"
on 3 "$IO" create pers $((8 << 20)) node=3 persistent >/dev/null && on 3 "$IO" write pers 9 >/dev/null &&
	ok "a persistent region" || not_ok "persistent region"
on 4 "$IO" create mine $((4 << 20)) node=4 >/dev/null && on 4 "$IO" write mine 3 >/dev/null &&
	ok "a region on node 4 alone" || not_ok "node-4 region"
pctl 2 kv create cache 32M >/dev/null && on 2 "$KV" cache mput k 40 65536 5 | grep -q "40 of 40" &&
	ok "40 KV values" || not_ok "KV values"
pctl 3 kv create empty 4M tier=dram replicas=2 >/dev/null && ok "an empty KV namespace" ||
	not_ok "empty namespace"
pctl 2 kv create durable 8M tier=pmem >/dev/null && on 3 "$KV" durable mput d 20 65536 6 |
	grep -q "20 of 20" && ok "20 persistent KV values" || not_ok "persistent KV values"
pctl 2 vec create idx hnsw l2 32 16M placement=local >/dev/null &&
	on 2 "$VEC" add idx 0 2000 11 200 | grep -q "added 2000" && on 2 "$VEC" search idx 20 5 10 \
	>"$CLUSTER_TMP/search.before" && ok "a vector index of 2000 vectors" || not_ok "vector index"
"$SNAP" mkimg "$CLUSTER_TMP/s.img" 32 1 99 50 30
sums=$("$SNAP" sum "$CLUSTER_TMP/s.img")
pctl 3 snap put s1 "$CLUSTER_TMP/s.img" mode=0644 >/dev/null && ok "a 32 MiB snapshot" ||
	not_ok "snapshot"
pctl 1 --json regions >"$CLUSTER_TMP/regions.before"

# The coordinator dies while a reader reads and a writer puts.
cluster_exec 4 env POOL_SOCKET="$(pool_sock 4)" "$IO" watch spread 7 6 >"$CLUSTER_TMP/watch" 2>&1 &
watcher=$!
# A second reader, reading on for a while after the restart (long enough for
# the nodes to rejoin on a loaded machine, and the check below): once its node
# registered again, its poold asks it to open the region again (the new
# coordinator has no lease of it), which libpool does by itself.
cluster_exec 3 env POOL_SOCKET="$(pool_sock 3)" "$IO" watch spread 7 24 >"$CLUSTER_TMP/watch2" 2>&1 &
watcher2=$!
cluster_exec 3 env POOL_SOCKET="$(pool_sock 3)" "$KV" cache hammer hk 65536 4 1 \
	>"$CLUSTER_TMP/hammer" 2>&1 &
hammer=$!
sleep 1
pool_node_kill 1
sleep 0.3
t0=$SECONDS
pctl 2 regions >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -ne 0 ] && [ $((SECONDS - t0)) -le 5 ] && grep -qi "coordinator unavailable" "$CLUSTER_TMP/out" &&
	ok "with the coordinator down, a control call fails in $((SECONDS - t0)) s: $(head -1 "$CLUSTER_TMP/out")" ||
	{ not_ok "control call while the coordinator is down ($rc)"; cat "$CLUSTER_TMP/out"; }
sleep 1
coord_start
for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || not_ok "h$i rejoins the restarted coordinator"; done
wait $watcher && grep -q "every byte right" "$CLUSTER_TMP/watch" &&
	ok "the reader of the open region read on through the restart: $(cat "$CLUSTER_TMP/watch")" ||
	{ not_ok "reader across the restart"; cat "$CLUSTER_TMP/watch"; }
leases=
for _ in $(seq 150); do # libpool waits up to 10 s for the lenders before it opens again
	leases=$(pctl 1 --json region info spread | python3 -c 'import json, sys; print(json.load(sys.stdin)["region"][0]["leases"])')
	[ "${leases:-0}" -ge 1 ] && break
	sleep 0.1
done
[ "${leases:-0}" -ge 1 ] && ok "the second reader opened the region again by itself: the new coordinator lists its lease" ||
	not_ok "no lease of the second reader after the restart (${leases:-none})"
wait $watcher2 && grep -q "every byte right" "$CLUSTER_TMP/watch2" &&
	ok "and read on, every byte right: $(cat "$CLUSTER_TMP/watch2")" ||
	{ not_ok "second reader across the restart"; cat "$CLUSTER_TMP/watch2"; }
wait $hammer
grep -q "torn" "$CLUSTER_TMP/hammer" && { not_ok "a torn KV value"; cat "$CLUSTER_TMP/hammer"; } ||
	ok "the KV writer saw no torn value: $(tail -1 "$CLUSTER_TMP/hammer")"
sleep 2 # a ledger round: every lender's holdings reconciled

# Everything is back, with its bytes.
pctl 1 --json regions | python3 -c '
import json, sys
before = {r["name"]: r for r in json.load(open(sys.argv[1]))["regions"]}
after = {r["name"]: r for r in json.load(sys.stdin)["regions"]}
for name, r in before.items():
    a = after.get(name)
    assert a is not None, "lost " + name
    for k in ("size", "class", "mode", "uid", "gid"):
        assert a[k] == r[k], (name, k, r[k], a[k])
print(len(before))' "$CLUSTER_TMP/regions.before" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "all $(cat "$CLUSTER_TMP/out") regions are back with their size, class, owner and mode" ||
	{ not_ok "regions after the restart"; cat "$CLUSTER_TMP/out"; }
on 3 "$IO" read spread 7 >/dev/null && ok "the spread region reads back bit-exact" || not_ok "spread region"
on 2 "$IO" read pers 9 >/dev/null && ok "the persistent region reads back bit-exact" || not_ok "pers"
on 2 "$IO" read mine 3 >/dev/null && ok "node 4's region reads back bit-exact" || not_ok "mine"
on 4 "$KV" cache mget k 40 5 | grep -q "40 hits of 40, all correct" &&
	ok "all 40 KV values are back" || not_ok "KV values after the restart"
on 4 "$KV" durable mget d 20 6 | grep -q "20 hits of 20, all correct" &&
	ok "all 20 persistent KV values are back" || not_ok "persistent KV values after the restart"
pctl 4 --json kv stats empty | python3 -c '
import json, sys
n = json.load(sys.stdin)["namespaces"][0]
assert n["tier"] == "dram" and n["capacity"] == 4 << 20 and n["replicas"] == 2 and n["entries"] == 0, n' &&
	ok "the empty namespace is back, with its tier, capacity and replicas" ||
	not_ok "the empty namespace after the restart"
on 4 "$KV" empty put e 65536 1 >/dev/null && on 2 "$KV" empty get e 1 >/dev/null &&
	ok "and takes values" || not_ok "put into the empty namespace after the restart"
on 4 "$VEC" search idx 20 5 10 >"$CLUSTER_TMP/search.after" &&
	cmp -s "$CLUSTER_TMP/search.before" "$CLUSTER_TMP/search.after" &&
	ok "the vector index answers the same 20 queries the same, searched from node 4" ||
	not_ok "vector index after the restart"
[ "$(on 4 "$SNAP" read s1)" = "$sums" ] && ok "the snapshot reads back bit-exact" ||
	not_ok "snapshot after the restart"
# Its pages' references: unknown after the restart until counted again, which
# the coordinator does by itself (a poolctl snap gc it runs) once the
# manifest and pages stop coming back.
pages() { pctl 1 --json kv stats snap.pages | python3 -c 'import json,sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])'; }
"$SNAP" mkimg "$CLUSTER_TMP/t.img" 8 9 0 0 30
s1pages=$(pages)
pctl 2 snap put t1 "$CLUSTER_TMP/t.img" >/dev/null && [ "$(pages)" -gt "$s1pages" ] &&
	pctl 2 snap rm t1 >/dev/null && [ "$(pages)" -eq "$s1pages" ] &&
	ok "a snapshot put after the restart is freed on rm" || not_ok "t1: $(pages) pages, s1 $s1pages"
for _ in $(seq 150); do
	grep -q "references counted again after the restart" "$(cluster_dir 1)/poold.log" && break
	sleep 0.1
done
grep -q "references counted again after the restart" "$(cluster_dir 1)/poold.log" &&
	ok "the coordinator counted the references again by itself" ||
	not_ok "no automatic snap gc after the restart"
pctl 3 snap gc >"$CLUSTER_TMP/out" 2>&1 && grep -q "0 page(s) nobody holds freed" "$CLUSTER_TMP/out" &&
	ok "an admin's snap gc finds nothing more to free: $(cat "$CLUSTER_TMP/out")" ||
	{ not_ok "snap gc"; cat "$CLUSTER_TMP/out"; }
pctl 3 snap rm s1 >/dev/null && [ "$(pages)" -eq 0 ] &&
	ok "then removing the snapshot frees its $s1pages pages" || not_ok "pages after rm s1: $(pages)"
on 2 "$IO" create fresh $((4 << 20)) >/dev/null && on 2 "$IO" write fresh 1 >/dev/null &&
	on 3 "$IO" read fresh 1 >/dev/null && ok "new regions work after the restart" ||
	not_ok "new region after the restart"

# A lender dies: its region's readers get an error within the heartbeat window.
pool_node_kill 4
t0=$(date +%s%N)
on 2 "$IO" read mine 3 >"$CLUSTER_TMP/out" 2>&1; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -ne 0 ] && [ $ms -le 5000 ] && ok "a read of node 4's region fails after ${ms} ms: $(head -1 "$CLUSTER_TMP/out")" ||
	{ not_ok "read of a dead lender's region ($rc, ${ms} ms)"; cat "$CLUSTER_TMP/out"; }
on 2 "$IO" read pers 9 >/dev/null && ok "the regions on other lenders read on" ||
	not_ok "other regions after node 4 died"

# Node 3 is drained: the persistent region moves to node 2's pmem tier, and
# node 2's journal records it there, so it survives node 2's restart.
# (Its persistent KV values stay: the drain says what is still in use.)
pctl 1 drain 3 >"$CLUSTER_TMP/out" 2>&1
grep -q "[1-9] region(s) migrated" "$CLUSTER_TMP/out" && ok "drain node 3: $(cat "$CLUSTER_TMP/out")" ||
	{ not_ok "drain node 3"; cat "$CLUSTER_TMP/out"; }
pctl 1 --json region info pers | python3 -c '
import json, sys
assert {e["node"] for e in json.load(sys.stdin)["region"][0]["extents"]} == {2}' &&
	ok "the persistent region moved to node 2" || not_ok "pers after the drain"
pool_node_kill 2
pool_wait_state 1 h2 dead 20
POOL_PMEM=32M pool_node_start 2 -o lend.size=192M && pool_wait_state 1 h2 up 20 ||
	not_ok "node 2 back"
for _ in $(seq 100); do
	pctl 1 --json region info pers 2>/dev/null | grep -q '"lost": *false' && break
	sleep 0.1
done
on 3 "$IO" read pers 9 >"$CLUSTER_TMP/out" 2>&1 &&
	ok "the moved persistent region reads back bit-exact after node 2 restarted" ||
	{ not_ok "the moved persistent region after node 2 restarted"; cat "$CLUSTER_TMP/out"; pctl 1 region info pers; }
finish

#!/bin/bash
# Snapshots on a 4-node cluster in network namespaces: an image put on node
# 2 has its pages spread over the lenders; it reads back bit-exact on node 3
# and clones on node 4 (whose copy is filled over the fabric), restores
# lazily there through userfaultfd; node 3 dedups against it; shared
# snapshots put from nodes 2 and 3 dedup and read back; snap place
# has nodes make their copies ahead of use (admins only); a clone saved on
# node 4 wakes on node 3 and forks on node 2, bit-exact, then is saved on
# node 3 as a running VMM and wakes on node 1; a lost lender
# turns reads into a clear error, not a hang, and other snapshots stay whole.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
SNAP="$top_builddir/tests/tools/pool-snap"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "snap: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
snap() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$SNAP" "$@"; }

POOL_OPTS="-o metrics.listen=127.0.0.1:9477" POOL_PMEM=64M pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
"$SNAP" mkimg "$CLUSTER_TMP/a.img" 64 1 99 50 30 && "$SNAP" mkimg "$CLUSTER_TMP/b.img" 64 2 99 50 30
suma=$("$SNAP" sum "$CLUSTER_TMP/a.img")
sumb=$("$SNAP" sum "$CLUSTER_TMP/b.img")

pctl 2 snap put a "$CLUSTER_TMP/a.img" mode=0644 >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "16384 pages, 4915 zero, 11469 distinct, 11469 new" "$CLUSTER_TMP/out" &&
	ok "node 2 puts a 64 MiB snapshot" || { not_ok "put on node 2"; cat "$CLUSTER_TMP/out"; }
lenders=$(pctl 1 --json ledger | python3 -c '
import json, sys
print(len({e["node"] for e in json.load(sys.stdin)["ledger"] if e["used"] > 0}))')
[ "${lenders:-0}" -ge 3 ] && ok "its pages are spread over $lenders lenders" || not_ok "pages on ${lenders:-?} lenders"
[ "$(snap 3 read a)" = "$suma" ] && ok "node 3 reads it back bit-exact" || not_ok "read on node 3"
snap 4 clones a 20 2 "$suma" >"$CLUSTER_TMP/out" 2>&1 && grep -q "0 bad, 0 failed" "$CLUSTER_TMP/out" &&
	ok "node 4 makes 20 clones from its own copy, filled over the fabric" || { not_ok "clones on node 4"; cat "$CLUSTER_TMP/out"; }
pctl 4 snap copies | grep -Eq "^a +[0-9a-f]+ +64M +ready" && ok "node 4 keeps the copy" || not_ok "copy on node 4"
pctl 3 snap put b "$CLUSTER_TMP/b.img" >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "11469 distinct, 3277 new" "$CLUSTER_TMP/out" &&
	ok "node 3 puts a second image: only its own pages are new" || { not_ok "put b on node 3"; cat "$CLUSTER_TMP/out"; }
[ "$(snap 1 read b)" = "$sumb" ] && ok "the coordinator's clients read it bit-exact" || not_ok "read b on node 1"
pctl 2 snap ls >"$CLUSTER_TMP/out" 2>&1 && grep -q "^a " "$CLUSTER_TMP/out" && grep -q "^b " "$CLUSTER_TMP/out" &&
	ok "snap ls from any node lists both" || { not_ok "snap ls on node 2"; cat "$CLUSTER_TMP/out"; }

# The shared class from other nodes: the pages go to the coordinator's node
# over the fabric, where it checks each against its SHA-256 key.
pctl 2 snap put sa "$CLUSTER_TMP/a.img" class=shared mode=0644 >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "16384 pages, 4915 zero, 11469 distinct, 11469 new" "$CLUSTER_TMP/out" &&
	ok "node 2 puts a shared snapshot" || { not_ok "shared put on node 2"; cat "$CLUSTER_TMP/out"; }
pctl 3 snap put sb "$CLUSTER_TMP/b.img" class=shared >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "11469 distinct, 3277 new" "$CLUSTER_TMP/out" &&
	ok "node 3's shared put stores only its own pages" || { not_ok "shared put on node 3"; cat "$CLUSTER_TMP/out"; }
[ "$(snap 4 read sa)" = "$suma" ] && [ "$(snap 1 read sb)" = "$sumb" ] &&
	ok "nodes 4 and 1 read them back bit-exact" || not_ok "shared reads on nodes 4 and 1"
pctl 2 --json snap info sa | python3 -c 'import json, sys
assert json.load(sys.stdin)["store"]["shared_pages"] == 11469 + 3277' &&
	ok "the shared store holds each page once" || not_ok "shared store pages"
pctl 2 snap rm sa >/dev/null && pctl 3 snap rm sb >/dev/null || not_ok "rm of the shared snapshots"

# A Firecracker-style restore on node 4 through userfaultfd, every fault
# fetched from the lenders over the fabric.
FC="$top_builddir/tests/tools/fc-client"
sock="$(cluster_dir 4)/uffd.sock"
cluster_exec 4 "$POOLCTL" -s "$(pool_sock 4)" snap serve b "$sock" --remote --max 1 \
	>"$CLUSTER_TMP/serve" 2>&1 &
serve=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
got=$(cluster_exec 4 "$FC" --timeout 60 "$sock" $((64 << 20)))
[ -n "$got" ] && [ "$got" = "$("$FC" --sum "$CLUSTER_TMP/b.img")" ] &&
	ok "node 4 restores b lazily through userfaultfd, bit-exact" || { not_ok "uffd restore on node 4: $got"; cat "$CLUSTER_TMP/serve"; }
wait $serve && ok "the page server ends with its restore" || { not_ok "snap serve on node 4"; cat "$CLUSTER_TMP/serve"; }

# A sandbox's life across nodes: a clone of a on node 4 writes 200 pages and
# is saved (a.s4); it goes away (hibernated: only the store holds it); it
# wakes on node 3 as a Firecracker VMM, every page fetched from the lenders,
# bit-exact; node 2 forks it 8 ways (lazy clones of the save, the first
# filling node 2's copy behind them), each whole and right.
snap 4 save a a.s4 200 5 >"$CLUSTER_TMP/out" 2>&1 && grep -q "^written 200 pages$" "$CLUSTER_TMP/out" &&
	ok "node 4 saves a clone of a that wrote 200 pages" || { not_ok "save on node 4"; cat "$CLUSTER_TMP/out"; }
sums4=$(sed -n 's/^sum //p' "$CLUSTER_TMP/out")
[ "$(pctl 2 --json snap info a.s4 | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0]["parent"])')" = a ] &&
	ok "every node sees the save, a as its parent" || not_ok "a.s4's parent from node 2"
sock3="$(cluster_dir 3)/uffd.sock"
cluster_exec 3 "$POOLCTL" -s "$(pool_sock 3)" snap serve a.s4 "$sock3" --remote --max 1 \
	>"$CLUSTER_TMP/serve" 2>&1 &
serve=$!
for _ in $(seq 100); do [ -S "$sock3" ] && break; sleep 0.05; done
got=$(cluster_exec 3 "$FC" --timeout 60 "$sock3" $((64 << 20)))
[ -n "$sums4" ] && [ "$got" = "xxh3 $sums4" ] &&
	ok "it wakes on node 3, lazily from the lenders, as it was saved" || { not_ok "wake on node 3: $got, saved $sums4"; cat "$CLUSTER_TMP/serve"; }
wait $serve || { not_ok "snap serve on node 3"; cat "$CLUSTER_TMP/serve"; }
snap 2 lazyclone a.s4 "$sums4" 8 >"$CLUSTER_TMP/out" 2>&1 &&
	ok "node 2 forks it 8 ways, each as it was saved" || { not_ok "forks on node 2"; cat "$CLUSTER_TMP/out"; }

# Woken on node 3 again, as a VMM served from the lenders with --track, it
# writes 300 pages and is saved while it runs (a.s4.vm: the pages that
# stayed come from node 3's copy of a.s4, made for the store); the save
# wakes on node 1, bit-exact.
cluster_exec 3 "$POOLCTL" -s "$(pool_sock 3)" snap serve a.s4 "$sock3" --remote --track --max 1 \
	>"$CLUSTER_TMP/serve" 2>&1 &
serve=$!
for _ in $(seq 100); do [ -S "$sock3" ] && break; sleep 0.05; done
rm -f "$CLUSTER_TMP/vm.in"; mkfifo "$CLUSTER_TMP/vm.in"
cluster_exec 3 "$FC" --timeout 60 --rounds 1 --write 300 "$sock3" $((64 << 20)) \
	<"$CLUSTER_TMP/vm.in" >"$CLUSTER_TMP/vm.out" 2>&1 &
vmm=$!
exec 9>"$CLUSTER_TMP/vm.in"
for _ in $(seq 600); do grep -q "^round 1 " "$CLUSTER_TMP/vm.out" && break; sleep 0.1; done
sumvm=$(sed -n 's/^round 1 //p' "$CLUSTER_TMP/vm.out")
"$POOLCTL" snap save "$sock3" "$(sed -n 's/^pid //p' "$CLUSTER_TMP/vm.out")" a.s4.vm >"$CLUSTER_TMP/out" 2>&1 &&
	grep -q "^saved a.s4.vm: 300 pages written since the last save, held [0-9.]* ms; diff 300 pages$" \
		"$CLUSTER_TMP/out" &&
	ok "node 3 saves the VMM that writes 300 pages, while it runs" ||
	{ not_ok "VMM save on node 3"; cat "$CLUSTER_TMP/out" "$CLUSTER_TMP/vm.out" "$CLUSTER_TMP/serve"; }
exec 9>&-
wait $vmm || not_ok "the VMM on node 3 ended badly: $(cat "$CLUSTER_TMP/vm.out")"
wait $serve || { not_ok "snap serve --track on node 3"; cat "$CLUSTER_TMP/serve"; }
sock1="$(cluster_dir 1)/uffd.sock"
cluster_exec 1 "$POOLCTL" -s "$(pool_sock 1)" snap serve a.s4.vm "$sock1" --remote --max 1 \
	>"$CLUSTER_TMP/serve" 2>&1 &
serve=$!
for _ in $(seq 100); do [ -S "$sock1" ] && break; sleep 0.05; done
got=$(cluster_exec 1 "$FC" --timeout 60 "$sock1" $((64 << 20)))
[ -n "$sumvm" ] && [ "$got" = "$sumvm" ] &&
	ok "it wakes on node 1 as it was when saved" || { not_ok "wake on node 1: $got, saved $sumvm"; cat "$CLUSTER_TMP/serve"; }
wait $serve || { not_ok "snap serve on node 1"; cat "$CLUSTER_TMP/serve"; }

# snap place: the admin has nodes 3 and 4 make their copies of p (put on
# node 2) ahead of use, so that a clone on node 3 fills nothing.
pctl 2 snap put p "$CLUSTER_TMP/a.img" mode=0644 >/dev/null 2>&1 || not_ok "put p on node 2"
pctl 1 snap place p 3 4 >"$CLUSTER_TMP/out" 2>&1 &&
	[ "$(cat "$CLUSTER_TMP/out")" = "$(printf 'node 3: placed\nnode 4: placed')" ] &&
	ok "the coordinator has nodes 3 and 4 place p" || { not_ok "place p on 3 4"; cat "$CLUSTER_TMP/out"; }
for i in 3 4; do
	pctl $i snap copies | grep -Eq "^p +[0-9a-f]+ +64M +ready +0 " &&
		ok "node $i has its copy ready, and no clone yet" || not_ok "copy of p on node $i"
done
snap 3 clones p 5 1 "$suma" >"$CLUSTER_TMP/out" 2>&1 && grep -q "0 bad, 0 failed" "$CLUSTER_TMP/out" &&
	pctl 3 snap copies | grep -Eq "^p +[0-9a-f]+ +64M +ready +5 " &&
	ok "5 clones on node 3 come from the placed copy: none fills" || { not_ok "clones of p on node 3"; cat "$CLUSTER_TMP/out"; }
pctl 2 --json snap place p 1 >"$CLUSTER_TMP/out" 2>&1 && grep -q '"node": *1' "$CLUSTER_TMP/out" &&
	pctl 1 snap copies | grep -Eq "^p +[0-9a-f]+ +64M +ready" &&
	ok "asked from node 2, the coordinator places p on itself" || { not_ok "place p on node 1"; cat "$CLUSTER_TMP/out"; }
pctl 1 snap place p 3 9 >"$CLUSTER_TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "no node 9" "$CLUSTER_TMP/out" && ok "an unknown node id is refused, by id" ||
	{ not_ok "place on node 9"; cat "$CLUSTER_TMP/out"; }
pctl 1 snap place p 3 3 >"$CLUSTER_TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "named twice" "$CLUSTER_TMP/out" && ok "so is a node named twice" ||
	{ not_ok "place on 3 3"; cat "$CLUSTER_TMP/out"; }
pctl 1 snap place nothing 3 >"$CLUSTER_TMP/out" 2>&1
[ $? -eq 1 ] && grep -qx "node 3: error: no snapshot 'nothing'" "$CLUSTER_TMP/out" &&
	ok "a snapshot that is not there: the node says why" || { not_ok "place nothing"; cat "$CLUSTER_TMP/out"; }
if have_nobody "$POOLCTL"; then
	chmod 0755 "$CLUSTER_TMP" "$(cluster_dir 1)" "$(cluster_dir 1)/run" && chmod 0666 "$(pool_sock 1)"
	cluster_exec 1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$POOLCTL" -s "$(pool_sock 1)" snap place p 3 >"$CLUSTER_TMP/out" 2>&1
	[ $? -eq 1 ] && grep -q "needs root or the admin group" "$CLUSTER_TMP/out" &&
		ok "a caller that is not an admin gets EPERM" || { not_ok "place as nobody"; cat "$CLUSTER_TMP/out"; }
fi

# A persistent snapshot, its pages in the lenders' pmem tiers.
"$SNAP" mkimg "$CLUSTER_TMP/ps.img" 16 7 0 0 30
sumps=$("$SNAP" sum "$CLUSTER_TMP/ps.img")
pctl 2 snap put ps "$CLUSTER_TMP/ps.img" class=persistent mode=0644 >/dev/null 2>&1 &&
	ok "a persistent snapshot put on node 2" || not_ok "persistent snapshot"
ppages() { pctl 1 --json kv stats snap.ppages | python3 -c 'import json,sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])'; }
# flushes: the persists of the pmem tiers that reached their files (msyncs), all nodes.
flushes() {
	local i n=0
	for i in 1 2 3 4; do
		n=$((n + $(cluster_exec $i python3 -c '
import urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:9477/metrics").read().decode().splitlines():
    if l.startswith("pool_pmem_flushes_total "):
        print(l.split()[-1])')))
	done
	echo $n
}

# A lender dies: reads that need its pages fail clearly and at once.
pool_node_kill 3
pool_wait_state 1 h3 dead 10
start=$SECONDS
snap 2 read b >"$CLUSTER_TMP/out" 2>&1; rc=$?
# (ELOST either way: "lost" for a page, "is dead" when b's manifest was on node 3)
if [ $rc -ne 0 ] && grep -Eq "lost|lender node 3 is dead" "$CLUSTER_TMP/out" && [ $((SECONDS - start)) -lt 30 ]; then
	ok "a read of b after node 3 died fails, saying a page is lost ($((SECONDS - start)) s)"
elif [ $rc -eq 0 ]; then
	not_ok "b read whole without node 3"
else
	not_ok "read after node 3 died ($rc)"; cat "$CLUSTER_TMP/out"
fi
pctl 4 snap copies | grep -Eq "^a +[0-9a-f]+ +64M +ready" &&
	snap 4 clones a 10 1 "$suma" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "node 4 still clones a from its copy" || { not_ok "clones from the copy after node 3 died"; cat "$CLUSTER_TMP/out"; }
pctl 1 snap place p 3 >"$CLUSTER_TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "^node 3: error: the node is not up" "$CLUSTER_TMP/out" &&
	ok "placing on the dead node 3 fails for it at once" || { not_ok "place on dead node 3"; cat "$CLUSTER_TMP/out"; }

# Node 3 comes back: its journal brings the persistent pages back, and the
# references held on them while it was away still count.
POOL_OPTS="-o metrics.listen=127.0.0.1:9477" POOL_PMEM=64M pool_node_start 3
pool_wait_state 1 h3 up 20 || not_ok "node 3 rejoins"
for _ in $(seq 50); do [ "$(snap 4 read ps 2>/dev/null)" = "$sumps" ] && break; sleep 0.2; done
[ "$(snap 4 read ps)" = "$sumps" ] && ok "the persistent snapshot reads bit-exact once node 3 is back" ||
	not_ok "persistent snapshot after node 3 restarted"
# Its pages' scrubs are grouped: a few msyncs per lender, not three per page
# (which held the coordinator's loop from its heartbeats for seconds).
pages=$(ppages) before=$(flushes)
pctl 2 snap rm ps >/dev/null && [ "$(ppages)" -eq 0 ] &&
	ok "removing it frees every one of its $pages pages, node 3's too" ||
	not_ok "persistent pages after rm: $(ppages)"
flushed=$(($(flushes) - before))
[ "$pages" -gt 100 ] && [ "$flushed" -lt $((pages / 4)) ] &&
	ok "their scrubs took $flushed flushes of the pmem tiers for $pages pages" ||
	not_ok "$flushed flushes for $pages pages"
finish

#!/bin/bash
# Snapshots on a 4-node cluster in network namespaces: an image put on node
# 2 has its pages spread over the lenders; it reads back bit-exact on node 3
# and clones on node 4 (whose copy is filled over the fabric) while node 2
# still dedups against it; a lost lender turns reads into a clear error,
# not a hang, and other snapshots stay whole.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
SNAP="$top_builddir/tests/tools/pool-snap"
FAILS=0 PASSES=0
ok() { PASSES=$((PASSES + 1)); echo "ok - $*"; }
not_ok() { FAILS=$((FAILS + 1)); echo "not ok - $*"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "snap: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
snap() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$SNAP" "$@"; }

pool_cluster_start 4 -o lend.size=256M || { pool_cluster_logs; exit 1; }
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
finish

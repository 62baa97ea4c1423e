#!/bin/bash
# The failure matrix's client crash row on a 2-node cluster in network
# namespaces: a client SIGKILLed in the middle of writing KV values (its
# reservations filled, not committed) leaves no torn value anywhere: an
# overwritten key still reads its old value whole, a new key is a miss,
# and the space it reserved comes back; a client SIGKILLed while holding
# a region's lease leaves the region whole for the others.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
IO="$top_builddir/tests/tools/pool-io"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "client-crash: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
on() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$@"; }
used() { pctl 1 --json kv stats crash | python3 -c 'import json,sys; n=json.load(sys.stdin)["namespaces"][0]; print(n["used"], n["entries"])'; }

pool_cluster_start 2 || { pool_cluster_logs; exit 1; }
pctl 1 kv create crash 16M >/dev/null && on 1 "$KV" crash put old 262144 1 >/dev/null &&
	ok "a value put from node 1" || not_ok "put"
before=$(used)

# A writer on node 2 reserves and fills an overwrite of it and a new key, then dies.
for key in old new; do
	cluster_exec 2 env POOL_SOCKET="$(pool_sock 2)" "$KV" crash vput "$key" 262144 2 hold \
		< <(sleep 60) >"$CLUSTER_TMP/vput.$key" 2>&1 &
done
for _ in $(seq 100); do
	[ "$(cat "$CLUSTER_TMP"/vput.* | grep -c 'reserved, not committed')" -eq 2 ] && break
	sleep 0.05
done
grep -q "reserved, not committed" "$CLUSTER_TMP/vput.old" && grep -q "reserved, not committed" "$CLUSTER_TMP/vput.new" &&
	ok "node 2's writer has filled two reserved values" || not_ok "the writer did not get there"
pkill -KILL -f "pool-kv crash vput"
wait 2>/dev/null
on 1 "$KV" crash get old 1 >"$CLUSTER_TMP/out" 2>&1 &&
	ok "the overwritten key reads its old value, whole" || { not_ok "old value after the crash"; cat "$CLUSTER_TMP/out"; }
on 2 "$KV" crash get new 2 >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -eq 4 ] && ok "the new key is a miss, not a partial value" || { not_ok "new key after the crash ($rc)"; cat "$CLUSTER_TMP/out"; }
for _ in $(seq 100); do [ "$(used)" = "$before" ] && break; sleep 0.1; done
[ "$(used)" = "$before" ] && ok "the dead writer's reservations are given back ($before)" ||
	not_ok "namespace after the crash: $(used), was $before"

# A reader holding a region's lease dies; the region is whole for the others.
on 1 "$IO" create shared $((4 << 20)) >/dev/null && on 1 "$IO" write shared 4 >/dev/null
cluster_exec 2 env POOL_SOCKET="$(pool_sock 2)" "$IO" watch shared 4 30 >/dev/null 2>&1 &
sleep 0.5
pkill -KILL -f "pool-io watch shared"
wait 2>/dev/null
on 1 "$IO" read shared 4 >/dev/null && on 2 "$IO" read shared 4 >/dev/null &&
	ok "a region whose reader was killed reads whole from both nodes" || not_ok "region after its reader died"
for i in 1 2; do pctl "$i" status >/dev/null || not_ok "poold $i died"; done
finish

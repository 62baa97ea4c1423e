#!/bin/bash
# A client's KV get that waits for a shard on its way leaves the transfer
# window to the client's other threads. 4 nodes in network namespaces:
# the keys whose values h4 keeps are noted, h4 dies (its shards go to the
# others) and the values are put again; then h2 is frozen (SIGSTOP) while
# h4 comes back and takes the same shards, so those it takes from h2
# refuse their keys (-EAGAIN) until h2 wakes, and libpool asks again for up
# to 3 s. On h4 one thread gets those noted keys one at a time (each in one
# request, through the window) while another writes and reads a region on
# h1 (through the window too, as it is not mapped): region transfers begin
# and end within the gets that wait, which they cannot while a waiting get
# holds the window's lock. Heartbeats of 1 s: h2, frozen for less than
# their window of 3 s, is not declared dead (which would drop what it held
# of the shards), so every value comes.
POOL_HB=1s
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-wait: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
# arriving I: the shards host I owns whose keys have not come yet.
arriving() {
	pctl "$1" --json status | python3 -c 'import json, sys
print(json.load(sys.stdin)["kv_shards"].get("arriving", 0))'
}
nodeid() { pctl "$1" --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["node_id"])'; }

POOL_OPTS="-o kv.shard_size=47M" # (rounded down to whole 2 MiB extents)
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"

pctl 1 kv create sh 160M sharded >"$CLUSTER_TMP/out" 2>&1 || { not_ok "create"; cat "$CLUSTER_TMP/out"; }
sleep 1 # (the definition reaches every node)
out=$(kv 2 sh mput a 3000 4000 7 2>&1)
kv 4 sh local a 3000 >"$CLUSTER_TMP/h4keys"
[ "$out" = "mput a: 3000 of 3000 stored" ] && [ -s "$CLUSTER_TMP/h4keys" ] &&
	ok "4 owners: 3000 values put, $(wc -l <"$CLUSTER_TMP/h4keys") of them kept by h4" || not_ok "mput: $out"

pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
for _ in $(seq 100); do [ "$(arriving 1)$(arriving 2)$(arriving 3)" = 000 ] && break; sleep 0.1; done
out=$(kv 1 sh mput a 3000 4000 7 2>&1)
[ "$out" = "mput a: 3000 of 3000 stored" ] && ok "3 owners: the values put again" || not_ok "mput again: $out"

pool_node_kill 2 STOP
pool_node_start 4
pool_wait_state 1 h4 up 20 || not_ok "h4 up"
for _ in $(seq 100); do [ "$(arriving 4)" -gt 0 ] && break; sleep 0.02; done
kv 4 sh alongside a 3000 7 "node=$(nodeid 1)" "$CLUSTER_TMP/h4keys" >"$CLUSTER_TMP/alongside" 2>&1 &
rpid=$!
sleep 0.5
pool_node_kill 2 CONT
wait $rpid
rc=$?
out=$(cat "$CLUSTER_TMP/alongside")
echo "# $out"
read -r gets hits waited within <<<"$(sed -n 's/^alongside a: \([0-9]*\) gets, \([0-9]*\) hits, .* \([0-9]*\) waited .* \([0-9]*\) of them within a waiting get$/\1 \2 \3 \4/p' <<<"$out")"
[ "$rc" = 0 ] && [ "${waited:-0}" -gt 0 ] && [ "${within:-0}" -gt 0 ] &&
	ok "gets on h4 waited for h2's shards ($waited of them) while region transfers of the same client went on ($within within those waits), no wrong byte" ||
	not_ok "a region's transfers while a get waits for a moving shard: $out (exit $rc)"
[ -n "$gets" ] && [ "$hits" = "$gets" ] && ok "every one of h4's $gets values came, those from h2 once it woke" ||
	not_ok "values missing after h2 woke: $out"
finish

#!/bin/bash
# The KV index's shards over a 4-node cluster in network namespaces (each
# keeping 16 MiB for its shards' values, kv.shard_size): every
# poold works out the same map from its copy of the member table (the
# digest), the shards spread over the four, a killed node's shards go to
# the others and no other shard moves, and when it comes back it takes
# the same shards again.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-shards: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

POOL_OPTS="-o kv.shard_size=16M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"

# shards HOSTS...: "host owners owned digest changes moves" of each host's poold.
shards() {
	local i
	for i in "$@"; do
		pctl "$i" --json status | python3 -c '
import json, sys
k = json.load(sys.stdin)["kv_shards"]
assert k["shards"] == 1024, k
print(sys.argv[1], k["owners"], k["owned"], k["digest"], k["changes"], k["moves"])' "$i" || return 1
	done
}

# agree OWNERS SECONDS HOSTS...: wait until every host maps OWNERS owners with
# one digest and their shards add up to all; the table in $CLUSTER_TMP/shards.
agree() {
	local owners=$1 deadline=$((SECONDS + $2))
	shift 2
	while [ $SECONDS -le $deadline ]; do
		shards "$@" >"$CLUSTER_TMP/shards" 2>/dev/null &&
			awk -v o="$owners" '$2 != o { bad = 1 } { d[$4] = 1; sum += $3 }
				END { n = 0; for (k in d) n++; exit !(!bad && n == 1 && sum == 1024) }' \
				"$CLUSTER_TMP/shards" && return 0
		sleep 0.2
	done
	return 1
}
owned() { awk -v h="$1" '$1 == h { print $3 }' "$CLUSTER_TMP/shards"; }
digest() { awk 'NR == 1 { print $4 }' "$CLUSTER_TMP/shards"; }

agree 4 10 1 2 3 4 && ok "the four poolds map the shards alike, 4 owners, 1,024 shards" ||
	{ not_ok "the poolds agree on the map"; cat "$CLUSTER_TMP/shards"; }
cp "$CLUSTER_TMP/shards" "$CLUSTER_TMP/shards.4"
digest4=$(digest)
awk '$3 < 192 || $3 > 320 { exit 1 }' "$CLUSTER_TMP/shards.4" &&
	ok "each owns about a quarter ($(awk '{ printf "%s%d", (NR > 1 ? " " : ""), $3 }' "$CLUSTER_TMP/shards.4"))" ||
	{ not_ok "a quarter each"; cat "$CLUSTER_TMP/shards.4"; }
pctl 2 status | grep -q "kv shards .* of 1024 here, 4 owner(s), map $digest4" &&
	ok "poolctl status shows the map" || { not_ok "poolctl status"; pctl 2 status; }

# Another node's poold asked through this one, on the link between them (no coordinator between).
nodeid() { pctl "$1" --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["node_id"])'; }
id3=$(nodeid 3) id4=$(nodeid 4)
[ -n "$id3" ] && [ "$(pctl 1 --json status "$id3" | python3 -c 'import json, sys; print(json.load(sys.stdin)["node_id"])')" = "$id3" ] &&
	ok "poolctl status $id3 through h1's poold: node $id3 answers" || not_ok "status of another node"
pctl 4 status "$(nodeid 2)" | grep -q "kv shards .* map $digest4" &&
	ok "h2 asked through h4: the same map" || not_ok "status of h2 through h4"
out=$(pctl 1 status 4000 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "node 4000 is not a live member" <<<"$out" &&
	ok "a node that is no member: refused, saying so" || not_ok "status 4000 (exit $rc: $out)"
pctl 1 status h3 >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "a node id that is none: a usage error" || not_ok "status h3 (exit $rc)"

# A node killed: once it is dead, its shards alone move, to the others.
h4=$(owned 4)
moves1=$(awk '$1 == 1 { print $6 }' "$CLUSTER_TMP/shards.4")
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
t0=$SECONDS out=$(pctl 1 status "$id4" 2>&1); rc=$?
[ $rc -eq 1 ] && [ $((SECONDS - t0)) -le 2 ] && ok "a dead node asked through h1: refused at once ($out)" ||
	not_ok "status of the dead node (exit $rc after $((SECONDS - t0)) s: $out)"
agree 3 10 1 2 3 && ok "the three left agree on a map of 3 owners" ||
	{ not_ok "3 owners"; cat "$CLUSTER_TMP/shards"; }
[ "$(digest)" != "$digest4" ] && ok "another map" || not_ok "the map changed"
gained=0 ok_keep=1
for i in 1 2 3; do
	b=$(awk -v h="$i" '$1 == h { print $3 }' "$CLUSTER_TMP/shards.4")
	[ "$(owned "$i")" -ge "$b" ] || ok_keep=0
	gained=$((gained + $(owned "$i") - b))
done
[ "$ok_keep" = 1 ] && [ "$gained" = "$h4" ] &&
	ok "h4's $h4 shards went to the others, none of theirs moved" ||
	{ not_ok "only h4's shards moved"; cat "$CLUSTER_TMP/shards.4" "$CLUSTER_TMP/shards"; }
[ "$(awk '$1 == 1 { print $6 }' "$CLUSTER_TMP/shards")" = $((moves1 + h4)) ] &&
	ok "the coordinator counted $h4 shards moved" || { not_ok "moves counted"; cat "$CLUSTER_TMP/shards"; }

# Back: the same owners make the same map.
pool_node_start 4
pool_wait_state 1 h4 up 20 || not_ok "h4 up again"
agree 4 10 1 2 3 4 && [ "$(digest)" = "$digest4" ] &&
	ok "h4 back: the four agree on the map they had, h4 owns $(owned 4) again" ||
	{ not_ok "the map of four again"; cat "$CLUSTER_TMP/shards"; }
pctl 4 status | grep -q "kv store    0 of 16 MiB given to the values of its shards" &&
	ok "poolctl status shows the memory kept for its shards" || { not_ok "kv store line"; pctl 4 status; }

# A node that keeps no memory for shards (kv.shard_size = 0) owns none.
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
pool_node_start 4 -o kv.shard_size=0
pool_wait_state 1 h4 up 20 || not_ok "h4 up again"
agree 3 10 1 2 3 4 && [ "$(owned 4)" = 0 ] &&
	ok "h4 without kv.shard_size: a member that owns no shard, the other three own them all" ||
	{ not_ok "h4 owns none"; cat "$CLUSTER_TMP/shards"; }
pool_known_abort >/dev/null && echo "# a poold aborted in UCX's wireup (see pool_known_abort)"
finish

#!/bin/bash
# Membership at size: JOIN_NODES (default 200) nodes of pool-fake-nodes on
# the real peer protocol (with the peer secret) join a coordinator from a
# third host while a real node (h2) is a member. Every one joins, none is
# closed, the coordinator lists them all up, and h2 - told of them by the
# coordinator's batched member events, not one frame per join - sees every
# one of them up too; the coordinator runs on and answers. The frames the
# fake nodes got while they joined, and the time it took, are printed
# (pool-bench scale measures 1,024 nodes beside the O(N^2) fan-out).
. "${top_srcdir:-.}/tests/cluster/pool.sh"
N=${JOIN_NODES:-200}
FAKE="$top_builddir/tests/tools/pool-fake-nodes"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "join-many: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

cluster_create 3 || exit 1
pool_node_start 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2
pool_wait_state 1 h2 up 20 || { not_ok "h2 did not join"; finish; exit 1; }
ok "a coordinator and a node"

# The fake nodes beat for 15 s after the last joined, while the test looks.
cluster_exec 3 env POOL_SECRET="$POOL_SECRET" "$FAKE" -p 4 -t 15 -n fake "$(pool_coord_addr)" "$N" \
	>"$CLUSTER_TMP/fake.out" 2>"$CLUSTER_TMP/fake.err" &
fake=$!
# count_up I: how many fake nodes host I sees up.
count_up() {
	pctl "$1" --json nodes | python3 -c 'import json, sys
print(sum(1 for n in json.load(sys.stdin)["nodes"] if n["name"].startswith("fake") and n["state"] == "up"))'
}
for i in 1 2; do
	for _ in $(seq 200); do [ "$(count_up "$i")" = "$N" ] && break; sleep 0.1; done
	seen=$(count_up "$i")
	[ "$seen" = "$N" ] && ok "h$i sees the $N fake nodes up" || not_ok "h$i sees $seen of the $N fake nodes up"
done
pctl 1 status >/dev/null && ok "the coordinator answers" || not_ok "the coordinator does not answer"
kill -0 "${POOL_PIDS[2]}" && pool_wait_state 1 h2 up 1 && ok "h2 is still up" || not_ok "h2 is not up"
wait "$fake" && ok "every fake node joined and none was closed" || not_ok "fake nodes: $(cat "$CLUSTER_TMP/fake.err")"
cat "$CLUSTER_TMP/fake.out"
finish

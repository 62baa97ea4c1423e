#!/bin/bash
# A drained node stays drained across coordinator restarts: on 3 hosts (h1
# the coordinator, with a journal, keeping no shards; h2 and h3 owning
# them), h3 is drained (poolctl drain) and hands its keys to h2; the
# coordinator is SIGKILLed and started again on its journal: when the
# nodes register again, h3 still owns no shard and every value is read
# back. h3 lends again, the coordinator restarts once more: h3 owns its
# part again.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-drain-journal: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

JOURNAL=
node_opts() {
	case $1 in
	1) echo "-o lend.size=0 -o coord.journal=$JOURNAL" ;;
	*) echo "-o kv.shard_size=32M" ;;
	esac
}
POOL_NODE_OPTS=node_opts
cluster_create 3 || exit 1
JOURNAL="$(cluster_dir 1)/coord.journal"
pool_node_start 1 || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2 && pool_node_start 3 || exit 1
pool_wait_state 1 h2 up 20 && pool_wait_state 1 h3 up 20 || { pool_cluster_logs; exit 1; }
ok "3-node cluster formed ($CLUSTER_MODE), the coordinator's journal at $JOURNAL"

# coord_restart: SIGKILL the coordinator, start it on its journal, until both nodes are back.
coord_restart() {
	pool_node_kill 1
	sleep 0.5
	pool_node_start 1 || return 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	pool_wait_state 1 h2 up 20 && pool_wait_state 1 h3 up 20
}
pctl 1 kv create dj 32M sharded >/dev/null 2>&1 || not_ok "kv create dj"
sleep 1
out=$(kv 2 dj mput d 500 2000 3 2>&1) && [ "$out" = "mput d: 500 of 500 stored" ] || not_ok "mput d: $out"
out=$(pctl 1 drain 3 2>&1) || not_ok "drain 3: $out"
pool_kv_settled 30 2 3 && [ "$(pool_kv_shard 3 owned)" = 0 ] && [ "$(pool_kv_shard 2 owned)" = 1024 ] &&
	ok "h3 drained: h2 owns all 1024 shards" || not_ok "drain: h3 owns $(pool_kv_shard 3 owned)"

coord_restart || not_ok "the coordinator restarts, the nodes register again"
sleep 1
pool_kv_settled 30 2 3 && [ "$(pool_kv_shard 3 owned)" = 0 ] &&
	ok "coordinator SIGKILLed and restarted on its journal: h3 still owns no shard" ||
	not_ok "after the restart h3 owns $(pool_kv_shard 3 owned) shards"
out=$(kv 3 dj mget d 500 3 2>&1)
[ "$out" = "mget d: 500 hits of 500, all correct" ] && ok "every value read back from h3" ||
	not_ok "after the restart: $out"

out=$(pctl 1 lend 3 64M 2>&1) || not_ok "lend 3: $out"
pool_kv_settled 30 2 3 && [ "$(pool_kv_shard 3 owned)" -gt 0 ] || not_ok "h3 lends again: it owns no shard"
coord_restart || not_ok "the coordinator restarts again"
sleep 1
owned=$(pool_kv_shard 3 owned)
pool_kv_settled 30 2 3 && [ "$owned" -gt 0 ] &&
	out=$(kv 2 dj mget d 500 3 2>&1) && [ "$out" = "mget d: 500 hits of 500, all correct" ] &&
	ok "h3 lends again, the coordinator restarts again: h3 owns $owned shards, every value read back" ||
	not_ok "after lending again and a restart: h3 owns $owned, $out"
finish

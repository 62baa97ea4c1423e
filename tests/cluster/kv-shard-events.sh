#!/bin/bash
# The KV events of a sharded namespace on a 4-node cluster in network
# namespaces: each poold publishes on its own kv_events.endpoint the events
# of the shards it owns, so a router subscribed to all four (as vLLM's
# subscriber, kv-shard-events.py) sees every key at exactly one poold, its
# owner, and no backup's copy. It stays so when keys are removed, when an
# owner is SIGKILLed (its backups tell of the keys they now serve), when it
# comes back (its shards' keys are withdrawn where they were and told of
# again at it), and when the namespace is flushed.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
SUB="$top_srcdir/tests/cluster/kv-shard-events.py"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-shard-events: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
PY=/usr/bin/python3 # (Debian's, with python3-zmq and python3-msgpack)
if ! "$PY" -c 'import zmq, msgpack' 2>/dev/null; then
	echo "skip: python3-zmq or python3-msgpack is not installed"; exit 77
fi

endpoint() { echo "tcp://$(cluster_addr "$1"):$(cluster_port "$1" 5557)"; }
replay() { echo "tcp://$(cluster_addr "$1"):$(cluster_port "$1" 5567)"; }
events_opts() { echo "-o kv_events.endpoint=$(endpoint "$1") -o kv_events.replay_endpoint=$(replay "$1")"; }
POOL_OPTS="-o kv.shard_size=64M -o kv_events.namespace=ev -o kv_events.topic=kv-events -o kv_events.block_hash=bytes"
POOL_NODE_OPTS=events_opts
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"
for i in 1 2 3 4; do
	grep -q "KV events of namespace 'ev' on $(endpoint "$i"), replay on $(replay "$i")" \
		"$(cluster_dir "$i")/poold.log" ||
		not_ok "h$i does not say it publishes"
done

pctl 1 kv create ev 128M sharded replicas=2 >/dev/null 2>&1 || not_ok "kv create ev sharded replicas=2"
sleep 1 # (the definition reaches every node)
mkdir -p "$CLUSTER_TMP/sub"
cluster_exec 1 "$PY" "$SUB" watch "$CLUSTER_TMP/sub" "$(endpoint 1),$(replay 1)" \
	"$(endpoint 2),$(replay 2)" "$(endpoint 3),$(replay 3)" "$(endpoint 4),$(replay 4)" \
	2>"$CLUSTER_TMP/sub.err" &
watcher=$!
for _ in $(seq 100); do [ -e "$CLUSTER_TMP/sub/state.json" ] && break; sleep 0.1; done
sleep 1 # (a SUB socket takes what is published once it is connected)

# shown WHAT: the subscriber's sets against the keys in $CLUSTER_TMP/expected.
shown() {
	if "$PY" "$SUB" check "$CLUSTER_TMP/sub" "$CLUSTER_TMP/expected" >"$CLUSTER_TMP/shown" 2>&1; then
		ok "$1: $(head -1 "$CLUSTER_TMP/shown")"
	else
		not_ok "$1"; sed 's/^/# /' "$CLUSTER_TMP/shown"
	fi
}
expect() { local p; for p in "$@"; do eval "printf '%s\n' $p"; done >"$CLUSTER_TMP/expected"; }

out=$(kv 2 ev mput a 3000 100 7 2>&1) && [ "$out" = "mput a: 3000 of 3000 stored" ] || not_ok "mput a: $out"
for k in $(seq 5 20); do kv 3 ev remove "a$k" >/dev/null 2>&1 || not_ok "remove a$k"; done
expect 'a{0..4}' 'a{21..2999}'
shown "3000 keys put from h2, 16 removed from h3: each key shown by one poold, its owner's, no copy"
per=$(python3 -c 'import json, sys; print(" ".join(str(len(k)) for k in json.load(open(sys.argv[1]))["keys"]))' "$CLUSTER_TMP/sub/state.json")
n=0; for c in $per; do [ "$c" -gt 0 ] && n=$((n + 1)); done
[ $n = 4 ] && ok "all four poolds tell of keys of their own ($per)" || not_ok "keys per poold: $per"

pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
sleep 1
# (h4's sets stay as it left them, with no one to take them back: a router
# drops a publisher that went; here the keys its backups now serve are
# shown twice, at h4's last word and at their new owner)
python3 - "$CLUSTER_TMP/sub/state.json" "$CLUSTER_TMP/expected" <<'EOF' >"$CLUSTER_TMP/left" 2>&1 &&
import json, sys
state = json.load(open(sys.argv[1]))
expected = set(l.strip() for l in open(sys.argv[2]))
live = [set(k) for k in state["keys"][:3]]
union = set().union(*live)
pairs = sum(len(a & b) for i, a in enumerate(live) for b in live[i + 1:])
print(f"{len(union)} of {len(expected)} keys shown by h1-h3, {pairs} by two of them")
sys.exit(0 if union == expected and pairs == 0 else 1)
EOF
	ok "h4 SIGKILLed: the backups tell of its shards' keys, $(cat "$CLUSTER_TMP/left")" ||
	{ not_ok "after h4's death"; cat "$CLUSTER_TMP/left"; }

pool_node_start 4
pool_wait_state 1 h4 up 20 || not_ok "h4 up again"
pool_kv_settled 40 1 2 3 4 || not_ok "h4 back: shards not settled"
out=$(kv 1 ev mput b 500 100 9 2>&1) && [ "$out" = "mput b: 500 of 500 stored" ] || not_ok "mput b: $out"
expect 'a{0..4}' 'a{21..2999}' 'b{0..499}'
shown "h4 back: its shards' keys withdrawn at the three, told of at h4; 500 more put"
restarts=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["restarts"][3])' "$CLUSTER_TMP/sub/state.json")
[ "$restarts" = 1 ] && ok "the subscriber saw h4's sequence start again once, and replayed it from 0" ||
	not_ok "h4's restarts seen: $restarts"

pctl 2 kv flush ev >/dev/null 2>&1 || not_ok "kv flush ev"
out=$(kv 3 ev mput c 200 100 11 2>&1) && [ "$out" = "mput c: 200 of 200 stored" ] || not_ok "mput c: $out"
expect 'c{0..199}'
shown "flushed (AllBlocksCleared at every owner), then 200 put: only those shown"

touch "$CLUSTER_TMP/sub/stop"
wait $watcher || { not_ok "the subscriber failed"; cat "$CLUSTER_TMP/sub.err"; }
finish

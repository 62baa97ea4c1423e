#!/bin/bash
# Namespaces competing for a full lender on another node (kv-share.py, as
# tests/integration/kv-share.sh runs it on one): the coordinator (h1) lends
# nothing, h2 lends 64 MiB, the client is on h2. An evicted value's extent
# is lent again once h2 has scrubbed it, a message after the eviction, so a
# put that evicted may be refused once (ENOSPC) and tried again; the
# namespace under its share must still get and keep its whole capacity.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
PY=/usr/bin/python3
pool_pyenv || { echo "1..0 # SKIP: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
finish() {
	[ "$FAILS" -gt 0 ] && pool_cluster_logs
	echo "kv-share: $PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}
cluster_create 2 || exit 1
pool_node_start 1 -o lend.size=0
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2 -o lend.size=64M
pool_wait_state 1 h2 up 20 || { not_ok "h2 joins"; finish; exit 1; }
pctl 1 kv create hog 1G >/dev/null && pctl 1 kv create small 16M >/dev/null &&
	pctl 1 kv create keep 8M evict=none >/dev/null && ok "namespaces made" || not_ok "namespaces made"
cluster_exec 2 env "${PYENV[@]}" POOL_SOCKET="$(pool_sock 2)" KV_SHARE_RETRIES=3 "$PY" \
	"$top_srcdir/tests/integration/kv-share.py" hog small keep >"$CLUSTER_TMP/out" 2>&1
tap_relay "$CLUSTER_TMP/out" 7
for i in 1 2; do
	kill -0 "${POOL_PIDS[$i]}" 2>/dev/null && ok "h$i's poold runs on" || not_ok "h$i's poold died"
done
finish

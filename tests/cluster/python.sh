#!/bin/bash
# The Python binding's pytest suite on a 3-node cluster in network
# namespaces, run from node 3 (not the coordinator) while nodes 1 and 2 lend
# too: regions, KV namespaces and their adapters (Mooncake, SGLang, LMCache),
# vector indexes and snapshots, with values spread over the lenders and
# reached over the fabric (UCX over TCP between namespaces).
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "python: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
if ! /usr/bin/python3 -c 'import pytest, numpy' 2>/dev/null; then
	echo "skip: python3-pytest or python3-numpy is not installed"; exit 77
fi
pool_pyenv || { echo "skip: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }

pool_cluster_start 3 || { pool_cluster_logs; exit 1; }
cluster_exec 3 "${PYENV[@]}" POOL_SOCKET="$(pool_sock 3)" timeout 600 /usr/bin/python3 -m pytest -q \
	-p no:cacheprovider "$top_srcdir/python/tests" >"$CLUSTER_TMP/out" 2>&1 \
	&& ok "the pytest suite passes from node 3: $(grep -E 'passed|failed' "$CLUSTER_TMP/out" | tail -1)" \
	|| { not_ok "the pytest suite from node 3"; tail -40 "$CLUSTER_TMP/out"; }
# Values put from Python on node 3 are spread over the lenders and read back from node 2.
py() { local i=$1; shift; cluster_exec "$i" "${PYENV[@]}" POOL_SOCKET="$(pool_sock "$i")" timeout 60 /usr/bin/python3 -c "$@"; }
py 3 '
import numpy as np, pool
with pool.Pool() as p:
    p.create_kv("spread", 64 << 20)
    with p.kv("spread") as kv:
        vals = [np.full(256 << 10, i, np.uint8) for i in range(64)]
        assert kv.put_batch([b"v%d" % i for i in range(64)], vals) == [0] * 64' >"$CLUSTER_TMP/out" 2>&1 \
	|| { not_ok "64 values put from node 3"; cat "$CLUSTER_TMP/out"; }
pctl 1 --json ledger | python3 -c '
import json, sys
rows = [e for e in json.load(sys.stdin)["ledger"] if "uid" not in e and e["used"] > 0]
nodes = sorted({r["node"] for r in rows})
assert len(nodes) >= 2, rows
print(nodes)' >"$CLUSTER_TMP/nodes" 2>&1 \
	&& ok "the 64 values put from Python on node 3 are on lenders $(cat "$CLUSTER_TMP/nodes")" \
	|| { not_ok "values spread over the lenders"; cat "$CLUSTER_TMP/nodes"; }
py 2 '
import numpy as np, pool
with pool.Pool() as p, p.kv("spread") as kv:
    bufs = [np.empty(256 << 10, np.uint8) for _ in range(64)]
    assert kv.get_batch_into([b"v%d" % i for i in range(64)], bufs) == [256 << 10] * 64
    assert all((b == i).all() for i, b in enumerate(bufs))
    print("64 of 64 bit-exact")' >"$CLUSTER_TMP/out" 2>&1 \
	&& ok "node 2 reads them back into numpy arrays: $(cat "$CLUSTER_TMP/out")" \
	|| { not_ok "reads from node 2"; cat "$CLUSTER_TMP/out"; }
finish

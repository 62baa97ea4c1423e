#!/bin/bash
# Vector indexes on a 4-node cluster in network namespaces: an index built
# on node 2 is searched in place there and, near its data, from node 4 and
# from the coordinator, with the same results; poolctl vec from any node;
# adds from another node are refused; a dead lender turns searches into
# errors, not hangs.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
VEC="$top_builddir/tests/tools/pool-vec"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "vec: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
vec() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$VEC" "$@"; }

pool_cluster_start 4 || { pool_cluster_logs; exit 1; }

pctl 2 vec create idx hnsw l2 64 64M placement=local >"$CLUSTER_TMP/out" 2>&1 \
	&& grep -Eq "^idx +hnsw +l2 +64 +0 " "$CLUSTER_TMP/out" && ok "node 2 creates an HNSW index on its own memory" || { not_ok "vec create"; cat "$CLUSTER_TMP/out"; }
vec 2 add idx 0 5000 11 500 | grep -q "added 5000" && ok "node 2 adds 5000 clustered vectors in place" || not_ok "add on node 2"
vec 2 search idx 40 23 10 >"$CLUSTER_TMP/local" && [ "$(wc -l <"$CLUSTER_TMP/local")" -eq 40 ] \
	&& ok "node 2 searches it in place" || not_ok "local search"
vec 4 search idx 40 23 10 >"$CLUSTER_TMP/remote" 2>"$CLUSTER_TMP/err" && cmp -s "$CLUSTER_TMP/local" "$CLUSTER_TMP/remote" \
	&& ok "node 4 searches it near its data: the same 40 x 10 results" || { not_ok "remote search from node 4"; cat "$CLUSTER_TMP/err"; diff "$CLUSTER_TMP/local" "$CLUSTER_TMP/remote" | head; }
vec 1 search idx 40 23 10 >"$CLUSTER_TMP/coord" && cmp -s "$CLUSTER_TMP/local" "$CLUSTER_TMP/coord" \
	&& ok "the coordinator's clients get the same results" || not_ok "search from node 1"
pctl 3 --json vec ls | python3 -c '
import json, sys
ix = json.load(sys.stdin)["indexes"]
assert len(ix) == 1 and ix[0]["name"] == "idx" and ix[0]["node"] == 2 and ix[0]["count"] == 5000, ix' \
	&& ok "vec ls from node 3: the index, its 5000 vectors, on node 2" || not_ok "vec ls"
vec 4 add idx 5000 10 11 >"$CLUSTER_TMP/out" 2>&1
grep -q "is on another node" "$CLUSTER_TMP/out" && ok "adds from node 4 are refused, saying why" || { not_ok "remote add refused"; cat "$CLUSTER_TMP/out"; }

# A flat index on the coordinator, searched from a node: exact results, one hop.
pctl 1 vec create exact flat ip 64 32M >/dev/null && vec 1 add exact 0 3000 5 | grep -q "added 3000" \
	&& ok "a flat inner-product index on the coordinator" || not_ok "flat index"
vec 1 search exact 20 8 5 >"$CLUSTER_TMP/local" && vec 3 search exact 20 8 5 >"$CLUSTER_TMP/remote" \
	&& cmp -s "$CLUSTER_TMP/local" "$CLUSTER_TMP/remote" && ok "searched from node 3: the same results" || not_ok "flat remote search"

# Bad requests get clear errors.
pctl 4 vec info nosuch >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "no region 'nosuch'" "$CLUSTER_TMP/out" && ok "an unknown index" || not_ok "unknown index ($rc)"
pctl 4 region create plain 4M >/dev/null
pctl 4 vec info plain >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "holds no vector index" "$CLUSTER_TMP/out" && ok "a region that is no index" || { not_ok "plain region ($rc)"; cat "$CLUSTER_TMP/out"; }
pctl 2 vec create idx hnsw l2 64 64M >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "exists" "$CLUSTER_TMP/out" && ok "a name in use is refused" || { not_ok "duplicate name ($rc)"; cat "$CLUSTER_TMP/out"; }
pctl 2 vec create huge hnsw l2 5000 64M >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -eq 1 ] && ! pctl 2 region info huge >/dev/null 2>&1 && ok "a bad dimension is refused and leaves no region" || { not_ok "bad dimension ($rc)"; cat "$CLUSTER_TMP/out"; }

# The lender dies: searches from elsewhere fail at once, they do not hang.
pool_node_kill 2
pool_wait_state 1 h2 dead 10
t0=$SECONDS
vec 4 search idx 5 23 10 >"$CLUSTER_TMP/out" 2>&1; rc=$?
[ $rc -ne 0 ] && [ $((SECONDS - t0)) -lt 10 ] && ok "with node 2 dead, a search fails in $((SECONDS - t0))s: $(head -1 "$CLUSTER_TMP/out")" || { not_ok "search of a dead lender's index ($rc)"; cat "$CLUSTER_TMP/out"; }
vec 3 search exact 20 8 5 >"$CLUSTER_TMP/remote" && cmp -s "$CLUSTER_TMP/local" "$CLUSTER_TMP/remote" \
	&& ok "the other index still answers" || not_ok "other index after the death"
pctl 1 vec drop exact | grep -q dropped && ok "vec drop" || not_ok "vec drop"
finish

#!/bin/bash
# Regions on a 4-node cluster in network namespaces: a process on node 1
# creates a region placed on node 2 and one striped over the cluster; a
# process on node 4 reads back exactly what node 1 wrote (checksums over
# 256 MiB); a killed lender makes reads of its regions fail, not hang.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
IO="$top_builddir/tests/tools/pool-io"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "regions: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
# io HOST ARGS...: pool-io inside host HOST against its own poold.
# Every call is bounded: a hang is a failure, not a stuck test.
io() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$IO" "$@"; }

pool_cluster_start 4 || { pool_cluster_logs; exit 1; }

io 1 create onb $((64 << 20)) node=2 >"$CLUSTER_TMP/out" && ok "node 1 creates a region on node 2" || not_ok "create on node 2"
pctl 3 --json region info onb | python3 -c 'import json,sys; r=json.load(sys.stdin)["region"][0]; assert [e["node"] for e in r["extents"]]==[2], r' \
	&& ok "its extent is on node 2" || not_ok "extent on node 2"
io 1 create spread $((256 << 20)) spread=3 pinned $((1 << 20)) >"$CLUSTER_TMP/out" && ok "node 1 creates a 256M region striped over 3 lenders" || { not_ok "create striped"; cat "$CLUSTER_TMP/out"; }
pctl 1 --json region info spread | python3 -c 'import json,sys; r=json.load(sys.stdin)["region"][0]; assert len({e["node"] for e in r["extents"]})==3 and r["stripe"]==1<<20, r' \
	&& ok "striped over 3 distinct lenders" || not_ok "striped over 3 lenders"

w1=$(io 1 write onb 11 | awk '{print $NF}')
r4=$(io 4 read onb 11 | awk '{print $NF}')
[ -n "$w1" ] && [ "$w1" = "$r4" ] && ok "node 4 reads what node 1 wrote on node 2 ($r4)" || not_ok "node-2 region read back ($w1 vs $r4)"
w1=$(io 1 write spread 12 | awk '{print $NF}')
r4=$(io 4 read spread 12 | awk '{print $NF}')
[ -n "$w1" ] && [ "$w1" = "$r4" ] && ok "256M striped region bit-exact on node 4 ($r4)" || not_ok "striped read back ($w1 vs $r4)"
r4=$(io 4 bread spread 12 | awk '{print $NF}')
[ -n "$w1" ] && [ "$w1" = "$r4" ] && ok "batched read of 4096 pieces bit-exact" || not_ok "batched read ($w1 vs $r4)"
# Through buffers shared with poold (pool_buf_alloc), moved in place, on the striped region.
w1=$(cluster_exec 1 env POOL_IO_BUF=1 POOL_SOCKET="$(pool_sock 1)" "$IO" write spread 13 | awk '{print $NF}')
r4=$(cluster_exec 4 env POOL_IO_BUF=1 POOL_SOCKET="$(pool_sock 4)" "$IO" read spread 13 | awk '{print $NF}')
[ -n "$w1" ] && [ "$w1" = "$r4" ] && ok "in place through pool_buf_alloc buffers: bit-exact on node 4 ($r4)" ||
	not_ok "pool_buf_alloc path ($w1 vs $r4)"
io 1 create counter 4096 node=3 >/dev/null
io 2 count counter 500 >"$CLUSTER_TMP/c2" & c2=$!
io 4 count counter 500 >"$CLUSTER_TMP/c4"
wait $c2
io 1 count counter 0 | grep -q "counter counter: 1000$" && ok "1000 fetch-adds from two nodes add up" || { not_ok "remote atomics"; cat "$CLUSTER_TMP"/c2 "$CLUSTER_TMP"/c4; }
io 2 map onb 11 >"$CLUSTER_TMP/out" && ok "the lender maps its local region zero-copy" || { not_ok "local map on the lender"; cat "$CLUSTER_TMP/out"; }
rc=0; io 3 map onb 11 >"$CLUSTER_TMP/out" || rc=$?
[ $rc -eq 3 ] && ok "a remote node cannot map it (EREMOTE)" || not_ok "remote map refused (rc $rc)"
io 3 bounds onb >/dev/null && ok "out-of-range access is refused" || not_ok "bounds"

# A client on node 3 holding an anonymous region dies: the region goes after lease.grace (5s).
io 3 anon tmp 1048576 >"$CLUSTER_TMP/anon" & anon=$!
for _ in $(seq 50); do grep -q created "$CLUSTER_TMP/anon" && break; sleep 0.1; done
pctl 1 regions | grep -q "^tmp " && ok "anonymous region held from node 3" || not_ok "anonymous region created"
pkill -KILL -f "pool-io anon tmp"; wait $anon 2>/dev/null
gone=0
for _ in $(seq 100); do pctl 1 regions | grep -q "^tmp " || { gone=1; break; }; sleep 0.1; done
[ $gone -eq 1 ] && ok "freed once its holder on node 3 died" || not_ok "anonymous region freed after holder death"
pctl 1 regions | grep -q "^onb " && ok "named regions stay" || not_ok "named regions stay"

# Placement that cannot be satisfied: a clear ENOSPC naming free space per node.
out=$(pctl 1 region create huge 100G 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "no room for 100G.*largest free dram extent per node" \
	&& ok "ENOSPC says how much is free where" || { not_ok "ENOSPC message"; echo "$out"; }

# A killed lender: reads of its region fail with an error (no hang); others are unaffected.
pool_node_kill 2
t0=$SECONDS
out=$(io 4 read onb 11 2>&1); rc=$?
[ $rc -eq 1 ] && ok "reading a dead lender's region fails in $((SECONDS - t0))s: $(echo "$out" | tail -1)" \
	|| { not_ok "dead lender read (rc $rc)"; echo "$out"; }
pool_wait_state 1 h2 dead 10
out=$(io 4 read onb 11 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "dead" && ok "open after the lender is dead: clear error" || { not_ok "open on dead lender (rc $rc)"; echo "$out"; }
io 1 create after $((16 << 20)) any >/dev/null && r=$(io 3 write after 5 >/dev/null && io 4 read after 5 | awk '{print $NF}') && [ -n "$r" ] \
	&& ok "new regions avoid the dead lender and work" || not_ok "new region after lender death"
finish

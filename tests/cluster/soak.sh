#!/bin/bash
# A bounded soak: a 4-node cluster with pmem tiers under a mixed workload
# (KV puts and gets in a cache, a persistent and a replicated namespace,
# region reads, remote vector searches, reads and clones of a persistent
# snapshot) while a random lender is SIGKILLed and restarted every round.
# At the end: no wrong byte was ever read, every persistent value, the
# persistent region and the snapshot are back whole, the vector index
# answers as at the start, every poold is alive, and once everything is
# dropped no extent is left in use. SOAK_ROUNDS (default 6) sets the
# length; a round takes a few seconds.
#
# The lenders killed are nodes 3 and 4; every client that reads over the
# fabric runs on node 1 or 2, which are never killed, and the namespaces
# are large enough that no value spills (a spill is a copy its lender
# makes, over endpoints of its own). A process that goes
# while UCX is still setting up its endpoint to a poold (a client whose own
# poold was just killed exits at once) can make that poold abort on an
# assertion of UCX 1.13 (Debian 12), fixed upstream (see pool-failures(7),
# KNOWN PROBLEMS). When that happened nevertheless and checks failed after
# it, the soak cannot conclude: it says so and is skipped (exit 77).
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
IO="$top_builddir/tests/tools/pool-io"
VEC="$top_builddir/tests/tools/pool-vec"
SNAP="$top_builddir/tests/tools/pool-snap"
ROUNDS=${SOAK_ROUNDS:-6}
finish() {
	local who
	[ "$FAILS" -gt 0 ] && pool_cluster_logs
	echo "soak: $PASSES passed, $FAILS failed"
	if [ "$FAILS" -gt 0 ] && who=$(pool_known_abort); then
		echo "SKIP: the poold of $who aborted on the UCX 1.13 assertion fixed upstream" \
			"(openucx/ucx pull request 8175); the checks that failed after it say nothing" \
			"of this tree"
		exit 77
	fi
	[ "$FAILS" -eq 0 ]
}
on() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$@"; }
export POOL_PMEM=32M

pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
pctl 1 kv create cache 64M >/dev/null && pctl 1 kv create durable 64M tier=pmem >/dev/null &&
	pctl 1 kv create twice 96M replicas=2 >/dev/null && ok "three namespaces" || not_ok "namespaces"
on 3 "$IO" create preg $((2 << 20)) local persistent >/dev/null && on 3 "$IO" write preg 7 >/dev/null &&
	ok "a persistent region on node 3" || not_ok "persistent region"
on 1 "$IO" create dreg $((4 << 20)) local >/dev/null && on 1 "$IO" write dreg 8 >/dev/null &&
	ok "a region on the coordinator" || not_ok "coordinator region"
pctl 1 vec create vidx hnsw l2 32 16M placement=local >/dev/null && on 1 "$VEC" add vidx 0 3000 5 >/dev/null &&
	on 3 "$VEC" search vidx 20 9 5 >"$CLUSTER_TMP/vbase" 2>/dev/null && ok "a vector index on the coordinator" || not_ok "vector index"
"$SNAP" mkimg "$CLUSTER_TMP/snap.img" 8 3 0 0 30
sums=$("$SNAP" sum "$CLUSTER_TMP/snap.img")
pctl 2 snap put snap "$CLUSTER_TMP/snap.img" class=persistent mode=0644 >/dev/null &&
	ok "a persistent snapshot, its pages over the lenders" || not_ok "snapshot"

: >"$CLUSTER_TMP/stored"
for r in $(seq "$ROUNDS"); do
	victim=$((3 + RANDOM % 2))
	# The workload, in the background, while the victim dies and comes back.
	(
		for w in 1 2 3; do
			on 1 "$KV" cache mput c$r.$w 32 65536 $r 2>&1
			on 1 "$KV" durable mput d$r.$w 16 65536 $r 2>&1 | sed "s/^/durable d$r.$w /"
			on 1 "$KV" twice mput t$r.$w 16 65536 $r 2>&1
			on 2 "$KV" cache mget c$r.$w 32 $r 2>&1
			on 2 "$KV" twice mget t$r.$w 16 $r 2>&1
			on 2 "$IO" read dreg 8 2>&1
			# (a search from a node that is down fails: only answers are compared)
			if on 2 "$VEC" search vidx 20 9 5 >"$CLUSTER_TMP/v$r" 2>/dev/null; then
				cmp -s "$CLUSTER_TMP/v$r" "$CLUSTER_TMP/vbase" || echo "vector results differ"
			fi
			# (a page on the dead lender fails the read: only what is read is compared)
			got=$(on 1 "$SNAP" read snap 2>/dev/null) && [ "$got" != "$sums" ] &&
				echo "snapshot read differs"
			on 1 "$SNAP" clones snap 4 1 "$sums" 2>&1 | grep -E " [1-9][0-9]* bad,"
		done
	) >"$CLUSTER_TMP/work$r" &
	work=$!
	sleep 0.3
	pool_node_kill "$victim"
	pool_wait_state 1 "h$victim" dead 10 || not_ok "round $r: h$victim not declared dead"
	pool_node_start "$victim"
	pool_wait_state 1 "h$victim" up 20 || not_ok "round $r: h$victim did not come back"
	wait "$work"
	grep "^durable .* of 16 stored" "$CLUSTER_TMP/work$r" | sed -n 's/^durable \([^ ]*\) mput [^:]*: 16 of 16 stored$/\1/p' >>"$CLUSTER_TMP/stored"
	if grep -Eq "wrong|differ| bad" "$CLUSTER_TMP/work$r"; then
		not_ok "round $r (h$victim killed): wrong data read"; grep -E "wrong|differ| bad" "$CLUSTER_TMP/work$r"
	else
		ok "round $r: h$victim killed and back, every byte read was right"
	fi
done

# Every batch that was stored whole in the persistent namespace is back whole.
bad=0 n=0
while read -r p; do
	n=$((n + 1))
	r=${p#d}; r=${r%%.*}
	on 2 "$KV" durable mget "$p" 16 "$r" >"$CLUSTER_TMP/out" 2>&1
	grep -q "16 hits of 16, all correct" "$CLUSTER_TMP/out" || { bad=1; cat "$CLUSTER_TMP/out"; }
done <"$CLUSTER_TMP/stored"
[ $bad -eq 0 ] && [ $n -gt 0 ] && ok "all $n persistent batches stored whole read back whole" || not_ok "persistent values after the soak ($n batches)"
on 2 "$IO" read preg 7 >/dev/null 2>&1 && ok "the persistent region reads back bit-exact" || not_ok "persistent region after the soak"
on 2 "$IO" read dreg 8 >/dev/null 2>&1 && ok "the coordinator's region reads back bit-exact" || not_ok "coordinator region after the soak"
on 2 "$VEC" search vidx 20 9 5 2>/dev/null | cmp -s - "$CLUSTER_TMP/vbase" && ok "the vector index answers as at the start" || not_ok "vector index after the soak"
[ "$(on 2 "$SNAP" read snap)" = "$sums" ] && ok "the snapshot reads back bit-exact" || not_ok "snapshot after the soak"
alive=0
for i in 1 2 3 4; do pctl "$i" status >/dev/null 2>&1 && alive=$((alive + 1)); done
[ $alive -eq 4 ] && ok "every poold is alive" || not_ok "$alive poolds alive"

# Drop everything: nothing may stay in use (once freed extents are scrubbed).
for ns in cache durable twice; do pctl 1 kv drop $ns >/dev/null; done
pctl 1 vec drop vidx >/dev/null
pctl 1 snap rm snap >/dev/null
for reg in preg dreg; do pctl 1 region destroy $reg >/dev/null; done
for _ in $(seq 100); do
	used=$(pctl 1 --json ledger | python3 -c 'import json, sys
print(sum(e["used"] for e in json.load(sys.stdin)["ledger"] if "uid" not in e))')
	[ "$used" = 0 ] && break
	sleep 0.1
done
[ "$used" = 0 ] && ok "with everything dropped, no extent is left in use" || { not_ok "$used bytes still in use"; pctl 1 ledger; pctl 1 regions; }
finish

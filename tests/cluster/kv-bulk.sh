#!/bin/bash
# A flush and a drop of many keys held by another node (kv-reap.c): the
# coordinator (h1) lends nothing, so every value is on h2. The flush and
# the drop answer at once and the namespace is empty at once; the
# coordinator frees the entries from its loop, each value a scrub h2
# answers (at most REGION_SCRUBS_MAX in flight), and h2 drops its holdings
# one scrub at a time. A prober on each node times pool_status() round
# trips meanwhile (told, not judged). In the end h2's arena lends only
# what was put since, and h2 holds only those extents (pool_holdings).
# KV_BULK_KEYS sets the number of keys (100,000 by default).
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KL="$top_builddir/tests/tools/pool-kvload"
N=${KV_BULK_KEYS:-100000}
LATE=1000
VLEN=64
MPORT=9464
kl() { local i=$1; shift; cluster_exec "$i" env POOL_SOCKET="$(pool_sock "$i")" "$KL" "$@"; }
finish() {
	[ "$FAILS" -gt 0 ] && pool_cluster_logs
	echo "kv-bulk: $PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

# h2_used: bytes of h2's arena lent out, as the coordinator counts them.
h2_used() {
	pctl 1 --json nodes -v | python3 -c 'import json, sys
print(sum(a["used"] for n in json.load(sys.stdin)["nodes"] if n["id"] == 2 for a in n["arenas"]))'
}

# h2_holds: the extents h2 holds for the pool, by its own record.
h2_holds() {
	cluster_exec 2 python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().splitlines():
    if l.startswith("pool_holdings "): print(int(float(l.split()[1])))' "http://127.0.0.1:$MPORT/metrics"
}

# freed N BYTES HOLDS: wait (60 s at most) for the Nth freeing to end at the
# coordinator and the scrubs to be answered: h2 lends BYTES and holds HOLDS.
freed() {
	local _
	for _ in $(seq 600); do
		[ "$(grep -c "entries .* freed in" "$(cluster_dir 1)/poold.log")" -ge "$1" ] &&
			[ "$(h2_used)" = "$2" ] && [ "$(h2_holds)" = "$3" ] && return 0
		sleep 0.1
	done
	echo "# h2 lends $(h2_used) bytes and holds $(h2_holds) extents"
	return 1
}

# probing WHAT COMMAND...: the command, while a prober on each node times its poold's answers.
probing() {
	local what=$1 p1 p2 i
	shift
	p1=$(cluster_spawn 1 "$CLUSTER_TMP/probe1" env POOL_SOCKET="$(pool_sock 1)" "$KL" probe)
	p2=$(cluster_spawn 2 "$CLUSTER_TMP/probe2" env POOL_SOCKET="$(pool_sock 2)" "$KL" probe)
	sleep 0.3
	"$@"
	cluster_kill "$p1" TERM
	cluster_kill "$p2" TERM
	for i in 1 2; do
		for _ in $(seq 50); do grep -q "^probes" "$CLUSTER_TMP/probe$i" && break; sleep 0.1; done
		echo "# $what, h$i: $(grep "^probes" "$CLUSTER_TMP/probe$i"), $(grep -c "^slow" "$CLUSTER_TMP/probe$i") of 10 ms or more"
		grep -q "^probes [1-9]" "$CLUSTER_TMP/probe$i" && ok "h$i answered its prober throughout" ||
			not_ok "h$i's prober got no answer"
		rm -f "$CLUSTER_TMP/probe$i"
	done
}

cluster_create 2 || exit 1
pool_node_start 1 -o lend.size=0
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2 -o lend.size=256M -o "metrics.listen=127.0.0.1:$MPORT"
pool_wait_state 1 h2 up 20 || { not_ok "h2 joins"; finish; exit 1; }

pctl 1 kv create bulk 128M tier=dram >/dev/null && ok "a namespace" || not_ok "a namespace"
kl 1 fill bulk "$N" "$VLEN" >"$CLUSTER_TMP/out" 2>&1 && ok "$N keys put from h1" ||
	{ not_ok "$N keys put"; cat "$CLUSTER_TMP/out"; }
[ "$(h2_used)" = $((N * VLEN)) ] && [ "$(h2_holds)" = "$N" ] && ok "all of them on h2" ||
	not_ok "h2 lends $(h2_used) bytes and holds $(h2_holds) extents"

flush_and_refill() {
	pctl 1 kv flush bulk >/dev/null && ok "poolctl kv flush answers" || not_ok "poolctl kv flush"
	[ "$(kl 2 count bulk 4096)" = 0 ] && ok "h2 gets none of the flushed keys at once" ||
		not_ok "h2 still gets flushed keys"
	kl 2 fill bulk "$LATE" "$VLEN" 1 >/dev/null && ok "$LATE keys put from h2 meanwhile" ||
		not_ok "$LATE keys put from h2"
	freed 1 $((LATE * VLEN)) "$LATE" && ok "h2 scrubbed every flushed value and holds only the new ones" ||
		not_ok "the flushed values freed on h2"
}
probing "flush of $N keys held by h2" flush_and_refill
[ "$(kl 1 count bulk "$LATE" 1)" = "$LATE" ] && ok "the keys put meanwhile are all there" ||
	not_ok "keys put during the freeing"

kl 1 fill bulk "$N" "$VLEN" 2 >/dev/null && ok "$N keys put again" || not_ok "$N keys put again"
drop_and_remake() {
	pctl 1 kv drop bulk >/dev/null && ok "poolctl kv drop answers" || not_ok "poolctl kv drop"
	pctl 2 kv create bulk 128M tier=dram >/dev/null && ok "the name is made again at once, from h2" ||
		not_ok "the name made again"
	kl 2 fill bulk "$LATE" "$VLEN" 3 >/dev/null && ok "$LATE keys put in it meanwhile" ||
		not_ok "$LATE keys put in the new namespace"
	freed 2 $((LATE * VLEN)) "$LATE" && ok "h2 scrubbed every dropped value and holds only the new ones" ||
		not_ok "the dropped values freed on h2"
}
probing "drop of $N keys held by h2" drop_and_remake
grep "entries .* freed in" "$(cluster_dir 1)/poold.log" | sed 's/^/# /'
finish

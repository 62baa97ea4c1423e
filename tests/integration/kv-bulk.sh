#!/bin/bash
# Bulk KV work and poold's loop (kv-reap.c, heap.c): a namespace of many
# small keys is flushed, then filled again and dropped, while a prober
# times pool_status() round trips back to back. The flush and the drop
# answer at once; at once the namespace is empty (a get finds nothing)
# and takes puts, which the freeing leaves alone; a dropped name is made
# again at once; in the end every value is freed, every extent back in
# the arena but those of the keys put since. Stopped in the middle of
# flushes, poold exits cleanly (under --enable-asan, with no leak), and
# no value of a persistent namespace flushed comes back from its journal
# when it starts again. The prober's longest wait and 99th percentile are
# told, not judged: timing on a shared machine is no test.
# KV_BULK_KEYS sets the number of keys (300,000 by default).
. "${top_srcdir:-.}/tests/integration/lib.sh"
KL="$top_builddir/tests/tools/pool-kvload"
N=${KV_BULK_KEYS:-300000}
LATE=1000 # keys put while the freeing goes on
P=10000   # persistent keys, flushed as poold stops (their records fit the tier's journal)
VLEN=64   # (an extent of 64 bytes each)

# arena_used: bytes of this node's arena lent out, as the coordinator counts them.
arena_used() {
	"$POOLCTL" --json nodes -v | python3 -c 'import json, sys
print(sum(a["used"] for n in json.load(sys.stdin)["nodes"] for a in n["arenas"]))'
}

# freed N BYTES: wait (60 s at most) until poold logged the end of the Nth
# freeing, then whether the arena holds BYTES. (Polled in the log, which
# costs the prober's machine nothing.)
freed() {
	local _
	for _ in $(seq 600); do
		[ "$(grep -c "entries .* freed in" "$TEST_DIR/poold.log")" -ge "$1" ] && break
		sleep 0.1
	done
	[ "$(arena_used)" = "$2" ]
}

# told WHAT: the prober's figures, and its five slowest answers.
told() {
	echo "# $1: $(cat "$TEST_DIR/probe"), $(wc -l <"$TEST_DIR/probe.slow") of 10 ms or more"
	sort -k3,3 -rn "$TEST_DIR/probe.slow" | head -5 | sed 's/^/#   /'
	grep -q "^probes [1-9]" "$TEST_DIR/probe" && ok "poold answered its prober throughout" ||
		not_ok "the prober got no answer"
}

# probing COMMAND...: run the command while the prober times poold's answers; its
# figures in $TEST_DIR/probe.
probing() {
	local prober
	"$KL" probe >"$TEST_DIR/probe" 2>"$TEST_DIR/probe.slow" &
	prober=$!
	sleep 0.3
	"$@"
	kill -TERM "$prober"
	wait "$prober"
}

# Room for N values twice over in the arena (a fill while the last is
# freed), and for N in the namespace.
CAP=$(((N * VLEN >> 20) + 128))M
start() { pool_start -o lend.size=$(((N * VLEN >> 19) + 256))M -o pmem.path="$TEST_DIR/pmem" -o pmem.size=64M; }
start
check "a namespace of room for $N values" "$POOLCTL" kv create bulk "$CAP" tier=dram
check "$N keys put" "$KL" fill bulk "$N" "$VLEN"
ns_holds bulk "n['entries'] == $N and n['used'] == $N * $VLEN" &&
	ok "the namespace holds them" || not_ok "the namespace holds them"
[ "$(arena_used)" = $((N * VLEN)) ] && ok "and the arena lends their bytes" ||
	not_ok "the arena lends $(arena_used) bytes"

# The flush: empty at once; keys put meanwhile stay; the old ones are freed from the loop.
flush_and_refill() {
	check "poolctl kv flush answers" "$POOLCTL" kv flush bulk
	ns_holds bulk "n['entries'] == 0 and n['used'] == 0" &&
		ok "the namespace is empty at once" || not_ok "the namespace is empty at once"
	"$KL" count bulk 4096 >"$TEST_DIR/out" 2>&1
	check_out '^0$' "a get finds none of the flushed keys"
	check "$LATE keys put during the freeing" "$KL" fill bulk "$LATE" "$VLEN" 1
	freed 1 $((LATE * VLEN)) && ok "every flushed value is freed, the new ones kept" ||
		not_ok "the arena still lends $(arena_used) bytes"
}
probing flush_and_refill
told "flush of $N keys"
"$KL" count bulk "$LATE" 1 >"$TEST_DIR/out" 2>&1
check_out "^$LATE\$" "the keys put during the freeing are all there"
ns_holds bulk "n['entries'] == $LATE and n['used'] == $LATE * $VLEN" &&
	ok "the namespace counts only them" || not_ok "the namespace counts only them"

# The drop: the name is free at once, made again, and the old values freed from the loop.
check "$N keys put again" "$KL" fill bulk "$N" "$VLEN" 2
drop_and_remake() {
	check "poolctl kv drop answers" "$POOLCTL" kv drop bulk
	check "the name is made again at once" "$POOLCTL" kv create bulk "$CAP" tier=dram
	ns_holds bulk "n['entries'] == 0" && ok "empty" || not_ok "the namespace made again is empty"
	check "$LATE keys put in it during the freeing" "$KL" fill bulk "$LATE" "$VLEN" 3
	freed 2 $((LATE * VLEN)) && ok "every dropped value is freed, the new ones kept" ||
		not_ok "the arena still lends $(arena_used) bytes"
}
probing drop_and_remake
told "drop of $N keys"
"$KL" count bulk "$LATE" 3 >"$TEST_DIR/out" 2>&1
check_out "^$LATE\$" "the keys put in the new namespace are all there"
grep "entries .* freed in" "$TEST_DIR/poold.log" | sed 's/^/# /'

# Stopped in the middle of a flush, poold frees the rest and exits cleanly; the
# values of a persistent namespace flushed do not come back from the journal.
check "$N keys put again" "$KL" fill bulk "$N" "$VLEN" 4
check "a persistent namespace" "$POOLCTL" kv create pers 32M tier=pmem
check "$P persistent keys put" "$KL" fill pers "$P" "$VLEN"
"$POOLCTL" kv flush bulk >/dev/null
check "both flushed (the persistent keys freed after the others)" "$POOLCTL" kv flush pers
check "poold stops cleanly in the middle of freeing them" pool_stop
[ "$(sed '/: stopping$/q' "$TEST_DIR/poold.log" | grep -c "entries .* freed in")" -lt 4 ] &&
	echo "# (stopped before the freeing ended)"
start
"$POOLCTL" --json kv stats >"$TEST_DIR/out" && python3 -c 'import json, sys
assert all(n["entries"] == 0 for n in json.load(open(sys.argv[1]))["namespaces"] if n["name"] == "pers")' \
	"$TEST_DIR/out" && ok "after a restart, no flushed persistent value came back from the journal" ||
	{ not_ok "flushed persistent values came back"; cat "$TEST_DIR/out"; }
check "poold stops cleanly" pool_stop
pool_done

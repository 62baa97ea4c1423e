#!/bin/bash
# Persistent KV namespaces on one node: values kept in the pmem tier survive
# a clean stop, a SIGKILL and a torn journal tail; values of other
# namespaces do not (not even those spilled to pmem), and the pmem left from
# them reads as zeros when lent again; a namespace with evict=none refuses
# puts when full.
. "${top_srcdir:-.}/tests/integration/lib.sh"
KV="$top_builddir/tests/tools/pool-kv"
IO="$top_builddir/tests/tools/pool-io"
PMEM="$TEST_DIR/pmem"

start() { pool_start -o lend.size=64M -o pmem.path="$PMEM" -o pmem.size=16M "$@"; }

# get_all NS PREFIX FIRST LAST: every value PREFIXi (seed i) reads back bit-exact.
get_all() {
	local i
	for i in $(seq "$3" "$4"); do "$KV" "$1" get "$2$i" "$i" >/dev/null || return 1; done
}

start || exit 1
check "create a persistent namespace" "$POOLCTL" kv create pers 8M tier=pmem
ns_holds pers 'n["tier"] == "pmem" and n["evict"] == "lru"' && ok "its tier is pmem" || not_ok "tier pmem"
for i in 1 2 3 4 5 6; do "$KV" pers put p$i 500000 $i >/dev/null; done
check "remove one" "$KV" pers remove p6
ns_holds pers 'n["entries"] == 5 and n["pmem_used"] >= 5 * 500000 and n["used"] == 0' \
	&& ok "5 values, all in pmem" || { not_ok "values in pmem"; cat "$TEST_DIR/out"; }
"$POOLCTL" kv create cache 8M >/dev/null && "$KV" cache put c1 100000 1 >/dev/null
# A 1M namespace: of 6 values of 1M, 5 spill to pmem, where nothing journals them.
"$POOLCTL" kv create spilly 1M >/dev/null
for i in 1 2 3 4 5 6; do "$KV" spilly put s$i 1048576 $i >/dev/null; done
ns_holds spilly 'n["pmem_used"] >= 5 << 20' && ok "5M spilled to the pmem tier" || { not_ok "spills"; cat "$TEST_DIR/out"; }

check "poold stops cleanly" pool_stop
start || exit 1
ns_holds pers 'n["tier"] == "pmem" and n["capacity"] == 8 << 20 and n["entries"] == 5' \
	&& ok "after a restart the namespace is back with its tier, capacity and values" || { not_ok "namespace after restart"; cat "$TEST_DIR/out"; }
get_all pers p 1 5 && ok "all 5 values read back bit-exact" || not_ok "values after restart"
check_exit 4 "the removed value stays removed" "$KV" pers get p6 6
check_exit 1 "a DRAM namespace did not survive" "$KV" cache get c1 1
check_out "no KV namespace 'cache'" "it is not there"
check_exit 1 "nor did the one that spilled to pmem" "$KV" spilly get s1 1
check_out "no KV namespace 'spilly'" "nor that one"
check "a new region in the pmem tier" "$IO" create fresh $((8 << 20)) any persistent
check "reads as zeros, not the spilled values' bytes" "$IO" zero fresh
"$IO" destroy fresh >/dev/null

# SIGKILL: what was committed is there.
check "put after the restart" "$KV" pers put p7 200000 7
kill -KILL "$POOLD_PID"; wait "$POOLD_PID" 2>/dev/null; POOLD_PID=
start || exit 1
get_all pers p 1 5 && "$KV" pers get p7 7 >/dev/null && ok "after SIGKILL, all 6 values read back bit-exact" || not_ok "values after SIGKILL"
check "poold stops cleanly" pool_stop

# A torn last record (p7's): the journal is used up to the record before it.
# (the record area: the last 2 MiB of a 16 MiB tier)
python3 "$top_srcdir/tests/tools/journal-tear.py" "$PMEM" $(((16 - 2) << 20)) ||
	not_ok "corrupt the journal's last record"
start || exit 1
grep -q "torn or corrupt record" "$TEST_DIR/poold.log" && ok "the torn record is detected and logged" || not_ok "torn record logged"
get_all pers p 1 5 && ok "the values before it are all there" || not_ok "values before the torn record"
check_exit 4 "the value of the torn record is a miss" "$KV" pers get p7 7
check "and can be put again" "$KV" pers put p7 200000 7

# evict=none: a full namespace refuses puts instead of evicting.
check "a namespace that never evicts (nor spills)" "$POOLCTL" kv create fixed 2M tier=dram evict=none
"$KV" fixed put f1 1048576 1 >/dev/null && "$KV" fixed put f2 1048576 2 >/dev/null
check_exit 1 "a put beyond its capacity is refused" "$KV" fixed put f3 1048576 3
check_out "No space|space" "with a no-space error"
get_all fixed f 1 2 && ok "nothing was evicted for it" || not_ok "evict=none kept its values"
check_exit 1 "an unknown eviction policy is refused" "$POOLCTL" kv create badev 2M evict=lfu
check_out "evict 'lfu': lru or none" "with a message naming the choices"
pool_alive && ok "poold still running" || not_ok "poold still running"

# A persistent value counts against its writer's quota.bytes after a restart
# too: the lender's record names the writer.
if have_nobody "$KV"; then
	check "poold stops cleanly" pool_stop
	chmod 0755 "$TEST_DIR"
	start -o quota.bytes=4M -o control.mode=0666 || exit 1
	chmod 0755 "$TEST_DIR/run"
	"$POOLCTL" kv create quo 8M tier=pmem mode=0666 >/dev/null
	for i in 1 2 3; do as_nobody "$KV" quo put q$i 1048576 $i >/dev/null; done
	check_exit 1 "another uid's 3 MiB of values leave no room for a 2M region" as_nobody "$IO" create qreg $((2 << 20)) local
	check_out "over quota.bytes" "its error names quota.bytes"
	check "poold stops cleanly" pool_stop
	start -o quota.bytes=4M -o control.mode=0666 || exit 1
	chmod 0755 "$TEST_DIR/run"
	get_all quo q 1 3 && ok "after a restart its values are there" || not_ok "values after restart"
	check_exit 1 "and still count against its quota" as_nobody "$IO" create qreg $((2 << 20)) local
	check_out "holds 3M of regions, KV values" "the refusal counts them"
	check "a 1M region still fits" as_nobody "$IO" create qreg $((1 << 20)) local
fi
pool_done

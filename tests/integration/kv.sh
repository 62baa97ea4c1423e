#!/bin/bash
# The KV cache on one node: namespaces, put/get/exists/remove, batches,
# prefix match, LRU eviction, concurrent writers never showing a torn value,
# a writer that dies between reserve and commit, bad input.
. "${top_srcdir:-.}/tests/integration/lib.sh"
KV="$top_builddir/tests/tools/pool-kv"

pool_start -o lend.size=128M || exit 1

check "create a namespace" "$POOLCTL" kv create llama 8M
check_exit 1 "a second one with the same name is refused" "$POOLCTL" kv create llama 8M
check_exit 1 "a capacity under 1M is refused" "$POOLCTL" kv create tiny 64K
check_exit 1 "a bad name is refused" "$POOLCTL" kv create 'no spaces' 8M
check_exit 1 "an unknown namespace is refused" "$KV" nosuch get k 1
check_out "no KV namespace 'nosuch'" "and said so"

check "put" "$KV" llama put k1 262144 5
check "get it back bit-exact" "$KV" llama get k1 5
check_exit 4 "a missing key is a miss" "$KV" llama get k2 5
check "exists" "$KV" llama exists k1
check_exit 4 "exists of a missing key" "$KV" llama exists k2
check "overwrite" "$KV" llama put k1 100000 6
check "the new value is read" "$KV" llama get k1 6
check "remove" "$KV" llama remove k1
check_exit 4 "gone after remove" "$KV" llama get k1 6

check "batch put of 64 blocks" "$KV" llama mput blk 64 65536 9
check_out "64 of 64 stored" "all stored"
check "batch get of 64 blocks" "$KV" llama mget blk 64 9
check_out "64 hits of 64, all correct" "all read back"
check "prefix match" "$KV" llama match blk 80
check_out "match blk: 64 of 80" "64 leading blocks cached"
"$KV" llama remove blk10 >/dev/null
"$KV" llama match blk 80 >"$TEST_DIR/out"
check_out "match blk: 10 of 80" "the match stops at the first missing block"

# LRU: with 8M of capacity, 9 more 1M values evict the least recently used.
"$POOLCTL" kv flush llama >/dev/null
for i in 0 1 2 3 4 5 6 7; do "$KV" llama put lru$i 1048576 $i >/dev/null; done
"$KV" llama get lru0 0 >/dev/null   # lru0 is now the most recently used
"$KV" llama put lru8 1048576 8 >/dev/null
check "the recently read value stays" "$KV" llama get lru0 0
check_exit 4 "the least recently used one was evicted" "$KV" llama get lru1 1
ns_holds llama 'n["used"]<=n["capacity"] and n["evictions"]>=1' \
	&& ok "used stays within the capacity, evictions counted" || not_ok "capacity and evictions"

# Pinning vs eviction: a value being read is not freed when it is evicted.
"$POOLCTL" kv flush llama >/dev/null
"$KV" llama put pinned 1048576 7 >/dev/null
exec {pin}> >(python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-pin llama pinned >"$TEST_DIR/pin.out")
for _ in $(seq 50); do grep -q pinned "$TEST_DIR/pin.out" && break; sleep 0.1; done
for i in $(seq 10); do "$KV" llama put fill$i 1048576 $i >/dev/null; done
ns_holds llama 'n["used"] <= n["capacity"]' \
	&& ok "the cache stays within its capacity while a value is pinned" || not_ok "capacity with a pin"
check "the pinned value, the oldest, was not evicted" "$KV" llama exists pinned
check_exit 4 "while unpinned ones were" "$KV" llama exists fill1
exec {pin}>&-
sleep 0.5
for i in $(seq 11 20); do "$KV" llama put fill$i 1048576 $i >/dev/null; done
check_exit 4 "once its reader let go, it could be evicted" "$KV" llama exists pinned

# Concurrent writers and readers of one key: never a torn value.
pids=()
for w in 1 2 3; do "$KV" llama hammer hot 262144 3 $w >"$TEST_DIR/h$w" 2>&1 & pids+=($!); done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
[ $bad -eq 0 ] && grep -q "no torn value" "$TEST_DIR/h1" && ok "3 writers+readers of one key: no torn value ($(cat "$TEST_DIR/h1"))" \
	|| { not_ok "concurrent writers"; cat "$TEST_DIR"/h*; }

# A writer that dies between reserve and commit leaves nothing behind.
"$POOLCTL" kv flush llama >/dev/null
check "a writer reserves and dies" python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-reserve-die llama dead 1048576
sleep 0.3
ns_holds llama 'n["used"]==0 and n["entries"]==0' \
	&& ok "its reservation was reclaimed" || { not_ok "reservation reclaimed"; cat "$TEST_DIR/out"; }
check_exit 4 "and no half-written key shows" "$KV" llama get dead 1

# Bad input.
long=$(printf 'k%.0s' $(seq 300))
check_exit 1 "a 300-byte key is refused" "$KV" llama put "$long" 10 1
check_exit 1 "a value over 64M is refused" "$KV" llama put big $(((64 << 20) + 1)) 1

check "kv ls" "$POOLCTL" kv ls
check_out "^llama +8M" "kv ls lists the namespace"
check "drop" "$POOLCTL" kv drop llama
check_exit 1 "dropped" "$KV" llama get k 1
pool_alive && ok "poold still running" || not_ok "poold still running"

check "poold stops cleanly" pool_stop
pool_start -o lend.size=128M -o pmem.path="$TEST_DIR/pmem" -o pmem.size=16M || exit 1

# Spill to the pmem tier and promotion back on hit.
"$POOLCTL" kv create spilly 4M >/dev/null
for i in 0 1 2 3 4 5 6 7; do "$KV" spilly put s$i 1048576 $i >/dev/null; done
ns_holds spilly 'n["entries"]==8 and n["spills"]==4 and n["pmem_used"]==4<<20 and n["evictions"]==0' \
	&& ok "over the DRAM capacity, 4 values spilled to pmem, none dropped" || { not_ok "spill"; cat "$TEST_DIR/out"; }
bad=0
for i in 0 1 2 3 4 5 6 7; do "$KV" spilly get s$i $i >/dev/null || bad=1; done
[ $bad -eq 0 ] && ok "all 8 values read back bit-exact, from either tier" || not_ok "reads across tiers"
ns_holds spilly 'n["pmem_hits"]>=4 and n["promotions"]>=1' \
	&& ok "hits on spilled values promote them back to DRAM" || { not_ok "promotion"; cat "$TEST_DIR/out"; }
for i in $(seq 8 40); do "$KV" spilly put s$i 1048576 $i >/dev/null; done
ns_holds spilly 'n["used"]<=n["capacity"] and n["pmem_used"]<=16<<20 and n["evictions"]>0' \
	&& ok "with both tiers full, the least recently used values go" || { not_ok "both tiers full"; cat "$TEST_DIR/out"; }
check "the newest value is there" "$KV" spilly get s40 40
"$POOLCTL" kv drop spilly >/dev/null

# tier=dram: the same pressure evicts instead.
check "a DRAM-only namespace" "$POOLCTL" kv create dramonly 4M tier=dram
for i in 0 1 2 3 4 5 6 7; do "$KV" dramonly put d$i 1048576 $i >/dev/null; done
ns_holds dramonly 'n["tier"]=="dram" and n["entries"]==4 and n["evictions"]==4 and n["spills"]==0 and n["pmem_used"]==0' \
	&& ok "with tier=dram, values beyond the capacity are evicted, never spilled" || { not_ok "tier=dram"; cat "$TEST_DIR/out"; }
check "the newest of them is there" "$KV" dramonly get d7 7
check_exit 1 "an unknown tier is refused" "$POOLCTL" kv create badtier 4M tier=ssd
check_out "tier 'ssd': dram, dram\+pmem or pmem" "with a message naming the choices"
check_exit 2 "an unknown option is a usage error" "$POOLCTL" kv create badopt 4M spill=yes
pool_alive && ok "poold still running" || not_ok "poold still running"
pool_done

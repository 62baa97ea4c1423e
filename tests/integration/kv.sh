#!/bin/bash
# The KV cache on one node: namespaces, put/get/exists/remove, batches,
# prefix match, LRU eviction, concurrent writers never showing a torn value,
# zero-copy access (in place, staged, regions), a writer that dies between
# reserve and commit, bad input.
. "${top_srcdir:-.}/tests/integration/lib.sh"
KV="$top_builddir/tests/tools/pool-kv"
IO="$top_builddir/tests/tools/pool-io"

# Other uids may connect: they are not trusted with the arenas, so their
# zero-copy calls take the copying paths.
chmod 0755 "$TEST_DIR"
pool_start -o lend.size=128M -o control.mode=0666 || exit 1
chmod 0755 "$TEST_DIR/run"

check "create a namespace" "$POOLCTL" kv create llama 8M mode=0666
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

# Values of 16 KiB and less are put and got in one request each, poold
# copying them through the client's window: the same with 4 KiB values.
pids=()
for w in 1 2 3; do "$KV" llama hammer small 4096 3 $w >"$TEST_DIR/s$w" 2>&1 & pids+=($!); done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
[ $bad -eq 0 ] && grep -q "no torn value" "$TEST_DIR/s1" &&
	ok "3 writers+readers of one 4 KiB key, one request each: no torn value ($(cat "$TEST_DIR/s1"))" ||
	{ not_ok "concurrent small writers"; cat "$TEST_DIR"/s*; }
check "a batch of 200 values of 1,000 bytes put in one request" "$KV" llama mput sm 200 1000 3
check_out "200 of 200 stored" "all stored"
check "and read back the two-phase way (4 MiB buffers)" "$KV" llama mget sm 200 3
check_out "200 hits of 200, all correct" "all there, the bytes right"
check "one read back in one request (a 1 KiB buffer)" "$KV" llama get sm7 10 1024
check "gets and puts in one request, raw: no window, another's, out of it, too much" \
	python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-inline llama
check_out "put and got 'hello world' in one request each" "then real bytes, one request each"
pool_alive && ok "poold still running" || not_ok "poold still running"

# Zero-copy reads: in place on this node, the exact bytes put.
"$POOLCTL" kv flush llama >/dev/null
check "put a value to acquire" "$KV" llama put zc 262144 11
sum=$(sed -n 's/.*checksum //p' "$TEST_DIR/out")
check "acquire it" "$KV" llama view zc 11
check_out "in place, checksum ${sum:-none}$" "read in place, not copied, with the checksum of the bytes put"

# A value acquired in place stays intact while its key is overwritten,
# removed and the namespace evicts (its memory would be scrubbed and lent
# again if the pin did not hold it), and is freed once released.
"$KV" llama put held 1048576 12 >/dev/null
mkfifo "$TEST_DIR/hold"
"$KV" llama view held 12 hold <"$TEST_DIR/hold" >"$TEST_DIR/view.out" 2>&1 &
vpid=$!
exec {hold}>"$TEST_DIR/hold"
for _ in $(seq 50); do grep -q "in place" "$TEST_DIR/view.out" && break; sleep 0.1; done
check "overwrite the acquired key" "$KV" llama put held 1048576 13
check "remove it" "$KV" llama remove held
for i in $(seq 12); do "$KV" llama put zfill$i 1048576 $i >/dev/null; done
ns_holds llama 'n["used"]<=n["capacity"] and n["evictions"]>=4' \
	&& ok "capacity pressure evicts around the acquired value" || { not_ok "eviction with an acquired value"; cat "$TEST_DIR/out"; }
used=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["namespaces"][0]["used"])' "$TEST_DIR/out")
exec {hold}>&-
wait "$vpid"; rc=$?
cp "$TEST_DIR/view.out" "$TEST_DIR/out"
[ $rc -eq 0 ] && grep -q "still correct after the hold" "$TEST_DIR/out" \
	&& ok "the acquired value stayed intact until released" || { not_ok "acquired value intact (exit $rc)"; cat "$TEST_DIR/out"; }
ns_holds llama "n['used'] == ${used:-0} - (1 << 20)" \
	&& ok "its memory was freed at the release" || { not_ok "freed at release (used was ${used:-?})"; cat "$TEST_DIR/out"; }
check_exit 4 "and the removed key stays a miss" "$KV" llama view held 12

# Zero-copy writes: in place, visible only at the commit; an abort leaves nothing.
"$KV" llama put fresh 262144 16 >/dev/null
mkfifo "$TEST_DIR/write"
"$KV" llama vput fresh 262144 17 hold <"$TEST_DIR/write" >"$TEST_DIR/vput.out" 2>&1 &
wpid=$!
"$KV" llama vput brandnew 4096 18 hold <"$TEST_DIR/write" >"$TEST_DIR/vput2.out" 2>&1 &
wpid2=$!
exec {write}>"$TEST_DIR/write"
for _ in $(seq 50); do grep -q "not committed" "$TEST_DIR/vput.out" && grep -q "not committed" "$TEST_DIR/vput2.out" && break; sleep 0.1; done
cp "$TEST_DIR/vput.out" "$TEST_DIR/out"
check_out "262144 bytes in place" "a reservation on this node is written in place"
check "before the commit, readers get the previous value" "$KV" llama get fresh 16
check_exit 4 "and a new key is not there" "$KV" llama exists brandnew
exec {write}>&-
bad=0
wait "$wpid" || bad=1
wait "$wpid2" || bad=1
[ $bad -eq 0 ] && ok "both commit" || { not_ok "commit"; cat "$TEST_DIR"/vput*.out; }
check "after the commit, the new value, bit-exact" "$KV" llama get fresh 17
check "and the new key" "$KV" llama view brandnew 18
check "reserve, then abort" "$KV" llama vput aborted 262144 19 abort
check_exit 4 "an aborted reservation leaves no key" "$KV" llama exists aborted

# Regions: a mapped one is the buffer itself; a striped one is never mapped.
check "put from a mapped region" "$KV" llama rput reg 300000 20 4096
check_out "from a mapped region" "the region was mapped"
sum=$(sed -n 's/.*checksum //p' "$TEST_DIR/out")
check "a get reads it bit-exact" "$KV" llama get reg 20
check "get it into a mapped region" "$KV" llama rget reg 20 8192 1048576
check_out "300000 of 300000 bytes into a mapped region at 8192, correct, checksum ${sum:-none}, the rest untouched" \
	"bit-exact at the offset, nothing else written"
check "a value longer than maxlen is cut short" "$KV" llama rget reg 20 100 1000
check_out "1000 of 300000 bytes" "to maxlen, with the full length returned"
check "put from an unmapped region" "$KV" llama rput sreg 300000 21 4096 striped
check_out "from an unmapped region" "the striped region was not mapped"
sum=$(sed -n 's/.*checksum //p' "$TEST_DIR/out")
check "get it into an unmapped region" "$KV" llama rget sreg 21 8192 1048576 striped
check_out "300000 of 300000 bytes into an unmapped region at 8192, correct, checksum ${sum:-none}," "bit-exact through the unmapped paths"
check_exit 4 "a get into a region of a missing key is a miss" "$KV" llama rget nosuch 1 0 4096

# A caller poold does not trust with its arenas gets copies and staging buffers.
"$KV" llama put zc 262144 11 >/dev/null
if have_nobody "$POOLCTL"; then
	check "an untrusted uid acquires" as_nobody "$KV" llama view zc 11
	check_out "copied" "a copy, not the arena"
	check "reserves and commits" as_nobody "$KV" llama vput staged 262144 22
	check_out "262144 bytes staged" "through a staging buffer"
	check "what it staged is stored bit-exact" "$KV" llama get staged 22
	check "puts from a region it cannot map (striped)" as_nobody "$KV" llama rput nreg 300000 23 4096 striped
	check "and gets into one" as_nobody "$KV" llama rget nreg 23 8192 1048576 striped
	check_out "300000 of 300000 bytes into an unmapped region at 8192, correct" "bit-exact through bounce buffers"

	# A namespace has an owner, group and mode: another uid reaches only what they let it.
	check "a private namespace (the default mode, 0600)" "$POOLCTL" kv create priv 8M
	"$KV" priv put secret 4096 31 >/dev/null
	check_exit 1 "another uid cannot read it" as_nobody "$KV" priv get secret 31
	check_out "KV namespace 'priv' \(mode 600, uid 0\): access denied" "the refusal names mode and owner"
	as_nobody /usr/bin/python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-op get priv secret >"$TEST_DIR/out" 2>&1
	check_out "KV namespace 'priv' \(mode 600, uid 0\): read access denied" "nor with a raw get in one request"
	as_nobody /usr/bin/python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-op put priv secret >"$TEST_DIR/out" 2>&1
	check_out "KV namespace 'priv' \(mode 600, uid 0\): write access denied" "nor a raw put in one request"
	as_nobody /usr/bin/python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-op exists priv secret >"$TEST_DIR/out" 2>&1
	check_out "KV namespace 'priv' \(mode 600, uid 0\): read access denied" "nor learn whether a key is there, with a raw request"
	check_exit 1 "nor write it" as_nobody "$KV" priv put mine 4096 32
	check_out "KV namespace 'priv' \(mode 600, uid 0\): access denied" "refused as it opens the namespace"
	check_exit 1 "nor flush it" as_nobody "$POOLCTL" kv flush priv
	check_out "needs root or the admin group" "an admin's operation refused"
	as_nobody "$POOLCTL" kv ls >"$TEST_DIR/out" 2>&1
	grep -q "^llama " "$TEST_DIR/out" && ! grep -q "^priv " "$TEST_DIR/out" &&
		ok "its listing shows llama (0666), not priv" || not_ok "listing as nobody: $(cat "$TEST_DIR/out")"
	check "a namespace others may read only (0644)" "$POOLCTL" kv create shared 8M mode=0644
	"$KV" shared put pub 4096 33 >/dev/null
	check "another uid reads it" as_nobody "$KV" shared get pub 33
	check_exit 1 "but cannot put into it" as_nobody "$KV" shared put mine 4096 34
	check_out "write access denied" "a write refusal"
	check "and root's value is intact" "$KV" priv get secret 31
	"$POOLCTL" --json kv ls | python3 -c 'import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)["namespaces"]}
assert n["priv"]["mode"] == 0o600 and n["shared"]["mode"] == 0o644 and n["priv"]["uid"] == 0, n' &&
		ok "kv ls --json gives owner and mode" || not_ok "kv ls json"
	check_exit 2 "a bad mode is a usage error" "$POOLCTL" kv create bad 8M mode=999
fi

check "bad arguments to the zero-copy calls are refused" "$KV" llama zbad zc
check_out "every bad call refused" "each with the code expected"
check_out "a key is 1 to 256 bytes, not 257" "a long key is named as such"
check_out "a value is 1 byte to 64 MiB, not 67108865" "so is a long value"
check_out "is outside region 'pool-kv-[0-9]+' of 65536 bytes" "and a range outside the region"
check_out "ends with pool_kv_release\(\)" "a ref given to the wrong call says which one it needs"

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
check_out "key 0: 1 to 256 bytes" "saying how long a key may be"
check_exit 1 "a value over 64M is refused" "$KV" llama put big $(((64 << 20) + 1)) 1
check_out "value 0: 1 byte to 64 MiB" "saying how big a value may be"

check "kv ls" "$POOLCTL" kv ls
check_out "^llama +8M" "kv ls lists the namespace"
check "drop" "$POOLCTL" kv drop llama
check_exit 1 "dropped" "$KV" llama get k 1
check_out "no KV namespace 'llama'" "the namespace is gone"
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

# A spilled value is in this node's pmem tier, which poold passes to trusted callers too.
"$POOLCTL" kv create zsp 1M >/dev/null
"$KV" zsp put z0 1048576 30 >/dev/null
"$KV" zsp put z1 1048576 31 >/dev/null
ns_holds zsp 'n["spills"]==1 and n["pmem_used"]==1<<20' || { not_ok "zsp spill"; cat "$TEST_DIR/out"; }
check "a spilled value is acquired" "$KV" zsp view z0 30
check_out "1048576 bytes, correct, in place" "in place in the pmem tier, bit-exact"
"$POOLCTL" kv drop zsp >/dev/null

# tier=dram: the same pressure evicts instead.
check "a DRAM-only namespace" "$POOLCTL" kv create dramonly 4M tier=dram
for i in 0 1 2 3 4 5 6 7; do "$KV" dramonly put d$i 1048576 $i >/dev/null; done
ns_holds dramonly 'n["tier"]=="dram" and n["entries"]==4 and n["evictions"]==4 and n["spills"]==0 and n["pmem_used"]==0' \
	&& ok "with tier=dram, values beyond the capacity are evicted, never spilled" || { not_ok "tier=dram"; cat "$TEST_DIR/out"; }
check "the newest of them is there" "$KV" dramonly get d7 7
check_exit 1 "an unknown tier is refused" "$POOLCTL" kv create badtier 4M tier=ssd
check_out "tier 'ssd': dram, dram\+pmem or pmem" "with a message naming the choices"
check_exit 2 "an unknown option is a usage error" "$POOLCTL" kv create badopt 4M spill=yes
# A lender is reported as failing only with a transfer the reporter was given.
python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" >"$TEST_DIR/out" 2>&1 <<'EOF2'
import sys
sys.path.insert(0, sys.argv[2])
import wire
s = wire.connect(sys.argv[1])
s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
assert wire.read_frame(s)[0] == wire.HELLO_REPLY
# KvRequest: op "failed", ns "dramonly", node 1, key "d7" (a key it holds no pin of)
req = wire.vfield(1, wire.enum("KvOp", "failed")) + wire.field(2, b"dramonly") + wire.field(3, b"d7") + b"\x30\x01"
s.sendall(wire.frame(42, req, req_id=2))
mtype, _, payload = wire.read_frame(s)
assert mtype == wire.ERROR, mtype
print(wire.error_text(payload))
EOF2
[ $? -eq 0 ] && grep -q "a lender is reported only with a key whose transfer" "$TEST_DIR/out" \
	&& ok "a failure report without a transfer is refused" || { not_ok "failure report refused"; cat "$TEST_DIR/out"; }
"$POOLCTL" --json nodes | python3 -c 'import json, sys; assert json.load(sys.stdin)["nodes"][0]["state"] == "up"' \
	&& ok "and the lender stays up" || not_ok "lender state after a refused report"
# replicas=N: on one node there is one lender, so one place per value.
check "a namespace with 2 replicas" "$POOLCTL" kv create twice 8M replicas=2
check "on one lender, a put still works" "$KV" twice put r1 300000 3
check "and reads back bit-exact" "$KV" twice get r1 3
ns_holds twice 'n["replicas"] == 2 and n["entries"] == 1 and n["used"] < 2 * 300000' \
	&& ok "with a single place (fewer lenders than replicas)" || { not_ok "replicas on one node"; cat "$TEST_DIR/out"; }
check_exit 1 "replicas above 4 are refused" "$POOLCTL" kv create many 8M replicas=5
check_out "replicas 5: 1 to 4" "with a message naming the range"
check_exit 2 "replicas=0 is a usage error" "$POOLCTL" kv create none 8M replicas=0
# hint=SIZE: values up to it take an extent of exactly that size.
check "a namespace with a 64K size hint" "$POOLCTL" kv create hinted 8M hint=64K
"$KV" hinted put h1 40000 1 >/dev/null && "$KV" hinted put h2 65536 2 >/dev/null
ns_holds hinted 'n["size_hint"] == 65536 and n["used"] == 2 * 65536' \
	&& ok "a 40000-byte and a 64K value take 64K each" || { not_ok "size hint"; cat "$TEST_DIR/out"; }
"$KV" hinted put h3 70000 3 >/dev/null
ns_holds hinted 'n["used"] == 2 * 65536 + 73728' && ok "a bigger value takes its own size" || { not_ok "over the hint"; cat "$TEST_DIR/out"; }
check "and reads back bit-exact" "$KV" hinted get h1 1
check_exit 1 "a hint over 64M is refused" "$POOLCTL" kv create badhint 128M hint=100M
check_out "size hint 104857600: at most 64M and the capacity" "with a message naming the limit"
pool_alive && ok "poold still running" || not_ok "poold still running"

# quota.bytes counts a uid's KV values with its regions: in a namespace that
# evicts, a uid over its quota pushes out its own least recently used values,
# not others'; one that never evicts refuses the put.
if have_nobody "$KV"; then
	pool_stop
	pool_start -o lend.size=128M -o quota.bytes=8M -o control.mode=0666 || exit 1
	chmod 0755 "$TEST_DIR/run"
	"$POOLCTL" kv create cache 64M mode=0666 >/dev/null
	"$POOLCTL" kv create keep 64M mode=0666 evict=none >/dev/null
	for i in 0 1 2 3; do "$KV" cache put root$i 1048576 $i >/dev/null; done
	bad=0
	for i in $(seq 0 19); do as_nobody "$KV" cache put n$i 1048576 $i >/dev/null || bad=1; done
	[ $bad -eq 0 ] && ok "another uid puts 20 MiB into a shared cache under its 8M quota" ||
		not_ok "puts under quota"
	ns_holds cache 'n["entries"] == 12 and n["used"] == 12 << 20 and n["evictions"] == 12' &&
		ok "it keeps 8 MiB of them there: its 12 oldest were evicted" || { not_ok "quota eviction"; cat "$TEST_DIR/out"; }
	bad=0
	for i in 0 1 2 3; do "$KV" cache get root$i $i >/dev/null || bad=1; done
	[ $bad -eq 0 ] && ok "root's 4 values in the same namespace are all there" || not_ok "root's values evicted"
	check "its newest value reads back" as_nobody "$KV" cache get n19 19
	check_exit 4 "its oldest is gone" as_nobody "$KV" cache get n0 0
	check_exit 1 "a put of that uid into a namespace that never evicts is refused" as_nobody "$KV" keep put k0 1048576 1
	check_out "quota" "as over quota"
	check_exit 1 "and so is a region of that uid" as_nobody "$IO" create qreg $((1 << 20)) local
	check_out "holds 8M of regions, KV values and snapshot pages" "the refusal counts its KV values"
	check "root's own put there is not" "$KV" keep put r0 1048576 1
	"$POOLCTL" kv flush cache >/dev/null
	check "once its values are flushed, the put fits" as_nobody "$KV" keep put k0 1048576 1
	check "and reads back" as_nobody "$KV" keep get k0 1
	pool_alive && ok "poold still running" || not_ok "poold still running"
fi
pool_done

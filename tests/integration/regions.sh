#!/bin/bash
# Regions on one node: create, write from one process and read from
# another, zero-copy map, permissions of other uids, bounds, no room, bad
# names, freed memory comes back zeroed.
. "${top_srcdir:-.}/tests/integration/lib.sh"
IO="$top_builddir/tests/tools/pool-io"

chmod 0755 "$TEST_DIR"
conf="$TEST_DIR/poold.conf"
printf 'lend.size = 64M\ncontrol.mode = 0666\nlease.grace = 3s\npmem.path = %s\npmem.size = 32M\n' \
	"$TEST_DIR/pmem" >"$conf"
pool_start -f "$conf" || exit 1
chmod 0755 "$TEST_DIR/run"

# carve_blocks SIZE: the allocated 512-byte blocks of poold's region files of SIZE bytes.
carve_blocks() {
	local f
	for f in /proc/"$POOLD_PID"/fd/*; do
		[ "$(readlink "$f")" = "/memfd:poold-region (deleted)" ] && stat -L -c '%s %b' "$f"
	done | awk -v size="$1" '$1 == size { print $2 }'
}
check "create a region" "$IO" create r1 $((8 << 20)) local
[ "$(carve_blocks $((8 << 20)))" = 0 ] && ok "its file takes no memory before it is written" ||
	not_ok "a new region's file holds blocks: $(carve_blocks $((8 << 20)))"
check "write it from one process" "$IO" write r1 42
[ "$(carve_blocks $((8 << 20)))" = $((8 << 20 >> 9)) ] && ok "and all of it once written" ||
	not_ok "the written region's file holds blocks: $(carve_blocks $((8 << 20)))"
sum=$(awk '{print $NF}' "$TEST_DIR/out")
check "read it from another" "$IO" read r1 42
check_out "$sum" "same checksum"
check "map it zero-copy and verify with loads" "$IO" map r1 42
check "pool_region_stat" "$IO" stat r1
check_out "size 8388608 class pinned placement local mode 644 uid 0 gid 0 leases 0 nodes 1" "stat reports the region"
check "out-of-range access refused" "$IO" bounds r1
check_out "outside region 'r1' of 8388608 bytes" "bounds error names the region and its size"

"$POOLCTL" regions >"$TEST_DIR/out"
check_out "^r1 +8M +pinned +local +1 " "poolctl regions lists it"
"$POOLCTL" --json region info r1 >"$TEST_DIR/out"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["region"][0]; assert r["size"]==8<<20 and r["mode"]==0o644 and len(r["extents"])==1' "$TEST_DIR/out" \
	&& ok "region info --json" || not_ok "region info --json"
"$POOLCTL" nodes >"$TEST_DIR/out"
check_out " 8M/64M " "poolctl nodes shows the lent memory in use"

if have_nobody "$POOLCTL"; then
	"$POOLCTL" region create private 1M mode=0600 >/dev/null
	check_exit 1 "another uid cannot open a 0600 region" as_nobody "$IO" read private 1
	check_out "access denied" "the refusal says access denied"
	as_nobody "$POOLCTL" regions >"$TEST_DIR/out" 2>&1
	grep -q "^r1 " "$TEST_DIR/out" && ! grep -q "^private " "$TEST_DIR/out" &&
		ok "another uid lists the regions it may open, not the 0600 one" || not_ok "listing as nobody: $(cat "$TEST_DIR/out")"
	"$POOLCTL" regions | grep -q "^private " && ok "root lists them all" || not_ok "root's listing"
	as_nobody "$POOLCTL" --json ledger | python3 -c 'import json, sys
rows = json.load(sys.stdin)["ledger"]
assert rows and all(r.get("uid", 65534) == 65534 for r in rows), rows' &&
		"$POOLCTL" --json ledger | python3 -c 'import json, sys
assert any(r.get("uid") == 0 for r in json.load(sys.stdin)["ledger"])' &&
		ok "and the ledger shows it no other uid's use (root's shows uid 0's)" ||
		{ not_ok "ledger as nobody"; as_nobody "$POOLCTL" --json ledger; }
	check "another uid may read a 0644 region" as_nobody "$IO" read r1 42
	check_exit 1 "but not write it" as_nobody "$IO" write r1 1
	check_exit 1 "nor destroy it" as_nobody "$IO" destroy r1
	check_out "belongs to uid 0" "destroy refusal names the owner"
	check "another uid maps a 0644 region zero-copy, read-only" as_nobody "$IO" map r1 42
	check_exit 4 "nor the arena descriptor by asking" as_nobody /usr/bin/python3 \
		"$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" arena-fd
fi

check_exit 1 "no room: clear error" "$POOLCTL" region create huge 1G
check_out "no room for 1G" "ENOSPC message"
check_exit 1 "bad name refused" "$POOLCTL" region create 'bad name!' 1M
check_out "1-63 characters" "name rule explained"
check_exit 1 "duplicate name refused" "$POOLCTL" region create r1 1M
check_exit 1 "bad class refused" "$POOLCTL" region create x 1M class=gold
check_exit 1 "bad placement refused" "$POOLCTL" region create x 1M placement=moon
check_exit 2 "bad size is a usage error" "$POOLCTL" region create x lots

# Freed memory is scrubbed before it is lent again. (A region's bytes are in
# a memory file of its own once mapped, which its destroy empties; the
# zeroes a lender writes into its arena itself, for small extents such as KV
# values, are checked by tests/unit/test_hold.)
check "destroy" "$IO" destroy r1
check "a new region over the same memory" "$IO" create r2 $((8 << 20)) local
check "reads only zeros" "$IO" zero r2

# An extent over 4 MiB is zeroed in slices after its destroy is answered
# (daemon/hold/scrub.c), and lent again only once zeroed: all the room left,
# written, freed and asked for again can only be that memory.
# DRAM: the region's own memory file is emptied; pmem: the tier is written.
for tier in 0:pinned 1:persistent; do
	room=$("$POOLCTL" --json nodes | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["arenas"][int(sys.argv[1])]["largest_free"])' "${tier%:*}")
	check "${tier#*:}: a region of all the room left ($room bytes)" "$IO" create all "$room" local "${tier#*:}"
	check "written" "$IO" write all 9
	check "destroyed" "$IO" destroy all
	for _ in $(seq 100); do "$IO" create all "$room" local "${tier#*:}" >/dev/null 2>&1 && break; sleep 0.05; done
	check "once zeroed it is lent again, and reads only zeros" "$IO" zero all
	check "destroyed again" "$IO" destroy all
done

# Leases: a closed region holds none; an anonymous region goes with its last lease.
"$POOLCTL" --json regions | python3 -c 'import json,sys; r={x["name"]:x for x in json.load(sys.stdin)["regions"]}; assert r["r2"]["leases"]==0, r' \
	&& ok "a closed region keeps no lease" || not_ok "a closed region keeps no lease"
"$IO" anon scratch 1048576 >"$TEST_DIR/anon.out" & anon=$!
for _ in $(seq 50); do grep -q created "$TEST_DIR/anon.out" && break; sleep 0.1; done
"$POOLCTL" regions >"$TEST_DIR/out"
check_out "^scratch +1M +pinned .* 1 +0:0" "the anonymous region is leased by its holder"
kill -KILL $anon; wait $anon 2>/dev/null
sleep 0.5
"$POOLCTL" regions >"$TEST_DIR/out"
check_out "^scratch " "it outlives its killed holder during lease.grace"
for _ in $(seq 100); do
	"$POOLCTL" regions >"$TEST_DIR/out"
	grep -q "^scratch " "$TEST_DIR/out" || break
	sleep 0.1
done
"$POOLCTL" regions >"$TEST_DIR/out" && grep -q "^r2 " "$TEST_DIR/out" && ! grep -q "^scratch " "$TEST_DIR/out" &&
	ok "freed after the grace period" || { not_ok "freed after the grace period"; cat "$TEST_DIR/out"; }
check_out "^r2 " "other regions are untouched"
check "and keep their data" "$IO" zero r2

# Quotas per uid, applied on reload.
# uid 0 owns r2 (8M) and, where another uid was tried, private (1M).
n=$("$POOLCTL" --json regions | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["regions"]))')
printf 'quota.regions = %d\nquota.bytes = 12M\n' $((n + 1)) >>"$conf"
check "reload with quotas" "$POOLCTL" reload
check_exit 1 "over quota.bytes" "$POOLCTL" region create q1 8M
check_out "over quota.bytes \(12M\)" "quota.bytes error is clear"
check "within quota" "$POOLCTL" region create q1 1M
check_exit 1 "over quota.regions" "$POOLCTL" region create q2 1M
check_out "quota.regions is $((n + 1))" "quota.regions error is clear"
"$POOLCTL" region destroy q1 >/dev/null
sed -i '/^quota/d' "$conf"
check "reload without quotas" "$POOLCTL" reload
# quota.share (50% by default) bounds every uid but root and poold's own
# to a share of the pool's memory (64M of DRAM and 30M of pmem here).
if have_nobody "$POOLCTL"; then
	check_exit 1 "uid nobody cannot take 60M of the pool's 94M" as_nobody "$POOLCTL" region create big 60M
	check_out "over quota.share \(50% of the pool: 4[67]M\)" "its error names quota.share"
	check "16M it may" as_nobody "$POOLCTL" region create big 16M
	as_nobody "$POOLCTL" region destroy big >/dev/null
	printf 'quota.share = 10\n' >>"$conf"
	check "reload with quota.share = 10" "$POOLCTL" reload
	check_exit 1 "uid nobody's 16M is over it now" as_nobody "$POOLCTL" region create big 16M
	check_out "over quota.share \(10% of the pool" "its error names the new share"
	check "root's is not" "$POOLCTL" region create big 16M
	"$POOLCTL" region destroy big >/dev/null
	sed -i '/^quota/d' "$conf"
	check "reload without it" "$POOLCTL" reload
fi

# The persistent tier: a libpmem2-mapped file lent like DRAM (but for its last 2 MiB,
# which record what it holds for persistent KV namespaces).
"$POOLCTL" --json nodes >"$TEST_DIR/out"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"][0]; a=[x for x in n["arenas"] if x["tier"]=="pmem"]; assert n["pmem_capacity"]==30<<20 and len(a)==1, n' "$TEST_DIR/out" \
	&& ok "the pmem file is lent as a persistent arena" || not_ok "pmem arena"
check "a persistent region lives in it" "$IO" create p1 $((4 << 20)) any persistent
"$POOLCTL" --json region info p1 | python3 -c 'import json,sys; r=json.load(sys.stdin)["region"][0]; assert r["class"]=="persistent" and r["extents"][0]["arena"]==1, r' \
	&& ok "placed in the pmem arena" || not_ok "placed in the pmem arena"
check "write it" "$IO" write p1 5
check "read it back" "$IO" read p1 5
check_exit 1 "persistent regions need room in the pmem tier" "$POOLCTL" region create p2 64M class=persistent
check_out "largest free pmem extent" "its no-room message names the pmem tier"
"$IO" destroy p1 >/dev/null

# Many create/destroy cycles leave nothing behind.
for i in $(seq 50); do "$POOLCTL" region create "c$i" 64K >/dev/null || break; done
for i in $(seq 50); do "$POOLCTL" region destroy "c$i" >/dev/null || break; done
"$POOLCTL" --json regions | python3 -c 'import json,sys; n=[r["name"] for r in json.load(sys.stdin)["regions"]]; assert sorted(n)==["private","r2"] or sorted(n)==["r2"], n' \
	&& ok "50 create/destroy cycles" || not_ok "50 create/destroy cycles"
# What the node lends decides what its arena's file holds: a withdrawn range
# is given back to the kernel, a grown one backed again (a step at a time).
arena_mib() {
	local f
	for f in /proc/"$POOLD_PID"/fd/*; do
		case "$(readlink "$f")" in "/memfd:poold-lend-numa"*) stat -L -c %b "$f" ;; esac
	done | awk '{ n += $1 } END { print int(n * 512 / 1048576) }'
}
held_within() { # MIN MAX: wait until the arena's file holds MIN to MAX MiB
	local _
	for _ in $(seq 100); do
		[ "$(arena_mib)" -ge "$1" ] && [ "$(arena_mib)" -le "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
check "the node lends 16M" "$POOLCTL" lend 1 16M
held_within 0 16 && ok "its arena's file gives the rest back" || not_ok "the arena's file holds $(arena_mib) MiB"
check "and 64M again" "$POOLCTL" lend 1 64M
held_within 48 64 && ok "its arena's file holds the grown range again" ||
	not_ok "the arena's file holds $(arena_mib) MiB"
pool_alive && ok "poold still running" || not_ok "poold still running"
pool_done

#!/bin/bash
# Snapshots on one node: two 256 MiB images sharing 80% of their pages (30%
# zero) are stored in the bytes their distinct pages take; both read back
# bit-exact; removing one keeps the pages the other uses and frees its own;
# a put that dies midway gives back what it took by itself; 1,000
# copy-on-write clones cost one copy and the pages they write; persistent
# snapshots survive a restart (pinned ones do not); bad input is refused.
. "${top_srcdir:-.}/tests/integration/lib.sh"
SNAP="$top_builddir/tests/tools/pool-snap"
IO="$top_builddir/tests/tools/pool-io"
PMEM="$TEST_DIR/pmem"

chmod 0755 "$TEST_DIR"
start() {
	pool_start -o lend.size=1G -o control.mode=0666 -o pmem.path="$PMEM" -o pmem.size=320M \
		-o lease.grace=3s
}
# store_pages CLASS: pages the store keeps for all snapshots of a class.
store_pages() {
	"$POOLCTL" --json snap info "$1" | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["store"][sys.argv[1] + "_pages"])' "$2"
}
# field NAME KEY: a number from poolctl snap info --json.
field() {
	"$POOLCTL" --json snap info "$1" | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["snapshots"][0][sys.argv[1]])' "$2"
}

start || exit 1
chmod 0755 "$TEST_DIR/run"
# 30% zero, 50% shared, 20% each image's own: 80% of the pages of b are in a.
"$SNAP" mkimg "$TEST_DIR/a.img" 256 1 99 50 30 && "$SNAP" mkimg "$TEST_DIR/b.img" 256 2 99 50 30
suma=$("$SNAP" sum "$TEST_DIR/a.img")
sumb=$("$SNAP" sum "$TEST_DIR/b.img")
check "put a 256 MiB image" "$POOLCTL" snap put a "$TEST_DIR/a.img"
check "put a second one sharing 80% of its pages" "$POOLCTL" snap put b "$TEST_DIR/b.img" parent=a
check_out "65536 pages, 19661 zero, 45875 distinct, 13107 new" "b: only its own pages were new"
check "list them" "$POOLCTL" snap ls
check_out "^b +256M +183500K +78644K +pinned +sealed" "ls shows logical, stored and zero bytes"
"$POOLCTL" snap info b >"$TEST_DIR/out"
check_out "^parent: +a$" "the parent is recorded"
pages=$(store_pages b pinned)
# 512 MiB logical: 70% of a (its zero pages are not kept) and b's own 20%.
if [ "$pages" -eq $((45875 + 13107)) ]; then
	ok "the store keeps $pages pages ($((pages * 4096 >> 20)) MiB) for 512 MiB of images"
else
	not_ok "store pages $pages, expected $((45875 + 13107))"
fi
[ "$("$SNAP" read a)" = "$suma" ] && ok "a reads back bit-exact" || not_ok "a reads back"
check "write b to a file" "$POOLCTL" snap get b "$TEST_DIR/b.out"
cmp -s "$TEST_DIR/b.out" "$TEST_DIR/b.img" && ok "b is bit-exact" || not_ok "b bit-exact"
[ "$(stat -c %a "$TEST_DIR/b.out")" = 600 ] && ok "in a file of mode 0600 (a guest's memory)" ||
	not_ok "snap get made a file of mode $(stat -c %a "$TEST_DIR/b.out")"
rm -f "$TEST_DIR/b.out"
check "remove a" "$POOLCTL" snap rm a
[ "$(store_pages b pinned)" -eq 45875 ] && ok "a's own pages are freed, the shared ones kept" ||
	not_ok "store after rm a: $(store_pages b pinned)"
[ "$("$SNAP" read b)" = "$sumb" ] && ok "b still reads back bit-exact" || not_ok "b after rm a"
check_exit 1 "a is gone" "$POOLCTL" snap info a
check_out "no snapshot 'a'" "the error names it"
check "put a again" "$POOLCTL" snap put a "$TEST_DIR/a.img"
check_out "45875 distinct, 13107 new" "only a's own pages are stored again"
"$POOLCTL" --json snap put same "$TEST_DIR/a.img" | python3 -c '
import json, sys
d = json.load(sys.stdin)["snapshots"][0]
assert d["name"] == "same" and d["distinct_pages"] == 45875 and d["new_pages"] == 0, d' &&
	ok "the same image again stores no new page (put --json)" || not_ok "put of the same image"
check "remove it" "$POOLCTL" snap rm same

# A put killed midway: while its session lasts its snapshot is "writing" and
# cannot be opened; once the session's leases end (lease.grace, 3 s here:
# time enough to try the read under a loaded machine),
# the half-put snapshot is gone with every reference it took.
"$SNAP" mkimg "$TEST_DIR/c.img" 512 5 98 0 0 # every page new: a put long enough to kill
before=$(store_pages b pinned)
"$POOLCTL" snap put c "$TEST_DIR/c.img" >/dev/null 2>&1 &
putpid=$!
for i in $(seq 200); do [ "$(field c state 2>/dev/null)" = writing ] && break; sleep 0.01; done
kill -9 $putpid 2>/dev/null
wait $putpid 2>/dev/null
state=$(field c state 2>/dev/null)
if [ "$state" = writing ]; then
	check_exit 1 "a half-put snapshot cannot be read" "$SNAP" read c
	check_out "still being put" "and says why"
fi
for _ in $(seq 100); do "$POOLCTL" snap info c >/dev/null 2>&1 || break; sleep 0.1; done
check_exit 1 "after lease.grace the half-put snapshot is gone (it was ${state:-not made yet})" "$POOLCTL" snap info c
check_out "no snapshot 'c'" "poolctl says there is none"
after=$(store_pages b pinned)
[ "$after" -eq "$before" ] && ok "the store is back to $before pages, with no snap rm" ||
	not_ok "store after a dead put: $after, was $before"
[ "$("$SNAP" read b)" = "$sumb" ] && ok "b still reads back bit-exact" || not_ok "b after rm c"

# The page store's references are the manifests': no client drops or takes one directly.
KV="$top_builddir/tests/tools/pool-kv"
check_exit 1 "a remove in the page store is refused" "$KV" snap.pages remove anykey
check_out "go with the regions holding them" "saying why"
check_exit 1 "so is a put that names no manifest" "$KV" snap.pages put anykey 4096 1
check_out "names the region holding it" "saying why"
[ "$(store_pages b pinned)" -eq "$before" ] && ok "the store is unchanged" || not_ok "store changed"

# A state blob and a persistent snapshot (every value journaled by its lender: a smaller one).
head -c 100000 /dev/urandom >"$TEST_DIR/state"
"$SNAP" mkimg "$TEST_DIR/p.img" 32 4 99 50 30
sump=$("$SNAP" sum "$TEST_DIR/p.img")
check "put a persistent snapshot with a state blob" "$POOLCTL" snap put p "$TEST_DIR/p.img" \
	class=persistent state="$TEST_DIR/state" mode=0644
[ "$(field p state_bytes)" -eq 100000 ] && ok "its state blob is kept" || not_ok "state bytes"
[ "$(store_pages p persistent)" -eq 5734 ] && ok "its pages are in the persistent store" ||
	not_ok "persistent store pages $(store_pages p persistent)"
if have_nobody "$SNAP"; then
	check "another uid reads a 0644 snapshot" as_nobody "$SNAP" read p
	check_exit 1 "but not a 0600 one" as_nobody "$SNAP" read b
	check_out "access denied" "a read refusal"
	check_exit 1 "nor removes it" as_nobody "$POOLCTL" snap rm p
	check_out "access denied|belongs to uid 0" "a removal refused as not its own"
fi

# 1,000 copy-on-write clones of a 64 MiB snapshot: the node keeps one copy
# (snap place makes it ahead of the first clone), each clone costs only
# the pages it writes.
"$SNAP" mkimg "$TEST_DIR/c.img" 64 5 99 50 30
sumc=$("$SNAP" sum "$TEST_DIR/c.img")
check "put a 64 MiB snapshot" "$POOLCTL" snap put c "$TEST_DIR/c.img"
check "snap place makes the node's copy before any clone" "$POOLCTL" snap place c
check_out "^node [0-9]+: placed$" "says so"
# The copies poold holds: its memfds of snapshot c, and the memory they hold.
copies() { # -> "COUNT KIB"
	local n=0 kib=0 f
	for f in /proc/"$POOLD_PID"/fd/*; do
		case $(readlink "$f") in "/memfd:poold-snap:c "*)
			n=$((n + 1)); kib=$((kib + $(stat -L -c '%b * %B / 1024' "$f"))) ;;
		esac
	done
	echo "$n $kib"
}
read -r ncopies kib <<<"$(copies)"
[ "$ncopies" -eq 1 ] && [ "$kib" -ge 60000 ] && [ "$kib" -le 70000 ] &&
	ok "one copy: one memfd of $kib KiB" || not_ok "copies after the place: $ncopies holding $kib KiB"
check "the placed copy is listed" "$POOLCTL" snap copies
check_out "^c +[0-9a-f]+ +64M +ready +0 " "ready, and the fill is no clone"
check "the first clone uses the placed copy" "$SNAP" clones c 1 1 "$sumc"
shmem=$(sed -n 's/.*shmem \([-+][0-9]*\) KiB.*/\1/p' "$TEST_DIR/out")
[ -n "$shmem" ] && [ "$shmem" -le 16384 ] && ok "without a fill (shmem ${shmem} KiB)" ||
	not_ok "shmem grew by $shmem KiB for the first clone"
check "placing it again is fine" "$POOLCTL" --json snap place c
check_out '"status": ?"placed"' "in JSON too"
check_exit 1 "placing a snapshot that is not there fails" "$POOLCTL" snap place nothing
check_out "^poolctl: snap place: " "with a message"
check "1,000 clones by 10 processes, all right, writes private" "$SNAP" clones c 1000 10 "$sumc"
cat "$TEST_DIR/out"
shmem=$(sed -n 's/.*shmem \([-+][0-9]*\) KiB.*/\1/p' "$TEST_DIR/out")
priv=$(sed -n 's/.*private \([0-9]*\) KiB.*/\1/p' "$TEST_DIR/out")
[ -n "$shmem" ] && [ "$shmem" -le 16384 ] && ok "no second copy (shmem ${shmem} KiB)" ||
	not_ok "shmem grew by $shmem KiB for 1,000 clones"
[ -n "$priv" ] && [ "$priv" -ge 4000 ] && [ "$priv" -le $((4000 + 10 * 4096)) ] &&
	ok "private memory: $priv KiB for 1,000 written pages" || not_ok "private $priv KiB"
check "the copy's fd is sealed, read-only and maps only private" "$SNAP" clonefd c "$sumc"
check "the node's copy is listed" "$POOLCTL" snap copies
check_out "^c +[0-9a-f]+ +64M +ready +1003 " "with its clones counted (the second place is one)"
check "remove the snapshot" "$POOLCTL" snap rm c
check "its copy goes with it" "$POOLCTL" snap copies
[ "$(wc -l <"$TEST_DIR/out")" -eq 1 ] && ok "no copies left" || not_ok "copies after rm"

# A lazy clone that makes the node's copy is usable before the copy is full:
# its pages, touched last to first ahead of the fill, come from the store
# through userfaultfd, and the copy it leaves is whole.
check "put the same image as l" "$POOLCTL" snap put l "$TEST_DIR/c.img"
check "a lazy clone fills the node's copy, bit-exact, its write its own" "$SNAP" lazyclone l "$sumc"
cat "$TEST_DIR/out"
check "the copy it filled is listed" "$POOLCTL" snap copies
check_out "^l +[0-9a-f]+ +64M +ready +1 " "ready, with the plain clone after it counted (a fill is not)"
check "a second lazy clone maps the ready copy" "$SNAP" lazyclone l "$sumc"
check "remove l" "$POOLCTL" snap rm l
check "put it again as l2" "$POOLCTL" snap put l2 "$TEST_DIR/c.img"
check "8 lazy clones at once: one fills the copy, 7 follow its fill, all bit-exact" \
	"$SNAP" lazyclones l2 8 "$sumc"
cat "$TEST_DIR/out"
check "the copy is listed" "$POOLCTL" snap copies
check_out "^l2 +[0-9a-f]+ +64M +ready +15 " "with 7 followers and 8 plain clones counted"
check "remove l2" "$POOLCTL" snap rm l2
check "put it again as l3" "$POOLCTL" snap put l3 "$TEST_DIR/c.img"
check "16 lazy clones from one handle: its one thread fills and serves them all" \
	"$SNAP" lazyclone l3 "$sumc" 16
cat "$TEST_DIR/out"
check "remove l3" "$POOLCTL" snap rm l3
# With a recorded working set the first lazy clone's fill writes those pages
# first, in the order they were touched (here last to first): still whole.
check "put it again as l4" "$POOLCTL" snap put l4 "$TEST_DIR/c.img"
check "a restore from the store records every 7th page, last to first" "$SNAP" record l4 7
check_out "^recorded 2340 pages\$" "2,340 pages"
check "the first lazy clone, its copy filled with them first, is bit-exact" "$SNAP" lazyclone l4 "$sumc" 2
check "l4's copy is ready and whole" "$SNAP" clonefd l4 "$sumc"
check "remove l4" "$POOLCTL" snap rm l4
if have_nobody "$SNAP"; then
	check "uid nobody's lazy clone (no full userfaultfd for it: the fill comes first)" \
		as_nobody "$SNAP" lazyclone p "$sump"
fi

# A snapshot of a region's bytes.
check "a region of 8 MiB" "$top_builddir/tests/tools/pool-io" create img 8388608
check "filled" "$top_builddir/tests/tools/pool-io" write img 5
check "put a snapshot of it" "$SNAP" putregion fromregion img
sumr=$(cat "$TEST_DIR/out")
[ "$("$SNAP" read fromregion)" = "$sumr" ] && ok "it reads back as the region's bytes" ||
	not_ok "snapshot of a region"

# Bad input.
head -c 5000 /dev/zero >"$TEST_DIR/odd.img"
check_exit 1 "an image that is not whole pages" "$POOLCTL" snap put odd "$TEST_DIR/odd.img"
check_out "multiple of the page size" "says so"
check_exit 1 "an existing name" "$POOLCTL" snap put b "$TEST_DIR/b.img"
check_exit 1 "a bad name" "$POOLCTL" snap put 'no/slash' "$TEST_DIR/b.img"
check_out "snapshot name" "says what a name may be"
check_exit 2 "a bad page size" "$POOLCTL" snap put x "$TEST_DIR/b.img" page=3K
check_exit 2 "a bad class" "$POOLCTL" snap put x "$TEST_DIR/b.img" class=cache
check_exit 1 "a file that is not there" "$POOLCTL" snap put x "$TEST_DIR/nothing"
check_exit 1 "removing a snapshot that is not there" "$POOLCTL" snap rm nothing
check_out "no snapshot 'nothing'" "saying there is none"
check "a region that is not a snapshot is not listed" "$POOLCTL" region create snapx 1M
"$POOLCTL" snap ls >"$TEST_DIR/out"
check_out "^b " "ls still works"

# A restart: the persistent snapshot comes back whole, the pinned ones do not.
pool_stop
start || exit 1
check "after a restart" "$POOLCTL" snap ls
check_out "^p +32M" "the persistent snapshot is back"
[ "$("$SNAP" read p)" = "$sump" ] && ok "bit-exact" || not_ok "p after restart"
check_exit 1 "the pinned ones are gone" "$POOLCTL" snap info b
check_out "no snapshot 'b'" "poolctl says there is none"
check "remove it" "$POOLCTL" snap rm p
pool_alive && ok "poold still running" || not_ok "poold still running"
check "stops cleanly" pool_stop

# The shared class: pages dedup across uids, each checked by poold against
# its SHA-256 key before another uid's put can find it; bytes planted under
# the key of a page root puts later are dropped at their commit.
if have_nobody "$POOLCTL"; then
	start || exit 1
	chmod 0755 "$TEST_DIR/run"
	HOSTILE="$top_builddir/tests/tools/pool-hostile"
	"$SNAP" mkimg "$TEST_DIR/s1.img" 64 11 97 50 20 && "$SNAP" mkimg "$TEST_DIR/s2.img" 64 12 97 50 20
	"$SNAP" mkimg "$TEST_DIR/s3.img" 8 13 96 0 0
	chmod 0644 "$TEST_DIR"/s?.img
	sums1=$("$SNAP" sum "$TEST_DIR/s1.img")
	sums2=$("$SNAP" sum "$TEST_DIR/s2.img")
	check "root puts a shared snapshot" "$POOLCTL" snap put s1 "$TEST_DIR/s1.img" class=shared mode=0644
	as_nobody "$POOLCTL" --json snap put s2 "$TEST_DIR/s2.img" class=shared >"$TEST_DIR/out" 2>&1
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["snapshots"][0]
assert d["class"] == "shared" and d["distinct_pages"] - d["new_pages"] >= 8192, d
print(d["distinct_pages"], d["new_pages"])' "$TEST_DIR/out" >"$TEST_DIR/n" &&
		ok "uid nobody's snapshot sharing half its pages with root's stores only its own (distinct, new: $(cat "$TEST_DIR/n"))" ||
		{ not_ok "dedup across uids"; cat "$TEST_DIR/out"; }
	[ "$("$SNAP" read s1)" = "$sums1" ] && [ "$(as_nobody "$SNAP" read s2)" = "$sums2" ] &&
		ok "both read back bit-exact" || not_ok "shared snapshots read back"
	key=$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read(4096)).digest()[:16].hex())' "$TEST_DIR/s3.img")
	check "uid nobody makes a region of its own to hold shared pages" as_nobody "$IO" create nbshared 1048576 local
	as_nobody "$HOSTILE" "$POOL_SOCKET" --poison-shared nbshared "$key" >"$TEST_DIR/out" 2>&1; rc=$?
	[ "$rc" -eq 0 ] && grep -q "^refused: planting" "$TEST_DIR/out" && grep -q "^allowed: " "$TEST_DIR/out" &&
		ok "bytes planted under the key of root's next page are dropped, a true page is taken" ||
		{ not_ok "shared poisoning"; cat "$TEST_DIR/out"; }
	grep -q "wrote a value that is not its key's: dropped" "$TEST_DIR/poold.log" && ok "and poold says so" ||
		not_ok "no log line for the dropped value"
	# A reservation of another uid that is never written holds the key for a second at most.
	exec {squat}> >(as_nobody "$HOSTILE" "$POOL_SOCKET" --squat-shared nbshared "$key" >"$TEST_DIR/squat" 2>&1)
	for _ in $(seq 100); do grep -q reserved "$TEST_DIR/squat" && break; sleep 0.05; done
	grep -q "^reserved" "$TEST_DIR/squat" || not_ok "squatter: $(cat "$TEST_DIR/squat")"
	check "root puts the snapshot with that page, while nobody holds a reservation of it" "$POOLCTL" snap put s3 "$TEST_DIR/s3.img" class=shared
	[ "$("$SNAP" read s3)" = "$("$SNAP" sum "$TEST_DIR/s3.img")" ] && ok "and it reads back bit-exact" ||
		not_ok "s3 restored other bytes"
	exec {squat}>&-
	"$POOLCTL" snap rm s1 && as_nobody "$POOLCTL" snap rm s2 && "$POOLCTL" snap rm s3
	as_nobody "$IO" destroy nbshared >/dev/null
	"$POOLCTL" snap put any "$TEST_DIR/s3.img" >/dev/null # (snap info needs a snapshot)
	[ "$(store_pages any shared)" -eq 0 ] && ok "removing them empties the shared store" ||
		not_ok "shared store after rm: $(store_pages any shared)"
	check "stops" pool_stop
fi

# quota.bytes counts a uid's snapshot pages with its regions (each page once,
# however many of its snapshots share it); another uid's use is its own.
if have_nobody "$POOLCTL"; then
	pool_start -o lend.size=64M -o quota.bytes=16M -o control.mode=0666 || exit 1
	chmod 0755 "$TEST_DIR" "$TEST_DIR/run"
	"$SNAP" mkimg "$TEST_DIR/q32.img" 32 41 42 0 0 && "$SNAP" mkimg "$TEST_DIR/q8.img" 8 43 44 0 0
	chmod 0644 "$TEST_DIR"/q*.img
	check_exit 1 "a uid's 32 MiB snapshot over its 16M quota is refused" as_nobody "$POOLCTL" snap put q32 "$TEST_DIR/q32.img"
	check_out "quota" "saying it is over quota"
	check "an 8 MiB one fits" as_nobody "$POOLCTL" snap put q8 "$TEST_DIR/q8.img"
	check "the same pages again take no more" as_nobody "$POOLCTL" snap put q8b "$TEST_DIR/q8.img"
	check_exit 1 "then a 12M region of that uid is over its quota" as_nobody "$IO" create qreg $((12 << 20)) local
	check_out "regions, KV values and snapshot pages" "the refusal counts all it holds"
	check "root's own 12M region is not" "$IO" create rootreg $((12 << 20)) local
	check "removing its snapshots gives the room back" as_nobody "$POOLCTL" snap rm q8
	as_nobody "$POOLCTL" snap rm q8b >/dev/null
	check "and the 12M region fits" as_nobody "$IO" create qreg $((12 << 20)) local
	check "stops" pool_stop
fi
pool_done

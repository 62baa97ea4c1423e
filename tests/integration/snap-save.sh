#!/bin/bash
# A running clone saved as a snapshot of its own (pool_snap_save_begin/end,
# libpool/snapsave.c): the saved image is the clone's memory when the save
# began, bit for bit, though the clone wrote on during the store; the save
# finds exactly the pages the clone wrote (reads are not writes; a page
# written all zero or with the bytes it had counts; 4 KiB and 2 MiB
# pages) and stores only the
# ones the store lacks; the snapshot names its parent and outlives it; a
# save into the shared class, or by another uid, keys its pages its own
# way; bad calls are refused. Lazy clones of a snapshot of 2 MiB pages
# (the clone mapped 2 MiB-aligned, a page partly there placed a base page
# at a time), and its lazy restores into memory of base pages (served a
# base page at a time, from the store and from the node's copy; its
# working set recorded in 2 MiB pages) and of 2 MiB hugetlbfs pages.
. "${top_srcdir:-.}/tests/integration/lib.sh"
SNAP="$top_builddir/tests/tools/pool-snap"

pool_start -o lend.size=512M -o control.mode=0666 || exit 1
chmod 0755 "$TEST_DIR" "$TEST_DIR/run"
"$SNAP" mkimg "$TEST_DIR/a.img" 64 1 99 50 30 && chmod 0644 "$TEST_DIR/a.img"
check "put a 64 MiB image" "$POOLCTL" snap put a "$TEST_DIR/a.img" mode=0644

# field NAME KEY: a field of poolctl --json snap info NAME.
field() {
	"$POOLCTL" --json snap info "$1" | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["snapshots"][0][sys.argv[1]])' "$2"
}
# save WHAT SNAP-ARGS...: pool-snap save, its figures kept in $TEST_DIR/save.
save() {
	local what=$1; shift
	check "$what" "$SNAP" save "$@"
	cp "$TEST_DIR/out" "$TEST_DIR/save"
	sed 's/^/  # /' "$TEST_DIR/save"
}
saved_sum() { sed -n 's/^sum //p' "$TEST_DIR/save"; }

save "a clone writes 300 pages and is saved as s1" a s1 300 7
check_out "^written 300 pages$" "the save found the 300 pages written, no more (the reads of every page are not writes)"
want=$(saved_sum)
check "read s1 back" "$SNAP" read s1
check_out "^$want\$" "s1 is the clone as it was when the save began (its later writes are not in it)"
grep -q "^fork sum $want\$" "$TEST_DIR/save" && ok "a fork of s1, made and read while its parent wrote on, is s1" ||
	not_ok "the fork of s1: $(grep fork "$TEST_DIR/save")"
[ "$(field s1 parent)" = a ] && ok "s1 names a as its parent" || not_ok "s1's parent: $(field s1 parent)"
[ "$(field s1 new_pages)" = 298 ] && ok "298 pages were new (one written all zero, one with its own bytes)" ||
	not_ok "s1's new pages: $(field s1 new_pages)"

save "the same writes saved again as s2" a s2 300 7
[ "$(field s2 new_pages)" = 0 ] && ok "s2 stored no page: the store had them all" ||
	not_ok "s2's new pages: $(field s2 new_pages)"

save "a save into the shared class (pages keyed by SHA-256, not the parent's keys)" a s3 300 8 shared
want3=$(saved_sum)
check "read s3 back" "$SNAP" read s3
check_out "^$want3\$" "s3 is its clone as it was"
[ "$(field s3 new_pages)" = "$(field s3 distinct_pages)" ] &&
	ok "all its pages were new: the shared store keys them its own way" ||
	not_ok "s3's new pages: $(field s3 new_pages) of $(field s3 distinct_pages)"

check "put the image in 2 MiB pages as h" "$POOLCTL" snap put h "$TEST_DIR/a.img" page=2M
check "2 lazy clones of h, the first making the node's copy, each whole and right" \
	timeout 60 "$SNAP" lazyclone h "$("$SNAP" sum "$TEST_DIR/a.img")" 2
sumh=$("$SNAP" sum "$TEST_DIR/a.img")
for mode in remote remote,prefetch copy; do
	check "a lazy restore of h ($mode) into memory of base pages is the image" \
		timeout 60 "$SNAP" restore h "$sumh" "$mode"
done
# record touches every 1024th base page from the top: every other 2 MiB page.
check "a restore of h from the store recorded as its working set" timeout 60 "$SNAP" record h 1024
[ "$(field h working_set_pages)" = 16 ] && ok "its working set is the 16 of h's 32 pages it touched (2 MiB pages, not base pages)" ||
	not_ok "h's working set: $(field h working_set_pages) pages"
check "a lazy restore of h prefetching that set is the image" timeout 60 "$SNAP" restore h "$sumh" remote,prefetch
hugepages_add 32
if [ "$(hugepages_free)" -ge 32 ]; then
	check "a lazy restore of h into 2 MiB hugetlbfs pages is the image" \
		timeout 60 "$SNAP" restore h "$sumh" remote,huge
else
	echo "ok - # SKIP no 32 free 2 MiB pages to be had"
fi
hugepages_restore
save "a clone of h writes 20 pages and is saved as hs" h hs 20 3
check_out "^written 20 pages$" "20 of its 2 MiB pages were written (one 4 KiB page each)"
wanth=$(saved_sum)
check "read hs back" "$SNAP" read hs
check_out "^$wanth\$" "hs is the clone as it was"
[ "$(field hs page_size)" = 2097152 ] && ok "hs keeps h's 2 MiB pages" || not_ok "hs's page size: $(field hs page_size)"

check "remove the parent" "$POOLCTL" snap rm a
check "s1 still reads" "$SNAP" read s1
check_out "^$want\$" "s1 outlives its parent: it holds every page it needs"

check "put the image again as b" "$POOLCTL" snap put b "$TEST_DIR/a.img" mode=0644
if have_nobody "$SNAP"; then
	check "uid nobody clones root's 0644 snapshot b and saves it" as_nobody "$SNAP" save b nb 100 9
	nbsum=$(sed -n 's/^sum //p' "$TEST_DIR/out")
	check "uid nobody reads its save" as_nobody "$SNAP" read nb
	check_out "^$nbsum\$" "nobody's save is its clone as it was"
	check_exit 1 "uid nobody cannot open root's 0600 save s1 (no fork, no wake, no read)" as_nobody "$SNAP" read s1
	check_exit 1 "nor save a clone of it" as_nobody "$SNAP" save s1 nb2 100 9
	[ "$(field nb uid)" = "$(id -u nobody)" ] && ok "the save is nobody's" || not_ok "nb's uid: $(field nb uid)"
	[ "$(field nb new_pages)" -gt 100 ] &&
		ok "its pages are keyed under its own uid, so the store had none of b's ($(field nb new_pages) new)" ||
		not_ok "nb's new pages: $(field nb new_pages)"
	check_exit 1 "uid nobody cannot save over root's snapshot name" as_nobody "$SNAP" save b b 100 9
	check "and b is still the image" "$SNAP" read b
	check_out "^$("$SNAP" sum "$TEST_DIR/a.img")\$" "b unchanged"
fi

check_exit 1 "a save under a snapshot name taken is refused" "$SNAP" save b s1 100 9
check_exit 1 "a save with a name that is not one is refused" "$SNAP" save b "bad/name" 100 9
check_out "snapshot name 'bad/name'" "saying why"
check_exit 1 "a save of a snapshot that is not there is refused" "$SNAP" save none s9 100 9

pool_done

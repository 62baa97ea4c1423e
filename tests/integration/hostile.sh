#!/bin/bash
# A hostile tenant on one node, as uid nobody with raw protobuf frames
# (tests/tools/pool-hostile): what poold publishes names no worker and holds
# no key, and every transfer beyond the session's grants is refused: another
# user's region by id, a write to a region it may only read, past a region's
# end or its window, a KV place it was never given, after its close; the
# window cannot be shrunk under poold. poold keeps running, its fd count
# flat, and root's data is unchanged.
. "${top_srcdir:-.}/tests/integration/lib.sh"
IO="$top_builddir/tests/tools/pool-io"
HOSTILE="$top_builddir/tests/tools/pool-hostile"

have_nobody "$HOSTILE" || { echo "1..0 # SKIP: uid nobody cannot run the build tree"; exit 77; }
chmod 0755 "$TEST_DIR"
printf 'lend.size = 64M\ncontrol.mode = 0666\n' >"$TEST_DIR/poold.conf"
pool_start -f "$TEST_DIR/poold.conf" || exit 1
chmod 0755 "$TEST_DIR/run"

check "root writes a region others may read" "$IO" create pub $((4 << 20)) local
check "... with known bytes" "$IO" write pub 11
"$POOLCTL" region create priv 4M mode=0600 >/dev/null && "$IO" write priv 12 >/dev/null &&
	ok "and a private one" || not_ok "private region"
sum_pub=$("$IO" read pub 11 | awk '{print $NF}')
sum_priv=$("$IO" read priv 12 | awk '{print $NF}')
fds_before=$(ls /proc/"$POOLD_PID"/fd | wc -l)

as_nobody "$HOSTILE" "$POOL_SOCKET" pub priv >"$TEST_DIR/out" 2>&1; rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ "$rc" -eq 0 ] && ok "every attack was refused" || not_ok "$rc attack(s) were not refused"
for want in "node list gives worker addresses" "memfd of arena 0" "shrinking the window" \
	"reading the private region by id" "writing the private region by id" \
	"an atomic on the private region" "writing the region it may only read" \
	"reading past the region's end" "an offset that wraps around" \
	"a window that is not its own" "past the end of its window" \
	"reading arena 0 at offset 0 as a KV place" "writing arena 0 at offset 0 as a KV place" \
	"4097 ops in one request" "after closing it" "a 17th window" "a 2 GiB window" \
	"closing a window that is not its own" "memory file of the private region" \
	"memory file that holds more than the region" "a writable file of a region" \
	"mapping it writable" "truncating it" "sealing it" "making the read-only mapping writable" \
	"memory file after closing it" "KV namespace create" "KV namespace drop" \
	"KV namespace flush" "KV adopt" "KV adopted" "KV recount" \
	"a KV operation numbered 99 (malformed kv message)" \
	"a KV namespace operation numbered 0 (malformed kv-ns message)"; do
	grep -q "^refused: .*$want" "$TEST_DIR/out" && ok "refused: $want" || not_ok "refused: $want"
done
grep -q "^allowed: reading the public region it opened" "$TEST_DIR/out" &&
	ok "what it was granted it may read" || not_ok "a granted read"
grep -q "^allowed: mapping the public region read-only shows" "$TEST_DIR/out" &&
	ok "and map zero-copy, read-only, seeing the same bytes" || not_ok "a granted mapping"


# What it was granted moves in place through buffers it shares with poold.
check "reading a public region into a pool_buf_alloc() buffer" as_nobody env POOL_IO_BUF=1 "$IO" read pub 11
check_out "$sum_pub" "... gives root's bytes"

kill -0 "$POOLD_PID" && "$POOLCTL" status >/dev/null && ok "poold keeps running" || not_ok "poold died"
[ "$("$IO" read pub 11 | awk '{print $NF}')" = "$sum_pub" ] &&
	[ "$("$IO" read priv 12 | awk '{print $NF}')" = "$sum_priv" ] &&
	ok "root's regions are unchanged" || not_ok "root's data changed"
for _ in $(seq 20); do
	[ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -le "$fds_before" ] && break
	sleep 0.1
done
fds_after=$(ls /proc/"$POOLD_PID"/fd | wc -l)
[ "$fds_after" -le "$fds_before" ] && ok "poold's fds are back to $fds_after (were $fds_before)" ||
	not_ok "poold holds $fds_after fds, $fds_before before"
# A reservation is its session's: another uid trying every version (they are
# sequential) can neither publish root's half-written value nor free it.
KV="$top_builddir/tests/tools/pool-kv"
"$POOLCTL" kv create shared 16M mode=0666 >/dev/null
mkfifo "$TEST_DIR/hold.in"
"$KV" shared vput victim 65536 41 hold <"$TEST_DIR/hold.in" >"$TEST_DIR/hold.out" 2>&1 &
holder=$!
exec 8>"$TEST_DIR/hold.in"
for _ in $(seq 50); do grep -q "reserved, not committed" "$TEST_DIR/hold.out" && break; sleep 0.1; done
as_nobody "$HOSTILE" "$POOL_SOCKET" --steal shared victim >"$TEST_DIR/out" 2>&1; rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ "$rc" -eq 0 ] && grep -q "^steal: 0 taken, [1-9][0-9]* refused" "$TEST_DIR/out" &&
	ok "another session can neither commit nor abort root's reservation" || not_ok "a reservation was taken ($rc)"
exec 8>&-
wait "$holder" && grep -q "committed" "$TEST_DIR/hold.out" && ok "root then commits it" ||
	not_ok "root's commit: $(cat "$TEST_DIR/hold.out")"
check "and its value is bit-exact" "$KV" shared get victim 41

# Snapshot pages are keyed by their writer's uid: another uid cannot plant a
# page under the key root's next put of it would find.
check "uid nobody makes a region of its own to hold pages" as_nobody "$IO" create nbhold 1048576 local
as_nobody "$HOSTILE" "$POOL_SOCKET" --poison nbhold >"$TEST_DIR/out" 2>&1; rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ "$rc" -eq 0 ] && grep -q "^refused: storing a page under a key of root's" "$TEST_DIR/out" &&
	grep -q "^allowed: storing a page under a key of its own" "$TEST_DIR/out" &&
	ok "a page under root's key is refused, one under its own taken" || not_ok "snapshot page keys ($rc)"

# A mapping kept past its grant holds nothing once the region is freed and its
# memory is lent again: the file it maps is emptied, not the next user's (8 MiB:
# emptied in slices after the destroy is answered, daemon/hold/scrub.c).
check "a region to map and keep" "$IO" create kept $((8 << 20)) local
check "... with known bytes" "$IO" write kept 13
mkfifo "$TEST_DIR/keep.in"
as_nobody "$HOSTILE" "$POOL_SOCKET" --keep kept <"$TEST_DIR/keep.in" >"$TEST_DIR/keep.out" 2>&1 &
keeper=$!
exec 7>"$TEST_DIR/keep.in"
for _ in $(seq 50); do grep -q "^mapped" "$TEST_DIR/keep.out" && break; sleep 0.1; done
grep -q "^mapped 8388608 bytes, [1-9]" "$TEST_DIR/keep.out" &&
	ok "uid nobody maps it and sees root's bytes, then closes it" || not_ok "kept mapping: $(cat "$TEST_DIR/keep.out")"
fds_kept=$(ls /proc/"$POOLD_PID"/fd | wc -l)
check "root destroys it" "$IO" destroy kept
for _ in $(seq 30); do [ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -lt "$fds_kept" ] && break; sleep 0.1; done
[ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -lt "$fds_kept" ] &&
	ok "poold closes the region's memory file" || not_ok "poold still holds $fds_kept fds"
# Then lends all of the arena's free memory again, the kept region's with it.
n=0
while [ $n -lt 16 ] && "$IO" create "next$n" $((4 << 20)) local >/dev/null 2>&1; do
	"$IO" write "next$n" 14 >/dev/null || break
	n=$((n + 1))
done
[ $n -ge 1 ] && ! "$IO" create full $((4 << 20)) local >/dev/null 2>&1 &&
	ok "root lends the whole arena again to $n new regions, and fills them" || not_ok "refilling the arena ($n)"
echo go >&7
exec 7>&-
wait "$keeper"; rc=$?
sed 's/^/  | /' "$TEST_DIR/keep.out"
[ "$rc" -eq 0 ] && grep -q "^after: 0 bytes" "$TEST_DIR/keep.out" &&
	ok "the kept mapping reads only zeros, nothing of the new region" || not_ok "kept mapping still reads memory (rc $rc)"
check "the new regions keep root's bytes" "$IO" read next0 14
pool_done

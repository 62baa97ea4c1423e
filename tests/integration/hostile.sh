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
	"closing a window that is not its own"; do
	grep -q "^refused: .*$want" "$TEST_DIR/out" && ok "refused: $want" || not_ok "refused: $want"
done
grep -q "^allowed: reading the public region it opened" "$TEST_DIR/out" &&
	ok "what it was granted it may read" || not_ok "a granted read"

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
pool_done

#!/bin/bash
# Persistent regions on one node: a region of class persistent, and a vector
# index in one, come back with their data after a clean stop and after a
# SIGKILL of poold; a destroyed one does not; other regions do not.
. "${top_srcdir:-.}/tests/integration/lib.sh"
IO="$top_builddir/tests/tools/pool-io"
VEC="$top_builddir/tests/tools/pool-vec"

start() { pool_start -o lend.size=64M -o pmem.path="$TEST_DIR/pmem" -o pmem.size=32M; }

start || exit 1
check "a persistent region" "$IO" create keep $((4 << 20)) any persistent
check "filled with a pattern" "$IO" write keep 5
check "a persistent region to destroy later" "$IO" create gone $((2 << 20)) any persistent
check "a pinned region" "$IO" create dram $((2 << 20))
check "a vector index in the pmem tier" "$POOLCTL" vec create vidx hnsw l2 16 8M class=persistent
check "500 vectors added" "$VEC" add vidx 0 500 3
"$VEC" search vidx 10 9 5 >"$TEST_DIR/before"

check "poold stops cleanly" pool_stop
start || exit 1
"$POOLCTL" --json regions >"$TEST_DIR/out"
python3 -c 'import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))["regions"]}
assert "keep" in r and r["keep"]["class"] == "persistent" and r["keep"]["size"] == 4 << 20, r
assert "dram" not in r, r' "$TEST_DIR/out" && ok "after a restart the persistent regions are back, the pinned one is not" || { not_ok "regions after restart"; cat "$TEST_DIR/out"; }
check "the persistent region reads back bit-exact" "$IO" read keep 5
"$POOLCTL" events >"$TEST_DIR/out" 2>&1
grep -q "journal.*extent(s) of persistent values and regions kept" "$TEST_DIR/out" &&
	ok "root's poolctl events says what the pmem journal kept" || { not_ok "no journal event for root"; cat "$TEST_DIR/out"; }
if have_nobody "$POOLCTL"; then
	chmod 0755 "$TEST_DIR" "$TEST_DIR/run"; chmod 0666 "$POOL_SOCKET"
	as_nobody "$POOLCTL" events >"$TEST_DIR/out" 2>&1 && ! grep -q "journal" "$TEST_DIR/out" &&
		ok "another uid's does not (those name regions, namespaces or owners)" ||
		{ not_ok "events as nobody"; cat "$TEST_DIR/out"; }
fi
"$VEC" search vidx 10 9 5 >"$TEST_DIR/after" 2>"$TEST_DIR/out"
cmp -s "$TEST_DIR/before" "$TEST_DIR/after" && ok "the vector index answers as before" || { not_ok "vector index after restart"; cat "$TEST_DIR/out"; }
"$POOLCTL" --json vec info vidx | python3 -c 'import json, sys
v = json.load(sys.stdin)["indexes"][0]
assert v["count"] == 500 and v["kind"] == "hnsw", v' && ok "with its 500 vectors" || not_ok "vec info after restart"
check "more vectors can be added" "$VEC" add vidx 500 100 3
check "destroy one" "$IO" destroy gone

# SIGKILL: the journal was written as extents were lent, not at shutdown.
kill -KILL "$POOLD_PID"; wait "$POOLD_PID" 2>/dev/null; POOLD_PID=
start || exit 1
check "after SIGKILL the region reads back bit-exact" "$IO" read keep 5
"$POOLCTL" --json vec info vidx | python3 -c 'import json, sys
v = json.load(sys.stdin)["indexes"][0]
assert v["count"] == 600, v' && ok "the index holds its 600 vectors" || not_ok "vec info after SIGKILL"
check_exit 1 "the destroyed region stays destroyed" "$POOLCTL" region info gone
check_out "no region 'gone'" "poolctl says there is none"
check "a region of the same name can be made again" "$IO" create gone $((2 << 20)) any persistent
check "and reads as zeros" "$IO" zero gone
pool_alive && ok "poold still running" || not_ok "poold still running"

# A coordinator journal file that holds something else is never overwritten.
check "poold stops" pool_stop
head -c 100000 /dev/urandom >"$TEST_DIR/notajournal"
sum=$(md5sum <"$TEST_DIR/notajournal")
check_exit 1 "a coord.journal that holds something else stops poold" "$POOLD" -d \
	-o runtime_dir="$TEST_DIR/run" -o coord.journal="$TEST_DIR/notajournal"
check_out "holds something that is not a coordinator journal" "saying why"
[ "$(md5sum <"$TEST_DIR/notajournal")" = "$sum" ] && ok "and leaves the file as it was" ||
	not_ok "the file was overwritten"
pool_done

#!/bin/bash
# Vector indexes through libpool on one node: create flat and HNSW indexes
# in regions, add from one process and search from others (two of them
# mapping the pool at different addresses must agree), HNSW recall against
# flat, a reader searching while a writer adds, one writer at a time (and
# a dead one's token taken over), tombstones, a full index, a region that
# holds no index, a caller that cannot map the region, bad parameters.
. "${top_srcdir:-.}/tests/integration/lib.sh"
VEC="$top_builddir/tests/tools/pool-vec"

chmod 0755 "$TEST_DIR"
printf 'lend.size = 256M\ncontrol.mode = 0666\nlease.grace = 1s\n' >"$TEST_DIR/poold.conf"
pool_start -f "$TEST_DIR/poold.conf" || exit 1
chmod 0755 "$TEST_DIR/run"

check "create an hnsw index" "$VEC" create v1 hnsw l2 64 30000v
check "create a flat index" "$VEC" create f1 flat l2 64 30000v
check "stat a new index" "$VEC" stat v1
check_out "kind hnsw metric l2 dim 64 m 16 efc 200 efs 64 count 0 deleted 0 " "stat says what it is"
check_out "writer 0$" "nobody holds the writer token after close"
check "add 10,000 vectors to each" sh -c "'$VEC' add v1 0 10000 7 && '$VEC' add f1 0 10000 7"
check "stat counts them" "$VEC" stat v1
check_out "count 10000 deleted 0 " "count 10000"
"$POOLCTL" regions >"$TEST_DIR/out"
check_out "^v1 +" "the index is a region poolctl lists"

# Two processes, one mapping the pool elsewhere in its address space: identical results.
"$VEC" search v1 200 7 10 >"$TEST_DIR/s1" 2>"$TEST_DIR/m1"
"$VEC" -s search v1 200 7 10 >"$TEST_DIR/s2" 2>"$TEST_DIR/m2"
a1=$(sed -n 's/^mapped at //p' "$TEST_DIR/m1")
a2=$(sed -n 's/^mapped at //p' "$TEST_DIR/m2")
if [ -n "$a1" ] && [ -n "$a2" ] && [ "$a1" != "$a2" ]; then
	ok "the two processes map the index at different addresses ($a1, $a2)"
else
	not_ok "different mappings ($a1, $a2)"; cat "$TEST_DIR/m1" "$TEST_DIR/m2"
fi
if [ "$(wc -l <"$TEST_DIR/s1")" -eq 200 ] && [ "$(grep -c ' .* .* ' "$TEST_DIR/s1")" -eq 200 ] &&
	cmp -s "$TEST_DIR/s1" "$TEST_DIR/s2"; then
	ok "and return identical results for 200 queries"
else
	not_ok "identical results from two processes"; diff "$TEST_DIR/s1" "$TEST_DIR/s2" | head
fi
check "recall of hnsw against flat" "$VEC" recall v1 f1 200 7 10
recall=$(awk '/^recall@10/ { print $2 }' "$TEST_DIR/out")
awk -v r="${recall:-0}" 'BEGIN { exit !(r >= 0.95) }' && ok "recall@10 $recall >= 0.95" ||
	not_ok "recall@10 ${recall:-?} >= 0.95"

# A reader searches while a writer adds 10,000 more.
"$VEC" watch v1 4 7 >"$TEST_DIR/watch" 2>"$TEST_DIR/watch.err" & watcher=$!
check "add while a reader searches" "$VEC" add v1 10000 10000 7 64
if wait $watcher; then ok "the reader's results all made sense ($(cat "$TEST_DIR/watch"))"
else not_ok "reader during adds"; cat "$TEST_DIR/watch" "$TEST_DIR/watch.err"; fi
check "add the same to the flat index" "$VEC" add f1 10000 10000 7
check "recall after the concurrent adds" "$VEC" recall v1 f1 200 7 10
recall=$(awk '/^recall@10/ { print $2 }' "$TEST_DIR/out")
awk -v r="${recall:-0}" 'BEGIN { exit !(r >= 0.95) }' && ok "recall@10 $recall >= 0.95 at 20,000" ||
	not_ok "recall@10 ${recall:-?} >= 0.95 at 20,000"

# One writer at a time; a dead writer's token is taken over.
"$VEC" hold v1 >"$TEST_DIR/hold" 2>&1 & holder=$!
for _ in $(seq 50); do grep -q holding "$TEST_DIR/hold" && break; sleep 0.1; done
check_exit 1 "a second writer is refused" "$VEC" add v1 20000 1 7
check_out "has a writer already: pid $holder" "the refusal names the writer's pid"
check "readers are not" "$VEC" search v1 1 7 10
kill -KILL $holder; wait $holder 2>/dev/null
check "the dead writer's token is taken over" "$VEC" add v1 20000 1 7

# Tombstones: the nearest vector of query 0, removed, is not found again.
"$VEC" search v1 1 7 1 >"$TEST_DIR/out" 2>/dev/null
top=$(sed -n 's/^q0: \([0-9]*\):.*/\1/p' "$TEST_DIR/out")
check "remove label $top" "$VEC" remove v1 "$top"
check_out "removed 1" "one vector removed"
"$VEC" search v1 1 7 10 >"$TEST_DIR/out" 2>&1 && grep -q "^q0: [0-9]" "$TEST_DIR/out" &&
	! grep -Eq " $top:" "$TEST_DIR/out" && ok "a removed vector is not found" ||
	{ not_ok "a removed vector is not found"; cat "$TEST_DIR/out"; }
check_exit 1 "removing it again" "$VEC" remove v1 "$top"
check_out "no vector has label $top" "says there is none"
check "stat counts the tombstone" "$VEC" stat v1
check_out "count 20001 deleted 1 " "count 20001, deleted 1"

# A full index refuses adds cleanly and stays searchable.
check "a small index" "$VEC" create small hnsw cosine 32 262144
check_exit 1 "filling it up" "$VEC" add small 0 100000 3
check_out "the index is full" "the add says it is full"
check "it is still searchable" "$VEC" search small 5 3 10
check_out "^q4: [0-9]+:" "with results"

# Not an index; cannot map; bad parameters.
"$POOLCTL" region create plain 1M >/dev/null
check_exit 1 "a plain region is not an index" "$VEC" stat plain
check_out "no vector index here \(bad magic\)" "says so"
check_exit 1 "dimension 0" "$VEC" create bad flat l2 0 1M
check_out "dimension 0 is outside 1..4096" "names the bounds"
check_exit 1 "dimension 4097" "$VEC" create bad hnsw l2 4097 64M
check_exit 1 "unknown metric" "$VEC" create bad hnsw manhattan 8 1M
check_out "metric 0 is not l2, ip or cosine" "names the metrics"
check_exit 1 "M 1" "$VEC" create bad hnsw l2 8 1M 1 100 10
check_exit 1 "a region too small" "$VEC" create bad flat l2 8 4096
check_out "cannot hold an index" "says it cannot hold one"
"$POOLCTL" regions >"$TEST_DIR/out" && grep -q "^v1 " "$TEST_DIR/out" && ! grep -q "^bad " "$TEST_DIR/out" &&
	ok "failed creates leave no region" || { not_ok "failed creates leave no region"; cat "$TEST_DIR/out"; }
if have_nobody "$VEC"; then
	# Another uid that may read the index maps its region too (read-only) and searches in place.
	"$VEC" search v1 5 7 10 >"$TEST_DIR/inplace" 2>/dev/null
	check "another uid searches the index" as_nobody "$VEC" search v1 5 7 10
	check_out "mapped at" "in place, through the region's own memory file"
	grep -v "^mapped at" "$TEST_DIR/out" | cmp -s - "$TEST_DIR/inplace" && ok "with the same results as root's" \
		|| { not_ok "same results as root's"; diff "$TEST_DIR/inplace" "$TEST_DIR/out"; }
	check_exit 1 "its adds are refused (the index is mode 644)" \
		as_nobody "$VEC" add v1 90000 1 7
	check_out "read-write access denied" "with a message that says why"
fi
pool_alive && ok "poold still running" || not_ok "poold still running"
pool_done

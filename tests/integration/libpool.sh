#!/bin/bash
# libpool: a client connects, asks for status, reports errors; the library
# exports exactly the functions libpool.h declares.
. "${top_srcdir:-.}/tests/integration/lib.sh"

DEMO="$top_builddir/examples/pool-demo"
LIB="$top_builddir/libpool/.libs/libpool.so"

check_exit 1 "client without poold fails" "$DEMO" "$POOL_SOCKET"
check_out "cannot connect to poold at .*: No such file or directory" "client error message names the socket"

pool_start || exit 1
check "libpool client gets status" "$DEMO"
check_out "connected to poold [0-9.]+: node 1, role coordinator" "client prints what poold said"

# Sixteen clients at once.
pids=()
for i in $(seq 16); do "$DEMO" >"$TEST_DIR/c$i" 2>&1 & pids+=($!); done
wait "${pids[@]}"
bad=0
for i in $(seq 16); do grep -q "role coordinator" "$TEST_DIR/c$i" || bad=1; done
[ $bad -eq 0 ] && ok "16 concurrent clients" || not_ok "16 concurrent clients"

# Exported symbols = functions declared POOL_EXPORT in the header.
nm -D --defined-only "$LIB" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort >"$TEST_DIR/exported"
sed -n 's/^POOL_EXPORT .*[ *]\(pool_[a-z_0-9]*\)(.*/\1/p' "$top_srcdir/libpool/libpool.h" | sort >"$TEST_DIR/declared"
if [ -s "$TEST_DIR/declared" ] && cmp -s "$TEST_DIR/exported" "$TEST_DIR/declared"; then
	ok "libpool exports exactly the declared API ($(wc -l <"$TEST_DIR/declared") functions)"
else
	not_ok "libpool exports exactly the declared API"; diff "$TEST_DIR/declared" "$TEST_DIR/exported"
fi
nm -D --defined-only "$LIB" | awk '$2 ~ /[BDR]/' >"$TEST_DIR/data"
[ ! -s "$TEST_DIR/data" ] && ok "libpool exports no data symbols" || { not_ok "libpool exports no data symbols"; cat "$TEST_DIR/data"; }
objdump -p "$LIB" | grep -q "SONAME *libpool.so.0" && ok "soname libpool.so.0" || not_ok "soname libpool.so.0"
pool_done

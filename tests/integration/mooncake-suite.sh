#!/bin/bash
# Mooncake Store's own Python tests (tests/mooncake: three files of
# mooncake-wheel/tests, as they are in Mooncake's source) with pytest against
# a poold, unchanged: "from mooncake.store import" finds pool.mooncake through
# the alias package python/compat/mooncake. Every test of each file must pass;
# then the store's segments must all be gone (each store drops its own at
# close, or at exit) and poold still answers.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'import pytest' 2>/dev/null || { echo "1..0 # SKIP: needs python3-pytest"; exit 77; }
pool_pyenv || { echo "1..0 # SKIP: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
# The stores mount 3,200 MB and 2 x 1,600 MB segments; the concurrency test
# writes 800 values of 1 MiB.
pool_start -o lend.size=2G || exit 1
# The lease the tests wait out before a remove, 500 ms as Mooncake's CI runs them.
LEASE=(DEFAULT_KV_LEASE_TTL=500 POOL_MOONCAKE_LEASE_TTL_MS=500)
for file in test_distributed_object_store test_replicated_distributed_object_store \
	test_batch_replica_clear; do
	env "${PYENV[@]}" PYTHONPATH="$top_srcdir/python:$top_srcdir/python/compat" \
		POOL_SOCKET="$POOL_SOCKET" "${LEASE[@]}" timeout 600 "$PY" -m pytest -p no:cacheprovider \
		-rfE -o console_output_style=classic "$top_srcdir/tests/mooncake/$file.py" \
		>"$TEST_DIR/$file.out" 2>&1
	rc=$?
	passed=$(grep -oE '[0-9]+ passed' "$TEST_DIR/$file.out" | grep -oE '[0-9]+' || echo 0)
	failed=$(grep -oE '[0-9]+ (failed|error)' "$TEST_DIR/$file.out" | awk '{ n += $1 } END { print n + 0 }')
	if [ $rc -eq 0 ]; then
		ok "$file: $passed passed"
	else
		not_ok "$file: $passed passed, $failed failed (pytest exit $rc)"
		grep -E '^(FAILED|ERROR)' "$TEST_DIR/$file.out" | sed 's/^/#   /'
	fi
done
"$POOLCTL" kv ls >"$TEST_DIR/ns" 2>&1
if ! grep -q '^mooncake-default ' "$TEST_DIR/ns"; then
	not_ok "the tenant's directory namespace is not listed: $(head -3 "$TEST_DIR/ns")"
elif grep -q '^mooncake-default\.' "$TEST_DIR/ns"; then
	not_ok "segments left after the stores closed: $(grep -o '^mooncake-default\.[0-9a-f]*' "$TEST_DIR/ns" | tr '\n' ' ')"
else
	ok "every store's segment was dropped, the directory is left"
fi
pool_alive && ok "poold still running" || not_ok "poold died"
pool_done

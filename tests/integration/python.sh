#!/bin/bash
# The Python binding (python/pool): its pytest suite against a real poold,
# through the build tree's libpool; and as another uid, what it may not do
# raises PoolError.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import pytest, numpy' 2>/dev/null; then
	echo "skip: python3-pytest or python3-numpy is not installed"; exit 77
fi
pool_pyenv || { echo "skip: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
py() { pool_python "$@"; }
pool_start -o lend.size=256M -o control.mode=0666 || exit 1

check "the pytest suite passes" py -m pytest -q -p no:cacheprovider "$top_srcdir/python/tests"
grep -E "passed|failed" "$TEST_DIR/out" | tail -1
check "import pool names its version" py -c 'import pool; print(pool.__version__)'
check_out "^$("$POOLD" -V | awk '{print $2}')$" "the library's"
if have_nobody "$PY"; then
	chmod 0755 "$TEST_DIR" "$TEST_DIR/run"
	py -c 'import pool; p = pool.Pool(); r = p.create_region("root-only", 4096); r.write(0, b"secret")' \
		>"$TEST_DIR/out" 2>&1 || not_ok "root makes a 0600 region"
	check "uid nobody's open of root's 0600 region raises PoolError(-EACCES)" as_nobody \
		"${PYENV[@]}" POOL_SOCKET="$POOL_SOCKET" "$PY" -c '
import errno, pool
p = pool.Pool()
try:
    p.open_region("root-only")
except pool.PoolError as e:
    assert e.code == -errno.EACCES, e.code
    print("refused:", e)
else:
    raise SystemExit("opened")'
	check_out "^refused: " "with poold's message"
	# A tenant that may not make namespaces: its stores mount the shared segment an
	# operator made, which their close leaves; their setup drops no one's segment.
	"$POOLCTL" kv create mooncake-shared 64M mode=0666 >/dev/null &&
		"$POOLCTL" kv create mooncake-shared.0 64M mode=0666 >/dev/null || not_ok "kv create mooncake-shared"
	check "uid nobody's Mooncake stores use the operator's shared segment" as_nobody \
		"${PYENV[@]}" POOL_SOCKET="$POOL_SOCKET" "$PY" -c '
from pool.mooncake import MooncakeDistributedStore
a, b = MooncakeDistributedStore(), MooncakeDistributedStore()
assert a.setup("h:1", "m", 16 << 20, 1 << 20, "tcp", "", "m", tenant_id="shared") == 0
assert a._segs.own.namespace == "mooncake-shared.0"
assert a.put("k", b"v") == 0 and a.get("k") == b"v"
a.close()
assert b.setup("h:2", "m", 16 << 20, 1 << 20, "tcp", "", "m", tenant_id="shared") == 0
assert b.get("k") == b"v", "the shared segment went with a store"
b.close()
print("shared segment kept")'
	check_out "^shared segment kept" "and keeps it"
	check "the shared segment is still there" "$POOLCTL" kv stats mooncake-shared.0
fi
pool_done

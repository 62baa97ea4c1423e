#!/bin/bash
# pool-bench mooncake: Mooncake's store API on the pool (pool.mooncake) next
# to one KV namespace through the same Python binding, in the same run, on
# a private poold (tests/bench/mooncake.py has the rows).
#   tests/bench/pool-bench mooncake [BUILDDIR]
# env: MOONCAKE_BENCH_TIME (s/point, 1)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
POOLD=$top_builddir/daemon/poold
[ -x "$POOLD" ] || { echo "mooncake.sh: $POOLD not built (make)" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-mooncake.XXXXXX")
"$POOLD" -d -o runtime_dir="$dir/run" -o lend.size=3G >"$dir/poold.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$dir/run/poold.sock" ] && break; sleep 0.05; done
echo "## Mooncake's store API against one namespace: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs"
POOL_SOCKET=$dir/run/poold.sock PYTHONPATH=$top_srcdir/python \
	POOL_LIBPOOL=$top_builddir/libpool/.libs/libpool.so.0 \
	/usr/bin/python3 "$here/mooncake.py" "${MOONCAKE_BENCH_TIME:-1}"

# tests/bench/kvcluster.sh - sourced by the KV benchmarks on a cluster
# (pool-bench kv-shards, kv-handover, kv-backup, kv-lru): the build (the
# script's first argument, or the source tree), the cluster harness
# (tests/cluster/pool.sh), torn down at exit with $OUT when one is set; a
# client's pool-kv on host I, the clock in ms and a rate line.
set -u
top_builddir=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
export top_builddir top_srcdir
. "$top_srcdir/tests/cluster/pool.sh"
finish() { :; }
KV=$top_builddir/tests/tools/pool-kv
OUT=
trap '[ -z "$OUT" ] || rm -rf "$OUT"; cluster_destroy >/dev/null 2>&1' EXIT
# kv I ARGS...: pool-kv ARGS on host I, against its poold.
kv() { local i=$1; shift; cluster_exec "$i" env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
now_ms() { date +%s%3N; }
# rate KEYS BYTES MS: a line of keys, MB, ms, keys/s and MB/s.
rate() { awk -v k="$1" -v b="$2" -v ms="$3" 'BEGIN { printf "%8d keys %8.1f MB %8d ms %10.0f keys/s %8.1f MB/s\n", k, b / 1e6, ms, k * 1000 / ms, b / 1e3 / ms }'; }

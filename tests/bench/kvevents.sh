#!/bin/bash
# kvevents.sh - what KV events cost the KV cache: puts of new keys (each a
# BlockStored; once the 256 MiB namespace is full, each also evicts one, a
# BlockRemoved) of 16 KiB values, one at a time and in batches of 32,
# through the Python binding, against a poold that publishes no events, then
# against one that publishes the namespace's events (kv_events.*) to a
# subscriber reading them as vLLM's does (python3-zmq), in the same run;
# and the subscriber's count of what it got.
#
#   tests/bench/kvevents.sh [BUILDDIR]
# env: KV_BENCH_TIME (s/point, 2)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
POOLD=$top_builddir/daemon/poold
POOLCTL=$top_builddir/cli/poolctl
t=${KV_BENCH_TIME:-2}
dir=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-kvevents.XXXXXX")
pid='' spid=''
stop() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid='' spid=''
}
trap 'stop; rm -rf -- "$dir"' EXIT
export POOL_SOCKET=$dir/poold.sock

# Keys per second of puts of new keys, single and batched, for t seconds each.
puts() {
	PYTHONPATH="$top_srcdir/python" POOL_LIBPOOL="$top_builddir/libpool/.libs/libpool.so.0" \
		/usr/bin/python3 -c '
import itertools, sys, time
import numpy as np
import pool
label, secs = sys.argv[1], float(sys.argv[2])
kv = pool.Pool().kv("llm")
val = np.ones(16 << 10, np.uint8)
ids = itertools.count()
def rate(batch):
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < secs:
        keys = [next(ids).to_bytes(16, "big") for _ in range(batch)]
        if batch == 1:
            kv.put(keys[0], val)
        else:
            assert kv.put_batch(keys, [val] * batch) == [0] * batch
        n += batch
    return n / (time.perf_counter() - start)
print(label, "put", rate(1))
print(label, "mput", rate(32))' "$1" "$t"
}

run() { # label, poold options...
	local label=$1; shift
	"$POOLD" -d -o "runtime_dir=$dir" -o lend.size=1G "$@" >"$dir/poold.log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do [ -S "$POOL_SOCKET" ] && break; sleep 0.05; done
	"$POOLCTL" kv create llm 256M >/dev/null || { cat "$dir/poold.log"; exit 1; }
	puts "$label"
	stop
}

echo "# pool-bench kvevents, $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs: new keys of 16 KiB, ${t}s a point"
run off >"$dir/off"
run quiet -o "kv_events.endpoint=ipc://$dir/ev" -o kv_events.namespace=llm >"$dir/quiet"
# The subscriber reads everything, counting events, until poold goes.
"$POOLD" -d -o "runtime_dir=$dir" -o lend.size=1G -o "kv_events.endpoint=ipc://$dir/ev" \
	-o "kv_events.replay_endpoint=ipc://$dir/rp" -o kv_events.namespace=llm >"$dir/poold.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -S "$POOL_SOCKET" ] && break; sleep 0.05; done
/usr/bin/python3 -c '
import sys, zmq, msgpack
ctx = zmq.Context(); sub = ctx.socket(zmq.SUB); sub.connect(sys.argv[1]); sub.subscribe(b"")
batches = events = keys = 0
while sub.poll(3000):
    _, _, payload = sub.recv_multipart()
    batches += 1
    for e in msgpack.unpackb(payload)[1]:
        events += 1; keys += len(e.get("block_hashes", ()))
print("subscriber: %d batches, %d events, %d keys" % (batches, events, keys))' "ipc://$dir/ev" >"$dir/sub" &
spid=$!
sleep 0.5
"$POOLCTL" kv create llm 256M >/dev/null || { cat "$dir/poold.log"; exit 1; }
puts on >"$dir/on"
kill "$pid"; wait "$pid" 2>/dev/null; pid=''
wait "$spid"; spid=''
printf "%-5s %11s %15s %15s\n" op "off keys/s" "no subscriber" "a subscriber"
awk 'FILENAME == ARGV[1] { off[$2] = $3; next } FILENAME == ARGV[2] { q[$2] = $3; next }
     { printf "%-5s %11.0f %9.0f %5.2f %9.0f %5.2f\n", $2, off[$2], q[$2], q[$2] / off[$2], $3, $3 / off[$2] }' \
	"$dir/off" "$dir/quiet" "$dir/on"
cat "$dir/sub"

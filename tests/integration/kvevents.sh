#!/bin/bash
# KV events in vLLM's format (kv-events.c), taken as vLLM's own subscriber
# takes them, with python3-zmq and python3-msgpack: the events of puts,
# overwrites, removes, evictions and flushes, byte for byte; spills to the
# pmem tier and promotions as changes of medium; replay; a subscriber too
# slow to keep up; hostile peers on the sockets.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import zmq, msgpack' 2>/dev/null; then
	echo "skip: python3-zmq or python3-msgpack is not installed"; exit 77
fi
pool_pyenv || { echo "skip: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
export POOLCTL
case_py() { pool_python "$top_srcdir/tests/integration/kvevents.py" "$@"; }
pub="ipc://$TEST_DIR/kv-events" replay="ipc://$TEST_DIR/kv-replay"
poold_fds() { ls /proc/"$POOLD_PID"/fd | wc -l; }
poold_rss() { awk '/^VmRSS:/ { print $2 }' /proc/"$POOLD_PID"/status; }

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
metric() { python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode().splitlines():
    if l.startswith(sys.argv[2] + " "): print(l.split()[1])' "$PORT" "$1"; }

pool_start -o lend.size=256M -o kv.shard_size=32M -o kv_events.endpoint="$pub" -o kv_events.replay_endpoint="$replay" \
	-o kv_events.namespace=llm -o kv_events.topic=kv-events -o metrics.listen="127.0.0.1:$PORT" || exit 1
check "poold says where it publishes" grep -q "KV events of namespace 'llm' on $pub, replay on $replay" "$TEST_DIR/poold.log"
# A second poold given the same ipc:// endpoint (libzmq would remove the
# path and bind it anew) does not start, and the first goes on publishing
# there (the cases below subscribe to it).
mkdir -p "$TEST_DIR/run2"
timeout 20 "$POOLD" -d -o runtime_dir="$TEST_DIR/run2" -o lend.size=64M -o kv_events.endpoint="$pub" \
	-o kv_events.namespace=llm >"$TEST_DIR/second.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "kv_events.endpoint $pub: another process listens there" "$TEST_DIR/second.log" &&
	ok "a second poold on the same ipc endpoint does not start (exit $rc)" ||
	{ not_ok "a second poold on $pub: exit $rc"; sed 's/^/  | /' "$TEST_DIR/second.log"; }
"$POOLCTL" kv create llm 1M >/dev/null || not_ok "kv create llm"
check "events of new keys, removes, evictions and a flush, as msgspec encodes vLLM's structs" \
	case_py events "$pub" "$replay" llm
check_out "^events: " "the events case ran"
cat "$TEST_DIR/out"
# A sharded namespace: this poold owns every shard and publishes the same.
"$POOLCTL" kv drop llm >/dev/null && "$POOLCTL" kv create llm 1M sharded >/dev/null ||
	not_ok "kv create llm 1M sharded"
check "the same events of a sharded namespace (its one owner's)" case_py events "$pub" "$replay" llm
cat "$TEST_DIR/out"
"$POOLCTL" kv drop llm >/dev/null && "$POOLCTL" kv create llm 64M >/dev/null || not_ok "kv create llm again"
check "a late subscriber gets every kept batch by replay, then the end marker" \
	case_py replay "$pub" "$replay" llm
cat "$TEST_DIR/out"
fds0=$(poold_fds) rss0=$(poold_rss)
check "hostile peers on the replay and event sockets are ignored" case_py hostile "$pub" "$replay" llm
cat "$TEST_DIR/out"
check "poold logs the malformed replay requests" grep -q "malformed replay request ignored" "$TEST_DIR/poold.log"
bad=$(metric pool_kv_events_bad_replays_total) batches=$(metric pool_kv_events_batches_total)
check "the metrics count them ($bad) and the batches published ($batches)" test "${bad:-0}" -ge 4 -a "${batches:-0}" -ge 30
sleep 0.5
fds1=$(poold_fds) rss1=$(poold_rss)
check "poold's fds are flat after the hostile peers left ($fds0 -> $fds1)" test "$fds1" -le "$((fds0 + 2))"
check "poold's RSS is flat after the hostile peers left ($rss0 -> $rss1 KiB)" test "$rss1" -le "$((rss0 + 8192))"
check "poold still serves" "$POOLCTL" status
pool_stop || not_ok "poold stops cleanly"

# A pmem tier: values that spill there, and come back, change medium.
pool_start -o lend.size=256M -o pmem.path="$TEST_DIR/pmem" -o pmem.size=64M \
	-o kv_events.endpoint="$pub" -o kv_events.replay_endpoint="$replay" \
	-o kv_events.namespace=llm -o kv_events.topic=kv-events || exit 1
"$POOLCTL" kv create llm 1M >/dev/null || not_ok "kv create llm (dram+pmem)"
check "spills and promotions move keys between media CPU and STORAGE" case_py tiers "$pub" "$replay" llm
cat "$TEST_DIR/out"
pool_stop || not_ok "poold stops cleanly"

# The arrays of vLLM before its map encoding, the keys as bytes.
pool_start -o lend.size=256M -o kv_events.endpoint="$pub" -o kv_events.replay_endpoint="$replay" \
	-o kv_events.namespace=llm -o kv_events.topic=kv-events -o kv_events.format=array \
	-o kv_events.block_hash=bytes || exit 1
"$POOLCTL" kv create llm 1M >/dev/null || not_ok "kv create llm"
check "the same events as tagged arrays with bytes hashes" case_py events "$pub" "$replay" llm array bytes
cat "$TEST_DIR/out"
pool_stop || not_ok "poold stops cleanly"

# A small high-water mark: a subscriber that does not keep up misses batches and replays
# them. Only this case runs under it: the events case reads nothing while it puts, and
# under kv_events.hwm=2, on a loaded machine, it sometimes received no batch after its
# second for 20 s, even with one more put after the others.
pool_start -o lend.size=256M -o kv_events.endpoint="$pub" -o kv_events.replay_endpoint="$replay" \
	-o kv_events.namespace=llm -o kv_events.topic=kv-events -o kv_events.format=array \
	-o kv_events.block_hash=bytes -o kv_events.hwm=2 || exit 1
"$POOLCTL" kv create llm 128M >/dev/null || not_ok "kv create llm"
check "a subscriber too slow for the high-water mark replays what it missed" \
	case_py gap "$pub" "$replay" llm array bytes
cat "$TEST_DIR/out"
pool_done

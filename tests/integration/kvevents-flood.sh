#!/bin/bash
# The KV events sockets facing whoever reaches them (kvevents.c): a loopback
# endpoint is bound by poold, never connected to, so a squatter that binds
# it first gets nothing (poold does not start) and nobody binds it after.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import zmq' 2>/dev/null; then
	echo "skip: python3-zmq is not installed"; exit 77
fi
have_nobody "$PY" || exit 77
pool_pyenv || { echo "skip: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
FLOOD="$top_srcdir/tests/integration/kvflood.py"
as_nobody test -r "$FLOOD" || { echo "skip: uid nobody cannot read $FLOOD"; exit 77; }
PORT=$(free_port) RPORT=$(free_port)
pub="tcp://127.0.0.1:$PORT" replay="tcp://*:$RPORT"

# A router's SUB socket bound on loopback first, as uid nobody: poold would
# have connected to it (vLLM's rule for an address without a wildcard) and
# published the namespace's events to it. poold binds, so it does not start.
SQ=$(free_port)
as_nobody "$PY" "$FLOOD" squat "tcp://127.0.0.1:$SQ" 6 >"$TEST_DIR/squat" 2>&1 &
squatter=$!
wait_listen "$SQ" || not_ok "the squatter did not listen"
mkdir -p "$TEST_DIR/run-squat"
timeout 20 "$POOLD" -d -o runtime_dir="$TEST_DIR/run-squat" -o lend.size=64M \
	-o kv_events.endpoint="tcp://127.0.0.1:$SQ" -o kv_events.namespace=llm \
	-o kv_events.topic=kv-events >"$TEST_DIR/squat.log" 2>&1 &
squatted=$!
for _ in $(seq 100); do # where it starts all the same, it publishes what keys are put
	kill -0 "$squatted" 2>/dev/null || break
	if POOL_SOCKET="$TEST_DIR/run-squat/poold.sock" "$POOLCTL" kv create llm 1M >/dev/null 2>&1; then
		POOL_SOCKET="$TEST_DIR/run-squat/poold.sock" pool_python "$FLOOD" puts llm 3 >/dev/null 2>&1
		kill "$squatted"
		break
	fi
	sleep 0.1
done
wait "$squatted"; rc=$?
wait "$squatter"
[ "$rc" -ne 0 ] && [ "$rc" -ne 143 ] && grep -q "kv_events.endpoint tcp://127.0.0.1:$SQ: Address already in use" "$TEST_DIR/squat.log" &&
	ok "poold does not start on a loopback endpoint another uid bound first (exit $rc)" ||
	{ not_ok "poold on a squatted endpoint: exit $rc"; sed 's/^/  | /' "$TEST_DIR/squat.log"; }
grep -q "squatter got 0 messages" "$TEST_DIR/squat" && ok "and the squatter got no event" ||
	{ not_ok "the squatter got events"; sed 's/^/  | /' "$TEST_DIR/squat"; }

pool_start -o lend.size=256M -o kv_events.endpoint="$pub" -o kv_events.replay_endpoint="$replay" \
	-o kv_events.namespace=llm -o kv_events.topic=kv-events || exit 1
ss -ltnpH "sport = :$PORT" | grep -q "127.0.0.1:$PORT .*pid=$POOLD_PID," &&
	ok "poold listens on $pub (ss -ltnp)" || { not_ok "poold does not listen on $pub"; ss -ltnp; }
ss -ltnpH "sport = :$RPORT" | grep -q "pid=$POOLD_PID," && ok "and on the replay endpoint $replay" ||
	not_ok "poold does not listen on $replay"
check "uid nobody cannot bind $pub after it (SO_REUSEADDR, SO_REUSEPORT)" \
	as_nobody "$PY" "$FLOOD" bind 127.0.0.1 "$PORT"
pool_done

#!/bin/bash
# poold under systemd's Type=notify, with a notify socket of our own in
# systemd's place: READY=1 and a STATUS= line once it serves, WATCHDOG=1
# every half of $WATCHDOG_USEC from its event loop, none while that loop is
# held up (its stderr, a pipe nobody reads, full: a write of a log line
# blocks, as it would behind a stalled journald), the pings back once it
# runs again, STOPPING=1 at its end; a node ready only once the
# coordinator registered it; no pings when $WATCHDOG_PID names
# another process; a $NOTIFY_SOCKET that is not a unix socket ignored.
. "${top_srcdir:-.}/tests/integration/lib.sh"

NOTES=$TEST_DIR/notes
# The socket systemd would listen on: each datagram, a line per KEY=value,
# written to $NOTES with the time it came.
python3 - "$TEST_DIR/notify" "$NOTES" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode(errors="replace")
        for line in msg.split("\n"):
            out.write("%.3f %s\n" % (time.monotonic(), line))
PY
LISTENER=$!
trap 'kill "$LISTENER" "${CAT_PID:-}" ${NODE_PID:-} 2>/dev/null; kill -CONT "${CAT_PID:-}" 2>/dev/null; pool_cleanup' EXIT
for _ in $(seq 100); do [ -S "$TEST_DIR/notify" ] && break; sleep 0.05; done

now() { python3 -c 'import time; print("%.3f" % time.monotonic())'; }
# pings_since T: the WATCHDOG=1 pings that came after monotonic time T.
pings_since() { awk -v t="$1" '$1 > t && $2 == "WATCHDOG=1"' "$NOTES" | wc -l; }
# wait_note RE: until a note matches (5 s at most).
wait_note() {
	for _ in $(seq 100); do grep -Eq "$1" "$NOTES" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

# poold's stderr: a pipe of one page whose reader (cat) we can stop.
mkfifo "$TEST_DIR/err"
python3 - "$TEST_DIR/err" <<'PY' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ: one page
time.sleep(3)  # the pipe lives on while poold and cat hold it
PY
SIZER=$!
sleep 0.3
cat "$TEST_DIR/err" >>"$TEST_DIR/poold.log" &
CAT_PID=$!
mkdir -p "$TEST_DIR/run"
NOTIFY_SOCKET=$TEST_DIR/notify WATCHDOG_USEC=200000 \
	"$POOLD" -d -o runtime_dir="$TEST_DIR/run" -o lend.size=32M -o log.level=debug 2>"$TEST_DIR/err" &
POOLD_PID=$!
wait "$SIZER"
pool_wait_socket || exit 1

wait_note "READY=1" && ok "READY=1 once poold serves" || not_ok "no READY=1"
grep -q "STATUS=coordinator, node 1, lending 32M$" "$NOTES" &&
	ok "STATUS= says what it serves as: coordinator, node 1, lending 32M" ||
	{ not_ok "the STATUS= line"; cat "$NOTES"; }
t=$(now); sleep 1
n=$(pings_since "$t")
[ "$n" -ge 3 ] && ok "WATCHDOG=1 from its loop: $n in 1 s (every 100 ms, half of WATCHDOG_USEC)" ||
	not_ok "$n pings in 1 s"

# Hold its loop up: stop the reader of its stderr; every connection logs
# two debug lines, so a few dozen fill the pipe and the next write blocks.
kill -STOP "$CAT_PID"
python3 - "$POOL_SOCKET" <<'PY'
import socket, sys
for _ in range(300):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    try:
        s.connect(sys.argv[1])
    except OSError:
        pass
    s.close()
PY
check_exit 124 "its loop is held up: a client gets no answer" timeout 1 "$POOLCTL" status
t=$(now); sleep 1.5
n=$(pings_since "$t")
[ "$n" = 0 ] && ok "no WATCHDOG=1 while the loop is held up (systemd would restart it)" ||
	not_ok "$n pings while the loop was held up"
kill -CONT "$CAT_PID"
t=$(now)
wait_note "WATCHDOG=1" && sleep 1
n=$(pings_since "$t")
[ "$n" -ge 1 ] && ok "the pings come again once the loop runs ($n in 1 s)" || not_ok "no ping after the loop ran again"
check "and it serves" "$POOLCTL" status
pool_stop && ok "SIGTERM: a clean stop" || not_ok "poold's stop"
wait_note "STOPPING=1" && ok "STOPPING=1 at its end" || not_ok "no STOPPING=1"
kill "$CAT_PID" 2>/dev/null

# A node is ready once the coordinator registered it: started before the
# coordinator, it says it is registering, and READY=1 comes when it joins.
: >"$NOTES"
port=$(free_port)
mkdir -p "$TEST_DIR/run2"
NOTIFY_SOCKET=$TEST_DIR/notify "$POOLD" -d -o runtime_dir="$TEST_DIR/run2" -o role=node \
	-o coordinator=127.0.0.1:$port -o peer.secret=sdnotify-test -o node.name=n2 -o lend.size=16M \
	-o fabric.transports=tcp >>"$TEST_DIR/node.log" 2>&1 &
NODE_PID=$!
wait_note "STATUS=node: registering with the coordinator" &&
	ok "a node without its coordinator: STATUS= says it is registering" || not_ok "the node's first STATUS="
sleep 1
grep -q "READY=1" "$NOTES" && not_ok "READY=1 before the node registered" ||
	ok "no READY=1 before it is registered"
pool_start -o lend.size=32M -o peer.listen=127.0.0.1:$port -o peer.secret=sdnotify-test || exit 1
wait_note "READY=1" && ok "READY=1 once the coordinator registered it" ||
	{ not_ok "no READY=1 from the node"; cat "$TEST_DIR/node.log"; }
grep -Eq "STATUS=node, registered with the coordinator, node [0-9]+, lending 16M$" "$NOTES" &&
	ok "its STATUS= says so, with its node id and what it lends" || { not_ok "the node's STATUS="; cat "$NOTES"; }
kill -TERM "$NODE_PID"; wait "$NODE_PID"
pool_stop || not_ok "stop"

# $WATCHDOG_PID of another process: the watchdog is not poold's.
: >"$NOTES"
NOTIFY_SOCKET=$TEST_DIR/notify WATCHDOG_USEC=200000 WATCHDOG_PID=1 pool_start -o lend.size=32M || exit 1
wait_note "READY=1" && ok "READY=1 with another process's watchdog" || not_ok "no READY=1"
sleep 1
[ "$(pings_since 0)" = 0 ] && ok "no pings for a watchdog meant for another pid" ||
	not_ok "$(pings_since 0) pings for another pid's watchdog"
pool_stop || not_ok "stop"

# A $NOTIFY_SOCKET that is not a unix socket (systemd's vsock form): said, and ignored.
NOTIFY_SOCKET=vsock:2:1234 pool_start -o lend.size=32M || exit 1
check "poold serves" "$POOLCTL" status
grep -q "NOTIFY_SOCKET vsock:2:1234: not a unix socket" "$TEST_DIR/poold.log" &&
	ok "the notify socket it cannot use is logged" || not_ok "nothing logged of the notify socket"
pool_stop && ok "and it stops cleanly" || not_ok "stop"
pool_done

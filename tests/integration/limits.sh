#!/bin/bash
# Connection limits, admin permissions and socket access.
. "${top_srcdir:-.}/tests/integration/lib.sh"

chmod 0755 "$TEST_DIR"
pool_start -o control.max_clients_per_uid=3 -o control.mode=0666 || exit 1

# Hold three connections; the fourth from the same uid is refused clearly.
holders=()
for i in 1 2 3; do
	exec {fd}> >(python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" hold \
		>"$TEST_DIR/hold$i")
	holders+=("$fd")
done
# Each holder says so once its Hello is answered (python starts slowly under load).
for _ in $(seq 200); do
	[ "$(cat "$TEST_DIR"/hold? 2>/dev/null | grep -c holding)" = 3 ] && break
	sleep 0.1
done
check_exit 1 "fourth connection from one uid refused" "$POOLCTL" status
check_out "too many connections from uid 0 \(control.max_clients_per_uid = 3\)" "refusal names the limit"
for fd in "${holders[@]}"; do exec {fd}>&-; done
for _ in $(seq 100); do "$POOLCTL" status >/dev/null 2>&1 && break; sleep 0.1; done
check "served again once connections close" "$POOLCTL" status

# Admin requests need root, poold's uid or the admin group.
if have_nobody "$POOLCTL"; then
	check "status allowed for any uid" as_nobody "$POOLCTL" status
	check_exit 1 "reload refused for an unprivileged uid" as_nobody "$POOLCTL" reload
	check_out "reload needs root or the admin group" "refusal says what is needed"
	pool_stop
	pool_start || exit 1
	chmod 0755 "$TEST_DIR/run"
	check_exit 3 "socket mode 0660 keeps other users out" as_nobody "$POOLCTL" status
	check_out "permission denied" "poolctl says permission denied"
fi

# A client that pipelines requests without reading the replies: poold stops
# reading it once a few frames of replies wait (so its memory for that client
# stays bounded), serves the others meanwhile, and answers every request
# once the client reads.
python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" "$POOLCTL" "/proc/$POOLD_PID/status" \
	>"$TEST_DIR/out" 2>&1 <<'EOF2'
import socket, subprocess, sys, threading
sys.path.insert(0, sys.argv[2])
import wire
def rss():
    return int(next(l for l in open(sys.argv[4]) if l.startswith("VmRSS:")).split()[1])
s = wire.connect(sys.argv[1])
s.settimeout(30)
s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
assert wire.read_frame(s)[0] == wire.HELLO_REPLY
before = rss()
n = 600000
data = b"".join(wire.frame(wire.STATUS, req_id=i) for i in range(2, n + 2))
sent = [0]
def send():
    s.sendall(data)
    sent[0] = 1
t = threading.Thread(target=send)
t.start()
t.join(3)  # the kernel buffers fill, then poold stops reading
assert subprocess.run([sys.argv[3], "status"], capture_output=True).returncode == 0, "others served"
grown = rss() - before
got = 0
while got < n:
    r = wire.read_frame(s)
    assert r and r[0] == wire.STATUS_REPLY, r
    got += 1
t.join()
print("blocked %s, %d replies, poold grew %d KiB while the client did not read" % (not sent[0], got, grown))
assert grown < 32 * 1024, grown  # the replies of 600,000 requests take ~60 MiB
EOF2
[ $? -eq 0 ] && ok "a client pipelining 600,000 requests unread: bounded, others served ($(cat "$TEST_DIR/out"))" \
	|| { not_ok "pipelining without reading"; cat "$TEST_DIR/out"; }

# A client that stops reading altogether is disconnected after
# control.write_timeout (2 s here) with none of its replies taken.
pool_stop
pool_start -o control.write_timeout=2s || exit 1
python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" "$POOLCTL" >"$TEST_DIR/out" 2>&1 <<'EOF2'
import subprocess, sys, threading, time
sys.path.insert(0, sys.argv[2])
import wire
s = wire.connect(sys.argv[1])
s.settimeout(30)
s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
assert wire.read_frame(s)[0] == wire.HELLO_REPLY
data = b"".join(wire.frame(wire.STATUS, req_id=i) for i in range(2, 600002))
def send():
    try:
        s.sendall(data)
    except OSError:
        pass
threading.Thread(target=send, daemon=True).start()
time.sleep(5)  # reading nothing
assert subprocess.run([sys.argv[3], "status"], capture_output=True).returncode == 0, "others served"
got = 0
while True:
    try:
        r = wire.read_frame(s)
    except ConnectionResetError:
        break
    if r is None:
        break
    got += 1
print("closed after %d of 600,000 replies" % got)
assert got < 600000, got
EOF2
rc=$?
[ $rc -eq 0 ] && ok "a client reading nothing is disconnected after control.write_timeout ($(cat "$TEST_DIR/out"))" ||
	{ not_ok "control.write_timeout"; cat "$TEST_DIR/out"; }
grep -q "read none of its replies for 2000 ms: disconnected" "$TEST_DIR/poold.log" &&
	ok "and the log says why" || not_ok "no control.write_timeout line in the log"

# One uid's many connections share control.max_output_per_uid of unread replies.
pool_stop
pool_start -o control.max_output_per_uid=2M || exit 1
# (A sanitizer's allocator keeps what is freed in quarantine: no RSS to give back there.)
python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" "$POOLCTL" "/proc/$POOLD_PID/status" \
	"${pool_sanitizers:+sanitized}" >"$TEST_DIR/out" 2>&1 <<'EOF2'
import socket, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[2])
import wire
def status(field):
    return int(next(l for l in open(sys.argv[4]) if l.startswith(field + ":")).split()[1])
hwm = lambda: status("VmHWM")
rss0 = status("VmRSS")
conns = []
for i in range(64):
    s = wire.connect(sys.argv[1])
    s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
    assert wire.read_frame(s)[0] == wire.HELLO_REPLY
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    conns.append(s)
before = hwm()
data = b"".join(wire.frame(wire.STATUS, req_id=i) for i in range(2, 40002))
deadline = time.time() + 4
left = {i: data for i in range(len(conns))}
while left and time.time() < deadline:  # each connection pushes 40,000 requests, reading nothing
    for i in list(left):
        try:
            n = conns[i].send(left[i])
            left[i] = left[i][n:]
            if not left[i]:
                del left[i]
        except BlockingIOError:
            pass
    time.sleep(0.01)
assert subprocess.run([sys.argv[3], "status"], capture_output=True).returncode == 0, "others served"
grown = hwm() - before
rss1 = status("VmRSS")
for s in conns:
    s.close()
time.sleep(2)  # poold frees their buffers and gives the heap back within a second
rss2 = status("VmRSS")
print("64 connections of one uid, none reading: poold's peak grew %d KiB; RSS %d -> %d -> %d KiB after close"
      % (grown, rss0, rss1, rss2))
assert grown < 48 * 1024, grown
assert sys.argv[5:] == ["sanitized"] or rss2 - rss0 < max(1024, (rss1 - rss0) // 4), (rss0, rss1, rss2)
EOF2
[ $? -eq 0 ] && ok "control.max_output_per_uid bounds a uid's unread replies ($(cat "$TEST_DIR/out"))" \
	|| { not_ok "per-uid unread replies"; cat "$TEST_DIR/out"; }
check "served again after" "$POOLCTL" status

# Transfer windows: a uid's connections share control.max_window_bytes_per_uid
# (admins are not bounded); a refusal names it; closing windows or
# connections gives the room back, and poold holds no fd for them.
pool_stop
pool_start -o control.max_window_bytes_per_uid=64M -o control.mode=0666 || exit 1
chmod 0755 "$TEST_DIR/run"
if have_nobody /usr/bin/python3; then
	fds0=$(ls "/proc/$POOLD_PID/fd" | wc -l)
	as_nobody /usr/bin/python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" \
		>"$TEST_DIR/out" 2>&1 <<'EOF2'
import sys, time
sys.path.insert(0, sys.argv[2])
import wire
XFER_WINDOW = 55
M = 1 << 20
def conn():
    s = wire.connect(sys.argv[1])
    s.settimeout(10)
    s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
    assert wire.read_frame(s)[0] == wire.HELLO_REPLY
    return s
def window(s, size, close=None):
    """The window's id, or the error's message."""
    p = wire.vfield(1, size) + (wire.vfield(2, close) if close is not None else b"")
    s.sendall(wire.frame(XFER_WINDOW, p, req_id=7))
    t, _, payload = wire.read_frame(s)
    f = wire.parse(payload)
    return f[2][0].decode() if t == wire.ERROR else f[1][0] if t != wire.OK else "ok"
a, b = conn(), conn()
ids = [window(a, 16 * M) for _ in range(4)]
assert all(isinstance(i, int) for i in ids), ids
refused = window(b, 64 << 10)
assert "control.max_window_bytes_per_uid" in refused, refused
print("4 x 16M given; then refused:", refused)
assert window(a, 0, close=ids[0]) == "ok"
assert isinstance(window(b, 16 * M), int), "a closed window's room is not given back"
a.close()
for _ in range(100):  # poold ends a's session once it reads the close
    got = window(b, 32 * M)
    if isinstance(got, int):
        break
    time.sleep(0.05)
assert isinstance(got, int), "a closed connection's windows still count: " + got
EOF2
	rc=$?
	sed 's/^/  | /' "$TEST_DIR/out"
	[ "$rc" -eq 0 ] && ok "uid nobody's windows stop at control.max_window_bytes_per_uid, and come back" ||
		not_ok "windows per uid"
	python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[2])
import wire
s = wire.connect(sys.argv[1])
s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=1))
assert wire.read_frame(s)[0] == wire.HELLO_REPLY
s.sendall(wire.frame(55, wire.vfield(1, 1 << 30), req_id=2))
assert wire.read_frame(s)[0] == 56, "root's 1G window refused"
EOF2
	[ $? -eq 0 ] && ok "root's 1G window is given meanwhile" || not_ok "root's window refused"
	fds1=$(ls "/proc/$POOLD_PID/fd" | wc -l)
	[ "$fds1" -le "$fds0" ] && ok "poold holds no more fds after ($fds0 -> $fds1)" ||
		not_ok "fds $fds0 -> $fds1"
fi

# Started with the soft limit of a login shell (1,024 open files), poold
# raises it to what its bounds may hold at once, within the hard limit; a
# hard limit below that is said at start.
pool_stop
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -gt 8192 ]; then
	POOLD_WRAP="prlimit --nofile=1024:$hard" pool_start || exit 1
	soft=$(awk '/^Max open files/ { print $4 }' "/proc/$POOLD_PID/limits")
	[ "${soft:-0}" -gt 4096 ] && ok "a soft limit of 1024 open files raised to $soft" ||
		not_ok "soft limit on open files: $soft"
	pool_stop
else
	ok "# SKIP the hard limit on open files here is $hard"
fi
POOLD_WRAP="prlimit --nofile=1024:2048" pool_start || exit 1
soft=$(awk '/^Max open files/ { print $4 }' "/proc/$POOLD_PID/limits")
[ "${soft:-0}" = 2048 ] && grep -q "open files: the configured bounds may need [0-9]*, the hard limit is 2048" \
	"$TEST_DIR/poold.log" && ok "raised to a hard limit of 2048, which is said to be short" ||
	not_ok "soft limit on open files under a hard limit of 2048: $soft"

# Out of file descriptors: poold stops accepting for a while instead of
# spinning on accept(), says so a few times, serves its open connections, and
# accepts again once fds are free.
pool_stop
POOLD_WRAP="prlimit --nofile=48" pool_start -o metrics.listen=127.0.0.1:19190 || exit 1
lines0=$(wc -l <"$TEST_DIR/poold.log")
python3 - "$POOL_SOCKET" "$POOLCTL" "/proc/$POOLD_PID/stat" >"$TEST_DIR/out" 2>&1 <<'EOF2'
import socket, subprocess, sys, time
path, poolctl, stat = sys.argv[1:4]
ticks = lambda: sum(int(x) for x in open(stat).read().rsplit(")", 1)[1].split()[11:13])
keep = socket.socket(socket.AF_UNIX)          # a client connected before the flood
keep.connect(path)
held = []
for i in range(200):                           # far past poold's 48 fds
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect(path)
    except OSError:
        pass
    held.append(s)
for i in range(100):
    m = socket.socket()
    m.setblocking(False)
    try:
        m.connect(("127.0.0.1", 19190))
    except OSError:
        pass
    held.append(m)
time.sleep(0.5)
t0 = ticks(); time.sleep(2); t1 = ticks()
print("cpu ticks in 2 s with the backlog full:", t1 - t0)
for s in held:
    s.close()
time.sleep(2.5)
r = subprocess.run([poolctl, "status"], capture_output=True, text=True)
print("status after:", r.returncode)
sys.exit(0 if t1 - t0 < 40 and r.returncode == 0 else 1)
EOF2
rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ "$rc" -eq 0 ] && ok "out of fds: poold does not spin, and accepts again once they are free" ||
	not_ok "out of fds: poold spun or did not recover"
n=$(($(wc -l <"$TEST_DIR/poold.log") - lines0))
grep -q "cannot accept (Too many open files): not accepting for" "$TEST_DIR/poold.log" && [ "$n" -lt 20 ] &&
	ok "and says so in $n log lines" || not_ok "$n log lines during the flood"
pool_alive && ok "poold still running" || not_ok "poold died"

# poolctl against a stopped daemon.
pool_stop
check_exit 3 "poolctl with poold stopped exits 3" "$POOLCTL" status
check_out "poold is not running" "poolctl says poold is not running"
check_exit 3 "missing socket directory" "$POOLCTL" -s /nonexistent/poold.sock status
check_exit 2 "unknown command exits 2" "$POOLCTL" frobnicate
check_exit 2 "bad option exits 2" "$POOLCTL" --bogus status
check_exit 2 "extra argument exits 2" "$POOLCTL" status 2 extra
check_exit 0 "help exits 0" "$POOLCTL" --help
check_exit 0 "version works without poold" "$POOLCTL" version
check_out "poold not reachable" "version says poold is not reachable"
pool_done

#!/bin/bash
# No descriptor leaks: 10,000 connect/disconnect cycles on the control
# socket (half of them after a Hello, some cut mid-frame), and cycles on the
# RESP and metrics endpoints, and region cycles leave poold's count of open
# descriptors where it was.
. "${top_srcdir:-.}/tests/integration/lib.sh"
ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r RESP METRICS <<<"$ports"

nfds() { ls "/proc/$POOLD_PID/fd" | wc -l; }

pool_start -o lend.size=64M -o control.max_clients=64 -o "resp.listen=127.0.0.1:$RESP" \
	-o "metrics.listen=127.0.0.1:$METRICS" || exit 1
"$POOLCTL" status >/dev/null
# poold may not have seen poolctl's close yet: count once the count holds still.
before=$(nfds)
for _ in $(seq 50); do sleep 0.1; now=$(nfds); [ "$now" = "$before" ] && break; before=$now; done
python3 - "$POOL_SOCKET" "$top_srcdir/tests/integration" <<'EOF' || not_ok "control socket cycles"
import socket, sys
sys.path.insert(0, sys.argv[2])
import wire
for i in range(10000):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    if i % 2:
        s.sendall(wire.frame(wire.HELLO, wire.hello_payload()))
        s.recv(4096)
    elif i % 7 == 0:
        s.sendall(wire.frame(wire.HELLO, wire.hello_payload())[:9])  # cut mid-header
    s.close()
EOF
python3 - "$RESP" "$METRICS" <<'EOF' || not_ok "RESP and metrics cycles"
import socket, sys
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    if i % 2:
        s.sendall(b"PING\r\n")
        s.recv(100)
    s.close()
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        while s.recv(65536):
            pass
    s.close()
EOF
# Let poold see the last closes.
for _ in $(seq 50); do [ "$(nfds)" -le "$before" ] && break; sleep 0.1; done
after=$(nfds)
[ "$after" -le "$before" ] && ok "12,000 connections later poold has $after descriptors open, as before" \
	|| { not_ok "descriptors: $before before, $after after"; ls -l "/proc/$POOLD_PID/fd"; }

# Regions made, mapped, closed and destroyed over and over: each create's
# reply passes the region's memory file itself (no RegionFd asked), and no
# descriptor stays behind.
before=$(nfds)
check "2,000 region cycles, each mapped" "$top_builddir/tests/bench/pool-bench-regions" ops 2000 64K local
python3 - "$METRICS" <<'EOF' && ok "the files came with the creates' replies" || not_ok "files with the replies"
import re, sys, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode()
def count(t):
    m = re.search(r'pool_request_duration_seconds_count\{type="%s"\} (\d+)' % t, text)
    return int(m.group(1)) if m else 0
print("creates %d, region-fd requests %d" % (count("region-create"), count("region-fd")))
assert count("region-create") >= 2000 and count("region-fd") == 0
EOF
for _ in $(seq 50); do [ "$(nfds)" -le "$before" ] && break; sleep 0.1; done
after=$(nfds)
[ "$after" -le "$before" ] && ok "and poold has $after descriptors open, as before" \
	|| { not_ok "descriptors after region cycles: $before before, $after after"; ls -l "/proc/$POOLD_PID/fd"; }
check "poold still serves" "$POOLCTL" status
pool_alive && ok "poold still running" || not_ok "poold still running"
pool_done

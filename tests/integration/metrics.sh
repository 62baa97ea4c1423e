#!/bin/bash
# The Prometheus endpoint: off by default; with metrics.listen, GET /metrics
# answers in the text format (every family typed once, its samples
# together) with what the pool does; other paths and methods get HTTP
# errors; a bad address is a config error; garbage does not hurt poold.
. "${top_srcdir:-.}/tests/integration/lib.sh"
KV="$top_builddir/tests/tools/pool-kv"
IO="$top_builddir/tests/tools/pool-io"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"

# scrape: GET /metrics, checked against the text format; the samples go to $TEST_DIR/m.
scrape() {
	python3 - "$URL/metrics" "$TEST_DIR/m" <<'EOF'
import re, sys, urllib.request
r = urllib.request.urlopen(sys.argv[1], timeout=10)
assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
typed, done, cur, samples = set(), set(), None, {}
sample = re.compile(r'^([a-z_:][a-z0-9_:]*)(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? ([0-9]+(\.[0-9]+)?)$')
curkind = None
for line in r.read().decode().splitlines():
    if line.startswith("# HELP "):
        continue
    if line.startswith("# TYPE "):
        name, kind = line.split()[2:4]
        assert name not in typed and kind in ("counter", "gauge", "histogram"), line
        if cur is not None:
            done.add(cur)
        typed.add(name)
        cur, curkind = name, kind
        continue
    m = sample.match(line)
    assert m, "not a sample: " + line
    family = m.group(1)
    if curkind == "histogram":
        family = re.sub(r"_(bucket|sum|count)$", "", family)
    assert family == cur and family not in done, "out of its family: " + line
    samples[line.rsplit(" ", 1)[0]] = float(m.group(5))
with open(sys.argv[2], "w") as f:
    for k, v in samples.items():
        f.write("%s %s\n" % (k, int(v) if v == int(v) else v))
EOF
}

# has 'SAMPLE' VALUE: the last scrape had that sample with that value.
has() { grep -qxF "$1 $2" "$TEST_DIR/m"; }

pool_start -o lend.size=64M || exit 1
# None of poold's TCP listeners (the fabric has its own) answers HTTP.
ss -Hltnp | grep "pid=$POOLD_PID," | awk '{print $4}' | python3 -c '
import socket, sys
for addr in sys.stdin.read().split():
    host, port = addr.rsplit(":", 1)
    try:
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=2)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        s.settimeout(2)
        assert not s.recv(16).startswith(b"HTTP/"), addr
    except OSError:
        pass' && ok "no endpoint unless metrics.listen is set" || not_ok "endpoint off by default"
check "stops" pool_stop

check_exit 1 "a bad metrics.listen is a config error" "$POOLD" -n -o metrics.listen=localhost
check_out "metrics.listen: 'localhost' is not host:port" "naming the option"

pool_start -o lend.size=64M -o metrics.listen="127.0.0.1:$PORT" -o pmem.path="$TEST_DIR/pmem" \
	-o pmem.size=16M -o coord.journal="$TEST_DIR/coord.journal" -o control.mode=0666 \
	-o kv.shard_size=8M || exit 1
check "a scrape in the text format" scrape
has 'pool_info{version="'"$("$POOLD" -V | awk '{print $2}')"'",role="coordinator",node="1",name="'"$(hostname)"'"}' 1 \
	&& ok "pool_info names the version, role and node" || { not_ok "pool_info"; grep pool_info "$TEST_DIR/m"; }
has 'pool_arena_bytes{arena="0",tier="dram",numa="0"}' 67108864 && ok "the arena lent" || not_ok "pool_arena_bytes"
has 'pool_members{state="up"}' 1 && ok "one member up" || not_ok "pool_members"

"$POOLCTL" kv create m 8M >/dev/null
"$KV" m put a 1000 1 >/dev/null && "$KV" m get a 1 >/dev/null && "$KV" m get a 1 >/dev/null
"$KV" m get nope 1 >/dev/null
check "another scrape" scrape
has 'pool_kv_hits_total{ns="m"}' 2 && has 'pool_kv_misses_total{ns="m"}' 1 && has 'pool_kv_puts_total{ns="m"}' 1 \
	&& has 'pool_kv_entries{ns="m"}' 1 && has 'pool_kv_capacity_bytes{ns="m"}' 8388608 \
	&& ok "the namespace's hits, misses, puts, entries and capacity" || { not_ok "KV metrics"; grep kv_ "$TEST_DIR/m"; }
has 'pool_kv_shards_owned' 1024 && has 'pool_kv_shard_owners' 1 && has 'pool_kv_requests_total{from="nodes"}' 0 &&
	has 'pool_kv_store_bytes' 8388608 && has 'pool_kv_store_used_bytes' 0 &&
	[ "$(sed -n 's/^pool_kv_requests_total{from="here"} //p' "$TEST_DIR/m")" -ge 4 ] &&
	ok "one node owns every KV shard, keeps 8 MiB for their values, and served its clients' KV requests" ||
	{ not_ok "KV shard metrics"; grep -E 'kv_shard|kv_requests|kv_store' "$TEST_DIR/m"; }
has 'pool_lender_used_bytes{node="1",arena="0",tier="dram"}' 1024 && ok "what the lender has in use (the 1,000-byte value in 1 KiB)" || { not_ok "lender used"; grep lender "$TEST_DIR/m"; }
has 'pool_scrapes_total' 2 && ok "the scrapes counted" || not_ok "scrapes"
# A small value is put and got in one request each (poold copies it through
# the client's window); a large one takes reserve and commit, lookup and
# release.
here() { sed -n 's/^pool_kv_requests_total{from="here"} //p' "$TEST_DIR/m"; }
before=$(here)
"$KV" m put small 4000 7 >/dev/null && "$KV" m get small 7 4096 >/dev/null && scrape &&
	[ "$(here)" = $((before + 2)) ] &&
	ok "a 4,000-byte put and get: one KV request each" || { not_ok "one request each"; echo "$before -> $(here)"; }
before=$(here)
"$KV" m put large 65536 7 >/dev/null && "$KV" m get large 7 65536 >/dev/null && scrape &&
	[ "$(here)" = $((before + 4)) ] &&
	ok "a 64 KiB put and get: reserve and commit, lookup and release" ||
	{ not_ok "two-phase for a large value"; echo "$before -> $(here)"; }
has 'pool_journal_half_bytes{journal="lender"}' 1046528 &&
	has 'pool_journal_half_bytes{journal="coordinator"}' 8386560 &&
	has 'pool_journal_dropped_bytes{journal="coordinator"}' 0 &&
	ok "the pmem tier's journal and the coordinator's, with the size of a half" ||
	{ not_ok "journal metrics"; grep journal "$TEST_DIR/m"; }
"$POOLCTL" region create jr 1M >/dev/null
before=$(sed -n 's/^pool_journal_records{journal="coordinator"} //p' "$TEST_DIR/m")
scrape
[ "$(sed -n 's/^pool_journal_records{journal="coordinator"} //p' "$TEST_DIR/m")" = $((before + 1)) ] &&
	ok "a region made is one more record in the coordinator's journal" ||
	{ not_ok "coordinator journal records"; grep journal_records "$TEST_DIR/m"; }
# A client reads a region it cannot map (striped) with carried gets: they are counted.
"$IO" create rma 2097152 spread pinned 1048576 >/dev/null && "$IO" write rma 5 >/dev/null
if have_nobody "$IO"; then
	chmod 0755 "$TEST_DIR" "$TEST_DIR/run"
	check "another uid reads a 0644 region through the fabric" as_nobody "$IO" read rma 5
	for _ in $(seq 20); do
		scrape && has 'pool_rma_bytes_total{by="clients",op="get"}' 2097152 && break
		sleep 0.1
	done
	has 'pool_rma_bytes_total{by="clients",op="get"}' 2097152 &&
		has 'pool_rma_ops_total{by="clients",op="get"}' 2 &&
		has 'pool_rma_bytes_total{by="clients",op="put"}' 2097152 &&
		ok "its carried gets are counted: 2 of 1 MiB (and root's puts)" ||
		{ not_ok "client RMA metrics"; grep rma "$TEST_DIR/m"; }
fi
python3 - "$TEST_DIR/m" <<'EOF' && ok "control request latencies: a histogram per type" || { not_ok "latency histogram"; grep duration "$TEST_DIR/m"; }
import sys
m = dict(l.rsplit(" ", 1) for l in open(sys.argv[1]).read().splitlines())
n = int(m['pool_request_duration_seconds_count{type="kv"}'])
assert n >= 4, n  # the put's reserve and commit, two gets' lookups, the miss
assert int(m['pool_request_duration_seconds_bucket{type="kv",le="+Inf"}']) == n
buckets = [int(v) for k, v in m.items() if k.startswith('pool_request_duration_seconds_bucket{type="kv"')]
assert buckets == sorted(buckets), buckets
assert float(m['pool_request_duration_seconds_sum{type="kv"}']) > 0
EOF

python3 - "$URL" <<'EOF' && ok "other paths get 404, other methods an error, garbage a 400" || not_ok "HTTP errors"
import socket, sys, urllib.error, urllib.request
def code(req):
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code
assert code(sys.argv[1] + "/other") == 404
assert code(urllib.request.Request(sys.argv[1] + "/metrics", data=b"x", method="POST")) >= 400
host, port = sys.argv[1][7:].split(":")
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(b"\x00\xff garbage\r\n\r\n")
assert s.recv(100).startswith(b"HTTP/1.1 400"), "garbage"
EOF
check "poold answers on its socket" "$POOLCTL" status
check "and on /metrics" scrape
pool_alive && ok "poold still running" || not_ok "poold still running"

# Bounded for whoever reaches it: metrics.max_clients connections (one more
# gets a 503), and a deadline from the accept that trickled bytes do not push.
pool_stop
pool_start -o "metrics.listen=127.0.0.1:$PORT" -o metrics.max_clients=8 -o metrics.max_clients_per_uid=8 \
	-o metrics.timeout=2s || exit 1
fds0=$(ls /proc/"$POOLD_PID"/fd | wc -l)
python3 - "$PORT" "/proc/$POOLD_PID/fd" >"$TEST_DIR/out" 2>&1 <<'EOF'
import os, socket, sys, time
port, fddir = int(sys.argv[1]), sys.argv[2]
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
time.sleep(0.3)
extra = socket.create_connection(("127.0.0.1", port), timeout=5)
busy = extra.recv(200)
print("ninth:", busy.split(b"\r\n")[0].decode())
assert busy.startswith(b"HTTP/1.1 503"), busy
fds = len(os.listdir(fddir))
for s in idle:
    s.close()
time.sleep(0.3)
slow = socket.create_connection(("127.0.0.1", port), timeout=10)
t0 = time.time()
closed = None
for ch in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
    try:
        slow.send(bytes([ch]))
        time.sleep(0.25)
    except OSError:
        closed = time.time() - t0
        break
if closed is None:
    try:
        closed = time.time() - t0 if slow.recv(100) == b"" else None
    except OSError:
        closed = time.time() - t0
print("fds with 8 open: %d; a client trickling a byte per 250 ms closed after %.1f s" % (fds, closed or -1))
assert closed is not None and closed < 4, closed
EOF
rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ "$rc" -eq 0 ] && ok "metrics.max_clients: the ninth connection gets a 503; metrics.timeout closes a trickling client" ||
	not_ok "metrics endpoint bounds"
for _ in $(seq 20); do [ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -le "$fds0" ] && break; sleep 0.1; done
[ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -le "$fds0" ] && ok "poold's fds are back to $fds0" ||
	not_ok "poold holds $(ls /proc/"$POOLD_PID"/fd | wc -l) fds, $fds0 before"
check "and it serves /metrics" scrape

# No one client takes every slot: uid nobody's slow connections (one half
# send nothing, the other half of a request) hold metrics.max_clients_per_uid
# of them and the others get a 503 at once, while root's scrape is served;
# from another network namespace (when one can be made), each address holds
# metrics.max_clients_per_addr. The endpoint is on that namespace's link
# then, where this host's own clients still count by uid.
# slow N HOST [SOURCE]: N slow connections; prints how many got a 503 within 2 s.
SLOW='import ctypes, socket, sys, time
ctypes.CDLL(None).prctl(1, 9)  # gone with the test
n, host = int(sys.argv[1]), sys.argv[2]
socks = []
for i in range(n):
    s = socket.socket()
    if len(sys.argv) > 4:
        s.bind((sys.argv[4], 0))
    s.connect((host, int(sys.argv[3])))
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
deadline, busy = time.time() + 2, 0
for s in socks:
    s.settimeout(max(0.01, deadline - time.time()))
    try:
        busy += s.recv(100).startswith(b"HTTP/1.1 503")
    except socket.timeout:
        pass
print("slow: %d connections, %d got a 503" % (n, busy), flush=True)
time.sleep(3600)'
pool_stop
HOST=127.0.0.1
remote_up && HOST=$REMOTE_HOST
pool_start -o "metrics.listen=$HOST:$PORT" -o metrics.timeout=30s || exit 1
URL="http://$HOST:$PORT"
fds0=$(ls /proc/"$POOLD_PID"/fd | wc -l)
if have_nobody /usr/bin/python3; then
	setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c "$SLOW" 12 "$HOST" "$PORT" \
		>"$TEST_DIR/slow-nobody" 2>&1 &
	slow=$!
	for _ in $(seq 50); do grep -q "^slow:" "$TEST_DIR/slow-nobody" && break; sleep 0.1; done
	grep -q "^slow: 12 connections, 8 got a 503" "$TEST_DIR/slow-nobody" &&
		ok "uid nobody's 12 slow connections: 4 held (metrics.max_clients_per_uid), 8 got a 503" ||
		{ not_ok "uid nobody's slow connections"; sed 's/^/  | /' "$TEST_DIR/slow-nobody"; }
	check "root's scrape gets a 200 meanwhile" scrape
	grep -q "refusing a connection of uid 65534: 4 open (metrics.max_clients_per_uid)" "$TEST_DIR/poold.log" &&
		ok "poold says whose connection it refused" || not_ok "no refusal of uid 65534 in the log"
	if [ -n "$REMOTE_NS" ]; then
		for src in $REMOTE_ADDRS; do
			ip netns exec "$REMOTE_NS" /usr/bin/python3 -c "$SLOW" 6 "$HOST" "$PORT" "$src" \
				>"$TEST_DIR/slow-$src" 2>&1 &
			echo $! >>"$TEST_DIR/slow-remote"
		done
		for _ in $(seq 50); do [ "$(cat "$TEST_DIR"/slow-1* | grep -c '^slow:')" = 2 ] && break; sleep 0.1; done
		[ "$(cat "$TEST_DIR"/slow-1* | grep -c '^slow: 6 connections, 2 got a 503')" = 2 ] &&
			ok "two other addresses' 6 slow connections each: 4 of each held (metrics.max_clients_per_addr)" ||
			{ not_ok "other addresses' slow connections"; cat "$TEST_DIR"/slow-1* | sed 's/^/  | /'; }
		check "root's scrape gets a 200 with 12 slots taken" scrape
		for p in $(cat "$TEST_DIR/slow-remote"); do kill "$p"; wait "$p"; done 2>/dev/null
	else
		echo "# no network namespace: the bound per address is not tested"
	fi
	kill "$slow"; wait "$slow" 2>/dev/null
	for _ in $(seq 30); do [ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -le "$fds0" ] && break; sleep 0.1; done
	[ "$(ls /proc/"$POOLD_PID"/fd | wc -l)" -le "$fds0" ] && ok "poold's fds are back to $fds0 after them" ||
		not_ok "poold holds $(ls /proc/"$POOLD_PID"/fd | wc -l) fds, $fds0 before"
fi
check "poold stops cleanly" pool_stop
pool_done

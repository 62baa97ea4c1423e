#!/bin/bash
# The Redis-protocol endpoint: redis-cli and redis-benchmark drive the KV
# cache unchanged; AUTH; databases; bad RESP gets an error and a close while
# poold keeps serving.
. "${top_srcdir:-.}/tests/integration/lib.sh"
KV="$top_builddir/tests/tools/pool-kv"
if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "skip: redis-tools is not installed"; exit 77
fi
PORT=$((20000 + $$ % 20000))
cli() { redis-cli -p "$PORT" "$@"; }

pool_start -o lend.size=128M -o resp.listen=127.0.0.1:$PORT -o resp.capacity=32M || exit 1

check "PING" cli ping
check_out "^PONG$" "PONG"
cli set greeting hello >/dev/null
cli get greeting >"$TEST_DIR/out"
check_out "^hello$" "SET then GET"
cli mset a 1 b 22 c 333 >/dev/null
cli mget a b nope c >"$TEST_DIR/out"
[ "$(tr '\n' ' ' <"$TEST_DIR/out")" = "1 22  333 " ] && ok "MSET then MGET (with a missing key)" || { not_ok "MGET"; cat "$TEST_DIR/out"; }
cli exists a b nope >"$TEST_DIR/out"; check_out "^2$" "EXISTS counts present keys"
cli del a nope >"$TEST_DIR/out"; check_out "^1$" "DEL counts removed keys"
cli dbsize >"$TEST_DIR/out"; check_out "^3$" "DBSIZE"
cli --scan >"$TEST_DIR/out"
[ "$(sort "$TEST_DIR/out" | tr '\n' ' ')" = "b c greeting " ] && ok "SCAN walks every key" || { not_ok "SCAN"; cat "$TEST_DIR/out"; }
cli -n 3 set other x >/dev/null
cli -n 3 dbsize >"$TEST_DIR/out"; check_out "^1$" "SELECT 3 is a separate database"
cli get other >"$TEST_DIR/out"; check_out "^$" "and db 0 does not see it"
cli info >"$TEST_DIR/out"; check_out "db0:keys=3" "INFO lists the keyspace"
check_exit 4 "libpool sees db 0 as namespace redis0" "$KV" redis0 exists nope
check "libpool reads what redis-cli wrote" "$KV" redis0 exists greeting
cli frobnicate >"$TEST_DIR/out"; check_out "unknown command" "unknown commands get an error"
cli flushdb >/dev/null; cli dbsize >"$TEST_DIR/out"; check_out "^0$" "FLUSHDB"

redis-benchmark -p "$PORT" -t set,get -n 2000 -d 16384 -q >"$TEST_DIR/out" 2>&1
grep -q "GET: [0-9.]* requests per second" "$TEST_DIR/out" && ok "redis-benchmark runs SET and GET against the pool" || { not_ok "redis-benchmark"; cat "$TEST_DIR/out"; }

# Bad RESP: an error, the connection closed, poold fine.
python3 - "$PORT" <<'PY' && ok "garbage, oversized bulks and truncated commands are refused" || not_ok "bad RESP"
import socket, sys
port = int(sys.argv[1])
def send(data, expect_close=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    if not expect_close:
        s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        reply += chunk
    return reply
assert send(b"\x00\xff garbage\r\n").startswith(b"-ERR Protocol error"), "garbage"
assert send(b"*1\r\n$99999999999\r\n").startswith(b"-ERR Protocol error: invalid bulk length")
assert send(b"*99999999\r\n").startswith(b"-ERR Protocol error: invalid multibulk length")
assert send(b"*2\r\n$3\r\nGET\r\n$5\r\nab", expect_close=False) == b"", "truncated: closed, no reply"
PY
cli ping >"$TEST_DIR/out"; check_out "^PONG$" "poold still serves RESP"
pool_alive && ok "poold still running" || not_ok "poold still running"

# AUTH.
pool_stop
pool_start -o resp.listen=127.0.0.1:$PORT -o resp.password=s3cret || exit 1
cli get k >"$TEST_DIR/out" 2>&1; check_out "NOAUTH" "without AUTH: NOAUTH"
cli -a wrong --no-auth-warning get k >"$TEST_DIR/out" 2>&1; check_out "WRONGPASS|invalid" "a wrong password is refused"
cli -a s3cret --no-auth-warning set k v >"$TEST_DIR/out" 2>&1; check_out "^OK$" "with the password: OK"
pool_done

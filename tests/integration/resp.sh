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
# A pattern made to backtrack: 25 stars against keys of 200 a's, which a
# recursive matcher would try in exponential time, in poold's event loop.
for i in 1 2 3 4; do cli set "$(printf 'a%.0s' $(seq 200))$i" v >/dev/null; done
pat="$(printf '*a%.0s' $(seq 25))b"
timeout 20 redis-cli -p "$PORT" keys "$pat" >"$TEST_DIR/out" 2>&1; rc=$?
[ $rc -eq 0 ] && ! grep -q . "$TEST_DIR/out" && ok "KEYS with a pattern of 25 stars that cannot match answers (nothing)" ||
	{ not_ok "KEYS with a backtracking pattern (exit $rc)"; cat "$TEST_DIR/out"; }
cli keys "$(printf '*a%.0s' $(seq 25))*4" >"$TEST_DIR/out"; check_out "^a{200}4$" "and one that matches finds its key"
cli del "$(printf 'a%.0s' $(seq 200))1" "$(printf 'a%.0s' $(seq 200))2" "$(printf 'a%.0s' $(seq 200))3" \
	"$(printf 'a%.0s' $(seq 200))4" >/dev/null
# SET overwrites a value of the same size in place, except one a libpool
# reader holds: its bytes stay as they were until it releases them.
"$KV" redis0 put pinned 3000 21 >/dev/null
mkfifo "$TEST_DIR/hold"
"$KV" redis0 view pinned 21 hold <"$TEST_DIR/hold" >"$TEST_DIR/view.out" 2>&1 &
vpid=$!
exec {hold}>"$TEST_DIR/hold"
for _ in $(seq 50); do grep -q "correct" "$TEST_DIR/view.out" && break; sleep 0.1; done
head -c 3000 /dev/zero | tr '\0' 'z' | cli -x set pinned >/dev/null
exec {hold}>&-
wait "$vpid"; rc=$?
[ $rc -eq 0 ] && grep -q "still correct after the hold" "$TEST_DIR/view.out" &&
	ok "a value a libpool client holds is not overwritten in place by SET" ||
	{ not_ok "the held value changed (exit $rc)"; cat "$TEST_DIR/view.out"; }
[ "$(cli get pinned | head -c 5)" = zzzzz ] && ok "and GET then gives the new value" || not_ok "GET after the hold"
cli set same 1234 >/dev/null; cli set same 5678 >/dev/null
cli get same >"$TEST_DIR/out"; check_out "^5678$" "a value nobody holds is overwritten (in place)"
cli flushdb >/dev/null; cli dbsize >"$TEST_DIR/out"; check_out "^0$" "FLUSHDB"

redis-benchmark -p "$PORT" -t set,get -n 2000 -d 16384 -q >"$TEST_DIR/out" 2>&1
grep -q "GET: [0-9.]* requests per second" "$TEST_DIR/out" && ok "redis-benchmark runs SET and GET against the pool" || { not_ok "redis-benchmark"; cat "$TEST_DIR/out"; }

# Bad RESP: an error, the connection closed, poold fine.
python3 - "$PORT" <<'PY' && ok "garbage, oversized bulks and inline lines, and truncated commands are refused" || not_ok "bad RESP"
import socket, sys
port = int(sys.argv[1])
def send(data, expect_close=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    if not expect_close:
        s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError: # closed with our bytes unread: the reply may be lost
            return reply or b"-ERR Protocol error: (reset)"
        if not chunk:
            break
        reply += chunk
    return reply
# A line that is not an array is an inline command, as in Redis: this one is unknown.
assert send(b"\x00\xff garbage\r\n", expect_close=False).startswith(b"-ERR unknown command"), "garbage"
assert send(b"x" * 70000).startswith(b"-ERR Protocol error"), "a 70,000-byte inline line"
assert send(b"*1\r\n$99999999999\r\n").startswith(b"-ERR Protocol error: invalid bulk length")
assert send(b"*99999999\r\n").startswith(b"-ERR Protocol error: invalid multibulk length")
assert send(b"*2\r\n$3\r\nGET\r\n$5\r\nab", expect_close=False) == b"", "truncated: closed, no reply"
PY
cli ping >"$TEST_DIR/out"; check_out "^PONG$" "poold still serves RESP"
pool_alive && ok "poold still running" || not_ok "poold still running"

# Big arguments are read past libevent's 4 KiB reads: values of 16 KiB to 20 MiB sent in
# slices of every size with pauses, a pipelined command behind each, read back bit-exact;
# a bulk that ends without CRLF and a client gone in the middle of a 20 MiB bulk are
# refused or forgotten, and poold's fds stay.
fds0=$(ls /proc/"$POOLD_PID"/fd | wc -l)
python3 - "$PORT" <<'PY' >"$TEST_DIR/out" 2>&1 && ok "values of 16 KiB to 20 MiB sent in odd slices with pauses read back bit-exact; a bad end and a client gone mid-bulk are refused" || { not_ok "big arguments in slices"; cat "$TEST_DIR/out"; }
import hashlib, random, socket, sys, time
port = int(sys.argv[1])
rnd = random.Random(7)
def val(i, n):
    seed = hashlib.sha256(b"%d" % i).digest()
    return (seed * (n // 32 + 1))[:n]
def cmd(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
def recv_all(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(1 << 20)
        assert chunk, got
        got += chunk
    return got
s = socket.create_connection(("127.0.0.1", port), timeout=30)
sizes = [16384, 16385, 65537, 262144, 1 << 20, 3 * (1 << 20) + 5, 20 << 20]
for i, n in enumerate(sizes):
    data = cmd(b"SET", b"big%d" % i, val(i, n)) + cmd(b"PING")
    at = 0
    while at < len(data):
        k = rnd.choice([1, 7, 4095, 4096, 4097, 65536, 300000, 2 << 20])
        s.sendall(data[at:at + k])
        at += k
        if rnd.random() < 0.05:
            time.sleep(0.01)
    assert recv_all(s, 12) == b"+OK\r\n+PONG\r\n", i
for i, n in enumerate(sizes):
    s.sendall(cmd(b"GET", b"big%d" % i))
    head = b"$%d\r\n" % n
    assert recv_all(s, len(head) + n + 2) == head + val(i, n) + b"\r\n", n
# A bulk whose last two bytes are not CRLF: the protocol error, the connection closed.
b = socket.create_connection(("127.0.0.1", port), timeout=30)
b.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$100000\r\n" + b"y" * 100000 + b"XX")
reply = b""
while True:
    try:
        chunk = b.recv(4096)
    except ConnectionResetError:
        break
    if not chunk:
        break
    reply += chunk
assert reply.startswith(b"-ERR Protocol error"), reply
# Gone in the middle of a 20 MiB bulk, twenty times.
for _ in range(20):
    g = socket.create_connection(("127.0.0.1", port), timeout=30)
    g.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\ngone\r\n$20971520\r\n" + b"z" * (5 << 20))
    g.close()
time.sleep(0.5)
s.sendall(cmd(b"EXISTS", b"gone"))
assert recv_all(s, 4) == b":0\r\n"
print("ok")
PY
sleep 0.5
fds1=$(ls /proc/"$POOLD_PID"/fd | wc -l)
[ "$fds1" -le "$fds0" ] && pool_alive && ok "... and poold runs on with its fds $fds0 -> $fds1" || not_ok "fds $fds0 -> $fds1 after big arguments"

# A plain SET's big value is read straight into its reservation (resp-place.c). Redis runs
# a SET when its last byte comes, so a SET whose value is still coming is overtaken by
# another client's SET and by FLUSHDB, and then wins; a reader meanwhile sees the old
# value whole; reservations of values that never come whole (client gone, bad end) are
# given back: the namespace's bytes are what they were.
used() { "$POOLCTL" --json kv stats redis0 | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["used"])'; }
cli del race fresh >/dev/null
python3 - "$PORT" "$POOLCTL" <<'PY' >"$TEST_DIR/out" 2>&1 && ok "a SET whose 1 MiB value is coming, overtaken by another SET and by FLUSHDB, still wins; a GET meanwhile reads the old value whole; the overtaken reservation is given back at once" || { not_ok "SET read into its place, overtaken"; cat "$TEST_DIR/out"; }
import json, socket, subprocess, sys, time
port, poolctl = int(sys.argv[1]), sys.argv[2]
def used():
    out = subprocess.run([poolctl, "--json", "kv", "stats", "redis0"], capture_output=True, text=True).stdout
    return json.loads(out)["namespaces"][0]["used"]
M = 1 << 20
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=30)
def cmd(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
def reply(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(1 << 20)
        assert chunk, got
        got += chunk
    return got
def get(s, key, n):
    s.sendall(cmd(b"GET", key))
    want = b"$%d\r\n" % n + b"\x00" * n + b"\r\n"
    return reply(s, len(want))
a, b = conn(), conn()
old = b"o" * (300 << 10)
b.sendall(cmd(b"SET", b"race", old)); assert reply(b, 5) == b"+OK\r\n"
for overtake in (cmd(b"SET", b"race", b"small"), cmd(b"FLUSHDB")):
    value = bytes(range(256)) * (M // 256)
    a.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nrace\r\n$%d\r\n" % M + value[:M // 2])
    time.sleep(0.2)
    if b"SET" in overtake:
        # the value being read is not the key's yet: a GET sees the old one, whole
        assert get(b, b"race", len(old)) == b"$%d\r\n%s\r\n" % (len(old), old)
    b.sendall(overtake); assert reply(b, 5) == b"+OK\r\n", overtake
    a.sendall(value[M // 2:] + b"\r\n"); assert reply(a, 5) == b"+OK\r\n"
    assert get(b, b"race", M) == b"$%d\r\n%s\r\n" % (M, value), overtake
# Deleted with a still open: nothing of its reservations is left (FLUSHDB emptied the rest).
b.sendall(cmd(b"DEL", b"race")); assert reply(b, 4) == b":1\r\n"
assert used() == 0, used()
print("ok")
PY
head -c 100000 /dev/zero | cli -x set keep >/dev/null
u0=$(used)
python3 - "$PORT" <<'PY' >"$TEST_DIR/out" 2>&1 && ok "SETs of 1 MiB values gone mid-value (50 clients) or ended badly (10) store nothing" || { not_ok "SET read into its place, abandoned"; cat "$TEST_DIR/out"; }
import socket, sys, time
port = int(sys.argv[1])
M = 1 << 20
for i in range(50):
    g = socket.create_connection(("127.0.0.1", port), timeout=30)
    g.sendall(b"*3\r\n$3\r\nSET\r\n$5\r\nfresh\r\n$%d\r\n" % M + b"z" * (i * M // 50))
    g.close()
for i in range(10):
    g = socket.create_connection(("127.0.0.1", port), timeout=30)
    g.sendall(b"*3\r\n$3\r\nSET\r\n$5\r\nfresh\r\n$%d\r\n" % M + b"z" * M + b"XX")
    assert g.recv(100).startswith(b"-ERR Protocol error"), i
    g.close()
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(b"*2\r\n$6\r\nEXISTS\r\n$5\r\nfresh\r\n")
assert s.recv(100) == b":0\r\n"
print("ok")
PY
sleep 0.3
u1=$(used)
[ "$u0" = "$u1" ] && ok "... and the namespace's bytes are what they were: $u0 -> $u1" || not_ok "namespace bytes $u0 -> $u1 after SETs read into their places"

# AUTH.
pool_stop
pool_start -o resp.listen=127.0.0.1:$PORT -o resp.password=s3cret || exit 1
cli get k >"$TEST_DIR/out" 2>&1; check_out "NOAUTH" "without AUTH: NOAUTH"
cli -a wrong --no-auth-warning get k >"$TEST_DIR/out" 2>&1; check_out "WRONGPASS|invalid" "a wrong password is refused"
cli -a s3cret --no-auth-warning set k v >"$TEST_DIR/out" 2>&1; check_out "^OK$" "with the password: OK"
cli --user default --pass s3cret --no-auth-warning get k >"$TEST_DIR/out" 2>&1
check_out "^v$" "AUTH default <password> is the same user"
redis-cli -u "redis://default:s3cret@127.0.0.1:$PORT/0" get k >"$TEST_DIR/out" 2>&1
check_out "^v$" "so is a redis://default:password@ URL"

# resp.users: AUTH NAME PASSWORD acts as that user's uid, in databases of its
# own (namespaces redisN-uUID, mode 0600), under its quota.
pool_stop
printf '# name uid password\nalice 65534 >alice-pw\n\nbob 4242 #%s\n' \
	"$(printf bob-pw | sha256sum | cut -d' ' -f1)" >"$TEST_DIR/users"
chmod 0600 "$TEST_DIR/users"
chmod 0755 "$TEST_DIR"
USERS_OPTS=(-o lend.size=128M -o resp.listen=127.0.0.1:$PORT -o resp.password=s3cret
	-o resp.users="$TEST_DIR/users" -o quota.bytes=4M -o control.mode=0666
	-o resp.max_clients_per_user=3 -o coord.journal="$TEST_DIR/coord.journal")
pool_start "${USERS_OPTS[@]}" || exit 1
chmod 0755 "$TEST_DIR/run"
ucli() { local u=$1 p=$2; shift 2; redis-cli -p "$PORT" --user "$u" --pass "$p" --no-auth-warning "$@"; }
cli -a s3cret --no-auth-warning set k v >/dev/null
ucli alice alice-pw set k alice-value >"$TEST_DIR/out" 2>&1; check_out "^OK$" "user alice (uid 65534) sets k"
redis-cli -u "redis://bob:bob-pw@127.0.0.1:$PORT/0" set k bob-value >"$TEST_DIR/out" 2>&1
check_out "^OK$" "user bob (a #sha256 password, in a redis:// URL) sets k"
ucli alice alice-pw get k >"$TEST_DIR/out" 2>&1; check_out "^alice-value$" "each reads its own k"
ucli bob bob-pw get k >"$TEST_DIR/out" 2>&1; check_out "^bob-value$" "and bob his"
cli -a s3cret --no-auth-warning get k >"$TEST_DIR/out" 2>&1; check_out "^v$" "the default user still has its own"
ucli alice bob-pw get k >"$TEST_DIR/out" 2>&1; check_out "WRONGPASS" "another user's password is refused"
ucli carol x get k >"$TEST_DIR/out" 2>&1; check_out "WRONGPASS" "so is an unknown user"
cli -a alice-pw --no-auth-warning get k >"$TEST_DIR/out" 2>&1; check_out "WRONGPASS" "and a user's password as the default's"
"$POOLCTL" --json kv ls | python3 -c 'import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)["namespaces"]}
assert n["redis0-u65534"]["uid"] == 65534 and n["redis0-u65534"]["mode"] == 0o600, n
assert n["redis0-u4242"]["uid"] == 4242, n' && ok "their databases are namespaces of their uids, mode 0600" ||
	not_ok "namespaces of RESP users"
# The coordinator restarts (from its journal): each database is still its user's alone.
pool_stop && pool_start "${USERS_OPTS[@]}" || exit 1
chmod 0755 "$TEST_DIR/run"
"$POOLCTL" --json kv ls | python3 -c 'import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)["namespaces"]}
assert n["redis0-u65534"]["uid"] == 65534 and n["redis0-u65534"]["mode"] == 0o600, n
assert n["redis0-u4242"]["uid"] == 4242 and n["redis0-u4242"]["mode"] == 0o600, n' &&
	ok "after a restart of the coordinator, the databases are still their users', mode 0600" ||
	{ not_ok "RESP users' namespaces after a restart"; "$POOLCTL" kv ls; }
ucli bob bob-pw set k bob-value >/dev/null 2>&1
ucli alice alice-pw set k alice-value >"$TEST_DIR/out" 2>&1; check_out "^OK$" "and alice sets k again in hers"
if have_nobody "$KV"; then
	check "libpool as uid 65534 reads what alice wrote" as_nobody "$KV" redis0-u65534 exists k
	check_exit 1 "but not what bob wrote" as_nobody "$KV" redis0-u4242 exists k
	check_out "KV namespace 'redis0-u4242' \(mode 600, uid 4242\): .*access denied" "another user's database refused"
fi
head -c 3000000 /dev/urandom >"$TEST_DIR/3m"
ucli alice alice-pw -x set big1 <"$TEST_DIR/3m" >"$TEST_DIR/out" 2>&1; check_out "^OK$" "alice stores 3 MB"
ucli alice alice-pw -x set big2 <"$TEST_DIR/3m" >"$TEST_DIR/out" 2>&1; check_out "^OK$" "and 3 MB more, over her 4M quota"
ucli alice alice-pw exists big1 k >"$TEST_DIR/out" 2>&1; check_out "^0$" "which evicted her older values"
ucli bob bob-pw get k >"$TEST_DIR/out" 2>&1; check_out "^bob-value$" "not bob's"
ucli alice alice-pw flushall >/dev/null 2>&1
ucli alice alice-pw dbsize >"$TEST_DIR/out" 2>&1; check_out "^0$" "FLUSHALL empties alice's databases"
ucli bob bob-pw get k >"$TEST_DIR/out" 2>&1; check_out "^bob-value$" "and only hers"
python3 - "$PORT" >"$TEST_DIR/out" 2>&1 <<'PY' && ok "a user's 4th connection is refused, naming resp.max_clients_per_user; others are not" || { not_ok "per-user connections"; cat "$TEST_DIR/out"; }
import socket, sys
port = int(sys.argv[1])
def auth(user, pw):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(user), user, len(pw), pw))
    return s, s.recv(200)
held = [auth(b"alice", b"alice-pw") for _ in range(3)]
assert all(r == b"+OK\r\n" for _, r in held), held
s, r = auth(b"alice", b"alice-pw")
assert r.startswith(b"-ERR max number of clients reached for user 'alice' (resp.max_clients_per_user = 3)"), r
assert s.recv(10) == b"", "not closed"
b, r = auth(b"bob", b"bob-pw")
assert r == b"+OK\r\n", r
held[0][0].close()
import time; time.sleep(0.2)
s, r = auth(b"alice", b"alice-pw")
assert r == b"+OK\r\n", r
PY
chmod 0644 "$TEST_DIR/users"
check_exit 1 "a users file others may read is refused" "$POOLD" -n -o resp.users="$TEST_DIR/users"
check_out "holds passwords and is mode 0644" "naming its mode"
printf 'dave x >pw\n' >"$TEST_DIR/users"; chmod 0600 "$TEST_DIR/users"
check_exit 1 "a bad line is refused" "$POOLD" -n -o resp.users="$TEST_DIR/users"
check_out "line 1: the uid is not a number" "naming the line"
pool_alive && ok "poold still running" || not_ok "poold still running"

# Before AUTH a client may send only what AUTH needs (10 arguments of 16 KiB, as
# Redis allows): a bigger header is refused before anything is kept, and poold's
# memory stays flat under connections that announce 4096 arguments of 64 MiB.
rss() { awk '/^VmHWM:/ { print $2 }' /proc/"$POOLD_PID"/status; } # the peak: what poold ever held
raw() { # BYTES-AS-PYTHON-LITERAL -> what comes back before the close
	python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(eval(sys.argv[2]))
d = b""
try:
    while True:
        b = s.recv(4096)
        if not b: break
        d += b
except OSError:
    pass
print(d.decode(errors="replace").strip())' "$PORT" "$1"
}
raw 'b"*2\r\n$4\r\nAUTH\r\n$100000\r\n"' >"$TEST_DIR/out"
check_out "^-ERR Protocol error: unauthenticated bulk length$" "before AUTH, a 100000-byte argument is refused, and the link closed"
raw 'b"*4096\r\n"' >"$TEST_DIR/out"
check_out "^-ERR Protocol error: unauthenticated multibulk length$" "so are 4096 arguments"
rss0=$(rss)
python3 -c 'import socket, sys, time
conns = []
for i in range(50):   # each sends 4 MiB of a 64 MiB argument: 200 MiB if poold kept them
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.settimeout(2)
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$67108864\r\n" + b"x" * (4 << 20))
    except OSError:
        pass      # refused and closed
    conns.append(s)
time.sleep(0.5)' "$PORT"
rss1=$(rss)
[ $((rss1 - rss0)) -lt 20480 ] && ok "50 connections sending 4 MiB of a 64 MiB argument before AUTH: peak RSS $rss0 -> $rss1 KiB" ||
	not_ok "RSS grew from $rss0 to $rss1 KiB"

# After AUTH: a client that pipelines big replies and never reads them is not
# read from any more; poold's memory stays bounded and it serves others.
head -c $((1 << 20)) /dev/urandom >"$TEST_DIR/big"
cli -a s3cret --no-auth-warning -x set big <"$TEST_DIR/big" >"$TEST_DIR/out" 2>&1; check_out "^OK$" "a 1 MiB value"
# Large values go out by reference to the arena, pinned: a reply not yet
# read keeps the bytes it had when the GET ran, though the key is set anew
# (in place, were it not pinned) and deleted before the client reads.
head -c $((1 << 20)) /dev/urandom >"$TEST_DIR/big2"
python3 -c 'import socket, sys, time, subprocess
big = open(sys.argv[2], "rb").read()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*17\r\n$4\r\nMGET\r\n" + b"$3\r\nbig\r\n" * 16)
time.sleep(0.5)
cli = ["redis-cli", "-p", sys.argv[1], "-a", "s3cret", "--no-auth-warning"]
subprocess.run(cli + ["-x", "set", "big"], stdin=open(sys.argv[3], "rb"), check=True, capture_output=True)
subprocess.run(cli + ["del", "big"], check=True, capture_output=True)
want = b"+OK\r\n*16\r\n" + (b"$1048576\r\n" + big + b"\r\n") * 16
got = b""
s.settimeout(10)
while len(got) < len(want):
    d = s.recv(1 << 20)
    if not d:
        break
    got += d
sys.exit(0 if got == want else 1)' "$PORT" "$TEST_DIR/big" "$TEST_DIR/big2" &&
	ok "16 MiB of a 1 MiB value unread, the key then set anew and deleted: the reply is the old bytes" ||
	not_ok "a value sent by reference changed before it was read"
cli -a s3cret --no-auth-warning exists big >"$TEST_DIR/out" 2>&1; check_out "^0$" "the key is gone after"
cli -a s3cret --no-auth-warning -x set big <"$TEST_DIR/big" >/dev/null 2>&1
rss0=$(rss)
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.sendall(b"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n")
cmd = b"*5\r\n$4\r\nMGET\r\n" + b"$3\r\nbig\r\n" * 4
s.setblocking(False)
sent = 0
for i in range(2000):   # 8 GB of replies if they were all made
    try:
        s.send(cmd); sent += 1
    except BlockingIOError:
        time.sleep(0.01)
time.sleep(1)
print(sent)' "$PORT" >"$TEST_DIR/sent" &
unread=$!
sleep 1.5
cli -a s3cret --no-auth-warning ping >"$TEST_DIR/out" 2>&1; check_out "^PONG$" "meanwhile poold serves another client"
rss1=$(rss)
wait "$unread"
[ $((rss1 - rss0)) -lt 65536 ] && ! grep -q "over resp.max_output" "$TEST_DIR/poold.log" &&
	ok "a client leaving $(cat "$TEST_DIR/sent") MGETs of 4 MiB unread is paused, not cut off: peak RSS $rss0 -> $rss1 KiB" ||
	not_ok "peak RSS grew from $rss0 to $rss1 KiB with unread replies"

# resp.max_request bounds a command's arguments, resp.max_output its unread replies.
pool_stop
pool_start -o resp.listen=127.0.0.1:$PORT -o resp.max_request=1M -o resp.max_output=1M || exit 1
# (Refused at the header of the argument that would pass it, before its bytes.)
raw 'b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048576\r\n"' >"$TEST_DIR/out"
check_out "request too large \(resp.max_request\)" "a 1 MiB SET over resp.max_request = 1M is refused, naming the option"
head -c 600000 /dev/urandom >"$TEST_DIR/half"
cli -x set half <"$TEST_DIR/half" >"$TEST_DIR/out" 2>&1; check_out "^OK$" "600 KB fit"
cli mget half half half half >"$TEST_DIR/out" 2>&1
grep -q "over resp.max_output: disconnected" "$TEST_DIR/poold.log" &&
	ok "a 2.4 MB reply over resp.max_output = 1M ends the connection, and says why" ||
	not_ok "no resp.max_output line in the log"
# One command whose reply would be huge: MGET of the 600 KB key 200,000 times
# (120 GB) and EXEC of 1,000 queued GETs of it stop at resp.max_output, never
# build the reply first.
rss0=$(rss)
python3 - "$PORT" <<'PY' >"$TEST_DIR/out" 2>&1
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
n = 200000
s.sendall(b"*%d\r\n$4\r\nMGET\r\n" % (n + 1) + b"$4\r\nhalf\r\n" * n)
got = 0
while True:
    try:
        chunk = s.recv(1 << 20)
    except ConnectionResetError:
        break
    if not chunk:
        break
    got += len(chunk)
print("closed after", got, "bytes")
PY
check_out "^closed after [0-9]+ bytes" "MGET of a 600 KB key 200,000 times: the connection ends"
printf 'MULTI\r\n%s EXEC\r\n' "$(for i in $(seq 1000); do printf 'GET half\r\n'; done)" |
	timeout 30 cli >/dev/null 2>&1
rss1=$(rss)
[ $((rss1 - rss0)) -lt 65536 ] && ok "... and so does EXEC of 1,000 GETs of it: peak RSS $rss0 -> $rss1 KiB" ||
	not_ok "peak RSS grew from $rss0 to $rss1 KiB building a huge reply"
# MULTI's queue is bounded by resp.max_request too: past it, EXEC is refused.
python3 - "$PORT" <<'PY' >"$TEST_DIR/out" 2>&1
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
v = b"x" * 1000
s.sendall(b"MULTI\r\n" + (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n" + v + b"\r\n") * 2000 + b"EXEC\r\n")
buf = b""
while not buf.endswith(b"\r\n") or b"EXECABORT" not in buf and b"*" not in buf[-20:]:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
    if b"EXECABORT" in buf:
        break
print(buf.count(b"+QUEUED"), "queued;", b"would exceed resp.max_request" in buf, b"EXECABORT" in buf)
PY
check_out "^[0-9]+ queued; True True" "2,000 queued SETs of 1 KB pass resp.max_request = 1M: refused, EXEC aborts"
cli ping >"$TEST_DIR/out"; check_out "^PONG$" "poold still serves RESP"

# The buffers of one user's connections share resp.max_buffers_per_user, and
# all connections resp.max_buffers: an argument counts at its header, before
# its bytes; past a bound the biggest connection in it is closed, and a reply
# that would pass one is never built.
pool_stop
printf 'alice 65534 >alice-pw\nbob 4242 >bob-pw\n' >"$TEST_DIR/users"
chmod 0600 "$TEST_DIR/users"
pool_start -o lend.size=128M -o resp.listen=127.0.0.1:$PORT -o resp.capacity=100M \
	-o resp.users="$TEST_DIR/users" -o resp.max_buffers_per_user=64M -o resp.max_buffers=112M \
	-o resp.max_request=48M || exit 1
python3 - "$PORT" "/proc/$POOLD_PID/status" >"$TEST_DIR/out" 2>&1 <<'PY'
import socket, subprocess, sys, time
port, status = int(sys.argv[1]), sys.argv[2]
M = 1 << 20
hwm = lambda: int(next(l for l in open(status) if l.startswith("VmHWM:")).split()[1]) // 1024
def auth(user):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s-pw\r\n" % (len(user), user, len(user) + 3, user))
    assert s.recv(100) == b"+OK\r\n"
    return s
def announce(s, key, size, send=0):
    """A SET of size bytes: its header, and send bytes of its value. False if poold closed it."""
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n" % (len(key), key, size))
        s.sendall(b"v" * send)
    except (BrokenPipeError, ConnectionResetError):
        return False
    time.sleep(0.3)
    return is_open(s)
def is_open(s):
    s.setblocking(False)
    try:
        return s.recv(1) is None  # a reply or EOF: answered or closed
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        s.setblocking(True)
def redis(*args):
    return subprocess.run(["redis-cli", "-p", str(port), "--no-auth-warning"] + list(args),
                          capture_output=True, text=True).stdout.strip()
before = hwm()
# Eight connections of alice, each sending a 30 MiB value: two fit in 64M.
alive = [s for s in (auth(b"alice") for _ in range(8)) if announce(s, b"k", 30 * M, 30 * M)]
print("alice: %d of 8 connections sending 30 MiB each kept; poold's peak grew %d MiB" % (len(alive), hwm() - before))
assert len(alive) == 2, len(alive)
assert hwm() - before < 100, "poold held more than the bound"
assert redis("--user", "bob", "--pass", "bob-pw", "set", "b", "1") == "OK", "bob not served"
# bob: 40M fits his 64M and the 112M in all; 16M more passes the 112M: his
# 40M connection, the biggest, is closed, not the newer one.
b1, b2 = auth(b"bob"), auth(b"bob")
assert announce(b1, b"x", 40 * M)
assert announce(b2, b"y", 16 * M)
# (poold reads the 16M at its pace: a loaded machine may take a while)
for _ in range(100):
    if not is_open(b1):
        break
    time.sleep(0.1)
assert not is_open(b1) and is_open(b2), "resp.max_buffers did not close the biggest"
print("bob: 40M + 16M over resp.max_buffers = 112M: the 40M connection closed")
# alice finishes a SET; a reply that would pass her bound ends its connection unbuilt.
alive[0].sendall(b"\r\n")
assert alive[0].recv(100) == b"+OK\r\n"
m = auth(b"alice")
m.sendall(b"*4\r\n$4\r\nMGET\r\n$1\r\nk\r\n$1\r\nk\r\n$1\r\nk\r\n")
got = 0
while True:
    try:
        chunk = m.recv(1 << 20)
    except ConnectionResetError:
        break
    if not chunk:
        break
    got += len(chunk)
assert got < 90 * M, got
print("alice: MGET of her 30 MiB value 3 times closed after %d bytes" % got)
assert redis("--user", "alice", "--pass", "alice-pw", "strlen", "k") == str(30 * M)
PY
rc=$?
sed 's/^/  | /' "$TEST_DIR/out"
[ $rc -eq 0 ] && ok "resp.max_buffers_per_user and resp.max_buffers bound what connections make poold hold" ||
	not_ok "RESP buffers per user and in all"
grep -q "are the most over resp.max_buffers_per_user: disconnected" "$TEST_DIR/poold.log" &&
	grep -q "are the most over resp.max_buffers: disconnected" "$TEST_DIR/poold.log" &&
	grep -q "a reply that would pass it, over resp.max_buffers_per_user" "$TEST_DIR/poold.log" &&
	ok "the log names each bound" || not_ok "the log does not name the bounds"
# What a tenant's list, set, LCS and WATCH commands can make poold do: bounded, refused.
pool_stop
pool_start -o lend.size=128M -o resp.listen=127.0.0.1:$PORT -o resp.capacity=64M || exit 1
python3 - "$PORT" <<'PY' >"$TEST_DIR/out" 2>&1 && ok "SRANDMEMBER of a billion repeats ends its connection unbuilt; LCS of two 8 kB strings (a 256 MB table) is refused at once; a set or list stops at 65,536 elements; WATCH of 20,000 keys is bounded; poold answers after each" || { not_ok "tenant bounds of the list, set, LCS and WATCH commands"; cat "$TEST_DIR/out"; }
import socket, sys, time
port = int(sys.argv[1])
def cmd(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = x if isinstance(x, bytes) else str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return s
def ask(s, data, n=1 << 16):
    s.sendall(data)
    time.sleep(0.3)
    return s.recv(n)
s = conn()
assert ask(s, cmd("SADD", "s", "a", "b")) == b":2\r\n"
s.sendall(cmd("SRANDMEMBER", "s", "-2000000000"))
got, t0 = b"", time.time()
while time.time() - t0 < 10:
    part = s.recv(1 << 20)
    if not part:
        break
    got += part
assert len(got) < (1 << 20), len(got)  # closed before the reply was built
s = conn()
t0 = time.time()
r = ask(s, cmd("SET", "x", b"ab" * 4000) + cmd("SET", "y", b"ba" * 4000) + cmd("LCS", "x", "y"))
assert b"Insufficient memory" in r and time.time() - t0 < 5, (r[:200], time.time() - t0)
r = ask(s, cmd("SADD", "big", *range(70000)), 1 << 10)
assert r.startswith(b"-ERR a list or set of this server holds at most 65536"), r
r = ask(s, cmd("RPUSH", "l", *range(70000)), 1 << 10)
assert r.startswith(b"-ERR a list or set of this server holds at most 65536"), r
assert ask(s, cmd("EXISTS", "big", "l")) == b":0\r\n"
assert ask(s, cmd("WATCH", *["w%d" % i for i in range(20000)])) == b"+OK\r\n"
assert ask(s, cmd("PING")) == b"+PONG\r\n"
print("ok")
PY
pool_alive && ok "poold still running" || not_ok "poold died"

pool_done

#!/bin/bash
# daemon/etcd/etcd.c, the client of etcd's v3 JSON gateway, against a real etcd
# cluster of three members on loopback (Debian's etcd-server): keys, the
# create-if-absent that elects a leader and gives it its epoch, leases that
# end keys and the keepalives that hold them, watches, a member killed, and
# endpoints that refuse, hang or are not etcd at all.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/etcdlib.sh"
T="$top_builddir/tests/tools/pool-etcd"

etcd_cluster || exit 1
check "a cluster of three etcd members answers" "$T" "$ALL" put:/ready=1

check "put and get" "$T" "$ALL" put:/pool/a=hello get:/pool/a
check_out "^  kv /pool/a=hello create=[1-9][0-9]* " "the value as it was put, with its revision"
check "a prefix and a delete" "$T" "$ALL" put:/pool/b=2 del:/pool/a prefix:/pool/
grep -c '^  kv ' "$TEST_DIR/out" | grep -qx 1 && grep -q '^  kv /pool/b=2' "$TEST_DIR/out" &&
	ok "the prefix holds what is left" || { not_ok "prefix after delete"; cat "$TEST_DIR/out"; }

# The election: the first create wins; the second reads the winner and its epoch.
check "create-if-absent: the first wins, the second reads the winner" \
	"$T" "$ALL" lease:60 create:/pool/leader=n1 create:/pool/leader=n2
first=$(grep -c 'create: ok .* succeeded=1' "$TEST_DIR/out")
second=$(grep -c 'create: ok .* succeeded=0 kvs=1' "$TEST_DIR/out")
[ "$first" = 1 ] && [ "$second" = 1 ] && grep -q '^  kv /pool/leader=n1 .* lease=yes' "$TEST_DIR/out" &&
	ok "one leader, n1, on a lease" || { not_ok "create-if-absent"; cat "$TEST_DIR/out"; }
epoch=$(sed -n 's/^  kv \/pool\/leader=n1 create=\([0-9]*\) .*/\1/p' "$TEST_DIR/out")
check "the key read again" "$T" "$ALL" get:/pool/leader
grep -q "^  kv /pool/leader=n1 create=$epoch " "$TEST_DIR/out" &&
	ok "its create revision, the epoch, is stable ($epoch)" || { not_ok "epoch"; cat "$TEST_DIR/out"; }

# A transaction guarded by the leader key's epoch: done in that epoch, refused in another.
check "a write guarded by the leader's epoch" "$T" "$ALL" "txn:/pool/leader@$epoch,/pool/state=1" \
	"txn:/pool/leader@$((epoch - 1)),/pool/state=2" get:/pool/state
[ "$(grep -c '^txn: ok .* succeeded=1' "$TEST_DIR/out")" = 1 ] &&
	[ "$(grep -c '^txn: ok .* succeeded=0' "$TEST_DIR/out")" = 1 ] && grep -q '^  kv /pool/state=1 ' "$TEST_DIR/out" &&
	ok "is done in that epoch, and refused in another (a deposed leader's)" || { not_ok "guarded txn"; cat "$TEST_DIR/out"; }

# A prefix read a page at a time, each after the last key of the one before.
check "a prefix in pages of 2" "$T" "$ALL" put:/pg/a=1 put:/pg/b=2 put:/pg/c=3 put:/pg/d=4 \
	put:/pg/e=5 page:/pg/=2 page:/pg/=2 page:/pg/=2
[ "$(grep -o '^page: .*more=[01] kvs=[0-9]*' "$TEST_DIR/out" | sed 's/.*more=//' | tr '\n' ' ')" = "1 kvs=2 1 kvs=2 0 kvs=1 " ] &&
	[ "$(grep '^  kv /pg/' "$TEST_DIR/out" | cut -d' ' -f4 | tr '\n' ' ')" = "/pg/a=1 /pg/b=2 /pg/c=3 /pg/d=4 /pg/e=5 " ] &&
	ok "come in order, each key once, the last page saying there is no more" || { not_ok "pages"; cat "$TEST_DIR/out"; }

# A lease that is not kept alive ends its key; the watch sees the delete.
check "a lease let go" "$T" "$ALL" lease:2 create:/lapse/leader=n1 watch:/lapse/ sleep:3500 get:/lapse/leader
grep -q '^watch: delete /lapse/leader' "$TEST_DIR/out" && grep -q '^get: ok .* kvs=0' "$TEST_DIR/out" &&
	ok "ends its key within its TTL, and the watch says so" || { not_ok "lease expiry"; cat "$TEST_DIR/out"; }
check "a lease kept alive" "$T" "$ALL" lease:2 create:/kept/leader=n1 sleep:1200 keepalive \
	sleep:1200 keepalive sleep:1200 get:/kept/leader
grep -q '^  kv /kept/leader=n1' "$TEST_DIR/out" && grep -q '^keepalive: ok .* ttl=[12] ' "$TEST_DIR/out" &&
	ok "holds its key past its TTL (3.6 s of a 2 s lease)" || { not_ok "keepalive"; cat "$TEST_DIR/out"; }
check "a revoked lease" "$T" "$ALL" lease:60 put:/rev/k=1 revoke get:/rev/k keepalive
grep -q '^get: ok .* kvs=0' "$TEST_DIR/out" && grep -q '^keepalive: ok .* ttl=0 ' "$TEST_DIR/out" &&
	ok "ends its keys at once, and a keepalive then says it is gone" || { not_ok "revoke"; cat "$TEST_DIR/out"; }
check "a watch sees puts and deletes in order" "$T" "$ALL" watch:/w/ put:/w/1=a put:/w/1=b del:/w/1 sleep:300
[ "$(grep '^watch:' "$TEST_DIR/out" | cut -d' ' -f2-3 | tr '\n' ' ')" = "put /w/1=a put /w/1=b delete /w/1= " ] &&
	ok "put a, put b, delete" || { not_ok "watch order"; cat "$TEST_DIR/out"; }

# A member dies: a request to it fails clearly, the next goes to another member.
kill_now "${ETCD_PID[1]}"
# (If it led the cluster, the others answer "leader changed" until they elected one.)
check_exit 1 "with member 1 killed, a request to it fails" "$T" "$ALL" get:/pool/b get:/pool/b \
	sleep:1500 get:/pool/b
check_out "^get: error -111: cannot reach etcd at ${CLIENTS[1]}$" "saying which endpoint could not be reached"
check_out "^  kv /pool/b=2 " "and the next requests go to another member, which answers"
check "the two left still elect" "$T" "${CLIENTS[2]},${CLIENTS[3]}" create:/pool/leader=n3
check_out "succeeded=0 kvs=1" "and still see the leader of before"

# Endpoints that are not etcd: refused, silent, another server, not a URL.
silent=$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
c = s.accept()[0]; time.sleep(10)' "$silent" &
BG_PIDS+=($!)
wait_listen "$silent"
start=$(date +%s%N)
check_exit 1 "an endpoint that never answers" "$T" "http://127.0.0.1:$silent" get:/x
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check_out "^get: error -110: etcd at http://127.0.0.1:$silent did not answer within 2000 ms$" \
	"times out, saying so (after $ms ms)"
other=$(free_port)
python3 -m http.server "$other" --bind 127.0.0.1 >/dev/null 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 100); do (: <"/dev/tcp/127.0.0.1/$other") 2>/dev/null && break; sleep 0.05; done
check_exit 1 "a web server that is not etcd" "$T" "http://127.0.0.1:$other" get:/x
check_out "^get: error -71: etcd at http://127.0.0.1:$other: not etcd's answer \(HTTP 501\): <!DOCTYPE HTML>$" \
	"is not taken for etcd, and the error quotes its page's first line"
# A server that sends 20 MiB: as one answer, and as a watch stream without a newline.
# Neither is kept whole: the answer is refused, the stream ended, the client's memory bounded.
big=$(free_port) stream=$(free_port)
for p in "$big:answer" "$stream:stream"; do
	python3 -c '
import socket, sys
port, kind = sys.argv[1].split(":")
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(port))); s.listen(8)
c = s.accept()[0]; c.recv(65536)
chunk = b"x" * 65536
try:
    if kind == "answer":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 20971520\r\n\r\n")
        for _ in range(320): c.sendall(chunk)
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(320): c.sendall(b"10000\r\n" + chunk + b"\r\n")
except OSError:
    pass' "$p" &
	BG_PIDS+=($!)
done
wait_listen "$big" && wait_listen "$stream"
check_exit 1 "a 20 MiB answer" "$T" "http://127.0.0.1:$big" get:/x
check_out "^get: error -71: etcd at http://127.0.0.1:$big: an answer over 8 MiB, not etcd's$" \
	"is refused as not etcd's"
rss=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$TEST_DIR/watch" \
	"$T" "http://127.0.0.1:$stream" watch:/x sleep:3000)
# (A sanitizer's allocator keeps what is freed in quarantine: its RSS says
# nothing of what the client holds, so only the refusal is checked there.)
grep -q "^watch: ended -71: a watch's message over 8 MiB" "$TEST_DIR/watch.out" &&
	{ [ -n "${pool_sanitizers:-}" ] || [ "$rss" -lt 20000 ]; } &&
	ok "a 20 MiB watch message ends the watch, the client at $rss KiB" ||
	{ not_ok "a 20 MiB watch message (client at $rss KiB)"; cat "$TEST_DIR/watch.out"; }
check_exit 1 "an endpoint that is not a URL" "$T" "etcd.example:2379" get:/x
check_out "etcd endpoint 'etcd.example:2379': not http\[s\]://HOST:PORT" "is refused with a reason"
pool_done

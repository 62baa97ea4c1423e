#!/bin/bash
# The RESP endpoint of nodes that are not the coordinator, on a 3-node
# cluster in network namespaces: each relays its clients to the
# coordinator's endpoint (bound to all its addresses here, reached where
# the nodes reach the coordinator). redis-cli and redis-py on any node use
# redis://localhost unchanged: AUTH, values of 1 B to 4 MiB written on one
# node read back bit-exact on the others, pipelines; as uid nobody a client
# that never reads its replies, floods of connections and resp.max_clients
# leave a node's poold with flat fds and bounded memory. A coordinator
# endpoint that cannot be reached, is on loopback only or is not set gets
# a clear error (never a hang), and a restarted coordinator is followed.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && { pool_cluster_logs; grep -E "RESP" "$(cluster_dir 2)/poold.log" | tail -20; }; echo "resp-relay: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
if ! /usr/bin/python3 -c 'import redis' 2>/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "skip: python3-redis or redis-tools is not installed"; exit 77
fi

PW=relay-test-password
coord_start() { pool_node_start 1 -o "resp.password=$PW" -o resp.max_output=8M -o metrics.listen=127.0.0.1:9464 "$@"; }
cluster_create 3 || exit 1
coord_start -o "resp.listen=0.0.0.0:6379" || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
pool_node_start 2 -o "resp.listen=127.0.0.1:6379" -o resp.max_clients=40 -o metrics.listen=127.0.0.1:9464 || exit 1
pool_node_start 3 -o "resp.listen=$(cluster_addr 3):6379" || exit 1
for i in 2 3; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i did not join"; exit 1; }; done
cluster_wait_tcp 2 127.0.0.1 6379 || { not_ok "node 2's RESP endpoint up"; exit 1; }

cli() { local i=$1; shift; cluster_exec "$i" timeout 20 redis-cli --no-auth-warning "$@" 2>&1; }
# rpy I ADDR SCRIPT: redis-py inside host I against ADDR (host:port), as root.
rpy() { cluster_exec "$1" env RESP_ADDR="$2" PW="$PW" timeout 120 /usr/bin/python3 -c "$3"; }
prelude='
import os, hashlib, socket, time, redis
host, port = os.environ["RESP_ADDR"].rsplit(":", 1)
port = int(port)
r = redis.Redis(host=host, port=port, password=os.environ["PW"], socket_timeout=30)
def val(i, n):
    seed = hashlib.sha256(b"%d" % i).digest()
    return (seed * (n // 32 + 1))[:n]
'
fds() { cluster_exec "$1" ls "/proc/${POOL_PIDS[$1]}/fd" | wc -l; }
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/${POOL_PIDS[$1]}/status"; }

out=$(cli 2 -h 127.0.0.1 PING)
[ "$out" = "NOAUTH Authentication required." ] \
	&& ok "node 2's localhost:6379 without AUTH: the coordinator's NOAUTH comes through" \
	|| not_ok "PING without AUTH: $out"
out=$(cli 2 -h 127.0.0.1 -a "$PW" SET greeting "from node 2"; cli 3 -h "$(cluster_addr 3)" -a "$PW" GET greeting;
	cli 1 -h "$(cluster_addr 1)" -a "$PW" GET greeting)
[ "$out" = "$(printf 'OK\nfrom node 2\nfrom node 2')" ] \
	&& ok "redis-cli: SET on node 2's endpoint, GET on node 3's and on the coordinator's" \
	|| not_ok "redis-cli across nodes: $out"

rpy 2 127.0.0.1:6379 "$prelude
sizes = [1, 100, 4096, 65536, 1 << 20, 4 << 20]
for i, n in enumerate(sizes):
    assert r.set(b'v%d' % i, val(i, n)) is True
p = r.pipeline(transaction=False)
for i in range(2000):
    p.set(b'p%d' % i, val(i, 100 + i % 900))
assert all(x is True for x in p.execute())
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "redis-py on node 2: 6 values of 1 B to 4 MiB, and a pipeline of 2000 SETs" \
	|| { not_ok "redis-py writes through node 2"; cat "$CLUSTER_TMP/out"; }
rpy 3 "$(cluster_addr 3):6379" "$prelude
sizes = [1, 100, 4096, 65536, 1 << 20, 4 << 20]
for i, n in enumerate(sizes):
    assert r.get(b'v%d' % i) == val(i, n), n
got = r.mget([b'p%d' % i for i in range(2000)])
assert got == [val(i, 100 + i % 900) for i in range(2000)]
with r.pipeline(transaction=True) as p:
    p.incr(b'n').incr(b'n').get(b'n')
    assert p.execute() == [1, 2, b'2']
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "redis-py on node 3 reads all back bit-exact (MGET of 2000), MULTI/EXEC in order" \
	|| { not_ok "redis-py reads through node 3"; cat "$CLUSTER_TMP/out"; }

# The same pipelined load through a relay and on the coordinator's endpoint itself.
bench() { cluster_exec "$1" timeout 120 redis-benchmark -h "$2" -p 6379 -a "$PW" -t set,get -n 20000 \
	-c 20 -P 16 -r 5000 -d 1000 -q 2>&1 | tr '\r' '\n' | grep -E "^(SET|GET): [0-9.]+ requests per second" \
	| sed 's/ requests per second.*/\/s/' | tr '\n' ' '; }
via=$(bench 2 127.0.0.1); direct=$(bench 1 "$(cluster_addr 1)")
[ "$(echo "$via" | wc -w)" = 4 ] && [ "$(echo "$direct" | wc -w)" = 4 ] \
	&& ok "redis-benchmark -P 16 -c 20 of 1000 bytes: through node 2 $via; on the coordinator $direct" \
	|| not_ok "redis-benchmark: through node 2 '$via', direct '$direct'"

# As uid nobody on node 2: a client that asks for 800 MiB of replies and does not read them.
f0=$(fds 2); m0=$(rss 2)
cluster_exec 2 setpriv --reuid=nobody --regid=nogroup --clear-groups env RESP_ADDR=127.0.0.1:6379 PW="$PW" \
	POOLD_PID="${POOL_PIDS[2]}" timeout 60 /usr/bin/python3 -c "$prelude
def rss():
    for line in open('/proc/%s/status' % os.environ['POOLD_PID']):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) // 1024
s = socket.create_connection((host, port))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b'AUTH %s\r\n' % os.environ['PW'].encode())
s.settimeout(5)
assert s.recv(5) == b'+OK\r\n'
s.sendall(b'GET v5\r\n' * 200)
peak = 0
for _ in range(30):
    time.sleep(0.1)
    peak = max(peak, rss())
s.close()
print('ok', peak)
" >"$CLUSTER_TMP/out" 2>&1
sleep 1; f1=$(fds 2); m1=$(rss 2)
read -r _ peak <"$CLUSTER_TMP/out"
grep -q "^ok" "$CLUSTER_TMP/out" && [ "$f1" -le "$f0" ] && [ "$peak" -le $((m0 + 32)) ] \
	&& ok "uid nobody asks for 800 MiB of replies and reads none: node 2's RSS $m0 MiB, at most $peak meanwhile; fds $f0 -> $f1" \
	|| { not_ok "slow reader through node 2: RSS $m0 -> peak $peak MiB, fds $f0 -> $f1"; cat "$CLUSTER_TMP/out"; }

# As uid nobody: resp.max_clients (40 on node 2), then 300 connections opened and dropped.
f0=$(fds 2); f0c=$(fds 1)
cluster_exec 2 setpriv --reuid=nobody --regid=nogroup --clear-groups env RESP_ADDR=127.0.0.1:6379 PW="$PW" \
	timeout 60 /usr/bin/python3 -c "$prelude
held = [socket.create_connection((host, port)) for _ in range(40)]
time.sleep(0.3)
s = socket.create_connection((host, port))
s.settimeout(5)
refused = s.recv(100)
assert refused == b'-ERR max number of clients reached\r\n', refused
for c in held:
    c.close()
time.sleep(0.5)
for round in range(10):
    socks = [socket.create_connection((host, port)) for _ in range(30)]
    for c in socks:
        try:   # (refused while the last round's drain: closed already)
            c.sendall(b'*2\r\n\$3\r\nGET\r\n\$2\r\nv4\r\n')
        except OSError:
            pass
        c.close()
time.sleep(1)
assert r.get(b'v0') == val(0, 1)
print('ok')" >"$CLUSTER_TMP/out" 2>&1
sleep 1; f1=$(fds 2); f1c=$(fds 1)
grep -q "^ok" "$CLUSTER_TMP/out" && [ "$f1" -le "$f0" ] && [ "$f1c" -le "$((f0c + 2))" ] \
	&& ok "as uid nobody: the 41st connection gets 'max number of clients reached'; 300 dropped ones leave fds node 2 $f0 -> $f1, coordinator $f0c -> $f1c" \
	|| { not_ok "connection floods through node 2: fds $f0 -> $f1, coordinator $f0c -> $f1c"; cat "$CLUSTER_TMP/out"; }

# What the metrics of node 2's relay and of the coordinator's endpoint say of all that.
metric() { cluster_exec "$1" /usr/bin/python3 -c '
import sys, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=10).read().decode()
print(sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith(sys.argv[1])))' "$2"; }
up=$(metric 2 'pool_resp_relayed_bytes_total{to="coordinator"}'); down=$(metric 2 'pool_resp_relayed_bytes_total{to="client"}')
refused=$(metric 2 pool_resp_refused_total); cmds=$(metric 1 pool_resp_commands_total)
python3 -c "import sys; a = [float(x) for x in sys.argv[1:]]; sys.exit(0 if a[0] > 1e6 and a[1] > 8e6 and a[2] >= 1 and a[3] > 40000 else 1)" \
	"$up" "$down" "$refused" "$cmds" \
	&& ok "metrics: node 2 relayed ${up%.*} bytes up and ${down%.*} down, refused ${refused%.*}; the coordinator ran ${cmds%.*} commands" \
	|| not_ok "metrics: relayed up $up down $down, refused $refused, commands $cmds"

# The coordinator's endpoint unreachable from node 3 (dropped, then refused): an error, no hang.
cluster_exec 1 nft -f - <<NFT
table inet relaytest {
	chain in {
		type filter hook input priority -10;
		ip saddr $(cluster_addr 3) tcp dport 6379 drop
	}
}
NFT
t0=$SECONDS; out=$(cli 3 -h "$(cluster_addr 3)" -a "$PW" GET greeting); t1=$((SECONDS - t0))
cluster_exec 1 nft delete table inet relaytest
cluster_exec 1 nft -f - <<NFT
table inet relaytest {
	chain in {
		type filter hook input priority -10;
		ip saddr $(cluster_addr 3) tcp dport 6379 reject with tcp reset
	}
}
NFT
out2=$(cli 3 -h "$(cluster_addr 3)" -a "$PW" GET greeting)
cluster_exec 1 nft delete table inet relaytest
case "$out $out2" in
*"unreachable from this node: timed out"*"unreachable from this node: Connection refused"*)
	ok "coordinator's endpoint dropped: '-ERR ... timed out' in $t1 s; refused: '-ERR ... Connection refused'";;
*)	not_ok "unreachable coordinator endpoint: '$out' '$out2'";;
esac
out=$(cli 3 -h "$(cluster_addr 3)" -a "$PW" GET greeting)
[ "$out" = "from node 2" ] && ok "reachable again: node 3 relays" || not_ok "after the rules went: $out"

# Restarted coordinators: without resp.listen, on its loopback only, then on its address.
restart() {
	pool_node_kill 1 TERM; sleep 1
	coord_start "$@" || return 1
	pool_wait_state 1 h2 up 30 && pool_wait_state 1 h3 up 30
}
restart && out=$(cli 2 -h 127.0.0.1 -a "$PW" GET greeting)
[[ "$out" == *"serves no RESP endpoint (resp.listen is unset there)"* ]] \
	&& ok "coordinator restarted without resp.listen: node 2 says so: $out" || not_ok "no endpoint: $out"
restart -o "resp.listen=127.0.0.1:6379" && out=$(cli 2 -h 127.0.0.1 -a "$PW" PING)
[[ "$out" == *"is on its loopback only"* ]] \
	&& ok "on the coordinator's loopback only: node 2 refuses, not relaying to its own loopback: $out" \
	|| not_ok "loopback-only endpoint: $out"
restart -o "resp.listen=$(cluster_addr 1):6379" && out=$(cli 2 -h 127.0.0.1 -a "$PW" SET again yes; cli 3 -h "$(cluster_addr 3)" -a "$PW" GET again)
[ "$out" = "$(printf 'OK\nyes')" ] && ok "coordinator restarted on its address: nodes 2 and 3 follow it" \
	|| not_ok "after the restart: $out"
alive=0
for i in 1 2 3; do kill -0 "${POOL_PIDS[$i]}" 2>/dev/null && alive=$((alive + 1)); done
[ "$alive" = 3 ] && ok "the three poolds run on" || not_ok "only $alive of the poolds run"
finish

#!/bin/bash
# RESP databases sharded over the KV shards' owners (resp.placement =
# sharded) on a 4-node cluster in network namespaces: every node's
# endpoint runs commands itself, each key at the owner of its shard, and
# the coordinator serves none of them. redis-cli and redis-py on any node:
# a value SET on one node is read on every other; a pipeline of 3,000 SETs
# lands on every owner and MGET brings the values back in the keys' order;
# DBSIZE, KEYS and a whole SCAN see every key once; DEL, EXISTS and MSET
# split by owner; a pipeline's commands go to each owner together and
# come back in order, big values over several answers; INCR from two nodes
# at once loses no increment; expiry
# holds; values up to 4 MiB go between nodes, a larger one gets a clear
# error; a client pipelining GETs of big values on other owners and
# reading nothing is closed at its user's buffers bound, its node's memory
# flat; a transaction on one owner's keys runs there (keys of one
# {hash tag} are one owner's), one on several owners' gets CROSSSLOT, as
# MSETNX does; a user of resp.users reaches its
# own databases alone; SWAPDB on one node's endpoint swaps the databases
# for all. With resp.replicas = 2, an owner SIGKILLed loses
# nothing: its shards' backups hold every value and every deletion.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "resp-shards: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
if ! /usr/bin/python3 -c 'import redis' 2>/dev/null || ! command -v redis-cli >/dev/null; then
	echo "skip: python3-redis or redis-tools is not installed"; exit 77
fi

cluster_create 4 || exit 1
USERS="$CLUSTER_TMP/resp-users"
echo "alice 65534 >alice-pw" >"$USERS"
chmod 600 "$USERS"
POOL_OPTS="-o kv.shard_size=192M -o resp.capacity=1G -o resp.placement=sharded -o resp.replicas=2 -o resp.password=pw -o resp.users=$USERS"
# The coordinator (h1) owns no shards: what it serves of the RESP databases shows.
node_opts() {
	echo "-o metrics.listen=$(pool_metrics_at "$1") -o resp.listen=$(cluster_addr "$1"):6379"
	[ "$1" = 1 ] && echo "-o kv.shard_size=0 -o resp.max_buffers_per_user=32M"
}
POOL_NODE_OPTS=node_opts
pool_node_start 1 || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
for i in 2 3 4; do pool_node_start "$i" || exit 1; done
for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i did not join"; pool_cluster_logs; exit 1; }; done
ok "4-node cluster formed, every node's RESP endpoint sharded ($CLUSTER_MODE)"
for i in 1 2 3 4; do cluster_wait_tcp "$i" "$(cluster_addr "$i")" 6379 || not_ok "h$i's endpoint up"; done

cli() { local i=$1; shift; cluster_exec "$i" timeout 20 redis-cli --no-auth-warning -h "$(cluster_addr "$i")" -a pw "$@" 2>&1; }
# rpy I SCRIPT: redis-py inside host I against its own endpoint (r), the others' in rs[1..4].
rpy() { cluster_exec "$1" env ADDRS="$(for i in 1 2 3 4; do printf '%s ' "$(cluster_addr "$i")"; done)" ME="$1" timeout 120 /usr/bin/python3 -c "
import os, hashlib, threading, time, redis
rs = [None] + [redis.Redis(host=a, port=6379, password='pw', socket_timeout=30) for a in os.environ['ADDRS'].split()]
r = rs[int(os.environ['ME'])]
def val(i, n=100):
    return (hashlib.sha256(b'%d' % i).digest() * (n // 32 + 1))[:n]
$2"; }

coord0=$(pool_metric 1 'pool_kv_requests_total{from="nodes"}')
out=$(cli 2 SET greeting "from node 2"; cli 3 GET greeting; cli 4 GET greeting; cli 1 GET greeting)
[ "$out" = "$(printf 'OK\nfrom node 2\nfrom node 2\nfrom node 2')" ] &&
	ok "redis-cli: SET on h2's endpoint, GET on h3's, h4's and the coordinator's" ||
	not_ok "SET/GET across nodes: $out"

rpy 2 "
p = r.pipeline(transaction=False)
for i in range(3000):
    p.set(b'k%d' % i, val(i, 50 + i % 400))
assert all(x is True for x in p.execute())
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && ok "redis-py on h2: a pipeline of 3,000 SETs" ||
	{ not_ok "pipeline of SETs"; cat "$CLUSTER_TMP/out"; }
held=0
for i in 2 3 4; do
	n=$(pool_kv_shard "$i" store_used)
	[ "${n:-0}" -gt 100000 ] && held=$((held + 1))
	echo "# h$i keeps ${n:-?} bytes of values of its shards"
done
[ "$held" = 3 ] && ok "the values are spread over the memory of all 3 owners (h2-h4) for their shards" || not_ok "values on $held owners"

rpy 3 "
keys = [b'k%d' % i for i in range(3000)]
got = r.mget(keys)
assert got == [val(i, 50 + i % 400) for i in range(3000)], 'mget'
assert rs[4].dbsize() == 3001, rs[4].dbsize()
assert sorted(rs[1].keys('k*')) == sorted(keys), 'keys'
seen, cur = [], 0
while True:
    cur, part = r.scan(cur, count=500)
    seen += part
    if cur == 0:
        break
assert sorted(seen) == sorted(keys + [b'greeting']), (len(seen), len(set(seen)))
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h3: MGET of all 3,000 in the keys' order; DBSIZE (h4), KEYS (h1) and a whole SCAN see every key once" ||
	{ not_ok "MGET/DBSIZE/KEYS/SCAN"; cat "$CLUSTER_TMP/out"; }

rpy 4 "
assert r.delete(*[b'k%d' % i for i in range(1000)]) == 1000
assert r.exists(*[b'k%d' % i for i in range(0, 2000, 2)]) == 500
assert r.mset({b'm%d' % i: b'v%d' % i for i in range(200)}) is True
assert rs[2].mget([b'm%d' % i for i in range(200)]) == [b'v%d' % i for i in range(200)]
assert rs[1].dbsize() == 2201, rs[1].dbsize()
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h4: DEL of 1,000 keys, EXISTS and MSET split by owner, counted and stored right" ||
	{ not_ok "DEL/EXISTS/MSET"; cat "$CLUSTER_TMP/out"; }

rpy 2 "
def bump(node):
    c = rs[node]
    for _ in range(500):
        c.incr(b'counter')
ts = [threading.Thread(target=bump, args=(n,)) for n in (2, 3)]
[t.start() for t in ts]
[t.join() for t in ts]
assert rs[1].get(b'counter') == b'1000', rs[1].get(b'counter')
assert r.set(b'brief', b'x', px=300) is True
assert 0 < rs[3].pttl(b'brief') <= 300
time.sleep(0.5)
assert rs[4].get(b'brief') is None and rs[1].exists(b'brief') == 0
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "INCR from h2 and h3 at once: 1,000 of 1,000; a 300 ms expiry seen and kept from other nodes" ||
	{ not_ok "INCR/expiry"; cat "$CLUSTER_TMP/out"; }

rpy 3 "
p = r.pipeline(transaction=True)
p.incr(b'tx'); p.incr(b'tx'); p.get(b'tx')
assert p.execute() == [1, 2, b'2']
spread = [b'k1000', b'k1001', b'k1002', b'k1003', b'k1004', b'k1005']
p = r.pipeline(transaction=True)
for k in spread:
    p.get(k)
try:
    p.execute()
    raise SystemExit('a transaction over several owners ran')
except redis.ResponseError as e:
    assert 'CROSSSLOT' in str(e), e
try:
    r.msetnx({k: b'x' for k in spread})
    raise SystemExit('MSETNX over several owners ran')
except redis.ResponseError as e:
    assert 'CROSSSLOT' in str(e), e
assert r.get(b'k1000') == val(1000, 50 + 1000 % 400)
p = r.pipeline(transaction=True)
p.set(b'{cart}a', b'1'); p.incr(b'{cart}b'); p.mget(b'{cart}a', b'{cart}b')
assert p.execute() == [True, 1, [b'1', b'1']]
assert r.msetnx({b'{u7}x': b'1', b'{u7}y': b'2'}) is True
assert r.msetnx({b'{u7}y': b'3', b'{u7}z': b'4'}) is False and r.get(b'{u7}z') is None
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "MULTI/EXEC on one owner's key runs there; over several owners, and MSETNX, get CROSSSLOT; keys of one {hash tag} take both" ||
	{ not_ok "transactions"; cat "$CLUSTER_TMP/out"; }

rpy 1 "
p = r.pipeline(transaction=False)
for i in range(500):
    k = b'q%d' % i
    p.set(k, b'1'); p.incr(k); p.append(k, b'x'); p.get(k)
assert p.execute() == [True, 2, 2, b'2x'] * 500
bigs = {b'b%d' % i: val(100 + i, 1 << 20) for i in range(12)}
for k, v in bigs.items():
    assert r.set(k, v) is True
p = r.pipeline(transaction=False)
for k in bigs:
    p.get(k)
assert p.execute() == list(bigs.values())
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h1: a pipeline of 2,000 SET/INCR/APPEND/GET on 500 keys, in order; 12 GETs of 1 MiB values pipelined, each whole" ||
	{ not_ok "pipelines through h1"; cat "$CLUSTER_TMP/out"; }

rpy 1 "
big = val(7, 1 << 20)
assert r.set(b'big', big) is True and rs[3].get(b'big') == big
try:
    r.set(b'huge', val(8, 5 << 20))
    raise SystemExit('a 5 MiB SET to another node ran')
except redis.ResponseError as e:
    assert '4M' in str(e), e
assert r.get(b'huge') is None and r.ping()
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h1 (no shards): a 1 MiB value SET through it and read on h3; a 5 MiB one refused, saying the 4M bound" ||
	{ not_ok "big values to other nodes"; cat "$CLUSTER_TMP/out"; }

rpy 2 "
assert r.set(b'{r}a', b'hello') and r.rename(b'{r}a', b'{r}b') is True and rs[3].get(b'{r}b') == b'hello'
assert rs[4].copy(b'{r}b', b'{r}c') is True and rs[1].get(b'{r}c') == b'hello' and r.get(b'{r}a') is None
assert r.lcs(b'{r}b', b'{r}c') == b'hello'
crossed = same = 0
for i in range(1001, 1040):
    try:
        r.lcs(b'k1000', b'k%d' % i)
        same += 1
    except redis.ResponseError as e:
        assert 'CROSSSLOT' in str(e), e
        crossed += 1
assert crossed > 0 and same > 0, (crossed, same)
assert r.setbit(b'bits', 7, 1) == 0 and rs[4].getbit(b'bits', 7) == 1 and rs[1].bitcount(b'bits') == 1
assert r.rpush(b'{q}l', b'a', b'b') == 2 and rs[3].lpop(b'{q}l') == b'a' and rs[4].lrange(b'{q}l', 0, -1) == [b'b']
assert rs[1].sadd(b'{q}s', b'x', b'y') == 2 and r.smembers(b'{q}s') == {b'x', b'y'} and rs[3].type(b'{q}s') == b'set'
assert rs[4].sunionstore(b'{q}u', b'{q}s', b'{q}t') == 2
try:
    r.get(b'{q}l')
    raise SystemExit('GET of a list ran')
except redis.ResponseError as e:
    assert 'WRONGTYPE' in str(e), e
assert r.incrbyfloat(b'fl', 1.5) == 1.5 and rs[3].incrbyfloat(b'fl', 1) == 2.5
assert rs[1].object('encoding', b'fl') == b'embstr' and rs[1].randomkey() is not None
try:
    r.move(b'{r}c', 3)
    raise SystemExit('MOVE ran')
except redis.ResponseError as e:
    assert 'cluster mode' in str(e), e
mine = None
for i in range(200):
    try:
        r.execute_command('WATCH', b'w%d' % i)
        mine = b'w%d' % i
        break
    except redis.ResponseError as e:
        assert 'WATCH of a key another node owns' in str(e), e
assert mine is not None
rs[3].set(mine, b'changed')
r.execute_command('MULTI'); r.execute_command('SET', mine, b'mine')
got = r.execute_command('EXEC')
assert got is None and r.get(mine) == b'changed', (got, r.get(mine))
r.execute_command('WATCH', mine); r.execute_command('MULTI'); r.execute_command('SET', mine, b'mine')
got = r.execute_command('EXEC')
assert got == [b'OK'] and rs[4].get(mine) == b'mine', (got, rs[4].get(mine))
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "RENAME, COPY and LCS of one owner's keys run there, of two owners' get CROSSSLOT; SETBIT, INCRBYFLOAT, OBJECT, RANDOMKEY, lists and sets on any node; MOVE refused; WATCH on its owner's endpoint aborts EXEC when another node's client wrote the key" ||
	{ not_ok "string and key commands on sharded databases"; cat "$CLUSTER_TMP/out"; }

# A client that pipelines GETs of big values on other nodes' shards and
# reads nothing: the replies its node holds for it count against its
# user's buffers (h1: resp.max_buffers_per_user = 32M) before they come,
# and the connection is closed at the bound, not after its node has held
# them all (32 x 3 MiB).
rpy 1 "
for i in range(32):
    assert r.set(b'h%d' % i, val(200 + i, 3 << 20)) is True
print('ok')" >"$CLUSTER_TMP/out" 2>&1 || { not_ok "SETs of 3 MiB values through h1"; cat "$CLUSTER_TMP/out"; }
hwm() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/${POOL_PIDS[$1]}/status"; }
hwm0=$(hwm 1)
rpy 1 "
import socket
s = socket.create_connection((os.environ['ADDRS'].split()[0], 6379))
s.sendall(b'AUTH pw\r\n' + b''.join(b'GET h%d\r\n' % i for i in range(32)))
s.settimeout(20)
try:
    for _ in range(30):  # (a slow reader: 64 KiB a second)
        if not s.recv(1 << 16):
            break
        time.sleep(1)
except (ConnectionResetError, socket.timeout):
    pass
p = r.pipeline(transaction=False)
for i in range(4):
    p.get(b'h%d' % i)
assert p.execute() == [val(200 + i, 3 << 20) for i in range(4)]
assert r.delete(*[b'h%d' % i for i in range(32)]) == 32
print('ok')" >"$CLUSTER_TMP/out" 2>&1 || { not_ok "slow reader of 40 big GETs"; cat "$CLUSTER_TMP/out"; }
hwm1=$(hwm 1)
echo "# h1's peak resident memory: ${hwm0} MiB before, ${hwm1} MiB after"
grep -q 'over resp.max_buffers_per_user' "$(cluster_dir 1)/poold.log" &&
	[ $((hwm1 - hwm0)) -lt 64 ] &&
	ok "a slow reader of 32 pipelined GETs of 3 MiB on other owners: disconnected at 32M, h1's peak memory up $((hwm1 - hwm0)) MiB, not 96; a reading client served after" ||
	not_ok "slow reader: peak memory ${hwm0} -> ${hwm1} MiB; disconnect logged: $(grep -c 'over resp.max_buffers_per_user' "$(cluster_dir 1)/poold.log")"

out=$(cluster_exec 2 timeout 20 redis-cli --no-auth-warning -h "$(cluster_addr 2)" --user alice --pass alice-pw SET greeting alice 2>&1;
	cli 3 GET greeting;
	cluster_exec 4 timeout 20 redis-cli --no-auth-warning -h "$(cluster_addr 4)" --user alice --pass alice-pw GET greeting 2>&1)
[ "$out" = "$(printf 'OK\nfrom node 2\nalice')" ] &&
	ok "alice (uid 65534) SETs on h2 in her own database, reads it on h4; the default user's key unchanged" ||
	not_ok "alice's database: $out"

coord1=$(pool_metric 1 'pool_kv_requests_total{from="nodes"}')
coordsrv=$(pool_metric 1 'pool_resp_shard_commands_total{from="nodes"}')
[ -n "$coord0" ] && [ "$coord0" = "$coord1" ] && [ "$coordsrv" = 0 ] &&
	ok "the coordinator served no command or KV request of the nodes' RESP clients" ||
	not_ok "coordinator's KV requests from nodes: $coord0 -> $coord1, RESP commands served $coordsrv"
fwd=$(pool_metric 3 'pool_resp_shard_commands_total{to="owners"}')
srv=$(pool_metric 4 'pool_resp_shard_commands_total{from="nodes"}')
[ "${fwd:-0}" -gt 0 ] && [ "${srv:-0}" -gt 0 ] &&
	ok "h3 sent $fwd commands to owners, h4 served $srv for other nodes (metrics)" ||
	not_ok "shard command metrics: $fwd sent, $srv served"

# SWAPDB on a node's endpoint: asked of the coordinator, seen at once by
# the node that asked and within a moment by every other.
rpy 3 "
addrs = os.environ['ADDRS'].split()
d = {n: [None] + [redis.Redis(host=a, port=6379, password='pw', db=n, socket_timeout=30) for a in addrs]
     for n in (5, 6, 7)}
keys = [b'sw%d' % i for i in range(300)]
d[5][2].mset({k: b'five' for k in keys})
d[6][4].mset({k: b'six' for k in keys})
d[6][4].set(b'only6', b'x')
def moved(i, a, b):
    return d[a][i].get(b'only6') == b'x' and d[b][i].get(b'only6') is None
def soon(i, a, b):
    t = time.time()
    while not moved(i, a, b) and time.time() - t < 5:
        time.sleep(0.05)
    return moved(i, a, b)
assert d[5][3].swapdb(5, 6) is True and moved(3, 5, 6)
assert all(soon(i, 5, 6) for i in (1, 2, 4))
assert set(d[5][1].mget(keys)) == {b'six'} and set(d[6][2].mget(keys)) == {b'five'}
assert d[5][4].dbsize() == 301 and d[6][1].dbsize() == 300
# An empty database takes db 5's values; db 5 starts empty and takes new ones.
assert d[7][2].swapdb(5, 7) is True and moved(2, 7, 5)
assert all(soon(i, 7, 5) for i in (1, 3, 4))
assert d[5][2].dbsize() == 0 and d[7][4].dbsize() == 301
assert d[5][2].set(b'new', b'1') is True and d[5][4].get(b'new') == b'1' and d[7][4].get(b'new') is None
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "SWAPDB on h3's endpoint: databases 5 and 6 trade 300 values, at once on h3 and within moments on every node; an empty one takes another's" ||
	{ not_ok "SWAPDB of sharded databases"; cat "$CLUSTER_TMP/out"; }

# An owner dies (h2, whose endpoint wrote the k keys: those of its own shards
# through its own index, backed up as the others'): nothing is lost.
pool_node_kill 2
pool_wait_state 1 h2 dead 20 || not_ok "h2 declared dead"
rpy 3 "
got = r.mget([b'k%d' % i for i in range(3000)])
gone = [i for i in range(1000) if got[i] is not None]
kept = sum(1 for i in range(1000, 3000) if got[i] == val(i, 50 + i % 400))
assert not gone and kept == 2000, (gone[:5], kept)
assert rs[4].get(b'counter') == b'1000' and rs[4].dbsize() == r.dbsize()
keys = [b'k%d' % i for i in range(1000, 3000)]
for k in keys:
    assert r.set(k, b'again') is True
assert set(rs[4].mget(keys)) == {b'again'}
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h2 SIGKILLed (2 replicas): all 2,000 values kept, the 1,000 deleted stay deleted, the counter whole; every key SET again and read back" ||
	{ not_ok "after an owner's death"; cat "$CLUSTER_TMP/out"; }
# One owner left (h3): the commands of every owner go to it whole.
pool_node_kill 4
pool_wait_state 1 h4 dead 20 || not_ok "h4 declared dead"
rpy 1 "
n = r.dbsize()
assert n > 0 and n == rs[3].dbsize() == len(r.keys('*')), (n, rs[3].dbsize())
assert r.set(b'last', b'one') is True and rs[3].get(b'last') == b'one'
print('ok')" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "h4 SIGKILLed too: with h3 the only owner, DBSIZE, KEYS, SET and GET through h1 go to it" ||
	{ not_ok "one owner left"; cat "$CLUSTER_TMP/out"; }
for i in 1 3; do kill -0 "${POOL_PIDS[$i]}" 2>/dev/null || not_ok "h$i's poold is running"; done
finish

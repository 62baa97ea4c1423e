#!/bin/bash
# The RESP endpoint on a 3-node cluster in network namespaces: a database's
# values are spread over the lenders (resp.placement = spread), written to
# other nodes one-sided and committed before the reply, and read back
# through the coordinator's endpoint bit-exact, by redis-py and by
# redis-benchmark's pipelines; read-modify-write commands (APPEND, INCR,
# SETRANGE, GETSET), MULTI/EXEC and expiry work on values of other nodes. A
# lender that stops answering turns commands on its values into TRYAGAIN
# within a heartbeat window (never a hang), and once it is declared dead
# they are misses; the values of the other lenders stay, and poold runs on.
# Two databases swapped (SWAPDB) stay swapped when the coordinator restarts.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && { pool_cluster_logs; grep -E "RESP|node 3|endpoint" "$(cluster_dir 1)/poold.log" | tail -30; }; echo "resp: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
if ! /usr/bin/python3 -c 'import redis' 2>/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "skip: python3-redis or redis-tools is not installed"; exit 77
fi

cluster_create 3 || exit 1
resp="$(cluster_addr 1):6379"
pool_node_start 1 -o "resp.listen=$resp" -o resp.capacity=512M || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
for i in 2 3; do pool_node_start "$i" || exit 1; done
for i in 2 3; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i did not join"; exit 1; }; done
cluster_wait_tcp 1 "$(cluster_addr 1)" 6379 || { not_ok "RESP endpoint up"; exit 1; }

# redis-py inside host 1: the script on stdin, RESP_ADDR set.
rpy() { cluster_exec 1 env RESP_ADDR="$resp" timeout 120 /usr/bin/python3 -c "$1"; }
prelude='
import os, hashlib, redis
host, port = os.environ["RESP_ADDR"].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port), socket_timeout=30)
def val(i, n=None):
    n = n if n is not None else (16 << (i % 15))     # 16 B to 256 KiB
    seed = hashlib.sha256(b"%d" % i).digest()
    return (seed * (n // 32 + 1))[:n]
'

rpy "$prelude
for i in range(300):
    assert r.set(b'k%d' % i, val(i)) is True
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "300 values of 16 B to 256 KiB SET through the coordinator's endpoint" \
	|| { not_ok "SET 300 values"; cat "$CLUSTER_TMP/out"; }
pctl 1 --json ledger | python3 -c '
import json, sys
rows = [e for e in json.load(sys.stdin)["ledger"] if "uid" not in e and e["used"] > 0]
nodes = sorted({r["node"] for r in rows})
assert nodes == [1, 2, 3], rows
print(nodes)' >"$CLUSTER_TMP/nodes" 2>&1 \
	&& ok "the values are on lenders $(cat "$CLUSTER_TMP/nodes")" \
	|| { not_ok "values spread over the lenders"; cat "$CLUSTER_TMP/nodes"; }

rpy "$prelude
for i in range(300):
    assert r.get(b'k%d' % i) == val(i), i
got = r.mget([b'k%d' % i for i in range(300)] + [b'none'])
assert got[:300] == [val(i) for i in range(300)] and got[300] is None
assert r.strlen(b'k14') == len(val(14))
assert r.getrange(b'k13', 100, 131) == val(13)[100:132]
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "GET, MGET of 300 keys, STRLEN and GETRANGE read every value back bit-exact" \
	|| { not_ok "read back"; cat "$CLUSTER_TMP/out"; }

rpy "$prelude
for i in range(40):
    k = b'c%d' % i
    r.set(k, b'10')
    assert r.incr(k) == 11 and r.incrby(k, 5) == 16 and r.decr(k) == 15
    assert r.append(k, b'abc') == 5 and r.get(k) == b'15abc'
    assert r.setrange(k, 1, b'XY') == 5 and r.get(k) == b'1XYbc'
    assert r.getset(k, val(i, 5000)) == b'1XYbc' and r.get(k) == val(i, 5000)
    assert r.set(k, b'new', get=True) == val(i, 5000)
    assert r.getdel(k) == b'new' and r.exists(k) == 0
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "INCR, APPEND, SETRANGE, GETSET, SET GET and GETDEL on 40 keys spread over the lenders" \
	|| { not_ok "read-modify-write"; cat "$CLUSTER_TMP/out"; }

rpy "$prelude
p = r.pipeline(transaction=True)
for i in range(50):
    p.get(b'k%d' % i)
    p.set(b't%d' % i, val(i, 100))
    p.append(b't%d' % i, b'+')
    p.get(b't%d' % i)
res = p.execute()
for i in range(50):
    assert res[4 * i] == val(i), i
    assert res[4 * i + 3] == val(i, 100) + b'+', i
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "MULTI/EXEC reads values of other nodes and its own writes in order" \
	|| { not_ok "MULTI/EXEC"; cat "$CLUSTER_TMP/out"; }

rpy "$prelude
import time
for i in range(30):
    r.set(b'e%d' % i, val(i, 1000), px=400)
assert sum(r.exists(b'e%d' % i) for i in range(30)) == 30
time.sleep(1.2)
assert [r.get(b'e%d' % i) for i in range(30)] == [None] * 30
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "values with PX 400 on any lender are gone after 1.2 s" \
	|| { not_ok "expiry"; cat "$CLUSTER_TMP/out"; }

# Pipelines: 16 commands in flight on each of 20 connections.
cluster_exec 1 timeout 120 redis-benchmark -h "$(cluster_addr 1)" -p 6379 -t set,get -n 20000 \
	-c 20 -P 16 -r 5000 -d 1000 -q 2>&1 | tr '\r' '\n' | grep -E "^(SET|GET): [0-9.]+ requests per second" >"$CLUSTER_TMP/bench" \
	&& [ "$(wc -l <"$CLUSTER_TMP/bench")" = 2 ] \
	&& ok "redis-benchmark -P 16 -c 20 of 1000 bytes: $(sed 's/ requests per second.*/\/s/' "$CLUSTER_TMP/bench" | tr '\n' ' ')" \
	|| { not_ok "redis-benchmark"; cat "$CLUSTER_TMP/bench"; }
rpy "$prelude
n = sum(1 for _ in r.scan_iter(match='key:*', count=1000))
assert 4000 <= n <= 5000, n
assert all(len(v) == 1000 for v in r.mget(['key:%012d' % i for i in range(5000)]) if v is not None)
print('ok', n)" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "its $(awk '{print $2}' "$CLUSTER_TMP/out") keys read back with their 1000 bytes" \
	|| { not_ok "benchmark keys"; cat "$CLUSTER_TMP/out"; }

# A client that sends writes of values for other nodes and goes at once: what it reserved
# comes back (the reservations end once the puts in flight are over), poold's fds stay.
used() { pctl 1 --json kv stats redis0 | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["used"])'; }
fds() { cluster_exec 1 ls "/proc/${POOL_PIDS[1]}/fd" | wc -l; }
u0=$(used); f0=$(fds)
rpy "$prelude
import socket
host, port = os.environ['RESP_ADDR'].rsplit(':', 1)
for round in range(20):
    s = socket.create_connection((host, int(port)))
    v = val(round, 200000)
    s.sendall(b''.join(b'*3\r\n\$3\r\nSET\r\n\$%d\r\nflood%d\r\n\$%d\r\n%s\r\n' % (len(b'flood%d' % i), i, len(v), v) for i in range(40)))
    s.close()
import time; time.sleep(1)
r.delete(*[b'flood%d' % i for i in range(40)])
print('ok')" >"$CLUSTER_TMP/out" 2>&1
sleep 0.5
u1=$(used); f1=$(fds)
grep -q ok "$CLUSTER_TMP/out" && [ "$u0" = "$u1" ] && [ "$f1" -le "$((f0 + 2))" ] \
	&& ok "20 clients gone with 40 writes of 200 KB in flight: namespace bytes $u0 -> $u1, poold fds $f0 -> $f1" \
	|| { not_ok "writes abandoned: used $u0 -> $u1, fds $f0 -> $f1"; cat "$CLUSTER_TMP/out"; }

# Lender 3's fabric cut (its link to the coordinator stays: it is not declared dead): reads
# of its values fail with TRYAGAIN after a heartbeat window, writes placed there too, their
# pipelines' other replies intact; no write that got TRYAGAIN is stored.
cluster_exec 3 nft -f - <<'NFT'
table inet resptest {
	chain in {
		type filter hook input priority -10;
		tcp sport 7400 accept
		tcp dport 7400 accept
		meta l4proto tcp drop
	}
}
NFT
rpy "$prelude
import time
t = time.time()
p = r.pipeline(transaction=False)
for i in range(300):
    p.get(b'k%d' % i)
got = p.execute(raise_on_error=False)
kinds = {'value': 0, 'TRYAGAIN': 0}
for i, g in enumerate(got):
    if isinstance(g, Exception):
        assert str(g).startswith('TRYAGAIN'), g
        kinds['TRYAGAIN'] += 1
    else:
        assert g == val(i), i
        kinds['value'] += 1
assert kinds['TRYAGAIN'] > 0 and kinds['value'] > 0, kinds
p = r.pipeline(transaction=False)
for i in range(60):
    p.set(b'w%d' % i, val(i, 3000))
sets = p.execute(raise_on_error=False)
failed = [i for i, g in enumerate(sets) if isinstance(g, Exception)]
assert all(str(sets[i]).startswith('TRYAGAIN') for i in failed), sets
assert 0 < len(failed) < 60 and all(sets[i] is True for i in range(60) if i not in failed), sets
print('ok', kinds['value'], kinds['TRYAGAIN'], len(failed), round(time.time() - t, 1))
open('/tmp/resp-failed-$$', 'w').write(' '.join(map(str, failed)))" >"$CLUSTER_TMP/out" 2>&1
cluster_exec 3 nft delete table inet resptest
read -r _ nval ntry nset secs <"$CLUSTER_TMP/out"
grep -q "^ok" "$CLUSTER_TMP/out" \
	&& ok "lender 3's fabric cut: a pipeline of 300 GETs gets $nval values and $ntry TRYAGAIN, 60 SETs $nset TRYAGAIN, in $secs s" \
	|| { not_ok "GETs and SETs with lender 3's fabric cut"; cat "$CLUSTER_TMP/out"; }
# (Its fabric probes failing too, the coordinator may have declared it dead meanwhile: then
# the values it held are gone, those told OK among them.)
dead=$(grep -c "value(s) on node 3 dropped" "$(cluster_dir 1)/poold.log")
rpy "$prelude
import time
dead = $dead > 0
failed = set(map(int, open('/tmp/resp-failed-$$').read().split()))
for _ in range(50):
    try:
        got = r.mget([b'w%d' % i for i in range(60)])
        break
    except redis.exceptions.ResponseError:
        time.sleep(0.2)
assert all(got[i] is None for i in failed), (sorted(failed), [i for i in failed if got[i] is not None])
assert all(g == val(i, 3000) for i, g in enumerate(got) if g is not None)
missing = sum(g is None for i, g in enumerate(got) if i not in failed)
assert missing == 0 or dead, missing
print('ok', 'dead' if dead else 'up', 60 - len(failed) - missing)" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "its fabric back (node 3 $(awk '{print $2}' "$CLUSTER_TMP/out")): $(awk '{print $3}' "$CLUSTER_TMP/out") SETs told OK read back (all, unless node 3 died), none told TRYAGAIN is stored" \
	|| { not_ok "after the fabric came back"; cat "$CLUSTER_TMP/out"; }
rm -f /tmp/resp-failed-$$

# A lender that stops answering: commands on its values fail with TRYAGAIN, none hangs.
cluster_kill "${POOL_PIDS[3]}" STOP
rpy "$prelude
import time
t = time.time(); seen = set()
for i in range(300):
    try:
        v = r.get(b'k%d' % i)
        seen.add('value' if v == val(i) else 'nil' if v is None else 'WRONG')
    except redis.exceptions.ResponseError as e:
        assert str(e).startswith('TRYAGAIN'), e
        seen.add('TRYAGAIN')
print('ok', sorted(seen), round(time.time() - t, 1))" >"$CLUSTER_TMP/out" 2>&1
grep -q "ok" "$CLUSTER_TMP/out" && ! grep -q WRONG "$CLUSTER_TMP/out" \
	&& grep -q value "$CLUSTER_TMP/out" && grep -Eq "TRYAGAIN|nil" "$CLUSTER_TMP/out" \
	&& ok "with lender 3 stopped, GETs give values, TRYAGAIN or nil: $(cut -d' ' -f2- "$CLUSTER_TMP/out") s" \
	|| { not_ok "GETs with a stopped lender"; cat "$CLUSTER_TMP/out"; }
pool_wait_state 1 h3 dead 20 || pool_wait_state 1 h3 down 1
cluster_kill "${POOL_PIDS[3]}" KILL
sleep 1
rpy "$prelude
got = r.mget([b'k%d' % i for i in range(300)])
assert all(v is None or v == val(i) for i, v in enumerate(got))
lost = sum(v is None for v in got)
assert 0 < lost < 300, lost
r.set(b'after', b'x' * 70000)
assert r.get(b'after') == b'x' * 70000
print('ok', lost)" >"$CLUSTER_TMP/out" 2>&1 && grep -q ok "$CLUSTER_TMP/out" \
	&& ok "lender 3 killed: its $(awk '{print $2}' "$CLUSTER_TMP/out") values are misses, the rest read back, SET works" \
	|| { not_ok "after lender death"; cat "$CLUSTER_TMP/out"; }
kill -0 "${POOL_PIDS[1]}" 2>/dev/null && pctl 1 status >/dev/null \
	&& ok "the coordinator runs on" || not_ok "coordinator died"

# SWAPDB outlives the coordinator: the namespaces' definitions say which
# database each serves, and a coordinator that comes back takes them back
# from the nodes' records with the values they lend.
dbs="
d5 = redis.Redis(host=host, port=int(port), db=5, socket_timeout=30)
d6 = redis.Redis(host=host, port=int(port), db=6, socket_timeout=30)
keys = [b'sw%d' % i for i in range(200)]"
rpy "$prelude$dbs
for k in keys:
    d5.set(k, b'five')
    d6.set(k, b'six')
assert d5.swapdb(5, 6) is True
assert set(d5.mget(keys)) == {b'six'} and set(d6.mget(keys)) == {b'five'}
print('ok')" >"$CLUSTER_TMP/out" 2>&1 && ok "SWAPDB 5 6: each database reads the other's 200 values" ||
	{ not_ok "SWAPDB"; cat "$CLUSTER_TMP/out"; }
pool_node_kill 1
pool_node_start 1 -o "resp.listen=$resp" -o resp.capacity=512M || exit 1
pool_wait_state 1 h2 up 20 || not_ok "h2 registers with the restarted coordinator"
cluster_wait_tcp 1 "$(cluster_addr 1)" 6379 || not_ok "RESP endpoint up again"
rpy "$prelude$dbs
import time
t = time.time()
while time.time() - t < 20 and (d5.dbsize() == 0 or d6.dbsize() == 0):
    time.sleep(0.2)
five, six = d5.mget(keys), d6.mget(keys)
assert set(five) <= {b'six', None} and set(six) <= {b'five', None}, (set(five), set(six))
assert b'six' in five and b'five' in six
print('ok', sum(v is not None for v in five), sum(v is not None for v in six))" >"$CLUSTER_TMP/out" 2>&1 &&
	ok "the coordinator restarted: database 5 still reads db 6's values ($(awk '{print $2}' "$CLUSTER_TMP/out") kept on h2), 6 db 5's ($(awk '{print $3}' "$CLUSTER_TMP/out"))" ||
	{ not_ok "SWAPDB after a coordinator restart"; cat "$CLUSTER_TMP/out"; }
finish

#!/usr/bin/python3
"""What redis-py (Debian's python3-redis) does as a cache client, printed.

    resp-py.py PORT

Run against poold and against redis-server, the two outputs must be the
same (tests/integration/resp-compat.sh): the client's own parsing of every
reply, its pipelines and transactions, scan_iter and expiry.
"""
import sys
import time

import redis

r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), db=0, socket_timeout=10)
out = []
def p(*v):
    out.append(v if len(v) > 1 else v[0])
r.flushall()
p(r.ping())
p(r.set("greeting", "hello"))
p(r.get("greeting"))
p(r.set("greeting", "x", nx=True))
p(r.set("new", "1", xx=True))
p(r.set("t", "v", ex=100))
p(r.ttl("t"))
p(r.set("t", "v", px=5000, keepttl=False))
p(0 < r.pttl("t") <= 5000)
p(r.set("t", "w", keepttl=True, get=True))
p(r.setex("sx", 50, "v"), r.ttl("sx"))
p(r.psetex("px", 50000, "v"), r.ttl("px"))
p(r.setnx("greeting", "no"), r.setnx("fresh", "yes"))
p(r.mset({"a": "1", "b": "2", "c": ""}))
p(r.mget(["a", "b", "c", "missing"]))
p(r.msetnx({"a": "9", "zz": "9"}), r.msetnx({"y1": "1", "y2": "2"}))
p(r.getdel("a"), r.getdel("a"))
p(r.getex("b", ex=100), r.ttl("b"), r.getex("b", persist=True), r.ttl("b"))
p(r.getset("b", "3"), r.get("b"))
p(r.append("s", "abc"), r.append("s", "def"), r.get("s"), r.strlen("s"))
p(r.getrange("s", 1, 3), r.getrange("s", -2, -1), r.substr("s", 0, 1))
p(r.setrange("s", 10, "Z"), r.get("s"))
p(r.incr("n"), r.incrby("n", 41), r.decr("n"), r.decrby("n", 10), r.get("n"))
try:
    r.incr("s")
except redis.ResponseError as e:
    p("ResponseError: %s" % e)
p(r.exists("n", "s", "missing"), r.type("n"), r.type("missing"))
p(r.expire("n", 100), r.ttl("n"), r.persist("n"), r.ttl("n"), r.ttl("missing"))
p(r.expireat("n", int(time.time()) + 100), 98 <= r.ttl("n") <= 100)
p(r.pexpire("n", 100000), r.execute_command("EXPIRE", "n", 10, "NX"))
p(r.delete("n", "missing"), r.unlink("s", "missing"))
p(sorted(r.keys("y*")), sorted(r.scan_iter(match="y*", count=2)))
p(r.dbsize())
with r.pipeline(transaction=True) as pipe:
    pipe.set("tx", "1").incr("tx").get("tx")
    p(pipe.execute())
with r.pipeline(transaction=False) as pipe:
    for i in range(100):
        pipe.set("p%d" % i, i)
    pipe.mget(["p0", "p50", "p99"])
    p(pipe.execute()[-1])
p(r.client_setname("cachey"), r.client_getname())
p(r.echo("ping?"), r.exists(""), r.set("", "empty key"), r.get(""))
p(r.set("e", ""), r.get("e"), r.strlen("e"))
try:
    r.execute_command("NOSUCH", "x")
except redis.ResponseError as e:
    p("ResponseError: %s" % e)
r.execute_command("SELECT", 2)
p(r.dbsize())
r.execute_command("SELECT", 0)
p(r.flushdb(), r.dbsize())
p(r.set("gone", "v", px=200))
time.sleep(0.5)
p(r.get("gone"), r.exists("gone"))
for line in out:
    print(repr(line))

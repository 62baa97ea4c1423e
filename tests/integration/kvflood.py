"""Squatters of the KV events sockets (run by kvevents-flood.sh).

usage: kvflood.py squat ENDPOINT SECONDS
       kvflood.py bind HOST PORT
       kvflood.py puts NAMESPACE SECONDS

squat: a SUB socket bound at ENDPOINT first, as a router would bind one for
publishers to connect to; prints how many messages came in SECONDS.
bind: whether this uid can listen on HOST:PORT (SO_REUSEADDR and SO_REUSEPORT on).
puts: new keys put in NAMESPACE for SECONDS, so that poold publishes all along.
"""
import errno
import socket
import sys
import time

import zmq


def case_squat(endpoint, seconds):
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.bind(endpoint)
    print("bound", flush=True)
    got = 0
    deadline = time.time() + float(seconds)
    while time.time() < deadline:
        if sub.poll(100):
            sub.recv_multipart()
            got += 1
    print("squatter got %d messages" % got)
    ctx.destroy(linger=0)


def case_bind(host, port):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        s.bind((host, int(port)))
        s.listen(4)
    except OSError as e:
        print("bind %s:%s: %s" % (host, port, e.strerror))
        sys.exit(0 if e.errno == errno.EADDRINUSE else 2)
    print("bound %s:%s" % (host, port))
    sys.exit(1)


def case_puts(ns, seconds):
    import pool
    kv = pool.Pool().kv(ns)
    i, t0 = 0, time.time()
    while time.time() < t0 + float(seconds):
        kv.put(b"spam-%d" % i, b"x")
        i += 1
        time.sleep(0.002)  # a batch each, a few hundred a second: memory of their own stays small
    print("puts: %d keys in %s s" % (i, seconds))


CASE = sys.argv[1]
if CASE == "squat":
    case_squat(*sys.argv[2:4])
elif CASE == "bind":
    case_bind(*sys.argv[2:4])
elif CASE == "puts":
    case_puts(*sys.argv[2:4])

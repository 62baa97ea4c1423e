"""Floods and squatters of the KV events sockets (run by kvevents-flood.sh).

usage: kvflood.py squat ENDPOINT SECONDS
       kvflood.py bind HOST PORT
       kvflood.py flood SUBS HOST PORT N [HOST PORT N]...
       kvflood.py subscribe PUB NAMESPACE
       kvflood.py subspam PUB N
       kvflood.py puts NAMESPACE SECONDS
       kvflood.py hold TYPE N ENDPOINT

squat: a SUB socket bound at ENDPOINT first, as a router would bind one for
publishers to connect to; prints how many messages came in SECONDS.
bind: whether this uid can listen on HOST:PORT (SO_REUSEADDR and SO_REUSEPORT on).
flood: SUBS ZMQ SUB sockets to the first HOST PORT, then N raw TCP
connections to each HOST PORT, none of them ever read; waits until the raw
ones are closed by the peer (60 s at most: over the bounds they are shut at
once, within them when ZMQ's handshake times out), prints what it saw, then
holds what is left open until it is killed (or its parent dies).
subscribe: a real subscriber (vLLM's way: SUB, topic kv-events) gets the
event of a key put in NAMESPACE.
subspam: a SUB socket that subscribes to N random 200-byte topics (each of
which libzmq files in the publisher's trie), resent at each reconnect.
puts: new keys put in NAMESPACE for SECONDS, so that poold publishes (and
reads subscriptions) all along.
hold: N ZMQ sockets of TYPE (SUB, DEALER) connected to ENDPOINT (ZMQ's
"tcp://source:0;host:port" names the source address), held until killed.
"""
import ctypes
import errno
import os
import signal
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


def closed(s):
    """Whether the peer closed s: read what it sent (ZMQ's greeting) up to the end."""
    try:
        while True:
            if not s.recv(4096):
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def case_flood(subs_n, args):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the test
    targets = [(args[i], int(args[i + 1]), int(args[i + 2])) for i in range(0, len(args), 3)]
    subs_n = int(subs_n)
    raw, failed = [], 0
    t0 = time.time()
    ctx = zmq.Context()
    subs = []
    host = targets[0][0]
    for _ in range(subs_n):
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, 1)
        sub.connect("tcp://%s:%d" % ("[%s]" % host if ":" in host else host, targets[0][1]))
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        subs.append(sub)
    time.sleep(1)  # the SUB sockets connect first: those within the bounds hold their slots
    for host, port, n in targets:
        for _ in range(n):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            s.settimeout(5)
            try:
                s.connect((host, port))
            except OSError:
                failed += 1
                s.close()
                continue
            s.setblocking(False)
            raw.append(s)
    took = time.time() - t0
    deadline = time.time() + 60
    while True:
        shut = sum(1 for s in raw if closed(s))
        if shut == len(raw) or time.time() > deadline:
            break
        time.sleep(0.2)
    print("flood: %d raw connections made in %.1f s (%d failed), %d SUB sockets; "
          "%d raw closed by poold, %d open, %.1f s after the first" %
          (len(raw), took, failed, subs_n, shut, len(raw) - shut, time.time() - t0), flush=True)
    time.sleep(3600)


def case_subscribe(pub, ns):
    import pool
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.connect(pub)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv-events")
    kv = pool.Pool().kv(ns)
    t0, i = time.time(), 0
    while time.time() < t0 + 20:
        kv.put(b"flood-sub-%d" % i, b"x")  # a new key each time: an overwrite is no news
        i += 1
        if sub.poll(200):
            topic, seq, payload = sub.recv_multipart()
            assert topic == b"kv-events", topic
            print("subscriber: seq %d, %d bytes, %.2f s after it connected" %
                  (int.from_bytes(seq, "big"), len(payload), time.time() - t0))
            ctx.destroy(linger=0)
            return
    raise AssertionError("no event came in 20 s")


def case_subspam(pub, n):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SNDHWM, 0)
    sub.connect(pub)
    for _ in range(int(n)):
        sub.setsockopt(zmq.SUBSCRIBE, os.urandom(200))
    print("subspam: %s subscriptions sent" % n, flush=True)
    time.sleep(3600)


def case_puts(ns, seconds):
    import pool
    kv = pool.Pool().kv(ns)
    i, t0 = 0, time.time()
    while time.time() < t0 + float(seconds):
        kv.put(b"spam-%d" % i, b"x")
        i += 1
        time.sleep(0.002)  # a batch each, a few hundred a second: memory of their own stays small
    print("puts: %d keys in %s s" % (i, seconds))


def case_hold(kind, n, endpoint):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    ctx = zmq.Context()
    socks = []
    for _ in range(int(n)):
        s = ctx.socket(getattr(zmq, kind))
        if kind == "SUB":
            s.setsockopt(zmq.SUBSCRIBE, b"")
        s.connect(endpoint)
        socks.append(s)
    print("hold: %s %s sockets on %s" % (n, kind, endpoint), flush=True)
    time.sleep(3600)


CASE = sys.argv[1]
if CASE == "squat":
    case_squat(*sys.argv[2:4])
elif CASE == "bind":
    case_bind(*sys.argv[2:4])
elif CASE == "flood":
    case_flood(sys.argv[2], sys.argv[3:])
elif CASE == "subscribe":
    case_subscribe(*sys.argv[2:4])
elif CASE == "subspam":
    case_subspam(*sys.argv[2:4])
elif CASE == "puts":
    case_puts(*sys.argv[2:4])
elif CASE == "hold":
    case_hold(*sys.argv[2:5])

#!/usr/bin/env python3
"""A hostile client of a poold's fabric link port, speaking the link's wire
(fabric/link_int.h) by hand.

    fabric-link.py HOST PORT ATTACK [SECRET INCARNATION]

ATTACK is one of:
  listen    connect, print what the port says first (a challenge, no more)
  garbage   send 104 bytes that are no hello: closed, nothing more said
  wrongkey  a well formed hello proven with another key: closed unserved
  silent    open 200 connections that say nothing; print how many were
            closed at once (over the limits) and how many after the
            handshake deadline
  member    with SECRET and the target's INCARNATION (which poolctl nodes
            shows any client): prove the key as node 9, which is no member,
            and read 64 bytes at arena 0, offset 0: the handshake passes, no
            byte of memory comes back, the link is closed
  impostor  the same, claiming to be node 1 (the target itself) of another
            incarnation

It prints one line saying what it saw and exits 0 when the port gave away
nothing but its handshake (every attack refused), 1 otherwise.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x314B4C50, 1
CHALLENGE, HELLO, WELCOME = 1, 2, 3


def recv_exact(s, n, timeout=3.0):
    s.settimeout(timeout)
    got = b""
    while len(got) < n:
        try:
            part = s.recv(n - len(got))
        except (socket.timeout, ConnectionResetError):
            break
        if not part:
            break
        got += part
    return got


def recv_rest(s, timeout):
    """Everything the peer says until it closes or timeout passes: (bytes, closed)."""
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            part = s.recv(65536)
            if not part:
                return got, True
            got += part
    except socket.timeout:
        return got, False
    except ConnectionResetError:
        return got, True


def challenge(s):
    c = recv_exact(s, 40)
    if len(c) != 40:
        return None
    magic, version, kind = struct.unpack("<IHH", c[:8])
    if (magic, version, kind) != (MAGIC, VERSION, CHALLENGE):
        return None
    return c[8:]


def hello(key, nonce_t, from_node, to_node, from_inc, to_inc, epoch=0):
    signed = struct.pack("<IHHIIQQQ", MAGIC, VERSION, HELLO, from_node, to_node, from_inc, epoch,
                         to_inc) + os.urandom(32)
    proof = hmac.new(key, b"pool-link-requester" + nonce_t + signed, hashlib.sha256).digest()
    return signed + proof


def link_key(secret):
    return hmac.new(secret.encode(), b"pool-fabric-link-key-v1", hashlib.sha256).digest()


def read_request(arena, ext, off, length, rid=1):
    return struct.pack("<B3xIQQQQQQ", 1, arena, rid, ext, off, length, 0, 0)


def main():
    host, port, attack = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    secret = sys.argv[4] if len(sys.argv) > 4 else None
    target_inc = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    if attack == "silent":
        socks = [socket.create_connection((host, port)) for _ in range(200)]
        time.sleep(0.3)
        closed_at_once = sum(1 for s in socks if recv_rest(s, 0.01)[1])
        time.sleep(2.5)
        closed_later = sum(1 for s in socks if recv_rest(s, 0.01)[1]) - closed_at_once
        for s in socks:
            s.close()
        print("silent: %d closed at once, %d after the deadline, %d still open"
              % (closed_at_once, closed_later, 200 - closed_at_once - closed_later))
        return 0 if closed_at_once + closed_later == 200 else 1
    s = socket.create_connection((host, port))
    nonce_t = challenge(s)
    if nonce_t is None:
        print("%s: no challenge" % attack)
        return 1
    if attack == "listen":
        rest, closed = recv_rest(s, 0.5)
        print("listen: a 32-byte nonce, then %d bytes more" % len(rest))
        return 0 if not rest else 1
    if attack == "garbage":
        s.sendall(b"A" * 104)
        rest, closed = recv_rest(s, 3.0)
    elif attack == "wrongkey":
        s.sendall(hello(link_key("not-the-secret"), nonce_t, 9, 1, 1, 0))
        s.sendall(read_request(0, 0, 0, 64))
        rest, closed = recv_rest(s, 3.0)
    elif attack in ("member", "impostor"):
        key = link_key(secret)
        who = 9 if attack == "member" else 1
        s.sendall(hello(key, nonce_t, who, 1, 12345, target_inc))
        welcome = recv_exact(s, 40)
        if len(welcome) != 40:
            print("%s: no welcome" % attack)
            return 1
        s.sendall(read_request(0, 0, 0, 64))
        rest, closed = recv_rest(s, 5.0)
    else:
        print("unknown attack %s" % attack)
        return 2
    print("%s: %d bytes after the %s, %s" % (attack, len(rest),
                                             "welcome" if attack in ("member", "impostor")
                                             else "challenge", "closed" if closed else "still open"))
    return 0 if not rest and closed else 1


if __name__ == "__main__":
    sys.exit(main())

"""tests/integration/wire.py - raw control-protocol frames for the shell tests.

Builds frames by hand (header per proto/wire.h, protobuf fields encoded here)
so tests can send what no well-behaved client would.
"""
import os
import re
import select
import socket
import struct
import sys
import time

VERSION = 3
HELLO, HELLO_REPLY, ERROR, OK, STATUS, STATUS_REPLY = 1, 2, 3, 4, 5, 6
REGISTER = 10


def _proto_enums():
    """{enum: {short name: number}} of proto/pool.proto: KvOp's KV_OP_LOOKUP is "lookup"."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto",
                        "pool.proto")
    with open(path) as f:
        text = f.read()
    out = {}
    for name, body in re.findall(r"enum (\w+) \{([^}]*)\}", text):
        prefix = re.sub(r"(?<!^)([A-Z])", r"_\1", name).upper() + "_"
        out[name] = {v[len(prefix):].lower(): int(n)
                     for v, n in re.findall(r"(\w+) = (\d+);", body)}
    return out


ENUMS = _proto_enums()


def enum(name, value):
    """The number of an enum value, by the names pool.proto gives: enum("KvOp", "lookup")."""
    return ENUMS[name][value]


def enum_name(name, number):
    """The short name of an enum's number, as enum() takes it."""
    return next(k for k, v in ENUMS[name].items() if v == number)


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, data):
    """A length-delimited protobuf field."""
    return varint(num << 3 | 2) + varint(len(data)) + data


def hello_payload(version=VERSION):
    return b"\x08" + varint(version)  # field 1, varint


def frame(mtype, payload=b"", req_id=1, version=VERSION, length=None):
    if length is None:
        length = len(payload)
    return struct.pack(">IHHQ", length, mtype, version, req_id) + payload


def vfield(num, n):
    """A varint protobuf field."""
    return varint(num << 3) + varint(n)


def parse(payload):
    """The fields of a protobuf message: {number: [value, ...]} (varints and bytes)."""
    out, i = {}, 0
    while i < len(payload):
        key, i = read_varint(payload, i)
        if key & 7 == 0:
            v, i = read_varint(payload, i)
        elif key & 7 == 2:
            n, i = read_varint(payload, i)
            v, i = payload[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % (key & 7))
        out.setdefault(key >> 3, []).append(v)
    return out


def read_varint(b, i):
    n = shift = 0
    while True:
        n |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i


def node_info(name):
    """A NodeInfo with every required field, for a node that lends nothing."""
    return (vfield(1, 0) + field(2, name.encode()) + field(3, b"") + field(4, b"x") +
            field(5, b"0") + field(6, b"node") + vfield(8, 0) + vfield(9, 0) +
            vfield(10, 0) + vfield(11, 0) + field(12, b"") + vfield(13, 1))


def peer_join(s, name, secret=None, proof=None):
    """Hello with a challenge, then Register as a node (the secret in clear, or a proof)."""
    s.sendall(frame(HELLO, hello_payload() + field(3, os.urandom(32))))
    r = read_frame(s)
    assert r and r[0] == HELLO_REPLY, r
    reg = field(1, node_info(name))
    if secret is not None:
        reg += field(2, secret.encode())
    if proof is not None:
        reg += field(5, proof)
    s.sendall(frame(REGISTER, reg, req_id=2))
    return read_frame(s)


def fake_coordinator(port, secret, seconds):
    """Accept one node, answer its Hello with a forged proof; what did it send?"""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(seconds)
    s, _ = ls.accept()
    s.settimeout(seconds)
    got, types = b"", []
    r = read_frame(s)
    assert r and r[0] == HELLO, r
    got += r[2]
    nonce = parse(r[2]).get(3, [b""])[0]
    assert len(nonce) == 32, "the node's hello has no challenge"
    s.sendall(frame(HELLO_REPLY, vfield(1, VERSION) + field(2, b"fake") + vfield(3, 1) +
                    field(5, os.urandom(32)) + field(6, os.urandom(32)), req_id=r[1]))
    try:
        while True:
            r = read_frame(s)
            if r is None:
                break
            types.append(r[0])
            got += r[2]
    except (socket.timeout, ConnectionResetError):
        pass  # the node drops a link it cannot trust
    assert secret.encode() not in got, "the node sent its secret"
    assert REGISTER not in types, "the node registered with a coordinator that proved nothing"
    print("the node sent no secret and did not register (frames after hello: %s)" % types)


def connect(path):
    """A unix socket path, or tcp:HOST:PORT for a coordinator's peer listener."""
    if path.startswith("tcp:"):
        _, host, port = path.split(":")
        s = socket.create_connection((host, int(port)), timeout=5)
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(path)
    return s


def read_frame(s):
    """Return (type, req_id, payload), or None when the peer closed."""
    hdr = b""
    while len(hdr) < 16:
        chunk = s.recv(16 - len(hdr))
        if not chunk:
            return None
        hdr += chunk
    length, mtype, _version, req_id = struct.unpack(">IHHQ", hdr)
    payload = b""
    while len(payload) < length:
        chunk = s.recv(length - len(payload))
        if not chunk:
            return None
        payload += chunk
    return mtype, req_id, payload


def error_text(payload):
    """The message string (field 2) of an Error payload."""
    return parse(payload).get(2, [b""])[0].decode(errors="replace")


def closed(s):
    """True when the peer has closed the connection."""
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return False


def arena_fd_given(path):
    """Whether poold at socket path hands this process arena 0's memfd (ArenaFd)."""
    s = connect(path)
    s.sendall(frame(HELLO, hello_payload()))
    read_frame(s)
    s.sendall(frame(28, b"\x08\x00", req_id=2))
    t, _, p = read_frame(s)
    if t == ERROR:
        print(error_text(p))
    return t != ERROR


def peer_flood(path, n, seconds):
    """Open n links to a peer listener that never finish a frame: each sends
    one byte a second. Report how many the listener took and closed."""
    _, host, port = path.split(":")
    socks, refused = [], 0
    for _ in range(n):
        try:
            socks.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError:
            refused += 1
    open_at = {}
    hdr = frame(HELLO, hello_payload())[:15]  # a header, never its last byte
    deadline = time.time() + seconds
    t = 0
    while time.time() < deadline:
        for s in socks:
            if s.fileno() < 0:
                continue
            try:
                s.send(hdr[t % 15:t % 15 + 1])
                r, _, _ = select.select([s], [], [], 0)
                if r and not s.recv(1):
                    raise OSError("closed")
            except OSError:
                open_at[s] = time.time()
                s.close()
        t += 1
        time.sleep(1)
    alive = sum(s.fileno() >= 0 for s in socks)
    print("%d links: %d refused at connect, %d closed by the listener, %d still open after %ds"
          % (n, refused, len(open_at), alive, seconds))


def peer_siege(path, seconds, sources, per_source):
    """Keep per_source links from each source address open to a peer
    listener for seconds, none of which registers: of each source's links,
    one in three says nothing, one sends half a hello's header, one a whole
    hello (answered, then silent). A link the listener closes is opened
    again 20 ms later, so the listener never rests. Prints what it did."""
    import selectors
    _, host, port = path.split(":")
    target = (host, int(port))
    hello = frame(HELLO, hello_payload() + field(3, os.urandom(32)))
    sel = selectors.DefaultSelector()
    slots = [(src, k) for src in sources for k in range(per_source)]
    links, next_at = {}, {slot: 0.0 for slot in slots}
    opened = connected = turned = silent = 0
    longest, reasons = 0.0, set()

    def drop(slot, now):
        sel.unregister(links[slot]["s"])
        links.pop(slot)["s"].close()
        next_at[slot] = now + 0.02

    def reason(got):
        """The Error frame among what the listener sent, or None."""
        while len(got) >= 16:
            length, mtype, _, _ = struct.unpack(">IHHQ", got[:16])
            if mtype == ERROR:
                return error_text(got[16:16 + length])
            got = got[16 + length:]
        return None

    end = time.time() + seconds
    while time.time() < end:
        now = time.time()
        for slot in slots:
            if slot in links or now < next_at[slot]:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.bind((slot[0], 0))
            try:
                s.connect(target)
            except BlockingIOError:
                pass
            links[slot] = {"s": s, "t": now, "up": False, "got": b""}
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, slot)
            opened += 1
        for key, ev in sel.select(0.01):
            slot, now = key.data, time.time()
            link = links[slot]
            s = link["s"]
            if ev & selectors.EVENT_WRITE and not link["up"]:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    drop(slot, now)
                    continue
                link["up"] = True
                connected += 1
                try:
                    s.send([b"", hello[:15], hello][slot[1] % 3])
                except OSError:
                    pass
                sel.modify(s, selectors.EVENT_READ, slot)
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                link["got"] += data
                continue
            why = reason(link["got"])
            if why is not None:
                turned += 1
                reasons.add(why)
            else:
                silent += 1
                longest = max(longest, now - link["t"])
            drop(slot, now)
    print("siege of %ds from %d addresses: %d links opened, %d connected, %d turned away "
          "with a reason, %d closed without one (the longest lived %.1fs), %d open at the end"
          % (seconds, len(sources), opened, connected, turned, silent, longest, len(links)))
    for why in sorted(reasons):
        print("reason: " + why)


def main():
    path, case = sys.argv[1], sys.argv[2]
    if case == "peer-flood":
        peer_flood(path, int(sys.argv[3]), int(sys.argv[4]))
        return
    if case == "peer-siege":
        peer_siege(path, int(sys.argv[3]), sys.argv[4].split(","), int(sys.argv[5]))
        return
    if case == "fake-coordinator":
        fake_coordinator(int(path), sys.argv[3], float(sys.argv[4]))
        return
    if case == "arena-fd":
        sys.exit(0 if arena_fd_given(path) else 4)  # 4: refused (a crash is 1)
    s = connect(path)
    if case == "garbage":
        s.sendall(bytes(range(256)) * 4)
        r = read_frame(s)
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "big-hello":
        # A frame header of 1 MiB on a link that has not said who it is.
        s.sendall(frame(HELLO, b"", length=1 << 20))
        r = read_frame(s)
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "truncated":
        s.sendall(frame(HELLO, hello_payload())[:10])
        s.shutdown(socket.SHUT_WR)
        assert read_frame(s) is None
        print("closed without a reply")
    elif case == "truncated-payload":
        s.sendall(frame(HELLO, hello_payload(), length=100))
        s.shutdown(socket.SHUT_WR)
        assert read_frame(s) is None
        print("closed without a reply")
    elif case == "oversize":
        s.sendall(frame(HELLO, b"", length=0x7FFFFFFF, req_id=77))
        r = read_frame(s)
        assert r and r[0] == ERROR and r[1] == 77, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "version":
        s.sendall(frame(HELLO, hello_payload(), version=VERSION + 5, req_id=3))
        r = read_frame(s)
        assert r and r[0] == ERROR and r[1] == 3, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "hello-version":
        s.sendall(frame(HELLO, hello_payload(VERSION + 1)))
        r = read_frame(s)
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "peer-no-challenge":
        s.sendall(frame(HELLO, hello_payload()))
        r = read_frame(s)
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "peer-clear-secret":
        r = peer_join(s, "rogue", secret=sys.argv[3])
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "peer-forged-proof":
        r = peer_join(s, "rogue", proof=os.urandom(32))
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "no-hello":
        s.sendall(frame(STATUS))
        r = read_frame(s)
        assert r and r[0] == ERROR, r
        print("reply:", error_text(r[2]))
        assert closed(s)
    elif case == "bad-payload":
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        s.sendall(frame(STATUS, b"\xff\xff\xff", req_id=2))
        r = read_frame(s)
        assert r and r[0] == ERROR and r[1] == 2, r
        print("reply:", error_text(r[2]))
        s.sendall(frame(STATUS, req_id=3))
        r = read_frame(s)
        assert r and r[0] == STATUS_REPLY and r[1] == 3, r
        print("connection still serves")
    elif case == "unknown-type":
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        s.sendall(frame(999, b"", req_id=4))
        r = read_frame(s)
        assert r and r[0] == ERROR and r[1] == 4, r
        print("reply:", error_text(r[2]))
    elif case == "pipeline":
        s.sendall(frame(HELLO, hello_payload()) +
                  b"".join(frame(STATUS, req_id=i) for i in range(10, 60)))
        assert read_frame(s)[0] == HELLO_REPLY
        ids = [read_frame(s)[1] for _ in range(50)]
        assert ids == list(range(10, 60)), ids
        print("50 pipelined requests answered in order")
    elif case == "kv-reserve-die":
        # Reserve room for a value, then vanish without writing or committing.
        ns, key, size = sys.argv[3], sys.argv[4].encode(), int(sys.argv[5])
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        req = vfield(1, enum("KvOp", "reserve")) + field(2, ns.encode()) + field(3, key) + \
            varint(4 << 3) + varint(size)
        s.sendall(frame(42, req, req_id=2))
        r = read_frame(s)
        assert r and r[0] == 43, r
        print("reserved, now dying", flush=True)
        os._exit(0)
    elif case == "kv-op":
        # One KV operation on one key, sent raw (no namespace open first): print the reply.
        op, ns, key = enum("KvOp", sys.argv[3]), sys.argv[4].encode(), sys.argv[5].encode()
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        s.sendall(frame(42, vfield(1, op) + field(2, ns) + field(3, key), req_id=2))
        r = read_frame(s)
        assert r, "no reply"
        print(error_text(r[2]) if r[0] == ERROR else "reply %d" % r[0])
    elif case == "kv-retain":
        # A commit pinning its key as argv[4] argv[5] say (retain, retain_ms), or with "-"
        # a lookup asking a pin; raw: print the reply.
        ns = sys.argv[3].encode()
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        if sys.argv[4] == "-":
            msg = vfield(1, enum("KvOp", "lookup")) + field(2, ns) + field(3, b"k")
            msg += vfield(11, 1)
        else:
            msg = vfield(1, enum("KvOp", "commit")) + field(2, ns) + field(3, b"k")
            msg += vfield(5, 1) + vfield(11, int(sys.argv[4])) + vfield(12, int(sys.argv[5]))
        s.sendall(frame(42, msg, req_id=2))
        r = read_frame(s)
        assert r, "no reply"
        print(error_text(r[2]) if r[0] == ERROR else "reply %d" % r[0])
    elif case == "kv-inline":
        # Gets and puts in one request (poold copies through the caller's
        # window), raw: what it refuses, and one of each done right.
        import mmap
        ns = sys.argv[3].encode()

        def kv(s, op, keys, sizes=(), offs=(), window=None, req_id=3):
            msg = vfield(1, enum("KvOp", op)) + field(2, ns)
            msg += b"".join(field(3, k) for k in keys)
            msg += b"".join(vfield(4, n) for n in sizes)
            msg += b"".join(vfield(9, o) for o in offs)
            if window is not None:
                msg += vfield(8, window)
            s.sendall(frame(42, msg, req_id=req_id))
            r = read_frame(s)
            assert r, "no reply"
            return r

        def refused(r, text):
            assert r[0] == ERROR and text in error_text(r[2]), (r[0], error_text(r[2]))
            print("refused: " + error_text(r[2]))

        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        refused(kv(s, "get", [b"k"], [16], [0]), "names its window")
        refused(kv(s, "get", [b"k"], [16], [0], window=7), "not in window 7")
        s.sendall(frame(55, vfield(1, 1 << 20), req_id=4))  # XferWindow of 1 MiB
        data, fds, _, _ = socket.recv_fds(s, 16, 1)
        length, mtype, _v, _id = struct.unpack(">IHHQ", data)
        payload = b""
        while len(payload) < length:
            payload += s.recv(length - len(payload))
        assert mtype == 56 and len(fds) == 1, (mtype, fds)
        win, size = parse(payload)[1][0], parse(payload)[2][0]
        m = mmap.mmap(fds[0], size)
        refused(kv(s, "get", [b"k"], [16], [size - 8], window=win), "not in window")
        refused(kv(s, "put", [b"a", b"b"], [1 << 20, 1], [0, 0], window=win), "at most")
        refused(kv(s, "put", [b"a"], [16], [], window=win), "an offset and a size per key")
        m[4096:4096 + 11] = b"hello world"
        r = kv(s, "put", [b"inl"], [11], [4096], window=win)
        assert r[0] == 43, error_text(r[2])
        loc = parse(parse(r[2])[1][0])
        assert loc[1][0] == 0, loc  # status
        r = kv(s, "get", [b"inl", b"none"], [64, 64], [8192, 8256], window=win)
        assert r[0] == 43, error_text(r[2])
        locs = [parse(x) for x in parse(r[2])[1]]
        assert locs[0][1][0] == 0 and locs[0][5][0] == 11, locs[0]
        assert m[8192:8203] == b"hello world", m[8192:8203]
        assert locs[1][1][0] == 3, locs[1]  # sint32 -ENOENT, zigzag-encoded
        print("put and got 'hello world' in one request each; a miss is a miss")
        # Another connection (another session) cannot name this one's window.
        t = connect(sys.argv[1])
        t.sendall(frame(HELLO, hello_payload()))
        assert read_frame(t)[0] == HELLO_REPLY
        refused(kv(t, "get", [b"inl"], [64], [8192], window=win), "not in window")
        print("ok")
    elif case == "kv-pin":
        # Look a key up (which pins its value) and hold the pin until stdin closes.
        ns, key = sys.argv[3], sys.argv[4].encode()
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        s.sendall(frame(42, vfield(1, enum("KvOp", "lookup")) + field(2, ns.encode()) +
                        field(3, key), req_id=2))
        r = read_frame(s)
        assert r and r[0] == 43, r
        print("pinned", flush=True)
        sys.stdin.read()
    elif case == "hold":
        # Hold a handshaken connection open until stdin closes.
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        print("holding", flush=True)
        sys.stdin.read()
    else:
        raise SystemExit("unknown case " + case)


if __name__ == "__main__":
    main()

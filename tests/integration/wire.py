"""tests/integration/wire.py - raw control-protocol frames for the shell tests.

Builds frames by hand (header per proto/wire.h, protobuf fields encoded here)
so tests can send what no well-behaved client would.
"""
import os
import socket
import struct
import sys

VERSION = 1
HELLO, HELLO_REPLY, ERROR, OK, STATUS, STATUS_REPLY = 1, 2, 3, 4, 5, 6


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
    i = 0
    while i < len(payload):
        key = payload[i]
        i += 1
        if key >> 3 == 2 and key & 7 == 2:
            n = payload[i]
            return payload[i + 1:i + 1 + n].decode(errors="replace")
        if key & 7 == 0:
            while payload[i] & 0x80:
                i += 1
            i += 1
        elif key & 7 == 2:
            i += 1 + payload[i]
    return ""


def closed(s):
    """True when the peer has closed the connection."""
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return False


def main():
    path, case = sys.argv[1], sys.argv[2]
    s = connect(path)
    if case == "garbage":
        s.sendall(bytes(range(256)) * 4)
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
        req = field(1, b"reserve") + field(2, ns.encode()) + field(3, key) + \
            varint(4 << 3) + varint(size)
        s.sendall(frame(42, req, req_id=2))
        r = read_frame(s)
        assert r and r[0] == 43, r
        print("reserved, now dying", flush=True)
        os._exit(0)
    elif case == "kv-pin":
        # Look a key up (which pins its value) and hold the pin until stdin closes.
        ns, key = sys.argv[3], sys.argv[4].encode()
        s.sendall(frame(HELLO, hello_payload()))
        assert read_frame(s)[0] == HELLO_REPLY
        s.sendall(frame(42, field(1, b"lookup") + field(2, ns.encode()) + field(3, key), req_id=2))
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

"""tests/integration/snapcopy.py - SnapCopy requests by hand, for snapcopy.sh.

usage: snapcopy.py SOCKET CASE [ARGS]: runs one case and exits 0 when it
holds; an AssertionError (exit 1) says what did not.
"""
import array
import fcntl
import mmap
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402

SNAP_COPY, SNAP_COPY_REPLY = 49, 50
F_ADD_SEALS, F_GET_SEALS = 1033, 1034
SEALS = 0x1 | 0x2 | 0x4 | 0x8  # seal, shrink, grow, write
EPERM, ENOENT, EBUSY, EINVAL, ENOSPC, EBADMSG = 1, 2, 16, 22, 28, 74
MiB = 1 << 20


fields = wire.parse



def connect_as(path, uid):
    """A connection to path made by a child running as uid (poold takes the peer's
    credentials at connect), handed back over a socketpair."""
    here, there = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            conn = wire.connect(path)
            socket.send_fds(there, [b"c"], [conn.fileno()])
        finally:
            os._exit(0)
    there.close()  # so that a child that could not connect ends the wait below
    _msg, fds, _flags, _addr = socket.recv_fds(here, 1, 1)
    os.waitpid(pid, 0)
    assert fds, "the child running as uid %d could not connect" % uid
    s = socket.socket(fileno=fds[0])
    s.settimeout(5)
    return s


def status_of(f):
    """The status of a SnapCopyReply's fields, by name."""
    return wire.enum_name("SnapCopyStatus", f[1][0])


class Client:
    def __init__(self, path, uid=None):
        self.s = wire.connect(path) if uid is None else connect_as(path, uid)
        self.next_id = 1
        self.s.sendall(wire.frame(wire.HELLO, wire.hello_payload(), req_id=self.id()))
        assert self.recv()[0] == wire.HELLO_REPLY

    def id(self):
        self.next_id += 1
        return self.next_id - 1

    def send(self, op, name=None, ident=None, size=None, lazy=False):
        p = wire.vfield(1, wire.enum("SnapCopyOp", op) if isinstance(op, str) else op)
        if name is not None:
            p += wire.field(2, name.encode())
        if ident is not None:
            p += b"\x18" + wire.varint(ident)
        if size is not None:
            p += b"\x20" + wire.varint(size)
        if lazy:
            p += b"\x48\x01"  # field 9, lazy = true
        self.s.sendall(wire.frame(SNAP_COPY, p, req_id=self.id()))

    def recv(self, timeout=5):
        """(type, fields or (code, message), fd or None) of the next frame."""
        self.s.settimeout(timeout)
        hdr, fds, _flags, _addr = socket.recv_fds(self.s, 16, 1)
        assert len(hdr) == 16, "connection closed"
        length, mtype, _v, _id = struct.unpack(">IHHQ", hdr)
        payload = b""
        while len(payload) < length:
            payload += self.s.recv(length - len(payload))
        f = fields(payload)
        if mtype == wire.ERROR:
            code = f[1][0]
            return mtype, (-((code + 1) >> 1) if code & 1 else code >> 1, f[2][0].decode()), None
        return mtype, f, fds[0] if fds else None

    def call(self, op, name=None, ident=None, size=None):
        self.send(op, name, ident, size)
        return self.recv()

    def status(self, op, name=None, ident=None, size=None):
        """The status of a successful reply, and its fd."""
        t, f, fd = self.call(op, name, ident, size)
        assert t == SNAP_COPY_REPLY, (op, t, f)
        return status_of(f), fd

    def error(self, op, name=None, ident=None, size=None):
        """The -errno of an error reply."""
        return self.error_text(op, name, ident, size)[0]

    def error_text(self, op, name=None, ident=None, size=None):
        """(-errno, message) of an error reply."""
        t, f, fd = self.call(op, name, ident, size)
        assert t == wire.ERROR and fd is None, (op, t, f)
        return f

    def close(self):
        self.s.close()


def fill(c, name, ident, size, byte):
    """Get a copy this client must fill, fill it with byte and say done."""
    st, fd = c.status("get", name, ident, size)
    assert st == "fill" and fd is not None, st
    assert os.fstat(fd).st_size == size
    with mmap.mmap(fd, size, mmap.MAP_SHARED) as m:
        m.write(bytes([byte]) * size)
    os.close(fd)
    assert c.status("done", name, ident)[0] == "done"


def ready(c, name, ident, size, byte):
    """Get a ready copy: sealed, holding byte everywhere, not mappable shared and writable."""
    st, fd = c.status("get", name, ident, size)
    assert st == "ready" and fd is not None, st
    check_ready(fd, size, byte)


def check_ready(fd, size, byte):
    assert fcntl.fcntl(fd, F_GET_SEALS) == SEALS, fcntl.fcntl(fd, F_GET_SEALS)
    with mmap.mmap(fd, size, mmap.MAP_PRIVATE) as m:
        assert m[:] == bytes([byte]) * size
        m[0] = byte ^ 0xFF  # a private write is the clone's own
    try:
        mmap.mmap(fd, size, mmap.MAP_SHARED)
        raise AssertionError("a sealed copy mapped shared and writable")
    except PermissionError:
        pass
    os.close(fd)


def held(c):
    """The client's get is held: no reply within a while."""
    try:
        c.recv(timeout=0.3)
    except (socket.timeout, TimeoutError):
        return
    raise AssertionError("a get was answered while the copy fills")


def case_fill(path):
    """One fills, another waits and gets the sealed copy at done; a third gets it at once."""
    a, b, c = Client(path), Client(path), Client(path)
    st, fd = a.status("get", "img", 7, MiB // 4)
    assert st == "fill"
    b.send("get", "img", 7, MiB // 4)
    held(b)
    assert b.error("done", "img", 7) == -EPERM  # only the filler says done
    with mmap.mmap(fd, MiB // 4, mmap.MAP_SHARED) as m:
        m.write(b"\x5a" * (MiB // 4))
        assert a.error("done", "img", 7) == -EBUSY  # still mapped writable
    assert a.status("done", "img", 7)[0] == "done"
    os.close(fd)
    t, f, fd = b.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "ready", (t, f)
    check_ready(fd, MiB // 4, 0x5A)
    ready(c, "img", 7, MiB // 4, 0x5A)
    assert c.error("get", "img", 7, MiB // 2) == -EINVAL  # not its size
    assert a.error("done", "img", 8) == -ENOENT


def case_handoff(path, how):
    """The filler aborts or goes away: a waiter fills instead, on a fresh memfd."""
    a, b = Client(path), Client(path)
    st, fd = a.status("get", "hand", 1, 65536)
    assert st == "fill"
    with mmap.mmap(fd, 65536, mmap.MAP_SHARED) as m:
        m.write(b"\x01" * 65536)
    os.close(fd)
    b.send("get", "hand", 1, 65536)
    held(b)
    if how == "abort":
        assert a.status("abort", "hand", 1)[0] == "aborted"
    else:
        a.close()
    t, f, fd = b.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "fill", (t, f)
    with mmap.mmap(fd, 65536, mmap.MAP_SHARED) as m:
        assert m[:] == bytes(65536), "the new filler got the old memfd"
        m.write(b"\x02" * 65536)
    os.close(fd)
    assert b.status("done", "hand", 1)[0] == "done"
    ready(Client(path), "hand", 1, 65536, 2)
    assert b.status("drop", "hand")[0] == "dropped"


def state(c, name, ident):
    """(status, inode) of op state."""
    t, f, fd = c.call("state", name, ident)
    assert t == SNAP_COPY_REPLY and fd is None, (t, f)
    return status_of(f), f[3][0] if 3 in f else None


def case_lazy(path):
    """A lazy get while another fills: at once, read-only, the pages as they are written."""
    a, b, c = Client(path), Client(path), Client(path)
    assert state(a, "lz", 3) == ("none", None)
    st, fd = a.status("get", "lz", 3, 65536)
    assert st == "fill"
    ino = os.fstat(fd).st_ino
    b.send("get", "lz", 3, 65536, lazy=True)
    t, f, rfd = b.recv(timeout=1)  # not held
    assert t == SNAP_COPY_REPLY and status_of(f) == "filling" and rfd is not None, (t, f)
    assert os.fstat(rfd).st_ino == ino, "a lazy get got another memfd"
    assert fcntl.fcntl(rfd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    try:
        mmap.mmap(rfd, 65536, mmap.MAP_SHARED)
        raise AssertionError("the copy being filled mapped shared and writable")
    except PermissionError:
        pass
    with mmap.mmap(rfd, 65536, mmap.MAP_PRIVATE, mmap.PROT_READ) as r:
        os.pwrite(fd, b"\x07" * 4096, 0)
        assert r[:4096] == b"\x07" * 4096, "a follower does not see what is written"
    assert state(b, "lz", 3) == ("filling", ino)
    assert a.error("get", "lz", 3, 65536) == -EBUSY  # the filler itself, lazy or not
    c.send("get", "lz", 3, 65536)  # not lazy: held as before
    held(c)
    os.pwrite(fd, b"\x07" * 65536, 0)
    os.close(fd)
    assert a.status("done", "lz", 3)[0] == "done"
    t, f, cfd = c.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "ready", (t, f)
    check_ready(cfd, 65536, 7)
    assert state(b, "lz", 3) == ("ready", ino)
    os.close(rfd)
    # A filler that gives up: the next fill is a fresh memfd, which a follower can tell.
    st, fd = a.status("get", "lz2", 4, 65536)
    assert st == "fill"
    b.send("get", "lz2", 4, 65536, lazy=True)
    t, f, rfd = b.recv(timeout=1)
    assert status_of(f) == "filling", f
    os.close(fd)
    assert a.status("abort", "lz2", 4)[0] == "aborted"
    assert state(b, "lz2", 4) == ("none", None)  # nobody waited: the copy went
    os.close(rfd)
    assert state(b, "lz", 99) == ("none", None)  # another id: not this copy


def case_replace(path):
    """Another id under a name is a newer image: it replaces the copy."""
    a = Client(path)
    fill(a, "rep", 1, 65536, 3)
    fill(a, "rep", 2, 65536, 4)
    ready(a, "rep", 2, 65536, 4)
    fill(a, "rep", 1, 65536, 5)


def case_bad(path):
    """Bad requests get clear errors and poold goes on."""
    a = Client(path)
    # an operation the protocol does not name: a malformed message
    assert a.error(99, "x", 1, 4096) == -EBADMSG
    for args in [("get", "a" * 59, 1, 4096), ("get", "bad name", 1, 4096),
                 ("get", "", 1, 4096), ("get", None, 1, 4096), ("get", "x", 1, 0),
                 ("get", "x", 1, 4097), ("get", "x", 1, 1 << 41), ("get", "x", None, 4096),
                 ("get", "x", 1, None), ("done", "x", None), ("abort", None, 1),
                 ("drop", "a/../" + "b" * 60)]:
        assert a.error(*args) == -EINVAL, args
    assert a.error("done", "nothing", 1) == -ENOENT
    fill(a, "a" * 58, 1, 4096, 6)
    st, fd = a.status("get", "mine", 1, 4096)
    assert st == "fill"
    assert a.error("get", "mine", 1, 4096) == -EBUSY  # the filler itself cannot wait
    os.close(fd)
    for i in range(15):
        assert a.status("get", "many%d" % i, 1, 4096)[0] == "fill"
    assert a.error("get", "many15", 1, 4096) == -EBUSY  # 16 fills at once at most
    assert Client(path).status("get", "many15", 1, 4096)[0] == "fill"


def case_space(path):
    """snap.copies (1M here): too big is ENOSPC; least recently used ready copies make room."""
    a = Client(path)
    assert a.error("get", "huge", 1, 2 * MiB) == -ENOSPC
    for i, name in enumerate(["e1", "e2", "e3", "e4"]):
        fill(a, name, 1, MiB // 4, i)
    ready(a, "e1", 1, MiB // 4, 0)  # e2 is the least recently used now
    fill(a, "e5", 1, MiB // 4, 9)
    ready(a, "e1", 1, MiB // 4, 0)
    st, fd = a.status("get", "e2", 1, MiB // 4)
    assert st == "fill", "e2 was not evicted"
    # The copy filling is not evicted: the rest of the budget is too small for 1M.
    b = Client(path)
    assert b.error("get", "big", 1, MiB) == -ENOSPC
    os.close(fd)


def case_tenant(path):
    """Another uid (run as one): its get of root's name with another id makes a copy of its
    own, root's stays; the copies it fills take at most half of snap.copies (1M here)."""
    a = Client(path)
    st, fd = a.status("get", "rep", 99, 65536)
    assert st == "fill", st
    os.close(fd)
    a.status("abort", "rep", 99)
    assert a.error("get", "half", 1, MiB // 2 + 4096) == -ENOSPC
    fill(a, "quarter", 1, MiB // 4, 7)


NOBODY = 65534


def fresh(fd, size):
    """A copy to fill that nobody wrote yet."""
    assert os.fstat(fd).st_size == size
    with mmap.mmap(fd, size, mmap.MAP_SHARED) as m:
        assert m[:] == bytes(size), "a fill got a memfd someone wrote"


def write_done(c, fd, name, ident, size, byte):
    """Fill the copy c got as fd with byte and say done."""
    with mmap.mmap(fd, size, mmap.MAP_SHARED) as m:
        m.write(bytes([byte]) * size)
    os.close(fd)
    assert c.status("done", name, ident)[0] == "done"


def case_trust(path):
    """Root (an admin) and uid nobody name the same copies: nobody's fill never reaches
    root's clones, root's fill (shared) serves nobody, a handoff never gives root's waiters
    nobody's fill, and snap.copies_per_uid (512K here) evicts nobody's own copies only."""
    K = 1024
    root, root2, nob, nob2 = Client(path), Client(path), Client(path, NOBODY), Client(path, NOBODY)
    # Poisoning: nobody fills (tr, 5) with its own bytes; root does not take them.
    fill(nob, "tr", 5, 64 * K, 0xBB)
    assert state(root, "tr", 5) == ("none", None), "root sees nobody's copy"
    st, fd = root.status("get", "tr", 5, 64 * K)
    assert st == "fill", "root was given the copy nobody filled: " + st
    fresh(fd, 64 * K)
    write_done(root, fd, "tr", 5, 64 * K, 0xAA)
    ready(root2, "tr", 5, 64 * K, 0xAA)
    ready(nob2, "tr", 5, 64 * K, 0xAA)  # the shared copy before its own
    # A lazy get does not follow another uid's fill either.
    st, nfd = nob.status("get", "lz", 6, 64 * K)
    assert st == "fill", st
    root.send("get", "lz", 6, 64 * K, lazy=True)
    t, f, rfd = root.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "fill", ("root followed nobody's fill", t, f)
    os.close(rfd)
    assert root.status("abort", "lz", 6)[0] == "aborted"
    os.close(nfd)
    assert nob.status("abort", "lz", 6)[0] == "aborted"
    # Handoff of a shared copy: to the next admin waiting, never to nobody.
    st, fd = root.status("get", "ho", 7, 64 * K)
    assert st == "fill", st
    os.pwrite(fd, b"\x01" * 4096, 0)
    os.close(fd)
    nob.send("get", "ho", 7, 64 * K)
    held(nob)
    root2.send("get", "ho", 7, 64 * K)
    held(root2)
    assert root.status("abort", "ho", 7)[0] == "aborted"
    t, f, fd = root2.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "fill", (t, f)
    held(nob)
    fresh(fd, 64 * K)
    write_done(root2, fd, "ho", 7, 64 * K, 0x33)
    t, f, fd = nob.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "ready", (t, f)
    check_ready(fd, 64 * K, 0x33)
    # With no admin waiting, nobody's held get is asked again: it fills a copy of its own.
    st, fd = root.status("get", "h2", 8, 64 * K)
    assert st == "fill", st
    nob.send("get", "h2", 8, 64 * K)
    held(nob)
    assert root.status("abort", "h2", 8)[0] == "aborted"
    os.close(fd)
    t, f, fd = nob.recv()
    assert t == SNAP_COPY_REPLY and status_of(f) == "fill", (t, f)
    fresh(fd, 64 * K)
    write_done(nob, fd, "h2", 8, 64 * K, 0x44)
    assert state(root, "h2", 8) == ("none", None), "root sees nobody's copy"
    assert state(nob2, "h2", 8)[0] == "ready"
    # nobody may drop only its own copies; root drops them all.
    assert nob.error("drop", "ho") == -EPERM
    for name in ("tr", "lz", "ho", "h2", "img"):
        assert root.status("drop", name)[0] == "dropped"
    # snap.copies_per_uid: nobody's least recently used ready copy makes room, not root's.
    fill(nob, "b1", 1, 192 * K, 1)
    fill(nob, "b2", 1, 192 * K, 2)
    fill(root, "r1", 1, 192 * K, 3)
    fill(nob, "b3", 1, 192 * K, 4)
    assert state(nob, "b1", 1) == ("none", None), "nobody's oldest copy was not evicted"
    assert state(nob, "b2", 1)[0] == "ready"
    assert state(root, "r1", 1)[0] == "ready", "root's copy was evicted for nobody's"
    # Past its bound even with its own copies gone: ENOSPC naming it, nothing evicted.
    code, text = nob.error_text("get", "big", 1, 512 * K + 4096)
    assert code == -ENOSPC and "snap.copies_per_uid" in text, (code, text)
    assert state(nob, "b2", 1)[0] == "ready", "a refused get evicted"
    for name in ("b2", "b3", "r1"):
        assert root.status("drop", name)[0] == "dropped"


def case_kept(path):
    """Root's copy of rep (id 1, from case_replace) is still there, ready."""
    ready(Client(path), "rep", 1, 65536, 5)


def case_drop(path, name):
    """Drop the copies of name."""
    assert Client(path).status("drop", name)[0] == "dropped"


def main():
    path, case = sys.argv[1], sys.argv[2]
    if case in ("handoff", "drop"):
        globals()["case_" + case](path, sys.argv[3])
    else:
        globals()["case_" + case](path)


if __name__ == "__main__":
    main()

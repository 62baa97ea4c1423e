"""Mooncake's segments on the pool, for pool.mooncake.

In Mooncake each client mounts a segment, the memory it gives the store, and
an object's replicas are placed on segments of distinct names; when a client
closes, its segment is unmounted and the objects with no replica elsewhere are
gone. Here a segment is a KV namespace of the tenant, "mooncake-TENANT.ID",
made at setup with the client's global_segment_size as its capacity and dropped
at close (poold frees its values). The namespace "mooncake-TENANT" is the
directory: under each key, the record of who put it and which segments hold
it. A read tries the store's own segment first, so a value read where it was
written costs one request; the directory is asked only when that misses.

A caller that may not make namespaces (not a pool admin) mounts the tenant's
shared segment "mooncake-TENANT.0" instead, made by an operator; it is never
dropped.
"""
import errno
import os
import random
import time

from pool._lib import PoolError

SEGMENT_MIN = 1 << 20  # the smallest namespace a segment is made as
DIRECTORY_CAPACITY = 1 << 30  # records of ~60 bytes: the oldest go first when it is full
SHARED_ID = "0"
RECORD_MAX = 2048  # of a record: four replicas on segments of 253-byte names fit
REPLICAS_MAX = 4
REQUEST_KEYS = 1024  # keys per directory request (pool.engines._adapter's)
_REGISTRY = b"\0mooncake-segments"  # directory key: "ID HOSTNAME PROCESS" per mounted segment
_OWNER = b"\0mooncake-owner"  # a segment's own key: the PROCESS that mounted it
_REGISTRY_MAX = 1 << 20
_REGISTRY_FRESH = 1.0  # seconds a read of the registry is used for placement


def _process(pid):
    """A process as "BOOT:PID:START" (this machine's boot id, and the process's start
    time, so a pid used again is another process); None when it is not running."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return "%s:%s:%s" % (_BOOT, pid if pid != "self" else os.getpid(), start)


try:
    with open("/proc/sys/kernel/random/boot_id") as _f:
        _BOOT = _f.read().strip()
except OSError:
    _BOOT = None


def _ended(process):
    """Whether process ("BOOT:PID:START") ran on this machine and has ended."""
    boot, _, rest = process.partition(":")
    return _BOOT is not None and boot == _BOOT and _process(rest.partition(":")[0]) != process


class Record:
    """Who put a key (a store's id) and the segments holding its replicas, as
    (id, hostname) pairs, in the directory as b"OWNER\\nID HOST\\nID HOST"."""

    def __init__(self, owner, replicas):
        self.owner = owner
        self.replicas = replicas

    def encode(self):
        return "\n".join([self.owner] + ["%s %s" % r for r in self.replicas]).encode()

    @classmethod
    def decode(cls, raw):
        lines = raw.decode(errors="replace").split("\n")
        return cls(lines[0], [tuple(ln.split(" ", 1)) for ln in lines[1:] if " " in ln])


class Segments:
    """A store's segment, the tenant's directory, and the other segments it reads."""

    def __init__(self, pool, tenant, hostname, size):
        self._pool = pool
        self._prefix = "mooncake-" + tenant
        self.id = os.urandom(4).hex()
        self.hostname = hostname
        self.own = None
        self._own_id = None
        self._others = {}  # id -> KV, or None once found unmounted
        self._registry = (0.0, [])
        self.directory = pool.open_kv(self._prefix, DIRECTORY_CAPACITY, dram_only=True)
        try:
            if size:
                self._mount(size)
        except PoolError:
            self.directory.close()
            raise

    def _name(self, sid):
        return "%s.%s" % (self._prefix, sid)

    def _mount(self, size):
        try:
            self._pool.create_kv(self._name(self.id), max(size, SEGMENT_MIN))
            self._own_id = self.id
        except PoolError as e:
            if e.code not in (-errno.EACCES, -errno.EPERM):
                raise
            self._own_id = SHARED_ID
        self.own = self._pool.kv(self._name(self._own_id))
        if self._own_id != SHARED_ID:
            self.own.put(_OWNER, (_process("self") or "-").encode())
        self._register(True)

    def unmount(self):
        """Drop the store's segment with the replicas on it (not the shared one)."""
        if self.own is not None:
            self._register(False)
            self.own.close()
            self.own = None
            self._drop(self._own_id)
        for kv in self._others.values():
            if kv is not None:
                kv.close()
        self._others.clear()
        self.directory.close()

    def _drop(self, sid):
        if sid != SHARED_ID:
            try:
                self._pool.drop_kv(self._name(sid))
            except PoolError as e:
                if e.code != -errno.ENOENT:
                    raise

    def _reap(self, sid, process):
        """Drop segment sid of a process of this machine that ended, if the segment
        itself says that process made it: a registry line is anyone's who may write
        the directory, the segment's own key only its maker's (and the pool admins'),
        so a line cannot make a store drop a live segment it names falsely. A caller
        that may not read or drop it leaves it."""
        try:
            with self._pool.kv(self._name(sid)) as kv:
                made_by = kv.get_batch([_OWNER], 256)[0]
            if made_by == process.encode():
                self._pool.drop_kv(self._name(sid))
        except PoolError as e:
            if e.code not in (-errno.ENOENT, -errno.EACCES, -errno.EPERM):
                raise

    # ---- the registry of mounted segments: "ID HOSTNAME PROCESS" lines

    def _read_registry(self):
        raw = self.directory.get_batch([_REGISTRY], _REGISTRY_MAX)[0] or b""
        return [tuple(ln.split(" ")) for ln in raw.decode(errors="replace").split("\n")
                if ln.count(" ") == 2]

    def _register(self, mounted):
        """Add or remove this segment's line, and drop the segments of this machine's
        processes that ended without closing their store (killed, or never closed);
        read back, as another store may have written the registry at the same time
        (three tries, then placement just misses it)."""
        me = (self._own_id, self.hostname, _process("self") or "-")
        for _ in range(3):
            segs, dead = [], []
            for s in self._read_registry():
                (dead if _ended(s[2]) else segs).append(s)
            segs = [s for s in segs if s != me] + ([me] if mounted else [])
            if segs:
                self.directory.put(_REGISTRY, "\n".join(" ".join(s) for s in segs).encode())
            else:
                self.directory.remove(_REGISTRY)
            for s in dead:
                self._reap(s[0], s[2])
            if (me in self._read_registry()) == mounted:
                break
        self._registry = (0.0, [])

    def mounted(self):
        """The tenant's mounted segments, re-read at most once a second."""
        when, segs = self._registry
        if time.monotonic() - when > _REGISTRY_FRESH:
            segs = [s[:2] for s in self._read_registry()]
            self._registry = (time.monotonic(), segs)
        return segs

    def place(self, count, preferred=()):
        """Up to count (id, hostname) segments of distinct names, as Mooncake places
        replicas: the preferred names first, then this store's own, then the others
        in random order. A registry read that cannot place them all is read again."""
        segs = self._place(count, preferred)
        if len(segs) < min(count, REPLICAS_MAX) or \
                not set(preferred) <= {s[1] for s in segs}:
            self._registry = (0.0, [])
            segs = self._place(count, preferred)
        return segs

    def _place(self, count, preferred):
        segs = [s for s in self.mounted() if s[0] != self._own_id]
        random.shuffle(segs)
        if self.own is not None:
            segs.insert(0, (self._own_id, self.hostname))
        segs.sort(key=lambda s: s[1] not in preferred)
        chosen, names = [], set()
        for s in segs:
            if len(chosen) < min(count, REPLICAS_MAX) and s[1] not in names:
                chosen.append(s)
                names.add(s[1])
        return chosen

    # ---- segments by id

    def kv(self, sid):
        """The namespace of segment sid, or None when it is not mounted."""
        if sid == self._own_id:
            return self.own
        if sid not in self._others:
            try:
                self._others[sid] = self._pool.kv(self._name(sid))
            except PoolError as e:
                if e.code != -errno.ENOENT:
                    raise
                self._others[sid] = None
        return self._others[sid]

    def records(self, keys):
        """The directory's Record of each key (None where it has none)."""
        raw = []
        for i in range(0, len(keys), REQUEST_KEYS):
            raw += self.directory.get_batch(keys[i:i + REQUEST_KEYS], RECORD_MAX)
        return [None if r is None else Record.decode(r) for r in raw]

    def find(self, key, read, own=True):
        """read(kv) on the segments that hold key, own first (unless own is False),
        until one does not return None (a miss there); None if none has it."""
        if own and self.own is not None:
            got = read(self.own)
            if got is not None:
                return got
        rec = self.records([key])[0]
        for sid, _host in rec.replicas if rec is not None else ():
            kv = None if sid == self._own_id else self.kv(sid)
            try:
                got = None if kv is None else read(kv)
            except PoolError as e:
                if e.code != -errno.ENOENT:
                    raise
                got = self._others[sid] = None  # unmounted since it was opened
                kv.close()
            if got is not None:
                return got
        return None

    def read_into(self, keys, bufs):
        """Fill bufs[i] with keys[i]'s value: each value's length (more than the buffer
        when it did not fit), or None for a miss. One batched request to the store's
        own segment, then the directory for what it missed."""
        lens = [None] * len(keys)
        if self.own is not None:
            for i in range(0, len(keys), REQUEST_KEYS):
                lens[i:i + REQUEST_KEYS] = self.own.get_batch_into(keys[i:i + REQUEST_KEYS],
                                                                   bufs[i:i + REQUEST_KEYS])
        for i, key in enumerate(keys):
            if lens[i] is None:
                lens[i] = self.find(key, lambda kv: kv.get_into(key, bufs[i]), own=False)
        return lens


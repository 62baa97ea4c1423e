"""Mooncake Store's Python API on the pool: code written for
mooncake.store.MooncakeDistributedStore runs on this node's poold by
changing its import to

    from pool.mooncake import MooncakeDistributedStore, ReplicateConfig

or unchanged with python/compat (installed as /usr/share/pool/python-compat)
on PYTHONPATH, where the package mooncake.store is an alias of this module.

Names, arguments, return values and error codes follow Mooncake's store
bindings (mooncake-integration/store/store_py.cpp, mooncake-store/src/
real_client.cpp and master_service.cpp at 3b5a594) and its ErrorCode values
(mooncake-store/include/types.h): 0 or a negative code, 1/0 for is_exist,
b"" for a get that misses. Each store mounts a segment of the tenant's
objects (pool.engines._mooncake_segments); leases are the store's own; the
differences are listed in doc/mooncake.md and pool-python(3).
"""
import ctypes
import enum
import errno
import operator
import os
import re
import socket
import time
import weakref

from pool.engines import _adapter as adapter
from pool._lib import POOL_ECOORD, POOL_ELOST, PoolError, U64_MAX, memory, u64, size_t
from pool.engines._mooncake_segments import Record, Segments
from pool.client import Pool
from pool.kv import PIN_HARD, PIN_KEEP, PIN_NONE, PIN_SOFT

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "SoftPinAction", "BufferHandle",
           "OK", "INTERNAL_ERROR", "BUFFER_OVERFLOW", "NO_AVAILABLE_HANDLE", "INVALID_KEY",
           "INVALID_PARAMS", "OBJECT_NOT_FOUND", "OBJECT_HAS_LEASE", "REPLICA_IS_GONE",
           "RPC_FAIL"]

OK = 0
INTERNAL_ERROR = -1
BUFFER_OVERFLOW = -10
NO_AVAILABLE_HANDLE = -200
INVALID_KEY = -400
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
REPLICA_IS_GONE = -712
RPC_FAIL = -900

_CODES = {-errno.ENOENT: OBJECT_NOT_FOUND, -errno.ENOSPC: NO_AVAILABLE_HANDLE,
          -errno.EDQUOT: NO_AVAILABLE_HANDLE, -errno.EINVAL: INVALID_PARAMS,
          -errno.E2BIG: INVALID_PARAMS, -errno.ENAMETOOLONG: INVALID_PARAMS,
          POOL_ECOORD: RPC_FAIL, POOL_ELOST: REPLICA_IS_GONE}

# The master's lease on an object read (or, here, written): remove() refuses it
# and batch_replica_clear() skips it until it ends. Mooncake's master default.
LEASE_TTL_MS = int(os.environ.get("POOL_MOONCAKE_LEASE_TTL_MS", "10000"))
_LEASES_PRUNE = 1 << 16  # leases kept before the ended ones are dropped
SOFT_PIN_TTL_MAX_MS = 86400000  # the master's max_kv_soft_pin_ttl
SOFT_PIN_TTL_DEFAULT_MS = 1800000  # ... and default_kv_soft_pin_ttl
# Ports a store whose hostname has none binds, as Mooncake's clients do.
PORT_MIN, PORT_MAX, PORT_TRIES = 12300, 14300, 20
LOCAL_BUFFER_MAX = 1 << 40
TENANT_MAX = 45  # "mooncake-TENANT.ID" within a namespace name's 63 bytes


def _code(e):
    """Mooncake's ErrorCode for a PoolError (or a libpool status)."""
    rc = e.code if isinstance(e, PoolError) else e
    return OK if rc >= 0 else _CODES.get(rc, INTERNAL_ERROR)


def _span(ptr, size):
    """Whether a raw buffer's address and size are integers that fit a pointer and a
    size_t, the address not null: ctypes would wrap them into something else."""
    try:
        return u64(ptr, "an address") != 0 and size_t(size) >= 0
    except (TypeError, ValueError, OverflowError):
        return False


_SIZE = re.compile(r"\s*([0-9.eE+xXa-fA-F]+?)\s*([KMGT]B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "B": 0, "K": 10, "KB": 10, "M": 20, "MB": 20, "G": 30, "GB": 30,
          "T": 40, "TB": 40}


def parse_size(value):
    """A size as Mooncake's setup(dict) reads one: bytes, or a number with K/KB, M/MB,
    G/GB, T/TB (powers of 1024, any case, spaces allowed) or "infinite"; ValueError
    for anything else ("50%", "1KiB")."""
    text = str(value).strip()
    if text.lower() == "infinite":
        return U64_MAX
    m = _SIZE.match(text)
    if m is None:
        raise ValueError("%r is not a size" % (value,))
    number = float.fromhex(m.group(1)) if m.group(1).lower().startswith("0x") \
        else float(m.group(1))
    if number < 0:
        raise ValueError("%r is negative" % (value,))
    return int(number * (1 << _UNITS[(m.group(2) or "").upper()]))


class SoftPinAction(enum.Enum):
    """What a put or upsert does to the object's soft pin."""
    PRESERVE = 0
    ENABLE = 1
    DISABLE = 2

    def __int__(self):
        return self.value

    __index__ = __int__


class ReplicateConfig:
    """How a put places an object: Mooncake's fields and defaults. replica_num
    replicas go to segments of distinct names (preferred_segment(s) first); the
    soft-pin fields are checked as Mooncake's master checks them."""

    def __init__(self):
        self.replica_num = 1
        self.nof_replica_num = 0
        self.dfs_replica_num = 0
        self.soft_pin_action = SoftPinAction.PRESERVE
        self.soft_pin_ttl_ms = None
        self.with_hard_pin = False
        self.preferred_segments = []
        self.preferred_segment = ""
        self.preferred_nof_segments = []
        self.prefer_alloc_in_same_node = False
        self.group_ids = None

    @property
    def soft_pin_action(self):
        return self._soft_pin_action

    @soft_pin_action.setter
    def soft_pin_action(self, action):
        if not isinstance(action, SoftPinAction):
            raise TypeError("soft_pin_action must be a SoftPinAction")
        self._soft_pin_action = action

    @property
    def soft_pin_ttl_ms(self):
        return self._soft_pin_ttl_ms

    @soft_pin_ttl_ms.setter
    def soft_pin_ttl_ms(self, ttl):
        if ttl is not None:
            try:
                ttl = operator.index(ttl)
            except TypeError:
                raise TypeError("soft_pin_ttl_ms must be None or an integer") from None
            if not 0 <= ttl <= U64_MAX:
                raise TypeError("soft_pin_ttl_ms must fit an unsigned 64-bit integer")
        self._soft_pin_ttl_ms = ttl

    def _preferred(self):
        return (self.preferred_segment,) if self.preferred_segment else \
            tuple(self.preferred_segments)

    def _valid(self):
        """Whether the master would take this config for a put (ResolveSoftPinRequest)."""
        if self.replica_num < 1 or self.prefer_alloc_in_same_node:
            return False
        if self.soft_pin_action is not SoftPinAction.ENABLE:
            return self.soft_pin_ttl_ms is None
        return (self.soft_pin_ttl_ms or 0) <= SOFT_PIN_TTL_MAX_MS

    def _pin(self):
        """The pool pin (pool.kv.PIN_*) and its ms a write with this config asks: a hard
        pin for as long as the object lives; ENABLE a soft pin for soft_pin_ttl_ms (the
        master's default when None; 0 unpins), DISABLE none; PRESERVE keeps the key's."""
        if self.with_hard_pin:
            return PIN_HARD, 0
        if self.soft_pin_action is SoftPinAction.ENABLE:
            ttl = SOFT_PIN_TTL_DEFAULT_MS if self.soft_pin_ttl_ms is None else self.soft_pin_ttl_ms
            return (PIN_SOFT, ttl) if ttl > 0 else (PIN_NONE, 0)
        if self.soft_pin_action is SoftPinAction.DISABLE:
            return PIN_NONE, 0
        return PIN_KEEP, 0

    def __str__(self):
        lists = lambda v: "[" + ", ".join(v) + "]"  # noqa: E731
        s = ("ReplicateConfig: { replica_num: %d, nof_replica_num: %d, dfs_replica_num: %d, "
             "soft_pin_action: %s, soft_pin_ttl_ms: %s, with_hard_pin: %d, "
             "preferred_segments: %s" %
             (self.replica_num, self.nof_replica_num, self.dfs_replica_num,
              self.soft_pin_action.name,
              "default" if self.soft_pin_ttl_ms is None else self.soft_pin_ttl_ms,
              bool(self.with_hard_pin), lists(self.preferred_segments)))
        if self.preferred_segment:
            s += ", preferred_segment (deprecated): " + self.preferred_segment
        s += ", preferred_nof_segments: %s, prefer_alloc_in_same_node: %d" % (
            lists(self.preferred_nof_segments), bool(self.prefer_alloc_in_same_node))
        if self.group_ids is not None:
            s += ", group_ids: " + lists(self.group_ids)
        return s + " }"


_DEFAULT_CONFIG = ReplicateConfig()


class BufferHandle(bytearray):
    """An object read by get_buffer(): its bytes, size() and ptr()."""

    def size(self):
        return len(self)

    def ptr(self):
        return ctypes.addressof((ctypes.c_char * len(self)).from_buffer(self)) if self else 0


def _host_with_port(hostname):
    """Whether hostname names a port ("h:p", "[v6]:p"); a bare IPv6 address does not."""
    if hostname.startswith("["):
        return "]:" in hostname
    return hostname.count(":") == 1


class MooncakeDistributedStore:
    def __init__(self):
        self._pool = None
        self._segs = None
        self._port = None
        self._hostname = ""
        self._local_buffer = 0
        self._leases = {}
        self._buffers = {}
        self._unmount = None

    # ---- set-up

    def setup(self, local_hostname, metadata_server=None, global_segment_size=16 << 20,
              local_buffer_size=16 << 20, protocol="tcp", rdma_devices="",
              master_server_addr="", engine=None, enable_ssd_offload=False,
              ssd_offload_path="", tenant_id="default", enable_client_http_server=False,
              client_http_port=9300):
        """Mount a segment of global_segment_size bytes for the tenant's objects; a
        config dict is read as Mooncake's setup(dict) reads it (size strings, "16MB").
        metadata_server, master_server_addr, protocol and rdma_devices are not used:
        the store is this node's poold."""
        if isinstance(local_hostname, dict):
            d = local_hostname
            local_hostname = str(d.get("local_hostname", ""))
            tenant_id = str(d.get("tenant_id", tenant_id))
            if not str(d.get("metadata_server", "")):
                return INVALID_PARAMS
            try:
                global_segment_size = parse_size(d.get("global_segment_size", 16 << 20))
                local_buffer_size = parse_size(d.get("local_buffer_size", 16 << 20))
            except ValueError:
                return INVALID_PARAMS
            if 0 < global_segment_size < 1024 or 0 < local_buffer_size < 1024 or \
                    local_buffer_size > LOCAL_BUFFER_MAX:
                return INVALID_PARAMS
        if not local_hostname or not tenant_id or len(tenant_id) > TENANT_MAX or \
                "/" in tenant_id or any(c.isspace() for c in local_hostname + tenant_id):
            return INVALID_PARAMS
        self.close()
        try:
            hostname = local_hostname if _host_with_port(local_hostname) else \
                self._bind_port(local_hostname)
            self._pool = Pool()
            self._segs = Segments(self._pool, tenant_id, hostname, int(global_segment_size))
            # A store dropped or left open at exit unmounts its segment too.
            self._unmount = weakref.finalize(self, self._segs.unmount)
        except PoolError as e:
            self.close()
            return _code(e)
        except OSError:
            self.close()
            return INTERNAL_ERROR
        self._hostname = hostname
        self._local_buffer = int(local_buffer_size)
        return OK

    def _bind_port(self, host):
        """host:PORT with a port of Mooncake's range bound (not listened on) until close,
        so two stores on a host have two names."""
        import random
        for _ in range(PORT_TRIES):
            port = random.randint(PORT_MIN, PORT_MAX)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("", port))
            except OSError:
                s.close()
                continue
            self._port = s
            return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)
        raise OSError(errno.EADDRINUSE, "no free port in %d-%d" % (PORT_MIN, PORT_MAX))

    def close(self):
        """Unmount the store's segment: objects with no replica elsewhere are gone."""
        segs, pool, self._segs, self._pool = self._segs, self._pool, None, None
        try:
            if self._unmount is not None:
                self._unmount.detach()
                self._unmount = None
            if segs is not None:
                segs.unmount()
        except PoolError:
            pass
        finally:
            adapter.release(None, pool)
            if self._port is not None:
                self._port.close()
                self._port = None
            self._leases.clear()
            self._buffers.clear()
        return OK

    def get_hostname(self):
        return self._hostname

    def _s(self):
        if self._segs is None:
            raise RuntimeError("MooncakeDistributedStore: setup() first")
        return self._segs

    # ---- leases

    def _lease(self, keys):
        end = time.monotonic() + LEASE_TTL_MS / 1000
        if len(self._leases) > _LEASES_PRUNE:
            now = time.monotonic()
            self._leases = {k: t for k, t in self._leases.items() if t > now}
        for k in keys:
            self._leases[k] = end

    def _leased(self, key):
        return self._leases.get(key, 0) > time.monotonic()

    # ---- writes

    def _write(self, keys, values, sizes, config, upsert):
        """Store values[i] (bytes-like, sizes[i] bytes) under keys[i] on config's
        segments; each key's code.
        A put leaves a key that is there as it is (0), as Mooncake's does; an upsert
        replaces it and drops its replicas on segments not chosen this time."""
        config = _DEFAULT_CONFIG if config is None else config
        n = len(keys)
        if not config._valid() or 0 in sizes:
            return [INVALID_PARAMS] * n
        segs = self._s()
        status = [OK] * n
        old = segs.records(keys)
        todo = [i for i in range(n)
                if upsert or old[i] is None or not self._present(keys[i], old[i])]
        place = segs.place(config.replica_num, config._preferred())
        if not place:
            for i in todo:
                status[i] = NO_AVAILABLE_HANDLE
            return status
        held = {i: [] for i in todo}
        pin, pin_ms = config._pin()
        for sid, host in place:
            kv = segs.kv(sid)
            if kv is None:
                continue  # unmounted since the registry was read
            got = adapter.put(kv, [keys[i] for i in todo], [values[i] for i in todo], pin,
                              pin_ms)
            for i, rc in zip(todo, got):
                if rc >= 0:
                    held[i].append((sid, host))
                elif status[i] == OK:
                    status[i] = _code(rc)
        for i in todo:
            if not held[i] and status[i] == OK:
                status[i] = NO_AVAILABLE_HANDLE
        done = [i for i in todo if held[i]]
        recs = [Record(segs.id, held[i]).encode() for i in done]
        for i, rc in zip(done, adapter.put(segs.directory, [keys[i] for i in done], recs)):
            status[i] = _code(rc)
        for i in done:
            if status[i] == OK and old[i] is not None:
                self._drop(keys[i], [r for r in old[i].replicas if r not in held[i]])
            elif status[i] != OK:
                self._drop(keys[i], held[i])
        self._lease([k for k, rc in zip(keys, status) if rc == OK])
        return status

    def _present(self, key, rec):
        """Whether a replica the record names still holds key (it may have been evicted)."""
        for sid, _host in rec.replicas:
            kv = self._s().kv(sid)
            if kv is not None and kv.exists(key):
                return True
        return False

    def _drop(self, key, replicas):
        for sid, _host in replicas:
            kv = self._s().kv(sid)
            if kv is not None:
                kv.remove(key)

    def _put(self, keys, values, config, upsert, buffered):
        """_write() through the local buffer's bound (put, put_batch, upsert copy the
        value through it in Mooncake, so a value larger than it is refused)."""
        try:
            sizes = [memoryview(v).nbytes for v in values]
        except TypeError:
            return [INVALID_PARAMS] * len(keys)
        if buffered and any(size > self._local_buffer for size in sizes):
            return [INVALID_PARAMS] * len(keys)
        try:
            return self._write(keys, values, sizes, config, upsert)
        except PoolError as e:
            return [_code(e)] * len(keys)

    def put(self, key, value, config=None):
        return self._put([key], [value], config, False, True)[0]

    def upsert(self, key, value, config=None):
        return self._put([key], [value], config, True, True)[0]

    def put_parts(self, key, *parts, config=None):
        return self.put(key, b"".join(bytes(p) for p in parts), config)

    def upsert_parts(self, key, *parts, config=None):
        return self.upsert(key, b"".join(bytes(p) for p in parts), config)

    def put_batch(self, keys, values, config=None):
        return self._batch(keys, values, config, False)

    def upsert_batch(self, keys, values, config=None):
        return self._batch(keys, values, config, True)

    def _batch(self, keys, values, config, upsert):
        if len(keys) != len(values):
            return INVALID_PARAMS
        status = self._put(list(keys), list(values), config, upsert, True)
        return next((s for s in status if s < 0), OK)

    def put_from(self, key, buffer_ptr, size, config=None):
        return self._from([key], [buffer_ptr], [size], config, False)[0]

    def upsert_from(self, key, buffer_ptr, size, config=None):
        return self._from([key], [buffer_ptr], [size], config, True)[0]

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        return self._from(keys, buffer_ptrs, sizes, config, False)

    def batch_upsert_from(self, keys, buffer_ptrs, sizes, config=None):
        return self._from(keys, buffer_ptrs, sizes, config, True)

    def _from(self, keys, ptrs, sizes, config, upsert):
        """The zero-copy writes: from raw addresses; a size of 0 writes nothing (0)."""
        n = len(keys)
        if len(ptrs) != n or len(sizes) != n or not all(map(_span, ptrs, sizes)):
            return [INVALID_PARAMS] * n
        todo = [i for i in range(n) if sizes[i]]
        # (writable views: libpool takes a read-only buffer by copying it first)
        got = self._put([keys[i] for i in todo], [memory(ptrs[i], sizes[i]) for i in todo],
                        config, upsert, False) if todo else []
        status = [OK] * n
        for i, rc in zip(todo, got):
            status[i] = rc
        return status

    # ---- reads

    def _value(self, key):
        """key's value as bytes, or None: a miss, or larger than the local buffer."""
        value = self._s().find(key, lambda kv: kv.get(key))
        if value is not None:
            self._lease([key])
        return value if value is not None and len(value) <= self._local_buffer else None

    def get(self, key):
        try:
            return self._value(key) or b""
        except PoolError:
            return b""

    def get_batch(self, keys):
        return [self.get(k) for k in keys]

    def get_buffer(self, key):
        """The object as a BufferHandle, None when it cannot be read."""
        try:
            value = self._value(key)
        except PoolError:
            return None
        return BufferHandle(value) if value else None

    def batch_get_buffer(self, keys):
        return [self.get_buffer(k) for k in keys]

    def get_size(self, key):
        try:
            size = self._s().find(key, lambda kv: kv.get_into(key, bytearray()))
        except PoolError as e:
            return _code(e)
        if size is None:
            return OBJECT_NOT_FOUND
        self._lease([key])
        return size

    def is_exist(self, key):
        try:
            there = self._s().find(key, lambda kv: kv.exists(key) or None)
        except PoolError as e:
            return _code(e)
        if not there:
            return 0
        self._lease([key])
        return 1

    def batch_is_exist(self, keys):
        return [self.is_exist(k) for k in keys]

    # ---- zero-copy reads into raw addresses, as Mooncake's engines pass them

    def register_buffer(self, buffer_ptr, size):
        """Note a buffer (libpool needs no registration: it moves bytes through its own
        windows); get_into_ranges() bounds its writes by it."""
        if not _span(buffer_ptr, size) or size == 0:
            return INVALID_PARAMS
        self._buffers[buffer_ptr] = size
        return OK

    def unregister_buffer(self, buffer_ptr):
        return OK if self._buffers.pop(buffer_ptr, None) is not None else INVALID_PARAMS

    def _room(self, ptr):
        """Bytes from ptr to the end of the registered buffer it lies in, else 0."""
        return max((base + size - ptr for base, size in self._buffers.items()
                    if base <= ptr < base + size), default=0)

    def get_into(self, key, buffer_ptr, size):
        """Bytes read, or a negative code (INVALID_PARAMS: the buffer is smaller)."""
        return self.batch_get_into([key], [buffer_ptr], [size])[0]

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        n = len(keys)
        if len(buffer_ptrs) != n or len(sizes) != n or \
                not all(map(_span, buffer_ptrs, sizes)):
            return [INVALID_PARAMS] * n
        try:
            lens = self._s().read_into(keys, [memory(p, s) if s else bytearray()
                                              for p, s in zip(buffer_ptrs, sizes)])
        except PoolError as e:
            return [_code(e)] * n
        out = [OBJECT_NOT_FOUND if got is None else got if got <= size else INVALID_PARAMS
               for got, size in zip(lens, sizes)]
        self._lease([k for k, got in zip(keys, lens) if got is not None])
        return out

    def get_into_ranges(self, buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets,
                        all_sizes):
        """Copy byte ranges of objects into registered buffers: for buffer i and its key
        j, range k is all_sizes[i][j][k] bytes from all_src_offsets[i][j][k] of the
        object to all_dst_offsets[i][j][k] of the buffer. Each range's result is its
        length, or INVALID_PARAMS (lists that do not match, a range past the object's
        end or the buffer's, a buffer not registered) or OBJECT_NOT_FOUND."""
        n = len(buffer_ptrs)

        def shape(i, j):
            dst = all_dst_offsets[i] if i < len(all_dst_offsets) else []
            return len(dst[j]) if j < len(dst) else 1

        out = [[[INVALID_PARAMS] * shape(i, j) for j in range(len(all_keys[i]))]
               for i in range(min(n, len(all_keys)))]
        if not n == len(all_keys) == len(all_dst_offsets) == len(all_src_offsets) == \
                len(all_sizes):
            return out
        segs = self._s()
        for i, ptr in enumerate(buffer_ptrs):
            room = self._room(ptr)
            keys, dsts, srcs, lens = all_keys[i], all_dst_offsets[i], all_src_offsets[i], \
                all_sizes[i]
            if not room or not len(keys) == len(dsts) == len(srcs) == len(lens):
                continue
            for j, key in enumerate(keys):
                if not len(dsts[j]) == len(srcs[j]) == len(lens[j]):
                    continue
                try:
                    got = segs.find(key, lambda kv: self._copy_ranges(
                        kv, key, ptr, room, dsts[j], srcs[j], lens[j]))
                except PoolError as e:
                    got = [_code(e)] * len(dsts[j])
                if got is None:
                    got = [OBJECT_NOT_FOUND] * len(dsts[j])
                else:
                    self._lease([key])
                out[i][j] = got
        return out

    @staticmethod
    def _copy_ranges(kv, key, ptr, room, dsts, srcs, lens):
        """Copy the ranges of kv's value of key, read in place; None on a miss."""
        try:
            with kv.acquire(key) as value:
                res = []
                for dst, src, length in zip(dsts, srcs, lens):
                    if dst < 0 or src < 0 or length < 0 or dst + length > room or \
                            src + length > len(value):
                        res.append(INVALID_PARAMS)
                    else:
                        ctypes.memmove(ptr + dst, bytes(value[src:src + length]), length)
                        res.append(length)
                return res
        except KeyError:
            return None

    # ---- removal

    def remove(self, key, force=False):
        """Remove every replica of key; OBJECT_HAS_LEASE while this store's lease on it
        lasts, unless force."""
        if not force and self._leased(key):
            return OBJECT_HAS_LEASE
        segs = self._s()
        try:
            rec = segs.records([key])[0]
            if rec is None:
                gone = segs.own is not None and segs.own.remove(key)
                return OK if gone else OBJECT_NOT_FOUND
            self._drop(key, rec.replicas)
            segs.directory.remove(key)
        except PoolError as e:
            return _code(e)
        return OK

    def batch_remove(self, keys, force=False):
        return [self.remove(k, force) for k in keys]

    def batch_replica_clear(self, keys, segment_name=""):
        """Remove the replicas of this store's own objects whose lease has ended, all
        of them or those on segments named segment_name; the keys cleared."""
        if self._segs is None:
            return []
        segs, cleared = self._segs, []
        try:
            for key, rec in zip(keys, segs.records(list(keys)) if keys else []):
                if rec is None or rec.owner != segs.id or self._leased(key):
                    continue
                drop = [r for r in rec.replicas if not segment_name or r[1] == segment_name]
                if not drop:
                    continue
                self._drop(key, drop)
                left = [r for r in rec.replicas if r not in drop]
                if left:
                    segs.directory.put(key, Record(rec.owner, left).encode())
                else:
                    segs.directory.remove(key)
                cleared.append(key)
        except PoolError:
            pass
        return cleared

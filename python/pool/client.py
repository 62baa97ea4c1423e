"""A connection to the local poold, and what hangs off it."""
import errno
from ctypes import POINTER, byref, c_char_p, c_size_t, c_void_p

from pool import kv as _kv
from pool import region as _region
from pool import snap as _snap
from pool import vec as _vec
from pool._lib import PoolError, check, lib, libc, u64, uint

REGION_ANONYMOUS = 0x1
REGION_WRITE = 0x1


class Pool:
    """A connection to this node's poold (socket None: $POOL_SOCKET or the default).

    Thread-safe as libpool is: calls from several threads share the connection.
    Use as a context manager, or close() it; closing frees what it holds."""

    def __init__(self, socket=None):
        h = c_void_p()
        check(lib.pool_open(socket.encode() if socket else None, 0, byref(h)))
        self._h = h

    def _handle(self):
        if self._h is None:
            raise ValueError("the pool connection is closed")
        return self._h

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(lib.pool_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def status(self):
        st = c_void_p()
        check(lib.pool_status(self._handle(), byref(st)))
        try:
            return {
                "version": lib.pool_status_version(st).decode(),
                "role": lib.pool_status_role(st).decode(),
                "node_id": lib.pool_status_node_id(st),
                "uptime_ms": lib.pool_status_uptime_ms(st),
                "clients": lib.pool_status_clients(st),
            }
        finally:
            lib.pool_status_free(st)

    # ---- regions

    def create_region(self, name, size, cls=None, placement=None, mode=None, stripe=None,
                      anonymous=False):
        """Create a region (class "pinned", "cache" or "persistent"; placement "any",
        "local", "node=N", "numa=M", "spread", "spread=N") and open it for writing."""
        o = c_void_p()
        check(lib.pool_region_opts_new(byref(o)))
        try:
            check(lib.pool_region_opts_set_size(o, u64(size, "size")))
            if cls is not None:
                check(lib.pool_region_opts_set_class(o, cls.encode()))
            if placement is not None:
                check(lib.pool_region_opts_set_placement(o, placement.encode()))
            if mode is not None:
                check(lib.pool_region_opts_set_mode(o, uint(mode, "mode")))
            if stripe is not None:
                check(lib.pool_region_opts_set_stripe(o, u64(stripe, "stripe")))
            h = c_void_p()
            check(lib.pool_region_create(self._handle(), name.encode(), o,
                                         REGION_ANONYMOUS if anonymous else 0, byref(h)))
        finally:
            lib.pool_region_opts_free(o)
        return _region.Region(self, h, name)

    def open_region(self, name, write=False):
        h = c_void_p()
        check(lib.pool_region_open(self._handle(), name.encode(),
                                   REGION_WRITE if write else 0, byref(h)))
        return _region.Region(self, h, name)

    def destroy_region(self, name):
        check(lib.pool_region_destroy(self._handle(), name.encode()))

    def keep_region(self, name):
        check(lib.pool_region_keep(self._handle(), name.encode()))

    def region_info(self, name):
        return _region.region_info(self, name)

    def batch(self):
        """A Batch of reads and writes, waited for at the end of a with block."""
        return _region.Batch(self)

    # ---- the KV cache

    def create_kv(self, ns, capacity, **flags):
        """Create a namespace (flags: dram_only, persistent, no_evict, replicas, mode)."""
        check(lib.pool_kv_create(self._handle(), ns.encode(), u64(capacity, "capacity"),
                                 _kv.flags(**flags)))

    def drop_kv(self, ns):
        check(lib.pool_kv_drop(self._handle(), ns.encode()))

    def kv(self, ns):
        """Open a namespace."""
        h = c_void_p()
        check(lib.pool_kv_open(self._handle(), ns.encode(), byref(h)))
        return _kv.KV(self, h, ns)

    def open_kv(self, ns, capacity, **flags):
        """Open a namespace, made first with capacity and flags if it is not there
        (making one needs an admin caller); another client making it meanwhile is fine."""
        try:
            return self.kv(ns)
        except PoolError as e:
            if e.code != -errno.ENOENT:
                raise
        try:
            self.create_kv(ns, capacity, **flags)
        except PoolError as e:
            if e.code != -errno.EEXIST:
                raise
        return self.kv(ns)

    # ---- vector indexes

    def create_index(self, name, dim, capacity, kind="hnsw", metric="l2", m=0,
                     ef_construction=0, ef_search=0, mode=None, placement=None, cls=None):
        """A new index for capacity vectors of dim floats; this handle is its writer."""
        o = _vec.opts(m, ef_construction, ef_search, mode, placement, cls)
        try:
            size = _vec.index_size(kind, dim, capacity, o)
            h = c_void_p()
            check(lib.pool_vec_create(self._handle(), name.encode(), _vec.KINDS[kind],
                                      _vec.METRICS[metric], uint(dim, "dim"), size, o, 0,
                                      byref(h)))
        finally:
            if o is not None:
                lib.pool_vec_opts_free(o)
        return _vec.VectorIndex(self, h, name)

    def open_index(self, name, write=False):
        h = c_void_p()
        check(lib.pool_vec_open(self._handle(), name.encode(), 1 if write else 0, byref(h)))
        return _vec.VectorIndex(self, h, name)

    # ---- snapshots

    def put_snapshot(self, name, data=None, path=None, **opts):
        """Store an image (bytes-like data, or the file at path); opts: page_size, cls,
        mode, parent, diff, state."""
        _snap.put(self, name, data, path, **opts)

    def open_snapshot(self, name):
        h = c_void_p()
        check(lib.pool_snap_open(self._handle(), name.encode(), byref(h)))
        return _snap.Snapshot(self, h, name)

    def remove_snapshot(self, name):
        check(lib.pool_snap_remove(self._handle(), name.encode()))

    def snapshots(self):
        names, n = POINTER(c_char_p)(), c_size_t()
        check(lib.pool_snap_list(self._handle(), byref(names), byref(n)))
        try:
            return [names[i].decode() for i in range(n.value)]
        finally:
            libc.free(names)

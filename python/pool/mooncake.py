"""Mooncake Store's Python API on the pool: code written for
mooncake.store.MooncakeDistributedStore runs on this node's poold by
changing its import to

    from pool.mooncake import MooncakeDistributedStore, ReplicateConfig

Names, arguments and return values follow Mooncake's
docs/source/api-reference/python/mooncake-store.md and its ErrorCode
values (mooncake-store/include/types.h): 0 or a negative code, 1/0/-1 for
is_exist, empty bytes for a get that misses. The differences are listed in
pool-python(3): setup() connects to the local poold (metadata_server,
master_server_addr, protocol and rdma_devices are accepted and not used),
the objects of a tenant are the KV namespace "mooncake-TENANT", made on
first use with global_segment_size as its capacity; ReplicateConfig is
accepted per call but the namespace's replica count holds; buffers need
not be registered (libpool moves the bytes through its own windows).
"""
import errno
from ctypes import byref, c_int, c_size_t, c_void_p

from pool import _adapter as adapter
from pool._lib import POOL_ECOORD, POOL_ELOST, PoolError, lib, size_t, u64
from pool.client import Pool
from pool.kv import _key, _keys

OK = 0
INTERNAL_ERROR = -1
BUFFER_OVERFLOW = -10
NO_AVAILABLE_HANDLE = -200
INVALID_KEY = -400
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
REPLICA_IS_GONE = -712
RPC_FAIL = -900

_CODES = {-errno.ENOENT: OBJECT_NOT_FOUND, -errno.ENOSPC: NO_AVAILABLE_HANDLE,
          -errno.EDQUOT: NO_AVAILABLE_HANDLE, -errno.EINVAL: INVALID_PARAMS,
          -errno.E2BIG: INVALID_PARAMS, -errno.ENAMETOOLONG: INVALID_KEY,
          POOL_ECOORD: RPC_FAIL, POOL_ELOST: REPLICA_IS_GONE}


def _code(rc):
    """Mooncake's ErrorCode for a libpool status."""
    return OK if rc >= 0 else _CODES.get(rc, INTERNAL_ERROR)


def _span(ptr, size):
    """Whether a raw buffer's address and size are integers that fit a pointer and a
    size_t, the address not null: ctypes would wrap them into something else."""
    try:
        return u64(ptr, "an address") != 0 and size_t(size) >= 0
    except (TypeError, ValueError, OverflowError):
        return False


class ReplicateConfig:
    """Accepted as Mooncake's; the namespace's own replica count applies."""

    def __init__(self):
        self.replica_num = 1
        self.with_soft_pin = False
        self.with_hard_pin = False
        self.preferred_segment = ""
        self.prefer_alloc_in_same_node = ""
        self.group_ids = None


class MooncakeDistributedStore:
    def __init__(self):
        self._pool = None
        self._kv = None
        self._hostname = ""

    # ---- set-up

    def setup(self, local_hostname, metadata_server=None, global_segment_size=16 << 20,
              local_buffer_size=16 << 20, protocol="tcp", rdma_devices="",
              master_server_addr="", engine=None, enable_ssd_offload=False,
              ssd_offload_path="", tenant_id="default"):
        if isinstance(local_hostname, dict):
            d = local_hostname
            local_hostname = d.get("local_hostname", "")
            global_segment_size = int(d.get("global_segment_size", global_segment_size))
            tenant_id = d.get("tenant_id", tenant_id)
        try:
            self._pool = Pool()
            ns = "mooncake-" + tenant_id
            self._kv = self._pool.open_kv(ns, max(int(global_segment_size), 1 << 20))
        except PoolError as e:
            self.close()
            return _code(e.code)
        self._hostname = local_hostname
        return OK

    def close(self):
        adapter.release(self._kv, self._pool)
        self._kv = self._pool = None
        return OK

    def get_hostname(self):
        return self._hostname

    def _h(self):
        if self._kv is None:
            raise RuntimeError("MooncakeDistributedStore: setup() first")
        return self._kv._handle()

    # ---- objects

    def put(self, key, value, config=None):
        try:
            self._kv.put(key, value)
        except PoolError as e:
            return _code(e.code)
        return OK

    def put_parts(self, key, *parts, config=None):
        return self.put(key, b"".join(bytes(p) for p in parts), config)

    def get(self, key):
        try:
            v = self._kv.get(key)
        except PoolError:
            return b""
        return v if v is not None else b""

    def put_batch(self, keys, values, config=None):
        try:
            status = self._kv.put_batch(keys, values)
        except PoolError as e:
            return _code(e.code)
        return next((_code(s) for s in status if s < 0), OK)

    def get_batch(self, keys):
        return [self.get(k) for k in keys] if keys else []

    def remove(self, key, force=False):
        kp, kl, _k = _key(key)
        rc = lib.pool_kv_remove(self._h(), kp, kl)
        return _code(rc)

    def batch_remove(self, keys, force=False):
        return [self.remove(k) for k in keys]

    def is_exist(self, key):
        kp, kl, _k = _key(key)
        rc = lib.pool_kv_exists(self._h(), kp, kl)
        return rc if rc >= 0 else -1

    def batch_is_exist(self, keys):
        return [self.is_exist(k) for k in keys]

    def get_size(self, key):
        kp, kl, _k = _key(key)
        vlen = c_size_t()
        rc = lib.pool_kv_get(self._h(), kp, kl, None, 0, byref(vlen))
        return vlen.value if rc >= 0 else _code(rc)

    # ---- zero-copy: raw addresses, as Mooncake's engines pass them

    def register_buffer(self, buffer_ptr, size):
        return OK if _span(buffer_ptr, size) and size > 0 else INVALID_PARAMS

    def unregister_buffer(self, buffer_ptr):
        return OK

    def put_from(self, key, buffer_ptr, size, config=None):
        if not _span(buffer_ptr, size):
            return INVALID_PARAMS
        kp, kl, _k = _key(key)
        return _code(lib.pool_kv_put(self._h(), kp, kl, c_void_p(buffer_ptr), size))

    def get_into(self, key, buffer_ptr, size):
        """Bytes read, or a negative code (BUFFER_OVERFLOW: the buffer is smaller)."""
        if not _span(buffer_ptr, size):
            return INVALID_PARAMS
        kp, kl, _k = _key(key)
        vlen = c_size_t()
        rc = lib.pool_kv_get(self._h(), kp, kl, c_void_p(buffer_ptr), size, byref(vlen))
        if rc < 0:
            return _code(rc)
        return vlen.value if vlen.value <= size else BUFFER_OVERFLOW

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        n = len(keys)
        if len(buffer_ptrs) != n or len(sizes) != n or \
                not all(map(_span, buffer_ptrs, sizes)):
            return [INVALID_PARAMS] * n
        kp, kl, _keep = _keys(keys)
        vp = (c_void_p * n)(*buffer_ptrs)
        vl = (c_size_t * n)(*sizes)
        status = (c_int * n)()
        rc = lib.pool_kv_put_batch(self._h(), n, kp, kl, vp, vl, status)
        if rc < 0:
            return [_code(rc)] * n
        return [_code(s) for s in status]

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        n = len(keys)
        if len(buffer_ptrs) != n or len(sizes) != n or \
                not all(map(_span, buffer_ptrs, sizes)):
            return [INVALID_PARAMS] * n
        kp, kl, _keep = _keys(keys)
        bp = (c_void_p * n)(*buffer_ptrs)
        bl = (c_size_t * n)(*sizes)
        vlens, status = (c_size_t * n)(), (c_int * n)()
        rc = lib.pool_kv_get_batch(self._h(), n, kp, kl, bp, bl, vlens, status)
        if rc < 0:
            return [_code(rc)] * n
        return [_code(status[i]) if status[i] < 0 else
                vlens[i] if vlens[i] <= sizes[i] else BUFFER_OVERFLOW for i in range(n)]



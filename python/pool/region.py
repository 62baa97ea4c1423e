"""Named regions of pool memory: reads, writes, atomics, batches, and a
zero-copy view of a region that lives on this node."""
from ctypes import byref, c_uint64, c_void_p

from pool._lib import U64_MAX, check, integer, lib, memory, readable, size_t, u64, writable


class Region:
    """An open region (Pool.create_region() or Pool.open_region()); close() ends its lease."""

    def __init__(self, pool, handle, name):
        self._pool = pool
        self._h = handle
        self.name = name
        self.size = lib.pool_region_size(handle)

    def _handle(self):
        if self._h is None:
            raise ValueError("region %r is closed" % self.name)
        return self._h

    @property
    def gva(self):
        """The region's global virtual address."""
        return lib.pool_region_gva(self._handle())

    def read(self, offset, length):
        """length bytes at offset, as bytes."""
        if size_t(length) > self.size:
            raise ValueError("%d bytes: region %r has %d" % (length, self.name, self.size))
        buf = bytearray(length)
        self.read_into(offset, buf)
        return bytes(buf)

    def read_into(self, offset, buf):
        """Fill buf (any writable buffer: bytearray, numpy array...) from offset."""
        offset = u64(offset)
        ptr, n, _keep = writable(buf)
        check(lib.pool_region_read(self._handle(), offset, ptr, n))

    def write(self, offset, data):
        """Write data (any bytes-like object) at offset; visible to others on return."""
        offset = u64(offset)
        ptr, n, _keep = readable(data)
        check(lib.pool_region_write(self._handle(), offset, ptr, n))

    def map(self):
        """A memoryview of the whole region, for loads and stores in place.

        Only for a region on this node (else PoolError, -EREMOTE). The view is
        valid until the region is closed: do not use it after close().
        """
        addr = c_void_p()
        check(lib.pool_region_map(self._handle(), byref(addr)))
        return memory(addr.value, self.size)

    def fetch_add(self, offset, add):
        """Atomically add to the 64-bit word at offset (8-byte aligned); the old value.
        add may be negative (the word wraps as a uint64_t does), from -2**63 to 2**64 - 1."""
        offset = u64(offset)
        add = integer(add, "add", U64_MAX) if add >= 0 else -integer(-add, "-add", 2**63)
        old = c_uint64()
        check(lib.pool_region_fetch_add(self._handle(), offset, add & U64_MAX, byref(old)))
        return old.value

    def compare_swap(self, offset, expect, desired):
        """Atomically set the word at offset to desired if it is expect; the old value."""
        offset, expect, desired = u64(offset), u64(expect, "expect"), u64(desired, "desired")
        old = c_uint64()
        check(lib.pool_region_compare_swap(self._handle(), offset, expect, desired, byref(old)))
        return old.value

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(lib.pool_region_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<pool.Region %r, %d bytes%s>" % (self.name, self.size,
                                                 "" if self._h else ", closed")


class Batch:
    """Reads and writes in flight at once, one wait (Pool.batch()); one thread's.

    Buffers must stay alive until wait() (or the end of a with block) returns.
    """

    def __init__(self, pool):
        self._pool = pool
        h = c_void_p()
        check(lib.pool_batch_new(pool._handle(), byref(h)))
        self._h = h
        self._keep = []

    def read(self, region, offset, buf):
        offset = u64(offset)
        ptr, n, keep = writable(buf)
        self._keep.append(keep)
        check(lib.pool_batch_read(self._h, region._handle(), offset, ptr, n))

    def write(self, region, offset, data):
        offset = u64(offset)
        ptr, n, keep = readable(data)
        self._keep.append(keep)
        check(lib.pool_batch_write(self._h, region._handle(), offset, ptr, n))

    def wait(self):
        """Until every transfer is complete; the first error raises."""
        try:
            check(lib.pool_batch_wait(self._h))
        finally:
            self._keep = []

    def close(self):
        if self._h is not None:
            lib.pool_batch_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        try:
            if exc_type is None:
                self.wait()
        finally:
            self.close()


def region_info(pool, name):
    """What a region is, by name, as a dict."""
    info = c_void_p()
    check(lib.pool_region_stat(pool._handle(), name.encode(), byref(info)))
    try:
        return {
            "size": lib.pool_region_info_size(info),
            "class": lib.pool_region_info_class(info).decode(),
            "placement": lib.pool_region_info_placement(info).decode(),
            "mode": lib.pool_region_info_mode(info),
            "uid": lib.pool_region_info_uid(info),
            "gid": lib.pool_region_info_gid(info),
            "leases": lib.pool_region_info_leases(info),
            "nodes": lib.pool_region_info_nodes(info),
        }
    finally:
        lib.pool_region_info_free(info)


"""Snapshots: memory images stored once for the pool, read back or cloned
copy-on-write from the node's shared copy."""
import os
from ctypes import byref, c_size_t, c_uint64, c_void_p

from pool._lib import check, lib, libc, memory, readable, size_t, u64, uint, writable


def opts(page_size=None, cls=None, mode=None, parent=None, diff=False, state=None):
    """A pool_snap_opts handle (free with lib.pool_snap_opts_free), or None for the defaults."""
    if page_size is None and cls is None and mode is None and parent is None and \
            state is None and not diff:
        return None, None
    o = c_void_p()
    check(lib.pool_snap_opts_new(byref(o)))
    keep = None
    try:
        if page_size is not None:
            check(lib.pool_snap_opts_set_page_size(o, u64(page_size, "page_size")))
        if cls is not None:
            check(lib.pool_snap_opts_set_class(o, cls.encode()))
        if mode is not None:
            check(lib.pool_snap_opts_set_mode(o, uint(mode, "mode")))
        if parent is not None:
            check(lib.pool_snap_opts_set_parent(o, parent.encode()))
        if diff:
            check(lib.pool_snap_opts_set_diff(o, 1))
        if state is not None:
            sp, sl, keep = readable(state)
            check(lib.pool_snap_opts_set_state(o, sp, sl))
    except BaseException:
        lib.pool_snap_opts_free(o)
        raise
    return o, keep


class Clone:
    """A copy-on-write clone of a snapshot's image: .memory is a writable view of it,
    its writes its own; close() unmaps it."""

    def __init__(self, addr, size):
        self._addr = addr
        self.size = size
        self.memory = memory(addr, size)

    def close(self):
        if self._addr is not None:
            self.memory.release()
            libc.munmap(self._addr, self.size)
            self._addr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Save:
    """A save of a running Clone as a snapshot of its own (pool_snap_save(3)):
    made ready by Snapshot.save(); begin() while nothing writes the clone (it copies
    the pages written), then end(name, ...) while it runs on (it stores them)."""

    def __init__(self, handle):
        self._h = handle

    def _handle(self):
        if self._h is None:
            raise ValueError("the save is over")
        return self._h

    def begin(self):
        """The pages the clone wrote, found and copied aside; returns how many."""
        check(lib.pool_snap_save_begin(self._handle()))
        return lib.pool_snap_save_pages(self._h)

    def end(self, name, cls=None, mode=None):
        """Store the save as snapshot name (its parent: the clone's snapshot); frees it."""
        o, _keep = opts(cls=cls, mode=mode)
        try:
            check(lib.pool_snap_save_end(self._handle(), name.encode(), o))
        finally:
            if o is not None:
                lib.pool_snap_opts_free(o)
            self.close()

    def close(self):
        if self._h is not None:
            lib.pool_snap_save_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Snapshot:
    """An open snapshot (Pool.open_snapshot())."""

    def __init__(self, pool, handle, name):
        self._pool = pool
        self._h = handle
        self.name = name
        self.size = lib.pool_snap_size(handle)
        self.page_size = lib.pool_snap_page_size(handle)

    def _handle(self):
        if self._h is None:
            raise ValueError("snapshot %r is closed" % self.name)
        return self._h

    def read(self, offset=0, length=None):
        """Bytes of the image (all of it by default)."""
        offset = u64(offset)
        length = max(self.size - offset, 0) if length is None else size_t(length)
        if length > self.size:
            raise ValueError("%d bytes: snapshot %r has %d" % (length, self.name, self.size))
        buf = bytearray(length)
        self.read_into(offset, buf)
        return bytes(buf)

    def read_into(self, offset, buf):
        offset = u64(offset)
        ptr, n, _keep = writable(buf)
        check(lib.pool_snap_read(self._handle(), offset, ptr, n))

    def state(self):
        """The state blob stored with the image (b"" if none)."""
        n = c_size_t()
        check(lib.pool_snap_state(self._handle(), None, 0, byref(n)))
        buf = bytearray(n.value)
        if n.value:
            ptr, ln, _keep = writable(buf)
            check(lib.pool_snap_state(self._handle(), ptr, ln, byref(n)))
        return bytes(buf)

    def clone(self, lazy=False):
        """A Clone of the node's copy; lazy: usable before the node's copy is full (see
        pool_snap_clone_lazy(3): do not fork until wait())."""
        addr = c_void_p()
        fn = lib.pool_snap_clone_lazy if lazy else lib.pool_snap_clone
        check(fn(self._handle(), byref(addr)))
        return Clone(addr.value, self.size)

    def wait(self):
        """Until the node's copy behind this handle's lazy clones is full."""
        check(lib.pool_snap_clone_wait(self._handle()))

    def save(self, clone):
        """A Save of clone (one of this snapshot's Clones), made ready while it runs."""
        if clone._addr is None:
            raise ValueError("the clone is closed")
        h = c_void_p()
        check(lib.pool_snap_save_new(self._handle(), c_void_p(clone._addr), byref(h)))
        return Save(h)

    def place(self):
        """Make the node's copy now."""
        check(lib.pool_snap_place(self._handle()))

    def close(self):
        if self._h is not None:
            lib.pool_snap_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def serve_save(socket, pid, name):
    """Save the sandbox of the VMM pid that `poolctl snap serve --track` (or
    pool_snap_serve() with POOL_SNAP_TRACK) serves on the unix socket path
    socket, as snapshot name: the pages it wrote since its restore, over the
    snapshot it was restored from. Returns once it is stored: the pages
    written since the VMM's last save, the pages of the whole diff, and the
    microseconds the VMM was held."""
    pages, diff, held = c_uint64(), c_uint64(), c_uint64()
    check(lib.pool_snap_serve_save(os.fsencode(socket), pid, name.encode(), byref(pages),
                                   byref(diff), byref(held)))
    return {"pages": pages.value, "diff": diff.value, "held_us": held.value}


def put(pool, name, data=None, path=None, **kw):
    """Store an image from a bytes-like object or a file."""
    if (data is None) == (path is None):
        raise ValueError("give data or path")
    o, _keep = opts(**kw)
    try:
        if path is not None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                check(lib.pool_snap_put_fd(pool._handle(), name.encode(), fd, o))
            finally:
                os.close(fd)
        else:
            ptr, n, _k = readable(data)
            check(lib.pool_snap_put(pool._handle(), name.encode(), ptr, n, o))
    finally:
        if o is not None:
            lib.pool_snap_opts_free(o)

"""libpool through ctypes: the library, its prototypes, errors and buffers.

The library is found as $POOL_LIBPOOL (a path, as the tests set it to the
build tree's), else as libpool.so.0 where the dynamic linker looks. ctypes
releases the GIL for the length of every call into it, so transfers run
while other Python threads do.
"""
import ctypes
import operator
import os
from ctypes import (POINTER, c_char, c_char_p, c_float, c_int, c_size_t, c_uint, c_uint8,
                    c_uint32, c_uint64, c_void_p)

lib = ctypes.CDLL(os.environ.get("POOL_LIBPOOL", "libpool.so.0"), use_errno=True)

POOL_EVERSION = -100001
POOL_EPROTOCOL = -100002
POOL_ECOORD = -100003
POOL_ELOST = -100004


class PoolError(OSError):
    """A libpool call failed: code is its POOL_E* or -errno, message pool_errormsg()."""

    def __init__(self, code, message):
        self.code = code
        text = lib.pool_strerror(code).decode(errors="replace")
        super().__init__(-code if -code < 100000 else None, message or text)
        self.message = message or text

    def __str__(self):
        return self.message


def check(rc):
    """rc when it is not an error, else raise PoolError with the calling thread's message."""
    if rc < 0:
        raise PoolError(rc, lib.pool_errormsg().decode(errors="replace"))
    return rc


U64_MAX = 2**64 - 1
SIZE_MAX = 2**(8 * ctypes.sizeof(c_size_t)) - 1
UINT_MAX = 2**(8 * ctypes.sizeof(c_uint)) - 1


def integer(value, what, top):
    """value as an int in [0, top]: ctypes would wrap anything else into the C type
    without a word (an offset of 2**64 read offset 0), so it raises instead, ValueError
    for a negative value and OverflowError for one over top."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (what, type(value).__name__)) \
            from None
    if n < 0:
        raise ValueError("%s must not be negative (%d)" % (what, n))
    if n > top:
        raise OverflowError("%s of %d does not fit in %d bits" % (what, n, top.bit_length()))
    return n


def u64(value, what="an offset"):
    """value checked to fit a uint64_t (integer())."""
    return integer(value, what, U64_MAX)


def size_t(value, what="a length"):
    """value checked to fit a size_t (integer())."""
    return integer(value, what, SIZE_MAX)


def uint(value, what):
    """value checked to fit an unsigned int (integer())."""
    return integer(value, what, UINT_MAX)


_EMPTY = ctypes.create_string_buffer(1)  # where an empty buffer points
_from_buffer = c_char.from_buffer
_addressof = ctypes.addressof


def _view(data):
    """A C-contiguous memoryview of data. The binding takes a caller's memory only
    through the buffer protocol, whose exporter vouches for the address and length,
    never from an attribute such as __array_interface__ that any object can fill with
    any address. (numpy arrays export it; so do bytearray, mmap, array.array...)"""
    mv = memoryview(data)
    if not mv.c_contiguous:
        raise ValueError("the buffer must be contiguous")
    return mv


def readable(data):
    """(address, length, keepalive) of any bytes-like object, without a copy where it
    can: the keepalive holds the buffer exported (and so, unmoved) until it goes."""
    if isinstance(data, bytes):
        return ctypes.cast(c_char_p(data), c_void_p), len(data), data
    mv = _view(data)
    n = mv.nbytes
    if n == 0:
        return _addressof(_EMPTY), 0, mv
    if mv.readonly:
        copy = mv.tobytes()
        return ctypes.cast(c_char_p(copy), c_void_p), n, copy
    # (A one-byte view at its start: ctypes keeps the export; cheaper than an array type.)
    c = _from_buffer(mv)
    return _addressof(c), n, c


def writable(buf):
    """(address, length, keepalive) of a writable bytes-like object (bytearray, numpy,
    mmap...); a read-only one (bytes) raises TypeError."""
    mv = _view(buf)
    if mv.readonly:
        raise TypeError("the buffer must be writable, not a read-only %s" %
                        type(buf).__name__)
    n = mv.nbytes
    if n == 0:
        return _addressof(_EMPTY), 0, mv
    c = _from_buffer(mv)
    return _addressof(c), n, c


def memory(addr, length, readonly=False):
    """A memoryview of length bytes at addr (memory libpool owns, or an engine hands over)."""
    addr = integer(addr, "an address", U64_MAX)
    length = size_t(length)
    if addr == 0 and length > 0:
        raise ValueError("a buffer of %d bytes at address 0" % length)
    view = memoryview((c_char * length).from_address(addr)).cast("B")
    return view.toreadonly() if readonly else view


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


P = c_void_p
PP = POINTER(c_void_p)
_proto("pool_strerror", c_char_p, c_int)
_proto("pool_errormsg", c_char_p)
_proto("pool_version", c_char_p)
_proto("pool_open", c_int, c_char_p, c_uint, PP)
_proto("pool_close", c_int, P)
_proto("pool_status", c_int, P, PP)
_proto("pool_status_free", None, P)
_proto("pool_status_version", c_char_p, P)
_proto("pool_status_role", c_char_p, P)
_proto("pool_status_node_id", c_uint32, P)
_proto("pool_status_uptime_ms", c_uint64, P)
_proto("pool_status_clients", c_uint32, P)
_proto("pool_buf_alloc", c_int, P, c_size_t, PP)
_proto("pool_buf_free", c_int, P, P)

_proto("pool_region_opts_new", c_int, PP)
_proto("pool_region_opts_free", None, P)
_proto("pool_region_opts_set_size", c_int, P, c_uint64)
_proto("pool_region_opts_set_class", c_int, P, c_char_p)
_proto("pool_region_opts_set_placement", c_int, P, c_char_p)
_proto("pool_region_opts_set_mode", c_int, P, c_uint)
_proto("pool_region_opts_set_stripe", c_int, P, c_uint64)
_proto("pool_region_create", c_int, P, c_char_p, P, c_uint, PP)
_proto("pool_region_open", c_int, P, c_char_p, c_uint, PP)
_proto("pool_region_close", c_int, P)
_proto("pool_region_destroy", c_int, P, c_char_p)
_proto("pool_region_keep", c_int, P, c_char_p)
_proto("pool_region_size", c_uint64, P)
_proto("pool_region_gva", c_uint64, P)
_proto("pool_region_read", c_int, P, c_uint64, P, c_size_t)
_proto("pool_region_write", c_int, P, c_uint64, P, c_size_t)
_proto("pool_region_map", c_int, P, PP)
_proto("pool_region_fetch_add", c_int, P, c_uint64, c_uint64, POINTER(c_uint64))
_proto("pool_region_compare_swap", c_int, P, c_uint64, c_uint64, c_uint64, POINTER(c_uint64))
_proto("pool_region_stat", c_int, P, c_char_p, PP)
_proto("pool_region_info_free", None, P)
_proto("pool_region_info_size", c_uint64, P)
_proto("pool_region_info_class", c_char_p, P)
_proto("pool_region_info_placement", c_char_p, P)
_proto("pool_region_info_mode", c_uint, P)
_proto("pool_region_info_uid", c_uint32, P)
_proto("pool_region_info_gid", c_uint32, P)
_proto("pool_region_info_leases", c_uint32, P)
_proto("pool_region_info_nodes", c_uint32, P)
_proto("pool_batch_new", c_int, P, PP)
_proto("pool_batch_free", None, P)
_proto("pool_batch_read", c_int, P, P, c_uint64, P, c_size_t)
_proto("pool_batch_write", c_int, P, P, c_uint64, P, c_size_t)
_proto("pool_batch_wait", c_int, P)

_proto("pool_kv_open", c_int, P, c_char_p, PP)
_proto("pool_kv_close", None, P)
_proto("pool_kv_create", c_int, P, c_char_p, c_uint64, c_uint)
_proto("pool_kv_drop", c_int, P, c_char_p)
_proto("pool_kv_put", c_int, P, P, c_size_t, P, c_size_t)
_proto("pool_kv_put_pinned", c_int, P, P, c_size_t, P, c_size_t, c_uint, c_uint64)
_proto("pool_kv_get", c_int, P, P, c_size_t, P, c_size_t, POINTER(c_size_t))
_proto("pool_kv_exists", c_int, P, P, c_size_t)
_proto("pool_kv_remove", c_int, P, P, c_size_t)
_proto("pool_kv_put_batch", c_int, P, c_size_t, PP, POINTER(c_size_t), PP, POINTER(c_size_t),
       POINTER(c_int))
_proto("pool_kv_put_batch_pinned", c_int, P, c_size_t, PP, POINTER(c_size_t), PP,
       POINTER(c_size_t), c_uint, c_uint64, POINTER(c_int))
_proto("pool_kv_get_batch", c_int, P, c_size_t, PP, POINTER(c_size_t), PP, POINTER(c_size_t),
       POINTER(c_size_t), POINTER(c_int))
_proto("pool_kv_acquire", c_int, P, P, c_size_t, PP, POINTER(c_size_t), PP)
_proto("pool_kv_release", c_int, P)
_proto("pool_kv_reserve", c_int, P, P, c_size_t, c_size_t, PP, PP)
_proto("pool_kv_commit", c_int, P)
_proto("pool_kv_commit_pinned", c_int, P, c_uint, c_uint64)
_proto("pool_kv_abort", c_int, P)
_proto("pool_kv_ref_local", c_int, P)
_proto("pool_kv_get_region", c_int, P, P, c_size_t, P, c_uint64, c_size_t, POINTER(c_size_t))
_proto("pool_kv_put_region", c_int, P, P, c_size_t, P, c_uint64, c_size_t)
_proto("pool_kv_match", c_int, P, c_size_t, PP, POINTER(c_size_t), POINTER(c_size_t))
_proto("pool_kv_hash_chain", c_int, POINTER(c_uint32), c_size_t, c_size_t, P, P, c_size_t,
       POINTER(c_uint8), c_size_t)

_proto("pool_vec_opts_new", c_int, PP)
_proto("pool_vec_opts_free", None, P)
_proto("pool_vec_opts_set_hnsw", c_int, P, c_uint, c_uint, c_uint)
_proto("pool_vec_opts_set_mode", c_int, P, c_uint)
_proto("pool_vec_opts_set_placement", c_int, P, c_char_p)
_proto("pool_vec_opts_set_class", c_int, P, c_char_p)
_proto("pool_vec_size", c_int, c_uint, c_uint, c_uint64, P, POINTER(c_uint64))
_proto("pool_vec_create", c_int, P, c_char_p, c_uint, c_uint, c_uint, c_uint64, P, c_uint, PP)
_proto("pool_vec_open", c_int, P, c_char_p, c_uint, PP)
_proto("pool_vec_close", c_int, P)
_proto("pool_vec_add", c_int, P, c_uint64, POINTER(c_float))
_proto("pool_vec_add_batch", c_int, P, c_size_t, POINTER(c_uint64), POINTER(c_float))
_proto("pool_vec_remove", c_int, P, c_uint64)
_proto("pool_vec_search", c_int, P, POINTER(c_float), c_uint, POINTER(c_uint64), POINTER(c_float))
_proto("pool_vec_search_batch", c_int, P, c_size_t, POINTER(c_float), c_uint, POINTER(c_uint64),
       POINTER(c_float), POINTER(c_uint))
_proto("pool_vec_set_ef", c_int, P, c_uint)
_proto("pool_vec_stat", c_int, P, PP)
_proto("pool_vec_info_free", None, P)
for _f in ("kind", "metric", "dim", "m", "ef_construction", "ef_search"):
    _proto("pool_vec_info_" + _f, c_uint, P)
for _f in ("count", "deleted", "capacity", "used", "size"):
    _proto("pool_vec_info_" + _f, c_uint64, P)
_proto("pool_vec_info_writer", c_uint32, P)

_proto("pool_snap_opts_new", c_int, PP)
_proto("pool_snap_opts_free", None, P)
_proto("pool_snap_opts_set_page_size", c_int, P, c_uint64)
_proto("pool_snap_opts_set_class", c_int, P, c_char_p)
_proto("pool_snap_opts_set_mode", c_int, P, c_uint)
_proto("pool_snap_opts_set_parent", c_int, P, c_char_p)
_proto("pool_snap_opts_set_diff", c_int, P, c_int)
_proto("pool_snap_opts_set_state", c_int, P, P, c_size_t)
_proto("pool_snap_put", c_int, P, c_char_p, P, c_uint64, P)
_proto("pool_snap_put_fd", c_int, P, c_char_p, c_int, P)
_proto("pool_snap_remove", c_int, P, c_char_p)
_proto("pool_snap_list", c_int, P, POINTER(POINTER(c_char_p)), POINTER(c_size_t))
_proto("pool_snap_open", c_int, P, c_char_p, PP)
_proto("pool_snap_close", None, P)
_proto("pool_snap_size", c_uint64, P)
_proto("pool_snap_page_size", c_uint64, P)
_proto("pool_snap_read", c_int, P, c_uint64, P, c_size_t)
_proto("pool_snap_state", c_int, P, P, c_size_t, POINTER(c_size_t))
_proto("pool_snap_clone", c_int, P, PP)
_proto("pool_snap_clone_lazy", c_int, P, PP)
_proto("pool_snap_clone_wait", c_int, P)
_proto("pool_snap_place", c_int, P)
_proto("pool_snap_save_new", c_int, P, P, PP)
_proto("pool_snap_save_begin", c_int, P)
_proto("pool_snap_save_pages", c_uint64, P)
_proto("pool_snap_save_end", c_int, P, c_char_p, P)
_proto("pool_snap_save_free", None, P)
_proto("pool_snap_serve_save", c_int, c_char_p, c_int, c_char_p, POINTER(c_uint64),
       POINTER(c_uint64), POINTER(c_uint64))

libc = ctypes.CDLL(None, use_errno=True)
libc.munmap.restype = c_int
libc.munmap.argtypes = [c_void_p, c_size_t]
libc.free.restype = None
libc.free.argtypes = [c_void_p]

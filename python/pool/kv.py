"""The KV cache: namespaces of byte keys to byte values in pool memory,
single and batched, prefix matching, the block hash chain, and zero-copy
reads and writes (acquire, reserve)."""
import contextlib
import errno
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint8, c_uint32, c_void_p, cast

from pool._lib import PoolError, check, lib, memory, readable, size_t, u64, uint, writable

DRAM_ONLY = 0x1
PERSISTENT = 0x2
NO_EVICT = 0x4
KEY_MAX = 256
# A put's pin (pool_kv_put_pinned()): KEEP leaves the key's as it was.
PIN_KEEP, PIN_NONE, PIN_SOFT, PIN_HARD = 0, 1, 2, 3
PIN_MS_MAX = 1 << 40
VALUE_MAX = 64 << 20
_GUESS = 64 << 10  # a get's first buffer: values larger than this take a second call


def _pin(pin):
    if pin not in (PIN_KEEP, PIN_NONE, PIN_SOFT, PIN_HARD):
        raise ValueError("pin: PIN_KEEP, PIN_NONE, PIN_SOFT or PIN_HARD")
    return pin


def _pin_ms(ms):
    if not isinstance(ms, int) or not 0 <= ms <= PIN_MS_MAX:
        raise ValueError("pin_ms: 0 (as long as the value lives) to 2**40")
    return ms


def flags(dram_only=False, persistent=False, no_evict=False, replicas=1, mode=None):
    """pool_kv_create() flags from keywords."""
    if not 1 <= replicas <= 15:
        raise ValueError("replicas: 1 to 15, not %r" % (replicas,))
    if mode is not None and uint(mode, "mode") > 0o777:
        raise ValueError("mode %o is not a permission mode" % mode)
    f = (DRAM_ONLY if dram_only else 0) | (PERSISTENT if persistent else 0)
    f |= (NO_EVICT if no_evict else 0) | ((replicas & 0xF) << 8 if replicas > 1 else 0)
    if mode is not None:
        f |= ((mode & 0o777) | 0o1000) << 16
    return f


def _key(key):
    if isinstance(key, str):
        key = key.encode()
    return readable(key)


def _vector(items, conv):
    """ctypes arrays of pointers and lengths for a list of buffers."""
    n = len(items)
    ptrs, lens, keep = (c_void_p * n)(), (c_size_t * n)(), []
    for i, item in enumerate(items):
        p, ln, k = conv(item)
        ptrs[i], lens[i] = p, ln
        keep.append(k)
    return ptrs, lens, keep


def _keys(keys):
    """ctypes arrays of pointers and lengths for a list of keys: bytes (the common case)
    go into a c_char_p array in one step, anything else as _vector() takes it."""
    keys = [k.encode() if isinstance(k, str) else k for k in keys]
    if not all(type(k) is bytes for k in keys):
        return _vector(keys, readable)
    n = len(keys)
    ptrs = (c_char_p * n)(*keys)
    return cast(ptrs, POINTER(c_void_p)), (c_size_t * n)(*map(len, keys)), (keys, ptrs)


class KV:
    """An open namespace (Pool.kv()); keys are bytes (str is taken as UTF-8)."""

    def __init__(self, pool, handle, ns):
        self._pool = pool
        self._h = handle
        self.namespace = ns

    def _handle(self):
        if self._h is None:
            raise ValueError("namespace %r is closed" % self.namespace)
        return self._h

    def put(self, key, value, pin=PIN_KEEP, pin_ms=0):
        """Store value (any bytes-like object) under key: reserve, write, commit; pinned
        (PIN_SOFT, PIN_HARD) for pin_ms, or as long as it lives with 0."""
        kp, kl, _k = _key(key)
        vp, vl, _v = readable(value)
        check(lib.pool_kv_put_pinned(self._handle(), kp, kl, vp, vl, _pin(pin), _pin_ms(pin_ms)))

    def get(self, key):
        """The value as bytes, or None for a miss."""
        kp, kl, _k = _key(key)
        size = _GUESS
        while True:
            buf = bytearray(size)
            bp, bl, _b = writable(buf)
            vlen = c_size_t()
            rc = lib.pool_kv_get(self._handle(), kp, kl, bp, bl, byref(vlen))
            if rc == -errno.ENOENT:
                return None
            check(rc)
            if vlen.value <= size:
                return bytes(memoryview(buf)[:vlen.value])
            size = vlen.value  # a second try with room for it all (it may change meanwhile)

    def get_into(self, key, buf):
        """Copy the value into buf (writable, e.g. a numpy array); its full length, or None."""
        kp, kl, _k = _key(key)
        bp, bl, _b = writable(buf)
        vlen = c_size_t()
        rc = lib.pool_kv_get(self._handle(), kp, kl, bp, bl, byref(vlen))
        if rc == -errno.ENOENT:
            return None
        check(rc)
        return vlen.value

    def exists(self, key):
        kp, kl, _k = _key(key)
        return check(lib.pool_kv_exists(self._handle(), kp, kl)) == 1

    def remove(self, key):
        """Remove key; False if it was not there."""
        kp, kl, _k = _key(key)
        rc = lib.pool_kv_remove(self._handle(), kp, kl)
        if rc == -errno.ENOENT:
            return False
        check(rc)
        return True

    def __contains__(self, key):
        return self.exists(key)

    def put_batch(self, keys, values, pin=PIN_KEEP, pin_ms=0):
        """Store values[i] under keys[i], one round trip, pinned as put(); each key's
        status (0 or -errno)."""
        if len(keys) != len(values):
            raise ValueError("as many values as keys")
        n = len(keys)
        kp, kl, _k = _keys(keys)
        vp, vl, _v = _vector(values, readable)
        status = (c_int * n)()
        check(lib.pool_kv_put_batch_pinned(self._handle(), n, kp, kl, vp, vl, _pin(pin),
                                           _pin_ms(pin_ms), status))
        return list(status)

    def get_batch_into(self, keys, bufs):
        """Fill bufs[i] with keys[i]'s value, one round trip; each value's length, or None."""
        if len(keys) != len(bufs):
            raise ValueError("as many buffers as keys")
        n = len(keys)
        kp, kl, _k = _keys(keys)
        bp, bl, _b = _vector(bufs, writable)
        vlens, status = (c_size_t * n)(), (c_int * n)()
        check(lib.pool_kv_get_batch(self._handle(), n, kp, kl, bp, bl, vlens, status))
        out = []
        for i in range(n):
            if status[i] == -errno.ENOENT:
                out.append(None)
            elif status[i] < 0:
                raise PoolError(status[i], "key %d of the batch: %s" %
                                (i, lib.pool_strerror(status[i]).decode()))
            else:
                out.append(vlens[i])
        return out

    def get_batch(self, keys, max_size):
        """keys' values as bytes (None for a miss), each at most max_size bytes long."""
        if size_t(max_size, "max_size") > VALUE_MAX:
            raise ValueError("max_size %d is over the largest value, %d" % (max_size, VALUE_MAX))
        bufs = [bytearray(max_size) for _ in keys]
        lens = self.get_batch_into(keys, bufs)
        return [None if ln is None else bytes(memoryview(b)[:min(ln, max_size)])
                for b, ln in zip(bufs, lens)]

    def match(self, keys):
        """How many leading keys of the list (a prompt's block hashes) are present."""
        n = len(keys)
        kp, kl, _k = _keys(keys)
        count = c_size_t()
        check(lib.pool_kv_match(self._handle(), n, kp, kl, byref(count)))
        return count.value

    @contextlib.contextmanager
    def acquire(self, key):
        """with kv.acquire(key) as view: the value, read in place when it lives in memory
        this process maps (else a copy), pinned until the block ends; KeyError on a miss."""
        kp, kl, _k = _key(key)
        data, length, ref = c_void_p(), c_size_t(), c_void_p()
        rc = lib.pool_kv_acquire(self._handle(), kp, kl, byref(data), byref(length), byref(ref))
        if rc == -errno.ENOENT:
            raise KeyError(key)
        check(rc)
        view = memory(data.value, length.value, readonly=True) if length.value else \
            memoryview(b"")
        try:
            yield view
        finally:
            view.release()
            check(lib.pool_kv_release(ref))

    @contextlib.contextmanager
    def reserve(self, key, length, pin=PIN_KEEP, pin_ms=0):
        """with kv.reserve(key, n) as view: write the value in place (else staged); it is
        committed (pinned as put()) when the block ends, aborted if it raises."""
        pin, pin_ms = _pin(pin), _pin_ms(pin_ms)
        length = size_t(length)
        kp, kl, _k = _key(key)
        data, ref = c_void_p(), c_void_p()
        check(lib.pool_kv_reserve(self._handle(), kp, kl, length, byref(data), byref(ref)))
        view = memory(data.value, length) if length else memoryview(bytearray())
        try:
            yield view
        except BaseException:
            view.release()
            lib.pool_kv_abort(ref)
            raise
        view.release()
        check(lib.pool_kv_commit_pinned(ref, pin, pin_ms))

    def get_region(self, key, region, offset, max_len):
        """Copy the value into a region at offset; its length, or None for a miss."""
        offset, max_len = u64(offset), size_t(max_len, "max_len")
        kp, kl, _k = _key(key)
        vlen = c_size_t()
        rc = lib.pool_kv_get_region(self._handle(), kp, kl, region._handle(), offset, max_len,
                                    byref(vlen))
        if rc == -errno.ENOENT:
            return None
        check(rc)
        return vlen.value

    def put_region(self, key, region, offset, length):
        """Store [offset, offset + length) of a region as key's value."""
        offset, length = u64(offset), size_t(length)
        kp, kl, _k = _key(key)
        check(lib.pool_kv_put_region(self._handle(), kp, kl, region._handle(), offset, length))

    def close(self):
        if self._h is not None:
            lib.pool_kv_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<pool.KV %r%s>" % (self.namespace, "" if self._h else ", closed")


def hash_chain(tokens, block_tokens, parent=None, salt=b""):
    """The chained 16-byte hashes of whole blocks of token ids (see pool_kv_hash_chain(3)):
    block i's is XXH3-128 over block i-1's hash (parent, or zeros, for block 0), salt and
    the block's tokens as little-endian uint32."""
    toks = [int(t) for t in tokens]
    if toks and (min(toks) < 0 or max(toks) > 0xFFFFFFFF):
        raise ValueError("token ids are uint32: %d is not" %
                         next(t for t in toks if not 0 <= t <= 0xFFFFFFFF))
    block_tokens = size_t(block_tokens, "block_tokens")
    n = len(toks)
    arr = (c_uint32 * n)(*toks)
    nblocks = n // block_tokens if block_tokens else 0
    out = (c_uint8 * (16 * max(nblocks, 1)))()
    if parent is not None and len(parent) != 16:
        raise ValueError("a parent hash is 16 bytes")
    pp = cast(c_char_p(bytes(parent)), c_void_p) if parent is not None else None
    sp, sl, _s = readable(salt)
    got = check(lib.pool_kv_hash_chain(arr, n, block_tokens, pp, sp, sl,
                                       cast(out, POINTER(c_uint8)), nblocks))
    raw = bytes(out)
    return [raw[16 * i:16 * (i + 1)] for i in range(got)]


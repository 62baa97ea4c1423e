"""What the binding passes to libpool: every offset, length and count fits its C type
(uint64_t, size_t, unsigned) and is not negative, or the call raises ValueError or
OverflowError before C sees it (ctypes would wrap it: an offset of 2**64 read offset 0);
buffers are taken through the buffer protocol only, never from an __array_interface__
that any object can fill with any address; a read-only buffer is no destination.
Against a real poold ($POOL_SOCKET), run by tests/integration/python.sh."""
import array
import ctypes
import errno
import mmap

import numpy as np
import pytest

import pool
from pool.mooncake import INVALID_PARAMS, MooncakeDistributedStore

CANARY = b"canary at offset 0 of the region"
SECRET = b"the interpreter's own memory, not a buffer: " + bytes(range(256))
TOO_BIG = (2**64, 2**64 + 5, 2**70)
NEGATIVE = (-1, -4096, -(2**63))


def address(data):
    """Where a bytes object keeps its bytes."""
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value


class Fake:
    """Not a buffer: an object that says, in __array_interface__, that its bytes are
    at addr (what the binding used to believe, and numpy still does)."""

    def __init__(self, addr, n, readonly=False):
        self.__array_interface__ = {"data": (addr, readonly), "shape": (n,),
                                    "typestr": "|u1", "version": 3, "strides": None}
        self.nbytes = n
        self.shape = (n,)
        self.dtype = np.dtype(np.uint8)


class Sneaky(np.ndarray):
    """A real array whose __array_interface__ names other memory."""

    @property
    def __array_interface__(self):
        return {"data": (address(SECRET), False), "shape": (len(SECRET),), "typestr": "|u1",
                "version": 3, "strides": None}


@pytest.fixture(scope="module")
def p():
    with pool.Pool() as conn:
        yield conn


@pytest.fixture()
def region(p):
    r = p.create_region("py-bounds", 1 << 20)
    r.write(0, CANARY)
    yield r
    r.close()
    p.destroy_region("py-bounds")


def test_offsets_that_do_not_fit_raise(region):
    buf = bytearray(len(CANARY))
    for off in TOO_BIG:
        with pytest.raises(OverflowError):
            region.read_into(off, buf)
        with pytest.raises(OverflowError):
            region.read(off, 4)
        with pytest.raises(OverflowError):
            region.write(off, b"wrapped")
        with pytest.raises(OverflowError):
            region.fetch_add(off, 1)
        with pytest.raises(OverflowError):
            region.compare_swap(off, 0, 1)
    for off in NEGATIVE:
        with pytest.raises(ValueError):
            region.read_into(off, buf)
        with pytest.raises(ValueError):
            region.write(off, b"wrapped")
        with pytest.raises(ValueError):
            region.fetch_add(off, 1)
    with pytest.raises(TypeError):
        region.read_into(1.5, buf)
    assert buf == bytearray(len(CANARY)), "a wrapped offset read offset 0"
    assert region.read(0, len(CANARY)) == CANARY, "a wrapped offset wrote offset 0"
    with pool.Pool().batch() as b:
        for off in (2**64, -1):
            with pytest.raises((OverflowError, ValueError)):
                b.read(region, off, buf)
            with pytest.raises((OverflowError, ValueError)):
                b.write(region, off, b"wrapped")
    assert region.read(0, len(CANARY)) == CANARY


def test_offsets_past_the_region_are_refused_by_libpool(region):
    for off, n in ((2**63, 1), (2**64 - 1, 2), (region.size, 1), (region.size - 1, 2)):
        with pytest.raises(pool.PoolError) as e:
            region.read_into(off, bytearray(n))
        assert e.value.code == -errno.ERANGE
        with pytest.raises(pool.PoolError) as e:
            region.write(off, bytes(n))
        assert e.value.code == -errno.ERANGE
    assert region.read(np.uint64(0), np.int64(len(CANARY))) == CANARY  # numpy integers do


def test_lengths_and_values_that_do_not_fit_raise(region):
    with pytest.raises(ValueError):
        region.read(0, -1)
    with pytest.raises(OverflowError):
        region.read(0, 2**64)
    with pytest.raises(ValueError):
        region.read(0, 2**63)  # fits, but is more than the region: no 8 EiB bytearray
    with pytest.raises(OverflowError):
        region.fetch_add(8, 2**64)
    with pytest.raises(OverflowError):
        region.fetch_add(8, -(2**63) - 1)
    with pytest.raises(ValueError):
        region.compare_swap(8, -1, 0)
    with pytest.raises(OverflowError):
        region.compare_swap(8, 0, 2**64)
    assert region.fetch_add(64, 5) == 0 and region.fetch_add(64, -2) == 5  # negative adds do
    assert region.read(64, 8) == (3).to_bytes(8, "little")


def test_kv_lengths_and_offsets(p, region, namespace):
    with p.kv(namespace) as kv:
        kv.put(b"k", b"value")
        for length in (-1, 2**64):
            with pytest.raises((ValueError, OverflowError)):
                with kv.reserve(b"r", length):
                    pass
            with pytest.raises((ValueError, OverflowError)):
                kv.get_region(b"k", region, 0, length)
            with pytest.raises((ValueError, OverflowError)):
                kv.put_region(b"r", region, 0, length)
            with pytest.raises((ValueError, OverflowError)):
                kv.get_batch([b"k"], length)
        for off in (-1, 2**64):
            with pytest.raises((ValueError, OverflowError)):
                kv.get_region(b"k", region, off, 5)
            with pytest.raises((ValueError, OverflowError)):
                kv.put_region(b"r", region, off, 5)
        assert not kv.exists(b"r")
        assert kv.get_region(b"k", region, 4096, 5) == 5 and region.read(4096, 5) == b"value"
    for bad in ({"replicas": 17}, {"replicas": 0}, {"mode": 0o10000}, {"mode": -1}):
        with pytest.raises(ValueError):
            p.create_kv("py-bounds-ns", 1 << 20, **bad)
    for capacity in (-1, 2**64):
        with pytest.raises((ValueError, OverflowError)):
            p.create_kv("py-bounds-ns", capacity)
    with pytest.raises(ValueError):
        pool.hash_chain([1, 2, -1, 4], 2)
    with pytest.raises(ValueError):
        pool.hash_chain([1, 2, 2**32, 4], 2)
    with pytest.raises(ValueError):
        pool.hash_chain([1, 2, 3, 4], -2)
    with pytest.raises(ValueError):
        p.create_region("py-bounds-2", -4096)
    with pytest.raises(OverflowError):
        p.create_region("py-bounds-2", 2**64 + 4096)


def test_snapshot_offsets(p):
    img = bytes(range(256)) * 64
    with pytest.raises(OverflowError):
        p.put_snapshot("py-bounds-snap", img, page_size=2**64 + 4096)
    p.put_snapshot("py-bounds-snap", img)
    try:
        with p.open_snapshot("py-bounds-snap") as s:
            buf = bytearray(16)
            for off in (-1, 2**64):
                with pytest.raises((ValueError, OverflowError)):
                    s.read_into(off, buf)
                with pytest.raises((ValueError, OverflowError)):
                    s.read(off, 16)
            with pytest.raises(ValueError):
                s.read(0, -1)
            assert buf == bytearray(16)
            with pytest.raises(pool.PoolError):
                s.read_into(2**63, buf)
            assert s.read(256, 4) == bytes(range(4))
    finally:
        p.remove_snapshot("py-bounds-snap")


def test_vector_labels_and_k(p):
    idx = p.create_index("py-bounds-vec", 4, 100, kind="flat")
    try:
        v = np.ones(4, dtype=np.float32)
        for label in (-1, 2**64):
            with pytest.raises((ValueError, OverflowError)):
                idx.add(label, v)
            with pytest.raises((ValueError, OverflowError)):
                idx.add_batch([label], [v])
        with pytest.raises(ValueError):
            idx.add_batch(np.array([-3]), [v])
        for k in (-1, 2**32, 2**64, 1025):
            with pytest.raises((ValueError, OverflowError)):
                idx.search(v, k)
        assert len(idx) == 0
        idx.add_batch([2**64 - 2], [v])  # the largest label that is not NONE
        assert idx.search(v, 1)[0][0] == 2**64 - 2
    finally:
        idx.close()
        p.destroy_region("py-bounds-vec")


def test_mooncake_raw_buffers_that_do_not_fit():
    s = MooncakeDistributedStore()
    assert s.setup("localhost", tenant_id="py-bounds") == 0
    s.remove("k")
    try:
        buf = ctypes.create_string_buffer(64)
        ptr = ctypes.addressof(buf)
        for bad_ptr, bad_size in ((ptr, -1), (ptr, 2**64), (-1, 8), (2**64 + ptr, 8), (0, 8)):
            assert s.put_from("k", bad_ptr, bad_size) == INVALID_PARAMS
            assert s.get_into("k", bad_ptr, bad_size) == INVALID_PARAMS
            assert s.batch_put_from(["k"], [bad_ptr], [bad_size]) == [INVALID_PARAMS]
            assert s.batch_get_into(["k"], [bad_ptr], [bad_size]) == [INVALID_PARAMS]
            assert s.register_buffer(bad_ptr, bad_size) == INVALID_PARAMS
        assert s.is_exist("k") == 0
        assert s.put_from("k", ptr, 8) == 0 and s.get_into("k", ptr, 64) == 8
        s.remove("k")
    finally:
        s.close()


def test_a_fake_array_interface_is_not_believed(p, region, namespace):
    """Nothing is read from, or written to, where an object merely says its bytes are."""
    victim = bytearray(b"v" * 64)
    victim_at = ctypes.addressof((ctypes.c_char * 64).from_buffer(victim))
    with pytest.raises(TypeError):
        region.write(0, Fake(address(SECRET), len(SECRET)))
    with pytest.raises(TypeError):
        region.read_into(0, Fake(victim_at, 64))
    with pool.Pool().batch() as b:
        with pytest.raises(TypeError):
            b.write(region, 0, Fake(address(SECRET), len(SECRET)))
        with pytest.raises(TypeError):
            b.read(region, 0, Fake(victim_at, 64))
    with p.kv(namespace) as kv:
        kv.put(b"k", b"x" * 64)
        with pytest.raises(TypeError):
            kv.put(b"leak", Fake(address(SECRET), len(SECRET)))
        with pytest.raises(TypeError):
            kv.put(Fake(address(SECRET), 16), b"value")
        with pytest.raises(TypeError):
            kv.put_batch([b"leak"], [Fake(address(SECRET), len(SECRET))])
        with pytest.raises(TypeError):
            kv.get_into(b"k", Fake(victim_at, 64))
        with pytest.raises(TypeError):
            kv.get_batch_into([b"k"], [Fake(victim_at, 64)])
        assert not kv.exists(b"leak")
        # A real array that lies about its address: its own memory is what moves.
        sneaky = np.zeros(len(SECRET), dtype=np.uint8).view(Sneaky)
        kv.put(b"sneaky", sneaky)
        assert kv.get(b"sneaky") == bytes(len(SECRET))
        region.write(4096, sneaky)
        assert region.read(4096, len(SECRET)) == bytes(len(SECRET))
        back = np.full(len(SECRET), 7, dtype=np.uint8).view(Sneaky)
        region.read_into(0, back)
        assert bytes(back.view(np.ndarray)[:len(CANARY)]) == CANARY
    with pytest.raises(TypeError):
        p.put_snapshot("py-bounds-leak", Fake(address(SECRET), 4096))
    idx = p.create_index("py-bounds-vec2", 4, 10, kind="flat")
    try:
        for vec in (Fake(address(SECRET), 16), [Fake(address(SECRET), 16)]):
            with pytest.raises(TypeError):
                idx.add(1, vec)
        with pytest.raises(TypeError):
            idx.add_batch([1], [Fake(address(SECRET), 16)])
        with pytest.raises(TypeError):
            idx.search(Fake(address(SECRET), 16), 1)
        assert len(idx) == 0
    finally:
        idx.close()
        p.destroy_region("py-bounds-vec2")
    assert victim == bytearray(b"v" * 64)
    assert SECRET[:16] not in region.read(0, 8192)
    assert "py-bounds-leak" not in p.snapshots()


def test_read_only_destinations_are_refused(p, region, namespace):
    frozen = np.zeros(16, dtype=np.uint8)
    frozen.flags.writeable = False
    for dest in (bytes(16), memoryview(bytearray(16)).toreadonly(), frozen):
        with pytest.raises(TypeError):
            region.read_into(0, dest)
        with p.kv(namespace) as kv:
            kv.put(b"k", b"0123456789abcdef")
            with pytest.raises(TypeError):
                kv.get_into(b"k", dest)
            with pytest.raises(TypeError):
                kv.get_batch_into([b"k"], [dest])
        with pool.Pool().batch() as b:
            with pytest.raises(TypeError):
                b.read(region, 0, dest)
    assert not frozen.any()


def test_real_buffers_still_work(p, region, namespace):
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    region.write(8192, a)
    b = np.empty((8, 8), dtype=np.float32)
    region.read_into(8192, b)
    assert (a == b).all()
    ba = bytearray(256)
    region.read_into(8192, ba)
    assert bytes(ba) == a.tobytes()
    region.write(16384, memoryview(bytes(range(256)))[16:32])  # read-only: copied
    assert region.read(16384, 16) == bytes(range(16, 32))
    region.write(16384, array.array("I", [1, 2, 3]))
    assert region.read(16384, 12) == array.array("I", [1, 2, 3]).tobytes()
    with mmap.mmap(-1, 4096) as m:
        region.read_into(8192, m)
        assert m[:256] == a.tobytes()
    region.write(20000, b"")
    region.read_into(20000, bytearray())
    with pytest.raises(ValueError):
        region.write(0, a[:, ::2])  # not contiguous
    with pytest.raises(ValueError):
        region.read_into(0, b[:, ::2])
    with p.kv(namespace) as kv:
        vals = [np.full(1000, i, dtype=np.uint16) for i in range(8)]
        assert kv.put_batch([b"n%d" % i for i in range(8)], vals) == [0] * 8
        outs = [np.empty(1000, dtype=np.uint16) for _ in range(8)]
        assert kv.get_batch_into([b"n%d" % i for i in range(8)], outs) == [2000] * 8
        assert all((o == i).all() for i, o in enumerate(outs))
        into = bytearray(2000)
        assert kv.get_into(b"n3", into) == 2000 and into == vals[3].tobytes()

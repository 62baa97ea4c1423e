"""The Python binding against a real poold ($POOL_SOCKET): run by
tests/integration/python.sh, which starts one."""
import errno
import os
import threading

import numpy as np
import pytest

import pool


@pytest.fixture(scope="module")
def p():
    with pool.Pool() as conn:
        yield conn


def test_status(p):
    st = p.status()
    assert st["role"] in ("coordinator", "node") and st["version"] == pool.__version__
    assert st["clients"] >= 1


def test_engine_paths():
    """The paths engines load name the adapters of pool.engines, as one module each."""
    import importlib
    for name in ("vllm", "lmcache", "sglang", "mooncake"):
        engine = importlib.import_module("pool.engines." + name)
        assert importlib.import_module("pool." + name) is engine
        assert getattr(pool, name) is engine
    from pool.vllm import PoolSecondaryTier
    from pool.engines.vllm import PoolSecondaryTier as tier
    assert PoolSecondaryTier is tier


def test_region_read_write_map_atomics(p):
    r = p.create_region("py-r", 1 << 20, placement="local")  # on this node: map() below
    try:
        assert r.size == 1 << 20
        r.write(4096, b"hello")
        assert r.read(4096, 5) == b"hello"
        a = np.arange(256, dtype=np.uint32)
        r.write(8192, a)  # any buffer
        b = np.zeros(256, dtype=np.uint32)
        r.read_into(8192, b)
        assert (a == b).all()
        view = r.map()  # local: the memory itself
        assert bytes(view[4096:4101]) == b"hello"
        view[0:3] = b"abc"
        assert r.read(0, 3) == b"abc"
        view.release()
        assert r.fetch_add(16, 5) == 0
        assert r.fetch_add(16, 2) == 5
        assert r.compare_swap(16, 7, 100) == 7
        assert r.compare_swap(16, 7, 1) == 100
        assert r.read(16, 8) == (100).to_bytes(8, "little")
        with p.batch() as bt:
            outs = [bytearray(5) for _ in range(4)]
            for i in range(4):
                bt.write(r, 65536 + i * 4096, b"b%04d" % i)
        with p.batch() as bt:
            for i in range(4):
                bt.read(r, 65536 + i * 4096, outs[i])
        assert [bytes(o) for o in outs] == [b"b%04d" % i for i in range(4)]
        info = p.region_info("py-r")
        assert info["size"] == 1 << 20 and info["class"] == "pinned" and info["leases"] >= 1
    finally:
        r.close()
        p.destroy_region("py-r")
    with pytest.raises(pool.PoolError) as e:
        p.open_region("py-r")
    assert e.value.code == -errno.ENOENT and "py-r" in str(e.value)


def test_region_bad_input(p):
    with pytest.raises(pool.PoolError) as e:
        p.create_region("bad/name?", 4096)
    assert e.value.code < 0 and str(e.value)
    r = p.create_region("py-small", 4096)
    try:
        with pytest.raises(pool.PoolError):
            r.read(4090, 100)  # past the end
        with pytest.raises(pool.PoolError):
            r.fetch_add(3, 1)  # not aligned
    finally:
        r.close()
        p.destroy_region("py-small")
    with pytest.raises(ValueError):
        r.read(0, 1)  # closed


def test_kv(p):
    p.create_kv("py-kv", 64 << 20)
    try:
        kv = p.kv("py-kv")
        kv.put(b"a", b"1")
        kv.put("text", "ü".encode())
        assert kv.get(b"a") == b"1" and kv.get("text") == "ü".encode()
        assert kv.get(b"nope") is None
        assert b"a" in kv and not kv.exists(b"nope")
        big = os.urandom(300 << 10)  # more than the first buffer
        kv.put(b"big", big)
        assert kv.get(b"big") == big
        arr = np.zeros(300 << 10, dtype=np.uint8)
        assert kv.get_into(b"big", arr) == len(big) and arr.tobytes() == big
        assert kv.remove(b"a") and not kv.remove(b"a")
        keys = [b"k%d" % i for i in range(100)]
        vals = [os.urandom(4096) for _ in keys]
        assert kv.put_batch(keys, vals) == [0] * 100
        assert kv.get_batch(keys + [b"missing"], 4096) == vals + [None]
        bufs = [np.empty(4096, dtype=np.uint8) for _ in keys]
        assert kv.get_batch_into(keys, bufs) == [4096] * 100
        assert all(b.tobytes() == v for b, v in zip(bufs, vals))
        assert kv.match(keys[:10] + [b"gap"] + keys[10:20]) == 10
        with kv.acquire(b"big") as view:
            assert bytes(view[:100]) == big[:100] and len(view) == len(big)
        with pytest.raises(KeyError):
            with kv.acquire(b"nope"):
                pass
        with kv.reserve(b"res", 8) as view:
            view[:] = b"reserved"
        assert kv.get(b"res") == b"reserved"
        with pytest.raises(RuntimeError):
            with kv.reserve(b"aborted", 8) as view:
                view[:] = b"xxxxxxxx"
                raise RuntimeError("abort it")
        assert kv.get(b"aborted") is None
        kv.close()
    finally:
        p.drop_kv("py-kv")
    with pytest.raises(pool.PoolError) as e:
        p.kv("py-kv")
    assert e.value.code == -errno.ENOENT


def test_kv_numpy_buffers(p):
    """numpy arrays go by their address (no memoryview): contiguous ones of any dtype and
    offset in and out, str and bytes keys mixed; a strided array, or a read-only one to
    write into, is refused before anything is sent."""
    with p.open_kv("py-kv-np", 16 << 20) as kv:
        big = np.arange(64 << 10, dtype=np.uint32)        # 256 KiB
        vals = [big[i * 1024:(i + 1) * 1024] for i in range(4)]  # slices at offsets
        assert kv.put_batch([b"n0", "n1", b"n2", "n3"], vals) == [0] * 4
        outs = [np.empty(1024, dtype=np.uint32) for _ in range(4)]
        assert kv.get_batch_into(["n0", b"n1", "n2", b"n3"], outs) == [4096] * 4
        assert all(np.array_equal(o, v) for o, v in zip(outs, vals))
        with pytest.raises(ValueError):
            kv.put(b"s", big[::2])
        ro = np.zeros(1024, dtype=np.uint32)
        ro.setflags(write=False)
        with pytest.raises(TypeError):
            kv.get_into(b"n0", ro)
        with pytest.raises(pool.PoolError) as e:  # as b"": a value is 1 byte or more
            kv.put(b"empty", np.zeros(0, dtype=np.uint8))
        assert e.value.code == -errno.EINVAL
    p.drop_kv("py-kv-np")


def test_kv_threads(p):
    """One connection from 8 threads at once (libpool is thread-safe; the GIL is released)."""
    p.create_kv("py-thr", 64 << 20)
    kv = p.kv("py-thr")
    errors = []

    def work(t):
        try:
            for i in range(200):
                k, v = b"t%d-%d" % (t, i), os.urandom(1000)
                kv.put(k, v)
                assert kv.get(k) == v
        except Exception as ex:  # noqa: BLE001 - reported below
            errors.append(ex)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kv.close()
    p.drop_kv("py-thr")
    assert errors == []


def test_hash_chain():
    toks = list(range(64))
    h = pool.hash_chain(toks, 16)
    assert len(h) == 4 and all(len(x) == 16 for x in h) and len(set(h)) == 4
    # chained: the last two blocks hashed from the second's hash are the same hashes
    assert pool.hash_chain(toks[32:], 16, parent=h[1]) == h[2:]
    assert pool.hash_chain(np.array(toks, dtype=np.uint32), 16) == h
    assert pool.hash_chain(toks, 16, salt=b"lora-1") != h
    assert pool.hash_chain(toks[:15], 16) == []  # only whole blocks


def test_vector_index(p):
    rng = np.random.default_rng(7)
    data = rng.standard_normal((500, 32)).astype(np.float32)
    idx = p.create_index("py-vec", 32, 1000, kind="flat")
    try:
        assert idx.add_batch(np.arange(500), data) == 500
        idx.add(1000, data[0] * 2)
        assert len(idx) == 501
        q = data[:5] + 0.01
        labels, dists, counts = idx.search_batch(q, 3)
        every = np.vstack([data, data[0] * 2])
        names = np.append(np.arange(500), 1000)
        exact = names[((every[None, :, :] - q[:, None, :]) ** 2).sum(-1).argsort(1)[:, :3]]
        assert (labels == exact).all() and (counts == 3).all()
        lab, dist = idx.search(q[0], 1)
        assert lab[0] == 0 and dist[0] == pytest.approx(((data[0] - q[0]) ** 2).sum(), rel=1e-4)
        assert idx.remove(0) == 1
        assert idx.search(q[0], 1)[0][0] != 0
        info = idx.info()
        assert info["kind"] == "flat" and info["dim"] == 32 and info["deleted"] == 1
        with pytest.raises(ValueError):
            idx.search(np.zeros(31), 1)
    finally:
        idx.close()
        p.destroy_region("py-vec")


def test_serve_save_refused(tmp_path):
    # No server on that socket: the error is libpool's, raised.
    with pytest.raises(pool.PoolError) as e:
        pool.serve_save(tmp_path / "no.sock", 1, "x")
    assert "no.sock" in str(e.value)
    with pytest.raises(pool.PoolError):
        pool.serve_save(tmp_path / "no.sock", 1, "a name")


def test_snapshot(p, tmp_path):
    img = bytearray(os.urandom(64 << 10)) + bytes(64 << 10)  # half zero pages
    p.put_snapshot("py-snap", img, state=b"vcpu state")
    path = tmp_path / "img"
    path.write_bytes(bytes(img))
    p.put_snapshot("py-snap2", path=str(path))
    try:
        assert {"py-snap", "py-snap2"} <= set(p.snapshots())
        with p.open_snapshot("py-snap") as s:
            assert s.size == len(img) and s.page_size == 4096
            assert s.read() == bytes(img) and s.read(100, 10) == bytes(img[100:110])
            assert s.state() == b"vcpu state"
            with s.clone() as c:
                assert bytes(c.memory) == bytes(img)
                c.memory[0:4] = b"mine"  # private
            with s.clone(lazy=True) as c:
                assert bytes(c.memory[:4]) == bytes(img[:4])
            s.wait()
            with s.clone() as c:  # a running clone saved: its writes over its parent
                c.memory[4096:4100] = b"save"
                with s.save(c) as sv:
                    assert sv.begin() == 1
                    c.memory[8192:8196] = b"late"  # after begin(): not saved
                    sv.end("py-saved", mode=0o600)
            with p.open_snapshot("py-saved") as sv2:
                want = bytearray(img)
                want[4096:4100] = b"save"
                assert sv2.read() == bytes(want)
            p.remove_snapshot("py-saved")
        with p.open_snapshot("py-snap2") as s2:
            assert s2.read() == bytes(img)
    finally:
        p.remove_snapshot("py-snap")
        p.remove_snapshot("py-snap2")


def test_errors_carry_code_and_message(p):
    with pytest.raises(pool.PoolError) as e:
        p.open_snapshot("no-such-snapshot")
    assert e.value.code < 0 and "no-such-snapshot" in str(e.value)
    assert isinstance(e.value, OSError)

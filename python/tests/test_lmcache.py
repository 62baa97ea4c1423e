"""pool.lmcache driven as LMCache's multiprocess mode drives an L2 adapter
(lmcache/v1/distributed/l2_adapters/base.py and the store and prefetch
controllers): submit a task, wait on its kind's eventfd, drain the eventfd,
collect the result (pop_completed_store_tasks, query_lookup_and_lock_result,
query_load_result); lookups lock what they find and are unlocked after the
load; loads fill buffers the caller allocated. Keys are LMCache's ObjectKey
(lmcache/v1/distributed/api.py), chunks numpy stand-ins for its
TensorMemoryObj in the KV_2LTD layout, against a real poold ($POOL_SOCKET)."""
import abc
import errno
import itertools
import os
import select
import sys
import threading
import types
from dataclasses import dataclass

import numpy as np
import pytest

import pool
import pool.lmcache as plm

CHUNK_TOKENS = 16
LAYERS = 2
HIDDEN = 32  # heads * head_dim
MODEL = "meta-llama/Llama-3-8B"
_names = itertools.count()


# ---- what LMCache hands an adapter

@dataclass(frozen=True)
class ObjectKey:
    chunk_hash: bytes
    model_name: str
    kv_rank: int
    cache_salt: str = ""

    @staticmethod
    def IntHash2Bytes(chunk_hash):
        return chunk_hash.to_bytes(4, byteorder="big")

    @staticmethod
    def ComputeKVRank(world_size, global_rank, local_world_size, local_rank):
        return (world_size << 24) | (global_rank << 16) | (local_world_size << 8) | local_rank


def key(i, rank=0, world=1, model=MODEL, salt=""):
    return ObjectKey(ObjectKey.IntHash2Bytes(i), model,
                     ObjectKey.ComputeKVRank(world, rank, world, rank), salt)


class TensorMemoryObj:
    """A chunk buffer as LMCache's L1 hands it out: .tensor, .byte_array, get_size()."""

    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def byte_array(self):
        return memoryview(self.tensor).cast("B")

    def get_size(self):
        return self.tensor.nbytes


def chunk(seed, dtype=np.float16, tokens=CHUNK_TOKENS):
    """A KV_2LTD chunk: [K/V, layers, tokens, hidden]."""
    rng = np.random.default_rng(seed)
    return TensorMemoryObj(rng.standard_normal((2, LAYERS, tokens, HIDDEN)).astype(dtype))


def empty(dtype=np.float16, tokens=CHUNK_TOKENS):
    return TensorMemoryObj(np.zeros((2, LAYERS, tokens, HIDDEN), dtype=dtype))


def wait_for_event_fd(fd, timeout=10.0):
    """Block until the eventfd is signalled, then drain it, as the controllers do."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    if not p.poll(int(timeout * 1000)):
        return False
    os.eventfd_read(fd)
    return True


def store(adapter, keys, objects):
    tid = adapter.submit_store_task(keys, objects)
    done = {}
    while tid not in done:
        assert wait_for_event_fd(adapter.get_store_event_fd()), "store never signalled"
        done.update(adapter.pop_completed_store_tasks())
    return done[tid]


def lookup(adapter, keys):
    tid = adapter.submit_lookup_and_lock_task(keys)
    while True:
        result = adapter.query_lookup_and_lock_result(tid)
        if result is not None:
            assert adapter.query_lookup_and_lock_result(tid) is None  # reported once
            return [result.test(i) for i in range(len(keys))]
        assert wait_for_event_fd(adapter.get_lookup_and_lock_event_fd()), "lookup never signalled"


def load(adapter, keys, objects):
    tid = adapter.submit_load_task(keys, objects)
    while True:
        result = adapter.query_load_result(tid)
        if result is not None:
            assert adapter.query_load_result(tid) is None
            return [result.test(i) for i in range(len(keys))]
        assert wait_for_event_fd(adapter.get_load_event_fd()), "load never signalled"


# ---- fixtures

@pytest.fixture()
def make(namespace):
    made = []

    def _make(**params):
        params.setdefault("pool_namespace", namespace)
        a = plm.PoolL2Adapter(params)  # as the plugin loader calls it, with a raw dict
        made.append(a)
        return a

    yield _make
    for a in made:
        a.close()


@pytest.fixture()
def adapter(make):
    return make()


# ---- the tests

def test_eventfds_are_distinct_nonblocking_and_cloexec(adapter):
    fds = {adapter.get_store_event_fd(), adapter.get_lookup_and_lock_event_fd(),
           adapter.get_load_event_fd()}
    assert len(fds) == 3
    for fd in fds:
        assert not os.get_inheritable(fd)
        with pytest.raises(BlockingIOError):
            os.eventfd_read(fd)  # nothing signalled before any task


def test_store_lookup_load_round_trip(adapter):
    keys = [key(i) for i in range(4)]
    objs = [chunk(i) for i in range(4)]
    result = store(adapter, keys, objs)
    assert result and result.is_successful()
    assert result.bytes_transferred() == sum(o.get_size() for o in objs)

    assert lookup(adapter, keys) == [True] * 4
    assert adapter.report_status()["locked_key_count"] == 4
    bufs = [empty() for _ in keys]
    assert load(adapter, keys, bufs) == [True] * 4
    for src, dst in zip(objs, bufs):
        assert np.array_equal(src.tensor, dst.tensor)
    adapter.submit_unlock(keys)
    assert adapter.report_status()["locked_key_count"] == 0


def test_misses_and_gaps(adapter):
    keys = [key(100 + i) for i in range(6)]
    stored = [0, 1, 3]
    assert store(adapter, [keys[i] for i in stored], [chunk(i) for i in stored])
    assert lookup(adapter, keys) == [True, True, False, True, False, False]
    adapter.submit_unlock([keys[i] for i in stored])

    bufs = [empty() for _ in keys]
    assert load(adapter, keys, bufs) == [i in stored for i in range(6)]
    for i in stored:
        assert np.array_equal(bufs[i].tensor, chunk(i).tensor)
    for i in set(range(6)) - set(stored):
        assert not bufs[i].tensor.any()  # a miss leaves its buffer alone


def test_locks_count_and_unlock_is_idempotent(adapter):
    k = key(7)
    assert store(adapter, [k], [chunk(7)])
    assert lookup(adapter, [k]) == [True]
    assert lookup(adapter, [k, key(8)]) == [True, False]
    assert adapter.report_status()["locked_key_count"] == 1
    adapter.submit_unlock([k])
    assert adapter.report_status()["locked_key_count"] == 1  # locked twice
    adapter.submit_unlock([k, key(8)])
    adapter.submit_unlock([k])  # more unlocks than locks are harmless
    assert adapter.report_status()["locked_key_count"] == 0


def test_ranks_models_and_salts_are_apart(adapter):
    a = key(1, rank=0, world=2)
    b = key(1, rank=1, world=2)
    c = key(1, model="Qwen/Qwen2-7B")
    d = key(1, salt="tenant-a")
    assert store(adapter, [a], [chunk(1)])
    assert lookup(adapter, [a, b, c, d]) == [True, False, False, False]
    assert store(adapter, [b, d], [chunk(2), chunk(3)])
    bufs = [empty() for _ in range(3)]
    assert load(adapter, [a, b, d], bufs) == [True] * 3
    assert np.array_equal(bufs[1].tensor, chunk(2).tensor)
    assert np.array_equal(bufs[2].tensor, chunk(3).tensor)


def test_key_layout(adapter, namespace):
    k = key(0xABCD, rank=1, world=4, salt="s1")
    assert store(adapter, [k], [chunk(0)])
    name = "%s@%08x@%s@s1" % (MODEL, (4 << 24) | (1 << 16) | (4 << 8) | 1, "0000abcd")
    assert plm.object_key_string(k) == name
    with pool.Pool() as p, p.kv(namespace) as kv:
        assert kv.exists(name)
        assert kv.get(name) == chunk(0).tensor.tobytes()
    unsalted = key(5)
    assert plm.object_key_string(unsalted) == "%s@01000100@00000005" % MODEL


def test_a_wrong_sized_buffer_is_a_miss(adapter):
    k = key(9)
    assert store(adapter, [k], [chunk(9)])
    assert load(adapter, [k], [empty(tokens=CHUNK_TOKENS // 2)]) == [False]
    assert load(adapter, [k], [empty(tokens=CHUNK_TOKENS * 2)]) == [False]


def test_other_buffers(adapter):
    """bfloat16-like raw bytes, a bare numpy array, a tensor without byte_array."""
    k1, k2 = key(21), key(22)
    raw = np.arange(2 * LAYERS * CHUNK_TOKENS * HIDDEN, dtype=np.uint16)
    obj = types.SimpleNamespace(tensor=np.arange(64, dtype=np.float32))
    assert store(adapter, [k1, k2], [raw, obj])
    back1, back2 = np.zeros_like(raw), types.SimpleNamespace(tensor=np.zeros(64, np.float32))
    assert load(adapter, [k1, k2], [back1, back2]) == [True, True]
    assert np.array_equal(back1, raw) and np.array_equal(back2.tensor, obj.tensor)
    with pytest.raises(ValueError):
        adapter.submit_load_task([k1], [bytes(raw.nbytes)])  # read-only


def test_failed_store_is_reported(adapter):
    too_long = ObjectKey(b"\x01" * 200, "m" * 200, 0)  # over the pool's 256-byte keys
    result = store(adapter, [key(30), too_long], [chunk(30), chunk(31)])
    assert not result and not result.is_successful() and int(result) == -1
    assert store(adapter, [], []).is_successful()
    assert lookup(adapter, []) == []


def test_results_wait_for_their_task(adapter):
    """Every submitted task completes and signals once; ids are unique across kinds."""
    keys = [key(200 + i) for i in range(8)]
    ids = [adapter.submit_store_task([k], [chunk(i)]) for i, k in enumerate(keys)]
    done = {}
    while len(done) < len(ids):
        assert wait_for_event_fd(adapter.get_store_event_fd())
        done.update(adapter.pop_completed_store_tasks())
    assert set(done) == set(ids) and all(done.values())
    lid = adapter.submit_lookup_and_lock_task(keys)
    assert lid not in ids


def test_store_and_prefetch_threads_at_once(adapter):
    """The store controller and the prefetch controller call from their own threads."""
    errors = []

    def storer():
        try:
            for i in range(20):
                assert store(adapter, [key(1000 + i)], [chunk(i)])
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=storer)
    t.start()
    for _ in range(20):
        hits = lookup(adapter, [key(1000 + i) for i in range(20)])
        n = hits.index(False) if False in hits else 20
        adapter.submit_unlock([key(1000 + i) for i in range(20) if hits[i]])
        assert all(hits[:n])
    t.join()
    assert not errors
    assert lookup(adapter, [key(1000 + i) for i in range(20)]) == [True] * 20


def test_requests_are_cut_to_size(adapter, monkeypatch):
    monkeypatch.setattr(pool.engines._adapter, "REQUEST_KEYS", 3)
    keys = [key(300 + i) for i in range(8)]
    stored = [0, 1, 2, 3, 5, 6, 7]
    assert store(adapter, [keys[i] for i in stored], [chunk(i) for i in stored])
    assert lookup(adapter, keys) == [i in stored for i in range(8)]
    bufs = [empty() for _ in keys]
    assert load(adapter, keys, bufs) == [i in stored for i in range(8)]
    assert np.array_equal(bufs[7].tensor, chunk(7).tensor)


def test_close_finishes_submitted_tasks(make, namespace):
    a = make()
    tid = a.submit_store_task([key(400)], [chunk(400)])
    fd = a.get_store_event_fd()
    a.close()
    with pytest.raises(OSError) as e:
        os.fstat(fd)
    assert e.value.errno == errno.EBADF
    b = make()
    assert lookup(b, [key(400)]) == [True]
    assert tid == 0


def test_namespace_made_on_first_use():
    name = "py-lmcache-new-%d" % next(_names)
    a = plm.PoolL2Adapter({"pool_namespace": name, "pool_capacity": 4 << 20})
    try:
        assert store(a, [key(1)], [chunk(1)])
    finally:
        a.close()
        with pool.Pool() as p:
            p.drop_kv(name)


# ---- LMCache's plugin loader (plugin_l2_adapter.py) and its Bitmap

class _FakeBitmap:
    def __init__(self, n):
        self.n, self.bits = n, set()

    def set(self, i):
        self.bits.add(i)

    def test(self, i):
        return i in self.bits


@pytest.fixture()
def fake_lmcache(monkeypatch):
    class L2AdapterInterface(abc.ABC):
        for _name in ("get_store_event_fd", "get_lookup_and_lock_event_fd",
                      "get_load_event_fd", "submit_store_task", "pop_completed_store_tasks",
                      "submit_lookup_and_lock_task", "query_lookup_and_lock_result",
                      "submit_unlock", "submit_load_task", "query_load_result", "close"):
            locals()[_name] = abc.abstractmethod(lambda self, *a: None)

    mods = {}
    for name in ("lmcache", "lmcache.native_storage_ops", "lmcache.v1", "lmcache.v1.distributed",
                 "lmcache.v1.distributed.l2_adapters", "lmcache.v1.distributed.l2_adapters.base"):
        mods[name] = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, mods[name])
    mods["lmcache.v1.distributed.l2_adapters.base"].L2AdapterInterface = L2AdapterInterface
    mods["lmcache.native_storage_ops"].Bitmap = _FakeBitmap
    monkeypatch.delattr(plm, "PoolL2AdapterForLMCache", raising=False)
    yield L2AdapterInterface
    monkeypatch.delattr(plm, "PoolL2AdapterForLMCache", raising=False)


def test_plugin_loader(fake_lmcache, namespace):
    import importlib

    # _create_plugin_adapter: import, getattr, issubclass, construct with the raw dict
    module = importlib.import_module("pool.lmcache")
    cls = getattr(module, "PoolL2AdapterForLMCache")
    assert isinstance(cls, type) and issubclass(cls, fake_lmcache)
    assert getattr(module, "PoolL2AdapterForLMCacheConfig", None) is None  # raw dict mode
    a = cls({"pool_namespace": namespace}, l1_memory_desc=object())
    try:
        assert store(a, [key(1)], [chunk(1)])
        tid = a.submit_lookup_and_lock_task([key(1), key(2)], {0: "layout"})
        while (bm := a.query_lookup_and_lock_result(tid)) is None:
            assert wait_for_event_fd(a.get_lookup_and_lock_event_fd())
        assert isinstance(bm, _FakeBitmap) and bm.bits == {0}
    finally:
        a.close()
    with pytest.raises(AttributeError):
        module.NoSuchAdapter

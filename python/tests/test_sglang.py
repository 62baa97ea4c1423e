"""pool.sglang driven as SGLang's HiCacheController drives a HiCache storage
backend (python/sglang/srt/managers/cache_controller.py): page hashes chained
by get_hash_str, prefetch = batch_exists over batches of STORAGE_BATCH_SIZE
pages then batch_get_v1 (or batch_get of flat pages) into a host KV pool,
backup = batch_set_v1 (or batch_set), against a real poold ($POOL_SOCKET).
The host KV pools are numpy stand-ins for SGLang's, page_first as its
zero-copy path wants them, with the methods the backends call."""
import hashlib
import importlib
import itertools
import sys
import types
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import pytest

import pool
import pool.sglang as sgl

STORAGE_BATCH_SIZE = 128  # hicache_storage.py: pages per storage call
PAGE_SIZE = 4
_names = itertools.count()


# ---- what SGLang hands a backend

@dataclass
class HiCacheStorageConfig:
    tp_rank: int
    tp_size: int
    pp_rank: int
    pp_size: int
    attn_cp_rank: int
    attn_cp_size: int
    is_mla_model: bool
    enable_storage_metrics: bool
    is_page_first_layout: bool
    model_name: Optional[str]
    dp_rank: int = 0
    dp_size: int = 1
    tp_lcm_size: Optional[int] = None
    should_split_heads: bool = False
    extra_config: Optional[dict] = None


@dataclass
class HiCacheStorageExtraInfo:
    prefix_keys: Optional[List[str]] = None
    extra_info: Optional[dict] = None


def get_hash_str(token_ids, prior_hash=None):
    """One page's key: SHA-256 over the previous page's digest and the token ids as
    little-endian uint32, in hex."""
    hasher = hashlib.sha256()
    if prior_hash:
        hasher.update(bytes.fromhex(prior_hash))
    for t in token_ids:
        hasher.update(t.to_bytes(4, byteorder="little", signed=False))
    return hasher.hexdigest()


def page_hashes(tokens, prior_hash=None):
    """The chained keys of the whole pages of tokens (a partial last page has none)."""
    out = []
    for start in range(0, len(tokens) // PAGE_SIZE * PAGE_SIZE, PAGE_SIZE):
        prior_hash = get_hash_str(tokens[start:start + PAGE_SIZE], prior_hash)
        out.append(prior_hash)
    return out


class MHAHostPool:
    """MHATokenToKVPoolHost, page_first: kv_buffer[2, tokens, layers, heads, head_dim]."""

    def __init__(self, pages=64, layers=2, heads=2, head_dim=8, dtype=np.uint16):
        self.page_size = PAGE_SIZE
        self.layout = "page_first"
        self.size = pages * PAGE_SIZE
        self.kv_buffer = np.zeros((2, self.size, layers, heads, head_dim), dtype=dtype)
        self._next = 0

    def alloc(self, n):
        idx = np.arange(self._next, self._next + n, dtype=np.int64)
        self._next += n
        return idx

    def get_page_buffer_meta(self, indices):
        base, (_, _, layers, heads, dim) = self.kv_buffer.ctypes.data, self.kv_buffer.shape
        item = self.kv_buffer.itemsize
        v_offset = self.size * layers * heads * dim * item
        ptrs = []
        for i in range(0, len(indices), self.page_size):
            k = base + int(indices[i]) * layers * heads * dim * item
            ptrs += [k, k + v_offset]
        return ptrs, [self.page_size * layers * heads * dim * item] * len(ptrs)

    def get_data_page(self, index, flat=True):
        page = self.kv_buffer[:, index:index + self.page_size]
        return page.reshape(-1) if flat else page

    def get_dummy_flat_data_page(self):
        return np.zeros_like(self.kv_buffer[:, :self.page_size]).reshape(-1)

    def set_from_flat_data_page(self, index, data_page):
        page = self.kv_buffer[:, index:index + self.page_size]
        page[...] = data_page.reshape(page.shape)

    def pages(self, host_indices):
        return [self.get_data_page(int(host_indices[i])).copy()
                for i in range(0, len(host_indices), self.page_size)]


class MLAHostPool(MHAHostPool):
    """MLATokenToKVPoolHost, page_first: kv_buffer[tokens, layers, 1, kv_lora_rank + rope]."""

    def __init__(self, pages=64, layers=2, dim=24):
        self.page_size = PAGE_SIZE
        self.layout = "page_first"
        self.size = pages * PAGE_SIZE
        self.kv_buffer = np.zeros((self.size, layers, 1, dim), dtype=np.uint16)
        self._next = 0

    def get_page_buffer_meta(self, indices):
        row = self.kv_buffer[0].nbytes
        ptrs = [self.kv_buffer.ctypes.data + int(indices[i]) * row
                for i in range(0, len(indices), self.page_size)]
        return ptrs, [row * self.page_size] * len(ptrs)

    def get_data_page(self, index, flat=True):
        page = self.kv_buffer[index:index + self.page_size]
        return page.reshape(-1) if flat else page

    def get_dummy_flat_data_page(self):
        return np.zeros_like(self.kv_buffer[:self.page_size]).reshape(-1)

    def set_from_flat_data_page(self, index, data_page):
        page = self.kv_buffer[index:index + self.page_size]
        page[...] = data_page.reshape(page.shape)


# ---- the controller's calls

def backup(storage, host_pool, host_indices, hashes, zero_copy=True):
    """_page_backup: batch by batch, stopping at the first batch that fails; tokens written."""
    done = 0
    for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
        batch = hashes[i:i + STORAGE_BATCH_SIZE]
        idx = host_indices[i * PAGE_SIZE:(i + len(batch)) * PAGE_SIZE]
        info = HiCacheStorageExtraInfo(prefix_keys=None)
        if zero_copy:
            ok = all(storage.batch_set_v1(batch, idx, info))
        else:
            ok = storage.batch_set(batch, [host_pool.get_data_page(int(idx[j * PAGE_SIZE]))
                                           for j in range(len(batch))])
        if not ok:
            break
        done += PAGE_SIZE * len(batch)
    return done


def prefetch(storage, host_pool, tokens, zero_copy=True):
    """_storage_hit_query then _page_transfer: the hashes of the pages found, and the
    host indices they were read into."""
    assert not zero_copy or storage.mem_pool_host is host_pool  # v1 reads the registered pool
    hashes, hits = page_hashes(tokens), []
    for start in range(0, len(hashes), STORAGE_BATCH_SIZE):
        batch = hashes[start:start + STORAGE_BATCH_SIZE]
        n = storage.batch_exists(batch, HiCacheStorageExtraInfo())
        hits += batch[:n]
        if n < len(batch):
            break
    host_indices = host_pool.alloc(len(hits) * PAGE_SIZE)
    got = 0
    for i in range(0, len(hits), STORAGE_BATCH_SIZE):
        batch = hits[i:i + STORAGE_BATCH_SIZE]
        idx = host_indices[i * PAGE_SIZE:(i + len(batch)) * PAGE_SIZE]
        if zero_copy:
            results = storage.batch_get_v1(batch, idx, HiCacheStorageExtraInfo())
            inc = next((j for j, ok in enumerate(results) if not ok), len(batch))
        else:
            data = storage.batch_get(batch, [host_pool.get_dummy_flat_data_page() for _ in batch])
            inc = 0
            for j, page in enumerate(data):
                if page is None:
                    break
                host_pool.set_from_flat_data_page(int(idx[j * PAGE_SIZE]), page)
                inc += 1
        got += inc
        if inc < len(batch):
            break
    return hits[:got], host_indices[:got * PAGE_SIZE]


# ---- fixtures

def config(namespace, tp_rank=0, tp_size=1, mla=False, model="meta-llama/Llama-3-8B", **extra):
    return HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=mla, enable_storage_metrics=False, is_page_first_layout=True,
        model_name=model, extra_config=dict(pool_namespace=namespace, interface_v1=1, **extra))


@pytest.fixture()
def make(namespace):
    made = []

    def _make(host_pool, **kw):
        s = sgl.PoolHiCacheStorage(config(namespace, **kw), {})  # as SGLang's loader calls it
        s.register_mem_pool_host(host_pool)
        made.append(s)
        return s

    yield _make
    for s in made:
        s.close()


def fill(host_pool, host_indices, seed):
    """Random KV data (bfloat16 bits) in the pages at host_indices."""
    rng = np.random.default_rng(seed)
    for i in range(0, len(host_indices), PAGE_SIZE):
        page = host_pool.get_data_page(int(host_indices[i]), flat=False)
        page[...] = rng.integers(0, 1 << 16, size=page.shape, dtype=np.uint16)


def tokens(n, start=1000):
    return list(range(start, start + n))


# ---- tests

def test_hash_is_sglang_chain():
    h0 = hashlib.sha256(np.arange(4, dtype="<u4").tobytes()).hexdigest()
    assert page_hashes([0, 1, 2, 3, 4, 5]) == [h0]  # the partial page has no key
    assert page_hashes([0, 1, 2, 3, 9, 9, 9, 9])[1] == hashlib.sha256(
        bytes.fromhex(h0) + np.full(4, 9, dtype="<u4").tobytes()).hexdigest()


def test_backup_then_prefetch_zero_copy(make):
    toks = tokens(5 * PAGE_SIZE + 3)
    writer_pool = MHAHostPool()
    writer = make(writer_pool)
    idx = writer_pool.alloc(5 * PAGE_SIZE)
    fill(writer_pool, idx, 1)
    hashes = page_hashes(toks)
    assert writer.batch_exists(hashes) == 0
    assert backup(writer, writer_pool, idx, hashes) == 5 * PAGE_SIZE

    # Another instance of the same model and rank reads them into its own host pool.
    reader_pool = MHAHostPool()
    reader_pool.alloc(8)  # its pages land elsewhere
    reader = make(reader_pool)
    hits, ridx = prefetch(reader, reader_pool, toks)
    assert hits == hashes
    for a, b in zip(writer_pool.pages(idx), reader_pool.pages(ridx)):
        assert np.array_equal(a, b)


def test_leading_prefix_stops_at_missing_page(make, namespace):
    host = MHAHostPool()
    s = make(host)
    toks = tokens(6 * PAGE_SIZE)
    hashes = page_hashes(toks)
    idx = host.alloc(6 * PAGE_SIZE)
    fill(host, idx, 2)
    assert all(s.batch_set_v1(hashes[:2], idx[:2 * PAGE_SIZE]))
    assert all(s.batch_set_v1(hashes[3:], idx[3 * PAGE_SIZE:]))
    assert s.batch_exists(hashes) == 2
    assert s.exists(hashes[3]) and not s.exists(hashes[2])
    reader = make(MHAHostPool())
    hits, _ = prefetch(reader, reader.mem_pool_host, toks)
    assert hits == hashes[:2]

    # A page is there only with both halves: lose page 1's V and the prefix is 1.
    with pool.Pool() as p, p.kv(namespace) as kv:
        assert kv.remove("meta-llama-Llama-3-8B_%s_0_1_v" % hashes[1])
    assert s.batch_exists(hashes) == 1
    assert s.batch_get_v1(hashes[:2], idx[:2 * PAGE_SIZE]) == [True, False]


def test_zero_copy_get_into_preallocated_pages(make):
    host = MHAHostPool()
    s = make(host)
    hashes = page_hashes(tokens(3 * PAGE_SIZE, 7))
    idx = host.alloc(3 * PAGE_SIZE)
    fill(host, idx, 3)
    want = host.pages(idx)
    assert s.batch_set_v1(hashes, idx) == [True] * 3
    host.kv_buffer[...] = 0
    base = host.kv_buffer.ctypes.data
    assert s.batch_get_v1(hashes, idx) == [True] * 3
    assert host.kv_buffer.ctypes.data == base  # read in place, not replaced
    for a, b in zip(want, host.pages(idx)):
        assert np.array_equal(a, b)
    assert s.batch_get_v1(page_hashes(tokens(PAGE_SIZE, 99)), idx[:PAGE_SIZE]) == [False]


def test_set_of_stored_pages_succeeds_and_keeps_them(make):
    host = MHAHostPool()
    s = make(host)
    toks = tokens(4 * PAGE_SIZE)
    hashes = page_hashes(toks)
    idx = host.alloc(4 * PAGE_SIZE)
    fill(host, idx, 4)
    first = host.pages(idx)
    assert backup(s, host, idx, hashes[:2]) == 2 * PAGE_SIZE
    # The radix tree backs the same prefix up again, now with two more pages.
    fill(host, idx[:2 * PAGE_SIZE], 5)
    assert backup(s, host, idx, hashes) == 4 * PAGE_SIZE
    assert s.batch_exists(hashes) == 4
    out = MHAHostPool()
    s.register_mem_pool_host(out)
    _, ridx = prefetch(s, out, toks)
    for a, b in zip(first, out.pages(ridx)):
        assert np.array_equal(a, b)


def test_tp_ranks_do_not_collide(make):
    pools = [MHAHostPool(), MHAHostPool()]
    ranks = [make(pools[r], tp_rank=r, tp_size=2) for r in (0, 1)]
    toks = tokens(2 * PAGE_SIZE)
    hashes = page_hashes(toks)
    idx = [pools[r].alloc(2 * PAGE_SIZE) for r in (0, 1)]
    fill(pools[0], idx[0], 10)
    fill(pools[1], idx[1], 11)
    assert backup(ranks[0], pools[0], idx[0], hashes) == 2 * PAGE_SIZE
    assert ranks[1].batch_exists(hashes) == 0  # rank 0's heads are not rank 1's
    assert backup(ranks[1], pools[1], idx[1], hashes) == 2 * PAGE_SIZE
    for r in (0, 1):
        out = MHAHostPool()
        ranks[r].register_mem_pool_host(out)
        _, ridx = prefetch(ranks[r], out, toks)
        for a, b in zip(pools[r].pages(idx[r]), out.pages(ridx)):
            assert np.array_equal(a, b)
    # Nor do ranks of another tensor parallel size.
    other = make(MHAHostPool(), tp_rank=0, tp_size=4)
    assert other.batch_exists(hashes) == 0


def test_mla_pages_are_shared_by_ranks(make, namespace):
    pools = [MLAHostPool(), MLAHostPool()]
    ranks = [make(pools[r], tp_rank=r, tp_size=2, mla=True) for r in (0, 1)]
    toks = tokens(3 * PAGE_SIZE)
    hashes = page_hashes(toks)
    idx = pools[0].alloc(3 * PAGE_SIZE)
    fill(pools[0], idx, 12)
    assert backup(ranks[0], pools[0], idx, hashes) == 3 * PAGE_SIZE  # only rank 0 backs up
    hits, ridx = prefetch(ranks[1], pools[1], toks)
    assert hits == hashes
    for a, b in zip(pools[0].pages(idx), pools[1].pages(ridx)):
        assert np.array_equal(a, b)
    with pool.Pool() as p, p.kv(namespace) as kv:
        assert kv.exists("meta-llama-Llama-3-8B_%s_k" % hashes[0])


def test_generic_path_and_zero_copy_share_pages(make):
    host = MHAHostPool(dtype=np.float16)
    s = make(host)
    toks = tokens(3 * PAGE_SIZE, 500)
    hashes = page_hashes(toks)
    idx = host.alloc(3 * PAGE_SIZE)
    host.kv_buffer[:] = np.random.default_rng(6).standard_normal(host.kv_buffer.shape)
    assert backup(s, host, idx, hashes, zero_copy=False) == 3 * PAGE_SIZE
    out = MHAHostPool(dtype=np.float16)
    hits, ridx = prefetch(s, out, toks, zero_copy=False)
    assert hits == hashes
    for a, b in zip(host.pages(idx), out.pages(ridx)):
        assert np.array_equal(a, b)
    # A page_first flat page is the K then the V value: the zero-copy path reads it too.
    out2 = MHAHostPool(dtype=np.float16)
    s.register_mem_pool_host(out2)
    _, ridx2 = prefetch(s, out2, toks)
    for a, b in zip(host.pages(idx), out2.pages(ridx2)):
        assert np.array_equal(a, b)


def test_single_page_calls(make):
    host = MHAHostPool()
    s = make(host)
    key = page_hashes(tokens(PAGE_SIZE, 3))[0]
    page = np.arange(host.get_dummy_flat_data_page().size, dtype=np.uint16)
    target = host.get_dummy_flat_data_page()
    assert s.get(key, target) is None and not s.exists(key)
    assert s.set(key, page) is True and s.exists(key)
    assert s.set(key, page) is True
    assert s.get(key, target) is target and np.array_equal(target, page)
    assert s.batch_get([key, "0" * 64], [target, host.get_dummy_flat_data_page()])[1] is None


def test_wrong_page_length_is_a_miss(make):
    host = MHAHostPool()
    s = make(host)
    hashes = page_hashes(tokens(PAGE_SIZE))
    idx = host.alloc(PAGE_SIZE)
    fill(host, idx, 7)
    assert s.batch_set_v1(hashes, idx) == [True]
    bigger = MHAHostPool(head_dim=16)
    s.register_mem_pool_host(bigger)
    assert s.batch_get_v1(hashes, bigger.alloc(PAGE_SIZE)) == [False]


def test_failures_are_answers_not_exceptions(make, namespace):
    """The controller's threads end on an exception: a lost namespace is pages not found."""
    host = MHAHostPool()
    s = make(host)
    hashes = page_hashes(tokens(2 * PAGE_SIZE))
    idx = host.alloc(2 * PAGE_SIZE)
    assert s.batch_set_v1(hashes, idx) == [True, True]
    with pool.Pool() as p:
        p.drop_kv(namespace)
        try:
            assert s.batch_exists(hashes) == 0
            assert s.batch_get_v1(hashes, idx) == [False, False]
            assert s.batch_set_v1(hashes, idx) == [False, False]
            assert s.batch_get(hashes, [host.get_dummy_flat_data_page()] * 2) == [None, None]
        finally:
            p.create_kv(namespace, 16 << 20)  # for the fixture to drop


def test_requests_are_cut_to_size(make, monkeypatch):
    monkeypatch.setattr(pool.engines._adapter, "REQUEST_KEYS", 3)
    host = MHAHostPool()
    s = make(host)
    toks = tokens(7 * PAGE_SIZE)
    hashes = page_hashes(toks)
    idx = host.alloc(7 * PAGE_SIZE)
    fill(host, idx, 8)
    assert s.batch_set_v1(hashes[:4], idx[:4 * PAGE_SIZE]) == [True] * 4
    assert s.batch_set_v1(hashes, idx) == [True] * 7
    assert s.batch_exists(hashes) == 7
    out = MHAHostPool()
    s.register_mem_pool_host(out)
    _, ridx = prefetch(s, out, toks)
    for a, b in zip(host.pages(idx), out.pages(ridx)):
        assert np.array_equal(a, b)


def test_namespace_made_on_first_use_and_cleared():
    name = "py-sglang-new-%d" % next(_names)
    cfg = config(None, pool_capacity=8 << 20)
    cfg.extra_config.pop("pool_namespace")
    s = sgl.PoolHiCacheStorage(cfg, {"pool_namespace": name})  # joins extra_config
    try:
        host = MHAHostPool()
        s.register_mem_pool_host(host)
        hashes = page_hashes(tokens(2 * PAGE_SIZE))
        assert s.batch_set_v1(hashes, host.alloc(2 * PAGE_SIZE)) == [True, True]
        assert s.clear() is True
        assert s.batch_exists(hashes) == 0
        assert s.batch_set_v1(hashes[:1], host.alloc(PAGE_SIZE)) == [True]
    finally:
        s.close()
        with pool.Pool() as p:
            p.drop_kv(name)


def test_sglang_dynamic_loader(monkeypatch, namespace):
    """StorageBackendFactory._create_dynamic_backend: import module_path, take class_name,
    insist on a HiCacheStorage subclass, call it with (storage_config, kwargs)."""

    class HiCacheStorage(ABC):
        def register_mem_pool_host(self, mem_pool_host):
            self.mem_pool_host = mem_pool_host

        def batch_get_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        @abstractmethod
        def get(self, key, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_get(self, keys, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def set(self, key, value=None, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def exists(self, key):
            pass

    names = ["sglang", "sglang.srt", "sglang.srt.mem_cache",
             "sglang.srt.mem_cache.hicache_storage"]
    for n in names:
        monkeypatch.setitem(sys.modules, n, types.ModuleType(n))
    sys.modules[names[-1]].HiCacheStorage = HiCacheStorage
    extra = {"backend_name": "pool", "module_path": "pool.sglang",
             "class_name": "PoolHiCacheStorageForSGLang", "interface_v1": 1,
             "pool_namespace": namespace}
    module = importlib.import_module(extra["module_path"])
    try:
        cls = getattr(module, extra["class_name"])
        assert issubclass(cls, HiCacheStorage) and issubclass(cls, sgl.PoolHiCacheStorage)
        storage_config = config(namespace)
        storage_config.extra_config = extra
        backend = cls(storage_config, {})
        host = MHAHostPool()
        backend.register_mem_pool_host(host)
        toks = tokens(2 * PAGE_SIZE)
        idx = host.alloc(2 * PAGE_SIZE)
        fill(host, idx, 9)
        assert backup(backend, host, idx, page_hashes(toks)) == 2 * PAGE_SIZE
        backend.register_mem_pool_host(MHAHostPool())
        assert prefetch(backend, backend.mem_pool_host, toks)[0] == page_hashes(toks)
        backend.close()
    finally:
        vars(module).pop(extra["class_name"], None)

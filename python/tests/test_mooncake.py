"""pool.mooncake driven as Mooncake Store's own documentation drives
MooncakeDistributedStore (docs/source/api-reference/python/mooncake-store.md:
the hello world, the NumPy get/put, the zero-copy workflow), and its
return-code contract: 0 or a negative ErrorCode, is_exist 1/0/-1, b"" on a miss."""
import ctypes

import numpy as np
import pytest

from pool.mooncake import (BUFFER_OVERFLOW, OBJECT_NOT_FOUND, MooncakeDistributedStore,
                           ReplicateConfig)


@pytest.fixture()
def store():
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "http://localhost:8080/metadata", 512 * 1024 * 1024,
                   128 * 1024 * 1024, "tcp", "", "localhost:50051") == 0
    yield s
    assert s.close() == 0


def test_hello_world(store):
    assert store.put("hello_key", b"Hello, Mooncake Store!") == 0
    assert store.get("hello_key").decode() == "Hello, Mooncake Store!"
    assert store.get_hostname() == "localhost"


def test_numpy_get_put(store):
    weights = np.random.randn(1000, 1000).astype(np.float32)
    assert store.put("weights", weights.tobytes()) == 0
    back = np.frombuffer(store.get("weights"), dtype=np.float32).reshape(1000, 1000)
    assert np.array_equal(back, weights)
    assert store.is_exist("weights") == 1 and store.is_exist("nope") == 0
    assert store.batch_is_exist(["weights", "nope"]) == [1, 0]
    assert store.get_size("weights") == weights.nbytes
    assert store.get_size("nope") == OBJECT_NOT_FOUND


def test_misses_and_removes(store):
    assert store.get("missing") == b""
    assert store.remove("missing") == OBJECT_NOT_FOUND
    assert store.put("gone", b"x") == 0 and store.remove("gone") == 0
    assert store.is_exist("gone") == 0


def test_batches(store):
    keys = ["key1", "key2", "key3"]
    assert store.put_batch(keys, [b"value1", b"value2", b"value3"]) == 0
    assert store.get_batch(keys + ["nope"]) == [b"value1", b"value2", b"value3", b""]
    config = ReplicateConfig()
    config.replica_num = 2
    assert store.put("important_data", b"Critical information", config) == 0
    assert store.put_parts("greeting", b"Hello, ", b"World!") == 0
    assert store.get("greeting") == b"Hello, World!"
    assert store.batch_remove(keys) == [0, 0, 0]


def test_zero_copy_workflow(store):
    original = np.random.randn(1000, 1000).astype(np.float32)
    ptr, size = original.ctypes.data, original.nbytes
    assert store.register_buffer(ptr, size) == 0
    assert store.put_from("large_tensor", ptr, size) == 0
    out = np.empty((1000, 1000), dtype=np.float32)
    assert store.register_buffer(out.ctypes.data, out.nbytes) == 0
    assert store.get_into("large_tensor", out.ctypes.data, out.nbytes) == size
    assert np.array_equal(original, out)
    small = (ctypes.c_ubyte * 16)()
    assert store.get_into("large_tensor", ctypes.addressof(small), 16) == BUFFER_OVERFLOW
    assert store.get_into("nope", out.ctypes.data, out.nbytes) == OBJECT_NOT_FOUND
    assert store.unregister_buffer(ptr) == 0


def test_batch_zero_copy(store):
    blocks = [np.full(4096, i, dtype=np.uint8) for i in range(8)]
    keys = ["blk%d" % i for i in range(8)]
    assert store.batch_put_from(keys, [b.ctypes.data for b in blocks], [4096] * 8) == [0] * 8
    outs = [np.zeros(4096, dtype=np.uint8) for _ in range(9)]
    got = store.batch_get_into(keys + ["nope"], [o.ctypes.data for o in outs], [4096] * 9)
    assert got == [4096] * 8 + [OBJECT_NOT_FOUND]
    assert all((o == i).all() for i, o in enumerate(outs[:8]))


def test_tenants_apart():
    a, b = MooncakeDistributedStore(), MooncakeDistributedStore()
    assert a.setup("h", "P2PHANDSHAKE", 64 << 20, 0, "tcp", "", "m:1", tenant_id="t1") == 0
    assert b.setup({"local_hostname": "h", "tenant_id": "t2"}) == 0
    assert a.put("k", b"one") == 0 and b.get("k") == b""
    a.close()
    b.close()

"""pool.mooncake driven as Mooncake Store's own documentation drives
MooncakeDistributedStore (docs/source/api-reference/python/mooncake-store.md:
the hello world, the NumPy get/put, the zero-copy workflow), and its
return-code contract: 0 or a negative ErrorCode, is_exist 1/0, b"" on a miss.
Mooncake's own tests run in tests/integration/mooncake-suite.sh; these pin
what they do not: segments across stores and processes, the lease, setup's
sizes and the local buffer's bound."""
import ctypes
import errno
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pool
from pool import mooncake
from pool.mooncake import (INVALID_PARAMS, OBJECT_HAS_LEASE, OBJECT_NOT_FOUND,
                           MooncakeDistributedStore, ReplicateConfig)


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
    host, port = store.get_hostname().split(":")
    assert host == "localhost" and 12300 <= int(port) <= 14300


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
    assert store.put("gone", b"x") == 0
    assert store.remove("gone") == OBJECT_HAS_LEASE  # the lease a put leaves
    assert store.remove("gone", force=True) == 0
    assert store.is_exist("gone") == 0


def test_lease_ends(store, monkeypatch):
    monkeypatch.setattr(mooncake, "LEASE_TTL_MS", 50)
    assert store.put("leased", b"x") == 0 and store.get("leased") == b"x"
    assert store.remove("leased") == OBJECT_HAS_LEASE
    assert store.batch_replica_clear(["leased"]) == []
    time.sleep(0.1)
    assert store.batch_replica_clear(["leased"]) == ["leased"]
    assert store.get("leased") == b""


def test_put_keeps_upsert_replaces(store):
    assert store.put("first", b"one") == 0
    assert store.put("first", b"two") == 0 and store.get("first") == b"one"
    assert store.upsert("first", b"three") == 0 and store.get("first") == b"three"


def test_batches(store):
    keys = ["key1", "key2", "key3"]
    assert store.put_batch(keys, [b"value1", b"value2", b"value3"]) == 0
    assert store.get_batch(keys + ["nope"]) == [b"value1", b"value2", b"value3", b""]
    config = ReplicateConfig()
    config.replica_num = 2
    assert store.put("important_data", b"Critical information", config) == 0
    assert store.put_parts("greeting", b"Hello, ", b"World!") == 0
    assert store.get("greeting") == b"Hello, World!"
    assert store.batch_remove(keys, force=True) == [0, 0, 0]


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
    assert store.get_into("large_tensor", ctypes.addressof(small), 16) == INVALID_PARAMS
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
    assert a.setup("h", "P2PHANDSHAKE", 64 << 20, 1 << 20, "tcp", "", "m:1", tenant_id="t1") == 0
    assert b.setup({"local_hostname": "h", "metadata_server": "P2PHANDSHAKE",
                    "tenant_id": "t2"}) == 0
    assert a.put("k", b"one") == 0 and b.get("k") == b""
    a.close()
    b.close()


@pytest.mark.parametrize("size,ok", [("16MB", 16 << 20), ("16 mb", 16 << 20),
                                     ("1.5GB", 3 << 29), (4096, 4096), ("2048", 2048),
                                     ("50%", None), ("1KiB", None), ("-1MB", None),
                                     (512, None), ("", None)])
def test_setup_sizes(size, ok):
    s = MooncakeDistributedStore()
    rc = s.setup({"local_hostname": "h", "metadata_server": "P2PHANDSHAKE",
                  "global_segment_size": size, "local_buffer_size": "1MB"})
    s.close()
    assert rc == (0 if ok else INVALID_PARAMS)
    if ok:
        assert mooncake.parse_size(size) == ok


def test_local_buffer_bounds_copies():
    """put and get copy through the local buffer in Mooncake: with none they fail,
    while the zero-copy calls on the caller's own buffers still work."""
    s = MooncakeDistributedStore()
    assert s.setup("h", "m", 64 << 20, 0, "tcp", "", "m:1") == 0
    assert s.put("nobuf", b"x") == INVALID_PARAMS and s.is_exist("nobuf") == 0
    src = (ctypes.c_ubyte * 8).from_buffer_copy(b"zerocopy")
    assert s.put_from("nobuf", ctypes.addressof(src), 8) == 0
    assert s.get("nobuf") == b"" and s.get_buffer("nobuf") is None
    dst = (ctypes.c_ubyte * 8)()
    assert s.get_into("nobuf", ctypes.addressof(dst), 8) == 8 and bytes(dst) == b"zerocopy"
    s.close()


def _two(tenant):
    a, b = MooncakeDistributedStore(), MooncakeDistributedStore()
    assert a.setup("hostA:1", "m", 64 << 20, 1 << 20, "tcp", "", "m:1", tenant_id=tenant) == 0
    assert b.setup("hostB:1", "m", 64 << 20, 1 << 20, "tcp", "", "m:1", tenant_id=tenant) == 0
    return a, b


def test_segments_across_stores():
    """An object lives on the segments it was placed on: read from another store
    through the directory; gone with its only segment; kept by a second replica."""
    a, b = _two("segs")
    two = ReplicateConfig()
    two.replica_num = 2
    assert a.put("one", b"1") == 0 and a.put("both", b"2", two) == 0
    assert b.get("one") == b"1" and b.is_exist("both") == 1
    assert b.batch_replica_clear(["one"]) == []  # only its putter clears it
    a.close()
    assert b.get("one") == b"" and b.is_exist("one") == 0
    assert b.get("both") == b"2"
    assert b.put("pref", b"3", two) == 0 and a.setup("hostA:1", "m", 64 << 20, 1 << 20, "tcp",
                                                     "", "m:1", tenant_id="segs") == 0
    pref = ReplicateConfig()
    pref.preferred_segment = "hostA:1"
    assert b.put("there", b"4", pref) == 0
    b.close()
    assert a.get("there") == b"4" and a.get("both") == b"" and a.get("pref") == b""
    a.close()


def test_killed_store_segment_dropped():
    """A process killed with its store open leaves its segment until the next store of
    the tenant on this machine sets up and drops it."""
    code = ("import os, sys, time\n"
            "from pool.mooncake import MooncakeDistributedStore\n"
            "s = MooncakeDistributedStore()\n"
            "assert s.setup('h:1', 'm', 8 << 20, 1 << 20, 'tcp', '', 'm', tenant_id='kill') == 0\n"
            "assert s.put('k', b'v') == 0\n"
            "print(s._segs.id, flush=True)\n"
            "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    sid = child.stdout.readline().strip()
    p = pool.Pool()
    p.kv("mooncake-kill." + sid).close()
    s = MooncakeDistributedStore()
    assert s.setup("h:2", "m", 8 << 20, 1 << 20, "tcp", "", "m", tenant_id="kill") == 0
    assert s.get("k") == b"v"  # read from the live process's segment
    s.close()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert s.setup("h:2", "m", 8 << 20, 1 << 20, "tcp", "", "m", tenant_id="kill") == 0
    with pytest.raises(pool.PoolError) as e:
        p.kv("mooncake-kill." + sid)
    assert e.value.code == -errno.ENOENT
    assert s.get("k") == b""
    s.close()
    p.close()


def test_forged_registry_line_drops_nothing():
    """A registry line is anyone's who may write the directory: one naming a live
    segment as a dead process's does not make the next setup drop it."""
    from pool.engines._mooncake_segments import _BOOT, _REGISTRY
    code = ("import time\n"
            "from pool.mooncake import MooncakeDistributedStore\n"
            "s = MooncakeDistributedStore()\n"
            "assert s.setup('h:1', 'm', 8 << 20, 1 << 20, 'tcp', '', 'm', tenant_id='forge') == 0\n"
            "assert s.put('k', b'v') == 0\n"
            "print(s._segs.id, flush=True)\n"
            "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        sid = child.stdout.readline().strip()
        p = pool.Pool()
        directory = p.kv("mooncake-forge")
        lines = directory.get_batch([_REGISTRY], 1 << 20)[0]
        directory.put(_REGISTRY, lines + ("\n%s h:1 %s:999999999:1" % (sid, _BOOT)).encode())
        s = MooncakeDistributedStore()
        assert s.setup("h:2", "m", 8 << 20, 1 << 20, "tcp", "", "m", tenant_id="forge") == 0
        p.kv("mooncake-forge." + sid).close()  # still there
        assert s.get("k") == b"v"
        s.close()
        directory.close()
        p.close()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()



def test_pins_outlive_eviction():
    """with_hard_pin keeps an object from eviction, a soft pin (ENABLE) over the
    unpinned ones until its TTL ends; DISABLE ends one, PRESERVE keeps the key's."""
    s = MooncakeDistributedStore()
    assert s.setup("pins:1", "m", 8 << 20, 2 << 20, "tcp", "", "m:1") == 0
    mib = b"x" * (1 << 20)
    hard, soft, brief, off = (ReplicateConfig() for _ in range(4))
    hard.with_hard_pin = True
    soft.soft_pin_action = brief.soft_pin_action = mooncake.SoftPinAction.ENABLE
    brief.soft_pin_ttl_ms = 200
    off.soft_pin_action = mooncake.SoftPinAction.DISABLE
    assert s.put("hard", mib, hard) == 0 and s.put("soft", mib, soft) == 0
    assert s.put("unpinned", mib, soft) == 0 and s.upsert("unpinned", mib, off) == 0
    assert s.put("kept", mib, soft) == 0 and s.upsert("kept", mib) == 0  # PRESERVE
    assert s.put("brief", mib, brief) == 0
    time.sleep(1)
    for i in range(16):
        assert s.put("cold%d" % i, mib) == 0
    assert [s.is_exist(k) for k in ("hard", "soft", "kept", "unpinned", "brief")] == \
        [1, 1, 1, 0, 0]
    assert s.get("hard") == mib and s.get("cold15") == mib
    s.close()

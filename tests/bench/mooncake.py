"""tests/bench/mooncake.py - pool-bench mooncake's figures: Mooncake's store API
(pool.mooncake: a segment per store, the directory asked on a put) next to the
same operations on one KV namespace through the same binding (pool.KV), in the
same run, one call in flight.

usage: mooncake.py SECONDS  (POOL_SOCKET names poold's socket)

Rows: single put and get of 4 KiB and 1 MiB values; batches of 64 values of
4 KiB (put_batch / batch_put_from, get_batch_into / batch_get_into). Every
get is checked once for the right bytes before timing. Prints ops per second
(values per second for batches) and the ratio.
"""
import ctypes
import sys
import time

import pool
from pool.mooncake import MooncakeDistributedStore

BATCH, KEYS = 64, 1024


def timed(seconds, step):
    """Values per second of step(i) (the values it did) for i = 0, 1, ... for seconds."""
    i = done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        done += step(i)
        i += 1
    return done / (time.perf_counter() - start)


def rows(seconds, size):
    value = bytes(range(256)) * (size // 256)
    buf = bytearray(size)
    addr = ctypes.addressof((ctypes.c_char * size).from_buffer(buf))
    keys = [b"mc-bench-%d" % i for i in range(KEYS)]
    bufs = [bytearray(size) for _ in range(BATCH)]
    addrs = [ctypes.addressof((ctypes.c_char * size).from_buffer(b)) for b in bufs]
    p = pool.Pool()
    p.create_kv("mc-bench-ns", 1 << 30)
    kv = p.kv("mc-bench-ns")
    store = MooncakeDistributedStore()
    assert store.setup("localhost", "P2PHANDSHAKE", 1 << 30, 64 << 20, "tcp", "", "") == 0
    for k in keys:
        assert store.upsert(k, value) == 0
        kv.put(k, value)
    assert store.get(keys[0]) == value and kv.get(keys[0]) == value
    n = len(keys)
    out = []
    batched = size <= 64 << 10
    fresh = iter(range(1 << 40))  # puts of new keys: a put of a key there is a no-op
    out.append(("put %d" % size,
                timed(seconds, lambda i: kv.put(b"n%d" % next(fresh), value) or 1),
                timed(seconds, lambda i: store.put(b"m%d" % next(fresh), value) == 0)))
    out.append(("get %d" % size,
                timed(seconds, lambda i: kv.get_into(keys[i % n], buf) == size),
                timed(seconds, lambda i: store.get_into(keys[i % n], addr, size) == size)))
    if batched:
        buf[:] = value  # the batch_put_from source

        def names(prefix):
            return [b"%s%d" % (prefix, next(fresh)) for _ in range(BATCH)]

        def window(i):
            return keys[(i * BATCH) % n:(i * BATCH) % n + BATCH]
        out.append(("put_batch %dx%d" % (BATCH, size),
                    timed(seconds, lambda i: BATCH - kv.put_batch(names(b"n"), [value] * BATCH)
                          .count(-1)),
                    timed(seconds, lambda i: BATCH * (store.batch_put_from(
                        names(b"m"), [addr] * BATCH, [size] * BATCH) == [0] * BATCH))))
        out.append(("get_batch %dx%d" % (BATCH, size),
                    timed(seconds, lambda i: sum(x == size for x in
                                                 kv.get_batch_into(window(i), bufs))),
                    timed(seconds, lambda i: sum(x == size for x in
                                                 store.batch_get_into(window(i), addrs,
                                                                      [size] * BATCH)))))
    store.close()
    kv.close()
    p.drop_kv("mc-bench-ns")
    p.close()
    return out


def main():
    seconds = float(sys.argv[1])
    print("%-20s %14s %14s %7s" % ("op", "namespace/s", "mooncake/s", "ratio"))
    for size in (4096, 1 << 20):
        for op, base, ours in rows(seconds, size):
            print("%-20s %14.0f %14.0f %7.2f" % (op, base, ours, ours / base))


if __name__ == "__main__":
    main()

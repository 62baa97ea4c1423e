"""tests/bench/kv_python.py - pool-bench kv's Python column: the batched put
and get of 256 KiB values (pool-bench-kv's mput and mget) through the Python
binding, numpy arrays in and out, so kv.sh prints them next to the C client's
of the same run.

usage: kv_python.py NAMESPACE SECONDS  (POOL_SOCKET names poold's socket)

As pool-bench-kv: batches of 32 keys of 16 bytes over a working set of
128 MiB, one call in flight, every get checked once for the right bytes
before timing. Prints "mput OPS GBS" and "mget OPS GBS" (values per second,
10^9 bytes per second).
"""
import sys
import time

import numpy as np

import pool

SIZE, BATCH, WORKING_SET = 256 << 10, 32, 128 << 20


def timed(seconds, step):
    """Values per second of step(first_key) called round the working set for seconds."""
    n = done = 0
    start = time.perf_counter()
    while True:
        done += step(n)
        n += BATCH
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def main():
    ns, seconds = sys.argv[1], float(sys.argv[2])
    nkeys = max(WORKING_SET // SIZE, 2 * BATCH)
    keys = [b"py-bench" + i.to_bytes(8, "little") for i in range(nkeys)]
    rng = np.random.default_rng(1)
    values = [rng.integers(0, 256, SIZE, dtype=np.uint8) for _ in range(BATCH)]
    bufs = [np.empty(SIZE, np.uint8) for _ in range(BATCH)]

    def batch(first):
        return [keys[(first + i) % nkeys] for i in range(BATCH)]

    def put(first):
        status = kv.put_batch(batch(first), values)
        if any(status):
            raise SystemExit("kv_python: put_batch: %r" % status)
        return BATCH

    def get(first):
        lens = kv.get_batch_into(batch(first), bufs)
        if any(n != SIZE for n in lens):
            raise SystemExit("kv_python: get_batch_into: %r" % lens)
        return BATCH

    with pool.Pool() as p:
        kv = p.kv(ns)
        for first in range(0, nkeys, BATCH):  # the working set, each value where a get checks it
            put(first)
        for first in range(0, nkeys, BATCH):
            get(first)
            for i, key in enumerate(batch(first)):
                if not np.array_equal(bufs[i], values[i]):
                    raise SystemExit("kv_python: %r read back wrong" % key)
        # pool-bench-kv's mput comes after its put round has overwritten its
        # working set for as long: the first overwrites of values just made
        # take memory never touched yet (a page fault each page), later ones
        # reuse what the earlier versions freed. An untimed round of puts
        # does the same here, so both columns time the steady state.
        timed(seconds, put)
        rates = {"mget": timed(seconds, get), "mput": timed(seconds, put)}
        for name in ("mput", "mget"):
            print("%s %.0f %.2f" % (name, rates[name], rates[name] * SIZE / 1e9))
        kv.close()


if __name__ == "__main__":
    main()

"""tests/bench/kv_python.py - pool-bench kv's Python column: the batched put
and get of 256 KiB values (pool-bench-kv's mput and mget) through the Python
binding, numpy arrays in and out, so kv.sh prints them next to the C client's
of the same run; then the same blocks through pool.vllm's secondary tier as
vLLM drives it (a cascade job of 32 blocks of its CPU tier stored, a
promotion job loading 32, the next job once the tier reports the last done).

usage: kv_python.py NAMESPACE SECONDS  (POOL_SOCKET names poold's socket)

As pool-bench-kv: batches of 32 keys of 16 bytes over a working set of
128 MiB, one call in flight, every get checked once for the right bytes
before timing. Prints "mput OPS GBS", "mget OPS GBS", "tier-store OPS GBS"
and "tier-load OPS GBS" (values per second, 10^9 bytes per second).
"""
import mmap
import sys
import time
import types

import numpy as np

import pool
from pool.engines._vllm_types import ReqContext, TransferJob
from pool.vllm import PoolSecondaryTier

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
        kv.close()
    rates.update(tier_rates(ns, seconds, keys, values))
    for name in ("mput", "mget", "tier-store", "tier-load"):
        print("%s %.0f %.2f" % (name, rates[name], rates[name] * SIZE / 1e9))


def tier_rates(ns, seconds, keys, values):
    """Blocks per second through PoolSecondaryTier: cascades of new keys, and
    promotions of the working set the puts above left."""
    buf = mmap.mmap(-1, BATCH * SIZE)
    view = memoryview(buf).cast("b", (BATCH, SIZE))
    for i, v in enumerate(values):
        view.cast("B")[i * SIZE:(i + 1) * SIZE] = v.tobytes()
    sn = types.SimpleNamespace
    spec = sn(config=sn(model=sn(name="bench", dtype="bfloat16"), cache=sn(
        tokens_per_hash=16, blocks_per_chunk=1), parallel=sn(tp_size=1, pp_size=1,
                                                             world_size=1)),
              kv_events_config=sn(enable_kv_cache_events=False))
    tier = PoolSecondaryTier(spec, view, "PoolSecondaryTier", namespace=ns)
    ctx, ids, jobs = ReqContext("bench"), np.arange(BATCH, dtype=np.int64), iter(range(1 << 62))
    tier._prefix = b""  # the bench's own keys, as the puts above named them

    def job(names, promotion):
        j = TransferJob(next(jobs), names, ids, promotion, ctx)
        (tier.submit_load if promotion else tier.submit_store)(j)
        tier.drain_jobs()
        done = tier.get_finished_jobs()
        if [r.job_id for r in done] != [j.job_id] or not done[0].success:
            raise SystemExit("kv_python: tier job %d: %r" % (j.job_id, done))
        return BATCH

    fresh = iter(range(1 << 62))
    rates = {"tier-store": timed(seconds, lambda first: job(
                 [b"tier-bench" + next(fresh).to_bytes(8, "little") for _ in range(BATCH)],
                 False)),
             "tier-load": timed(seconds, lambda first: job(
                 [keys[(first + i) % len(keys)] for i in range(BATCH)], True))}
    tier.shutdown()
    view.release()
    buf.close()
    return rates


if __name__ == "__main__":
    main()

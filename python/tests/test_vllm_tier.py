"""pool.vllm's PoolSecondaryTier driven as vLLM's TieringOffloadingManager
drives a secondary tier (vllm/v1/kv_offload/tiering/manager.py at 7cfb97e3):
made by the factory's call (the class named by "type" in "module_path", with
the spec, the CPU tier's view and the entry's other keys), over a page-aligned
shared mapping cut into blocks as vLLM's SharedOffloadRegion cuts it; per step,
get_finished_jobs() once, lookup() key by key until a MISS, touch(), then the
promotions' submit_load() (one job per request, int64 block ids) and
on_schedule_end(); cascades as submit_store() of a set of keys with the block
ids in its order; jobs counted from 0 across both directions, each reported
exactly once; drain_jobs() then one poll returns every job left."""
import importlib
import mmap
import time
import types

import numpy as np
import pytest

import pool
from pool.engines._vllm_types import ReqContext, ScheduleEndContext, TransferJob
from pool.vllm import (JobResult, LookupResult, Medium, OffloadingEvent,
                       RequestOffloadingContext, SecondaryTierManager)

BLOCKS, STRIDE = 8, 2 * mmap.PAGESIZE


def spec(events=True, model="facebook/opt-125m"):
    """The OffloadingSpec fields a tier reads."""
    ns = types.SimpleNamespace
    return ns(config=ns(model=ns(name=model, dtype="bfloat16"),
                        cache=ns(tokens_per_hash=16, blocks_per_chunk=1),
                        parallel=ns(rank=0, world_size=1, tp_size=1, pp_size=1),
                        engine_id="e0"),
              blocks_per_chunk=1, kv_events_config=ns(enable_kv_cache_events=events))


class Driver:
    """vLLM's side: the CPU tier's mapping, the job counter, the jobs in flight."""

    def __init__(self, namespace, **entry):
        self.buf = mmap.mmap(-1, BLOCKS * STRIDE)
        self.view = memoryview(self.buf).cast("b", (BLOCKS, STRIDE))
        conf = {"type": "PoolSecondaryTier", "module_path": "pool.vllm",
                "namespace": namespace, "enable_kv_events": True, **entry}
        # SecondaryTierFactory: import module_path, the class named by type, the rest as kwargs
        cls = getattr(importlib.import_module(conf.pop("module_path")), conf["type"])
        assert issubclass(cls, SecondaryTierManager)
        self.tier = cls(offloading_spec=conf.pop("spec", spec()), primary_kv_view=self.view,
                        tier_type=conf.pop("type"), **conf)
        self.next_job, self.jobs = 0, {}

    def block(self, b):
        return bytes(self.view.cast("B")[b * STRIDE:(b + 1) * STRIDE])

    def fill(self, b, byte):
        self.view.cast("B")[b * STRIDE:(b + 1) * STRIDE] = bytes([byte]) * STRIDE

    def job(self, keys, block_ids, promotion, ctx):
        j = TransferJob(self.next_job, keys, np.array(block_ids, dtype=np.int64), promotion, ctx)
        self.jobs[self.next_job] = j
        self.next_job += 1
        return j

    def poll(self):
        """get_finished_jobs(), as the manager checks it: every id in flight, once."""
        done = list(self.tier.get_finished_jobs())
        for r in done:
            assert isinstance(r, JobResult)
            assert r.job_id in self.jobs, "job %d reported twice or never sent" % r.job_id
            del self.jobs[r.job_id]
        return {r.job_id: r for r in done}

    def wait(self, job_ids):
        results = {}
        for _ in range(2000):
            results.update(self.poll())
            if set(job_ids) <= set(results):
                return results
            time.sleep(0.005)
        raise AssertionError("jobs %s not finished" % job_ids)

    def cascade(self, keys, block_ids, ctx):
        """complete_store(): the keys as a set, the block ids in its order."""
        keys = set(keys)
        order = {k: b for k, b in zip(sorted(keys), block_ids)}
        j = self.job(keys, [order[k] for k in keys], False, ctx)
        self.tier.submit_store(j)
        return j.job_id, order

    def step(self, keys, ctx, free_blocks):
        """One scheduler step for a request: the lookups, then its promotions."""
        self.poll()
        hits = []
        for k in keys:
            verdict = self.tier.lookup(k, ctx)
            assert verdict in (LookupResult.HIT, LookupResult.MISS, LookupResult.RETRY)
            if verdict is LookupResult.MISS:
                break
            if verdict is LookupResult.HIT:
                hits.append(k)
        self.tier.touch(keys, ctx)
        job = None
        if hits:
            job = self.job(hits, free_blocks[:len(hits)], True, ctx)
            self.tier.submit_load(job)
        self.tier.on_schedule_end(ScheduleEndContext([ctx.req_id], ()))
        return job, list(self.tier.take_events())

    def close(self):
        self.tier.shutdown()
        self.view.release()
        self.buf.close()  # BufferError if the tier still held an export


def key(i, group=0):
    return bytes([i]) * 32 + group.to_bytes(4, "big")


@pytest.fixture()
def driver(namespace):
    d = Driver(namespace)
    yield d
    d.close()


def test_cascade_then_promotion(driver):
    ctx = ReqContext("r1")
    assert isinstance(driver.tier.on_new_request(ctx), RequestOffloadingContext)
    keys = [key(i) for i in range(4)]
    for b in range(4):
        driver.fill(b, 0x40 + b)
    jid, order = driver.cascade(keys, [0, 1, 2, 3], ctx)
    res = driver.wait([jid])[jid]
    assert res.success and res.transfer_time is not None
    # its blocks are the CPU tier's no longer (evicted there); a new request hits the pool
    for b in range(BLOCKS):
        driver.fill(b, 0)
    ctx2 = ReqContext("r2")
    driver.tier.on_new_request(ctx2)
    job, events = driver.step(keys + [key(9)], ctx2, [4, 5, 6, 7])
    assert list(job.keys) == keys
    res = driver.wait([job.job_id])[job.job_id]
    assert res.success and res.successful_keys is None
    for k, b in zip(keys, [4, 5, 6, 7]):
        assert driver.block(b) == bytes([0x40 + order[k]]) * STRIDE
    driver.tier.on_request_finished(ctx2)
    assert not driver.jobs and not driver.tier.has_pending_work()


def test_store_events(driver):
    ctx = ReqContext("r")
    driver.fill(0, 1)
    jid, _ = driver.cascade([key(20)], [0], ctx)
    driver.wait([jid])
    events = list(driver.tier.take_events())
    assert events == [OffloadingEvent(keys=[key(20)], medium=Medium.CPU, removed=False,
                                      locality=None)]
    jid, _ = driver.cascade([key(20)], [0], ctx)  # already there: no event
    assert driver.wait([jid])[jid].success and list(driver.tier.take_events()) == []


def test_partial_load_then_miss(driver, namespace):
    ctx = ReqContext("r")
    driver.fill(0, 7)
    driver.fill(1, 8)
    jid, _ = driver.cascade([key(30), key(31)], [0, 1], ctx)
    driver.wait([jid])
    with pool.Pool() as p:  # another client removes one between lookup and load
        p.kv(namespace).remove(driver.tier._prefix + key(31))
    job = driver.job([key(30), key(31)], [2, 3], True, ctx)
    driver.tier.submit_load(job)
    res = driver.wait([job.job_id])[job.job_id]
    assert not res.success and list(res.successful_keys) == [key(30)]
    assert driver.block(2) == bytes([7]) * STRIDE
    assert driver.tier.lookup(key(31), ctx) is LookupResult.MISS
    assert driver.tier.lookup(key(30), ctx) is LookupResult.HIT


def test_bad_jobs_fail_as_results(driver):
    ctx = ReqContext("r")
    j1 = driver.job([key(40)], [BLOCKS], False, ctx)  # past the CPU tier's blocks
    j2 = driver.job([key(41), key(42)], [0], True, ctx)  # fewer blocks than keys
    driver.tier.submit_store(j1)
    driver.tier.submit_load(j2)
    res = driver.wait([j1.job_id, j2.job_id])
    assert not res[j1.job_id].success and not res[j2.job_id].success


def test_drain_reports_every_job(driver):
    ctx = ReqContext("r")
    ids = []
    for i in range(6):
        driver.fill(i, i)
        jid, _ = driver.cascade([key(50 + i)], [i], ctx)
        ids.append(jid)
    driver.tier.drain_jobs()
    res = driver.poll()
    assert sorted(res) == ids and all(r.success for r in res.values())
    assert not driver.tier.has_pending_work()


def test_engines_share_and_layouts_apart(driver, namespace):
    ctx = ReqContext("r")
    driver.fill(0, 0x55)
    jid, _ = driver.cascade([key(60)], [0], ctx)
    driver.wait([jid])
    other = Driver(namespace)  # another engine of the same model
    assert other.tier.lookup(key(60), ctx) is LookupResult.HIT
    other.close()
    third = Driver(namespace, spec=spec(model="another/model"))
    assert third.tier.lookup(key(60), ctx) is LookupResult.MISS
    third.close()

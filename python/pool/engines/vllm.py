"""The pool as a secondary tier of vLLM's tiered KV offloading
(vllm/v1/kv_offload/tiering, the SecondaryTierManager interface at
7cfb97e3): blocks that vLLM's CPU tier cascades are stored in a KV
namespace of the pool, where every engine of the cluster finds them, and
loaded back into the CPU tier on a hit. vLLM loads it from its
kv_connector_extra_config:

    "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": ...,
    "secondary_tiers": [{"type": "PoolSecondaryTier", "module_path": "pool.vllm",
                         "namespace": "vllm-kv"}]

Stores and loads run on the tier's own threads (io_threads), the bytes going
between the CPU tier's buffer and the pool with no copy in Python; their
results come back through get_finished_jobs(), failures as results, never
as exceptions into vLLM's scheduler. See doc/vllm-tier.md.
"""
import ctypes
import hashlib
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pool.engines import _adapter as adapter
from pool._lib import PoolError, memory
from pool.client import Pool

try:
    from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium, OffloadingEvent,
                                         RequestOffloadingContext)
    from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager
except ImportError:
    from pool.engines._vllm_types import (JobResult, Locality, LookupResult, Medium,  # noqa: F401
                                  OffloadingEvent, RequestOffloadingContext,
                                  SecondaryTierManager)

logger = logging.getLogger(__name__)


def _field(obj, path):
    for name in path.split("."):
        obj = getattr(obj, name, None)
    return obj


def layout_prefix(offloading_spec, block_bytes):
    """16 bytes that prefix every key: a hash of what makes a block's bytes mean
    something (the model, its dtype, tokens per hash, blocks per chunk, the
    parallelism and the bytes per block), so engines of another layout share the
    namespace and never read these blocks (as vLLM's file tier names its folder)."""
    fields = {name: str(_field(offloading_spec, path)) for name, path in (
        ("model", "config.model.name"), ("dtype", "config.model.dtype"),
        ("tokens_per_hash", "config.cache.tokens_per_hash"),
        ("blocks_per_chunk", "config.cache.blocks_per_chunk"),
        ("tp", "config.parallel.tp_size"), ("pp", "config.parallel.pp_size"),
        ("world", "config.parallel.world_size"))}
    fields["bytes"] = block_bytes
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).digest()[:16]


class PoolSecondaryTier(SecondaryTierManager):
    """A vLLM secondary tier whose blocks live in a KV namespace of the pool.

    Keyword arguments (the tier's entry in secondary_tiers): namespace (made with
    capacity bytes when it is not there, which needs a pool admin), socket (poold's,
    default $POOL_SOCKET), io_threads, enable_kv_events (BlockStored events for the
    blocks stored, when vLLM's KV events are on), locality ("LOCAL"/"REMOTE")."""

    medium = Medium.CPU

    def __init__(self, offloading_spec, primary_kv_view, tier_type, namespace="vllm-kv",
                 capacity=adapter.DEFAULT_CAPACITY, socket=None, io_threads=4,
                 enable_kv_events=False, locality=None):
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        self.locality = Locality(locality) if locality is not None else None
        view = primary_kv_view
        if view.ndim != 2 or not view.c_contiguous or view.readonly:
            raise ValueError("the CPU tier's view must be a writable 2-D array of blocks")
        self._blocks, self._stride = view.shape[0], view.strides[0]
        # (holds the view's export until shutdown(), which vLLM calls before it
        # releases the view)
        self._export = ctypes.c_char.from_buffer(view)
        self._base = ctypes.addressof(self._export)
        self._prefix = layout_prefix(offloading_spec, self._stride)
        self._pool = Pool(socket)
        try:
            self._kv = self._pool.open_kv(namespace, capacity)
        except PoolError:
            self._pool.close()
            raise
        self._io = ThreadPoolExecutor(max(1, int(io_threads)), thread_name_prefix="pool-vllm")
        self._lock = threading.Condition()
        self._results = []
        self._inflight = 0
        self._missing = set()  # keys a load found gone: MISS until stored again
        on = enable_kv_events and _field(offloading_spec,
                                         "kv_events_config.enable_kv_cache_events")
        self._events = [] if on else None

    # ---- what vLLM's scheduler calls (none blocks: the transfers are the threads')

    def lookup(self, key, req_context):
        """HIT when the block is in the pool: one request to this node's poold."""
        with self._lock:
            if key in self._missing:
                return LookupResult.MISS
        try:
            return LookupResult.HIT if self._kv.exists(self._prefix + key) else \
                LookupResult.MISS
        except PoolError as e:
            logger.warning("pool lookup failed: %s", e)
            return LookupResult.MISS

    def submit_store(self, job):
        self._submit(self._store, job)

    def submit_load(self, job):
        self._submit(self._load, job)

    def get_finished_jobs(self):
        with self._lock:
            done, self._results = self._results, []
        return done

    def has_pending_work(self):
        with self._lock:
            return self._inflight > 0 or bool(self._results)

    def take_events(self):
        if not self._events:
            return ()
        with self._lock:
            events, self._events = self._events, []
        return events

    def touch(self, keys, req_context):
        """Nothing: the pool's LRU counts the loads, and vLLM's CPU tier the rest."""

    def on_new_request(self, req_context):
        return RequestOffloadingContext()

    def drain_jobs(self):
        with self._lock:
            while self._inflight:
                self._lock.wait()

    def shutdown(self):
        self._io.shutdown(wait=True)
        self._kv.close()
        self._pool.close()
        self._export = None

    # ---- the tier's threads

    def _submit(self, work, job):
        with self._lock:
            self._inflight += 1
        try:
            self._io.submit(self._run, work, job)
        except RuntimeError:  # shut down
            self._finish(JobResult(job_id=job.job_id, success=False))

    def _run(self, work, job):
        start = time.perf_counter()
        try:
            result = work(job)
        except Exception as e:  # noqa: BLE001 - a failed job, never the scheduler's exception
            logger.warning("pool tier job %s failed: %s", job.job_id, e)
            result = JobResult(job_id=job.job_id, success=False)
        result.transfer_time = time.perf_counter() - start
        self._finish(result)

    def _finish(self, result):
        with self._lock:
            self._results.append(result)
            self._inflight -= 1
            self._lock.notify_all()

    def _slots(self, job):
        """The job's keys in their order, the pool's names of them, and a view of
        each one's block of the CPU tier."""
        keys = list(job.keys)
        bids = [int(b) for b in job.block_ids]
        if len(bids) != len(keys) or not all(0 <= b < self._blocks for b in bids):
            raise ValueError("%d keys for blocks %s of %d" % (len(keys), bids, self._blocks))
        return keys, [self._prefix + k for k in keys], \
            [memory(self._base + b * self._stride, self._stride) for b in bids]

    def _store(self, job):
        keys, names, views = self._slots(job)
        todo = [i for i, name in enumerate(names) if not self._kv.exists(name)]
        status = adapter.put(self._kv, [names[i] for i in todo], [views[i] for i in todo])
        stored = [keys[i] for i, rc in zip(todo, status) if rc >= 0]
        with self._lock:
            self._missing.difference_update(keys)  # there now (or were: stored again)
            if self._events is not None and stored:
                self._events.append(OffloadingEvent(keys=stored, medium=self.medium,
                                                    removed=False, locality=self.locality))
        return JobResult(job_id=job.job_id, success=len(stored) == len(todo))

    def _load(self, job):
        keys, names, views = self._slots(job)
        hits = adapter.read_into(self._kv, names, views)
        loaded = [k for k, hit in zip(keys, hits) if hit]
        with self._lock:
            self._missing.update(k for k, hit in zip(keys, hits) if not hit)
        whole = len(loaded) == len(keys)
        return JobResult(job_id=job.job_id, success=whole,
                         successful_keys=None if whole else loaded)

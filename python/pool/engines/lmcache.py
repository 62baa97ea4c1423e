"""An LMCache L2 adapter (its multiprocess mode's L2 storage) on the pool's KV cache.

LMCache loads it with its "plugin" L2 adapter type:

    --l2-adapter '{"type": "plugin", "module_path": "pool.lmcache",
                   "class_name": "PoolL2AdapterForLMCache",
                   "adapter_params": {"pool_namespace": "lmcache"}}'

PoolL2Adapter has the methods of LMCache's L2AdapterInterface
(lmcache/v1/distributed/l2_adapters/base.py) with their arguments, return
values and semantics: submit_store_task, submit_lookup_and_lock_task and
submit_load_task return a task id at once and do their work on background
threads; each kind of task signals its own eventfd (EFD_NONBLOCK |
EFD_CLOEXEC, three distinct fds) when it completes, after its result is
ready, and the caller collects results with pop_completed_store_tasks,
query_lookup_and_lock_result and query_load_result (each lookup or load
result once); submit_unlock releases what a lookup locked; close() finishes
the submitted tasks, then closes the eventfds. Lookup and load results are
LMCache's Bitmap (lmcache.native_storage_ops) when LMCache is installed.

Importing this module needs neither LMCache nor torch. A memory object is
read and written through its byte_array (as LMCache's native connector
adapter does), else its tensor (a torch CPU tensor through .numpy()), else
the buffer protocol, so numpy arrays work as well. PoolL2AdapterForLMCache is
the same class with LMCache's L2AdapterInterface as a second base, which the
plugin loader requires; it is built when first named.

Options, from adapter_params (the dict LMCache's plugin loader passes first):
pool_namespace (else $POOL_LMCACHE_NAMESPACE, else "lmcache"), pool_socket
(else $POOL_SOCKET, else libpool's default), pool_capacity (the bytes of a
namespace made on first use, 8 GiB if not given).

A chunk is one value, under the key LMCache's native connector adapter gives
an ObjectKey:

    <model_name>@<kv_rank as 8 hex digits>@<chunk_hash in hex>[@<cache_salt>]

the salt only where the key has a non-empty cache_salt (newer ObjectKeys).

Differences from LMCache's own adapters:
 * A lock is a count kept in this process, as in the native connector
   adapter: it does not stop poold from evicting a locked chunk, so a load
   after a lookup can still miss (the interface allows it; the bit is 0).
   Make the namespace no-evict (poolctl) where that matters.
 * A lookup asks poold for the longest stored prefix of the keys, then for
   the prefix of what follows each miss: one round trip, plus one for each
   miss before the last hit.
 * A store replaces a chunk already stored (the mock adapter skips it); the
   task succeeds only if every chunk of it is stored.
 * A load of a chunk whose stored length is not its buffer's is a miss.
 * Store results are ints that are also truthy exactly on success: the
   number of bytes written, or -1 on failure, with is_successful() and
   bytes_transferred(), so callers of either the bool or the L2StoreResult
   form of pop_completed_store_tasks read them right.
 * submit_lookup_and_lock_task takes and ignores a layout description as
   a second argument, which newer LMCache passes.
 * A failed request to poold is logged and reported as chunks not stored,
   not found or not loaded, never raised.
"""
import logging
import os
import queue
import threading
from collections import defaultdict

from pool.engines import _adapter as adapter
from pool.client import Pool

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "lmcache"
NAMESPACE_ENV = "POOL_LMCACHE_NAMESPACE"


def object_key_string(key):
    """The pool key of an LMCache ObjectKey (the native connector adapter's form)."""
    text = "%s@%08x@%s" % (key.model_name, key.kv_rank, bytes(key.chunk_hash).hex())
    salt = getattr(key, "cache_salt", None)
    return "%s@%s" % (text, salt) if salt else text


class _Bitmap:
    """The methods of LMCache's Bitmap its adapters use, where LMCache is absent."""

    def __init__(self, size):
        self._bits = [False] * size

    def set(self, i):
        self._bits[i] = True

    def test(self, i):
        return self._bits[i]

    def __len__(self):
        return len(self._bits)

    def __repr__(self):
        return "<Bitmap %s>" % "".join("1" if b else "0" for b in self._bits)


def _bitmap(size):
    try:
        from lmcache.native_storage_ops import Bitmap
    except ImportError:
        return _Bitmap(size)
    return Bitmap(size)


class StoreResult(int):
    """A store task's outcome: bytes written, or -1; true exactly on success."""

    def __new__(cls, success, bytes_transferred):
        return super().__new__(cls, bytes_transferred if success else -1)

    def is_successful(self):
        return int(self) >= 0

    def bytes_transferred(self):
        return max(int(self), 0)

    def __bool__(self):
        return self.is_successful()

    def __repr__(self):
        return "StoreResult(%s, %d)" % (self.is_successful(), self.bytes_transferred())


class _Worker:
    """A thread that runs submitted tasks in order, until close()."""

    def __init__(self, name):
        self._tasks = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn, *args):
        self._tasks.put((fn, args))

    def _run(self):
        while True:
            task = self._tasks.get()
            if task is None:
                return
            fn, args = task
            try:
                fn(*args)
            except Exception:  # a task reports its own failures; this is a bug
                logger.exception("pool.lmcache: task failed")

    def close(self):
        self._tasks.put(None)
        self._thread.join()


class PoolL2Adapter:
    """LMCache's L2AdapterInterface on a KV namespace of the pool."""

    def __init__(self, adapter_params=None, **framework_args):
        # framework_args: what LMCache's loader adds (l1_memory_desc), unused.
        opts = dict(adapter_params or {})
        self.namespace = adapter.option(opts, "pool_namespace", NAMESPACE_ENV, DEFAULT_NAMESPACE)
        self.capacity = int(adapter.option(opts, "pool_capacity", default=adapter.DEFAULT_CAPACITY))
        self._pool = Pool(adapter.option(opts, "pool_socket"))
        try:
            self._kv = self._pool.open_kv(self.namespace, self.capacity)
        except BaseException:
            self._pool.close()
            raise

        flags = os.EFD_NONBLOCK | os.EFD_CLOEXEC
        self._store_efd = os.eventfd(0, flags)
        self._lookup_efd = os.eventfd(0, flags)
        self._load_efd = os.eventfd(0, flags)

        self._lock = threading.Lock()  # everything below, and task ids
        self._next_task_id = 0
        self._completed_stores = {}
        self._completed_lookups = {}
        self._completed_loads = {}
        self._locked = defaultdict(int)
        # Stores apart from lookups and loads, as LMCache's store and prefetch
        # controllers call from their own threads: a backlog of stores does
        # not hold up a prefetch.
        self._store_worker = _Worker("pool-lmcache-store")
        self._prefetch_worker = _Worker("pool-lmcache-prefetch")

    def _task_id(self):
        with self._lock:
            task_id = self._next_task_id
            self._next_task_id += 1
        return task_id

    # ---- eventfds

    def get_store_event_fd(self):
        return self._store_efd

    def get_lookup_and_lock_event_fd(self):
        return self._lookup_efd

    def get_load_event_fd(self):
        return self._load_efd

    # ---- store

    def submit_store_task(self, keys, objects):
        if len(keys) != len(objects):
            raise ValueError("pool.lmcache: as many memory objects as keys")
        # Views taken now: the caller owns the objects, valid until completion.
        bufs = [adapter.flat_bytes(o, "a memory object") for o in objects]
        task_id = self._task_id()
        self._store_worker.submit(self._store, task_id, [object_key_string(k) for k in keys],
                                  bufs)
        return task_id

    def _store(self, task_id, names, bufs):
        status = adapter.put(self._kv, names, bufs)
        failed = [st for st in status if st]
        if failed:
            logger.warning("pool.lmcache: %d chunks not stored in %s: %s", len(failed),
                           self.namespace, os.strerror(-failed[0]))
        ok = not failed
        result = StoreResult(ok, sum(len(b) for b in bufs) if ok else 0)
        with self._lock:
            self._completed_stores[task_id] = result
        os.eventfd_write(self._store_efd, 1)

    def pop_completed_store_tasks(self):
        with self._lock:
            done, self._completed_stores = self._completed_stores, {}
        return done

    # ---- lookup and lock

    def submit_lookup_and_lock_task(self, keys, layout_desc=None):
        task_id = self._task_id()
        self._prefetch_worker.submit(self._lookup, task_id, list(keys))
        return task_id

    def _present(self, names):
        """Which of names are stored: the stored prefix, then the prefix after each miss."""
        present = [False] * len(names)
        start = 0
        while start < len(names):
            chunk = names[start:start + adapter.REQUEST_KEYS]
            found = adapter.match(self._kv, chunk)
            if found is None:
                break
            present[start:start + found] = [True] * found
            start += found if found == len(chunk) else found + 1
        return present

    def _lookup(self, task_id, keys):
        present = self._present([object_key_string(k) for k in keys])
        bitmap = _bitmap(len(keys))
        with self._lock:
            for i, hit in enumerate(present):
                if hit:
                    bitmap.set(i)
                    self._locked[keys[i]] += 1
            self._completed_lookups[task_id] = bitmap
        os.eventfd_write(self._lookup_efd, 1)

    def query_lookup_and_lock_result(self, task_id):
        with self._lock:
            return self._completed_lookups.pop(task_id, None)

    def submit_unlock(self, keys):
        with self._lock:
            for key in keys:
                count = self._locked.get(key, 0)
                if count <= 1:
                    self._locked.pop(key, None)
                else:
                    self._locked[key] = count - 1

    # ---- load

    def submit_load_task(self, keys, objects):
        if len(keys) != len(objects):
            raise ValueError("pool.lmcache: as many memory objects as keys")
        bufs = [adapter.flat_bytes(o, "a memory object") for o in objects]
        if any(b.readonly for b in bufs):
            raise ValueError("pool.lmcache: a load needs writable memory objects")
        task_id = self._task_id()
        self._prefetch_worker.submit(self._load, task_id, [object_key_string(k) for k in keys],
                                     bufs)
        return task_id

    def _load(self, task_id, names, bufs):
        bitmap = _bitmap(len(names))
        for i, hit in enumerate(adapter.read_into(self._kv, names, bufs)):
            if hit:
                bitmap.set(i)
        with self._lock:
            self._completed_loads[task_id] = bitmap
        os.eventfd_write(self._load_efd, 1)

    def query_load_result(self, task_id):
        with self._lock:
            return self._completed_loads.pop(task_id, None)

    # ---- status and cleanup

    def report_status(self):
        with self._lock:
            locked = len(self._locked)
        return {"is_healthy": self._kv is not None, "type": "PoolL2Adapter",
                "namespace": self.namespace, "locked_key_count": locked}

    def close(self):
        """Finish the submitted tasks, then release the namespace and the eventfds."""
        if self._kv is None:
            return
        self._store_worker.close()
        self._prefetch_worker.close()
        adapter.release(self._kv, self._pool)
        self._kv = self._pool = None
        for fd in (self._store_efd, self._lookup_efd, self._load_efd):
            os.close(fd)

    def __repr__(self):
        return "<pool.lmcache.PoolL2Adapter %r>" % self.namespace


def __getattr__(name):
    """PoolL2AdapterForLMCache, made on first use: LMCache's plugin loader accepts
    only subclasses of its L2AdapterInterface, which cannot be imported without LMCache."""
    if name != "PoolL2AdapterForLMCache":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    from lmcache.v1.distributed.l2_adapters.base import L2AdapterInterface

    return adapter.engine_class(__name__, name, PoolL2Adapter, L2AdapterInterface)

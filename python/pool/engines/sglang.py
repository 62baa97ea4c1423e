"""An SGLang HiCache storage backend (its L3 KV store) on the pool's KV cache.

SGLang loads it with its dynamic backend:

    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config
    '{"backend_name": "pool", "module_path": "pool.sglang",
      "class_name": "PoolHiCacheStorageForSGLang", "interface_v1": 1}'

PoolHiCacheStorage has the methods of SGLang's HiCacheStorage
(python/sglang/srt/mem_cache/hicache_storage.py) with their arguments,
return values and semantics: batch_exists counts the leading pages present;
batch_get_v1/batch_set_v1 move whole pages between the registered host KV
pool and the pool with no copy in Python, a page's pointers taken from the
host pool's get_page_buffer_meta(); batch_get/batch_set/get/set are the
generic path on flat data pages; a set of a page that is already stored
succeeds without writing it again. Importing this module needs neither SGLang
nor torch: tensors are read through the buffer protocol (a torch CPU tensor
through .numpy()), so numpy arrays and other buffers work as well.
PoolHiCacheStorageForSGLang is the same class with SGLang's HiCacheStorage as
a second base, which its loader requires; it is built when first named.

Options, from the storage config's extra_config (SGLang's
--hicache-storage-backend-extra-config) or the dict passed second:
pool_namespace (else $POOL_SGLANG_NAMESPACE, else "sglang-hicache"),
pool_socket (else $POOL_SOCKET, else libpool's default), pool_capacity (the
bytes of a namespace made on first use, 8 GiB if not given),
extra_backend_tag (a key prefix, as Mooncake's backend takes it).

A page is stored as one value per component: the K and V halves of an MHA
page ("_k", "_v"), the single latent of an MLA page ("_k"), under

    [<extra_backend_tag>_][<model name, "/" as "-">_]<page hash><rank tag><component>

where the rank tag is "_<tp_rank>_<tp_size>" for MHA (MLA pages are the same
on every rank, and SGLang has only rank 0 write them), then
"_pp<pp_rank>_<pp_size>" with pipeline parallelism and
"_cp<attn_cp_rank>_<attn_cp_size>" with attention context parallelism.

Differences from SGLang's built-in backends:
 * Both paths use that one key layout: the generic path splits a flat data
   page into as many equal parts as the page has components, which for the
   page_first layouts are the bytes the zero-copy path stores, so
   batch_exists answers for either path.
 * Keys carry tp_size for MHA (Mooncake's carry tp_rank only), so ranks of
   deployments with different tensor parallelism never read each other's
   head slices.
 * A value whose length is not the page's is a miss, not a truncated read.
 * A failed request to poold is logged and answered as pages missing or not
   stored, not raised.
 * A set first asks which leading pages are stored (one round trip) and
   writes the rest, replacing any stored after a gap with the same bytes;
   Mooncake asks about every key.
 * get() and batch_get() need their target buffers; Mooncake's pointer
   forms (an int address with target_sizes) are not taken.
 * The v1 path takes one buffer per component, as the page_first and
   page_first_direct layouts give; layer_first MLA pages (one buffer per
   layer) and split heads (tp_lcm_size) are refused.
 * The v2 calls for hybrid models' side pools (Mamba, SWA, DSA indexer)
   raise NotImplementedError, as HiCacheStorage's defaults do, so such
   models cannot use it.
 * clear() drops and re-creates the namespace: it needs an admin caller of
   poold, and clears the keys of every model and rank in it.
 * get_stats() returns None (no storage metrics).
"""
import logging

from pool.engines import _adapter as adapter
from pool._lib import PoolError, memory
from pool.client import Pool

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "sglang-hicache"
NAMESPACE_ENV = "POOL_SGLANG_NAMESPACE"


def _split(view, parts):
    """view cut into parts equal slices, the components of one page."""
    if len(view) % parts:
        raise ValueError("a page of %d bytes does not split into %d components" %
                         (len(view), parts))
    size = len(view) // parts
    return [view[i * size:(i + 1) * size] for i in range(parts)]


class PoolHiCacheStorage:
    """SGLang's HiCacheStorage interface on a KV namespace of the pool."""

    def __init__(self, storage_config=None, options=None):
        # SGLang's dynamic loader passes its keyword arguments as a dict here;
        # its built-in backends get the host KV pool in this place instead.
        mem_pool_host = None
        if options is not None and not isinstance(options, dict):
            mem_pool_host, options = options, None
        opts = dict(getattr(storage_config, "extra_config", None) or {})
        opts.update(options or {})

        def conf(name, default):
            return getattr(storage_config, name, default) if storage_config else default

        self.is_mla = bool(conf("is_mla_model", False))
        if conf("should_split_heads", False):
            raise NotImplementedError("pool.sglang: split heads (tp_lcm_size) are not supported")
        self.components = ("_k",) if self.is_mla else ("_k", "_v")

        prefix = [str(opts["extra_backend_tag"])] if opts.get("extra_backend_tag") else []
        model = conf("model_name", None)
        if model:
            prefix.append("-".join(model.split("/")))
        self._prefix = "".join(p + "_" for p in prefix)
        tag = "" if self.is_mla else "_%d_%d" % (conf("tp_rank", 0), conf("tp_size", 1))
        if conf("pp_size", 1) > 1:
            tag += "_pp%d_%d" % (conf("pp_rank", 0), conf("pp_size", 1))
        if conf("attn_cp_size", 1) > 1:
            tag += "_cp%d_%d" % (conf("attn_cp_rank", 0), conf("attn_cp_size", 1))
        self._rank_tag = tag

        self.namespace = adapter.option(opts, "pool_namespace", NAMESPACE_ENV, DEFAULT_NAMESPACE)
        self.capacity = int(adapter.option(opts, "pool_capacity", default=adapter.DEFAULT_CAPACITY))
        self.mem_pool_host = None
        self._pool = Pool(adapter.option(opts, "pool_socket"))
        try:
            self._kv = self._pool.open_kv(self.namespace, self.capacity)
        except BaseException:
            self._pool.close()
            raise
        if mem_pool_host is not None:
            self.register_mem_pool_host(mem_pool_host)

    def close(self):
        adapter.release(self._kv, self._pool)
        self._kv = self._pool = None

    def register_mem_pool_host(self, mem_pool_host):
        self.mem_pool_host = mem_pool_host

    # ---- keys and the requests under every call
    #
    # A failed request is logged and reported as pages not found or not stored,
    # never raised: SGLang's prefetch and backup threads die on an exception and
    # are not restarted.

    def _value_keys(self, keys):
        """The keys of the values that hold pages keys, component by component."""
        return ["%s%s%s%s" % (self._prefix, key, self._rank_tag, c)
                for key in keys for c in self.components]

    def _pages(self, per_value):
        """Per-value outcomes folded into one per page: all of its components."""
        n = len(self.components)
        return [all(per_value[i:i + n]) for i in range(0, len(per_value), n)]

    def _leading(self, value_keys):
        """How many leading values are stored."""
        found = 0
        for i in range(0, len(value_keys), adapter.REQUEST_KEYS):
            chunk = value_keys[i:i + adapter.REQUEST_KEYS]
            got = adapter.match(self._kv, chunk)
            found += got or 0
            if got != len(chunk):
                break
        return found

    def _read(self, value_keys, bufs):
        """Fill bufs[i] with value i; whether each was there with exactly its length."""
        return adapter.read_into(self._kv, value_keys, bufs)

    def _write(self, value_keys, bufs):
        """Store the values not yet stored; whether each is stored now."""
        n = len(self.components)
        skip = self._leading(value_keys) // n * n
        status = adapter.put(self._kv, value_keys[skip:], bufs[skip:])
        return [True] * skip + [s == 0 for s in status]

    def _host_buffers(self, keys, host_indices):
        """Views of the host KV pool's memory that hold the pages at host_indices."""
        if self.mem_pool_host is None:
            raise RuntimeError("pool.sglang: register_mem_pool_host() first")
        page_size = getattr(self.mem_pool_host, "page_size", 1)
        if len(host_indices) != len(keys) * page_size:
            raise ValueError("%d host indices for %d pages of %d tokens" %
                             (len(host_indices), len(keys), page_size))
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        if len(ptrs) != len(keys) * len(self.components):
            raise ValueError("pool.sglang: %d buffers for %d pages of %d components; only the "
                             "page_first layouts are supported" %
                             (len(ptrs), len(keys), len(self.components)))
        return [memory(int(p), int(s)) for p, s in zip(ptrs, sizes)]

    # ---- HiCacheStorage

    def batch_exists(self, keys, extra_info=None):
        """How many leading pages of keys are stored."""
        if not keys:
            return 0
        return self._leading(self._value_keys(keys)) // len(self.components)

    def exists(self, key):
        return self.batch_exists([key]) == 1

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        """Read pages into the host KV pool at host_indices; whether each page was read."""
        if not keys:
            return []
        return self._pages(self._read(self._value_keys(keys),
                                      self._host_buffers(keys, host_indices)))

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        """Store the host KV pool's pages at host_indices; whether each page is stored."""
        if not keys:
            return []
        return self._pages(self._write(self._value_keys(keys),
                                       self._host_buffers(keys, host_indices)))

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        """Read pages into target_locations (flat data pages); each one filled, or None."""
        if target_locations is None or len(target_locations) != len(keys):
            raise ValueError("pool.sglang: batch_get needs one target buffer per key")
        bufs = [part for t in target_locations
                for part in _split(adapter.flat_bytes(t, "a page buffer"), len(self.components))]
        read = self._pages(self._read(self._value_keys(keys), bufs)) if keys else []
        return [t if ok else None for t, ok in zip(target_locations, read)]

    def get(self, key, target_location=None, target_sizes=None):
        return self.batch_get([key], [target_location])[0]

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        """Store values (flat data pages) under keys; whether all are stored."""
        if values is None or len(values) != len(keys):
            raise ValueError("pool.sglang: batch_set needs one value per key")
        if not keys:
            return True
        bufs = [part for v in values for part in _split(adapter.flat_bytes(v, "a page buffer"), len(self.components))]
        return all(self._write(self._value_keys(keys), bufs))

    def set(self, key, value=None, target_location=None, target_sizes=None):
        return self.batch_set([key], [value])

    def clear(self):
        """Drop every value of the namespace; False if poold refused."""
        try:
            self._pool.drop_kv(self.namespace)
            self._pool.create_kv(self.namespace, self.capacity)
        except PoolError as e:
            logger.error("pool.sglang: cannot clear namespace %s: %s", self.namespace, e)
            return False
        return True

    def get_stats(self):
        return None

    # Hybrid models' side pools (Mamba, SWA, DSA indexer) are not stored.
    def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
        raise NotImplementedError()

    def batch_get_v2(self, transfers, extra_info=None):
        raise NotImplementedError()

    def batch_set_v2(self, transfers, extra_info=None):
        raise NotImplementedError()

    def __repr__(self):
        return "<pool.sglang.PoolHiCacheStorage %r%s>" % (self.namespace, self._rank_tag)


def __getattr__(name):
    """PoolHiCacheStorageForSGLang, made on first use: SGLang's loader accepts only
    subclasses of its HiCacheStorage, which cannot be imported without SGLang."""
    if name != "PoolHiCacheStorageForSGLang":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

    return adapter.engine_class(__name__, name, PoolHiCacheStorage, HiCacheStorage)

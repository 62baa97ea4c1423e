"""Vector indexes in pool memory: numpy in, numpy out."""
import operator
from ctypes import POINTER, byref, c_float, c_uint, c_uint64, c_void_p

import numpy as np

from pool._lib import check, lib, u64, uint

KINDS = {"flat": 1, "hnsw": 2}
METRICS = {"l2": 1, "ip": 2, "cosine": 3}
K_MAX = 1024
NONE = 2**64 - 1  # the label of an unused result slot


def opts(m=0, ef_construction=0, ef_search=0, mode=None, placement=None, cls=None):
    """A pool_vec_opts handle (free with lib.pool_vec_opts_free), or None for the defaults."""
    if not (m or ef_construction or ef_search) and mode is None and placement is None and \
            cls is None:
        return None
    o = c_void_p()
    check(lib.pool_vec_opts_new(byref(o)))
    try:
        check(lib.pool_vec_opts_set_hnsw(o, uint(m, "m"), uint(ef_construction, "ef_construction"),
                                         uint(ef_search, "ef_search")))
        if mode is not None:
            check(lib.pool_vec_opts_set_mode(o, uint(mode, "mode")))
        if placement is not None:
            check(lib.pool_vec_opts_set_placement(o, placement.encode()))
        if cls is not None:
            check(lib.pool_vec_opts_set_class(o, cls.encode()))
    except BaseException:
        lib.pool_vec_opts_free(o)
        raise
    return o


def _plain(a, leaf):
    """a in a form numpy takes without trusting it: numpy arrays and buffer exporters
    (through the buffer protocol) as they are, sequences item by item, numbers made
    plain by leaf (float or operator.index). Given any other object, numpy would take
    the address its __array_interface__ names, or call its __array__."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, np.generic):
        return leaf(a)
    try:
        return np.asarray(memoryview(a))
    except TypeError:
        pass
    if isinstance(a, (list, tuple, range)):
        return [_plain(x, leaf) for x in a]
    return leaf(a)


def _labels(labels):
    """labels as a contiguous uint64 array, each checked: numpy would wrap a negative
    one, or make a list of large ones floats."""
    lab = _plain(labels, operator.index)
    if isinstance(lab, list):
        return np.array([u64(x, "a label") for x in lab], dtype=np.uint64)
    if lab.size and lab.dtype.kind not in "iu":
        raise TypeError("labels must be integers, not %s" % lab.dtype)
    if lab.size and lab.dtype.kind == "i" and lab.min() < 0:
        raise ValueError("labels must not be negative (%d)" % lab.min())
    return np.ascontiguousarray(lab, dtype=np.uint64)


def _floats(a, dim, what):
    a = np.ascontiguousarray(_plain(a, float), dtype=np.float32)
    if a.shape[-1] != dim:
        raise ValueError("%s of %d dimensions, not %d" % (what, a.shape[-1], dim))
    return a


def _k(k):
    """k, checked before results are made room for."""
    if uint(k, "k") > K_MAX:
        raise ValueError("k of %d: at most %d" % (k, K_MAX))
    return k


class VectorIndex:
    """An open index (Pool.create_index() or Pool.open_index())."""

    def __init__(self, pool, handle, name):
        self._pool = pool
        self._h = handle
        self.name = name
        self.dim = self.info()["dim"]

    def _handle(self):
        if self._h is None:
            raise ValueError("index %r is closed" % self.name)
        return self._h

    def add(self, label, vector):
        v = _floats(vector, self.dim, "a vector")
        check(lib.pool_vec_add(self._handle(), u64(label, "a label"),
                               v.ctypes.data_as(POINTER(c_float))))

    def add_batch(self, labels, vectors):
        """vectors: an (n, dim) array; labels: n integers. The number added."""
        v = _floats(vectors, self.dim, "vectors").reshape(-1, self.dim)
        lab = _labels(labels)
        if len(lab) != len(v):
            raise ValueError("as many labels as vectors")
        return check(lib.pool_vec_add_batch(self._handle(), len(v),
                                            lab.ctypes.data_as(POINTER(c_uint64)),
                                            v.ctypes.data_as(POINTER(c_float))))

    def remove(self, label):
        """Tombstone the vectors under label: how many."""
        return check(lib.pool_vec_remove(self._handle(), u64(label, "a label")))

    def search(self, query, k):
        """(labels, distances) of the k nearest, nearest first (fewer if fewer exist)."""
        q = _floats(query, self.dim, "a query")
        k = _k(k)
        labels = np.empty(k, dtype=np.uint64)
        dists = np.empty(k, dtype=np.float32)
        n = check(lib.pool_vec_search(self._handle(), q.ctypes.data_as(POINTER(c_float)), k,
                                      labels.ctypes.data_as(POINTER(c_uint64)),
                                      dists.ctypes.data_as(POINTER(c_float))))
        return labels[:n], dists[:n]

    def search_batch(self, queries, k):
        """(labels, distances, counts) for an (n, dim) array of queries: (n, k) results,
        query i's first counts[i] of them valid (the rest labelled NONE)."""
        q = _floats(queries, self.dim, "queries").reshape(-1, self.dim)
        k = _k(k)
        n = len(q)
        labels = np.empty((n, k), dtype=np.uint64)
        dists = np.empty((n, k), dtype=np.float32)
        counts = np.empty(n, dtype=np.uint32)
        check(lib.pool_vec_search_batch(self._handle(), n, q.ctypes.data_as(POINTER(c_float)),
                                        k, labels.ctypes.data_as(POINTER(c_uint64)),
                                        dists.ctypes.data_as(POINTER(c_float)),
                                        counts.ctypes.data_as(POINTER(c_uint))))
        return labels, dists, counts

    def set_ef(self, ef):
        """This handle's HNSW search breadth (0: the index's)."""
        check(lib.pool_vec_set_ef(self._handle(), uint(ef, "ef")))

    def info(self):
        h = c_void_p()
        check(lib.pool_vec_stat(self._handle(), byref(h)))
        try:
            kinds = {v: k for k, v in KINDS.items()}
            metrics = {v: k for k, v in METRICS.items()}
            return {
                "kind": kinds.get(lib.pool_vec_info_kind(h)),
                "metric": metrics.get(lib.pool_vec_info_metric(h)),
                "dim": lib.pool_vec_info_dim(h),
                "m": lib.pool_vec_info_m(h),
                "ef_construction": lib.pool_vec_info_ef_construction(h),
                "ef_search": lib.pool_vec_info_ef_search(h),
                "count": lib.pool_vec_info_count(h),
                "deleted": lib.pool_vec_info_deleted(h),
                "capacity": lib.pool_vec_info_capacity(h),
                "used": lib.pool_vec_info_used(h),
                "size": lib.pool_vec_info_size(h),
                "writer": lib.pool_vec_info_writer(h),
            }
        finally:
            lib.pool_vec_info_free(h)

    def __len__(self):
        info = self.info()
        return info["count"] - info["deleted"]

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(lib.pool_vec_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def index_size(kind, dim, n, o=None):
    size = c_uint64()
    check(lib.pool_vec_size(KINDS[kind], uint(dim, "dim"), u64(n, "capacity"), o, byref(size)))
    return size.value


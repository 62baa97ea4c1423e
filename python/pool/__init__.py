"""pool - Python binding of libpool, the client library of the memory pool.

    import pool
    with pool.Pool() as p:
        kv = p.kv("blocks")
        kv.put(b"k", b"v")

Pool (the connection), Region and Batch, KV (and hash_chain), VectorIndex,
Snapshot, Clone and serve_save; every failure raises PoolError, whose code is libpool's
POOL_E* or -errno and whose message is pool_errormsg()'s. See pool-python(3).
"""
from pool._lib import (POOL_ECOORD, POOL_ELOST, POOL_EPROTOCOL, POOL_EVERSION,  # noqa: F401
                       PoolError, lib)
from pool.client import Pool  # noqa: F401
from pool.kv import KV, hash_chain  # noqa: F401
from pool.region import Batch, Region  # noqa: F401
from pool.snap import Clone, Snapshot, serve_save  # noqa: F401
from pool.vec import VectorIndex  # noqa: F401

__version__ = lib.pool_version().decode()

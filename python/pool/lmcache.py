"""pool.lmcache: pool.engines.lmcache, under the path LMCache's plugin L2 adapter (module_path) names.

The module replaces itself with pool.engines.lmcache, so both names are one module.
"""
import sys

from pool.engines import lmcache as _engine

sys.modules[__name__] = _engine

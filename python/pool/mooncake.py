"""pool.mooncake: pool.engines.mooncake, under the path code written for Mooncake Store (and python/compat's mooncake.store) names.

The module replaces itself with pool.engines.mooncake, so both names are one module.
"""
import sys

from pool.engines import mooncake as _engine

sys.modules[__name__] = _engine

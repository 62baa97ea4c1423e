"""pool.sglang: pool.engines.sglang, under the path SGLang's dynamic HiCache backend (module_path) names.

The module replaces itself with pool.engines.sglang, so both names are one module.
"""
import sys

from pool.engines import sglang as _engine

sys.modules[__name__] = _engine

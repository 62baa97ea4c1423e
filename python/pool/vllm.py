"""pool.vllm: pool.engines.vllm, under the path vLLM's kv_connector_extra_config (module_path) names.

The module replaces itself with pool.engines.vllm, so both names are one module.
"""
import sys

from pool.engines import vllm as _engine

sys.modules[__name__] = _engine

"""pool.engines - the inference engines' adapters, on the binding (package pool):
vLLM's secondary KV tier (vllm), LMCache's L2 adapter (lmcache), SGLang's
HiCache storage backend (sglang) and Mooncake Store's Python API (mooncake).

Engines load them by the paths their configurations name, pool.vllm,
pool.lmcache, pool.sglang and pool.mooncake: each of those is this package's
module under that name (the same module object), not a copy.
"""

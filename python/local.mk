# python/: the Python binding of libpool (package pool, ctypes: nothing to
# compile), installed where Debian's python3 finds it (configure's
# PYTHON3_DIST); the tests use it from the source tree.
pythonpooldir = $(PYTHON3_DIST)/pool
pythonpool_DATA = python/pool/__init__.py python/pool/_lib.py python/pool/client.py python/pool/kv.py \
	python/pool/region.py python/pool/snap.py python/pool/vec.py \
	python/pool/lmcache.py python/pool/mooncake.py python/pool/sglang.py python/pool/vllm.py
# The engines' adapters; pool.lmcache and the three others above are their
# paths as the engines' configurations name them.
pythonpoolenginesdir = $(pythonpooldir)/engines
pythonpoolengines_DATA = python/pool/engines/__init__.py python/pool/engines/_adapter.py \
	python/pool/engines/lmcache.py python/pool/engines/mooncake.py \
	python/pool/engines/_mooncake_segments.py python/pool/engines/sglang.py \
	python/pool/engines/vllm.py python/pool/engines/_vllm_types.py
# mooncake.store as an alias of pool.mooncake, for code that imports Mooncake's
# module unchanged: on PYTHONPATH by choice, not where python3 looks by default.
pythoncompatdir = $(pkgdatadir)/python-compat/mooncake
pythoncompat_DATA = python/compat/mooncake/__init__.py python/compat/mooncake/store.py
EXTRA_DIST += $(pythonpool_DATA) $(pythonpoolengines_DATA) $(pythoncompat_DATA) python/tests/test_pool.py python/tests/test_mooncake.py \
	python/tests/test_sglang.py python/tests/test_lmcache.py python/tests/test_bounds.py \
	python/tests/test_vllm_tier.py \
	python/tests/conftest.py

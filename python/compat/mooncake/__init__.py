"""An alias of pool.mooncake as the package mooncake, for code that imports
mooncake.store and no Mooncake installed: put this folder's parent on
PYTHONPATH (installed as /usr/share/pool/python-compat)."""

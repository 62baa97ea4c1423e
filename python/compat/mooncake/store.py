"""mooncake.store: pool.mooncake under Mooncake's module name."""
from pool.mooncake import *  # noqa: F401,F403
from pool.mooncake import __all__  # noqa: F401

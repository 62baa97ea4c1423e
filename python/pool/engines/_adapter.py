"""What the engine adapters (pool.sglang, pool.lmcache) share: their options,
an engine's buffers as bytes, and a namespace's batched requests cut to a
size poold takes, whose failures are logged and answered, never raised (the
engines' I/O threads die on an exception and are not restarted)."""
import logging
import os
import sys
import types

from pool._lib import PoolError

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 8 << 30  # of a namespace an adapter makes on first use
# Values per request: under libpool's 4096 keys, and small enough that keys of
# any length an engine makes fit poold's default 1 MiB control frame.
REQUEST_KEYS = 1024


def engine_class(module, name, ours, engine_base):
    """The class an engine's loader is named (module.name): ours, with the engine's
    base class second, since the loaders accept only subclasses of their interface.
    Made on first use by the module's __getattr__, as the base cannot be imported
    without the engine; kept in the module for the next lookups."""
    cls = types.new_class(name, (ours, engine_base),
                          exec_body=lambda ns: ns.update(__module__=module,
                                                         __doc__=ours.__doc__))
    setattr(sys.modules[module], name, cls)
    return cls


def option(options, name, env=None, default=None):
    """options[name], else $env, else default."""
    value = options.get(name)
    if value is None and env is not None:
        value = os.environ.get(env)
    return default if value is None else value


def flat_bytes(obj, what):
    """A flat, byte-addressed memoryview of an LMCache MemoryObj (its byte_array,
    else its tensor), a torch CPU tensor, a numpy array or any buffer."""
    view = getattr(obj, "byte_array", None)
    if view is None:
        view = getattr(obj, "tensor", obj)
        if hasattr(view, "numpy") and hasattr(view, "element_size"):
            # Its bytes, in place: numpy has no bfloat16 (or fp8).
            view = view.view(-1).view(sys.modules["torch"].uint8).numpy()
    view = memoryview(view)
    if not view.c_contiguous:
        raise ValueError("%s must be contiguous" % what)
    return view.cast("B")


def put(kv, names, bufs, pin=0, pin_ms=0):
    """Store bufs[i] under names[i], pinned as KV.put_batch() pins; each one's status
    (0 or -errno)."""
    status = []
    for i in range(0, len(names), REQUEST_KEYS):
        chunk = names[i:i + REQUEST_KEYS]
        try:
            status += kv.put_batch(chunk, bufs[i:i + REQUEST_KEYS], pin, pin_ms)
        except PoolError as e:
            logger.warning("write to %s failed: %s", kv.namespace, e)
            status += [e.code] * len(chunk)
    return status


def read_into(kv, names, bufs):
    """Fill bufs[i] with names[i]'s value; whether each was there with exactly its length."""
    hits = []
    for i in range(0, len(names), REQUEST_KEYS):
        b = bufs[i:i + REQUEST_KEYS]
        try:
            lens = kv.get_batch_into(names[i:i + REQUEST_KEYS], b)
        except PoolError as e:
            logger.warning("read from %s failed: %s", kv.namespace, e)
            lens = [None] * len(b)
        hits += [n is not None and n == len(buf) for n, buf in zip(lens, b)]
    return hits


def match(kv, names):
    """How many leading names are stored, in one request; None when it fails."""
    try:
        return kv.match(names)
    except PoolError as e:
        logger.warning("lookup in %s failed: %s", kv.namespace, e)
        return None


def release(kv, pool):
    """Close a namespace handle and the connection it came from (either may be None)."""
    if kv is not None:
        kv.close()
    if pool is not None:
        pool.close()

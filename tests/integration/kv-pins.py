"""tests/integration/kv-pins.py NS - pins against eviction through libpool
(kv-pins.sh makes NS, 8 MiB, of 1 MiB values): hard pinned values are never
evicted, soft pinned ones only once no unpinned value can go, a pin with a
deadline ends with it, a namespace full of hard pinned values refuses a put
until one is removed, batches and in-place writes pin too, and a pin that
is not one is refused. Prints "ok"/"not ok" lines for tap."""
import errno
import sys
import time
from ctypes import c_int, c_size_t, c_void_p

import pool
from pool._lib import lib
from pool.kv import PIN_HARD, PIN_KEEP, PIN_NONE, PIN_SOFT

MIB = 1 << 20


def check(cond, text):
    print(("ok - " if cond else "not ok - ") + text, flush=True)


def value(i, size=MIB):
    return bytes([i % 256]) * size


def flood(kv, prefix, count):
    for i in range(count):
        kv.put(b"%s%d" % (prefix, i), value(i))


def present(kv, *keys):
    return [k.decode() for k in keys if kv.exists(k)]


def main():
    p = pool.Pool()
    kv = p.kv(sys.argv[1])

    kv.put(b"hard1", value(1), pin=PIN_HARD)
    kv.put_batch([b"hard2", b"soft1"], [value(2), value(3)], pin=PIN_HARD)
    kv.put(b"soft1", value(3), pin=PIN_SOFT)  # (a new pin replaces the key's)
    with kv.reserve(b"soft2", MIB, pin=PIN_SOFT) as view:
        view[:] = value(4)
    flood(kv, b"a", 24)
    left = present(kv, b"hard1", b"hard2", b"soft1", b"soft2")
    check(len(left) == 4, "24 unpinned values through the 4 MiB left: the pinned stay (%s)"
          % " ".join(left))
    check(kv.get(b"soft2") == value(4) and kv.get(b"hard2") == value(2),
          "and read back as written (in place, and in a batch)")
    check(present(kv, b"a23", b"a20") == ["a23", "a20"] and not kv.exists(b"a19"),
          "the unpinned values went least recently used first")

    # A put that says nothing keeps the key's pin; PIN_NONE ends it.
    kv.put(b"soft1", value(5))
    kv.put(b"a23", value(6), pin=PIN_NONE)
    flood(kv, b"b", 8)
    check(kv.get(b"soft1") == value(5), "a pinned key written again without a pin keeps it")

    # A pin with a deadline: the sweep ends it, and the value goes as any other.
    kv.put(b"brief", value(7), pin=PIN_SOFT, pin_ms=200)
    flood(kv, b"c", 8)
    check(kv.exists(b"brief"), "a soft pin for 200 ms holds while it lasts")
    time.sleep(1.5)
    flood(kv, b"d", 8)
    check(not kv.exists(b"brief") and kv.exists(b"soft1"),
          "once its 200 ms are over it is evicted as any value, the others' pins hold")

    # A value needing 6 MiB: every unpinned value goes, then the soft pinned ones.
    kv.put(b"big", value(8, 6 * MIB), pin=PIN_HARD)
    left = present(kv, b"hard1", b"hard2", b"soft1", b"soft2")
    check(left == ["hard1", "hard2"] and kv.get(b"big") == value(8, 6 * MIB),
          "6 MiB more of hard pins: the soft pinned values gave way, not the hard (%s)"
          % " ".join(left))
    try:
        kv.put(b"more", value(9))
        check(False, "a namespace full of hard pinned values took a put")
    except pool.PoolError as e:
        check(e.code == -errno.ENOSPC, "a namespace full of hard pinned values refuses a put: "
              + str(e))
    kv.remove(b"big")
    kv.put(b"more", value(9))
    check(present(kv, b"more", b"hard1", b"hard2") == ["more", "hard1", "hard2"],
          "once one is removed the put goes in, and the hard pins stay")

    # What is not a pin is refused by libpool, with errno EINVAL and why.
    h = kv._handle()
    bad = [lib.pool_kv_put_pinned(h, b"x", 1, b"y", 1, 7, 0),
           lib.pool_kv_put_pinned(h, b"x", 1, b"y", 1, PIN_SOFT, (1 << 40) + 1),
           lib.pool_kv_put_pinned(h, b"x", 1, b"y", 1, PIN_NONE, 5),
           lib.pool_kv_put_pinned(h, b"x", 1, b"y", 1, PIN_KEEP, 5)]
    status = (c_int * 1)()
    keys, lens = (c_void_p * 1)(), (c_size_t * 1)(1)
    bad.append(lib.pool_kv_put_batch_pinned(h, 0, keys, lens, keys, lens, 9, 0, status))
    check(all(rc == -errno.EINVAL for rc in bad) and not kv.exists(b"x"),
          "pins that are none are refused: %s (%s)" % (bad, lib.pool_errormsg().decode()))
    for wrong in ({"pin": 7}, {"pin": PIN_SOFT, "pin_ms": -1}, {"pin": PIN_SOFT, "pin_ms": 1.5}):
        try:
            kv.put(b"x", b"y", **wrong)
            check(False, "the binding took %s" % wrong)
        except ValueError:
            pass
    check(not kv.exists(b"x"), "and by the binding before they are sent")
    # The last reserver wins: an earlier writer's pinned commit pins nothing of the later
    # value (kv-pins.sh counts the pins left).
    with kv.reserve(b"race", MIB, pin=PIN_HARD) as first:
        with kv.reserve(b"race", MIB) as second:
            second[:] = value(11)
        first[:] = value(12)
    check(kv.get(b"race") == value(11), "two writers of a key: the later reservation's value")
    kv.put(b"soft-end", value(10), pin=PIN_SOFT, pin_ms=600000)
    kv.put(b"small-hard", value(13, 4096), pin=PIN_HARD)  # (one request: poold's inline put)


main()

"""tests/integration/kv-share.py HOG SMALL KEEP - namespaces competing for a
full pool (kv-share.sh makes them): HOG, whose capacity is far beyond the
memory, fills it; SMALL (16 MiB) must then hold its whole capacity, and keep
it while HOG goes on putting; KEEP (8 MiB, evict none) must take values up to
its capacity and refuse past it. Prints "ok"/"not ok" lines for tap.

With $KV_SHARE_RETRIES set (tests/cluster/kv-share.sh: a lender on another
node, whose scrubs of evicted values answer a message later), a put refused
with ENOSPC is tried again up to that many times, 20 ms apart, as a client
would; how many were is printed."""
import errno
import os
import sys
import time

import pool

MIB = 1 << 20


RETRIES = int(os.environ.get("KV_SHARE_RETRIES", "0"))
retried = 0


def put(kv, key, value):
    global retried
    for left in range(RETRIES, -1, -1):
        try:
            return kv.put(key, value)
        except pool.PoolError as e:
            if e.code != -errno.ENOSPC or left == 0:
                raise
            retried += 1
            time.sleep(0.02)


def puts(kv, prefix, first, count):
    """Put count 1 MiB values; the number of them that failed."""
    failed = 0
    for i in range(first, first + count):
        try:
            put(kv, b"%s%d" % (prefix, i), bytes([i % 256]) * MIB)
        except pool.PoolError:
            failed += 1
    return failed


def held(kv, prefix, first, count):
    return sum(kv.exists(b"%s%d" % (prefix, i)) for i in range(first, first + count))


def check(what, cond):
    print("%s - %s" % ("ok" if cond else "not ok", what))


def main():
    hog_ns, small_ns, keep_ns = sys.argv[1:4]
    p = pool.Pool()
    hog, small, keep = p.kv(hog_ns), p.kv(small_ns), p.kv(keep_ns)
    failed = puts(hog, b"h", 0, 100)
    n = held(hog, b"h", 0, 100)
    check("%s: 100 puts of 1 MiB into 64 MiB, its own cold values going: %d failed, %d held"
          % (hog_ns, failed, n), failed == 0 and 30 <= n < 100)
    failed = puts(small, b"s", 0, 16)
    check("%s: 16 MiB put into its 16 MiB with %s filling the memory: %d failed"
          % (small_ns, hog_ns, failed), failed == 0)
    failed = puts(hog, b"h", 100, 100)
    n = held(small, b"s", 0, 16)
    check("%s keeps all of its 16 values while %s puts 100 more (%d failed): %d"
          % (small_ns, hog_ns, failed, n), n == 16 and failed == 0)
    good = all(small.get(b"s%d" % i) == bytes([i % 256]) * MIB for i in range(16))
    check("%s's values read back whole" % small_ns, good)
    failed = puts(keep, b"k", 0, 8)
    check("%s (evict none): its 8 MiB taken with the memory full: %d failed"
          % (keep_ns, failed), failed == 0)
    try:
        put(keep, b"k8", bytes(MIB))
        check("%s refuses a put past its capacity" % keep_ns, False)
    except pool.PoolError as e:
        check("%s refuses a put past its capacity: %s" % (keep_ns, e), True)
    n = held(small, b"s", 0, 16)
    check("%s still holds its 16 values" % small_ns, n == 16)
    if RETRIES:
        print("# %d puts refused once (ENOSPC) and tried again" % retried)


main()

"""tests/integration/statusloop.py - root's `poolctl status`, again and again.

    statusloop.py POOLCTL SOCKET FLAG

Runs `POOLCTL -s SOCKET status` (each waited for, 20 ms apart) while the
file FLAG exists, then prints one line: how many answered, how many failed,
the longest wait and the 99th percentile, in ms.
"""
import os
import subprocess
import sys
import time

poolctl, sock, flag = sys.argv[1:4]
waits, failed = [], 0
while os.path.exists(flag):
    t = time.monotonic()
    r = subprocess.run([poolctl, "-s", sock, "status"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    waits.append((time.monotonic() - t) * 1000)
    failed += r.returncode != 0
    time.sleep(0.02)
waits.sort()
p99 = waits[min(len(waits) - 1, len(waits) * 99 // 100)] if waits else 0
print("%d %d %.0f %.0f" % (len(waits), failed, waits[-1] if waits else 0, p99))

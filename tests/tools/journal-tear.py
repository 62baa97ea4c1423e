#!/usr/bin/env python3
"""journal-tear.py FILE OFFSET: damage the last record of the journal
(daemon/lend/journal.c) that starts at byte OFFSET of FILE, as a write torn by a
crash would: one byte of its payload flipped. Exits 1 when the journal has
no record."""
import struct
import sys

path, start = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(start)
    magic, _, active, gen, _, half = struct.unpack("<QIIQQQ", f.read(40))
    f.seek(start + 2048)
    other = struct.unpack("<QIIQQQ", f.read(40))
    if other[0] == magic and other[3] > gen:
        active, half = other[2], other[5]
    pos, last = start + 4096 + active * half, None
    while True:
        f.seek(pos)
        n, = struct.unpack("<I", f.read(4))
        if n == 0:
            break
        last = pos
        pos += 24 + (n + 7) // 8 * 8
    if last is None:
        sys.exit("journal-tear.py: the journal holds no record")
    f.seek(last + 24)
    b = f.read(1)
    f.seek(last + 24)
    f.write(bytes([b[0] ^ 0xff]))

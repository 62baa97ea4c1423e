"""KV events as vLLM's routers take them (run by kvevents.sh).

The subscriber does what vLLM's examples/online_serving/kv_events_subscriber.py
and its tests' MockSubscriber do: a SUB socket on the publisher, the three
frames topic | 8-byte big-endian seq | payload, and on a gap the first missed
seq sent to the replay socket, read back until an empty payload. Payloads are checked byte for byte against what
msgspec writes for vLLM's structs (msgspec and msgpack write the same bytes
for the same values: floats as float64, ints and lengths in their shortest
form, str as str, bytes as bin).

usage: kvevents.py CASE PUB_ENDPOINT REPLAY_ENDPOINT NAMESPACE [format] [hash]
"""
import os
import sys
import time

import msgpack
import zmq

import pool

CASE, PUB, REPLAY, NS = sys.argv[1:5]
FORMAT = sys.argv[5] if len(sys.argv) > 5 else "map"
HASH = sys.argv[6] if len(sys.argv) > 6 else "int"
TOPIC = "kv-events"
END_SEQ = (-1).to_bytes(8, "big", signed=True)


def block_hash(key):
    """vLLM's maybe_convert_block_hash() of the key, or the key itself."""
    if HASH == "bytes":
        return key
    return int.from_bytes(key, byteorder="big") & ((1 << 64) - 1)


def stored(keys, parent=None, block_size=16, medium="CPU"):
    """A BlockStored as vLLM's msgspec struct encodes: tag first, then fields in order,
    those left at their defaults (extra_keys, group_idx, ...) left out."""
    fields = [("block_hashes", [block_hash(k) for k in keys]),
              ("parent_block_hash", None if parent is None else block_hash(parent)),
              ("token_ids", []), ("block_size", block_size), ("lora_id", None),
              ("medium", medium), ("lora_name", None)]
    if FORMAT == "map":
        return dict([("type", "BlockStored")] + fields)
    return ["BlockStored"] + [v for _, v in fields]


def removed(keys, medium="CPU"):
    fields = [("block_hashes", [block_hash(k) for k in keys]), ("medium", medium)]
    if FORMAT == "map":
        return dict([("type", "BlockRemoved")] + fields)
    return ["BlockRemoved"] + [v for _, v in fields]


def kind(e):
    return e["type"] if FORMAT == "map" else e[0]


def hashes(e):
    return e["block_hashes"] if FORMAT == "map" else e[1]


def cleared():
    return {"type": "AllBlocksCleared"} if FORMAT == "map" else ["AllBlocksCleared"]


class Subscriber:
    """vLLM's subscriber, as its tests' MockSubscriber and its example do it, keeping what
    it gets. Replays go through a DEALER (a REQ takes only the first of the replies, which
    is why vLLM's tests moved to DEALER): [b"", seq] out, [b"", topic, seq, payload] back
    (vLLM 0.26 on, the map format), or [b"", seq, payload] (earlier, the array format)."""

    def __init__(self, topic=TOPIC, rcvhwm=None):
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        if rcvhwm is not None:
            self.sub.setsockopt(zmq.RCVHWM, rcvhwm)
        self.sub.connect(PUB)
        self.sub.setsockopt_string(zmq.SUBSCRIBE, topic)
        self.replay = self.ctx.socket(zmq.DEALER)
        self.replay.connect(REPLAY)
        self.last_seq = -1
        self.batches = []  # (seq, raw payload)
        self.gaps = 0

    def replay_from(self, start):
        """Ask for the batches from start on; read them until the end marker."""
        self.replay.send_multipart([b"", start.to_bytes(8, "big")])
        got = []
        while self.replay.poll(2000):
            frames = self.replay.recv_multipart()
            assert frames[0] == b"", frames
            if FORMAT == "map":
                _, topic, seq_bytes, payload = frames
                assert topic == TOPIC.encode(), topic
            else:
                _, seq_bytes, payload = frames
            if not payload:
                assert seq_bytes == END_SEQ, seq_bytes
                return got
            seq = int.from_bytes(seq_bytes, "big")
            got.append((seq, payload))
            if seq > self.last_seq:
                self.batches.append((seq, payload))
                self.last_seq = seq
        raise AssertionError("the replay did not end with the end marker")

    def poll(self, timeout_ms=200):
        """Take what came; on a gap, replay the missed batches first."""
        while self.sub.poll(timeout_ms):
            topic, seq_bytes, payload = self.sub.recv_multipart()
            assert topic == TOPIC.encode(), topic
            seq = int.from_bytes(seq_bytes, "big")
            if self.last_seq >= 0 and seq > self.last_seq + 1:
                self.gaps += 1
                self.replay_from(self.last_seq + 1)
            if seq > self.last_seq:
                self.batches.append((seq, payload))
                self.last_seq = seq
            timeout_ms = 100

    def poll_until(self, done, seconds=20):
        """Take what comes until done(events) holds (a slow poold, under a sanitizer or a
        loaded machine, publishes late, not wrongly), or the time is up."""
        deadline = time.time() + seconds
        while True:
            self.poll()
            if done(self.events()) or time.time() > deadline:
                return

    def events(self):
        """Every event of every batch taken, in order; each payload's bytes checked."""
        out = []
        for _, payload in self.batches:
            batch = msgpack.unpackb(payload, raw=False)
            assert isinstance(batch, list) and len(batch) == 2, batch
            ts, events = batch
            assert isinstance(ts, float) and abs(ts - time.time()) < 600, ts
            assert msgpack.packb([ts, events], use_bin_type=True) == payload, \
                "not the bytes msgspec writes: %r" % payload
            out.extend(events)
        return out

    def close(self):
        self.ctx.destroy(linger=0)


def settle(sub):
    """Let the subscription reach the publisher (PUB drops what nobody subscribed to yet):
    a key put and removed until its events come."""
    kv = pool.Pool().kv(NS)
    for _ in range(100):
        kv.put(b"settle", b"x")
        kv.remove(b"settle")
        time.sleep(0.05)
        sub.poll(50)
        if sub.batches:
            break
    assert sub.batches, "no events came"
    time.sleep(0.2)
    sub.poll(100)
    sub.batches.clear()


def keys_of(n, salt):
    return pool.hash_chain(list(range(16 * n)), 16, salt=salt)


def case_events():
    """Stored for new keys (a batch's keys one event, as a chain), none for an overwrite,
    Removed for a remove, an eviction and an expiry; AllBlocksCleared for a flush;
    nothing of another namespace."""
    p = pool.Pool()
    sub = Subscriber()
    settle(sub)
    kv = p.kv(NS)
    chain = keys_of(3, b"a")
    assert kv.put_batch(chain, [b"v" * 100] * 3) == [0, 0, 0]
    kv.put(chain[1], b"w" * 100)                         # an overwrite: no news
    one = keys_of(1, b"b")[0]
    kv.put(one, b"z")
    kv.remove(chain[0])
    with p.open_kv("other-" + NS, 1 << 20) as other:     # not published
        other.put(one, b"q")
    # 4 values of 300K overfill the 1M namespace: the least recently used go
    big = keys_of(4, b"c")
    for k in big:
        kv.put(k, b"b" * (300 << 10))
    want_big = [stored([k]) for k in big]
    sub.poll_until(lambda ev: all(e in ev for e in want_big))
    got = sub.events()
    evicted = [e for e in got[4:] if kind(e) == "BlockRemoved"]
    want = [stored(chain), stored([one]), removed([chain[0]])]
    assert got[:3] == want, "%r\n!=\n%r" % (got[:3], want)
    stored_big = [e for e in got[3:] if e not in evicted]
    assert stored_big == want_big, stored_big
    gone = [h for e in evicted for h in hashes(e)]
    assert set(gone) <= {block_hash(k) for k in chain[1:] + [one] + big}, gone
    assert len(gone) >= 2, gone
    seqs = [s for s, _ in sub.batches]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    os.system("%s kv flush %s >/dev/null" % (os.environ["POOLCTL"], NS))
    sub.poll_until(lambda ev: ev[-1] == cleared())
    assert sub.events()[-1] == cleared(), sub.events()[-1]
    print("events: %d batches, %d events; %d keys evicted" % (len(sub.batches), len(sub.events()),
                                                               len(gone)))
    sub.close()


def case_replay():
    """A subscriber that comes late gets every kept batch from seq 0 by replay, then
    the end marker; from a seq past the newest, only the end marker."""
    kv = pool.Pool().kv(NS)
    keys = keys_of(20, b"r")
    for k in keys:
        kv.put(k, b"r")
    time.sleep(0.3)
    sub = Subscriber()
    got = sub.replay_from(0)
    seqs = [s for s, _ in got]
    assert seqs == list(range(len(seqs))), seqs
    events = sub.events()
    assert events[-20:] == [stored([k]) for k in keys], events[-20:]
    assert sub.replay_from(seqs[-1] + 1000) == []
    print("replay: %d batches from seq 0, then the end marker" % len(got))
    sub.close()


def case_gap():
    """A subscriber that reads too slowly misses batches (PUB drops past the high-water
    marks, poold never waits), sees the gap in the sequence numbers and gets what it missed
    by replay, so it ends with every batch."""
    kv = pool.Pool().kv(NS)
    sub = Subscriber(rcvhwm=1)
    settle(sub)
    first = sub.last_seq + 1
    n = int(os.environ.get("GAP_BATCHES", "100"))
    keys = [os.urandom(200) + b"%06d" % i for i in range(64 * n)]
    t0 = time.time()
    for i in range(n):  # batches of 64 keys of 206 bytes, ~13K each, none read meanwhile
        assert kv.put_batch(keys[64 * i:64 * (i + 1)], [b"g"] * 64) == [0] * 64
    took = time.time() - t0
    sub.poll(500)  # what got through; batches dropped at the end show as a gap at the next
    kv.put(b"tail", b"t")
    keys.append(b"tail")
    sub.poll(500)
    seqs = [s for s, _ in sub.batches]
    assert sub.gaps > 0, "no batch was dropped: the test did not test a slow reader"
    assert seqs == list(range(first, first + len(seqs))), "not every batch: %r" % seqs[:20]
    got = [h for e in sub.events() if kind(e) == "BlockStored" for h in hashes(e)]
    assert got == [block_hash(k) for k in keys], "keys lost or out of order"
    print("gap: %d puts in %.2fs, none read meanwhile; %d gaps replayed, all %d batches" %
          (n, took, sub.gaps, len(seqs)))
    sub.close()


def case_hostile():
    """Raw peers on the replay socket: wrong shapes, a message over the size bound, a
    request never read; poold ignores them and answers a real subscriber."""
    ctx = zmq.Context()
    bad = ctx.socket(zmq.DEALER)
    bad.connect(REPLAY)
    bad.send_multipart([b"", b"short"])                   # not 8 bytes
    bad.send_multipart([b"", b"12345678", b"extra"])      # too many parts
    bad.send_multipart([b"x", b"12345678"])               # no empty delimiter
    bad.send(b"12345678")                                 # one part
    big = ctx.socket(zmq.DEALER)
    big.connect(REPLAY)
    big.send_multipart([b"", b"\0" * 8 + b"y" * 4096])     # over ZMQ_MAXMSGSIZE
    stall = ctx.socket(zmq.DEALER)                        # asks, never reads
    stall.connect(REPLAY)
    for _ in range(50):
        stall.send_multipart([b"", (0).to_bytes(8, "big")])
    pubspam = ctx.socket(zmq.XSUB)                        # a subscription far too long
    pubspam.connect(PUB)
    pubspam.send(b"\x01" + b"t" * 4096)
    time.sleep(0.3)
    assert not bad.poll(200), "a malformed request was answered"
    sub = Subscriber()
    got = sub.replay_from(0)
    kv = pool.Pool().kv(NS)
    kv.put(b"after-hostile", b"x")
    print("hostile: malformed requests ignored; a real replay got %d batches" % len(got))
    sub.close()
    ctx.destroy(linger=0)


def case_tiers():
    """Values that spill to the pmem tier go from medium CPU to STORAGE (vLLM's
    names: a BlockRemoved of the one, a BlockStored of the other), and back on a
    promotion; a remove of a spilled value is a BlockRemoved of STORAGE. The index
    the events build, key by medium, ends as poold's stats say."""
    p = pool.Pool()
    sub = Subscriber()
    settle(sub)
    kv = p.kv(NS)
    big = keys_of(6, b"t")
    for k in big:  # 6 values of 300K through a 1M namespace: the oldest spill
        kv.put(k, b"s" * (300 << 10))

    def index(events):
        where = {}
        for e in events:
            medium = e["medium"] if FORMAT == "map" else e[-2 if kind(e) == "BlockStored" else -1]
            for h in hashes(e):
                if kind(e) == "BlockStored":
                    assert h not in where, "stored twice: %r" % e
                    where[h] = medium
                elif kind(e) == "BlockRemoved":
                    assert where.pop(h, None) == medium, "removed from where it was not: %r" % e
        return where

    spilled = lambda ev: [h for h, m in index(ev).items() if m == "STORAGE"]  # noqa: E731
    sub.poll_until(lambda ev: len(spilled(ev)) >= 2)
    moved = spilled(sub.events())
    assert len(moved) >= 2, index(sub.events())
    first = next(k for k in big if block_hash(k) == moved[0])
    assert kv.get(first) == b"s" * (300 << 10)  # a hit on a spilled value promotes it
    sub.poll_until(lambda ev: index(ev).get(moved[0]) == "CPU")
    assert index(sub.events()).get(moved[0]) == "CPU", index(sub.events())
    gone = next(k for k in big if index(sub.events()).get(block_hash(k)) == "STORAGE")
    kv.remove(gone)
    sub.poll_until(lambda ev: block_hash(gone) not in index(ev))
    where = index(sub.events())
    assert block_hash(gone) not in where and removed([gone], "STORAGE") in sub.events()
    assert sorted(where) == sorted(block_hash(k) for k in big if k != gone), where
    stats = os.popen("%s --json kv stats %s" % (os.environ["POOLCTL"], NS)).read()
    print("tiers: %d of 6 keys in STORAGE, %d in CPU; %s" % (
        sum(m == "STORAGE" for m in where.values()), sum(m == "CPU" for m in where.values()),
        stats.strip()[:200]))
    sub.close()


{"events": case_events, "replay": case_replay, "gap": case_gap,
 "hostile": case_hostile, "tiers": case_tiers}[CASE]()

"""A router's view of a sharded namespace's KV events (run by kv-shard-events.sh).

usage: kv-shard-events.py watch DIR ENDPOINT,REPLAY_ENDPOINT...
       kv-shard-events.py check DIR EXPECTED_KEYS_FILE

watch subscribes to every poold's endpoint as vLLM's own subscriber does
(a SUB socket each, frames topic | 8-byte big-endian seq | msgpack
[ts, [event, ...]], events as maps, block hashes as the key bytes; a gap
replayed) and keeps what a router would: for each endpoint the set of
keys it says are there (BlockStored adds, BlockRemoved takes away,
AllBlocksCleared empties; a sequence that starts again is a poold that
restarted: what it published since is replayed from 0).
Every 100 ms it writes DIR/state.json (the sets, the messages taken so far,
the sequence gaps seen) until DIR/stop exists.

check waits until no message came for a second (at most 60 s), then
compares the sets with the expected keys (one a line): each key is shown
by exactly one endpoint, and no other key by any. It prints what differs
and exits 1 if anything does.
"""
import json
import os
import sys
import time

import msgpack
import zmq

TOPIC = b"kv-events"


class Publisher:
    """One poold's events as a router keeps them: its keys, and its batches in order (a
    gap replayed from its replay endpoint through a DEALER, as vLLM's subscriber does; a
    sequence that starts again is a publisher that restarted, replayed from 0)."""

    def __init__(self, ctx, endpoint, replay):
        self.sub = ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, TOPIC)
        self.sub.connect(endpoint)
        self.replay = ctx.socket(zmq.DEALER)
        self.replay.connect(replay)
        self.keys = set()
        self.last = -1
        self.stamps = {}  # seq: ts of the batches taken, to tell one replayed from a restart
        self.gaps = self.restarts = self.twice = 0

    def apply(self, seq, payload):
        ts, events = msgpack.unpackb(payload, raw=False)
        self.stamps[seq] = ts
        for e in events:
            if e["type"] == "BlockStored":
                for h in e["block_hashes"]:
                    self.twice += h in self.keys
                    self.keys.add(h)
            elif e["type"] == "BlockRemoved":
                self.keys.difference_update(e["block_hashes"])
            elif e["type"] == "AllBlocksCleared":
                self.keys.clear()

    def replay_from(self, start):
        self.replay.send_multipart([b"", start.to_bytes(8, "big")])
        while self.replay.poll(5000):
            _, topic, seq, payload = self.replay.recv_multipart()
            assert topic == TOPIC, topic
            if not payload:
                return
            seq = int.from_bytes(seq, "big")
            if seq > self.last:
                self.apply(seq, payload)
                self.last = seq
        raise AssertionError("a replay did not end")

    def take(self):
        topic, seq, payload = self.sub.recv_multipart()
        assert topic == TOPIC, topic
        seq = int.from_bytes(seq, "big", signed=True)
        if seq <= self.last and self.stamps.get(seq) == msgpack.unpackb(payload)[0]:
            return  # (taken already, by a replay)
        if seq <= self.last:
            self.restarts += 1
            self.keys.clear()
            self.stamps.clear()
            self.last = -1
        if seq > self.last + 1:
            self.gaps += self.last >= 0
            self.replay_from(self.last + 1)
        if seq > self.last:
            self.apply(seq, payload)
            self.last = seq


def watch(out_dir, endpoints):
    ctx = zmq.Context()
    pubs = [Publisher(ctx, *ep.split(",")) for ep in endpoints]
    poller = zmq.Poller()
    for p in pubs:
        poller.register(p.sub, zmq.POLLIN)
    messages = 0
    last_write = 0.0
    while not os.path.exists(os.path.join(out_dir, "stop")):
        for s, _ in poller.poll(50):
            next(p for p in pubs if p.sub is s).take()
            messages += 1
        now = time.monotonic()
        if now - last_write >= 0.1:
            last_write = now
            state = {"messages": messages, "gaps": [p.gaps for p in pubs],
                     "restarts": [p.restarts for p in pubs],
                     "stored_twice": sum(p.twice for p in pubs),
                     "keys": [sorted(k.decode() for k in p.keys) for p in pubs]}
            tmp = os.path.join(out_dir, "state.json.tmp")
            with open(tmp, "w") as f:
                json.dump(state, f)
            os.rename(tmp, os.path.join(out_dir, "state.json"))


def load(out_dir):
    with open(os.path.join(out_dir, "state.json")) as f:
        return json.load(f)


def check(out_dir, expected_file):
    with open(expected_file) as f:
        expected = set(line.strip() for line in f if line.strip())
    deadline = time.monotonic() + 60
    state = load(out_dir)
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < 1.0:
        time.sleep(0.2)
        now = load(out_dir)
        if now["messages"] != state["messages"]:
            quiet_since = time.monotonic()
        state = now
    shown = {}
    for i, ks in enumerate(state["keys"]):
        for k in ks:
            shown.setdefault(k, []).append(i + 1)
    twice = sorted(k for k, at in shown.items() if len(at) > 1)
    missing = sorted(expected - set(shown))
    extra = sorted(set(shown) - expected)
    counts = " ".join(str(len(ks)) for ks in state["keys"])
    print(f"keys shown per poold: {counts}; {state['messages']} messages, "
          f"sequence gaps {state['gaps']}, restarts {state['restarts']}, "
          f"stored twice {state['stored_twice']}")
    for what, ks in (("shown by two poolds", twice), ("missing", missing), ("not expected", extra)):
        if ks:
            print(f"{len(ks)} key(s) {what}: {' '.join(ks[:10])}")
    return 0 if not (twice or missing or extra) else 1


if __name__ == "__main__":
    if sys.argv[1] == "watch":
        watch(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))

#!/bin/bash
# Pins against eviction (kv-pins.py), through libpool's Python binding:
# hard pinned values are never evicted, soft pinned ones only once no
# unpinned value can go, each until its deadline. Once in a namespace over
# the lenders' memory (the coordinator's index), once in a sharded one (the
# KV store of the node owning every shard). Then a pin that is not one,
# sent raw, is refused by poold itself, which keeps running.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
pool_pyenv || { echo "1..0 # SKIP: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
pool_start -o lend.size=64M -o kv.shard_size=64M || exit 1
for kind in lenders sharded; do
	opt=$([ $kind = sharded ] && echo sharded)
	check "$kind: a namespace of 8 MiB" "$POOLCTL" kv create "pins-$kind" 8M tier=dram $opt
	env "${PYENV[@]}" "$PY" "$top_srcdir/tests/integration/kv-pins.py" "pins-$kind" \
		>"$TEST_DIR/out" 2>&1
	tap_relay "$TEST_DIR/out" 12 "$kind: "
	# What is left pinned: hard1 and hard2, the soft and the small hard pins put
	# last (not the later writer's value of race, whose earlier writer asked a
	# hard pin).
	pinned=$("$POOLCTL" --json kv stats | python3 -c 'import json, sys
n = next(n for n in json.load(sys.stdin)["namespaces"] if n["name"] == sys.argv[1])
print(n["soft_pinned"], n["hard_pinned"])' "pins-$kind")
	[ "$pinned" = "1 3" ] && ok "$kind: kv stats counts 1 soft pinned and 3 hard pinned values" ||
		not_ok "$kind: kv stats counts '$pinned' (soft, hard) pinned values, not '1 3'"
done
# (A pin of no KvRetain value is not even a message protobuf-c takes.)
for bad in "7 0" "2 1099511627777" "0 5" "-"; do
	out=$(python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" kv-retain "pins-lenders" $bad 2>&1)
	case "$bad $out" in
	*"a pin (soft or hard"* | "7 0 malformed kv message") ok "a raw commit with pin '$bad' is refused: $out" ;;
	*) not_ok "a raw commit with pin '$bad': $out" ;;
	esac
done
pool_alive && ok "poold still running" || not_ok "poold died"
pool_done

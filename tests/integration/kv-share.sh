#!/bin/bash
# Namespaces competing for a full pool (kv-share.py): one made with a
# capacity far beyond the memory fills it, and another still gets and keeps
# its whole capacity, its values taken from the one beyond its fair share;
# a namespace that evicts nothing gets its capacity too and ENOSPC past it.
# Once over the lenders' memory (the coordinator's index), once over the KV
# store of a node owning every shard (sharded namespaces).
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY=/usr/bin/python3
pool_pyenv || { echo "1..0 # SKIP: a sanitized libpool whose runtime python3 cannot preload"; exit 77; }
pool_start -o lend.size=64M -o kv.shard_size=64M || exit 1
for kind in lenders sharded; do
	opt=$([ $kind = sharded ] && echo sharded)
	check "$kind: namespaces made" "$POOLCTL" kv create "hog-$kind" 1G $opt
	"$POOLCTL" kv create "small-$kind" 16M $opt >/dev/null &&
		"$POOLCTL" kv create "keep-$kind" 8M evict=none $opt >/dev/null || not_ok "$kind: namespaces"
	env "${PYENV[@]}" "$PY" "$top_srcdir/tests/integration/kv-share.py" "hog-$kind" \
		"small-$kind" "keep-$kind" >"$TEST_DIR/out" 2>&1
	tap_relay "$TEST_DIR/out" 7 "$kind: "
	for ns in hog small keep; do "$POOLCTL" kv drop "$ns-$kind" >/dev/null; done
done
pool_alive && ok "poold still running" || not_ok "poold died"
pool_done

#!/bin/bash
# scripts/demo.sh - install what is missing, build, and run a single-node pool
# on the embedded default config in a private runtime directory: poolctl and
# a libpool client talk to it, then it is stopped.
. "$(dirname "$0")/deps.sh"

deps_install "${PACKAGES[@]}"
deps_build

RUN=$(mktemp -d /tmp/pool-demo.XXXXXX)
export POOL_SOCKET="$RUN/poold.sock"
POOLD_PID=
stop() {
	if [ -n "$POOLD_PID" ] && kill -0 "$POOLD_PID" 2>/dev/null; then
		kill -TERM "$POOLD_PID"; wait "$POOLD_PID" || true
	fi
	rm -rf "$RUN"
}
trap stop EXIT

step() { printf '\n==> %s\n' "$*"; }

step "starting poold on the built-in defaults (runtime dir $RUN)"
"$TOP/daemon/poold" -d -o runtime_dir="$RUN" 2>"$RUN/poold.log" &
POOLD_PID=$!
for _ in $(seq 100); do "$TOP/cli/poolctl" status >/dev/null 2>&1 && break; sleep 0.05; done

step "poolctl status"
"$TOP/cli/poolctl" status
step "poolctl --json status"
"$TOP/cli/poolctl" --json status
step "poolctl config show"
"$TOP/cli/poolctl" config show
step "poolctl reload"
"$TOP/cli/poolctl" reload
step "libpool client (examples/pool-demo)"
"$TOP/examples/pool-demo"
step "regions: create one, write it from one process, read it back from another"
"$TOP/cli/poolctl" region create demo 16M mode=0644
"$TOP/tests/tools/pool-io" write demo 7
"$TOP/tests/tools/pool-io" read demo 7
"$TOP/tests/tools/pool-io" map demo 7
step "poolctl regions, nodes -v and ledger"
"$TOP/cli/poolctl" regions
"$TOP/cli/poolctl" nodes -v
"$TOP/cli/poolctl" ledger
step "an anonymous region lives as long as its holder"
"$TOP/tests/tools/pool-io" anon scratch 1048576 & holder=$!
sleep 0.5
"$TOP/cli/poolctl" regions
kill $holder; wait $holder 2>/dev/null || true
echo "(holder gone; the region is freed after lease.grace)"
"$TOP/cli/poolctl" region destroy demo

step "KV cache: 64 blocks of 256K put, matched and read back"
"$TOP/cli/poolctl" kv create demo-model 64M
"$TOP/tests/tools/pool-kv" demo-model mput blk 64 262144 1
"$TOP/tests/tools/pool-kv" demo-model match blk 80
"$TOP/tests/tools/pool-kv" demo-model mget blk 64 1
"$TOP/cli/poolctl" kv stats

step "vector index: HNSW over 2,000 clustered vectors, searched in place"
"$TOP/cli/poolctl" vec create demo-vec hnsw l2 32 16M
"$TOP/tests/tools/pool-vec" add demo-vec 0 2000 7
"$TOP/tests/tools/pool-vec" search demo-vec 2 9 5
"$TOP/cli/poolctl" vec ls
"$TOP/cli/poolctl" vec drop demo-vec

step "snapshots: two 64 MiB images sharing 80% of their pages, stored once, cloned 1,000 times"
"$TOP/tests/tools/pool-snap" mkimg "$RUN/vm-a.img" 64 1 99 50 30
"$TOP/tests/tools/pool-snap" mkimg "$RUN/vm-b.img" 64 2 99 50 30
"$TOP/cli/poolctl" snap put vm-a "$RUN/vm-a.img"
"$TOP/cli/poolctl" snap put vm-b "$RUN/vm-b.img" parent=vm-a
"$TOP/cli/poolctl" snap ls
"$TOP/tests/tools/pool-snap" clones vm-b 1000 4 "$("$TOP/tests/tools/pool-snap" sum "$RUN/vm-b.img")"
"$TOP/cli/poolctl" snap copies
"$TOP/cli/poolctl" snap rm vm-a
"$TOP/cli/poolctl" snap rm vm-b
rm -f "$RUN"/vm-?.img

step "poolctl config check on a broken file"
printf 'lend.size = 12 parsecs\n' >"$RUN/broken.conf"
"$TOP/cli/poolctl" config check "$RUN/broken.conf" || echo "(exit $? as expected)"

step "stopping poold"
kill -TERM "$POOLD_PID"; wait "$POOLD_PID"; POOLD_PID=
echo "--- poold log"
cat "$RUN/poold.log"
echo
echo "demo finished"

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
step "poolctl config check on a broken file"
printf 'lend.size = 12 parsecs\n' >"$RUN/broken.conf"
"$TOP/cli/poolctl" config check "$RUN/broken.conf" || echo "(exit $? as expected)"

step "stopping poold"
kill -TERM "$POOLD_PID"; wait "$POOLD_PID"; POOLD_PID=
echo "--- poold log"
cat "$RUN/poold.log"
echo
echo "demo finished"

#!/bin/bash
# Lazy restores of a snapshot through userfaultfd, for Firecracker-like
# VMMs (tests/tools/fc-client): the restored memory is bit-exact (its
# checksum is the image file's), from the node's copy and from the store;
# each bad handshake is refused with a clear message while the server goes
# on serving; a recorded working set is then prefetched.
. "${top_srcdir:-.}/tests/integration/lib.sh"
FC="$top_builddir/tests/tools/fc-client"
SOCK="$TEST_DIR/uffd.sock"
PAGES=8192
SIZE=$((PAGES * 4096))
SERVE_PID=

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pool_start -o lend.size=256M -o metrics.listen="127.0.0.1:$PORT" || exit 1

# The image: a third of its pages zero, the rest random.
python3 -c 'import random, sys
random.seed(11)
sys.stdout.buffer.write(b"".join(bytes(4096) if p % 3 == 0 else random.randbytes(4096)
                                 for p in range(int(sys.argv[1]))))' $PAGES >"$TEST_DIR/img"
want=$("$FC" --sum "$TEST_DIR/img")
check "store the image" "$POOLCTL" snap put vm1 "$TEST_DIR/img"

# serve ARGS...: poolctl snap serve vm1 in the background, until its socket is there.
serve() {
	"$POOLCTL" snap serve vm1 "$SOCK" "$@" >"$TEST_DIR/serve.out" 2>"$TEST_DIR/serve.err" &
	SERVE_PID=$!
	for _ in $(seq 100); do [ -S "$SOCK" ] && return 0; sleep 0.05; done
	not_ok "snap serve $* did not come up"; cat "$TEST_DIR/serve.err"; return 1
}

# served CODE WHAT: the server must have exited (by itself) with CODE.
served() {
	local rc
	for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID"; rc=$?
	SERVE_PID=
	if [ "$rc" -eq "$1" ]; then ok "$2"; else
		not_ok "$2 (exit $rc, wanted $1)"; sed 's/^/  | /' "$TEST_DIR/serve.out" "$TEST_DIR/serve.err"; fi
}

# restore WHAT [fc-client args]: a restore whose memory must be the image.
restore() {
	local what=$1; shift
	check "$what" "$FC" "$@" "$SOCK" $SIZE
	check_out "^$want\$" "$what: the memory is the image"
}

serve --max 7 || exit 1
restore "a restore from the node's copy"
restore "a restore into two guest regions" --regions 2
check_exit 3 "invalid JSON is refused" "$FC" --timeout 2 --bad-json "$SOCK" $SIZE
check_exit 3 "a handshake without the userfaultfd is refused" "$FC" --timeout 2 --no-fd "$SOCK" $SIZE
check_exit 3 "regions larger than the snapshot are refused" "$FC" --timeout 2 --wrong-size "$SOCK" $SIZE
check_exit 3 "a client gone mid-handshake is refused" "$FC" --timeout 2 --disconnect "$SOCK" $SIZE
restore "a good restore after the bad ones"
served 1 "the server stops after 7 restores, 4 of them failed"
grep -q "4 restores failed" "$TEST_DIR/serve.out" && ok "it counts them" || not_ok "it counts them"
for msg in "invalid JSON" "no userfaultfd passed" "outside the $SIZE-byte image" "peer closed after"; do
	grep -q "refused: .*$msg" "$TEST_DIR/serve.err" && ok "logged: $msg" ||
		{ not_ok "logged: $msg"; sed 's/^/  | /' "$TEST_DIR/serve.err"; }
done

serve --max 1 --remote || exit 1
restore "a restore fetching from the store"
served 0 "the remote restore ended well"

serve --max 1 --record || exit 1
check "a restore touching 500 pages, recorded" "$FC" --touch 500 "$SOCK" $SIZE
want500=$("$FC" --sum --touch 500 "$TEST_DIR/img")
check_out "^$want500\$" "the 500 pages are the image's"
served 0 "the recording restore ended well"
check "the working set is kept with the snapshot" "$POOLCTL" snap info vm1
check_out "^working set: +500 pages from 1 restores" "500 pages from 1 restore"

for mode in --local --remote; do
	serve --max 1 --prefetch ${mode#--local} || exit 1
	restore "a restore with the working set prefetched ($mode)"
	served 0 "the prefetching restore ended well ($mode)"
done

serve --max 1 --fill --remote || exit 1
restore "a restore filled in the background"
served 0 "the filling restore ended well"

serve || exit 1
kill -INT "$SERVE_PID"
served 0 "SIGINT stops an idle server"
[ ! -e "$SOCK" ] && ok "and its socket is removed" || not_ok "and its socket is removed"

# The 12 restores (4 refused), as the page servers told poold: in its metrics;
# 7 of them touched all 8,192 pages.
python3 - "http://127.0.0.1:$PORT/metrics" <<'EOF' && ok "poold counts the restores, the failed ones, faults and pages" ||
import sys, urllib.request
m = dict(l.split(" ", 1) for l in urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().splitlines()
         if l and not l.startswith("#"))
n = lambda k: float(m[k])
assert n("pool_snap_restores_total") == 12 and n("pool_snap_restores_failed_total") == 4, m
assert n("pool_snap_faults_total") > 0 and n("pool_snap_restore_pages_total") >= 7 * 8192, m
assert 0 < n("pool_snap_restore_prefetched_total") < n("pool_snap_restore_pages_total"), m
EOF
	{ not_ok "restore metrics"; curl -s "http://127.0.0.1:$PORT/metrics" | grep snap_; }

pool_done

#!/bin/bash
# Lazy restores of a snapshot through userfaultfd, for VMMs that restore as
# Firecracker does (tests/tools/fc-client: its handshake byte for byte, its
# uffd): the restored memory is bit-exact (its checksum is the image
# file's), from the node's copy and from the store; each bad handshake is
# refused with a clear message while the server goes on serving; a
# recorded working set is then prefetched; the server is stopped by
# pool_snap_serve_stop() and logs through the application's callback
# (pool_set_log()). Then what each Firecracker
# release sends (1.7 to 1.11, 1.12 on), 2 MiB hugetlbfs guest pages, and a
# balloon inflating after the restore: its pages read as zeros after.
. "${top_srcdir:-.}/tests/integration/lib.sh"
FC="$top_builddir/tests/tools/fc-client"
SOCK="$TEST_DIR/uffd.sock"
PAGES=8192
SIZE=$((PAGES * 4096))
SERVE_PID=

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pool_start -o lend.size=256M -o control.mode=0666 -o metrics.listen="127.0.0.1:$PORT" || exit 1

# The image: a third of its pages zero, the rest random.
python3 -c 'import random, sys
random.seed(11)
sys.stdout.buffer.write(b"".join(bytes(4096) if p % 3 == 0 else random.randbytes(4096)
                                 for p in range(int(sys.argv[1]))))' $PAGES >"$TEST_DIR/img"
want=$("$FC" --sum "$TEST_DIR/img")
check "store the image" "$POOLCTL" snap put vm1 "$TEST_DIR/img"

# serve ARGS...: poolctl snap serve vm1 in the background, until its socket is there.
serve() {
	"$POOLCTL" snap serve "${SNAP:-vm1}" "$SOCK" "$@" >"$TEST_DIR/serve.out" 2>"$TEST_DIR/serve.err" &
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
	grep -q "^poolctl: snap serve: snapshot vm1: restore for pid [0-9]* refused: .*$msg" "$TEST_DIR/serve.err" &&
		ok "logged through poolctl's log callback: $msg" ||
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

# pool_snap_serve_stop(), called before the serve, from another thread and
# from a signal handler; libpool's log callback (pool_set_log()) gets the
# refusal of a garbage handshake, where poolctl's callback above prefixed it.
check "pool_snap_serve_stop() stops pool_snap_serve()" "$top_builddir/tests/tools/pool-snap" servestop vm1
check_out "^stopped before it began: 0 failed" "a stop called before the serve makes it return at once"
check_out "^stopped by another thread 200 ms in: 0 failed" "a stop from another thread makes it return"
check_out "^stopped by a signal 150 ms in: 0 failed" "a stop from a signal handler makes it return"
check_out "^the serve after a kept stop: 0 failed, ([0-9]|[1-4][0-9]) ms of CPU" \
	"a stop kept for the next serve leaves no wake-up the serve after spins on (under 50 ms of CPU in 200)"
check_out "^a garbage handshake: 1 failed" "a garbage handshake is refused and counted"
check_out "^logged: 3 snapshot vm1: restore for pid [0-9]+ refused: " \
	"the refusal reaches the application's log callback, at POOL_LOG_ERR"
grep -E "^stopped|^the serve|^logged" "$TEST_DIR/out" | sed 's/^/# /'

# Each release's handshake, and the balloon: Firecracker madvises the pages
# it takes away (REMOVE events); read again, they are zeros, as in
# Firecracker's own handlers, and the pages after them still the image.
tail -c +$((512 * 4096 + 1)) "$TEST_DIR/img" >"$TEST_DIR/img.after512"
tail -c +$((1024 * 4096 + 1)) "$TEST_DIR/img" >"$TEST_DIR/img.after1024"
after512=$("$FC" --sum "$TEST_DIR/img.after512" | sed 's/^/after them /')
after1024=$("$FC" --sum "$TEST_DIR/img.after1024" | sed 's/^/after them /')
# Room for two guests' 32 MiB of 2 MiB pages, where the kernel gives it.
hugepages_add 32
huge=$(hugepages_free)
serve --max 6 || exit 1
restore "Firecracker 1.12 on: page_size and page_size_kib, both bytes; the socket left open"
restore "Firecracker 1.7 to 1.11: page_size_kib alone, in bytes; the socket closed" --firecracker 1.7
check "a balloon takes 512 pages after a restore (MADV_DONTNEED: REMOVE events)" "$FC" --balloon 512 "$SOCK" $SIZE
check_out "^removed 512 pages: zeros\$" "they read as zeros"
check_out "^$after512\$" "and the pages after them are still the image"
if [ "${huge:-0}" -ge 16 ]; then
	restore "2 MiB hugetlbfs guest pages, two regions" --hugepages --regions 2
	check "a balloon takes 2 huge pages after a restore" "$FC" --hugepages --balloon 1024 "$SOCK" $SIZE
	check_out "^removed 1024 pages: zeros\$" "they read as zeros"
	check_out "^$after1024\$" "and the pages after them are still the image"
	restore "Firecracker 1.7 with 2 MiB pages (page_size_kib 2097152)" --hugepages --firecracker 1.7
	served 0 "the six restores ended well"
else
	echo "ok - # SKIP no 2 MiB pages to be had (HugePages_Free ${huge:-0})"
	kill -TERM "$SERVE_PID"; wait "$SERVE_PID"; SERVE_PID=
fi

# A fault that cannot be filled: no 2 MiB page to be had. Firecracker maps
# guest memory MAP_NORESERVE, so its mmap succeeds and the first fault is
# the page server's to fill; the kernel then answers UFFDIO_COPY with
# EEXIST (a page table is there, no page). The restore must fail (logged,
# counted), the VMM be killed as Firecracker's own page servers kill it,
# and the server not spin; it goes on serving others.
# cpu PID: the user and system clock ticks PID has used.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# no_huge_restore WHAT EXIT END FC...: a restore with no huge page to be had, whose
# VMM (FC...) ends with EXIT (137: killed) and whose failure is logged ending END.
no_huge_restore() {
	local what=$1 rc=$2 end=$3 c0; shift 3
	c0=$(cpu "$SERVE_PID")
	check_exit "$rc" "$what: the VMM ends (exit $rc)" "$@" --timeout 5 --hugepages "$SOCK" $SIZE
	sleep 1
	[ $(($(cpu "$SERVE_PID") - c0)) -lt 50 ] && ok "$what: the server does not spin" ||
		not_ok "$what: the server used $(($(cpu "$SERVE_PID") - c0)) ticks of CPU"
	grep -q "restore for pid [0-9]* failed: page 0x[0-9a-f]* cannot be placed: .*no free huge page.*; $end" \
		"$TEST_DIR/serve.err" && ok "$what: the failure is logged" ||
		{ not_ok "$what: the failure is logged"; sed 's/^/  | /' "$TEST_DIR/serve.err"; }
}
hugepages_set 0
if [ "$(hugepages_free)" = 0 ]; then
	serve --max 2 || exit 1
	no_huge_restore "no free huge page" 137 "the VMM is killed" "$FC"
	restore "the server goes on: a restore of 4 KiB pages after it"
	served 1 "it stops after the two, one failed"
	grep -q "^stopped: 1 restore failed" "$TEST_DIR/serve.out" && ok "it counts the failed one" ||
		{ not_ok "it counts the failed one"; cat "$TEST_DIR/serve.out"; }
	# A server of another uid than the VMM's: it may neither read the VMM's
	# pagemap nor kill it. EEXISTs that run on with nothing placed between
	# them fail the restore instead, and the VMM is left to its owner.
	if have_nobody "$POOLCTL"; then
		chmod 0777 "$TEST_DIR"; chmod 0755 "$TEST_DIR/run"; chmod 0644 "$TEST_DIR/img"; rm -f "$SOCK"
		check "uid nobody stores the image" as_nobody "$POOLCTL" snap put vmn "$TEST_DIR/img"
		# (setpriv itself, not the as_nobody function: $! must be the server's pid)
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$POOLCTL" snap serve vmn "$SOCK" >"$TEST_DIR/serve.out" 2>"$TEST_DIR/serve.err" &
		SERVE_PID=$!
		for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
		no_huge_restore "a server of uid nobody" 3 "the VMM could not be killed" "$FC"
		kill -INT "$SERVE_PID"
		served 1 "that server stops on SIGINT, one restore failed"
	else
		echo "ok - # SKIP uid nobody cannot run poolctl here"
	fi
else
	echo "ok - # SKIP the free huge pages cannot be set to none here"
fi
hugepages_restore

# A diff snapshot as Firecracker writes one (snapshot_type Diff): a sparse
# file of the guest's size whose data are the 300 pages written since vm1.
python3 - "$TEST_DIR" $PAGES <<'EOF'
import os, random, sys
d, pages = sys.argv[1], int(sys.argv[2])
random.seed(12)
img = bytearray(open(d + "/img", "rb").read())
with open(d + "/diff", "wb") as f:
    f.truncate(pages * 4096)
    for p in sorted(random.sample(range(pages), 300)):
        page = random.randbytes(4096)
        f.seek(p * 4096); f.write(page)
        img[p * 4096:(p + 1) * 4096] = page
open(d + "/img2", "wb").write(img)
EOF
[ "$(du -k "$TEST_DIR/diff" | cut -f1)" -lt 2000 ] && ok "the diff file is sparse ($(du -k "$TEST_DIR/diff" | cut -f1) KiB on disk)" ||
	not_ok "the diff file is not sparse"
check "put it on top of vm1" "$POOLCTL" snap put vm2 "$TEST_DIR/diff" parent=vm1 diff=yes
check_out "^vm2: 8192 pages, [0-9]+ zero, [0-9]+ distinct, 300 new" "only its 300 changed pages were new"
check "read it back" "$POOLCTL" snap get vm2 "$TEST_DIR/vm2.out"
cmp -s "$TEST_DIR/vm2.out" "$TEST_DIR/img2" && ok "it is vm1 with the diff's pages laid over" || not_ok "vm2 differs"
want=$("$FC" --sum "$TEST_DIR/img2")
SNAP=vm2 serve --max 1 || exit 1
restore "a lazy restore of the diff snapshot, as one image"
served 0 "the diff restore ended well"
check_exit 1 "a diff without its parent is refused" "$POOLCTL" snap put vm3 "$TEST_DIR/diff" diff=yes
check_out "a diff snapshot needs its parent" "saying so"
head -c $((SIZE / 2)) "$TEST_DIR/img" >"$TEST_DIR/half"
check_exit 1 "a diff of another size than its parent is refused" "$POOLCTL" snap put vm3 "$TEST_DIR/half" \
	parent=vm1 diff=yes
check_out "its parent 'vm1' has $SIZE bytes" "naming the parent's size"

pool_done

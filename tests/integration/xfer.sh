#!/bin/bash
# One tenant's transfer request cannot stall poold (xfer.c, xfer-share.c):
# uid nobody sends the largest request the protocol allows, 4096 reads of
# 16 MiB of its own region on this node (64 GiB of copies), while root runs
# poolctl status in a loop: the request completes, every byte checked, and
# status keeps answering (its longest wait and p99 are told, not bounded:
# the host may be loaded). Six such requests at once on one connection:
# four go on, two are refused with EBUSY; past 64 of one uid, one more
# waits in libpool, which sends it again. A client that hangs up in the
# middle of one has the rest of it cancelled at once; poold's fds and RSS
# stay flat, and it stops cleanly (under --enable-asan, with no leak).
. "${top_srcdir:-.}/tests/integration/lib.sh"
XF="$top_builddir/tests/tools/pool-xfer"
LOOP="$top_srcdir/tests/integration/statusloop.py"
have_nobody "$XF" || exit 77
MPORT=$(free_port)
metric() { python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith(sys.argv[2] + " "): print(l.split()[1])' "$MPORT" "$1"; }
poold_fds() { ls /proc/"$POOLD_PID"/fd | wc -l; }
poold_rss() { awk '/^VmRSS:/ { print $2 }' /proc/"$POOLD_PID"/status; }
# (A sanitizer's allocator keeps what is freed in quarantine: there RSS is only told.)
rss_flat() { [ -n "${pool_sanitizers:-}" ] || [ "$2" -le $(($1 + 16384)) ]; }

chmod 0755 "$TEST_DIR"
pool_start -o lend.size=256M -o lease.grace=100ms -o control.mode=0666 -o metrics.listen="127.0.0.1:$MPORT" || exit 1
chmod 0755 "$TEST_DIR/run"

touch "$TEST_DIR/looping"
python3 "$LOOP" "$POOLCTL" "$POOL_SOCKET" "$TEST_DIR/looping" >"$TEST_DIR/waits" 2>&1 &
loop=$!
as_nobody "$XF" "$POOL_SOCKET" flood 32M 4096 16M >"$TEST_DIR/out" 2>&1
rc=$?
rm -f "$TEST_DIR/looping"
wait "$loop"
[ "$rc" -eq 0 ] && ok "uid nobody's 4096 reads of 16 MiB of its own region: $(cat "$TEST_DIR/out")" ||
	{ not_ok "the flood (exit $rc)"; sed 's/^/  | /' "$TEST_DIR/out"; }
read -r answered failed worst p99 <"$TEST_DIR/waits"
[ "${answered:-0}" -gt 0 ] && [ "${failed:-1}" -eq 0 ] &&
	ok "root's poolctl status answered $answered times meanwhile: longest wait $worst ms, p99 $p99 ms" ||
	{ not_ok "poolctl status during the flood"; sed 's/^/  | /' "$TEST_DIR/waits"; }
echo "# the longest of $(metric pool_xfer_turns_total) turns of the loop on transfers:" \
	"$(metric pool_xfer_turn_max_us) us by the clock, $(metric pool_xfer_turn_cpu_max_us) us of CPU"

as_nobody "$XF" "$POOL_SOCKET" busy 32M 64 16M 6 local 32M >"$TEST_DIR/out" 2>&1
grep -q "^busy: 2 of 6 refused with EBUSY (a session has at most 4 transfer requests in progress.*), 4 answered" \
	"$TEST_DIR/out" && ok "six requests at once on one connection: $(cat "$TEST_DIR/out")" ||
	{ not_ok "six requests at once"; sed 's/^/  | /' "$TEST_DIR/out"; }

# A uid's requests in progress: 16 sessions of uid nobody hold 4 each, the
# most (64); libpool's read of a region it cannot map is refused with EBUSY
# and sent again until they end (their clients are killed: cancelled).
IO="$top_builddir/tests/tools/pool-io"
as_nobody "$IO" create striped 1048576 spread pinned 65536 >/dev/null &&
	as_nobody "$IO" write striped 7 >/dev/null || not_ok "uid nobody's striped region"
hogs=()
for i in $(seq 16); do # (setpriv itself, not as_nobody's shell: $! is what to kill)
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$XF" "$POOL_SOCKET" busy 4M 4096 4M 4 local 4M >/dev/null 2>&1 &
	hogs+=($!)
done
for _ in $(seq 200); do [ "$(metric pool_xfer_requests)" = 64 ] && break; sleep 0.05; done
busy0=$(metric pool_xfer_busy_total)
as_nobody "$IO" read striped 7 >"$TEST_DIR/out" 2>&1 &
reader=$!
for _ in $(seq 100); do [ "$(metric pool_xfer_busy_total)" -gt "$busy0" ] && break; sleep 0.05; done
busy1=$(metric pool_xfer_busy_total)
[ "$busy1" -gt "$busy0" ] &&
	ok "uid nobody's 64 requests in progress: its 65th is refused, and libpool sends it again ($((busy1 - busy0)) times so far)" ||
	not_ok "the 65th request: $(metric pool_xfer_requests) in progress, busy $busy0 -> $busy1"
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
wait "$reader" && ok "and completes once they end: $(cat "$TEST_DIR/out")" ||
	{ not_ok "libpool's read after the hogs"; sed 's/^/  | /' "$TEST_DIR/out"; }
as_nobody "$IO" destroy striped >/dev/null

# Hang-ups in the middle of the flood. (poold may not have seen every close
# yet: count once the count holds still.)
"$POOLCTL" status >/dev/null
fds0=$(poold_fds)
for _ in $(seq 50); do sleep 0.1; now=$(poold_fds); [ "$now" = "$fds0" ] && break; fds0=$now; done
rss0=$(poold_rss)
for i in 1 2 3 4 5; do
	as_nobody "$XF" "$POOL_SOCKET" hangup 32M 4096 16M 300 local 32M >"$TEST_DIR/out" 2>&1 ||
		{ not_ok "hang-up $i"; sed 's/^/  | /' "$TEST_DIR/out"; }
	t0=$(date +%s%3N)
	for _ in $(seq 100); do [ "$(metric pool_xfer_requests)" = 0 ] && break; sleep 0.05; done
	t1=$(date +%s%3N)
done
[ "$(metric pool_xfer_requests)" = 0 ] &&
	ok "a client that hangs up mid-request has the rest cancelled (the last one's was gone $((t1 - t0)) ms after, as polled; it would take seconds)" ||
	not_ok "requests in progress after the hang-ups: $(metric pool_xfer_requests)"
pool_alive && "$POOLCTL" status >/dev/null && ok "poold serves on after 5 hang-ups" ||
	not_ok "poold after the hang-ups"
for _ in $(seq 50); do [ "$(poold_fds)" -le "$fds0" ] && break; sleep 0.1; done
fds1=$(poold_fds) rss1=$(poold_rss)
[ "$fds1" -le "$fds0" ] && ok "poold's fds are flat ($fds0 -> $fds1)" || not_ok "fds $fds0 -> $fds1"
rss_flat "$rss0" "$rss1" && ok "poold's RSS is flat ($rss0 -> $rss1 KiB)" ||
	not_ok "RSS $rss0 -> $rss1 KiB"
check "poold stops cleanly" pool_stop
pool_done

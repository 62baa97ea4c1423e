#!/bin/bash
# The node's shared copies of snapshot images (daemon/snap/snap-copy.c), through
# raw SnapCopy requests (snapcopy.py) and poolctl snap copies: one client
# fills a copy while others wait for it sealed; a filler that aborts or
# goes away hands the fill over; a newer id replaces a copy; snap.copies
# bounds the bytes (least recently used ready copies evicted, ENOSPC
# beyond); a copy another uid filled never serves root, and one uid's
# copies evict only its own (snap.copies_per_uid); bad requests get
# errors; the metrics count it all.
. "${top_srcdir:-.}/tests/integration/lib.sh"
PY="python3 $top_srcdir/tests/integration/snapcopy.py $POOL_SOCKET"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# metric NAME: its value in a scrape of the Prometheus endpoint.
metric() {
	python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]:
        print(l.split(" ")[1])' "http://127.0.0.1:$PORT/metrics" "$1"
}

check_exit 1 "snap.copies is a size" "$POOLD" -n -o snap.copies=lots
check_out "snap.copies: 'lots' is not a valid size" "the refusal names the option"
pool_start -o lend.size=16M -o snap.copies=1M -o metrics.listen="127.0.0.1:$PORT" \
	-o control.mode=0666 || exit 1
chmod 0755 "$TEST_DIR" "$TEST_DIR/run"

check "no copies at first" "$POOLCTL" snap copies
check_out "^NAME +ID +SIZE +STATE +CLONES +UID +WAITING$" "snap copies lists a header"
[ "$(wc -l <"$TEST_DIR/out")" -eq 1 ] && ok "... and nothing else" || not_ok "copies at start"

check "one fills, the waiter gets the sealed copy at done, the next at once" $PY fill
check "snap copies shows it" "$POOLCTL" snap copies
check_out "^img +0000000000000007 +256K +ready +2 +$(id -u) +0$" "ready, 2 clones, its id to its maker"
check "snap copies --json" "$POOLCTL" --json snap copies
check_out '"name": ?"img"' "json names it"

if have_nobody /usr/bin/python3; then
	check "a copy nobody fills never serves root; root's serves nobody; snap.copies_per_uid evicts nobody's own" \
		$PY trust
fi

check "a filler that aborts hands the fill to a waiter" $PY handoff abort
check "a filler that disconnects hands the fill to a waiter" $PY handoff close
check "a newer id replaces the copy" $PY replace
check "a lazy get while another fills: at once, read-only, the same memfd; state tells ready" $PY lazy
if have_nobody /usr/bin/python3; then
	check "another uid naming it with another id makes its own copy; its fills take half the budget" \
		as_nobody /usr/bin/python3 "$top_srcdir/tests/integration/snapcopy.py" "$POOL_SOCKET" tenant
	check "root's copy is still there" $PY kept
fi
check "bad requests get errors" $PY bad
pool_alive && ok "poold is still up" || not_ok "poold died"
check "snap copies" "$POOLCTL" snap copies
if grep -q "^mine .*filling" "$TEST_DIR/out"; then not_ok "a disconnected filler's copy stays"
else ok "a disconnected filler's copy with nobody waiting goes"; fi

check "snap.copies: ENOSPC beyond it, LRU eviction within" $PY space
[ "$(metric pool_snap_copy_evictions_total)" -ge 3 ] && ok "evictions counted" ||
	not_ok "evictions: $(metric pool_snap_copy_evictions_total)"
[ "$(metric pool_snap_clones_total)" -ge 6 ] && ok "clones counted" ||
	not_ok "clones: $(metric pool_snap_clones_total)"
[ "$(metric pool_snap_fills_total)" -ge 10 ] && ok "fills counted" ||
	not_ok "fills: $(metric pool_snap_fills_total)"
n=$("$POOLCTL" --json snap copies | python3 -c 'import json, sys
c = json.load(sys.stdin)["copies"]
print(len(c), sum(x["size"] for x in c))')
[ "$(metric pool_snap_copies) $(metric pool_snap_copy_bytes)" = "$n" ] &&
	ok "copies and bytes gauges match snap copies ($n)" || not_ok "gauges against $n"
[ "${n#* }" -le 1048576 ] && ok "within snap.copies" || not_ok "over snap.copies: $n"

check "stops with copies" pool_stop
pool_done

#!/bin/bash
# The fabric port of a poold that others may join (fabric.transfer =
# checked, the default), with fabric.firewall = no, attacked by uid nobody
# and by root on its own host:
#  - UCX's own code (tests/tools/pool-ucx-attack): a forged UCP endpoint
#    (this process's worker address with poold's port patched in) doing
#    one-sided gets and puts at poold's heap and at 0x1000, and a raw UCT
#    TCP endpoint doing put_zcopy there: 0 bytes read, 0 written, poold
#    alive, its fds back where they were;
#  - the link's own wire, by hand (fabric-link.py): a stranger hears a
#    nonce and nothing else; garbage, a hello proven with another key, and
#    200 silent connections are closed (at once over the limits, the rest
#    at the handshake deadline); even with the key (a leaked secret), a
#    hello as a node that is no member, or as poold itself of another
#    incarnation, reads no byte and is closed.
# Then, for the record, the one-sided path kept for fabrics with hardware
# keys (fabric.transfer = rma) on TCP: the same UCT put at 0x1000 kills
# poold. That is why checked is the default.
. "${top_srcdir:-.}/tests/integration/lib.sh"
ATTACK="$top_builddir/tests/tools/pool-ucx-attack"
LINK="$top_srcdir/tests/integration/fabric-link.py"
SECRET=fabric-attack-secret

have_nobody "$ATTACK" || { echo "1..0 # SKIP: uid nobody cannot run the build tree"; exit 77; }
chmod 0755 "$TEST_DIR"
PEER=$(free_port)
fds() { ls /proc/"$POOLD_PID"/fd | wc -l; }
# The port of poold's fabric listener (not its peer listener).
fabric_port() {
	ss -ltnpH | awk -v pid="pid=$POOLD_PID," -v peer=":$PEER" '$0 ~ pid && $4 !~ peer"$" {
		n = split($4, a, ":"); print a[n]; exit }'
}
heap() { awk '/\[heap\]/ { split($1, a, "-"); print a[1]; exit }' /proc/"$POOLD_PID"/maps; }
# fds_back N: until poold holds at most N fds again (the handshake deadline is 2 s).
fds_back() {
	for _ in $(seq 50); do [ "$(fds)" -le "$1" ] && return 0; sleep 0.1; done
	return 1
}

pool_start -o lend.size=64M -o peer.listen=127.0.0.1:"$PEER" -o peer.secret="$SECRET" \
	-o fabric.firewall=no -o heartbeat.interval=200ms -o heartbeat.misses=2 ||
	{ not_ok "poold did not start"; pool_done; exit 1; }
port=$(fabric_port)
[ -n "$port" ] && ok "poold's fabric listens on port $port, the firewall off" ||
	{ not_ok "no fabric listener"; ss -ltnp; pool_done; exit 1; }
before=$(fds)
h=$(heap)
for who in root nobody; do
	pre=(); [ "$who" = nobody ] && pre=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	"${pre[@]}" timeout 120 "$ATTACK" 127.0.0.1 "$port" "$h" 1000 >"$TEST_DIR/attack" 2>&1; rc=$?
	grep -q "^read 0 bytes, wrote 0 bytes$" "$TEST_DIR/attack" && [ "$rc" -eq 0 ] &&
		ok "$who's forged UCP endpoint and raw UCT put at the heap ($h) and 0x1000: $(tail -1 "$TEST_DIR/attack")" ||
		{ not_ok "$who's UCX attack (exit $rc)"; grep -v '^\[\|^ *[0-9]* \|^=' "$TEST_DIR/attack"; }
	kill -0 "$POOLD_PID" && ok "poold is alive after $who's" || not_ok "poold died of $who's attack"
done
fds_back "$before" && ok "its fds are back: $(fds) (were $before)" || not_ok "fds grew: $(fds) (were $before)"

inc=$("$POOLCTL" --json nodes | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["nodes"][0]["incarnation"])')
for who in root nobody; do
	pre=(); [ "$who" = nobody ] && pre=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	for attack in listen garbage wrongkey silent; do
		"${pre[@]}" /usr/bin/python3 "$LINK" 127.0.0.1 "$port" "$attack" >"$TEST_DIR/link" 2>&1 &&
			ok "$who, $(cat "$TEST_DIR/link")" || { not_ok "$who, $attack"; cat "$TEST_DIR/link"; }
	done
	for attack in member impostor; do
		"${pre[@]}" /usr/bin/python3 "$LINK" 127.0.0.1 "$port" "$attack" "$SECRET" "$inc" \
			>"$TEST_DIR/link" 2>&1 &&
			ok "$who with the key, $(cat "$TEST_DIR/link")" || { not_ok "$who, $attack"; cat "$TEST_DIR/link"; }
	done
done
kill -0 "$POOLD_PID" && ok "poold is alive" || not_ok "poold died"
fds_back "$before" && ok "and its fds are back: $(fds) (were $before)" || not_ok "fds grew: $(fds) (were $before)"
grep -q "fabric link from 127.0.0.1:[0-9]*: " "$TEST_DIR/poold.log" &&
	ok "strangers refused are logged, once per 10 s: $(grep -c 'fabric link from' "$TEST_DIR/poold.log") lines" ||
	not_ok "no log of the refused strangers"
check "and poold still answers" "$POOLCTL" status
pool_stop && ok "it stops cleanly" || not_ok "unclean stop"

# fabric.transfer = rma over TCP: UCX's software RMA serves whoever reaches the port.
# (The crash this poold is to have is no finding of a sanitizer's: it says so in its log.)
PEER=$(free_port)
POOLD_WRAP="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=stderr" pool_start -o lend.size=64M -o peer.listen=127.0.0.1:"$PEER" -o peer.secret="$SECRET" \
	-o fabric.firewall=no -o fabric.transfer=rma -o fabric.transports=tcp -o fabric.devices=lo ||
	{ not_ok "rma poold did not start"; pool_done; exit 1; }
grep -q "fabric.transfer = rma on software transports (tcp): whoever reaches" "$TEST_DIR/poold.log" &&
	ok "fabric.transfer = rma on TCP starts with a warning" || not_ok "no warning for rma on tcp"
port=$(fabric_port)
setpriv --reuid=nobody --regid=nogroup --clear-groups timeout 60 "$ATTACK" 127.0.0.1 "$port" 1000 \
	>"$TEST_DIR/attack" 2>&1
for _ in $(seq 30); do kill -0 "$POOLD_PID" 2>/dev/null || break; sleep 0.1; done
if ! kill -0 "$POOLD_PID" 2>/dev/null; then
	ok "with it, uid nobody's UCT put at 0x1000 kills poold (why checked is the default): $(grep -o 'Caught signal [0-9]* ([^:)]*' "$TEST_DIR/poold.log" | head -1)"
	POOLD_PID=
else
	not_ok "rma over TCP survived a raw put at 0x1000: $(tail -1 "$TEST_DIR/attack")"
fi
pool_done

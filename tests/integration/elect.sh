#!/bin/bash
# daemon/ha/ha-elect.c: one coordinator among candidates, elected through a real
# etcd cluster of three members (Debian's etcd-server). The leader killed,
# frozen, or cut off from etcd: another leads within the lease, with a
# higher epoch, and the old one has stopped acting as leader before that.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/etcdlib.sh"
ELECT="$top_builddir/tests/tools/pool-elect"
TTL=2

etcd_cluster || exit 1

# candidate NAME [ENDPOINTS]: start one; its lines go to $TEST_DIR/NAME.
declare -A CAND
candidate() {
	"$ELECT" "${2:-$ALL}" /pool/leader "$1" "$TTL" >"$TEST_DIR/$1" 2>&1 &
	CAND[$1]=$!
	BG_PIDS+=($!)
}
# wait_line NAME PATTERN: until NAME printed a line matching PATTERN (20 s at most).
wait_line() {
	for _ in $(seq 400); do grep -Eq "$2" "$TEST_DIR/$1" && return 0; sleep 0.05; done
	return 1
}
# The time (ms) and epoch of NAME's last "leader" line.
led_at() { grep ' leader ' "$TEST_DIR/$1" | tail -1 | cut -d' ' -f1; }
epoch_of() { grep ' leader ' "$TEST_DIR/$1" | tail -1 | awk '{print $5}'; }

candidate a
wait_line a ' leader a epoch ' && ok "the first candidate leads" || not_ok "a leads"
candidate b
wait_line b ' follower of a epoch ' && ok "the second follows it, knowing its epoch" || not_ok "b follows a"

# Three rounds: the leader is SIGKILLed; the other takes over with a higher epoch.
leader=a other=b prev=$(epoch_of a) times=()
for round in 1 2 3; do
	killed_at=$(date +%s%3N)
	kill_now "${CAND[$leader]}"
	if wait_line "$other" "^[0-9]+ leader $other epoch "; then
		took=$(( $(led_at "$other") - killed_at ))
		times+=("$took")
		e=$(epoch_of "$other")
		[ "$e" -gt "$prev" ] && ok "round $round: $other leads $took ms after $leader was killed, epoch $prev -> $e" ||
			not_ok "round $round: epoch $e not above $prev"
		prev=$e
	else
		not_ok "round $round: no new leader"; cat "$TEST_DIR/$other"
	fi
	: >"$TEST_DIR/$leader"
	candidate "$leader"
	wait_line "$leader" " follower of $other epoch $prev" || not_ok "round $round: $leader rejoins as follower"
	tmp=$leader leader=$other other=$tmp
done
echo "# failover after SIGKILL (lease $TTL s): ${times[*]} ms"

# Frozen past its lease (SIGSTOP): another leads; woken, the old one acts no more, by its
# own clock, before it hears anything from etcd, and follows.
frozen=$leader
kill -STOP "${CAND[$frozen]}"
wait_line "$other" "^[0-9]+ leader $other epoch " && ok "while $frozen is frozen, $other leads" ||
	not_ok "no leader while $frozen is frozen"
new_epoch=$(epoch_of "$other")
kill -CONT "${CAND[$frozen]}"
wait_line "$frozen" " follower of $other epoch $new_epoch" && ok "woken, $frozen follows $other" ||
	{ not_ok "woken, $frozen follows"; cat "$TEST_DIR/$frozen"; }
awk '/ acting no$/ {no = NR} / none: / && !none {none = NR} END {exit !(no && (!none || no < none))}' \
	<(grep -v '^$' "$TEST_DIR/$frozen" | tail -n 4) &&
	ok "and it stopped acting as leader before anything else it did" ||
	{ not_ok "the frozen leader's order"; cat "$TEST_DIR/$frozen"; }

# Cut off from etcd: a leader that knows one member only, which dies. It steps down within
# its lease; the other leads only after it did.
leader=$other
kill_now "${CAND[$frozen]}" "${CAND[$leader]}"
sleep $((TTL + 1))
: >"$TEST_DIR/cut"; : >"$TEST_DIR/rest"
candidate cut "${CLIENTS[1]}"
wait_line cut ' leader cut epoch ' && ok "a leader that reaches member 1 only" || not_ok "cut leads"
candidate rest "${CLIENTS[2]},${CLIENTS[3]}"
wait_line rest ' follower of cut ' || not_ok "rest follows cut"
kill_now "${ETCD_PID[1]}"
wait_line cut ' acting no$' && ok "loses member 1 and stops acting as leader within its lease" ||
	{ not_ok "cut steps down"; cat "$TEST_DIR/cut"; }
wait_line rest ' leader rest epoch ' && ok "then the candidate that reaches the others leads" ||
	{ not_ok "rest leads"; cat "$TEST_DIR/rest"; }
stopped=$(grep ' acting no$' "$TEST_DIR/cut" | head -1 | cut -d' ' -f1)
started=$(led_at rest)
[ -n "$stopped" ] && [ -n "$started" ] && [ "$stopped" -lt "$started" ] &&
	ok "never two leaders: cut stopped at $stopped, rest led from $started" ||
	not_ok "two leaders at once (cut stopped at $stopped, rest led from $started)"

# A dead leader whose lease a stranger keeps alive: etcd 3.4 lists and renews leases
# without authentication, so uid nobody finds the leader key's lease and renews it after
# the leader died. The standby trusts the leader's writes of its key, not the lease.
EP="${CLIENTS[2]},${CLIENTS[3]}"
: >"$TEST_DIR/standby"
candidate standby "$EP"
wait_line standby ' follower of rest ' && ok "a standby follows rest" || not_ok "standby follows rest"
sleep $((TTL * 2))
[ "$(grep -Ec ' (follower of|leader|none:) ' "$TEST_DIR/standby")" = 1 ] &&
	ok "a live leader, writing its key, is left alone ($((TTL * 2)) s)" ||
	{ not_ok "the standby unseated a live leader"; cat "$TEST_DIR/standby"; }
NOBODY_CTL=(setpriv --reuid=nobody --regid=nogroup --clear-groups env ETCDCTL_API=3 etcdctl
	--endpoints="$EP" --dial-timeout=3s)
lease=
for id in $("${NOBODY_CTL[@]}" lease list 2>/dev/null | tail -n +2); do
	"${NOBODY_CTL[@]}" lease timetolive "$id" --keys 2>/dev/null | grep -q '/pool/leader' && lease=$id
done
[ -n "$lease" ] && ok "uid nobody finds the leader's lease ($lease), with no password" ||
	not_ok "uid nobody finds the leader's lease"
killed_at=$(date +%s%3N)
kill_now "${CAND[rest]}"
"${NOBODY_CTL[@]}" lease keep-alive "$lease" >/dev/null 2>&1 &
BG_PIDS+=($!)
if wait_line standby ' leader standby epoch '; then
	ok "the leader killed and its lease kept alive by uid nobody, the standby leads $(( $(led_at standby) - killed_at )) ms after the kill"
else
	not_ok "no takeover while a stranger keeps the dead leader's lease"; cat "$TEST_DIR/standby"
fi
grep -q "wrote nothing for $TTL s, though its lease lives on: its key is deleted" "$TEST_DIR/standby" &&
	ok "saying why" || { not_ok "the standby's reason"; cat "$TEST_DIR/standby"; }
"${NOBODY_CTL[@]}" lease timetolive "$lease" >"$TEST_DIR/out" 2>&1
check_out "granted with TTL" "(the lease was still alive then: the attack was in force)"
pool_done

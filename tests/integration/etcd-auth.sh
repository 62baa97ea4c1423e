#!/bin/bash
# poold at an etcd with auth enabled (coord.etcd_user and
# coord.etcd_password_file), on a cluster of three members on loopback
# whose simple tokens live 1 s. The etcd user may touch its prefix only.
#  - The client: no user, a wrong password and keys outside the prefix are
#    refused, each saying why; a token etcd forgot is fetched again and the
#    request sent once more; a watch goes with the token too.
#  - A coordinator candidate leads, keeps its state there and loads it back.
#  - A hostile tenant (uid nobody) who reaches etcd's client URLs: while
#    etcd runs without auth it can forge the coordinator's records; with
#    auth it can neither write, delete nor read them, nor read the password
#    file, and the pool keeps its state.
#  - poold -n refuses a password file other users may read, and a user
#    without one; a wrong password gets a clear complaint in status.
. "${top_srcdir:-.}/tests/integration/lib.sh"
ETCD_FLAGS=(--auth-token-ttl 1)
. "$top_srcdir/tests/integration/etcdlib.sh"
T="$top_builddir/tests/tools/pool-etcd"
PW=pw-$RANDOM$RANDOM
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs)
nobody_ctl() { "${NOBODY[@]}" env ETCDCTL_API=3 etcdctl --endpoints="$ALL" --dial-timeout=3s "$@"; }

etcd_cluster || exit 1

# Before auth: the surface the rest of this test closes.
check "without auth, any uid writes the coordinator's records" nobody_ctl put /pool/state/1/1 forged
check "... and deletes them" nobody_ctl del --prefix /pool/
check "auth is enabled: user poold, allowed /pool/ only" \
	"$top_srcdir/tests/tools/etcd-enable-auth" "$ALL" poold "$PW" /pool/

# The client (daemon/etcd/etcd.c).
check_exit 1 "a request without a user" "$T" "$ALL" put:/pool/a=1
check_out "^put: error -5: etcd: etcdserver: user name is empty$" "is refused, saying so"
check_exit 1 "a wrong password" "$T" "$ALL" login:poold=wrong put:/pool/a=1 get:/pool/a
[ "$(grep -c '^[a-z]*: error -13: etcd user poold: etcd: etcdserver: authentication failed' "$TEST_DIR/out")" = 2 ] &&
	ok "fails each request with EACCES, naming the user and etcd's reason" ||
	{ not_ok "wrong password"; cat "$TEST_DIR/out"; }
check_exit 1 "the right password" "$T" "$ALL" login:poold="$PW" put:/pool/a=1 get:/pool/a put:/other=1
check_out "^  kv /pool/a=1 " "reads and writes the prefix"
check_out "^put: error -5: etcd: etcdserver: permission denied$" "and is refused outside it"
# A token not used for 1 s is gone (the watch shows etcd refused it); a
# request then goes again with a new one, once, without its caller knowing.
check "a watch started with a token etcd forgot" "$T" "$ALL" login:poold="$PW" \
	put:/pool/a=2 sleep:2500 watch:/pool/ put:/pool/b=1 sleep:300
check_out "^watch: ended -125: etcd cancelled the watch: .*invalid auth token" \
	"ends, saying etcd refused the token (the token did expire)"
check "requests after the token expired" "$T" "$ALL" login:poold="$PW" put:/pool/a=3 \
	sleep:2500 put:/pool/a=4 sleep:2500 get:/pool/a watch:/pool/ put:/pool/b=2 sleep:300
check_out "^  kv /pool/a=4 " "are sent again with a new token, and done"
check_out "^watch: put /pool/b=2 " "and a watch started with a fresh token sees its events"

# A coordinator candidate at that etcd.
install -m 600 /dev/null "$TEST_DIR/etcd.pw"
echo "$PW" >"$TEST_DIR/etcd.pw"
PEER=$(free_port)
CAND=(-o role=coordinator -o node.id=1 -o "peer.listen=127.0.0.1:$PEER" -o "coord.etcd=$ALL"
	-o coord.etcd_lease=2s -o lend.size=64M -o coord.etcd_user=poold
	-o "coord.etcd_password_file=$TEST_DIR/etcd.pw")
standing() {
	"$POOLCTL" --json status 2>/dev/null | python3 -c '
import json, sys
print(json.load(sys.stdin).get("etcd", {}).get(sys.argv[1], ""))' "$1"
}
wait_standing() { for _ in $(seq 100); do [ "$(standing standing)" = "$1" ] && return 0; sleep 0.1; done; return 1; }

cp "$TEST_DIR/etcd.pw" "$TEST_DIR/open.pw" && chmod 644 "$TEST_DIR/open.pw"
check_exit 1 "poold -n with a password file other users can read" \
	"$POOLD" -n "${CAND[@]}" -o "coord.etcd_password_file=$TEST_DIR/open.pw"
check_out "coord.etcd_password_file: .*open.pw holds passwords and is mode 0644: others may read or write it \(chmod 0600\)" \
	"refuses it, saying how to fix it"
check_exit 1 "poold -n with a user and no password file" "$POOLD" -n "${CAND[@]}" -o coord.etcd_password_file=
check_out "coord.etcd_user and coord.etcd_password_file go together" "refuses it"
check "poold -n with both" "$POOLD" -n "${CAND[@]}"

echo "wrong" >"$TEST_DIR/wrong.pw" && chmod 600 "$TEST_DIR/wrong.pw"
pool_start "${CAND[@]}" -o "coord.etcd_password_file=$TEST_DIR/wrong.pw" || exit 1
sleep 1.5
[ "$(standing standing)" != leader ] && "$POOLCTL" status >"$TEST_DIR/out" 2>&1
check_out "authentication failed" "a wrong password: poold does not lead, and status says why"
pool_alive && ok "poold keeps running, trying again" || not_ok "poold with a wrong password died"
n=$(grep -c "no coordinator known: etcd user poold: .*authentication failed" "$TEST_DIR/poold.log")
[ "$n" = 1 ] && ok "its log says why, once (not at every retry)" || not_ok "log lines of the complaint: $n"
pool_stop
pool_start "${CAND[@]}" || exit 1
wait_standing leader && ok "the right one: poold leads (epoch $(standing epoch))" || not_ok "poold leads"
check "a region is made" "$POOLCTL" region create authed 1M
sleep 2.5 # (past the token's TTL: the leader's renewals keep its token alive)
check "a region made after the token's TTL" "$POOLCTL" region create authed2 1M

# The hostile tenant.
check_exit 1 "uid nobody reads the password file" "${NOBODY[@]}" cat "$TEST_DIR/etcd.pw"
check_out "Permission denied" "and is refused"
check_exit 1 "uid nobody forges a record of the coordinator" nobody_ctl put /pool/state/1/999999 forged
check_out "user name is empty" "and etcd refuses it"
check_exit 1 "uid nobody deletes the leader key and the state" nobody_ctl del --prefix /pool/
check_out "user name is empty" "and etcd refuses it"
check_exit 1 "uid nobody reads the state" nobody_ctl get --prefix /pool/
check_out "user name is empty" "and etcd refuses it"
check_exit 2 "uid nobody guesses the password" nobody_ctl --user=poold:guess put /pool/x y
check_out "authentication failed" "and etcd refuses it"
check_exit 2 "uid nobody as the user of another prefix" nobody_ctl --user=root:guess del --prefix /pool/
check_out "authentication failed" "and etcd refuses it"
[ "$(standing standing)" = leader ] && ok "poold still leads" || not_ok "poold lost the lead"

# SIGTERM while the new leader starts: its state is being loaded (etcd frozen for 300 ms
# meanwhile, so the load waits in a loop of its own), and then it must still stop.
pool_stop
: >"$TEST_DIR/poold.log"
pool_start "${CAND[@]}" -o lend.size=1G || exit 1
for _ in $(seq 500); do grep -q "etcd: coordinator, epoch" "$TEST_DIR/poold.log" && break; sleep 0.01; done
kill -STOP "${ETCD_PID[@]}"
kill -TERM "$POOLD_PID"
sleep 0.3
kill -CONT "${ETCD_PID[@]}"
for _ in $(seq 100); do pool_alive || break; sleep 0.05; done
! pool_alive && grep -q "poold stopped" "$TEST_DIR/poold.log" &&
	ok "SIGTERM while a candidate starts to lead: it stops" ||
	{ not_ok "SIGTERM while a candidate started to lead: poold runs on"; tail -5 "$TEST_DIR/poold.log"; }
POOLD_PID=
pool_start "${CAND[@]}" || exit 1
wait_standing leader || not_ok "leads again"

# The state in etcd (through the user) comes back after a restart.
pool_stop && ok "poold stops (handing the leader key over)" || not_ok "poold stop"
pool_start "${CAND[@]}" || exit 1
wait_standing leader && ok "restarted, it leads again" || not_ok "restart leads"
"$POOLCTL" regions >"$TEST_DIR/out" 2>&1
grep -q authed2 "$TEST_DIR/out" && grep -q 'authed ' "$TEST_DIR/out" &&
	ok "and loads its regions back from etcd" || { not_ok "regions after restart"; cat "$TEST_DIR/out"; }
pool_done

#!/bin/bash
# poold life cycle: start, status, reload (good and bad), refuse a second
# instance, stop cleanly.
. "${top_srcdir:-.}/tests/integration/lib.sh"

conf="$TEST_DIR/poold.conf"
cat >"$conf" <<CONF
lend.size = 64M
log.level = debug
control.max_clients = 100
CONF
pool_start -f "$conf" || exit 1

check "status answers" "$POOLCTL" status
check_out "role +coordinator" "status shows the role"
check_out "lend size +64M" "status shows the configured lend size"
check "status --json" "$POOLCTL" --json status
check_out '"uptime_ms":[0-9]+' "json status has uptime"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["role"]=="coordinator" and d["lend_size"]==64<<20' "$TEST_DIR/out" \
	&& ok "json status parses" || not_ok "json status parses"

check "config show" "$POOLCTL" config show
check_out "^lend.size +64M +256M +size" "config show marks changed options with their default"
check "config show --json" "$POOLCTL" --json config show
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); o={x["name"]:x for x in d["options"]}; assert o["lend.size"]["value"]=="64M" and not o["lend.size"]["is_default"] and o["log.level"]["value"]=="debug"' "$TEST_DIR/out" \
	&& ok "json config parses" || not_ok "json config parses"

# A good reload through poolctl.
sed -i 's/max_clients = 100/max_clients = 200/' "$conf"
check "reload" "$POOLCTL" reload
"$POOLCTL" config show >"$TEST_DIR/out"
check_out "^control.max_clients +200 " "reload applied the new value"
"$POOLCTL" status >"$TEST_DIR/out"
check_out "reloads +1" "reload counted"

# A bad config is refused and the running one kept.
echo "control.max_clients_per_uid = lots" >>"$conf"
check_exit 1 "reload of an invalid config fails" "$POOLCTL" reload
check_out "poold.conf:4: control.max_clients_per_uid: 'lots' is not a valid int" "reload error names file, line, reason"
"$POOLCTL" config show >"$TEST_DIR/out"
check_out "^control.max_clients +200 " "running config kept after a bad reload"

# SIGHUP reloads too, and a restart-only option keeps its running value.
cat >"$conf" <<CONF
lend.size = 32M
control.max_clients = 300
node.id = 9
CONF
kill -HUP "$POOLD_PID"
sleep 0.3
"$POOLCTL" config show >"$TEST_DIR/out"
check_out "^control.max_clients +300 " "SIGHUP reloads"
"$POOLCTL" status >"$TEST_DIR/out"
check_out "node id +1$" "restart-only option not applied by reload"
check_out "lend size +64M" "restart-only lend.size kept its running value"
grep -q "node.id changed .* after a restart" "$TEST_DIR/poold.log" && ok "restart-only change logged" || not_ok "restart-only change logged"

# A second poold on the same runtime dir refuses to start.
check_exit 1 "second poold refuses" "$POOLD" -d -o runtime_dir="$TEST_DIR/run"
check_out "another poold \(pid [0-9]+\) already runs" "second poold says why"
check "first poold still serves" "$POOLCTL" status

# Stopping with clients still connected is clean too.
exec {holder}> >(python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" hold >/dev/null)
sleep 0.3
check "poold stops on SIGTERM with a client connected" pool_stop
exec {holder}>&-
[ ! -e "$TEST_DIR/run/poold.sock" ] && ok "socket removed" || not_ok "socket removed"
[ ! -e "$TEST_DIR/run/poold.pid" ] && ok "pid file removed" || not_ok "pid file removed"

# Daemon mode: backgrounds itself, writes its own pid, stops on SIGTERM.
"$POOLD" -o runtime_dir="$TEST_DIR/run" && ok "poold daemonizes" || not_ok "poold daemonizes"
for _ in $(seq 50); do [ -s "$TEST_DIR/run/poold.pid" ] && "$POOLCTL" status >/dev/null 2>&1 && break; sleep 0.1; done
POOLD_PID=$(cat "$TEST_DIR/run/poold.pid")
"$POOLCTL" --json status >"$TEST_DIR/out"
check_out "\"pid\":$POOLD_PID," "pid file holds the daemon's pid"
# poolctl top: the same parts again and again.
check "poolctl top, twice" "$POOLCTL" top 0.1 2
[ "$(grep -c '^poolctl top: ' "$TEST_DIR/out")" -eq 2 ] && [ "$(grep -c '^ID  NAME' "$TEST_DIR/out")" -eq 2 ] \
	&& ok "two frames, each with the nodes" || { not_ok "top frames"; cat "$TEST_DIR/out"; }
check_exit 2 "a bad interval is a usage error" "$POOLCTL" top 0
check_exit 2 "top has no --json" "$POOLCTL" --json top 1 1
# After a burst of requests poold polls briefly for the next, then sleeps: idle, it uses no CPU.
for _ in $(seq 200); do "$POOLCTL" status >/dev/null; done
sleep 0.2
ticks() { awk '{ print $14 + $15 }' /proc/"$POOLD_PID"/stat; }
t0=$(ticks); sleep 1; t1=$(ticks)
[ $((t1 - t0)) -le 5 ] && ok "idle after 200 requests: $((t1 - t0)) clock ticks of CPU in 1 s" ||
	not_ok "idle poold used $((t1 - t0)) clock ticks of CPU in 1 s"
kill -TERM "$POOLD_PID"
for _ in $(seq 50); do kill -0 "$POOLD_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$POOLD_PID" 2>/dev/null && not_ok "daemon stops" || ok "daemon stops"
pool_done

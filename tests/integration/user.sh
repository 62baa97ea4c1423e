#!/bin/bash
# poold as a user of its own, as the shipped unit runs it (User=, only
# CAP_NET_ADMIN and CAP_IPC_LOCK, no new privileges), here uid daemon: it
# starts, installs the fabric rule for its own uid, serves root and other
# uids as before; root and its own uid are the trusted ones (the arena's
# memfd), others are tenants; it holds no other capability, and its rule
# keeps even root's processes off its fabric ports.
. "${top_srcdir:-.}/tests/integration/lib.sh"
IO="$top_builddir/tests/tools/pool-io"
HOSTILE="$top_builddir/tests/tools/pool-hostile"
SVC=daemon

have_nobody "$IO" || { echo "1..0 # SKIP: uid nobody cannot run the build tree"; exit 77; }
id "$SVC" >/dev/null 2>&1 && command -v nft >/dev/null || { echo "1..0 # SKIP: no $SVC user or nft"; exit 77; }
chmod 0755 "$TEST_DIR"
mkdir -p "$TEST_DIR/run" && chown "$SVC:" "$TEST_DIR/run"
# (A coordinator others may join, on loopback: it takes fabric links.)
printf 'lend.size = 64M\ncontrol.mode = 0666\nfabric.ports = 17650-17659\nfabric.firewall = yes\npeer.listen = 127.0.0.1:%s\n' \
	"$(free_port)" >"$TEST_DIR/poold.conf"
export POOLD_WRAP="setpriv --reuid=$SVC --regid=$SVC --clear-groups --no-new-privs \
--inh-caps=-all,+net_admin,+ipc_lock --ambient-caps=-all,+net_admin,+ipc_lock --bounding-set=-all,+net_admin,+ipc_lock"
pool_start -f "$TEST_DIR/poold.conf" && ok "poold starts as uid $SVC with CAP_NET_ADMIN and CAP_IPC_LOCK only" ||
	{ not_ok "poold did not start as $SVC"; pool_done; exit 1; }
uid=$(awk '/^Uid:/ { print $2 }' /proc/"$POOLD_PID"/status)
caps=$(awk '/^CapEff:/ { print $2 }' /proc/"$POOLD_PID"/status)
[ "$uid" = "$(id -u "$SVC")" ] && [ "$caps" = 0000000000005000 ] &&
	ok "it runs as uid $uid, effective capabilities $caps (net_admin, ipc_lock)" || not_ok "uid $uid, caps $caps"
table=$(grep -o 'table inet poold_fabric_[0-9a-f]*' "$TEST_DIR/poold.log" | head -1 | cut -d' ' -f3)
grep -q "fabric.firewall: on: fabric.ports 17650-17659 and .* refuse every uid but $(id -u "$SVC")" \
	"$TEST_DIR/poold.log" && nft list table inet "$table" >/dev/null 2>&1 &&
	ok "its fabric rule admits its own uid" || not_ok "no fabric rule for uid $uid"

check "root creates, writes and maps a region" "$IO" create pub $((4 << 20)) local
check "... writes it" "$IO" write pub 3
check "... and maps it" "$IO" map pub 3
check "another uid maps it read-only" as_nobody "$IO" map pub 3
check_exit 1 "but cannot write it" as_nobody "$IO" write pub 4
check_out "access denied" "a write refusal"
check "poold's own uid is trusted with the arena's memfd" setpriv --reuid="$SVC" --regid="$SVC" --clear-groups \
	/usr/bin/python3 "$top_srcdir/tests/integration/wire.py" "$POOL_SOCKET" arena-fd
as_nobody "$HOSTILE" "$POOL_SOCKET" pub pub >"$TEST_DIR/out" 2>&1
grep -q "^refused: the memfd of arena 0" "$TEST_DIR/out" && ok "a tenant is not" || not_ok "a tenant got the arena"

# The fabric's listener, in the range.
listener=$(ss -ltnpH 2>/dev/null | awk -v pid="pid=$POOLD_PID," '$0 ~ pid { n = split($4, a, ":"); p = a[n]
	if (p >= 17650 && p <= 17659) { print $4; exit } }')
port=${listener##*:}
addr=${listener%:*}
case $addr in "*" | "0.0.0.0" | "[::]") addr=127.0.0.1 ;; esac
conn() { "$@" /usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET); s.settimeout(3)
try:
    s.connect((sys.argv[1].strip("[]"), int(sys.argv[2])))
except OSError as e:
    print("refused:", e); sys.exit(1)
print("connected")' "$addr" "$port" 2>&1; }
if [ -n "$port" ]; then
	case $(conn env) in *"Connection refused"*) ok "root's processes cannot connect to its fabric port $addr:$port" ;;
		*) not_ok "root connected to the fabric port $port" ;; esac
	case $(conn as_nobody) in *"Connection refused"*) ok "nor uid nobody's" ;; *) not_ok "nobody connected" ;; esac
	conn setpriv --reuid="$SVC" --regid="$SVC" --clear-groups | grep -q connected &&
		ok "its own uid can" || not_ok "its own uid cannot connect"
else
	not_ok "no fabric listener in 17650-17659"; ss -ltnp
fi
pool_stop && ok "it stops cleanly" || not_ok "unclean stop"
nft list table inet "$table" >/dev/null 2>&1 && not_ok "the rule outlived poold" ||
	ok "and removes its rule"
pool_done

#!/bin/bash
# The fabric rule in the default configuration (fabric.firewall = auto, no
# fabric.ports) of a coordinator others may join (on loopback): poold finds
# the ports its fabric listens on and admits only its own uid to them. Uid nobody's 300 connections to them are all
# refused and poold holds no more fds after them; root's processes connect.
# Without the right to install it (CAP_NET_ADMIN), auto starts with a
# warning in nft's words and says the rule is off, and fabric.firewall =
# yes does not start; with fabric.firewall = no the ports
# are open to every uid (what the rule is for).
. "${top_srcdir:-.}/tests/integration/lib.sh"

have_nobody /usr/bin/python3 || exit 77
command -v nft >/dev/null || { echo "1..0 # SKIP: no nft (nftables)"; exit 77; }

PEER=$(free_port)
# The TCP ports poold listens on but its peer listener, as ADDR:PORT, one per line.
listeners() { ss -ltnpH | awk -v pid="pid=$POOLD_PID," -v peer=":$PEER" '$0 ~ pid && $4 !~ peer"$" { print $4 }'; }
# connect_all [as_nobody] N: connect N times to every listener; print "ok refused" counts.
connect_all() {
	"$@" /usr/bin/python3 -c 'import socket, sys
n = int(sys.argv[1]); ok = refused = 0
for hp in sys.argv[2:]:
    host, port = hp.rsplit(":", 1)
    for _ in range(n):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET); s.settimeout(3)
        try:
            s.connect((host.strip("[]").replace("*", "127.0.0.1"), int(port))); ok += 1
        except ConnectionRefusedError:
            refused += 1
        s.close()
print(ok, refused)' "$N" $LISTEN
}
fds() { ls /proc/"$POOLD_PID"/fd | wc -l; }

pool_start -o lend.size=64M -o peer.listen=127.0.0.1:"$PEER" || { not_ok "poold did not start"; pool_done; exit 1; }
LISTEN=$(listeners)
nl=$(echo "$LISTEN" | grep -c .)
[ "$nl" -ge 1 ] && ok "poold's fabric listens on $nl port(s): $(echo $LISTEN)" || not_ok "no fabric listener"
check "poolctl status says the rule is on" "$POOLCTL" status
check_out "firewall +on: $nl port\(s\) of this node's fabric" "for the ports it found"
table=$(grep -o 'table inet poold_fabric_[0-9a-f]*' "$TEST_DIR/poold.log" | head -1 | cut -d' ' -f3)
set_ports=$(nft list set inet "$table" fabric 2>/dev/null | tr -c '0-9\n' ' ')
missing=
for hp in $LISTEN; do echo " $set_ports " | grep -q " ${hp##*:} " || missing="$missing $hp"; done
[ -n "$table" ] && [ -z "$missing" ] && ok "table inet $table holds every one of them" ||
	not_ok "table '$table' misses:$missing (set: $set_ports)"

before=$(fds)
N=300
read -r okn refused < <(connect_all as_nobody)
[ "$okn" = 0 ] && [ "$refused" = $((N * nl)) ] &&
	ok "uid nobody's $((N * nl)) connections to them are all refused" ||
	not_ok "uid nobody: $okn connected, $refused refused of $((N * nl))"
sleep 0.5
after=$(fds)
[ "$after" -le "$before" ] && ok "poold holds $after fds after them ($before before)" ||
	not_ok "poold's fds grew from $before to $after"
N=1
read -r okn refused < <(connect_all env)
[ "$okn" = "$nl" ] && ok "root's processes connect (poold's uid)" || not_ok "root: $okn connected, $refused refused"
check "poold still answers" "$POOLCTL" status
pool_stop && ok "it stops cleanly" || not_ok "unclean stop"
nft list table inet "$table" >/dev/null 2>&1 && not_ok "table $table outlived poold" || ok "and removes its table"

# Where the rule may not be installed (root without CAP_NET_ADMIN): auto goes
# on without it and says so with nft's own message; yes refuses.
NOCAP="setpriv --bounding-set -net_admin --inh-caps -net_admin"
POOLD_WRAP=$NOCAP pool_start -o lend.size=64M -o peer.listen=127.0.0.1:"$PEER" ||
	not_ok "auto without CAP_NET_ADMIN did not start"
check "without CAP_NET_ADMIN, auto starts and status says why the rule is off" "$POOLCTL" status
check_out "firewall +off: cannot install the nftables rule: .*Operation not permitted \\(poold needs root or CAP_NET_ADMIN\\)" \
	"(nft's message: Operation not permitted)"
grep -q "fabric.firewall = auto: cannot install the nftables rule: .*Operation not permitted.*; every uid" \
	"$TEST_DIR/poold.log" && ok "and the log warns that every uid reaches the fabric" || not_ok "no warning in the log"
nft list tables | grep -q "$table" && not_ok "a table was left" || ok "no table is installed"
pool_stop
check_exit 1 "fabric.firewall = yes without CAP_NET_ADMIN does not start" $NOCAP "$POOLD" -d \
	-o runtime_dir="$TEST_DIR/run" -o lend.size=64M -o fabric.firewall=yes
check_out "fabric.firewall: cannot install the nftables rule: .*Operation not permitted" "and says why, in nft's words"

# fabric.firewall = no: what the rule keeps out.
pool_start -o lend.size=64M -o peer.listen=127.0.0.1:"$PEER" -o fabric.firewall=no ||
	not_ok "fabric.firewall = no did not start"
LISTEN=$(listeners)
check "with fabric.firewall = no, status says so" "$POOLCTL" status
check_out "firewall +off: fabric.firewall = no" "(off: fabric.firewall = no)"
N=1
read -r okn refused < <(connect_all as_nobody)
[ "$okn" -ge 1 ] && ok "and uid nobody connects to the fabric's ports ($okn)" || not_ok "nobody: $okn connected, $refused refused"
check_exit 1 "fabric.firewall takes auto, yes or no" "$POOLD" -n -o fabric.firewall=maybe
check_out "auto\|yes\|no" "and names them"
pool_done

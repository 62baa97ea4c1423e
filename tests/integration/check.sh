#!/bin/bash
# poold -n and poolctl config check on good and bad configurations.
. "${top_srcdir:-.}/tests/integration/lib.sh"

good="$TEST_DIR/good.conf"
bad="$TEST_DIR/bad.conf"
cat >"$good" <<CONF
# a valid configuration
runtime_dir = /tmp/poold-check
lend.size = 1G
control.max_frame = 2M
log.level = warn
CONF

check_exit 0 "poold -n accepts a good config" "$POOLD" -n -f "$good"
check_out "configuration OK" "poold -n says OK"
check_exit 0 "poold -n with no file checks the built-in defaults" "$POOLD" -n
check_exit 0 "poolctl config check accepts it" "$POOLCTL" config check "$good"
check_exit 0 "example config is valid" "$POOLD" -n -f "$top_srcdir/etc/poold.conf.example"

try_bad() { # LINE-CONTENT EXPECTED-MESSAGE
	printf 'control.max_frame = 2M\n\n%s\n' "$1" >"$bad"
	check_exit 1 "poold -n refuses: $1" "$POOLD" -n -f "$bad"
	check_out "^$bad:3: $2" "error has file:line: reason for: $1"
	check_exit 1 "poolctl config check refuses: $1" "$POOLCTL" config check "$bad"
	check_out "^$bad:3: $2" "poolctl gives the same error for: $1"
}
try_bad "no.such.option = 1" "unknown option 'no.such.option'"
try_bad "control.max_clients = many" "control.max_clients: 'many' is not a valid int"
try_bad "control.max_clients = 100000" "control.max_clients: 100000 is out of range \[1, 65536\]"
try_bad "lend.size = 5Q" "lend.size: '5Q' is not a valid size"
try_bad "log.level = chatty" "log.level: 'chatty' is not one of"
try_bad "control.max_frame = 4M" "control.max_frame: set twice \(first at line 1\)"
try_bad "garbage line" "expected 'name = value'"

# A coordinator that other hosts can reach needs a secret; loopback does not.
check_exit 1 "peer.listen beyond loopback without a secret is refused" "$POOLD" -n -o peer.listen=0.0.0.0:7400
check_out "peer.listen: 0.0.0.0:7400 is reachable from other hosts: set peer.secret" "the refusal says why and what to set"
check_exit 0 "... accepted with a secret" "$POOLD" -n -o peer.listen=0.0.0.0:7400 -o peer.secret=s3cret
check_exit 0 "... and on loopback without one" "$POOLD" -n -o peer.listen=127.0.0.1:7400
# pmem.path: a file that holds data but is no pool tier is refused, unless pmem.init says to format it.
head -c $((8 << 20)) /dev/urandom >"$TEST_DIR/data.img"
sum=$(md5sum <"$TEST_DIR/data.img")
check_exit 1 "poold -n refuses a pmem.path that holds other data" "$POOLD" -n -o "pmem.path=$TEST_DIR/data.img"
check_out "holds data but no pool tier's record; set pmem.init = yes" "and says what to set"
check_exit 1 "poold does not start on it" timeout 10 "$POOLD" -d -o "runtime_dir=$TEST_DIR/pm" \
	-o "pmem.path=$TEST_DIR/data.img"
check_out "holds data but no pool tier's record" "with the same message"
[ "$(md5sum <"$TEST_DIR/data.img")" = "$sum" ] && ok "the file is untouched" || not_ok "the file changed"
check "a new file is fine" "$POOLD" -n -o "pmem.path=$TEST_DIR/new.img" -o pmem.size=8M
mkdir -p "$TEST_DIR/pm"
"$POOLD" -d -o "runtime_dir=$TEST_DIR/pm" -o "pmem.path=$TEST_DIR/data.img" -o pmem.init=yes \
	>"$TEST_DIR/pm.log" 2>&1 &
pm=$!
# Serving once its tiers are open (the socket comes first).
for _ in $(seq 100); do "$POOLCTL" -s "$TEST_DIR/pm/poold.sock" status >/dev/null 2>&1 && break; sleep 0.05; done
"$POOLCTL" -s "$TEST_DIR/pm/poold.sock" status >/dev/null 2>&1 && ok "with pmem.init = yes poold formats it and starts" ||
	{ not_ok "pmem.init"; cat "$TEST_DIR/pm.log"; }
kill "$pm"; wait "$pm"
check "then the file is a pool tier, accepted without pmem.init" "$POOLD" -n -o "pmem.path=$TEST_DIR/data.img"

# A FIFO where the configuration (or the secret) should be: refused at once, never waited on.
mkfifo "$TEST_DIR/fifo.conf"
check_exit 1 "poold -n on a FIFO refuses it at once" timeout 10 "$POOLD" -n -f "$TEST_DIR/fifo.conf"
check_out "not a regular file" "saying it is not a regular file"
check_exit 1 "so does peer.secret_file on a FIFO" timeout 10 "$POOLD" -n -o "peer.secret_file=$TEST_DIR/fifo.conf"
check_out "peer.secret_file: cannot read .*fifo.conf" "naming the option and the file"
printf 'lend.size = 32M\n' >"$TEST_DIR/real.conf"
pool_start -f "$TEST_DIR/real.conf" || exit 1
mv "$TEST_DIR/real.conf" "$TEST_DIR/real.conf.old" && mkfifo "$TEST_DIR/real.conf"
check_exit 1 "a reload whose file became a FIFO fails" timeout 10 "$POOLCTL" reload
check_out "real.conf: not a regular file" "saying it is not a regular file"
check "and poold keeps serving" timeout 5 "$POOLCTL" status
pool_stop

# TLS on peer links needs its three files, by absolute path, and poold reads them when it starts.
check_exit 1 "peer.tls without its files is refused" "$POOLD" -n -o peer.tls=yes
check_out "peer.tls needs peer.tls_cert" "the refusal names the missing option"
check_exit 1 "a relative peer.tls_ca is refused" "$POOLD" -n -o peer.tls=yes -o peer.tls_cert=/c \
	-o peer.tls_key=/k -o peer.tls_ca=ca.pem
check_out "peer.tls_ca: 'ca.pem' is not an absolute path" "the refusal names the path"
check_exit 1 "poold does not start on a certificate it cannot read" "$POOLD" -o "runtime_dir=$TEST_DIR/tls" \
	-o peer.tls=yes -o peer.tls_cert=/nonexistent/cert.pem -o peer.tls_key=/nonexistent/key.pem \
	-o peer.tls_ca=/nonexistent/ca.pem
check_out "peer.tls_cert: /nonexistent/cert.pem" "and says which file"

# The fabric's ports, and the rule that admits only poold to them.
check_exit 1 "fabric.ports must be LO-HI" "$POOLD" -n -o fabric.ports=80-90
check_out "fabric.ports: '80-90' is not LO-HI" "the refusal names the range"
check_exit 0 "fabric.firewall = yes needs no fabric.ports (it finds the fabric's)" "$POOLD" -n \
	-o fabric.firewall=yes
check_exit 0 "both together are valid" "$POOLD" -n -o fabric.ports=17400-17499 -o fabric.firewall=yes

check_exit 1 "missing file" "$POOLD" -n -f "$TEST_DIR/none.conf"
check_out "none.conf: cannot open" "missing file is named"
check_exit 1 "bad -o override" "$POOLD" -n -o lend.size=huge
check_out "command line: lend.size: 'huge'" "override error says command line"
check_exit 2 "bad poold option" "$POOLD" -Z
check_exit 2 "stray poold argument" "$POOLD" extra
"$POOLD" -V >"$TEST_DIR/out" 2>&1
check_out "^poold [0-9.]+ \(protocol 3\)" "poold -V prints the version"
check_exit 0 "poold -h" "$POOLD" -h
check "poolctl config check --json" "$POOLCTL" --json config check "$good"
check_out '"valid":true' "json check result"
pool_done

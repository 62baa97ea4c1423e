#!/bin/bash
# TLS on peer links (peer.tls) on a cluster in network namespaces: nodes
# with certificates of the cluster's CA join and work; a host on the path
# between a node and the coordinator sees only ciphertext (a relay in the
# coordinator's namespace records the bytes of node 3's link: a region
# name sent over a plain link shows in its record, and not in a TLS
# link's); a node with a certificate of another CA, with no TLS, or a raw
# frame, is refused with a log line, and the coordinator keeps running.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "tls: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
command -v openssl >/dev/null || { echo "1..0 # SKIP: no openssl"; exit 77; }
CANARY=tls-canary-region-0123456789

cluster_create 5 || exit 1
pki="$CLUSTER_TMP/pki"
mkdir -p "$pki"
# cert NAME CA: a key and a certificate for NAME signed by CA (ca or other).
cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
		-keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$2.pem" -CAkey "$pki/$2.key" \
			-CAcreateserial -days 2 -out "$pki/$1.pem" 2>/dev/null
}
for ca in ca other; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=pool-test-$ca" -keyout "$pki/$ca.key" -out "$pki/$ca.pem" 2>/dev/null
done
for n in h1 h2 h3 h4; do cert "$n" ca; done
cert rogue other && ok "a CA, certificates of it for four hosts, and one of another CA" ||
	not_ok "making certificates"
tls() { echo "-o peer.tls=yes -o peer.tls_cert=$pki/$1.pem -o peer.tls_key=$pki/$1.key -o peer.tls_ca=$pki/${2:-ca}.pem"; }

# The relay: node 3 reaches the coordinator through it, and it records what passes.
relay_port=$(cluster_port 1 17501)
relay() { # RECORD
	cluster_spawn 1 "$CLUSTER_TMP/relay.log" /usr/bin/python3 -c '
import socket, sys, threading
lhost, lport, thost, tport, record = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
out = open(record, "ab", buffering=0)
lock = threading.Lock()
def pump(a, b):
    while True:
        try:
            d = a.recv(65536)
        except OSError:
            d = b""
        if not d:
            for s in (a, b):
                try: s.shutdown(socket.SHUT_RDWR)
                except OSError: pass
            return
        with lock:
            out.write(d)
        b.sendall(d)
srv = socket.create_server((lhost, lport))
while True:
    c, _ = srv.accept()
    try:
        t = socket.create_connection((thost, tport))
    except OSError:   # the coordinator not listening yet: this client retries
        c.close()
        continue
    threading.Thread(target=pump, args=(c, t), daemon=True).start()
    threading.Thread(target=pump, args=(t, c), daemon=True).start()
' "$(cluster_addr 1)" "$relay_port" "$(cluster_addr 1)" "$(cluster_port 1 7400)" "$1"
}

# start MODE: the coordinator and nodes 2 and 3 (3 through the relay), with
# TLS (MODE tls) or in clear (MODE plain); 0 once both nodes are up.
start() {
	local o1="" o2="" o3="" i
	if [ "$1" = tls ]; then o1=$(tls h1) o2=$(tls h2) o3=$(tls h3); fi
	# shellcheck disable=SC2086
	pool_node_start 1 $o1 || return 1
	for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
	# (the control socket can come before the coordinator's port, which the relay connects to)
	cluster_wait_tcp 1 "$(cluster_addr 1)" "$(cluster_port 1 7400)" 5 || return 1
	RELAY_PID=$(relay "$CLUSTER_TMP/record.$1")
	cluster_wait_tcp 1 "$(cluster_addr 1)" "$relay_port" 5 || return 1
	# shellcheck disable=SC2086
	pool_node_start 2 $o2 && pool_node_start 3 $o3 -o "coordinator=$(cluster_addr 1):$relay_port" || return 1
	for i in 2 3; do pool_wait_state 1 "h$i" up 20 || return 1; done
}
stop() {
	local i
	for i in 1 2 3 4 5; do [ -n "${POOL_PIDS[$i]:-}" ] && pool_node_kill "$i" TERM; done
	cluster_kill "$RELAY_PID" TERM
	sleep 0.5
	POOL_PIDS=()
}
io() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$top_builddir/tests/tools/pool-io" "$@"; }

# In clear first: the relay records the region name node 3 sends.
start plain && ok "a plain cluster forms, node 3 through the relay" || { not_ok "plain cluster"; finish; exit 1; }
pctl 3 region create "$CANARY" 1M placement=node=2 >/dev/null && ok "node 3 creates a region" || not_ok "plain create"
grep -qa "$CANARY" "$CLUSTER_TMP/record.plain" && ok "on a plain link, the region's name passes in clear" ||
	not_ok "the relay did not see the plain link's bytes"
stop

# With TLS: the same, and nothing readable on the path.
start tls && ok "a TLS cluster forms: nodes 2 and 3 up (3 through the relay)" || { not_ok "TLS cluster"; finish; exit 1; }
grep -q "peer links use TLS 1.3" "$(cluster_dir 1)/poold.log" && ok "the coordinator says its peer links use TLS 1.3" ||
	not_ok "no TLS line in the coordinator's log"
pctl 3 region create "$CANARY-2" 1M placement=node=2 >/dev/null && io 3 write "$CANARY-2" 7 >/dev/null &&
	io 2 read "$CANARY-2" 7 >/dev/null && ok "node 3 creates a region on node 2 and both use it" || not_ok "TLS create and use"
[ -s "$CLUSTER_TMP/record.tls" ] && ! grep -qa "$CANARY" "$CLUSTER_TMP/record.tls" &&
	! grep -qa "h3" <(head -c 64 "$CLUSTER_TMP/record.tls") &&
	[ "$(head -c 1 "$CLUSTER_TMP/record.tls" | od -An -tx1 | tr -d ' ')" = 16 ] &&
	ok "on a TLS link the path sees a TLS handshake and no region name ($(stat -c %s "$CLUSTER_TMP/record.tls") bytes)" ||
	{ not_ok "the TLS link's record shows plaintext"; r="$CLUSTER_TMP/record.tls"
	  echo "# record: $(stat -c %s "$r" 2>/dev/null) bytes, first $(head -c 1 "$r" | od -An -tx1), canary $(grep -ca "$CANARY" "$r"), h3 in the first 64: $(head -c 64 "$r" | grep -ca h3)"
	  head -c 256 "$r" | od -An -tx1 | head -8 | sed 's/^/# /'; }

# Refused: a certificate of another CA, no TLS at all, and a raw frame.
# shellcheck disable=SC2086
pool_node_start 4 $(tls rogue other)
pool_node_start 5
sleep 2
# state_of NAME: the node's state in the coordinator's listing ("absent" if not in it).
state_of() {
	pctl 1 --json nodes | python3 -c 'import json, sys
print(next((n["state"] for n in json.load(sys.stdin)["nodes"] if n["name"] == sys.argv[1]), "absent"))' "$1"
}
s=$(state_of h4) && [ "$s" != up ] && ok "a node with a certificate of another CA does not join ($s)" ||
	not_ok "a node with another CA's certificate: $s"
s=$(state_of h5) && [ "$s" != up ] && ok "a node without TLS does not join ($s)" || not_ok "a node without TLS: $s"
grep -q "closed the link before answering hello, without a word: .*and to links without TLS when its peer.tls is on (off here)" \
	"$(cluster_dir 5)/poold.log" &&
	ok "and says the coordinator closed its link before answering, and why a coordinator does" || not_ok "node 5 logs nothing"
grep -q "TLS: .*certificate verify failed" "$(cluster_dir 4)/poold.log" &&
	ok "the node with the other CA's certificate logs that the coordinator's failed to verify" ||
	not_ok "node 4 logs nothing"
grep -q "TLS: .*certificate verify failed\|TLS: .*unknown ca" "$(cluster_dir 1)/poold.log" &&
	ok "the coordinator logs the refused certificate" || not_ok "no refusal logged"
cluster_exec 4 /usr/bin/python3 - "$(cluster_addr 1)" "$(cluster_port 1 7400)" "$top_srcdir" <<'PY' &&
import socket, sys
sys.path.insert(0, sys.argv[3] + "/tests/integration")
import wire
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(wire.frame(wire.HELLO, wire.hello_payload()))
try:
    d = s.recv(4096)
except OSError:
    d = b""
# A TLS server answers a plaintext frame with an alert or a close, never a frame.
sys.exit(0 if len(d) < 16 or d[0] == 0x15 else 1)
PY
	ok "a raw frame gets no answer but a TLS alert or a close" || not_ok "a raw frame got an answer"
kill -0 "${POOL_PIDS[1]}" && pctl 1 status >/dev/null && ok "the coordinator keeps running" || not_ok "coordinator died"
pctl 3 region info "$CANARY-2" >/dev/null && ok "and node 3 still reaches it" || not_ok "node 3 lost the coordinator"
stop
finish

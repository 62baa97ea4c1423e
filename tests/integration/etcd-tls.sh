#!/bin/bash
# poold to etcd in TLS (https:// endpoints, coord.etcd_tls_ca,
# coord.etcd_tls_cert, coord.etcd_tls_key), on a cluster of three members
# on loopback whose client URLs are TLS only and require a client
# certificate of the cluster's CA (--client-cert-auth), with etcd's auth on.
#  - The client: requests and watches in TLS; refused, each saying why: a
#    CA that did not sign etcd's certificate, a certificate that does not
#    name the host, no client certificate, one of another CA, plain http.
#  - A member killed, then restarted: the client makes a new TLS
#    connection to it (libevent cannot reconnect a closed one).
#  - poold -n refuses https without a CA, a certificate without its key,
#    TLS files without an https endpoint; a candidate leads over TLS,
#    makes a region and loads it back after a restart.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v openssl >/dev/null || { echo "1..0 # SKIP: no openssl"; exit 77; }
T="$top_builddir/tests/tools/pool-etcd"
PKI="$TEST_DIR/pki"
mkdir -p "$PKI"
# cert NAME CA SUBJECT [SAN]: a key and a certificate for NAME signed by CA.
cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$3" \
		-keyout "$PKI/$1.key" -out "$PKI/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$2.pem" -CAkey "$PKI/$2.key" \
			-CAcreateserial -days 2 -out "$PKI/$1.pem" \
			${4:+-extfile <(echo "subjectAltName=$4")} 2>/dev/null
}
for ca in ca other; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=pool-test-$ca" -keyout "$PKI/$ca.key" -out "$PKI/$ca.pem" 2>/dev/null
done
# (poold's has no CommonName: etcd 3.4's gateway refuses one once auth is on, below)
cert etcd ca /CN=etcd IP:127.0.0.1 && cert pool ca /O=pool && cert named ca /CN=pool &&
	cert rogue other /O=rogue &&
	ok "a CA; etcd's certificate (for 127.0.0.1 only), poold's, and one of another CA" ||
	not_ok "making certificates"
chmod 600 "$PKI"/*.key
ETCD_SCHEME=https
ETCD_FLAGS=(--cert-file "$PKI/etcd.pem" --key-file "$PKI/etcd.key" --trusted-ca-file "$PKI/ca.pem"
	--client-cert-auth)
TLS="tls:$PKI/ca.pem=$PKI/pool.pem,$PKI/pool.key"
ETCD_CLIENT_OPS=("$TLS")
. "$top_srcdir/tests/integration/etcdlib.sh"
etcd_cluster || exit 1
PORT1=${CLIENTS[1]##*:}

check "put, get and a watch in TLS" "$T" "$ALL" "$TLS" put:/pool/a=1 get:/pool/a watch:/pool/ \
	put:/pool/b=2 sleep:300
check_out "^  kv /pool/a=1 " "the value comes back"
check_out "^watch: put /pool/b=2 " "and the watch sees the put"
check_exit 1 "etcd's certificate checked against another CA" "$T" "$ALL" \
	"tls:$PKI/other.pem=$PKI/pool.pem,$PKI/pool.key" get:/pool/a
check_out "^get: error -71: etcd at https://127.0.0.1:$PORT1: TLS: its certificate: unable to get local issuer certificate$" \
	"is refused, saying so"
check_exit 1 "a certificate that does not name the host (localhost)" "$T" "https://localhost:$PORT1" \
	"$TLS" get:/pool/a
check_out "TLS: its certificate: [Hh]ostname mismatch" "is refused, saying so"
check_exit 1 "no client certificate" "$T" "$ALL" "tls:$PKI/ca.pem" get:/pool/a
check_out "^get: error -71: etcd at https://127.0.0.1:$PORT1: TLS: .*certificate" "is refused by etcd"
check_exit 1 "a client certificate of another CA" "$T" "$ALL" \
	"tls:$PKI/ca.pem=$PKI/rogue.pem,$PKI/rogue.key" get:/pool/a
check_out "^get: error -71: etcd at https://127.0.0.1:$PORT1: TLS: .*(unknown ca|bad certificate)" \
	"is refused by etcd"
check_exit 1 "https without a CA given" "$T" "$ALL" get:/pool/a
check_out "^get: not sent: Invalid argument" "is not sent"
check_exit 1 "plain http to a TLS client URL" "$T" "http://127.0.0.1:$PORT1" get:/pool/a
check_out "^get: error" "fails"

# A client of member 1 only; the member killed, then restarted: the closed TLS connection
# is replaced by a new one. (The failover to other members is etcd.sh's.)
"$T" "${CLIENTS[1]}" "$TLS" put:/pool/r=1 sleep:1500 get:/pool/r sleep:4000 get:/pool/r \
	>"$TEST_DIR/restart" 2>&1 &
client=$!
sleep 0.5
kill_now "${ETCD_PID[1]}"
sleep 1.5
etcd_member_start 1
wait "$client"
grep -Eq "^get: error -111: cannot reach etcd at https://127.0.0.1:$PORT1$" "$TEST_DIR/restart" &&
	ok "member 1 killed: the request to it fails, naming it" ||
	{ not_ok "the request to the killed member"; cat "$TEST_DIR/restart"; }
[ "$(grep -c '^  kv /pool/r=1 ' "$TEST_DIR/restart")" = 1 ] &&
	ok "restarted, it answers again, on a new TLS connection" ||
	{ not_ok "requests after the restart"; cat "$TEST_DIR/restart"; }

# A candidate over TLS, as an etcd user.
"$top_srcdir/tests/tools/etcd-enable-auth" --tls "$PKI/ca.pem" "$PKI/pool.pem" "$PKI/pool.key" \
	"$ALL" pool pw-tls /pool/ >/dev/null &&
	ok "etcd's auth is on" || not_ok "etcd's auth"
install -m 600 /dev/null "$TEST_DIR/etcd.pw" && echo pw-tls >"$TEST_DIR/etcd.pw"
CAND=(-o role=coordinator -o node.id=1 -o "peer.listen=127.0.0.1:$(free_port)" -o "coord.etcd=$ALL"
	-o coord.etcd_lease=2s -o lend.size=16M -o coord.etcd_user=pool
	-o "coord.etcd_password_file=$TEST_DIR/etcd.pw" -o "coord.etcd_tls_ca=$PKI/ca.pem"
	-o "coord.etcd_tls_cert=$PKI/pool.pem" -o "coord.etcd_tls_key=$PKI/pool.key")
check_exit 1 "poold -n: https without coord.etcd_tls_ca" "$POOLD" -n "${CAND[@]}" -o coord.etcd_tls_ca=
check_out "https endpoints need coord.etcd_tls_ca" "is refused"
check_exit 1 "poold -n: a certificate without its key" "$POOLD" -n "${CAND[@]}" -o coord.etcd_tls_key=
check_out "coord.etcd_tls_cert and coord.etcd_tls_key go together" "is refused"
check_exit 1 "poold -n: TLS files with http endpoints" "$POOLD" -n "${CAND[@]}" \
	-o "coord.etcd=http://127.0.0.1:$PORT1"
check_out "coord.etcd_tls_ca is set, but no coord.etcd endpoint is https://" "is refused"
check "poold -n: all of it" "$POOLD" -n "${CAND[@]}"
standing() {
	"$POOLCTL" --json status 2>/dev/null | python3 -c '
import json, sys
print(json.load(sys.stdin).get("etcd", {}).get("standing", ""))'
}
wait_leader() { for _ in $(seq 100); do [ "$(standing)" = leader ] && return 0; sleep 0.1; done; return 1; }
check_exit 1 "a client certificate with a CommonName, once auth is on" "$T" "$ALL" \
	"tls:$PKI/ca.pem=$PKI/named.pem,$PKI/named.key" login:pool=pw-tls get:/pool/a
check_out "HTTP 400\): CommonName of client sending a request against gateway will be ignored" \
	"is refused by etcd's gateway, and the error quotes it"
pool_start "${CAND[@]}" || exit 1
wait_leader && ok "a candidate leads over TLS" || not_ok "the candidate leads"
check "and makes a region" "$POOLCTL" region create tls-region 1M
pool_stop && ok "it stops" || not_ok "stop"
pool_start "${CAND[@]}" || exit 1
wait_leader && ok "restarted, it leads again" || not_ok "leads again"
"$POOLCTL" regions >"$TEST_DIR/out" 2>&1
check_out "tls-region" "with its region loaded back from etcd"
pool_done

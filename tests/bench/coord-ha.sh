#!/bin/bash
# coord-ha.sh - pool-bench coord-ha: what keeping the coordinator's state in
# etcd costs, and how long a failover takes, each next to its baseline from
# the same run.
#
#  1. Region create + close + destroy through one poold (64 KiB regions, 1
#     and 4 clients): with no record of the map, with the pmem journal
#     (coord.journal, a file next to the socket), and with coord.etcd (three
#     etcd members on loopback, each create and destroy in etcd before its
#     reply).
#  2. Failover: two candidates and one node on loopback; the leader is
#     SIGKILLed, ROUNDS times; the time from the kill to the first control
#     call served through the node, next to the lease (2 s).
#  3. The cycles of 1. with etcd as it should be deployed: its https client
#     URLs (TLS, client certificates) and its auth on, poold an etcd user.
#
#   tests/bench/coord-ha.sh [BUILDDIR]    env: HA_BENCH_OPS (cycles, 3000), HA_BENCH_ROUNDS (5)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
top_builddir=$(cd "${1:-$top_srcdir}" && pwd)
bench=$top_builddir/tests/bench/pool-bench-regions
POOLD=$top_builddir/daemon/poold
POOLCTL=$top_builddir/cli/poolctl
ETCDTOOL=$top_builddir/tests/tools/pool-etcd
ETCD_BIN=$(command -v etcd || true)
ops=${HA_BENCH_OPS:-3000}
rounds=${HA_BENCH_ROUNDS:-5}
for b in "$bench" "$POOLD" "$POOLCTL" "$ETCDTOOL" "$ETCD_BIN" "$(command -v openssl)"; do
	[ -x "$b" ] || { echo "coord-ha.sh: ${b:-etcd} not built or not installed" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/pool-bench-ha.XXXXXX")
pids=()
stop_all() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf -- "$dir"
}
trap stop_all EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A CA, etcd's certificate for 127.0.0.1, and poold's (no CommonName: see poold.conf(5)).
pki=$dir/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-subj /CN=bench-ca -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for who in etcd:/CN=etcd pool:/O=pool; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "${who#*:}" \
		-keyout "$pki/${who%%:*}.key" -out "$pki/${who%%:*}.csr" 2>/dev/null
	openssl x509 -req -in "$pki/${who%%:*}.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
		-CAcreateserial -days 2 -out "$pki/${who%%:*}.pem" \
		-extfile <(echo subjectAltName=IP:127.0.0.1) 2>/dev/null
done
chmod 600 "$pki"/*.key

# Each member listens for clients in http and in https (its client certificates checked).
cluster= clients= tls_clients=
for i in 1 2 3; do
	c[$i]=$(port) s[$i]=$(port) p[$i]=$(port)
	cluster+="${cluster:+,}m$i=http://127.0.0.1:${p[$i]}"
	clients+="${clients:+,}http://127.0.0.1:${c[$i]}"
	tls_clients+="${tls_clients:+,}https://127.0.0.1:${s[$i]}"
done
for i in 1 2 3; do
	"$ETCD_BIN" --name "m$i" --data-dir "$dir/m$i" \
		--listen-client-urls "http://127.0.0.1:${c[$i]},https://127.0.0.1:${s[$i]}" \
		--advertise-client-urls "http://127.0.0.1:${c[$i]}" \
		--cert-file "$pki/etcd.pem" --key-file "$pki/etcd.key" \
		--trusted-ca-file "$pki/ca.pem" --client-cert-auth \
		--listen-peer-urls "http://127.0.0.1:${p[$i]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${p[$i]}" --initial-cluster "$cluster" \
		--initial-cluster-state new --heartbeat-interval 100 --election-timeout 1000 \
		>"$dir/m$i.log" 2>&1 &
	pids+=($!)
done
for _ in $(seq 100); do "$ETCDTOOL" "$clients" put:/ready=1 >/dev/null 2>&1 && break; sleep 0.1; done

# poold NAME OPTIONS...: a poold with its own runtime directory; its pid in $last.
poold() {
	local name=$1
	shift
	mkdir -p "$dir/$name"
	"$POOLD" -d -o "runtime_dir=$dir/$name" -o "node.name=$name" -o fabric.transports=tcp \
		-o heartbeat.interval=500ms "$@" >"$dir/$name.log" 2>&1 &
	last=$!
	pids+=($last)
	for _ in $(seq 200); do [ -S "$dir/$name/poold.sock" ] && return 0; sleep 0.05; done
	echo "coord-ha.sh: poold $name did not start" >&2
	return 1
}
leads() { "$POOLCTL" -s "$dir/$1/poold.sock" --json status 2>/dev/null | grep -q '"standing": *"leader"'; }

echo "# pool-bench coord-ha, $(date -u +%FT%TZ), $(uname -n), $(nproc) CPUs, etcd $("$ETCD_BIN" --version | awk '/etcd Version/ { print $3 }')"
echo
# cycles STATE...: the region cycles through a poold keeping its state in each way.
cycles() {
	local state extra spid j
	"$bench" ops-header | sed 's/^/state        /'
	for state in "$@"; do
		case $state in
		none) extra=() ;;
		journal) extra=(-o "coord.journal=$dir/$state/coord.journal") ;;
		etcd) extra=(-o "coord.etcd=$clients" -o coord.etcd_prefix=/bench -o node.id=1
			-o "peer.listen=127.0.0.1:$(port)") ;;
		etcd-tls) extra=(-o "coord.etcd=$tls_clients" -o coord.etcd_prefix=/tls -o node.id=1
			-o "peer.listen=127.0.0.1:$(port)" -o "coord.etcd_tls_ca=$pki/ca.pem"
			-o "coord.etcd_tls_cert=$pki/pool.pem" -o "coord.etcd_tls_key=$pki/pool.key"
			-o coord.etcd_user=pool -o "coord.etcd_password_file=$dir/etcd.pw") ;;
		esac
		poold "$state" -o lend.size=512M "${extra[@]}" || exit 1
		spid=$last
		# (leading comes before its own arena is in the map: until a create fits)
		for _ in $(seq 200); do
			"$POOLCTL" -s "$dir/$state/poold.sock" region create ready 64K >/dev/null 2>&1 &&
				"$POOLCTL" -s "$dir/$state/poold.sock" region destroy ready >/dev/null && break
			sleep 0.05
		done
		for j in 1 4; do
			POOL_SOCKET=$dir/$state/poold.sock "$bench" -j $j ops "$ops" 64K local |
				sed "s/^/$(printf '%-12s' "$state")/"
		done
		if [ "$state" != none ] && [ "$state" != journal ]; then
			"$POOLCTL" -s "$dir/$state/poold.sock" status | grep -E "^  (etcd|state) "
		fi
		kill "$spid"
		wait "$spid" 2>/dev/null
	done
	echo
}
echo "## region create + close + destroy through one poold, $ops cycles (64 KiB regions)"
echo "## state kept: none (baseline), the pmem journal (a file), etcd (3 members on loopback, http)"
cycles none journal etcd

echo "## failover: two candidates, one node; the leader SIGKILLed $rounds times (lease 2 s)"
echo "## ms from the kill to the first control call served through the node"
common=(-o "coord.etcd=$clients" -o coord.etcd_prefix=/failover -o coord.etcd_lease=2s -o lend.size=0)
for i in 1 2; do lport[$i]=$(port); done
cand() { poold "c$1" "${common[@]}" -o role=coordinator -o "node.id=$1" -o "peer.listen=127.0.0.1:${lport[$1]}" && cpid[$1]=$last; }
cand 1 || exit 1
for _ in $(seq 100); do leads c1 && break; sleep 0.05; done
cand 2 || exit 1
poold n3 -o "coord.etcd=$clients" -o coord.etcd_prefix=/failover -o role=node -o node.id=3 -o lend.size=64M || exit 1
for _ in $(seq 100); do "$POOLCTL" -s "$dir/n3/poold.sock" regions >/dev/null 2>&1 && break; sleep 0.05; done
times=()
for r in $(seq "$rounds"); do
	if leads c1; then old=1 new=2; else old=2 new=1; fi
	t0=$(date +%s%N)
	kill -KILL "${cpid[$old]}"
	for _ in $(seq 500); do
		"$POOLCTL" -s "$dir/n3/poold.sock" regions >/dev/null 2>&1 && break
		sleep 0.01
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	times+=("$ms")
	echo "round $r: c$old killed, c$new serving after $ms ms"
	wait "${cpid[$old]}" 2>/dev/null
	cand "$old" || exit 1
	sleep 0.5
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END {
	printf "failover: min %d ms, median %d ms, max %d ms over %d rounds; lease 2000 ms, target 3000 ms\n",
	       v[1], v[int((NR + 1) / 2)], v[NR], NR }'
echo

echo "## the same cycles with etcd's https client URLs (client certificates) and its auth on,"
echo "## poold the etcd user pool (allowed /tls/ only); baseline: etcd over http without auth, above"
(umask 077 && head -c 18 /dev/urandom | base64 >"$dir/etcd.pw")
"$top_srcdir/tests/tools/etcd-enable-auth" --tls "$pki/ca.pem" "$pki/pool.pem" "$pki/pool.key" \
	"$tls_clients" pool "$(cat "$dir/etcd.pw")" /tls/ >/dev/null || exit 1
cycles etcd-tls

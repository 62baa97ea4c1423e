#!/bin/bash
# Every lender checks every byte itself, firewall or not, on a cluster of
# four poolds in network namespaces with fabric.firewall = no, and a fifth
# host that is not a node:
#  - from the outsider (host 5), and from uid nobody on node 4, UCX's own
#    code against node 2's and the coordinator's fabric ports (a forged UCP
#    endpoint, a raw UCT put: tests/tools/pool-ucx-attack) and the link's
#    wire by hand: 0 bytes read, 0 written, every poold alive, fds flat;
#  - the chain to a rogue node: with nothing read, the outsider's poold
#    can only guess the secret, and is refused; root's region is intact;
#  - fencing: node 4 cut off from its coordinator (not from the lenders)
#    is declared dead; from then on node 2 refuses its client's reads of a
#    region node 2 lends, so that client never reads what root writes
#    there after the fence; healed, node 4 joins again and reads anew.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
IO="$top_builddir/tests/tools/pool-io"
ATTACK="$top_builddir/tests/tools/pool-ucx-attack"
LINK="$top_srcdir/tests/integration/fabric-link.py"
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "fence: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }
io() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$IO" "$@"; }
fds() { ls /proc/"${POOL_PIDS[$1]}"/fd 2>/dev/null | wc -l; }
alive() { local i; for i in 1 2 3 4; do kill -0 "${POOL_PIDS[$i]}" 2>/dev/null || return 1; done; }
# fabric_port I: the port of host I's fabric listener.
fabric_port() {
	cluster_exec "$1" ss -ltnpH | awk -v pid="pid=${POOL_PIDS[$1]}," '
		$0 ~ pid && $4 !~ /:7400$/ { n = split($4, a, ":"); print a[n]; exit }'
}

have_nobody "$ATTACK" || exit 77
cluster_create 5 || exit 1
[ "$CLUSTER_MODE" = netns ] || { echo "skip: needs network namespaces"; exit 77; }
chmod 0755 "$CLUSTER_TMP"
export POOL_OPTS="-o fabric.firewall=no"
pool_node_start 1 || exit 1
for _ in $(seq 100); do [ -S "$(pool_sock 1)" ] && break; sleep 0.05; done
for i in 2 3 4; do pool_node_start "$i" || exit 1; done
for i in 2 3 4; do pool_wait_state 1 "h$i" up 20 || { not_ok "h$i joins"; finish; exit 1; }; done
ok "4 poolds up, fabric.firewall = no; host 5 runs none"

io 1 create r $((8 << 20)) node=2 >/dev/null && io 1 write r 1 >/dev/null &&
	ok "root's region r on node 2" || not_ok "region r"

# The outsider, and uid nobody on node 4.
before2=$(fds 2) before1=$(fds 1)
for target in 2 1; do
	port=$(fabric_port "$target")
	addr=$(cluster_addr "$target")
	for from in 5 4; do
		pre=(); [ "$from" = 4 ] && pre=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
		who="host $from"; [ "$from" = 4 ] && who="uid nobody on node 4"
		cluster_exec "$from" "${pre[@]}" timeout 120 "$ATTACK" "$addr" "$port" 1000 7f0000000000 \
			>"$CLUSTER_TMP/attack" 2>&1; rc=$?
		grep -q "^read 0 bytes, wrote 0 bytes$" "$CLUSTER_TMP/attack" && [ "$rc" -eq 0 ] &&
			ok "$who's UCX attack on node $target's fabric port: $(tail -1 "$CLUSTER_TMP/attack")" ||
			{ not_ok "$who against node $target (exit $rc)"; grep -v '^\[\|^ *[0-9]* \|^=' "$CLUSTER_TMP/attack"; }
		for attack in listen garbage wrongkey; do
			cluster_exec "$from" "${pre[@]}" /usr/bin/python3 "$LINK" "$addr" "$port" "$attack" \
				>"$CLUSTER_TMP/link" 2>&1 && ok "$who against node $target: $(cat "$CLUSTER_TMP/link")" ||
				{ not_ok "$who, $attack against node $target"; cat "$CLUSTER_TMP/link"; }
		done
	done
done
alive && ok "every poold is alive" || not_ok "a poold died"
for _ in $(seq 50); do [ "$(fds 2)" -le "$before2" ] && [ "$(fds 1)" -le "$before1" ] && break; sleep 0.1; done
[ "$(fds 2)" -le "$before2" ] && [ "$(fds 1)" -le "$before1" ] &&
	ok "the lenders' fds are back: node 2 $(fds 2) (was $before2), node 1 $(fds 1) (was $before1)" ||
	not_ok "fds grew: node 2 $(fds 2) (was $before2), node 1 $(fds 1) (was $before1)"

# The chain to a rogue node: nothing was read, so the outsider guesses the secret.
POOL_SECRET=guessed pool_node_start 5 || not_ok "the outsider's poold did not start"
for _ in $(seq 40); do grep -q "did not prove it knows peer.secret" "$(cluster_dir 5)/poold.log" && break; sleep 0.1; done
grep -q "did not prove it knows peer.secret: not joining" "$(cluster_dir 5)/poold.log" &&
	! pctl 1 nodes | grep -q " h5 " && ok "the outsider's poold with a guessed secret does not join" ||
	not_ok "the outsider's poold: $(pctl 1 nodes | grep h5)"
pool_node_kill 5
[ "$(io 3 read r 1 | awk '{print $NF}')" != "" ] && pctl 1 regions | grep -q "^r " &&
	ok "root's region r is intact" || not_ok "region r after the outsider"

# Fencing: node 4's client reads r on node 2 while node 4 loses its coordinator.
io 4 watch r 1 30 >"$CLUSTER_TMP/watch" 2>&1 & watch=$!
sleep 1
cluster_exec 4 nft -f - <<EOF
table inet fence {
	chain out { type filter hook output priority 0; ip daddr $(cluster_addr 1) drop; }
	chain in { type filter hook input priority 0; ip saddr $(cluster_addr 1) drop; }
}
EOF
pool_wait_state 1 h4 dead 20 && ok "node 4, cut off from its coordinator only, is declared dead" ||
	not_ok "node 4 not declared dead"
dead_ms=$(date +%s%3N)
sleep 1
io 1 write r 2 >/dev/null && ok "root writes r anew a second after the fence" || not_ok "root's write"
wait $watch; rc=$?
end_ms=$(date +%s%3N)
if [ $rc -ne 0 ] && ! grep -q "wrong bytes" "$CLUSTER_TMP/watch"; then
	ok "node 4's client is refused by the lender: $(tail -1 "$CLUSTER_TMP/watch")"
else
	not_ok "node 4's client read on after the fence (exit $rc): $(cat "$CLUSTER_TMP/watch")"
fi
grep -q "node 4 (h4) is fenced: [0-9]* fabric link(s) from it closed" "$(cluster_dir 2)/poold.log" &&
	ok "node 2 closed node 4's links: $(grep -m1 'node 4 (h4) is fenced' "$(cluster_dir 2)/poold.log" | cut -d' ' -f4-)" ||
	not_ok "node 2 did not fence node 4"
cluster_exec 4 nft delete table inet fence
pool_wait_state 1 h4 up 20 && ok "healed, node 4 joins again" || not_ok "node 4 rejoins"
for _ in $(seq 50); do io 4 read r 2 >/dev/null 2>&1 && break; sleep 0.2; done
io 4 read r 2 >/dev/null && ok "and its clients read what root wrote meanwhile" || not_ok "node 4 reads r after"
alive && ok "every poold is alive" || not_ok "a poold died"
echo "# fence: read refused $((end_ms - dead_ms)) ms after the test saw node 4 dead (the watch ends at its next read)"
finish

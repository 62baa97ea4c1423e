#!/bin/bash
# A sharded KV namespace on a 4-node cluster in network namespaces: its
# index and values live on the owners of its keys' shards (each node keeps
# 32 MiB for them, kv.shard_size), and every node's clients put and get
# through their own poold, which asks the owners on the links between them:
# the coordinator serves none of these requests. Values come back bit-exact
# from any node, small (in one request to a local owner) and large (two
# phases, carried to and from a remote owner); batches split over the
# owners come back in the keys' order; another uid is refused by the
# namespace's mode at the owner; a dead owner's keys miss and the others'
# stay, and puts go to the new owners; when it comes back the others hand
# it its shards' keys; a killed client's reservations go on every owner; its stats
# add up every owner's part, and a flush empties them all.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-sharded: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

POOL_OPTS="-o kv.shard_size=32M -o quota.bytes=16M"
node_opts() { echo "-o metrics.listen=$(pool_metrics_at "$1")"; }
POOL_NODE_OPTS=node_opts
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"

# used I: bytes of host I's memory for its shards given to values.
used() {
	pctl "$1" --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["kv_shards"]["store_used"])'
}

pctl 1 kv create sh 64M sharded >"$CLUSTER_TMP/out" 2>&1 &&
	ok "poolctl kv create sh 64M sharded" || { not_ok "create"; cat "$CLUSTER_TMP/out"; }
pctl 1 kv create bad 64M sharded replicas=3 >"$CLUSTER_TMP/out" 2>&1
[ $? -ne 0 ] && grep -q "1 or 2 replicas" "$CLUSTER_TMP/out" &&
	ok "a sharded namespace with 3 replicas: refused, saying why" || { not_ok "replicas=3"; cat "$CLUSTER_TMP/out"; }
sleep 1 # (the definition reaches every node)
coord0=$(pool_metric 1 'pool_kv_requests_total{from="nodes"}')

# Small values from h2, read back from h3, single and in batches.
out=$(kv 2 sh mput a 2000 1000 7 2>&1) && [ "$out" = "mput a: 2000 of 2000 stored" ] &&
	ok "h2 puts 2000 values of 1000 bytes in one batch over the owners" || not_ok "mput from h2: $out"
out=$(kv 3 sh mget a 2000 7 2>&1) && [ "$out" = "mget a: 2000 hits of 2000, all correct" ] &&
	ok "h3 gets all 2000 back in one batch, each in its key's place" || not_ok "mget from h3: $out"
bad=0
for k in 0 1 2 3 4 5 6 7; do
	kv 4 sh get "a$k" $((7 + k)) >/dev/null 2>&1 || bad=$((bad + 1))
	kv 4 sh get "a$k" $((7 + k)) 2000 >/dev/null 2>&1 || bad=$((bad + 1))
done
kv 1 sh put mid 16000 3 >/dev/null 2>&1 || bad=$((bad + 1))
for i in 2 3 4; do kv "$i" sh get mid 3 16384 >/dev/null 2>&1 || bad=$((bad + 1)); done
[ $bad = 0 ] && ok "h4 gets 8 of them one by one, in two phases and in one request by value; 16000 bytes from h2-h4" ||
	not_ok "$bad single gets from h4 failed"
spread=0
for i in 1 2 3 4; do
	[ "$(used "$i")" -gt 0 ] && spread=$((spread + 1))
done
[ $spread = 4 ] && ok "the values live on all four owners ($(for i in 1 2 3 4; do printf '%s ' "$(used "$i")"; done)bytes)" ||
	not_ok "values on $spread owners"

# Large values: two phases, the bytes carried to and from the owner.
sum=$(kv 2 sh put big 3000000 11 2>&1) && out=$(kv 4 sh get big 11 2>&1) &&
	ok "a 3 MB value put from h2 comes back bit-exact on h4" || not_ok "big value: $sum / $out"
out=$(kv 1 sh get nope 1 2>&1); [ $? -eq 4 ] && ok "a key never put: a miss" || not_ok "miss: $out"
kv 3 sh remove a5 >/dev/null 2>&1 && ! kv 2 sh exists a5 >/dev/null 2>&1 &&
	ok "removed on h3, gone for h2" || not_ok "remove"
out=$(kv 4 sh match a 2000 2>&1) && [ "$out" = "match a: 5 of 2000" ] &&
	out=$(kv 1 sh match a 5 2>&1) && [ "$out" = "match a: 5 of 5" ] &&
	ok "prefix match over the owners: the first 5 keys of 2000 present (a5 is not)" || not_ok "match: $out"

# Its stats, asked on any node, add up every owner's part.
entries() { pctl "$1" --json kv stats sh | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])'; }
[ "$(entries 3)" = 2001 ] && [ "$(entries 1)" = 2001 ] &&
	ok "kv stats on h3 and h1: 2001 entries, every owner's" || not_ok "stats: $(entries 3) / $(entries 1) entries"
all_entries() {
	pctl "$1" --json kv stats | python3 -c 'import json, sys
print([n["entries"] for n in json.load(sys.stdin)["namespaces"] if n["name"] == "sh"][0])'
}
[ "$(all_entries 2)" = 2001 ] && [ "$(all_entries 1)" = 2001 ] &&
	ok "kv stats of every namespace, on h2 and h1: sh's 2001 entries, every owner's" ||
	not_ok "stats of all: $(all_entries 2) / $(all_entries 1) entries"

# Each poold's metrics count its own part: added up, the namespace's entries.
sum=0
for i in 1 2 3 4; do sum=$((sum + $(pool_metric "$i" 'pool_kv_entries{ns="sh"}'))); done
[ "$sum" = 2001 ] && ok "pool_kv_entries{ns=\"sh\"} of the four poolds add up to 2001" ||
	not_ok "the owners' metrics add up to $sum entries"

# The coordinator's index served none of it; the owners did.
coord1=$(pool_metric 1 'pool_kv_requests_total{from="nodes"}')
owned=0
for i in 1 2 3 4; do
	owned=$((owned + $(pool_metric "$i" 'pool_kv_shard_requests_total{from="nodes"}') +
		$(pool_metric "$i" 'pool_kv_shard_requests_total{from="here"}')))
done
[ "$coord0" = "$coord1" ] && [ "$owned" -gt 0 ] &&
	ok "the coordinator's index served no KV request of nodes ($coord1); the owners $owned" ||
	not_ok "coordinator served $coord0 -> $coord1, owners $owned"

# Another uid: the namespace's mode (0600, root's) is checked at the owner.
if have_nobody "$KV"; then
	for i in 2 3; do chmod 0755 "$(cluster_dir "$i")" "$(cluster_dir "$i")/run"; chmod 0666 "$(pool_sock "$i")"; done
	chmod 0755 "$CLUSTER_TMP"
	denied=0
	for k in 1 2 3 4 6 7; do
		cluster_exec 3 setpriv --reuid=nobody --regid=nogroup --clear-groups \
			env POOL_SOCKET="$(pool_sock 3)" "$KV" sh get "a$k" $((7 + k)) >"$CLUSTER_TMP/out" 2>&1
		[ $? -ne 0 ] && grep -q "access denied" "$CLUSTER_TMP/out" && denied=$((denied + 1))
	done
	cluster_exec 2 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env POOL_SOCKET="$(pool_sock 2)" "$KV" sh mput a 100 1000 9 >"$CLUSTER_TMP/out" 2>&1
	[ $denied = 6 ] && grep -q "access denied" "$CLUSTER_TMP/out" &&
		out=$(kv 3 sh mget a 100 7 2>&1) && [ "$out" = "mget a: 99 hits of 100, all correct" ] &&
		ok "uid nobody: every get and a batch put refused by the owners, nothing changed" ||
		{ not_ok "nobody ($denied denied)"; cat "$CLUSTER_TMP/out"; }

	# A namespace nobody may write: its values here are bounded by its quota
	# over all owners (quota.bytes = 16M: each owner holds its shards' part),
	# not by the quota on each (4 x 16M would take them all). Its puts evict
	# its own older values once at the bound.
	pctl 1 kv create open 256M sharded mode=0666 >/dev/null 2>&1 || not_ok "create open"
	sleep 1
	cluster_exec 3 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env POOL_SOCKET="$(pool_sock 3)" "$KV" open mput q 600 65536 3 >"$CLUSTER_TMP/out" 2>&1
	kept=$(pctl 3 --json kv stats open | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])')
	[ "$kept" -gt 0 ] && [ "$kept" -le $((16 * 1048576 / 65536)) ] &&
		ok "uid nobody put 600 values of 64 KiB: $kept kept over the four owners, within its 16M quota" ||
		{ not_ok "nobody's quota over the owners: $kept kept"; cat "$CLUSTER_TMP/out"; }
	pctl 1 kv drop open >/dev/null 2>&1
fi

# A dead owner: its keys miss, the others' stay; puts go to the new owners.
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
sleep 1 # (every poold's map follows)
out=$(kv 2 sh mget a 2000 7 2>&1)
hits=$(sed -n 's/^mget a: \([0-9]*\) hits of 2000, all correct$/\1/p' <<<"$out")
[ -n "$hits" ] && [ "$hits" -gt 1000 ] && [ "$hits" -lt 1999 ] &&
	ok "h4 dead: $hits of 2000 still hit, all correct (h4's keys miss)" || not_ok "after h4's death: $out"
out=$(kv 3 sh mput b 500 2000 5 2>&1) && [ "$out" = "mput b: 500 of 500 stored" ] &&
	out=$(kv 1 sh mget b 500 5 2>&1) && [ "$out" = "mget b: 500 hits of 500, all correct" ] &&
	ok "the three left own every shard: 500 new values put and got" || not_ok "puts after h4: $out"

# h4 back: its shards come back to it with their keys, handed over by the
# owners that had them; values put to them since on h4 are the only ones:
# when h4 dies again, the older values the others had are not served stale.
moves() {
	pctl "$1" --json status | python3 -c 'import json, sys
k = json.load(sys.stdin)["kv_shards"]
print(k.get("arriving", 0), k.get("leaving", 0), k.get("keys_in", 0), k.get("keys_out", 0), k.get("keys_lost", 0))'
}
settled() {
	local deadline=$((SECONDS + $1)) i m
	while [ $SECONDS -le $deadline ]; do
		m=0
		for i in 1 2 3 4; do
			[ "$(moves "$i" | cut -d' ' -f1-2)" = "0 0" ] && m=$((m + 1))
		done
		[ $m = 4 ] && return 0
		sleep 0.2
	done
	return 1
}
pool_node_start 4
pool_wait_state 1 h4 up 20 || not_ok "h4 up again"
settled 20 || not_ok "the shards' moves settle"
out=$(kv 1 sh mget b 500 5 2>&1)
read -r _ _ in4 _ lost4 <<<"$(moves 4)"
[ "$out" = "mget b: 500 hits of 500, all correct" ] && [ "$in4" -gt 0 ] && [ "$lost4" = 0 ] &&
	ok "h4 back: its shards' keys were handed to it ($in4 taken), all 500 hit" ||
	not_ok "after h4's return: $out (h4 took $in4, lost $lost4)"
out=$(kv 3 sh mput b 500 2000 6 2>&1) && [ "$out" = "mput b: 500 of 500 stored" ] || not_ok "mput b again: $out"
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead again"
sleep 1
out=$(kv 2 sh mget b 500 6 2>&1)
back=$(sed -n 's/^mget b: \([0-9]*\) hits of 500, all correct$/\1/p' <<<"$out")
[ -n "$back" ] && [ "$back" -gt 250 ] && [ "$back" -lt 500 ] &&
	ok "h4 dead again: its shards' keys miss ($((500 - back))), none comes back stale from the others" ||
	not_ok "after h4's second death: $out"

# A client's reservations go when it does (its poold tells the owners its
# reserves went to): 4 values of 1 MiB reserved by a client on h2 take
# their owners' memory until it is killed, then give it back at once (not
# after KV_RESERVE_TTL_MS, 30 s).
total_used() { local i t=0; for i in 1 2 3; do t=$((t + $(used "$i"))); done; echo $t; }
before=$(total_used)
mkfifo "$CLUSTER_TMP/hold"
for k in 0 1 2 3; do
	kv 2 sh vput "held$k" 1048576 $((30 + k)) hold <"$CLUSTER_TMP/hold" >"$CLUSTER_TMP/vput$k" 2>&1 &
done
exec {hold}>"$CLUSTER_TMP/hold"
for _ in $(seq 100); do
	[ "$(cat "$CLUSTER_TMP"/vput[0-3] | grep -c "reserved, not committed")" = 4 ] && break
	sleep 0.1
done
held=$(total_used)
[ "$(cat "$CLUSTER_TMP"/vput[0-3] | grep -c "reserved, not committed")" = 4 ] &&
	[ "$held" -ge $((before + 4 * 1048576)) ] &&
	ok "4 values of 1 MiB reserved by a client on h2: the owners' memory taken" ||
	{ not_ok "reservations: $held bytes used, $before before"; cat "$CLUSTER_TMP"/vput[0-3]; }
pkill -KILL -f "pool-kv sh vput held" || not_ok "kill the holder"
exec {hold}>&-
wait 2>/dev/null
for _ in $(seq 50); do [ "$(total_used)" -le "$before" ] && break; sleep 0.1; done
[ "$(total_used)" -le "$before" ] && ! kv 3 sh exists held0 >/dev/null 2>&1 &&
	ok "the client killed: its reservations went on every owner, the memory given back" ||
	not_ok "after the holder's death: $(total_used) bytes used, $before before"

# A flush asked on one node empties every owner's part.
pctl 2 kv flush sh >"$CLUSTER_TMP/out" 2>&1 && sleep 0.5 && [ "$(entries 3)" = 0 ] &&
	[ "$(used 1)$(used 2)$(used 3)" = 000 ] &&
	ok "kv flush on h2: no entry left, nothing of the owners' memory in use" ||
	{ not_ok "flush: $(entries 3) entries, used $(used 1) $(used 2) $(used 3)"; cat "$CLUSTER_TMP/out"; }
pool_known_abort >/dev/null && echo "# a poold aborted in UCX's wireup (see pool_known_abort)"
finish

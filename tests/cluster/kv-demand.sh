#!/bin/bash
# A sharded KV namespace's capacity shared among its owners by their demand
# (daemon/kv/kv-demand.c), on a 3-node cluster: a namespace of 24 MiB (an
# even part 8 MiB a node) holds 18 MiB of cold values; then for 4 s one
# client puts new values, 1 MiB at a time, whose keys share a hash tag (all
# on one owner, the hot one), while another reads 40 of the cold keys again
# and again (so every owner is in use, and their other cold values age).
# One LRU over the namespace would evict the other cold values for the new
# ones and keep the 40; so the hot owner's part must grow well past its
# even part and hold more than it, and the 40 must stay on the other
# owners (they report how much of what they hold was used lately, not only
# how old their oldest is), while the parts given never add up to more
# than the capacity and 1/32; a poold's status counts the reports and the
# changes. Then, with the reader stopped, the quiet owners are given the
# floor and the hot one the rest. Then a node dies: the map changes and
# every part is even again. A report or a part sent on a control socket
# (root's or nobody's) is refused and changes no part.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
HOSTILE="$top_builddir/tests/tools/pool-hostile"
kv() { local i=$1; shift; cluster_exec "$i" timeout 120 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() {
	[ -n "${reader:-}" ] && kill "$reader" 2>/dev/null
	[ "$FAILS" -gt 0 ] && pool_cluster_logs
	echo "kv-demand: $PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

POOL_OPTS="-o kv.shard_size=64M"
node_opts() { echo "-o metrics.listen=$(pool_metrics_at "$1")"; }
POOL_NODE_OPTS=node_opts
pool_cluster_start 3 || { pool_cluster_logs; exit 1; }
ok "3-node cluster formed ($CLUSTER_MODE)"

part() { pool_metric "$1" 'pool_kv_part_bytes{ns="dm"}'; }
owned() { pool_metric "$1" pool_kv_shards_owned; }
shard_stat() {
	pctl "$1" --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["kv_shards"][sys.argv[1]])' "$2"
}
# even I: host I's even part of dm's 24 MiB, as the map shares it (capacity / 1,024 a shard).
even() { echo $(((24 << 20) / 1024 * $(owned "$1"))); }
# parts: the owners' parts added up, as kv stats asks them all at once.
parts() {
	pctl 1 --json kv stats dm | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["part"])'
}

pctl 1 kv create dm 24M sharded >"$CLUSTER_TMP/out" 2>&1 && ok "poolctl kv create dm 24M sharded" ||
	{ not_ok "create"; cat "$CLUSTER_TMP/out"; }
sleep 1 # (the definition reaches every node)
bad=0
for i in 1 2 3; do [ "$(part "$i")" = "$(even "$i")" ] || bad=$((bad + 1)); done
[ $bad = 0 ] && ok "each node's part is its even one at first: capacity x shards owned / 1,024" ||
	not_ok "$bad parts not even: $(part 1) $(part 2) $(part 3) / $(even 1) $(even 2) $(even 3)"

out=$(kv 2 dm mput c 300 65536 1 2>&1) && [ "$out" = "mput c: 300 of 300 stored" ] &&
	ok "18.75 MiB of cold values put over the owners" || not_ok "cold mput: $out"
# (local prints the i of each PREFIXi whose value is on its node: "{hot}probe0" here)
kv 2 dm put '{hot}probe0' 1 1 >/dev/null 2>&1
hot=0
for i in 1 2 3; do
	[ -n "$(kv "$i" dm local '{hot}probe' 1 2>/dev/null)" ] && hot=$i
done
[ "$hot" != 0 ] && ok "the keys tagged {hot} live on h$hot" || not_ok "no owner of {hot} found"
hot_even=$(even "$hot")
hot_reads=" $(kv "$hot" dm local c 40 2>/dev/null | tr '\n' ' ')"

# The others in use: 40 cold keys read again and again from h3. The hot
# puts wait 50 ms after each MiB, so that one LRU's age (the capacity over
# their rate: seconds) stays well above the reads' turn on a loaded host.
(while :; do kv 3 dm mget c 40 1 >/dev/null 2>&1; sleep 0.02; done) &
reader=$!
max=0 over=0 n=0 end=$((SECONDS + 4))
while [ $SECONDS -lt $end ]; do
	out=$(kv 2 dm mput "{hot}$n-" 16 65536 2 2>&1) || not_ok "hot mput $n: $out"
	n=$((n + 1))
	sleep 0.05
	[ $((n % 8)) = 0 ] || continue
	s=$(parts)
	[ "$s" -gt "$max" ] && max=$s
	[ "$s" -gt $(((24 << 20) + (24 << 20) / 32)) ] && over=$((over + 1))
done
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
reader=
hp=$(part "$hot")
[ "$hp" -gt $((hot_even * 5 / 4)) ] &&
	ok "h$hot's part grew with its demand ($n MiB put): $hp bytes, its even part $hot_even" ||
	not_ok "h$hot's part $hp (even $hot_even)"
held=$(pool_metric "$hot" 'pool_kv_bytes{ns="dm",tier="dram"}')
[ "$held" -gt "$hot_even" ] && ok "... and h$hot holds $held bytes of dm, more than its even part" ||
	not_ok "h$hot holds $held (even $hot_even)"
[ $over = 0 ] && [ "$max" -gt 0 ] &&
	ok "the parts never added up to more than the capacity and 1/32 (at most $max of $((24 << 20)))" ||
	not_ok "parts added up to $max, over the bound $over time(s)"
# (on the hot owner itself a read one may have gone while its part grew)
lost=
for k in $(POOL_KV_MISSES=1 kv 3 dm mget c 40 1 2>&1 | sed -n 's/^miss c//p'); do
	[[ "$hot_reads" == *" $k "* ]] || lost="$lost c$k"
done
[ -z "$lost" ] && ok "the cold keys read all along on the other owners are all still there" ||
	not_ok "cold keys read all along lost on the other owners:$lost"
reports=0
for i in 1 2 3; do reports=$((reports + $(shard_stat "$i" demand_reports))); done
changes=$(shard_stat "$hot" part_changes)
[ "$reports" -gt 0 ] && [ "$changes" -gt 0 ] &&
	ok "status: $reports use report(s) sent to keepers, h$hot's part changed $changes time(s)" ||
	not_ok "reports $reports, changes $changes"

# Then the hot owner alone in use: the others, quiet for 5 s, are given
# the floor (1/16 of an even part) by the keeper, and the hot one takes the
# rest.
end=$((SECONDS + 7))
while [ $SECONDS -lt $end ]; do
	kv 2 dm mput "{hot}q$n-" 16 65536 2 >/dev/null 2>&1 || not_ok "hot mput q$n"
	n=$((n + 1))
done
floor=$(((24 << 20) / 3 / 16)) bad=
for i in 1 2 3; do [ "$i" != "$hot" ] && [ "$(part "$i")" != "$floor" ] && bad="$bad h$i:$(part "$i")"; done
hp=$(part "$hot")
[ -z "$bad" ] && [ "$hp" -gt $((20 << 20)) ] &&
	ok "the others quiet: their parts are the floor ($floor bytes), h$hot's $hp" ||
	not_ok "quiet owners' parts:$bad (floor $floor), h$hot's $hp"

# A report on the control socket is refused, root's or nobody's, and changes no part.
before=$(part "$hot")
out=$(cluster_exec "$hot" "$HOSTILE" "$(pool_sock "$hot")" --node-calls dm 2>&1) &&
	[ "$(grep -c '^refused: ' <<<"$out")" = 5 ] && grep -q "reported by a shard owner only" <<<"$out" &&
	[ "$(part "$hot")" = "$before" ] &&
	ok "a use report claiming all of dm and a part of 1 byte, sent by root on h$hot's control socket: refused, no part changed" ||
	not_ok "root's report: $out"
if have_nobody "$HOSTILE"; then
	chmod 0755 "$(cluster_dir "$hot")" "$(cluster_dir "$hot")/run" "$CLUSTER_TMP"
	chmod 0666 "$(pool_sock "$hot")"
	out=$(cluster_exec "$hot" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$HOSTILE" "$(pool_sock "$hot")" --node-calls dm 2>&1) &&
		[ "$(grep -c '^refused: ' <<<"$out")" = 5 ] && [ "$(part "$hot")" = "$before" ] &&
		ok "... and by uid nobody: refused" || not_ok "nobody's report: $out"
fi

# A node dies: the map changes, every part is even again.
victim=3
[ "$hot" = 3 ] && victim=2
pool_node_kill "$victim"
pool_wait_state 1 "h$victim" dead 30 || not_ok "h$victim declared dead"
live=$(for i in 1 2 3; do [ "$i" != "$victim" ] && echo "$i"; done)
bad=1
for _ in $(seq 100); do
	bad=0
	for i in $live; do [ "$(part "$i")" = "$(even "$i")" ] || bad=$((bad + 1)); done
	[ $bad = 0 ] && break
	sleep 0.1
done
[ $bad = 0 ] && ok "h$victim dead: the parts of $(echo $live) are even again, as the new map shares them" ||
	not_ok "parts after the death: $(for i in $live; do echo "$(part "$i")/$(even "$i")"; done)"
pctl 1 status >/dev/null 2>&1 && ok "h1's poold still answers" || not_ok "h1 after the death"
finish

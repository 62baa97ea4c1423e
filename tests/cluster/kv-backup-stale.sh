#!/bin/bash
# What a shard's backup holds is what its owner holds, in a sharded KV
# namespace of 2 replicas on 3 hosts (h1 the coordinator, keeping no
# shards; h2 and h3 owning and backing them):
# - h2's shard store is small, h3's large: h2 evicts values its backup
#   had room for, and tells it so; when h2 is SIGKILLed, none of the values
#   that were misses before comes back from h3's copies.
# - h3 is stopped (SIGSTOP) until the coordinator declares it dead, while
#   keys are removed and put at h2, which owns every shard meanwhile; when
#   it runs again it finds itself declared dead, drops what it held of the
#   shards (the others went on without it) and takes its shards back from
#   h2: it serves none of the keys removed meanwhile and all those put, and
#   so does its copy of h2's shards once h2 is SIGKILLed.
# - h2 and h3 are cut from each other (TCP resets) while keys are removed:
#   the removals their backups missed do not come back after h2's death,
#   once the shards were copied whole again.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-backup-stale: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

stores() { case $1 in 2) echo "-o kv.shard_size=8M" ;; 3) echo "-o kv.shard_size=256M" ;; esac; }
POOL_NODE_OPTS=stores
pool_cluster_start 3 || { pool_cluster_logs; exit 1; }
ok "3-node cluster formed ($CLUSTER_MODE)"
pctl 1 kv create ev 64M sharded replicas=2 >/dev/null 2>&1 &&
	pctl 1 kv create fx 64M sharded replicas=2 >/dev/null 2>&1 || not_ok "kv create ev, fx"
sleep 1 # (the definitions reach every node)
# misses I NS PREFIX N SEED FILE: the keys host I misses, into FILE; the rest read bit-exact.
misses() {
	kv "$1" "$2" mget "$3" "$4" "$5" >"$CLUSTER_TMP/mget" 2>&1 &&
		{ grep '^miss ' "$CLUSTER_TMP/mget" || :; } | sort >"$6" &&
		grep -q "all correct" "$CLUSTER_TMP/mget"
}
export POOL_KV_MISSES=1

# Evictions: 400 values of 64 KiB, over twice what h2's 8M store holds of
# its shards and its copies of h3's, in batches of 20 (a batch's values
# are all reserved before any is written: one far over a store fails).
stored=0
for b in $(seq 0 19); do
	kv 3 ev mput "e$b-" 20 65536 "$b" | grep -qx "mput e$b-: 20 of 20 stored" && stored=$((stored + 1))
done
[ $stored = 20 ] || not_ok "mput e: $stored of 20 batches stored"
pool_kv_settled 20 2 3 || not_ok "ev: shards not settled"
# ev_misses FILE: the values of ev host 3 misses, into FILE.
ev_misses() {
	local b rc=0
	: >"$1.all"
	for b in $(seq 0 19); do
		misses 3 ev "e$b-" 20 "$b" "$CLUSTER_TMP/mb" || rc=1
		cat "$CLUSTER_TMP/mb" >>"$1.all"
	done
	sort "$1.all" >"$1"
	return $rc
}
ev_misses "$CLUSTER_TMP/m1" || not_ok "mget e from h3: $(tail -1 "$CLUSTER_TMP/mget")"
m1=$(wc -l <"$CLUSTER_TMP/m1")
[ "$m1" -gt 0 ] && ok "h2 evicted $m1 of its values (its store is full), the rest read back from h3" ||
	not_ok "no misses: h2 evicted nothing"
pool_node_kill 2
pool_wait_state 1 h2 dead 10 || not_ok "h2 declared dead"
sleep 1
ev_misses "$CLUSTER_TMP/m2" || not_ok "mget e after h2's death: $(tail -1 "$CLUSTER_TMP/mget")"
back=$(comm -23 "$CLUSTER_TMP/m1" "$CLUSTER_TMP/m2" | wc -l)
[ "$back" = 0 ] && ok "h2 SIGKILLed: none of the $m1 evicted values came back from its backup ($(wc -l <"$CLUSTER_TMP/m2") misses now)" ||
	not_ok "$back of $m1 values evicted at h2 came back from h3's copies"

pool_node_start 2
pool_wait_state 1 h2 up 20 || not_ok "h2 up again"
pool_kv_settled 40 2 3 || not_ok "h2 back: shards not settled"
pctl 1 kv drop ev >/dev/null 2>&1 || not_ok "kv drop ev"

# Declared dead while stopped: h3 comes back to shards the others changed.
out=$(kv 2 fx mput f 200 1000 5 2>&1) && [ "$out" = "mput f: 200 of 200 stored" ] || not_ok "mput f: $out"
pool_kv_settled 20 2 3 || not_ok "fx: shards not settled"
pool_node_kill 3 STOP
pool_wait_state 1 h3 dead 10 && pool_wait_state 2 h3 dead 10 || not_ok "h3 declared dead"
sleep 0.5
gone=0
for k in $(seq 0 49); do kv 2 fx remove "f$k" >/dev/null 2>&1 && gone=$((gone + 1)); done
out=$(kv 2 fx mput g 100 1000 6 2>&1) && [ "$out" = "mput g: 100 of 100 stored" ] && [ $gone = 50 ] &&
	ok "h3 stopped and declared dead: f0..f49 removed and g0..g99 put at h2" ||
	not_ok "while h3 was dead: $gone removed, $out"
pool_node_kill 3 CONT
pool_wait_state 1 h3 up 20 || not_ok "h3 up again"
pool_kv_settled 40 2 3 || not_ok "h3 back: shards not settled"
grep -q "its KV shards wait for the coordinator's word" "$(cluster_dir 3)/poold.log" &&
	grep -q "KV shards: this node was declared dead" "$(cluster_dir 3)/poold.log" &&
	ok "h3 holds its shards back when it runs again, is told it was declared dead and drops what it held of them" ||
	not_ok "h3 does not say it was declared dead"
# read I: f50..f199 and g0..g99 hit, f0..f49 miss, from host I.
read_fx() {
	local bad=""
	misses "$1" fx f 200 5 "$CLUSTER_TMP/mf" || bad="$bad f($(tail -1 "$CLUSTER_TMP/mget"))"
	[ "$(cat "$CLUSTER_TMP/mf")" = "$(for k in $(seq 0 49); do echo "miss f$k"; done | sort)" ] ||
		bad="$bad f-misses($(wc -l <"$CLUSTER_TMP/mf"): $(head -3 "$CLUSTER_TMP/mf" | tr '\n' ' '))"
	out=$(kv "$1" fx mget g 100 6 2>&1)
	[ "$(tail -1 <<<"$out")" = "mget g: 100 hits of 100, all correct" ] || bad="$bad g($(tail -1 <<<"$out"))"
	echo "$bad"
}
bad=$(read_fx 3)
[ -z "$bad" ] && ok "h3 back: it serves none of the 50 keys removed meanwhile and all 100 put" ||
	not_ok "h3 back, read from h3:$bad"
pool_node_kill 2
pool_wait_state 1 h2 dead 10 || not_ok "h2 declared dead"
sleep 1
bad=$(read_fx 3)
[ -z "$bad" ] && ok "h2 SIGKILLed then: h3 serves all of it from its copies, just as right" ||
	not_ok "after h2's death, read from h3:$bad"

# Removals a backup missed: h3 resets every TCP connection from h2 (an
# nft rule in its namespace) while keys are removed through h1, so each
# owner's removals do not reach the other, its backup; once the rule is
# gone each copies its shards whole to the other again, and what the
# copy did not write goes. Then h2 is SIGKILLed: no removed key comes
# back from h3's copies.
if [ "$CLUSTER_MODE" = netns ]; then
	pool_node_start 2
	pool_wait_state 1 h2 up 20 || not_ok "h2 up again"
	pool_kv_settled 40 2 3 || not_ok "h2 back: shards not settled"
	out=$(kv 1 fx mput r 200 1000 8 2>&1) && [ "$out" = "mput r: 200 of 200 stored" ] ||
		not_ok "mput r: $out"
	pool_kv_settled 20 2 3 || not_ok "r: shards not settled"
	missed0=$(($(pool_kv_shard 2 backup_missed) + $(pool_kv_shard 3 backup_missed)))
	cluster_exec 3 nft -f - <<-EOF
		table inet cut_h2 {
			chain in {
				type filter hook input priority -10;
				ip saddr $(cluster_addr 2) meta l4proto tcp reject with tcp reset
			}
		}
	EOF
	sleep 0.5
	for k in $(seq 0 19); do kv 1 fx remove "r$k" >"$CLUSTER_TMP/rm$k" 2>&1 & done
	# (one after the other too: each owner answers from itself once its
	# backup has been silent for the heartbeat window, not at the client's
	# timeout, while the cut lasts)
	seq_ok=0
	for k in $(seq 20 24); do kv 1 fx remove "r$k" >"$CLUSTER_TMP/rm$k" 2>&1 && seq_ok=$((seq_ok + 1)); done
	wait
	cluster_exec 3 nft delete table inet cut_h2
	gone=0
	for k in $(seq 0 24); do [ -s "$CLUSTER_TMP/rm$k" ] || gone=$((gone + 1)); done
	missed=$(($(pool_kv_shard 2 backup_missed) + $(pool_kv_shard 3 backup_missed) - missed0))
	[ $missed -gt 0 ] && [ $seq_ok = 5 ] && [ $gone = 25 ] &&
		ok "h2 and h3 cut from each other: r0..r19 removed through h1 at once and r20..r24 one after the other, all answered OK, $missed change(s) not taken by a backup" ||
		{ not_ok "cut: $gone of 25 removed ($seq_ok of the 5 in turn), $missed changes missed"; cat "$CLUSTER_TMP"/rm*; }
	pool_kv_settled 40 2 3 || not_ok "after the cut: shards not copied whole again"
	pool_node_kill 2
	pool_wait_state 1 h2 dead 10 || not_ok "h2 declared dead"
	sleep 1
	misses 3 fx r 200 8 "$CLUSTER_TMP/mr" || not_ok "mget r from h3: $(tail -1 "$CLUSTER_TMP/mget")"
	[ "$(cat "$CLUSTER_TMP/mr")" = "$(for k in $(seq 0 24); do echo "miss r$k"; done | sort)" ] &&
		ok "h2 SIGKILLed: h3 serves r25..r199 and none of r0..r24 (the whole copies dropped what they did not write)" ||
		not_ok "after h2's death: $(wc -l <"$CLUSTER_TMP/mr") misses of r: $(head -3 "$CLUSTER_TMP/mr" | tr '\n' ' ')"
fi
finish

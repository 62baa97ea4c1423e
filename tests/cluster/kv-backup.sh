#!/bin/bash
# A sharded KV namespace of 2 replicas on a 4-node cluster in network
# namespaces: each shard's keys live on its owner and on its backup (the
# next member in the shard's rendezvous order), and a put is answered once
# both have it. A shard owner SIGKILLed while a client puts: every batch
# the client was told was stored is read back bit-exact from the nodes
# left, large values too, and a key removed before stays removed; the new
# owners copy their shards whole to their new backups, and a second owner
# killed after that loses nothing either; both come back, take their shards
# and back shards again, and a third death loses nothing. The copies are not counted as
# entries; a raw backup call from a client, or as uid nobody, is refused.
. "${top_srcdir:-.}/tests/cluster/pool.sh"
KV="$top_builddir/tests/tools/pool-kv"
kv() { local i=$1; shift; cluster_exec "$i" timeout 60 env POOL_SOCKET="$(pool_sock "$i")" "$KV" "$@"; }
finish() { [ "$FAILS" -gt 0 ] && pool_cluster_logs; echo "kv-backup: $PASSES passed, $FAILS failed"; [ "$FAILS" -eq 0 ]; }

POOL_OPTS="-o kv.shard_size=128M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
ok "4-node cluster formed ($CLUSTER_MODE)"

pctl 1 kv create bk 256M sharded replicas=2 >"$CLUSTER_TMP/out" 2>&1 &&
	ok "poolctl kv create bk 256M sharded replicas=2" || { not_ok "create"; cat "$CLUSTER_TMP/out"; }
sleep 1 # (the definition reaches every node)

out=$(kv 2 bk mput a 2000 1000 7 2>&1) && [ "$out" = "mput a: 2000 of 2000 stored" ] &&
	out=$(kv 3 bk mget a 2000 7 2>&1) && [ "$out" = "mget a: 2000 hits of 2000, all correct" ] &&
	ok "2000 values of 1000 bytes put from h2, got from h3" || not_ok "mput/mget a: $out"
kv 2 bk put big 3000000 11 >/dev/null 2>&1 && kv 4 bk get big 11 >/dev/null 2>&1 &&
	ok "a 3 MB value put from h2 (its copy in pieces), got on h4" || not_ok "big value"
# removed_back I: how many of a5..a20 (removed) host I finds.
removed_back() { local k n=0; for k in $(seq 5 20); do kv "$1" bk exists "a$k" >/dev/null 2>&1 && n=$((n + 1)); done; echo $n; }
gone=0
for k in $(seq 5 20); do kv 3 bk remove "a$k" >/dev/null 2>&1 && gone=$((gone + 1)); done
[ $gone = 16 ] && [ "$(removed_back 2)" = 0 ] && ok "a5..a20 removed on h3, gone for h2" || not_ok "remove a5..a20"

entries=$(pctl 2 --json kv stats bk | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["entries"])')
used=0 backed=0
for i in 1 2 3 4; do
	used=$((used + $(pool_kv_shard "$i" store_used)))
	[ "$(pool_kv_shard "$i" backed)" -gt 0 ] && backed=$((backed + 1))
done
[ "$entries" = 1985 ] && [ "$used" -ge $((2 * (1984 * 1000 + 3000000))) ] && [ $backed = 4 ] &&
	ok "kv stats: 1985 entries (copies not counted); the four hold $used bytes, each value twice" ||
	not_ok "stats: $entries entries, $used bytes used, $backed nodes back shards"
pool_kv_settled 20 1 2 3 4 && ok "every shard's backup holds it whole" || not_ok "shards not backed whole"

# Clients of all four nodes put at once: each owner holds its answers to
# the others' puts until its backups have them, and none waits on another
# in a cycle (the backups' calls go on links of their own).
for i in 1 2 3 4; do
	kv "$i" bk mput "c$i-" 3000 1000 $((40 + i)) >"$CLUSTER_TMP/conc$i" 2>&1 &
	kv "$i" bk mput "d$i-" 40 100000 $((50 + i)) >"$CLUSTER_TMP/conl$i" 2>&1 &
done
wait
stored=0
for i in 1 2 3 4; do
	grep -qx "mput c$i-: 3000 of 3000 stored" "$CLUSTER_TMP/conc$i" && stored=$((stored + 1))
	grep -qx "mput d$i-: 40 of 40 stored" "$CLUSTER_TMP/conl$i" && stored=$((stored + 1))
done
[ $stored = 8 ] && ok "4 nodes' clients put 3000 small and 40 values of 100 kB each at once: all stored" ||
	{ not_ok "concurrent puts: $stored of 8 batches stored"; cat "$CLUSTER_TMP"/con[cl][1-4]; }

# A client of h2 puts batches of 100 values while h4, an owner of about a
# quarter of the shards, is SIGKILLed, and goes on until 2 s after h4 was
# declared dead: a batch it was told was stored is stored on two nodes, so
# none of it is lost; while h4 is not declared dead yet, puts of its shards
# fail (retryable), after that they go to the new owners.
: >"$CLUSTER_TMP/acked"
(
	b=0
	while [ ! -e "$CLUSTER_TMP/stop" ] && [ $b -lt 400 ]; do
		out=$(kv 2 bk mput "w$b-" 100 2000 "$b" 2>&1)
		if [ "$out" = "mput w$b-: 100 of 100 stored" ]; then
			echo "$b" >>"$CLUSTER_TMP/acked"
		else
			echo "$b $out" >>"$CLUSTER_TMP/refused"
			sleep 0.1
		fi
		b=$((b + 1))
	done
) &
writer=$!
for _ in $(seq 200); do [ "$(wc -l <"$CLUSTER_TMP/acked")" -ge 10 ] && break; sleep 0.05; done
before=$(wc -l <"$CLUSTER_TMP/acked")
pool_node_kill 4
pool_wait_state 1 h4 dead 10 || not_ok "h4 declared dead"
sleep 2
touch "$CLUSTER_TMP/stop"
wait $writer
acked=$(wc -l <"$CLUSTER_TMP/acked")
sed 's/^/# refused: /' "$CLUSTER_TMP/refused" | cut -c1-160 | tail -5
# read_back I: every acknowledged batch, a, c, d and big from host I; the batches that fail.
read_back() {
	local b bad=""
	for b in $(cat "$CLUSTER_TMP/acked"); do
		out=$(kv "$1" bk mget "w$b-" 100 "$b" 2>&1)
		[ "$out" = "mget w$b-: 100 hits of 100, all correct" ] || bad="$bad $b($out)"
	done
	out=$(kv "$1" bk mget a 2000 7 2>&1)
	[ "$out" = "mget a: 1984 hits of 2000, all correct" ] || bad="$bad a($out)"
	for b in 1 2 3 4; do
		out=$(kv "$1" bk mget "c$b-" 3000 $((40 + b)) 2>&1)
		[ "$out" = "mget c$b-: 3000 hits of 3000, all correct" ] || bad="$bad c$b($out)"
		out=$(kv "$1" bk mget "d$b-" 40 $((50 + b)) 2>&1)
		[ "$out" = "mget d$b-: 40 hits of 40, all correct" ] || bad="$bad d$b($out)"
	done
	kv "$1" bk get big 11 >/dev/null 2>&1 || bad="$bad big"
	[ "$(removed_back "$1")" = 0 ] || bad="$bad removed-back($(removed_back "$1"))"
	echo "$bad"
}
bad=$(read_back 3)
[ "$acked" -gt "$before" ] && [ -z "$bad" ] &&
	ok "h4 killed while h2 put: all $acked acknowledged batches ($before before the kill), a (1984) and the 3 MB value read back on h3; a5..a20 still removed" ||
	{ not_ok "after h4's death ($acked acknowledged, $before before):$bad"; cat "$CLUSTER_TMP/refused"; }

# The new owners copy their shards to their new backups; then h3 dies too.
pool_kv_settled 30 1 2 3 && ok "the three left copied the shards they gained to their new backups" ||
	not_ok "the three left: shards not backed whole ($(pool_kv_shard 1 unbacked) $(pool_kv_shard 2 unbacked) $(pool_kv_shard 3 unbacked))"
pool_node_kill 3
pool_wait_state 1 h3 dead 10 || not_ok "h3 declared dead"
sleep 1
bad=$(read_back 2)
[ -z "$bad" ] && ok "h3 killed next: every value is still read back on h2, none lost" ||
	not_ok "after h3's death:$bad"
# Both back: they take their shards from the owners that had them (which
# keep them when they back them now), and back shards again; then h2 dies
# and nothing is lost either.
pool_node_start 3
pool_node_start 4
pool_wait_state 1 h3 up 20 && pool_wait_state 1 h4 up 20 || not_ok "h3 and h4 up again"
pool_kv_settled 40 1 2 3 4 && ok "h3 and h4 back: the shards moved to them and every shard is backed whole again" ||
	not_ok "moves and copies not settled"
bad=$(read_back 4)
[ -z "$bad" ] && [ "$(pool_kv_shard 4 keys_in)" -gt 0 ] && [ "$(pool_kv_shard 4 keys_lost)" = 0 ] &&
	ok "h4 took $(pool_kv_shard 4 keys_in) keys of its shards; every value read back on h4" ||
	not_ok "after h3 and h4 came back:$bad (h4: $(pool_kv_shard 4 keys_in) in, $(pool_kv_shard 4 keys_lost) lost)"
pool_node_kill 2
pool_wait_state 1 h2 dead 10 || not_ok "h2 declared dead"
sleep 1
bad=$(read_back 3)
[ -z "$bad" ] && ok "h2 killed then: every value still read back on h3" || not_ok "after h2's death:$bad"
missed=$(pool_kv_shard 1 backup_missed) sent=$(pool_kv_shard 1 backup_keys)
[ "$sent" -gt 0 ] && ok "h1 sent $sent change(s) to backups ($missed not taken, to the dead)" ||
	not_ok "h1 sent $sent changes"

# A hand-over, a backup call, a RESP command of a sharded database, a
# report of a namespace's use or a keeper's part is a node's, on the link
# between poolds: sent on the control socket, root's or nobody's, it is
# refused.
HOSTILE="$top_builddir/tests/tools/pool-hostile"
out=$(cluster_exec 3 "$HOSTILE" "$(pool_sock 3)" --node-calls bk 2>&1) &&
	[ "$(grep -c '^refused: ' <<<"$out")" = 5 ] && grep -q "shard's owner only" <<<"$out" &&
	grep -q "asked only by other nodes" <<<"$out" &&
	! kv 3 bk exists stolen >/dev/null 2>&1 && kv 3 bk exists a100 >/dev/null 2>&1 &&
	ok "a hand-over, a backup copy, a RESP command, a use report and a part sent by root on h3's control socket: refused, nothing changed" ||
	not_ok "root's node calls: $out"
if have_nobody "$HOSTILE"; then
	chmod 0755 "$(cluster_dir 3)" "$(cluster_dir 3)/run" "$CLUSTER_TMP"
	chmod 0666 "$(pool_sock 3)"
	out=$(cluster_exec 3 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$HOSTILE" "$(pool_sock 3)" --node-calls bk 2>&1) &&
		[ "$(grep -c '^refused: ' <<<"$out")" = 5 ] &&
		ok "... and by uid nobody: refused" || not_ok "nobody's node calls: $out"
fi
pctl 3 status >/dev/null 2>&1 && ok "h3's poold still answers" || not_ok "h3 after the node calls"
finish

#!/bin/bash
# pool-bench kv-backup: what a sharded KV namespace's second copy costs and
# how fast it is made again, on a 4-node cluster (network namespaces,
# checked links over TCP). KEYS values of SIZE bytes are put from one node
# into a sharded namespace of one replica and into one of 2 replicas (each
# put answered once its shard's backup has it): the rate of each. Then a
# node is SIGKILLed: the time until it is declared dead (the heartbeat
# window, when its shards' backups take them over), and from then until
# every shard is backed whole again (the new owners copy their shards to
# their new backups), the keys copied and the rate; every value is then
# read back (pool-kv mget), which is the baseline rate over the same links.
#   tests/bench/pool-bench kv-backup [BUILDDIR]
#   env: BACKUP_KEYS (60000), BACKUP_SIZE (4096)
. "$(dirname "$0")/kvcluster.sh"
keys=${BACKUP_KEYS:-60000} size=${BACKUP_SIZE:-4096}
shard() {
	pctl "$1" --json status 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["kv_shards"].get(sys.argv[1], 0))' "$2" 2>/dev/null || echo 1
}
# whole I...: until none of hosts I... has a shard its backup does not hold whole.
whole() {
	local i n
	while :; do
		n=0
		for i in "$@"; do n=$((n + $(shard "$i" unbacked))); done
		[ $n = 0 ] && return
		sleep 0.05
	done
}
sent() { local i s=0; for i in "$@"; do s=$((s + $(shard "$i" backup_keys))); done; echo $s; }
# put NS: every value into NS from h2, in batches of 4,096; the ms it took.
put() {
	local at n t0=$(now_ms)
	for ((at = 0; at < keys; at += 4096)); do
		n=$((keys - at < 4096 ? keys - at : 4096))
		kv 2 "$1" mput "k$at-" "$n" "$size" 7 >/dev/null || { echo "# put $1 k$at- failed" >&2; exit 1; }
	done
	echo $(($(now_ms) - t0))
}

# Memory for shards: each node a third of both namespaces' values, twice
# (its own and the copies it backs), once three are left.
mem=$(((keys * (size + 512) + (64 << 20)) >> 20))
POOL_OPTS="-o kv.shard_size=${mem}M"
pool_cluster_start 4 || { pool_cluster_logs; exit 1; }
pctl 1 kv create one $((mem * 2))M sharded >/dev/null || exit 1
pctl 1 kv create two $((mem * 2))M sharded replicas=2 >/dev/null || exit 1
sleep 1

echo "## A sharded namespace's second copy: poold $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null), $keys keys of $size bytes, 4 nodes"
ms=$(put one)
printf '%-34s ' "put, 1 replica (from h2)"
rate "$keys" $((keys * size)) "$ms"
ms=$(put two)
printf '%-34s ' "put, 2 replicas (from h2)"
rate "$keys" $((keys * size)) "$ms"
# A namespace of 2 replicas a quarter of the values' size: most puts evict
# a value at its owner, whose removal then goes to the backup too.
pctl 1 kv create full $(((keys * size / 4) >> 20))M sharded replicas=2 >/dev/null || exit 1
sleep 1
ms=$(put full)
printf '%-34s ' "put, 2 replicas, full (evicting)"
rate "$keys" $((keys * size)) "$ms"
echo "# full: $(pctl 2 --json kv stats full | python3 -c 'import json, sys; print(json.load(sys.stdin)["namespaces"][0]["evictions"])') evictions, each also removed at its backup"
pctl 1 kv drop full >/dev/null
whole 1 2 3 4

s0=$(sent 1 2 3)
t0=$(now_ms)
pool_node_kill 4
pool_wait_state 1 h4 dead 20 >/dev/null || exit 1
dead=$(now_ms)
whole 1 2 3
ms=$(($(now_ms) - dead))
copied=$(($(sent 1 2 3) - s0))
echo "# h4 SIGKILLed: declared dead after $((dead - t0)) ms; its shards served by their backups from then"
printf '%-34s ' "copies made again after the death"
rate "$copied" $((copied * size)) "$ms"

t0=$(now_ms)
for ((at = 0; at < keys; at += 4096)); do
	n=$((keys - at < 4096 ? keys - at : 4096))
	kv 2 two mget "k$at-" "$n" 7 | grep -q "^mget k$at-: $n hits of $n, all correct$" || echo "# mget k$at- incomplete"
done
ms=$(($(now_ms) - t0))
printf '%-34s ' "baseline: client mget, all (h2)"
rate "$keys" $((keys * size)) "$ms"

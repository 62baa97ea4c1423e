/*
 * daemon/member/shardmap.h - the KV index's shards and their owners: a key's shard
 * is fixed by its namespace and its bytes; a shard's owner is the node that
 * scores highest for it among the owners (rendezvous hashing), so a node
 * that joins takes about 1/N of the shards, each from one other node, and
 * one that leaves gives up only its own.
 */
#ifndef POOLD_KVSHARD_H
#define POOLD_KVSHARD_H

#include <stddef.h>
#include <stdint.h>

#define KV_SHARDS 1024 /* fixed for the cluster's life: a shard is the unit that moves */

struct kv_shard_map {
	uint32_t owner[KV_SHARDS]; /* each shard's node id (undefined with no owners) */
	/* the next in each shard's order (0: a single owner): where its backup copy lives */
	uint32_t second[KV_SHARDS];
	uint32_t *owners; /* the owners' node ids, ascending */
	size_t nowners;
	uint64_t digest; /* of owner[]: two maps with the same owners agree on it */
};

/* The shard of a key of namespace ns (of its {hash tag} only, when it has one). */
uint32_t kv_shard_of(const char *ns, const void *key, size_t klen);

/*
 * Make ids (n of them, in any order, repeats allowed) the map's owners,
 * moving only the shards whose owner left or that a new owner scores
 * higher for. The number of shards that changed owner, or -ENOMEM (the map
 * is then as it was).
 */
long kv_shard_map_set(struct kv_shard_map *map, const uint32_t *ids, size_t n);

/*
 * The id of ids[0..n) (distinct, not 0) that scores k-th highest for
 * shard (0: the one that owns it), or 0 when there are not so many.
 */
uint32_t kv_shard_rank(uint32_t shard, const uint32_t *ids, size_t n, size_t k);

/* The shards node id owns. */
uint32_t kv_shard_map_owned(const struct kv_shard_map *map, uint32_t id);

/* Free what the map holds (it is then empty, and may be set again). */
void kv_shard_map_clear(struct kv_shard_map *map);

#endif

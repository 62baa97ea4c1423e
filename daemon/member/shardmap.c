/*
 * daemon/member/shardmap.c - the KV index's shards and their owners (rendezvous
 * hashing over the owners' node ids).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/member/shardmap.h"
#include "daemon/member/member.h"

/*
 * A key's shard hash is seeded apart from the index's bucket hash (the
 * key's XXH3 with no seed): an owner of a quarter of the shards would
 * otherwise hold keys whose low bits are alike, and fill a quarter of its
 * buckets.
 */
#define KV_SHARD_SEED 0x6b7673686172640aull

/*
 * The bytes of a key its shard is chosen by: its hash tag, those between
 * its first '{' and the first '}' after it when there are some, as Redis
 * Cluster does (so that "{user1}.cart" and "{user1}.seen" share an owner
 * and a transaction or MSETNX may take both); else the whole key.
 */
static const void *kv_shard_tag(const void *key, size_t klen, size_t *ret_len)
{
	const uint8_t *open = memchr(key, '{', klen), *close;

	*ret_len = klen;
	if (open == NULL)
		return key;
	close = memchr(open + 1, '}', klen - (size_t)(open + 1 - (const uint8_t *)key));
	if (close == NULL || close == open + 1)
		return key;
	*ret_len = (size_t)(close - open - 1);
	return open + 1;
}

uint32_t kv_shard_of(const char *ns, const void *key, size_t klen)
{
	uint64_t seed = XXH3_64bits_withSeed(ns, strlen(ns), KV_SHARD_SEED);
	size_t len;
	const void *tag = kv_shard_tag(key, klen, &len);

	return (uint32_t)(XXH3_64bits_withSeed(tag, len, seed) % KV_SHARDS);
}

/*
 * How much node id wants shard (splitmix64 of the pair): a bijection of
 * the pair, so no two nodes tie, and the same on every host.
 */
static uint64_t kv_shard_score(uint32_t shard, uint32_t id)
{
	uint64_t x = ((uint64_t)shard << 32 | id) + 0x9e3779b97f4a7c15ull;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int kv_shard_cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool kv_shard_has(const uint32_t *ids, size_t n, uint32_t id)
{
	return n > 0 && bsearch(&id, ids, n, sizeof(*ids), kv_shard_cmp_id) != NULL;
}

/*
 * Put id, scoring sc for shard, in the shard's top two (*first, *second,
 * scores top[0], top[1]; 0: none yet).
 */
static void kv_shard_rank2(uint32_t shard, uint32_t id, uint32_t *first, uint32_t *second,
			   uint64_t top[2])
{
	uint64_t sc = kv_shard_score(shard, id);

	if (id == *first || id == *second)
		return;
	if (*first == 0 || sc > top[0]) {
		*second = *first;
		top[1] = top[0];
		*first = id;
		top[0] = sc;
	} else if (*second == 0 || sc > top[1]) {
		*second = id;
		top[1] = sc;
	}
}

/* The two highest scoring of ids[0..n) for shard (0 where there are fewer). */
static void kv_shard_best(uint32_t shard, const uint32_t *ids, size_t n, uint32_t *first,
			  uint32_t *second)
{
	uint64_t top[2] = {0, 0};
	size_t i;

	*first = *second = 0;
	for (i = 0; i < n; i++)
		kv_shard_rank2(shard, ids[i], first, second, top);
}

long kv_shard_map_set(struct kv_shard_map *map, const uint32_t *ids, size_t n)
{
	uint32_t *set = malloc((n ? n : 1) * sizeof(*set)), *added;
	size_t m = 0, nadded = 0, i;
	uint32_t s;
	long moved = 0;

	if (set == NULL)
		return -ENOMEM;
	if (n > 0)
		memcpy(set, ids, n * sizeof(*set));
	qsort(set, n, sizeof(*set), kv_shard_cmp_id);
	for (i = 0; i < n; i++)
		if (m == 0 || set[m - 1] != set[i])
			set[m++] = set[i];
	/* The new owners, each scored once a shard against the shard's owner. */
	added = malloc((m ? m : 1) * sizeof(*added));
	if (added == NULL) {
		free(set);
		return -ENOMEM;
	}
	for (i = 0; i < m; i++)
		if (!kv_shard_has(map->owners, map->nowners, set[i]))
			added[nadded++] = set[i];
	for (s = 0; s < KV_SHARDS && m > 0; s++) {
		uint32_t cur = map->owner[s], first = cur, second = map->second[s];

		if (map->nowners == 0 || !kv_shard_has(set, m, cur) ||
		    (second != 0 && !kv_shard_has(set, m, second)) || (second == 0 && m > 1)) {
			/* its owner or the next left (or there were none): ranked again */
			kv_shard_best(s, set, m, &first, &second);
		} else {
			uint64_t top[2] = {kv_shard_score(s, cur),
					   second != 0 ? kv_shard_score(s, second) : 0};

			for (i = 0; i < nadded; i++)
				kv_shard_rank2(s, added[i], &first, &second, top);
		}
		if (map->nowners == 0 || first != cur)
			moved++;
		map->owner[s] = first;
		map->second[s] = second;
	}
	if (m == 0) {
		moved = map->nowners > 0 ? KV_SHARDS : 0;
		memset(map->owner, 0, sizeof(map->owner));
		memset(map->second, 0, sizeof(map->second));
	}
	free(added);
	free(map->owners);
	map->owners = set;
	map->nowners = m;
	map->digest = m > 0 ? XXH3_64bits(map->owner, sizeof(map->owner)) : 0;
	return moved;
}

uint32_t kv_shard_map_owned(const struct kv_shard_map *map, uint32_t id)
{
	uint32_t s, n = 0;

	for (s = 0; s < KV_SHARDS && map->nowners > 0; s++)
		n += map->owner[s] == id;
	return n;
}

void kv_shard_map_clear(struct kv_shard_map *map)
{
	free(map->owners);
	memset(map, 0, sizeof(*map));
}

uint32_t kv_shard_rank(uint32_t shard, const uint32_t *ids, size_t n, size_t k)
{
	uint64_t below = UINT64_MAX, top, sc;
	uint32_t best = 0;
	size_t i, r;

	for (r = 0; r <= k; r++) {
		best = 0;
		top = 0;
		for (i = 0; i < n; i++)
			if ((sc = kv_shard_score(shard, ids[i])) < below &&
			    (best == 0 || sc > top)) {
				top = sc;
				best = ids[i];
			}
		if (best == 0)
			return 0;
		below = top;
	}
	return best;
}

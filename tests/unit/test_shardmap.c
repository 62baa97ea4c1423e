/* tests/unit/test_shardmap.c - the KV index's shards and their owners (daemon/member/shardmap.c).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/member/shardmap.h"
#include "tests/unit/unit.h"

static void test_spread(void)
{
	static const uint32_t ids[] = {1, 2, 3, 4};
	struct kv_shard_map map = {0};
	uint32_t many[64], total = 0, n, i;

	CU_ASSERT_EQUAL(kv_shard_map_set(&map, ids, 4), KV_SHARDS);
	for (i = 0; i < 4; i++) {
		n = kv_shard_map_owned(&map, ids[i]);
		CU_ASSERT(n >= KV_SHARDS / 4 - 64 && n <= KV_SHARDS / 4 + 64);
		total += n;
	}
	CU_ASSERT_EQUAL(total, KV_SHARDS);
	CU_ASSERT_EQUAL(kv_shard_map_owned(&map, 5), 0);
	for (i = 0; i < 64; i++)
		many[i] = 1000 + 7 * i;
	kv_shard_map_set(&map, many, 64);
	for (i = 0, total = 0; i < 64; i++) {
		n = kv_shard_map_owned(&map, many[i]);
		CU_ASSERT(n >= 2 && n <= 40);
		total += n;
	}
	CU_ASSERT_EQUAL(total, KV_SHARDS);
	kv_shard_map_clear(&map);
}

/* A joining owner takes shards only for itself; the others keep theirs. */
static void test_join_moves_a_share(void)
{
	static const uint32_t four[] = {10, 20, 30, 40}, five[] = {10, 20, 30, 40, 50};
	struct kv_shard_map map = {0};
	uint32_t before[KV_SHARDS], s, changed = 0;
	long moved;

	kv_shard_map_set(&map, four, 4);
	memcpy(before, map.owner, sizeof(before));
	moved = kv_shard_map_set(&map, five, 5);
	for (s = 0; s < KV_SHARDS; s++)
		if (map.owner[s] != before[s]) {
			changed++;
			CU_ASSERT_EQUAL(map.owner[s], 50);
		}
	CU_ASSERT_EQUAL(moved, changed);
	CU_ASSERT_EQUAL(changed, kv_shard_map_owned(&map, 50));
	CU_ASSERT(changed >= KV_SHARDS / 5 - 64 && changed <= KV_SHARDS / 5 + 64);
	kv_shard_map_clear(&map);
}

/* A leaving owner's shards go to the others; no other shard moves. */
static void test_leave_moves_its_own(void)
{
	static const uint32_t five[] = {10, 20, 30, 40, 50}, four[] = {10, 20, 40, 50};
	struct kv_shard_map map = {0};
	uint32_t before[KV_SHARDS], s, had;
	long moved;

	kv_shard_map_set(&map, five, 5);
	memcpy(before, map.owner, sizeof(before));
	had = kv_shard_map_owned(&map, 30);
	moved = kv_shard_map_set(&map, four, 4);
	CU_ASSERT_EQUAL(moved, had);
	CU_ASSERT_EQUAL(kv_shard_map_owned(&map, 30), 0);
	for (s = 0; s < KV_SHARDS; s++)
		if (before[s] != 30)
			CU_ASSERT_EQUAL(map.owner[s], before[s]);
	kv_shard_map_clear(&map);
}

/*
 * Every host gets the same map from the same owners, whatever the order it
 * learned them in and the changes on the way: nodes work their map out
 * from their own copy of the member table.
 */
static void test_same_owners_same_map(void)
{
	static const uint32_t all[] = {7, 3, 9, 3, 12, 1}, other[] = {12, 1, 9, 7, 3};
	struct kv_shard_map a = {0}, b = {0};
	uint32_t step[6];
	size_t i;

	kv_shard_map_set(&a, all, 6);
	for (i = 0; i < 5; i++) { /* b: one at a time, with one that comes and goes */
		step[i] = other[i];
		kv_shard_map_set(&b, step, i + 1);
		if (i == 2) {
			step[3] = 99;
			kv_shard_map_set(&b, step, 4);
		}
	}
	CU_ASSERT_EQUAL(a.nowners, 5);
	CU_ASSERT_EQUAL(b.nowners, 5);
	CU_ASSERT_EQUAL(memcmp(a.owner, b.owner, sizeof(a.owner)), 0);
	CU_ASSERT_EQUAL(a.digest, b.digest);
	kv_shard_map_set(&b, all, 4); /* 7, 3, 9, 3: other owners, another digest */
	CU_ASSERT_NOT_EQUAL(a.digest, b.digest);
	kv_shard_map_clear(&a);
	kv_shard_map_clear(&b);
}

static void test_no_owners(void)
{
	static const uint32_t two[] = {1, 2};
	struct kv_shard_map map = {0};

	CU_ASSERT_EQUAL(kv_shard_map_set(&map, NULL, 0), 0);
	CU_ASSERT_EQUAL(map.digest, 0);
	kv_shard_map_set(&map, two, 2);
	CU_ASSERT_EQUAL(kv_shard_map_set(&map, NULL, 0), KV_SHARDS);
	CU_ASSERT_EQUAL(kv_shard_map_owned(&map, 1) + kv_shard_map_owned(&map, 2), 0);
	CU_ASSERT_EQUAL(map.digest, 0);
	CU_ASSERT_EQUAL(kv_shard_map_set(&map, two, 2), KV_SHARDS);
	kv_shard_map_clear(&map);
}

/*
 * Keys spread over every shard, apart in each namespace, and an owner's
 * keys are not alike in the bits the index's buckets use (the key's XXH3).
 */
static void test_keys_spread(void)
{
	static const uint32_t ids[] = {1, 2, 3, 4};
	static uint32_t per_shard[KV_SHARDS];
	struct kv_shard_map map = {0};
	static bool bucket[KV_SHARDS];
	uint32_t buckets = 0, same_ns_b = 0, s, i;
	char key[16];

	kv_shard_map_set(&map, ids, 4);
	for (i = 0; i < 200000; i++) {
		snprintf(key, sizeof(key), "k%08u", i);
		s = kv_shard_of("a", key, strlen(key));
		CU_ASSERT_FATAL(s < KV_SHARDS);
		per_shard[s]++;
		same_ns_b += kv_shard_of("b", key, strlen(key)) == s;
		if (map.owner[s] == 1)
			bucket[XXH3_64bits(key, strlen(key)) % KV_SHARDS] = true;
	}
	for (s = 0; s < KV_SHARDS; s++)
		CU_ASSERT(per_shard[s] > 100 && per_shard[s] < 300); /* about 195 each */
	CU_ASSERT(same_ns_b < 1000);				     /* about 1 in 1024 */
	/* Owner 1's 50,000 keys fill all of 1,024 buckets, not its quarter of them. */
	for (i = 0; i < KV_SHARDS; i++)
		buckets += bucket[i];
	CU_ASSERT(buckets > KV_SHARDS - 8);
	CU_ASSERT_EQUAL(kv_shard_of("a", "x", 1), kv_shard_of("a", "x", 1));
	kv_shard_map_clear(&map);
}

/* A key's {hash tag} chooses its shard, as in Redis Cluster; keys without one spread whole. */
static void test_hash_tags(void)
{
	static const char *const not_tags[] = {"{}x", "a{b", "}a{", "{", "ab}"};
	uint32_t same = 0, i;
	char a[32], b[32];
	size_t k;

	CU_ASSERT_EQUAL(kv_shard_of("a", "{user1}.cart", 12), kv_shard_of("a", "{user1}.seen", 12));
	CU_ASSERT_EQUAL(kv_shard_of("a", "{user1}.cart", 12), kv_shard_of("a", "user1", 5));
	/* the first '{' and the first '}' after it: "{a}{b}" is tag "a", "{{x}" is "{x" */
	CU_ASSERT_EQUAL(kv_shard_of("a", "{a}{b}", 6), kv_shard_of("a", "a", 1));
	CU_ASSERT_EQUAL(kv_shard_of("a", "{{x}", 4), kv_shard_of("a", "{x", 2));
	/* binary keys: the bytes between, NULs and all */
	CU_ASSERT_EQUAL(kv_shard_of("a", "\0{\0\1}\2", 6), kv_shard_of("a", "\0\1", 2));
	/* no tag (none, empty, not closed): the whole key, so these spread as any */
	for (k = 0; k < sizeof(not_tags) / sizeof(not_tags[0]); k++) {
		for (i = 0, same = 0; i < 1000; i++) {
			snprintf(a, sizeof(a), "%s%u", not_tags[k], i);
			snprintf(b, sizeof(b), "%s%u", not_tags[k], i + 1000);
			same += kv_shard_of("a", a, strlen(a)) == kv_shard_of("a", b, strlen(b));
		}
		CU_ASSERT(same < 20); /* about 1 in 1,024 */
	}
	/* a shared tag with different rests: one shard for all */
	for (i = 0, same = 0; i < 1000; i++) {
		snprintf(a, sizeof(a), "{t}%u", i);
		same += kv_shard_of("a", a, strlen(a)) == kv_shard_of("a", "t", 1);
	}
	CU_ASSERT_EQUAL(same, 1000);
}

/*
 * The rendezvous order of a shard: its owner first, then the owner it
 * would have without it, and so on (whom a new owner asks for a shard's
 * keys when the first it asked had none).
 */
static void test_rank(void)
{
	static const uint32_t ids[] = {3, 9, 4, 17, 1};
	struct kv_shard_map map = {0}, less = {0};
	uint32_t s, k, r, first, rest[4];
	size_t n;

	kv_shard_map_set(&map, ids, 5);
	for (s = 0; s < KV_SHARDS; s++) {
		bool seen[18] = {false};

		first = kv_shard_rank(s, ids, 5, 0);
		CU_ASSERT_EQUAL(first, map.owner[s]);
		for (k = 0; k < 5; k++) {
			r = kv_shard_rank(s, ids, 5, k);
			CU_ASSERT_FATAL(r > 0 && r < 18);
			CU_ASSERT(!seen[r]); /* each member once */
			seen[r] = true;
		}
		CU_ASSERT_EQUAL(kv_shard_rank(s, ids, 5, 5), 0);
		for (k = 0, n = 0; k < 5; k++)
			if (ids[k] != first)
				rest[n++] = ids[k];
		kv_shard_map_set(&less, rest, n);
		CU_ASSERT_EQUAL(less.owner[s], kv_shard_rank(s, ids, 5, 1));
	}
	CU_ASSERT_EQUAL(kv_shard_rank(0, ids, 0, 0), 0);
	kv_shard_map_clear(&map);
	kv_shard_map_clear(&less);
}

/*
 * Each shard's second (its backup's place) is the next in its rendezvous
 * order, through joins and leaves made one change at a time, as a map
 * worked out at once has it; the owner's death makes the second its owner.
 */
static void test_second(void)
{
	static const uint32_t steps[][6] = {
	    {5},
	    {5, 2},
	    {5, 2, 8, 11},
	    {2, 8, 11},
	    {2, 8, 11, 30, 31},
	    {8, 30},
	    {8, 30, 5, 2, 11, 7},
	};
	static const size_t lens[] = {1, 2, 4, 3, 5, 2, 6};
	struct kv_shard_map map = {0}, once = {0}, after = {0};
	size_t i;
	uint32_t s, k, ids[6];

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CU_ASSERT_FATAL(kv_shard_map_set(&map, steps[i], lens[i]) >= 0);
		kv_shard_map_clear(&once);
		CU_ASSERT_FATAL(kv_shard_map_set(&once, steps[i], lens[i]) >= 0);
		for (s = 0; s < KV_SHARDS; s++) {
			CU_ASSERT_EQUAL(map.second[s], kv_shard_rank(s, steps[i], lens[i], 1));
			CU_ASSERT_EQUAL(map.second[s], once.second[s]);
			CU_ASSERT_NOT_EQUAL(map.second[s], map.owner[s]);
		}
	}
	/* The owner of shard 0 dies: its second owns it. */
	for (i = 0, k = 0; i < lens[6]; i++)
		if (steps[6][i] != map.owner[0])
			ids[k++] = steps[6][i];
	CU_ASSERT_FATAL(kv_shard_map_set(&after, steps[6], lens[6]) >= 0);
	CU_ASSERT_FATAL(kv_shard_map_set(&after, ids, k) >= 0);
	CU_ASSERT_EQUAL(after.owner[0], map.second[0]);
	kv_shard_map_clear(&map);
	kv_shard_map_clear(&once);
	kv_shard_map_clear(&after);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"shards spread over the owners", test_spread},
	    {"a joining owner takes about 1/N, for itself alone", test_join_moves_a_share},
	    {"a leaving owner's shards alone move", test_leave_moves_its_own},
	    {"the same owners make the same map", test_same_owners_same_map},
	    {"no owners", test_no_owners},
	    {"keys spread over the shards", test_keys_spread},
	    {"a key's hash tag chooses its shard", test_hash_tags},
	    {"a shard's rendezvous order", test_rank},
	    {"each shard's second, through changes", test_second},
	    {NULL, NULL},
	};
	return unit_run("kvshard", tests);
}

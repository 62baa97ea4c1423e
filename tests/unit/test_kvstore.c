/*
 * tests/unit/test_kvstore.c - the memory a node keeps for the values of
 * its KV shards (daemon/lend/kvstore.c) over an arena in memory: what it gives
 * out is reached only from where each allocation starts and only inside
 * it, through thousands of allocations freed in any order (the record's
 * deletions); freed memory is zeroed before it is given out again; a full
 * store says so.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/lend/lend.h"
#include "tests/unit/unit.h"

#define STORE (64u << 20)
#define NVALS 20000

static struct poold pd;
static struct poold_conf conf;

static void store_new(void)
{
	memset(&pd, 0, sizeof(pd));
	conf.kv_shard_size = STORE;
	pd.conf = &conf;
	pd.kv_arena = (struct arena){.id = KV_STORE_ARENA, .tier = TIER_DRAM, .fd = -1};
	pd.kv_arena.base = calloc(1, STORE);
	pd.kv_arena.size = pd.kv_arena.lent = pd.kv_arena.backed = STORE;
	CU_ASSERT_FATAL(pd.kv_arena.base != NULL);
	CU_ASSERT_EQUAL_FATAL(kvstore_open(&pd), 0);
	CU_ASSERT_FATAL(pd.kvstore != NULL);
}

static void store_free(void)
{
	kvstore_close(&pd);
	free(pd.kv_arena.base);
}

static void test_reach(void)
{
	static uint64_t off[NVALS], len[NVALS];
	uint64_t size, used, sum = 0, x = 12345;
	void *p;
	size_t i, bad = 0;

	store_new();
	for (i = 0; i < NVALS; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		CU_ASSERT_EQUAL_FATAL(kvstore_alloc(&pd, 64 + (x >> 33) % 3000, &off[i], &len[i]),
				      0);
		sum += len[i];
	}
	kvstore_stats(&pd, &size, &used);
	CU_ASSERT_EQUAL(size, STORE);
	CU_ASSERT_EQUAL(used, sum);
	for (i = 0; i < NVALS; i++) {
		bad += kvstore_reach(&pd, off[i], 0, len[i], &p) != 0 ||
		       p != (char *)pd.kv_arena.base + off[i];
		bad += kvstore_reach(&pd, off[i], 1, len[i], &p) != -ERANGE;
		bad += kvstore_reach(&pd, off[i] + 8, 0, 8, &p) != -ENOENT;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* every other one freed, from both ends: the rest stay reachable */
	for (i = 0; i < NVALS / 2; i += 2) {
		kvstore_free(&pd, off[i], len[i]);
		kvstore_free(&pd, off[NVALS - 1 - i], len[NVALS - 1 - i]);
	}
	for (i = 0; i < NVALS; i++) {
		bool gone =
		    (i < NVALS / 2 && i % 2 == 0) || (i >= NVALS / 2 && (NVALS - 1 - i) % 2 == 0);

		bad += (kvstore_reach(&pd, off[i], 0, len[i], &p) == 0) == gone;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* a free of what was not given, or of another length, changes nothing */
	kvstore_free(&pd, off[1] + 64, 64);
	kvstore_free(&pd, off[1], len[1] + 1);
	CU_ASSERT_EQUAL(kvstore_reach(&pd, off[1], 0, len[1], &p), 0);
	store_free();
}

static void test_zeroed_and_full(void)
{
	uint64_t off, len, off2, len2, n = 0;
	size_t i;
	void *p;

	store_new();
	CU_ASSERT_EQUAL_FATAL(kvstore_alloc(&pd, 4000, &off, &len), 0);
	CU_ASSERT_EQUAL_FATAL(kvstore_reach(&pd, off, 0, len, &p), 0);
	memset(p, 0xaa, len);
	kvstore_free(&pd, off, len);
	CU_ASSERT_EQUAL(kvstore_reach(&pd, off, 0, len, &p), -ENOENT);
	for (i = 0; i < len; i++)
		n += ((uint8_t *)pd.kv_arena.base)[off + i] != 0;
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL_FATAL(kvstore_alloc(&pd, 4000, &off2, &len2), 0);
	CU_ASSERT_EQUAL(kvstore_alloc(&pd, STORE, &off, &len), -ENOSPC);
	store_free();
	/* none kept: nothing to give */
	memset(&pd, 0, sizeof(pd));
	pd.conf = &conf;
	CU_ASSERT_EQUAL(kvstore_open(&pd), 0);
	CU_ASSERT_EQUAL(kvstore_alloc(&pd, 64, &off, &len), -ENODEV);
	CU_ASSERT_EQUAL(kvstore_reach(&pd, 0, 0, 8, &p), -ENOENT);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"reached only inside what it gave, through frees in any order", test_reach},
	    {"freed memory zeroed; a full store says so", test_zeroed_and_full},
	    {NULL, NULL},
	};

	return unit_run("kvstore", tests);
}

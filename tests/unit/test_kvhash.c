/*
 * tests/unit/test_kvhash.c - pool_kv_hash_chain(): fixed test vectors, so
 * other languages can check their implementation against ours (they are
 * also in pool_kv_put(3)).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "libpool/libpool.h"
#include "tests/unit/unit.h"

/*
 * Checked independently with the xxhsum tool (xxhsum -H2 over the bytes:
 * 16 zero bytes, the salt, tokens 0..3 as little-endian uint32; block 1
 * chains on block 0's hash).
 */
#define VECTOR_BLOCK0 "361d40d624bc45847cb55c04878d9596"
#define VECTOR_BLOCK1 "390d55d1f642cbe361c5f27bacda5d77"
#define VECTOR_SALT0 "ccebd38f562c105fb8b74b41ea50291b"

static void hex(const uint8_t *h, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

/* tokens 0..7, 4 per block, no parent, no salt; then the same with salt "m1". */
static void test_vectors(void)
{
	static const uint32_t tokens[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	uint8_t h[3 * 16];
	char s[33];

	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 8, 4, NULL, NULL, 0, h, 3), 2);
	hex(h, s);
	CU_ASSERT_STRING_EQUAL(s, VECTOR_BLOCK0);
	hex(h + 16, s);
	CU_ASSERT_STRING_EQUAL(s, VECTOR_BLOCK1);
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 8, 4, NULL, "m1", 2, h, 3), 2);
	hex(h, s);
	CU_ASSERT_STRING_EQUAL(s, VECTOR_SALT0);
}

static void test_chaining(void)
{
	static const uint32_t tokens[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12};
	uint8_t all[3 * 16], tail[2 * 16];

	/* Hashing blocks 1-2 with block 0's hash as parent gives the same hashes. */
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 12, 4, NULL, NULL, 0, all, 3), 3);
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens + 4, 8, 4, all, NULL, 0, tail, 2), 2);
	CU_ASSERT(memcmp(all + 16, tail, 32) == 0);
	/* A different first token changes every later hash. */
	{
		uint32_t other[12];

		memcpy(other, tokens, sizeof(other));
		other[0] = 10;
		CU_ASSERT_EQUAL(pool_kv_hash_chain(other, 12, 4, NULL, NULL, 0, tail, 2), 2);
		CU_ASSERT(memcmp(all, tail, 16) != 0);
		CU_ASSERT(memcmp(all + 16, tail + 16, 16) != 0);
	}
}

static void test_partial_and_limits(void)
{
	static const uint32_t tokens[7] = {1, 2, 3, 4, 5, 6, 7};
	uint8_t h[4 * 16];

	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 7, 4, NULL, NULL, 0, h, 4),
			1); /* whole blocks */
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 7, 1, NULL, NULL, 0, h, 4), 4); /* max_hashes */
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 7, 0, NULL, NULL, 0, h, 4), -EINVAL);
	CU_ASSERT_EQUAL(pool_kv_hash_chain(NULL, 7, 4, NULL, NULL, 0, h, 4), -EINVAL);
	CU_ASSERT_EQUAL(pool_kv_hash_chain(tokens, 0, 4, NULL, NULL, 0, h, 4), 0);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"fixed vectors", test_vectors},
	    {"chaining", test_chaining},
	    {"partial blocks and limits", test_partial_and_limits},
	    {NULL, NULL},
	};
	return unit_run("kvhash", tests);
}

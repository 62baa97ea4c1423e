/* tests/unit/test_placement.c - the choice of a lender for a new extent. */
#include "config.h"

#include "daemon/util/placement.h"
#include "tests/unit/unit.h"

#define M (UINT64_C(1) << 20)
#define C(size, used, largest, usable)                                                             \
	{                                                                                          \
		(size) * M, (used)*M, (largest)*M, (usable)                                        \
	}

static void test_most_free(void)
{
	struct placement_candidate c[] = {C(256, 100, 156, true), C(256, 10, 246, true),
					  C(256, 50, 206, true)};

	CU_ASSERT_EQUAL(placement_choose(c, 3, 8 * M, 90), 1);
}

static void test_unusable_and_too_small(void)
{
	struct placement_candidate c[] = {C(256, 0, 256, false), C(256, 200, 20, true),
					  C(256, 100, 100, true)};

	/* The emptiest is down; the next has 56M free but no 32M extent. */
	CU_ASSERT_EQUAL(placement_choose(c, 3, 32 * M, 90), 2);
	CU_ASSERT_EQUAL(placement_choose(c, 3, 128 * M, 90), -1);
	CU_ASSERT_EQUAL(placement_choose(c, 0, 1, 90), -1);
}

static void test_watermark_first(void)
{
	/* A big lender at 93% has more free bytes than a small empty one. */
	struct placement_candidate c[] = {C(1024, 950, 74, true), C(64, 0, 64, true)};

	CU_ASSERT_EQUAL(placement_choose(c, 2, 16 * M, 90), 1);
	/* With a higher watermark the big one is under it again and has more room. */
	CU_ASSERT_EQUAL(placement_choose(c, 2, 16 * M, 99), 0);
	/* Over the watermark everywhere: still placed, on the one with most room. */
	CU_ASSERT_EQUAL(placement_choose(c, 2, 60 * M, 50), 0);
	/* Only the full one can take it. */
	CU_ASSERT_EQUAL(placement_choose(c, 2, 70 * M, 90), 0);
}

static void test_ties(void)
{
	struct placement_candidate c[] = {C(256, 0, 256, true), C(256, 0, 256, true)};

	CU_ASSERT_EQUAL(placement_choose(c, 2, 2 * M, 90), 0);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"most free space wins", test_most_free},
	    {"unusable and too small lenders", test_unusable_and_too_small},
	    {"watermark before free space", test_watermark_first},
	    {"ties go to the first", test_ties},
	    {NULL, NULL},
	};
	return unit_run("placement", tests);
}

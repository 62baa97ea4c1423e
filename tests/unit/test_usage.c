/* tests/unit/test_usage.c - per-uid charges for the quotas. */
#include "config.h"

#include "daemon/util/usage.h"
#include "tests/unit/unit.h"

static void test_charge_and_release(void)
{
	struct usage_table t = {0};

	CU_ASSERT_EQUAL(usage_charge(&t, 1000, 4096, 1), 0);
	CU_ASSERT_EQUAL(usage_charge(&t, 1000, 8192, 0), 0);
	CU_ASSERT_EQUAL(usage_of(&t, 1000).bytes, 12288);
	CU_ASSERT_EQUAL(usage_of(&t, 1000).regions, 1);
	CU_ASSERT_EQUAL(usage_of(&t, 0).bytes, 0);
	CU_ASSERT_EQUAL(usage_charge(&t, 1000, -4096, -1), 0);
	CU_ASSERT_EQUAL(usage_of(&t, 1000).bytes, 8192);
	CU_ASSERT_EQUAL(usage_of(&t, 1000).regions, 0);
	CU_ASSERT_EQUAL(usage_charge(&t, 1000, -8192, 0), 0);
	CU_ASSERT_EQUAL(t.n, 0); /* nothing held: no entry */
	usage_clear(&t);
}

static void test_never_below_zero(void)
{
	struct usage_table t = {0};

	CU_ASSERT_EQUAL(usage_charge(&t, 7, -100, -1), 0); /* never charged */
	CU_ASSERT_EQUAL(t.n, 0);
	CU_ASSERT_EQUAL(usage_charge(&t, 7, 100, 2), 0);
	CU_ASSERT_EQUAL(usage_charge(&t, 7, -500, -1), 0);
	CU_ASSERT_EQUAL(usage_of(&t, 7).bytes, 0);
	CU_ASSERT_EQUAL(usage_of(&t, 7).regions, 1);
	usage_clear(&t);
}

static void test_many_uids_sorted(void)
{
	struct usage_table t = {0};
	uint32_t uid;
	size_t i;

	for (uid = 0; uid < 1000; uid++) /* in a scrambled order */
		CU_ASSERT_EQUAL(usage_charge(&t, (uid * 7919) % 1000, (int64_t)uid + 1, 1), 0);
	CU_ASSERT_EQUAL(t.n, 1000);
	for (i = 1; i < t.n; i++)
		CU_ASSERT(t.v[i - 1].uid < t.v[i].uid);
	for (uid = 0; uid < 1000; uid++)
		CU_ASSERT_EQUAL(usage_of(&t, (uid * 7919) % 1000).bytes, uid + 1);
	for (uid = 0; uid < 1000; uid += 2)
		CU_ASSERT_EQUAL(usage_charge(&t, uid, -(int64_t)usage_of(&t, uid).bytes, -1), 0);
	CU_ASSERT_EQUAL(t.n, 500);
	CU_ASSERT_EQUAL(usage_of(&t, 999).regions, 1);
	CU_ASSERT_EQUAL(usage_of(&t, 998).regions, 0);
	usage_clear(&t);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"charge and release", test_charge_and_release},
	    {"never below zero", test_never_below_zero},
	    {"1000 uids in any order", test_many_uids_sorted},
	    {NULL, NULL},
	};
	return unit_run("usage", tests);
}

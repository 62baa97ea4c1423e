/* tests/unit/test_ledger.c - ledger reconciliation: what only one side holds. */
#include "config.h"

#include <stdlib.h>

#include "daemon/ledger.h"
#include "tests/unit/unit.h"

#define E(a, o, l, r)                                                                              \
	{                                                                                          \
		.arena = (a), .off = (o), .len = (l), .region = (r)                                \
	}

static void diff(struct ledger_extent *want, size_t nw, struct ledger_extent *have, size_t nh,
		 size_t want_missing, size_t want_orphans, struct ledger_extent **m,
		 struct ledger_extent **o)
{
	size_t nm = 99, no = 99;

	CU_ASSERT_EQUAL_FATAL(ledger_diff(want, nw, have, nh, m, &nm, o, &no), 0);
	CU_ASSERT_EQUAL(nm, want_missing);
	CU_ASSERT_EQUAL(no, want_orphans);
}

static void test_agree(void)
{
	struct ledger_extent want[] = {E(0, 4096, 4096, 7), E(0, 0, 4096, 3), E(1, 0, 2 << 20, 9)};
	struct ledger_extent have[] = {E(1, 0, 2 << 20, 9), E(0, 0, 4096, 3), E(0, 4096, 4096, 7)};
	struct ledger_extent *m, *o;

	diff(want, 3, have, 3, 0, 0, &m, &o);
	free(m);
	free(o);
}

static void test_missing_and_orphans(void)
{
	struct ledger_extent want[] = {E(0, 0, 4096, 1), E(0, 8192, 4096, 2), E(1, 0, 4096, 3)};
	struct ledger_extent have[] = {E(0, 0, 4096, 1), E(0, 65536, 4096, 5), E(2, 0, 4096, 3)};
	struct ledger_extent *m, *o;

	diff(want, 3, have, 3, 2, 2, &m, &o);
	CU_ASSERT_EQUAL(m[0].off, 8192);
	CU_ASSERT_EQUAL(m[0].region, 2);
	CU_ASSERT_EQUAL(m[1].arena, 1);
	CU_ASSERT_EQUAL(o[0].off, 65536);
	CU_ASSERT_EQUAL(o[1].arena, 2);
	free(m);
	free(o);
}

static void test_same_place_other_region(void)
{
	/* The lender thinks the extent belongs to another region: both sides differ. */
	struct ledger_extent want[] = {E(0, 0, 4096, 1)};
	struct ledger_extent have[] = {E(0, 0, 4096, 2)};
	struct ledger_extent *m, *o;

	diff(want, 1, have, 1, 1, 1, &m, &o);
	CU_ASSERT_EQUAL(m[0].region, 1);
	CU_ASSERT_EQUAL(o[0].region, 2);
	free(m);
	free(o);
}

static void test_empty_sides(void)
{
	struct ledger_extent one[] = {E(0, 0, 4096, 1), E(0, 4096, 4096, 1)};
	struct ledger_extent *m, *o;

	diff(NULL, 0, NULL, 0, 0, 0, &m, &o);
	free(m);
	free(o);
	diff(one, 2, NULL, 0, 2, 0, &m, &o); /* the lender lost its record */
	free(m);
	free(o);
	diff(NULL, 0, one, 2, 0, 2, &m, &o); /* the coordinator forgot them */
	free(m);
	free(o);
}

static void test_many(void)
{
	size_t n = 10000, i;
	struct ledger_extent *want = calloc(n, sizeof(*want)), *have = calloc(n, sizeof(*have));
	struct ledger_extent *m, *o;

	for (i = 0; i < n; i++) {
		want[i] = (struct ledger_extent)E(i % 3, (i / 3) * 4096, 4096, i);
		have[n - 1 - i] = want[i];
	}
	have[17].region = 999999; /* one differs */
	diff(want, n, have, n, 1, 1, &m, &o);
	free(m);
	free(o);
	free(want);
	free(have);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"records agree", test_agree},
	    {"missing and orphan extents", test_missing_and_orphans},
	    {"same place, other region", test_same_place_other_region},
	    {"empty sides", test_empty_sides},
	    {"10000 extents in any order", test_many},
	    {NULL, NULL},
	};
	return unit_run("ledger", tests);
}

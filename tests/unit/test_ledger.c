/* tests/unit/test_ledger.c - ledger reconciliation: what only one side holds. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/ledger.h"
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

static int cmp_place(const void *a, const void *b)
{
	const struct ledger_extent *x = a, *y = b;

	if (x->arena != y->arena)
		return x->arena < y->arena ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->region < y->region ? -1 : x->region > y->region;
}

/*
 * The radix sort orders as a comparison sort does: arenas and offsets of
 * every width, places shared by several extents, sizes either side of its
 * cut-over to qsort().
 */
static void test_sort(void)
{
	static const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 100000, 100000};
	size_t k, i;

	srandom(42);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		struct ledger_extent *got = calloc(n + 1, sizeof(*got)), *want;

		CU_ASSERT_PTR_NOT_NULL_FATAL(got);
		for (i = 0; i < n; i++) {
			uint64_t r = (uint64_t)random() << 31 | (uint64_t)random();

			got[i] = (struct ledger_extent)E(
			    k % 4 == 1 ? (uint32_t)random() : (uint32_t)(r % 3),
			    k % 3 == 0 ? r << (r % 40) : (r % 512) * 64,
			    64 + (uint64_t)random() % 4, (uint64_t)random() % 3);
		}
		want = calloc(n + 1, sizeof(*want));
		CU_ASSERT_PTR_NOT_NULL_FATAL(want);
		memcpy(want, got, n * sizeof(*got));
		if (n > 0)
			qsort(want, n, sizeof(*want), cmp_place);
		ledger_sort(got, n);
		for (i = 0; i < n && cmp_place(&got[i], &want[i]) == 0;)
			i++;
		CU_ASSERT_EQUAL(i, n);
		free(got);
		free(want);
	}
}

/*
 * A comparison a few extents at a time finds what one at once does, and
 * an extent listed twice on one side (a table walked while it grew) counts
 * once: not missing, not an orphan.
 */
static void test_job(void)
{
	enum { N = 5000 };
	struct ledger_extent *want = calloc(2 * N, sizeof(*want)),
			     *have = calloc(2 * N, sizeof(*have));
	struct ledger_extent *w2 = calloc(2 * N, sizeof(*w2)), *h2 = calloc(2 * N, sizeof(*h2));
	struct ledger_extent *m, *o;
	struct ledger_job j;
	size_t nm, no, i, steps = 0;
	int rc;

	CU_ASSERT_FATAL(want != NULL && have != NULL && w2 != NULL && h2 != NULL);
	srandom(7);
	for (i = 0; i < N; i++) {
		want[i] = (struct ledger_extent)E(random() % 2, (uint64_t)(random() % 4096) * 64,
						  64, random() % 2);
		have[i] =
		    random() % 4 ? want[i] : (struct ledger_extent)E(0, (uint64_t)i * 64, 64, 1);
		have[i].ref = (uint32_t)i;
	}
	memcpy(w2, want, N * sizeof(*want));
	memcpy(h2, have, N * sizeof(*have));
	CU_ASSERT_EQUAL_FATAL(ledger_diff(w2, N, h2, N, &m, &nm, &o, &no), 0);

	/* The same, each side with some of its extents again, a few at a time. */
	memcpy(want + N, want, N / 3 * sizeof(*want));
	memcpy(have + N, have, N / 5 * sizeof(*have));
	ledger_job_start(&j, want, N + N / 3, have, N + N / 5);
	while ((rc = ledger_job_step(&j, 3)) > 0)
		steps++;
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(steps > 2 * N / 3);
	CU_ASSERT_EQUAL(j.nmissing, nm);
	CU_ASSERT_EQUAL(j.norphans, no);
	for (i = 0; i < nm && i < j.nmissing; i++)
		CU_ASSERT_EQUAL(cmp_place(&j.missing[i], &m[i]), 0);
	for (i = 0; i < no && i < j.norphans; i++) {
		CU_ASSERT_EQUAL(cmp_place(&j.orphans[i], &o[i]), 0);
		CU_ASSERT_EQUAL(j.orphans[i].ref, o[i].ref); /* (whose it is comes along) */
	}
	CU_ASSERT(nm > 0 && no > 0);
	ledger_job_free(&j);
	free(m);
	free(o);
	free(want);
	free(have);
	free(w2);
	free(h2);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"records agree", test_agree},
	    {"missing and orphan extents", test_missing_and_orphans},
	    {"same place, other region", test_same_place_other_region},
	    {"empty sides", test_empty_sides},
	    {"10000 extents in any order", test_many},
	    {"a comparison in slices", test_job},
	    {"sorted as by comparison", test_sort},
	    {NULL, NULL},
	};
	return unit_run("ledger", tests);
}

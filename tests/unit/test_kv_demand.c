/*
 * tests/unit/test_kv_demand.c - a sharded namespace's capacity shared among
 * its owners by their demand (daemon/kv/kv-demand.c's kv_demand_split()).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "daemon/kv/kv-int.h"
#include "tests/unit/unit.h"

#define MIB (UINT64_C(1) << 20)
/* An owner's use without points: its bytes taken as spread evenly over their ages. */
#define USE(bytes, age, ev)                                                                        \
	{                                                                                          \
		.used = (bytes), .age_ms = (age), .evicted = (ev)                                  \
	}

static uint64_t sum(const uint64_t *part, size_t n)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += part[i];
	return s;
}

/* Full, values kept back to the same age: the parts are what each holds, all the capacity. */
static void test_same_age(void)
{
	const struct kv_demand_use use[] = {USE(300 * MIB, 400, true), USE(100 * MIB, 400, true),
					    USE(200 * MIB, 400, false)};
	uint64_t part[3];

	kv_demand_split(use, 3, 600 * MIB, part);
	CU_ASSERT(sum(part, 3) <= 600 * MIB && sum(part, 3) >= 600 * MIB - 3);
	CU_ASSERT(part[0] / MIB == 299 || part[0] / MIB == 300);
	CU_ASSERT(part[1] / MIB == 99 || part[1] / MIB == 100);
	CU_ASSERT(part[2] / MIB == 199 || part[2] / MIB == 200);
}

/* Full: the owner that keeps values back half as long gets the room to keep them as long. */
static void test_younger_grows(void)
{
	const struct kv_demand_use use[] = {USE(100 * MIB, 100, true), USE(100 * MIB, 200, true)};
	uint64_t part[2];

	kv_demand_split(use, 2, 300 * MIB, part);
	CU_ASSERT_EQUAL(part[0], 200 * MIB); /* rates 2:1 */
	CU_ASSERT_EQUAL(part[1], 100 * MIB);
}

/*
 * Full: one that did not evict keeps what it holds (however young its
 * values, it needs no more yet); those that evict share the rest, as one
 * LRU's age of values.
 */
static void test_no_more_than_held(void)
{
	const struct kv_demand_use use[] = {USE(10 * MIB, 1, false), USE(100 * MIB, 100, true),
					    USE(50 * MIB, 100, true)};
	uint64_t part[3];

	kv_demand_split(use, 3, 100 * MIB, part);
	CU_ASSERT_DOUBLE_EQUAL((double)part[0], 10.0 * MIB, 1);
	CU_ASSERT_DOUBLE_EQUAL((double)part[1], 60.0 * MIB, 1);
	CU_ASSERT_DOUBLE_EQUAL((double)part[2], 30.0 * MIB, 1);
}

/*
 * Full: an owner's points say how much of what it holds was used lately.
 * B holds 20 MiB back to 2 s, but read 10 MiB of it within the last 64 ms
 * (say, a prefix every request shares) and nothing since 64 ms before: at
 * one LRU's age, about 110 ms here, it keeps those 10 MiB, where its rate
 * alone (20 MiB over 2 s) would have left it its floor.
 */
static void test_points(void)
{
	struct kv_demand_use use[] = {USE(100 * MIB, 100, true), USE(20 * MIB, 2000, true)};
	const uint64_t held[] = {2 * MIB,  4 * MIB,  8 * MIB,  10 * MIB,
				 10 * MIB, 10 * MIB, 10 * MIB, 10 * MIB};
	uint64_t part[2];

	kv_demand_split(use, 2, 120 * MIB, part);
	CU_ASSERT(part[1] < 4 * MIB); /* (without points: its floor, 1/16 of 60 MiB) */
	memcpy(use[1].held, held, sizeof(held));
	use[1].npoints = 8;
	kv_demand_split(use, 2, 120 * MIB, part);
	CU_ASSERT_DOUBLE_EQUAL((double)part[1], 10.0 * MIB, 1);
	CU_ASSERT_DOUBLE_EQUAL((double)part[0], 110.0 * MIB, 1);
}

/* Full: an owner holding nothing, or little, still gets its floor, 1/16 of an even part. */
static void test_floor(void)
{
	const struct kv_demand_use use[] = {USE(0, 0, false), USE(400 * MIB, 50, true),
					    USE(MIB, 1000, false), USE(200 * MIB, 50, false)};
	uint64_t part[4];

	kv_demand_split(use, 4, 400 * MIB, part);
	CU_ASSERT_EQUAL(part[0], 400 * MIB / 4 / 16);
	CU_ASSERT_EQUAL(part[2], 400 * MIB / 4 / 16);
	/* the rest 2:1 */
	CU_ASSERT_DOUBLE_EQUAL((double)part[1], (400.0 * MIB - 2 * (400 * MIB / 4 / 16)) * 2 / 3,
			       1);
	CU_ASSERT_DOUBLE_EQUAL((double)part[3], (400.0 * MIB - 2 * (400 * MIB / 4 / 16)) / 3, 1);
}

/* Not full (none evicted): each keeps what it holds, the room left goes by rate. */
static void test_room_left(void)
{
	const struct kv_demand_use use[] = {USE(10 * MIB, 100, false), USE(30 * MIB, 100, false)};
	uint64_t part[2];

	kv_demand_split(use, 2, 100 * MIB, part);
	CU_ASSERT_EQUAL(part[0], 10 * MIB + 15 * MIB);
	CU_ASSERT_EQUAL(part[1], 30 * MIB + 45 * MIB);
	/* The same, but one evicted: full, parts by rate alone (the other's drops below its 30). */
	{
		const struct kv_demand_use ev[] = {USE(10 * MIB, 10, true),
						   USE(30 * MIB, 1000, false)};

		kv_demand_split(ev, 2, 100 * MIB, part);
		CU_ASSERT(part[0] > 90 * MIB && part[1] < 30 * MIB);
		CU_ASSERT(part[1] >= 100 * MIB / 2 / 16);
	}
}

/* Nothing held anywhere: even parts; no owners: nothing written. */
static void test_empty(void)
{
	const struct kv_demand_use use[] = {USE(0, 0, false), USE(0, 5, false), USE(0, 0, true),
					    USE(0, 9, false)};
	uint64_t part[4] = {1, 2, 3, 4};

	kv_demand_split(use, 4, 64 * MIB, part);
	CU_ASSERT(part[0] == 16 * MIB && part[1] == 16 * MIB && part[2] == 16 * MIB &&
		  part[3] == 16 * MIB);
	part[0] = 7;
	kv_demand_split(use, 0, 64 * MIB, part);
	CU_ASSERT_EQUAL(part[0], 7);
}

/*
 * 1,024 owners, all evicting, with points: the parts add up to the capacity
 * (each rounded down), the youngest owners get the most; the time of one
 * split is printed (a keeper splits at most once every 10 ms beyond 32
 * owners).
 */
static void test_many(void)
{
	static struct kv_demand_use use[1024];
	static uint64_t part[1024];
	uint64_t sum = 0, t0;
	size_t i, k;

	for (i = 0; i < 1024; i++) {
		use[i] = (struct kv_demand_use)USE(MIB + i * 4096, 100 + i, true);
		for (k = 0; k < 4; k++) /* (8, 16, 32 and 64 ms) */
			use[i].held[k] = use[i].used * (8u << k) / (100 + i);
		use[i].npoints = 4;
	}
	t0 = units_now_us();
	kv_demand_split(use, 1024, 1024 * MIB, part);
	printf("\n    1,024 owners split in %llu us\n", (unsigned long long)(units_now_us() - t0));
	for (i = 0; i < 1024; i++)
		sum += part[i];
	CU_ASSERT(sum <= 1024 * MIB && sum >= 1024 * MIB - 1024);
	CU_ASSERT(part[0] > part[1023]); /* (1 MiB back to 100 ms against 5 MiB back to 1.1 s) */
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"same age: parts are what each holds", test_same_age},
	    {"the younger part grows, the older shrinks", test_younger_grows},
	    {"one that did not evict keeps what it holds", test_no_more_than_held},
	    {"an empty owner keeps its floor", test_floor},
	    {"what an owner used lately, by its points", test_points},
	    {"1,024 owners", test_many},
	    {"room left: each keeps what it holds", test_room_left},
	    {"nothing held: even parts", test_empty},
	    {NULL, NULL},
	};
	return unit_run("kv_demand", tests);
}

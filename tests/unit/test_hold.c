/*
 * tests/unit/test_hold.c - a lender's record of what it holds
 * (daemon/hold/hold.c) over a pmem tier in memory: what is durable comes back
 * after a restart with what it names, and nothing else does; the bytes
 * nobody holds are zeroed; an end of a holding is journaled; a full journal
 * is rewritten to what is durable; a repair renumbers a holding and keeps
 * what it names; the compact record keeps every field of thousands of
 * values, sharing what their namespace's values share.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/lend/journal.h"
#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"
#include "tests/unit/unit.h"

#define TIER (1u << 20)
#define EXT 4096u

static struct poold pd;
static struct arena tier;
static unsigned persists;

static void count_persist(const void *ptr, size_t len)
{
	(void)ptr;
	(void)len;
	persists++;
}

/* A lender whose only arena is a pmem tier of 1 MiB with a journal of journal_len. */
static void lender_new(size_t journal_len)
{
	memset(&pd, 0, sizeof(pd));
	memset(&tier, 0, sizeof(tier));
	TAILQ_INIT(&pd.holds);
	tier.tier = TIER_PMEM;
	tier.fd = -1;
	tier.base = calloc(1, TIER);
	tier.size = tier.lent = TIER;
	tier.persist = count_persist;
	tier.journal = calloc(1, journal_len);
	tier.journal_len = journal_len;
	CU_ASSERT_FATAL(tier.base != NULL && tier.journal != NULL);
	pd.arenas = &tier;
	pd.narenas = 1;
	CU_ASSERT_EQUAL_FATAL(hold_open(&pd), 0);
}

/* The same lender started again: its record is what the journal says. */
static void lender_restart(void)
{
	hold_clear(&pd);
	events_free(&pd);
	CU_ASSERT_EQUAL_FATAL(hold_open(&pd), 0);
}

static void lender_free(void)
{
	hold_clear(&pd);
	events_free(&pd);
	free(tier.base);
	free(tier.journal);
}

/* A value of namespace ns (flags HOLD_NS_*) at off. */
static struct holding value(const char *ns, uint32_t flags, const char *key, uint64_t off,
			    uint64_t version)
{
	struct holding h = {.e = {.arena = 0, .off = off, .len = EXT, .region = 1ull << 63 | 9},
			    .has_kv = true};

	h.kv = (struct kv_record){.ns = ns,
				  .ns_capacity = 1 << 20,
				  .ns_flags = flags,
				  .ns_replicas = 2,
				  .key = (const uint8_t *)key,
				  .klen = strlen(key),
				  .vlen = 100,
				  .version = version,
				  .has_owner = true,
				  .owner = 1000};
	return h;
}

/* Extent index of 2 of region "vm" at off. */
static struct holding extent(uint64_t off)
{
	struct holding h = {.e = {.arena = 0, .off = off, .len = EXT, .region = 42},
			    .has_region = true};

	h.region = (struct region_record){.id = 42,
					  .name = "vm",
					  .placement = "spread",
					  .size = 2 * EXT,
					  .extents = 2,
					  .index = 1,
					  .mode = 0640,
					  .uid = 1000,
					  .gid = 100,
					  .stripe = EXT,
					  .cls = CLASS_PERSISTENT};
	return h;
}

/* The record's holding at off, or NULL. */
static const struct holding *held(struct holding **list, size_t *n, uint64_t off)
{
	size_t i;

	free(*list);
	CU_ASSERT_EQUAL_FATAL(hold_list(&pd, list, n), 0);
	for (i = 0; i < *n; i++)
		if ((*list)[i].e.off == off)
			return &(*list)[i];
	return NULL;
}

/* Persistent values and a region's extents come back; DRAM-only values and bare extents do not. */
static void test_restart(void)
{
	struct holding h[4] = {value("p", HOLD_NS_PERSISTENT, "kept", 0, 7),
			       extent(EXT),
			       value("d", HOLD_NS_DRAM_ONLY, "gone", 2 * EXT, 3),
			       {.e = {.arena = 0, .off = 3 * EXT, .len = EXT, .region = 5}}};
	struct holding *list = NULL;
	const struct holding *got;
	uint8_t *bytes;
	size_t n, i;

	lender_new(64 * 1024);
	for (i = 0; i < 4; i++)
		memset((uint8_t *)tier.base + i * EXT, 'a' + (int)i, EXT);
	persists = 0;
	CU_ASSERT_EQUAL(hold_add(&pd, h, 4), 0);
	CU_ASSERT(persists >= 2); /* the value, then the records */
	CU_ASSERT_PTR_NOT_NULL(held(&list, &n, 3 * EXT));
	CU_ASSERT_EQUAL(n, 4);

	lender_restart();
	CU_ASSERT_PTR_NULL(held(&list, &n, 2 * EXT));
	CU_ASSERT_EQUAL(n, 2);
	got = held(&list, &n, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT(got->has_kv && !got->has_region);
	CU_ASSERT_EQUAL(got->e.region, h[0].e.region);
	CU_ASSERT_EQUAL(got->e.len, EXT);
	CU_ASSERT_STRING_EQUAL(got->kv.ns, "p");
	CU_ASSERT_EQUAL(got->kv.klen, 4);
	CU_ASSERT(memcmp(got->kv.key, "kept", 4) == 0);
	CU_ASSERT_EQUAL(got->kv.version, 7);
	CU_ASSERT_EQUAL(got->kv.vlen, 100);
	CU_ASSERT_EQUAL(got->kv.ns_flags, HOLD_NS_PERSISTENT);
	CU_ASSERT_EQUAL(got->kv.ns_replicas, 2);
	CU_ASSERT(got->kv.has_owner && got->kv.owner == 1000);
	got = held(&list, &n, EXT);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT(got->has_region && !got->has_kv);
	CU_ASSERT_EQUAL(got->e.region, 42);
	CU_ASSERT_STRING_EQUAL(got->region.name, "vm");
	CU_ASSERT_STRING_EQUAL(got->region.placement, "spread");
	CU_ASSERT_EQUAL(got->region.index, 1);
	CU_ASSERT_EQUAL(got->region.extents, 2);
	CU_ASSERT_EQUAL(got->region.mode, 0640);
	CU_ASSERT_EQUAL(got->region.gid, 100);
	CU_ASSERT_EQUAL(got->region.cls, CLASS_PERSISTENT);
	/* What is held keeps its bytes; what nobody holds is zeroed. */
	bytes = tier.base;
	CU_ASSERT(bytes[0] == 'a' && bytes[EXT - 1] == 'a');
	CU_ASSERT(bytes[EXT] == 'b' && bytes[2 * EXT - 1] == 'b');
	CU_ASSERT(bytes[2 * EXT] == 0 && bytes[4 * EXT - 1] == 0);
	free(list);
	lender_free();
}

/* An end is journaled; a value replaced by a DRAM-only one is no longer durable. */
static void test_ends(void)
{
	struct holding a = value("p", HOLD_NS_PERSISTENT, "a", 0, 1);
	struct holding b = value("p", HOLD_NS_PERSISTENT, "b", EXT, 1);
	struct holding *list = NULL;
	size_t n;

	lender_new(64 * 1024);
	CU_ASSERT_EQUAL(hold_add(&pd, &a, 1), 0);
	CU_ASSERT_EQUAL(hold_add(&pd, &b, 1), 0);
	memset(tier.base, 0xab, EXT);
	hold_scrub(&pd, 0, 0, EXT);
	CU_ASSERT_EQUAL(((const uint8_t *)tier.base)[0], 0);
	CU_ASSERT_EQUAL(((const uint8_t *)tier.base)[EXT - 1], 0);
	b = value("d", HOLD_NS_DRAM_ONLY, "b", EXT, 2);
	CU_ASSERT_EQUAL(hold_add(&pd, &b, 1), 0);
	CU_ASSERT_EQUAL(held(&list, &n, EXT)->kv.version, 2);
	lender_restart();
	CU_ASSERT_PTR_NULL(held(&list, &n, 0));
	CU_ASSERT_EQUAL(n, 0);
	free(list);
	lender_free();
}

/* A journal that fills is rewritten to what is durable, and keeps taking records. */
static void test_full_journal(void)
{
	struct holding h;
	struct holding *list = NULL;
	const struct holding *got;
	uint64_t i;
	size_t n;

	lender_new(JOURNAL_MIN_SIZE);
	h = extent(0);
	CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
	for (i = 1; i <= 500; i++) {
		h = value("p", HOLD_NS_PERSISTENT, "churn", EXT, i);
		CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
		if (i < 500)
			hold_scrub(&pd, 0, EXT, EXT);
	}
	lender_restart();
	CU_ASSERT_PTR_NOT_NULL(held(&list, &n, 0));
	got = held(&list, &n, EXT);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_EQUAL(got->kv.version, 500);
	free(list);
	lender_free();
}

/*
 * The coordinator restarted and numbered the region anew: told of the same
 * extent with no name, the record takes the new number and keeps the name.
 */
static void test_repair(void)
{
	struct holding h = extent(0),
		       bare = {.e = {.arena = 0, .off = 0, .len = EXT, .region = 77}};
	struct holding *list = NULL;
	const struct holding *got;
	size_t n;

	lender_new(64 * 1024);
	CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
	CU_ASSERT_EQUAL(hold_add(&pd, &bare, 1), 0);
	got = held(&list, &n, 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT(got->has_region);
	CU_ASSERT_EQUAL(got->e.region, 77);
	CU_ASSERT_EQUAL(got->region.id, 77);
	CU_ASSERT_STRING_EQUAL(got->region.name, "vm");
	/* Another length at the same place is another holding: it replaces the record. */
	bare.e.len = 2 * EXT;
	CU_ASSERT_EQUAL(hold_add(&pd, &bare, 1), 0);
	got = held(&list, &n, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_FALSE(got->has_region);
	CU_ASSERT_EQUAL(got->e.len, 2 * EXT);
	free(list);
	lender_free();
}

#define MANY 4000u /* values in 4 namespaces, one per SLOT bytes of the tier */
#define SLOT 256u

/* The many-th value: its namespace's number (0-3) by off, and its 16-byte key. */
static struct holding many_value(unsigned i, char name[8], char key[17])
{
	unsigned ns = i % 4;
	struct holding h;

	snprintf(name, 8, "ns%u", ns);
	snprintf(key, 17, "key-%012u", i);
	h = value(name, ns == 0 ? HOLD_NS_DRAM_ONLY : 0, key, (uint64_t)i * SLOT, i + 1);
	h.e.len = SLOT;
	h.e.region = 1ull << 63 | (10 + ns);
	h.kv.ns_capacity = (uint64_t)(ns + 1) << 30;
	h.kv.ns_size_hint = ns;
	h.kv.vlen = 32 + i % 100;
	h.kv.owner = 1000 + ns;
	h.kv.has_owner = ns != 3;
	return h;
}

/*
 * Thousands of values across namespaces keep every field and their key;
 * the values of a namespace share its record, which goes with the last.
 */
static void test_many(void)
{
	struct holding *list = NULL, h;
	const char *ns_of[4] = {NULL};
	char name[8], key[17];
	size_t n, i, before, after;

	lender_new(64 * 1024);
	before = unit_heap_used();
	for (i = 0; i < MANY; i++) {
		h = many_value((unsigned)i, name, key);
		CU_ASSERT_EQUAL_FATAL(hold_add(&pd, &h, 1), 0);
	}
	after = unit_heap_used();
	/* A record, its key and its bucket: 96 bytes a value at most. */
	if (before > 0 && after > before)
		CU_ASSERT((after - before) / MANY <= 96);
	CU_ASSERT_EQUAL(pd.hold_ns.n, 4);
	CU_ASSERT_EQUAL_FATAL(hold_list(&pd, &list, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, MANY);
	for (i = 0; i < n; i++) {
		const struct holding *got = &list[i];
		unsigned k = (unsigned)(got->e.off / SLOT), ns = k % 4;

		h = many_value(k, name, key);
		CU_ASSERT_FATAL(got->has_kv && !got->has_region);
		CU_ASSERT_EQUAL(got->e.arena, 0);
		CU_ASSERT_EQUAL(got->e.len, SLOT);
		CU_ASSERT_EQUAL(got->e.region, h.e.region);
		CU_ASSERT_STRING_EQUAL(got->kv.ns, name);
		CU_ASSERT_EQUAL(got->kv.ns_capacity, h.kv.ns_capacity);
		CU_ASSERT_EQUAL(got->kv.ns_flags, h.kv.ns_flags);
		CU_ASSERT_EQUAL(got->kv.ns_replicas, 2);
		CU_ASSERT_EQUAL(got->kv.ns_size_hint, ns);
		CU_ASSERT_EQUAL(got->kv.vlen, h.kv.vlen);
		CU_ASSERT_EQUAL(got->kv.version, k + 1);
		CU_ASSERT_EQUAL(got->kv.has_owner, h.kv.has_owner);
		CU_ASSERT_EQUAL(got->kv.owner, h.kv.owner);
		CU_ASSERT_EQUAL_FATAL(got->kv.klen, 16);
		CU_ASSERT(memcmp(got->kv.key, key, 16) == 0);
		/* One record of each namespace, which its values point into. */
		if (ns_of[ns] == NULL)
			ns_of[ns] = got->kv.ns;
		CU_ASSERT_PTR_EQUAL(got->kv.ns, ns_of[ns]);
	}
	/* A value renumbered by a repair takes another record of its namespace. */
	h = (struct holding){.e = {.arena = 0, .off = 0, .len = SLOT, .region = 1ull << 63 | 99}};
	CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
	CU_ASSERT_EQUAL(pd.hold_ns.n, 5);
	CU_ASSERT_EQUAL(held(&list, &n, 0)->e.region, h.e.region);
	CU_ASSERT_STRING_EQUAL(held(&list, &n, 0)->kv.ns, "ns0");
	CU_ASSERT(memcmp(held(&list, &n, 0)->kv.key, "key-000000000000", 16) == 0);
	hold_scrub(&pd, 0, 0, SLOT);
	CU_ASSERT_EQUAL(pd.hold_ns.n, 4);
	/* A namespace's record goes with its last value; the others stay. */
	for (i = 1; i < MANY; i += 4)
		hold_scrub(&pd, 0, i * SLOT, SLOT);
	CU_ASSERT_EQUAL(pd.hold_ns.n, 3);
	CU_ASSERT_STRING_EQUAL(held(&list, &n, 2 * SLOT)->kv.ns, "ns2");
	CU_ASSERT_EQUAL(n, MANY - 1 - MANY / 4);
	for (i = 0; i < MANY; i++)
		hold_scrub(&pd, 0, i * SLOT, SLOT);
	CU_ASSERT_EQUAL(pd.hold_ns.n, 0);
	CU_ASSERT_PTR_NULL(held(&list, &n, 2 * SLOT));
	CU_ASSERT_EQUAL(n, 0);
	free(list);
	lender_free();
}

/* A region's holding keeps its own copy of the name and placement, cut as before. */
static void test_region_names(void)
{
	char name[100], placement[40];
	struct holding h = extent(0), *list = NULL;
	const struct holding *got;
	size_t n;

	memset(name, 'r', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(placement, sizeof(placement), "%s", "node=a");
	h.region.name = name;
	h.region.placement = placement;
	lender_new(64 * 1024);
	CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
	h = extent(EXT);
	h.region.placement = NULL;
	CU_ASSERT_EQUAL(hold_add(&pd, &h, 1), 0);
	memset(name, 'x', sizeof(name) - 1);
	memset(placement, 'x', sizeof(placement) - 1);
	got = held(&list, &n, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT(got->has_region && !got->has_kv);
	CU_ASSERT_EQUAL(strlen(got->region.name), 63);
	CU_ASSERT_EQUAL(got->region.name[0], 'r');
	CU_ASSERT_STRING_EQUAL(got->region.placement, "node=a");
	CU_ASSERT_EQUAL(got->region.id, 42);
	CU_ASSERT_EQUAL(got->region.size, 2 * EXT);
	CU_ASSERT_EQUAL(got->region.stripe, EXT);
	CU_ASSERT_EQUAL(got->region.uid, 1000);
	got = held(&list, &n, EXT);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got->region.name, "vm");
	CU_ASSERT_STRING_EQUAL(got->region.placement, "");
	CU_ASSERT_EQUAL(pd.hold_ns.n, 0);
	free(list);
	lender_free();
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"durable holdings come back after a restart", test_restart},
	    {"ends are journaled", test_ends},
	    {"a full journal is rewritten", test_full_journal},
	    {"a repair renumbers and keeps the name", test_repair},
	    {"thousands of values keep their fields and share their namespace", test_many},
	    {"a region's holding keeps its name and placement", test_region_names},
	    {NULL, NULL},
	};

	return unit_run("hold", tests);
}

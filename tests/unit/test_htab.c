/* tests/unit/test_htab.c - the intrusive hash table of daemon/. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/htab.h"
#include "tests/unit/unit.h"

struct item {
	char name[16];
	uint64_t id;
	struct htab_node by_name, by_id;
};

static struct item *find_name(const struct htab *t, const char *name)
{
	struct htab_node *n;

	for (n = htab_first(t, htab_hash_str(name)); n != NULL; n = htab_next(n)) {
		struct item *it = htab_entry(n, struct item, by_name);

		if (strcmp(it->name, name) == 0)
			return it;
	}
	return NULL;
}

static struct item *find_id(const struct htab *t, uint64_t id)
{
	struct htab_node *n;

	for (n = htab_first(t, htab_hash_u64(id)); n != NULL; n = htab_next(n)) {
		struct item *it = htab_entry(n, struct item, by_id);

		if (it->id == id)
			return it;
	}
	return NULL;
}

static void test_add_find_del(void)
{
	struct htab names = {0}, ids = {0};
	enum { N = 20000 };
	struct item *items = calloc(N, sizeof(*items));
	size_t i;

	CU_ASSERT_PTR_NULL(find_name(&names, "none")); /* empty, never grown */
	for (i = 0; i < N; i++) {
		snprintf(items[i].name, sizeof(items[i].name), "r%zu", i);
		items[i].id = (uint64_t)i * 7919 + 1;
		htab_add(&names, &items[i].by_name, htab_hash_str(items[i].name));
		htab_add(&ids, &items[i].by_id, htab_hash_u64(items[i].id));
	}
	CU_ASSERT_EQUAL(names.n, N);
	CU_ASSERT(names.nbuckets >= N / 2); /* it grew: chains stay short */
	for (i = 0; i < N; i++) {
		CU_ASSERT_PTR_EQUAL(find_name(&names, items[i].name), &items[i]);
		CU_ASSERT_PTR_EQUAL(find_id(&ids, items[i].id), &items[i]);
	}
	CU_ASSERT_PTR_NULL(find_name(&names, "r20000"));
	CU_ASSERT_PTR_NULL(find_id(&ids, 2));
	for (i = 0; i < N; i += 2) {
		htab_del(&names, &items[i].by_name);
		htab_del(&ids, &items[i].by_id);
	}
	CU_ASSERT_EQUAL(names.n, N / 2);
	for (i = 0; i < N; i++) {
		CU_ASSERT_PTR_EQUAL(find_name(&names, items[i].name), i % 2 ? &items[i] : NULL);
		CU_ASSERT_PTR_EQUAL(find_id(&ids, items[i].id), i % 2 ? &items[i] : NULL);
	}
	htab_free(&names);
	htab_free(&ids);
	free(items);
}

static void test_same_hash(void)
{
	struct htab t = {0};
	struct item a = {.name = "a"}, b = {.name = "b"}, c = {.name = "c"};
	struct htab_node *n;
	int seen = 0;

	/* Three keys forced onto one hash: all found, each by its own key. */
	htab_add(&t, &a.by_name, 42);
	htab_add(&t, &b.by_name, 42);
	htab_add(&t, &c.by_name, 43);
	for (n = htab_first(&t, 42); n != NULL; n = htab_next(n))
		seen |= htab_entry(n, struct item, by_name) == &a ? 1 : 2;
	CU_ASSERT_EQUAL(seen, 3);
	htab_del(&t, &a.by_name);
	n = htab_first(&t, 42);
	CU_ASSERT_PTR_EQUAL(n, &b.by_name);
	CU_ASSERT_PTR_NULL(htab_next(n));
	CU_ASSERT_PTR_EQUAL(htab_first(&t, 43), &c.by_name);
	htab_del(&t, &a.by_name); /* not there any more: nothing happens */
	CU_ASSERT_EQUAL(t.n, 2);
	htab_free(&t);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"20000 items by name and by id", test_add_find_del},
	    {"keys of one hash", test_same_hash},
	    {NULL, NULL},
	};
	return unit_run("htab", tests);
}

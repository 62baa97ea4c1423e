/* tests/unit/unit.h - the CUnit runner shared by the unit tests. */
#ifndef POOL_UNIT_H
#define POOL_UNIT_H

#include <CUnit/Basic.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
};

/* Run the tests (ended by a {NULL, NULL} entry) as one suite; exit status for main(). */
int unit_run(const char *suite, const struct unit_test *tests);
/* Bytes of heap in use, or 0 where it cannot be told (a sanitizer's allocator). */
size_t unit_heap_used(void);

#endif

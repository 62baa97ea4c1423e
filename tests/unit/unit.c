/* tests/unit/unit.c - the CUnit runner and helpers shared by the unit tests. */
#include "config.h"

#include <malloc.h>

#include "tests/unit/unit.h"

int unit_run(const char *suite, const struct unit_test *tests)
{
	CU_pSuite s;
	unsigned failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite(suite, NULL, NULL);
	if (s == NULL)
		return 1;
	for (; tests->name != NULL; tests++)
		if (CU_add_test(s, tests->name, tests->fn) == NULL)
			return 1;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

size_t unit_heap_used(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

/* daemon/ledger.c - compare the coordinator's and a lender's records of extents. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ledger.h"

static int ledger_cmp(const void *a, const void *b)
{
	const struct ledger_extent *x = a, *y = b;

	if (x->arena != y->arena)
		return x->arena < y->arena ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	return 0;
}

/* Append one extent to a growable array; see ledger.h. */
int ledger_append(struct ledger_extent **arr, size_t *n, size_t *cap, uint32_t arena, uint64_t off,
		  uint64_t len, uint64_t region)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct ledger_extent *g = realloc(*arr, c * sizeof(*g));

		if (g == NULL)
			return -ENOMEM;
		*arr = g;
		*cap = c;
	}
	(*arr)[(*n)++] = (struct ledger_extent){arena, off, len, region};
	return 0;
}

/* Compare want (the coordinator's) with have (the lender's); see ledger.h. */
int ledger_diff(struct ledger_extent *want, size_t nwant, struct ledger_extent *have, size_t nhave,
		struct ledger_extent **ret_missing, size_t *ret_nmissing,
		struct ledger_extent **ret_orphans, size_t *ret_norphans)
{
	struct ledger_extent *missing, *orphans;
	size_t i = 0, k = 0, nm = 0, no = 0;

	missing = malloc((nwant ? nwant : 1) * sizeof(*missing));
	orphans = malloc((nhave ? nhave : 1) * sizeof(*orphans));
	if (missing == NULL || orphans == NULL) {
		free(missing);
		free(orphans);
		return -ENOMEM;
	}
	if (nwant > 0) /* qsort() must not see NULL, even for no elements */
		qsort(want, nwant, sizeof(*want), ledger_cmp);
	if (nhave > 0)
		qsort(have, nhave, sizeof(*have), ledger_cmp);
	while (i < nwant || k < nhave) {
		int c = i == nwant ? 1 : k == nhave ? -1 : ledger_cmp(&want[i], &have[k]);

		if (c < 0)
			missing[nm++] = want[i++];
		else if (c > 0)
			orphans[no++] = have[k++];
		else {
			i++;
			k++;
		}
	}
	*ret_missing = missing;
	*ret_nmissing = nm;
	*ret_orphans = orphans;
	*ret_norphans = no;
	return 0;
}

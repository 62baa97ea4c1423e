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

/* Byte d of an extent's place: the offset's 8 bytes (d 0..7), then the arena's 4. */
static unsigned ledger_digit(const struct ledger_extent *e, unsigned d)
{
	return (unsigned)((d < 8 ? e->off >> (8 * d) : (uint64_t)e->arena >> (8 * (d - 8))) & 0xff);
}

/*
 * Sort extents as ledger_cmp() orders them: by place with a radix sort,
 * one pass per byte of arena and offset that is not the same in all of
 * them (a few, not 20 comparisons through a pointer per extent: a ledger
 * pass sorts millions), then the rare extents of the same place by length
 * and region. See ledger.h.
 */
void ledger_sort(struct ledger_extent *e, size_t n)
{
	size_t count[12][256] = {{0}}, i, d, run;
	struct ledger_extent *tmp, *from = e, *to;

	if (n < 64 || (tmp = malloc(n * sizeof(*tmp))) == NULL) {
		if (n > 1)
			qsort(e, n, sizeof(*e), ledger_cmp);
		return;
	}
	for (i = 0; i < n; i++)
		for (d = 0; d < 12; d++)
			count[d][ledger_digit(&e[i], (unsigned)d)]++;
	to = tmp;
	for (d = 0; d < 12; d++) {
		size_t at = 0, b, c;

		if (count[d][ledger_digit(&e[0], (unsigned)d)] == n)
			continue; /* the same byte in all: nothing to order by */
		for (b = 0; b < 256; b++) {
			c = count[d][b];
			count[d][b] = at;
			at += c;
		}
		for (i = 0; i < n; i++)
			to[count[d][ledger_digit(&from[i], (unsigned)d)]++] = from[i];
		to = from;
		from = from == e ? tmp : e;
	}
	if (from != e)
		memcpy(e, from, n * sizeof(*e));
	free(tmp);
	/* Extents of one place (rare: a record that disagrees with itself) by length and region. */
	for (i = 0; i < n; i = run) {
		for (run = i + 1; run < n && e[run].arena == e[i].arena && e[run].off == e[i].off;)
			run++;
		if (run - i > 1)
			qsort(e + i, run - i, sizeof(*e), ledger_cmp);
	}
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
	ledger_sort(want, nwant);
	ledger_sort(have, nhave);
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

/* daemon/hold/ledger.c - compare the coordinator's and a lender's records of extents. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/hold/ledger.h"
#include "daemon/hold/hold.h"

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
 * and region; each stage a slice of at most max extents at a time.
 */
enum { SORT_COUNT, SORT_SCATTER, SORT_BACK, SORT_FREE, SORT_TIES, SORT_DONE };

/* Pages given back to the system in one step of ledger_release(). */
#define LEDGER_RELEASE_STEP (4u << 20)

/* Give an array's pages back, a step at a time; see ledger.h. */
bool ledger_release(void *arr, size_t bytes, size_t *done)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)arr, pg = page > 0 ? (uintptr_t)page : 4096;
	uintptr_t lo = (base + *done + pg - 1) & ~(pg - 1), end = (base + bytes) & ~(pg - 1), hi;

	if (arr == NULL || lo >= end) {
		*done = bytes;
		return false;
	}
	hi = end - lo > LEDGER_RELEASE_STEP ? lo + LEDGER_RELEASE_STEP : end;
	(void)madvise((void *)lo, hi - lo,
		      MADV_DONTNEED); /* (a hint: free() gives them back anyway) */
	*done = hi - base;
	return hi < end;
}

static void ledger_sort_start(struct ledger_sorter *s, struct ledger_extent *e, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->e = s->from = e;
	s->n = n;
	if (n < 64 || (s->tmp = malloc(n * sizeof(*s->tmp))) == NULL) {
		if (n > 1)
			qsort(e, n, sizeof(*e), ledger_cmp); /* (a few: at once) */
		s->stage = SORT_DONE;
		return;
	}
	s->to = s->tmp;
	s->stage = SORT_COUNT;
}

/* The next digit that orders anything, its counts made offsets; false when none is left. */
static bool ledger_sort_digit(struct ledger_sorter *s)
{
	for (; s->d < 12; s->d++) {
		size_t at = 0, b, c;

		if (s->count[s->d][ledger_digit(&s->e[0], s->d)] == s->n)
			continue; /* the same byte in all: nothing to order by */
		for (b = 0; b < 256; b++) {
			c = s->count[s->d][b];
			s->count[s->d][b] = at;
			at += c;
		}
		return true;
	}
	return false;
}

/* One slice of a sort: true while there is more to do. */
static bool ledger_sort_step(struct ledger_sorter *s, size_t max)
{
	size_t end = s->i + (max < s->n - s->i ? max : s->n - s->i), run;

	switch (s->stage) {
	case SORT_COUNT:
		/* (the scatters write all over tmp: its pages are faulted in here, in turn) */
		memset(s->tmp + s->i, 0, (end - s->i) * sizeof(*s->tmp));
		for (; s->i < end; s->i++)
			for (unsigned d = 0; d < 12; d++)
				s->count[d][ledger_digit(&s->e[s->i], d)]++;
		if (s->i == s->n) {
			s->i = 0;
			s->stage = ledger_sort_digit(s) ? SORT_SCATTER : SORT_BACK;
		}
		break;
	case SORT_SCATTER:
		for (; s->i < end; s->i++)
			s->to[s->count[s->d][ledger_digit(&s->from[s->i], s->d)]++] = s->from[s->i];
		if (s->i == s->n) {
			s->i = 0;
			s->to = s->from;
			s->from = s->from == s->e ? s->tmp : s->e;
			s->d++;
			s->stage = ledger_sort_digit(s) ? SORT_SCATTER : SORT_BACK;
		}
		break;
	case SORT_BACK:
		if (s->from != s->e)
			memcpy(s->e + s->i, s->from + s->i, (end - s->i) * sizeof(*s->e));
		s->i = s->from != s->e ? end : s->n;
		if (s->i == s->n) {
			s->i = 0;
			s->stage = SORT_FREE;
		}
		break;
	case SORT_FREE:
		if (ledger_release(s->tmp, s->n * sizeof(*s->tmp), &s->i))
			break;
		free(s->tmp);
		s->tmp = NULL;
		s->i = 0;
		s->stage = SORT_TIES;
		break;
	case SORT_TIES:
		/* Extents of one place (rare: a record that disagrees with itself) by length and
		 * region. */
		for (; s->i < end; s->i = run) {
			for (run = s->i + 1; run < s->n && s->e[run].arena == s->e[s->i].arena &&
					     s->e[run].off == s->e[s->i].off;)
				run++;
			if (run - s->i > 1)
				qsort(s->e + s->i, run - s->i, sizeof(*s->e), ledger_cmp);
		}
		if (s->i >= s->n)
			s->stage = SORT_DONE;
		break;
	}
	return s->stage != SORT_DONE;
}

void ledger_sort(struct ledger_extent *e, size_t n)
{
	struct ledger_sorter *s = malloc(sizeof(*s));

	if (s == NULL) {
		if (n > 1)
			qsort(e, n, sizeof(*e), ledger_cmp);
		return;
	}
	ledger_sort_start(s, e, n);
	while (ledger_sort_step(s, SIZE_MAX))
		;
	free(s);
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
	(*arr)[(*n)++] =
	    (struct ledger_extent){.arena = arena, .off = off, .len = len, .region = region};
	return 0;
}

/* Start comparing want with have, both sorted in place as it goes; see ledger.h. */
void ledger_job_start(struct ledger_job *j, struct ledger_extent *want, size_t nwant,
		      struct ledger_extent *have, size_t nhave)
{
	memset(j, 0, sizeof(*j));
	j->want = want;
	j->have = have;
	j->nwant = nwant;
	j->nhave = nhave;
	ledger_sort_start(&j->sort_want, want, nwant);
	ledger_sort_start(&j->sort_have, have, nhave);
}

/* One slice of the comparison; see ledger.h. */
int ledger_job_step(struct ledger_job *j, size_t max)
{
	size_t end;

	if (ledger_sort_step(&j->sort_want, max))
		return 1;
	if (ledger_sort_step(&j->sort_have, max))
		return 1;
	for (end = j->i + j->k + (max < SIZE_MAX - j->i - j->k ? max : SIZE_MAX - j->i - j->k);
	     (j->i < j->nwant || j->k < j->nhave) && j->i + j->k < end;) {
		const struct ledger_extent *w = j->i < j->nwant ? &j->want[j->i] : NULL,
					   *h = j->k < j->nhave ? &j->have[j->k] : NULL;
		int c = w == NULL ? 1 : h == NULL ? -1 : ledger_cmp(w, h);

		if (w != NULL && j->i > 0 && ledger_cmp(w, w - 1) == 0) {
			j->i++;
		} else if (h != NULL && j->k > 0 && ledger_cmp(h, h - 1) == 0) {
			j->k++;
		} else if (c < 0) {
			if (ledger_append(&j->missing, &j->nmissing, &j->cap_missing, w->arena,
					  w->off, w->len, w->region) < 0)
				return -ENOMEM;
			j->missing[j->nmissing - 1].ref = w->ref;
			j->i++;
		} else if (c > 0) {
			if (ledger_append(&j->orphans, &j->norphans, &j->cap_orphans, h->arena,
					  h->off, h->len, h->region) < 0)
				return -ENOMEM;
			j->orphans[j->norphans - 1].ref = h->ref;
			j->k++;
		} else {
			j->i++;
			j->k++;
		}
	}
	return j->i < j->nwant || j->k < j->nhave ? 1 : 0;
}

/* What a comparison holds (not want and have: the caller's). */
void ledger_job_free(struct ledger_job *j)
{
	free(j->sort_want.tmp);
	free(j->sort_have.tmp);
	free(j->missing);
	free(j->orphans);
	memset(j, 0, sizeof(*j));
}

/* Compare want (the coordinator's) with have (the lender's), at once; see ledger.h. */
int ledger_diff(struct ledger_extent *want, size_t nwant, struct ledger_extent *have, size_t nhave,
		struct ledger_extent **ret_missing, size_t *ret_nmissing,
		struct ledger_extent **ret_orphans, size_t *ret_norphans)
{
	struct ledger_job j;
	int rc;

	ledger_job_start(&j, want, nwant, have, nhave);
	while ((rc = ledger_job_step(&j, SIZE_MAX)) > 0)
		;
	if (rc < 0) {
		ledger_job_free(&j);
		return rc;
	}
	/* (never NULL: a caller frees what it got) */
	*ret_missing = j.missing != NULL ? j.missing : malloc(sizeof(*j.missing));
	*ret_orphans = j.orphans != NULL ? j.orphans : malloc(sizeof(*j.orphans));
	if (*ret_missing == NULL || *ret_orphans == NULL) {
		if (j.missing == NULL)
			free(*ret_missing);
		if (j.orphans == NULL)
			free(*ret_orphans);
		j.missing = j.orphans = NULL;
		ledger_job_free(&j);
		return -ENOMEM;
	}
	*ret_nmissing = j.nmissing;
	*ret_norphans = j.norphans;
	j.missing = j.orphans = NULL;
	ledger_job_free(&j);
	return 0;
}

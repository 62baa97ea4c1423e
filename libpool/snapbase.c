/*
 * libpool/snapbase.c - a snapshot of 2 MiB pages served in base pages.
 *
 * A lazy clone, and a lazy restore into memory that is not hugetlbfs
 * (anonymous memory, say), is memory of base pages whatever the snapshot's
 * page size: placing a whole 2 MiB snapshot page for one fault costs the
 * kernel 512 page allocations and the faulting thread a 2 MiB copy, where
 * it wanted 4 KiB. Their page servers place base pages instead (the one
 * that faulted and, as for any image of base pages, those after it). The
 * store holds 2 MiB pages: the one the last fault was in is kept acquired
 * (pool_kv_acquire()), so that the faults and batches that follow in it
 * read it where it lies, and only the bytes they want.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/snap.h"

uint64_t snap_base_per(const struct pool_snap *snap, bool huge_range)
{
	uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE);

	return snap->hdr.page_size <= base || huge_range ? 1 : snap->hdr.page_size / base;
}

int snap_base_new(struct pool_snap *snap, uint64_t per, struct snap_base **ret)
{
	struct snap_base *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return pool_err(-ENOMEM, "out of memory");
	b->snap = snap;
	b->per = per;
	b->held = UINT64_MAX;
	*ret = b;
	return 0;
}

static void snap_base_let_go(struct snap_base *b)
{
	if (b->ref != NULL)
		(void)pool_kv_release(b->ref); /* a pin poold drops with us anyway */
	b->ref = NULL;
	b->data = NULL;
	b->held = UINT64_MAX;
}

void snap_base_free(struct snap_base *b)
{
	if (b == NULL)
		return;
	snap_base_let_go(b);
	free(b);
}

/* Snapshot page p in reach: read in place in a local arena (only the bytes asked for). */
static int snap_base_hold(struct snap_base *b, uint64_t p)
{
	int rc;

	snap_base_let_go(b);
	if ((rc = snap_page_acquire(b->snap, p, &b->data, &b->ref)) < 0)
		return rc;
	b->held = p;
	return 0;
}

int snap_base_fetch(void *arg, size_t n, const uint64_t *pages, void *const *bufs)
{
	struct snap_base *b = arg;
	uint64_t len = b->snap->hdr.page_size / b->per, p;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		p = pages[i] / b->per;
		if (p != b->held && (rc = snap_base_hold(b, p)) < 0)
			return rc;
		if (b->data != NULL)
			memcpy(bufs[i], b->data + (pages[i] % b->per) * len, len);
		else
			memset(bufs[i], 0, len);
	}
	return 0;
}

uint64_t *snap_base_pages(const uint64_t *pages, size_t n, uint64_t per, bool expand, size_t *ret_n)
{
	size_t len = expand ? n * per : n, i, k = 0;
	uint64_t *out = malloc((len ? len : 1) * sizeof(*out)), j;

	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (!expand)
			out[k++] = pages[i] / per;
		else
			for (j = 0; j < per; j++)
				out[k++] = pages[i] * per + j;
	*ret_n = k;
	return out;
}

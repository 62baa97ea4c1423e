/*
 * daemon/hold/hold-report.c - a lender's report of its record in chunks: cut
 * from the record's cursor (hold.c) by the lender, gathered again by the
 * coordinator. hold-codec.c puts them on the wire.
 *
 * A lender's chunk holds, first, the holdings its earlier chunks told that
 * ended since, then the next holdings of the record, as many as fit in the
 * bound on the wire. At the coordinator, the holdings of each chunk are
 * kept, with copies of what their records say (the chunk's message goes
 * once it is read); those a later chunk tells as gone are dropped when the
 * last chunk is in. Only then is the report the lender's record:
 * reconcile.c compares it with the map, and takes back what only the
 * lender holds. A report cut short (its link went, a chunk came out of its
 * order, there was no memory to keep one) is void and dropped whole: taken
 * as the record, it would have the map give away what the lender holds
 * beyond it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/ledger.h"
#include "daemon/hold/hold.h"

/* The bytes the records kept point into: blocks of this size, or one of its own for more. */
#define HOLDREPORT_BLOCK (256u << 10)

struct holdreport_block {
	struct holdreport_block *next;
	size_t used, size;
	char data[];
};

/* A holding told as gone, and in which chunk. */
struct holdreport_gone {
	struct hold_place at;
	uint32_t seq;
};

struct holdreport {
	uint64_t report;   /* the lender's number for it */
	uint32_t next_seq; /* the chunk that comes next */
	bool complete;	   /* its last chunk came */
	struct holding *h; /* the holdings gathered, in their order */
	uint32_t *seq;	   /* ... the chunk of each */
	size_t n, cap;
	struct holdreport_gone *gone;
	size_t ngone, gone_cap;
	struct holdreport_block *blocks;
	bool gone_sorted;	       /* gone is in holdreport_cmp_gone()'s order */
	size_t released, released_seq; /* bytes of h and seq given back (holdreport_shrink()) */
};

/*
 * Lender: cut the next chunk of the report on its way, of at most max
 * bytes on the wire (a holding larger alone goes alone). Its holdings are
 * copies pointing into the record: put the chunk on the wire before the
 * record changes, then holdreport_chunk_free() it. 0, or -ENOMEM (the
 * report must start over).
 */
int holdreport_chunk(struct poold *pd, size_t max, struct holdreport_chunk *ret)
{
	const struct hold_place *gone;
	const struct holding *h;
	ssize_t ngone = hold_report_gone(pd, &gone);
	size_t bytes = 32, cap = 0, i; /* (32: the report's number, seq and more) */

	*ret = (struct holdreport_chunk){0};
	if (ngone < 0)
		return (int)ngone;
	for (i = 0; i < (size_t)ngone; i++) {
		size_t len = hold_place_wire_len(&gone[i]);

		if (i > 0 && bytes + len > max)
			break;
		bytes += len;
	}
	if (i > 0 && (ret->gone = malloc(i * sizeof(*ret->gone))) == NULL)
		return -ENOMEM;
	if (i > 0)
		memcpy(ret->gone, gone, i * sizeof(*gone));
	ret->ngone = i;
	hold_report_gone_told(pd, i);
	while ((h = hold_report_peek(pd)) != NULL) {
		size_t len = holding_wire_len(h);

		if ((ret->n > 0 || ret->ngone > 0) && bytes + len > max)
			break;
		if (ret->n == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct holding *g = reallocarray(ret->h, c, sizeof(*g));

			if (g == NULL) {
				holdreport_chunk_free(ret);
				return -ENOMEM;
			}
			ret->h = g;
			cap = c;
		}
		ret->h[ret->n++] = *h;
		bytes += len;
		hold_report_take(pd);
	}
	ret->more = hold_report_peek(pd) != NULL || hold_report_gone(pd, &gone) != 0;
	return 0;
}

void holdreport_chunk_free(struct holdreport_chunk *c)
{
	free(c->h);
	free(c->gone);
	*c = (struct holdreport_chunk){0};
}

/* Forget a report, whole or not. */
/*
 * Give a report's memory back a step at a time, before holdreport_free():
 * true while more is left. Its holdings are not to be read once it began.
 * (A report of millions of holdings holds gigabytes: freed at once, it
 * would hold the loop for seconds.)
 */
bool holdreport_shrink(struct holdreport *r)
{
	struct holdreport_block *b;
	unsigned k;

	if (r == NULL)
		return false;
	for (k = 0; k < 16 && (b = r->blocks) != NULL; k++) {
		r->blocks = b->next;
		free(b);
	}
	if (k > 0)
		return true;
	if (r->released < r->cap * sizeof(*r->h)) {
		ledger_release(r->h, r->cap * sizeof(*r->h), &r->released);
		return true;
	}
	return ledger_release(r->seq, r->cap * sizeof(*r->seq), &r->released_seq);
}

void holdreport_free(struct holdreport *r)
{
	struct holdreport_block *b;

	if (r == NULL)
		return;
	while ((b = r->blocks) != NULL) {
		r->blocks = b->next;
		free(b);
	}
	free(r->h);
	free(r->seq);
	free(r->gone);
	free(r);
}

/* A copy of len bytes at p among the report's blocks; NULL for no memory. */
static void *holdreport_copy(struct holdreport *r, const void *p, size_t len)
{
	struct holdreport_block *b = r->blocks;
	void *at;

	if (b == NULL || b->size - b->used < len) {
		size_t size = MAX(len, HOLDREPORT_BLOCK);

		if ((b = malloc(sizeof(*b) + size)) == NULL)
			return NULL;
		b->used = 0;
		b->size = size;
		b->next = r->blocks;
		r->blocks = b;
	}
	at = b->data + b->used;
	b->used += (len + 7) & ~(size_t)7;
	b->used = MIN(b->used, b->size);
	if (len > 0)
		memcpy(at, p, len);
	return at;
}

static const char *holdreport_str(struct holdreport *r, const char *s)
{
	return s != NULL ? holdreport_copy(r, s, strlen(s) + 1) : NULL;
}

/* Keep one holding, with copies of what its records point to: 0 or -ENOMEM. */
static int holdreport_keep(struct holdreport *r, const struct holding *h, uint32_t seq)
{
	struct holding *k;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct holding *hg = reallocarray(r->h, cap, sizeof(*hg));
		uint32_t *sg;

		if (hg == NULL)
			return -ENOMEM;
		r->h = hg;
		if ((sg = reallocarray(r->seq, cap, sizeof(*sg))) == NULL)
			return -ENOMEM;
		r->seq = sg;
		r->cap = cap;
	}
	k = &r->h[r->n];
	*k = *h;
	if (h->has_region &&
	    ((k->region.name = holdreport_str(r, h->region.name)) == NULL ||
	     (h->region.placement != NULL &&
	      (k->region.placement = holdreport_str(r, h->region.placement)) == NULL)))
		return -ENOMEM;
	if (h->has_kv && ((k->kv.ns = holdreport_str(r, h->kv.ns)) == NULL ||
			  (k->kv.key = holdreport_copy(r, h->kv.key, h->kv.klen)) == NULL))
		return -ENOMEM;
	r->seq[r->n++] = seq;
	return 0;
}

static int holdreport_keep_gone(struct holdreport *r, const struct hold_place *at, uint32_t seq)
{
	if (r->ngone == r->gone_cap) {
		size_t cap = r->gone_cap ? r->gone_cap * 2 : 64;
		struct holdreport_gone *g = reallocarray(r->gone, cap, sizeof(*g));

		if (g == NULL)
			return -ENOMEM;
		r->gone = g;
		r->gone_cap = cap;
	}
	r->gone[r->ngone++] = (struct holdreport_gone){*at, seq};
	return 0;
}

/*
 * A chunk of a lender's report (its number, its place in it, whether more
 * follow), its n holdings and the ngone holdings of earlier chunks that
 * ended since. The first chunk of a report starts it over (*rp holds the
 * one being gathered, NULL for none). 1: the report is whole
 * (holdreport_result()); 0: more chunks are due; -EPROTO: the chunk is not
 * the one due (a report started over, a chunk lost), -ENOMEM: it could not
 * be kept. On an error, what was gathered is dropped.
 */
int holdreport_add(struct holdreport **rp, uint64_t report, uint32_t seq, bool more,
		   const struct holding *h, size_t n, const struct hold_place *gone, size_t ngone)
{
	struct holdreport *r = *rp;
	size_t i;
	int rc = 0;

	if (seq == 0) {
		holdreport_free(r);
		if ((r = *rp = calloc(1, sizeof(*r))) == NULL)
			return -ENOMEM;
		r->report = report;
	} else if (r == NULL || r->complete || r->report != report || r->next_seq != seq) {
		rc = -EPROTO;
		goto out_drop;
	}
	for (i = 0; i < ngone && rc == 0; i++)
		rc = holdreport_keep_gone(r, &gone[i], seq);
	for (i = 0; i < n && rc == 0; i++)
		rc = holdreport_keep(r, &h[i], seq);
	if (rc < 0)
		goto out_drop;
	r->next_seq = seq + 1;
	r->complete = !more;
	return r->complete ? 1 : 0;
out_drop:
	holdreport_free(r);
	*rp = NULL;
	return rc;
}

/* How far a report came: the chunks and holdings gathered (for logs). */
void holdreport_progress(const struct holdreport *r, uint32_t *ret_chunks, size_t *ret_n)
{
	*ret_chunks = r != NULL ? r->next_seq : 0;
	*ret_n = r != NULL ? r->n : 0;
}

static int holdreport_cmp_gone(const void *a, const void *b)
{
	const struct holdreport_gone *x = a, *y = b;

	if (x->at.arena != y->at.arena)
		return x->at.arena < y->at.arena ? -1 : 1;
	if (x->at.off != y->at.off)
		return x->at.off < y->at.off ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq; /* the latest first */
}

/*
 * A whole report's holdings as they came, those a later chunk told as gone
 * still in (holdreport_ended()), valid until holdreport_free(). -EAGAIN
 * while it is not whole.
 */
int holdreport_holdings(struct holdreport *r, const struct holding **ret, size_t *ret_n)
{
	if (r == NULL || !r->complete)
		return -EAGAIN;
	if (!r->gone_sorted && r->ngone > 1) {
		qsort(r->gone, r->ngone, sizeof(*r->gone), holdreport_cmp_gone);
	}
	r->gone_sorted = true;
	*ret = r->h;
	*ret_n = r->n;
	return 0;
}

/* Whether holding i of a whole report ended after its chunk (its place told as gone since). */
bool holdreport_ended(const struct holdreport *r, size_t i)
{
	struct holdreport_gone key = {{r->h[i].e.arena, r->h[i].e.off}, UINT32_MAX};
	size_t lo = 0, hi = r->ngone;

	/* The latest time its place was told gone: the first at its place. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (holdreport_cmp_gone(&r->gone[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->ngone && r->gone[lo].at.arena == key.at.arena &&
	       r->gone[lo].at.off == key.at.off && r->gone[lo].seq > r->seq[i];
}

/*
 * A whole report as the lender's record: its holdings, those told as gone
 * by a later chunk left out (valid until holdreport_free()). -EAGAIN while
 * it is not whole.
 */
int holdreport_result(struct holdreport *r, const struct holding **ret, size_t *ret_n)
{
	const struct holding *h;
	size_t i, n, k = 0;
	int rc = holdreport_holdings(r, &h, &n);

	if (rc < 0)
		return rc;
	if (r->ngone > 0) {
		for (i = 0; i < n; i++) {
			if (holdreport_ended(r, i))
				continue;
			r->h[k] = r->h[i];
			r->seq[k++] = r->seq[i];
		}
		r->n = k;
		r->ngone = 0;
	}
	*ret = r->h;
	*ret_n = r->n;
	return 0;
}

/*
 * daemon/hold.c - holdings: each lender's own record of the extents it
 * holds, and for which region or KV value.
 *
 * The coordinator tells a lender on each allocation (Hold), a scrub ends
 * the holding; the lender reports its record when the coordinator asks,
 * which reconciles it with the map (holdsync.c).
 *
 * The record lives in memory, except for the values of persistent KV
 * namespaces in this node's pmem tier: those are also journaled in the
 * tier (journal.c), after the value itself is made durable, so that a
 * restarted poold still holds them and the coordinator takes them back.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/extent.h"
#include "daemon/journal.h"
#include "daemon/ledger.h"
#include "daemon/poold.h"

struct hold {
	TAILQ_ENTRY(hold) entry;
	struct hold *hnext; /* the chain of its hash bucket */
	struct holding h;   /* its records point into the buffers below */
	char rname[64], rplacement[32];
	char ns[64];
	uint8_t *key;
	bool durable;	   /* journaled in the pmem tier */
	bool journal_now;  /* its value made durable: its record is to be journaled */
	uint32_t reported; /* the report (hold_report.gen) that told it, if it is on its way */
};

/*
 * The report of the record on its way to the coordinator, in chunks
 * (holdwire.c packs them, peer.c sends them as the loop turns). Its cursor
 * walks the record in order, and new holdings join the record's end, so
 * they are reported too; a holding that ends or changes after it was
 * reported is told as gone in the next chunk (one that changed joins the
 * end again, to be reported as it is now). The chunks then add up to the
 * record as it is when the last one goes: what a report in one message
 * was, and what the coordinator reconciles with its map.
 */
struct hold_report {
	uint32_t gen;		 /* holdings reported carry it */
	struct hold *next;	 /* the next to report; NULL: all were */
	struct hold_place *gone; /* reported, then ended or changed: to be told */
	size_t ngone, gone_cap;
	bool broken; /* a gone one could not be kept: the report is void */
};

static void hold_free(struct hold *hd)
{
	free(hd->key);
	free(hd);
}

/* A holding the report passed ended or changed: tell it as gone. */
static void hold_report_drop(struct hold_report *rep, const struct hold *hd)
{
	if (rep->ngone == rep->gone_cap) {
		size_t cap = rep->gone_cap ? rep->gone_cap * 2 : 64;
		struct hold_place *g = reallocarray(rep->gone, cap, sizeof(*g));

		if (g == NULL) {
			rep->broken = true;
			return;
		}
		rep->gone = g;
		rep->gone_cap = cap;
	}
	rep->gone[rep->ngone++] = (struct hold_place){hd->h.e.arena, hd->h.e.off};
}

static struct hold **hold_slot(struct poold *pd, uint32_t arena, uint64_t off)
{
	uint64_t h = (off ^ (uint64_t)arena << 56) * UINT64_C(0x9e3779b97f4a7c15);
	struct hold **pp = &pd->hold_tab[(h >> 32) & (pd->hold_tab_size - 1)];

	while (*pp != NULL && ((*pp)->h.e.arena != arena || (*pp)->h.e.off != off))
		pp = &(*pp)->hnext;
	return pp;
}

/* Keep the table at least as large as the number of holdings: 0 or -ENOMEM. */
static int hold_grow(struct poold *pd)
{
	size_t size = pd->hold_tab_size ? pd->hold_tab_size * 2 : 256;
	struct hold **tab, *hd;

	if (pd->nholds < pd->hold_tab_size)
		return 0;
	tab = calloc(size, sizeof(*tab));
	if (tab == NULL)
		return -ENOMEM;
	free(pd->hold_tab);
	pd->hold_tab = tab;
	pd->hold_tab_size = size;
	TAILQ_FOREACH(hd, &pd->holds, entry) {
		struct hold **pp = hold_slot(pd, hd->h.e.arena, hd->h.e.off);

		hd->hnext = NULL;
		*pp = hd;
	}
	return 0;
}

static int hold_journal_write(struct journal *j, const struct holding *h)
{
	uint8_t buf[1024];
	ssize_t len = holding_pack(h, buf, sizeof(buf));

	if (len < 0)
		return (int)len;
	return journal_append(j, buf, (size_t)len);
}

/* A journal rewrite: what is durable now. */
static int hold_journal_fill(void *arg, struct journal *j)
{
	struct poold *pd = arg;
	struct hold *hd;
	int rc;

	TAILQ_FOREACH(hd, &pd->holds, entry)
		if (hd->durable && (rc = hold_journal_write(j, &hd->h)) < 0)
			return rc;
	return 0;
}

/*
 * Journal a holding, or the end of one (len 0), rewriting the journal to
 * what is durable once when it is full (which records an end by itself).
 */
static int hold_journal(struct poold *pd, const struct holding *h)
{
	int rc = hold_journal_write(pd->journal, h);
	bool grouped;

	if (rc != -ENOSPC)
		return rc;
	/* A rewrite orders its own flushes (records, then the header that names them). */
	grouped = lend_group_end();
	rc = journal_rewrite(pd->journal, hold_journal_fill, pd);
	if (rc == 0 && h->e.len > 0)
		rc = hold_journal_write(pd->journal, h);
	if (grouped)
		lend_group_begin();
	return rc;
}

static void hold_unjournal(struct poold *pd, struct hold *hd)
{
	struct holding end = {.e = {hd->h.e.arena, hd->h.e.off, 0, 0}};
	int rc;

	if (!hd->durable)
		return;
	hd->durable = false;
	if ((rc = hold_journal(pd, &end)) < 0)
		log_warnx("pmem journal: cannot record the end of extent %llu: %s",
			  (unsigned long long)hd->h.e.off, err_str(rc));
}

/*
 * A value of a persistent namespace, or an extent of a persistent region,
 * in this node's pmem tier: journaled.
 */
static bool hold_is_durable(struct poold *pd, const struct holding *h)
{
	if (pd->journal == NULL || h->e.arena != pd->journal_arena)
		return false;
	return h->has_region || (h->has_kv && (h->kv.ns_flags & HOLD_NS_PERSISTENT));
}

/* Whether a holding says what it holds: a KV value, or an extent of a persistent region. */
static bool hold_named(const struct holding *h)
{
	return h->has_region || h->has_kv;
}

/* hd's record of what it holds: a copy of h's, in hd's own buffers. */
static void hold_copy(struct hold *hd, const struct holding *h)
{
	hd->h = (struct holding){.e = h->e};
	if (h->has_region) {
		hd->h.has_region = true;
		hd->h.region = h->region;
		snprintf(hd->rname, sizeof(hd->rname), "%s", h->region.name);
		snprintf(hd->rplacement, sizeof(hd->rplacement), "%s",
			 h->region.placement ? h->region.placement : "");
		hd->h.region.name = hd->rname;
		hd->h.region.placement = hd->rplacement;
	}
	free(hd->key);
	hd->key = NULL;
	if (h->has_kv && h->kv.klen > 0 && (hd->key = malloc(h->kv.klen)) != NULL) {
		hd->h.has_kv = true;
		hd->h.kv = h->kv;
		snprintf(hd->ns, sizeof(hd->ns), "%s", h->kv.ns);
		memcpy(hd->key, h->kv.key, h->kv.klen);
		hd->h.kv.ns = hd->ns;
		hd->h.kv.key = hd->key;
	}
}

/*
 * A holding is about to change: if the report on its way told it already,
 * it is told as gone, and joins the record's end to be told again as it
 * will be.
 */
static void hold_report_changed(struct poold *pd, struct hold *hd)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL || hd->reported != rep->gen)
		return;
	hold_report_drop(rep, hd);
	hd->reported = 0;
	TAILQ_REMOVE(&pd->holds, hd, entry);
	TAILQ_INSERT_TAIL(&pd->holds, hd, entry);
	if (rep->next == NULL)
		rep->next = hd;
}

/*
 * Record one holding (replacing any other at its place). With journal, a
 * durable one has its value made durable and is marked for hold_record().
 */
static struct hold *hold_set(struct poold *pd, const struct holding *h, bool journal)
{
	struct hold **pp, *hd;

	if (hold_grow(pd) < 0)
		return NULL;
	pp = hold_slot(pd, h->e.arena, h->e.off);
	hd = *pp;
	if (hd != NULL)
		hold_report_changed(pd, hd);
	if (hd != NULL && hd->h.e.len == h->e.len && !hold_named(h) && hold_named(&hd->h)) {
		/*
		 * A repair after the coordinator restarted and numbered the value's
		 * namespace (or the region) anew: the same extent, the same contents.
		 * Only the number changes; what the record names, and the journal,
		 * stay.
		 */
		hd->h.e.region = hd->h.region.id = h->e.region;
		return hd;
	}
	if (hd == NULL) {
		hd = calloc(1, sizeof(*hd));
		if (hd == NULL)
			return NULL;
		TAILQ_INSERT_TAIL(&pd->holds, hd, entry);
		*pp = hd;
		pd->nholds++;
		if (pd->hold_report != NULL && pd->hold_report->next == NULL)
			pd->hold_report->next = hd; /* (the report had passed every other) */
	} else if (journal && !hold_is_durable(pd, h)) {
		hold_unjournal(pd, hd);
	}
	hold_copy(hd, h);
	if (journal && hold_is_durable(pd, h) && hold_named(&hd->h)) {
		/*
		 * A value first (a region's bytes are its users' to persist); hold_add() records
		 * it.
		 */
		hd->durable = false;
		hd->journal_now = true;
		if (!hd->h.has_region)
			lend_persist(pd, h->e.arena, h->e.off, h->kv.vlen);
	}
	return hd;
}

/* Journal the record of a holding whose value is durable (hold_set()). */
static void hold_record(struct poold *pd, struct hold *hd)
{
	int rc = hold_journal(pd, &hd->h);

	if (rc < 0)
		log_warnx("pmem journal: %s '%s' is not durable: %s",
			  hd->h.has_region ? "an extent of region" : "a value of KV namespace",
			  hd->h.has_region ? hd->rname : hd->ns, err_str(rc));
	hd->durable = rc == 0;
	hd->journal_now = false;
}

/*
 * Lender: record extents held for regions and KV values. 0, or -errno when
 * one that should be durable is not (or there was no memory to record it).
 */
int hold_add(struct poold *pd, const struct holding *h, size_t n)
{
	struct hold *hd;
	size_t i;
	int rc = 0;

	/*
	 * All the values made durable, then all their records written and made
	 * durable: two flushes for the batch on a file-backed tier (lend.c).
	 */
	lend_group_begin();
	for (i = 0; i < n; i++)
		if (hold_set(pd, &h[i], true) == NULL) {
			log_warnx("out of memory recording a holding");
			rc = -ENOMEM;
		}
	lend_group_values();
	for (i = 0; i < n; i++) {
		hd = *hold_slot(pd, h[i].e.arena, h[i].e.off);
		if (hd != NULL && hd->journal_now)
			hold_record(pd, hd);
		if (rc == 0 && hold_is_durable(pd, &h[i]) && (hd == NULL || !hd->durable))
			rc = -EIO;
	}
	lend_group_end();
	if (pd->carry_hooks != NULL)
		pd->carry_hooks->changed(pd); /* (transfers waiting for these may go) */
	return rc;
}

static void hold_unlink(struct poold *pd, struct hold **pp)
{
	struct hold_report *rep = pd->hold_report;
	struct hold *hd = *pp;

	if (rep != NULL && rep->next == hd)
		rep->next = TAILQ_NEXT(hd, entry);
	else if (rep != NULL && hd->reported == rep->gen)
		hold_report_drop(rep, hd);
	*pp = hd->hnext;
	TAILQ_REMOVE(&pd->holds, hd, entry);
	pd->nholds--;
}

/*
 * Lender: the coordinator scrubs an extent before it lends its memory
 * again: the windows carved in it go, it is zeroed, and no longer held.
 */
void hold_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	struct hold **pp, *hd;

	carve_release(pd, arena, off, len);
	lend_scrub(pd, arena, off, len);
	if (pd->hold_tab_size == 0 || (hd = *(pp = hold_slot(pd, arena, off))) == NULL)
		return;
	hold_unlink(pd, pp);
	hold_unjournal(pd, hd);
	heap_freed(sizeof(*hd) + hd->h.kv.klen); /* (many in a row when a namespace goes) */
	hold_free(hd);
}

/*
 * Lender: where [off, off+len) of the extent held at ext of arena is in
 * this poold's memory, for a peer's checked transfer (carry-link.c): 0 and
 * *ret_ptr; -ERANGE past the holding's end; -ENOENT when no holding
 * starts at ext, or -EAGAIN while !last (its Hold may still be on its way:
 * the coordinator answers the requester without waiting for it).
 */
int hold_reach(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
	       bool last, void **ret_ptr)
{
	const struct hold *hd = pd->hold_tab_size > 0 ? *hold_slot(pd, arena, ext) : NULL;
	void *ptr;

	if (hd == NULL)
		return last ? -ENOENT : -EAGAIN;
	if (off > hd->h.e.len || len > hd->h.e.len - off)
		return -ERANGE;
	ptr = lend_ptr(pd, arena, ext + off, len);
	if (ptr == NULL)
		return -ERANGE;
	*ret_ptr = ptr;
	return 0;
}

/* Lender: forget every holding (the journal keeps the durable ones). */
void hold_clear(struct poold *pd)
{
	struct hold *hd;

	hold_report_end(pd);
	while ((hd = TAILQ_FIRST(&pd->holds)) != NULL) {
		TAILQ_REMOVE(&pd->holds, hd, entry);
		hold_free(hd);
	}
	free(pd->hold_tab);
	pd->hold_tab = NULL;
	pd->hold_tab_size = pd->nholds = 0;
	if (pd->journal != NULL)
		journal_close(pd->journal);
	pd->journal = NULL;
}

/* A journal record at start-up: a durable holding, or the end of one (len 0). */
static int hold_replay(void *arg, const uint8_t *rec, size_t len)
{
	struct poold *pd = arg;
	struct holding_unpacked u;
	struct holding *h = &u.h;
	struct hold **pp, *hd = NULL;
	int rc = 0;

	if (holding_unpack(rec, len, &u) < 0) {
		log_warnx("pmem journal: a record does not decode: skipped");
		return 0;
	}
	h->e.arena = pd->journal_arena; /* the tier's arena id in this run */
	if (h->e.len == 0) {
		if (pd->hold_tab_size > 0 && *(pp = hold_slot(pd, h->e.arena, h->e.off)) != NULL) {
			hd = *pp;
			hold_unlink(pd, pp);
			hold_free(hd);
		}
	} else if (lend_ptr(pd, h->e.arena, h->e.off, h->e.len) == NULL ||
		   (h->has_kv && h->kv.vlen > h->e.len)) {
		log_warnx("pmem journal: extent %llu+%llu is outside the tier: dropped",
			  (unsigned long long)h->e.off, (unsigned long long)h->e.len);
	} else if ((hd = hold_set(pd, h, false)) != NULL) {
		hd->durable = true;
	} else {
		rc = -ENOMEM;
	}
	holding_unpacked_free(&u);
	return rc;
}

static int hold_cmp_off(const void *a, const void *b)
{
	const struct ledger_extent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Lender, at start-up: open the journal of the pmem tier and hold again
 * what it records. Whatever else the tier contains is left from an earlier
 * run: it is zeroed before it is lent again.
 */
int hold_open(struct poold *pd)
{
	struct ledger_extent *keep;
	struct journal_stats st;
	struct arena *a = NULL;
	struct hold *hd;
	uint64_t at = 0;
	size_t i, n = 0;
	int rc;

	for (i = 0; i < pd->narenas; i++)
		if (pd->arenas[i].journal != NULL)
			a = &pd->arenas[i];
	if (a == NULL)
		return 0;
	pd->journal_arena = a->id;
	rc = journal_open(a->journal, a->journal_len, a->persist, hold_replay, pd, &pd->journal);
	if (rc < 0) {
		log_warnx("pmem journal: %s", err_str(rc));
		return rc;
	}
	journal_stats(pd->journal, &st);
	if (st.dropped > 0) {
		log_warnx("pmem journal: a torn or corrupt record ends it: used up to the %llu "
			  "record(s) before it",
			  (unsigned long long)st.records);
		events_add(pd, "journal",
			   "a torn or corrupt record ends the pmem journal: used up "
			   "to the %llu record(s) before it",
			   (unsigned long long)st.records);
	}
	keep = calloc(pd->nholds + 1, sizeof(*keep));
	if (keep == NULL)
		return -ENOMEM;
	TAILQ_FOREACH(hd, &pd->holds, entry)
		keep[n++] = hd->h.e;
	qsort(keep, n, sizeof(*keep), hold_cmp_off);
	keep[n].off = a->size; /* the end of the tier, as a last boundary */
	for (i = 0; i <= n; i++) {
		if (keep[i].off > at) {
			carve_release(pd, a->id, at, keep[i].off - at);
			lend_zero(pd, a->id, at, keep[i].off - at);
		}
		at = MAX(at, keep[i].off + keep[i].len);
	}
	free(keep);
	if (n > 0) {
		log_info("pmem tier: %zu extent(s) of persistent values and regions kept", n);
		events_add(pd, "journal", "%zu extent(s) of persistent values and regions kept", n);
	}
	return 0;
}

/*
 * This lender's record: an array of its holdings (free() it), pointing
 * into the record, so valid until the record changes.
 */
int hold_list(struct poold *pd, struct holding **ret, size_t *ret_n)
{
	struct holding *h = calloc(pd->nholds ? pd->nholds : 1, sizeof(*h));
	struct hold *hd;
	size_t n = 0;

	if (h == NULL)
		return -ENOMEM;
	TAILQ_FOREACH(hd, &pd->holds, entry)
		h[n++] = hd->h;
	*ret = h;
	*ret_n = n;
	return 0;
}

/*
 * Lender: start a report of the record, from its first holding (one on its
 * way starts over). 0 or -ENOMEM.
 */
int hold_report_begin(struct poold *pd)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL && (rep = calloc(1, sizeof(*rep))) == NULL)
		return -ENOMEM;
	if (++pd->hold_report_gen == 0) /* (0 is no report's) */
		pd->hold_report_gen = 1;
	rep->gen = pd->hold_report_gen;
	rep->next = TAILQ_FIRST(&pd->holds);
	rep->ngone = 0;
	rep->broken = false;
	pd->hold_report = rep;
	return 0;
}

/* Lender: the report is done with (sent, or its link went). */
void hold_report_end(struct poold *pd)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL)
		return;
	free(rep->gone);
	free(rep);
	pd->hold_report = NULL;
}

/*
 * Lender: the next holding of the report (pointing into the record: valid
 * until it changes), NULL when all were reported; hold_report_take() it once
 * it is in a chunk.
 */
const struct holding *hold_report_peek(struct poold *pd)
{
	struct hold_report *rep = pd->hold_report;

	return rep != NULL && rep->next != NULL ? &rep->next->h : NULL;
}

/* Lender: the holding hold_report_peek() gave is in a chunk: on to the next. */
void hold_report_take(struct poold *pd)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL || rep->next == NULL)
		return;
	rep->next->reported = rep->gen;
	rep->next = TAILQ_NEXT(rep->next, entry);
}

/*
 * Lender: the holdings reported that ended or changed since, to be told as
 * gone (*ret, valid until the record changes), or -ENOMEM when one could
 * not be kept (the report must start over).
 */
ssize_t hold_report_gone(struct poold *pd, const struct hold_place **ret)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL) {
		*ret = NULL;
		return 0;
	}
	if (rep->broken)
		return -ENOMEM;
	*ret = rep->gone;
	return (ssize_t)rep->ngone;
}

/* Lender: the first n gone ones of hold_report_gone() are in a chunk. */
void hold_report_gone_told(struct poold *pd, size_t n)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL || n == 0)
		return;
	n = MIN(n, rep->ngone);
	memmove(rep->gone, rep->gone + n, (rep->ngone - n) * sizeof(*rep->gone));
	rep->ngone -= n;
}

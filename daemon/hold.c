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
	struct ledger_extent e;
	/* a committed KV value's identity, or ns[0] == 0 */
	char ns[64];
	uint8_t *key;
	size_t klen;
	uint64_t vlen, version, ns_capacity;
	uint32_t ns_flags, ns_replicas;
	uint64_t ns_size_hint;
	bool has_writer;
	uint32_t writer; /* the uid whose quota the value counts against */
	/* an extent of a persistent region: the region, or rname[0] == 0 */
	char rname[64], rplacement[32];
	uint64_t rsize, rstripe;
	uint32_t rclass;
	uint32_t rindex, rextents, rmode, ruid, rgid;
	bool ranonymous;
	bool durable;	  /* journaled in the pmem tier */
	bool journal_now; /* its value made durable: its record is to be journaled */
};

static void hold_free(struct hold *hd)
{
	free(hd->key);
	free(hd);
}

static struct hold **hold_slot(struct poold *pd, uint32_t arena, uint64_t off)
{
	uint64_t h = (off ^ (uint64_t)arena << 56) * UINT64_C(0x9e3779b97f4a7c15);
	struct hold **pp = &pd->hold_tab[(h >> 32) & (pd->hold_tab_size - 1)];

	while (*pp != NULL && ((*pp)->e.arena != arena || (*pp)->e.off != off))
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
		struct hold **pp = hold_slot(pd, hd->e.arena, hd->e.off);

		hd->hnext = NULL;
		*pp = hd;
	}
	return 0;
}

/* The wire (and journal) form of a holding; h points into hd. */
static void hold_msg(const struct hold *hd, Pool__Holding *h)
{
	pool__holding__init(h);
	h->arena = hd->e.arena;
	h->off = hd->e.off;
	h->len = hd->e.len;
	h->region = hd->e.region;
	if (hd->rname[0] != '\0') {
		h->rname = (char *)hd->rname;
		h->rplacement = (char *)hd->rplacement;
		h->has_rsize = h->has_rindex = h->has_rextents = h->has_rmode = 1;
		h->has_ruid = h->has_rgid = h->has_rstripe = 1;
		h->rsize = hd->rsize;
		h->rindex = hd->rindex;
		h->rextents = hd->rextents;
		h->rmode = hd->rmode;
		h->ruid = hd->ruid;
		h->rgid = hd->rgid;
		h->rstripe = hd->rstripe;
		h->has_rclass = 1;
		h->rclass = hd->rclass;
		h->has_ranonymous = hd->ranonymous;
		h->ranonymous = hd->ranonymous;
	}
	if (hd->ns[0] == '\0')
		return;
	h->ns = (char *)hd->ns;
	h->has_key = h->has_vlen = h->has_version = h->has_ns_capacity = h->has_ns_flags = 1;
	h->key.data = hd->key;
	h->key.len = hd->klen;
	h->vlen = hd->vlen;
	h->version = hd->version;
	h->ns_capacity = hd->ns_capacity;
	h->ns_flags = hd->ns_flags;
	h->has_ns_replicas = hd->ns_replicas != 0;
	h->ns_replicas = hd->ns_replicas;
	h->has_ns_size_hint = hd->ns_size_hint != 0;
	h->ns_size_hint = hd->ns_size_hint;
	h->has_ruid = hd->has_writer;
	h->ruid = hd->writer;
}

static int hold_journal_write(struct journal *j, const Pool__Holding *h)
{
	uint8_t buf[1024];
	size_t len = pool__holding__get_packed_size(h);

	if (len > sizeof(buf))
		return -E2BIG;
	pool__holding__pack(h, buf);
	return journal_append(j, buf, len);
}

/* A journal rewrite: what is durable now. */
static int hold_journal_fill(void *arg, struct journal *j)
{
	struct poold *pd = arg;
	struct hold *hd;
	int rc;

	TAILQ_FOREACH(hd, &pd->holds, entry) {
		Pool__Holding h;

		if (!hd->durable)
			continue;
		hold_msg(hd, &h);
		if ((rc = hold_journal_write(j, &h)) < 0)
			return rc;
	}
	return 0;
}

/*
 * Journal a holding, or the end of one (len 0), rewriting the journal to
 * what is durable once when it is full (which records an end by itself).
 */
static int hold_journal(struct poold *pd, const Pool__Holding *h)
{
	int rc = hold_journal_write(pd->journal, h);
	bool grouped;

	if (rc != -ENOSPC)
		return rc;
	/* A rewrite orders its own flushes (records, then the header that names them). */
	grouped = lend_group_end();
	rc = journal_rewrite(pd->journal, hold_journal_fill, pd);
	if (rc == 0 && h->len > 0)
		rc = hold_journal_write(pd->journal, h);
	if (grouped)
		lend_group_begin();
	return rc;
}

static void hold_unjournal(struct poold *pd, struct hold *hd)
{
	Pool__Holding h = POOL__HOLDING__INIT;
	int rc;

	if (!hd->durable)
		return;
	hd->durable = false;
	h.arena = hd->e.arena;
	h.off = hd->e.off;
	if ((rc = hold_journal(pd, &h)) < 0)
		log_warnx("pmem journal: cannot record the end of extent %llu: %s",
			  (unsigned long long)hd->e.off, err_str(rc));
}

/*
 * A value of a persistent namespace, or an extent of a persistent region,
 * in this node's pmem tier: journaled.
 */
static bool hold_is_durable(struct poold *pd, const Pool__Holding *h)
{
	if (pd->journal == NULL || h->arena != pd->journal_arena)
		return false;
	if (h->rname != NULL && h->rname[0] != '\0')
		return true;
	return h->ns != NULL && h->ns[0] != '\0' && h->has_key &&
	       (h->ns_flags & HOLD_NS_PERSISTENT);
}

/* Whether a holding says what it holds: a KV value, or an extent of a persistent region. */
static bool hold_named(const Pool__Holding *h)
{
	return (h->ns != NULL && h->ns[0] != '\0' && h->has_key) ||
	       (h->rname != NULL && h->rname[0] != '\0');
}

/*
 * Record one holding (replacing any other at its place). With journal, a
 * durable one has its value made durable and is marked for hold_record().
 */
static struct hold *hold_set(struct poold *pd, const Pool__Holding *h, bool journal)
{
	struct hold **pp, *hd;

	if (hold_grow(pd) < 0)
		return NULL;
	pp = hold_slot(pd, h->arena, h->off);
	hd = *pp;
	if (hd != NULL && hd->e.len == h->len && !hold_named(h) &&
	    (hd->ns[0] != '\0' || hd->rname[0] != '\0')) {
		/*
		 * A repair after the coordinator restarted and numbered the value's
		 * namespace (or the region) anew: the same extent, the same contents.
		 * Only the number changes; what the record names, and the journal,
		 * stay.
		 */
		hd->e.region = h->region;
		return hd;
	}
	if (hd == NULL) {
		hd = calloc(1, sizeof(*hd));
		if (hd == NULL)
			return NULL;
		TAILQ_INSERT_TAIL(&pd->holds, hd, entry);
		*pp = hd;
		pd->nholds++;
	} else if (journal && !hold_is_durable(pd, h)) {
		hold_unjournal(pd, hd);
	}
	hd->e = (struct ledger_extent){h->arena, h->off, h->len, h->region};
	hd->rname[0] = '\0';
	if (h->rname != NULL && h->rname[0] != '\0') {
		snprintf(hd->rname, sizeof(hd->rname), "%s", h->rname);
		snprintf(hd->rplacement, sizeof(hd->rplacement), "%s",
			 h->rplacement ? h->rplacement : "");
		hd->rsize = h->rsize;
		hd->rindex = h->rindex;
		hd->rextents = h->rextents;
		hd->rmode = h->rmode;
		hd->ruid = h->ruid;
		hd->rgid = h->rgid;
		hd->rstripe = h->rstripe;
		hd->rclass = h->has_rclass ? h->rclass : CLASS_PERSISTENT;
		hd->ranonymous = h->has_ranonymous && h->ranonymous;
	}
	free(hd->key);
	hd->key = NULL;
	hd->klen = 0;
	hd->ns[0] = '\0';
	if (h->ns != NULL && h->ns[0] != '\0' && h->has_key && h->key.len > 0 &&
	    (hd->key = malloc(h->key.len)) != NULL) {
		snprintf(hd->ns, sizeof(hd->ns), "%s", h->ns);
		memcpy(hd->key, h->key.data, h->key.len);
		hd->klen = h->key.len;
		hd->vlen = h->vlen;
		hd->version = h->version;
		hd->ns_capacity = h->ns_capacity;
		hd->ns_flags = h->ns_flags;
		hd->ns_replicas = h->has_ns_replicas ? h->ns_replicas : 0;
		hd->ns_size_hint = h->has_ns_size_hint ? h->ns_size_hint : 0;
		hd->has_writer = h->has_ruid;
		hd->writer = h->ruid;
	}
	if (journal && hold_is_durable(pd, h) && (hd->rname[0] != '\0' || hd->key != NULL)) {
		/*
		 * A value first (a region's bytes are its users' to persist); hold_add() records
		 * it.
		 */
		hd->durable = false;
		hd->journal_now = true;
		if (hd->rname[0] == '\0')
			lend_persist(pd, h->arena, h->off, h->vlen);
	}
	return hd;
}

/* Journal the record of a holding whose value is durable (hold_set()). */
static void hold_record(struct poold *pd, struct hold *hd, const Pool__Holding *h)
{
	int rc = hold_journal(pd, h);

	if (rc < 0)
		log_warnx("pmem journal: %s '%s' is not durable: %s",
			  hd->rname[0] ? "an extent of region" : "a value of KV namespace",
			  hd->rname[0] ? hd->rname : hd->ns, err_str(rc));
	hd->durable = rc == 0;
	hd->journal_now = false;
}

/*
 * Lender: record extents held for regions and KV values. 0, or -errno when
 * one that should be durable is not (or there was no memory to record it).
 */
int hold_add(struct poold *pd, const Pool__Holdings *hs)
{
	struct hold *hd;
	size_t i;
	int rc = 0;

	/*
	 * All the values made durable, then all their records written and made
	 * durable: two flushes for the batch on a file-backed tier (lend.c).
	 */
	lend_group_begin();
	for (i = 0; i < hs->n_holdings; i++)
		if (hold_set(pd, hs->holdings[i], true) == NULL) {
			log_warnx("out of memory recording a holding");
			rc = -ENOMEM;
		}
	lend_group_values();
	for (i = 0; i < hs->n_holdings; i++) {
		hd = *hold_slot(pd, hs->holdings[i]->arena, hs->holdings[i]->off);
		if (hd != NULL && hd->journal_now)
			hold_record(pd, hd, hs->holdings[i]);
		if (rc == 0 && hold_is_durable(pd, hs->holdings[i]) && (hd == NULL || !hd->durable))
			rc = -EIO;
	}
	lend_group_end();
	return rc;
}

static void hold_unlink(struct poold *pd, struct hold **pp)
{
	struct hold *hd = *pp;

	*pp = hd->hnext;
	TAILQ_REMOVE(&pd->holds, hd, entry);
	pd->nholds--;
}

/* Lender: the extent at (arena, off) is scrubbed: no longer held. */
void hold_drop(struct poold *pd, uint32_t arena, uint64_t off)
{
	struct hold **pp, *hd;

	if (pd->hold_tab_size == 0 || (hd = *(pp = hold_slot(pd, arena, off))) == NULL)
		return;
	hold_unlink(pd, pp);
	hold_unjournal(pd, hd);
	hold_free(hd);
}

/* Lender: forget every holding (the journal keeps the durable ones). */
void hold_clear(struct poold *pd)
{
	struct hold *hd;

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
	Pool__Holding *h = pool__holding__unpack(NULL, len, rec);
	struct hold **pp, *hd = NULL;
	int rc = 0;

	if (h == NULL) {
		log_warnx("pmem journal: a record does not decode: skipped");
		return 0;
	}
	h->arena = pd->journal_arena; /* the tier's arena id in this run */
	if (h->len == 0) {
		if (pd->hold_tab_size > 0 && *(pp = hold_slot(pd, h->arena, h->off)) != NULL) {
			hd = *pp;
			hold_unlink(pd, pp);
			hold_free(hd);
		}
	} else if (lend_ptr(pd, h->arena, h->off, h->len) == NULL || h->vlen > h->len) {
		log_warnx("pmem journal: extent %llu+%llu is outside the tier: dropped",
			  (unsigned long long)h->off, (unsigned long long)h->len);
	} else if ((hd = hold_set(pd, h, false)) != NULL) {
		hd->durable = true;
	} else {
		rc = -ENOMEM;
	}
	pool__holding__free_unpacked(h, NULL);
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
		keep[n++] = hd->e;
	qsort(keep, n, sizeof(*keep), hold_cmp_off);
	keep[n].off = a->size; /* the end of the tier, as a last boundary */
	for (i = 0; i <= n; i++) {
		if (keep[i].off > at)
			lend_zero(pd, a->id, at, keep[i].off - at);
		at = MAX(at, keep[i].off + keep[i].len);
	}
	free(keep);
	if (n > 0) {
		log_info("pmem tier: %zu extent(s) of persistent values and regions kept", n);
		events_add(pd, "journal", "%zu extent(s) of persistent values and regions kept", n);
	}
	return 0;
}

/* This lender's record as a message, pointing into it; hold_msgs_free() it. */
static int hold_msgs(struct poold *pd, Pool__Holdings *hs)
{
	Pool__Holding *h = calloc(pd->nholds ? pd->nholds : 1, sizeof(*h));
	struct hold *hd;
	size_t n = 0;

	pool__holdings__init(hs);
	hs->holdings = calloc(pd->nholds ? pd->nholds : 1, sizeof(*hs->holdings));
	if (h == NULL || hs->holdings == NULL) {
		free(h);
		free(hs->holdings);
		return -ENOMEM;
	}
	TAILQ_FOREACH(hd, &pd->holds, entry) {
		hold_msg(hd, &h[n]);
		hs->holdings[n] = &h[n];
		n++;
	}
	hs->n_holdings = n;
	if (n == 0)
		free(h); /* else hold_msgs_free() finds it as the first holding */
	return 0;
}

static void hold_msgs_free(Pool__Holdings *hs)
{
	if (hs->n_holdings > 0)
		free(hs->holdings[0]);
	free(hs->holdings);
}

/* Lender: answer the coordinator's HoldingsRequest with its record. */
int hold_report(struct poold *pd, struct conn *c, uint64_t req_id)
{
	Pool__Holdings hs;
	int rc;

	if (hold_msgs(pd, &hs) < 0)
		return conn_send_error(c, req_id, -ENOMEM, NULL);
	rc = conn_send(c, WIRE_HOLDINGS_REPLY, req_id, &hs.base);
	hold_msgs_free(&hs);
	return rc;
}

/* Coordinator: reconcile this poold's own record as a lender. */
static void hold_reconcile_self(struct poold *pd)
{
	struct ledger_extent *have = calloc(pd->nholds ? pd->nholds : 1, sizeof(*have));
	Pool__Holdings hs;
	struct hold *hd;
	size_t n = 0;

	if (have == NULL || hold_msgs(pd, &hs) < 0) {
		free(have);
		return;
	}
	TAILQ_FOREACH(hd, &pd->holds, entry)
		have[n++] = hd->e;
	hold_reconcile(pd, pd->node_id, have, n, &hs);
	hold_msgs_free(&hs);
	free(have);
}

/* Coordinator: ask a lender for its record (the reply comes to hold_reconcile()). */
void hold_ask(struct poold *pd, uint32_t node)
{
	Pool__HoldingsRequest req = POOL__HOLDINGS_REQUEST__INIT;

	if (node == pd->node_id)
		hold_reconcile_self(pd);
	else
		coord_notice(pd, node, WIRE_HOLDINGS, &req.base);
}

/*
 * daemon/hold/hold.c - holdings: each lender's own record of the extents it
 * holds, and for which region or KV value.
 *
 * The coordinator tells a lender on each allocation (Hold), a scrub ends
 * the holding; the lender reports its record when the coordinator asks,
 * which reconciles it with the map (hold-sync.c).
 *
 * The record lives in memory, except for the values of persistent KV
 * namespaces in this node's pmem tier: those are also journaled in the
 * tier (journal.c), after the value itself is made durable, so that a
 * restarted poold still holds them and the coordinator takes them back.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/util/util.h"
#include "daemon/hold/ledger.h"

/*
 * The record is kept compact, for a lender may hold millions of small KV
 * values: what the values of a namespace share (its name, number, capacity,
 * flags, replicas and size hint, and their writer) is one struct hold_ns
 * they count references to, interned in pd->hold_ns; the extent's and the
 * value's numbers are varints (LEB128), followed by the key, in the same
 * allocation as the record. The extent of a region (few) keeps its
 * region's record apart, in a struct hold_region of its own.
 */
#define HOLD_DURABLE 0x1u     /* journaled in the pmem tier */
#define HOLD_JOURNAL_NOW 0x2u /* its value made durable: its record is to be journaled */
#define HOLD_REGION 0x4u      /* an extent of a named region: what.rg */
#define HOLD_KV 0x8u	      /* a KV value: what.ns */
#define HOLD_NAMED (HOLD_REGION | HOLD_KV)
#define HOLD_VARINT_MAX 10 /* bytes of a uint64_t as a varint */

/* What the KV values of a namespace held here share. */
struct hold_ns {
	struct htab_node node; /* in pd->hold_ns */
	size_t refs;	       /* the values that point to it */
	uint64_t region;       /* their e.region: the namespace's KV_HOLD_ID */
	uint64_t capacity, size_hint;
	uint32_t flags, replicas;
	bool has_owner;
	uint32_t owner;
	char name[]; /* as kv_record.ns, up to 63 bytes */
};

/* The record of the region an extent is of. */
struct hold_region {
	uint64_t region;	  /* the extent's e.region */
	struct region_record rec; /* its name and placement point into names */
	char names[];
};

struct hold {
	TAILQ_ENTRY(hold) entry;
	struct hold *hnext; /* the chain of its hash bucket */
	uint64_t off;
	union {
		uint64_t region;	/* neither a region's nor a value: e.region */
		struct hold_ns *ns;	/* HOLD_KV */
		struct hold_region *rg; /* HOLD_REGION */
	} what;
	uint32_t reported; /* the report (hold_report.gen) that told it, if it is on its way */
	uint8_t flags;	   /* HOLD_* */
	uint8_t data[];	   /* varints: arena, len; for a value vlen, version, klen, then the key */
};

/*
 * A value with a 16-byte key and up to 11 bytes of varints asks malloc for
 * at most 72 bytes: a chunk of 80 (glibc adds 8 and rounds up to 16).
 */
_Static_assert(offsetof(struct hold, data) <= 46, "struct hold outgrows its malloc chunk");

/*
 * The report of the record on its way to the coordinator, in chunks
 * (hold-codec.c packs them, peer.c sends them as the loop turns). Its cursor
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
	bool broken;	     /* a gone one could not be kept: the report is void */
	struct holding view; /* hold_report_peek()'s, made again at each call */
};

static uint8_t *hold_put(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p++ = (uint8_t)v;
	return p;
}

static uint64_t hold_get(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;

	do {
		v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
	} while (*p++ & 0x80);
	*pp = p;
	return v;
}

static uint32_t hold_arena(const struct hold *hd)
{
	const uint8_t *p = hd->data;

	return (uint32_t)hold_get(&p);
}

static uint64_t hold_len(const struct hold *hd)
{
	const uint8_t *p = hd->data;

	hold_get(&p);
	return hold_get(&p);
}

/*
 * hd's holding, pointing into hd and what it shares (valid while hd is):
 * the bytes hd takes.
 */
static size_t hold_view(const struct hold *hd, struct holding *h)
{
	const uint8_t *p = hd->data;

	memset(h, 0, sizeof(*h));
	h->e.arena = (uint32_t)hold_get(&p);
	h->e.off = hd->off;
	h->e.len = hold_get(&p);
	if (hd->flags & HOLD_REGION) {
		h->e.region = hd->what.rg->region;
		h->has_region = true;
		h->region = hd->what.rg->rec;
	} else if (hd->flags & HOLD_KV) {
		const struct hold_ns *ns = hd->what.ns;

		h->e.region = ns->region;
		h->has_kv = true;
		h->kv = (struct kv_record){.ns = ns->name,
					   .ns_capacity = ns->capacity,
					   .ns_flags = ns->flags,
					   .ns_replicas = ns->replicas,
					   .ns_size_hint = ns->size_hint,
					   .has_owner = ns->has_owner,
					   .owner = ns->owner};
		h->kv.vlen = hold_get(&p);
		h->kv.version = hold_get(&p);
		h->kv.klen = (size_t)hold_get(&p);
		h->kv.key = p;
		p += h->kv.klen;
	} else {
		h->e.region = hd->what.region;
	}
	return MAX(sizeof(*hd), (size_t)(p - (const uint8_t *)hd));
}

static uint64_t hold_ns_hash(const char *name, uint64_t region, bool has_owner, uint32_t owner)
{
	return htab_hash_str(name) ^ htab_hash_u64(region) ^
	       htab_hash_u64((uint64_t)has_owner << 32 | owner);
}

/*
 * What the value kv of the namespace numbered region shares with the
 * others of its namespace: a reference to it. NULL for no memory.
 */
static struct hold_ns *hold_ns_get(struct poold *pd, const struct kv_record *kv, uint64_t region)
{
	struct htab_node *node;
	struct hold_ns *ns;
	char name[64];
	uint64_t hash;
	size_t len;

	snprintf(name, sizeof(name), "%s", kv->ns != NULL ? kv->ns : "");
	hash = hold_ns_hash(name, region, kv->has_owner, kv->owner);
	for (node = htab_first(&pd->hold_ns, hash); node != NULL; node = htab_next(node)) {
		ns = htab_entry(node, struct hold_ns, node);
		if (ns->region == region && ns->capacity == kv->ns_capacity &&
		    ns->size_hint == kv->ns_size_hint && ns->flags == kv->ns_flags &&
		    ns->replicas == kv->ns_replicas && ns->has_owner == kv->has_owner &&
		    ns->owner == kv->owner && strcmp(ns->name, name) == 0) {
			ns->refs++;
			return ns;
		}
	}
	len = strlen(name) + 1;
	if ((ns = malloc(sizeof(*ns) + len)) == NULL)
		return NULL;
	*ns = (struct hold_ns){.refs = 1,
			       .region = region,
			       .capacity = kv->ns_capacity,
			       .size_hint = kv->ns_size_hint,
			       .flags = kv->ns_flags,
			       .replicas = kv->ns_replicas,
			       .has_owner = kv->has_owner,
			       .owner = kv->owner};
	memcpy(ns->name, name, len);
	htab_add(&pd->hold_ns, &ns->node, hash);
	return ns;
}

/* A value no longer refers to ns: it goes with the last. */
static void hold_ns_put(struct poold *pd, struct hold_ns *ns)
{
	if (--ns->refs > 0)
		return;
	htab_del(&pd->hold_ns, &ns->node);
	free(ns);
}

/* A copy of h's region record, owning its name and placement; NULL for no memory. */
static struct hold_region *hold_region_new(const struct holding *h)
{
	char name[64], placement[32];
	struct hold_region *rg;
	size_t nlen, plen;

	snprintf(name, sizeof(name), "%s", h->region.name != NULL ? h->region.name : "");
	snprintf(placement, sizeof(placement), "%s",
		 h->region.placement != NULL ? h->region.placement : "");
	nlen = strlen(name) + 1;
	plen = strlen(placement) + 1;
	if ((rg = malloc(sizeof(*rg) + nlen + plen)) == NULL)
		return NULL;
	rg->region = h->e.region;
	rg->rec = h->region;
	memcpy(rg->names, name, nlen);
	memcpy(rg->names + nlen, placement, plen);
	rg->rec.name = rg->names;
	rg->rec.placement = rg->names + nlen;
	return rg;
}

/*
 * A record of h, linked nowhere: of the region it names, else of the value
 * it names (one with a key), else of its extent only. A holding that would
 * name both a region and a value (no coordinator tells one) names the
 * region. NULL for no memory.
 */
static struct hold *hold_new(struct poold *pd, const struct holding *h)
{
	uint8_t nums[5 * HOLD_VARINT_MAX], *p = nums;
	struct hold *hd;
	uint8_t kind = 0;
	size_t klen = 0;

	p = hold_put(p, h->e.arena);
	p = hold_put(p, h->e.len);
	if (h->has_region) {
		kind = HOLD_REGION;
	} else if (h->has_kv && h->kv.klen > 0) {
		kind = HOLD_KV;
		klen = h->kv.klen;
		p = hold_put(p, h->kv.vlen);
		p = hold_put(p, h->kv.version);
		p = hold_put(p, klen);
	}
	hd = malloc(MAX(sizeof(*hd), offsetof(struct hold, data) + (size_t)(p - nums) + klen));
	if (hd == NULL)
		return NULL;
	memset(hd, 0, offsetof(struct hold, data));
	hd->off = h->e.off;
	hd->flags = kind;
	memcpy(hd->data, nums, (size_t)(p - nums));
	if (klen > 0)
		memcpy(hd->data + (p - nums), h->kv.key, klen);
	if (kind == HOLD_REGION) {
		if ((hd->what.rg = hold_region_new(h)) == NULL)
			goto out_free;
	} else if (kind == HOLD_KV) {
		if ((hd->what.ns = hold_ns_get(pd, &h->kv, h->e.region)) == NULL)
			goto out_free;
	} else {
		hd->what.region = h->e.region;
	}
	return hd;
out_free:
	free(hd);
	return NULL;
}

static void hold_free(struct poold *pd, struct hold *hd)
{
	if (hd->flags & HOLD_KV)
		hold_ns_put(pd, hd->what.ns);
	else if (hd->flags & HOLD_REGION)
		free(hd->what.rg);
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
	rep->gone[rep->ngone++] = (struct hold_place){hold_arena(hd), hd->off};
}

/* A holding's place hashed: the high half of the product spreads it. */
static uint32_t hold_hash(uint32_t arena, uint64_t off)
{
	return (uint32_t)(((off ^ (uint64_t)arena << 56) * UINT64_C(0x9e3779b97f4a7c15)) >> 32);
}

/*
 * The record's table grows a bucket at a time as holdings come (linear
 * hashing, as the KV index's kv_bucket()): buckets [0, size - low) were
 * split by the next bit of the hash, the others not yet.
 */
static struct hold **hold_slot(struct poold *pd, uint32_t arena, uint64_t off)
{
	uint32_t h = hold_hash(arena, off);
	size_t b = h & (2 * pd->hold_tab_low - 1);
	struct hold **pp = &pd->hold_tab[b < pd->hold_tab_size ? b : h & (pd->hold_tab_low - 1)];

	while (*pp != NULL && ((*pp)->off != off || hold_arena(*pp) != arena))
		pp = &(*pp)->hnext;
	return pp;
}

/*
 * Keep the table about as large as the number of holdings, one bucket
 * split at a time: 0 or -ENOMEM (only for its first buckets; later,
 * without memory, chains grow longer).
 */
static int hold_grow(struct poold *pd)
{
	struct hold **pp, *hd;
	size_t to;

	if (pd->hold_tab == NULL) {
		if ((pd->hold_tab = calloc(2 * 256, sizeof(*pd->hold_tab))) == NULL)
			return -ENOMEM;
		pd->hold_tab_size = pd->hold_tab_low = 256;
		return 0;
	}
	if (pd->nholds < pd->hold_tab_size)
		return 0;
	if (pd->hold_tab_size == 2 * pd->hold_tab_low) {
		struct hold **tab = realloc(pd->hold_tab, 4 * pd->hold_tab_low * sizeof(*tab));

		if (tab == NULL)
			return 0;
		pd->hold_tab = tab;
		pd->hold_tab_low *= 2;
	}
	to = pd->hold_tab_size;
	pd->hold_tab[to] = NULL;
	for (pp = &pd->hold_tab[to - pd->hold_tab_low]; (hd = *pp) != NULL;) {
		if ((hold_hash(hold_arena(hd), hd->off) & (2 * pd->hold_tab_low - 1)) == to) {
			*pp = hd->hnext;
			hd->hnext = pd->hold_tab[to];
			pd->hold_tab[to] = hd;
		} else {
			pp = &hd->hnext;
		}
	}
	pd->hold_tab_size++;
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
	struct holding h;
	struct hold *hd;
	int rc;

	TAILQ_FOREACH(hd, &pd->holds, entry) {
		if (!(hd->flags & HOLD_DURABLE))
			continue;
		hold_view(hd, &h);
		if ((rc = hold_journal_write(j, &h)) < 0)
			return rc;
	}
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
	struct holding end = {
	    .e = {.arena = hold_arena(hd), .off = hd->off, .len = 0, .region = 0}};
	int rc;

	if (!(hd->flags & HOLD_DURABLE))
		return;
	hd->flags &= ~HOLD_DURABLE;
	if ((rc = hold_journal(pd, &end)) < 0)
		log_warnx("pmem journal: cannot record the end of extent %llu: %s",
			  (unsigned long long)hd->off, err_str(rc));
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

/* hd takes the place of old (at *pp in its chain) in the record, and old goes. */
static void hold_replace(struct poold *pd, struct hold **pp, struct hold *old, struct hold *hd)
{
	hd->flags |= old->flags & (HOLD_DURABLE | HOLD_JOURNAL_NOW);
	hd->reported = old->reported;
	hd->hnext = old->hnext;
	*pp = hd;
	TAILQ_INSERT_BEFORE(old, hd, entry);
	TAILQ_REMOVE(&pd->holds, old, entry);
	if (pd->hold_report != NULL && pd->hold_report->next == old)
		pd->hold_report->next = hd;
	hold_free(pd, old);
}

/* The holding of a region or a value is numbered region now: 0 or -ENOMEM. */
static int hold_renumber(struct poold *pd, struct hold *hd, uint64_t region)
{
	struct hold_ns *ns = hd->what.ns, *to;
	struct kv_record kv;

	if (hd->flags & HOLD_REGION) {
		hd->what.rg->region = hd->what.rg->rec.id = region;
		return 0;
	}
	kv = (struct kv_record){.ns = ns->name,
				.ns_capacity = ns->capacity,
				.ns_flags = ns->flags,
				.ns_replicas = ns->replicas,
				.ns_size_hint = ns->size_hint,
				.has_owner = ns->has_owner,
				.owner = ns->owner};
	if ((to = hold_ns_get(pd, &kv, region)) == NULL)
		return -ENOMEM;
	hd->what.ns = to;
	hold_ns_put(pd, ns);
	return 0;
}

/*
 * Record one holding (replacing any other at its place). With journal, a
 * durable one has its value made durable and is marked for hold_record().
 * NULL for no memory, the record as it was.
 */
static struct hold *hold_set(struct poold *pd, const struct holding *h, bool journal)
{
	struct hold **pp, *old, *hd;

	if (hold_grow(pd) < 0)
		return NULL;
	pp = hold_slot(pd, h->e.arena, h->e.off);
	old = *pp;
	if (old != NULL && hold_len(old) == h->e.len && !hold_named(h) &&
	    (old->flags & HOLD_NAMED)) {
		/*
		 * A repair after the coordinator restarted and numbered the value's
		 * namespace (or the region) anew: the same extent, the same contents.
		 * Only the number changes; what the record names, and the journal,
		 * stay.
		 */
		if (hold_renumber(pd, old, h->e.region) < 0)
			return NULL;
		hold_report_changed(pd, old);
		return old;
	}
	if ((hd = hold_new(pd, h)) == NULL)
		return NULL;
	if (old == NULL) {
		TAILQ_INSERT_TAIL(&pd->holds, hd, entry);
		*pp = hd;
		pd->nholds++;
		if (pd->hold_report != NULL && pd->hold_report->next == NULL)
			pd->hold_report->next = hd; /* (the report had passed every other) */
	} else {
		hold_report_changed(pd, old);
		hold_replace(pd, pp, old, hd);
		if (journal && !hold_is_durable(pd, h))
			hold_unjournal(pd, hd);
	}
	if (journal && hold_is_durable(pd, h) && (hd->flags & HOLD_NAMED)) {
		/*
		 * A value first (a region's bytes are its users' to persist); hold_add() records
		 * it.
		 */
		hd->flags = (hd->flags & ~HOLD_DURABLE) | HOLD_JOURNAL_NOW;
		if (!(hd->flags & HOLD_REGION))
			lend_persist(pd, h->e.arena, h->e.off, h->kv.vlen);
	}
	return hd;
}

/* Journal the record of a holding whose value is durable (hold_set()). */
static void hold_record(struct poold *pd, struct hold *hd)
{
	struct holding h;
	int rc;

	hold_view(hd, &h);
	rc = hold_journal(pd, &h);
	if (rc < 0)
		log_warnx("pmem journal: %s '%s' is not durable: %s",
			  h.has_region ? "an extent of region" : "a value of KV namespace",
			  h.has_region ? h.region.name : h.kv.ns, err_str(rc));
	hd->flags &= ~(HOLD_DURABLE | HOLD_JOURNAL_NOW);
	if (rc == 0)
		hd->flags |= HOLD_DURABLE;
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
		if (hd != NULL && (hd->flags & HOLD_JOURNAL_NOW))
			hold_record(pd, hd);
		if (rc == 0 && hold_is_durable(pd, &h[i]) &&
		    (hd == NULL || !(hd->flags & HOLD_DURABLE)))
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

/* Lender: the holding that starts at off of arena, if any, is no longer held. */
void hold_forget(struct poold *pd, uint32_t arena, uint64_t off)
{
	struct hold **pp, *hd;
	struct holding h;

	if (pd->hold_tab_size == 0 || (hd = *(pp = hold_slot(pd, arena, off))) == NULL)
		return;
	hold_unlink(pd, pp);
	hold_unjournal(pd, hd);
	heap_freed(hold_view(hd, &h)); /* (many in a row when a namespace goes) */
	hold_free(pd, hd);
}

/*
 * Lender: the coordinator scrubs an extent before it lends its memory
 * again: the windows carved in it go, it is zeroed, and no longer held.
 * At once: scrub.c does large ones in slices.
 */
void hold_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len)
{
	carve_release(pd, arena, off, len);
	lend_scrub(pd, arena, off, len);
	hold_forget(pd, arena, off);
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
	uint64_t hlen;
	void *ptr;

	if (hd == NULL)
		return last ? -ENOENT : -EAGAIN;
	hlen = hold_len(hd);
	if (off > hlen || len > hlen - off)
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
		hold_free(pd, hd);
	}
	htab_free(&pd->hold_ns);
	free(pd->hold_tab);
	pd->hold_tab = NULL;
	pd->hold_tab_size = pd->hold_tab_low = pd->nholds = 0;
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
			hold_free(pd, hd);
		}
	} else if (lend_ptr(pd, h->e.arena, h->e.off, h->e.len) == NULL ||
		   (h->has_kv && h->kv.vlen > h->e.len)) {
		log_warnx("pmem journal: extent %llu+%llu is outside the tier: dropped",
			  (unsigned long long)h->e.off, (unsigned long long)h->e.len);
	} else if ((hd = hold_set(pd, h, false)) != NULL) {
		hd->flags |= HOLD_DURABLE;
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
	struct holding h;
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
	TAILQ_FOREACH(hd, &pd->holds, entry) {
		hold_view(hd, &h);
		keep[n++] = h.e;
	}
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
		hold_view(hd, &h[n++]);
	*ret = h;
	*ret_n = n;
	return 0;
}

/*
 * This lender's record as extents only, appended to *arr a slice at a
 * time: what a ledger pass of its own coordinator compares, without the
 * records' contents. *cursor (0 at first) is the next bucket of the
 * record's table; a slice ends after about max holdings. 1 while there is
 * more, 0 at the end, -ENOMEM. (The table may grow between slices: a
 * holding may then be listed twice, one added meanwhile not at all.)
 */
int hold_extents(struct poold *pd, size_t *cursor, size_t max, struct ledger_extent **arr,
		 size_t *n, size_t *cap)
{
	size_t done = 0;

	for (; *cursor < pd->hold_tab_size && done < max; (*cursor)++) {
		struct hold *hd;

		for (hd = pd->hold_tab[*cursor]; hd != NULL; hd = hd->hnext, done++) {
			const uint8_t *p = hd->data;
			uint32_t arena = (uint32_t)hold_get(&p);
			uint64_t len = hold_get(&p);

			if (ledger_append(arr, n, cap, arena, hd->off, len,
					  hd->flags & HOLD_REGION ? hd->what.rg->region
					  : hd->flags & HOLD_KV	  ? hd->what.ns->region
								  : hd->what.region) < 0)
				return -ENOMEM;
		}
	}
	return *cursor < pd->hold_tab_size ? 1 : 0;
}

/*
 * The holding at off of arena, pointing into the record (valid until it
 * changes); false when there is none.
 */
bool hold_at(struct poold *pd, uint32_t arena, uint64_t off, struct holding *ret)
{
	struct hold *hd = pd->hold_tab != NULL ? *hold_slot(pd, arena, off) : NULL;

	if (hd == NULL)
		return false;
	hold_view(hd, ret);
	return true;
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
 * until it changes, or the next call), NULL when all were reported;
 * hold_report_take() it once it is in a chunk.
 */
const struct holding *hold_report_peek(struct poold *pd)
{
	struct hold_report *rep = pd->hold_report;

	if (rep == NULL || rep->next == NULL)
		return NULL;
	hold_view(rep->next, &rep->view);
	return &rep->view;
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

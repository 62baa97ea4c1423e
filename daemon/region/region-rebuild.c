/*
 * daemon/region/region-rebuild.c - the address space rebuilt after the coordinator
 * restarted: the journal's regions, leases and destroyed regions replayed,
 * and the extents lenders report adopted back into their regions (from the
 * records region_record() makes).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/region/region.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"
#include "daemon/region/region-int.h"

/*
 * What a lender records of an extent of region id, at (arena, off) on
 * node: the region, so that it can be rebuilt by a restarted coordinator
 * from the lenders' memory, and for a persistent region from the lender's
 * journal after the lender restarts too. An anonymous region comes back
 * only from the coordinator's journal, which has its leases. false: no
 * region has that extent.
 */
bool region_extent_record(struct poold *pd, uint32_t node, uint64_t id, uint32_t arena,
			  uint64_t off, struct region_record *rec)
{
	struct region *r;
	size_t i;

	if (pd->regions == NULL || !HOLD_REGION_ID(id))
		return false;
	r = region_find_id(pd->regions, id);
	if (r == NULL)
		return false;
	for (i = 0; i < r->next; i++)
		if (r->ext[i].node == node && r->ext[i].arena == arena && r->ext[i].off == off)
			break;
	if (i == r->next)
		return false;
	region_record(r, rec);
	rec->index = (uint32_t)r->ext[i].region_off;
	return true;
}

static int region_ext_cmp(const void *a, const void *b)
{
	const struct region_extent *x = a, *y = b;

	return x->region_off < y->region_off ? -1 : x->region_off > y->region_off;
}

/* Whether a record of a region (a lender's, or the journal's) holds up. */
static bool region_record_ok(const struct region_record *rec)
{
	return rec->cls <= CLASS_PERSISTENT && rec->name != NULL && region_name_ok(rec->name) &&
	       rec->size > 0 && rec->size <= REGION_MAX_SIZE && rec->extents > 0 &&
	       rec->extents <= 4096 && rec->index < rec->extents && rec->mode <= 0777;
}

/*
 * A region known from a record, not yet from its extents: lost until they
 * are all back. id 0 takes the next id and global address; otherwise the
 * region keeps those it had (the coordinator's journal).
 */
static struct region *region_shell(struct poold *pd, const struct region_record *rec, uint64_t id,
				   uint64_t base)
{
	struct regions *rs = pd->regions;
	struct region *r;

	if (rs->count >= (size_t)pd->conf->max_regions || (r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	TAILQ_INIT(&r->lease_list);
	r->cls = rec->cls;
	snprintf(r->name, sizeof(r->name), "%s", rec->name);
	snprintf(r->placement, sizeof(r->placement), "%s",
		 rec->placement != NULL && rec->placement[0] ? rec->placement : "any");
	r->size = rec->size;
	r->mode = rec->mode;
	r->uid = rec->uid;
	r->gid = rec->gid;
	r->stripe = rec->stripe;
	r->anonymous = rec->anonymous;
	r->lost = true;
	r->refs_unknown = true;
	r->want_ext = rec->extents;
	if (id == 0) {
		r->id = ++rs->next_id;
		r->base = rs->next_base;
		rs->next_base += region_gva_len(r->size);
	} else {
		r->id = id;
		r->base = base;
		rs->next_id = MAX(rs->next_id, id);
		rs->next_base = MAX(rs->next_base, base + region_gva_len(r->size));
	}
	if (region_link(pd, r) < 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* Forget a region only the journal's replay has made: no extents, no leases. */
static void region_unreplay(struct poold *pd, struct region *r)
{
	region_unlink(pd, r);
	free(r);
}

/* A region of the coordinator's journal: known again, lost until its lenders report its extents. */
int region_replay(struct poold *pd, const struct region_record *rec, uint64_t base)
{
	struct region *r;

	if (!region_record_ok(rec) || rec->id == 0 || !HOLD_REGION_ID(rec->id))
		return -EINVAL;
	if ((r = region_find(pd->regions, rec->name)) != NULL)
		region_unreplay(pd, r); /* made again: the later record is the region */
	return region_shell(pd, rec, rec->id, base) != NULL ? 0 : -ENOMEM;
}

/*
 * A lease of the journal taken (or ended) on an anonymous region. It holds
 * until its node registers and says whether the session is live, for at
 * most LEASE_CONFIRM_MS; this poold's own sessions died with it.
 */
void region_replay_lease(struct poold *pd, uint64_t id, uint32_t node, uint64_t session,
			 uint64_t incarnation, bool taken)
{
	uint64_t now = units_now_ms();
	struct region *r;
	struct lease *l;

	r = region_find_id(pd->regions, id);
	if (r == NULL || !r->anonymous)
		return;
	TAILQ_FOREACH(l, &r->lease_list, entry)
		if (l->node == node && l->session == session)
			break;
	if (!taken) {
		if (l != NULL)
			region_lease_drop(NULL, r, l);
		return;
	}
	if (l == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL)
			return;
		TAILQ_INSERT_TAIL(&r->lease_list, l, entry);
		r->leases++;
	}
	l->node = node;
	l->session = session;
	l->incarnation = incarnation;
	l->unconfirmed = node != pd->node_id;
	l->ends_at = now + (l->unconfirmed ? LEASE_CONFIRM_MS : (uint64_t)pd->conf->lease_grace_ms);
}

/* A region of the journal that went, with the lenders that could not be told. */
void region_replay_gone(struct poold *pd, uint64_t id, const char *name, const uint32_t *nodes,
			size_t n)
{
	struct region *r;
	size_t i;

	r = region_find_id(pd->regions, id);
	if (r != NULL)
		region_unreplay(pd, r);
	for (i = 0; i < n; i++)
		region_tombstone_add(pd, id, name, nodes[i]);
}

/*
 * An extent of a region that a lender holds and the map does not (the
 * coordinator restarted, or for a persistent region the lender did): the
 * region comes back, lost until every extent of it is back. 0, or -errno
 * when it cannot be taken (another region has the name, the record does
 * not hold up).
 */
int region_adopt(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		 const struct region_record *rec)
{
	struct regions *rs = pd->regions;
	struct lender_pool *lp = region_pool(rs, node, arena);
	enum region_class cls = rec->cls;
	struct region_extent *ext;
	struct region *r;
	bool fresh = false;
	size_t i;

	if (lp == NULL || !region_record_ok(rec) ||
	    lp->tier != (cls == CLASS_PERSISTENT ? TIER_PMEM : TIER_DRAM))
		return -EINVAL;
	r = region_find(rs, rec->name);
	if (r == NULL && rec->anonymous)
		return -ENOENT; /* its leases are not known: kept unclaimed */
	if (r == NULL) {
		if ((r = region_shell(pd, rec, 0, 0)) == NULL)
			return -ENOMEM;
		r->creator_node = node;
		fresh = true;
	} else if (r->cls != cls || !r->lost || r->want_ext != rec->extents ||
		   r->size != rec->size || r->uid != rec->uid || r->anonymous != rec->anonymous) {
		return -EEXIST;
	}
	for (i = 0; i < r->next; i++)
		if (r->ext[i].region_off == rec->index)
			return r->ext[i].node == node && r->ext[i].arena == arena &&
				       r->ext[i].off == off
				   ? 0
				   : -EEXIST;
	if (extent_reserve(lp->alloc, off, len) < 0 ||
	    (ext = realloc(r->ext, (r->next + 1) * sizeof(*ext))) == NULL) {
		if (fresh)
			region_free(pd, r);
		return -EBUSY;
	}
	r->ext = ext;
	r->ext[r->next++] = (struct region_extent){node, arena, off, len, rec->index};
	if (r->next == r->want_ext) {
		qsort(r->ext, r->next, sizeof(*r->ext), region_ext_cmp);
		r->lost = false;
		r->want_ext = 0;
		if (r->refs_unknown && strncmp(r->name, "snap/", 5) == 0)
			snap_recount_want(pd); /* a snapshot manifest to read again */
		log_info("region '%s' is back whole from its lender(s)", r->name);
		events_add(pd, "region", "region '%s' is back whole from its lender(s)", r->name);
	} else if (fresh) {
		log_info("region '%s' comes back from its lenders: %zu of %zu extent(s)", r->name,
			 r->next, r->want_ext);
	}
	if (fresh)
		pd->regions->hooks->logged(pd, r);
	region_account(pd);
	return 0;
}

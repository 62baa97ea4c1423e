/*
 * daemon/control/grant.c - what each local client session may reach, as its own
 * poold knows it: the check in front of every carried transfer (xfer.c).
 *
 * Clients hold no endpoint to a lender and no key (UCX's software RMA does
 * not bound addresses by the key): their poold carries every transfer, and
 * only into what the coordinator granted the session. Grants come from the
 * coordinator's replies as they pass this poold on their way to the client
 * (grant_reply()), whether the coordinator is this poold or another:
 *
 *  - a region open or create (RegionReply.access): the region's extents,
 *    read or read-write, until the session's opens are closed, the region is
 *    gone, or the session ends; a region that moved is refused until its
 *    new layout passes (the client's stat after the notice);
 *  - a KV lookup (read) or reserve (write) (KvReply.access): each place of
 *    each value, until the session releases, commits or aborts that version
 *    (grant_request(), on the request's way out), or ends.
 *
 * Nothing a client sends can widen a grant: only replies make them.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "proto/pool_contract.h"

#define GRANT_BUCKETS 256
#define GRANT_MAX_REGIONS 4096 /* regions one session holds open */
#define GRANT_MAX_PLACES 65536 /* KV places one session holds at once */

struct grant_region {
	LIST_ENTRY(grant_region) entry;
	uint64_t id;
	char name[64];
	uint64_t size, stripe;
	unsigned access, opens;
	bool stale;   /* moved: refused until its new layout passes */
	bool expired; /* its lease may be gone: refused until the session opens it again */
	size_t n;
	struct region_extent *ext;
};

struct grant_place {
	uint32_t node, arena;
	uint64_t off, len, version;
	bool write, used;
};

struct grant_session {
	struct grant_session *next;
	uint64_t session;
	LIST_HEAD(, grant_region) regions;
	size_t nregions;
	struct grant_place *places; /* open addressing on (node, arena, off) */
	size_t cap, nplaces;
};

struct grants {
	struct grant_session *bucket[GRANT_BUCKETS];
};

static struct grant_session *grant_session(struct poold *pd, uint64_t session, bool make)
{
	struct grant_session **pp, *gs;

	if (pd->grants == NULL) {
		if (!make || (pd->grants = calloc(1, sizeof(*pd->grants))) == NULL)
			return NULL;
	}
	pp = &pd->grants->bucket[session % GRANT_BUCKETS];
	for (gs = *pp; gs != NULL; gs = gs->next)
		if (gs->session == session)
			return gs;
	if (!make || (gs = calloc(1, sizeof(*gs))) == NULL)
		return NULL;
	gs->session = session;
	LIST_INIT(&gs->regions);
	gs->next = *pp;
	*pp = gs;
	return gs;
}

static void grant_region_free(struct grant_session *gs, struct grant_region *g)
{
	LIST_REMOVE(g, entry);
	gs->nregions--;
	free(g->ext);
	free(g);
}

static struct grant_region *grant_region_find(struct grant_session *gs, uint64_t id,
					      const char *name)
{
	struct grant_region *g;

	LIST_FOREACH(g, &gs->regions, entry)
		if (name ? strcmp(g->name, name) == 0 : g->id == id)
			return g;
	return NULL;
}

/* A region's layout from its reply: into g (replacing what it had). */
static int grant_region_layout(struct grant_region *g, const Pool__RegionInfo *ri)
{
	struct region_extent *ext = calloc(ri->n_extents ? ri->n_extents : 1, sizeof(*ext));
	size_t i;

	if (ext == NULL)
		return -ENOMEM;
	for (i = 0; i < ri->n_extents; i++) {
		const Pool__Extent *e = ri->extents[i];
		size_t slot = ri->stripe ? e->region_off : i;

		if (slot >= ri->n_extents) {
			free(ext);
			return POOL_EPROTOCOL;
		}
		ext[slot] =
		    (struct region_extent){e->node, e->arena, e->off, e->len, e->region_off};
	}
	free(g->ext);
	g->ext = ext;
	g->n = ri->n_extents;
	g->size = ri->size;
	g->stripe = ri->stripe;
	g->stale = false;
	return 0;
}

static size_t grant_slot(const struct grant_session *gs, uint32_t node, uint32_t arena,
			 uint64_t off)
{
	uint64_t h = (off >> 6) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)node << 32 | arena);

	return (size_t)(h ^ h >> 29) & (gs->cap - 1);
}

/* Put a place in the session's table (growing it); an equal place is replaced. */
static int grant_place_add(struct grant_session *gs, const struct grant_place *p)
{
	size_t i;

	if (gs->nplaces >= GRANT_MAX_PLACES)
		return -EUSERS;
	if (2 * (gs->nplaces + 1) > gs->cap) {
		size_t old = gs->cap, j;
		struct grant_place *was = gs->places;

		gs->cap = old ? 2 * old : 64;
		gs->places = calloc(gs->cap, sizeof(*gs->places));
		if (gs->places == NULL) {
			gs->places = was;
			gs->cap = old;
			return -ENOMEM;
		}
		gs->nplaces = 0;
		for (j = 0; j < old; j++)
			if (was[j].used)
				grant_place_add(gs, &was[j]);
		free(was);
	}
	for (i = grant_slot(gs, p->node, p->arena, p->off); gs->places[i].used;
	     i = (i + 1) & (gs->cap - 1))
		if (gs->places[i].node == p->node && gs->places[i].arena == p->arena &&
		    gs->places[i].off == p->off)
			break;
	if (!gs->places[i].used)
		gs->nplaces++;
	gs->places[i] = *p;
	gs->places[i].used = true;
	return 0;
}

static int grant_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool grant_version_in(const struct grant_place *p, const uint64_t *versions, size_t n)
{
	return p->used && bsearch(&p->version, versions, n, sizeof(*versions), grant_cmp_u64);
}

/* Rebuild the table without the places of the given versions (sorted). */
static void grant_places_drop(struct grant_session *gs, const uint64_t *versions, size_t n)
{
	struct grant_place *was = gs->places;
	size_t cap = gs->cap, j, dropped = 0;

	for (j = 0; j < cap; j++)
		dropped += grant_version_in(&was[j], versions, n);
	if (dropped == 0)
		return;
	/* Open addressing has no holes to leave: reinsert the rest. */
	gs->places = calloc(cap, sizeof(*gs->places));
	if (gs->places == NULL) {
		/* Without memory: they stay in the chains, granting nothing. */
		for (j = 0; j < cap; j++)
			if (grant_version_in(&was[j], versions, n))
				was[j].len = 0;
		gs->places = was;
		return;
	}
	gs->nplaces = 0;
	for (j = 0; j < cap; j++)
		if (was[j].used && !grant_version_in(&was[j], versions, n))
			grant_place_add(gs, &was[j]);
	free(was);
}

/*
 * A reply on its way to the local client of session: take in what it
 * grants. A grant that cannot be kept (out of memory, over the limits) is
 * logged; the client's transfers are then refused, never widened.
 */
void grant_reply(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg)
{
	struct grant_session *gs;
	size_t i, c;

	if (type == WIRE_REGION_REPLY) {
		const Pool__RegionReply *rr = (const Pool__RegionReply *)msg;
		const Pool__RegionInfo *ri = rr->region;
		struct grant_region *g;
		unsigned access = rr->has_access ? rr->access : 0;

		gs = grant_session(pd, session, access != 0);
		g = gs ? grant_region_find(gs, ri->id, NULL) : NULL;
		if (g == NULL && access == 0)
			return; /* a stat of a region the session has not opened */
		if (g == NULL) {
			if (gs->nregions >= GRANT_MAX_REGIONS ||
			    (g = calloc(1, sizeof(*g))) == NULL) {
				log_warnx("session %llu: cannot keep its grant of region '%s'",
					  (unsigned long long)session, ri->name);
				return;
			}
			g->id = ri->id;
			snprintf(g->name, sizeof(g->name), "%s", ri->name);
			LIST_INSERT_HEAD(&gs->regions, g, entry);
			gs->nregions++;
		}
		if (ri->n_extents > 0 && grant_region_layout(g, ri) < 0)
			g->stale = true;
		if (access != 0 && g->expired) { /* opened again: the old opens are void */
			g->expired = false;
			g->access = access;
			g->opens = 1;
		} else if (access != 0) {
			g->access |= access;
			g->opens++;
		}
		return;
	}
	if (type == WIRE_KV_REPLY) {
		const Pool__KvReply *kr = (const Pool__KvReply *)msg;

		if (!kr->has_access || kr->n_locations == 0 ||
		    (gs = grant_session(pd, session, true)) == NULL)
			return;
		for (i = 0; i < kr->n_locations; i++) {
			const Pool__KvLocation *l = kr->locations[i];

			if (l->status != 0 || !l->has_node)
				continue;
			for (c = 0; c <= l->n_copies; c++) {
				struct grant_place p = {
				    .node = c ? l->copies[c - 1]->node : l->node,
				    .arena = c ? l->copies[c - 1]->arena : l->arena,
				    .off = c ? l->copies[c - 1]->off : l->off,
				    .len = l->len,
				    .version = l->version,
				    .write = kr->access & 2};

				if (grant_place_add(gs, &p) < 0) {
					log_warnx("session %llu: cannot keep a KV grant (%zu held)",
						  (unsigned long long)session, gs->nplaces);
					return;
				}
			}
		}
	}
}

/*
 * Whether a request of type of a local session may end a grant it holds (a
 * region close while it holds regions, a KV request while it holds
 * places): the caller unpacks it then for grant_request(), not otherwise.
 */
bool grant_wants(struct poold *pd, uint64_t session, uint16_t type)
{
	struct grant_session *gs = grant_session(pd, session, false);

	return gs != NULL && ((type == WIRE_REGION_CLOSE && gs->nregions > 0) ||
			      (type == WIRE_KV && gs->nplaces > 0));
}

/*
 * A request (msg) of a local session, before it is served or forwarded: a
 * region close, or a KV release, commit or abort, ends what it names.
 */
void grant_request(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg)
{
	struct grant_session *gs = grant_session(pd, session, false);

	if (gs == NULL)
		return;
	if (type == WIRE_REGION_CLOSE) {
		struct grant_region *g = grant_region_find(gs, 0, ((Pool__RegionName *)msg)->name);

		if (g != NULL && --g->opens == 0)
			grant_region_free(gs, g);
	} else {
		const Pool__KvRequest *kr = (const Pool__KvRequest *)msg;

		if ((kr->op == POOL__KV_OP__KV_OP_RELEASE || kr->op == POOL__KV_OP__KV_OP_COMMIT ||
		     kr->op == POOL__KV_OP__KV_OP_ABORT) &&
		    kr->n_versions > 0) {
			uint64_t *v = malloc(kr->n_versions * sizeof(*v));

			if (v != NULL) {
				memcpy(v, kr->versions, kr->n_versions * sizeof(*v));
				qsort(v, kr->n_versions, sizeof(*v), grant_cmp_u64);
				grant_places_drop(gs, v, kr->n_versions);
				free(v);
			}
		}
	}
}

/* A region notice for a local session: gone ends its grant, moved makes it stale. */
void grant_notice(struct poold *pd, uint64_t session, const char *name, bool gone)
{
	struct grant_session *gs = grant_session(pd, session, false);
	struct grant_region *g = gs ? grant_region_find(gs, 0, name) : NULL;

	if (g == NULL)
		return;
	if (gone)
		grant_region_free(gs, g);
	else
		g->stale = true;
}

/* Everything a session held ends with it. */
void grant_session_end(struct poold *pd, uint64_t session)
{
	struct grant_session **pp, *gs;

	if (pd->grants == NULL)
		return;
	for (pp = &pd->grants->bucket[session % GRANT_BUCKETS]; (gs = *pp) != NULL; pp = &gs->next)
		if (gs->session == session)
			break;
	if (gs == NULL)
		return;
	*pp = gs->next;
	while (!LIST_EMPTY(&gs->regions))
		grant_region_free(gs, LIST_FIRST(&gs->regions));
	free(gs->places);
	free(gs);
}

/*
 * This node registered again with its coordinator (which may have
 * restarted, and lost the leases and pins behind the grants): KV grants
 * end, and region grants are refused (-EKEYEXPIRED) until their session
 * opens the region again, which takes a new lease.
 */
void grant_expire_all(struct poold *pd)
{
	struct grant_session *gs;
	struct grant_region *g;
	size_t b;

	for (b = 0; pd->grants != NULL && b < GRANT_BUCKETS; b++)
		for (gs = pd->grants->bucket[b]; gs != NULL; gs = gs->next) {
			LIST_FOREACH(g, &gs->regions, entry)
				g->expired = true;
			free(gs->places);
			gs->places = NULL;
			gs->cap = gs->nplaces = 0;
		}
}

/* Every session's grants end (poold stops, or this node was fenced). */
void grant_clear(struct poold *pd)
{
	size_t b;

	for (b = 0; pd->grants != NULL && b < GRANT_BUCKETS; b++)
		while (pd->grants->bucket[b] != NULL)
			grant_session_end(pd, pd->grants->bucket[b]->session);
	free(pd->grants);
	pd->grants = NULL;
}

/*
 * Resolve [off, off+len) of a region the session opened into pieces of
 * extents (at most max), checking the access (write: read-write). The
 * number of pieces, or -EPERM (not granted), -EKEYEXPIRED (open it again),
 * -EACCES (read-only), -ESTALE
 * (moved: stat it again), -ERANGE (outside it), -E2BIG (too many pieces).
 */
/* The session's grant of a region, if it may be used now: else NULL and why in *ret_rc. */
static const struct grant_region *grant_region_usable(struct poold *pd, uint64_t session,
						      uint64_t region, bool write, int *ret_rc)
{
	struct grant_session *gs = grant_session(pd, session, false);
	struct grant_region *g = gs ? grant_region_find(gs, region, NULL) : NULL;

	*ret_rc = g == NULL		      ? -EPERM
		  : g->expired		      ? -EKEYEXPIRED
		  : write && !(g->access & 2) ? -EACCES
		  : g->stale		      ? -ESTALE
					      : 0;
	return *ret_rc == 0 ? g : NULL;
}

int grant_region_pieces(struct poold *pd, uint64_t session, uint64_t region, uint64_t off,
			uint64_t len, bool write, struct grant_piece *pieces, size_t max)
{
	int rc;
	const struct grant_region *g = grant_region_usable(pd, session, region, write, &rc);
	uint64_t pos = 0;
	size_t n = 0;

	if (g == NULL)
		return rc;
	if (off > g->size || len > g->size - off || g->n == 0)
		return -ERANGE;
	while (pos < len) {
		uint64_t o = off + pos, step, loc;
		const struct region_extent *x;

		if (g->stripe == 0) {
			x = &g->ext[0];
			loc = o;
			step = len - pos;
		} else {
			uint64_t s = o / g->stripe;

			x = &g->ext[s % g->n];
			loc = (s / g->n) * g->stripe + o % g->stripe;
			step = MIN(len - pos, g->stripe - o % g->stripe);
		}
		if (loc > x->len || step > x->len - loc)
			return -ERANGE;
		if (n == max)
			return -E2BIG;
		pieces[n++] =
		    (struct grant_piece){x->node, x->arena, x->off, x->off + loc, step, pos};
		pos += step;
	}
	return (int)n;
}

/*
 * The extent of a region the session holds open, when the region is one
 * extent (not striped), and whether the session may write it: 0, or the
 * errors of grant_region_pieces(), or -EREMOTE (in pieces).
 */
int grant_region_extent(struct poold *pd, uint64_t session, uint64_t region,
			struct region_extent *ret_extent, bool *ret_write)
{
	int rc;
	const struct grant_region *g = grant_region_usable(pd, session, region, false, &rc);

	if (g == NULL)
		return rc;
	if (g->stripe != 0 || g->n != 1 || g->ext[0].len < g->size)
		return -EREMOTE;
	*ret_extent = g->ext[0];
	*ret_write = (g->access & 2) != 0;
	return 0;
}

/*
 * Whether the session holds [within, within+len) of the KV place at (node, arena, off) for this
 * access.
 */
int grant_place_check(struct poold *pd, uint64_t session, uint32_t node, uint32_t arena,
		      uint64_t off, uint64_t within, uint64_t len, bool write)
{
	struct grant_session *gs = grant_session(pd, session, false);
	size_t i;

	if (gs == NULL || gs->cap == 0)
		return -EPERM;
	for (i = grant_slot(gs, node, arena, off); gs->places[i].used;
	     i = (i + 1) & (gs->cap - 1)) {
		const struct grant_place *p = &gs->places[i];

		if (p->node != node || p->arena != arena || p->off != off)
			continue;
		if (within > p->len || len > p->len - within)
			return -ERANGE;
		return write && !p->write ? -EACCES : 0;
	}
	return -EPERM;
}

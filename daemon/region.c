/*
 * daemon/region.c - the global address space, kept by the coordinator.
 *
 * Each lender's arenas get an extent allocator here when the lender
 * registers. A region is a name, a size, an owner and mode, a class and a
 * placement; the coordinator picks lenders, allocates one extent per lender
 * it uses, and hands out a global base address (never reused). A striped
 * ("spread") region maps stripe s to lender s % N at offset (s / N) * stripe
 * of that lender's extent. Clients get the extents with the lenders' worker
 * addresses and rkeys and then access memory directly.
 *
 * Freed extents are scrubbed by their lender before they can be lent again.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/extent.h"
#include "daemon/poold.h"
#include "libpool/libpool.h"

#define REGION_BASE0 (UINT64_C(1) << 40)
#define REGION_GVA_ALIGN (UINT64_C(2) << 20)
#define REGION_STRIPE_DEFAULT (UINT64_C(1) << 20)
#define REGION_MAX_SIZE (UINT64_C(1) << 44)

enum region_class { CLASS_PINNED, CLASS_CACHE, CLASS_PERSISTENT };

static const char *const class_names[] = {"pinned", "cache", "persistent"};

/* The allocator of one arena of one lender. */
struct lender_pool {
	TAILQ_ENTRY(lender_pool) entry;
	uint32_t node;
	uint32_t arena;
	enum tier tier;
	int numa;
	uint64_t incarnation;
	struct extent_arena *alloc;
};

struct region_extent {
	uint32_t node, arena;
	uint64_t off, len, region_off;
};

struct region {
	TAILQ_ENTRY(region) entry;
	char name[64];
	uint64_t id, size, base, stripe;
	enum region_class cls;
	char placement[32];
	uint32_t mode, uid, gid, creator_node;
	bool anonymous;
	uint32_t leases;
	struct region_extent *ext;
	size_t next;
};

struct regions {
	TAILQ_HEAD(, region) list;
	TAILQ_HEAD(, lender_pool) pools;
	uint64_t next_id;
	uint64_t next_base;
};

static bool region_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n == 0 || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-",
			    name[i]))
			return false;
	return true;
}

static struct region *region_find(struct regions *rs, const char *name)
{
	struct region *r;

	TAILQ_FOREACH(r, &rs->list, entry)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

static struct lender_pool *region_pool(struct regions *rs, uint32_t node, uint32_t arena)
{
	struct lender_pool *lp;

	TAILQ_FOREACH(lp, &rs->pools, entry)
		if (lp->node == node && lp->arena == arena)
			return lp;
	return NULL;
}

/*
 * A lender registered (or registered again): make allocators for arenas we
 * do not know. Arenas of a new incarnation start empty: what the lender held
 * before it restarted is gone.
 */
void region_lender_update(struct poold *pd, const Pool__NodeInfo *info)
{
	struct regions *rs = pd->regions;
	size_t i;

	if (rs == NULL)
		return;
	for (i = 0; i < info->n_arenas; i++) {
		const Pool__Arena *a = info->arenas[i];
		struct lender_pool *lp = region_pool(rs, info->id, a->id);
		uint64_t size = a->size / EXTENT_UNIT_DEFAULT * EXTENT_UNIT_DEFAULT;

		if (lp != NULL && lp->incarnation == info->incarnation)
			continue;
		if (lp != NULL) {
			log_warnx("node %u restarted: its arena %u lost what it held", info->id, a->id);
			TAILQ_REMOVE(&rs->pools, lp, entry);
			extent_arena_free(lp->alloc);
			free(lp);
		}
		if (size == 0 || (lp = calloc(1, sizeof(*lp))) == NULL)
			continue;
		if (extent_arena_new(size, 0, 0, &lp->alloc) < 0) {
			free(lp);
			continue;
		}
		lp->node = info->id;
		lp->arena = a->id;
		lp->tier = strcmp(a->tier, "pmem") == 0 ? TIER_PMEM : TIER_DRAM;
		lp->numa = a->numa;
		lp->incarnation = info->incarnation;
		TAILQ_INSERT_TAIL(&rs->pools, lp, entry);
	}
}

/* Bytes a lender's arena has in use, for poolctl nodes. */
uint64_t region_arena_used(struct poold *pd, uint32_t node, uint32_t arena)
{
	struct lender_pool *lp = pd->regions ? region_pool(pd->regions, node, arena) : NULL;
	struct extent_stats st;

	if (lp == NULL)
		return 0;
	extent_stats(lp->alloc, &st);
	return st.used;
}

static bool region_lender_usable(struct poold *pd, const struct lender_pool *lp)
{
	struct member *m = cluster_find(pd, lp->node);

	return m != NULL && m->state == MEMBER_UP && m->info->incarnation == lp->incarnation;
}

/* The pool with the most free space on node (any node if node is 0) in tier. */
static struct lender_pool *region_pick(struct poold *pd, uint32_t node, enum tier tier, int numa,
				       uint64_t len, const struct lender_pool *const *skip,
				       size_t nskip)
{
	struct lender_pool *lp, *best = NULL;
	uint64_t best_free = 0;
	size_t i;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		bool skipped = false;

		for (i = 0; i < nskip; i++)
			skipped |= skip[i]->node == lp->node;
		if (skipped || lp->tier != tier || (node != 0 && lp->node != node) ||
		    (numa >= 0 && lp->numa != numa) || !region_lender_usable(pd, lp))
			continue;
		extent_stats(lp->alloc, &st);
		if (st.largest_free >= len && st.free > best_free) {
			best = lp;
			best_free = st.free;
		}
	}
	return best;
}

/* Describe the free space per lender for a -ENOSPC message. */
static void region_free_text(struct poold *pd, enum tier tier, char *buf, size_t len)
{
	struct lender_pool *lp;
	size_t off = 0;

	off += (size_t)snprintf(buf, len, "largest free %s extent per node:",
				tier == TIER_DRAM ? "dram" : "pmem");
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		char sz[24];

		if (lp->tier != tier || off >= len)
			continue;
		extent_stats(lp->alloc, &st);
		units_fmt_size(st.largest_free, sz, sizeof(sz));
		off += (size_t)snprintf(buf + off, len - off, " %u:%s%s", lp->node, sz,
					region_lender_usable(pd, lp) ? "" : "(down)");
	}
}

/* Keep the members' records of lent and used bytes in step with the allocators. */
static void region_account(struct poold *pd)
{
	struct lender_pool *lp;
	struct member *m;
	size_t i;

	TAILQ_FOREACH(m, &pd->members, entry) {
		for (i = 0; i < m->info->n_numa; i++)
			m->info->numa[i]->lend_used = 0;
		m->info->pmem_used = 0;
	}
	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;

		m = cluster_find(pd, lp->node);
		if (m == NULL || m->info->incarnation != lp->incarnation)
			continue;
		extent_stats(lp->alloc, &st);
		if (lp->tier == TIER_PMEM) {
			m->info->pmem_used += st.used;
			continue;
		}
		for (i = 0; i < m->info->n_numa; i++)
			if ((int)m->info->numa[i]->id == lp->numa)
				m->info->numa[i]->lend_used += st.used;
	}
}

static void region_release_extents(struct poold *pd, struct region *r)
{
	size_t i;

	for (i = 0; i < r->next; i++) {
		struct region_extent *e = &r->ext[i];
		struct lender_pool *lp = region_pool(pd->regions, e->node, e->arena);

		if (lp == NULL)
			continue;
		/* Scrub before the memory can be lent again. */
		if (e->node == pd->node_id)
			lend_scrub(pd, e->arena, e->off, e->len);
		else
			coord_scrub(pd, e->node, e->arena, e->off, e->len);
		extent_release(lp->alloc, e->off, e->len);
	}
	free(r->ext);
	r->ext = NULL;
	r->next = 0;
	region_account(pd);
}

/* Parse a placement: local, any, node=N, numa=M, spread, spread=N. */
static int region_parse_placement(const char *p, uint32_t *node, int *numa, unsigned *spread)
{
	char *end;
	unsigned long v;

	*node = 0;
	*numa = -1;
	*spread = 0;
	if (strcmp(p, "any") == 0 || strcmp(p, "local") == 0)
		return 0;
	if (strcmp(p, "spread") == 0) {
		*spread = UINT32_MAX;
		return 0;
	}
	if (strncmp(p, "node=", 5) == 0 || strncmp(p, "numa=", 5) == 0 ||
	    strncmp(p, "spread=", 7) == 0) {
		const char *num = strchr(p, '=') + 1;

		v = strtoul(num, &end, 10);
		if (*num == '\0' || *end != '\0' || v > 65535)
			return -EINVAL;
		if (p[0] == 'n' && p[1] == 'o')
			*node = (uint32_t)v;
		else if (p[0] == 'n')
			*numa = (int)v;
		else if (v < 1)
			return -EINVAL;
		else
			*spread = (unsigned)v;
		return 0;
	}
	return -EINVAL;
}

static int region_place(struct poold *pd, struct region *r, const Pool__RegionCreate *rc,
			char *err, size_t errlen)
{
	enum tier tier = r->cls == CLASS_PERSISTENT ? TIER_PMEM : TIER_DRAM;
	const struct lender_pool **used = NULL;
	unsigned spread, n, k;
	uint32_t node;
	int numa;

	if (region_parse_placement(rc->placement, &node, &numa, &spread) < 0) {
		snprintf(err, errlen, "placement '%s' is not local, any, node=N, numa=M, spread or "
			 "spread=N", rc->placement);
		return -EINVAL;
	}
	if (strcmp(rc->placement, "local") == 0 || numa >= 0)
		node = rc->from_node;
	if (spread == 0) {
		struct lender_pool *lp = region_pick(pd, node, tier, numa, r->size, NULL, 0);
		uint64_t off, len;

		if (lp == NULL || extent_alloc(lp->alloc, r->size, &off, &len) < 0)
			goto out_nospc;
		r->ext = calloc(1, sizeof(*r->ext));
		if (r->ext == NULL) {
			extent_release(lp->alloc, off, len);
			return -ENOMEM;
		}
		r->ext[0] = (struct region_extent){lp->node, lp->arena, off, len, 0};
		r->next = 1;
		return 0;
	}
	/* Striped over n lenders, each holding ceil(stripes / n) stripes. */
	n = spread;
	if (n == UINT32_MAX) {
		struct member *m;

		n = 0;
		TAILQ_FOREACH(m, &pd->members, entry)
			n += m->state == MEMBER_UP;
	}
	r->stripe = rc->stripe ? rc->stripe : REGION_STRIPE_DEFAULT;
	if (r->stripe % EXTENT_GRAIN_DEFAULT != 0 || r->stripe > r->size) {
		snprintf(err, errlen, "stripe size must be a multiple of 4K, at most the region size");
		return -EINVAL;
	}
	{
		uint64_t stripes = (r->size + r->stripe - 1) / r->stripe;

		if (n > stripes)
			n = (unsigned)stripes;
		r->ext = calloc(n ? n : 1, sizeof(*r->ext));
		used = calloc(n ? n : 1, sizeof(*used));
		if (r->ext == NULL || used == NULL) {
			free(used);
			return -ENOMEM;
		}
		for (k = 0; k < n; k++) {
			uint64_t share = (stripes - k + n - 1) / n * r->stripe, off, len;
			struct lender_pool *lp = region_pick(pd, 0, tier, -1, share, used, k);

			if (lp == NULL || extent_alloc(lp->alloc, share, &off, &len) < 0) {
				free(used);
				goto out_nospc;
			}
			used[k] = lp;
			r->ext[k] = (struct region_extent){lp->node, lp->arena, off, len, k};
			r->next = k + 1;
		}
	}
	free(used);
	return 0;
out_nospc: {
	char sz[24], where[400];

	region_release_extents(pd, r);
	units_fmt_size(r->size, sz, sizeof(sz));
	region_free_text(pd, tier, where, sizeof(where));
	snprintf(err, errlen, "no room for %s (placement %s%s): %s", sz, rc->placement,
		 spread ? ", striped" : "", where);
	return -ENOSPC;
}
}

/* A region as a message, with the storage its pointers refer to. */
struct region_msg {
	Pool__RegionInfo info;
	Pool__Extent *ext;
	Pool__Extent **ptrs;
};

static int region_msg_build(const struct region *r, bool with_extents, struct region_msg *m)
{
	size_t i, n = with_extents ? r->next : 0;

	memset(m, 0, sizeof(*m));
	pool__region_info__init(&m->info);
	m->ext = calloc(n ? n : 1, sizeof(*m->ext));
	m->ptrs = calloc(n ? n : 1, sizeof(*m->ptrs));
	if (m->ext == NULL || m->ptrs == NULL) {
		free(m->ext);
		free(m->ptrs);
		return -ENOMEM;
	}
	m->info.name = (char *)r->name;
	m->info.id = r->id;
	m->info.size = r->size;
	m->info.class_ = (char *)class_names[r->cls];
	m->info.placement = (char *)r->placement;
	m->info.mode = r->mode;
	m->info.uid = r->uid;
	m->info.gid = r->gid;
	m->info.gva = r->base;
	m->info.stripe = r->stripe;
	m->info.leases = r->leases;
	m->info.anonymous = r->anonymous;
	m->info.creator_node = r->creator_node;
	for (i = 0; i < n; i++) {
		pool__extent__init(&m->ext[i]);
		m->ext[i].node = r->ext[i].node;
		m->ext[i].arena = r->ext[i].arena;
		m->ext[i].off = r->ext[i].off;
		m->ext[i].len = r->ext[i].len;
		m->ext[i].region_off = r->ext[i].region_off;
		m->ptrs[i] = &m->ext[i];
	}
	m->info.extents = m->ptrs;
	m->info.n_extents = n;
	return 0;
}

static void region_msg_release(struct region_msg *m)
{
	free(m->ext);
	free(m->ptrs);
}

/* Whether uid/gid may access r with the given rwx bits (4 read, 2 write). */
static bool region_allowed(const struct region *r, const struct req *q, unsigned want)
{
	unsigned bits;

	if (q->uid == 0)
		return true;
	if (q->uid == r->uid)
		bits = (r->mode >> 6) & 7;
	else if (q->gid == r->gid)
		bits = (r->mode >> 3) & 7;
	else
		bits = r->mode & 7;
	return (bits & want) == want;
}

/* Reply with the region and the members that hold its extents. */
static int region_reply(struct req *q, const struct region *r, bool with_extents)
{
	Pool__RegionReply reply = POOL__REGION_REPLY__INIT;
	Pool__Member **members = NULL, *mm = NULL;
	struct region_msg m;
	size_t i, k, n = 0;
	int rc;

	rc = region_msg_build(r, with_extents, &m);
	if (rc < 0)
		return req_errorf(q, rc, "out of memory");
	if (with_extents) {
		members = calloc(r->next ? r->next : 1, sizeof(*members));
		mm = calloc(r->next ? r->next : 1, sizeof(*mm));
		if (members == NULL || mm == NULL) {
			rc = req_errorf(q, -ENOMEM, "out of memory");
			goto out;
		}
		for (i = 0; i < r->next; i++) {
			struct member *mem = cluster_find(q->pd, r->ext[i].node);

			for (k = 0; k < n && mm[k].node->id != r->ext[i].node; k++)
				;
			if (mem == NULL || k < n)
				continue;
			pool__member__init(&mm[n]);
			mm[n].node = mem->info;
			mm[n].state = (char *)member_state_name(mem->state);
			members[n] = &mm[n];
			n++;
		}
	}
	reply.region = &m.info;
	reply.nodes = members;
	reply.n_nodes = n;
	rc = req_reply(q, WIRE_REGION_REPLY, &reply.base);
out:
	free(members);
	free(mm);
	region_msg_release(&m);
	return rc;
}

static int region_create(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionCreate *c = (const Pool__RegionCreate *)msg;
	struct poold *pd = q->pd;
	struct regions *rs = pd->regions;
	struct region *r;
	char err[512] = "";
	size_t i;
	int rc;

	if (!region_name_ok(c->name))
		return req_errorf(q, -EINVAL, "region name '%s': 1-63 characters of "
				  "[A-Za-z0-9._:/-]", c->name);
	if (c->size == 0 || c->size > REGION_MAX_SIZE)
		return req_errorf(q, -EINVAL, "region size must be 1 byte to 16T");
	if (c->mode > 0777)
		return req_errorf(q, -EINVAL, "mode %o is not a permission mode", c->mode);
	if (region_find(rs, c->name) != NULL)
		return req_errorf(q, -EEXIST, "region '%s' exists", c->name);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return req_errorf(q, -ENOMEM, "out of memory");
	for (i = 0; i < ARRAY_SIZE(class_names); i++)
		if (strcmp(c->class_, class_names[i]) == 0)
			break;
	if (i == ARRAY_SIZE(class_names)) {
		free(r);
		return req_errorf(q, -EINVAL, "class '%s' is not pinned, cache or persistent",
				  c->class_);
	}
	r->cls = (enum region_class)i;
	snprintf(r->name, sizeof(r->name), "%s", c->name);
	snprintf(r->placement, sizeof(r->placement), "%s", c->placement[0] ? c->placement : "any");
	r->size = c->size;
	r->mode = c->mode;
	r->uid = q->uid;
	r->gid = q->gid;
	r->anonymous = c->anonymous;
	r->creator_node = c->from_node ? c->from_node : pd->node_id;
	rc = region_place(pd, r, c, err, sizeof(err));
	if (rc < 0) {
		free(r);
		return req_errorf(q, rc, "%s", err[0] ? err : err_str(rc));
	}
	r->id = ++rs->next_id;
	r->base = rs->next_base;
	rs->next_base += (r->size + REGION_GVA_ALIGN - 1) / REGION_GVA_ALIGN * REGION_GVA_ALIGN;
	TAILQ_INSERT_TAIL(&rs->list, r, entry);
	region_account(pd);
	log_info("region '%s' created: %llu bytes, %s, %s, %zu extent(s), uid %u",
		 r->name, (unsigned long long)r->size, class_names[r->cls], r->placement, r->next,
		 (unsigned)r->uid);
	return region_reply(q, r, true);
}

static int region_lookup(struct req *q, const ProtobufCMessage *msg, struct region **ret)
{
	const Pool__RegionName *n = (const Pool__RegionName *)msg;
	struct region *r = region_find(q->pd->regions, n->name);

	if (r == NULL)
		return req_errorf(q, -ENOENT, "no region '%s'", n->name);
	*ret = r;
	return 0;
}

static int region_open(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionName *n = (const Pool__RegionName *)msg;
	unsigned want = n->has_access ? n->access & 6 : 4;
	struct region *r;
	size_t i;
	int rc;

	rc = region_lookup(q, msg, &r);
	if (rc < 0)
		return rc;
	if (!region_allowed(r, q, want))
		return req_errorf(q, -EACCES, "region '%s' (mode %03o, uid %u): %s access denied",
				  r->name, r->mode, r->uid, want & 2 ? "read-write" : "read");
	for (i = 0; i < r->next; i++) {
		struct member *m = cluster_find(q->pd, r->ext[i].node);

		if (m == NULL || m->state == MEMBER_DEAD)
			return req_errorf(q, POOL_ELOST, "region '%s': its lender node %u is dead",
					  r->name, r->ext[i].node);
	}
	r->leases++;
	return region_reply(q, r, true);
}

static int region_stat(struct req *q, const ProtobufCMessage *msg)
{
	struct region *r;
	int rc = region_lookup(q, msg, &r);

	return rc < 0 ? rc : region_reply(q, r, true);
}

static int region_destroy(struct req *q, const ProtobufCMessage *msg)
{
	Pool__Ok ok = POOL__OK__INIT;
	struct region *r;
	int rc = region_lookup(q, msg, &r);

	if (rc < 0)
		return rc;
	if (q->uid != 0 && q->uid != r->uid && !q->admin)
		return req_errorf(q, -EPERM, "region '%s' belongs to uid %u", r->name, r->uid);
	TAILQ_REMOVE(&q->pd->regions->list, r, entry);
	region_release_extents(q->pd, r);
	log_info("region '%s' destroyed", r->name);
	free(r);
	return req_reply(q, WIRE_OK, &ok.base);
}

static int region_list(struct req *q, const ProtobufCMessage *msg)
{
	Pool__RegionList reply = POOL__REGION_LIST__INIT;
	struct region_msg *ms;
	struct region *r;
	size_t n = 0, i;
	int rc = 0;

	TAILQ_FOREACH(r, &q->pd->regions->list, entry)
		n++;
	ms = calloc(n ? n : 1, sizeof(*ms));
	reply.regions = calloc(n ? n : 1, sizeof(*reply.regions));
	if (ms == NULL || reply.regions == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	i = 0;
	TAILQ_FOREACH(r, &q->pd->regions->list, entry) {
		if (region_msg_build(r, true, &ms[i]) < 0) {
			rc = req_errorf(q, -ENOMEM, "out of memory");
			goto out;
		}
		reply.regions[i] = &ms[i].info;
		reply.n_regions = ++i;
	}
	rc = req_reply(q, WIRE_REGION_LIST_REPLY, &reply.base);
out:
	for (i = 0; i < reply.n_regions; i++)
		region_msg_release(&ms[i]);
	free(reply.regions);
	free(ms);
	return rc;
}

/* Start the global address space (coordinator). */
int region_open_space(struct poold *pd)
{
	struct regions *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return -ENOMEM;
	TAILQ_INIT(&rs->list);
	TAILQ_INIT(&rs->pools);
	rs->next_base = REGION_BASE0;
	pd->regions = rs;
	return 0;
}

/* Drop the global address space. */
void region_close_space(struct poold *pd)
{
	struct regions *rs = pd->regions;
	struct lender_pool *lp;
	struct region *r;

	if (rs == NULL)
		return;
	while ((r = TAILQ_FIRST(&rs->list)) != NULL) {
		TAILQ_REMOVE(&rs->list, r, entry);
		free(r->ext);
		free(r);
	}
	while ((lp = TAILQ_FIRST(&rs->pools)) != NULL) {
		TAILQ_REMOVE(&rs->pools, lp, entry);
		extent_arena_free(lp->alloc);
		free(lp);
	}
	free(rs);
	pd->regions = NULL;
}

const struct ctl_handler region_handlers[] = {
	{WIRE_REGION_CREATE, CTL_ANY, AT_COORD, region_create},
	{WIRE_REGION_OPEN, CTL_ANY, AT_COORD, region_open},
	{WIRE_REGION_STAT, CTL_ANY, AT_COORD, region_stat},
	{WIRE_REGION_DESTROY, CTL_ANY, AT_COORD, region_destroy},
	{WIRE_REGION_LIST, CTL_ANY, AT_COORD, region_list},
	{0, 0, 0, NULL},
};

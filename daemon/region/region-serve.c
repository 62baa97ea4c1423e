/*
 * daemon/region/region-serve.c - the address space's wire edge: the region requests
 * of the control socket (create, open, close, stat, destroy, keep and list,
 * from their messages to region.c's operations and back to replies that
 * carry a region's extents to those who may read it). What region.c
 * sends is region-tell.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "daemon/region/region.h"
#include "proto/pool_contract.h"

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
	m->info.class_ = (char *)region_class_name(r->cls);
	m->info.placement = (char *)r->placement;
	m->info.mode = r->mode;
	m->info.uid = r->uid;
	m->info.gid = r->gid;
	m->info.gva = r->base;
	m->info.stripe = r->stripe;
	m->info.leases = r->leases;
	m->info.anonymous = r->anonymous;
	m->info.creator_node = r->creator_node;
	m->info.has_lost = m->info.has_want_extents = 1;
	m->info.lost = r->lost;
	m->info.want_extents = (uint32_t)r->want_ext;
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

bool req_mode_allows(const struct req *q, uid_t owner, gid_t group, unsigned mode, unsigned want)
{
	return mode_allows(q->uid, q->gid, owner, group, mode, want);
}

/* Whether uid/gid may access r with the given rwx bits (4 read, 2 write). */
bool region_allowed(const struct region *r, const struct req *q, unsigned want)
{
	return req_mode_allows(q, r->uid, r->gid, r->mode, want);
}

/* The caller of a request, as the address space sees it. */
static struct region_caller region_caller_of(const struct req *q)
{
	return (struct region_caller){q->node, q->session, q->uid, q->gid, q->admin};
}

/* Reply with the region and the members that hold its extents. */
static int region_reply(struct req *q, const struct region *r, bool with_extents, unsigned access)
{
	Pool__RegionReply reply = POOL__REGION_REPLY__INIT;
	struct region_msg m;
	int rc;

	rc = region_msg_build(r, with_extents, &m);
	if (rc < 0)
		return req_errorf(q, rc, "out of memory");
	reply.region = &m.info;
	/* The session's own poold grants it this and carries its transfers (grant.c). */
	if (access != 0) {
		reply.has_access = 1;
		reply.access = access;
	}
	rc = req_reply(q, WIRE_REGION_REPLY, &reply.base);
	region_msg_release(&m);
	return rc;
}

static int region_create_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionCreate *c = (const Pool__RegionCreate *)msg;
	struct region_caller who = region_caller_of(q);
	struct region_spec spec = {
	    .name = c->name,
	    .size = c->size,
	    .placement = c->placement,
	    .stripe = c->stripe,
	    .mode = c->mode,
	    .anonymous = c->anonymous,
	    .open = c->open,
	};
	struct region *r;
	char err[512] = "", why[160];
	int rc;

	if (region_class_of(c->class_, &spec.cls) < 0)
		return req_errorf(q, -EINVAL, "class '%s' is not pinned, cache or persistent",
				  c->class_);
	rc = region_create(q->pd, &spec, &who, &r, err, sizeof(err));
	/* (just after a coordinator change the room may be on nodes not back yet) */
	if (rc == -ENOSPC && region_settling(q->pd, why, sizeof(why)))
		return req_errorf(q, POOL_ECOORD, "coordinator unavailable: %s; %s", why, err);
	if (rc < 0)
		return req_errorf(q, rc, "%s", err);
	return region_reply(q, r, true, c->open ? 6 : 0);
}

static int region_open_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionName *n = (const Pool__RegionName *)msg;
	struct region_caller who = region_caller_of(q);
	unsigned want = n->has_access ? n->access & 6 : 4;
	struct region *r;
	char err[256] = "";
	int rc = region_open(q->pd, n->name, want, &who, &r, err, sizeof(err));

	/* (just after a coordinator restart it may come back from its lenders: ask again) */
	if (rc == -ENOENT && region_rebuilding(q->pd))
		return req_errorf(q, POOL_ECOORD,
				  "coordinator unavailable: the regions are coming back from "
				  "their lenders; %s",
				  err);
	if (rc < 0)
		return req_errorf(q, rc, "%s", err);
	return region_reply(q, r, true, want | 4);
}

/* The Ok of close, destroy and keep, or why not. */
static int region_ok(struct req *q, int rc, const char *err)
{
	Pool__Ok ok = POOL__OK__INIT;

	return rc < 0 ? req_errorf(q, rc, "%s", err) : req_reply(q, WIRE_OK, &ok.base);
}

static int region_close_request(struct req *q, const ProtobufCMessage *msg)
{
	struct region_caller who = region_caller_of(q);
	char err[256] = "";

	return region_ok(
	    q, region_close(q->pd, ((const Pool__RegionName *)msg)->name, &who, err, sizeof(err)),
	    err);
}

static int region_destroy_request(struct req *q, const ProtobufCMessage *msg)
{
	struct region_caller who = region_caller_of(q);
	char err[256] = "";

	return region_ok(
	    q, region_destroy(q->pd, ((const Pool__RegionName *)msg)->name, &who, err, sizeof(err)),
	    err);
}

static int region_keep_request(struct req *q, const ProtobufCMessage *msg)
{
	struct region_caller who = region_caller_of(q);
	char err[256] = "";

	return region_ok(
	    q, region_keep(q->pd, ((const Pool__RegionName *)msg)->name, &who, err, sizeof(err)),
	    err);
}

static int region_stat_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionName *n = (const Pool__RegionName *)msg;
	struct region *r = region_find(q->pd->regions, n->name);

	if (r == NULL)
		return req_errorf(q, -ENOENT, "no region '%s'", n->name);
	/* Where the data lives is for those who may read it. */
	return region_reply(q, r, region_allowed(r, q, 4), 0);
}

static int region_list_request(struct req *q, const ProtobufCMessage *msg)
{
	Pool__RegionList reply = POOL__REGION_LIST__INIT;
	struct region_msg *ms;
	struct region *r;
	size_t n = 0, i;
	int rc = 0;

	TAILQ_FOREACH(r, &q->pd->regions->list, entry)
		n++;
	/* A uid sees the regions it may open; admins see them all. */
	ms = calloc(n ? n : 1, sizeof(*ms));
	reply.regions = calloc(n ? n : 1, sizeof(*reply.regions));
	if (ms == NULL || reply.regions == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	i = 0;
	TAILQ_FOREACH(r, &q->pd->regions->list, entry) {
		bool may = region_allowed(r, q, 4);

		if (!may && !q->admin)
			continue;
		if (region_msg_build(r, may, &ms[i]) < 0) {
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

const struct ctl_handler region_handlers[] = {
    {WIRE_REGION_CREATE, CTL_ANY, AT_COORD, region_create_request, NULL},
    {WIRE_REGION_OPEN, CTL_ANY, AT_COORD, region_open_request, NULL},
    {WIRE_REGION_STAT, CTL_ANY, AT_COORD, region_stat_request, NULL},
    {WIRE_REGION_DESTROY, CTL_ANY, AT_COORD, region_destroy_request, NULL},
    {WIRE_REGION_LIST, CTL_ANY, AT_COORD, region_list_request, NULL},
    {WIRE_REGION_CLOSE, CTL_ANY, AT_COORD, region_close_request, NULL},
    {WIRE_REGION_KEEP, CTL_ANY, AT_COORD, region_keep_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * daemon/region/region-tell.c - what the address space (region.c, reclaim.c) sends
 * to nodes through the coordinator's links: a lender asked to scrub an
 * extent or told how much of an arena it lends, lease holders told that a
 * region moved or went.
 */
#include "config.h"

#include "daemon/control/control.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"

/*
 * Ask node to zero an extent it lends; done(pd, arg, rc) once it answered.
 * 0, or -errno when it cannot be asked.
 */
int region_send_scrub(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		      coord_done_cb done, void *arg)
{
	Pool__Scrub sc = POOL__SCRUB__INIT;

	sc.arena = arena;
	sc.off = off;
	sc.len = len;
	return coord_request(pd, node, WIRE_SCRUB, &sc.base, done, arg);
}

/*
 * Tell the sessions of node that hold a lease on region name that it moved
 * or is gone: directly for this node's sessions, through its poold for
 * another node's.
 */
void region_send_notice(struct poold *pd, uint32_t node, const uint64_t *sessions, size_t n,
			const char *name, enum region_event event)
{
	Pool__RegionNotice rn = POOL__REGION_NOTICE__INIT;
	size_t i;

	rn.name = (char *)name;
	rn.event = event == REGION_GONE ? POOL__REGION_EVENT__REGION_EVENT_GONE
					: POOL__REGION_EVENT__REGION_EVENT_MOVED;
	if (node == pd->node_id) {
		for (i = 0; i < n; i++)
			control_notify(pd, sessions[i], WIRE_REGION_NOTICE, &rn.base);
		return;
	}
	rn.sessions = (uint64_t *)sessions;
	rn.n_sessions = n;
	coord_notice(pd, node, WIRE_REGION_NOTICE, &rn.base);
}

/* Tell node how much of its arena it lends from now on. */
void reclaim_send_limit(struct poold *pd, uint32_t node, uint32_t arena, uint64_t limit)
{
	Pool__ArenaLimit al = POOL__ARENA_LIMIT__INIT;

	al.arena = arena;
	al.limit = limit;
	coord_notice(pd, node, WIRE_ARENA_LIMIT, &al.base);
}

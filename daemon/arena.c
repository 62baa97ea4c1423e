/*
 * daemon/arena.c - local zero-copy access: hand a client the memfd of one of
 * this node's arenas, or the file of its pmem tier (SCM_RIGHTS), so it can
 * map the extents of its regions that live here and load/store at memory
 * speed. The arena is the start of the file: the pmem journal after it is
 * not part of what a client maps.
 *
 * The fd grants the whole arena (and a pmem tier's file its journal too), so
 * only root and poold's own uid get it, who could read poold's memory
 * anyway; the others, the admin group's members included, go through
 * poold's carried transfers (xfer.c).
 */
#include "config.h"

#include <errno.h>

#include "daemon/poold.h"

static int arena_fd(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__ArenaFd *a = (const Pool__ArenaFd *)msg;
	Pool__Ok ok = POOL__OK__INIT;
	int rc;

	if (a->arena >= q->pd->narenas)
		return req_errorf(q, -ENOENT, "node %u has no arena %u", q->pd->node_id, a->arena);
	rc = conn_send_fd(q->conn, WIRE_OK, q->id, &ok.base, q->pd->arenas[a->arena].fd);
	if (rc < 0)
		return req_errorf(q, rc, "cannot pass the arena: %s", err_str(rc));
	return 0;
}

const struct ctl_handler arena_handlers[] = {
	{WIRE_ARENA_FD, CTL_ROOT, AT_HERE, arena_fd},
	{0, 0, 0, NULL},
};

/*
 * daemon/arena.c - local zero-copy access: hand a client a file (SCM_RIGHTS)
 * it maps to load and store at memory speed.
 *
 *  - RegionFd: the memory of one region the session holds open, when the
 *    region is one extent on this node: the extent's own memfd (carve.c),
 *    read-only unless the session may write the region. For root, when the
 *    extent cannot have a file of its own, a window of the arena's file.
 *  - ArenaFd: the memfd of a whole arena, or the file of the pmem tier (its
 *    journal too): for root and poold's own uid only, who could read
 *    poold's memory anyway (the KV cache's local reads use it).
 *
 * Everyone else, and every region that is striped, remote or not carvable,
 * goes through poold's carried transfers (xfer.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

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

/* The same file opened again for reading only: a client cannot map it writable or change it. */
int fd_read_only(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int region_fd(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__RegionFd *m = (const Pool__RegionFd *)msg;
	Pool__RegionFdReply reply = POOL__REGION_FD_REPLY__INIT;
	struct region_extent x;
	uint64_t off;
	bool write;
	int fd, ro = -1, rc;

	rc = grant_region_extent(q->pd, q->session, m->region, &x, &write);
	if (rc == -EPERM)
		return req_errorf(q, rc, "this session holds no grant of region %llu",
				  (unsigned long long)m->region);
	if (rc < 0)
		return req_errorf(q, rc, "region %llu cannot be mapped: %s",
				  (unsigned long long)m->region, err_str(rc));
	if (x.node != q->pd->node_id)
		return req_errorf(q, -EREMOTE, "region %llu lives on node %u",
				  (unsigned long long)m->region, x.node);
	rc = carve_fd(q->pd, x.arena, x.off, x.len, q->root, &fd, &off);
	if (rc < 0)
		return req_errorf(q, rc,
				  "region %llu cannot be mapped here (%s): carried transfers "
				  "reach it",
				  (unsigned long long)m->region, err_str(rc));
	if (!write && (fd = ro = fd_read_only(fd)) < 0)
		return req_errorf(q, -errno, "cannot open a region's memory for reading: %s",
				  err_str(-errno));
	reply.offset = off;
	reply.len = x.len;
	reply.write = write;
	rc = conn_send_fd(q->conn, WIRE_REGION_FD_REPLY, q->id, &reply.base, fd);
	if (ro >= 0)
		close(ro);
	if (rc < 0)
		return req_errorf(q, rc, "cannot pass the region's memory: %s", err_str(rc));
	return 0;
}

const struct ctl_handler arena_handlers[] = {
    {WIRE_ARENA_FD, CTL_ROOT, AT_HERE, arena_fd, NULL},
    {WIRE_REGION_FD, CTL_ANY, AT_HERE, region_fd, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * daemon/region/region-fd-serve.c - local zero-copy access: hand a client a file (SCM_RIGHTS)
 * it maps to load and store at memory speed.
 *
 *  - RegionFd: the memory of one region the session holds open, when the
 *    region is one extent on this node: the extent's own memfd (carve.c),
 *    read-only unless the session may write the region. For root, when the
 *    extent cannot have a file of its own, a window of the arena's file.
 *    An open or create may ask for it with its reply (RegionReply.file).
 *  - ArenaFd: the memfd of a whole arena, or the file of the pmem tier (its
 *    journal too): for root and poold's own uid only, who could read
 *    poold's memory anyway (the KV cache's local reads use it).
 *
 * Everyone else, and every region that is striped, remote or not carvable,
 * goes through poold's carried transfers (xfer.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "daemon/control/control.h"
#include "daemon/lend/lend.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"

static int arena_fd(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__ArenaFd *a = (const Pool__ArenaFd *)msg;
	const struct arena *ar = lend_arena(q->pd, a->arena);
	Pool__Ok ok = POOL__OK__INIT;
	int rc;

	if (ar == NULL)
		return req_errorf(q, -ENOENT, "node %u has no arena %u", q->pd->node_id, a->arena);
	rc = conn_send_fd(q->conn, WIRE_OK, q->id, &ok.base, ar->fd);
	if (rc < 0)
		return req_errorf(q, rc, "cannot pass the arena: %s", err_str(rc));
	return 0;
}

/*
 * The file of region for the session of q to map (see the top), and what
 * RegionFdReply says of it; *ret_ro is a descriptor to close once it is
 * sent (-1 if none). The error's message is in q.
 */
static int region_file(struct req *q, uint64_t region, Pool__RegionFdReply *reply, int *ret_fd,
		       int *ret_ro)
{
	struct region_extent x;
	uint64_t off;
	bool write;
	int fd, rc;

	*ret_ro = -1;
	rc = grant_region_extent(q->pd, q->session, region, &x, &write);
	if (rc == -EPERM)
		return req_errorf(q, rc, "this session holds no grant of region %llu",
				  (unsigned long long)region);
	if (rc < 0)
		return req_errorf(q, rc, "region %llu cannot be mapped: %s",
				  (unsigned long long)region, err_str(rc));
	if (x.node != q->pd->node_id)
		return req_errorf(q, -EREMOTE, "region %llu lives on node %u",
				  (unsigned long long)region, x.node);
	rc = carve_fd(q->pd, x.arena, x.off, x.len, q->root, &fd, &off);
	if (rc < 0)
		return req_errorf(q, rc,
				  "region %llu cannot be mapped here (%s): carried transfers "
				  "reach it",
				  (unsigned long long)region, err_str(rc));
	if (!write && (fd = *ret_ro = fd_read_only(fd)) < 0)
		return req_errorf(q, -errno, "cannot open a region's memory for reading: %s",
				  err_str(-errno));
	reply->offset = off;
	reply->len = x.len;
	reply->write = write;
	*ret_fd = fd;
	return 0;
}

static int region_fd(struct req *q, const ProtobufCMessage *msg)
{
	Pool__RegionFdReply reply = POOL__REGION_FD_REPLY__INIT;
	int fd, ro, rc;

	rc = region_file(q, ((const Pool__RegionFd *)msg)->region, &reply, &fd, &ro);
	if (rc < 0)
		return rc;
	rc = conn_send_fd(q->conn, WIRE_REGION_FD_REPLY, q->id, &reply.base, fd);
	if (ro >= 0)
		close(ro);
	if (rc < 0)
		return req_errorf(q, rc, "cannot pass the region's memory: %s", err_str(rc));
	return 0;
}

/* Whether a local session's request is an open or create that asks for the region's file. */
bool region_file_wanted(uint16_t type, const ProtobufCMessage *msg)
{
	if (type == WIRE_REGION_CREATE)
		return ((const Pool__RegionCreate *)msg)->map;
	return type == WIRE_REGION_OPEN && ((const Pool__RegionName *)msg)->map;
}

/*
 * Send the reply to an open or create that asked for the region's file
 * (q->with_file) with the file, saving the client its RegionFd round trip:
 * 1 when sent so, 0 when the caller sends the reply as it is (the region
 * cannot be mapped here, or other frames wait to go out before it: the
 * client then asks RegionFd, which says why), or -errno.
 */
int region_reply_with_file(struct req *q, uint16_t type, const ProtobufCMessage *msg)
{
	Pool__RegionFdReply file = POOL__REGION_FD_REPLY__INIT;
	const Pool__RegionReply *rep = (const Pool__RegionReply *)msg;
	Pool__RegionReply with;
	int fd, ro, rc;

	if (!q->with_file || type != WIRE_REGION_REPLY || conn_output_len(q->conn) != 0 ||
	    region_file(q, rep->region->id, &file, &fd, &ro) < 0)
		return 0;
	with = *rep;
	with.file = &file;
	rc = conn_send_fd(q->conn, WIRE_REGION_REPLY, q->id, &with.base, fd);
	if (ro >= 0)
		close(ro);
	return rc == 0 ? 1 : rc == -EAGAIN ? 0 : rc;
}

const struct ctl_handler arena_handlers[] = {
    {WIRE_ARENA_FD, CTL_ROOT, AT_HERE, arena_fd, NULL},
    {WIRE_REGION_FD, CTL_ANY, AT_HERE, region_fd, NULL},
    {0, 0, 0, NULL, NULL},
};

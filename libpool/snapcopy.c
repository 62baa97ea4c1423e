/*
 * libpool/snapcopy.c - copy-on-write clones of a snapshot from the node's
 * shared copy.
 *
 * The local poold keeps one sealed memfd per image (daemon/snap/snap-copy.c).
 * The first client on the node to ask is told to fill it: it writes the
 * image from the store into the memfd and says done; poold seals it and hands it to every later
 * client, which maps it private. The clients asking while it fills wait in poold; if the filler
 * fails or dies, one of them fills it instead. Lazy clones, which need not
 * wait for a fill, are snaplazy.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/snap.h"

/*
 * A ready copy passes with the first byte of its reply, which poold can only send on an idle link.
 */
#define SNAPCOPY_TRIES 5

/* One SnapCopy request; ret_fd (if not NULL) gets the fd that came with the reply, or -1. */
static int snap_copy_call(struct pool *pool, const Pool__SnapCopy *req,
			  Pool__SnapCopyStatus *ret_status, int *ret_fd)
{
	Pool__SnapCopyReply *rep;
	int rc, fd = -1;

	rc = pool_call_fd(pool, WIRE_SNAP_COPY, &req->base, WIRE_SNAP_COPY_REPLY,
			  (ProtobufCMessage **)&rep, ret_fd ? &fd : NULL);
	if (rc < 0)
		return rc;
	if (ret_status != NULL)
		*ret_status = rep->status;
	wire_msg_free(&rep->base);
	if (ret_fd != NULL)
		*ret_fd = fd;
	return 0;
}

/* done (or else abort) of the copy this client fills. */
int snap_copy_end(struct pool_snap *snap, bool done)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;

	req.op =
	    done ? POOL__SNAP_COPY_OP__SNAP_COPY_OP_DONE : POOL__SNAP_COPY_OP__SNAP_COPY_OP_ABORT;
	req.name = snap->name;
	req.has_id = 1;
	req.id = snap->hdr.id;
	return snap_copy_call(snap->pool, &req, NULL, NULL);
}

/* Fill the empty copy poold handed us, and hand it back. */
int snap_copy_fill(struct pool_snap *snap, int fd)
{
	void *bounce = malloc(SNAP_BATCH * snap->hdr.page_size);
	uint64_t next;
	size_t k;
	int rc = bounce != NULL ? 0 : pool_err(-ENOMEM, "out of memory");

	for (next = 0; next < snap->hdr.npages && rc == 0; next += k) {
		k = (size_t)MIN(SNAP_BATCH, snap->hdr.npages - next);
		rc = snap_fill_fd(snap, fd, next, k, bounce);
	}
	free(bounce);
	if (rc < 0) {
		/* The fill's message tells why, unless the abort fails too (then that tells). */
		snap_copy_end(snap, false);
		return rc;
	}
	return snap_copy_end(snap, true);
}

/* The node's copy as poold hands it, and what this client is to do with it. */
int snap_copy_get(struct pool_snap *snap, bool lazy, int *ret_fd, enum snap_copy_as *ret_as)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	Pool__SnapCopyStatus status = 0;
	int rc = 0, fd, i;

	req.op = POOL__SNAP_COPY_OP__SNAP_COPY_OP_GET;
	req.name = snap->name;
	req.has_id = req.has_size = 1;
	req.id = snap->hdr.id;
	req.size = snap->hdr.image_len;
	req.has_lazy = lazy;
	req.lazy = lazy;
	for (i = 0; i < SNAPCOPY_TRIES; i++) {
		if (i > 0)
			usleep(1000u << i);
		rc = snap_copy_call(snap->pool, &req, &status, &fd);
		if (rc != -EAGAIN)
			break;
	}
	if (rc < 0)
		return rc;
	if (fd < 0)
		return pool_err(-EPROTO, "snapshot %s: poold sent no copy", snap->name);
	if (status == POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_READY) {
		*ret_as = COPY_READY;
	} else if (status == POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILL) {
		*ret_as = COPY_TO_FILL;
	} else if (lazy && status == POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILLING) {
		*ret_as = COPY_FILLING;
	} else {
		close(fd);
		return pool_err(-EPROTO, "snapshot %s: copy status %d answers no get", snap->name,
				status);
	}
	*ret_fd = fd;
	return 0;
}

/*
 * Whether the copy this client maps (the memfd of inode ino) is ready: 1;
 * 0 while it fills; -ESTALE when it never will be (its filler gave up, or
 * it was dropped), or -errno.
 */
int snap_copy_state(struct pool_snap *snap, uint64_t ino)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	Pool__SnapCopyReply *rep;
	int rc;

	req.op = POOL__SNAP_COPY_OP__SNAP_COPY_OP_STATE;
	req.name = snap->name;
	req.has_id = 1;
	req.id = snap->hdr.id;
	rc = pool_call(snap->pool, WIRE_SNAP_COPY, &req.base, WIRE_SNAP_COPY_REPLY,
		       (ProtobufCMessage **)&rep);
	if (rc < 0)
		return rc;
	if (!rep->has_ino || rep->ino != ino ||
	    rep->status == POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_NONE)
		rc = -ESTALE;
	else
		rc = rep->status == POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_READY;
	wire_msg_free(&rep->base);
	return rc;
}

/* The node's shared copy: a sealed memfd of the image, made here if the node has none. */
int snap_copy_fd(struct pool_snap *snap, int *ret_fd)
{
	enum snap_copy_as as;
	int rc, fd;

	snap_lazy_wait(snap); /* poold refuses a get while this client fills the copy */
	rc = snap_copy_get(snap, false, &fd, &as);
	if (rc < 0)
		return rc;
	if (as == COPY_TO_FILL && (rc = snap_copy_fill(snap, fd)) < 0) {
		close(fd);
		return rc;
	}
	*ret_fd = fd;
	return 0;
}

/* Drop the node's copies of a snapshot (pool_snap_remove): clients keep what they mapped. */
int snap_copy_drop(struct pool *pool, const char *name)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;

	req.op = POOL__SNAP_COPY_OP__SNAP_COPY_OP_DROP;
	req.name = (char *)name;
	return snap_copy_call(pool, &req, NULL, NULL);
}

/* A clone: private and writable, the writes of this clone are its own pages. */
/*
 * Map the copy private, at an address aligned to the snapshot's pages: a
 * lazy clone's faults are served a snapshot page at a time (2 MiB ones
 * too), and UFFDIO_COPY places only whole ones inside the mapping.
 */
int snap_clone_map(struct pool_snap *snap, int fd, void **ret_addr)
{
	size_t len = (size_t)snap->hdr.image_len, align = (size_t)snap->hdr.page_size;
	/* Room with an aligned start in it, when base pages are not enough: the rest let go. */
	size_t slack = align > (size_t)sysconf(_SC_PAGESIZE) ? align : 0;
	uint8_t *space = NULL, *want = NULL, *addr;

	if (slack > 0) {
		space = mmap(NULL, len + slack, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (space == MAP_FAILED)
			return pool_err(-errno,
					"pool_snap_clone: no room to map the copy of %s: %s",
					snap->name, strerror(errno));
		want = (uint8_t *)(((uintptr_t)space + align - 1) & ~((uintptr_t)align - 1));
	}
	addr = mmap(want, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | (want ? MAP_FIXED : 0), fd, 0);
	if (addr == MAP_FAILED) {
		int rc = -errno;

		if (space != NULL)
			munmap(space, len + slack);
		return pool_err(rc, "pool_snap_clone: cannot map the copy of %s: %s", snap->name,
				strerror(-rc));
	}
	if (space != NULL && addr > space)
		munmap(space, (size_t)(addr - space));
	if (space != NULL && addr + len < space + len + slack)
		munmap(addr + len, (size_t)(space + len + slack - (addr + len)));
	*ret_addr = addr;
	return 0;
}

POOL_EXPORT int pool_snap_clone(struct pool_snap *snap, void **ret_addr)
{
	int rc, fd;

	if (snap == NULL || ret_addr == NULL)
		return pool_err(-EINVAL, "pool_snap_clone: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	rc = snap_clone_map(snap, fd, ret_addr);
	close(fd);
	return rc;
}

POOL_EXPORT int pool_snap_clone_fd(struct pool_snap *snap, int *ret_fd)
{
	char path[64];
	int rc, fd, ro;

	if (snap == NULL || ret_fd == NULL)
		return pool_err(-EINVAL, "pool_snap_clone_fd: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	/*
	 * The seals already forbid writing the memfd; a read-only open of it
	 * also keeps a VMM from mapping it shared and writable at all.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	rc = ro < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return pool_err(rc,
				"pool_snap_clone_fd: cannot reopen the copy of %s read-only: %s",
				snap->name, strerror(-rc));
	*ret_fd = ro;
	return 0;
}

POOL_EXPORT int pool_snap_place(struct pool_snap *snap)
{
	int rc, fd;

	if (snap == NULL)
		return pool_err(-EINVAL, "pool_snap_place: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	close(fd);
	return 0;
}

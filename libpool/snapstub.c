/*
 * libpool/snapstub.c - TEMPORARY stand-in for libpool/snap.c and
 * libpool/snapcopy.c, which are written on other branches: just enough
 * for libpool (snapuffd.c) and poolctl to link. Every call fails with
 * -ENOTSUP. REMOVE THIS FILE (and its line in libpool/local.mk) when
 * snap.c and snapcopy.c are merged.
 */
#include "config.h"

#include <errno.h>

#include "libpool/snap.h"

int snap_fetch(struct pool_snap *snap, size_t n, const uint64_t *pages, void *const *bufs)
{
	(void)snap, (void)n, (void)pages, (void)bufs;
	return pool_err(-ENOTSUP, "snapshots are not in this build yet");
}

int snap_ws_load(struct pool_snap *snap, uint32_t **ret_pages, size_t *ret_n)
{
	(void)snap, (void)ret_pages, (void)ret_n;
	return pool_err(-ENOTSUP, "snapshots are not in this build yet");
}

int snap_ws_merge(struct pool_snap *snap, const uint64_t *pages, size_t n)
{
	(void)snap, (void)pages, (void)n;
	return pool_err(-ENOTSUP, "snapshots are not in this build yet");
}

int snap_copy_fd(struct pool_snap *snap, int *ret_fd)
{
	(void)snap, (void)ret_fd;
	return pool_err(-ENOTSUP, "snapshots are not in this build yet");
}

POOL_EXPORT int pool_snap_open(struct pool *pool, const char *name, struct pool_snap **ret_snap)
{
	(void)pool, (void)name, (void)ret_snap;
	return pool_err(-ENOTSUP, "snapshots are not in this build yet");
}

POOL_EXPORT void pool_snap_close(struct pool_snap *snap)
{
	(void)snap;
}

POOL_EXPORT uint64_t pool_snap_size(const struct pool_snap *snap)
{
	return snap->hdr.image_len;
}

POOL_EXPORT uint64_t pool_snap_page_size(const struct pool_snap *snap)
{
	return snap->hdr.page_size;
}

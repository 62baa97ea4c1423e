/*
 * daemon/snap/snap.h - snapshot images' copies on this node, and those made
 * ahead of use. The interface of snap/ to the rest of poold.
 */
#ifndef POOLD_SNAP_H
#define POOLD_SNAP_H

#include "daemon/control/control.h"

/* snap-copy.c: the node's shared copies of snapshot images */
void snap_copy_session_end(struct poold *pd, uint64_t session);
/* copies, bytes, clones, fills, evictions, restores, failed, faults, pages, prefetched */
#define SNAPCOPY_STATS 10
void snap_copy_stats(struct poold *pd, uint64_t ret[SNAPCOPY_STATS]);
void snap_copy_close(struct poold *pd);
extern const struct ctl_handler snap_copy_handlers[];

/* snap-place.c: node copies made ahead of use, on the nodes an admin names */
void snap_place_serve(struct poold *pd, struct conn *conn, uint64_t req_id,
		      const Pool__SnapPlace *m);
void snap_place_close(struct poold *pd);
void snap_recount_want(struct poold *pd);
extern const struct ctl_handler snap_place_handlers[];

#endif /* POOLD_SNAP_H */

/*
 * daemon/snap/snap.h - snapshot images' copies on this node, and those made
 * ahead of use. The interface of snap/ to the rest of poold.
 */
#ifndef POOLD_SNAP_H
#define POOLD_SNAP_H

#include "daemon/control/control.h"

/* snap-copy.c: the node's shared copies of snapshot images */
void snapcopy_session_end(struct poold *pd, uint64_t session);
/* copies, bytes, clones, fills, evictions, restores, failed, faults, pages, prefetched */
#define SNAPCOPY_STATS 10
void snapcopy_stats(struct poold *pd, uint64_t ret[SNAPCOPY_STATS]);
void snapcopy_close(struct poold *pd);
extern const struct ctl_handler snapcopy_handlers[];

/* snap-place.c: node copies made ahead of use, on the nodes an admin names */
void snapplace_serve(struct poold *pd, struct conn *conn, uint64_t req_id,
		     const Pool__SnapPlace *m);
void snapplace_close(struct poold *pd);
void snap_recount_want(struct poold *pd);
extern const struct ctl_handler snapplace_handlers[];

#endif /* POOLD_SNAP_H */

/*
 * daemon/hold/hold-sync.c - the coordinator tells each lender what it holds: a
 * region's extents with the region's record, KV values with theirs, bare
 * extents (a reservation, a move on its way). The lender keeps them in its
 * record (hold.c); reconcile.c compares that record with the map.
 */
#include "config.h"

#include "daemon/hold/ledger.h"
#include "daemon/hold/hold.h"
#include "daemon/member/member.h"

/*
 * Coordinator: tell a lender the n holdings it holds (a region's extents
 * with the region's record, committed KV values with theirs), in one
 * message; this poold records its own at once. With done, the lender
 * answers once they are recorded (and journaled, for a persistent value):
 * done gets 0 or the error, at once or later.
 */
void hold_tell_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
			coord_done_cb done, void *arg)
{
	int rc;

	if (node != pd->node_id) {
		holdings_send(pd, node, h, n, done, arg);
		return;
	}
	rc = hold_add(pd, h, n);
	if (done != NULL)
		done(pd, arg, rc);
}

/*
 * Coordinator: tell a lender it now holds an extent of id's (a KV
 * namespace's, or a region's on its way to this place), with no record.
 */
void hold_tell(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
	       uint64_t id)
{
	struct holding h = {.e = {.arena = arena, .off = off, .len = len, .region = id}};

	hold_tell_holdings(pd, node, &h, 1, NULL, NULL);
}

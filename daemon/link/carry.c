/*
 * daemon/link/carry.c - how this poold reaches the memory other poolds lend.
 * The transfers it carries for its clients (xfer.c), its copies between
 * lenders (copy.c), its RESP endpoint's values (resp-remote.c) and its link
 * probes (probe.c) all go through here, one of two ways (fabric.transfer):
 *
 *  - checked (carry-link.c): requests on links whose two ends proved they
 *    know the cluster's key, each checked by the lender against what it
 *    holds before a byte moves. The default, and the only way that is
 *    safe on fabrics that enforce no keys in hardware: over UCX's TCP and
 *    shared-memory transports, whoever reaches a worker reads and writes
 *    all of its process's memory (doc/decisions.md).
 *  - rma (carry-rma.c): UCX one-sided operations with the lenders' keys,
 *    for fabrics whose hardware bounds a key to its registration.
 *
 * A member's way is made on its first transfer and made again after it
 * failed or the member restarted; its generation tells callers whether
 * the way their transfers went is still the member's (carry_current()).
 * A way that failed is not made again for the same incarnation within a
 * heartbeat interval: the lender most likely died, and transfers fail fast
 * until a new one registers.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "proto/pool_contract.h"

static uint64_t carry_gens; /* ways made so far: each has a number of its own */

static void carry_changed(struct poold *pd);
static void carry_member_dead(struct poold *pd, struct member *m);

static const struct carry_hooks carry_hooks = {
    .changed = carry_changed,
    .dead = carry_member_dead,
};

/* A number for a new way. */
uint64_t carry_new_gen(void)
{
	return ++carry_gens;
}

/* Start the way fabric.transfer names. */
int carry_open(struct poold *pd)
{
	pd->carry = pd->conf->fabric_transfer == TRANSFER_RMA ? &carry_rma_ops : &carry_link_ops;
	pd->carry_hooks = &carry_hooks;
	return pd->carry->open(pd);
}

void carry_close(struct poold *pd)
{
	struct member *m;

	if (pd->carry == NULL)
		return;
	TAILQ_FOREACH(m, &pd->members, entry)
		pd->carry->drop(m);
	pd->carry->close(pd);
	pd->carry_hooks = NULL;
}

/* The member to carry a transfer to, if it is there to be reached. */
static int carry_reach(struct poold *pd, uint32_t node, struct member **ret_m)
{
	struct member *m = member_find(pd, node);

	if (m == NULL || m->state == MEMBER_DEAD)
		return POOL_ELOST;
	if (pd->carry->failed(m)) {
		if (m->way_failed_ms == 0)
			m->way_failed_ms = units_now_ms(); /* (seen failed now) */
		if (m->way_incarnation == m->info->incarnation &&
		    units_now_ms() - m->way_failed_ms < (uint64_t)pd->conf->heartbeat_ms)
			return POOL_ELOST;
	}
	*ret_m = m;
	return 0;
}

/* A transfer within this poold's own memory, done: its callback comes from the loop. */
struct carry_done {
	fab_done_cb cb;
	void *arg;
	int status;
};

static void carry_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct carry_done d = *(struct carry_done *)arg;

	(void)fd;
	(void)what;
	free(arg);
	d.cb(d.arg, d.status);
}

/*
 * Where a peer's (or this poold's) transfer of [off, off+len) of the
 * extent at ext of arena may reach: what a holding says (hold_reach()),
 * or for the memory of the KV shards this node owns, what its allocator
 * gave out (kvstore_reach()).
 */
int carry_memory(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		 bool last, void **ret_ptr)
{
	if (arena == KV_STORE_ARENA)
		return kvstore_reach(pd, ext, off, len, ret_ptr);
	return hold_reach(pd, arena, ext, off, len, last, ret_ptr);
}

/*
 * A transfer to this poold's own memory (a copy between two of its
 * extents, its RESP endpoint's values): done at once, after the check a
 * peer's would pass (carry-link.c).
 */
static int carry_local(struct poold *pd, enum carry_op op, const struct carry_place *p, void *buf,
		       uint64_t a, uint64_t b, uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	struct carry_done *d = malloc(sizeof(*d));
	void *mem;
	int rc;

	if (d == NULL)
		return -ENOMEM;
	if (p->arena == CARRY_PROBE_ARENA)
		rc = p->ext == 0 && p->off <= pd->probe_len && p->len <= pd->probe_len - p->off
			 ? (mem = (char *)pd->probe_buf + p->off, 0)
			 : -ERANGE;
	else
		rc = carry_memory(pd, p->arena, p->ext, p->off, p->len, true, &mem);
	if (rc == 0 && op >= CARRY_FADD && (p->len != 8 || (uintptr_t)mem % 8 != 0))
		rc = -EINVAL;
	if (rc == 0) {
		switch (op) {
		case CARRY_READ:
			memcpy(buf, mem, p->len);
			break;
		case CARRY_WRITE:
			memcpy(mem, buf, p->len);
			break;
		case CARRY_FADD:
			*ret_old = __atomic_fetch_add((uint64_t *)mem, a, __ATOMIC_SEQ_CST);
			break;
		case CARRY_CSWAP:
			*ret_old = a;
			__atomic_compare_exchange_n((uint64_t *)mem, ret_old, b, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			break;
		}
	}
	*d = (struct carry_done){cb, arg, rc};
	if (event_base_once(pd->base, -1, EV_TIMEOUT, carry_done_cb, d, &(struct timeval){0, 0}) <
	    0) {
		free(d);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Carry one transfer to p->node: op on p's bytes, buf the local side (for
 * reads and writes), a and b the operands of atomics (whose old value goes
 * to *ret_old). 0 and the way's generation, then cb once from the loop; or
 * -errno (cb never called).
 */
int carry_start(struct poold *pd, enum carry_op op, const struct carry_place *p, void *buf,
		uint64_t a, uint64_t b, uint64_t *ret_old, fab_done_cb cb, void *arg,
		uint64_t *ret_gen)
{
	struct member *m;
	int rc;

	if (p->node == pd->node_id) {
		*ret_gen = 0; /* (the one way that never closes) */
		return carry_local(pd, op, p, buf, a, b, ret_old, cb, arg);
	}
	rc = carry_reach(pd, p->node, &m);
	if (rc < 0)
		return rc;
	rc = pd->carry->start(pd, m, op, p, buf, a, b, ret_old, cb, arg);
	if (rc < 0)
		return rc;
	*ret_gen = m->way_gen;
	return 0;
}

int carry_read(struct poold *pd, const struct carry_place *p, void *buf, fab_done_cb cb, void *arg,
	       uint64_t *ret_gen)
{
	return carry_start(pd, CARRY_READ, p, buf, 0, 0, NULL, cb, arg, ret_gen);
}

int carry_write(struct poold *pd, const struct carry_place *p, const void *buf, fab_done_cb cb,
		void *arg, uint64_t *ret_gen)
{
	return carry_start(pd, CARRY_WRITE, p, (void *)(uintptr_t)buf, 0, 0, NULL, cb, arg,
			   ret_gen);
}

/*
 * Whether a transfer's error says its way went (a connection refused,
 * reset, cancelled or timed out, a lender that broke its protocol or did
 * not prove the key) rather than the lender refusing it: the caller then
 * reports POOL_ELOST.
 */
bool carry_lost(int err)
{
	switch (err) {
	case -EACCES:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -ECONNABORTED:
	case -ECANCELED:
	case -EPIPE:
	case -ENOTCONN:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EPROTO:
		return true;
	default:
		return false;
	}
}

/* Whether the way of generation gen is still node's and has not failed. */
bool carry_current(struct poold *pd, uint32_t node, uint64_t gen)
{
	struct member *m = member_find(pd, node);

	if (node == pd->node_id)
		return true;
	return m != NULL && m->way_gen == gen && !pd->carry->failed(m) &&
	       (m->ep != NULL || m->link != NULL);
}

/*
 * Make the writes carried to node on the way of generation gen complete
 * there: 0 (cb later), 1 (they are, no cb), or POOL_ELOST when that way was
 * closed meanwhile (what it carried may be lost).
 */
int carry_flush(struct poold *pd, uint32_t node, uint64_t gen, fab_done_cb cb, void *arg)
{
	if (!carry_current(pd, node, gen))
		return POOL_ELOST;
	if (node == pd->node_id)
		return 1;
	return pd->carry->flush(pd, member_find(pd, node), cb, arg);
}

/* Close the way to m; the next transfer makes a new one. */
void carry_drop(struct poold *pd, struct member *m)
{
	if (pd->carry != NULL)
		pd->carry->drop(m);
}

/*
 * This poold registered (again), under a new number: the links it makes
 * from now on say so, and those with nothing in flight are made again.
 * The others go on (a lender serves links made under its numbers since
 * it last died, member_epoch_ok()).
 */
void carry_joined(struct poold *pd)
{
	struct fab_link_peer self = {pd->node_id, pd->incarnation, pd->epoch};
	struct member *m;

	if (pd->links == NULL)
		return;
	fab_links_set_self(pd->links, &self);
	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->link != NULL && fab_link_idle(m->link) &&
		    (m->side_link == NULL || fab_link_idle(m->side_link)))
			carry_drop(pd, m);
}

/* Every way closes: what they carry fails now (this node learnt it was declared dead). */
void carry_fence(struct poold *pd)
{
	struct member *m;

	TAILQ_FOREACH(m, &pd->members, entry)
		carry_drop(pd, m);
}

/* What lenders check against changed (holdings, members): waiting requests are checked again. */
static void carry_changed(struct poold *pd)
{
	if (pd->links != NULL)
		fab_links_kick(pd->links);
}

/* A member was declared dead: nothing more from it is served, nothing more carried to it. */
static void carry_member_dead(struct poold *pd, struct member *m)
{
	unsigned n = pd->links != NULL ? fab_links_drop_peer(pd->links, m->info->id) : 0;

	if (n > 0)
		log_info("node %u (%s) is fenced: %u fabric link(s) from it closed", m->info->id,
			 m->info->name, n);
	carry_drop(pd, m);
}

/* What the ways moved: it changes while they carry. */
uint64_t carry_activity(const struct poold *pd)
{
	return pd->carry != NULL ? pd->carry->activity(pd) : 0;
}

/* What this poold's ways issued, for the metrics. */
void carry_stats(struct poold *pd, struct fab_rma_stats *ret_issued)
{
	struct fab_link_stats ls;

	*ret_issued = (struct fab_rma_stats){0};
	if (pd->fab != NULL)
		fab_ctx_rma_stats(pd->fab, ret_issued);
	if (pd->links != NULL) {
		fab_links_stats(pd->links, &ls);
		ret_issued->get_ops += ls.read_ops;
		ret_issued->get_bytes += ls.read_bytes;
		ret_issued->put_ops += ls.write_ops;
		ret_issued->put_bytes += ls.write_bytes;
	}
}

/*
 * daemon/copy.c - copy an extent from one lender's arena to another's.
 *
 * This poold reads the source over the fabric into a buffer of its own and
 * writes it to the destination, MOVE_CHUNK at a time, each get then put in
 * flight from the event loop; once the last put is flushed (complete at the
 * destination) the caller's callback runs. It uses the members' shared
 * endpoints (cluster_arena()): closing endpoints of its own after each copy
 * could silence the shared ones (UCX 1.13 over TCP pairs the endpoints of
 * two workers), and a copy fails if an endpoint it uses is closed meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "daemon/poold.h"
#include "fabric/fabric.h"
#include "proto/pool_contract.h"

#define MOVE_CHUNK (4u << 20)

/* One side of a copy: a lender's arena, at an offset. */
struct copy_end {
	uint32_t node, arena;
	uint64_t off;
};

struct copy {
	struct poold *pd;
	copy_done_cb cb;
	void *arg;
	struct copy_end src, dst;
	uint64_t src_gen, dst_gen; /* the endpoints used: the copy fails if they change */
	uint64_t len;
	uint64_t pos, chunk;
	uint8_t *buf;
	int error;
};

static void copy_step(struct copy *cp);

static void copy_free(struct copy *cp)
{
	free(cp->buf);
	free(cp);
}

/*
 * The endpoint, key and address of [pos, pos+len) of one side; the first
 * call fixes the endpoint's generation, later ones fail if it changed.
 */
static int copy_reach(struct copy *cp, const struct copy_end *e, uint64_t *gen, uint64_t pos,
		      uint64_t len, struct fab_ep **ret_ep, struct fab_rkey **ret_rkey,
		      uint64_t *ret_raddr)
{
	uint64_t g;
	int rc = cluster_arena(cp->pd, e->node, e->arena, e->off + pos, len, ret_ep, ret_rkey,
			       ret_raddr, &g);

	if (rc < 0)
		return rc;
	if (*gen != 0 && *gen != g)
		return POOL_ELOST; /* the endpoint the copy used was closed: what it sent may be
				      lost */
	*gen = g;
	return 0;
}

static void copy_free_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	copy_free(arg);
}

/* The copy is complete at the destination (or failed): tell the caller. */
static void copy_flushed(void *arg, int status)
{
	struct copy *cp = arg;

	cp->cb(cp->pd, cp->arg, cp->error ? cp->error : status);
	/* Not from inside this completion: its endpoint must outlive the callback. */
	event_base_once(cp->pd->base, -1, EV_TIMEOUT, copy_free_cb, cp, &(struct timeval){0, 0});
}

/* Copying ended: make sure the puts are complete at the destination first. */
static void copy_finish(struct copy *cp)
{
	struct fab_ep *ep = cluster_ep_of(cp->pd, cp->dst.node, cp->dst_gen);
	int rc = cp->error;

	if (rc == 0)
		rc = ep != NULL ? fab_flush_nb(ep, copy_flushed, cp) : POOL_ELOST;
	if (rc < 0) {
		if (cp->error == 0)
			cp->error = rc;
		copy_flushed(cp, rc);
	}
}

static void copy_put_done(void *arg, int status)
{
	struct copy *cp = arg;

	if (status < 0) {
		cp->error = status;
		copy_finish(cp);
		return;
	}
	cp->pos += cp->chunk;
	copy_step(cp);
}

static void copy_get_done(void *arg, int status)
{
	struct copy *cp = arg;
	struct fab_rkey *rkey;
	struct fab_ep *ep;
	uint64_t raddr;
	int rc = status;

	if (rc == 0)
		rc = copy_reach(cp, &cp->dst, &cp->dst_gen, cp->pos, cp->chunk, &ep, &rkey, &raddr);
	if (rc == 0)
		rc = fab_put_nb(ep, cp->buf, cp->chunk, raddr, rkey, copy_put_done, cp);
	if (rc < 0) {
		cp->error = rc;
		copy_finish(cp);
	}
}

/* Copy the next chunk: get from the source, then put to the destination. */
static void copy_step(struct copy *cp)
{
	struct fab_rkey *rkey;
	struct fab_ep *ep;
	uint64_t raddr;
	int rc;

	if (cp->pos >= cp->len) {
		copy_finish(cp);
		return;
	}
	cp->chunk = MIN((uint64_t)MOVE_CHUNK, cp->len - cp->pos);
	rc = copy_reach(cp, &cp->src, &cp->src_gen, cp->pos, cp->chunk, &ep, &rkey, &raddr);
	if (rc == 0)
		rc = fab_get_nb(ep, cp->buf, cp->chunk, raddr, rkey, copy_get_done, cp);
	if (rc < 0) {
		cp->error = rc;
		copy_finish(cp);
	}
}

/*
 * Copy len bytes from src_off of src to dst_off of dst; cb gets 0 or the
 * error once the bytes are at the destination. 0, or -errno when the copy
 * could not start (no callback then).
 */
int copy_start(struct poold *pd, const struct lender_pool *src, uint64_t src_off,
	       const struct lender_pool *dst, uint64_t dst_off, uint64_t len, copy_done_cb cb,
	       void *arg)
{
	struct copy *cp = calloc(1, sizeof(*cp));
	struct fab_rkey *rkey;
	struct fab_ep *ep;
	uint64_t raddr;
	int rc;

	if (cp == NULL || (cp->buf = malloc(MIN((uint64_t)MOVE_CHUNK, len ? len : 1))) == NULL) {
		free(cp);
		return -ENOMEM;
	}

	cp->pd = pd;
	cp->cb = cb;
	cp->arg = arg;
	cp->src = (struct copy_end){src->node, src->arena, src_off};
	cp->dst = (struct copy_end){dst->node, dst->arena, dst_off};
	cp->len = len;
	/* Both lenders reachable, or the copy does not start. */
	rc = copy_reach(cp, &cp->src, &cp->src_gen, 0, len, &ep, &rkey, &raddr);
	if (rc == 0)
		rc = copy_reach(cp, &cp->dst, &cp->dst_gen, 0, len, &ep, &rkey, &raddr);
	if (rc < 0) {
		copy_free(cp);
		return rc;
	}
	copy_step(cp);
	return 0;
}

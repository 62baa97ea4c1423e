/*
 * daemon/copy.c - copy an extent from one lender's arena to another's.
 *
 * This poold reads the source over the fabric into a buffer of its own and
 * writes it to the destination, MOVE_CHUNK at a time, each get then put in
 * flight from the event loop; once the last put is flushed (complete at the
 * destination) the caller's callback runs. Each copy has endpoints of its
 * own to both lenders, so a dead peer fails only its copy.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "daemon/poold.h"
#include "fabric/fabric.h"

#define MOVE_CHUNK (4u << 20)

struct copy {
	struct poold *pd;
	copy_done_cb cb;
	void *arg;
	struct fab_ep *src_ep, *dst_ep;
	struct fab_rkey *src_rkey, *dst_rkey;
	uint64_t src_addr, dst_addr, len;
	uint64_t pos, chunk;
	uint8_t *buf;
	int error;
};

static void copy_step(struct copy *cp);

static void copy_free(struct copy *cp)
{
	if (cp->src_rkey != NULL)
		fab_rkey_destroy(cp->src_rkey);
	if (cp->dst_rkey != NULL)
		fab_rkey_destroy(cp->dst_rkey);
	fab_ep_abort(cp->src_ep);
	fab_ep_abort(cp->dst_ep);
	free(cp->buf);
	free(cp);
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
	int rc = cp->error;

	if (rc == 0)
		rc = fab_flush_nb(cp->dst_ep, copy_flushed, cp);
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
	int rc = status;

	if (rc == 0)
		rc = fab_put_nb(cp->dst_ep, cp->buf, cp->chunk, cp->dst_addr + cp->pos, cp->dst_rkey,
				copy_put_done, cp);
	if (rc < 0) {
		cp->error = rc;
		copy_finish(cp);
	}
}

/* Copy the next chunk: get from the source, then put to the destination. */
static void copy_step(struct copy *cp)
{
	int rc;

	if (cp->pos >= cp->len) {
		copy_finish(cp);
		return;
	}
	cp->chunk = MIN((uint64_t)MOVE_CHUNK, cp->len - cp->pos);
	rc = fab_get_nb(cp->src_ep, cp->buf, cp->chunk, cp->src_addr + cp->pos, cp->src_rkey,
			copy_get_done, cp);
	if (rc < 0) {
		cp->error = rc;
		copy_finish(cp);
	}
}

/* An endpoint of its own to a lender's arena (not the member's shared one). */
static int copy_endpoint(struct poold *pd, const struct lender_pool *lp, struct fab_ep **ret_ep,
			 struct fab_rkey **ret_rkey)
{
	struct member *m = cluster_find(pd, lp->node);
	int rc;

	if (m == NULL)
		return -EHOSTUNREACH;
	rc = fab_ep_create(pd->fab, m->info->worker_addr.data, m->info->worker_addr.len, NULL, NULL,
			   ret_ep);
	if (rc < 0)
		return rc;
	rc = fab_rkey_unpack(*ret_ep, lp->rkey, lp->rkey_len, ret_rkey);
	if (rc < 0) {
		fab_ep_abort(*ret_ep);
		*ret_ep = NULL;
	}
	return rc;
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
	int rc;

	if (cp == NULL || (cp->buf = malloc(MIN((uint64_t)MOVE_CHUNK, len ? len : 1))) == NULL) {
		free(cp);
		return -ENOMEM;
	}
	cp->pd = pd;
	cp->cb = cb;
	cp->arg = arg;
	cp->src_addr = src->addr + src_off;
	cp->dst_addr = dst->addr + dst_off;
	cp->len = len;
	rc = copy_endpoint(pd, src, &cp->src_ep, &cp->src_rkey);
	if (rc == 0)
		rc = copy_endpoint(pd, dst, &cp->dst_ep, &cp->dst_rkey);
	if (rc < 0) {
		copy_free(cp);
		return rc;
	}
	copy_step(cp);
	return 0;
}

/*
 * daemon/link/copy.c - copy an extent from one lender's arena to another's.
 *
 * This poold reads the source into a buffer of its own and writes it to the
 * destination (carry.c), MOVE_CHUNK at a time, each read then write in
 * flight from the event loop; once the last write is complete at the
 * destination the caller's callback runs. It uses the members' shared ways:
 * closing endpoints of its own after each copy could silence the shared
 * ones (UCX 1.13 over TCP pairs the endpoints of two workers), and a copy
 * fails if a way it uses is closed meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "daemon/link/link.h"
#include "proto/pool_contract.h"

#define MOVE_CHUNK (4u << 20)

/* One side of a copy: the extent at off of a lender's arena. */
struct copy {
	LIST_ENTRY(copy) entry; /* (copies: every one not freed) */
	struct poold *pd;
	copy_done_cb cb; /* NULL once cancelled: it ends with nothing more said */
	void *arg;
	struct copy_end src, dst;
	uint64_t src_gen, dst_gen; /* the endpoints used: the copy fails if they change */
	uint64_t len;
	uint64_t pos, chunk;
	uint8_t *buf;
	int error;
};

/*
 * Every copy not freed: one whose source or destination never answers
 * stays until poold stops (its caller tries again after a while).
 */
static LIST_HEAD(, copy) copies = LIST_HEAD_INITIALIZER(copies);

static void copy_step(struct copy *cp);

static void copy_free(struct copy *cp)
{
	LIST_REMOVE(cp, entry);
	free(cp->buf);
	free(cp);
}

/* [pos, pos+len) of one side. */
static struct carry_place copy_place(const struct copy_end *e, uint64_t pos, uint64_t len)
{
	return (struct carry_place){e->node, e->arena, e->off, pos, len};
}

/* The first transfer fixes the way's generation of a side, later ones fail if it changed. */
static int copy_way(uint64_t *gen, uint64_t g)
{
	if (*gen != 0 && *gen != g)
		return POOL_ELOST; /* the way the copy used was closed: what it sent may be lost */
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

	if (cp->cb == NULL) /* (cancelled: freed by copy_close()) */
		return;
	cp->cb(cp->pd, cp->arg, cp->error ? cp->error : status);
	cp->cb = NULL;
	/* Not from inside this completion: its way must outlive the callback. */
	event_base_once(cp->pd->base, -1, EV_TIMEOUT, copy_free_cb, cp, &(struct timeval){0, 0});
}

/* Copying ended: make sure the writes are complete at the destination first. */
static void copy_finish(struct copy *cp)
{
	int rc = cp->error;

	if (rc == 0)
		rc = carry_flush(cp->pd, cp->dst.node, cp->dst_gen, copy_flushed, cp);
	if (rc != 0) {
		if (cp->error == 0 && rc < 0)
			cp->error = rc;
		copy_flushed(cp, rc < 0 ? rc : 0);
	}
}

static void copy_put_done(void *arg, int status)
{
	struct copy *cp = arg;

	if (status < 0 && cp->error == 0)
		cp->error = status;
	cp->pos += cp->chunk;
	copy_step(cp);
}

static void copy_get_done(void *arg, int status)
{
	struct copy *cp = arg;
	struct carry_place p = copy_place(&cp->dst, cp->pos, cp->chunk);
	uint64_t gen;
	int rc = status;

	if (cp->cb == NULL)
		return;
	if (rc == 0 && cp->error == 0) {
		rc = carry_write(cp->pd, &p, cp->buf, copy_put_done, cp, &gen);
		if (rc == 0) {
			/* (on a way made since the last chunk: it completes, then the copy fails)
			 */
			cp->error = copy_way(&cp->dst_gen, gen);
			return;
		}
	}
	if (rc < 0 && cp->error == 0)
		cp->error = rc;
	copy_finish(cp);
}

/* Copy the next chunk: read it from the source, then write it to the destination. */
static void copy_step(struct copy *cp)
{
	struct carry_place p;
	uint64_t gen;
	int rc;

	if (cp->cb == NULL) /* (cancelled: nothing more is sent) */
		return;
	if (cp->pos >= cp->len || cp->error != 0) {
		copy_finish(cp);
		return;
	}
	cp->chunk = MIN((uint64_t)MOVE_CHUNK, cp->len - cp->pos);
	p = copy_place(&cp->src, cp->pos, cp->chunk);
	rc = carry_read(cp->pd, &p, cp->buf, copy_get_done, cp, &gen);
	if (rc == 0) {
		cp->error = copy_way(&cp->src_gen, gen);
		return;
	}
	cp->error = rc;
	copy_finish(cp);
}

/*
 * Copy len bytes from src to dst; cb gets 0 or the error once the bytes
 * are at the destination. 0, or -errno when the copy could not start (no
 * callback then).
 */
int copy_start(struct poold *pd, struct copy_end src, struct copy_end dst, uint64_t len,
	       copy_done_cb cb, void *arg)
{
	struct copy *cp = calloc(1, sizeof(*cp));
	struct carry_place p;
	int rc;

	if (cp == NULL || (cp->buf = malloc(MIN((uint64_t)MOVE_CHUNK, len ? len : 1))) == NULL) {
		free(cp);
		return -ENOMEM;
	}

	cp->pd = pd;
	cp->cb = cb;
	cp->arg = arg;
	cp->src = src;
	cp->dst = dst;
	cp->len = len;
	cp->chunk = MIN((uint64_t)MOVE_CHUNK, len);
	p = copy_place(&cp->src, 0, cp->chunk);
	LIST_INSERT_HEAD(&copies, cp, entry);
	rc = carry_read(pd, &p, cp->buf, copy_get_done, cp, &cp->src_gen);
	if (rc < 0) { /* the source cannot be reached: the copy does not start */
		copy_free(cp);
		return rc;
	}
	return 0;
}

/*
 * poold stops: the copies not done end with -ECANCELED to their callers
 * (whose state goes with the structures they belong to, still there), and
 * nothing more of them is sent.
 */
void copy_cancel(struct poold *pd)
{
	struct copy *cp;

	LIST_FOREACH(cp, &copies, entry)
		if (cp->cb != NULL) {
			copy_done_cb cb = cp->cb;

			cp->cb = NULL;
			cb(pd, cp->arg, -ECANCELED);
		}
}

/* Free every copy, once the fabric is closed (no transfer of theirs can complete any more). */
void copy_close(void)
{
	while (!LIST_EMPTY(&copies))
		copy_free(LIST_FIRST(&copies));
}

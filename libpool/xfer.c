/*
 * libpool/xfer.c - transfers through this process's poold.
 *
 * A client holds no endpoint to any lender and no key: on fabrics whose
 * keys are not enforced in hardware (UCX over TCP or shared memory),
 * whoever reaches a worker reaches all of its process's memory. So poold
 * carries every transfer, after checking it against what the session was
 * granted. Data moves through a window: a memfd poold made and both map
 * (registered with the fabric once, on poold's side), so poold moves it
 * between the window and the lender's memory without a copy of its own.
 * Items are cut to fit the window and sent as few Xfer requests as fit;
 * a caller's buffer is copied into the window before a write and out of it
 * after a read, unless it is one pool_buf_alloc() gave: a window of its
 * own, which poold moves the bytes into and out of directly.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/internal.h"

#define XFER_WINDOW_SIZE (64u << 20)
#define XFER_MAX_OPS 4096

/* A buffer window of pool_buf_alloc(). */
struct pool_buf {
	struct pool_buf *next;
	char *base;
	uint64_t size;
	uint32_t window;
};

/* A new window of at least size bytes, mapped here. */
static int xfer_window_new(struct pool *pool, uint64_t size, char **ret_base, uint64_t *ret_size,
			   uint32_t *ret_id)
{
	Pool__XferWindow req = POOL__XFER_WINDOW__INIT;
	Pool__XferWindowReply *rep;
	void *base;
	int fd = -1, rc;

	req.size = size;
	rc = pool_call_fd(pool, WIRE_XFER_WINDOW, &req.base, WIRE_XFER_WINDOW_REPLY,
			  (ProtobufCMessage **)&rep, &fd);
	if (rc < 0)
		return rc;
	if (fd < 0 || rep->size < size) {
		wire_msg_free(&rep->base);
		if (fd >= 0)
			close(fd);
		return pool_err(POOL_EPROTOCOL, "poold gave no window");
	}
	base = mmap(NULL, rep->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED) {
		wire_msg_free(&rep->base);
		return pool_err(-errno, "cannot map the transfer window: %s", err_str(-errno));
	}
	*ret_base = base;
	*ret_size = rep->size;
	*ret_id = rep->window;
	wire_msg_free(&rep->base);
	return 0;
}

/* The staging window, made on first use; data_lock held. */
static int xfer_window(struct pool *pool)
{
	if (pool->win != NULL)
		return 0;
	return xfer_window_new(pool, XFER_WINDOW_SIZE, &pool->win, &pool->win_size, &pool->win_id);
}

/* The buffer window holding all of [buf, buf+len), if any; data_lock held. */
static const struct pool_buf *xfer_buf_of(const struct pool *pool, const void *buf, uint64_t len)
{
	const struct pool_buf *b;

	for (b = pool->bufs; b != NULL; b = b->next)
		if ((const char *)buf >= b->base && len <= b->size &&
		    (uint64_t)((const char *)buf - b->base) <= b->size - len)
			return b;
	return NULL;
}

/*
 * Where n buffers of lens[i] bytes are for poold to copy into or out of at
 * once (a KV get or put in one request), data_lock held: all in one
 * window of pool_buf_alloc(), else laid out in the staging window, each
 * at a 64-byte boundary, and *ret_stage is its base (the caller copies
 * them in before or out after). Room for the staging layout: POOL_KV_INLINE_MAX
 * bytes in all.
 */
int pool_xfer_lay(struct pool *pool, size_t n, void *const *bufs, const size_t *lens,
		  uint32_t *ret_window, uint64_t *offs, char **ret_stage)
{
	const struct pool_buf *b = n > 0 ? xfer_buf_of(pool, bufs[0], lens[0]) : NULL;
	uint64_t at = 0;
	size_t i;
	int rc;

	for (i = 0; b != NULL && i < n; i++) {
		if (xfer_buf_of(pool, bufs[i], lens[i]) != b)
			break;
		offs[i] = (uint64_t)((const char *)bufs[i] - b->base);
	}
	if (b != NULL && i == n) {
		*ret_window = b->window;
		*ret_stage = NULL;
		return 0;
	}
	if ((rc = xfer_window(pool)) < 0)
		return rc;
	for (i = 0; i < n; i++) {
		offs[i] = at;
		at += (lens[i] + 63) & ~(uint64_t)63;
	}
	if (at > pool->win_size)
		return pool_err(-E2BIG, "%llu bytes do not fit the transfer window",
				(unsigned long long)at);
	*ret_window = pool->win_id;
	*ret_stage = pool->win;
	return 0;
}

/* Forget the windows (at pool_close()). */
void pool_xfer_close(struct pool *pool)
{
	while (pool->bufs != NULL) {
		struct pool_buf *b = pool->bufs;

		pool->bufs = b->next;
		munmap(b->base, b->size);
		free(b);
	}
	if (pool->win != NULL)
		munmap(pool->win, pool->win_size);
	pool->win = NULL;
}

POOL_EXPORT int pool_buf_alloc(struct pool *pool, size_t len, void **ret_buf)
{
	struct pool_buf *b;
	int rc;

	if (pool == NULL || ret_buf == NULL || len == 0)
		return pool_err(-EINVAL, "pool_buf_alloc: invalid argument");
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return pool_err(-ENOMEM, "out of memory");
	pthread_mutex_lock(&pool->data_lock);
	rc = xfer_window_new(pool, MAX((uint64_t)len, 64u << 10), &b->base, &b->size, &b->window);
	if (rc == 0) {
		b->next = pool->bufs;
		pool->bufs = b;
	}
	pthread_mutex_unlock(&pool->data_lock);
	if (rc < 0) {
		free(b);
		return rc;
	}
	*ret_buf = b->base;
	return 0;
}

POOL_EXPORT int pool_buf_free(struct pool *pool, void *buf)
{
	Pool__XferWindow req = POOL__XFER_WINDOW__INIT;
	struct pool_buf **pp, *b;
	ProtobufCMessage *rep;
	int rc;

	if (pool == NULL || buf == NULL)
		return pool_err(-EINVAL, "pool_buf_free: invalid argument");
	pthread_mutex_lock(&pool->data_lock);
	for (pp = &pool->bufs; (b = *pp) != NULL && b->base != buf; pp = &b->next)
		;
	if (b != NULL)
		*pp = b->next;
	pthread_mutex_unlock(&pool->data_lock);
	if (b == NULL)
		return pool_err(-EINVAL, "pool_buf_free: %p is not a buffer of pool_buf_alloc()",
				buf);
	/* Size 0 closes the window at poold; it frees it once nothing moves into it. */
	req.size = 0;
	req.has_window = 1;
	req.window = b->window;
	rc = pool_call(pool, WIRE_XFER_WINDOW, &req.base, WIRE_OK, &rep);
	if (rc == 0)
		wire_msg_free(rep);
	munmap(b->base, b->size);
	free(b);
	return rc;
}

/*
 * Send ops[0..n) (their data already in the window), and take in the
 * statuses. poold refuses a request with EBUSY while the uid has too many
 * in progress (many processes of one uid at once): it is sent again a
 * little later, until one is answered.
 */
static int xfer_send(struct pool *pool, Pool__XferOp **ops, size_t n, int32_t *status,
		     uint64_t *old)
{
	Pool__Xfer req = POOL__XFER__INIT;
	Pool__XferReply *rep;
	unsigned pause_us = 100;
	size_t i;
	int rc;

	req.ops = ops;
	req.n_ops = n;
	while ((rc = pool_call(pool, WIRE_XFER, &req.base, WIRE_XFER_REPLY,
			       (ProtobufCMessage **)&rep)) == -EBUSY) {
		usleep(pause_us);
		pause_us = MIN(2 * pause_us, 10000u);
	}
	if (rc < 0)
		return rc;
	if (rep->n_status != n || rep->n_old != n) {
		wire_msg_free(&rep->base);
		return pool_err(POOL_EPROTOCOL, "poold answered %zu of %zu transfers",
				rep->n_status, n);
	}
	for (i = 0; i < n; i++) {
		status[i] = rep->status[i];
		old[i] = rep->old[i];
	}
	wire_msg_free(&rep->base);
	return 0;
}

/* Whether poold refused ops of the staging window as a window it retired. */
static bool xfer_staging_retired(const struct pool *pool, Pool__XferOp **ops, size_t n,
				 const int32_t *status)
{
	size_t k;

	for (k = 0; k < n; k++)
		if ((status[k] == -EBADFD || status[k] == -EBADF) && ops[k]->has_window &&
		    ops[k]->window == pool->win_id)
			return true;
	return false;
}

/* The ops of one Xfer request, and for each where its result goes. */
struct xfer_batch {
	size_t cap, n;
	Pool__XferOp *ops, **opp;
	struct {
		size_t item;
		uint64_t pos, len; /* the piece's place in its item; bytes to copy out */
	} * cut;
	int32_t *status;
	uint64_t *old;
};

static void xfer_batch_free(struct xfer_batch *b)
{
	free(b->ops);
	free(b->opp);
	free(b->cut);
	free(b->status);
	free(b->old);
}

/*
 * Room for the ops one request of items[0..n) may need (an item's pieces,
 * and one more at each full window); the items' statuses reset.
 */
static int xfer_batch_new(struct pool *pool, struct pool_xfer_item *items, size_t n,
			  struct xfer_batch *b)
{
	size_t k, cap;

	for (k = 0, cap = 1; k < n && cap < XFER_MAX_OPS; k++) {
		uint64_t step =
		    items[k].max_op ? MIN(items[k].max_op, pool->win_size) : pool->win_size;

		items[k].status = 0;
		cap += 1 + items[k].len / step + items[k].len / pool->win_size;
	}
	for (; k < n; k++)
		items[k].status = 0;
	memset(b, 0, sizeof(*b));
	b->cap = MIN(cap, XFER_MAX_OPS);
	b->ops = calloc(b->cap, sizeof(*b->ops));
	b->opp = calloc(b->cap, sizeof(*b->opp));
	b->cut = calloc(b->cap, sizeof(*b->cut));
	b->status = calloc(b->cap, sizeof(*b->status));
	b->old = calloc(b->cap, sizeof(*b->old));
	if (b->ops == NULL || b->opp == NULL || b->cut == NULL || b->status == NULL ||
	    b->old == NULL)
		return pool_err(-ENOMEM, "out of memory");
	return 0;
}

/*
 * Op of the piece of item it at pos, its length in *ret_len: a read or
 * write takes what is left of the staging window past *used (a write's
 * bytes copied there), or none when the caller's buffer is a window of
 * pool_buf_alloc(). False, and no op, when the staging window is full.
 */
static bool xfer_op_make(struct pool *pool, const struct pool_xfer_item *it, uint64_t pos,
			 uint64_t *used, Pool__XferOp *op, uint64_t *ret_len)
{
	uint64_t len = it->op >= POOL_XFER_FADD ? 0 : MIN(it->len - pos, pool->win_size - *used);

	if (it->max_op != 0)
		len = MIN(len, it->max_op);
	if (it->op < POOL_XFER_FADD && len == 0 && it->len > 0)
		return false;
	pool__xfer_op__init(op);
	op->op = it->op;
	op->off = it->off + (it->place ? 0 : pos);
	op->len = len;
	if (it->place) {
		op->has_node = op->has_arena = 1;
		op->node = it->node;
		op->arena = it->arena;
		op->has_within = pos != 0;
		op->within = pos;
	} else {
		op->has_region = 1;
		op->region = it->region;
	}
	if (it->op < POOL_XFER_FADD) {
		const struct pool_buf *b = xfer_buf_of(pool, it->buf, it->len);

		op->has_window = op->has_win_off = 1;
		if (b != NULL) { /* in place: nothing to copy, no room taken */
			len = MIN(it->len - pos, it->max_op ? it->max_op : UINT64_MAX);
			op->len = len;
			op->window = b->window;
			op->win_off = (uint64_t)((const char *)it->buf - b->base) + pos;
		} else {
			op->window = pool->win_id;
			op->win_off = *used;
			if (it->op == POOL_XFER_WRITE)
				memcpy(pool->win + *used, (const char *)it->buf + pos, len);
			*used += len;
		}
	}
	op->has_a = op->has_b = it->op >= POOL_XFER_FADD;
	op->a = it->a;
	op->b = it->b;
	*ret_len = len;
	return true;
}

/* One request's ops, from item *i at *pos on: as many pieces as fit the window. */
static void xfer_batch_fill(struct pool *pool, struct pool_xfer_item *items, size_t n,
			    struct xfer_batch *b, size_t *i, uint64_t *pos)
{
	uint64_t used = 0, len;

	for (b->n = 0; *i < n && b->n < b->cap; b->n++) {
		struct pool_xfer_item *it = &items[*i];
		Pool__XferOp *op = &b->ops[b->n];

		if (!xfer_op_make(pool, it, *pos, &used, op, &len))
			break; /* the window is full */
		b->opp[b->n] = op;
		b->cut[b->n].item = *i;
		b->cut[b->n].pos = *pos;
		b->cut[b->n].len = op->window == pool->win_id ? len : 0;
		*pos += len;
		if (*pos >= it->len) {
			(*i)++;
			*pos = 0;
		}
	}
}

/* The answers of a request to its items: statuses, old values, the bytes read. */
static void xfer_batch_results(struct pool *pool, struct pool_xfer_item *items,
			       const struct xfer_batch *b)
{
	size_t k;

	for (k = 0; k < b->n; k++) {
		struct pool_xfer_item *it = &items[b->cut[k].item];

		if (b->status[k] < 0 && it->status == 0)
			it->status = b->status[k];
		it->old = b->old[k];
		if (it->op == POOL_XFER_READ && b->status[k] == 0 && b->cut[k].len > 0)
			memcpy((char *)it->buf + b->cut[k].pos, pool->win + b->ops[k].win_off,
			       b->cut[k].len);
	}
}

/*
 * Carry items[0..n): each item's status (0 or -errno) goes to its status
 * field, an atomic's old value to its old field. Returns 0, or the error
 * that stopped them all (no window, the connection to poold).
 */
int pool_xfer_run(struct pool *pool, struct pool_xfer_item *items, size_t n)
{
	struct xfer_batch b = {0};
	bool retried = false;
	uint64_t pos = 0;
	size_t i = 0;
	int rc;

	pthread_mutex_lock(&pool->data_lock);
	rc = xfer_window(pool);
	if (rc == 0)
		rc = xfer_batch_new(pool, items, n, &b);
	while (rc == 0 && i < n) {
		xfer_batch_fill(pool, items, n, &b, &i, &pos);
		rc = xfer_send(pool, b.opp, b.n, b.status, b.old);
		if (rc < 0)
			break;
		/*
		 * poold retires a window that a transfer it gave up on may still
		 * write into (-EBADFD on it, or -EBADF once it is freed): take a
		 * new staging window and send these ops again, once.
		 */
		if (!retried && xfer_staging_retired(pool, b.opp, b.n, b.status)) {
			retried = true;
			munmap(pool->win, pool->win_size);
			pool->win = NULL;
			rc = xfer_window(pool);
			i = b.cut[0].item;
			pos = b.cut[0].pos;
			continue;
		}
		xfer_batch_results(pool, items, &b);
	}
	pthread_mutex_unlock(&pool->data_lock);
	xfer_batch_free(&b);
	return rc;
}

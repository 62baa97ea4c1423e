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
 * after a read.
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

/* The window, made on first use; data_lock held. */
static int xfer_window(struct pool *pool)
{
	Pool__XferWindow req = POOL__XFER_WINDOW__INIT;
	Pool__XferWindowReply *rep;
	void *base;
	int fd = -1, rc;

	if (pool->win != NULL)
		return 0;
	req.size = XFER_WINDOW_SIZE;
	rc = pool_call_fd(pool, WIRE_XFER_WINDOW, &req.base, WIRE_XFER_WINDOW_REPLY,
			  (ProtobufCMessage **)&rep, &fd);
	if (rc < 0)
		return rc;
	if (fd < 0 || rep->size < (64u << 10)) {
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
	pool->win = base;
	pool->win_size = rep->size;
	pool->win_id = rep->window;
	wire_msg_free(&rep->base);
	return 0;
}

/* Forget the window (at pool_close()). */
void pool_xfer_close(struct pool *pool)
{
	if (pool->win != NULL)
		munmap(pool->win, pool->win_size);
	pool->win = NULL;
}

/* Send ops[0..n) (their data already in the window), and take in the statuses. */
static int xfer_send(struct pool *pool, Pool__XferOp **ops, size_t n, int32_t *status,
		     uint64_t *old)
{
	Pool__Xfer req = POOL__XFER__INIT;
	Pool__XferReply *rep;
	size_t i;
	int rc;

	req.ops = ops;
	req.n_ops = n;
	rc = pool_call(pool, WIRE_XFER, &req.base, WIRE_XFER_REPLY, (ProtobufCMessage **)&rep);
	if (rc < 0)
		return rc;
	if (rep->n_status != n || rep->n_old != n) {
		wire_msg_free(&rep->base);
		return pool_err(POOL_EPROTOCOL, "poold answered %zu of %zu transfers", rep->n_status,
				n);
	}
	for (i = 0; i < n; i++) {
		status[i] = rep->status[i];
		old[i] = rep->old[i];
	}
	wire_msg_free(&rep->base);
	return 0;
}

/*
 * Carry items[0..n): each item's status (0 or -errno) goes to its status
 * field, an atomic's old value to its old field. Returns 0, or the error
 * that stopped them all (no window, the connection to poold).
 */
int pool_xfer_run(struct pool *pool, struct pool_xfer_item *items, size_t n)
{
	Pool__XferOp *ops = NULL, **opp = NULL;
	struct {
		size_t item;
		uint64_t pos, len;
	} *cut = NULL;
	int32_t *status = NULL;
	uint64_t *old = NULL;
	size_t i = 0, k, nops;
	uint64_t pos = 0;
	int rc;

	for (k = 0; k < n; k++)
		items[k].status = 0;
	pthread_mutex_lock(&pool->data_lock);
	rc = xfer_window(pool);
	if (rc < 0)
		goto out;
	ops = calloc(XFER_MAX_OPS, sizeof(*ops));
	opp = calloc(XFER_MAX_OPS, sizeof(*opp));
	cut = calloc(XFER_MAX_OPS, sizeof(*cut));
	status = calloc(XFER_MAX_OPS, sizeof(*status));
	old = calloc(XFER_MAX_OPS, sizeof(*old));
	if (ops == NULL || opp == NULL || cut == NULL || status == NULL || old == NULL) {
		rc = pool_err(-ENOMEM, "out of memory");
		goto out;
	}
	while (i < n) {
		uint64_t used = 0;

		/* One request: as many pieces as fit the window. */
		for (nops = 0; i < n && nops < XFER_MAX_OPS; nops++) {
			struct pool_xfer_item *it = &items[i];
			Pool__XferOp *op = &ops[nops];
			uint64_t len = it->op >= POOL_XFER_FADD ? 0 : MIN(it->len - pos,
									  pool->win_size - used);

			if (it->max_op != 0)
				len = MIN(len, it->max_op);

			if (it->op < POOL_XFER_FADD && len == 0 && it->len > 0)
				break; /* the window is full */
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
				op->has_window = op->has_win_off = 1;
				op->window = pool->win_id;
				op->win_off = used;
				if (it->op == POOL_XFER_WRITE)
					memcpy(pool->win + used, (const char *)it->buf + pos, len);
			}
			op->has_a = op->has_b = it->op >= POOL_XFER_FADD;
			op->a = it->a;
			op->b = it->b;
			opp[nops] = op;
			cut[nops].item = i;
			cut[nops].pos = pos;
			cut[nops].len = len;
			used += len;
			pos += len;
			if (pos >= it->len) {
				i++;
				pos = 0;
			}
		}
		rc = xfer_send(pool, opp, nops, status, old);
		if (rc < 0)
			goto out;
		for (k = 0; k < nops; k++) {
			struct pool_xfer_item *it = &items[cut[k].item];

			if (status[k] < 0 && it->status == 0)
				it->status = status[k];
			it->old = old[k];
			if (it->op == POOL_XFER_READ && status[k] == 0)
				memcpy((char *)it->buf + cut[k].pos, pool->win + ops[k].win_off,
				       cut[k].len);
		}
	}
out:
	pthread_mutex_unlock(&pool->data_lock);
	free(ops);
	free(opp);
	free(cut);
	free(status);
	free(old);
	return rc;
}

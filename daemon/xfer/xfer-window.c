/*
 * daemon/xfer/xfer-window.c - the windows client transfers move bytes through.
 *
 * A client asks for a window (a sealed memfd both map), puts its data there
 * or reads it from there, and names offsets of it in its Xfer requests
 * (xfer.c). The window is sealed against shrinking and growing before the
 * client sees it: a client cannot make poold's mapping of it fault. (With
 * fabric.transfer = rma, its pages are registered with UCX once.) Windows
 * are bounded per session (16, of 1 GiB in all) and per uid
 * (control.max_window_bytes_per_uid, admins excepted): a uid's many
 * connections cannot make poold map and register without end. A window
 * closed while requests still move bytes through it stays mapped until
 * they are done, and refuses new ones.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/xfer/xfer-int.h"
#include "proto/pool_contract.h"
#include "daemon/control/control.h"
#include "daemon/net/net.h"
#include "daemon/xfer/xfer.h"

#define XFER_WINDOW_MIN (64u << 10)
#define XFER_WINDOW_MAX (1ull << 30)
#define XFER_WINDOWS_PER_SESSION 16
#define XFER_BYTES_PER_SESSION (1ull << 30)

static LIST_HEAD(, xfer_window) xfer_windows = LIST_HEAD_INITIALIZER(xfer_windows);
static uint32_t xfer_next_window;

static void xfer_window_free(struct xfer_window *w)
{
	LIST_REMOVE(w, entry);
	if (w->mem != NULL)
		fab_mem_deregister(w->mem);
	munmap(w->base, w->size);
	free(w);
}

/* A request is done with the window. */
void xfer_window_put(struct xfer_window *w)
{
	if (w != NULL && --w->busy == 0 && w->closed)
		xfer_window_free(w);
}

static struct xfer_window *xfer_window_find(uint64_t session, uint32_t id, bool closed)
{
	struct xfer_window *w;

	LIST_FOREACH(w, &xfer_windows, entry)
		if (w->session == session && w->id == id && w->closed == closed)
			return w;
	return NULL;
}

/*
 * The session's window id, held busy for a request: 0, -EBADFD (retired:
 * a transfer given up on may still move into it, the client takes a new
 * one) or -EBADF.
 */
int xfer_window_take(uint64_t session, uint32_t id, struct xfer_window **ret_w)
{
	struct xfer_window *w = xfer_window_find(session, id, false);

	if (w == NULL)
		return xfer_window_find(session, id, true) != NULL ? -EBADFD : -EBADF;
	w->busy++;
	*ret_w = w;
	return 0;
}

/*
 * poold's mapping of the session's open window id and its size, for copies
 * poold makes at once, in the same callback (a KV get or put in one
 * request); NULL when the session has no such window open.
 */
char *xfer_window_map(uint64_t session, uint32_t id, uint64_t *ret_size)
{
	struct xfer_window *w = xfer_window_find(session, id, false);

	if (w == NULL)
		return NULL;
	*ret_size = w->size;
	return w->base;
}

/* A new window for the caller's session: its memfd goes with the reply. */
int xfer_window_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__XferWindow *m = (const Pool__XferWindow *)msg;
	Pool__XferWindowReply reply = POOL__XFER_WINDOW_REPLY__INIT;
	uint64_t uid_max = (uint64_t)r->pd->conf->max_window_bytes_per_uid;
	uint64_t size = (m->size + 4095) & ~4095ull, held = 0, uid_held = 0;
	struct xfer_window *w;
	unsigned count = 0;
	int fd, rc;

	if (m->size == 0 && m->has_window) {
		Pool__Ok ok = POOL__OK__INIT;

		w = xfer_window_find(r->session, m->window, false);
		if (w == NULL)
			return req_errorf(r, -ENOENT, "no window %u in this session", m->window);
		w->closed = true; /* transfers into it are refused from now on */
		if (w->busy == 0)
			xfer_window_free(w);
		return req_reply(r, WIRE_OK, &ok.base);
	}
	if (m->size < XFER_WINDOW_MIN || m->size > XFER_WINDOW_MAX)
		return req_errorf(r, -EINVAL, "a window is 64K to 1G, not %llu bytes",
				  (unsigned long long)m->size);
	LIST_FOREACH(w, &xfer_windows, entry) {
		if (w->session == r->session && !w->closed) {
			count++;
			held += w->size;
		}
		/* Retired windows too: poold holds them until the fabric lets go. */
		if (w->uid == r->uid)
			uid_held += w->size;
	}
	if (count >= XFER_WINDOWS_PER_SESSION || held + size > XFER_BYTES_PER_SESSION)
		return req_errorf(r, -EUSERS, "a session holds at most %d windows, of 1G in all",
				  XFER_WINDOWS_PER_SESSION);
	if (!r->admin && uid_held + size > uid_max)
		return req_errorf(r, -EUSERS,
				  "the windows of uid %u may take %llu bytes "
				  "(control.max_window_bytes_per_uid); it holds %llu, and this "
				  "one has %llu",
				  (unsigned)r->uid, (unsigned long long)uid_max,
				  (unsigned long long)uid_held, (unsigned long long)size);
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	fd = memfd_create("pool-window", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = req_errorf(r, -errno, "cannot make a window: %s", err_str(-errno));
		goto out_fd;
	}
	w->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w->base == MAP_FAILED) {
		rc = req_errorf(r, -errno, "cannot map a window: %s", err_str(-errno));
		goto out_fd;
	}
	w->size = size;
	rc = r->pd->fab != NULL ? fab_mem_register(r->pd->fab, w->base, size, &w->mem) : 0;
	if (rc < 0) {
		req_errorf(r, rc, "cannot register a window: %s", err_str(rc));
		goto out_unmap;
	}
	w->session = r->session;
	w->uid = r->uid;
	w->id = ++xfer_next_window;
	reply.window = w->id;
	reply.size = size;
	rc = conn_send_fd(r->conn, WIRE_XFER_WINDOW_REPLY, r->id, &reply.base, fd);
	if (rc < 0) {
		req_errorf(r, rc, "cannot pass the window: %s", err_str(rc));
		if (w->mem != NULL)
			fab_mem_deregister(w->mem);
		goto out_unmap;
	}
	close(fd);
	LIST_INSERT_HEAD(&xfer_windows, w, entry);
	return 0;
out_unmap:
	munmap(w->base, size);
out_fd:
	if (fd >= 0)
		close(fd);
	free(w);
	return rc;
}

/* The client session ended: its windows go once nothing moves into them. */
void xfer_window_session_end(uint64_t session)
{
	struct xfer_window *w, *next;

	for (w = LIST_FIRST(&xfer_windows); w != NULL; w = next) {
		next = LIST_NEXT(w, entry);
		if (w->session != session)
			continue;
		w->closed = true;
		if (w->busy == 0)
			xfer_window_free(w);
	}
}

/* poold stops: every window goes. */
void xfer_window_close_all(void)
{
	while (!LIST_EMPTY(&xfer_windows))
		xfer_window_free(LIST_FIRST(&xfer_windows));
}

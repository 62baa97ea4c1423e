/*
 * libpool/snaplazy.c - lazy clones: copy-on-write clones of a snapshot
 * usable before the node's copy is full (pool_snap_clone_lazy()).
 *
 * A lazy clone is mapped private over the node's copy at once, with a
 * userfaultfd registered on it. The kernel reports a fault of a private
 * mapping of a memfd only where the memfd has no page yet; a thread of
 * this process fetches that one page from the store and places it in the
 * clone (UFFDIO_COPY: a private page of that clone). Once the copy is full
 * the thread closes the userfaultfds, faults find the copy's pages, and
 * each clone is what pool_snap_clone() would have made.
 *
 * One thread per snapshot handle serves all its lazy clones (one epoll
 * over their userfaultfds), in one of two roles:
 *   - filling: poold gave this client the empty copy; the thread writes
 *     the snapshot's recorded working set into it first, in order of first
 *     touch, then the image, in batches (snap_fill_pages()), serving
 *     faults between batches, then says done;
 *   - following: another client fills the copy; poold handed us the copy
 *     being filled, read-only; the thread serves faults on what is not
 *     written yet and asks poold every SNAPLAZY_ASK_MS whether the copy is
 *     ready. If it never will be (its filler gave up: a new fill starts on
 *     a fresh memfd), the clones get the rest of the image as pages of
 *     their own.
 * A clone asked for while the thread runs joins it, without asking poold.
 * A clone is memory of base pages (the copy is not hugetlbfs): a snapshot
 * of 2 MiB pages is served to it in base pages (snapbase.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/snap.h"
#include "snapshot/uffd.h"

/* Bytes of the fill between looks at the clones' faults: 128 pages of 4 KiB, one of 2 MiB. */
#define SNAPLAZY_BATCH_BYTES (512u << 10)
#define SNAPLAZY_ASK_MS 20 /* how often a follower asks whether the copy is ready */
#define SNAPLAZY_EVENTS 64

/* One lazy clone: the server of its faults, which owns its userfaultfd. */
struct snap_lazy_clone {
	struct uffd_server *s;
	size_t seen; /* filling: of its first touches, those the fill has looked at */
};

struct snap_lazy {
	struct pool_snap *snap;
	bool filling;		/* this thread fills the copy; else another client does */
	int fd;			/* the copy: writable when filling, else read-only */
	uint64_t ino;		/* of its memfd */
	uint64_t batch;		/* pages of the fill at once (SNAPLAZY_BATCH_BYTES, at least one) */
	struct snap_base *base; /* its faults served in base pages; NULL: as stored */
	uint64_t per;		/* base pages the clones' servers place per snapshot page */
	void *bounce;		/* filling: a batch on its way to the copy */
	int epfd;		/* over the clones' userfaultfds */
	pthread_mutex_t lock;
	struct snap_lazy_clone **clones;
	size_t nclones, cap;
	bool over; /* the thread is done with the clones: new ones map the copy as is */
	pthread_t thread;
	int result; /* 0, or why the fill failed */
};

static int snap_lazy_fetch(void *arg, size_t n, const uint64_t *pages, void *const *bufs)
{
	return snap_fetch(arg, n, pages, bufs);
}

static int64_t snap_lazy_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A userfaultfd for a lazy clone, or -errno. */
static int snap_lazy_uffd(void)
{
	struct uffdio_api api = {.api = UFFD_API};
	int fd, rc;

	/*
	 * Not the user-mode-only kind an unprivileged caller may be limited
	 * to: a system call or a VMM's guest touching a missing page must wait
	 * for it, not fail with EFAULT.
	 */
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* The copy is whole: the clone's faults from now on find its pages. */
static void snap_lazy_release(struct snap_lazy_clone *c)
{
	uffd_server_free(c->s);
	c->s = NULL;
}

/*
 * The copy will not be whole, and where it has a hole a fault would get a
 * zero page: the clone gets the rest of the image as pages of its own. If
 * even that fails, its userfaultfd stays open for good, and a thread that
 * touches a missing page stays blocked rather than run on zeros.
 */
static int snap_lazy_own_rest(struct snap_lazy_clone *c, size_t batch)
{
	int rc;

	do
		rc = uffd_server_fill(c->s, batch);
	while (rc == 0);
	if (rc != UFFD_SERVER_FILLED)
		return rc;
	snap_lazy_release(c);
	return 0;
}

/*
 * Serve the faults pending on the clones, waiting up to timeout_ms for
 * some. 0 or -errno; *ret_next (if not NULL) gets the page after the last
 * one a clone first touched, or UINT64_MAX.
 */
static int snap_lazy_serve(struct snap_lazy *l, int timeout_ms, uint64_t *ret_next)
{
	struct epoll_event ev[SNAPLAZY_EVENTS];
	const uint64_t *pages;
	int n, i, rc;
	size_t nt;

	if (ret_next != NULL)
		*ret_next = UINT64_MAX;
	n = epoll_wait(l->epfd, ev, SNAPLAZY_EVENTS, timeout_ms);
	for (i = 0; i < n; i++) {
		struct snap_lazy_clone *c = ev[i].data.ptr;

		rc = uffd_server_handle(c->s);
		if (rc < 0)
			return rc; /* a page could not be fetched: nor, then, the fill */
		if (ret_next != NULL && (nt = uffd_server_touched(c->s, &pages)) > c->seen) {
			*ret_next = pages[nt - 1] / l->per + 1;
			c->seen = nt;
		}
	}
	return 0;
}

/* Within a batch of the fill: what the clones wait for is not behind all of it. */
static int snap_lazy_between(void *arg)
{
	return snap_lazy_serve(arg, 0, NULL);
}

/*
 * The recorded working set first, in order of first touch, a batch at a
 * time, the clones' faults served between batches: what they will touch
 * is in the copy before they touch it, not fetched a fault at a time.
 * have[p] marks each page written, for the batches after to skip. 0 or
 * -errno; without a recorded set, nothing to do.
 */
static int snap_lazy_fill_ws(struct snap_lazy *l, uint8_t *have)
{
	uint64_t pages[SNAP_BATCH];
	uint32_t *ws = NULL;
	size_t n = 0, at = 0, k;
	int rc = 0;

	if (snap_ws_load(l->snap, &ws, &n) < 0)
		return 0; /* only slower without it */
	while (at < n && rc == 0) {
		for (k = 0; at < n && k < l->batch; at++)
			if (!have[ws[at]]) {
				have[ws[at]] = 1;
				pages[k++] = ws[at];
			}
		rc = snap_lazy_serve(l, 0, NULL);
		if (rc == 0 && k > 0)
			rc = snap_fill_pages(l->snap, l->fd, pages, k, l->bounce, snap_lazy_between,
					     l);
	}
	free(ws);
	return rc;
}

/* Batch b of the image, less the pages have marks (written already). */
static int snap_lazy_fill_batch(struct snap_lazy *l, size_t b, const uint8_t *have)
{
	uint64_t pages[SNAP_BATCH], p = (uint64_t)b * l->batch;
	uint64_t end = MIN(p + l->batch, l->snap->hdr.npages);
	size_t k = 0;

	for (; p < end; p++)
		if (!have[p])
			pages[k++] = p;
	return k > 0 ? snap_fill_pages(l->snap, l->fd, pages, k, l->bounce, snap_lazy_between, l)
		     : 0;
}

/*
 * Fill the copy: the working set first (snap_lazy_fill_ws()), then the
 * rest in batches, serving the clones' faults between them. The batches
 * go where the clones go: after a fault ahead of the fill, the next batch
 * is the one after that page, so that a clone reading on finds the copy's
 * pages instead of faulting on each; the batches it skipped come last.
 * 0 or -errno.
 */
static int snap_lazy_fill(struct snap_lazy *l)
{
	struct pool_snap *snap = l->snap;
	uint64_t per = l->batch;
	size_t nbatches = (size_t)((snap->hdr.npages + per - 1) / per);
	size_t left = nbatches, cursor = 0, b;
	uint8_t *filled = calloc(nbatches ? nbatches : 1, 1);
	uint8_t *have = calloc(snap->hdr.npages ? snap->hdr.npages : 1, 1);
	uint64_t next;
	int rc = filled != NULL && have != NULL ? 0 : -ENOMEM;

	if (rc == 0)
		rc = snap_lazy_fill_ws(l, have);
	while (left > 0 && rc == 0) {
		rc = snap_lazy_serve(l, 0, &next); /* what the clones wait for comes first */
		if (next < snap->hdr.npages && !filled[next / per])
			cursor = (size_t)(next / per);
		for (b = cursor; filled[b]; b = (b + 1) % nbatches)
			;
		if (rc == 0)
			rc = snap_lazy_fill_batch(l, b, have);
		filled[b] = 1;
		left--;
		cursor = (b + 1) % nbatches;
	}
	free(filled);
	free(have);
	/* l->fd stays open: clones that join map it (a seal checks mappings, not fds). */
	if (rc == 0)
		return snap_copy_end(snap, true);
	snap_copy_end(snap, false);
	return rc;
}

/* Serve the clones' faults until the copy another client fills is ready: 0, or -errno. */
static int snap_lazy_follow(struct snap_lazy *l)
{
	int64_t ask_at = 0, now;
	int rc = 0, ready = 0;

	while (rc == 0 && ready == 0) {
		rc = snap_lazy_serve(l, SNAPLAZY_ASK_MS, NULL);
		if (rc == 0 && (now = snap_lazy_now_ms()) >= ask_at) {
			ask_at = now + SNAPLAZY_ASK_MS;
			ready = snap_copy_state(l->snap, l->ino);
		}
	}
	return rc < 0 ? rc : ready < 0 ? ready : 0;
}

static void *snap_lazy_thread(void *arg)
{
	struct snap_lazy *l = arg;
	int rc = l->filling ? snap_lazy_fill(l) : snap_lazy_follow(l);
	size_t i;

	pthread_mutex_lock(&l->lock);
	l->over = true;
	pthread_mutex_unlock(&l->lock);
	for (i = 0; i < l->nclones; i++) {
		if (rc == 0)
			snap_lazy_release(l->clones[i]);
		else
			snap_lazy_own_rest(l->clones[i], l->batch * l->per);
	}
	l->result = rc;
	return NULL;
}

/*
 * A lazy clone of l's copy at addr (mapped private over it), served by
 * l's thread from now on. Takes uffd. 0 or -errno; under l->lock.
 */
static int snap_lazy_add(struct snap_lazy *l, void *addr, int uffd)
{
	struct pool_snap *snap = l->snap;
	struct uffdio_register reg = {
	    .range = {(uint64_t)(uintptr_t)addr, snap->hdr.image_len},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	uint64_t ps = snap->hdr.page_size / l->per;
	struct fc_mappings m = {.n = 1, .page_size = ps};
	struct epoll_event ev = {.events = EPOLLIN};
	struct snap_lazy_clone *c, **cs;
	char err[FC_ERR_MAX];
	int rc;

	if (l->nclones == l->cap) {
		cs = reallocarray(l->clones, l->cap ? l->cap * 2 : 8, sizeof(*cs));
		if (cs == NULL) {
			close(uffd);
			return -ENOMEM;
		}
		l->clones = cs;
		l->cap = l->cap ? l->cap * 2 : 8;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		close(uffd);
		return -ENOMEM;
	}
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		rc = -errno;
		close(uffd);
		free(c);
		return rc;
	}
	m.r[0] = (struct fc_region){reg.range.start, snap->hdr.image_len, 0, ps};
	/*
	 * One page per fault: the pages after it may be in the copy already,
	 * and would be made the clone's own. Not so for the base pages of a
	 * snapshot page: the fill writes a snapshot page at once.
	 */
	rc = uffd_server_new_fetch(
	    uffd, 0, -1, &m, l->base != NULL ? snap_base_fetch : snap_lazy_fetch,
	    l->base != NULL ? (void *)l->base : snap, snap->hdr.image_len,
	    UFFD_SERVER_ZEROPAGE | (l->base != NULL ? UFFD_SERVER_AROUND : 0) |
		(l->filling ? UFFD_SERVER_RECORD : 0),
	    err, sizeof(err), &c->s);
	ev.data.ptr = c;
	if (rc == 0 && epoll_ctl(l->epfd, EPOLL_CTL_ADD, uffd_server_fd(c->s), &ev) < 0)
		rc = -errno;
	if (rc < 0) {
		uffd_server_free(c->s); /* closes uffd: nothing touched the clone yet */
		free(c);
		return rc;
	}
	l->clones[l->nclones++] = c;
	return 0;
}

/*
 * Free l, its thread done or never started. A clone left with its server
 * is one whose own pages failed too: the server and its userfaultfd stay,
 * for good (snap_lazy_own_rest()).
 */
static void snap_lazy_free(struct snap_lazy *l)
{
	size_t i;

	for (i = 0; i < l->nclones; i++)
		free(l->clones[i]);
	free(l->clones);
	free(l->bounce);
	snap_base_free(l->base);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->fd >= 0)
		close(l->fd);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/*
 * Start the thread behind the lazy clone at addr, mapped private over fd
 * (the copy: to fill, or another client fills it). Takes uffd; keeps fd
 * open. -errno when it cannot: then nothing is started.
 */
static int snap_lazy_start(struct pool_snap *snap, int fd, void *addr, int uffd, bool filling)
{
	struct snap_lazy *l = calloc(1, sizeof(*l));
	struct stat st;
	int rc = -ENOMEM;

	if (l == NULL) {
		close(uffd);
		return rc;
	}
	l->snap = snap;
	l->filling = filling;
	l->batch = MAX(SNAPLAZY_BATCH_BYTES / snap->hdr.page_size, (uint64_t)1);
	l->per = snap_base_per(snap, false);
	l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	pthread_mutex_init(&l->lock, NULL);
	if (l->fd < 0 || l->epfd < 0 || fstat(fd, &st) < 0 ||
	    (filling && (l->bounce = malloc(l->batch * snap->hdr.page_size)) == NULL) ||
	    (l->per > 1 && snap_base_new(snap, l->per, &l->base) < 0)) {
		rc = errno ? -errno : -ENOMEM;
		close(uffd);
		goto out;
	}
	l->ino = st.st_ino;
	if ((rc = snap_lazy_add(l, addr, uffd)) < 0)
		goto out;
	if ((rc = -pthread_create(&l->thread, NULL, snap_lazy_thread, l)) == 0) {
		snap->lazy = l;
		return 0;
	}
	snap_lazy_release(l->clones[0]); /* nothing touched it yet */
out:
	snap_lazy_free(l);
	return rc;
}

/*
 * Another lazy clone while the thread runs: mapped over its copy and
 * served by it, without asking poold. 0; 1 when the thread is done with
 * its clones (then the copy is ready, or will not be: ask poold); -errno.
 */
static int snap_lazy_join(struct snap_lazy *l, void **ret_addr)
{
	int rc, uffd;

	pthread_mutex_lock(&l->lock);
	if (l->over) {
		pthread_mutex_unlock(&l->lock);
		return 1;
	}
	rc = snap_clone_map(l->snap, l->fd, ret_addr);
	if (rc == 0 && (uffd = snap_lazy_uffd()) < 0)
		rc = uffd;
	if (rc == 0 && (rc = snap_lazy_add(l, *ret_addr, uffd)) < 0)
		munmap(*ret_addr, (size_t)l->snap->hdr.image_len);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int snap_lazy_wait(struct pool_snap *snap)
{
	struct snap_lazy *l = snap->lazy;
	int rc;

	if (l == NULL)
		return 0;
	pthread_join(l->thread, NULL);
	snap->lazy = NULL;
	rc = l->result;
	snap_lazy_free(l);
	return rc;
}

POOL_EXPORT int pool_snap_clone_lazy(struct pool_snap *snap, void **ret_addr)
{
	enum snap_copy_as as;
	int rc, fd, uffd;

	if (snap == NULL || ret_addr == NULL)
		return pool_err(-EINVAL, "pool_snap_clone_lazy: invalid argument");
	if (snap->lazy != NULL && (rc = snap_lazy_join(snap->lazy, ret_addr)) <= 0)
		return rc < 0 ? pool_err(rc, "pool_snap_clone_lazy: %s", strerror(-rc)) : 0;
	if ((uffd = snap_lazy_uffd()) < 0)
		return pool_snap_clone(snap, ret_addr); /* the clone waits for the fill */
	/*
	 * Not waiting for a thread done with its clones (letting go of
	 * thousands of userfaultfds takes a while): it left the copy ready,
	 * unless its fill failed; only then, to start another, do we wait.
	 */
	rc = snap_copy_get(snap, true, &fd, &as);
	if (rc < 0) {
		close(uffd);
		return rc;
	}
	rc = snap_clone_map(snap, fd, ret_addr);
	if (rc < 0 || as == COPY_READY) {
		close(uffd);
		if (rc < 0 && as == COPY_TO_FILL)
			snap_copy_end(snap, false);
		close(fd);
		return rc;
	}
	snap_lazy_wait(snap); /* one whose fill failed: a handle has one thread */
	if (snap_lazy_start(snap, fd, *ret_addr, uffd, as == COPY_TO_FILL) < 0) {
		/* Without the thread: fill first, or wait for the one who fills. */
		munmap(*ret_addr, (size_t)snap->hdr.image_len);
		if (as == COPY_TO_FILL && (rc = snap_copy_fill(snap, fd)) == 0)
			rc = snap_clone_map(snap, fd, ret_addr);
		else if (as == COPY_FILLING)
			rc = pool_snap_clone(snap, ret_addr);
	}
	close(fd);
	return rc;
}

POOL_EXPORT int pool_snap_clone_wait(struct pool_snap *snap)
{
	int rc;

	if (snap == NULL)
		return pool_err(-EINVAL, "pool_snap_clone_wait: invalid argument");
	rc = snap_lazy_wait(snap);
	if (rc < 0)
		return pool_err(rc, "snapshot %s: the node's copy behind the lazy clones: %s",
				snap->name, strerror(-rc));
	return 0;
}

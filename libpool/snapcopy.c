/*
 * libpool/snapcopy.c - copy-on-write clones of a snapshot from the node's
 * shared copy.
 *
 * The local poold keeps one sealed memfd per image (daemon/snapcopy.c).
 * The first client on the node to ask is told to fill it: it maps the
 * memfd shared, writes the image from the store, unmaps it and says done;
 * poold seals it and hands it to every later client, which maps it
 * private. The clients asking while it fills wait in poold; if the filler
 * fails or dies, one of them fills it instead.
 *
 * A lazy clone (pool_snap_clone_lazy()) need not wait for the fill it
 * makes. It is mapped private over the copy at once, with a userfaultfd
 * registered on it, and a thread of this process fills the copy. The
 * kernel reports a fault of a private mapping of a memfd only where the
 * memfd has no page yet: the thread fetches that one page from the store
 * and places it in the clone (UFFDIO_COPY, a private page of the clone),
 * between batches of the fill. Once the copy is full the thread closes its
 * userfaultfd, so that faults find the copy's pages, and says done; the
 * clone is then what pool_snap_clone() would have made.
 *
 * A lazy clone asked for while another client fills the copy does the
 * same without filling: poold hands it the copy being filled at once
 * (read-only), its thread serves the faults on what is not written yet
 * and asks poold every few ms whether the copy is ready. If the copy will
 * not be (its filler gave up: the fill starts again on a fresh memfd), the
 * thread places the rest of the image in the clone itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/snap.h"
#include "snapshot/uffd.h"

#define SNAPLAZY_BATCH 128 /* pages of the fill between looks at the clone's faults */
#define SNAPLAZY_ASK_MS 20 /* how often a clone following another's fill asks if it is done */

/* The fill behind a lazy clone. */
struct snap_lazy {
	struct pool_snap *snap;
	int fd;	     /* the copy, when this thread fills it, */
	void *bounce; /* through this buffer of SNAPLAZY_BATCH pages */
	int uffd;    /* registered on the clone; closed once the copy is full */
	uint64_t ino; /* of the copy's memfd */
	struct uffd_server *s;
	pthread_t thread;
	int result;  /* the thread's: 0 or -errno */
};

/* A ready copy passes with the first byte of its reply, which poold can only send on an idle link. */
#define SNAPCOPY_TRIES 5

/* One SnapCopy request; ret_fd (if not NULL) gets the fd that came with the reply, or -1. */
static int snap_copy_call(struct pool *pool, const Pool__SnapCopy *req, char *ret_status,
			  size_t status_len, int *ret_fd)
{
	Pool__SnapCopyReply *rep;
	int rc, fd = -1;

	rc = pool_call_fd(pool, WIRE_SNAP_COPY, &req->base, WIRE_SNAP_COPY_REPLY,
			  (ProtobufCMessage **)&rep, ret_fd ? &fd : NULL);
	if (rc < 0)
		return rc;
	if (ret_status != NULL)
		snprintf(ret_status, status_len, "%s", rep->status);
	wire_msg_free(&rep->base);
	if (ret_fd != NULL)
		*ret_fd = fd;
	return 0;
}

/* done or abort of the copy this client fills. */
static int snap_copy_end(struct pool_snap *snap, const char *op)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;

	req.op = (char *)op;
	req.name = snap->name;
	req.has_id = 1;
	req.id = snap->hdr.id;
	return snap_copy_call(snap->pool, &req, NULL, 0, NULL);
}

/* Fill the empty copy poold handed us, and hand it back. */
static int snap_copy_fill(struct pool_snap *snap, int fd)
{
	void *bounce = malloc(SNAP_BATCH * snap->hdr.page_size);
	uint64_t next;
	size_t k;
	int rc = bounce != NULL ? 0 : pool_err(-ENOMEM, "out of memory");

	for (next = 0; next < snap->hdr.npages && rc == 0; next += k) {
		k = (size_t)MIN(SNAP_BATCH, snap->hdr.npages - next);
		rc = snap_fill_fd(snap, fd, next, k, bounce);
	}
	free(bounce);
	if (rc < 0) {
		/* The fill's message tells why, unless the abort fails too (then that tells). */
		snap_copy_end(snap, "abort");
		return rc;
	}
	return snap_copy_end(snap, "done");
}

/* What poold's answer to a get makes of this client. */
enum snap_copy_as {
	COPY_READY,   /* the copy is ready: map it */
	COPY_TO_FILL, /* the copy is empty: this client fills it */
	COPY_FILLING, /* lazy: another client fills it now */
};

/* The node's copy as poold hands it, and what this client is to do with it. */
static int snap_copy_get(struct pool_snap *snap, bool lazy, int *ret_fd,
			 enum snap_copy_as *ret_as)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	char status[16];
	int rc = 0, fd, i;

	snap_lazy_wait(snap); /* poold refuses a get while this client fills the copy */

	req.op = "get";
	req.name = snap->name;
	req.has_id = req.has_size = 1;
	req.id = snap->hdr.id;
	req.size = snap->hdr.image_len;
	req.has_lazy = lazy;
	req.lazy = lazy;
	for (i = 0; i < SNAPCOPY_TRIES; i++) {
		if (i > 0)
			usleep(1000u << i);
		rc = snap_copy_call(snap->pool, &req, status, sizeof(status), &fd);
		if (rc != -EAGAIN)
			break;
	}
	if (rc < 0)
		return rc;
	if (fd < 0)
		return pool_err(-EPROTO, "snapshot %s: poold sent no copy", snap->name);
	if (strcmp(status, "ready") == 0) {
		*ret_as = COPY_READY;
	} else if (strcmp(status, "fill") == 0) {
		*ret_as = COPY_TO_FILL;
	} else if (lazy && strcmp(status, "filling") == 0) {
		*ret_as = COPY_FILLING;
	} else {
		close(fd);
		return pool_err(-EPROTO, "snapshot %s: unknown copy status '%s'", snap->name,
				status);
	}
	*ret_fd = fd;
	return 0;
}

/*
 * Whether the copy this client maps (the memfd of inode ino) is ready: 1;
 * 0 while it fills; -ESTALE when it never will be (its filler gave up, or
 * it was dropped), or -errno.
 */
static int snap_copy_state(struct pool_snap *snap, uint64_t ino)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	Pool__SnapCopyReply *rep;
	int rc;

	req.op = "state";
	req.name = snap->name;
	req.has_id = 1;
	req.id = snap->hdr.id;
	rc = pool_call(snap->pool, WIRE_SNAP_COPY, &req.base, WIRE_SNAP_COPY_REPLY,
		       (ProtobufCMessage **)&rep);
	if (rc < 0)
		return rc;
	if (!rep->has_ino || rep->ino != ino || strcmp(rep->status, "none") == 0)
		rc = -ESTALE;
	else
		rc = strcmp(rep->status, "ready") == 0;
	wire_msg_free(&rep->base);
	return rc;
}

/* The node's shared copy: a sealed memfd of the image, made here if the node has none. */
int snap_copy_fd(struct pool_snap *snap, int *ret_fd)
{
	enum snap_copy_as as;
	int rc, fd;

	rc = snap_copy_get(snap, false, &fd, &as);
	if (rc < 0)
		return rc;
	if (as == COPY_TO_FILL && (rc = snap_copy_fill(snap, fd)) < 0) {
		close(fd);
		return rc;
	}
	*ret_fd = fd;
	return 0;
}

/* Drop the node's copies of a snapshot (pool_snap_remove): clients keep what they mapped. */
int snap_copy_drop(struct pool *pool, const char *name)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;

	req.op = "drop";
	req.name = (char *)name;
	return snap_copy_call(pool, &req, NULL, 0, NULL);
}

/* A clone: private and writable, the writes of this clone are its own pages. */
static int snap_clone_map(struct pool_snap *snap, int fd, void **ret_addr)
{
	void *addr = mmap(NULL, (size_t)snap->hdr.image_len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			  fd, 0);

	if (addr == MAP_FAILED)
		return pool_err(-errno, "pool_snap_clone: cannot map the copy of %s: %s",
				snap->name, strerror(errno));
	*ret_addr = addr;
	return 0;
}

POOL_EXPORT int pool_snap_clone(struct pool_snap *snap, void **ret_addr)
{
	int rc, fd;

	if (snap == NULL || ret_addr == NULL)
		return pool_err(-EINVAL, "pool_snap_clone: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	rc = snap_clone_map(snap, fd, ret_addr);
	close(fd);
	return rc;
}

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

/* The copy is whole: faults from now on find its pages, the clone needs us no more. */
static void snap_lazy_release(struct snap_lazy *l)
{
	uffd_server_free(l->s);
	l->s = NULL;
	close(l->uffd);
	l->uffd = -1;
}

/*
 * The copy will not be whole, and where it has a hole a fault would get a
 * zero page: the clone gets the rest of the image as pages of its own. If
 * even that fails, our userfaultfd stays open for good, and a thread that
 * touches a missing page stays blocked rather than run on zeros.
 */
static int snap_lazy_own_rest(struct snap_lazy *l)
{
	int rc;

	do
		rc = uffd_server_fill(l->s, SNAPLAZY_BATCH);
	while (rc == 0);
	if (rc != UFFD_SERVER_FILLED)
		return rc;
	snap_lazy_release(l);
	return 0;
}

/* Fill the copy in batches, serving the clone's faults between them; then hand the copy back. */
static void *snap_lazy_fill(void *arg)
{
	struct snap_lazy *l = arg;
	struct pool_snap *snap = l->snap;
	uint64_t next;
	size_t k = 0;
	int rc = 0;

	for (next = 0; next < snap->hdr.npages && rc == 0; next += k) {
		rc = uffd_server_handle(l->s); /* what the clone waits for comes first */
		k = (size_t)MIN(SNAPLAZY_BATCH, snap->hdr.npages - next);
		if (rc == 0)
			rc = snap_fill_fd(snap, l->fd, next, k, l->bounce);
	}
	close(l->fd); /* poold seals a memfd nobody else holds writable */
	l->fd = -1;
	if (rc == 0) {
		snap_lazy_release(l);
		l->result = snap_copy_end(snap, "done");
		return NULL;
	}
	l->result = rc;
	snap_copy_end(snap, "abort");
	snap_lazy_own_rest(l);
	return NULL;
}

/*
 * Another client fills the copy: serve the clone's faults on what it has
 * not written yet, asking poold every SNAPLAZY_ASK_MS whether it is ready.
 */
static void *snap_lazy_follow(void *arg)
{
	struct snap_lazy *l = arg;
	int64_t ask_at = 0, now;
	int rc = 0, ready = 0;

	while (rc == 0 && ready == 0) {
		struct pollfd pfd = {uffd_server_fd(l->s), POLLIN, 0};

		(void)poll(&pfd, 1, SNAPLAZY_ASK_MS);
		rc = uffd_server_handle(l->s);
		if (rc == 0 && (now = snap_lazy_now_ms()) >= ask_at) {
			ask_at = now + SNAPLAZY_ASK_MS;
			ready = snap_copy_state(l->snap, l->ino);
		}
	}
	if (rc == 0 && ready == 1)
		snap_lazy_release(l);
	else
		l->result = snap_lazy_own_rest(l);
	return NULL;
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

/*
 * Start the thread behind a lazy clone at addr, mapped private over fd:
 * the copy to fill, or one another client fills. Takes uffd. -errno when
 * it cannot: then nothing is started.
 */
static int snap_lazy_start(struct pool_snap *snap, int fd, void *addr, int uffd, bool fill)
{
	struct uffdio_register reg = {
	    .range = {(uint64_t)(uintptr_t)addr, snap->hdr.image_len},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct fc_mappings m = {.n = 1, .page_size = snap->hdr.page_size};
	struct snap_lazy *l;
	char err[FC_ERR_MAX];
	struct stat st;
	int rc, dup_fd;

	if ((l = calloc(1, sizeof(*l))) == NULL) {
		close(uffd);
		return -ENOMEM;
	}
	l->snap = snap;
	l->uffd = uffd;
	l->fd = -1;
	if (ioctl(l->uffd, UFFDIO_REGISTER, &reg) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	l->ino = st.st_ino;
	if (fill && ((l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 ||
		     (l->bounce = malloc(SNAPLAZY_BATCH * snap->hdr.page_size)) == NULL)) {
		rc = -errno;
		goto out;
	}
	m.r[0] = (struct fc_region){reg.range.start, snap->hdr.image_len, 0, snap->hdr.page_size};
	if ((dup_fd = fcntl(l->uffd, F_DUPFD_CLOEXEC, 0)) < 0) {
		rc = -errno;
		goto out;
	}
	/* One page per fault: the pages after it may be in the copy already. */
	rc = uffd_server_new_fetch(dup_fd, 0, &m, snap_lazy_fetch, snap, snap->hdr.image_len,
				   UFFD_SERVER_ZEROPAGE, err, sizeof(err), &l->s);
	if (rc == 0 && (rc = -pthread_create(&l->thread, NULL,
					     fill ? snap_lazy_fill : snap_lazy_follow, l)) == 0) {
		snap->lazy = l;
		return 0;
	}
out:
	uffd_server_free(l->s);
	free(l->bounce);
	if (l->fd >= 0)
		close(l->fd);
	close(l->uffd); /* nothing touched the clone yet */
	free(l);
	return rc;
}

/* Wait for the thread behind a lazy clone, if one runs: 0, or why it failed. */
int snap_lazy_wait(struct pool_snap *snap)
{
	struct snap_lazy *l = snap->lazy;
	int rc;

	if (l == NULL)
		return 0;
	pthread_join(l->thread, NULL);
	snap->lazy = NULL;
	rc = l->result;
	uffd_server_free(l->s); /* left when even the clone's own pages failed: */
	free(l->bounce);	/* its userfaultfd stays open (see snap_lazy_own_rest()) */
	free(l);
	return rc;
}

POOL_EXPORT int pool_snap_clone_lazy(struct pool_snap *snap, void **ret_addr)
{
	enum snap_copy_as as;
	int rc, fd, uffd;

	if (snap == NULL || ret_addr == NULL)
		return pool_err(-EINVAL, "pool_snap_clone_lazy: invalid argument");
	if ((uffd = snap_lazy_uffd()) < 0)
		return pool_snap_clone(snap, ret_addr); /* the clone waits for the fill */
	rc = snap_copy_get(snap, true, &fd, &as);
	if (rc < 0) {
		close(uffd);
		return rc;
	}
	rc = snap_clone_map(snap, fd, ret_addr);
	if (rc < 0 || as == COPY_READY) {
		close(uffd);
		if (rc < 0 && as == COPY_TO_FILL)
			snap_copy_end(snap, "abort");
	} else if (snap_lazy_start(snap, fd, *ret_addr, uffd, as == COPY_TO_FILL) < 0) {
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
		return pool_err(rc, "snapshot %s: the node's copy behind the lazy clone: %s",
				snap->name, strerror(-rc));
	return 0;
}

POOL_EXPORT int pool_snap_clone_fd(struct pool_snap *snap, int *ret_fd)
{
	char path[64];
	int rc, fd, ro;

	if (snap == NULL || ret_fd == NULL)
		return pool_err(-EINVAL, "pool_snap_clone_fd: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	/*
	 * The seals already forbid writing the memfd; a read-only open of it
	 * also keeps a VMM from mapping it shared and writable at all.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	rc = ro < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return pool_err(rc, "pool_snap_clone_fd: cannot reopen the copy of %s read-only: %s",
				snap->name, strerror(-rc));
	*ret_fd = ro;
	return 0;
}

POOL_EXPORT int pool_snap_place(struct pool_snap *snap)
{
	int rc, fd;

	if (snap == NULL)
		return pool_err(-EINVAL, "pool_snap_place: invalid argument");
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	close(fd);
	return 0;
}

/*
 * libpool/snapuffd.c - lazy restores of a snapshot through userfaultfd:
 * into a range of this process (pool_snap_restore_lazy()), or for
 * Firecracker VMMs that connect to a unix socket (pool_snap_serve()).
 * snapshot/uffd.c serves the faults; this file picks the page source, runs
 * the loops and looks after the working set.
 *
 * Sources. By default the pages come from the node's shared copy of the
 * image (snap_copy_fd()), mapped read-only: a fault costs one copy. With
 * POOL_SNAP_REMOTE they are fetched from the store (snap_fetch(), possibly
 * from remote lenders): one page per fault, the working set and the
 * background fill in batches of 4 MiB. A restore into this process's
 * memory of base pages (not hugetlbfs) is served in base pages even when
 * the snapshot's are 2 MiB (snapbase.c): a fault places 4 KiB, not 2 MiB.
 *
 * pool_snap_serve() is one thread and one poll loop over the listening
 * socket, the handshakes under way and the VMMs being served. Between
 * rounds it does one batch of background work for one VMM (round robin):
 * a piece of its working set, then, on a round that found nothing to do,
 * a piece of the fill. So no VMM waits behind another's prefetch for
 * longer than one batch.
 *
 * Saves. With POOL_SNAP_TRACK each VMM's writes are seen, and a client
 * may send "save PID NAME" on the socket instead of a handshake (the
 * first byte tells: Firecracker's JSON starts with '['):
 * libpool/snapvmsave.c takes the written pages at one instant, the loop
 * reads them from the VMM a batch a round (a write to one not read yet is
 * served after it is read), then a thread of its own stores them; the
 * loop answers the client when that thread is done. One save at a time;
 * the others wait their turn.
 *
 * Failures. libpool does not print, but a serve loop has no caller to
 * hand a per-restore error to: a refused handshake or a failed restore is
 * written to stderr, counted, and the loop goes on. The VMM of a failed
 * restore is killed, as Firecracker's own page servers kill it when they
 * cannot serve a fault: its faulting thread would otherwise wait forever
 * (see snapshot/uffd.c), where it must never be woken on memory we could
 * not fill. A refused handshake kills nothing: nothing was served yet.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "libpool/snap.h"
#include "snapshot/fc.h"
#include "snapshot/uffd.h"

#define SNAPUFFD_FLAGS                                                                             \
	(POOL_SNAP_PREFETCH | POOL_SNAP_RECORD | POOL_SNAP_FILL | POOL_SNAP_REMOTE |               \
	 POOL_SNAP_TRACK)
#define SNAPUFFD_BATCH_BYTES (4u << 20) /* background work done at once */
#define SNAPUFFD_HANDSHAKE_MS 5000	/* for a VMM to send its whole handshake */
#define SNAPUFFD_TICK_MS 100		/* background work waits at most this long */
#define SNAPUFFD_CONNS_MAX 64		/* handshakes and VMMs served at once */

/* Where the pages come from. */
struct snapuffd_src {
	struct pool_snap *snap;
	void *image; /* the node's copy, mapped; NULL: fetched */
	uint64_t len, page_size;
	size_t batch; /* pages of background work at once */
};

static int snapuffd_fetch(void *arg, size_t n, const uint64_t *pages, void *const *bufs)
{
	return snap_fetch(arg, n, pages, bufs);
}

static int snapuffd_src_open(struct snapuffd_src *src, struct pool_snap *snap, unsigned flags)
{
	int fd, rc;

	src->snap = snap;
	src->image = NULL;
	src->len = pool_snap_size(snap);
	src->page_size = pool_snap_page_size(snap);
	src->batch = SNAPUFFD_BATCH_BYTES / src->page_size;
	if (src->batch == 0)
		src->batch = 1;
	if (flags & POOL_SNAP_REMOTE)
		return 0;
	rc = snap_copy_fd(snap, &fd);
	if (rc < 0)
		return rc;
	src->image = mmap(NULL, src->len, PROT_READ, MAP_SHARED, fd, 0);
	rc = -errno;
	close(fd);
	if (src->image == MAP_FAILED) {
		src->image = NULL;
		return pool_err(rc, "snapshot %s: mapping the node's copy: %s", snap->name,
				strerror(-rc));
	}
	return 0;
}

static void snapuffd_src_close(struct snapuffd_src *src)
{
	if (src->image != NULL)
		munmap(src->image, src->len);
	src->image = NULL;
}

/*
 * A page server for one restore, taking uffd (closed on failure too);
 * base: its pages fetched as base pages (snap_base_fetch()), else NULL.
 */
static int snapuffd_server(const struct snapuffd_src *src, struct snap_base *base, int uffd,
			   pid_t peer, int pidfd, const struct fc_mappings *m, unsigned flags,
			   char *err, size_t errlen, struct uffd_server **ret)
{
	/* Pages after a fault's come with it, unless first touches are being recorded. */
	unsigned uflags = UFFD_SERVER_ZEROPAGE | UFFD_SERVER_AROUND;

	if (flags & POOL_SNAP_RECORD)
		uflags |= UFFD_SERVER_RECORD;
	if (flags & POOL_SNAP_TRACK)
		uflags |= UFFD_SERVER_TRACK;
	if (src->image != NULL)
		return uffd_server_new(uffd, peer, pidfd, m, src->image, src->len, uflags, err,
				       errlen, ret);
	return uffd_server_new_fetch(
	    uffd, peer, pidfd, m, base != NULL ? snap_base_fetch : snapuffd_fetch,
	    base != NULL ? (void *)base : src->snap, src->len, uflags, err, errlen, ret);
}

/* The recorded working set, in order of first touch; none when it cannot be read. */
static size_t snapuffd_ws(struct pool_snap *snap, uint64_t **ret_pages)
{
	uint32_t *ws = NULL;
	uint64_t *pages;
	size_t n = 0, i;

	*ret_pages = NULL;
	/* Without the set the restore is only slower: not a reason to fail it. */
	if (snap_ws_load(snap, &ws, &n) < 0 || n == 0) {
		free(ws);
		return 0;
	}
	pages = malloc(n * sizeof(*pages));
	for (i = 0; pages != NULL && i < n; i++)
		pages[i] = ws[i];
	free(ws);
	*ret_pages = pages;
	return pages != NULL ? n : 0;
}

/*
 * A restore ended well: add its first touches to the working set (per:
 * base pages its server placed per snapshot page).
 */
static int snapuffd_record(struct pool_snap *snap, const struct uffd_server *s, unsigned flags,
			   uint64_t per)
{
	const uint64_t *pages;
	uint64_t *sp;
	size_t n;
	int rc;

	if (!(flags & POOL_SNAP_RECORD) || (n = uffd_server_touched(s, &pages)) == 0)
		return 0;
	if (per == 1)
		return snap_ws_merge(snap, pages, n);
	if ((sp = snap_base_pages(pages, n, per, false, &n)) == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = snap_ws_merge(snap, sp, n);
	free(sp);
	return rc;
}

static int64_t snapuffd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- a lazy restore into this process ---- */

struct pool_snap_restore {
	struct snapuffd_src src;
	struct snap_base *base; /* served in base pages, from the store; else NULL */
	uint64_t per;		/* base pages placed per snapshot page (1: as stored) */
	unsigned flags;
	void *addr;
	int uffd;   /* our own copy: closed only once every page is in place */
	int stopfd; /* eventfd: pool_snap_restore_end() is waiting */
	struct uffd_server *s;
	pthread_t thread;
	int result; /* the thread's: 0 or -errno */
};

/*
 * A userfaultfd for this process. A full one first: with user-mode-only
 * faults (Linux 5.11) a system call touching a missing page, read(2) into
 * the range say, would fail with EFAULT instead of waiting for the page.
 * It is what an unprivileged caller gets where vm.unprivileged_userfaultfd
 * is 0, though.
 */
static int snapuffd_uffd_open(void)
{
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE};
	int fd, rc;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return pool_err(-errno, "userfaultfd: %s", strerror(errno));
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		rc = -errno;
		close(fd);
		return pool_err(rc, "userfaultfd: UFFDIO_API: %s", strerror(-rc));
	}
	return fd;
}

/* Serve faults (and fill when idle) until told to stop, then place the rest. */
static void *snapuffd_thread(void *arg)
{
	struct pool_snap_restore *r = arg;
	bool fill = r->flags & POOL_SNAP_FILL;
	int rc = 0;

	while (rc == 0) {
		struct pollfd pfd[2] = {{uffd_server_fd(r->s), POLLIN, 0}, {r->stopfd, POLLIN, 0}};
		int ready = poll(pfd, 2, fill ? 0 : -1);

		if (ready < 0 && errno != EINTR)
			rc = -errno;
		if (ready < 0 || (pfd[1].revents & POLLIN))
			break;
		rc = uffd_server_handle(r->s);
		if (rc == 0 && ready == 0 && fill) {
			rc = uffd_server_fill(r->s, r->src.batch * r->per);
			fill = rc == 0;
			if (rc == UFFD_SERVER_FILLED)
				rc = 0;
		}
	}
	/* Nothing may be left to fault once our userfaultfd is closed. */
	while (rc == 0)
		rc = uffd_server_fill(r->s, r->src.batch * r->per);
	r->result = rc == UFFD_SERVER_FILLED ? 0 : rc < 0 ? rc : -EIO;
	return NULL;
}

/* Open and register the userfaultfd, and make the server on a copy of it. */
static int snapuffd_restore_server(struct pool_snap_restore *r)
{
	struct uffdio_register reg = {
	    .range = {(uint64_t)(uintptr_t)r->addr, r->src.len},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct fc_mappings m = {.n = 1};
	char err[FC_ERR_MAX];
	int dup_fd, rc;

	r->uffd = snapuffd_uffd_open();
	if (r->uffd < 0)
		return r->uffd;
	if (ioctl(r->uffd, UFFDIO_REGISTER, &reg) < 0)
		return pool_err(-errno, "userfaultfd: registering %p+%llu: %s", r->addr,
				(unsigned long long)r->src.len, strerror(errno));
	/*
	 * hugetlbfs ranges are those without UFFDIO_ZEROPAGE. The pages a
	 * tracked server says were written are the snapshot's: served as stored.
	 */
	r->per =
	    r->flags & POOL_SNAP_TRACK
		? 1
		: snap_base_per(r->src.snap, !(reg.ioctls & (UINT64_C(1) << _UFFDIO_ZEROPAGE)));
	if (r->per > 1 && r->src.image == NULL &&
	    (rc = snap_base_new(r->src.snap, r->per, &r->base)) < 0)
		return rc;
	m.page_size = r->src.page_size / r->per;
	m.r[0] = (struct fc_region){reg.range.start, r->src.len, 0, m.page_size};
	dup_fd = fcntl(r->uffd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return pool_err(-errno, "userfaultfd: dup: %s", strerror(errno));
	rc =
	    snapuffd_server(&r->src, r->base, dup_fd, 0, -1, &m, r->flags, err, sizeof(err), &r->s);
	if (rc < 0)
		return pool_err(rc, "snapshot %s: %s", r->src.snap->name, err);
	return 0;
}

static void snapuffd_prefetch_all(struct pool_snap_restore *r)
{
	uint64_t *pages, *bp;
	size_t n = snapuffd_ws(r->src.snap, &pages);

	if (n > 0 && r->per > 1) { /* as base pages: without the memory, no prefetch */
		bp = snap_base_pages(pages, n, r->per, true, &n);
		free(pages);
		pages = bp;
	}
	if (n > 0 && pages != NULL)
		(void)uffd_server_prefetch(r->s, pages, n); /* a failure shows in the thread */
	free(pages);
}

/* Start a lazy restore into [addr, addr + size) of this process. */
POOL_EXPORT int pool_snap_restore_lazy(struct pool_snap *snap, void *addr, unsigned flags,
				       struct pool_snap_restore **ret_restore)
{
	struct pool_snap_restore *r;
	int rc;

	if (snap == NULL || addr == NULL || ret_restore == NULL || (flags & ~SNAPUFFD_FLAGS) ||
	    (uintptr_t)addr % pool_snap_page_size(snap) != 0)
		return pool_err(-EINVAL, "pool_snap_restore_lazy: invalid arguments");
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return pool_err(-ENOMEM, "out of memory");
	r->flags = flags;
	r->addr = addr;
	r->uffd = -1;
	rc = snapuffd_src_open(&r->src, snap, flags);
	if (rc < 0)
		goto out_free;
	r->stopfd = eventfd(0, EFD_CLOEXEC);
	if (r->stopfd < 0) {
		rc = pool_err(-errno, "eventfd: %s", strerror(errno));
		goto out_src;
	}
	rc = snapuffd_restore_server(r);
	if (rc < 0)
		goto out_uffd;
	if (flags & POOL_SNAP_PREFETCH)
		snapuffd_prefetch_all(r);
	rc = -pthread_create(&r->thread, NULL, snapuffd_thread, r);
	if (rc < 0) {
		pool_err(rc, "pthread_create: %s", strerror(-rc));
		goto out_server;
	}
	*ret_restore = r;
	return 0;

out_server:
	uffd_server_free(r->s);
out_uffd:
	/* Nothing touched the range yet (the caller's promise): closing is safe. */
	if (r->uffd >= 0)
		close(r->uffd);
	close(r->stopfd);
	snap_base_free(r->base);
out_src:
	snapuffd_src_close(&r->src);
out_free:
	free(r);
	return rc;
}

/* Stop the restore: the rest of the image is placed first, the pages are kept. */
/*
 * Tell this node's poold how a restore went (s NULL: refused before it
 * began), for its metrics; without waiting for its answer.
 */
static void snapuffd_report(struct pool_snap *snap, const struct uffd_server *s, bool failed)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	struct uffd_stats st = {0};

	if (s != NULL)
		uffd_server_stats(s, &st);
	req.op = POOL__SNAP_COPY_OP__SNAP_COPY_OP_RESTORED;
	req.name = snap->name;
	req.has_failed = req.has_faults = req.has_pages = req.has_prefetched = 1;
	req.failed = failed;
	req.faults = st.faults;
	req.pages = st.copied + st.zeroed;
	req.prefetched = st.prefetched + st.filled + st.around;
	pool_send(snap->pool, WIRE_SNAP_COPY, &req.base, WIRE_SNAP_COPY_REPLY);
}

POOL_EXPORT int pool_snap_restore_end(struct pool_snap_restore *r)
{
	uint64_t one = 1;
	ssize_t n;
	int rc;

	if (r == NULL)
		return pool_err(-EINVAL, "pool_snap_restore_end: no restore");
	n = write(r->stopfd, &one, sizeof(one));
	(void)n; /* an eventfd write fails only on overflow */
	pthread_join(r->thread, NULL);
	rc = r->result;
	if (rc < 0) {
		/*
		 * Our copy of the userfaultfd stays open for good: closing it
		 * would resume a thread blocked on a page we never placed, on
		 * a zero page.
		 */
		pool_err(rc, "snapshot %s: lazy restore failed: %s", r->src.snap->name,
			 uffd_server_error(r->s));
	} else {
		rc = snapuffd_record(r->src.snap, r->s, r->flags, r->per);
		close(r->uffd);
	}
	snapuffd_report(r->src.snap, r->s, r->result < 0);
	uffd_server_free(r->s);
	snap_base_free(r->base);
	close(r->stopfd);
	snapuffd_src_close(&r->src);
	free(r);
	return rc;
}

/* ---- Firecracker restores served on a socket ---- */

/*
 * One connection: its handshake under way, then its VMM being served; or
 * a save request (ctl), read, then waiting its turn.
 */
struct snapuffd_conn {
	int sock; /* during the handshake or the request, else -1 */
	int64_t deadline;
	struct fc_handshake *h;
	struct uffd_server *s; /* after it */
	pid_t peer;
	uint64_t *ws; /* working set still to place, from ws_at */
	size_t nws, ws_at;
	bool filled;
	struct snapvm_copies *copies; /* its written pages, from its first save on */
	struct snapvm_ctl *ctl;	      /* a save request */
	bool ctl_ready;		      /* read whole: it waits its turn */
};

struct snapuffd_serve {
	struct snapuffd_src src;
	unsigned flags;
	struct snapuffd_conn conns[SNAPUFFD_CONNS_MAX];
	unsigned nconns, next; /* next: whose turn of background work */
	unsigned ended, failed;
	struct snapvm_job *job; /* the save being stored */
};

static void snapuffd_conn_free(struct snapuffd_conn *c)
{
	if (c->sock >= 0)
		close(c->sock);
	if (c->h != NULL)
		fc_handshake_clear(c->h);
	free(c->h);
	uffd_server_free(c->s);
	free(c->ws);
	snapvm_copies_drop(c->copies);
	free(c->ctl);
}

static void snapuffd_conn_remove(struct snapuffd_serve *sv, unsigned i)
{
	snapuffd_conn_free(&sv->conns[i]);
	sv->conns[i] = sv->conns[--sv->nconns];
}

static void snapuffd_log(struct snapuffd_serve *sv, pid_t peer, const char *what, const char *why)
{
	pool_log(POOL_LOG_ERR, "snapshot %s: restore for pid %d %s: %s", sv->src.snap->name,
		 (int)peer, what, why);
}

/* A restore is over, well (UFFD_SERVER_EXITED) or not (-errno). */
static void snapuffd_vm_end(struct snapuffd_serve *sv, struct snapuffd_conn *c, int rc)
{
	sv->ended++;
	snapuffd_report(sv->src.snap, c->s, rc != UFFD_SERVER_EXITED);
	if (rc != UFFD_SERVER_EXITED) {
		char why[320];
		int krc = uffd_server_kill(c->s);

		sv->failed++;
		snprintf(why, sizeof(why), "%s; %s", uffd_server_error(c->s),
			 krc == 0
			     ? "the VMM is killed (SIGKILL), as Firecracker's own page servers do"
			     : "the VMM could not be killed");
		snapuffd_log(sv, c->peer, "failed", why);
		return;
	}
	if (snapuffd_record(sv->src.snap, c->s, sv->flags, 1) < 0)
		snapuffd_log(sv, c->peer, "ended, its working set not merged", pool_errormsg());
}

/* The handshake is complete: check it against the image and start serving. */
static int snapuffd_start(struct snapuffd_serve *sv, struct snapuffd_conn *c,
			  const struct fc_mappings *m, char *err, size_t errlen)
{
	int uffd, pidfd, rc;

	rc = fc_validate(m, sv->src.len, err, errlen);
	if (rc < 0)
		return rc;
	uffd = c->h->uffd;
	c->h->uffd = -1;
	pidfd = c->h->peer_pidfd;
	c->h->peer_pidfd = -1;
	rc =
	    snapuffd_server(&sv->src, NULL, uffd, c->peer, pidfd, m, sv->flags, err, errlen, &c->s);
	if (rc == 0 && (sv->flags & POOL_SNAP_PREFETCH))
		c->nws = snapuffd_ws(sv->src.snap, &c->ws);
	return rc;
}

/* Read what the VMM sent; true when the connection is done with (refused). */
static bool snapuffd_handshake(struct snapuffd_serve *sv, struct snapuffd_conn *c, short revents)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX];
	int rc = -EAGAIN;

	if (revents != 0)
		rc = fc_handshake_recv(c->h, c->sock, &m, err, sizeof(err));
	if (rc == -EAGAIN && snapuffd_now_ms() < c->deadline)
		return false;
	if (rc == -EAGAIN) {
		snprintf(err, sizeof(err), "no complete handshake within %d ms (%zu bytes)",
			 SNAPUFFD_HANDSHAKE_MS, c->h->len);
		rc = -ETIMEDOUT;
	}
	c->peer = c->h->peer_pid;
	if (rc == 0)
		rc = snapuffd_start(sv, c, &m, err, sizeof(err));
	/* Firecracker closes its end right after the handshake: so do we. */
	close(c->sock);
	c->sock = -1;
	if (rc == 0)
		return false;
	sv->ended++;
	sv->failed++;
	snapuffd_report(sv->src.snap, NULL, true);
	snapuffd_log(sv, c->peer, "refused", err);
	return true;
}

/* Whether a new connection is a save request, not a handshake: its first byte says. */
static bool snapuffd_is_ctl(struct snapuffd_conn *c)
{
	char first;

	if (c->h->len > 0 || recv(c->sock, &first, 1, MSG_PEEK | MSG_DONTWAIT) != 1 ||
	    first == '[' || first == ' ' || first == '\t' || first == '\r' || first == '\n')
		return false;
	c->ctl = calloc(1, sizeof(*c->ctl));
	return c->ctl != NULL;
}

/* Read a save request; true when the connection is done with (refused). */
static bool snapuffd_ctl_step(struct snapuffd_serve *sv, struct snapuffd_conn *c, short revents)
{
	char err[FC_ERR_MAX];
	int rc = -EAGAIN;

	(void)sv;
	if (revents != 0)
		rc = snapvm_ctl_read(c->ctl, c->sock, err, sizeof(err));
	if (rc == 0) {
		c->ctl_ready = true;
		return false;
	}
	if (rc == -EAGAIN && snapuffd_now_ms() < c->deadline)
		return false;
	if (rc == -EAGAIN)
		snprintf(err, sizeof(err), "no whole request within %d ms", SNAPUFFD_HANDSHAKE_MS);
	snapvm_reply(c->sock, "error %s", err);
	return true;
}

/* Whatever poll said about connection c; true when it is over. */
static bool snapuffd_conn_step(struct snapuffd_serve *sv, struct snapuffd_conn *c, short revents)
{
	int rc;

	if (c->ctl_ready)
		return false;
	if (c->sock >= 0 && (c->ctl != NULL || (revents != 0 && snapuffd_is_ctl(c))))
		return snapuffd_ctl_step(sv, c, revents);
	if (c->sock >= 0)
		return snapuffd_handshake(sv, c, revents);
	if (revents == 0)
		return false;
	rc = uffd_server_handle(c->s);
	if (rc == 0)
		return false;
	snapuffd_vm_end(sv, c, rc);
	return true;
}

static void snapuffd_accept(struct snapuffd_serve *sv, int listen_fd)
{
	struct snapuffd_conn *c = &sv->conns[sv->nconns];
	int sock = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (sock < 0)
		return; /* gone already, or out of fds: the next round tries again */
	memset(c, 0, sizeof(*c));
	c->h = malloc(sizeof(*c->h));
	if (c->h == NULL) {
		close(sock);
		return;
	}
	fc_handshake_init(c->h);
	c->sock = sock;
	c->deadline = snapuffd_now_ms() + SNAPUFFD_HANDSHAKE_MS;
	sv->nconns++;
}

/* Connection c has background work: its working set, or (idle) the fill. */
static bool snapuffd_has_work(const struct snapuffd_serve *sv, const struct snapuffd_conn *c,
			      bool idle)
{
	if (c->s == NULL)
		return false;
	return c->ws_at < c->nws || (idle && (sv->flags & POOL_SNAP_FILL) && !c->filled);
}

/* One batch of background work on connection c: 0, or its server's end. */
static int snapuffd_work(struct snapuffd_serve *sv, struct snapuffd_conn *c)
{
	size_t n = c->nws - c->ws_at;
	int rc;

	if (n > 0) {
		if (n > sv->src.batch)
			n = sv->src.batch;
		rc = uffd_server_prefetch(c->s, c->ws + c->ws_at, n);
		c->ws_at += n;
		return rc == -ERANGE ? 0 : rc; /* a stale set: the restore goes on */
	}
	rc = uffd_server_fill(c->s, sv->src.batch);
	if (rc == UFFD_SERVER_FILLED) {
		c->filled = true;
		rc = 0;
	}
	return rc;
}

/* One batch for the next connection, in turn, that has some. */
static void snapuffd_background(struct snapuffd_serve *sv, bool idle)
{
	unsigned k, i;
	int rc;

	for (k = 0; k < sv->nconns; k++) {
		i = (sv->next + k) % sv->nconns;
		if (!snapuffd_has_work(sv, &sv->conns[i], idle))
			continue;
		sv->next = i + 1;
		rc = snapuffd_work(sv, &sv->conns[i]);
		if (rc != 0) {
			snapuffd_vm_end(sv, &sv->conns[i], rc);
			snapuffd_conn_remove(sv, i);
		}
		return;
	}
}

static bool snapuffd_busy(const struct snapuffd_serve *sv)
{
	unsigned i;

	if (sv->job != NULL && snapvm_job_copying(sv->job))
		return true;
	for (i = 0; i < sv->nconns; i++)
		if (snapuffd_has_work(sv, &sv->conns[i], true))
			return true;
	return false;
}

/* The served VMM of pid vmm, or NULL. */
static struct snapuffd_conn *snapuffd_vmm(struct snapuffd_serve *sv, pid_t vmm)
{
	unsigned i;

	for (i = 0; i < sv->nconns; i++)
		if (sv->conns[i].s != NULL && sv->conns[i].peer == vmm)
			return &sv->conns[i];
	return NULL;
}

/* Start the save that waited longest, when none is being stored. */
static void snapuffd_next_save(struct snapuffd_serve *sv)
{
	struct snapuffd_conn *c = NULL, *vm;
	char err[FC_ERR_MAX + 96];
	unsigned i;

	if (sv->job != NULL)
		return;
	for (i = 0; i < sv->nconns && c == NULL; i++)
		if (sv->conns[i].ctl_ready)
			c = &sv->conns[i];
	if (c == NULL)
		return;
	vm = snapuffd_vmm(sv, c->ctl->vmm);
	if (!(sv->flags & POOL_SNAP_TRACK))
		snprintf(err, sizeof(err), "this server does not see writes: serve with --track");
	else if (vm == NULL)
		snprintf(err, sizeof(err), "no VMM of pid %d is served here", (int)c->ctl->vmm);
	else if (snapvm_save_start(sv->src.snap, sv->src.image, vm->s, &vm->copies, c->ctl, c->sock,
				   &sv->job, err, sizeof(err)) == 0)
		c->sock = -1; /* the job's now */
	if (c->sock >= 0)
		snapvm_reply(c->sock, "error %s", err);
	snapuffd_conn_remove(sv, (unsigned)(c - sv->conns));
}

/*
 * The save under way: the next of its pages read from its VMM, or, once
 * it is stored (revents), answered. Then the next save may start.
 */
static void snapuffd_saved(struct snapuffd_serve *sv, short revents)
{
	struct snapuffd_conn *vm;

	if (sv->job != NULL && snapvm_job_copying(sv->job)) {
		vm = snapuffd_vmm(sv, snapvm_job_vmm(sv->job));
		if (snapvm_job_copy(sv->job, vm != NULL ? vm->s : NULL) < 0)
			sv->job = NULL;
	} else if (sv->job != NULL && revents != 0) {
		snapvm_job_end(sv->job);
		sv->job = NULL;
	}
	snapuffd_next_save(sv);
}

/* The fd poll watches for connection c: none while a request waits its turn. */
static int snapuffd_conn_fd(const struct snapuffd_conn *c)
{
	if (c->ctl_ready)
		return -1;
	return c->sock >= 0 ? c->sock : uffd_server_fd(c->s);
}

/* One round of the loop: wait (at most a tick), then serve what is ready. */
static int snapuffd_round(struct snapuffd_serve *sv, int listen_fd)
{
	struct pollfd pfd[3 + SNAPUFFD_CONNS_MAX];
	unsigned i, njob;
	int ready;

	pfd[0] = (struct pollfd){listen_fd, sv->nconns < SNAPUFFD_CONNS_MAX ? POLLIN : 0, 0};
	for (i = 0; i < sv->nconns; i++)
		pfd[1 + i] = (struct pollfd){snapuffd_conn_fd(&sv->conns[i]), POLLIN, 0};
	njob = 1 + sv->nconns;
	pfd[njob] = (struct pollfd){sv->job != NULL ? snapvm_job_fd(sv->job) : -1, POLLIN, 0};
	/* (only wakes the poll: the round's caller reads snap->stop, set before the write) */
	pfd[njob + 1] = (struct pollfd){sv->src.snap->stop_fd, POLLIN, 0};
	ready = poll(pfd, njob + 2, snapuffd_busy(sv) ? 0 : SNAPUFFD_TICK_MS);
	if (ready < 0 && errno != EINTR)
		return pool_err(-errno, "poll: %s", strerror(errno));
	if (ready < 0)
		return 0;
	if (pfd[njob + 1].revents & POLLIN) { /* drained, or it would wake every poll after */
		uint64_t count;
		ssize_t n = read(sv->src.snap->stop_fd, &count, sizeof(count));

		(void)n;
	}
	/* Backwards, so that the last connection moved into a removed one's place is done. */
	for (i = sv->nconns; i-- > 0;)
		if (snapuffd_conn_step(sv, &sv->conns[i], pfd[1 + i].revents))
			snapuffd_conn_remove(sv, i);
	if (pfd[0].revents & POLLIN)
		snapuffd_accept(sv, listen_fd);
	snapuffd_saved(sv, pfd[njob].revents);
	snapuffd_background(sv, ready == 0);
	return 0;
}

/*
 * VMMs still served when the loop stops lose their page server: say so. A
 * save being stored is finished first; one waiting is refused.
 */
static void snapuffd_abandon(struct snapuffd_serve *sv)
{
	if (sv->job != NULL)
		snapvm_job_end(sv->job);
	sv->job = NULL;
	while (sv->nconns > 0) {
		struct snapuffd_conn *c = &sv->conns[sv->nconns - 1];

		if (c->ctl != NULL && c->sock >= 0)
			snapvm_reply(c->sock, "error the server stopped");
		if (c->s != NULL) {
			sv->failed++;
			snapuffd_log(sv, c->peer, "abandoned",
				     "the server stopped before the VMM exited");
		}
		snapuffd_conn_remove(sv, sv->nconns - 1);
	}
}

/* Whether pool_snap_serve_stop() asked snap's serve to return; taken (a later serve runs). */
static bool snapuffd_stop_taken(struct pool_snap *snap)
{
	return __atomic_exchange_n(&snap->stop, 0, __ATOMIC_ACQ_REL) != 0;
}

/* Serve Firecracker restores of snap on listen_fd (see libpool.h). */
POOL_EXPORT int pool_snap_serve(struct pool_snap *snap, int listen_fd, unsigned flags,
				unsigned max_restores)
{
	struct snapuffd_serve *sv;
	int fl, rc = 0;

	if (snap == NULL || listen_fd < 0 || (flags & ~SNAPUFFD_FLAGS))
		return pool_err(-EINVAL, "pool_snap_serve: invalid arguments");
	fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return pool_err(-errno, "listening socket: %s", strerror(errno));
	if (__atomic_load_n(&snap->stop_fd, __ATOMIC_ACQUIRE) < 0) {
		int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

		if (fd < 0)
			return pool_err(-errno, "eventfd: %s", strerror(errno));
		__atomic_store_n(&snap->stop_fd, fd, __ATOMIC_RELEASE);
	}
	sv = calloc(1, sizeof(*sv));
	if (sv == NULL)
		return pool_err(-ENOMEM, "out of memory");
	sv->flags = flags;
	rc = snapuffd_src_open(&sv->src, snap, flags);
	while (rc == 0 && !snapuffd_stop_taken(snap) &&
	       (max_restores == 0 || sv->ended < max_restores))
		rc = snapuffd_round(sv, listen_fd);
	snapuffd_abandon(sv);
	snapuffd_src_close(&sv->src);
	if (rc == 0)
		rc = (int)sv->failed;
	free(sv);
	return rc;
}

/* Ask snap's serve to return (see libpool.h): a flag, and a write that wakes its poll. */
POOL_EXPORT void pool_snap_serve_stop(struct pool_snap *snap)
{
	uint64_t one = 1;
	ssize_t n;
	int fd;

	if (snap == NULL)
		return;
	__atomic_store_n(&snap->stop, 1, __ATOMIC_RELEASE);
	fd = __atomic_load_n(&snap->stop_fd, __ATOMIC_ACQUIRE);
	if (fd >= 0) {
		n = write(fd, &one, sizeof(one));
		(void)n; /* an eventfd write fails only on overflow, which wakes it as well */
	}
}

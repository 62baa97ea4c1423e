/*
 * snapshot/uffd.c - a userfaultfd page server for one lazy restore.
 *
 * The VMM (Firecracker, after the handshake in fc.c) has mapped guest
 * memory anonymously and registered it for MISSING faults; we hold the
 * userfaultfd and the memory image. A fault on a guest page is answered
 * with UFFDIO_COPY of that page from the image (or UFFDIO_ZEROPAGE when the
 * image page is all zero and the caller asked for it), which also wakes
 * the faulting thread. Everything runs in the caller's thread: one server
 * has no lock and no global state, and uffd_server_fd() is one fd (an
 * epoll set of the userfaultfd and the VMM's pidfd) for an event loop or a
 * thread to wait on.
 *
 * Page states. Each page of the image is missing, present (placed by us),
 * or removed: a REMOVE event (MADV_DONTNEED, e.g. a balloon inflating) or
 * an UNMAP dropped it, so a later fault there is answered with zeros,
 * never with the image (what the guest would see from plain anonymous
 * memory). A REMAP of a whole region moves the region; a partial one is
 * refused, as we could no longer say which image page an address means.
 *
 * The kernel answers UFFDIO_COPY with EEXIST when the page is already
 * there (a prefetch or an earlier copy won the race): success, and we wake
 * the range ourselves since a failed copy wakes nobody. Except that for
 * hugetlbfs it also says EEXIST when it could not allocate a huge page and
 * the page table was there (Firecracker maps guest memory MAP_NORESERVE, so
 * nothing reserved the pages): woken, the VMM would fault again at once,
 * forever. So an EEXIST is believed only when the VMM's pagemap shows the
 * page; where we may not read the pagemap (no ptrace access to the VMM),
 * UFFD_EEXIST_MAX faults answered EEXIST with no page placed between them
 * (each thread waits on one fault at most, so a real run is short) are
 * taken as a page that cannot be placed, which fails the restore.
 * EAGAIN means the
 * address space is changing under a non-cooperative event (REMOVE, UNMAP,
 * REMAP) that is queued for us: the fault is set aside, the events are
 * read and applied, then the fault is retried (for at most
 * UFFD_RETRY_MS). ESRCH means the VMM's address space is gone.
 *
 * Failure. A fault outside every region, an event we cannot apply, or an
 * ioctl error stops the server for good: uffd_server_handle() returns the
 * error and uffd_server_error() says what happened. The guest sees this:
 * its faulting vCPU (or VMM thread) stays blocked in the kernel, never
 * resumed on wrong memory, and the owner must end the VMM (the peer pid
 * from the handshake's SO_PEERCRED) and report the restore failed.
 * We do not unregister the range or close the fd to "unblock" it: the
 * kernel would then satisfy the fault with a fresh zero page and the guest
 * would run on corrupt memory; Firecracker also keeps its own copy of the
 * fd, so closing ours would not wake it anyway.
 *
 * The end. When the VMM exits its pidfd becomes readable (or a copy gets
 * ESRCH) and the server reports UFFD_SERVER_EXITED; a Firecracker socket
 * closing says nothing, since Firecracker closes it right after the
 * handshake.
 *
 * Working set. With UFFD_SERVER_RECORD the image page index of every first
 * fault is appended to a list (prefetched pages are not faults and are not
 * in it; merging the lists of several restores is the store's business).
 * uffd_server_prefetch() places a list of pages in runs of up to
 * UFFD_BATCH_BYTES with one ioctl each; uffd_server_fill() does the same
 * for the pages still missing, in image order, when the owner is idle.
 *
 * Writes. With UFFD_SERVER_TRACK the server registers the guest regions
 * again, for write-protect faults as well (userfaultfd's ioctls act on the
 * address space of the process that made the fd, the VMM's, whoever calls
 * them). Every page it places is write-protected (UFFDIO_COPY_MODE_WP;
 * zeros are copied too, as UFFDIO_ZEROPAGE cannot protect a page before it
 * wakes the faulting thread), except the page of a write fault, which is
 * written at once. A first
 * write to a protected page is a write-protect fault: the page is marked
 * written and unprotected, which wakes the writer; later writes cost
 * nothing. A page removed (REMOVE, UNMAP) is written too: it now reads as
 * zeros. uffd_server_written() hands the written pages over and protects
 * them again, at one instant: a save of the memory as it is then.
 * uffd_server_save_step() then reads them with process_vm_readv() while the
 * VMM runs on; a write to one not read yet is a protect fault, and the
 * page is read before the writer is woken (copy before write). Only
 * present pages are read, so a read never faults into this server, which
 * could not serve it: a REMOVE event comes before the kernel drops the
 * page (the madvise waits for us to read the event), and a page given back
 * before it was read loses the save. This is how a served sandbox is saved
 * as a diff on the image it was restored from (libpool/snapvmsave.c).
 *
 * Sources. The image is either in memory (uffd_server_new()) or read
 * through a fetch callback (uffd_server_new_fetch()), which may be slow per
 * call. A fault fetches its one page into a page buffer of its own: a
 * blocked vCPU waits for exactly one fetch, and with UFFD_SERVER_RECORD
 * every first touch stays a fault (placing the neighbours too would hide
 * them from the working set). Reading ahead is the business of prefetch
 * and fill, which stage the missing pages of each batch of up to
 * UFFD_BATCH_BYTES with one fetch call, then place them as from an image;
 * a fault during a batch on a staged page is served from the stage. A
 * fetch error stops the server like an ioctl error: the faulting thread is
 * never woken on memory we could not fill.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "snapshot/uffd.h"

#define UFFD_BATCH_BYTES (4u << 20)   /* one prefetch UFFDIO_COPY at most */
#define UFFD_AROUND 16		      /* pages placed for one fault (in-memory image) */
#define UFFD_AROUND_BYTES (64u << 10) /* and their bytes at most (2 MiB pages: its own) */
#define UFFD_MSGS 64		      /* events read at once */
#define UFFD_DEFER_MAX 256	      /* faults set aside on EAGAIN */
#define UFFD_RETRY_MS 2000	      /* how long EAGAIN may last */
#define UFFD_EEXIST_MAX 1024	      /* EEXISTs in a row believed without the pagemap */
#define UFFD_READ_IOV 512	      /* pages read with one process_vm_readv() */
#define UFFD_PROTECT_RUNS 64	      /* at least: more runs to protect, whole regions at once */
#define UFFD_FLAGS                                                                                 \
	(UFFD_SERVER_RECORD | UFFD_SERVER_ZEROPAGE | UFFD_SERVER_AROUND | UFFD_SERVER_TRACK)

enum { PG_MISSING, PG_PRESENT, PG_REMOVED };
#define PG_STATE 0x3
#define PG_SAVING 0x20	/* handed over, to be read before it is written again */
#define PG_WRITTEN 0x40 /* UFFD_SERVER_TRACK: since placed, or since the last save */
#define PG_TOUCHED 0x80

struct uffd_server {
	int uffd, pidfd, epfd;
	pid_t peer;	     /* the VMM, 0: this process */
	int pagemap;	     /* its /proc/PID/pagemap: -1 not opened yet, -2 not readable */
	unsigned eexist_run; /* faults answered EEXIST, pagemap unread, since a page was placed */
	unsigned flags;
	int status; /* 0, UFFD_SERVER_EXITED or -errno */
	unsigned n;
	struct fc_region r[FC_REGIONS_MAX];
	uint64_t page_size, npages;
	bool small_pages;     /* page_size is the base page: UFFDIO_ZEROPAGE works */
	const uint8_t *image; /* the in-memory source, or NULL */
	uffd_fetch_fn fetch;  /* else this one */
	void *arg;
	uint64_t *stage; /* sorted image pages of the staged batch */
	void **bufs;	 /* where each staged page is, in buf */
	size_t nstage, stage_max;
	uint8_t *buf;	    /* stage_max pages */
	uint8_t *fbuf;	    /* the pages fetched for a fault (UFFD_AROUND at most) */
	uint64_t fbuf_pg;   /* the first page in fbuf (UINT64_MAX: none) */
	uint64_t fbuf_n;    /* and how many */
	uint64_t fill_next; /* pages before it are not missing */
	bool filling;	    /* placing for uffd_server_fill() */
	uint8_t *state;	    /* per image page */
	uint8_t *zero;	    /* a zero huge page, when one is needed */
	uint64_t *touched;  /* UFFD_SERVER_RECORD */
	size_t ntouched;
	struct {
		uint64_t addr, flags;
	} defer[UFFD_DEFER_MAX]; /* faults to retry */
	unsigned ndefer;
	uint64_t nwritten; /* pages PG_WRITTEN */
	/* The save under way (uffd_server_save_begin()): pages PG_SAVING go to bufs. */
	const uint64_t *save_pages;
	void *const *save_bufs;
	size_t save_n, save_next;
	int save_status; /* -errno: the save is lost */
	char save_err[160];
	struct uffd_stats st;
	char err[256];
};

static int uffd_fail(struct uffd_server *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stop the server with code and its reason; the first failure wins. */
static int uffd_fail(struct uffd_server *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s->status != 0)
		return s->status;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	s->status = code;
	return code;
}

static int uffd_exited(struct uffd_server *s, const char *why)
{
	if (s->status == 0) {
		snprintf(s->err, sizeof(s->err), "%s", why);
		s->status = UFFD_SERVER_EXITED;
	}
	return s->status;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The buffers of a fetch source: a batch stage and a page for faults. */
static int uffd_alloc_stage(struct uffd_server *s)
{
	size_t i;

	s->stage_max = UFFD_BATCH_BYTES / s->page_size;
	if (s->stage_max == 0)
		s->stage_max = 1;
	s->stage = malloc(s->stage_max * sizeof(*s->stage));
	s->bufs = malloc(s->stage_max * sizeof(*s->bufs));
	s->buf = malloc(s->stage_max * s->page_size);
	s->fbuf = malloc(UFFD_AROUND * s->page_size);
	s->fbuf_pg = UINT64_MAX;
	if (s->stage == NULL || s->bufs == NULL || s->buf == NULL || s->fbuf == NULL)
		return -ENOMEM;
	for (i = 0; i < s->stage_max; i++)
		s->bufs[i] = s->buf + i * s->page_size;
	return 0;
}

static void uffd_free_bufs(struct uffd_server *s)
{
	free(s->stage);
	free(s->bufs);
	free(s->buf);
	free(s->fbuf);
	free(s->zero);
	free(s->touched);
	if (s->state != NULL)
		munmap(s->state, s->npages + 1);
}

/* Write-protect guest range [addr, addr + len), or (on false) not, which wakes its writers. */
static int uffd_protect(struct uffd_server *s, uint64_t addr, uint64_t len, bool on)
{
	struct uffdio_writeprotect w = {.range = {addr, len},
					.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};

	return ioctl(s->uffd, UFFDIO_WRITEPROTECT, &w) < 0 ? -errno : 0;
}

/* UFFD_SERVER_TRACK: register the regions for write-protect faults too (see the top). */
static int uffd_track_start(struct uffd_server *s, char *err, size_t errlen)
{
	unsigned i;

	for (i = 0; i < s->n; i++) {
		struct uffdio_register reg = {.range = {s->r[i].base, s->r[i].size},
					      .mode = UFFDIO_REGISTER_MODE_MISSING |
						      UFFDIO_REGISTER_MODE_WP};
		int rc = ioctl(s->uffd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;

		if (rc == 0 && !(reg.ioctls & (UINT64_C(1) << _UFFDIO_WRITEPROTECT)))
			rc = -EOPNOTSUPP;
		if (rc < 0) {
			seterr(err, errlen,
			       "guest region %u: tracking writes: %s (userfaultfd write-protect "
			       "needs Linux 5.7, and 5.19 for huge pages)",
			       i, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Create a server reading from image, or else through fetch. */
static int uffd_server_create(int uffd, pid_t peer, int pidfd, const struct fc_mappings *m,
			      const void *image, uffd_fetch_fn fetch, void *arg, uint64_t image_len,
			      unsigned flags, char *err, size_t errlen, struct uffd_server **ret)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct uffd_server *s;
	int fl, rc;

	if (uffd < 0 || m == NULL || (image == NULL && fetch == NULL) || ret == NULL ||
	    (flags & ~UFFD_FLAGS)) {
		seterr(err, errlen, "invalid arguments");
		rc = -EINVAL;
		goto out_uffd;
	}
	rc = fc_validate(m, image_len, err, errlen);
	if (rc < 0)
		goto out_uffd;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		seterr(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out_uffd;
	}
	s->uffd = uffd;
	s->pidfd = -1;
	s->peer = peer;
	s->pagemap = -1;
	s->flags = flags;
	s->n = m->n;
	memcpy(s->r, m->r, m->n * sizeof(m->r[0]));
	s->page_size = m->page_size;
	s->npages = image_len / m->page_size;
	s->small_pages = m->page_size == (uint64_t)sysconf(_SC_PAGESIZE);
	s->image = image;
	s->fetch = fetch;
	s->arg = arg;
	/*
	 * Zero pages the kernel gives as they are touched: a restore touches
	 * few, and a calloc() from the heap would clear all of them first (a
	 * page of states per 16 MiB of guest).
	 */
	s->state =
	    mmap(NULL, s->npages + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->state == MAP_FAILED)
		s->state = NULL;
	if (flags & UFFD_SERVER_RECORD)
		s->touched = malloc(s->npages * sizeof(*s->touched));
	if (s->state == NULL || ((flags & UFFD_SERVER_RECORD) && s->touched == NULL) ||
	    (image == NULL && uffd_alloc_stage(s) < 0)) {
		seterr(err, errlen, "out of memory for %llu page states",
		       (unsigned long long)s->npages);
		rc = -ENOMEM;
		goto out_free;
	}
	/* The VMM never reads the fd, so making its file non-blocking is ours to do. */
	fl = fcntl(uffd, F_GETFL);
	if (fl < 0 || fcntl(uffd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = -errno;
		seterr(err, errlen, "userfaultfd: fcntl: %s", strerror(errno));
		goto out_free;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		rc = -errno;
		seterr(err, errlen, "epoll_create1: %s", strerror(errno));
		goto out_free;
	}
	ev.data.fd = uffd;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, uffd, &ev) < 0) {
		rc = -errno;
		seterr(err, errlen, "userfaultfd: epoll_ctl: %s", strerror(errno));
		goto out_epoll;
	}
	if ((flags & UFFD_SERVER_TRACK) && (rc = uffd_track_start(s, err, errlen)) < 0)
		goto out_epoll;
	if (peer > 0) {
		/* The socket's pidfd names the process that connected, even if it is gone now. */
		s->pidfd = pidfd >= 0 ? pidfd : (int)syscall(SYS_pidfd_open, peer, 0);
		pidfd = -1;
		if (s->pidfd < 0) {
			rc = -errno;
			seterr(err, errlen, "pidfd_open(%d): %s", (int)peer, strerror(errno));
			goto out_epoll;
		}
		ev.data.fd = s->pidfd;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->pidfd, &ev) < 0) {
			rc = -errno;
			seterr(err, errlen, "pidfd: epoll_ctl: %s", strerror(errno));
			goto out_pidfd;
		}
	} else if (pidfd >= 0) {
		close(pidfd); /* no VMM to watch */
		pidfd = -1;
	}
	*ret = s;
	return 0;

out_pidfd:
	close(s->pidfd);
out_epoll:
	close(s->epfd);
out_free:
	uffd_free_bufs(s);
	free(s);
out_uffd:
	if (uffd >= 0)
		close(uffd);
	if (pidfd >= 0)
		close(pidfd);
	return rc;
}

static void uffd_close_fds(int uffd, int pidfd)
{
	if (uffd >= 0)
		close(uffd);
	if (pidfd >= 0)
		close(pidfd);
}

/* Create a server over an image in memory (see uffd.h). */
int uffd_server_new(int uffd, pid_t peer, int pidfd, const struct fc_mappings *m, const void *image,
		    uint64_t image_len, unsigned flags, char *err, size_t errlen,
		    struct uffd_server **ret)
{
	if (image == NULL) {
		seterr(err, errlen, "invalid arguments");
		uffd_close_fds(uffd, pidfd);
		return -EINVAL;
	}
	return uffd_server_create(uffd, peer, pidfd, m, image, NULL, NULL, image_len, flags, err,
				  errlen, ret);
}

/* Create a server over a fetch source (see uffd.h). */
int uffd_server_new_fetch(int uffd, pid_t peer, int pidfd, const struct fc_mappings *m,
			  uffd_fetch_fn fetch, void *arg, uint64_t image_len, unsigned flags,
			  char *err, size_t errlen, struct uffd_server **ret)
{
	if (fetch == NULL) {
		seterr(err, errlen, "invalid arguments");
		uffd_close_fds(uffd, pidfd);
		return -EINVAL;
	}
	return uffd_server_create(uffd, peer, pidfd, m, NULL, fetch, arg, image_len, flags, err,
				  errlen, ret);
}

void uffd_server_free(struct uffd_server *s)
{
	if (s == NULL)
		return;
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->pagemap >= 0)
		close(s->pagemap);
	close(s->epfd);
	close(s->uffd);
	uffd_free_bufs(s);
	free(s);
}

int uffd_server_fd(const struct uffd_server *s)
{
	return s->epfd;
}

int uffd_server_kill(struct uffd_server *s)
{
	if (s->pidfd < 0)
		return -ESRCH;
	return syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0) < 0 ? -errno : 0;
}

const char *uffd_server_error(const struct uffd_server *s)
{
	return s->err;
}

void uffd_server_stats(const struct uffd_server *s, struct uffd_stats *ret)
{
	*ret = s->st;
}

size_t uffd_server_touched(const struct uffd_server *s, const uint64_t **ret_pages)
{
	*ret_pages = s->touched;
	return s->ntouched;
}

/* The region holding guest address addr, or NULL. */
static struct fc_region *uffd_region_at(struct uffd_server *s, uint64_t addr)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (addr >= s->r[i].base && addr - s->r[i].base < s->r[i].size)
			return &s->r[i];
	return NULL;
}

/* The region holding image page pg (the regions tile the image). */
static struct fc_region *uffd_region_of(struct uffd_server *s, uint64_t pg)
{
	uint64_t off = pg * s->page_size;
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (off >= s->r[i].offset && off - s->r[i].offset < s->r[i].size)
			return &s->r[i];
	return NULL;
}

static bool uffd_is_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

/*
 * Place len bytes at guest address dst: from src, or zeros when src is
 * NULL; write-protected when wp. 0, or -errno with *ret_done the bytes
 * placed before it.
 */
static int uffd_place(struct uffd_server *s, uint64_t dst, const uint8_t *src, uint64_t len,
		      bool wp, uint64_t *ret_done)
{
	struct uffdio_copy c = {.dst = dst,
				.src = (uint64_t)(uintptr_t)src,
				.len = len,
				.mode = wp ? UFFDIO_COPY_MODE_WP : 0};

	*ret_done = 0;
	if (src == NULL && s->small_pages && !wp) {
		struct uffdio_zeropage z = {.range = {dst, len}, .mode = 0};

		if (ioctl(s->uffd, UFFDIO_ZEROPAGE, &z) == 0) {
			*ret_done = len;
			return 0;
		}
		if (z.zeropage > 0)
			*ret_done = (uint64_t)z.zeropage;
		return -errno;
	}
	if (src == NULL) {
		/*
		 * Huge pages have no UFFDIO_ZEROPAGE, and it cannot write-protect
		 * what it places before the wake: copy zeros, from a buffer never
		 * written (all of it the kernel's zero page).
		 */
		uint64_t zlen = s->page_size > UFFD_BATCH_BYTES ? s->page_size : UFFD_BATCH_BYTES;

		if (s->zero == NULL && (s->zero = calloc(1, zlen)) == NULL)
			return -ENOMEM;
		while (*ret_done < len) {
			uint64_t n = len - *ret_done < zlen ? len - *ret_done : zlen, done;
			int rc = uffd_place(s, dst + *ret_done, s->zero, n, wp, &done);

			*ret_done += done;
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (ioctl(s->uffd, UFFDIO_COPY, &c) == 0) {
		*ret_done = len;
		s->eexist_run = 0;
		return 0;
	}
	if (c.copy > 0)
		*ret_done = (uint64_t)c.copy;
	return -errno;
}

/* Whether the VMM maps guest address addr (its pagemap's present bit); -1: unreadable. */
static int uffd_mapped(struct uffd_server *s, uint64_t addr)
{
	uint64_t entry, base = (uint64_t)sysconf(_SC_PAGESIZE);
	char path[64];

	if (s->pagemap == -1) {
		if (s->peer > 0)
			snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)s->peer);
		else
			snprintf(path, sizeof(path), "/proc/self/pagemap");
		s->pagemap = open(path, O_RDONLY | O_CLOEXEC);
		if (s->pagemap < 0)
			s->pagemap = -2;
	}
	if (s->pagemap < 0 || pread(s->pagemap, &entry, sizeof(entry),
				    (off_t)(addr / base * sizeof(entry))) != (ssize_t)sizeof(entry))
		return -1;
	return (int)(entry >> 63);
}

/*
 * UFFDIO_COPY said the page at addr is there already: 0 when it is (or,
 * without the pagemap, while EEXISTs have not run on too long), else the
 * restore fails: the page cannot be placed (see the top of the file).
 */
static int uffd_eexist(struct uffd_server *s, uint64_t addr)
{
	int mapped = uffd_mapped(s, addr);

	if (mapped < 0 && ++s->eexist_run < UFFD_EEXIST_MAX)
		return 0;
	if (mapped > 0)
		return 0;
	return uffd_fail(s, -ENOMEM,
			 "page 0x%llx cannot be placed: the kernel says it is there, the VMM "
			 "does not map it (%s)",
			 (unsigned long long)addr,
			 s->small_pages ? "out of memory?"
					: "no free huge page: see HugePages_Free in /proc/meminfo");
}

/*
 * UFFDIO_COPY of the large page at page (src: its bytes, NULL: zeros) said
 * EEXIST. In a mapping of base pages (a lazy clone of a snapshot of 2 MiB
 * pages maps a memfd of 4 KiB ones), part of it may be there and part not:
 * the missing base pages are placed one by one, and then it is whole. In a
 * hugetlbfs mapping a base page cannot be placed (EINVAL): the page is
 * there or it cannot be placed at all (uffd_eexist()). 0 when the page is
 * whole, -EAGAIN (try later), or the restore's failure.
 */
static int uffd_exists(struct uffd_server *s, uint64_t page, const uint8_t *src)
{
	uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE), off;

	if (s->page_size == base)
		return uffd_eexist(s, page);
	for (off = 0; off < s->page_size; off += base) {
		struct uffdio_copy c = {.dst = page + off, .len = base};
		struct uffdio_zeropage z = {.range = {page + off, base}};
		int rc;

		c.src = (uint64_t)(uintptr_t)(src != NULL ? src + off : NULL);
		rc = ioctl(s->uffd, src != NULL ? UFFDIO_COPY : UFFDIO_ZEROPAGE,
			   src != NULL ? (void *)&c : (void *)&z) < 0
			 ? -errno
			 : 0;
		if (rc == -EINVAL)
			return uffd_eexist(s, page); /* huge pages only */
		if (rc == -EAGAIN)
			return -EAGAIN;
		if (rc < 0 && rc != -EEXIST)
			return uffd_fail(s, rc, "placing page 0x%llx a base page at a time: %s",
					 (unsigned long long)page, strerror(-rc));
	}
	return 0;
}

static void uffd_wake(struct uffd_server *s, uint64_t addr, uint64_t len)
{
	struct uffdio_range r = {addr, len};

	(void)ioctl(s->uffd, UFFDIO_WAKE, &r);
}

static void uffd_record(struct uffd_server *s, uint64_t pg)
{
	if (!(s->flags & UFFD_SERVER_RECORD) || (s->state[pg] & PG_TOUCHED))
		return;
	s->state[pg] |= PG_TOUCHED;
	s->touched[s->ntouched++] = pg; /* at most npages: once per page */
}

static void uffd_set(struct uffd_server *s, uint64_t pg, int st)
{
	s->state[pg] = (uint8_t)((s->state[pg] & ~PG_STATE) | st);
}

/* UFFD_SERVER_TRACK: image page pg changed since it was placed or last handed over. */
static void uffd_mark_written(struct uffd_server *s, uint64_t pg)
{
	if (!(s->flags & UFFD_SERVER_TRACK) || (s->state[pg] & PG_WRITTEN))
		return;
	s->state[pg] |= PG_WRITTEN;
	s->nwritten++;
}

static bool uffd_tracking(const struct uffd_server *s)
{
	return (s->flags & UFFD_SERVER_TRACK) != 0;
}

static int uffd_save_lost(struct uffd_server *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The save under way is lost (the first reason wins); its pages are no longer waited for. */
static int uffd_save_lost(struct uffd_server *s, int code, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	if (s->save_status == 0) {
		va_start(ap, fmt);
		vsnprintf(s->save_err, sizeof(s->save_err), fmt, ap);
		va_end(ap);
		s->save_status = code;
	}
	for (i = 0; i < s->save_n; i++)
		s->state[s->save_pages[i]] &= (uint8_t)~PG_SAVING;
	s->save_next = s->save_n;
	return code;
}

static int uffd_read_pages(struct uffd_server *s, const uint64_t *pages, size_t n,
			   void *const *bufs, char *err, size_t errlen);

/* Page pg, to be saved, is about to be written: read it first. */
static void uffd_save_now(struct uffd_server *s, uint64_t pg)
{
	size_t lo = 0, hi = s->save_n;
	char err[sizeof(s->save_err)];

	while (lo < hi) { /* save_pages is in image order */
		size_t mid = lo + (hi - lo) / 2;

		if (s->save_pages[mid] < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->save_n || s->save_pages[lo] != pg)
		return;
	if (uffd_read_pages(s, &pg, 1, &s->save_bufs[lo], err, sizeof(err)) < 0)
		uffd_save_lost(s, -EIO, "%s", err);
	else
		s->st.saved_early++;
	s->state[pg] &= (uint8_t)~PG_SAVING;
}

/* Where the bytes of image page pg are now: the image, the stage, the fault page, or NULL. */
static const uint8_t *uffd_data(struct uffd_server *s, uint64_t pg)
{
	size_t lo = 0, hi = s->nstage;

	if (s->image != NULL)
		return s->image + pg * s->page_size;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->stage[mid] == pg)
			return s->bufs[mid];
		if (s->stage[mid] < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	return pg >= s->fbuf_pg && pg - s->fbuf_pg < s->fbuf_n
		   ? s->fbuf + (pg - s->fbuf_pg) * s->page_size
		   : NULL;
}

/* Call the fetch source; its failure is the restore's. */
static int uffd_fetch(struct uffd_server *s, size_t n, const uint64_t *pages, void *const *bufs)
{
	int rc = s->fetch(s->arg, n, pages, bufs);

	s->st.fetches++;
	if (rc == 0) {
		s->st.fetched += n;
		return 0;
	}
	if (rc > 0)
		rc = -EIO;
	return uffd_fail(s, rc, "fetching %zu page%s from image page %llu: %s", n,
			 n == 1 ? "" : "s", (unsigned long long)pages[0], strerror(-rc));
}

/*
 * With UFFD_SERVER_AROUND and not recording, how many missing pages follow
 * a fault's page in its region, up to UFFD_AROUND - 1: placed with it.
 */
static uint64_t uffd_around(struct uffd_server *s, const struct fc_region *r, uint64_t page,
			    uint64_t pg)
{
	uint64_t n = 0;

	if ((s->flags & (UFFD_SERVER_AROUND | UFFD_SERVER_RECORD)) != UFFD_SERVER_AROUND)
		return 0;
	while (n + 1 < UFFD_AROUND && (n + 2) * s->page_size <= UFFD_AROUND_BYTES &&
	       page + (n + 1) * s->page_size < r->base + r->size &&
	       (s->state[pg + n + 1] & PG_STATE) == PG_MISSING)
		n++;
	return n;
}

/* Make image page pg's bytes, and those of the n pages after it, available for a fault. */
static int uffd_fetch_fault(struct uffd_server *s, uint64_t pg, uint64_t n)
{
	uint64_t pages[UFFD_AROUND], i;
	void *bufs[UFFD_AROUND];
	int rc;

	if ((s->state[pg] & PG_STATE) == PG_REMOVED || uffd_data(s, pg) != NULL)
		return 0;
	for (i = 0; i <= n; i++) {
		pages[i] = pg + i;
		bufs[i] = s->fbuf + i * s->page_size;
	}
	s->fbuf_pg = UINT64_MAX;
	s->fbuf_n = 0;
	rc = uffd_fetch(s, n + 1, pages, bufs);
	if (rc == 0) {
		s->fbuf_pg = pg;
		s->fbuf_n = n + 1;
	}
	return rc;
}

/*
 * Fetch the missing pages among sorted[0, n) into the stage with one call,
 * as many as it holds; *ret_covered is how many entries of sorted that
 * took (every missing page among them is staged).
 */
static int uffd_stage(struct uffd_server *s, const uint64_t *sorted, size_t n, size_t *ret_covered)
{
	size_t i;
	int rc;

	s->nstage = 0;
	for (i = 0; i < n; i++) {
		uint64_t pg = sorted[i];

		if ((s->state[pg] & PG_STATE) != PG_MISSING ||
		    (s->nstage > 0 && s->stage[s->nstage - 1] == pg))
			continue;
		if (s->nstage == s->stage_max)
			break;
		s->stage[s->nstage++] = pg;
	}
	*ret_covered = i;
	if (s->nstage == 0)
		return 0;
	rc = uffd_fetch(s, s->nstage, s->stage, s->bufs);
	if (rc < 0)
		s->nstage = 0;
	return rc;
}

/* The source of image page pg (its bytes available): NULL for zeros. */
static const uint8_t *uffd_source(struct uffd_server *s, uint64_t pg)
{
	const uint8_t *src;

	if ((s->state[pg] & PG_STATE) == PG_REMOVED)
		return NULL;
	src = uffd_data(s, pg);
	if ((s->flags & UFFD_SERVER_ZEROPAGE) && s->small_pages && uffd_is_zero(src, s->page_size))
		return NULL;
	return src;
}

/*
 * With UFFD_SERVER_AROUND, after a fault on page (image page pg) of region
 * r, place the missing pages that follow it in the region too, up to
 * UFFD_AROUND in all (uffd_around()), a run of data or of zeros at a
 * time: a guest that touches its memory in order then faults once per
 * UFFD_AROUND pages. From a fetch source they came with the fault's page,
 * in one fetch: a fault costs one round trip either way. Not while
 * recording (the pages placed ahead would never fault, and the working set
 * would miss them). Best effort: what is not placed here faults later.
 */
static int uffd_fault_around(struct uffd_server *s, uint64_t page, uint64_t pg, uint64_t n)
{
	uint64_t i = 1, k, done;
	int rc = 0;

	for (k = 1; s->image == NULL && k <= n; k++)
		if (uffd_data(s, pg + k) == NULL) { /* not fetched with it: it faults later */
			n = k - 1;
			break;
		}
	while (i <= n && rc == 0) {
		const uint8_t *src = uffd_source(s, pg + i);

		for (k = 1; i + k <= n && (uffd_source(s, pg + i + k) == NULL) == (src == NULL);
		     k++)
			;
		rc = uffd_place(s, page + i * s->page_size, src, k * s->page_size, uffd_tracking(s),
				&done);
		for (k = 0; k < done / s->page_size; k++)
			uffd_set(s, pg + i + k, PG_PRESENT);
		*(src == NULL ? &s->st.zeroed : &s->st.copied) += done / s->page_size;
		s->st.around += done / s->page_size;
		i += done / s->page_size;
	}
	return rc == -ESRCH ? uffd_exited(s, "the VMM's address space is gone") : 0;
}

/*
 * A write to image page pg at page, placed write-protected: the first
 * since it was placed or last handed over. Marked written, then
 * unprotected, which wakes the writer.
 */
static int uffd_first_write(struct uffd_server *s, uint64_t page, uint64_t pg)
{
	int rc;

	if (s->state[pg] & PG_SAVING)
		uffd_save_now(s, pg);
	uffd_mark_written(s, pg);
	rc = uffd_protect(s, page, s->page_size, false);
	switch (rc) {
	case 0:
		s->st.written++;
		return 0;
	case -EAGAIN:
		s->st.retries++;
		return -EAGAIN;
	case -ESRCH:
		return uffd_exited(s, "the VMM's address space is gone");
	default:
		return uffd_fail(s, rc, "unprotecting page 0x%llx for its first write: %s",
				 (unsigned long long)page, strerror(-rc));
	}
}

/* Serve one fault: 0, -EAGAIN (retry it later) or the server's final status. */
static int uffd_fault(struct uffd_server *s, uint64_t addr, uint64_t flags)
{
	struct fc_region *r = uffd_region_at(s, addr);
	const uint8_t *src;
	uint64_t page, pg, done, around;
	bool written = uffd_tracking(s) && (flags & UFFD_PAGEFAULT_FLAG_WRITE);
	int rc;

	if (r == NULL)
		return uffd_fail(s, -EFAULT, "fault at 0x%llx outside every guest region",
				 (unsigned long long)addr);
	page = addr & ~(s->page_size - 1);
	pg = (r->offset + (page - r->base)) / s->page_size;
	if (flags & UFFD_PAGEFAULT_FLAG_WP)
		return uffd_first_write(s, page, pg);
	uffd_record(s, pg);
	around = uffd_around(s, r, page, pg);
	rc = s->image != NULL ? 0 : uffd_fetch_fault(s, pg, around);
	if (rc < 0)
		return rc;
	src = uffd_source(s, pg);
	/* The page a write faults on is written at once: no protect fault to follow. */
	rc = uffd_place(s, page, src, s->page_size, uffd_tracking(s) && !written, &done);
	switch (rc) {
	case 0:
		if (src == NULL)
			s->st.zeroed++;
		else
			s->st.copied++;
		uffd_set(s, pg, PG_PRESENT);
		if (written)
			uffd_mark_written(s, pg);
		return uffd_fault_around(s, page, pg, around);
	case -EEXIST:
		rc = uffd_exists(s, page, src);
		if (rc != 0)
			return rc;
		s->st.existed++;
		uffd_set(s, pg, PG_PRESENT);
		uffd_wake(s, page, s->page_size);
		return 0;
	case -EAGAIN:
		s->st.retries++;
		return -EAGAIN;
	case -ESRCH:
		return uffd_exited(s, "the VMM's address space is gone");
	default:
		return uffd_fail(s, rc, "placing page 0x%llx (image page %llu): %s",
				 (unsigned long long)page, (unsigned long long)pg, strerror(-rc));
	}
}

/* Mark the whole pages of guest range [start, end) as removed. */
static void uffd_remove(struct uffd_server *s, uint64_t start, uint64_t end)
{
	unsigned i;

	for (i = 0; i < s->n; i++) {
		const struct fc_region *r = &s->r[i];
		uint64_t a = start > r->base ? start : r->base;
		uint64_t b = end < r->base + r->size ? end : r->base + r->size;

		a = (a + s->page_size - 1) & ~(s->page_size - 1);
		b &= ~(s->page_size - 1);
		for (; a < b; a += s->page_size) {
			uint64_t pg = (r->offset + (a - r->base)) / s->page_size;

			if (s->state[pg] & PG_SAVING)
				uffd_save_lost(
				    s, -ECANCELED,
				    "the guest gave page 0x%llx back before it was saved",
				    (unsigned long long)a);
			uffd_set(s, pg, PG_REMOVED);
			uffd_mark_written(s, pg); /* it reads as zeros now */
		}
	}
}

/* A whole region moved; anything else we cannot follow. */
static int uffd_remap(struct uffd_server *s, uint64_t from, uint64_t to, uint64_t len)
{
	unsigned i;

	for (i = 0; i < s->n; i++) {
		struct fc_region *r = &s->r[i];

		if (r->base == from && r->size == len) {
			r->base = to;
			return 0;
		}
		if (from < r->base + r->size && r->base < from + len)
			return uffd_fail(
			    s, -ENOTSUP,
			    "partial mremap of guest region %u (0x%llx+%llu to 0x%llx)", i,
			    (unsigned long long)from, (unsigned long long)len,
			    (unsigned long long)to);
	}
	return 0;
}

/* Set a fault aside for a retry; the list is full only if events never end. */
static int uffd_defer(struct uffd_server *s, uint64_t addr, uint64_t flags)
{
	if (s->ndefer == UFFD_DEFER_MAX)
		return uffd_fail(s, -EAGAIN, "more than %d faults waiting on address space changes",
				 UFFD_DEFER_MAX);
	s->defer[s->ndefer].addr = addr;
	s->defer[s->ndefer++].flags = flags;
	return 0;
}

static int uffd_event(struct uffd_server *s, const struct uffd_msg *msg)
{
	int rc;

	switch (msg->event) {
	case UFFD_EVENT_PAGEFAULT:
		s->st.faults++;
		rc = uffd_fault(s, msg->arg.pagefault.address, msg->arg.pagefault.flags);
		if (rc == -EAGAIN)
			return uffd_defer(s, msg->arg.pagefault.address, msg->arg.pagefault.flags);
		return rc;
	case UFFD_EVENT_REMOVE:
		s->st.removes++;
		uffd_remove(s, msg->arg.remove.start, msg->arg.remove.end);
		return 0;
	case UFFD_EVENT_UNMAP:
		s->st.unmaps++;
		uffd_remove(s, msg->arg.remove.start, msg->arg.remove.end);
		return 0;
	case UFFD_EVENT_REMAP:
		s->st.remaps++;
		return uffd_remap(s, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len);
	case UFFD_EVENT_FORK:
		/* We serve the VMM, not its children: close the child's uffd, unserved. */
		close((int)msg->arg.fork.ufd);
		return 0;
	default:
		return uffd_fail(s, -EPROTO, "unknown userfaultfd event %u", msg->event);
	}
}

/* Read and apply every event queued now. */
static int uffd_read_events(struct uffd_server *s)
{
	struct uffd_msg msgs[UFFD_MSGS];
	ssize_t n;
	size_t i;
	int rc;

	while (s->status == 0) {
		n = read(s->uffd, msgs, sizeof(msgs));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return uffd_fail(s, -errno, "reading the userfaultfd: %s", strerror(errno));
		if (n == 0 || n % (ssize_t)sizeof(msgs[0]) != 0)
			return uffd_fail(s, -EPROTO, "short read of %zd bytes from the userfaultfd",
					 n);
		for (i = 0; i < (size_t)n / sizeof(msgs[0]); i++) {
			rc = uffd_event(s, &msgs[i]);
			if (rc != 0)
				return rc;
		}
	}
	return s->status;
}

/* Retry the faults set aside: 0 when none is left, -EAGAIN when some are. */
static int uffd_retry(struct uffd_server *s)
{
	unsigned i, kept = 0;
	int rc;

	for (i = 0; i < s->ndefer; i++) {
		rc = uffd_fault(s, s->defer[i].addr, s->defer[i].flags);
		if (rc == -EAGAIN)
			s->defer[kept++] = s->defer[i];
		else if (rc != 0)
			return rc;
	}
	s->ndefer = kept;
	return kept ? -EAGAIN : 0;
}

/*
 * Events, then the faults they held up, until nothing is set aside. The
 * loop spins only while the kernel finishes an address space change we
 * have already read; UFFD_RETRY_MS bounds it.
 */
static int uffd_service(struct uffd_server *s)
{
	int64_t deadline = 0;
	int rc;

	for (;;) {
		rc = uffd_read_events(s);
		if (rc != 0)
			return rc;
		rc = uffd_retry(s);
		if (rc != -EAGAIN)
			return rc;
		if (deadline == 0)
			deadline = now_ms() + UFFD_RETRY_MS;
		else if (now_ms() > deadline)
			return uffd_fail(s, -ETIMEDOUT,
					 "fault at 0x%llx still refused (EAGAIN) after %d ms",
					 (unsigned long long)s->defer[0].addr, UFFD_RETRY_MS);
		sched_yield();
	}
}

/* Serve what is pending (see uffd.h). */
int uffd_server_handle(struct uffd_server *s)
{
	struct pollfd pfd;
	int rc;

	if (s->status != 0)
		return s->status;
	rc = uffd_service(s);
	if (rc != 0)
		return rc;
	if (s->pidfd >= 0) {
		pfd.fd = s->pidfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) > 0)
			return uffd_exited(s, "the VMM exited");
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Place the run of n image pages from pg (missing, one region, all zero or
 * all not). 0; -EEXIST: a page was there already, look at the pages again;
 * -EAGAIN: the address space was changing, the events are applied, try
 * again; or the final status.
 */
static int uffd_place_run(struct uffd_server *s, uint64_t pg, uint64_t n, bool zero)
{
	struct fc_region *r = uffd_region_of(s, pg);
	uint64_t dst = r->base + (pg * s->page_size - r->offset);
	uint64_t done = 0, len = n * s->page_size, i;
	int rc;

	rc = uffd_place(s, dst, zero ? NULL : uffd_data(s, pg), len, uffd_tracking(s), &done);
	done /= s->page_size;
	for (i = 0; i < done; i++)
		uffd_set(s, pg + i, PG_PRESENT);
	if (zero)
		s->st.zeroed += done;
	else
		s->st.copied += done;
	if (s->filling)
		s->st.filled += done;
	else
		s->st.prefetched += done;
	switch (rc) {
	case 0:
		return 0;
	case -EEXIST:
		/* Page pg+done is there already: skip it, the caller goes on after it. */
		rc = uffd_exists(s, dst + done * s->page_size,
				 zero ? NULL : uffd_data(s, pg + done));
		if (rc == -EAGAIN) {
			s->st.retries++;
			rc = uffd_service(s);
			return rc != 0 ? rc : -EAGAIN;
		}
		if (rc != 0)
			return rc;
		uffd_set(s, pg + done, PG_PRESENT);
		return -EEXIST;
	case -EAGAIN:
		s->st.retries++;
		rc = uffd_service(s);
		return rc != 0 ? rc : -EAGAIN;
	case -ESRCH:
		return uffd_exited(s, "the VMM's address space is gone");
	default:
		return uffd_fail(s, rc, "prefetching %llu pages at 0x%llx: %s",
				 (unsigned long long)n, (unsigned long long)dst, strerror(-rc));
	}
}

/* Length of the run of placeable pages at sorted[*i]; advances *i past it. */
static uint64_t uffd_run(struct uffd_server *s, const uint64_t *sorted, size_t n, size_t *i,
			 bool *ret_zero)
{
	uint64_t pg = sorted[*i], len = 1, max = UFFD_BATCH_BYTES / s->page_size;
	struct fc_region *r = uffd_region_of(s, pg);
	uint64_t end = (r->offset + r->size) / s->page_size;
	bool zero = uffd_source(s, pg) == NULL;

	if (max == 0)
		max = 1;
	for ((*i)++; *i < n; (*i)++) {
		uint64_t next = sorted[*i];

		if (next == pg + len - 1)
			continue; /* a duplicate */
		if (len == max || next != pg + len || next >= end ||
		    (s->state[next] & PG_STATE) != PG_MISSING ||
		    (uffd_source(s, next) == NULL) != zero)
			break;
		len++;
	}
	*ret_zero = zero;
	return len;
}

/* Place the pages of sorted[0, n) whose bytes are available, in runs. */
static int uffd_place_sorted(struct uffd_server *s, const uint64_t *sorted, size_t n)
{
	int64_t deadline = 0;
	size_t i = 0;
	int rc = 0;

	while (i < n) {
		size_t at = i;
		uint64_t len;
		bool zero;

		if ((s->state[sorted[i]] & PG_STATE) != PG_MISSING) {
			i++;
			continue;
		}
		len = uffd_run(s, sorted, n, &i, &zero);
		rc = uffd_place_run(s, sorted[at], len, zero);
		if (rc == -EEXIST || rc == -EAGAIN) {
			/* Look at the pages from the run's start again. */
			i = at;
			if (rc == -EEXIST)
				continue;
			if (deadline == 0)
				deadline = now_ms() + UFFD_RETRY_MS;
			if (now_ms() > deadline) {
				rc = uffd_fail(s, -ETIMEDOUT,
					       "prefetch still refused (EAGAIN) after %d ms",
					       UFFD_RETRY_MS);
				break;
			}
			sched_yield();
			continue;
		}
		deadline = 0;
		if (rc == 0)
			rc = uffd_service(s); /* faults wait no longer than one batch */
		if (rc != 0)
			break;
	}
	return rc;
}

/* Place sorted[0, n): from the image, or fetched a stage at a time. */
static int uffd_prefetch_sorted(struct uffd_server *s, const uint64_t *sorted, size_t n)
{
	size_t done = 0, covered;
	int rc = 0;

	if (s->image != NULL)
		return uffd_place_sorted(s, sorted, n);
	while (rc == 0 && done < n) {
		rc = uffd_stage(s, sorted + done, n - done, &covered);
		if (rc == 0)
			rc = uffd_place_sorted(s, sorted + done, covered);
		s->nstage = 0;
		done += covered;
	}
	return rc;
}

/* Prefetch a working set (see uffd.h). */
int uffd_server_prefetch(struct uffd_server *s, const uint64_t *pages, size_t n)
{
	uint64_t *sorted;
	size_t i;
	int rc;

	if (s->status != 0)
		return s->status;
	for (i = 0; i < n; i++)
		if (pages[i] >= s->npages)
			return -ERANGE; /* the caller's list is wrong, the restore is not */
	sorted = malloc(n * sizeof(*sorted) + 1);
	if (sorted == NULL)
		return -ENOMEM;
	memcpy(sorted, pages, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	rc = uffd_prefetch_sorted(s, sorted, n);
	free(sorted);
	return rc;
}

/* Fill the next missing pages (see uffd.h). */
int uffd_server_fill(struct uffd_server *s, size_t max_pages)
{
	uint64_t *pages, pg;
	size_t n = 0;
	int rc;

	if (s->status != 0)
		return s->status;
	while (s->fill_next < s->npages && (s->state[s->fill_next] & PG_STATE) != PG_MISSING)
		s->fill_next++;
	if (s->fill_next == s->npages)
		return UFFD_SERVER_FILLED;
	if (max_pages > s->npages - s->fill_next)
		max_pages = s->npages - s->fill_next;
	pages = malloc(max_pages * sizeof(*pages) + 1);
	if (pages == NULL)
		return -ENOMEM; /* the restore goes on without filling */
	for (pg = s->fill_next; pg < s->npages && n < max_pages; pg++)
		if ((s->state[pg] & PG_STATE) == PG_MISSING)
			pages[n++] = pg;
	s->filling = true;
	rc = uffd_prefetch_sorted(s, pages, n);
	s->filling = false;
	free(pages);
	if (rc == 0)
		s->fill_next = pg;
	return rc;
}

uint64_t uffd_server_nwritten(const struct uffd_server *s)
{
	return s->nwritten;
}

/* The guest address of image page pg. */
static uint64_t uffd_addr_of(struct uffd_server *s, uint64_t pg)
{
	const struct fc_region *r = uffd_region_of(s, pg);

	return r->base + (pg * s->page_size - r->offset);
}

/*
 * Protect the present pages among the sorted pages[0, n) again, a run at a
 * time. A run that cannot be protected stays marked written: it is handed
 * over again next time, which is never wrong.
 */
static int uffd_protect_again(struct uffd_server *s, const uint64_t *pages, size_t n)
{
	size_t i = 0, k, j, runs = 0, runs_max;
	unsigned r;
	int rc = 0;

	for (k = 0; k < n; k++)
		runs += k == 0 || pages[k] != pages[k - 1] + 1;
	/*
	 * Scattered pages: one ioctl a region costs less than one a run
	 * (each a page-table walk and a TLB flush; in a VM here 53 ns a page
	 * of the walk, 2.5-5.4 us a run), and protects only pages that are to
	 * be protected: every placed page not written since the last save,
	 * or being handed over now. Not for huge pages, whose missing pages
	 * it would mark (PTE markers).
	 */
	runs_max = s->npages / 64 > UFFD_PROTECT_RUNS ? s->npages / 64 : UFFD_PROTECT_RUNS;
	for (r = 0; runs > runs_max && s->small_pages && r < s->n && rc == 0; r++)
		rc = uffd_protect(s, s->r[r].base, s->r[r].size, true);
	if (runs > runs_max && s->small_pages && rc == 0)
		return 0;
	if (rc == -ESRCH)
		return uffd_exited(s, "the VMM's address space is gone");
	while (i < n) {
		if ((s->state[pages[i]] & PG_STATE) != PG_PRESENT) {
			i++;
			continue;
		}
		for (k = i + 1;
		     k < n && pages[k] == pages[k - 1] + 1 &&
		     (s->state[pages[k]] & PG_STATE) == PG_PRESENT &&
		     uffd_addr_of(s, pages[k]) == uffd_addr_of(s, pages[k - 1]) + s->page_size;
		     k++)
			;
		rc = uffd_protect(s, uffd_addr_of(s, pages[i]), (k - i) * s->page_size, true);
		if (rc == -ESRCH)
			return uffd_exited(s, "the VMM's address space is gone");
		for (j = i; rc < 0 && j < k; j++)
			uffd_mark_written(s, pages[j]);
		i = k;
	}
	return 0;
}

/* The pages written since the last call, protected again (see uffd.h). */
int uffd_server_written(struct uffd_server *s, uint64_t **ret_pages, size_t *ret_n)
{
	uint64_t *pages, pg;
	size_t n = 0;
	int rc;

	*ret_pages = NULL;
	*ret_n = 0;
	if (!uffd_tracking(s))
		return -EINVAL;
	rc = uffd_server_handle(s); /* the events queued by now: a page removed is written */
	if (rc != 0)
		return rc;
	pages = malloc(s->nwritten * sizeof(*pages) + 1);
	if (pages == NULL)
		return -ENOMEM;
	for (pg = 0; pg < s->npages && n < s->nwritten; pg++)
		if (s->state[pg] & PG_WRITTEN) {
			s->state[pg] &= (uint8_t)~PG_WRITTEN;
			pages[n++] = pg;
		}
	s->nwritten = 0;
	rc = uffd_protect_again(s, pages, n);
	if (rc != 0) {
		free(pages);
		return rc;
	}
	*ret_pages = pages;
	*ret_n = n;
	return 0;
}

/* Read the present pages among pages[0, n) from the VMM into bufs; zero the others. */
static int uffd_read_pages(struct uffd_server *s, const uint64_t *pages, size_t n,
			   void *const *bufs, char *err, size_t errlen)
{
	struct iovec local[UFFD_READ_IOV], remote[UFFD_READ_IOV];
	pid_t pid = s->peer > 0 ? s->peer : getpid();
	size_t i = 0, m;
	ssize_t got;
	int rc;

	while (i < n) {
		for (m = 0; i < n && m < UFFD_READ_IOV; i++) {
			if (pages[i] >= s->npages)
				return -ERANGE;
			if ((s->state[pages[i]] & PG_STATE) != PG_PRESENT) {
				memset(bufs[i], 0, s->page_size); /* removed: it reads as zeros */
				continue;
			}
			local[m] = (struct iovec){bufs[i], s->page_size};
			remote[m++] = (struct iovec){(void *)(uintptr_t)uffd_addr_of(s, pages[i]),
						     s->page_size};
		}
		if (m == 0)
			continue;
		got = process_vm_readv(pid, local, m, remote, m, 0);
		if (got == (ssize_t)(m * s->page_size))
			continue;
		if (got >= 0) {
			seterr(err, errlen, "the VMM (pid %d) no longer maps guest page 0x%llx",
			       (int)pid,
			       (unsigned long long)(uintptr_t)remote[got / s->page_size].iov_base);
			return -EFAULT;
		}
		rc = -errno;
		seterr(err, errlen, "reading the memory of the VMM (pid %d): %s%s", (int)pid,
		       strerror(-rc),
		       rc == -EPERM ? " (the server needs the VMM's uid or CAP_SYS_PTRACE)" : "");
		return rc;
	}
	return 0;
}

void uffd_server_give_back(struct uffd_server *s, const uint64_t *pages, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		uffd_mark_written(s, pages[i]);
}

/* Start saving pages (see uffd.h). */
void uffd_server_save_begin(struct uffd_server *s, const uint64_t *pages, size_t n,
			    void *const *bufs)
{
	size_t i;

	s->save_pages = pages;
	s->save_bufs = bufs;
	s->save_n = n;
	s->save_next = 0;
	s->save_status = 0;
	s->save_err[0] = '\0';
	for (i = 0; i < n; i++) {
		if ((s->state[pages[i]] & PG_STATE) == PG_PRESENT)
			s->state[pages[i]] |= PG_SAVING;
		else
			memset(bufs[i], 0, s->page_size); /* removed: it reads as zeros */
	}
}

/* Read the next pages to save (see uffd.h). */
int64_t uffd_server_save_step(struct uffd_server *s, size_t max, char *err, size_t errlen)
{
	size_t i, m = 0;
	uint64_t pages[UFFD_READ_IOV];
	void *bufs[UFFD_READ_IOV];
	char why[sizeof(s->save_err)];
	int rc;

	if (max > UFFD_READ_IOV)
		max = UFFD_READ_IOV;
	for (i = s->save_next; i < s->save_n && m < max && s->save_status == 0; i++)
		if (s->state[s->save_pages[i]] & PG_SAVING) {
			pages[m] = s->save_pages[i];
			bufs[m++] = s->save_bufs[i];
		}
	s->save_next = i;
	if (s->save_status == 0 && m > 0) {
		rc = uffd_read_pages(s, pages, m, bufs, why, sizeof(why));
		if (rc < 0)
			uffd_save_lost(s, rc, "%s", why);
		for (i = 0; i < m; i++)
			s->state[pages[i]] &= (uint8_t)~PG_SAVING;
	}
	if (s->save_status != 0) {
		snprintf(err, errlen, "%s", s->save_err);
		return s->save_status;
	}
	return (int64_t)(s->save_n - s->save_next);
}

void uffd_server_save_end(struct uffd_server *s, bool done)
{
	size_t i;

	for (i = 0; i < s->save_n; i++)
		s->state[s->save_pages[i]] &= (uint8_t)~PG_SAVING;
	if (!done)
		uffd_server_give_back(s, s->save_pages, s->save_n);
	s->save_pages = NULL;
	s->save_bufs = NULL;
	s->save_n = s->save_next = 0;
}

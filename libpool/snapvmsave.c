/*
 * libpool/snapvmsave.c - a sandbox served by pool_snap_serve() with
 * POOL_SNAP_TRACK saved while it runs: the pages its VMM wrote since the
 * restore, laid over the snapshot it was restored from, which the new
 * snapshot names as its parent (as pool_snap_save_end() saves a clone).
 *
 * The request. A client of the serve socket (its owner's uid or root: the
 * socket is mode 0600 too) sends one line instead of Firecracker's JSON
 * handshake, "save PID NAME\n". It gets "taken pages=N held_us=N\n" once
 * the pages are taken (the instant the save is of), then, once the
 * snapshot is stored, "ok pages=N diff=N held_us=N early=N\n", or
 * "error WHY\n" at any point; then the server closes the connection. One
 * save at a time per server: later requests wait their turn.
 *
 * Which pages. snapshot/uffd.c write-protects every page it places and
 * sees each first write after that as a fault; uffd_server_written() hands
 * over the pages written since the last save and protects them again: the
 * instant the save is of, and the only time the VMM is held. The serve
 * loop then reads them from the VMM (process_vm_readv: it needs the VMM's
 * uid or CAP_SYS_PTRACE) a batch a round while the VMM runs on, a write to
 * one not read yet waiting until it is (snapvm_job_copy(),
 * uffd_server_save_step()). So a save reads only what was written since
 * the last one. The copies are kept, one per page written since the
 * restore (struct snapvm_copies, the size of what the sandbox wrote), so
 * that each save can store the whole diff on the restored snapshot; the
 * room for them is taken and faulted in before the VMM is held, as
 * pool_snap_save_new() does.
 *
 * The store runs in a thread of its own (about a second for 2 GiB, every
 * page referenced): the serve loop goes on serving faults meanwhile, and
 * answers the request when the thread is done. Pages that stayed come
 * from the server's image (the node's copy), or from the node's copy
 * mapped by the thread when the server fetches from the lenders.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/common.h"
#include "libpool/snap.h"
#include "snapshot/uffd.h"

#define SNAPVM_MARGIN_BYTES (16u << 20)	 /* room beyond what is written by the request */
#define SNAPVM_REPLY_MS (10 * 60 * 1000) /* the client waits this long for a store */
#define SNAPVM_STEP_BYTES (2u << 20)	 /* read between two rounds of the serve loop */

/* The copies of the pages a VMM wrote since its restore: slot[p] is page p's, in over. */
struct snapvm_copies {
	unsigned refs; /* its connection's, and a store's: both dropped by the serve loop */
	uint64_t npages, page_size;
	uint32_t *slot;
	uint8_t *over;
	uint64_t used, room; /* slots taken, and room (faulted in) for this many */
};

struct snapvm_job {
	pid_t vmm;
	bool storing; /* the pages are read: the thread stores them */
	pthread_t thread;
	int efd, sock;
	struct pool_snap *parent;
	const void *image; /* the server's, or NULL: the thread maps the node's copy */
	struct snapvm_copies *copies;
	uint64_t *pages; /* taken from the VMM, and where each goes, while they are read */
	void **bufs;
	char name[POOL_SNAP_NAME_MAX + 1];
	uint64_t npages, held_us, early; /* early: pages read before a write, so far */
	int rc;
	char err[256];
};

static uint64_t snapvm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void snapvm_reply(int sock, const char *fmt, ...)
{
	char line[SNAPVM_LINE_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* A client gone, or one that does not read its one line, loses it. */
	(void)send(sock, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* ---- the request ---- */

/* Parse "save PID NAME": 0 or -EINVAL with err. */
static int snapvm_parse(struct snapvm_ctl *ctl, char *err, size_t errlen)
{
	char *save, *pid, *name, *extra, *end, *at = NULL;
	long v;

	save = strtok_r(ctl->line, " \t\r", &at);
	pid = strtok_r(NULL, " \t\r", &at);
	name = strtok_r(NULL, " \t\r", &at);
	extra = strtok_r(NULL, " \t\r", &at);
	if (save == NULL || strcmp(save, "save") != 0 || pid == NULL || name == NULL ||
	    extra != NULL) {
		snprintf(err, errlen, "a request is one line: save PID NAME");
		return -EINVAL;
	}
	errno = 0;
	v = strtol(pid, &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0 || v > INT32_MAX) {
		snprintf(err, errlen, "not a pid: %.32s", pid);
		return -EINVAL;
	}
	/* Refused as a put would refuse it, but before anything is copied. */
	if (!name_ok(name, POOL_SNAP_NAME_MAX, false)) {
		snprintf(err, errlen, "snapshot name '%.*s': 1-%d characters of [A-Za-z0-9._:-]",
			 POOL_SNAP_NAME_MAX, name, POOL_SNAP_NAME_MAX);
		return -EINVAL;
	}
	ctl->vmm = (pid_t)v;
	strcpy(ctl->name, name);
	return 0;
}

/* Read what sock has of a request (see snap.h). */
int snapvm_ctl_read(struct snapvm_ctl *ctl, int sock, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char *nl;
	ssize_t n;

	if (ctl->len == 0 && (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
			      (cred.uid != geteuid() && cred.uid != 0))) {
		snprintf(err, errlen, "only the server's uid or root may ask it for a save");
		return -EPERM;
	}
	n = recv(sock, ctl->line + ctl->len, SNAPVM_LINE_MAX - ctl->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -EAGAIN;
	if (n <= 0) {
		snprintf(err, errlen, "the client left before its request was whole");
		return n < 0 ? -errno : -ECONNRESET;
	}
	ctl->len += (size_t)n;
	ctl->line[ctl->len] = '\0';
	nl = memchr(ctl->line, '\n', ctl->len);
	if (nl == NULL && ctl->len == SNAPVM_LINE_MAX) {
		snprintf(err, errlen, "a request is one line of at most %d bytes", SNAPVM_LINE_MAX);
		return -EMSGSIZE;
	}
	if (nl == NULL)
		return -EAGAIN;
	*nl = '\0';
	return snapvm_parse(ctl, err, errlen);
}

/* ---- the copies ---- */

void snapvm_copies_drop(struct snapvm_copies *c)
{
	if (c == NULL || --c->refs > 0)
		return;
	if (c->over != NULL)
		munmap(c->over, c->room * c->page_size);
	free(c->slot);
	free(c);
}

static int snapvm_copies_new(uint64_t npages, uint64_t page_size, struct snapvm_copies **ret)
{
	struct snapvm_copies *c = calloc(1, sizeof(*c));
	uint64_t p;

	if (c == NULL || (c->slot = malloc(npages * sizeof(*c->slot))) == NULL) {
		free(c);
		return -ENOMEM;
	}
	for (p = 0; p < npages; p++)
		c->slot[p] = SNAP_NO_SLOT;
	c->refs = 1;
	c->npages = npages;
	c->page_size = page_size;
	*ret = c;
	return 0;
}

/* Room for n copies, each page written once now (see pool_snap_save_new()). */
static int snapvm_room(struct snapvm_copies *c, uint64_t n)
{
	size_t base = (size_t)sysconf(_SC_PAGESIZE), at, len;
	uint8_t *p;

	n = MIN(n, c->npages);
	if (n <= c->room)
		return 0;
	len = (size_t)(n * c->page_size);
	if (c->over == NULL)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else /* the page tables move, not the copies */
		p = mremap(c->over, c->room * c->page_size, len, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return -errno;
	for (at = (size_t)(c->room * c->page_size); at < len; at += base)
		p[at] = 0;
	c->over = p;
	c->room = n;
	return 0;
}

/* ---- the save ---- */

static void snapvm_job_free(struct snapvm_job *job)
{
	if (job->efd >= 0)
		close(job->efd);
	if (job->sock >= 0)
		close(job->sock);
	snapvm_copies_drop(job->copies);
	free(job->pages);
	free(job->bufs);
	free(job);
}

/* The class the parent's pages are keyed by: the save keeps it, and so the parent's keys. */
static const char *snapvm_class(const struct snap_header *hdr)
{
	return (hdr->flags & SNAP_F_PERSISTENT) ? "persistent"
	       : (hdr->flags & SNAP_F_SHARED)	? "shared"
						: "pinned";
}

/* The store thread: the diff put as a snapshot over its parent. */
static void *snapvm_store(void *arg)
{
	struct snapvm_job *job = arg;
	struct pool_snap *parent = job->parent;
	uint64_t len = parent->hdr.image_len, one = 1;
	struct pool_snap_opts *opts = NULL;
	struct snap_pages src;
	const void *image = job->image;
	void *mapped = NULL;
	int fd, rc;
	ssize_t n;

	rc = pool_snap_opts_new(&opts);
	if (rc == 0)
		rc = pool_snap_opts_set_class(opts, snapvm_class(&parent->hdr));
	if (rc == 0 && image == NULL && (rc = snap_copy_fd(parent, &fd)) == 0) {
		mapped = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		rc = mapped == MAP_FAILED ? pool_err(-errno, "the node's copy of %s: %s",
						     parent->name, strerror(errno))
					  : 0;
		close(fd);
		image = mapped;
	}
	if (rc == 0) {
		src = (struct snap_pages){image, job->copies->over, job->copies->slot};
		rc = snap_put_pages(parent->pool, job->name, &src, len, parent, opts);
	}
	if (rc < 0)
		snprintf(job->err, sizeof(job->err), "%s", pool_errormsg());
	if (mapped != NULL && mapped != MAP_FAILED)
		munmap(mapped, len);
	pool_snap_opts_free(opts);
	job->rc = rc;
	n = write(job->efd, &one, sizeof(one));
	(void)n; /* an eventfd write fails only on overflow */
	return NULL;
}

/*
 * Take the pages written since the last save, at one instant: protected
 * again, each given its slot in the copies, to be read while the VMM runs
 * on (snapvm_job_copy()). The VMM is held for this long only.
 */
static int snapvm_take(struct snapvm_job *job, struct uffd_server *s, char *err, size_t errlen)
{
	struct snapvm_copies *c = job->copies;
	struct uffd_stats st;
	uint64_t t0;
	size_t n = 0, i, fresh = 0;
	int rc;

	/* Room for what is written by now and a margin, before the VMM is held. */
	rc = snapvm_room(c,
			 c->used + uffd_server_nwritten(s) +
			     MAX(uffd_server_nwritten(s) / 8, SNAPVM_MARGIN_BYTES / c->page_size));
	if (rc < 0) {
		snprintf(err, errlen, "room for the copies: %s", strerror(-rc));
		return rc;
	}
	t0 = snapvm_now_us();
	rc = uffd_server_written(s, &job->pages, &n);
	if (rc != 0) {
		snprintf(err, errlen, "the restore has ended or failed: %s", uffd_server_error(s));
		return rc < 0 ? rc : -ESRCH;
	}
	for (i = 0; i < n; i++)
		fresh += c->slot[job->pages[i]] == SNAP_NO_SLOT;
	rc = snapvm_room(c, c->used + fresh); /* more was written while the room was made */
	job->bufs = malloc(n * sizeof(*job->bufs) + 1);
	if (rc < 0 || job->bufs == NULL) {
		rc = rc < 0 ? rc : -ENOMEM;
		snprintf(err, errlen, "room for %zu copies: %s", n, strerror(-rc));
		uffd_server_give_back(s, job->pages, n); /* the next save takes them */
		return rc;
	}
	for (i = 0; i < n; i++) {
		if (c->slot[job->pages[i]] == SNAP_NO_SLOT)
			c->slot[job->pages[i]] = (uint32_t)c->used++;
		job->bufs[i] = c->over + (uint64_t)c->slot[job->pages[i]] * c->page_size;
	}
	uffd_server_save_begin(s, job->pages, n, job->bufs);
	job->held_us = snapvm_now_us() - t0;
	job->npages = n;
	uffd_server_stats(s, &st);
	job->early = st.saved_early;
	return 0;
}

/* Save the VMM that s serves (see snap.h). */
int snapvm_save_start(struct pool_snap *parent, const void *image, struct uffd_server *s,
		      struct snapvm_copies **copies, const struct snapvm_ctl *ctl, int sock,
		      struct snapvm_job **ret_job, char *err, size_t errlen)
{
	struct snapvm_job *job;
	int rc;

	if (*copies == NULL &&
	    snapvm_copies_new(parent->hdr.npages, parent->hdr.page_size, copies) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	job = calloc(1, sizeof(*job));
	if (job == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	job->vmm = ctl->vmm;
	job->sock = -1;
	job->parent = parent;
	job->image = image;
	job->copies = *copies;
	job->copies->refs++;
	strcpy(job->name, ctl->name);
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->efd < 0) {
		rc = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	rc = snapvm_take(job, s, err, errlen);
	if (rc < 0)
		goto fail;
	job->sock = sock;
	snapvm_reply(sock, "taken pages=%llu held_us=%llu", (unsigned long long)job->npages,
		     (unsigned long long)job->held_us);
	*ret_job = job;
	return 0;
fail:
	snapvm_job_free(job);
	return rc;
}

pid_t snapvm_job_vmm(const struct snapvm_job *job)
{
	return job->vmm;
}

bool snapvm_job_copying(const struct snapvm_job *job)
{
	return !job->storing;
}

/* A save that failed: answer, and free it. */
static void snapvm_job_fail(struct snapvm_job *job, const char *why)
{
	snapvm_reply(job->sock, "error %s", why);
	snapvm_job_free(job);
}

/* Read the next of the pages taken (see snap.h). */
int snapvm_job_copy(struct snapvm_job *job, struct uffd_server *s)
{
	struct uffd_stats st;
	char err[200];
	int64_t left;
	int rc;

	if (s == NULL) {
		snapvm_job_fail(job, "the VMM ended before its pages were read");
		return -1;
	}
	left = uffd_server_save_step(s, MAX(SNAPVM_STEP_BYTES / job->copies->page_size, 1), err,
				     sizeof(err));
	if (left > 0)
		return 1;
	uffd_server_stats(s, &st);
	job->early = st.saved_early - job->early;
	uffd_server_save_end(s, left == 0);
	if (left < 0) {
		snapvm_job_fail(job, err);
		return -1;
	}
	free(job->pages);
	free(job->bufs);
	job->pages = NULL;
	job->bufs = NULL;
	rc = -pthread_create(&job->thread, NULL, snapvm_store, job);
	if (rc < 0) {
		snprintf(err, sizeof(err), "a thread for the store: %s", strerror(-rc));
		snapvm_job_fail(job, err);
		return -1;
	}
	job->storing = true;
	return 0;
}

int snapvm_job_fd(const struct snapvm_job *job)
{
	return job->efd;
}

/* The store is done: answer the request, and free the job. */
void snapvm_job_end(struct snapvm_job *job)
{
	if (!job->storing) {
		snapvm_job_fail(job, "the server stopped before the pages were read");
		return;
	}
	pthread_join(job->thread, NULL);
	if (job->rc == 0)
		snapvm_reply(job->sock, "ok pages=%llu diff=%llu held_us=%llu early=%llu",
			     (unsigned long long)job->npages, (unsigned long long)job->copies->used,
			     (unsigned long long)job->held_us, (unsigned long long)job->early);
	else
		snapvm_reply(job->sock, "error storing %s: %s", job->name, job->err);
	snapvm_job_free(job);
}

/* ---- the client ---- */

static int snapvm_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return pool_err(-ENAMETOOLONG, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pool_err(-errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return pool_err(rc, "%s: %s", path, strerror(-rc));
	}
	return fd;
}

/*
 * Read the answer until the server closes the connection; its last line
 * into line (at most len - 1 bytes): 0 or -errno.
 */
static int snapvm_read_reply(int fd, char *line, size_t len)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	size_t have = 0;
	char *last;
	ssize_t n;

	for (;;) {
		int ready = poll(&pfd, 1, SNAPVM_REPLY_MS);

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			return pool_err(ready < 0 ? -errno : -ETIMEDOUT,
					"no answer from the server");
		if (have == len - 1)
			return pool_err(POOL_EPROTOCOL, "an answer longer than %zu bytes", len - 1);
		n = recv(fd, line + have, len - 1 - have, 0);
		if (n < 0)
			return pool_err(-errno, "reading the answer: %s", strerror(errno));
		if (n == 0)
			break;
		have += (size_t)n;
	}
	while (have > 0 && line[have - 1] == '\n')
		have--;
	line[have] = '\0';
	if (have == 0)
		return pool_err(-ECONNRESET, "the server closed the connection without an answer");
	last = strrchr(line, '\n');
	if (last != NULL)
		memmove(line, last + 1, strlen(last + 1) + 1);
	return 0;
}

POOL_EXPORT int pool_snap_serve_save(const char *socket, pid_t vmm, const char *name,
				     uint64_t *ret_pages, uint64_t *ret_diff, uint64_t *ret_held_us)
{
	char req[SNAPVM_LINE_MAX + 1], line[2 * SNAPVM_LINE_MAX + 128];
	unsigned long long pages, diff, held;
	int fd, rc, n;

	if (socket == NULL || vmm <= 0 || name == NULL || name[0] == '\0')
		return pool_err(-EINVAL, "pool_snap_serve_save: invalid argument");
	n = snprintf(req, sizeof(req), "save %d %s\n", (int)vmm, name);
	if (n < 0 || (size_t)n >= sizeof(req) || strchr(name, ' ') != NULL ||
	    strchr(name, '\n') != NULL)
		return pool_err(-EINVAL, "pool_snap_serve_save: invalid snapshot name");
	fd = snapvm_connect(socket);
	if (fd < 0)
		return fd;
	rc = send(fd, req, (size_t)n, MSG_NOSIGNAL) == n
		 ? 0
		 : pool_err(-errno, "%s: %s", socket, strerror(errno));
	if (rc == 0)
		rc = snapvm_read_reply(fd, line, sizeof(line));
	close(fd);
	if (rc < 0)
		return rc;
	line[strcspn(line, "\n")] = '\0';
	if (strncmp(line, "error ", 6) == 0)
		return pool_err(-EIO, "%s", line + 6);
	if (sscanf(line, "ok pages=%llu diff=%llu held_us=%llu", &pages, &diff, &held) != 3)
		return pool_err(POOL_EPROTOCOL, "not an answer to a save: %.80s", line);
	if (ret_pages != NULL)
		*ret_pages = pages;
	if (ret_diff != NULL)
		*ret_diff = diff;
	if (ret_held_us != NULL)
		*ret_held_us = held;
	return 0;
}

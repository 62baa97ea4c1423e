/*
 * tests/unit/test_uffd.c - the userfaultfd page server against a client
 * that does what Firecracker's Uffd backend does: a child process maps
 * guest memory anonymously, creates a userfaultfd, registers the memory
 * for missing faults, connects to our unix socket and sends the JSON
 * mappings with the fd; then its threads touch guest pages and check each
 * one against the image, which the child computes on its own from the seed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "tests/unit/unit.h"

#include "snapshot/fc.h"
#include "snapshot/uffd.h"

#define PAGE 4096u
#define MiB (UINT64_C(1) << 20)
#define IMAGE (32 * MiB)
#define NPAGES (IMAGE / PAGE)
#define SPLIT (12 * MiB) /* guest region 0 is the image's first 12 MiB, region 1 the rest */

static const uint64_t seed = 0x5eed5eedcafef00dULL;
static uint8_t *image; /* read-only, made once */
static char sockpath[108];

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Image page pg: about 30% all zero, the rest seeded bytes. */
static void page_fill(uint64_t pg, uint8_t *p)
{
	uint64_t x = mix(seed ^ pg), i;

	if (x % 10 < 3) {
		memset(p, 0, PAGE);
		return;
	}
	for (i = 0; i < PAGE / 8; i++) {
		x = mix(x + i);
		memcpy(p + i * 8, &x, 8);
	}
}

static uint64_t checksum(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static int count_fds(void)
{
	char path[64];
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}

/* The working set a client touches in the record run: a seeded 20% of pages, in seeded order. */
static size_t working_set(uint64_t *pages)
{
	size_t n = 0;
	uint64_t pg, i;

	for (pg = 0; pg < NPAGES; pg++)
		if (mix(pg * 7 + 1) % 5 == 0)
			pages[n++] = pg;
	for (i = n - 1; i > 0; i--) {
		uint64_t j = mix(i ^ seed) % (i + 1), t = pages[i];

		pages[i] = pages[j];
		pages[j] = t;
	}
	return n;
}

/* ---- the client: a child process behaving like Firecracker ---- */

enum mode { M_FULL, M_REMOVE, M_RECORD, M_DISCONNECT, M_OUTSIDE, M_WAITFILL };

struct client {
	enum mode mode;
	uint8_t *mem[2]; /* guest regions */
	uint64_t size[2];
	uint64_t *order; /* pages to touch */
	size_t n;
	int threads;
	volatile int bad;
};

static uint8_t *guest(struct client *c, uint64_t pg)
{
	uint64_t off = pg * PAGE;

	return off < SPLIT ? c->mem[0] + off : c->mem[1] + (off - SPLIT);
}

/* Touch (read) page pg and compare it with what the image holds (or zeros). */
static bool check_page(struct client *c, uint64_t pg, bool zero)
{
	uint8_t want[PAGE];

	if (zero)
		memset(want, 0, PAGE);
	else
		page_fill(pg, want);
	if (checksum(guest(c, pg), PAGE) == checksum(want, PAGE))
		return true;
	fprintf(stderr, "client: page %llu checksum differs (%s expected)\n",
		(unsigned long long)pg, zero ? "zeros" : "image");
	return false;
}

struct worker {
	struct client *c;
	int id;
};

static void *touch(void *arg)
{
	struct worker *w = arg;
	size_t i;

	for (i = (size_t)w->id; i < w->c->n; i += (size_t)w->c->threads)
		if (!check_page(w->c, w->c->order[i], false))
			w->c->bad = 1;
	return NULL;
}

static void touch_all(struct client *c)
{
	pthread_t t[4];
	struct worker w[4];
	int i;

	for (i = 0; i < c->threads; i++) {
		w[i].c = c;
		w[i].id = i;
		if (pthread_create(&t[i], NULL, touch, &w[i]) != 0)
			_exit(20);
	}
	for (i = 0; i < c->threads; i++)
		pthread_join(t[i], NULL);
}

/* Every page of both regions resident (placed by someone), within 30 s? */
static bool all_resident(struct client *c)
{
	static unsigned char vec[NPAGES];
	int r, tries;
	uint64_t i;

	for (tries = 0; tries < 3000; tries++) {
		bool all = true;

		for (r = 0; r < 2 && all; r++) {
			if (mincore(c->mem[r], c->size[r], vec) < 0)
				_exit(12);
			for (i = 0; i < c->size[r] / PAGE && all; i++)
				all = vec[i] & 1;
		}
		if (all)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Touch a few pages, then wait without faulting until the server's
 * background fill has placed everything, then check every page.
 */
static int wait_filled(struct client *c)
{
	uint64_t pg;

	for (pg = 0; pg < NPAGES; pg += NPAGES / 16)
		if (!check_page(c, pg, false))
			return 1;
	if (!all_resident(c))
		return 13;
	for (pg = 0; pg < NPAGES; pg++)
		if (!check_page(c, pg, false))
			return 1;
	return 0;
}

static void send_handshake(int sock, const char *msg, int uffd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {(void *)msg, strlen(msg)};
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof(cbuf.buf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != (ssize_t)strlen(msg))
		_exit(11);
}

static int client_main(enum mode mode)
{
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct client c = {.mode = mode, .threads = 2};
	uint64_t extra = mode == M_OUTSIDE ? PAGE : 0, pg, i;
	char msg[512];
	int uffd, sock, r;

	c.size[0] = SPLIT;
	c.size[1] = IMAGE - SPLIT;
	for (r = 0; r < 2; r++) {
		c.mem[r] = mmap(NULL, c.size[r] + extra, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (c.mem[r] == MAP_FAILED)
			return 2;
	}
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		return 3;
	for (r = 0; r < 2; r++) {
		struct uffdio_register reg = {
		    .range = {(uint64_t)(uintptr_t)c.mem[r], c.size[r] + extra},
		    .mode = UFFDIO_REGISTER_MODE_MISSING,
		};

		if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
			return 4;
	}
	snprintf(
	    msg, sizeof(msg),
	    "[{\"base_host_virt_addr\":%llu,\"size\":%llu,\"offset\":0,\"page_size\":4096,"
	    "\"page_size_kib\":4096},{\"base_host_virt_addr\":%llu,\"size\":%llu,\"offset\":%llu,"
	    "\"page_size\":4096,\"page_size_kib\":4096}]",
	    (unsigned long long)(uintptr_t)c.mem[0], (unsigned long long)c.size[0],
	    (unsigned long long)(uintptr_t)c.mem[1], (unsigned long long)c.size[1],
	    (unsigned long long)SPLIT);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sockpath);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 5;
	send_handshake(sock, msg, uffd);
	close(sock); /* as Firecracker does; it keeps its uffd */

	c.order = malloc(NPAGES * sizeof(*c.order));
	if (c.order == NULL)
		return 6;
	if (mode == M_RECORD) {
		/* One thread, so the first-touch order is exactly this list. */
		c.n = working_set(c.order);
		c.threads = 1;
		touch_all(&c);
		return c.bad ? 1 : 0;
	}
	if (mode == M_WAITFILL)
		return wait_filled(&c);
	if (mode == M_OUTSIDE) {
		/* Touch the page registered but not in the handshake: never served. */
		return c.mem[1][c.size[1]] == 0 ? 7 : 8;
	}
	for (pg = 0; pg < NPAGES; pg++)
		c.order[pg] = pg;
	for (i = NPAGES - 1; i > 0; i--) { /* random order, differing per run */
		uint64_t j = mix(i ^ (uint64_t)getpid() ^ (uint64_t)time(NULL)) % (i + 1), t;

		t = c.order[i];
		c.order[i] = c.order[j];
		c.order[j] = t;
	}
	c.n = mode == M_DISCONNECT ? NPAGES / 3 : NPAGES;
	if (mode == M_REMOVE) {
		/*
		 * Pages [1000, 3000): touch, drop, read again as zeros; [5000, 5500) dropped
		 * untouched.
		 */
		for (pg = 1000; pg < 3000; pg++)
			if (!check_page(&c, pg, false))
				return 1;
		if (madvise(guest(&c, 1000), 2000 * PAGE, MADV_DONTNEED) < 0 ||
		    madvise(guest(&c, 5000), 500 * PAGE, MADV_DONTNEED) < 0)
			return 9;
		for (pg = 1000; pg < 3000; pg++)
			if (!check_page(&c, pg, true))
				return 1;
		for (pg = 5000; pg < 5500; pg++)
			if (!check_page(&c, pg, true))
				return 1;
		/* The rest, with [1000,3000) and [5000,5500) left out. */
		for (i = 0, c.n = 0; i < NPAGES; i++)
			if (!(c.order[i] >= 1000 && c.order[i] < 3000) &&
			    !(c.order[i] >= 5000 && c.order[i] < 5500))
				c.order[c.n++] = c.order[i];
	}
	touch_all(&c);
	if (mode == M_DISCONNECT)
		_exit(c.bad ? 1 : 0); /* mid-restore, nothing cleaned up */
	return c.bad ? 1 : 0;
}

/* ---- the server side: this process ---- */

/* A fetch source over the image, as the store would be, counting its calls. */
struct fake {
	uint64_t calls, pages, max_n;
	uint64_t fail_at; /* fail this call (1-based), 0 never */
	uint64_t kill_at; /* kill the client (and let it die) before this call */
};

static pid_t client_pid;

static int fake_fetch(void *arg, size_t n, const uint64_t *pages, void *const *bufs)
{
	struct fake *f = arg;
	size_t i;

	if (++f->calls == f->fail_at)
		return -EIO;
	if (f->calls == f->kill_at) {
		siginfo_t si;

		kill(client_pid, SIGKILL);
		waitid(P_PID, (id_t)client_pid, &si, WEXITED | WNOWAIT);
	}
	if (n > f->max_n)
		f->max_n = n;
	f->pages += n;
	for (i = 0; i < n; i++)
		memcpy(bufs[i], image + pages[i] * PAGE, PAGE);
	return 0;
}

struct run {
	enum mode mode;
	unsigned flags;
	struct fake *fetch; /* the source, else the image */
	size_t fill;	    /* uffd_server_fill() this many pages at a time when idle */
	const uint64_t *prefetch;
	size_t nprefetch;
	int prefetch_rc;
	int status; /* the child's wait status */
	int result; /* uffd_server_handle()'s final answer */
	char err[256];
	struct uffd_stats st;
	uint64_t *touched; /* UFFD_SERVER_RECORD: a copy */
	size_t ntouched;
};

static int listen_sock(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CU_ASSERT_FATAL(s >= 0);
	unlink(sockpath);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sockpath);
	CU_ASSERT_FATAL(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(s, 1) == 0);
	return s;
}

/* One restore: a client child in mode, served here until it exits or the server fails. */
static void restore(struct run *run)
{
	struct fc_mappings m;
	struct uffd_server *s = NULL;
	char err[FC_ERR_MAX];
	time_t deadline = time(NULL) + 60;
	int ls = listen_sock(), conn, uffd = -1, rc;
	pid_t pid, peer = 0;
	struct pollfd pfd = {ls, POLLIN, 0};

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(client_main(run->mode));
	client_pid = pid;
	CU_ASSERT_FATAL(poll(&pfd, 1, 10000) == 1);
	conn = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	CU_ASSERT_FATAL(conn >= 0);
	rc = fc_receive(conn, 10000, &m, &uffd, &peer, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "\n  handshake: %s\n", err);
	CU_ASSERT_FATAL(rc == 0);
	CU_ASSERT_EQUAL(peer, pid);
	close(conn);
	close(ls);
	unlink(sockpath);
	if (run->fetch != NULL)
		rc = uffd_server_new_fetch(uffd, peer, -1, &m, fake_fetch, run->fetch, IMAGE,
					   run->flags, err, sizeof(err), &s);
	else
		rc = uffd_server_new(uffd, peer, -1, &m, image, IMAGE, run->flags, err, sizeof(err),
				     &s);
	if (rc != 0)
		fprintf(stderr, "\n  server: %s\n", err);
	CU_ASSERT_FATAL(rc == 0);
	if (run->nprefetch > 0) {
		rc = uffd_server_prefetch(s, run->prefetch, run->nprefetch);
		run->prefetch_rc = rc;
		if (run->fetch == NULL || run->fetch->fail_at == 0)
			CU_ASSERT_EQUAL(rc, 0);
	}
	for (rc = 0; rc == 0 && time(NULL) < deadline;) {
		int ready;

		pfd.fd = uffd_server_fd(s);
		pfd.events = POLLIN;
		ready = poll(&pfd, 1, run->fill ? 10 : 1000);
		if (ready < 0 && errno != EINTR)
			break;
		if (ready == 0 && run->fill) {
			rc = uffd_server_fill(s, run->fill);
			if (rc == UFFD_SERVER_FILLED)
				run->fill = 0;
			else if (rc != 0)
				break;
		}
		rc = uffd_server_handle(s);
	}
	run->result = rc;
	snprintf(run->err, sizeof(run->err), "%s", uffd_server_error(s));
	uffd_server_stats(s, &run->st);
	if (run->flags & UFFD_SERVER_RECORD) {
		const uint64_t *t;

		run->ntouched = uffd_server_touched(s, &t);
		run->touched = malloc(run->ntouched * sizeof(*t) + 1);
		CU_ASSERT_FATAL(run->touched != NULL);
		memcpy(run->touched, t, run->ntouched * sizeof(*t));
	}
	if (rc != UFFD_SERVER_EXITED)
		kill(pid, SIGKILL); /* what the owner does when the restore fails */
	CU_ASSERT_EQUAL(waitpid(pid, &run->status, 0), pid);
	uffd_server_free(s);
}

static void test_full(void)
{
	struct run run = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE};
	int before = count_fds();

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES);
	CU_ASSERT(run.st.zeroed > NPAGES / 5 && run.st.zeroed < NPAGES * 2 / 5);
	CU_ASSERT(run.st.faults >= NPAGES);
	CU_ASSERT_EQUAL(count_fds(), before);
	fprintf(stderr, " [faults %llu, copied %llu, zero %llu, existed %llu] ",
		(unsigned long long)run.st.faults, (unsigned long long)run.st.copied,
		(unsigned long long)run.st.zeroed, (unsigned long long)run.st.existed);
}

/* With UFFD_SERVER_AROUND a fault places the missing pages after it: far fewer faults. */
static void test_around(void)
{
	struct run run = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE | UFFD_SERVER_AROUND};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES);
	CU_ASSERT(run.st.zeroed > NPAGES / 5 && run.st.zeroed < NPAGES * 2 / 5);
	CU_ASSERT(run.st.around > NPAGES / 2);
	CU_ASSERT(run.st.faults < NPAGES / 4);
	fprintf(stderr, " [faults %llu, around %llu, zero %llu] ",
		(unsigned long long)run.st.faults, (unsigned long long)run.st.around,
		(unsigned long long)run.st.zeroed);
}

static void test_no_zeropage(void)
{
	struct run run = {.mode = M_FULL, .flags = 0};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied, NPAGES);
	CU_ASSERT_EQUAL(run.st.zeroed, 0);
}

static void test_remove(void)
{
	struct run run = {.mode = M_REMOVE, .flags = UFFD_SERVER_ZEROPAGE};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0)
		fprintf(stderr, "\n  client status 0x%x\n", run.status);
	CU_ASSERT_EQUAL(run.st.removes, 2);
	/* [1000, 3000) placed twice, [5000, 5500) once as zeros. */
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES + 2000);
}

static void test_record_prefetch(void)
{
	struct run rec = {.mode = M_RECORD, .flags = UFFD_SERVER_RECORD | UFFD_SERVER_ZEROPAGE};
	struct run pre = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE};
	uint64_t *want = malloc(NPAGES * sizeof(*want));
	size_t n;

	CU_ASSERT_FATAL(want != NULL);
	n = working_set(want);
	restore(&rec);
	CU_ASSERT_EQUAL(rec.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0);
	/* One client thread: the recorded order is exactly the order it touched. */
	CU_ASSERT_EQUAL(rec.ntouched, n);
	CU_ASSERT(rec.ntouched == n && memcmp(rec.touched, want, n * sizeof(*want)) == 0);
	CU_ASSERT_EQUAL(rec.st.faults, n);

	pre.prefetch = rec.touched;
	pre.nprefetch = rec.ntouched;
	restore(&pre);
	CU_ASSERT_EQUAL(pre.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(pre.status) && WEXITSTATUS(pre.status) == 0);
	/*
	 * The client touches pages from the moment it has sent the handshake,
	 * as Firecracker does, so some of the set faults before the prefetch
	 * reaches it: every page is placed once, by a fault or by the prefetch.
	 */
	CU_ASSERT(pre.st.prefetched > 0 && pre.st.prefetched <= n);
	CU_ASSERT_EQUAL(pre.st.copied + pre.st.zeroed, NPAGES);
	CU_ASSERT_EQUAL(pre.st.prefetched + pre.st.faults - pre.st.existed, NPAGES);
	fprintf(stderr, " [set %zu, prefetched %llu, faults %llu, existed %llu] ", n,
		(unsigned long long)pre.st.prefetched, (unsigned long long)pre.st.faults,
		(unsigned long long)pre.st.existed);
	free(rec.touched);
	free(want);
}

static void test_disconnect(void)
{
	struct run run = {.mode = M_DISCONNECT, .flags = UFFD_SERVER_ZEROPAGE};
	int before = count_fds();

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT(run.st.copied + run.st.zeroed < NPAGES);
	CU_ASSERT_EQUAL(count_fds(), before);
}

static void test_outside(void)
{
	struct run run = {.mode = M_OUTSIDE, .flags = 0};
	int before = count_fds();

	restore(&run);
	CU_ASSERT_EQUAL(run.result, -EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(run.err, "outside every guest region"));
	/* The client was blocked on its fault until it was killed: it never read wrong data. */
	CU_ASSERT(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
	CU_ASSERT_EQUAL(count_fds(), before);
}

/* Handshakes the server refuses: sizes not matching the image. */
static void test_wrong_image(void)
{
	struct fc_mappings m = {.n = 1, .page_size = PAGE, .r = {{MiB, IMAGE, 0, PAGE}}};
	struct uffd_server *s = NULL;
	char err[FC_ERR_MAX];
	int before = count_fds();
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(
	    uffd_server_new(fd, 0, -1, &m, image, IMAGE - PAGE, 0, err, sizeof(err), &s), -EINVAL);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "outside the"));
	CU_ASSERT_EQUAL(count_fds(), before); /* the uffd is closed on failure too */
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	CU_ASSERT_EQUAL(uffd_server_new(fd, 0, -1, &m, image, IMAGE, 0x80, err, sizeof(err), &s),
			-EINVAL);
	CU_ASSERT_EQUAL(count_fds(), before);
}

/* Every page through the fetch source, one fetch per fault. */
static void test_fetch_full(void)
{
	struct fake f = {0};
	struct run run = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE, .fetch = &f};
	int before = count_fds();

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES);
	CU_ASSERT(run.st.zeroed > NPAGES / 5 && run.st.zeroed < NPAGES * 2 / 5);
	CU_ASSERT_EQUAL(f.max_n, 1);
	CU_ASSERT_EQUAL(f.calls, run.st.fetches);
	CU_ASSERT(f.calls >= NPAGES && f.calls <= run.st.faults);
	CU_ASSERT_EQUAL(count_fds(), before);
}

/* AROUND through the fetch source: a fault fetches the pages after it in the same call. */
static void test_fetch_around(void)
{
	struct fake f = {0};
	struct run run = {
	    .mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE | UFFD_SERVER_AROUND, .fetch = &f};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES);
	CU_ASSERT(f.max_n > 1 && f.max_n <= 16);
	CU_ASSERT_EQUAL(f.calls, run.st.fetches);
	CU_ASSERT(f.calls < NPAGES / 4 && run.st.around > NPAGES / 2);
	fprintf(stderr, " [faults %llu, fetch calls %llu, around %llu] ",
		(unsigned long long)run.st.faults, (unsigned long long)f.calls,
		(unsigned long long)run.st.around);
}

/* A prefetch through the fetch source: one call per batch of UFFD_BATCH_BYTES (4 MiB). */
static void test_fetch_prefetch(void)
{
	struct fake f = {0};
	struct run run = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE, .fetch = &f};
	uint64_t *set = malloc(NPAGES * sizeof(*set)), batches;

	CU_ASSERT_FATAL(set != NULL);
	run.nprefetch = working_set(set);
	run.prefetch = set;
	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CU_ASSERT_EQUAL(run.st.copied + run.st.zeroed, NPAGES);
	CU_ASSERT(run.st.prefetched > 0 && run.st.prefetched <= run.nprefetch);
	/* Batches of several pages, never more than 4 MiB (the set is 6 MiB). */
	CU_ASSERT(f.max_n > 1 && f.max_n <= (4 * MiB) / PAGE);
	/* The batch calls, plus one per fault at most. */
	batches = (run.nprefetch + (4 * MiB) / PAGE - 1) / ((4 * MiB) / PAGE);
	CU_ASSERT(f.calls <= batches + run.st.faults);
	CU_ASSERT(f.pages <= NPAGES + run.st.existed);
	fprintf(stderr, " [set %zu, prefetched %llu, fetch calls %llu, faults %llu] ",
		run.nprefetch, (unsigned long long)run.st.prefetched, (unsigned long long)f.calls,
		(unsigned long long)run.st.faults);
	free(set);
}

/* A fetch failing mid-restore: the restore fails, the faulting thread is never resumed. */
static void test_fetch_fails(void)
{
	struct fake f = {.fail_at = 100};
	struct run run = {.mode = M_FULL, .flags = UFFD_SERVER_ZEROPAGE, .fetch = &f};
	int before = count_fds();

	restore(&run);
	CU_ASSERT_EQUAL(run.result, -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(run.err, "fetching 1 page from image page"));
	CU_ASSERT(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
	CU_ASSERT(run.st.copied + run.st.zeroed < 100);
	CU_ASSERT_EQUAL(count_fds(), before);
}

/* A prefetch batch failing: the prefetch returns the error, and so does the server after. */
static void test_fetch_prefetch_fails(void)
{
	struct fake f = {.fail_at = 1};
	struct run run = {.mode = M_FULL, .flags = 0, .fetch = &f};
	uint64_t pages[3] = {7, 8, 4000};

	run.prefetch = pages;
	run.nprefetch = 3;
	restore(&run);
	/* The client may have faulted first: the failed call is a fault's or the batch's. */
	CU_ASSERT_EQUAL(run.prefetch_rc, -EIO);
	CU_ASSERT_EQUAL(run.result, -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(run.err, "fetching"));
	CU_ASSERT(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
}

/* Fill while idle, from an image or a fetch source: the client ends up faulting almost nothing. */
static void fill_run(struct fake *f)
{
	struct run run = {.mode = M_WAITFILL, .flags = 0, .fetch = f, .fill = 3000};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0)
		fprintf(stderr, "\n  client status 0x%x\n", run.status);
	CU_ASSERT_EQUAL(run.st.copied, NPAGES);
	CU_ASSERT(run.st.filled >= NPAGES - 16 && run.st.faults <= 16);
	if (f != NULL) /* one call per fill batch (3000 pages, at most 1024 a call) and per fault */
		CU_ASSERT(f->calls <= run.st.faults + 3 * ((NPAGES + 2999) / 3000));
	fprintf(stderr, " [filled %llu, faults %llu, fetch calls %llu] ",
		(unsigned long long)run.st.filled, (unsigned long long)run.st.faults,
		f != NULL ? (unsigned long long)f->calls : 0ULL);
}

static void test_fill(void)
{
	fill_run(NULL);
}

static void test_fetch_fill(void)
{
	struct fake f = {0};

	fill_run(&f);
}

/*
 * The VMM dies in the middle of a fill batch (after its 16 faults): the
 * fill sees it (ESRCH) and ends the restore, instead of trying the batch
 * for ever.
 */
static void test_fill_exit(void)
{
	struct fake f = {.kill_at = 18};
	struct run run = {
	    .mode = M_WAITFILL, .flags = UFFD_SERVER_ZEROPAGE, .fetch = &f, .fill = 3000};

	restore(&run);
	CU_ASSERT_EQUAL(run.result, UFFD_SERVER_EXITED);
	CU_ASSERT_PTR_NOT_NULL(strstr(run.err, "address space is gone"));
	CU_ASSERT(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
	CU_ASSERT(run.st.copied + run.st.zeroed < NPAGES);
}

static void test_fetch_args(void)
{
	struct fc_mappings m = {.n = 1, .page_size = PAGE, .r = {{MiB, IMAGE, 0, PAGE}}};
	struct uffd_server *s = NULL;
	char err[FC_ERR_MAX];
	int before = count_fds();
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(
	    uffd_server_new_fetch(fd, 0, -1, &m, NULL, NULL, IMAGE, 0, err, sizeof(err), &s),
	    -EINVAL);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_EQUAL(count_fds(), before);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"Firecracker-like restore, 2 threads, zero pages", test_full},
	    {"restore without zero-page detection", test_no_zeropage},
	    {"a fault places the pages after it (AROUND)", test_around},
	    {"MADV_DONTNEED mid-restore (REMOVE)", test_remove},
	    {"record a working set, prefetch it", test_record_prefetch},
	    {"client gone mid-restore", test_disconnect},
	    {"fault outside every region fails the restore", test_outside},
	    {"regions not matching the image", test_wrong_image},
	    {"fetch source: a fetch per fault", test_fetch_full},
	    {"fetch source: a fault fetches the pages after it (AROUND)", test_fetch_around},
	    {"fetch source: prefetch in 4 MiB fetches", test_fetch_prefetch},
	    {"fetch source: a failing fetch fails the restore", test_fetch_fails},
	    {"fetch source: a failing prefetch batch", test_fetch_prefetch_fails},
	    {"fill while idle, from the image", test_fill},
	    {"fill while idle, through the fetch source", test_fetch_fill},
	    {"VMM gone during the fill", test_fill_exit},
	    {"fetch source: no callback", test_fetch_args},
	    {NULL, NULL},
	};
	char dir[] = "/tmp/test_uffd.XXXXXX";
	uint64_t pg;
	int rc;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(sockpath, sizeof(sockpath), "%s/uffd.sock", dir);
	image = mmap(NULL, IMAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image == MAP_FAILED)
		return 1;
	for (pg = 0; pg < NPAGES; pg++)
		page_fill(pg, image + pg * PAGE);
	mprotect(image, IMAGE, PROT_READ);
	rc = unit_run("uffd", tests);
	munmap(image, IMAGE);
	rmdir(dir);
	return rc;
}

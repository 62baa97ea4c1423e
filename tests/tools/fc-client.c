/*
 * tests/tools/fc-client.c - a VMM restoring its guest memory the way
 * Firecracker's UFFD backend does, for the snapshot tests.
 *
 *   fc-client [options] SOCKET SIZE   restore SIZE bytes from the page server
 *                                     at SOCKET, touch the pages, print
 *                                     "xxh3 HEX" of the memory
 *   fc-client --sum [--touch N] FILE  the same checksum of a plain file
 *
 * As Firecracker does (src/vmm/src/persist.rs; --firecracker picks the
 * release's behaviour, 1.12 and later by default): anonymous private guest
 * memory (--regions 2: two mappings; --hugepages: 2 MiB hugetlbfs pages,
 * MAP_HUGETLB | MAP_HUGE_2MB), a userfaultfd from /dev/userfaultfd where
 * there is one (O_CLOEXEC | O_NONBLOCK, UFFDIO_API with EVENT_REMOVE: from
 * 1.12 always, before only with a balloon), registered for MISSING faults,
 * then one sendmsg on the socket: serde_json's compact array of the
 * regions, with page_size and page_size_kib (1.12 on) or page_size_kib
 * alone (1.7 to 1.11), both in bytes, and the userfaultfd as SCM_RIGHTS.
 * 1.12 on keeps the socket open; earlier releases close it. Then the pages
 * are read in order, from one thread.
 *
 * --balloon N then does what an inflating balloon does to the first N
 * 4 KiB pages (madvise MADV_DONTNEED: a REMOVE event for the page server)
 * and reads them again: they must read as zeros, as Firecracker's own
 * handlers serve them; the rest must still be the image.
 *
 * --rounds R --write N, for saves of a running sandbox: then R times,
 * write N 4 KiB pages spread over the memory (round k's own bytes), print
 * "round K xxh3 HEX" of the whole memory and wait for a line on stdin
 * (the test saves the sandbox meanwhile), after --balloon if given. Its first line is then
 * "pid PID".
 *
 * Bad handshakes for the error paths: --bad-json, --no-fd, --wrong-size
 * (one page more than the memory), --disconnect (half the message, then
 * close). A refused restore serves nothing, so the first touch blocks: the
 * alarm (--timeout, 30 s) ends the client with exit status 3.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <xxhash.h>

#define PAGE 4096u /* the unit of --touch, --touch-order and --balloon */
#define HUGE_PAGE (UINT64_C(2) << 20)
#define EXIT_TIMEOUT 3

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

/* The Firecracker releases whose handshake differs. */
enum fc_release { FC_1_7 = 107, FC_1_12 = 112 };

enum bad { BAD_NONE, BAD_JSON, BAD_NO_FD, BAD_SIZE, BAD_DISCONNECT };

struct opts {
	enum bad bad;
	unsigned regions, timeout;
	enum fc_release fc;
	uint64_t page;	   /* the guest's page size: 4 KiB, or 2 MiB with --hugepages */
	uint64_t balloon;  /* pages to remove after the restore */
	uint64_t touch;	   /* pages to touch from the start; 0: all */
	unsigned rounds;   /* --rounds: of writes, each followed by a wait */
	uint64_t write;	   /* 4 KiB pages written a round */
	const char *order; /* a file of page indexes to touch, one a line */
	const char *sum;   /* --sum FILE */
};

static void on_alarm(int sig)
{
	static const char msg[] = "fc-client: timed out waiting for pages (restore refused?)\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);

	(void)sig, (void)n;
	_exit(EXIT_TIMEOUT);
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "fc-client: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The checksum of the first len bytes of a file, as of guest memory. */
static int sum_file(const char *path, uint64_t len)
{
	static char buf[1 << 16];
	XXH3_state_t *st = XXH3_createState();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	if (fd < 0)
		die(path);
	XXH3_64bits_reset(st);
	while (len > 0 && (n = read(fd, buf, len < sizeof(buf) ? len : sizeof(buf))) > 0) {
		XXH3_64bits_update(st, buf, (size_t)n);
		len -= (uint64_t)n;
	}
	if (n < 0)
		die(path);
	printf("xxh3 %016llx\n", (unsigned long long)XXH3_64bits_digest(st));
	XXH3_freeState(st);
	close(fd);
	return 0;
}

static void send_msg(int sock, const char *msg, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	if (fd >= 0) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len)
		die("sendmsg");
}

/*
 * The JSON Firecracker sends: serde_json of its GuestRegionUffdMapping list,
 * keys in declaration order, no whitespace; offset is the sum of the sizes
 * before; both page sizes in bytes.
 */
static void make_msg(char *msg, size_t len, uint8_t *const *mem, const uint64_t *size,
		     const struct opts *o)
{
	uint64_t off = 0;
	size_t at;
	unsigned i;

	at = (size_t)snprintf(msg, len, "[");
	for (i = 0; i < o->regions; i++) {
		uint64_t sz = size[i] + (o->bad == BAD_SIZE && i == o->regions - 1 ? o->page : 0);

		at += (size_t)snprintf(
		    msg + at, len - at,
		    "%s{\"base_host_virt_addr\":%llu,\"size\":%llu,\"offset\":%llu,", i ? "," : "",
		    (unsigned long long)(uintptr_t)mem[i], (unsigned long long)sz,
		    (unsigned long long)off);
		if (o->fc >= FC_1_12)
			at += (size_t)snprintf(msg + at, len - at, "\"page_size\":%llu,",
					       (unsigned long long)o->page);
		at += (size_t)snprintf(msg + at, len - at, "\"page_size_kib\":%llu}",
				       (unsigned long long)o->page);
		off += size[i];
	}
	snprintf(msg + at, len - at, "]");
	if (o->bad == BAD_JSON)
		snprintf(msg, len, "[{\"base_host_virt_addr\":,\"size\":}");
}

/* A userfaultfd as the userfaultfd crate makes one: /dev/userfaultfd, else the syscall. */
static int uffd_open(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK, uffd = -1;
#ifdef USERFAULTFD_IOC_NEW
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

	if (dev >= 0) {
		uffd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
		close(dev);
	}
#endif
	if (uffd < 0)
		uffd = (int)syscall(SYS_userfaultfd, flags);
	return uffd;
}

static int uffd_create(uint8_t *const *mem, const uint64_t *size, const struct opts *o)
{
	/* 1.12 on always asks for REMOVE events; earlier ones with a balloon only. */
	struct uffdio_api api = {
	    .api = UFFD_API,
	    .features = o->fc >= FC_1_12 || o->balloon ? UFFD_FEATURE_EVENT_REMOVE : 0,
	};
	int uffd = uffd_open();
	unsigned n = o->regions, i;

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		die("userfaultfd");
	for (i = 0; i < n; i++) {
		struct uffdio_register reg = {
		    .range = {(uint64_t)(uintptr_t)mem[i], size[i]},
		    .mode = UFFDIO_REGISTER_MODE_MISSING,
		};

		if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
			die("UFFDIO_REGISTER");
	}
	return uffd;
}

static void handshake(const char *path, const struct opts *o, uint8_t *const *mem,
		      const uint64_t *size, int uffd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static char msg[8192];
	size_t len;
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die(path);
	make_msg(msg, sizeof(msg), mem, size, o);
	len = strlen(msg);
	if (o->bad == BAD_DISCONNECT)
		len /= 2;
	send_msg(sock, msg, len, o->bad == BAD_NO_FD ? -1 : uffd);
	/* It keeps its uffd; 1.12 on also the socket, until it exits. */
	if (o->fc < FC_1_12 || o->bad == BAD_DISCONNECT)
		close(sock);
}

/* Guest page pg, wherever its region is. */
static volatile uint8_t *page_at(uint8_t *const *mem, const uint64_t *size, unsigned n, uint64_t pg)
{
	uint64_t off = pg * PAGE;
	unsigned i;

	for (i = 0; i < n; i++) {
		if (off < size[i])
			return mem[i] + off;
		off -= size[i];
	}
	return NULL;
}

/* Touch the pages listed in a file, in its order. */
static uint64_t touch_order(const char *path, uint8_t *const *mem, const uint64_t *size, unsigned n)
{
	FILE *f = fopen(path, "re");
	unsigned long long pg;
	uint64_t count = 0;

	if (f == NULL)
		die(path);
	while (fscanf(f, "%llu", &pg) == 1) {
		volatile uint8_t *p = page_at(mem, size, n, pg);

		if (p == NULL) {
			fprintf(stderr, "fc-client: page %llu outside the memory\n", pg);
			exit(1);
		}
		(void)*p;
		count++;
	}
	fclose(f);
	return count;
}

/* Read the first len bytes of guest memory in order, and checksum them. */
static uint64_t touch_sum(uint8_t *const *mem, const uint64_t *size, unsigned n, uint64_t len)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t h;
	unsigned i;

	XXH3_64bits_reset(st);
	for (i = 0; i < n && len > 0; i++) {
		uint64_t l = len < size[i] ? len : size[i];

		XXH3_64bits_update(st, mem[i], l);
		len -= l;
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

/*
 * What an inflating balloon does to the first o->balloon pages: Firecracker
 * madvises them MADV_DONTNEED, which queues a REMOVE event for the page
 * server; the guest reading them again must see zeros, not the image. Then
 * the checksum of the memory after them, which must still be the image's.
 */
static int balloon(uint8_t *const *mem, const uint64_t *size, const struct opts *o)
{
	uint64_t len = o->balloon * PAGE, pg, i;

	if (len > size[0] || len % o->page != 0) {
		fprintf(stderr, "fc-client: --balloon must cover whole guest pages of region 0\n");
		return 2;
	}
	if (madvise(mem[0], len, MADV_DONTNEED) < 0)
		die("madvise MADV_DONTNEED");
	for (pg = 0; pg < o->balloon; pg++)
		for (i = 0; i < PAGE; i += 64)
			if (((volatile uint8_t *)mem[0])[pg * PAGE + i] != 0) {
				printf("removed page %llu reads the image, not zeros\n",
				       (unsigned long long)pg);
				return 1;
			}
	printf("removed %llu pages: zeros\n", (unsigned long long)o->balloon);
	printf("after them xxh3 %016llx\n",
	       (unsigned long long)XXH3_64bits(mem[0] + len, size[0] - len));
	return 0;
}

/*
 * Round k of writes: o->write pages spread over the memory, each given
 * bytes of its own; round k + 1 writes again all but 100 of them.
 */
static void write_round(uint8_t *const *mem, const uint64_t *size, unsigned n, uint64_t total,
			unsigned k, const struct opts *o)
{
	uint64_t npages = total / PAGE, j, pg;

	for (j = 0; j < o->write; j++) {
		volatile uint8_t *p;
		uint64_t v = ((uint64_t)k << 32) | j;

		pg = ((j + k * 100) * 7919) % npages; /* rounds overlap: k+1 rewrites much of k */
		p = page_at(mem, size, n, pg);
		memcpy((uint8_t *)p, &v, sizeof(v));
		p[PAGE / 2] = (uint8_t)(k * 31 + j);
	}
}

/* --rounds: write, print the checksum, wait for the test; again. */
static void rounds(uint8_t *const *mem, const uint64_t *size, uint64_t total, const struct opts *o)
{
	char line[64];
	unsigned k;

	for (k = 1; k <= o->rounds; k++) {
		write_round(mem, size, o->regions, total, k, o);
		printf("round %u xxh3 %016llx\n", k,
		       (unsigned long long)touch_sum(mem, size, o->regions, total));
		fflush(stdout);
		if (fgets(line, sizeof(line), stdin) == NULL)
			return;
	}
}

static int restore(const char *path, uint64_t total, const struct opts *o)
{
	uint8_t *mem[2];
	uint64_t size[2];
	unsigned i;
	int uffd, rc;

	size[0] = o->regions == 2 ? (total / 2) & ~(o->page - 1) : total;
	size[1] = total - size[0];
	for (i = 0; i < o->regions; i++) {
		mem[i] = mmap(NULL, size[i], PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				  (o->page == HUGE_PAGE ? MAP_HUGETLB | MAP_HUGE_2MB : 0),
			      -1, 0);
		if (mem[i] == MAP_FAILED)
			die("mmap");
	}
	if (o->rounds > 0) {
		printf("pid %d\n", (int)getpid());
		fflush(stdout);
	}
	uffd = uffd_create(mem, size, o);
	handshake(path, o, mem, size, uffd);
	if (o->order != NULL) {
		printf("touched %llu pages\n",
		       (unsigned long long)touch_order(o->order, mem, size, o->regions));
		return 0;
	}
	printf("xxh3 %016llx\n", (unsigned long long)touch_sum(mem, size, o->regions,
							       o->touch ? o->touch * PAGE : total));
	fflush(stdout);
	if (o->balloon && (rc = balloon(mem, size, o)) != 0)
		return rc;
	rounds(mem, size, total, o);
	return 0;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: fc-client [--firecracker 1.7|1.11|1.12] [--hugepages] [--regions 1|2]\n"
	    "                 [--touch N | --touch-order FILE] [--balloon N] [--timeout S]\n"
	    "                 [--rounds R --write N]\n"
	    "                 [--bad-json | --no-fd | --wrong-size | --disconnect] SOCKET SIZE\n"
	    "       fc-client --sum [--touch N] FILE\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
	    {"sum", no_argument, NULL, 's'},
	    {"regions", required_argument, NULL, 'r'},
	    {"touch", required_argument, NULL, 't'},
	    {"touch-order", required_argument, NULL, 'o'},
	    {"timeout", required_argument, NULL, 'T'},
	    {"bad-json", no_argument, NULL, 'J'},
	    {"no-fd", no_argument, NULL, 'F'},
	    {"wrong-size", no_argument, NULL, 'W'},
	    {"disconnect", no_argument, NULL, 'D'},
	    {"firecracker", required_argument, NULL, 'f'},
	    {"hugepages", no_argument, NULL, 'H'},
	    {"balloon", required_argument, NULL, 'b'},
	    {"rounds", required_argument, NULL, 'R'},
	    {"write", required_argument, NULL, 'w'},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			o->sum = "";
			break;
		case 'r':
			o->regions = (unsigned)atoi(optarg);
			break;
		case 't':
			o->touch = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			o->order = optarg;
			break;
		case 'T':
			o->timeout = (unsigned)atoi(optarg);
			break;
		case 'J':
			o->bad = BAD_JSON;
			break;
		case 'F':
			o->bad = BAD_NO_FD;
			break;
		case 'W':
			o->bad = BAD_SIZE;
			break;
		case 'D':
			o->bad = BAD_DISCONNECT;
			break;
		case 'f':
			if (strcmp(optarg, "1.7") == 0 || strcmp(optarg, "1.11") == 0)
				o->fc = FC_1_7;
			else if (strcmp(optarg, "1.12") == 0)
				o->fc = FC_1_12;
			else
				usage();
			break;
		case 'H':
			o->page = HUGE_PAGE;
			break;
		case 'b':
			o->balloon = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			o->rounds = (unsigned)atoi(optarg);
			break;
		case 'w':
			o->write = strtoull(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (o->regions != 1 && o->regions != 2)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = {.regions = 1, .timeout = 30, .fc = FC_1_12, .page = PAGE};
	uint64_t size;

	parse(argc, argv, &o);
	if (o.sum != NULL) {
		if (optind + 1 != argc)
			usage();
		return sum_file(argv[optind], o.touch ? o.touch * PAGE : UINT64_MAX);
	}
	if (optind + 2 != argc)
		usage();
	size = strtoull(argv[optind + 1], NULL, 0);
	if (size == 0 || size % (o.page * o.regions) != 0 || (o.touch && o.touch * PAGE > size)) {
		fprintf(stderr, "fc-client: SIZE must be a positive multiple of %llu\n",
			(unsigned long long)(o.page * o.regions));
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(o.timeout);
	return restore(argv[optind], size, &o);
}

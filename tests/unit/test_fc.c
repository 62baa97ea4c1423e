/*
 * tests/unit/test_fc.c - Firecracker's UFFD handshake: the parser and the receive over a
 * socketpair.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "tests/unit/unit.h"

#include "snapshot/fc.h"

#define MiB (UINT64_C(1) << 20)

static const char good[] = "[{\"base_host_virt_addr\":1048576,\"size\":8192,\"offset\":0,"
			   "\"page_size\":4096,\"page_size_kib\":4096}]";

/*
 * What Firecracker sends, byte for byte: serde_json's compact form of
 * GuestRegionUffdMapping (src/vmm/src/persist.rs), for a 4 GiB x86_64 guest
 * (3 GiB below the MMIO gap, 1 GiB above). From 1.12 on: page_size and
 * page_size_kib, both in bytes; 1.7 to 1.11: page_size_kib only, in bytes.
 */
static const char fc_1_12_4k[] =
    "[{\"base_host_virt_addr\":139888158572544,\"size\":3221225472,\"offset\":0,"
    "\"page_size\":4096,\"page_size_kib\":4096},{\"base_host_virt_addr\":139891379798016,"
    "\"size\":1073741824,\"offset\":3221225472,\"page_size\":4096,\"page_size_kib\":4096}]";
static const char fc_1_12_2m[] =
    "[{\"base_host_virt_addr\":139888158572544,\"size\":3221225472,\"offset\":0,"
    "\"page_size\":2097152,\"page_size_kib\":2097152},{\"base_host_virt_addr\":"
    "139891379798016,\"size\":1073741824,\"offset\":3221225472,\"page_size\":2097152,"
    "\"page_size_kib\":2097152}]";
static const char fc_1_7_4k[] =
    "[{\"base_host_virt_addr\":139888158572544,\"size\":3221225472,\"offset\":0,"
    "\"page_size_kib\":4096},{\"base_host_virt_addr\":139891379798016,\"size\":1073741824,"
    "\"offset\":3221225472,\"page_size_kib\":4096}]";
static const char fc_1_7_2m[] =
    "[{\"base_host_virt_addr\":139888158572544,\"size\":3221225472,\"offset\":0,"
    "\"page_size_kib\":2097152},{\"base_host_virt_addr\":139891379798016,\"size\":1073741824,"
    "\"offset\":3221225472,\"page_size_kib\":2097152}]";

static int parse(const char *msg, struct fc_mappings *m, char *err)
{
	memset(m, 0xa5, sizeof(*m));
	return fc_parse(msg, strlen(msg), m, err, FC_ERR_MAX);
}

/* msg is refused with code and an error message containing what. */
static void refused(const char *msg, int code, const char *what)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX] = "";
	int rc = parse(msg, &m, err);

	CU_ASSERT_EQUAL(rc, code);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, what));
	if (rc != code || strstr(err, what) == NULL)
		fprintf(stderr, "\n  %s -> %d \"%s\" (want %d \"%s\")\n", msg, rc, err, code, what);
}

static void test_valid(void)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX] = "";

	/* Every released Firecracker's message, 4 KiB and 2 MiB pages. */
	const struct {
		const char *msg;
		uint64_t page;
	} fc[] = {
	    {fc_1_12_4k, 4096}, {fc_1_12_2m, 2 * MiB}, {fc_1_7_4k, 4096}, {fc_1_7_2m, 2 * MiB}};
	size_t i;

	for (i = 0; i < sizeof(fc) / sizeof(fc[0]); i++) {
		CU_ASSERT_EQUAL(parse(fc[i].msg, &m, err), 0);
		if (err[0] != '\0')
			fprintf(stderr, "\n  %s: %s\n", fc[i].msg, err);
		CU_ASSERT_EQUAL(m.n, 2);
		CU_ASSERT_EQUAL(m.page_size, fc[i].page);
		CU_ASSERT_EQUAL(m.r[0].base, UINT64_C(139888158572544));
		CU_ASSERT_EQUAL(m.r[0].size, 3072 * MiB);
		CU_ASSERT_EQUAL(m.r[1].base, UINT64_C(139891379798016));
		CU_ASSERT_EQUAL(m.r[1].size, 1024 * MiB);
		CU_ASSERT_EQUAL(m.r[1].offset, 3072 * MiB);
		CU_ASSERT_EQUAL(fc_validate(&m, 4096 * MiB, err, sizeof(err)), 0);
	}
	CU_ASSERT_EQUAL(strlen(fc_1_12_4k), 224); /* as serde_json writes it */

	/* page_size_kib only, huge pages; whitespace, key order, unknown keys. */
	CU_ASSERT_EQUAL(parse(" \n[ {\t\"offset\" : 0 , \"page_size_kib\":2097152,"
			      "\"future\":{\"a\":[1,-2.5e+3,true,false,null,\"x\\\"\\u00e9\"]},"
			      "\"size\":4194304, \"base_host_virt_addr\": 1073741824 } ]\r\n",
			      &m, err),
			0);
	CU_ASSERT_EQUAL(m.n, 1);
	CU_ASSERT_EQUAL(m.page_size, 2 * MiB);
	CU_ASSERT_EQUAL(m.r[0].base, UINT64_C(1073741824));
	CU_ASSERT_EQUAL(m.r[0].size, 4 * MiB);

	/* Oldest: no page size at all means 4 KiB. */
	CU_ASSERT_EQUAL(
	    parse("[{\"base_host_virt_addr\":4096,\"size\":8192,\"offset\":0}]", &m, err), 0);
	CU_ASSERT_EQUAL(m.r[0].page_size, 4096);
	CU_ASSERT_EQUAL(fc_validate(&m, 8192, err, sizeof(err)), 0);
}

static void test_refused_syntax(void)
{
	refused("", -EINVAL, "truncated");
	refused("{}", -EINVAL, "expected '['");
	refused("[]", -EINVAL, "no regions");
	refused("[{}]", -EINVAL, "empty object");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0}", -EINVAL, "truncated");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0", -EINVAL, "truncated");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offs", -EINVAL, "truncated");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"x\":tru", -EINVAL,
		"truncated");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0}]x", -EINVAL,
		"data after");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0},]", -EINVAL,
		"invalid JSON");
	refused("[{\"base_host_virt_addr\":4096 \"size\":4096,\"offset\":0}]", -EINVAL,
		"expected ',' or '}'");
	refused("[{'size':4096}]", -EINVAL, "expected a string");
	refused("[{\"size\":-4096,\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"non-negative");
	refused("[{\"size\":4096.0,\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"fraction");
	refused("[{\"size\":4e3,\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"fraction or exponent");
	refused("[{\"size\":04096,\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"leading zero");
	refused("[{\"size\":\"4096\",\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"non-negative");
	refused("[{\"size\":18446744073709551616,\"base_host_virt_addr\":4096,\"offset\":0}]",
		-EINVAL, "out of range");
	refused("[{\"size\":99999999999999999999999,\"base_host_virt_addr\":4096,\"offset\":0}]",
		-EINVAL, "out of range");
	refused("[{\"size\":4096,\"size\":4096,\"base_host_virt_addr\":4096,\"offset\":0}]",
		-EINVAL, "duplicate key size");
	refused("[{\"size\":4096,\"offset\":0}]", -EINVAL, "missing base_host_virt_addr");
	refused("[{\"s\\u0069ze\":4096,\"base_host_virt_addr\":4096,\"offset\":0}]", -EINVAL,
		"missing size");
	refused("[{\"x\":\"a\nb\",\"size\":4096,\"base_host_virt_addr\":4096,\"offset\":0}]",
		-EINVAL, "control character");
	refused("[{\"x\":\"\\q\",\"size\":4096,\"base_host_virt_addr\":4096,\"offset\":0}]",
		-EINVAL, "bad escape");
	refused("[{\"x\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]],\"size\":4096}]", -EINVAL,
		"nested too deeply");
	refused("[{\"x\":01,\"size\":4096}]", -EINVAL, "expected ',' or '}'");
}

static void test_refused_values(void)
{
	refused("[{\"base_host_virt_addr\":4097,\"size\":4096,\"offset\":0}]", -EINVAL,
		"not aligned");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4095,\"offset\":0}]", -EINVAL,
		"not aligned");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":512}]", -EINVAL,
		"not aligned");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"page_size_kib\":4096,"
		"\"page_size\":2097152}]",
		-EINVAL, "disagree");
	/* A KiB reading of the field, which no Firecracker sends. */
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"page_size_kib\":4}]",
		-EINVAL, "page size 4 bytes not a power of two");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"page_size\":4096,"
		"\"page_size_kib\":4}]",
		-EINVAL, "disagree");
	refused("[{\"base_host_virt_addr\":2097152,\"size\":2097152,\"offset\":0,\"page_size\":"
		"12288}]",
		-EINVAL, "power of two");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"page_size\":2048}]",
		-EINVAL, "power of two");
	refused("[{\"base_host_virt_addr\":4096,\"size\":4096,\"offset\":0,\"page_size_kib\":"
		"18014398509481984}]",
		-EINVAL, "not a power of two in [4 KiB, 1 GiB]");
	refused("[{\"base_host_virt_addr\":4096,\"size\":0,\"offset\":0}]", -EINVAL, "size 0");
	refused("[{\"base_host_virt_addr\":18446744073709547520,\"size\":8192,\"offset\":0}]",
		-EINVAL, "invalid");
	refused("[{\"base_host_virt_addr\":4096,\"size\":8192,\"offset\":18446744073709547520}]",
		-EINVAL, "overflows");
	refused("[{\"base_host_virt_addr\":4096,\"size\":8192,\"offset\":0},"
		"{\"base_host_virt_addr\":8192,\"size\":4096,\"offset\":8192}]",
		-EINVAL, "overlap in guest memory");
	refused("[{\"base_host_virt_addr\":4096,\"size\":8192,\"offset\":0},"
		"{\"base_host_virt_addr\":65536,\"size\":4096,\"offset\":4096}]",
		-EINVAL, "overlap in the memory image");
	refused("[{\"base_host_virt_addr\":2097152,\"size\":2097152,\"offset\":0,\"page_size\":"
		"2097152},{\"base_host_virt_addr\":8388608,\"size\":4096,\"offset\":2097152}]",
		-EINVAL, "differs");
}

/* n regions of one page each, back to back. */
static char *regions(unsigned n)
{
	size_t cap = 80 * (size_t)n + 16, len = 0;
	char *s = malloc(cap);
	unsigned i;

	CU_ASSERT_FATAL(s != NULL);
	s[len++] = '[';
	for (i = 0; i < n; i++)
		len +=
		    (size_t)snprintf(s + len, cap - len,
				     "%s{\"base_host_virt_addr\":%u,\"size\":4096,\"offset\":%u}",
				     i ? "," : "", (i + 1) * 4096, i * 4096);
	s[len++] = ']';
	s[len] = '\0';
	return s;
}

static void test_limits(void)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX] = "";
	char *s, *big;

	s = regions(FC_REGIONS_MAX);
	CU_ASSERT_EQUAL(parse(s, &m, err), 0);
	CU_ASSERT_EQUAL(m.n, FC_REGIONS_MAX);
	CU_ASSERT_EQUAL(fc_validate(&m, FC_REGIONS_MAX * 4096, err, sizeof(err)), 0);
	free(s);
	s = regions(FC_REGIONS_MAX + 1);
	refused(s, -E2BIG, "more than 64 regions");
	free(s);

	/* Long but valid JSON, just over the cap. */
	big = malloc(FC_MSG_MAX + 2);
	CU_ASSERT_FATAL(big != NULL);
	memset(big, ' ', FC_MSG_MAX + 1);
	memcpy(big, good, strlen(good));
	big[FC_MSG_MAX + 1] = '\0';
	refused(big, -EMSGSIZE, "longer than");
	free(big);
}

static void test_validate(void)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX] = "";

	CU_ASSERT_EQUAL(parse("[{\"base_host_virt_addr\":4096,\"size\":8192,\"offset\":0},"
			      "{\"base_host_virt_addr\":65536,\"size\":4096,\"offset\":8192}]",
			      &m, err),
			0);
	CU_ASSERT_EQUAL(fc_validate(&m, 12288, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(fc_validate(&m, 16384, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hold 12288 bytes, the image 16384"));
	CU_ASSERT_EQUAL(fc_validate(&m, 8192, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "outside the 8192-byte image"));
	CU_ASSERT_EQUAL(fc_validate(&m, 0, err, sizeof(err)), -EINVAL);
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

/* Send msg with the fds on sock, like Firecracker's send_with_fd. */
static void send_fds(int sock, const char *msg, size_t len, const int *fds, int nfd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh;
	struct cmsghdr *c;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfd > 0) {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfd * sizeof(int));
	}
	CU_ASSERT_EQUAL(sendmsg(sock, &mh, 0), (ssize_t)len);
}

static int new_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		fd = open("/dev/userfaultfd",
			  O_RDWR | O_CLOEXEC); /* then the ioctl route is needed */
	CU_ASSERT_FATAL(fd >= 0);
	return fd;
}

/* Handshake of msg with nfd fds (the first a userfaultfd): its result, its error in err. */
static int handshake(const char *msg, size_t len, int nfd, bool close_after, char *err,
		     struct fc_mappings *m, int *uffd)
{
	int sv[2], fds[3], i, rc;
	pid_t pid = 0;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	fds[0] = new_uffd();
	fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[2] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	send_fds(sv[1], msg, len, fds, nfd);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	if (close_after)
		close(sv[1]);
	*uffd = -1;
	rc = fc_receive(sv[0], 200, m, uffd, &pid, err, FC_ERR_MAX);
	if (rc == 0)
		CU_ASSERT_EQUAL(pid, getpid());
	close(sv[0]);
	if (!close_after)
		close(sv[1]);
	return rc;
}

static void test_handshake(void)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX];
	int before = count_fds(), uffd, rc;

	rc = handshake(good, strlen(good), 1, false, err, &m, &uffd);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(uffd >= 0);
	CU_ASSERT_EQUAL(m.n, 1);
	CU_ASSERT_EQUAL(m.r[0].base, MiB);
	CU_ASSERT_EQUAL(count_fds(), before + 1);
	close(uffd);

	/* Firecracker closes its end right after sending: still complete. */
	CU_ASSERT_EQUAL(handshake(good, strlen(good), 1, true, err, &m, &uffd), 0);
	close(uffd);

	CU_ASSERT_EQUAL(handshake(good, strlen(good), 0, false, err, &m, &uffd), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no userfaultfd"));
	CU_ASSERT_EQUAL(uffd, -1);

	CU_ASSERT_EQUAL(handshake(good, strlen(good), 3, false, err, &m, &uffd), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 file descriptors more"));

	/* Half a message, then silence: a timeout; then the peer gone: truncated. */
	CU_ASSERT_EQUAL(handshake(good, 20, 1, false, err, &m, &uffd), -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "within 200 ms (20 bytes so far)"));
	CU_ASSERT_EQUAL(handshake(good, 20, 1, true, err, &m, &uffd), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "peer closed after 20 bytes"));
	CU_ASSERT_EQUAL(handshake("", 0, 0, true, err, &m, &uffd), -ECONNRESET);

	CU_ASSERT_EQUAL(handshake("[1]", 3, 1, false, err, &m, &uffd), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected a region object"));

	/* An fd that is no userfaultfd. */
	{
		int sv[2], null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		pid_t pid;

		CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
		send_fds(sv[1], good, strlen(good), &null, 1);
		close(null);
		CU_ASSERT_EQUAL(fc_receive(sv[0], 200, &m, &uffd, &pid, err, sizeof(err)), -EPROTO);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a userfaultfd"));
		close(sv[0]);
		close(sv[1]);
	}
	CU_ASSERT_EQUAL(count_fds(), before);
}

/* The message arriving in pieces, the fd with the first one. */
/* The pid a pidfd names (its fdinfo's Pid: line), or -1. */
static pid_t pidfd_pid(int fd)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Pid:", 4) == 0)
			pid = (pid_t)atoi(line + 4);
	if (f != NULL)
		fclose(f);
	return pid;
}

static void test_handshake_pieces(void)
{
	struct fc_handshake *h = malloc(sizeof(*h));
	struct fc_mappings m;
	char err[FC_ERR_MAX];
	size_t len = strlen(good), at;
	int sv[2], fd = new_uffd(), before;

	CU_ASSERT_FATAL(h != NULL);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	before = count_fds();
	fc_handshake_init(h);
	for (at = 0; at < len; at += 7) {
		size_t n = len - at < 7 ? len - at : 7;

		send_fds(sv[1], good + at, n, &fd, at == 0 ? 1 : 0);
		if (at + n < len)
			CU_ASSERT_EQUAL(fc_handshake_recv(h, sv[0], &m, err, sizeof(err)), -EAGAIN);
	}
	CU_ASSERT_EQUAL(fc_handshake_recv(h, sv[0], &m, err, sizeof(err)), 0);
	CU_ASSERT(h->uffd >= 0);
	CU_ASSERT_EQUAL(m.r[0].size, 8192);
	/* The peer's pidfd names the process that connected: this one. */
	CU_ASSERT_EQUAL(h->peer_pid, getpid());
	CU_ASSERT(h->peer_pidfd >= 0);
	CU_ASSERT_EQUAL(pidfd_pid(h->peer_pidfd), getpid());
	CU_ASSERT_EQUAL(count_fds(), before + 2);
	fc_handshake_clear(h);
	CU_ASSERT_EQUAL(count_fds(), before);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	free(h);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"valid messages", test_valid},
	    {"refused: syntax", test_refused_syntax},
	    {"refused: values", test_refused_values},
	    {"limits", test_limits},
	    {"validate against the image", test_validate},
	    {"handshake over a socketpair", test_handshake},
	    {"handshake in pieces", test_handshake_pieces},
	    {NULL, NULL},
	};

	return unit_run("fc", tests);
}

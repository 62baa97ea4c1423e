/*
 * snapshot/fc.c - Firecracker's UFFD handshake.
 *
 * When Firecracker restores a snapshot with the Uffd memory backend it maps
 * guest memory anonymously, registers it with a userfaultfd (UFFDIO_API
 * done, EVENT_REMOVE requested, MISSING mode), connects to the page
 * server's unix socket and sends one message (GuestRegionUffdMapping and
 * send_uffd_handshake() in its src/vmm/src/persist.rs): serde_json's
 * compact array of an object per guest region, in this key order,
 *
 *	[{"base_host_virt_addr":139888158572544,"size":3221225472,"offset":0,
 *	  "page_size":4096,"page_size_kib":4096},...]
 *
 * with the userfaultfd attached as SCM_RIGHTS to the same sendmsg. Nothing
 * else is said on the socket, and there is no length prefix: the message
 * ends where the array closes (from 1.12 the socket then stays open). Both
 * page-size fields hold bytes (2097152 for 2 MiB hugetlbfs pages):
 * page_size_kib is misnamed upstream, and the only one that 1.7 to 1.11
 * send; 1.12 added page_size and deprecated page_size_kib. Versions before
 * 1.7 send neither (the page is then the base page, 4 KiB); keys we do not
 * know are skipped.
 *
 * The peer is a VMM we do not trust more than any client, so the parser is
 * strict and bounded: at most FC_MSG_MAX bytes and FC_REGIONS_MAX regions,
 * nesting of skipped values at most JSON_DEPTH_MAX, integers only where we
 * want integers (no sign, fraction, exponent or leading zero, no overflow),
 * every known key at most once, trailing whitespace only. A region is
 * page-aligned in address, size and offset, does not wrap, and overlaps no
 * other region, in the VMM's address space or in the image. Every region
 * has the same page size, since the page server and the recorded working
 * set count pages of one size.
 *
 * Names in keys are compared as sent: an escaped spelling of a known key
 * counts as unknown, which then fails as a missing key, never silently.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "snapshot/fc.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

#define JSON_DEPTH_MAX 16
#define FC_PAGE_MIN 4096
#define FC_PAGE_MAX (UINT64_C(1) << 30)
#define FC_FDS_MAX 8 /* room for fds we did not ask for, so we can close them */

struct json {
	const char *start, *p, *end;
	bool truncated; /* the input ended inside the value */
	char *err;
	size_t errlen;
};

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int json_fail(struct json *j, const char *what)
{
	if (j->p >= j->end) {
		j->truncated = true;
		return fail(j->err, j->errlen, -EINVAL, "truncated message (%zu bytes): %s",
			    (size_t)(j->end - j->start), what);
	}
	return fail(j->err, j->errlen, -EINVAL, "invalid JSON at byte %zu: %s",
		    (size_t)(j->p - j->start), what);
}

static void json_ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Consume c (after whitespace), or fail. */
static int json_expect(struct json *j, char c, const char *what)
{
	json_ws(j);
	if (j->p >= j->end || *j->p != c)
		return json_fail(j, what);
	j->p++;
	return 0;
}

static bool json_peek(struct json *j, char c)
{
	json_ws(j);
	return j->p < j->end && *j->p == c;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string; its raw bytes between the quotes in *ret_s, *ret_len. */
static int json_string(struct json *j, const char **ret_s, size_t *ret_len)
{
	const char *s;
	int i;

	if (json_expect(j, '"', "expected a string") < 0)
		return -EINVAL;
	s = j->p;
	for (;;) {
		if (j->p >= j->end)
			return json_fail(j, "unterminated string");
		if (*j->p == '"')
			break;
		if ((unsigned char)*j->p < 0x20)
			return json_fail(j, "control character in string");
		if (*j->p++ != '\\')
			continue;
		if (j->p >= j->end)
			return json_fail(j, "unterminated string");
		if (strchr("\"\\/bfnrt", *j->p) != NULL && *j->p != '\0') {
			j->p++;
			continue;
		}
		if (*j->p++ != 'u')
			return json_fail(j, "bad escape in string");
		for (i = 0; i < 4; i++, j->p++)
			if (j->p >= j->end || !is_hex(*j->p))
				return json_fail(j, "bad \\u escape in string");
	}
	*ret_s = s;
	*ret_len = (size_t)(j->p - s);
	j->p++;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Any JSON number, skipped. */
static int json_skip_number(struct json *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || !is_digit(*j->p))
		return json_fail(j, "bad number");
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && is_digit(*j->p))
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || !is_digit(*j->p))
			return json_fail(j, "bad number");
		while (j->p < j->end && is_digit(*j->p))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || !is_digit(*j->p))
			return json_fail(j, "bad number");
		while (j->p < j->end && is_digit(*j->p))
			j->p++;
	}
	/* A number at the very end of the input may have been cut short. */
	if (j->p >= j->end)
		return json_fail(j, "number at end of input");
	return 0;
}

/* A non-negative integer that fits in 64 bits. */
static int json_u64(struct json *j, uint64_t *ret)
{
	const char *s;
	uint64_t v = 0;

	json_ws(j);
	s = j->p;
	if (j->p >= j->end)
		return json_fail(j, "expected an integer");
	if (!is_digit(*j->p))
		return json_fail(j, "expected a non-negative integer");
	if (*j->p == '0' && j->p + 1 < j->end && is_digit(j->p[1]))
		return json_fail(j, "leading zero in integer");
	while (j->p < j->end && is_digit(*j->p)) {
		unsigned d = (unsigned)(*j->p - '0');

		if (v > (UINT64_MAX - d) / 10) {
			j->p = s;
			return json_fail(j, "integer out of range");
		}
		v = v * 10 + d;
		j->p++;
	}
	if (j->p >= j->end)
		return json_fail(j, "integer at end of input");
	if (*j->p == '.' || *j->p == 'e' || *j->p == 'E')
		return json_fail(j, "expected an integer, not a fraction or exponent");
	*ret = v;
	return 0;
}

static int json_skip_value(struct json *j, int depth);

static int json_skip_literal(struct json *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n) {
		if (memcmp(j->p, lit, (size_t)(j->end - j->p)) == 0)
			j->p = j->end;
		return json_fail(j, "bad literal");
	}
	if (memcmp(j->p, lit, n) != 0)
		return json_fail(j, "unexpected character");
	j->p += n;
	return 0;
}

/* An object or array we do not interpret, after its opening bracket. */
static int json_skip_container(struct json *j, char close, int depth)
{
	const char *s;
	size_t len;

	if (depth > JSON_DEPTH_MAX)
		return json_fail(j, "nested too deeply");
	if (json_peek(j, close)) {
		j->p++;
		return 0;
	}
	for (;;) {
		if (close == '}' &&
		    (json_string(j, &s, &len) < 0 || json_expect(j, ':', "expected ':'") < 0))
			return -EINVAL;
		if (json_skip_value(j, depth) < 0)
			return -EINVAL;
		if (json_peek(j, ',')) {
			j->p++;
			continue;
		}
		return json_expect(j, close,
				   close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int json_skip_value(struct json *j, int depth)
{
	const char *s;
	size_t len;

	json_ws(j);
	if (j->p >= j->end)
		return json_fail(j, "expected a value");
	switch (*j->p) {
	case '"':
		return json_string(j, &s, &len);
	case '{':
		j->p++;
		return json_skip_container(j, '}', depth + 1);
	case '[':
		j->p++;
		return json_skip_container(j, ']', depth + 1);
	case 't':
		return json_skip_literal(j, "true");
	case 'f':
		return json_skip_literal(j, "false");
	case 'n':
		return json_skip_literal(j, "null");
	default:
		return json_skip_number(j);
	}
}

enum { K_BASE, K_SIZE, K_OFFSET, K_PAGE, K_PAGE_KIB, K_COUNT };
static const char *const fc_keys[K_COUNT] = {
    "base_host_virt_addr", "size", "offset", "page_size", "page_size_kib",
};

static int fc_key(const char *s, size_t len)
{
	int k;

	for (k = 0; k < K_COUNT; k++)
		if (strlen(fc_keys[k]) == len && memcmp(fc_keys[k], s, len) == 0)
			return k;
	return -1;
}

/* One region object into r; idx numbers it in errors. */
static int fc_parse_region(struct json *j, unsigned idx, struct fc_region *r)
{
	uint64_t v[K_COUNT];
	bool seen[K_COUNT] = {false};
	const char *s;
	size_t len;
	int k;

	if (json_expect(j, '{', "expected a region object") < 0)
		return -EINVAL;
	if (json_peek(j, '}'))
		return fail(j->err, j->errlen, -EINVAL, "region %u: empty object", idx);
	for (;;) {
		if (json_string(j, &s, &len) < 0 || json_expect(j, ':', "expected ':'") < 0)
			return -EINVAL;
		k = fc_key(s, len);
		if (k < 0) {
			if (json_skip_value(j, 1) < 0)
				return -EINVAL;
		} else {
			if (seen[k])
				return fail(j->err, j->errlen, -EINVAL,
					    "region %u: duplicate key %s", idx, fc_keys[k]);
			if (json_u64(j, &v[k]) < 0)
				return -EINVAL;
			seen[k] = true;
		}
		if (json_peek(j, ',')) {
			j->p++;
			continue;
		}
		if (json_expect(j, '}', "expected ',' or '}'") < 0)
			return -EINVAL;
		break;
	}
	for (k = K_BASE; k <= K_OFFSET; k++)
		if (!seen[k])
			return fail(j->err, j->errlen, -EINVAL, "region %u: missing %s", idx,
				    fc_keys[k]);
	r->base = v[K_BASE];
	r->size = v[K_SIZE];
	r->offset = v[K_OFFSET];
	/* Both in bytes, as Firecracker fills them (page_size_kib's name notwithstanding). */
	r->page_size = seen[K_PAGE] ? v[K_PAGE] : seen[K_PAGE_KIB] ? v[K_PAGE_KIB] : FC_PAGE_MIN;
	if (seen[K_PAGE] && seen[K_PAGE_KIB] && v[K_PAGE] != v[K_PAGE_KIB])
		return fail(j->err, j->errlen, -EINVAL,
			    "region %u: page_size %llu and page_size_kib %llu disagree (both are "
			    "bytes)",
			    idx, (unsigned long long)v[K_PAGE], (unsigned long long)v[K_PAGE_KIB]);
	return 0;
}

/* Alignment and wrap-around of one region. */
static int fc_check_region(const struct fc_region *r, unsigned idx, char *err, size_t errlen)
{
	uint64_t ps = r->page_size;

	if (ps < FC_PAGE_MIN || ps > FC_PAGE_MAX || (ps & (ps - 1)) != 0)
		return fail(err, errlen, -EINVAL,
			    "region %u: page size %llu bytes not a power of two in [4 KiB, 1 GiB]",
			    idx, (unsigned long long)ps);
	if (r->size == 0)
		return fail(err, errlen, -EINVAL, "region %u: size 0", idx);
	if ((r->base | r->size | r->offset) & (ps - 1))
		return fail(err, errlen, -EINVAL,
			    "region %u: base 0x%llx, size %llu or offset %llu not aligned to "
			    "%llu-byte pages",
			    idx, (unsigned long long)r->base, (unsigned long long)r->size,
			    (unsigned long long)r->offset, (unsigned long long)ps);
	if (r->base + r->size < r->base || r->base == 0)
		return fail(err, errlen, -EINVAL, "region %u: address range 0x%llx+%llu invalid",
			    idx, (unsigned long long)r->base, (unsigned long long)r->size);
	if (r->offset + r->size < r->offset)
		return fail(err, errlen, -EINVAL, "region %u: offset %llu + size %llu overflows",
			    idx, (unsigned long long)r->offset, (unsigned long long)r->size);
	return 0;
}

/* [a, a+alen) and [b, b+blen) share a byte; neither wraps. */
static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* No two regions overlap in the VMM's address space or in the image. */
static int fc_check_overlap(const struct fc_mappings *m, char *err, size_t errlen)
{
	unsigned a, b;

	/* At most FC_REGIONS_MAX squared pairs: small enough not to sort. */
	for (a = 0; a < m->n; a++)
		for (b = a + 1; b < m->n; b++) {
			if (overlaps(m->r[a].base, m->r[a].size, m->r[b].base, m->r[b].size))
				return fail(err, errlen, -EINVAL,
					    "regions %u and %u overlap in guest memory", a, b);
			if (overlaps(m->r[a].offset, m->r[a].size, m->r[b].offset, m->r[b].size))
				return fail(err, errlen, -EINVAL,
					    "regions %u and %u overlap in the memory image", a, b);
		}
	return 0;
}

/* The grammar; j->truncated tells a short message from a bad one. */
static int fc_parse_json(struct json *j, struct fc_mappings *m)
{
	unsigned n = 0;
	int rc;

	if (j->end - j->start > FC_MSG_MAX)
		return fail(j->err, j->errlen, -EMSGSIZE, "message longer than %d bytes",
			    FC_MSG_MAX);
	if (json_expect(j, '[', "expected '[' (an array of regions)") < 0)
		return -EINVAL;
	if (json_peek(j, ']'))
		return fail(j->err, j->errlen, -EINVAL, "no regions in the handshake");
	for (;;) {
		if (n == FC_REGIONS_MAX)
			return fail(j->err, j->errlen, -E2BIG, "more than %d regions",
				    FC_REGIONS_MAX);
		rc = fc_parse_region(j, n, &m->r[n]);
		if (rc < 0)
			return rc;
		n++;
		if (json_peek(j, ',')) {
			j->p++;
			continue;
		}
		if (json_expect(j, ']', "expected ',' or ']'") < 0)
			return -EINVAL;
		break;
	}
	json_ws(j);
	if (j->p != j->end)
		return fail(j->err, j->errlen, -EINVAL, "data after the array at byte %zu",
			    (size_t)(j->p - j->start));
	m->n = n;
	return 0;
}

/* The checks after the syntax. */
static int fc_check(struct fc_mappings *m, char *err, size_t errlen)
{
	unsigned i;
	int rc;

	for (i = 0; i < m->n; i++) {
		rc = fc_check_region(&m->r[i], i, err, errlen);
		if (rc < 0)
			return rc;
		if (m->r[i].page_size != m->r[0].page_size)
			return fail(err, errlen, -EINVAL,
				    "region %u: page size %llu differs from region 0's %llu", i,
				    (unsigned long long)m->r[i].page_size,
				    (unsigned long long)m->r[0].page_size);
	}
	m->page_size = m->r[0].page_size;
	return fc_check_overlap(m, err, errlen);
}

/* Parse and check; *truncated says whether more input might complete it. */
static int fc_parse_partial(const char *msg, size_t len, struct fc_mappings *ret, bool *truncated,
			    char *err, size_t errlen)
{
	struct fc_mappings *m;
	struct json j = {msg, msg, msg + len, false, err, errlen};
	int rc;

	*truncated = false;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return fail(err, errlen, -ENOMEM, "out of memory");
	rc = fc_parse_json(&j, m);
	*truncated = j.truncated;
	if (rc == 0)
		rc = fc_check(m, err, errlen);
	if (rc == 0)
		*ret = *m;
	free(m);
	return rc;
}

/* Parse a handshake message (see fc.h). */
int fc_parse(const char *msg, size_t len, struct fc_mappings *ret, char *err, size_t errlen)
{
	bool truncated;

	if (msg == NULL || ret == NULL)
		return fail(err, errlen, -EINVAL, "no message");
	return fc_parse_partial(msg, len, ret, &truncated, err, errlen);
}

/* The regions tile the image exactly. */
int fc_validate(const struct fc_mappings *m, uint64_t image_size, char *err, size_t errlen)
{
	uint64_t total = 0;
	unsigned i;

	for (i = 0; i < m->n; i++) {
		const struct fc_region *r = &m->r[i];

		if (r->offset > image_size || r->size > image_size - r->offset)
			return fail(
			    err, errlen, -EINVAL,
			    "region %u (offset %llu, size %llu) outside the %llu-byte image", i,
			    (unsigned long long)r->offset, (unsigned long long)r->size,
			    (unsigned long long)image_size);
		total += r->size; /* no overflow: disjoint ranges inside the image */
	}
	if (total != image_size)
		return fail(err, errlen, -EINVAL, "guest regions hold %llu bytes, the image %llu",
			    (unsigned long long)total, (unsigned long long)image_size);
	return 0;
}

void fc_handshake_init(struct fc_handshake *h)
{
	h->len = 0;
	h->uffd = -1;
	h->peer_pid = 0;
	h->peer_pidfd = -1;
	h->buf[0] = '\0';
}

void fc_handshake_clear(struct fc_handshake *h)
{
	if (h->uffd >= 0)
		close(h->uffd);
	h->uffd = -1;
	if (h->peer_pidfd >= 0)
		close(h->peer_pidfd);
	h->peer_pidfd = -1;
}

/* The fd is a userfaultfd: its /proc link names the anon inode. */
static bool fc_is_uffd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[userfaultfd]") == 0;
}

/* Take the fds of one message: 0, or -EPROTO when there was more than one. */
static int fc_take_fds(struct fc_handshake *h, struct msghdr *mh, char *err, size_t errlen)
{
	struct cmsghdr *c;
	int extra = 0, rc = 0;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		size_t i, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (h->uffd < 0 && extra == 0) {
				h->uffd = fd;
				continue;
			}
			close(fd);
			extra++;
		}
	}
	if (extra > 0)
		rc = fail(err, errlen, -EPROTO, "%d file descriptors more than the one userfaultfd",
			  extra);
	if ((mh->msg_flags & MSG_CTRUNC) && rc == 0)
		rc = fail(err, errlen, -EPROTO, "too many file descriptors in the handshake");
	return rc;
}

/*
 * Who connected: its pid (SO_PEERCRED) and, from Linux 6.5, a pidfd of that
 * very process (SO_PEERPIDFD): a pidfd opened later from the pid could
 * name another process, had the VMM exited and its pid been reused since.
 */
static void fc_peer_pid(struct fc_handshake *h, int sock)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	int pidfd;

	if (h->peer_pid != 0 || getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0)
		return;
	h->peer_pid = uc.pid;
	len = sizeof(pidfd);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		h->peer_pidfd = pidfd;
}

/* Read a piece of the handshake (see fc.h). */
int fc_handshake_recv(struct fc_handshake *h, int sock, struct fc_mappings *ret_map, char *err,
		      size_t errlen)
{
	union {
		char buf[CMSG_SPACE(FC_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh;
	bool truncated;
	ssize_t n;
	int rc;

	fc_peer_pid(h, sock);
	memset(&mh, 0, sizeof(mh));
	/* One byte past the limit, so an oversized message is seen as such. */
	iov.iov_base = h->buf + h->len;
	iov.iov_len = FC_MSG_MAX + 1 - h->len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof(cbuf.buf);
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return -EAGAIN;
		return fail(err, errlen, -errno, "handshake: recvmsg: %s", strerror(errno));
	}
	rc = fc_take_fds(h, &mh, err, errlen);
	if (rc < 0)
		return rc;
	if (n == 0)
		return fail(err, errlen, h->len == 0 ? -ECONNRESET : -EINVAL,
			    h->len == 0 ? "peer closed without sending a handshake"
					: "truncated message: peer closed after %zu bytes",
			    h->len);
	h->len += (size_t)n;
	if (h->len > FC_MSG_MAX)
		return fail(err, errlen, -EMSGSIZE, "message longer than %d bytes", FC_MSG_MAX);
	h->buf[h->len] = '\0';
	rc = fc_parse_partial(h->buf, h->len, ret_map, &truncated, err, errlen);
	if (rc < 0)
		return truncated ? -EAGAIN : rc;
	if (h->uffd < 0)
		return fail(err, errlen, -EPROTO, "no userfaultfd passed with the handshake");
	if (!fc_is_uffd(h->uffd))
		return fail(err, errlen, -EPROTO,
			    "the file descriptor passed is not a userfaultfd");
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The whole handshake, waiting for it at most timeout_ms (see fc.h). */
int fc_receive(int sock, int timeout_ms, struct fc_mappings *ret_map, int *ret_uffd, pid_t *ret_pid,
	       char *err, size_t errlen)
{
	struct fc_handshake *h;
	int64_t deadline = now_ms() + timeout_ms;
	int rc;

	h = malloc(sizeof(*h));
	if (h == NULL)
		return fail(err, errlen, -ENOMEM, "out of memory");
	fc_handshake_init(h);
	for (;;) {
		struct pollfd pfd = {sock, POLLIN, 0};
		int64_t left = deadline - now_ms();

		rc = fc_handshake_recv(h, sock, ret_map, err, errlen);
		if (rc != -EAGAIN)
			break;
		if (left <= 0) {
			rc = fail(err, errlen, -ETIMEDOUT,
				  "no complete handshake within %d ms (%zu bytes so far)",
				  timeout_ms, h->len);
			break;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			rc = fail(err, errlen, -errno, "handshake: poll: %s", strerror(errno));
			break;
		}
	}
	if (rc == 0) {
		*ret_uffd = h->uffd;
		h->uffd = -1;
		if (ret_pid != NULL)
			*ret_pid = h->peer_pid;
	}
	fc_handshake_clear(h);
	free(h);
	return rc;
}

/*
 * daemon/net/clientkey.c - who a client of a TCP or unix listener counts as,
 * for the bounds one client may not pass alone (per uid, per address).
 *
 * A client on this host counts as the uid that owns its socket: from
 * SO_PEERCRED on a unix socket, and for TCP from the kernel's table of
 * sockets (NETLINK_SOCK_DIAG, inet_diag), asked for the one socket whose
 * ends are this connection's ends swapped. Its address says nothing: any
 * local user may connect from any of 127.0.0.0/8, or from the host's own
 * addresses. Reading /proc/net/tcp instead would cost a pass over every
 * socket of the host per connection; the exact lookup costs one
 * request, which the kernel answers before sendmsg() returns, so it never
 * waits on anything but the kernel.
 *
 * A client elsewhere (the lookup finds no socket: it is not in this network
 * namespace) counts as its address; an IPv6 one as its /64, which is what
 * one host is usually given, an IPv4-mapped one as the IPv4 address.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/net/net.h"

#define CLIENTKEY_TCP_LISTEN 10 /* TCP_LISTEN of the kernel's tcp_states.h */

struct clientkey_ctx {
	int nl; /* NETLINK_SOCK_DIAG */
	uint32_t seq;
};

/*
 * Open the kernel table lookup; 0 or -ENOMEM. Without one (a sandbox that
 * refuses netlink), TCP clients on this host count by their address.
 */
int clientkey_open(struct clientkey_ctx **ret)
{
	struct clientkey_ctx *ck = calloc(1, sizeof(*ck));

	if (ck == NULL)
		return -ENOMEM;
	ck->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
	if (ck->nl < 0)
		log_warn("NETLINK_SOCK_DIAG: TCP clients on this host count by address, not uid");
	*ret = ck;
	return 0;
}

void clientkey_close(struct clientkey_ctx *ck)
{
	if (ck == NULL)
		return;
	if (ck->nl >= 0)
		close(ck->nl);
	free(ck);
}

/* An address and port in inet_diag's form (network order); false if not IP. */
static bool clientkey_diag_addr(const struct sockaddr_storage *sa, __be32 addr[4], __be16 *port)
{
	memset(addr, 0, 4 * sizeof(addr[0]));
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		addr[0] = in->sin_addr.s_addr;
		*port = in->sin_port;
		return true;
	}
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(addr, &in6->sin6_addr, 16);
		*port = in6->sin6_port;
		return true;
	}
	return false;
}

/* An IPv4-mapped IPv6 address as the IPv4 one, in place (what the kernel files it under). */
static void clientkey_unmap(struct sockaddr_storage *sa)
{
	struct sockaddr_in6 in6;
	struct sockaddr_in in;

	if (sa->ss_family != AF_INET6)
		return;
	memcpy(&in6, sa, sizeof(in6));
	if (!IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
		return;
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = in6.sin6_port;
	memcpy(&in.sin_addr, &in6.sin6_addr.s6_addr[12], 4);
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &in, sizeof(in)); /* a copy, not a store through another type */
}

/*
 * The uid owning the socket on this host whose local end is peer and whose
 * remote end is local: -ENOENT when there is none (the peer is elsewhere,
 * or gone).
 */
/*
 * NLMSG_OK() without its comparison of the header's unsigned length with
 * the signed bytes left, which clang's -Wsign-compare refuses.
 */
static bool clientkey_nlmsg_ok(const struct nlmsghdr *h, int len)
{
	return len >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
	       h->nlmsg_len <= (unsigned int)len;
}

static int clientkey_diag_uid(struct clientkey_ctx *ck, const struct sockaddr_storage *local,
			      const struct sockaddr_storage *peer, uint32_t *ret_uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} ans;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	const struct inet_diag_msg *m;
	struct nlmsghdr *h;
	ssize_t n;
	int tries, len;

	if (ck->nl < 0)
		return -ENOENT;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST; /* not a dump: the one socket of these ends */
	req.nlh.nlmsg_seq = ++ck->seq;
	req.r.sdiag_family = (uint8_t)peer->ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (!clientkey_diag_addr(peer, req.r.id.idiag_src, &req.r.id.idiag_sport) ||
	    !clientkey_diag_addr(local, req.r.id.idiag_dst, &req.r.id.idiag_dport))
		return -EAFNOSUPPORT;
	if (peer->ss_family == AF_INET6)
		req.r.id.idiag_if =
		    ((const struct sockaddr_in6 *)(const void *)peer)->sin6_scope_id;
	if (sendto(ck->nl, &req, sizeof(req), MSG_DONTWAIT, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		return -errno;
	/* The answer is queued before sendto() returns; older ones (none, normally) are skipped. */
	for (tries = 0; tries < 8; tries++) {
		n = recv(ck->nl, &ans, sizeof(ans), MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN ? -ENOENT : -errno;
		len = (int)n;
		for (h = &ans.nlh; clientkey_nlmsg_ok(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != ck->seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR)
				return -ENOENT;
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				return -EPROTO;
			m = NLMSG_DATA(h);
			/*
			 * A lookup that misses the connected socket may fall back on
			 * a listener of the client's port: only a connected socket
			 * of these ports is the client's. (Its addresses are not
			 * compared: an IPv6 socket connected to an IPv4 address
			 * answers with them v4-mapped.)
			 */
			if (m->idiag_state == CLIENTKEY_TCP_LISTEN ||
			    m->id.idiag_sport != req.r.id.idiag_sport ||
			    m->id.idiag_dport != req.r.id.idiag_dport)
				return -ENOENT;
			*ret_uid = m->idiag_uid;
			return 0;
		}
	}
	return -ENOENT;
}

/* The address key of a client elsewhere: IPv4 as v4-mapped, IPv6 as its /64. */
static void clientkey_addr(const struct sockaddr_storage *peer, struct clientkey *k)
{
	k->kind = CLIENTKEY_ADDR;
	memset(k->addr, 0, sizeof(k->addr));
	if (peer->ss_family == AF_INET) {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		memcpy(&k->addr[12], &((const struct sockaddr_in *)(const void *)peer)->sin_addr,
		       4);
	} else if (peer->ss_family == AF_INET6) {
		memcpy(k->addr, &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr, 8);
	}
}

/*
 * Who the client at the other end of connected socket fd counts as; 0, or
 * -errno when fd is not a connected socket (any more).
 */
int clientkey_of(struct clientkey_ctx *ck, int fd, struct clientkey *ret)
{
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local), plen = sizeof(peer);
	struct clientkey k = {0};
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	uint32_t uid;

	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
		return -errno;
	if (peer.ss_family == AF_UNIX) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
			return -errno;
		k.kind = CLIENTKEY_UID;
		k.uid = (uint32_t)cred.uid;
		*ret = k;
		return 0;
	}
	if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	clientkey_unmap(&local);
	clientkey_unmap(&peer);
	if (local.ss_family == peer.ss_family && clientkey_diag_uid(ck, &local, &peer, &uid) == 0) {
		k.kind = CLIENTKEY_UID;
		k.uid = uid;
	} else {
		clientkey_addr(&peer, &k);
	}
	*ret = k;
	return 0;
}

bool clientkey_eq(const struct clientkey *a, const struct clientkey *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == CLIENTKEY_UID)
		return a->uid == b->uid;
	return memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* The key as the log says it: "uid 65534", "10.0.0.7", "2001:db8::/64". */
const char *clientkey_str(const struct clientkey *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (k->kind == CLIENTKEY_UID)
		snprintf(buf, len, "uid %u", (unsigned)k->uid);
	else if (memcmp(k->addr, v4mapped, sizeof(v4mapped)) == 0)
		snprintf(buf, len, "%s", inet_ntop(AF_INET, &k->addr[12], a, sizeof(a)));
	else
		snprintf(buf, len, "%s/64", inet_ntop(AF_INET6, k->addr, a, sizeof(a)));
	return buf;
}

/*
 * fabric/link.c - the checked transport's context: the listener targets
 * are reached on, and what both ends of every link share (fabric.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "fabric/link_int.h"

#define LINK_ACCEPTS_PER_TURN 64
#define LINK_ACCEPT_PAUSE_MS 100 /* out of fds: the listener rests, the loop does not spin */

/*
 * A link socket's own options: no Nagle delay for requests and replies;
 * and a send buffer of its own size. The kernel's autotuning grows it to
 * megabytes, and a megabyte reply then leaves at once: over a veth bridge
 * and on loopback (2 CPUs) a burst that size queued, was dropped in part
 * and resent, and links moved 1 MiB reads at 2.5-3.3 GB/s; with 512 KiB
 * (which the kernel doubles) at 6.5-8.5 GB/s (doc/benchmarks.md).
 */
void link_sockopts(const struct fab_links *ls, int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ls->cfg.sndbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &ls->cfg.sndbuf, sizeof(ls->cfg.sndbuf));
}

/* Text of a socket address, "a.b.c.d:port" or "[v6]:port". */
void link_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof(host));
		else
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) ? "%s:%u" : "[%s]:%u",
			 host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

static void link_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct fab_links *ls = arg;

	(void)fd;
	(void)what;
	event_add(ls->accept_ev, NULL);
}

static void link_accept(evutil_socket_t fd, short what, void *arg)
{
	struct fab_links *ls = arg;
	struct sockaddr_storage ss;
	socklen_t sl;
	int cfd, i;

	(void)what;
	for (i = 0; i < LINK_ACCEPTS_PER_TURN; i++) {
		sl = sizeof(ss);
		cfd = accept4(fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				struct timeval tv = {0, LINK_ACCEPT_PAUSE_MS * 1000};

				ls->ops->refused(ls->arg, "the link listener", "cannot accept",
						 -errno);
				event_del(ls->accept_ev);
				evtimer_add(ls->accept_pause, &tv);
			}
			return;
		}
		link_serve_accept(ls, cfd, (struct sockaddr *)&ss);
	}
}

static void link_orphans_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	link_call_orphans(arg);
}

/* A listening socket on addr (NULL: every address) at a port of [lo, hi] (0, 0: any). */
static int link_listen(const char *addr, uint16_t lo, uint16_t hi, int *ret_fd, uint16_t *ret_port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	socklen_t sl;
	int fd, one = 1, zero = 0, rc = -EADDRINUSE;
	unsigned port;

	if (addr == NULL || inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		if (addr == NULL)
			in6->sin6_addr = in6addr_any;
		sl = sizeof(*in6);
	} else if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		sl = sizeof(*in);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && addr == NULL && errno == EAFNOSUPPORT) { /* no IPv6 here: IPv4 alone */
		memset(&ss, 0, sizeof(ss));
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		sl = sizeof(*in);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6 && addr == NULL)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	for (port = lo ? lo : 0; port <= (lo ? hi : 0u); port++) {
		if (ss.ss_family == AF_INET6)
			in6->sin6_port = htons((uint16_t)port);
		else
			in->sin_port = htons((uint16_t)port);
		if (bind(fd, (struct sockaddr *)&ss, sl) == 0) {
			rc = 0;
			break;
		}
		rc = -errno;
		if (rc != -EADDRINUSE)
			break;
	}
	if (rc == 0 && listen(fd, 128) < 0)
		rc = -errno;
	sl = sizeof(ss);
	if (rc == 0 && getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		rc = -errno;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? in6->sin6_port : in->sin_port);
	*ret_fd = fd;
	return 0;
}

int fab_links_create(struct event_base *base, const struct fab_links_config *cfg,
		     struct fab_links **ret_links)
{
	struct fab_links *ls = calloc(1, sizeof(*ls));
	int rc;

	if (ls == NULL)
		return -ENOMEM;
	ls->base = base;
	ls->cfg = *cfg;
	ls->cfg.bind = NULL; /* (not kept: the caller's string) */
	ls->ops = cfg->ops;
	ls->arg = cfg->arg;
	ls->lfd = -1;
	if (ls->cfg.handshake_ms == 0)
		ls->cfg.handshake_ms = 2000;
	if (ls->cfg.wait_ms == 0)
		ls->cfg.wait_ms = 2000;
	if (ls->cfg.stall_ms == 0)
		ls->cfg.stall_ms = 30000;
	if (ls->cfg.max_unauth == 0)
		ls->cfg.max_unauth = 64;
	if (ls->cfg.max_unauth_per_addr == 0)
		ls->cfg.max_unauth_per_addr = 8;
	if (ls->cfg.max_links == 0)
		ls->cfg.max_links = 1024;
	if (ls->cfg.slice == 0)
		ls->cfg.slice = 4u << 20;
	if (ls->cfg.sndbuf == 0)
		ls->cfg.sndbuf = LINK_SNDBUF;
	rc = link_listen(cfg->bind, cfg->port_lo, cfg->port_hi, &ls->lfd, &ls->port);
	if (rc < 0)
		goto out_free;
	ls->accept_ev = event_new(base, ls->lfd, EV_READ | EV_PERSIST, link_accept, ls);
	ls->accept_pause = evtimer_new(base, link_accept_resume, ls);
	ls->orphan_ev = event_new(base, -1, 0, link_orphans_cb, ls);
	if (ls->accept_ev == NULL || ls->accept_pause == NULL || ls->orphan_ev == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	event_add(ls->accept_ev, NULL);
	*ret_links = ls;
	return 0;
out_free:
	fab_links_destroy(ls);
	return rc;
}

void fab_links_destroy(struct fab_links *ls)
{
	if (ls == NULL)
		return;
	link_call_close_all(ls);
	link_call_drop_orphans(ls);
	link_serve_close_all(ls);
	if (ls->accept_ev != NULL)
		event_free(ls->accept_ev);
	if (ls->accept_pause != NULL)
		event_free(ls->accept_pause);
	if (ls->orphan_ev != NULL)
		event_free(ls->orphan_ev);
	if (ls->lfd >= 0)
		close(ls->lfd);
	free(ls);
}

uint16_t fab_links_port(const struct fab_links *ls)
{
	return ls->port;
}

void fab_links_set_self(struct fab_links *ls, const struct fab_link_peer *self)
{
	ls->cfg.self = *self;
}

void fab_links_kick(struct fab_links *ls)
{
	link_serve_kick(ls);
}

unsigned fab_links_drop_peer(struct fab_links *ls, uint32_t node)
{
	return link_serve_drop_peer(ls, node);
}

void fab_links_stats(const struct fab_links *ls, struct fab_link_stats *ret)
{
	*ret = ls->stats;
}

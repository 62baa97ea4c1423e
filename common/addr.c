/* common/addr.c - host:port addresses of peer links. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/common.h"

static int addr_split(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;
	char *end;
	long p;

	if (s[0] == '[') { /* [v6addr]:port */
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return -EINVAL;
		if ((size_t)(close - s - 1) >= hostlen)
			return -ENAMETOOLONG;
		snprintf(host, hostlen, "%.*s", (int)(close - s - 1), s + 1);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || colon == s)
			return -EINVAL;
		if ((size_t)(colon - s) >= hostlen)
			return -ENAMETOOLONG;
		snprintf(host, hostlen, "%.*s", (int)(colon - s), s);
	}
	p = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || p < 1 || p > 65535)
		return -EINVAL;
	snprintf(port, portlen, "%ld", p);
	return 0;
}

/* The host of host:port (without the brackets of an IPv6 address). */
int addr_host(const char *s, char *host, size_t len)
{
	char port[8];

	return addr_split(s, host, len, port, sizeof(port));
}

/* Check the syntax of host:port (the value of option name) without resolving it. */
int addr_check(const char *name, const char *s, char *errbuf, size_t errlen)
{
	char host[256], port[8];

	if (addr_split(s, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(errbuf, errlen, "%s: '%s' is not host:port (port 1-65535)", name, s);
		return -EINVAL;
	}
	return 0;
}

/* Whether host:port names only this host's loopback (127.0.0.0/8, ::1, localhost). */
bool addr_is_loopback(const char *s)
{
	char host[256], port[8];
	struct in_addr a4;

	if (addr_split(s, host, sizeof(host), port, sizeof(port)) < 0)
		return false;
	if (strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
		return true;
	return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

static int addr_resolve(const char *s, int flags, struct sockaddr_storage *ret_sa,
			unsigned *ret_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = flags}, *res;
	char host[256], port[8];
	int rc;

	rc = addr_split(s, host, sizeof(host), port, sizeof(port));
	if (rc < 0)
		return rc;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	memcpy(ret_sa, res->ai_addr, res->ai_addrlen);
	*ret_len = (unsigned)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Resolve host:port (IPv4 or IPv6, numeric or a name) into a socket address. */
int addr_parse(const char *s, struct sockaddr_storage *ret_sa, unsigned *ret_len)
{
	return addr_resolve(s, 0, ret_sa, ret_len);
}

/* Parse a numeric ip:port or [ip6]:port, as addr_format() writes it: never a lookup. */
int addr_parse_numeric(const char *s, struct sockaddr_storage *ret_sa, unsigned *ret_len)
{
	return addr_resolve(s, AI_NUMERICHOST | AI_NUMERICSERV, ret_sa, ret_len);
}

/* Format a socket address as host:port. */
void addr_format(const void *sa, char *buf, size_t len)
{
	const struct sockaddr *s = sa;
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (s->sa_family == AF_INET) {
		const struct sockaddr_in *in = sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

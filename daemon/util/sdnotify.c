/*
 * daemon/util/sdnotify.c - systemd's service notifications: READY=1 once poold
 * serves, STATUS= lines that say what it is, and WATCHDOG=1 from the event
 * loop, so that a loop that stops turning gets poold restarted.
 *
 * The protocol of sd_notify(3), written here rather than linked: one
 * datagram of "KEY=value" lines to the unix socket $NOTIFY_SOCKET names
 * (a path, or with '@' an abstract name). Without $NOTIFY_SOCKET (not
 * started by systemd as Type=notify) every call does nothing.
 *
 * The watchdog. With WatchdogSec= systemd sets $WATCHDOG_USEC; poold then
 * pings every half of it from a timer of its event loop, never from a
 * thread of its own: a ping says the loop turned. A loop held up past
 * WatchdogSec (a request that never yields, a blocking call) misses its
 * pings, and systemd kills and restarts poold and logs why.
 *
 * Ready. A coordinator is ready once its arenas are registered and it
 * serves; a standby candidate (coord.etcd) once it stands, a node once the
 * coordinator registered it (peer.c). Both environment variables are
 * removed once read: the nft that firewall.c runs must not notify for us.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/event.h>

#include "daemon/util/util.h"

#define SDNOTIFY_MSG_MAX 512

struct sdnotify {
	int fd;
	struct sockaddr_un addr;
	socklen_t addr_len;
	struct event *watchdog; /* every half of $WATCHDOG_USEC, or NULL */
	bool ready;		/* READY=1 was sent */
};

/* Send one message (lines of KEY=value); a failure only logs: systemd goes on without it. */
static void sdnotify_send(struct sdnotify *n, const char *msg)
{
	if (sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&n->addr,
		   n->addr_len) < 0 &&
	    errno != EAGAIN)
		log_warn("notify socket: sending \"%.40s\"", msg);
}

static void sdnotify_ping(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sdnotify_send(arg, "WATCHDOG=1");
}

/* $WATCHDOG_USEC, when it is meant for this process: 0 without. */
static uint64_t sdnotify_watchdog_us(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long us;

	if (usec == NULL)
		return 0;
	if (pid != NULL && strtoll(pid, NULL, 10) != (long long)getpid())
		return 0;
	errno = 0;
	us = strtoull(usec, &end, 10);
	return errno != 0 || *end != '\0' ? 0 : (uint64_t)us;
}

int sdnotify_open(struct poold *pd)
{
	const char *path = getenv("NOTIFY_SOCKET");
	uint64_t wd_us = sdnotify_watchdog_us();
	struct sdnotify *n;
	size_t len;

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (path == NULL || *path == '\0')
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(n->addr.sun_path)) {
		log_warnx("NOTIFY_SOCKET %s: not a unix socket's path or abstract name: ignored",
			  path);
		unsetenv("NOTIFY_SOCKET");
		return 0;
	}
	if ((n = calloc(1, sizeof(*n))) == NULL)
		fatalx("out of memory");
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, path, len);
	if (path[0] == '@')
		n->addr.sun_path[0] = '\0';
	n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	unsetenv("NOTIFY_SOCKET");
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		log_warn("notify socket");
		free(n);
		return -1;
	}
	if (wd_us > 0) {
		struct timeval half = {(time_t)(wd_us / 2 / 1000000),
				       (suseconds_t)(wd_us / 2 % 1000000)};

		n->watchdog = event_new(pd->base, -1, EV_PERSIST, sdnotify_ping, n);
		if (n->watchdog == NULL || event_add(n->watchdog, &half) < 0)
			fatalx("cannot start the watchdog's timer");
		log_info("systemd watchdog: a ping every %llu ms from the event loop",
			 (unsigned long long)(wd_us / 2000));
	}
	pd->sdnotify = n;
	return 0;
}

void sdnotify_status(struct poold *pd, bool ready, const char *fmt, ...)
{
	struct sdnotify *n = pd->sdnotify;
	char msg[SDNOTIFY_MSG_MAX];
	int at;
	va_list ap;

	if (n == NULL)
		return;
	at = snprintf(msg, sizeof(msg), "%sSTATUS=", ready && !n->ready ? "READY=1\n" : "");
	va_start(ap, fmt);
	vsnprintf(msg + at, sizeof(msg) - (size_t)at, fmt, ap);
	va_end(ap);
	n->ready = n->ready || ready;
	sdnotify_send(n, msg);
}

void sdnotify_serving(struct poold *pd, const char *role)
{
	uint64_t lent = 0;
	char size[32];
	size_t i;

	for (i = 0; i < pd->narenas; i++)
		lent += pd->arenas[i].lent;
	units_fmt_size(lent, size, sizeof(size));
	sdnotify_status(pd, true, "%s, node %u, lending %s", role, (unsigned)pd->node_id, size);
}

void sdnotify_close(struct poold *pd)
{
	struct sdnotify *n = pd->sdnotify;

	if (n == NULL)
		return;
	sdnotify_send(n, "STOPPING=1");
	if (n->watchdog != NULL)
		event_free(n->watchdog);
	close(n->fd);
	free(n);
	pd->sdnotify = NULL;
}

/*
 * daemon/net/accept.c - listeners that outlive running out of file descriptors.
 *
 * An accept() that fails for want of fds (EMFILE, ENFILE) or memory leaves
 * the connection in the backlog, so libevent would try again at once and
 * spin the loop, logging each time. A guarded listener is disabled instead
 * for 100 ms, twice as long each time it fails again within a few seconds
 * (up to 2 s), and that is said once per 10 s; the other listeners and
 * every open connection keep being served meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/net/net.h"

#define ACCEPT_PAUSE_MIN_MS 100
#define ACCEPT_PAUSE_MAX_MS 2000
#define ACCEPT_EPISODE_MS 5000 /* failures further apart than this start over */

struct accept_guard {
	struct accept_guard *next;
	struct evconnlistener *l;
	struct event *timer;
	const char *what;
	unsigned pause_ms;
	uint64_t last_fail_ms;
	struct log_limit said;
};

static struct accept_guard *accept_guards; /* few: one per listener */

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct accept_guard *g = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(g->l);
}

static void accept_error(struct evconnlistener *l, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();
	struct accept_guard *g;
	uint64_t now = units_now_ms();
	struct timeval tv;

	(void)arg;
	for (g = accept_guards; g != NULL && g->l != l; g = g->next)
		;
	if (g == NULL)
		return;
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM) {
		log_warnx_limited(&g->said, 10000, "%s: accept: %s", g->what, strerror(err));
		return;
	}
	g->pause_ms = now - g->last_fail_ms > ACCEPT_EPISODE_MS
			  ? ACCEPT_PAUSE_MIN_MS
			  : MIN(g->pause_ms * 2, ACCEPT_PAUSE_MAX_MS);
	g->last_fail_ms = now;
	log_warnx_limited(&g->said, 10000, "%s: cannot accept (%s): not accepting for %u ms",
			  g->what, strerror(err), g->pause_ms);
	evconnlistener_disable(l);
	tv = units_timeval(g->pause_ms);
	evtimer_add(g->timer, &tv);
}

/* Guard listener l (what names it in the log); 0 or -ENOMEM. */
int accept_guard(struct poold *pd, struct evconnlistener *l, const char *what)
{
	struct accept_guard *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return -ENOMEM;
	g->timer = evtimer_new(pd->base, accept_resume, g);
	if (g->timer == NULL) {
		free(g);
		return -ENOMEM;
	}
	g->l = l;
	g->what = what;
	g->next = accept_guards;
	accept_guards = g;
	evconnlistener_set_error_cb(l, accept_error);
	return 0;
}

/* Refuse an accepted connection: say why in one write that never blocks, and close it. */
void accept_refuse(int fd, const char *why, size_t len)
{
	if (send(fd, why, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("refusing a connection: %s", strerror(errno));
	evutil_closesocket(fd);
}

/* Forget the guard of l, before l is freed. */
static void accept_unguard(struct evconnlistener *l)
{
	struct accept_guard **gp, *g;

	for (gp = &accept_guards; (g = *gp) != NULL; gp = &g->next)
		if (g->l == l) {
			*gp = g->next;
			event_free(g->timer);
			free(g);
			return;
		}
}

/*
 * Listen on TCP address addr, the value of option what (for the log), with
 * cb for each connection, and guard the listener: 0, or -errno said in the log.
 */
int accept_listen(struct poold *pd, const char *what, const char *addr, int backlog,
		  evconnlistener_cb cb, void *arg, struct evconnlistener **ret)
{
	struct sockaddr_storage ss;
	struct evconnlistener *l;
	unsigned len;
	int rc;

	rc = addr_parse(addr, &ss, &len);
	if (rc < 0) {
		log_warnx("%s: cannot resolve '%s'", what, addr);
		return rc;
	}
	l = evconnlistener_new_bind(
	    pd->base, cb, arg, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    backlog, (struct sockaddr *)&ss, (int)len);
	if (l == NULL) {
		log_warn("%s: cannot listen on %s", what, addr);
		return -EADDRINUSE;
	}
	if (accept_guard(pd, l, what) < 0) {
		evconnlistener_free(l);
		return -ENOMEM;
	}
	*ret = l;
	return 0;
}

/* Close a guarded listener (NULL: none). */
void accept_close(struct evconnlistener *l)
{
	if (l == NULL)
		return;
	accept_unguard(l);
	evconnlistener_free(l);
}

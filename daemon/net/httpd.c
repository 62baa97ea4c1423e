/*
 * daemon/net/httpd.c - a small HTTP/1.1 server for one resource (the metrics
 * endpoint): GET or HEAD of one path, one request per connection.
 *
 * It faces whoever reaches the address, so everything is bounded: at most
 * max_clients connections, of which per_uid from one uid on this host and
 * per_addr from one address elsewhere (clientkey.c), so that one client
 * cannot take every slot (one more gets a 503 and is closed); a request
 * head of 8 KiB, and a deadline from the accept that bytes do not push
 * back (a client sending one byte at a time is closed at the deadline all
 * the same). The body is made only for a complete, valid GET.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/net/net.h"

#define HTTPD_MAX_HEAD 8192

struct httpd_conn {
	TAILQ_ENTRY(httpd_conn) entry;
	struct httpd *h;
	struct bufferevent *bev;
	struct event *deadline;
	struct clientkey key;
	bool answered; /* closed once the reply is out */
};

struct httpd {
	struct poold *pd;
	struct evconnlistener *listener;
	const char *what, *path;
	struct httpd_limits lim;
	unsigned nconns;
	struct clientkey_ctx *ck;
	httpd_get_fn get;
	TAILQ_HEAD(, httpd_conn) conns;
	struct log_limit said;
};

static void httpd_conn_free(struct httpd_conn *c)
{
	TAILQ_REMOVE(&c->h->conns, c, entry);
	c->h->nconns--;
	event_free(c->deadline);
	bufferevent_free(c->bev);
	free(c);
}

/* Answer and close once it is out; body NULL: none (an error, or HEAD with its length). */
static void httpd_reply(struct httpd_conn *c, const char *status, const char *type,
			struct evbuffer *body, size_t len, const char *extra)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	evbuffer_add_printf(out,
			    "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\n%s\r\n",
			    status, type, len, extra ? extra : "");
	if (body != NULL)
		evbuffer_add_buffer(out, body);
	c->answered = true;
	bufferevent_disable(c->bev, EV_READ);
}

static void httpd_error(struct httpd_conn *c, const char *status, const char *text,
			const char *extra)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t len = strlen(text) + 1;

	httpd_reply(c, status, "text/plain; charset=utf-8", NULL, len, extra);
	evbuffer_add_printf(out, "%s\n", text);
}

/* The request line "METHOD TARGET HTTP/1.x" (line has no CRLF). */
static void httpd_request(struct httpd_conn *c, char *line)
{
	char *method = line, *target, *version, *query;
	struct evbuffer *body;
	bool head;
	size_t len;

	target = strchr(method, ' ');
	version = target ? strchr(target + 1, ' ') : NULL;
	if (target == NULL || version == NULL || strncmp(version + 1, "HTTP/1.", 7) != 0 ||
	    version[8] == '\0' || version[9] != '\0') {
		httpd_error(c, "400 Bad Request", "not an HTTP/1.x request line", NULL);
		return;
	}
	*target++ = '\0';
	*version = '\0';
	head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		httpd_error(c, "405 Method Not Allowed", "only GET and HEAD",
			    "Allow: GET, HEAD\r\n");
		return;
	}
	if ((query = strchr(target, '?')) != NULL)
		*query = '\0';
	if (strcmp(target, c->h->path) != 0) {
		httpd_error(c, "404 Not Found", "nothing here but the one path", NULL);
		return;
	}
	body = evbuffer_new();
	if (body == NULL || c->h->get(c->h->pd, body) < 0) {
		if (body != NULL)
			evbuffer_free(body);
		httpd_error(c, "500 Internal Server Error", "out of memory", NULL);
		return;
	}
	len = evbuffer_get_length(body);
	httpd_reply(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", head ? NULL : body,
		    len, NULL);
	evbuffer_free(body);
}

static void httpd_read_cb(struct bufferevent *bev, void *arg)
{
	struct httpd_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	struct evbuffer_ptr eol;
	char line[HTTPD_MAX_HEAD];

	if (c->answered)
		return;
	if (end.pos < 0) {
		if (evbuffer_get_length(in) > HTTPD_MAX_HEAD)
			httpd_error(c, "431 Request Header Fields Too Large",
				    "request head over 8 KiB", NULL);
		return;
	}
	if ((size_t)end.pos + 4 > HTTPD_MAX_HEAD) {
		httpd_error(c, "431 Request Header Fields Too Large", "request head over 8 KiB",
			    NULL);
		return;
	}
	eol = evbuffer_search(in, "\r\n", 2, NULL);
	evbuffer_remove(in, line, (size_t)eol.pos + 2);
	line[eol.pos] = '\0';
	if (memchr(line, '\0', (size_t)eol.pos) != NULL) {
		httpd_error(c, "400 Bad Request", "not an HTTP/1.x request line", NULL);
		return;
	}
	httpd_request(c, line);
}

static void httpd_write_cb(struct bufferevent *bev, void *arg)
{
	struct httpd_conn *c = arg;

	(void)bev;
	if (c->answered)
		httpd_conn_free(c);
}

static void httpd_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		httpd_conn_free(arg);
}

static void httpd_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	httpd_conn_free(arg);
}

static void httpd_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
			 int salen, void *arg)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";
	struct httpd *h = arg;
	struct httpd_conn *c;
	struct timeval tv = units_timeval(h->lim.timeout_ms);
	struct clientkey key;
	unsigned same = 0, limit;
	char who[64];

	(void)l;
	(void)sa;
	(void)salen;
	if (h->nconns >= h->lim.max_clients) {
		log_warnx_limited(&h->said, 10000, "%s: refusing a connection: %u open", h->what,
				  h->nconns);
		accept_refuse(fd, busy, sizeof(busy) - 1);
		return;
	}
	if (clientkey_of(h->ck, fd, &key) < 0) {
		evutil_closesocket(fd); /* gone already */
		return;
	}
	TAILQ_FOREACH(c, &h->conns, entry)
		if (clientkey_eq(&c->key, &key))
			same++;
	limit = key.kind == CLIENTKEY_UID ? h->lim.per_uid : h->lim.per_addr;
	if (same >= limit) {
		log_warnx_limited(&h->said, 10000, "%s: refusing a connection of %s: %u open (%s)",
				  h->what, clientkey_str(&key, who, sizeof(who)), same,
				  key.kind == CLIENTKEY_UID ? h->lim.per_uid_option
							    : h->lim.per_addr_option);
		accept_refuse(fd, busy, sizeof(busy) - 1);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL ||
	    (c->bev = bufferevent_socket_new(h->pd->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(c);
		evutil_closesocket(fd);
		return;
	}
	c->deadline = evtimer_new(h->pd->base, httpd_deadline, c);
	if (c->deadline == NULL) {
		bufferevent_free(c->bev);
		free(c);
		return;
	}
	c->h = h;
	c->key = key;
	TAILQ_INSERT_TAIL(&h->conns, c, entry);
	h->nconns++;
	evtimer_add(c->deadline, &tv);
	bufferevent_setwatermark(c->bev, EV_READ, 0, HTTPD_MAX_HEAD + 1);
	bufferevent_setcb(c->bev, httpd_read_cb, httpd_write_cb, httpd_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/*
 * Serve GET path on addr (option names the setting, for the log) with
 * get(); 0, or -errno said in the log.
 */
int httpd_open(struct poold *pd, const char *addr, const char *option, const char *path,
	       const struct httpd_limits *lim, httpd_get_fn get, struct httpd **ret)
{
	struct httpd *h;
	int rc;

	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->pd = pd;
	h->what = option;
	h->path = path;
	h->lim = *lim;
	h->get = get;
	TAILQ_INIT(&h->conns);
	rc = clientkey_open(&h->ck);
	if (rc < 0) {
		free(h);
		return rc;
	}
	rc = accept_listen(pd, option, addr, 16, httpd_accept, h, &h->listener);
	if (rc < 0) {
		clientkey_close(h->ck);
		free(h);
		return rc;
	}
	*ret = h;
	return 0;
}

void httpd_close(struct httpd *h)
{
	struct httpd_conn *c;

	if (h == NULL)
		return;
	while ((c = TAILQ_FIRST(&h->conns)) != NULL)
		httpd_conn_free(c);
	accept_close(h->listener);
	clientkey_close(h->ck);
	free(h);
}

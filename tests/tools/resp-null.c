/*
 * tests/tools/resp-null.c - a RESP server that keeps nothing: every
 * command is answered at once, GET with a value of SIZE bytes it always
 * has, anything else with +OK. It reads each command's bytes and drops
 * them. tests/bench/resp.sh runs redis-benchmark against it beside poold
 * and redis-server: the rate no server can pass with that client on those
 * cores (the client's and the kernel's share of the work).
 *
 *   resp-null PORT SIZE
 *
 * One thread, epoll, non-blocking sockets on 127.0.0.1; replies are
 * written from prepared buffers, so no byte is copied in user space.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH (256u << 10) /* bytes of replies written at once, about */

/* Replies owed, in order: runs of the same kind. */
struct run {
	bool get;
	long long n;
};

struct client {
	int fd;
	bool in_bulk;	/* skipping a bulk's bytes (and its CRLF) */
	long long skip; /* of them, left */
	long args;	/* arguments of the command being read, left */
	bool first;	/* the next bulk is the command's name */
	bool get;	/* the command is GET */
	char line[64];	/* a header line being read */
	size_t linelen;
	struct run *runs; /* replies owed, oldest first */
	size_t nruns, cap;
	size_t sent; /* of the first reply owed, bytes written */
	bool want_out;
	bool broken; /* out of memory */
};

/*
 * Each kind of reply (+OK; a GET's "$SIZE\r\n" + SIZE bytes + "\r\n")
 * repeated in a buffer, so that a run of them goes out in few writes.
 */
struct reply {
	char *buf;
	size_t len;    /* of one reply */
	size_t copies; /* in buf */
};
static struct reply ok_reply, get_reply;

static int reply_make(struct reply *r, const char *head, size_t size)
{
	size_t h = strlen(head), i;

	r->len = h + size + (size > 0 ? 2 : 0);
	r->copies = BATCH / r->len + 2;
	r->buf = malloc(r->len * r->copies);
	if (r->buf == NULL)
		return -1;
	for (i = 0; i < r->copies; i++) {
		char *p = r->buf + i * r->len;

		memcpy(p, head, h);
		memset(p + h, 'x', size);
		if (size > 0)
			memcpy(p + h + size, "\r\n", 2);
	}
	return 0;
}

/* A whole command was read. */
static void owe(struct client *c)
{
	if (c->nruns > 0 && c->runs[c->nruns - 1].get == c->get) {
		c->runs[c->nruns - 1].n++;
		return;
	}
	if (c->nruns == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct run *r = realloc(c->runs, cap * sizeof(*r));

		if (r == NULL) {
			c->broken = true;
			return;
		}
		c->runs = r;
		c->cap = cap;
	}
	c->runs[c->nruns++] = (struct run){c->get, 1};
}

static void header(struct client *c)
{
	long long n = atoll(c->line + 1);

	if (c->line[0] == '*') {
		c->args = n;
		c->first = true;
		c->get = false;
		if (n <= 0)
			owe(c);
	} else if (c->line[0] == '$') {
		c->in_bulk = true;
		c->skip = n + 2;
	} else {
		owe(c); /* an inline command */
	}
}

static void take(struct client *c, const char *buf, size_t len)
{
	size_t at = 0;

	while (at < len) {
		if (c->in_bulk) {
			size_t n = (size_t)c->skip < len - at ? (size_t)c->skip : len - at;

			if (c->first && n >= 3 && c->skip == 5)
				c->get = strncasecmp(buf + at, "GET", 3) == 0;
			c->first = false;
			at += n;
			c->skip -= (long long)n;
			if (c->skip == 0) {
				c->in_bulk = false;
				if (--c->args == 0)
					owe(c);
			}
			continue;
		}
		if (c->linelen < sizeof(c->line) - 1)
			c->line[c->linelen++] = buf[at];
		if (buf[at++] == '\n') {
			c->line[c->linelen] = '\0';
			c->linelen = 0;
			header(c);
		}
	}
}

/* The first run of replies owed is written: the next one first. */
static void pop(struct client *c)
{
	memmove(c->runs, c->runs + 1, --c->nruns * sizeof(*c->runs));
	c->sent = 0;
}

/* Write what is owed; false when the client is gone. */
static bool flush(int ep, struct client *c)
{
	ssize_t n = 0;

	while (c->nruns > 0) {
		struct run *r = &c->runs[0];
		const struct reply *k = r->get ? &get_reply : &ok_reply;
		/* sent: of the run, from where the last write stopped; at most copies - 1 whole */
		size_t len = (size_t)r->n * k->len - c->sent;

		if (len > (k->copies - 1) * k->len)
			len = (k->copies - 1) * k->len;
		n = write(c->fd, k->buf + c->sent % k->len, len);
		if (n < 0)
			break;
		c->sent += (size_t)n;
		if (c->sent == (size_t)r->n * k->len)
			pop(c);
		if ((size_t)n < len)
			break;
	}
	if (n < 0 && errno != EAGAIN)
		return false;
	if ((c->nruns > 0) != c->want_out) {
		struct epoll_event ev = {.events = EPOLLIN | (c->nruns > 0 ? EPOLLOUT : 0),
					 .data.ptr = c};

		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		c->want_out = c->nruns > 0;
	}
	return !c->broken;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	int one = 1, lfd, ep, i;
	char head[32];
	size_t size;

	if (argc != 3) {
		fprintf(stderr, "usage: resp-null PORT SIZE\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	size = strtoul(argv[2], NULL, 10);
	snprintf(head, sizeof(head), "$%zu\r\n", size);
	if (reply_make(&ok_reply, "+OK\r\n", 0) < 0 || reply_make(&get_reply, head, size) < 0) {
		fprintf(stderr, "resp-null: out of memory\n");
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0) {
		perror("resp-null: listen");
		return 1;
	}
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		for (i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;
			ssize_t got = 0;

			if (c == NULL) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);

				if (fd < 0 || (c = calloc(1, sizeof(*c))) == NULL) {
					if (fd >= 0)
						close(fd);
					continue;
				}
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				c->fd = fd;
				ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = c};
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				continue;
			}
			if ((evs[i].events & EPOLLIN) &&
			    ((got = read(c->fd, buf, sizeof(buf))) == 0 ||
			     (got < 0 && errno != EAGAIN)))
				goto gone;
			if (got > 0)
				take(c, buf, (size_t)got);
			if (flush(ep, c))
				continue;
		gone:
			close(c->fd);
			free(c->runs);
			free(c);
		}
	}
}

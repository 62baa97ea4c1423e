/*
 * daemon/net/stream.c - a long list sent over a peer link in chunks, as the
 * loop turns.
 *
 * The owner's next() packs and queues one chunk of bounded size; the
 * stream calls it once per turn of the loop, and only while the bytes the
 * link has not written yet are under a bound, so that neither one callback
 * nor the link's buffer holds more than a few chunks, whatever the length
 * of the list: the loop serves heartbeats and requests between chunks, and
 * a slow reader holds the stream back rather than growing poold.
 *
 * The owner may also hold the stream back itself (stream_pause()) until
 * the other end says it read what came (stream_resume()): the bytes on
 * their way, in this poold, the kernels' buffers and the reader's, are
 * then bounded too, and a message the link carries after them (a
 * heartbeat) waits behind a few chunks, not behind megabytes.
 *
 * The stream ends when next() says the chunk was the last, when it fails,
 * or when the link goes; the owner hears which from end(), once, unless it
 * stopped the stream itself.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "daemon/net/net.h"

/* While the link holds its bound of unwritten bytes, look again after this long. */
#define STREAM_WAIT_MS 2

struct stream {
	struct poold *pd;
	struct conn *conn; /* (a reference: it outlives a link that goes) */
	size_t ahead;	   /* the most unwritten bytes a new chunk is queued behind */
	stream_next_cb next;
	stream_end_cb end;
	void *arg;
	struct event *ev;
	bool paused; /* held back by its owner until stream_resume() */
};

static void stream_free(struct stream *s)
{
	event_free(s->ev);
	conn_unref(s->conn);
	free(s);
}

static void stream_finish(struct stream *s, int rc)
{
	struct poold *pd = s->pd;
	stream_end_cb end = s->end;
	void *arg = s->arg;

	stream_free(s);
	end(pd, arg, rc);
}

static void stream_step(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;
	struct timeval tv = {0, 0};
	int rc;

	(void)fd;
	(void)what;
	if (s->paused)
		return; /* (stream_resume() steps again) */
	if (!conn_alive(s->conn)) {
		stream_finish(s, -ECONNRESET);
		return;
	}
	if (conn_output_len(s->conn) >= s->ahead) {
		tv = units_timeval(STREAM_WAIT_MS);
		evtimer_add(s->ev, &tv);
		return;
	}
	rc = s->next(s->pd, s->conn, s->arg);
	if (rc <= 0) {
		stream_finish(s, rc);
		return;
	}
	evtimer_add(s->ev, &tv); /* the next turn: what waits in the loop goes first */
}

/*
 * Start sending a list over c: next(pd, c, arg) queues one chunk and
 * returns 1 when more follow, 0 after the last, or -errno; end(pd, arg, rc)
 * follows once, with 0 when all went, next()'s error, or -ECONNRESET when
 * the link went first. Chunks are queued behind at most ahead unwritten
 * bytes. The first goes at the loop's next turn. 0 or -ENOMEM.
 */
int stream_start(struct poold *pd, struct conn *c, size_t ahead, stream_next_cb next,
		 stream_end_cb end, void *arg, struct stream **ret)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct timeval tv = {0, 0};

	if (s == NULL)
		return -ENOMEM;
	*s = (struct stream){
	    .pd = pd, .ahead = ahead ? ahead : 1, .next = next, .end = end, .arg = arg};
	s->ev = evtimer_new(pd->base, stream_step, s);
	if (s->ev == NULL) {
		free(s);
		return -ENOMEM;
	}
	s->conn = conn_ref(c);
	evtimer_add(s->ev, &tv);
	*ret = s;
	return 0;
}

/* Send no more chunks until stream_resume() (or stream_stop(), if the link goes meanwhile). */
void stream_pause(struct stream *s)
{
	s->paused = true;
}

/* Go on after stream_pause(), at the loop's next turn. */
void stream_resume(struct stream *s)
{
	struct timeval tv = {0, 0};

	if (!s->paused)
		return;
	s->paused = false;
	evtimer_add(s->ev, &tv);
}

/* Stop a stream without its end callback (its owner is going, or starts over). */
void stream_stop(struct stream *s)
{
	if (s != NULL)
		stream_free(s);
}

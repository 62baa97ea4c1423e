/*
 * daemon/etcd/etcd-watch.c - etcd's watches (etcd.h): each holds a connection
 * of its own, whose answer is a stream of JSON objects, one per line; each
 * event goes to the watcher in order, and the watch's end once.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/common.h"
#include "daemon/etcd/etcd-int.h"
#include "daemon/etcd/etcd.h"

#define ETCD_WATCH_IDLE_S 86400 /* a watch's stream may be quiet that long */

void etcd_watch_free(struct etcd_watch *w)
{
	LIST_REMOVE(w, entry);
	if (w->conn != NULL)
		evhttp_connection_free(w->conn);
	if (w->pending != NULL)
		evbuffer_free(w->pending);
	json_decref(w->create);
	free(w);
}

/* Tell the watcher its watch ended (once), unless it cancelled it. */
void etcd_watch_end(struct etcd_watch *w, int status, const char *why)
{
	etcd_event_fn *fn = w->fn;

	w->fn = NULL;
	if (fn != NULL && !w->cancelled)
		fn(w->arg, status, why, false, NULL);
}

/* One message of the stream: its events, each to the watcher. */
static void etcd_watch_message(struct etcd_watch *w, const char *line, size_t len)
{
	json_t *doc = json_loadb(line, len, 0, NULL), *result = json_object_get(doc, "result");
	json_t *events = json_object_get(result, "events");
	char why[256];
	size_t i;

	if (!json_is_object(result)) {
		int rc = json_is_object(json_object_get(doc, "error"))
			     ? etcd_error_of(json_object_get(doc, "error"), 200, why, sizeof(why))
			     : -EPROTO;

		if (rc == -EPROTO)
			snprintf(why, sizeof(why), "a watch's stream that is not etcd's");
		etcd_watch_end(w, rc, why);
		json_decref(doc);
		return;
	}
	if (json_is_true(json_object_get(result, "canceled"))) {
		const char *reason = json_string_value(json_object_get(result, "cancel_reason"));

		/* (a watch refused for its token: the next one authenticates again) */
		if (reason != NULL && w->e->user != NULL && w->token_gen == w->e->token_gen &&
		    (strstr(reason, "Unauthenticated") != NULL ||
		     strstr(reason, "user name is empty") != NULL))
			etcd_drop_token(w->e);
		snprintf(why, sizeof(why), "etcd cancelled the watch: %s",
			 reason != NULL && reason[0] != '\0' ? reason : "compacted?");
		etcd_watch_end(w, -ECANCELED, why);
		json_decref(doc);
		return;
	}
	for (i = 0; i < json_array_size(events) && w->fn != NULL && !w->cancelled; i++) {
		json_t *ev = json_array_get(events, i);
		const char *type = json_string_value(json_object_get(ev, "type"));
		struct etcd_kv kv;

		if (etcd_kv_of(json_object_get(ev, "kv"), &kv) < 0) {
			etcd_watch_end(w, -EPROTO, "a watched key that is not base64");
			break;
		}
		w->fn(w->arg, 0, NULL, type != NULL && strcmp(type, "DELETE") == 0, &kv);
		etcd_kv_free(&kv);
	}
	json_decref(doc);
}

static void etcd_watch_chunk(struct evhttp_request *req, void *arg)
{
	struct etcd_watch *w = arg;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	char *line;
	size_t n;

	if (w->fn == NULL || w->cancelled) { /* ended: what the stream still brings is dropped */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	evbuffer_add_buffer(w->pending, in);
	while (w->fn != NULL && !w->cancelled &&
	       (line = evbuffer_readln(w->pending, &n, EVBUFFER_EOL_LF)) != NULL) {
		etcd_watch_message(w, line, n);
		free(line);
	}
	if (evbuffer_get_length(w->pending) > ETCD_MAX_ANSWER) {
		evbuffer_drain(w->pending, evbuffer_get_length(w->pending));
		etcd_watch_end(w, -EPROTO, "a watch's message over 8 MiB");
	}
}

static void etcd_watch_failed(enum evhttp_request_error error, void *arg)
{
	struct etcd_watch *w = arg;

	w->failure = error;
	w->failed = true;
}

/* The stream ended (the connection dropped, or etcd closed it). */
static void etcd_watch_done(struct evhttp_request *req, void *arg)
{
	struct etcd_watch *w = arg;
	char why[400];

	if (req == NULL || evhttp_request_get_response_code(req) == 0)
		etcd_next_endpoint(w->e, w->endpoint); /* (it could not be reached) */
	snprintf(why, sizeof(why), "the watch's stream from etcd at %s ended",
		 w->e->ep[w->endpoint].url);
	etcd_watch_end(w, -ECONNRESET, why);
}

/*
 * Watch key (or every key under it) from start_revision (0: from now):
 * each put and delete goes to fn in order; the watch's end too, once,
 * with a negative status (then the caller watches again, from the
 * revision after the last it saw). NULL without memory.
 */
struct etcd_watch *etcd_watch(struct etcd *e, const char *key, bool prefix, int64_t start_revision,
			      etcd_event_fn *fn, void *arg)
{
	struct etcd_watch *w = calloc(1, sizeof(*w));
	json_t *create = json_object();
	int rc;

	if (w == NULL || create == NULL || etcd_set_key(create, "key", key, prefix) < 0 ||
	    (start_revision > 0 &&
	     json_object_set_new(create, "start_revision", etcd_int(start_revision)) < 0)) {
		json_decref(create);
		free(w);
		return NULL;
	}
	w->e = e;
	w->fn = fn;
	w->arg = arg;
	w->create = create;
	LIST_INSERT_HEAD(&e->watches, w, entry);
	/* (without a token it starts once the client has one) */
	rc = e->user != NULL && e->token == NULL ? etcd_authenticate(e) : etcd_watch_start(w);
	if (rc < 0) {
		etcd_watch_free(w);
		return NULL;
	}
	return w;
}

/* Send the watch's create request, with the token in force. */
int etcd_watch_start(struct etcd_watch *w)
{
	struct etcd *e = w->e;
	struct timeval idle = {ETCD_WATCH_IDLE_S, 0};
	struct evhttp_request *req;
	json_t *msg = json_pack("{so}", "create_request", w->create);
	char *text = msg != NULL ? json_dumps(msg, JSON_COMPACT) : NULL;
	int rc = -ENOMEM;

	w->create = NULL; /* (json_pack took it) */
	json_decref(msg);
	w->endpoint = e->cur;
	w->token_gen = e->token_gen;
	w->pending = evbuffer_new();
	w->conn = e->ep[e->cur].tls && e->tls == NULL ? NULL : etcd_connect(e, &e->ep[e->cur]);
	req = text != NULL && w->conn != NULL && w->pending != NULL
		  ? evhttp_request_new(etcd_watch_done, w)
		  : NULL;
	if (req != NULL) {
		evhttp_connection_set_timeout_tv(w->conn, &idle);
		evhttp_connection_set_retries(w->conn, 0);
		evhttp_request_set_chunked_cb(req, etcd_watch_chunk);
		evhttp_request_set_error_cb(req, etcd_watch_failed);
		rc = etcd_post(w->conn, e->ep[e->cur].host, "/v3/watch", text, e->token, req);
	}
	free(text);
	return rc;
}

static void etcd_watch_reap(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	etcd_watch_free(arg);
}

/* Stop watching: no call comes after this (the watch is freed from the loop, not in here). */
void etcd_watch_cancel(struct etcd_watch *w)
{
	struct timeval now = {0, 0};

	if (w == NULL || w->cancelled)
		return;
	w->cancelled = true;
	w->fn = NULL;
	if (event_base_once(w->e->base, -1, EV_TIMEOUT, etcd_watch_reap, w, &now) < 0)
		log_warnx("etcd: a cancelled watch is kept until the client goes");
}

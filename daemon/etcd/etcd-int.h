/*
 * daemon/etcd/etcd-int.h - the etcd client's internals shared by its files:
 * etcd.c (endpoints, unary calls, authentication, TLS) and etcd-watch.c
 * (watches and their streams).
 */
#ifndef POOL_DAEMON_ETCDINT_H
#define POOL_DAEMON_ETCDINT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <jansson.h>
#include <openssl/ssl.h>

#include "daemon/etcd/etcd.h"

#define ETCD_MAX_ENDPOINTS 8
#define ETCD_MAX_ANSWER (8u << 20) /* bytes of one answer read, at most */

struct etcd_endpoint {
	char host[256];
	uint16_t port;
	char url[300];			/* as configured, for messages */
	bool tls;			/* https:// */
	struct evhttp_connection *conn; /* made on first use; libevent reconnects it (not TLS) */
	bool closed;			/* TLS: conn was closed, and is retired at next use */
};

struct etcd_watch {
	LIST_ENTRY(etcd_watch) entry;
	struct etcd *e;
	struct evhttp_connection *conn;
	struct evbuffer *pending; /* what came of the stream, up to its next newline */
	etcd_event_fn *fn;
	void *arg;
	size_t endpoint;
	json_t *create; /* its create request, until it is sent */
	enum evhttp_request_error failure;
	bool failed, cancelled;
	uint64_t token_gen;
};

struct etcd {
	struct event_base *base;
	struct etcd_endpoint ep[ETCD_MAX_ENDPOINTS];
	size_t nep, cur;
	unsigned timeout_ms;
	LIST_HEAD(, etcd_call) calls;
	LIST_HEAD(, etcd_watch) watches;
	SSL_CTX *tls; /* for https endpoints (etcd_tls()) */
	struct evhttp_connection *retired[2 * ETCD_MAX_ENDPOINTS]; /* closed TLS connections */
	size_t nretired;
	struct event *reaper; /* frees them, from the loop */
	/* auth: NULL user, none */
	char *user, *password;
	char *token;	    /* etcd's, while it holds; NULL: authenticate first */
	uint64_t token_gen; /* counts tokens, to tell a refused one from its successor */
	bool authenticating;
	bool closing;			 /* etcd_free() is answering the calls */
	TAILQ_HEAD(, etcd_call) waiting; /* calls waiting for a token */
};

/* etcd.c */
void etcd_drop_token(struct etcd *e);
int etcd_authenticate(struct etcd *e);
void etcd_next_endpoint(struct etcd *e, size_t failed);
struct evhttp_connection *etcd_connect(struct etcd *e, struct etcd_endpoint *ep);
int etcd_post(struct evhttp_connection *conn, const char *host, const char *path, const char *body,
	      const char *token, struct evhttp_request *req);
int etcd_error_of(json_t *doc, int code, char *buf, size_t len);
int etcd_set_key(json_t *o, const char *name, const char *key, bool prefix);
json_t *etcd_int(int64_t v);
int etcd_kv_of(json_t *o, struct etcd_kv *kv);
void etcd_kv_free(struct etcd_kv *kv);

/* etcd-watch.c */
int etcd_watch_start(struct etcd_watch *w);
void etcd_watch_end(struct etcd_watch *w, int status, const char *why);
void etcd_watch_free(struct etcd_watch *w);

#endif

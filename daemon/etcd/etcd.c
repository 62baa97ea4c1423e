/*
 * daemon/etcd/etcd.c - a client of etcd's v3 JSON gateway (the grpc-gateway
 * that etcd 3.4 serves under /v3/ on its client URLs), on libevent's HTTP
 * client and jansson.
 *
 * Requests are JSON POSTs; keys and values travel base64-encoded and
 * 64-bit numbers as strings, as the gateway's JSON mapping of etcd's
 * protobufs has them. Unary requests share one connection to the endpoint
 * in use; when it fails (refused, reset, timed out) the next request goes
 * to the next endpoint of the list. Nothing is retried here: the caller
 * is told, and decides (an election retries; a write of state must not be
 * applied twice without knowing). A watch holds a connection of its own,
 * whose answer is a stream of JSON objects, one per line.
 *
 * Endpoints may be https://: the connection is TLS (1.2 at least), etcd's
 * certificate must chain to the CA given to etcd_tls() and name the
 * endpoint's host, and the client shows its own certificate if it has
 * one (etcd's --client-cert-auth). libevent cannot reconnect a TLS
 * connection once closed, so a closed one is retired (freed from the
 * loop) and the next request makes a new one.
 *
 * With a user (etcd with auth enabled), the client authenticates before
 * its first request and sends etcd's token with each one. etcd forgets a
 * token (its TTL, a member's restart, a change of users): a request
 * refused for its token was not applied, so it is sent once more after
 * the client authenticated again.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/common.h"
#include "daemon/etcd/etcd-int.h"
#include "daemon/etcd/etcd.h"

enum etcd_kind {
	ETCD_PUT,
	ETCD_RANGE,
	ETCD_DELETE,
	ETCD_CREATE,
	ETCD_TXN,
	ETCD_GRANT,
	ETCD_KEEPALIVE,
	ETCD_REVOKE,
	ETCD_AUTHENTICATE
};

struct etcd_call {
	LIST_ENTRY(etcd_call) entry;
	struct etcd *e;
	enum etcd_kind kind;
	etcd_done_fn *done;
	void *arg;
	const char *path;
	char *body;	    /* the request, kept to send it again with a new token */
	size_t endpoint;    /* the one it went to */
	uint64_t token_gen; /* the token it went with */
	enum evhttp_request_error failure;
	bool failed;
	bool resent;			   /* once, after its token was refused */
	TAILQ_ENTRY(etcd_call) wait_entry; /* waiting for a token, in order */
	bool waiting;
};

static void etcd_reap(evutil_socket_t fd, short what, void *arg);

/* Parse "http[s]://host:port[,http[s]://host:port...]". */
static int etcd_parse_endpoints(struct etcd *e, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	while (*p != '\0') {
		struct etcd_endpoint *ep = &e->ep[e->nep];
		size_t len = strcspn(p, ",");
		const char *host, *colon, *end = p + len;
		char *num_end;
		unsigned long port;
		bool tls = strncmp(p, "https://", 8) == 0;

		if (e->nep == ETCD_MAX_ENDPOINTS) {
			snprintf(err, errlen, "at most %d etcd endpoints", ETCD_MAX_ENDPOINTS);
			return -EINVAL;
		}
		if (len >= sizeof(ep->url) || (!tls && strncmp(p, "http://", 7) != 0))
			goto bad;
		snprintf(ep->url, sizeof(ep->url), "%.*s", (int)len, p);
		ep->tls = tls;
		host = p + (tls ? 8 : 7);
		colon = memchr(host, ':', (size_t)(end - host));
		if (colon == NULL || colon == host || (size_t)(colon - host) >= sizeof(ep->host))
			goto bad;
		port = strtoul(colon + 1, &num_end, 10);
		if (num_end != end && !(num_end + 1 == end && *num_end == '/'))
			goto bad;
		if (port == 0 || port > 65535 || colon + 1 == num_end)
			goto bad;
		snprintf(ep->host, sizeof(ep->host), "%.*s", (int)(colon - host), host);
		ep->port = (uint16_t)port;
		e->nep++;
		p = *end == ',' ? end + 1 : end;
		continue;
	bad:
		snprintf(err, errlen, "etcd endpoint '%.*s': not http[s]://HOST:PORT", (int)len, p);
		return -EINVAL;
	}
	if (e->nep == 0) {
		snprintf(err, errlen, "no etcd endpoint");
		return -EINVAL;
	}
	return 0;
}

/*
 * A client of the etcd cluster at endpoints ("http://10.0.0.1:2379,..."):
 * each request is answered within timeout_ms or fails with -ETIMEDOUT.
 * NULL with the reason in err.
 */
struct etcd *etcd_new(struct event_base *base, const char *endpoints, unsigned timeout_ms,
		      char *err, size_t errlen)
{
	struct etcd *e = calloc(1, sizeof(*e));

	if (e == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->base = base;
	e->timeout_ms = timeout_ms ? timeout_ms : 1000;
	LIST_INIT(&e->calls);
	LIST_INIT(&e->watches);
	TAILQ_INIT(&e->waiting);
	if (etcd_parse_endpoints(e, endpoints, err, errlen) < 0) {
		free(e);
		return NULL;
	}
	if ((e->reaper = evtimer_new(base, etcd_reap, e)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(e);
		return NULL;
	}
	return e;
}

/*
 * TLS for the https endpoints: etcd's certificate must chain to ca (a PEM
 * file); with cert and key (else NULL), the client shows that certificate
 * (etcd's --client-cert-auth). Before the first request. 0, or -EINVAL
 * with the reason in err.
 */
int etcd_tls(struct etcd *e, const char *ca, const char *cert, const char *key, char *err,
	     size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL) {
		snprintf(err, errlen, "TLS: %s", ssl_error_text());
		return -ENOMEM;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		snprintf(err, errlen, "TLS 1.2: %s", ssl_error_text());
		goto fail;
	}
	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		snprintf(err, errlen, "the CA %s: %s", ca, ssl_error_text());
		goto fail;
	}
	if (cert != NULL && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		snprintf(err, errlen, "the certificate %s: %s", cert, ssl_error_text());
		goto fail;
	}
	if (cert != NULL && (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
			     SSL_CTX_check_private_key(ctx) != 1)) {
		snprintf(err, errlen, "the key %s (of %s): %s", key, cert, ssl_error_text());
		goto fail;
	}
	SSL_CTX_free(e->tls);
	e->tls = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return -EINVAL;
}

/* Free the retired TLS connections (from the loop: never inside their own callbacks). */
static void etcd_reap(evutil_socket_t fd, short what, void *arg)
{
	struct etcd *e = arg;

	(void)fd;
	(void)what;
	while (e->nretired > 0)
		evhttp_connection_free(e->retired[--e->nretired]);
}

/* Wipe a secret before its memory goes back (NULL: nothing). */
static void etcd_forget(char *secret)
{
	if (secret != NULL)
		explicit_bzero(secret, strlen(secret));
}

/* The token in force is no more: the next request authenticates first. */
void etcd_drop_token(struct etcd *e)
{
	etcd_forget(e->token);
	free(e->token);
	e->token = NULL;
	e->token_gen++;
}

static void etcd_call_free(struct etcd_call *c)
{
	if (c->kind == ETCD_AUTHENTICATE) /* (it holds the password) */
		etcd_forget(c->body);
	free(c->body);
	free(c);
}

/*
 * Drop the client. Requests in flight are answered -ECANCELED at once (so
 * that their callers free what waits for them); watches end without a word.
 */
void etcd_free(struct etcd *e)
{
	struct etcd_result res = {.status = -ECANCELED, .error = "the etcd client was closed"};
	struct etcd_call *c;
	struct etcd_watch *w;
	size_t i;

	if (e == NULL)
		return;
	e->closing = true;
	for (i = 0; i < e->nep; i++)
		if (e->ep[i].conn != NULL)
			evhttp_connection_free(
			    e->ep[i].conn); /* frees its requests, calling nobody */
	while ((c = LIST_FIRST(&e->calls)) != NULL) {
		LIST_REMOVE(c, entry);
		if (c->waiting)
			TAILQ_REMOVE(&e->waiting, c, wait_entry);
		c->done(c->arg, &res);
		etcd_call_free(c);
	}
	while ((w = LIST_FIRST(&e->watches)) != NULL)
		etcd_watch_free(w);
	etcd_reap(-1, 0, e);
	if (e->reaper != NULL)
		event_free(e->reaper);
	SSL_CTX_free(e->tls);
	etcd_forget(e->password);
	free(e->password);
	free(e->user);
	etcd_forget(e->token);
	free(e->token);
	free(e);
}

/*
 * Authenticate as user with password (copied) before the next request,
 * and whenever etcd no longer knows the token it gave.
 */
int etcd_login(struct etcd *e, const char *user, const char *password)
{
	char *u = strdup(user), *p = strdup(password);

	if (u == NULL || p == NULL) {
		free(u);
		free(p);
		return -ENOMEM;
	}
	free(e->user);
	etcd_forget(e->password);
	free(e->password);
	e->user = u;
	e->password = p;
	etcd_drop_token(e);
	return 0;
}

/* The endpoint requests go to now. */
const char *etcd_endpoint(const struct etcd *e)
{
	return e->ep[e->cur].url;
}

static char *etcd_b64(const void *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out != NULL)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

/* Decode base64 text into a malloc'd buffer, NUL-terminated; NULL if it is not base64. */
static uint8_t *etcd_unb64(const char *text, size_t *ret_len)
{
	size_t len = strlen(text), pad = 0;
	uint8_t *out;
	int n;

	if (len % 4 != 0 || (out = malloc(len / 4 * 3 + 1)) == NULL)
		return NULL;
	n = len ? EVP_DecodeBlock(out, (const unsigned char *)text, (int)len) : 0;
	if (n < 0) {
		free(out);
		return NULL;
	}
	while (pad < 2 && len > pad && text[len - 1 - pad] == '=')
		pad++;
	*ret_len = (size_t)n - pad;
	out[*ret_len] = '\0';
	return out;
}

/* The end of a prefix's range: the key with its last byte one higher (carrying). */
static char *etcd_prefix_end(const char *key)
{
	size_t len = strlen(key);
	uint8_t *end = malloc(len + 1);
	char *out;

	if (end == NULL)
		return NULL;
	memcpy(end, key, len);
	while (len > 0 && end[len - 1] == 0xff)
		len--;
	if (len == 0) { /* every key: "\0" */
		end[0] = 0;
		len = 1;
	} else {
		end[len - 1]++;
	}
	out = etcd_b64(end, len);
	free(end);
	return out;
}

/* Set key (base64) and, for a prefix, range_end in a request object. */
int etcd_set_key(json_t *o, const char *name, const char *key, bool prefix)
{
	char *k = etcd_b64(key, strlen(key)), *end = prefix ? etcd_prefix_end(key) : NULL;
	int rc = 0;

	if (k == NULL || (prefix && end == NULL) ||
	    json_object_set_new(o, name, json_string(k)) < 0 ||
	    (prefix && json_object_set_new(o, "range_end", json_string(end)) < 0))
		rc = -ENOMEM;
	free(k);
	free(end);
	return rc;
}

json_t *etcd_int(int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

/* A 64-bit number as the gateway writes it (a string, or absent for 0). */
static int64_t etcd_num(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	if (json_is_integer(v))
		return json_integer_value(v);
	return 0;
}

void etcd_kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

/* One kv of an answer; -EPROTO if its key or value is not base64. */
int etcd_kv_of(json_t *o, struct etcd_kv *kv)
{
	const char *key = json_string_value(json_object_get(o, "key"));
	const char *value = json_string_value(json_object_get(o, "value"));
	size_t klen;

	memset(kv, 0, sizeof(*kv));
	if (key == NULL || (kv->key = (char *)etcd_unb64(key, &klen)) == NULL)
		return -EPROTO;
	kv->value = etcd_unb64(value != NULL ? value : "", &kv->vlen);
	if (kv->value == NULL) {
		free(kv->key);
		return -EPROTO;
	}
	kv->create_revision = etcd_num(o, "create_revision");
	kv->mod_revision = etcd_num(o, "mod_revision");
	kv->version = etcd_num(o, "version");
	kv->lease = etcd_num(o, "lease");
	return 0;
}

/* The kvs array of a range answer, into a malloc'd array. */
static int etcd_kvs_of(json_t *kvs, struct etcd_kv **ret, size_t *ret_n)
{
	size_t i, n = json_array_size(kvs);
	struct etcd_kv *out;

	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	if ((out = calloc(n, sizeof(*out))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (etcd_kv_of(json_array_get(kvs, i), &out[i]) < 0) {
			while (i-- > 0)
				etcd_kv_free(&out[i]);
			free(out);
			return -EPROTO;
		}
	*ret = out;
	*ret_n = n;
	return 0;
}

static void etcd_failed(enum evhttp_request_error error, void *arg)
{
	struct etcd_call *c = arg;

	c->failure = error;
	c->failed = true;
}

/* The endpoint in use failed: the next request goes to the next one. */
void etcd_next_endpoint(struct etcd *e, size_t failed)
{
	if (failed == e->cur) /* (else moved on already) */
		e->cur = (e->cur + 1) % e->nep;
}

/* What an error answer says: etcd's message, or the HTTP status. -ENOENT for gRPC's NotFound. */
int etcd_error_of(json_t *doc, int code, char *buf, size_t len)
{
	const char *msg = json_string_value(json_object_get(doc, "message"));

	if (msg == NULL)
		msg = json_string_value(json_object_get(doc, "error"));
	if (msg != NULL)
		snprintf(buf, len, "etcd: %s", msg);
	else
		snprintf(buf, len, "etcd answered HTTP %d", code);
	return etcd_num(doc, "code") == 5 ? -ENOENT : -EIO;
}

/*
 * Whether the failed request to endpoint i failed in TLS (a certificate
 * not of the CA or not of the host, a handshake refused): why says so.
 */
static bool etcd_tls_failure(struct etcd *e, size_t i, char *why, size_t len)
{
	struct etcd_endpoint *ep = &e->ep[i];
	struct bufferevent *bev;
	unsigned long code;
	const char *reason;
	long verify;
	SSL *ssl;

	if (!ep->tls || ep->conn == NULL)
		return false;
	ep->closed = true; /* (whatever it was: a new connection next) */
	bev = evhttp_connection_get_bufferevent(ep->conn);
	ssl = bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
	verify = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
	code = bev != NULL ? bufferevent_get_openssl_error(bev) : 0;
	reason = code != 0 ? ERR_reason_error_string(code) : NULL; /* (NULL: the system's) */
	if (verify != X509_V_OK)
		snprintf(why, len, "etcd at %s: TLS: its certificate: %s", ep->url,
			 X509_verify_cert_error_string(verify));
	else if (reason != NULL)
		snprintf(why, len, "etcd at %s: TLS: %s", ep->url, reason);
	return verify != X509_V_OK || reason != NULL;
}

/* How much of an error page's text to quote: its first line, printable, at most max bytes. */
static size_t etcd_printable(const char *text, size_t len, size_t max)
{
	size_t n = 0;

	while (n < len && n < max && text[n] >= 0x20 && text[n] < 0x7f)
		n++;
	return n;
}

static int etcd_send(struct etcd_call *c);
static int etcd_wait_token(struct etcd_call *c);
static int etcd_call(struct etcd *e, enum etcd_kind kind, const char *path, json_t *body,
		     etcd_done_fn *done, void *arg);

/*
 * etcd refused the token c went with (it expired, or the member that
 * gave it restarted, or users changed since): the call was not applied,
 * so it goes again, once, with a new token. false: it is answered as is.
 */
static bool etcd_resend_for_token(struct etcd_call *c, json_t *doc)
{
	struct etcd *e = c->e;
	const char *msg = json_string_value(json_object_get(doc, "message"));
	bool refused = etcd_num(doc, "code") == 16 /* Unauthenticated */ ||
		       (msg != NULL && (strstr(msg, "auth store is old") != NULL ||
					strstr(msg, "user name is empty") != NULL));

	if (e->user == NULL || c->kind == ETCD_AUTHENTICATE || c->resent || !refused)
		return false;
	c->resent = true;
	if (c->token_gen == e->token_gen)
		etcd_drop_token(e);
	return (e->token != NULL ? etcd_send(c) : etcd_wait_token(c)) == 0;
}

static void etcd_answered(struct evhttp_request *req, void *arg)
{
	struct etcd_call *c = arg;
	struct etcd *e = c->e;
	struct etcd_result res = {0};
	struct etcd_kv *kvs = NULL;
	char why[400] = "";
	json_t *doc = NULL, *body;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	if (code == 0) {
		const char *url = e->ep[c->endpoint].url;

		if (c->failed && c->failure == EVREQ_HTTP_TIMEOUT) {
			res.status = -ETIMEDOUT;
			snprintf(why, sizeof(why), "etcd at %s did not answer within %u ms", url,
				 e->timeout_ms);
		} else if (c->failed && c->failure == EVREQ_HTTP_DATA_TOO_LONG) {
			res.status = -EPROTO;
			snprintf(why, sizeof(why), "etcd at %s: an answer over 8 MiB, not etcd's",
				 url);
		} else if (etcd_tls_failure(e, c->endpoint, why, sizeof(why))) {
			res.status = -EPROTO;
		} else {
			res.status = -ECONNREFUSED;
			snprintf(why, sizeof(why), "cannot reach etcd at %s", url);
		}
		etcd_next_endpoint(e, c->endpoint);
		goto out;
	}
	{
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(in);
		json_error_t jerr;

		const char *text = len > 0 ? (const char *)evbuffer_pullup(in, -1) : NULL;

		if (text == NULL) /* (empty, or no memory to make it one piece) */
			text = "", len = 0;

		if (len > ETCD_MAX_ANSWER || (doc = json_loadb(text, len, 0, &jerr)) == NULL ||
		    !json_is_object(doc)) {
			res.status = -EPROTO;
			snprintf(why, sizeof(why), "etcd at %s: not etcd's answer (HTTP %d)%s%.*s",
				 e->ep[c->endpoint].url, code, code != 200 ? ": " : "",
				 code != 200 ? (int)etcd_printable(text, len, 160) : 0, text);
			goto out;
		}
	}
	if (code != 200) {
		if (etcd_resend_for_token(c, doc)) {
			json_decref(doc);
			return;
		}
		res.status = etcd_error_of(doc, code, why, sizeof(why));
		goto out;
	}
	/* keepalive's answer is one message of a stream: {"result": {...}} */
	body = c->kind == ETCD_KEEPALIVE ? json_object_get(doc, "result") : doc;
	if (!json_is_object(body)) {
		res.status =
		    json_is_object(json_object_get(doc, "error"))
			? etcd_error_of(json_object_get(doc, "error"), code, why, sizeof(why))
			: -EPROTO;
		if (res.status == -EPROTO)
			snprintf(why, sizeof(why), "etcd: a keepalive answered nothing");
		goto out;
	}
	res.revision = etcd_num(json_object_get(body, "header"), "revision");
	res.lease = etcd_num(body, "ID");
	res.ttl = etcd_num(body, "TTL");
	res.token = json_string_value(json_object_get(body, "token"));
	if (c->kind == ETCD_RANGE) {
		res.more = json_is_true(json_object_get(body, "more"));
		res.status = etcd_kvs_of(json_object_get(body, "kvs"), &kvs, &res.nkvs);
	} else if (c->kind == ETCD_TXN) {
		res.succeeded = json_is_true(json_object_get(body, "succeeded"));
	} else if (c->kind == ETCD_CREATE) {
		json_t *first = json_array_get(json_object_get(body, "responses"), 0);

		res.succeeded = json_is_true(json_object_get(body, "succeeded"));
		if (!res.succeeded)
			res.status = etcd_kvs_of(
			    json_object_get(json_object_get(first, "response_range"), "kvs"), &kvs,
			    &res.nkvs);
	}
	if (res.status == -EPROTO)
		snprintf(why, sizeof(why), "etcd at %s: a key or value that is not base64",
			 e->ep[c->endpoint].url);
	else if (res.status < 0)
		snprintf(why, sizeof(why), "out of memory");
out:
	LIST_REMOVE(c, entry);
	res.error = why;
	res.kvs = kvs;
	c->done(c->arg, &res);
	while (res.nkvs-- > 0)
		etcd_kv_free(&kvs[res.nkvs]);
	free(kvs);
	json_decref(doc);
	etcd_call_free(c);
}

/* The names etcd's certificate must have: the endpoint's host, an address or a DNS name. */
static int etcd_tls_names(SSL *ssl, const char *host)
{
	X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
	unsigned char addr[16];

	if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(param, host) == 1 ? 0 : -EINVAL;
	X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1 ? 0
											 : -EINVAL;
}

/* A new connection to ep, in TLS for https; NULL without memory. */
struct evhttp_connection *etcd_connect(struct etcd *e, struct etcd_endpoint *ep)
{
	struct bufferevent *bev = NULL;
	struct evhttp_connection *conn;

	if (ep->tls) {
		SSL *ssl = SSL_new(e->tls);

		if (ssl == NULL || etcd_tls_names(ssl, ep->host) < 0 ||
		    (bev = bufferevent_openssl_socket_new(e->base, -1, ssl,
							  BUFFEREVENT_SSL_CONNECTING,
							  BEV_OPT_CLOSE_ON_FREE)) == NULL) {
			SSL_free(ssl);
			return NULL;
		}
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	}
	conn = evhttp_connection_base_bufferevent_new(e->base, NULL, bev, ep->host, ep->port);
	if (conn == NULL && bev != NULL)
		bufferevent_free(bev);
	return conn;
}

/* A TLS connection closed: libevent cannot reconnect it, so it is retired at its next use. */
static void etcd_closed(struct evhttp_connection *conn, void *arg)
{
	struct etcd_endpoint *ep = arg;

	if (ep->conn == conn)
		ep->closed = true;
}

/* The connection to the endpoint in use, made on first use. */
static struct evhttp_connection *etcd_conn(struct etcd *e)
{
	struct timeval tv = {e->timeout_ms / 1000, (e->timeout_ms % 1000) * 1000};
	struct etcd_endpoint *ep = &e->ep[e->cur];

	if (ep->conn != NULL && ep->closed && e->nretired < ARRAY_SIZE(e->retired)) {
		struct timeval now = {0, 0};

		e->retired[e->nretired++] = ep->conn;
		evtimer_add(e->reaper, &now);
		ep->conn = NULL;
		ep->closed = false;
	}
	if (ep->conn == NULL) {
		ep->conn = etcd_connect(e, ep);
		if (ep->conn != NULL) {
			evhttp_connection_set_timeout_tv(ep->conn, &tv);
			evhttp_connection_set_retries(ep->conn, 0);
			/* (an endpoint that is not etcd cannot make us buffer without end) */
			evhttp_connection_set_max_body_size(ep->conn, ETCD_MAX_ANSWER);
			evhttp_connection_set_max_headers_size(ep->conn, 64 << 10);
			if (ep->tls)
				evhttp_connection_set_closecb(ep->conn, etcd_closed, ep);
		}
	}
	return ep->conn;
}

/* POST text to path (with token, if not NULL); req is freed if it cannot go. */
int etcd_post(struct evhttp_connection *conn, const char *host, const char *path, const char *text,
	      const char *token, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (evhttp_add_header(h, "Host", host) == 0 &&
	    evhttp_add_header(h, "Content-Type", "application/json") == 0 &&
	    (token == NULL || evhttp_add_header(h, "Authorization", token) == 0) &&
	    evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text)) == 0)
		return evhttp_make_request(conn, req, EVHTTP_REQ_POST, path) == 0 ? 0 : -EIO;
	evhttp_request_free(req);
	return -ENOMEM;
}

/*
 * No Nagle on conn's socket (made by now, connecting or connected): in
 * TLS a request leaves as two records (headers, body), and the second
 * would wait for the ACK of the first, which etcd delays (40 ms).
 */
static void etcd_nodelay(struct evhttp_connection *conn)
{
	evutil_socket_t fd = bufferevent_getfd(evhttp_connection_get_bufferevent(conn));
	int one = 1;

	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Send c to the endpoint in use, with the token in force. */
static int etcd_send(struct etcd_call *c)
{
	struct etcd *e = c->e;
	struct evhttp_connection *conn;
	struct evhttp_request *req;
	int rc;

	if (e->ep[e->cur].tls && e->tls == NULL)
		return -EINVAL; /* (https without etcd_tls()) */
	conn = etcd_conn(e);
	if (conn == NULL || (req = evhttp_request_new(etcd_answered, c)) == NULL)
		return -ENOMEM;
	c->endpoint = e->cur;
	c->token_gen = e->token_gen;
	c->failed = false;
	evhttp_request_set_error_cb(req, etcd_failed);
	/* (a request that cannot go is freed, and its callback never comes) */
	rc = etcd_post(conn, e->ep[e->cur].host, c->path, c->body,
		       c->kind == ETCD_AUTHENTICATE ? NULL : e->token, req);
	if (rc == 0)
		etcd_nodelay(conn);
	return rc;
}

/* A call that was taken but cannot go: answered from here (the loop), not sent. */
static void etcd_answer_now(struct etcd_call *c, int status, const char *why)
{
	struct etcd_result res = {.status = status, .error = why};

	LIST_REMOVE(c, entry);
	c->done(c->arg, &res);
	etcd_call_free(c);
}

/* etcd answered the authentication: the waiting calls and watches go, or fail with it. */
static void etcd_authenticated(void *arg, const struct etcd_result *res)
{
	struct etcd *e = arg;
	struct etcd_watch *w, *w_next;
	struct etcd_call *c;
	char why[600];
	int status = res->status;

	e->authenticating = false;
	if (e->closing) /* (etcd_free() answers the waiting calls itself) */
		return;
	if (status == 0 && (res->token == NULL || res->token[0] == '\0' ||
			    strcspn(res->token, "\r\n") != strlen(res->token)))
		status = -EPROTO;
	if (status == 0 && (e->token = strdup(res->token)) == NULL)
		status = -ENOMEM;
	if (status == 0) {
		e->token_gen++;
	} else {
		snprintf(why, sizeof(why), "etcd user %s: %s", e->user,
			 status == -EPROTO && res->error[0] == '\0' ? "etcd gave no token"
			 : status == -ENOMEM			    ? "out of memory"
								    : res->error);
		if (status == -EIO) /* (etcd refused the user or its password) */
			status = -EACCES;
	}
	while ((c = TAILQ_FIRST(&e->waiting)) != NULL) {
		TAILQ_REMOVE(&e->waiting, c, wait_entry);
		c->waiting = false;
		if (status < 0)
			etcd_answer_now(c, status, why);
		else if (etcd_send(c) < 0)
			etcd_answer_now(c, -ENOMEM, "out of memory");
	}
	for (w = LIST_FIRST(&e->watches); w != NULL; w = w_next) {
		w_next = LIST_NEXT(w, entry);
		if (w->create == NULL || w->cancelled)
			continue;
		if (status < 0) {
			json_decref(w->create);
			w->create = NULL;
			etcd_watch_end(w, status, why);
		} else if (etcd_watch_start(w) < 0) {
			etcd_watch_end(w, -ENOMEM, "out of memory");
		}
	}
}

/* Authenticate, unless that is under way: the token is e->token once etcd answers. */
int etcd_authenticate(struct etcd *e)
{
	json_t *o;
	int rc;

	if (e->authenticating)
		return 0;
	o = json_pack("{ssss}", "name", e->user, "password", e->password);
	if (o == NULL)
		return -ENOMEM;
	e->authenticating = true;
	rc = etcd_call(e, ETCD_AUTHENTICATE, "/v3/auth/authenticate", o, etcd_authenticated, e);
	if (rc < 0)
		e->authenticating = false;
	return rc;
}

/* c goes once the client has a token. */
static int etcd_wait_token(struct etcd_call *c)
{
	int rc = etcd_authenticate(c->e);

	if (rc == 0) {
		c->waiting = true;
		TAILQ_INSERT_TAIL(&c->e->waiting, c, wait_entry);
	}
	return rc;
}

static int etcd_call(struct etcd *e, enum etcd_kind kind, const char *path, json_t *body,
		     etcd_done_fn *done, void *arg)
{
	struct etcd_call *c = body != NULL ? calloc(1, sizeof(*c)) : NULL;
	int rc;

	if (c == NULL || (c->body = json_dumps(body, JSON_COMPACT)) == NULL) {
		json_decref(body);
		free(c);
		return -ENOMEM;
	}
	json_decref(body);
	c->e = e;
	c->kind = kind;
	c->path = path;
	c->done = done;
	c->arg = arg;
	LIST_INSERT_HEAD(&e->calls, c, entry);
	if (kind != ETCD_AUTHENTICATE && e->user != NULL && e->token == NULL)
		rc = etcd_wait_token(c);
	else
		rc = etcd_send(c);
	if (rc < 0) {
		LIST_REMOVE(c, entry);
		etcd_call_free(c);
	}
	return rc;
}

/* Put value under key (with a lease: the key goes when the lease does; 0: none). */
int etcd_put(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
	     etcd_done_fn *done, void *arg)
{
	json_t *o = json_object();
	char *v = etcd_b64(value, len);

	if (o == NULL || v == NULL || etcd_set_key(o, "key", key, false) < 0 ||
	    json_object_set_new(o, "value", json_string(v)) < 0 ||
	    (lease != 0 && json_object_set_new(o, "lease", etcd_int(lease)) < 0)) {
		json_decref(o);
		free(v);
		return -ENOMEM;
	}
	free(v);
	return etcd_call(e, ETCD_PUT, "/v3/kv/put", o, done, arg);
}

/* A request naming only a key, or every key under it. */
static int etcd_key_call(struct etcd *e, enum etcd_kind kind, const char *path, const char *key,
			 bool prefix, etcd_done_fn *done, void *arg)
{
	json_t *o = json_object();

	if (o == NULL || etcd_set_key(o, "key", key, prefix) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	return etcd_call(e, kind, path, o, done, arg);
}

/* The key, or every key under the prefix. */
int etcd_range(struct etcd *e, const char *key, bool prefix, etcd_done_fn *done, void *arg)
{
	return etcd_key_call(e, ETCD_RANGE, "/v3/kv/range", key, prefix, done, arg);
}

/*
 * At most limit keys under prefix, in key order, from the first after
 * after (NULL: from the first): a page of a prefix too large for one
 * answer; the answer's more says whether keys are left.
 */
int etcd_range_page(struct etcd *e, const char *prefix, const char *after, unsigned limit,
		    etcd_done_fn *done, void *arg)
{
	json_t *o = json_object();
	char *from = after != NULL ? etcd_b64(after, strlen(after) + 1) : NULL; /* after + "\0" */

	if (o == NULL || etcd_set_key(o, "key", prefix, true) < 0 ||
	    (after != NULL &&
	     (from == NULL || json_object_set_new(o, "key", json_string(from)) < 0)) ||
	    json_object_set_new(o, "limit", etcd_int(limit)) < 0) {
		json_decref(o);
		free(from);
		return -ENOMEM;
	}
	free(from);
	return etcd_call(e, ETCD_RANGE, "/v3/kv/range", o, done, arg);
}

int etcd_delete(struct etcd *e, const char *key, bool prefix, etcd_done_fn *done, void *arg)
{
	return etcd_key_call(e, ETCD_DELETE, "/v3/kv/deleterange", key, prefix, done, arg);
}

/*
 * A transaction's compare: key's create revision (modified false; 0: the
 * key does not exist) or its mod revision (modified true) is rev.
 */
static json_t *etcd_revision_is(const char *key, bool modified, int64_t rev)
{
	json_t *cmp = json_object();

	if (cmp == NULL || etcd_set_key(cmp, "key", key, false) < 0 ||
	    json_object_set_new(cmp, "target", json_string(modified ? "MOD" : "CREATE")) < 0 ||
	    json_object_set_new(cmp, "result", json_string("EQUAL")) < 0 ||
	    json_object_set_new(cmp, modified ? "mod_revision" : "create_revision", etcd_int(rev)) <
		0) {
		json_decref(cmp);
		return NULL;
	}
	return cmp;
}

static json_t *etcd_created_at(const char *key, int64_t rev)
{
	return etcd_revision_is(key, false, rev);
}

/*
 * Make key only if it does not exist (one transaction: its create
 * revision is 0, then put, else read it). The answer's succeeded says
 * which; a key made this way names its maker until it is deleted or its
 * lease ends, and its create revision tells one maker from the next.
 */
int etcd_create(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
		etcd_done_fn *done, void *arg)
{
	json_t *cmp = etcd_created_at(key, 0), *put = json_object(), *get = json_object(), *txn;
	char *v = etcd_b64(value, len);

	if (cmp == NULL || put == NULL || get == NULL || v == NULL ||
	    etcd_set_key(put, "key", key, false) < 0 || etcd_set_key(get, "key", key, false) < 0 ||
	    json_object_set_new(put, "value", json_string(v)) < 0 ||
	    (lease != 0 && json_object_set_new(put, "lease", etcd_int(lease)) < 0)) {
		json_decref(cmp);
		json_decref(put);
		json_decref(get);
		free(v);
		return -ENOMEM;
	}
	free(v);
	/* (json_pack takes the three, even when it fails) */
	txn = json_pack("{s[o]s[{so}]s[{so}]}", "compare", cmp, "success", "request_put", put,
			"failure", "request_range", get);
	return txn != NULL ? etcd_call(e, ETCD_CREATE, "/v3/kv/txn", txn, done, arg) : -ENOMEM;
}

/*
 * Puts and deletes, all or none, only while guard exists with
 * create revision guard_rev (a leader's key, in its epoch): the answer's
 * succeeded says whether they were done. A deposed leader's writes are
 * thus refused by etcd itself, whatever it believes.
 */
int etcd_txn(struct etcd *e, const char *guard, int64_t guard_rev, const struct etcd_op *ops,
	     size_t n, etcd_done_fn *done, void *arg)
{
	json_t *cmp = etcd_created_at(guard, guard_rev), *success = json_array(), *txn;
	size_t i;

	if (cmp == NULL || success == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		json_t *o = json_object();
		char *v = ops[i].value != NULL ? etcd_b64(ops[i].value, ops[i].vlen) : NULL;
		int bad = o == NULL || etcd_set_key(o, "key", ops[i].key, ops[i].prefix) < 0 ||
			  (ops[i].value != NULL &&
			   (v == NULL || json_object_set_new(o, "value", json_string(v)) < 0)) ||
			  (ops[i].lease != 0 &&
			   json_object_set_new(o, "lease", etcd_int(ops[i].lease)) < 0);

		free(v);
		if (bad || json_array_append_new(success, json_pack("{so}",
								    ops[i].value != NULL
									? "request_put"
									: "request_delete_range",
								    o)) < 0) {
			if (bad)
				json_decref(o);
			goto fail;
		}
	}
	txn = json_pack("{s[o]so}", "compare", cmp, "success", success);
	return txn != NULL ? etcd_call(e, ETCD_TXN, "/v3/kv/txn", txn, done, arg) : -ENOMEM;
fail:
	json_decref(cmp);
	json_decref(success);
	return -ENOMEM;
}

/*
 * Delete key only while it is the one made at create_rev and last written
 * at mod_rev: nobody wrote it since it was last seen. The answer's
 * succeeded says whether it was deleted.
 */
int etcd_delete_if(struct etcd *e, const char *key, int64_t create_rev, int64_t mod_rev,
		   etcd_done_fn *done, void *arg)
{
	json_t *created = etcd_created_at(key, create_rev);
	json_t *written = etcd_revision_is(key, true, mod_rev), *del = json_object(), *txn;

	if (created == NULL || written == NULL || del == NULL ||
	    etcd_set_key(del, "key", key, false) < 0) {
		json_decref(created);
		json_decref(written);
		json_decref(del);
		return -ENOMEM;
	}
	txn = json_pack("{s[oo]s[{so}]}", "compare", created, written, "success",
			"request_delete_range", del);
	return txn != NULL ? etcd_call(e, ETCD_TXN, "/v3/kv/txn", txn, done, arg) : -ENOMEM;
}

/* A lease of ttl_s seconds: the answer's lease is its id, ttl what etcd granted. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, etcd_done_fn *done, void *arg)
{
	json_t *o = json_pack("{so}", "TTL", etcd_int(ttl_s));

	return o != NULL ? etcd_call(e, ETCD_GRANT, "/v3/lease/grant", o, done, arg) : -ENOMEM;
}

/* Renew a lease for its whole ttl; an answer with ttl 0: the lease is gone. */
int etcd_lease_keepalive(struct etcd *e, int64_t lease, etcd_done_fn *done, void *arg)
{
	json_t *o = json_pack("{so}", "ID", etcd_int(lease));

	return o != NULL ? etcd_call(e, ETCD_KEEPALIVE, "/v3/lease/keepalive", o, done, arg)
			 : -ENOMEM;
}

/* End a lease now, and the keys put with it. */
int etcd_lease_revoke(struct etcd *e, int64_t lease, etcd_done_fn *done, void *arg)
{
	json_t *o = json_pack("{so}", "ID", etcd_int(lease));

	return o != NULL ? etcd_call(e, ETCD_REVOKE, "/v3/lease/revoke", o, done, arg) : -ENOMEM;
}

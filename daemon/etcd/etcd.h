/*
 * daemon/etcd/etcd.h - a client of etcd's v3 JSON gateway (etcd.c), on the
 * daemon's libevent loop.
 *
 * Every call is asynchronous: it returns 0 once the request is on its way
 * (or a negative errno and nothing happens), and its done callback is told
 * the result exactly once, from the loop, never from within the call.
 * Keys are text; values are bytes.
 */
#ifndef POOL_ETCD_H
#define POOL_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct etcd;
struct etcd_watch;

/* A key as etcd keeps it. */
struct etcd_kv {
	char *key;
	uint8_t *value;
	size_t vlen;
	int64_t create_revision; /* the revision that made it: a leader's epoch */
	int64_t mod_revision;
	int64_t version;
	int64_t lease; /* 0: none */
};

/* What a request came to. */
struct etcd_result {
	int status;	   /* 0; -ETIMEDOUT, -ECONNREFUSED (no endpoint answered); -EPROTO (not
			      etcd's answer); -EIO (etcd refused it) */
	const char *error; /* why, for people, when status < 0 */
	int64_t revision;  /* the store's revision when it answered */
	bool succeeded;	   /* a create: the key was made (else kvs holds it as it is) */
	bool more;	   /* a range page: keys are left after the last of kvs */
	int64_t lease;	   /* lease grant and keepalive: its id */
	int64_t ttl;	   /* ... and the seconds it has left (0: it is gone) */
	const char *token; /* an authentication: etcd's token */
	const struct etcd_kv *kvs;
	size_t nkvs;
};

/* One write of a transaction: a put (value not NULL), or a delete. */
struct etcd_op {
	const char *key;
	bool prefix; /* a delete: every key under key */
	const void *value;
	size_t vlen;
	int64_t lease; /* a put: the key goes when this lease does (0: none) */
};

typedef void etcd_done_fn(void *arg, const struct etcd_result *res);
/* A watched key changed (deleted, or put: kv its new value); status < 0: the watch ended. */
typedef void etcd_event_fn(void *arg, int status, const char *error, bool deleted,
			   const struct etcd_kv *kv);

struct etcd *etcd_new(struct event_base *base, const char *endpoints, unsigned timeout_ms,
		      char *err, size_t errlen);
void etcd_free(struct etcd *e);
int etcd_login(struct etcd *e, const char *user, const char *password);
int etcd_tls(struct etcd *e, const char *ca, const char *cert, const char *key, char *err,
	     size_t errlen);
const char *etcd_endpoint(const struct etcd *e);

int etcd_put(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
	     etcd_done_fn *done, void *arg);
int etcd_range(struct etcd *e, const char *key, bool prefix, etcd_done_fn *done, void *arg);
int etcd_range_page(struct etcd *e, const char *prefix, const char *after, unsigned limit,
		    etcd_done_fn *done, void *arg);
int etcd_delete(struct etcd *e, const char *key, bool prefix, etcd_done_fn *done, void *arg);
int etcd_create(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
		etcd_done_fn *done, void *arg);
int etcd_txn(struct etcd *e, const char *guard, int64_t guard_rev, const struct etcd_op *ops,
	     size_t n, etcd_done_fn *done, void *arg);
int etcd_delete_if(struct etcd *e, const char *key, int64_t create_rev, int64_t mod_rev,
		   etcd_done_fn *done, void *arg);
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, etcd_done_fn *done, void *arg);
int etcd_lease_keepalive(struct etcd *e, int64_t lease, etcd_done_fn *done, void *arg);
int etcd_lease_revoke(struct etcd *e, int64_t lease, etcd_done_fn *done, void *arg);

struct etcd_watch *etcd_watch(struct etcd *e, const char *key, bool prefix, int64_t start_revision,
			      etcd_event_fn *fn, void *arg);
void etcd_watch_cancel(struct etcd_watch *w);

#endif

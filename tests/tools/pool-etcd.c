/*
 * tests/tools/pool-etcd.c - daemon/etcd/etcd.c against a real etcd: one
 * operation per command-line word, run in order on one event loop, each
 * printing what etcd answered. tests/integration/etcd.sh reads the lines.
 *
 *	pool-etcd ENDPOINTS OP...
 *	  put:KEY=VALUE  get:KEY  prefix:KEY  del:KEY  create:KEY=VALUE
 *	  lease:TTL (then create and put use it)  keepalive  revoke
 *	  watch:PREFIX (from now; events print as they come)  sleep:MS
 *	  txn:GUARD@REV,KEY=VALUE (a put only while GUARD's create revision is REV)
 *	  page:PREFIX=LIMIT (the next LIMIT keys after the last page's)
 *	  login:USER=PASSWORD (the requests after it authenticate as USER)
 *	  tls:CA[=CERT,KEY] (https endpoints: etcd's certificate of CA; ours)
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/etcd/etcd.h"

static struct event_base *base;
static int64_t lease;
static bool answered;
static char last_key[256]; /* page: the last key of the page before */
static int failures;

static void print_kv(const char *what, const struct etcd_kv *kv)
{
	printf("%s %s=%.*s create=%" PRId64 " mod=%" PRId64 " lease=%s\n", what, kv->key,
	       (int)kv->vlen, (const char *)kv->value, kv->create_revision, kv->mod_revision,
	       kv->lease != 0 ? "yes" : "no");
}

static void done(void *arg, const struct etcd_result *res)
{
	const char *op = arg;
	size_t i;

	answered = true;
	if (res->status < 0) {
		printf("%s: error %d: %s\n", op, res->status, res->error);
		failures++;
		return;
	}
	if (strcmp(op, "lease") == 0)
		lease = res->lease;
	printf("%s: ok revision>0=%d", op, res->revision > 0);
	if (strcmp(op, "create") == 0 || strcmp(op, "txn") == 0)
		printf(" succeeded=%d", res->succeeded);
	if (strcmp(op, "lease") == 0 || strcmp(op, "keepalive") == 0)
		printf(" ttl=%" PRId64, res->ttl);
	if (strcmp(op, "page") == 0) {
		printf(" more=%d", res->more);
		if (res->nkvs > 0)
			snprintf(last_key, sizeof(last_key), "%s", res->kvs[res->nkvs - 1].key);
	}
	printf(" kvs=%zu\n", res->nkvs);
	for (i = 0; i < res->nkvs; i++)
		print_kv("  kv", &res->kvs[i]);
}

static void event_seen(void *arg, int status, const char *error, bool deleted,
		       const struct etcd_kv *kv)
{
	(void)arg;
	if (status < 0)
		printf("watch: ended %d: %s\n", status, error);
	else
		print_kv(deleted ? "watch: delete" : "watch: put", kv);
	fflush(stdout);
}

static void wake(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	answered = true;
}

/* Run the loop until the answer came. */
static void wait_answer(void)
{
	while (!answered)
		event_base_loop(base, EVLOOP_ONCE);
	answered = false;
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct etcd_watch *w = NULL;
	char err[256];
	struct etcd *e;
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: pool-etcd ENDPOINTS OP...\n");
		return 2;
	}
	base = event_base_new();
	e = etcd_new(base, argv[1], 2000, err, sizeof(err));
	if (e == NULL) {
		printf("new: error: %s\n", err);
		return 1;
	}
	for (i = 2; i < argc; i++) {
		char *op = argv[i], *arg = strchr(op, ':'), *eq;
		long sleep_ms = -1;
		int rc = 1; /* (1: not an operation) */

		if (arg != NULL)
			*arg++ = '\0';
		eq = arg != NULL ? strchr(arg, '=') : NULL;
		if (eq != NULL)
			*eq++ = '\0';
		if (strcmp(op, "put") == 0 && eq != NULL)
			rc = etcd_put(e, arg, eq, strlen(eq), lease, done, op);
		else if (strcmp(op, "create") == 0 && eq != NULL)
			rc = etcd_create(e, arg, eq, strlen(eq), lease, done, op);
		else if (strcmp(op, "txn") == 0 && eq != NULL && strchr(arg, '@') != NULL &&
			 strchr(arg, ',') != NULL) { /* txn:GUARD@REV,KEY=VALUE */
			char *at = strchr(arg, '@'), *comma = strchr(arg, ',');
			struct etcd_op put = {.key = comma + 1, .value = eq, .vlen = strlen(eq)};

			*at = *comma = '\0';
			rc = etcd_txn(e, arg, strtoll(at + 1, NULL, 10), &put, 1, done, op);
		} else if (strcmp(op, "get") == 0 && arg != NULL)
			rc = etcd_range(e, arg, false, done, op);
		else if (strcmp(op, "page") == 0 &&
			 eq != NULL) /* page:PREFIX=LIMIT, after the last */
			rc = etcd_range_page(e, arg, last_key[0] != '\0' ? last_key : NULL,
					     (unsigned)atoi(eq), done, op);
		else if (strcmp(op, "prefix") == 0 && arg != NULL)
			rc = etcd_range(e, arg, true, done, op);
		else if (strcmp(op, "del") == 0 && arg != NULL)
			rc = etcd_delete(e, arg, false, done, op);
		else if (strcmp(op, "lease") == 0 && arg != NULL)
			rc = etcd_lease_grant(e, strtoll(arg, NULL, 10), done, op);
		else if (strcmp(op, "keepalive") == 0)
			rc = etcd_lease_keepalive(e, lease, done, op);
		else if (strcmp(op, "tls") == 0 && arg != NULL) {
			char *key = eq != NULL ? strchr(eq, ',') : NULL;

			if (key != NULL)
				*key++ = '\0';
			rc = etcd_tls(e, arg, eq, key, err, sizeof(err));
			if (rc < 0)
				printf("tls: error: %s\n", err);
			sleep_ms = 0;
		} else if (strcmp(op, "login") == 0 && eq != NULL) {
			rc = etcd_login(e, arg, eq);
			sleep_ms = 0; /* (nothing to wait for) */
		} else if (strcmp(op, "revoke") == 0)
			rc = etcd_lease_revoke(e, lease, done, op);
		else if (strcmp(op, "watch") == 0 && arg != NULL) {
			w = etcd_watch(e, arg, true, 0, event_seen, NULL);
			rc = w != NULL ? 0 : -ENOMEM;
			sleep_ms = 300; /* let the watch start */
		} else if (strcmp(op, "sleep") == 0 && arg != NULL) {
			rc = 0;
			sleep_ms = atol(arg);
		}
		if (rc > 0) {
			fprintf(stderr, "pool-etcd: '%s': not an operation\n", argv[i]);
			return 2;
		}
		if (rc < 0) {
			printf("%s: not sent: %s\n", op, strerror(-rc));
			failures++;
			break;
		}
		if (sleep_ms >= 0) {
			struct timeval tv = {sleep_ms / 1000, sleep_ms % 1000 * 1000};

			event_base_once(base, -1, EV_TIMEOUT, wake, NULL, &tv);
		}
		wait_answer();
	}
	etcd_watch_cancel(w);
	event_base_loop(base, EVLOOP_NONBLOCK);
	etcd_free(e);
	event_base_free(base);
	return failures > 0 ? 1 : 0;
}

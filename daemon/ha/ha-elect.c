/*
 * daemon/ha/ha-elect.c - one coordinator among candidates, elected through etcd.
 *
 * A candidate takes a lease of ttl seconds and creates the leader key on
 * it, only if the key does not exist (etcd_create()). The one that made it
 * leads; the key's create revision is its epoch, higher for every new
 * leader, which everything it sends carries so that the others can refuse
 * a deposed leader. The others read who leads and watch the key; when it
 * goes (the leader's lease ended, or it stepped down) they race again.
 *
 * The leader renews its lease every ttl/3, then writes its key again (in
 * a transaction done only while the key is still the one it made). It
 * counts the lease from when it sent the last renewal that etcd answered
 * and followed with that write (etcd counts from when it got it, later),
 * and stops leading before that time plus ttl, whether or not etcd can be
 * reached: so once the key can be made by another candidate, this one no
 * longer acts as leader. elect_leading() checks that time itself, for a
 * process that was frozen past it and whose timers have not run yet.
 *
 * The write is what a standby trusts, not the lease: etcd 3.4 renews a
 * lease for anyone who asks, without authentication, so a dead leader's
 * lease can be kept alive by a stranger, and its key with it. A standby
 * that saw no write of the key for ttl plus the margin deletes it, only
 * if nobody wrote it since (etcd_delete_if()): the leader has stopped
 * acting by then, since its own count ended before.
 *
 * An observer (no self: a node) never stands; it reads who leads and
 * watches the key through every change of leader.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/common.h"
#include "daemon/ha/ha-elect.h"
#include "daemon/etcd/etcd.h"
#include "daemon/ha/ha.h"

#define ELECT_RETRY_MS 500 /* after etcd failed us, before trying again */

enum elect_step { ELECT_GRANTING, ELECT_CREATING, ELECT_LEADING, ELECT_FOLLOWING, ELECT_WAITING };

struct elect {
	struct etcd *etcd;
	char key[256];
	char self[256]; /* "": an observer */
	unsigned ttl_s;
	elect_fn *fn;
	void *arg;
	enum elect_step step;
	int64_t lease;
	int64_t epoch;
	uint64_t renew_sent_ms;	  /* leader: when the renewal in flight was sent */
	uint64_t lease_end_ms;	  /* leader: it leads until then, at the latest */
	int64_t renewed_ttl;	  /* leader: the ttl of the renewal whose write is in flight */
	uint64_t written_seen_ms; /* standby: when it last saw the leader write its key */
	int64_t written_rev;	  /* ... the key's mod revision then */
	struct event *timer;	  /* the next renewal, or the next try */
	struct event *fence;	  /* leader: the end of its lease */
	struct etcd_watch *watch;
	bool busy;  /* a request of ours in flight */
	bool freed; /* elect_free() came while it was: free on its answer */
};

static void elect_campaign(struct elect *el);

static uint64_t elect_margin_ms(const struct elect *el)
{
	uint64_t ttl = (uint64_t)el->ttl_s * 1000;

	return ttl / 4 < 1000 ? ttl / 4 : 1000;
}

static void elect_after(struct elect *el, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};

	evtimer_add(el->timer, &tv);
}

static void elect_revoked(void *arg, const struct etcd_result *res)
{
	(void)arg;
	(void)res; /* (an old lease etcd cannot end now ends with its ttl) */
}

/* Stop leading (or following): say why, and race again after a pause. */
static void elect_lost(struct elect *el, const char *why)
{
	bool was_leading = el->step == ELECT_LEADING;

	evtimer_del(el->fence);
	evtimer_del(el->timer);
	etcd_watch_cancel(el->watch);
	el->watch = NULL;
	el->step = ELECT_WAITING;
	el->epoch = 0;
	if (was_leading) {
		log_warnx("etcd: no longer coordinator: %s", why);
		/* Hand the key over at once if etcd still holds it for this one. */
		etcd_lease_revoke(el->etcd, el->lease, elect_revoked, NULL);
	}
	el->fn(el->arg, false, NULL, 0, why);
	elect_after(el, ELECT_RETRY_MS);
}

/* The lease's end came without a renewal: step down before another can lead. */
static void elect_fenced(evutil_socket_t fd, short what, void *arg)
{
	struct elect *el = arg;
	char why[160];

	(void)fd;
	(void)what;
	snprintf(why, sizeof(why), "its lease was not renewed within %u s (etcd at %s)", el->ttl_s,
		 etcd_endpoint(el->etcd));
	elect_lost(el, why);
}

static void elect_arm_fence(struct elect *el)
{
	uint64_t now = units_now_ms(), at = el->lease_end_ms - elect_margin_ms(el);

	elect_after(el, (uint64_t)el->ttl_s * 1000 / 3);
	if (at <= now) {
		elect_fenced(-1, 0, el);
	} else {
		struct timeval tv = {(time_t)((at - now) / 1000),
				     (suseconds_t)((at - now) % 1000 * 1000)};

		evtimer_add(el->fence, &tv);
	}
}

/* Whether the answer is still wanted (elect_free() came meanwhile: free it now). */
static bool elect_answer(struct elect *el)
{
	el->busy = false;
	if (!el->freed)
		return true;
	free(el);
	return false;
}

/* The leader's key written again after a renewal: the lease counts from that renewal. */
static void elect_written(void *arg, const struct etcd_result *res)
{
	struct elect *el = arg;

	if (!elect_answer(el) || el->step != ELECT_LEADING)
		return;
	if (res->status == 0 && res->succeeded) {
		el->lease_end_ms = el->renew_sent_ms + (uint64_t)el->renewed_ttl * 1000;
		evtimer_del(el->fence);
		elect_arm_fence(el);
		return;
	}
	if (res->status == 0) {
		elect_lost(el, "its key is no longer the one it made (a standby or an operator "
			       "deleted it)");
		return;
	}
	log_warnx("etcd: writing the coordinator's key: %s", res->error);
	elect_after(el, ELECT_RETRY_MS);
}

static void elect_renewed(void *arg, const struct etcd_result *res)
{
	struct elect *el = arg;

	if (!elect_answer(el) || el->step != ELECT_LEADING)
		return;
	if (res->status == 0 && res->ttl > 0) {
		struct etcd_op put = {.key = el->key,
				      .value = el->self,
				      .vlen = strlen(el->self),
				      .lease = el->lease};

		el->renewed_ttl = res->ttl;
		if (etcd_txn(el->etcd, el->key, el->epoch, &put, 1, elect_written, el) == 0)
			el->busy = true;
		else
			elect_after(el, ELECT_RETRY_MS);
		return;
	}
	if (res->status == 0) {
		elect_lost(el, "its lease had ended at etcd");
		return;
	}
	/* etcd did not answer: try again soon; the fence steps down if it never does. */
	log_warnx("etcd: renewing the coordinator's lease: %s", res->error);
	elect_after(el, ELECT_RETRY_MS);
}

static void elect_watched(void *arg, int status, const char *error, bool deleted,
			  const struct etcd_kv *kv)
{
	struct elect *el = arg;

	if (status < 0) {
		char why[480];

		snprintf(why, sizeof(why), "watching the leader: %s", error);
		elect_lost(el, why); /* (which cancels the watch, freeing it) */
		return;
	}
	if (deleted && el->self[0] == '\0') {
		el->epoch = 0;
		el->fn(el->arg, false, NULL, 0, "the leader went");
		return;
	}
	if (deleted) {
		etcd_watch_cancel(el->watch);
		el->watch = NULL;
		el->step = ELECT_WAITING;
		el->fn(el->arg, false, NULL, 0, "the leader went");
		if (!el->busy) /* (else once the check of the leader in flight is answered) */
			elect_campaign(el);
		return;
	}
	el->written_seen_ms = units_now_ms();
	el->written_rev = kv->mod_revision;
	if (kv->create_revision != el->epoch) { /* a new leader came between */
		el->epoch = kv->create_revision;
		el->fn(el->arg, false, (const char *)kv->value, el->epoch, NULL);
	}
}

/* A standby's check of a silent leader: its key deleted, or written since. */
static void elect_unseated(void *arg, const struct etcd_result *res)
{
	struct elect *el = arg;

	if (!elect_answer(el))
		return;
	if (res->status == 0 && res->succeeded)
		log_warnx("etcd: the coordinator of epoch %lld wrote nothing for %u s, though "
			  "its lease lives on: its key is deleted",
			  (long long)el->epoch, el->ttl_s);
	if (el->step == ELECT_WAITING) { /* the watch saw the key go meanwhile */
		elect_campaign(el);
		return;
	}
	if (el->step != ELECT_FOLLOWING)
		return;
	if (res->status == 0 && !res->succeeded) /* (written since: the watch brings it) */
		el->written_seen_ms = units_now_ms();
	elect_after(el, (uint64_t)el->ttl_s * 1000 / 3); /* (the watch sees the key go) */
}

/* A standby: delete the key of a leader that stopped writing it (ha-elect.c's comment). */
static void elect_check_leader(struct elect *el)
{
	uint64_t silent_ms = (uint64_t)el->ttl_s * 1000 + elect_margin_ms(el);

	if (units_now_ms() < el->written_seen_ms + silent_ms ||
	    etcd_delete_if(el->etcd, el->key, el->epoch, el->written_rev, elect_unseated, el) < 0)
		elect_after(el, (uint64_t)el->ttl_s * 1000 / 3);
	else
		el->busy = true;
}

static void elect_created(void *arg, const struct etcd_result *res)
{
	struct elect *el = arg;

	if (!elect_answer(el))
		return;
	if (res->status < 0) {
		elect_lost(el, res->error);
		return;
	}
	if (res->succeeded) {
		el->step = ELECT_LEADING;
		el->epoch = res->revision;
		el->lease_end_ms = el->renew_sent_ms + (uint64_t)el->ttl_s * 1000;
		log_info("etcd: coordinator, epoch %lld (lease of %u s)", (long long)el->epoch,
			 el->ttl_s);
		el->fn(el->arg, true, el->self, el->epoch, NULL);
		elect_arm_fence(el);
		return;
	}
	if (res->nkvs == 0 && el->self[0] != '\0') { /* gone between the compare and the read */
		elect_campaign(el);
		return;
	}
	el->step = ELECT_FOLLOWING;
	if (res->nkvs == 0) {
		el->fn(el->arg, false, NULL, 0, "no leader yet");
	} else {
		el->epoch = res->kvs[0].create_revision;
		el->written_seen_ms = units_now_ms();
		el->written_rev = res->kvs[0].mod_revision;
		el->fn(el->arg, false, (const char *)res->kvs[0].value, el->epoch, NULL);
		if (el->self[0] != '\0')
			elect_after(el, (uint64_t)el->ttl_s * 1000 / 3);
	}
	el->watch = etcd_watch(el->etcd, el->key, false,
			       (res->nkvs ? res->kvs[0].mod_revision : res->revision) + 1,
			       elect_watched, el);
	if (el->watch == NULL)
		elect_lost(el, "out of memory");
}

static void elect_granted(void *arg, const struct etcd_result *res)
{
	struct elect *el = arg;
	int rc;

	if (!elect_answer(el))
		return;
	if (res->status < 0 || res->lease == 0) {
		elect_lost(el, res->status < 0 ? res->error : "etcd granted no lease");
		return;
	}
	el->lease = res->lease;
	el->step = ELECT_CREATING;
	rc = etcd_create(el->etcd, el->key, el->self, strlen(el->self), el->lease, elect_created,
			 el);
	if (rc < 0)
		elect_lost(el, "out of memory");
	else
		el->busy = true;
}

/* Race for the key: a fresh lease, then the create (an observer reads it). */
static void elect_campaign(struct elect *el)
{
	if (el->self[0] == '\0') {
		el->step = ELECT_CREATING;
		if (etcd_range(el->etcd, el->key, false, elect_created, el) < 0)
			elect_lost(el, "out of memory");
		else
			el->busy = true;
		return;
	}
	el->step = ELECT_GRANTING;
	el->renew_sent_ms = units_now_ms(); /* (the lease counts from its grant) */
	if (etcd_lease_grant(el->etcd, el->ttl_s, elect_granted, el) < 0)
		elect_lost(el, "out of memory");
	else
		el->busy = true;
}

static void elect_tick(evutil_socket_t fd, short what, void *arg)
{
	struct elect *el = arg;

	(void)fd;
	(void)what;
	if (el->busy) { /* (an answer still to come, or to time out) */
		elect_after(el, ELECT_RETRY_MS);
		return;
	}
	if (el->step == ELECT_WAITING) {
		elect_campaign(el);
	} else if (el->step == ELECT_LEADING) {
		el->renew_sent_ms = units_now_ms();
		if (etcd_lease_keepalive(el->etcd, el->lease, elect_renewed, el) == 0)
			el->busy = true;
		else
			elect_after(el, ELECT_RETRY_MS);
	} else if (el->step == ELECT_FOLLOWING && el->self[0] != '\0') {
		elect_check_leader(el);
	}
}

/*
 * Stand for election as self (what followers learn: the candidate's
 * address) under key, on leases of ttl_s seconds; fn hears every change
 * of standing. self NULL: only observe who leads. NULL without memory.
 */
struct elect *elect_new(struct event_base *base, struct etcd *etcd, const char *key,
			const char *self, unsigned ttl_s, elect_fn *fn, void *arg)
{
	struct elect *el = calloc(1, sizeof(*el));

	if (el == NULL)
		return NULL;
	el->etcd = etcd;
	snprintf(el->key, sizeof(el->key), "%s", key);
	snprintf(el->self, sizeof(el->self), "%s", self != NULL ? self : "");
	el->ttl_s = ttl_s < 2 ? 2 : ttl_s;
	el->fn = fn;
	el->arg = arg;
	el->step = ELECT_WAITING;
	el->timer = evtimer_new(base, elect_tick, el);
	el->fence = evtimer_new(base, elect_fenced, el);
	if (el->timer == NULL || el->fence == NULL) {
		elect_free(el);
		return NULL;
	}
	elect_after(el, 0);
	return el;
}

/*
 * Whether this candidate leads now (with its epoch): checked against the
 * clock, not only by the timers, which a frozen process has not run yet.
 */
bool elect_leading(const struct elect *el, int64_t *ret_epoch)
{
	if (el->step != ELECT_LEADING || units_now_ms() + elect_margin_ms(el) >= el->lease_end_ms)
		return false;
	if (ret_epoch != NULL)
		*ret_epoch = el->epoch;
	return true;
}

/*
 * Hand the key over now, leading: its lease is revoked through via (a
 * client of the same etcd; done hears its answer; -ENOENT: not leading,
 * nothing sent). The candidate stops leading at once, whatever the answer.
 */
int elect_resign(struct elect *el, struct etcd *via, etcd_done_fn *done, void *arg)
{
	int rc;

	if (el->step != ELECT_LEADING)
		return -ENOENT;
	evtimer_del(el->fence);
	evtimer_del(el->timer);
	el->step = ELECT_WAITING;
	rc = etcd_lease_revoke(via, el->lease, done, arg);
	el->lease = 0;
	return rc;
}

/* Stand down: the key stays until its lease ends (elect_resign() first to hand over at once). */
void elect_free(struct elect *el)
{
	if (el == NULL)
		return;
	if (el->timer != NULL)
		event_free(el->timer);
	if (el->fence != NULL)
		event_free(el->fence);
	el->timer = el->fence = NULL;
	etcd_watch_cancel(el->watch);
	el->watch = NULL;
	if (el->busy)
		el->freed = true; /* the answer in flight frees it */
	else
		free(el);
}

/*
 * daemon/ha/ha.c - the coordinator's place in etcd (coord.etcd).
 *
 * A poold of role coordinator with coord.etcd is a candidate: it stands
 * for election (ha-elect.c) under PREFIX/leader with its peer address, and
 * stays a standby, refusing its clients with a retryable error that names
 * the leader, until it leads. Then it loads the coordinator's state from
 * etcd (coord-log.c, ha-log.c) and starts the coordinator role; nodes come
 * to it as to a restarted coordinator. A leader that stops leading (its
 * lease not renewed, or etcd refusing its writes) exits at once: its role
 * cannot be handed back in place, and a supervisor starts it again as a
 * standby. Until it notices, etcd refuses its writes, and so its replies,
 * which wait for them.
 *
 * A poold of role node with coord.etcd observes the same key and moves its
 * link to each new leader (main.c gives ha_open() peer_follow()).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/ha/ha-elect.h"
#include "daemon/etcd/etcd.h"
#include "daemon/ha/ha.h"
#include "daemon/util/util.h"

struct ha {
	struct poold *pd;
	ha_follow_cb follow;
	struct etcd *etcd;
	struct elect *elect;
	char key[160];	  /* PREFIX/leader */
	bool leading;	  /* this candidate leads: the coordinator role runs */
	char leader[256]; /* the leader as last known ("" none) */
	int64_t epoch;	  /* ... its epoch */
	char why[300];	  /* why there is none, or etcd's last complaint */
	bool complained;  /* logged why there is none, since the last leader */
	uint64_t changes; /* leaders seen */
};

/*
 * Stop at once: _exit(), so that nothing runs on the way out (no library's
 * teardown, no flush of what this poold still meant to send).
 */
void ha_deposed(const char *why)
{
	log_warnx("etcd: no longer the coordinator (%s): stopping, so that only the new leader "
		  "acts",
		  why);
	_exit(1);
}

static void ha_standing(void *arg, bool leading, const char *leader, int64_t epoch, const char *why)
{
	struct ha *ha = arg;
	struct poold *pd = ha->pd;

	if (ha->leading && !leading)
		ha_deposed(why != NULL ? why : "another candidate leads");
	if (leader != NULL && (epoch != ha->epoch || strcmp(leader, ha->leader) != 0))
		ha->changes++;
	snprintf(ha->leader, sizeof(ha->leader), "%s", leader != NULL ? leader : "");
	ha->epoch = epoch;
	/* (once while no leader is known, not at every retry: status shows the last) */
	if (leader == NULL && why != NULL && !ha->complained)
		log_warnx("etcd: no coordinator known: %s", why);
	ha->complained = leader == NULL && why != NULL;
	snprintf(ha->why, sizeof(ha->why), "%s", why != NULL ? why : "");
	if (pd->conf->role == ROLE_NODE) {
		ha->follow(pd, leader, epoch);
		return;
	}
	if (leading) {
		ha->leading = true;
		event_base_loopbreak(pd->base); /* out of ha_campaign() */
	} else if (leader != NULL) {
		log_info("etcd: standby; the coordinator is %s (epoch %lld)", leader,
			 (long long)epoch);
	}
}

/*
 * A client of coord.etcd on base, in TLS to https endpoints, as
 * coord.etcd_user if set; NULL with the reason in err.
 */
static struct etcd *ha_etcd_new(const struct poold_conf *conf, struct event_base *base, char *err,
				size_t errlen)
{
	struct etcd *e =
	    etcd_new(base, conf->coord_etcd, (unsigned)conf->coord_etcd_timeout_ms, err, errlen);

	if (e == NULL)
		return NULL;
	if (conf->coord_etcd_tls_ca[0] != '\0' &&
	    etcd_tls(e, conf->coord_etcd_tls_ca,
		     conf->coord_etcd_tls_cert[0] != '\0' ? conf->coord_etcd_tls_cert : NULL,
		     conf->coord_etcd_tls_key, err, errlen) < 0) {
		etcd_free(e);
		return NULL;
	}
	if (conf->coord_etcd_user[0] != '\0' &&
	    etcd_login(e, conf->coord_etcd_user, conf->etcd_password) < 0) {
		snprintf(err, errlen, "out of memory");
		etcd_free(e);
		return NULL;
	}
	return e;
}

/*
 * With coord.etcd: the etcd client, and the candidate or observer (a node
 * moves its link to each leader it is told by follow). 0 or -errno.
 */
int ha_open(struct poold *pd, ha_follow_cb follow)
{
	const struct poold_conf *conf = pd->conf;
	struct ha *ha;
	char err[256];

	if (conf->coord_etcd[0] == '\0')
		return 0;
	if ((ha = calloc(1, sizeof(*ha))) == NULL)
		return -ENOMEM;
	ha->pd = pd;
	ha->follow = follow;
	snprintf(ha->key, sizeof(ha->key), "%s/leader", conf->coord_etcd_prefix);
	ha->etcd = ha_etcd_new(conf, pd->base, err, sizeof(err));
	if (ha->etcd == NULL) {
		log_warnx("coord.etcd: %s", err);
		free(ha);
		return -EINVAL;
	}
	ha->elect = elect_new(
	    pd->base, ha->etcd, ha->key,
	    conf->role == ROLE_COORDINATOR
		? (conf->coord_advertise[0] != '\0' ? conf->coord_advertise : conf->peer_listen)
		: NULL,
	    (unsigned)(conf->coord_etcd_lease_ms / 1000), ha_standing, ha);
	if (ha->elect == NULL) {
		etcd_free(ha->etcd);
		free(ha);
		return -ENOMEM;
	}
	pd->ha = ha;
	return 0;
}

/*
 * A candidate: wait, serving only the refusals of a standby, until it
 * leads (0), or until poold is told to stop (1).
 */
int ha_campaign(struct poold *pd)
{
	struct ha *ha = pd->ha;

	log_info("etcd: standing for coordinator at %s (key %s)", etcd_endpoint(ha->etcd), ha->key);
	while (!ha->leading) {
		if (event_base_dispatch(pd->base) < 0)
			return -EIO;
		if (!ha->leading)
			return 1; /* (a signal broke the loop) */
	}
	events_add(pd, "coordinator", "elected coordinator through etcd, epoch %lld",
		   (long long)ha->epoch);
	return 0;
}

/* A candidate that does not lead (yet): its clients are refused. */
bool ha_standby(const struct poold *pd)
{
	return pd->ha != NULL && pd->conf->role == ROLE_COORDINATOR && !pd->ha->leading;
}

/*
 * The leader's epoch, checked against the clock: a leader frozen past its
 * lease, which its timers have not noticed yet, stops here before it acts
 * (every request, peer frame and periodic task of the coordinator asks
 * first). false without coord.etcd.
 */
bool ha_epoch(const struct poold *pd, int64_t *ret_epoch)
{
	struct ha *ha = pd->ha;

	if (ha == NULL || !ha->leading)
		return false;
	if (!elect_leading(ha->elect, ret_epoch))
		ha_deposed("its lease ran out: this poold did not run for a while");
	return true;
}

/* Where the coordinator's state is kept, for coord-log.c; NULL without coord.etcd. */
struct etcd *ha_etcd(const struct poold *pd, const char **ret_key)
{
	if (pd->ha == NULL)
		return NULL;
	*ret_key = pd->ha->key;
	return pd->ha->etcd;
}

/* What status and metrics show: the leader, its epoch, the etcd endpoint in use. */
void ha_describe(const struct poold *pd, struct ha_info *ret)
{
	const struct ha *ha = pd->ha;

	memset(ret, 0, sizeof(*ret));
	if (ha == NULL)
		return;
	ret->on = true;
	ret->leading = ha->leading;
	ret->leader = ha->leader;
	ret->epoch = ha->epoch;
	ret->endpoint = etcd_endpoint(ha->etcd);
	ret->why = ha->why;
	ret->changes = ha->changes;
}

static void ha_resigned(void *arg, const struct etcd_result *res)
{
	bool *answered = arg;

	*answered = true;
	if (res->status < 0)
		log_warnx("etcd: the leader key stays until its lease ends: %s", res->error);
}

/*
 * A leader that stops (SIGTERM) hands the leader key over now, so that a
 * standby takes over at once instead of after the lease. It waits for
 * etcd's answer (within coord.etcd_timeout) on a loop of its own: nothing
 * else of this poold, half stopped, runs meanwhile.
 */
static void ha_resign(struct poold *pd)
{
	struct ha *ha = pd->ha;
	struct event_base *base = event_base_new();
	bool answered = false;
	struct etcd *via;
	char err[256];

	ha->leading = false;
	via = base != NULL ? ha_etcd_new(pd->conf, base, err, sizeof(err)) : NULL;
	if (via != NULL && elect_resign(ha->elect, via, ha_resigned, &answered) == 0) {
		while (!answered)
			if (event_base_loop(base, EVLOOP_ONCE) < 0)
				break;
		if (answered)
			log_info("etcd: no longer the coordinator: the leader key is handed over");
	}
	etcd_free(via);
	if (base != NULL)
		event_base_free(base);
}

void ha_close(struct poold *pd)
{
	struct ha *ha = pd->ha;

	if (ha == NULL)
		return;
	if (ha->leading)
		ha_resign(pd);
	elect_free(ha->elect);
	etcd_free(ha->etcd);
	free(ha);
	pd->ha = NULL;
}

/*
 * daemon/ha/ha.h - the coordinator's place in etcd (coord.etcd): standing
 * for coordinator or following the leader, and the journal's records there.
 * The interface of ha/ to the rest of poold.
 */
#ifndef POOLD_HA_H
#define POOLD_HA_H

#include "daemon/poold.h"
#include "daemon/ha/ha-elect.h"
#include "daemon/ha/ha-log.h"

/* ha.c: the coordinator's place in etcd (coord.etcd) */
struct ha_info {
	bool on;	      /* coord.etcd is set */
	bool leading;	      /* this poold leads */
	const char *leader;   /* the leader as last known ("" none) */
	int64_t epoch;	      /* ... its epoch */
	const char *endpoint; /* the etcd endpoint in use */
	const char *why;      /* why no leader is known, or etcd's last complaint */
	uint64_t changes;     /* leaders seen */
};
typedef void (*ha_follow_cb)(struct poold *pd, const char *leader, int64_t epoch);
int ha_open(struct poold *pd, ha_follow_cb follow);
int ha_campaign(struct poold *pd);
bool ha_standby(const struct poold *pd);
void ha_deposed(const char *why) __attribute__((noreturn));
bool ha_epoch(const struct poold *pd, int64_t *ret_epoch);
struct etcd *ha_etcd(const struct poold *pd, const char **ret_key);
void ha_describe(const struct poold *pd, struct ha_info *ret);
void ha_close(struct poold *pd);

#endif /* POOLD_HA_H */

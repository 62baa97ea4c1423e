/*
 * daemon/ha/ha-log.h - the coordinator's records in etcd, written in guarded
 * batches (ha-log.c).
 */
#ifndef POOLD_ETCDLOG_H
#define POOLD_ETCDLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/lend/lend.h"

struct etcd;
struct etcdlog;
struct event_base;

/* Every record up to seq is in etcd. */
typedef void ha_log_durable_fn(void *arg, uint64_t seq);
/* etcd refused a write: the leader key is another leader's now. */
typedef void ha_log_deposed_fn(void *arg, const char *why);

struct ha_log_stats {
	uint64_t records;  /* in the generation in force */
	uint64_t live;	   /* ... at its start (the live set) */
	uint64_t bytes;	   /* appended since open */
	uint64_t txns;	   /* transactions etcd took */
	uint64_t puts;	   /* writes sent in them */
	uint64_t rewrites; /* since open */
	uint64_t failures; /* transactions etcd did not answer */
	uint64_t waiting;  /* records not yet in etcd */
	char last_error[256];
};

struct etcdlog *ha_log_open(struct event_base *base, struct etcd *etcd, const char *prefix,
			    const char *guard, int64_t epoch, uint64_t rewrite_min,
			    journal_record_fn replay, ha_log_durable_fn *durable_fn,
			    ha_log_deposed_fn *deposed_fn, void *arg, char *err, size_t errlen);
void ha_log_close(struct etcdlog *el);
int ha_log_append(struct etcdlog *el, const void *rec, size_t len);
uint64_t ha_log_unsynced(const struct etcdlog *el);
bool ha_log_wants_rewrite(const struct etcdlog *el);
int ha_log_rewrite(struct etcdlog *el, int (*fill)(void *arg, struct etcdlog *el), void *arg);
void ha_log_stats(const struct etcdlog *el, struct ha_log_stats *ret);

#endif

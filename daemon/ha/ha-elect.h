/*
 * daemon/ha/ha-elect.h - electing one coordinator among candidates through etcd
 * (ha-elect.c).
 */
#ifndef POOL_ELECT_H
#define POOL_ELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/etcd/etcd.h"

struct event_base;
struct elect;

/*
 * The candidate's standing changed: leading (epoch: its term), or following
 * leader (its value in etcd, epoch its term; NULL and 0 while there is
 * none), or neither, with why (etcd unreachable: campaigning again).
 */
typedef void elect_fn(void *arg, bool leading, const char *leader, int64_t epoch, const char *why);

struct elect *elect_new(struct event_base *base, struct etcd *etcd, const char *key,
			const char *self, unsigned ttl_s, elect_fn *fn, void *arg);
int elect_resign(struct elect *el, struct etcd *via, etcd_done_fn *done, void *arg);
void elect_free(struct elect *el);
bool elect_leading(const struct elect *el, int64_t *ret_epoch);

#endif

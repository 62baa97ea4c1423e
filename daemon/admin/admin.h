/*
 * daemon/admin/admin.h - what reports on the whole poold: its status, the
 * nodes, the recent events, the Prometheus endpoint. The interface of admin/
 * to the rest of poold.
 */
#ifndef POOLD_ADMIN_H
#define POOLD_ADMIN_H

#include "daemon/control/control.h"

/* events-serve.c: the recent events (util.h: events_add()) */
extern const struct ctl_handler events_handlers[];

/* metrics.c: the Prometheus endpoint */
extern const struct ctl_handler metrics_handlers[];
int metrics_open(struct poold *pd);
void metrics_close(struct poold *pd);

/* status-serve.c, nodes-serve.c */
extern const struct ctl_handler status_handlers[];
extern const struct ctl_handler nodes_handlers[];

#endif /* POOLD_ADMIN_H */

/*
 * daemon/xfer/xfer.h - transfers carried for local clients, between their
 * windows and the memory their grants reach. The interface of xfer/ to the
 * rest of poold.
 */
#ifndef POOLD_XFER_H
#define POOLD_XFER_H

#include "daemon/control/control.h"

/* xfer.c: transfers carried for local clients, between their windows and granted memory */
bool xfer_busy(void);
void xfer_session_end(struct poold *pd, uint64_t session);
char *xfer_window_map(uint64_t session, uint32_t id, uint64_t *ret_size);
void xfer_close(struct poold *pd);
#define XFER_STATS 7
void xfer_stats(struct poold *pd, uint64_t ret[XFER_STATS]);
extern const struct ctl_handler xfer_handlers[];

#endif /* POOLD_XFER_H */

/*
 * daemon/vec/vec.h - vector indexes searched near their data. The interface
 * of vec/ to the rest of poold.
 */
#ifndef POOLD_VEC_H
#define POOLD_VEC_H

#include "daemon/control/control.h"

/* vec-serve.c: vector indexes searched near their data */
void vec_serve(struct poold *pd, struct conn *conn, uint64_t req_id, const Pool__VecRequest *vr);
extern const struct ctl_handler vec_handlers[];

#endif /* POOLD_VEC_H */

/*
 * daemon/coord/coord.h - the coordinator role, its journal and ledger
 * passes, and a node's link to it. The interface of coord/ to the rest of
 * poold.
 */
#ifndef POOLD_COORD_H
#define POOLD_COORD_H

#include "daemon/poold.h"

struct conn;
struct ha_log_stats;
struct holding;
struct holdreport;
struct journal_stats;
struct lease;
struct region;
struct req;
struct space_hooks;

/*
 * The largest frame poolds take from each other on a peer link: once its
 * node registered, and before (peer.c, coord.c). Lists that grow with the
 * data go in chunks of peer.chunk_size, well under it.
 */
#define PEER_FRAME_MAX (16u << 20)
#define PEER_UNREG_FRAME_MAX (256u << 10)

extern const struct space_hooks coord_space_hooks; /* coord.c's (the unit tests' too) */
/* coord-log.c: the coordinator's journal (coord.journal), or its state in etcd (coord.etcd) */
int coord_log_open(struct poold *pd);
void coord_log_close(struct poold *pd);
bool coord_log_etcd_stats(const struct poold *pd, struct ha_log_stats *ret);
int coord_log_hold_reply(struct poold *pd, struct conn *c, uint16_t type, uint64_t req_id,
			 const ProtobufCMessage *msg);
void coord_log_region(struct poold *pd, const struct region *r);
void coord_log_region_gone(struct poold *pd, const struct region *r, const uint32_t *nodes,
			   size_t n);
void coord_log_tombstone_done(struct poold *pd, uint64_t id, uint32_t node);
void coord_log_namespaces(struct poold *pd);
void coord_log_node(struct poold *pd, uint32_t id);
void coord_log_lease(struct poold *pd, const struct region *r, const struct lease *l, bool taken);
size_t journals_stats(struct poold *pd, const char *names[2], struct journal_stats *st);
/* reconcile.c: lenders' records kept in step with the map (coordinator) */
void reconcile_ask(struct poold *pd, uint32_t node);
void reconcile_report(struct poold *pd, uint32_t node, struct holdreport *report);
void reconcile_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n);
bool reconcile_run(struct poold *pd, uint64_t budget_us);
void reconcile_close(struct poold *pd);

/* coord.c: the coordinator role */
int coord_open(struct poold *pd);
void coord_close(struct poold *pd);
int coord_probe_all(struct poold *pd, struct req *r);
void coord_session_end(struct poold *pd, uint32_t node, uint64_t session);

/* peer.c: a node's link to the coordinator */
int peer_open(struct poold *pd);
void peer_close(struct poold *pd);
void peer_follow(struct poold *pd, const char *leader, int64_t epoch);
int peer_forward(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
void peer_session_end(struct poold *pd, uint64_t session);

#endif /* POOLD_COORD_H */

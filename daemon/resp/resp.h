/*
 * daemon/resp/resp.h - the Redis-protocol endpoint, on the coordinator or
 * relayed by a node. The interface of resp/ to the rest of poold.
 */
#ifndef POOLD_RESP_H
#define POOLD_RESP_H

#include "daemon/control/control.h"

struct poold_conf;

extern const struct ctl_handler respshard_handlers[];
int resp_auth(const struct poold_conf *conf, const char *user, const char *password, size_t len,
	      uint32_t *ret_uid);
bool resp_remote_busy(void); /* the RESP endpoint's transfers (resp-remote.c) */
/* resp.c: the Redis-protocol endpoint to the KV cache (coordinator) */
int resp_open(struct poold *pd);
/* Whether its databases are sharded (resp.placement): every node runs commands (resp-shard.c). */
bool resp_sharded(const struct poold *pd);
/* Commands (or parts) of sharded databases sent to other owners, and served for other nodes. */
void resp_shard_stats(uint64_t *to_owners, uint64_t *from_nodes);
void resp_close(struct poold *pd);
int resp_endpoint(struct poold *pd, char *buf, size_t len);
/* What a RESP endpoint served, for the metrics: its own (coordinator) or a node's relay. */
struct resp_stats {
	uint64_t connections;		    /* open now */
	uint64_t refused;		    /* connections refused, ever */
	uint64_t commands;		    /* run, ever (the coordinator's) */
	uint64_t to_coordinator, to_client; /* bytes relayed, ever (a node's) */
	bool relay;
};
bool resp_stats(const struct poold *pd, struct resp_stats *ret);

/* resp-relay.c: a node's RESP endpoint, relayed to the coordinator's */
int resp_relay_open(struct poold *pd);
void resp_relay_close(struct poold *pd);
void resp_relay_learn(struct poold *pd, const char *endpoint, int link_fd);
bool resp_relay_stats(const struct poold *pd, struct resp_stats *ret);

#endif /* POOLD_RESP_H */

/*
 * daemon/link/link.h - how poolds reach each other: the ways to other nodes'
 * memory (checked links or UCX), calls between nodes, link probes, copies.
 * The interface of link/ to the rest of poold.
 */
#ifndef POOLD_LINK_H
#define POOLD_LINK_H

#include "daemon/poold.h"

struct fab_link_peer;
struct fab_rma_stats;
struct req;

/* nodecall.c: requests between nodes' poolds, on the links between them */
int nodecall_forward(struct req *r, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		     size_t max);
/* who a call is made for: the client, as its own poold saw it */
struct nodecall_as {
	uint32_t uid, gid, pid;
	bool admin;
	uint64_t session;
};
typedef void (*nodecall_cb)(struct poold *pd, void *arg, int status, uint16_t type,
			    const uint8_t *reply, size_t len);
int nodecall_send(struct poold *pd, uint32_t node, const struct nodecall_as *as, uint16_t type,
		  const ProtobufCMessage *msg, size_t max, nodecall_cb cb, void *arg);
int nodecall_send_apart(struct poold *pd, uint32_t node, const struct nodecall_as *as,
			uint16_t type, const ProtobufCMessage *msg, size_t max, nodecall_cb cb,
			void *arg);
void nodecall_as_req(const struct req *r, struct nodecall_as *ret);
/*
 * A call's answer as its callback has it: 0 with the reply (of type want)
 * in *ret, to free with wire_msg_free(); or the error: the call's, the
 * code of an Error, -EBADMSG or -EPROTO for a reply malformed or of
 * another type.
 */
int nodecall_reply(int status, uint16_t type, const uint8_t *bytes, size_t len, uint16_t want,
		   ProtobufCMessage **ret);
int nodecall_answer(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void nodecall_open(struct poold *pd, void (*session_end)(struct poold *pd, uint32_t node,
							 uint64_t session, bool all));
/* carry*.c: how this poold reaches the memory other poolds lend (fabric.transfer) */
#define CARRY_PROBE_ARENA UINT32_MAX /* a node's probe buffer, as the arena link probes read */
int carry_memory(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
		 bool last, void **ret_ptr);
enum carry_op { CARRY_READ, CARRY_WRITE, CARRY_FADD, CARRY_CSWAP };
/* Bytes of a node's memory: [off, off+len) of the extent its lender holds at ext of arena. */
struct carry_place {
	uint32_t node, arena;
	uint64_t ext, off, len;
};
/* One way of reaching the others' memory. */
struct carry_ops {
	const char *name;
	int (*open)(struct poold *pd);
	void (*close)(struct poold *pd);
	/* Start one transfer to m (its way made if it has none): 0 (cb later, once) or -errno. */
	int (*start)(struct poold *pd, struct member *m, enum carry_op op,
		     const struct carry_place *p, void *buf, uint64_t a, uint64_t b,
		     uint64_t *ret_old, fab_done_cb cb, void *arg);
	/* Make the writes to m complete there: 0 (cb later), 1 (they are), -errno. */
	int (*flush)(struct poold *pd, struct member *m, fab_done_cb cb, void *arg);
	/* Whether m's way failed (its transfers fail). */
	bool (*failed)(const struct member *m);
	/* Close m's way: what it carries fails, later, from the loop. */
	void (*drop)(struct member *m);
	/* The transports m's way uses, for the link probes. */
	int (*transport)(struct member *m, char *buf, size_t len);
	/* What it moved: grows while it carries, for the loop's polling. */
	uint64_t (*activity)(const struct poold *pd);
};
extern const struct carry_ops carry_link_ops, carry_rma_ops;
int carry_open(struct poold *pd);
void carry_close(struct poold *pd);
int carry_start(struct poold *pd, enum carry_op op, const struct carry_place *p, void *buf,
		uint64_t a, uint64_t b, uint64_t *ret_old, fab_done_cb cb, void *arg,
		uint64_t *ret_gen);
int carry_read(struct poold *pd, const struct carry_place *p, void *buf, fab_done_cb cb, void *arg,
	       uint64_t *ret_gen);
int carry_write(struct poold *pd, const struct carry_place *p, const void *buf, fab_done_cb cb,
		void *arg, uint64_t *ret_gen);
int carry_flush(struct poold *pd, uint32_t node, uint64_t gen, fab_done_cb cb, void *arg);
bool carry_current(struct poold *pd, uint32_t node, uint64_t gen);
bool carry_lost(int err);
uint64_t carry_new_gen(void);
void carry_drop(struct poold *pd, struct member *m);
void carry_joined(struct poold *pd);
void carry_fence(struct poold *pd);
uint64_t carry_activity(const struct poold *pd);
void carry_stats(struct poold *pd, struct fab_rma_stats *ret_issued);
/* carry-link.c */
int carry_link_key(const char *secret, uint8_t ret_key[FAB_LINK_KEY_LEN]);
int carry_link_member(struct poold *pd, const struct fab_link_peer *peer);
int carry_link_way(struct poold *pd, struct member *m);
int carry_link_side(struct poold *pd, struct member *m);

/* copy.c: an extent copied between lenders over the fabric */
typedef void (*copy_done_cb)(struct poold *pd, void *arg, int rc);
void copy_cancel(struct poold *pd);
void copy_close(void);
/* Bytes of a lender's arena: [off, ...) of arena of node. */
struct copy_end {
	uint32_t node, arena;
	uint64_t off;
};
int copy_start(struct poold *pd, struct copy_end src, struct copy_end dst, uint64_t len,
	       copy_done_cb cb, void *arg);

/* probe.c: link probes over the fabric */
typedef void (*probe_done_cb)(struct poold *pd, Pool__ProbeResult **results, size_t n, void *arg);
int probe_run(struct poold *pd, const uint32_t *targets, size_t ntargets, probe_done_cb cb,
	      void *arg);
void probe_results_free(Pool__ProbeResult **results, size_t n);
void probe_result_free(Pool__ProbeResult *res);
Pool__ProbeResult *probe_result_dup(const Pool__ProbeResult *res);

#endif /* POOLD_LINK_H */

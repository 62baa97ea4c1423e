/*
 * daemon/control/control.h - the local control socket: a request, who may
 * ask it and where it is served, its dispatch and reply, and what each
 * session's grants reach. The interface of control/ to the rest of poold.
 */
#ifndef POOLD_CONTROL_H
#define POOLD_CONTROL_H

#include "daemon/poold.h"

struct conn;
struct region_extent;

/*
 * A request being served: where to reply and who asked. Handlers reply with
 * req_reply() and return 0, return a negative code (the dispatcher sends the
 * error reply, with req_errorf()'s message), or return REQ_LATER after
 * req_hold() to reply from a later callback.
 */
struct req {
	struct poold *pd;
	struct conn *conn;
	uint64_t id;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admin;
	bool root;	   /* root or poold's own uid (a local client only) */
	uint32_t node;	   /* node holding the client's session */
	uint64_t session;  /* the client's connection there */
	uint16_t type;	   /* of the request */
	uint64_t start_us; /* when it came */
	bool with_file;	   /* a local session's open or create that wants the region's file */
	/* asked by another node (nodecall.c): the reply goes to answer_to, through answer */
	int (*answer)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
	void *answer_to;
	char errmsg[256];
};

/*
 * How long the requests of one type took, from their arrival to their
 * reply: a histogram with upper bounds REQ_LATENCY_BOUNDS_US (the last
 * bucket has none), their sum and count.
 */
#define REQ_LATENCY_BUCKETS 12
#define REQ_LATENCY_BOUNDS_US                                                                      \
	{                                                                                          \
		50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, 1000000                 \
	}
struct req_latency {
	uint64_t count, sum_us;
	uint64_t bucket[REQ_LATENCY_BUCKETS];
};

#define REQ_LATER 1

/* CTL_ROOT: root or poold's own uid, who could read poold's memory anyway. */
enum ctl_perm { CTL_ANY, CTL_ADMIN, CTL_ROOT };
/* AT_ROUTE: where the request's own data says (control_wiring.route), else as AT_COORD. */
enum ctl_where { AT_HERE, AT_COORD, AT_ROUTE };
#define CTL_NOT_ROUTED 2 /* control_wiring.route: not routed, served as AT_COORD */

/* The permission of one value of a request's "op" field, where it differs from the type's. */
/* An operation (the value of the request's enum field op, never 0) and who may ask for it. */
struct ctl_op {
	int op;
	enum ctl_perm perm;
};

struct ctl_handler {
	uint16_t type;
	enum ctl_perm perm;
	enum ctl_where where; /* AT_COORD: a node forwards it to the coordinator */
	int (*fn)(struct req *r, const ProtobufCMessage *msg);
	const struct ctl_op *ops; /* {0} ended; checked where the request is unpacked */
};

/*
 * What the control socket serves and whom it tells, given once by poold's
 * main (main.c): so that control.c calls no service, and the services
 * call control.c to answer.
 */
struct control_wiring {
	const struct ctl_handler *const *tables; /* each ended by an entry with fn == NULL */
	size_t ntables;
	/* A local client's connection closed: its session ends everywhere. */
	void (*session_end)(struct poold *pd, uint64_t session);
	/* A node passes a request its coordinator serves on to it (>= 0: passed). */
	int (*forward)(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
	/* A request served where its data says (AT_ROUTE): as a handler returns, or CTL_NOT_ROUTED.
	 */
	int (*route)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
	/* Whether a reply waits for the journal (1: held and sent later, 0: send it, -errno). */
	int (*hold_reply)(struct poold *pd, struct conn *c, uint16_t type, uint64_t req_id,
			  const ProtobufCMessage *msg);
	/* Whether a local session's request asks for a memory file with its reply. */
	bool (*wants_file)(uint16_t type, const ProtobufCMessage *msg);
	/* Send a reply with the file it asked for (1: sent, 0: send it as it is, -errno). */
	int (*reply_with_file)(struct req *r, uint16_t type, const ProtobufCMessage *msg);
};

/* control.c: the local control socket and request dispatch */
void control_wire(const struct control_wiring *w);
int control_open(struct poold *pd, struct control **ret_ctl);
void control_close(struct control *ctl);
unsigned control_nclients(const struct control *ctl);
int control_sessions(struct poold *pd, uint64_t **ret_sessions, size_t *ret_n);
void control_notify(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
void control_dispatch(struct req *r, uint16_t type, const uint8_t *payload, size_t len);
const struct ctl_handler *control_handler(uint16_t type);
int req_reply(struct req *r, uint16_t type, const ProtobufCMessage *msg);
void req_send_error(struct req *r, int code);
int req_errorf(struct req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct req *req_hold(const struct req *r);
void req_finish(struct req *r, int rc);

/* grant.c: what each local session may reach, from the coordinator's replies */
struct grant_piece {
	uint32_t node, arena;
	uint64_t ext;	   /* where its extent starts in the arena: what its lender holds */
	uint64_t off, len; /* in the arena */
	uint64_t pos;	   /* where in the op it starts */
};
void grant_reply(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
bool grant_wants(struct poold *pd, uint64_t session, uint16_t type);
void grant_request(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg);
void grant_notice(struct poold *pd, uint64_t session, const char *name, bool gone);
void grant_session_end(struct poold *pd, uint64_t session);
void grant_clear(struct poold *pd);
void grant_expire_all(struct poold *pd);
int grant_region_pieces(struct poold *pd, uint64_t session, uint64_t region, uint64_t off,
			uint64_t len, bool write, struct grant_piece *pieces, size_t max);
int grant_region_extent(struct poold *pd, uint64_t session, uint64_t region,
			struct region_extent *ret_extent, bool *ret_write);
int grant_place_check(struct poold *pd, uint64_t session, uint32_t node, uint32_t arena,
		      uint64_t off, uint64_t within, uint64_t len, bool write);

extern const struct ctl_handler reload_handlers[];

#endif /* POOLD_CONTROL_H */

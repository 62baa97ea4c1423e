/*
 * daemon/region/region.h - the global address space (coordinator): regions,
 * their extents and leases, reclaim and drain, what lenders and lease
 * holders are told, and the requests that reach them. The interface of
 * region/ to the rest of poold.
 */
#ifndef POOLD_REGION_H
#define POOLD_REGION_H

#include "daemon/control/control.h"
#include "daemon/hold/hold.h"
#include "daemon/member/member.h"

struct extent_arena;
struct htab;
struct htab_node;
struct reclaim;

bool region_file_wanted(uint16_t type, const ProtobufCMessage *msg);
int region_reply_with_file(struct req *q, uint16_t type, const ProtobufCMessage *msg);
/* region.c, reclaim.c: the global address space (coordinator) */

/* The allocator of one arena of one lender. */
struct lender_pool {
	TAILQ_ENTRY(lender_pool) entry;
	uint32_t node;
	uint32_t arena;
	enum tier tier;
	int numa;
	uint64_t incarnation;
	uint64_t size;	 /* the arena: the most it may lend */
	uint64_t lent;	 /* what it offers now: the allocator's size */
	bool draining;	 /* poolctl drain: no new extents here */
	bool reconciled; /* the lender's record was compared with the map: usable */
	bool asked; /* its allocator's changes listed since its lender was asked for its record */
	struct extent_arena *alloc;
	uint64_t addr; /* remote address of byte 0, and its key */
	void *rkey;
	size_t rkey_len;
};

/* An extent no region uses any more, kept readable for reclaim.grace. */
struct retired {
	TAILQ_ENTRY(retired) entry;
	uint32_t node, arena;
	uint64_t off, len;
	uint64_t release_at;
	struct reclaim *rc;   /* the reclaim waiting for it, or NULL */
	uint64_t incarnation; /* of the lender when it was retired */
	bool scrub_sent;
	bool scrubbed; /* its lender zeroed it: it may be lent again */
};

/* A client session's hold on a region; ends_at != 0 once the session is gone. */
struct lease {
	TAILQ_ENTRY(lease) entry;
	uint32_t node;
	uint64_t session;
	uint64_t ends_at;
	uint64_t incarnation; /* of its node, when taken */
	bool unconfirmed;     /* from the coordinator's journal: its node has not said it is live */
};

struct region {
	TAILQ_ENTRY(region) entry;
	struct htab_node by_name, by_id; /* in regions.names and .ids while linked */
	TAILQ_HEAD(, lease) lease_list;
	char name[64];
	uint64_t id, size, base, stripe;
	enum region_class cls;
	char placement[32];
	uint32_t mode, uid, gid, creator_node;
	bool anonymous;
	bool lost;	 /* a lender of it restarted or died: its data is gone */
	bool moving;	 /* reclaim is copying it */
	size_t want_ext; /* persistent and lost: the extents it is whole with, to come back */
	uint32_t leases;
	struct region_extent *ext;
	size_t next;
	/*
	 * References to values of a dedup KV namespace this region holds (a
	 * snapshot manifest's pages): the keys, each after a length byte,
	 * dropped when the region goes.
	 */
	uint64_t refs_ns;
	uint8_t *refs;
	size_t refs_len, refs_cap;
	bool refs_unknown; /* rebuilt after a restart: what it holds is to be told again */
};

/* A region gone while a lender of it was not up: that lender's extents of it are scrubbed. */
struct tombstone {
	TAILQ_ENTRY(tombstone) entry;
	uint64_t id;
	uint32_t node;
	char name[64];
};

struct regions {
	TAILQ_HEAD(, region) list;
	struct htab names, ids; /* the regions of list by name and by id */
	TAILQ_HEAD(, lender_pool) pools;
	uint64_t next_id;
	uint64_t next_base;
	size_t count;
	TAILQ_HEAD(, retired) retired; /* moved or evicted extents, readable until released */
	size_t scrubs;		       /* of those, scrubs asked of their lenders, not answered */
	TAILQ_HEAD(, reclaim) reclaims;
	TAILQ_HEAD(, tombstone) tombstones;
	const struct space_hooks *hooks;
	struct reconcile *ledger; /* ledger passes (reconcile.c: reconcile_close() first) */
	uint64_t opened_ms;	  /* units_now_ms() when the coordinator opened it */
};

/*
 * Whom the address space tells what changed, given by the coordinator: so
 * region.c calls neither the KV index nor the coordinator's journal.
 */
struct space_hooks {
	/* A region goes, before its extents do. */
	void (*freed)(struct poold *pd, struct region *r);
	/*
	 * For the journal: a region made, adopted or kept; gone (nodes: its
	 * lenders not told); a lender told of a region destroyed while it was
	 * away; a lease on an anonymous region taken or ended.
	 */
	void (*logged)(struct poold *pd, const struct region *r);
	void (*gone)(struct poold *pd, const struct region *r, const uint32_t *nodes, size_t n);
	void (*buried)(struct poold *pd, uint64_t id, uint32_t node);
	void (*leased)(struct poold *pd, const struct region *r, const struct lease *l, bool taken);
};

int region_open_space(struct poold *pd, const struct space_hooks *hooks);
void region_close_space(struct poold *pd);
bool region_lender_restarted(struct poold *pd, const struct node_info *info);
void region_lender_update(struct poold *pd, const struct node_info *info);
void region_sweep_leases(struct poold *pd);
void region_sweep_retired(struct poold *pd);
bool region_scrubs_full(struct poold *pd);
uint64_t region_arena_used(struct poold *pd, uint32_t node, uint32_t arena);
void region_session_end(struct poold *pd, uint32_t node, uint64_t session);
struct region *region_find(struct regions *rs, const char *name);
struct region *region_find_id(struct regions *rs, uint64_t id);
/* Whether uid (in gid) may access what owner/group/mode guard with want (4 read, 2 write). */
bool mode_allows(uid_t uid, gid_t gid, uid_t owner, gid_t group, unsigned mode, unsigned want);
bool req_mode_allows(const struct req *q, uid_t owner, gid_t group, unsigned mode, unsigned want);
bool region_allowed(const struct region *r, const struct req *q, unsigned want);

/*
 * The address space's operations on regions (region.c), for region-serve.c's
 * requests and for tests: the caller as the coordinator knows it, the
 * answer a status with err saying why it failed.
 */
struct region_caller {
	uint32_t node;	  /* the node of the caller's session */
	uint64_t session; /* its leases are this session's */
	uid_t uid;
	gid_t gid;
	bool admin; /* may destroy and keep others' regions */
};

struct region_spec {
	const char *name;
	uint64_t size;
	enum region_class cls;
	const char *placement; /* local, any, node=N, numa=M, spread[=N] ("": any) */
	uint64_t stripe;       /* spread: bytes per stripe (0: the default) */
	unsigned mode;
	bool anonymous; /* goes with its last lease, until kept */
	bool open;	/* the caller holds a lease on it at once */
};

bool region_may(const struct region *r, const struct region_caller *who, unsigned want);
const char *region_class_name(enum region_class cls);
int region_class_of(const char *name, enum region_class *ret);
int region_create(struct poold *pd, const struct region_spec *spec, const struct region_caller *who,
		  struct region **ret, char *err, size_t errlen);
int region_open(struct poold *pd, const char *name, unsigned want, const struct region_caller *who,
		struct region **ret, char *err, size_t errlen);
int region_close(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		 size_t errlen);
int region_destroy(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		   size_t errlen);
int region_keep(struct poold *pd, const char *name, const struct region_caller *who, char *err,
		size_t errlen);
bool region_pool_usable(struct poold *pd, const struct lender_pool *lp);
bool region_rebuilding(struct poold *pd);
size_t region_unreconciled(struct poold *pd);
bool region_settling(struct poold *pd, char *why, size_t len);
struct lender_pool *region_pool(struct regions *rs, uint32_t node, uint32_t arena);
struct lender_pool *region_pick_avoid(struct poold *pd, enum tier tier, uint64_t len,
				      uint32_t avoid);
void region_free(struct poold *pd, struct region *r);
void region_account(struct poold *pd);
void region_notify(struct poold *pd, struct region *r, enum region_event event);
void region_retire(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		   struct reclaim *rc);
typedef void reclaim_done_fn(void *arg, int rc, const char *summary);
int reclaim_start(struct poold *pd, uint32_t node, uint64_t size, bool drain, reclaim_done_fn *done,
		  void *arg, char *err, size_t errlen);
int reclaim_lend(struct poold *pd, uint32_t node, uint64_t size, char *msg, size_t len);
void reclaim_sweep(struct poold *pd);
int reclaim_extents(struct poold *pd, uint32_t node, struct ledger_extent **ext, size_t *n,
		    size_t *cap);
void reclaim_close(struct poold *pd);
extern const struct ctl_handler reclaim_handlers[];
void region_node_gone(struct poold *pd, uint32_t node);
void region_node_sessions(struct poold *pd, uint32_t node, uint64_t incarnation,
			  const uint64_t *live, size_t n);
bool region_extent_record(struct poold *pd, uint32_t node, uint64_t id, uint32_t arena,
			  uint64_t off, struct region_record *rec);
void region_record(const struct region *r, struct region_record *rec);
void region_tell_extent(struct poold *pd, const struct region *r, size_t i);
int region_replay(struct poold *pd, const struct region_record *rec, uint64_t base);
void region_replay_gone(struct poold *pd, uint64_t id, const char *name, const uint32_t *nodes,
			size_t n);
void region_replay_lease(struct poold *pd, uint64_t id, uint32_t node, uint64_t session,
			 uint64_t incarnation, bool taken);
int region_tombstone_add(struct poold *pd, uint64_t id, const char *name, uint32_t node);
const struct tombstone *region_tombstone(struct poold *pd, uint32_t node, uint64_t id);
void region_tombstone_drop(struct poold *pd, uint32_t node, uint64_t id);
void region_tombstones_done(struct poold *pd, uint32_t node);

int region_adopt(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		 const struct region_record *rec);

/* region-tell.c: what the address space asks of lenders and tells lease holders */
int region_send_scrub(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		      coord_done_cb done, void *arg);
void region_send_notice(struct poold *pd, uint32_t node, const uint64_t *sessions, size_t n,
			const char *name, enum region_event event);
void reclaim_send_limit(struct poold *pd, uint32_t node, uint32_t arena, uint64_t limit);

extern const struct ctl_handler region_handlers[];
extern const struct ctl_handler arena_handlers[];

/* quota.c: the most bytes uid may hold (UINT64_MAX: no bound), and the option that bounds it */
uint64_t quota_of(const struct poold *pd, uint32_t uid, const char **ret_option);
bool quota_over(const struct poold *pd, uint32_t uid, uint64_t need);
/* "uid U holds ...; N more is over OPTION (...)" */
void quota_explain(const struct poold *pd, uint32_t uid, uint64_t need, char *buf, size_t len);

#endif /* POOLD_REGION_H */

/*
 * daemon/hold/hold.h - a lender's record of what it holds: holdings, their
 * wire and journal form, reports in chunks, the coordinator telling lenders,
 * scrubs, ledgers. The interface of hold/ to the rest of poold.
 */
#ifndef POOLD_HOLD_H
#define POOLD_HOLD_H

#include "daemon/member/member.h"
#include "daemon/hold/ledger.h"

struct holdreport;

/* hold.c: a lender's record of what it holds (HOLD_NS_*: Holding.ns_flags) */
#define HOLD_NS_DRAM_ONLY 0x1u	/* Holding.ns_flags: the namespace never spills */
#define HOLD_NS_PERSISTENT 0x2u /* ... its values live in pmem and are journaled */
#define HOLD_NS_NO_EVICT 0x4u	/* ... a full namespace refuses puts */
#define HOLD_NS_DEDUP 0x8u	/* ... keys name their content: puts count references */
#define HOLD_NS_SHARED 0x10u	/* ... across uids: a value is checked against its key at commit */
#define HOLD_NS_SHARDED 0x20u	/* ... its index and values on the KV shards' owners */
#define HOLD_REGION_ID(id) (!((id) >> 63)) /* Holding.region: a region's, not a KV namespace's */
/*
 * A committed KV value where one lender holds it, as its holdings record
 * it, with what it takes to make its namespace again (hold-codec.c maps it
 * to and from a Holding).
 */
struct kv_record { /* (its extent is its holding's) */
	const char *ns;
	uint64_t ns_capacity;
	uint32_t ns_flags;     /* HOLD_NS_* */
	uint32_t ns_replicas;  /* 0: not said */
	uint64_t ns_size_hint; /* 0: not said */
	const uint8_t *key;
	size_t klen;
	uint64_t vlen, version;
	bool has_owner;
	uint32_t owner; /* its writer, whose quota it counts against */
};

/* A region's class (region.h): what its record keeps of it. */
enum region_class { CLASS_PINNED, CLASS_CACHE, CLASS_PERSISTENT };

/*
 * A region as its lenders' holdings and the coordinator's journal record
 * it, enough to make it again (region-serve.c maps it to and from a Holding).
 */
struct region_record {
	uint64_t id; /* 0 where the record does not say */
	const char *name;
	const char *placement; /* NULL or "": any */
	uint64_t size;
	uint32_t extents; /* how many it has */
	uint32_t index;	  /* which of them the record's extent is (a lender's record) */
	uint32_t mode, uid, gid;
	uint64_t stripe;
	enum region_class cls;
	bool anonymous;
};

/*
 * One extent a lender holds, as its record says, and what for: an extent
 * of a named region, a committed KV value, or neither (an extent only the
 * map names, a KV reservation). Its records point into whoever made it.
 */
struct holding {
	struct ledger_extent e; /* e.region: a region's id, or a namespace's KV_HOLD_ID */
	bool has_region;
	struct region_record region;
	bool has_kv;
	struct kv_record kv;
};
int hold_open(struct poold *pd);
int hold_add(struct poold *pd, const struct holding *h, size_t n);
/* scrub.c: a lender's scrubs of large extents, in slices */
bool scrub_later(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, coord_done_cb cb,
		 void *arg);
void scrub_close(struct poold *pd);

void hold_forget(struct poold *pd, uint32_t arena, uint64_t off);
void hold_scrub(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len);
int hold_reach(struct poold *pd, uint32_t arena, uint64_t ext, uint64_t off, uint64_t len,
	       bool last, void **ret_ptr);
void hold_clear(struct poold *pd);
int hold_list(struct poold *pd, struct holding **ret, size_t *ret_n);
int hold_extents(struct poold *pd, size_t *cursor, size_t max, struct ledger_extent **arr,
		 size_t *n, size_t *cap);
bool hold_at(struct poold *pd, uint32_t arena, uint64_t off, struct holding *ret);
/* A holding's place, as a report tells one that ended. */
struct hold_place {
	uint32_t arena;
	uint64_t off;
};
int hold_report_begin(struct poold *pd);
void hold_report_end(struct poold *pd);
const struct holding *hold_report_peek(struct poold *pd);
void hold_report_take(struct poold *pd);
ssize_t hold_report_gone(struct poold *pd, const struct hold_place **ret);
void hold_report_gone_told(struct poold *pd, size_t n);
/* hold-sync.c: the coordinator telling lenders what they hold */
void hold_tell(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
	       uint64_t id);
void hold_tell_holdings(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
			coord_done_cb done, void *arg);

/* hold-report.c: a lender's report of its record in chunks: cut (lender), gathered (coordinator) */
struct holdreport_chunk {
	struct holding *h; /* the next holdings of the record (copies pointing into it) */
	size_t n;
	struct hold_place *gone; /* holdings of earlier chunks that ended since */
	size_t ngone;
	bool more; /* more chunks follow */
};
int holdreport_chunk(struct poold *pd, size_t max, struct holdreport_chunk *ret);
void holdreport_chunk_free(struct holdreport_chunk *c);
int holdreport_add(struct holdreport **rp, uint64_t report, uint32_t seq, bool more,
		   const struct holding *h, size_t n, const struct hold_place *gone, size_t ngone);
int holdreport_result(struct holdreport *r, const struct holding **ret, size_t *ret_n);
int holdreport_holdings(struct holdreport *r, const struct holding **ret, size_t *ret_n);
bool holdreport_ended(const struct holdreport *r, size_t i);
bool holdreport_shrink(struct holdreport *r);
void holdreport_free(struct holdreport *r);
void holdreport_progress(const struct holdreport *r, uint32_t *ret_chunks, size_t *ret_n);

/* hold-codec.c: holdings on the wire and in the pmem journal */
void holding_to_msg(const struct holding *h, Pool__Holding *m);
void holding_of_msg(const Pool__Holding *m, struct holding *h);
ssize_t holding_pack(const struct holding *h, uint8_t *buf, size_t cap);
struct holding_unpacked {
	struct holding h;
	Pool__Holding *msg; /* what h points into */
};
int holding_unpack(const uint8_t *buf, size_t len, struct holding_unpacked *ret);
void holding_unpacked_free(struct holding_unpacked *u);
struct holding *holdings_of_msg(const Pool__Holdings *hs);
void holdings_send(struct poold *pd, uint32_t node, const struct holding *h, size_t n,
		   coord_done_cb done, void *arg);
void holdings_ask(struct poold *pd, uint32_t node);
size_t holding_wire_len(const struct holding *h);
size_t hold_place_wire_len(const struct hold_place *g);
int holdings_chunk_msg(uint64_t report, uint32_t seq, const struct holdreport_chunk *c,
		       Pool__Holdings *ret);
void holdings_chunk_free(Pool__Holdings *hs);
struct hold_place *holding_ends_of_msg(const Pool__Holdings *hs);
int holdings_msg(const struct holding *h, size_t n, Pool__Holdings *hs);
void holdings_msg_free(Pool__Holdings *hs);

#endif /* POOLD_HOLD_H */

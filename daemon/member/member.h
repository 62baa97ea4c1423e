/*
 * daemon/member/member.h - the member table: the nodes, their ids and
 * records (and those on the wire), the KV shard map made from it, and the
 * coordinator's calls to them. The interface of member/ to the rest of
 * poold.
 */
#ifndef POOLD_MEMBER_H
#define POOLD_MEMBER_H

#include "daemon/poold.h"
#include "daemon/member/shardmap.h"

struct wire_hdr;

/* member.c: the member table */
const char *member_state_name(enum member_state state);
struct member *member_find(struct poold *pd, uint32_t id);
struct member *member_find_name(struct poold *pd, const char *name);
int member_update(struct poold *pd, struct node_info *info, struct member **ret_member);
bool member_epoch_ok(const struct member *m, uint64_t epoch);
void member_set_state(struct poold *pd, struct member *m, enum member_state state);
void member_set_kv_drained(struct poold *pd, struct member *m, bool drained);
void member_remove(struct poold *pd, struct member *m);
void member_clear(struct poold *pd);
struct node_info *member_self_info(struct poold *pd);
const struct kv_shard_map *member_kv_shards(struct poold *pd);
void node_info_free(struct node_info *info);

/* member-ids.c: node ids tied to names (coordinator) */
struct node_id {
	uint32_t id;
	char name[64];
	bool kv_drained; /* drained (poolctl drain) until it lends again: it owns no KV shard */
};
const struct node_id *member_ids_find(const struct poold *pd, uint32_t id, const char *name);
bool member_ids_add(struct poold *pd, uint32_t id, const char *name);
bool member_ids_set_drained(struct poold *pd, uint32_t id, bool drained);
void member_ids_clear(struct poold *pd);

/* member-codec.c: the member table's records to and from the wire */
Pool__MemberState member_state_wire(enum member_state state);
enum member_state member_state_of(Pool__MemberState state);
struct node_info *node_info_from_wire(const Pool__NodeInfo *w);
int node_info_to_wire(const struct node_info *info, bool public, Pool__NodeInfo *w);
void node_info_wire_free(Pool__NodeInfo *w);
int member_to_wire(struct poold *pd, const struct member *m, bool public, Pool__Member *w);
void member_wire_free(Pool__Member *w);
Pool__Member *member_to_wire_copy(struct poold *pd, const struct member *m);
int members_msg(struct poold *pd, bool public, Pool__Member ***ret_members, size_t *ret_n);
void members_msg_free(Pool__Member **members, size_t n);

/* member-call.c: the coordinator's calls to its nodes */
/* What a call whose answer is only its status calls back with (0 or -errno). */
typedef void (*coord_done_cb)(struct poold *pd, void *arg, int rc);
int member_call_open(struct poold *pd);
void member_call_close(struct poold *pd);
int coord_request(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
		  coord_done_cb cb, void *arg);
typedef void (*coord_reply_cb)(struct poold *pd, void *arg, int rc, const struct wire_hdr *hdr,
			       const uint8_t *payload);
int coord_call(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg,
	       coord_reply_cb reply, void *arg);
void coord_notice(struct poold *pd, uint32_t node, uint16_t type, const ProtobufCMessage *msg);
void member_call_cancel(struct poold *pd, const void *arg);
void member_call_answer(struct poold *pd, const struct wire_hdr *hdr, const uint8_t *payload);
void member_call_fail(struct poold *pd, uint32_t node);

#endif /* POOLD_MEMBER_H */

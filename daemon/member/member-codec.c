/*
 * daemon/member/member-codec.c - the member table's records on the wire: a node's
 * NodeInfo as it registers, and the Member list the coordinator sends its
 * nodes (with every key) and clients (without what reaches a worker).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/lend/lend.h"
#include "daemon/member/member.h"

/* A member state as the wire says it, and back. */
Pool__MemberState member_state_wire(enum member_state state)
{
	return state == MEMBER_UP	 ? POOL__MEMBER_STATE__MEMBER_STATE_UP
	       : state == MEMBER_SUSPECT ? POOL__MEMBER_STATE__MEMBER_STATE_SUSPECT
					 : POOL__MEMBER_STATE__MEMBER_STATE_DEAD;
}

enum member_state member_state_of(Pool__MemberState state)
{
	return state == POOL__MEMBER_STATE__MEMBER_STATE_UP	   ? MEMBER_UP
	       : state == POOL__MEMBER_STATE__MEMBER_STATE_SUSPECT ? MEMBER_SUSPECT
								   : MEMBER_DEAD;
}

/* A copy of len bytes (at least one byte allocated); NULL when out of memory. */
static void *memberwire_copy(const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);

	if (copy != NULL && len > 0)
		memcpy(copy, data, len);
	return copy;
}

static bool memberwire_bytes(const ProtobufCBinaryData *w, struct node_bytes *b)
{
	b->data = memberwire_copy(w->data, w->len);
	b->len = w->len;
	return b->data != NULL;
}

/* A node's record as the member table keeps it; NULL when out of memory. */
struct node_info *node_info_from_wire(const Pool__NodeInfo *w)
{
	struct node_info *info = calloc(1, sizeof(*info));
	bool ok;
	size_t i;

	if (info == NULL)
		return NULL;
	info->id = w->id;
	info->pmem_capacity = w->pmem_capacity;
	info->pmem_used = w->pmem_used;
	info->probe_addr = w->probe_addr;
	info->probe_len = w->probe_len;
	info->incarnation = w->incarnation;
	info->link_port = w->has_link_port ? w->link_port : 0;
	info->epoch = w->has_epoch ? w->epoch : 0;
	info->kv_shard_size = w->has_kv_shard_size ? w->kv_shard_size : 0;
	info->link_host = strdup(w->link_host != NULL ? w->link_host : "");
	info->name = strdup(w->name);
	info->addr = strdup(w->addr);
	info->version = strdup(w->version);
	info->role = strdup(w->role);
	info->numa = calloc(w->n_numa ? w->n_numa : 1, sizeof(*info->numa));
	info->arenas = calloc(w->n_arenas ? w->n_arenas : 1, sizeof(*info->arenas));
	info->fabric_ports =
	    memberwire_copy(w->fabric_ports, w->n_fabric_ports * sizeof(*w->fabric_ports));
	info->n_fabric_ports = w->n_fabric_ports;
	ok = info->name != NULL && info->addr != NULL && info->version != NULL &&
	     info->link_host != NULL && info->role != NULL && info->numa != NULL &&
	     info->arenas != NULL && info->fabric_ports != NULL &&
	     memberwire_bytes(&w->worker_addr, &info->worker_addr) &&
	     memberwire_bytes(&w->probe_rkey, &info->probe_rkey);
	for (i = 0; ok && i < w->n_numa; i++) {
		info->numa[i].id = w->numa[i]->id;
		info->numa[i].mem_total = w->numa[i]->mem_total;
		info->numa[i].lend_capacity = w->numa[i]->lend_capacity;
		info->numa[i].lend_used = w->numa[i]->lend_used;
		info->n_numa++;
	}
	for (i = 0; ok && i < w->n_arenas; i++) {
		const Pool__Arena *wa = w->arenas[i];
		struct node_arena *a = &info->arenas[i];

		a->id = wa->id;
		a->tier = strcmp(wa->tier, "pmem") == 0 ? TIER_PMEM : TIER_DRAM;
		a->numa = wa->numa;
		a->size = wa->size;
		a->lent = wa->lent;
		a->used = wa->used;
		a->addr = wa->addr;
		a->accounted = wa->has_largest_free && wa->has_free_runs && wa->has_extents;
		a->largest_free = wa->largest_free;
		a->free_runs = wa->free_runs;
		a->extents = wa->extents;
		ok = memberwire_bytes(&wa->rkey, &a->rkey);
		info->n_arenas += ok;
	}
	if (!ok) {
		node_info_free(info);
		return NULL;
	}
	return info;
}

/*
 * Fill w with info for a frame, pointing into info (which must outlive
 * it); free with node_info_wire_free(). For clients (public) it leaves out
 * what reaches a worker: its address, the probe buffer, the remote keys,
 * the arenas' addresses, the fabric ports and where its links are taken.
 * Those travel only on peer links.
 */
int node_info_to_wire(const struct node_info *info, bool public, Pool__NodeInfo *w)
{
	Pool__NumaNode *numa, **np;
	Pool__Arena *arenas, **ap;
	size_t i, nn = info->n_numa, na = info->n_arenas;
	void *block;

	pool__node_info__init(w);
	/* One block, starting with w->numa: the arrays of pointers, then what they point at. */
	block =
	    malloc(nn * (sizeof(*np) + sizeof(*numa)) + na * (sizeof(*ap) + sizeof(*arenas)) + 1);
	if (block == NULL)
		return -ENOMEM;
	np = block;
	ap = (Pool__Arena **)(np + nn);
	numa = (Pool__NumaNode *)(ap + na);
	arenas = (Pool__Arena *)(numa + nn);
	w->id = info->id;
	w->name = info->name;
	w->addr = info->addr;
	w->version = info->version;
	w->role = info->role;
	w->pmem_capacity = info->pmem_capacity;
	w->pmem_used = info->pmem_used;
	w->incarnation = info->incarnation;
	if (!public) {
		w->worker_addr.data = info->worker_addr.data;
		w->worker_addr.len = info->worker_addr.len;
		w->probe_addr = info->probe_addr;
		w->probe_rkey.data = info->probe_rkey.data;
		w->probe_rkey.len = info->probe_rkey.len;
		w->fabric_ports = info->fabric_ports;
		w->n_fabric_ports = info->n_fabric_ports;
		w->link_host = info->link_host;
		w->has_link_port = 1;
		w->link_port = info->link_port;
	}
	w->has_epoch = 1;
	w->epoch = info->epoch;
	w->has_kv_shard_size = 1;
	w->kv_shard_size = info->kv_shard_size;
	w->probe_len = info->probe_len;
	for (i = 0; i < nn; i++) {
		pool__numa_node__init(&numa[i]);
		numa[i].id = info->numa[i].id;
		numa[i].mem_total = info->numa[i].mem_total;
		numa[i].lend_capacity = info->numa[i].lend_capacity;
		numa[i].lend_used = info->numa[i].lend_used;
		np[i] = &numa[i];
	}
	for (i = 0; i < na; i++) {
		const struct node_arena *a = &info->arenas[i];

		pool__arena__init(&arenas[i]);
		arenas[i].id = a->id;
		arenas[i].tier = (char *)tier_name(a->tier);
		arenas[i].numa = a->numa;
		arenas[i].size = a->size;
		arenas[i].lent = a->lent;
		arenas[i].used = a->used;
		if (!public) {
			arenas[i].addr = a->addr;
			arenas[i].rkey.data = a->rkey.data;
			arenas[i].rkey.len = a->rkey.len;
		}
		arenas[i].has_largest_free = arenas[i].has_free_runs = arenas[i].has_extents =
		    a->accounted;
		arenas[i].largest_free = a->largest_free;
		arenas[i].free_runs = a->free_runs;
		arenas[i].extents = a->extents;
		ap[i] = &arenas[i];
	}
	w->numa = np;
	w->n_numa = nn;
	w->arenas = ap;
	w->n_arenas = na;
	return 0;
}

/* Free what node_info_to_wire() allocated: one block, at w->numa. */
void node_info_wire_free(Pool__NodeInfo *w)
{
	free(w->numa);
	w->numa = NULL;
	w->arenas = NULL;
	w->n_numa = w->n_arenas = 0;
}

/*
 * A member for a frame: its record (node_info_to_wire(), public as there),
 * its state and the age of its last heartbeat; free with member_wire_free().
 */
int member_to_wire(struct poold *pd, const struct member *m, bool public, Pool__Member *w)
{
	Pool__NodeInfo *node = malloc(sizeof(*node));

	pool__member__init(w);
	if (node == NULL || node_info_to_wire(m->info, public, node) < 0) {
		free(node);
		return -ENOMEM;
	}
	w->node = node;
	w->state = member_state_wire(m->state);
	w->has_kv_drained = m->kv_drained;
	w->kv_drained = m->kv_drained;
	w->heartbeat_age_ms = pd->coord ? units_now_ms() - m->last_heartbeat : m->heartbeat_age_ms;
	return 0;
}

/* Free what member_to_wire() allocated. */
void member_wire_free(Pool__Member *w)
{
	if (w->node == NULL)
		return;
	node_info_wire_free(w->node);
	free(w->node);
	w->node = NULL;
}

/*
 * A member's change as a Member message that owns all its bytes, for a
 * change told later: the record it was made from may be replaced (a node
 * registering again) or freed (a node leaving) before then. Free with
 * pool__member__free_unpacked().
 */
Pool__Member *member_to_wire_copy(struct poold *pd, const struct member *m)
{
	Pool__Member w, *copy = NULL;
	uint8_t *buf;
	size_t len;

	if (member_to_wire(pd, m, false, &w) < 0)
		return NULL;
	len = pool__member__get_packed_size(&w);
	buf = malloc(len ? len : 1);
	if (buf != NULL) {
		pool__member__pack(&w, buf);
		copy = pool__member__unpack(NULL, len, buf);
		free(buf);
	}
	member_wire_free(&w);
	return copy;
}

/* The member table as Member messages (member_to_wire()); free with members_msg_free(). */
int members_msg(struct poold *pd, bool public, Pool__Member ***ret_members, size_t *ret_n)
{
	Pool__Member **out;
	struct member *m;
	size_t n = 0;

	TAILQ_FOREACH(m, &pd->members, entry)
		n++;
	out = calloc(n ? n : 1, sizeof(*out));
	if (out == NULL)
		return -ENOMEM;
	n = 0;
	TAILQ_FOREACH(m, &pd->members, entry) {
		out[n] = malloc(sizeof(**out));
		if (out[n] == NULL || member_to_wire(pd, m, public, out[n]) < 0) {
			free(out[n]);
			members_msg_free(out, n);
			return -ENOMEM;
		}
		n++;
	}
	*ret_members = out;
	*ret_n = n;
	return 0;
}

/* Free what members_msg() allocated. */
void members_msg_free(Pool__Member **members, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		member_wire_free(members[i]);
		free(members[i]);
	}
	free(members);
}

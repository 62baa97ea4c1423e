/* tests/unit/cores.c - a coordinator's cores on their own, for unit tests (cores.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "tests/unit/cores.h"
#include "tests/unit/unit.h"

/* A lender node lending one arena of tier, up, and reconciled (it holds nothing). */
void cores_lender_add_tier(struct poold *pd, uint32_t node, enum tier tier)
{
	struct node_info *info = calloc(1, sizeof(*info));
	struct member *m;

	CU_ASSERT_FATAL(info != NULL);
	info->arenas = calloc(1, sizeof(*info->arenas));
	CU_ASSERT_FATAL(info->arenas != NULL);
	info->n_arenas = 1;
	info->arenas[0].size = info->arenas[0].lent = CORES_ARENA;
	info->arenas[0].tier = tier;
	info->id = node;
	info->name = strdup("lender");
	info->version = strdup("test");
	info->addr = strdup("");
	info->incarnation = 7;
	CU_ASSERT_FATAL(member_update(pd, info, &m) == 0);
	m->state = MEMBER_UP;
	region_lender_update(pd, m->info);
	reconcile_holdings(pd, node, NULL, 0);
	reconcile_run(pd, 0);
}

/* A lender node (2, 3...) lending one DRAM arena, up, and reconciled (it holds nothing). */
void cores_lender_add(struct poold *pd, uint32_t node)
{
	cores_lender_add_tier(pd, node, TIER_DRAM);
}

/* h as a lender's journal keeps it: packed, then unpacked (holding_unpacked_free() ret). */
void cores_holding_again(const struct holding *h, struct holding_unpacked *ret)
{
	uint8_t buf[1024];
	ssize_t len = holding_pack(h, buf, sizeof(buf));

	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_FATAL(holding_unpack(buf, (size_t)len, ret) == 0);
}

/*
 * The KV namespaces' definitions as a node keeps them for a restarted
 * coordinator: the packed notice (free the bytes, *ret_len of them).
 */
uint8_t *cores_defs_kept(struct poold *pd, size_t *ret_len)
{
	Pool__KvNsReply defs = POOL__KV_NS_REPLY__INIT;
	uint8_t *buf;

	defs.namespaces = kv_defs_msg(pd, &defs.n_namespaces);
	CU_ASSERT_FATAL(defs.namespaces != NULL);
	*ret_len = protobuf_c_message_get_packed_size(&defs.base);
	buf = malloc(*ret_len ? *ret_len : 1);
	CU_ASSERT_FATAL(buf != NULL);
	CU_ASSERT_FATAL(protobuf_c_message_pack(&defs.base, buf) == *ret_len);
	free(defs.namespaces);
	return buf;
}

/* A restarted coordinator told those definitions by a node registering. */
void cores_defs_told(struct poold *pd, const uint8_t *buf, size_t len)
{
	ProtobufCMessage *msg;
	Pool__KvNsReply *defs;

	CU_ASSERT_FATAL(wire_msg_unpack(WIRE_KV_NS_DEFS, buf, len, &msg) == 0);
	defs = (Pool__KvNsReply *)msg;
	kv_defs_adopt_msg(pd, defs->namespaces, defs->n_namespaces, "a node's record");
	wire_msg_free(msg);
}

/* A coordinator (node 1) with its address space and KV index, and lenders 2 to 1 + lenders. */
void cores_open(struct poold *pd, unsigned lenders)
{
	unsigned i;

	memset(pd, 0, sizeof(*pd));
	TAILQ_INIT(&pd->members);
	TAILQ_INIT(&pd->holds);
	pd->node_id = 1;
	CU_ASSERT_FATAL(conf_defaults(&pd->conf) == 0);
	CU_ASSERT_FATAL((pd->base = event_base_new()) != NULL);
	CU_ASSERT_FATAL(region_open_space(pd, &coord_space_hooks) == 0);
	CU_ASSERT_FATAL(kv_open(pd, coord_log_namespaces) == 0);
	for (i = 0; i < lenders; i++)
		cores_lender_add(pd, 2 + i);
}

/* Everything cores_open() made, and what the tests' calls left (coord_close() does this for poold).
 */
void cores_close(struct poold *pd)
{
	struct member *m;

	reconcile_close(pd);
	kv_close(pd);
	reclaim_close(pd);
	region_close_space(pd);
	hold_clear(pd);
	usage_clear(&pd->usage);
	events_free(pd);
	while ((m = TAILQ_FIRST(&pd->members)) != NULL) {
		TAILQ_REMOVE(&pd->members, m, entry);
		node_info_free(m->info);
		free(m);
	}
	event_base_free(pd->base);
	conf_free(pd->conf);
}

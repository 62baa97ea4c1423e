/*
 * tests/unit/test_member_codec.c - the member table's records on the wire
 * (daemon/member/member-codec.c): a node's record survives NodeInfo's encoding
 * field for field, and the copy clients get carries no address or key a
 * worker could use.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/member/member.h"
#include "tests/unit/unit.h"

static const uint8_t worker[] = {1, 2, 3, 4, 5};
static const uint8_t probe_key[] = {9, 8, 7};
static const uint8_t arena_key[] = {0xaa, 0xbb};
static const uint32_t ports[] = {40001, 40002};

static void *dup_bytes(const void *p, size_t len)
{
	void *copy = malloc(len);

	CU_ASSERT_FATAL(copy != NULL);
	memcpy(copy, p, len);
	return copy;
}

/* A lender on two NUMA nodes with a DRAM and a pmem arena, the first accounted. */
static struct node_info *record(void)
{
	struct node_info *info = calloc(1, sizeof(*info));

	CU_ASSERT_FATAL(info != NULL);
	info->id = 3;
	info->name = strdup("host-c");
	info->addr = strdup("10.0.0.3:7440");
	info->version = strdup("0.1.0");
	info->role = strdup("node");
	info->worker_addr.data = dup_bytes(worker, sizeof(worker));
	info->worker_addr.len = sizeof(worker);
	info->numa = calloc(2, sizeof(*info->numa));
	CU_ASSERT_FATAL(info->numa != NULL);
	info->n_numa = 2;
	info->numa[0] = (struct node_numa){0, 8u << 30, 1u << 30, 4u << 20};
	info->numa[1] = (struct node_numa){1, 8u << 30, 2u << 30, 0};
	info->pmem_capacity = 64u << 20;
	info->pmem_used = 1u << 20;
	info->probe_addr = 0x7f0000001000;
	info->probe_len = 1u << 20;
	info->probe_rkey.data = dup_bytes(probe_key, sizeof(probe_key));
	info->probe_rkey.len = sizeof(probe_key);
	info->incarnation = 0x1234abcd;
	info->arenas = calloc(2, sizeof(*info->arenas));
	CU_ASSERT_FATAL(info->arenas != NULL);
	info->n_arenas = 2;
	info->arenas[0] = (struct node_arena){.id = 0,
					      .tier = TIER_DRAM,
					      .numa = 1,
					      .size = 1u << 30,
					      .lent = 512u << 20,
					      .used = 4u << 20,
					      .addr = 0x7f0010000000,
					      .accounted = true,
					      .largest_free = 500u << 20,
					      .free_runs = 2,
					      .extents = 3};
	info->arenas[0].rkey.data = dup_bytes(arena_key, sizeof(arena_key));
	info->arenas[0].rkey.len = sizeof(arena_key);
	info->arenas[1] = (struct node_arena){.id = 1,
					      .tier = TIER_PMEM,
					      .numa = -1,
					      .size = 64u << 20,
					      .lent = 64u << 20,
					      .addr = 0x7f0020000000};
	info->arenas[1].rkey.data = dup_bytes(arena_key, 1);
	info->arenas[1].rkey.len = 1;
	info->fabric_ports = dup_bytes(ports, sizeof(ports));
	info->n_fabric_ports = 2;
	return info;
}

/* info as the far side of a link reads it: encoded, decoded, taken into a table record. */
static struct node_info *through_the_wire(const struct node_info *info, bool public)
{
	Pool__NodeInfo w, *back;
	struct node_info *got;
	uint8_t *buf;
	size_t len;

	CU_ASSERT_FATAL(node_info_to_wire(info, public, &w) == 0);
	len = pool__node_info__get_packed_size(&w);
	buf = malloc(len);
	CU_ASSERT_FATAL(buf != NULL);
	pool__node_info__pack(&w, buf);
	node_info_wire_free(&w);
	back = pool__node_info__unpack(NULL, len, buf);
	free(buf);
	CU_ASSERT_FATAL(back != NULL);
	got = node_info_from_wire(back);
	pool__node_info__free_unpacked(back, NULL);
	CU_ASSERT_FATAL(got != NULL);
	return got;
}

static bool same_bytes(const struct node_bytes *a, const struct node_bytes *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static void test_round_trip(void)
{
	struct node_info *info = record(), *got = through_the_wire(info, false);
	size_t i;

	CU_ASSERT_EQUAL(got->id, 3);
	CU_ASSERT_STRING_EQUAL(got->name, "host-c");
	CU_ASSERT_STRING_EQUAL(got->addr, "10.0.0.3:7440");
	CU_ASSERT_STRING_EQUAL(got->version, "0.1.0");
	CU_ASSERT_STRING_EQUAL(got->role, "node");
	CU_ASSERT(same_bytes(&got->worker_addr, &info->worker_addr));
	CU_ASSERT(same_bytes(&got->probe_rkey, &info->probe_rkey));
	CU_ASSERT_EQUAL(got->probe_addr, info->probe_addr);
	CU_ASSERT_EQUAL(got->probe_len, info->probe_len);
	CU_ASSERT_EQUAL(got->incarnation, info->incarnation);
	CU_ASSERT_EQUAL(got->pmem_capacity, info->pmem_capacity);
	CU_ASSERT_EQUAL(got->pmem_used, info->pmem_used);
	CU_ASSERT_FATAL(got->n_numa == 2);
	CU_ASSERT(memcmp(got->numa, info->numa, 2 * sizeof(*got->numa)) == 0);
	CU_ASSERT_FATAL(got->n_fabric_ports == 2);
	CU_ASSERT(memcmp(got->fabric_ports, ports, sizeof(ports)) == 0);
	CU_ASSERT_FATAL(got->n_arenas == 2);
	for (i = 0; i < 2; i++) {
		const struct node_arena *a = &info->arenas[i], *b = &got->arenas[i];

		CU_ASSERT_EQUAL(b->id, a->id);
		CU_ASSERT_EQUAL(b->tier, a->tier);
		CU_ASSERT_EQUAL(b->numa, a->numa);
		CU_ASSERT_EQUAL(b->size, a->size);
		CU_ASSERT_EQUAL(b->lent, a->lent);
		CU_ASSERT_EQUAL(b->used, a->used);
		CU_ASSERT_EQUAL(b->addr, a->addr);
		CU_ASSERT(same_bytes(&b->rkey, &a->rkey));
		CU_ASSERT_EQUAL(b->accounted, a->accounted);
		CU_ASSERT_EQUAL(b->largest_free, a->largest_free);
		CU_ASSERT_EQUAL(b->free_runs, a->free_runs);
		CU_ASSERT_EQUAL(b->extents, a->extents);
	}
	node_info_free(got);
	node_info_free(info);
}

/* What clients get: sizes and use, no worker address, probe buffer, key or port. */
static void test_public_copy(void)
{
	struct node_info *info = record(), *got = through_the_wire(info, true);
	size_t i;

	CU_ASSERT_STRING_EQUAL(got->name, "host-c");
	CU_ASSERT_EQUAL(got->incarnation, info->incarnation);
	CU_ASSERT_EQUAL(got->worker_addr.len, 0);
	CU_ASSERT_EQUAL(got->probe_rkey.len, 0);
	CU_ASSERT_EQUAL(got->probe_addr, 0);
	CU_ASSERT_EQUAL(got->n_fabric_ports, 0);
	CU_ASSERT_FATAL(got->n_arenas == 2);
	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(got->arenas[i].rkey.len, 0);
		CU_ASSERT_EQUAL(got->arenas[i].addr, 0);
		CU_ASSERT_EQUAL(got->arenas[i].size, info->arenas[i].size);
		CU_ASSERT_EQUAL(got->arenas[i].used, info->arenas[i].used);
		CU_ASSERT_EQUAL(got->arenas[i].tier, info->arenas[i].tier);
	}
	CU_ASSERT(got->arenas[0].accounted);
	CU_ASSERT(!got->arenas[1].accounted);
	CU_ASSERT_EQUAL(got->arenas[0].largest_free, 500u << 20);
	node_info_free(got);
	node_info_free(info);
}

/* The member list a coordinator sends: every member, its state and heartbeat age. */
static void test_members_msg(void)
{
	struct poold pd;
	Pool__Member **members;
	struct member *m;
	size_t n;
	int i;

	memset(&pd, 0, sizeof(pd));
	TAILQ_INIT(&pd.members);
	for (i = 0; i < 3; i++) {
		struct node_info *info = record();

		info->id = 2 + (uint32_t)i;
		CU_ASSERT_FATAL(member_update(&pd, info, &m) == 0);
		m->state = i == 2 ? MEMBER_DEAD : MEMBER_UP;
		m->heartbeat_age_ms = 100 * (uint64_t)i;
	}
	/* Again under id 3: the record is replaced, not added. */
	CU_ASSERT_FATAL(member_update(&pd, record(), &m) == 0);
	CU_ASSERT_FATAL(members_msg(&pd, true, &members, &n) == 0);
	CU_ASSERT_FATAL(n == 3);
	CU_ASSERT_EQUAL(members[0]->node->id, 2);
	CU_ASSERT_EQUAL(members[1]->node->id, 3);
	CU_ASSERT_EQUAL(members[2]->state, POOL__MEMBER_STATE__MEMBER_STATE_DEAD);
	CU_ASSERT_EQUAL(members[2]->heartbeat_age_ms, 200);
	CU_ASSERT_EQUAL(members[1]->node->worker_addr.len, 0);
	CU_ASSERT_EQUAL(member_state_of(members[0]->state), MEMBER_UP);
	members_msg_free(members, n);
	while ((m = TAILQ_FIRST(&pd.members)) != NULL) {
		TAILQ_REMOVE(&pd.members, m, entry);
		node_info_free(m->info);
		free(m);
	}
}

/* A change queued for later owns its bytes: the record it came from is replaced and freed first. */
static void test_queued_copy(void)
{
	struct poold pd;
	Pool__Member *copy;
	struct member *m;
	struct node_info *again;

	memset(&pd, 0, sizeof(pd));
	TAILQ_INIT(&pd.members);
	CU_ASSERT_FATAL(member_update(&pd, record(), &m) == 0);
	m->state = MEMBER_SUSPECT;
	copy = member_to_wire_copy(&pd, m);
	CU_ASSERT_FATAL(copy != NULL);
	again = record();
	free(again->name);
	again->name = strdup("host-c-again");
	CU_ASSERT_FATAL(member_update(&pd, again, &m) == 0); /* frees the first record */
	CU_ASSERT_STRING_EQUAL(copy->node->name, "host-c");
	CU_ASSERT_STRING_EQUAL(copy->node->addr, "10.0.0.3:7440");
	CU_ASSERT_EQUAL(copy->node->worker_addr.len, sizeof(worker));
	CU_ASSERT(memcmp(copy->node->worker_addr.data, worker, sizeof(worker)) == 0);
	CU_ASSERT_EQUAL(copy->node->n_arenas, 2);
	CU_ASSERT_EQUAL(copy->node->n_fabric_ports, 2);
	CU_ASSERT_EQUAL(copy->state, POOL__MEMBER_STATE__MEMBER_STATE_SUSPECT);
	pool__member__free_unpacked(copy, NULL);
	while ((m = TAILQ_FIRST(&pd.members)) != NULL) {
		TAILQ_REMOVE(&pd.members, m, entry);
		node_info_free(m->info);
		free(m);
	}
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a record through the wire", test_round_trip},
	    {"what clients get", test_public_copy},
	    {"the member list", test_members_msg},
	    {"a change queued for later", test_queued_copy},
	    {NULL, NULL},
	};

	return unit_run("memberwire", tests);
}

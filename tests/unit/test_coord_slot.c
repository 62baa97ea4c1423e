/*
 * tests/unit/test_coord_slot.c - the coordinator's room for peer links that
 * have not registered (daemon/coord/coord-slot.c): a host's share among strangers,
 * who gives way when the strangers' pool is full, the pool of members'
 * addresses that strangers never reach, IPv6 hosts by their /64.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "daemon/coord/coord-slot.h"
#include "tests/unit/unit.h"

#define MAX_NODES 4
#define SLOTS 256

static struct coordslots cs;
static struct coordslot slots[SLOTS];
static size_t nslots;
static uint64_t now;

static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(s, ':') != NULL) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET6, s, &a->sin6_addr), 1);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, s, &a->sin_addr), 1);
	}
	return ss;
}

static void reset(void)
{
	memset(slots, 0, sizeof(slots));
	nslots = 0;
	now = 1000;
	coord_slots_init(&cs, MAX_NODES);
}

/* A link from s takes a slot: its index, or -1 when it is turned away; *ret_evicted: whom it
 * displaced. */
static int take(const char *s, bool known, int *ret_evicted)
{
	struct sockaddr_storage ss = addr(s);
	struct coordslot *sl, *evicted = NULL;
	int rc;

	CU_ASSERT_FATAL(nslots < SLOTS);
	sl = &slots[nslots];
	rc = coord_slot_take(&cs, sl, (struct sockaddr *)&ss, known, now++, &evicted);
	if (ret_evicted != NULL)
		*ret_evicted = evicted != NULL ? (int)(evicted - slots) : -1;
	if (rc < 0) {
		CU_ASSERT_EQUAL(rc, -EBUSY);
		CU_ASSERT_PTR_NULL(evicted);
		return -1;
	}
	CU_ASSERT_NOT_EQUAL(sl->pool, COORDSLOT_NONE);
	if (evicted != NULL)
		CU_ASSERT_EQUAL(evicted->pool, COORDSLOT_NONE);
	return (int)nslots++;
}

static void test_host_share(void)
{
	int i, ev;

	reset();
	for (i = 0; i < COORDSLOT_PER_HOST; i++)
		CU_ASSERT_EQUAL(take("10.0.0.9", false, &ev), i);
	CU_ASSERT_EQUAL(take("10.0.0.9", false, &ev), -1);
	CU_ASSERT_EQUAL(take("10.0.0.8", false, &ev), COORDSLOT_PER_HOST);
	CU_ASSERT_EQUAL(ev, -1);
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_PER_HOST + 1);
	/* One of its links registers or closes: the host has room again. */
	coord_slot_give(&cs, &slots[1]);
	coord_slot_give(&cs, &slots[1]); /* (twice: nothing more) */
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_PER_HOST);
	CU_ASSERT(take("10.0.0.9", false, &ev) >= 0);
	CU_ASSERT_PTR_EQUAL(coord_slots_oldest(&cs), &slots[0]);
}

/*
 * Hosts fill the strangers' pool: a new host's link displaces the oldest
 * link of a host that holds the most, and however fast those hosts open
 * links again it is never the one that gives way while any of them holds
 * two.
 */
static void test_flood_from_few_hosts(void)
{
	char host[32];
	int i, node, ev, round;

	reset();
	for (i = 0; i < COORDSLOT_STRANGERS; i++) {
		snprintf(host, sizeof(host), "10.0.1.%d", i / COORDSLOT_PER_HOST + 1);
		CU_ASSERT(take(host, false, &ev) >= 0);
		CU_ASSERT_EQUAL(ev, -1);
	}
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_STRANGERS);
	node = take("10.0.2.1", false, &ev);
	CU_ASSERT(node >= 0);
	CU_ASSERT_EQUAL(ev, 0); /* the oldest of the first host, which holds 4 */
	for (round = 0; round < 100; round++) {
		snprintf(host, sizeof(host), "10.0.1.%d", round % 8 + 1);
		if (take(host, false, &ev) < 0)
			continue;
		CU_ASSERT_NOT_EQUAL(ev, node);
		CU_ASSERT_EQUAL(slots[node].pool, COORDSLOT_STRANGER);
	}
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_STRANGERS);
	CU_ASSERT_EQUAL(
	    coord_slots_count(&cs, COORDSLOT_STRANGER, (struct sockaddr *)&slots[node].from), 1);
}

/* As many hosts as slots, one link each: the oldest gives way. */
static void test_one_link_per_host(void)
{
	char host[32];
	int i, ev;

	reset();
	for (i = 0; i < COORDSLOT_STRANGERS; i++) {
		snprintf(host, sizeof(host), "10.0.3.%d", i + 1);
		CU_ASSERT(take(host, false, &ev) >= 0);
	}
	CU_ASSERT(take("10.0.4.1", false, &ev) >= 0);
	CU_ASSERT_EQUAL(ev, 0);
	CU_ASSERT(take("10.0.4.2", false, &ev) >= 0);
	CU_ASSERT_EQUAL(ev, 1);
}

/*
 * Members' addresses have a pool of their own: a full strangers' pool
 * takes nothing from it, nor does it from strangers; a fifth link from a
 * member's address displaces the oldest from there only.
 */
static void test_known_pool(void)
{
	char host[32];
	int i, ev, first;

	reset();
	for (i = 0; i < COORDSLOT_STRANGERS; i++) {
		snprintf(host, sizeof(host), "10.0.5.%d", i / COORDSLOT_PER_HOST + 1);
		CU_ASSERT(take(host, false, &ev) >= 0);
	}
	first = take("10.0.0.2", true, &ev);
	CU_ASSERT_EQUAL(ev, -1);
	CU_ASSERT_EQUAL(slots[first].pool, COORDSLOT_KNOWN);
	CU_ASSERT_EQUAL(cs.known, 1);
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_STRANGERS);
	for (i = 1; i < COORDSLOT_PER_HOST; i++)
		CU_ASSERT(take("10.0.0.2", true, &ev) >= 0 && ev == -1);
	CU_ASSERT(take("10.0.0.2", true, &ev) >= 0);
	CU_ASSERT_EQUAL(ev, first);
	CU_ASSERT_EQUAL(cs.known, COORDSLOT_PER_HOST);
	CU_ASSERT_EQUAL(cs.strangers, COORDSLOT_STRANGERS);
	/* A known address whose host holds strangers' links too: they are apart. */
	CU_ASSERT_EQUAL(
	    coord_slots_count(&cs, COORDSLOT_STRANGER, (struct sockaddr *)&slots[first].from), 0);
}

/* The pool of members' addresses holds peer.max_nodes links; past that, a member's address waits
 * among strangers unless it holds some already. */
static void test_known_pool_full(void)
{
	int i, ev, n;

	reset();
	for (i = 0; i < MAX_NODES; i++) {
		char host[32];

		snprintf(host, sizeof(host), "10.0.6.%d", i + 1);
		CU_ASSERT(take(host, true, &ev) >= 0);
	}
	CU_ASSERT_EQUAL(cs.known, MAX_NODES);
	n = take("10.0.6.9", true, &ev);
	CU_ASSERT_EQUAL(ev, -1);
	CU_ASSERT_EQUAL(slots[n].pool, COORDSLOT_STRANGER);
	n = take("10.0.6.1", true, &ev);
	CU_ASSERT_EQUAL(slots[n].pool, COORDSLOT_KNOWN);
	CU_ASSERT_EQUAL(ev, 0);
	CU_ASSERT_EQUAL(cs.known, MAX_NODES);
}

/* A host's IPv6 /64 is one host among strangers; a mapped IPv4 address is that IPv4 address. */
static void test_ipv6_hosts(void)
{
	char host[64];
	struct sockaddr_storage a, b;
	int i, ev;

	reset();
	for (i = 0; i < COORDSLOT_PER_HOST; i++) {
		snprintf(host, sizeof(host), "2001:db8:0:1::%x", i + 1);
		CU_ASSERT(take(host, false, &ev) >= 0);
	}
	CU_ASSERT_EQUAL(take("2001:db8:0:1:ffff::77", false, &ev), -1);
	CU_ASSERT(take("2001:db8:0:2::1", false, &ev) >= 0);
	/* Known addresses are exact: two in one /64 are two members' addresses. */
	CU_ASSERT(take("2001:db8:0:3::1", true, &ev) >= 0);
	for (i = 0; i < COORDSLOT_PER_HOST; i++)
		CU_ASSERT(take("2001:db8:0:3::2", true, &ev) >= 0 && (i < 3 ? ev == -1 : ev >= 0));
	a = addr("::ffff:10.0.0.7");
	b = addr("10.0.0.7");
	CU_ASSERT(coord_slot_same_addr((struct sockaddr *)&a, (struct sockaddr *)&b));
	b = addr("10.0.0.8");
	CU_ASSERT_FALSE(coord_slot_same_addr((struct sockaddr *)&a, (struct sockaddr *)&b));
	for (i = 0; i < COORDSLOT_PER_HOST; i++)
		CU_ASSERT(take("10.0.0.7", false, &ev) >= 0);
	CU_ASSERT_EQUAL(take("::ffff:10.0.0.7", false, &ev), -1);
}

/* The oldest slot is the first deadline, whatever pool it is in. */
static void test_oldest(void)
{
	int ev, a, b, c;

	reset();
	CU_ASSERT_PTR_NULL(coord_slots_oldest(&cs));
	a = take("10.0.7.1", false, &ev);
	b = take("10.0.7.2", true, &ev);
	c = take("10.0.7.3", false, &ev);
	CU_ASSERT_PTR_EQUAL(coord_slots_oldest(&cs), &slots[a]);
	CU_ASSERT(slots[a].taken_ms < slots[b].taken_ms && slots[b].taken_ms < slots[c].taken_ms);
	coord_slot_give(&cs, &slots[a]);
	CU_ASSERT_PTR_EQUAL(coord_slots_oldest(&cs), &slots[b]);
	coord_slot_give(&cs, &slots[b]);
	coord_slot_give(&cs, &slots[c]);
	CU_ASSERT_PTR_NULL(coord_slots_oldest(&cs));
	CU_ASSERT_EQUAL(cs.known + cs.strangers, 0);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a host's share among strangers", test_host_share},
	    {"a flood from few hosts displaces no new node", test_flood_from_few_hosts},
	    {"one link per host: the oldest gives way", test_one_link_per_host},
	    {"members' addresses apart from strangers", test_known_pool},
	    {"members' addresses: peer.max_nodes links", test_known_pool_full},
	    {"IPv6 hosts by their /64", test_ipv6_hosts},
	    {"the oldest slot", test_oldest},
	    {NULL, NULL},
	};
	return unit_run("coordslot", tests);
}

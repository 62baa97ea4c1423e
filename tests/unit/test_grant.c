/*
 * tests/unit/test_grant.c - the grant checks of daemon/control/grant.c: what a
 * session may reach follows only from the coordinator's replies, and ends
 * with the close, release, commit, notice or session that ends it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"
#include "daemon/region/region.h"
#include "libpool/libpool.h"
#include "tests/unit/unit.h"

static struct poold pd;

/*
 * A RegionReply for region id 7 of size bytes on extents (node, arena, off, len) in region order.
 */
static void region_reply(uint64_t session, uint64_t size, uint64_t stripe, unsigned access,
			 size_t n, const struct region_extent *ext)
{
	Pool__RegionReply rr = POOL__REGION_REPLY__INIT;
	Pool__RegionInfo ri = POOL__REGION_INFO__INIT;
	Pool__Extent e[8], *ep[8];
	size_t i;

	for (i = 0; i < n; i++) {
		pool__extent__init(&e[i]);
		e[i].node = ext[i].node;
		e[i].arena = ext[i].arena;
		e[i].off = ext[i].off;
		e[i].len = ext[i].len;
		e[i].region_off = i;
		ep[i] = &e[i];
	}
	ri.name = "r";
	ri.id = 7;
	ri.size = size;
	ri.stripe = stripe;
	ri.extents = ep;
	ri.n_extents = n;
	rr.region = &ri;
	rr.has_access = access != 0;
	rr.access = access;
	grant_reply(&pd, session, WIRE_REGION_REPLY, &rr.base);
}

/* A request, as control_dispatch() hands it to grant_request(): when grant_wants() says. */
static void request(uint64_t session, uint16_t type, const ProtobufCMessage *msg)
{
	if (grant_wants(&pd, session, type))
		grant_request(&pd, session, type, msg);
}

static void test_region(void)
{
	struct region_extent ext[] = {{1, 0, 0, 1 << 20, 0}};
	struct grant_piece p[4];
	Pool__RegionName close = POOL__REGION_NAME__INIT;

	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, false, p, 4), -EPERM);
	/* A stat grants nothing. */
	region_reply(1, 1 << 20, 0, 0, 1, ext);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, false, p, 4), -EPERM);
	/* An open for reading. */
	region_reply(1, 1 << 20, 0, 4, 1, ext);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 4096, 100, false, p, 4), 1);
	CU_ASSERT_EQUAL(p[0].node, 1);
	CU_ASSERT_EQUAL(p[0].off, 4096);
	CU_ASSERT_EQUAL(p[0].len, 100);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, true, p, 4), -EACCES);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, (1 << 20) - 4, 8, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, UINT64_MAX - 3, 8, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 2, 7, 0, 8, false, p, 4), -EPERM);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 8, 0, 8, false, p, 4), -EPERM);
	/* A second open, read-write: two closes end it. */
	region_reply(1, 1 << 20, 0, 6, 1, ext);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, true, p, 4), 1);
	close.name = "r";
	request(1, WIRE_REGION_CLOSE, &close.base);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, false, p, 4), 1);
	request(1, WIRE_REGION_CLOSE, &close.base);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 1, 7, 0, 8, false, p, 4), -EPERM);
}

/*
 * Both bounds hold on their own: a region's size (its extent is rounded up
 * to the unit, so a session must not reach the extent's tail past it), and
 * each extent's length (a layout whose extents are shorter than its size
 * says grants no more than they hold).
 */
static void test_region_bounds(void)
{
	struct region_extent rounded[] = {{1, 0, 0, 8192, 0}};
	struct region_extent shorter[] = {{1, 0, 0, 8192, 0}, {2, 0, 65536, 4096, 1}};
	struct region_extent single[] = {{1, 0, 0, 4096, 0}};
	struct grant_piece p[4];

	region_reply(6, 5000, 0, 6, 1, rounded);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4000, 1000, false, p, 4), 1);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4999, 1, true, p, 4), 1);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4096, 1000, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4900, 200, true, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 5000, 1, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 0, 8192, false, p, 4), -ERANGE);
	grant_session_end(&pd, 6);

	/* Stripes 0 and 2 on extent 0, 1 and 3 on extent 1, which holds one. */
	region_reply(6, 16384, 4096, 6, 2, shorter);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4096, 4096, false, p, 4), 1);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 8192, 4096, true, p, 4), 1);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 12288, 4096, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 12288, 1, true, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 0, 16384, false, p, 4), -ERANGE);
	grant_session_end(&pd, 6);

	region_reply(6, 8192, 0, 6, 1, single);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 0, 4096, false, p, 4), 1);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4096, 100, false, p, 4), -ERANGE);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 6, 7, 4000, 100, true, p, 4), -ERANGE);
	grant_session_end(&pd, 6);
}

static void test_region_striped_moved_gone(void)
{
	struct region_extent ext[] = {{1, 0, 0, 8192, 0}, {2, 0, 65536, 8192, 1}};
	struct region_extent moved[] = {{3, 1, 4096, 8192, 0}, {2, 0, 65536, 8192, 1}};
	struct grant_piece p[4];

	region_reply(5, 16384, 4096, 6, 2, ext);
	/* [2048, 2048 + 8192): stripes 0, 1, 2 -> extent 0, 1, 0 (its second stripe). */
	CU_ASSERT_EQUAL_FATAL(grant_region_pieces(&pd, 5, 7, 2048, 8192, true, p, 4), 3);
	CU_ASSERT_EQUAL(p[0].node, 1);
	CU_ASSERT_EQUAL(p[0].off, 2048);
	CU_ASSERT_EQUAL(p[0].len, 2048);
	CU_ASSERT_EQUAL(p[1].node, 2);
	CU_ASSERT_EQUAL(p[1].ext, 65536);
	CU_ASSERT_EQUAL(p[1].off, 65536);
	CU_ASSERT_EQUAL(p[1].len, 4096);
	CU_ASSERT_EQUAL(p[2].node, 1);
	CU_ASSERT_EQUAL(p[2].ext, 0);
	CU_ASSERT_EQUAL(p[2].off, 4096);
	CU_ASSERT_EQUAL(p[2].len, 2048);
	CU_ASSERT_EQUAL(p[2].pos, 6144);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 5, 7, 0, 16384, false, p, 2), -E2BIG);
	/* Moved: refused until the new layout passes (a stat keeps the access). */
	grant_notice(&pd, 5, "r", false);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 5, 7, 0, 8, false, p, 4), -ESTALE);
	region_reply(5, 16384, 4096, 0, 2, moved);
	CU_ASSERT_EQUAL_FATAL(grant_region_pieces(&pd, 5, 7, 0, 8, true, p, 4), 1);
	CU_ASSERT_EQUAL(p[0].node, 3);
	CU_ASSERT_EQUAL(p[0].arena, 1);
	CU_ASSERT_EQUAL(p[0].ext, 4096);
	CU_ASSERT_EQUAL(p[0].off, 4096);
	grant_notice(&pd, 5, "r", true);
	CU_ASSERT_EQUAL(grant_region_pieces(&pd, 5, 7, 0, 8, false, p, 4), -EPERM);
}

/*
 * A KvReply: n values at (node 1, arena 0, off i * 65536), version 100 + i, each with a copy on
 * node 2.
 */
static void kv_reply(uint64_t session, unsigned access, size_t n, uint64_t first)
{
	Pool__KvReply kr = POOL__KV_REPLY__INIT;
	Pool__KvLocation *l = calloc(n, sizeof(*l)), **lp = calloc(n, sizeof(*lp));
	Pool__KvPlace *c = calloc(n, sizeof(*c)), **cp = calloc(n, sizeof(*cp));
	size_t i;

	for (i = 0; i < n; i++) {
		pool__kv_location__init(&l[i]);
		pool__kv_place__init(&c[i]);
		l[i].has_node = l[i].has_arena = l[i].has_off = l[i].has_len = l[i].has_version = 1;
		l[i].node = 1;
		l[i].off = (first + i) * 65536;
		l[i].len = 1000;
		l[i].version = 100 + first + i;
		c[i].node = 2;
		c[i].off = (first + i) * 65536;
		cp[i] = &c[i];
		l[i].copies = &cp[i];
		l[i].n_copies = 1;
		lp[i] = &l[i];
	}
	/* A miss grants nothing. */
	if (n > 1)
		l[1].status = -ENOENT;
	kr.locations = lp;
	kr.n_locations = n;
	kr.has_access = access != 0;
	kr.access = access;
	grant_reply(&pd, session, WIRE_KV_REPLY, &kr.base);
	free(l);
	free(lp);
	free(c);
	free(cp);
}

static void test_kv(void)
{
	Pool__KvRequest rel = POOL__KV_REQUEST__INIT;
	uint64_t v = 100;
	ProtobufCBinaryData key = {.len = 1, .data = (uint8_t *)"k"};
	size_t i;

	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 0, 8, false), -EPERM);
	kv_reply(9, 4, 3, 0); /* a lookup */
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 0, 1000, false), 0);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 2, 0, 0, 0, 1000, false), 0); /* its copy */
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 0, 1000, true), -EACCES);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 0, 1001, false), -ERANGE);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 996, 8, false), -ERANGE);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 500, 500, false), 0);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 8, 0, 8, false),
			-EPERM); /* not its start */
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 65536, 0, 8, false), -EPERM); /* a miss */
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 131072, 0, 8, false), 0);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 10, 1, 0, 0, 0, 8, false), -EPERM);
	/* Released: gone, the others stay. */
	rel.op = POOL__KV_OP__KV_OP_RELEASE;
	rel.ns = "n";
	rel.keys = &key;
	rel.n_keys = 1;
	rel.versions = &v;
	rel.n_versions = 1;
	request(9, WIRE_KV, &rel.base);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 0, 0, 8, false), -EPERM);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 2, 0, 0, 0, 8, false), -EPERM);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 131072, 0, 8, false), 0);
	/* A reserve grants writes; many places at once. */
	kv_reply(9, 2, 2000, 10);
	for (i = 10; i < 2010; i++)
		if (i != 11 && grant_place_check(&pd, 9, 2, 0, i * 65536, 0, 1000, true) != 0)
			break;
	CU_ASSERT_EQUAL(i, 2010);
	grant_session_end(&pd, 9);
	CU_ASSERT_EQUAL(grant_place_check(&pd, 9, 1, 0, 10 * 65536, 0, 8, false), -EPERM);
	grant_clear(&pd);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"a region open grants its extents, until closed", test_region},
	    {"striped pieces, a move, a region gone", test_region_striped_moved_gone},
	    {"a region's size and each extent's length bound what it grants", test_region_bounds},
	    {"KV places, until released or the session ends", test_kv},
	    {NULL, NULL},
	};

	return unit_run("grant", tests);
}

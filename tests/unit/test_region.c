/*
 * tests/unit/test_region.c - the global address space's core
 * (daemon/region/region.c) on its own: a coordinator's map over lenders' arenas,
 * no network. Names, sizes, modes and quotas refused before anything is
 * taken; placements on the lender asked for and striped over several;
 * leases that keep an anonymous region and end with their session after
 * lease.grace; who may open, destroy and keep; tombstones for lenders that
 * could not be told a region went; extents given back whole; the records
 * of a region that bring it back after a coordinator restart.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/hold/hold.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"
#include "tests/unit/cores.h"
#include "proto/pool_contract.h"
#include "tests/unit/unit.h"

#define MiB (UINT64_C(1) << 20)

static struct poold pd;
static char err[512];

/* Tenants: uid 1000 (group 100), uid 1001 (group 100), uid 1002 (group 200); all on node 1. */
static const struct region_caller alice = {1, 11, 1000, 100, false};
static const struct region_caller bob = {1, 12, 1001, 100, false};
static const struct region_caller eve = {1, 13, 1002, 200, false};
static const struct region_caller admin = {1, 14, 1003, 300, true};
static const struct region_caller root = {1, 15, 0, 0, true}; /* no quota.share */

static void space_new(unsigned lenders)
{
	cores_open(&pd, lenders);
}

static void space_free(void)
{
	cores_close(&pd);
}

/* Make a region: its status, the region in *ret (if not NULL). */
static int make(const struct region_caller *who, const char *name, uint64_t size,
		const char *placement, unsigned mode, bool anonymous, struct region **ret)
{
	struct region_spec spec = {name, size, CLASS_PINNED, placement, 0, mode, anonymous, false};
	struct region *r = NULL;
	int rc;

	err[0] = '\0';
	spec.open = anonymous; /* an anonymous region is made open, or it would go at once */
	rc = region_create(&pd, &spec, who, &r, err, sizeof(err));
	if (ret != NULL)
		*ret = r;
	return rc;
}

/* Bytes of node's arena 0 the map has given out (regions and what is being scrubbed). */
static uint64_t used(uint32_t node)
{
	return region_arena_used(&pd, node, 0);
}

/* What is refused is refused before anything is taken, with a reason. */
static void test_refusals(void)
{
	char name[POOL_REGION_NAME_MAX + 2];

	space_new(1);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CU_ASSERT_EQUAL(make(&alice, name, MiB, "any", 0600, false, NULL), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "1-63 characters"));
	CU_ASSERT_EQUAL(make(&alice, "a b", MiB, "any", 0600, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(make(&alice, "", MiB, "any", 0600, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(make(&alice, "zero", 0, "any", 0600, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(make(&alice, "huge", UINT64_C(1) << 45, "any", 0600, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(make(&alice, "mode", MiB, "any", 01000, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(make(&alice, "where", MiB, "moon", 0600, false, NULL), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "placement 'moon'"));
	CU_ASSERT_EQUAL(make(&alice, "big", 40 * MiB, "any", 0600, false, NULL), -EDQUOT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "over quota.share (50% of the pool: 31M)"));
	CU_ASSERT_EQUAL(make(&root, "big", 65 * MiB, "any", 0600, false, NULL), -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no room for 65M"));
	CU_ASSERT_EQUAL(make(&alice, "gone", MiB, "node=9", 0600, false, NULL), -ENOSPC);
	CU_ASSERT_EQUAL(used(2), 0);
	CU_ASSERT_EQUAL(pd.regions->count, 0);
	/* A name is one region's; the pool's and a uid's counts are limits. */
	CU_ASSERT_EQUAL(make(&alice, "a", MiB, "any", 0600, false, NULL), 0);
	CU_ASSERT_EQUAL(make(&bob, "a", MiB, "any", 0600, false, NULL), -EEXIST);
	pd.conf->quota_regions = 2;
	CU_ASSERT_EQUAL(make(&alice, "b", MiB, "any", 0600, false, NULL), 0);
	CU_ASSERT_EQUAL(make(&alice, "c", MiB, "any", 0600, false, NULL), -EDQUOT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "quota.regions is 2"));
	CU_ASSERT_EQUAL(make(&bob, "c", MiB, "any", 0600, false, NULL), 0); /* bob's own quota */
	pd.conf->max_regions = 3;
	CU_ASSERT_EQUAL(make(&eve, "d", MiB, "any", 0600, false, NULL), -EUSERS);
	CU_ASSERT_EQUAL(pd.regions->count, 3);
	CU_ASSERT_EQUAL(used(2), 3 * MiB);
	space_free();
}

/* Placements: the lender named, one extent; spread, one extent per lender; ids and bases unique. */
static void test_placement(void)
{
	struct region *a, *b, *s;
	size_t i;

	space_new(3);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "on3", 2 * MiB, "node=3", 0600, false, &a), 0);
	CU_ASSERT_EQUAL(a->next, 1);
	CU_ASSERT_EQUAL(a->ext[0].node, 3);
	CU_ASSERT_EQUAL(a->ext[0].len, 2 * MiB);
	CU_ASSERT_EQUAL(used(3), 2 * MiB);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "wide", 6 * MiB, "spread", 0600, false, &s), 0);
	CU_ASSERT_EQUAL(s->next, 3);
	CU_ASSERT_EQUAL(s->stripe, MiB);
	for (i = 0; i < s->next; i++) {
		CU_ASSERT_EQUAL(s->ext[i].len, 2 * MiB);
		CU_ASSERT_EQUAL(s->ext[i].region_off, i);
	}
	CU_ASSERT(s->ext[0].node != s->ext[1].node && s->ext[1].node != s->ext[2].node &&
		  s->ext[0].node != s->ext[2].node);
	CU_ASSERT_EQUAL(used(2) + used(3) + used(4), 8 * MiB);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "two", MiB, "spread=2", 0600, false, &b), 0);
	CU_ASSERT_EQUAL(b->next, 1); /* one stripe: one lender, whatever was asked */
	CU_ASSERT(a->id != s->id && s->id != b->id);
	CU_ASSERT(a->base + 2 * MiB <= s->base && s->base + 6 * MiB <= b->base);
	CU_ASSERT_PTR_EQUAL(region_find_id(pd.regions, s->id), s);
	space_free();
}

/* Open needs the mode's bits; destroy and keep need the owner or an admin. */
static void test_access(void)
{
	struct region *r, *o;

	space_new(1);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "shared", MiB, "any", 0640, false, &r), 0);
	CU_ASSERT_EQUAL(region_open(&pd, "shared", 4, &bob, &o, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(o, r);
	CU_ASSERT_EQUAL(region_open(&pd, "shared", 6, &bob, &o, err, sizeof(err)), -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "read-write access denied"));
	CU_ASSERT_EQUAL(region_open(&pd, "shared", 4, &eve, &o, err, sizeof(err)), -EACCES);
	CU_ASSERT_EQUAL(region_open(&pd, "shared", 6, &alice, &o, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(region_open(&pd, "nothing", 4, &alice, &o, err, sizeof(err)), -ENOENT);
	CU_ASSERT_EQUAL(r->leases, 2);
	CU_ASSERT_EQUAL(region_destroy(&pd, "shared", &bob, err, sizeof(err)), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "belongs to uid 1000"));
	CU_ASSERT_EQUAL(region_keep(&pd, "shared", &eve, err, sizeof(err)), -EPERM);
	CU_ASSERT_EQUAL(region_destroy(&pd, "shared", &admin, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(region_find(pd.regions, "shared"));
	/* Its extent is given back (to be scrubbed by its lender, then lent again). */
	CU_ASSERT_EQUAL(pd.regions->count, 0);
	CU_ASSERT_EQUAL(usage_of(&pd.usage, 1000).regions, 0);
	CU_ASSERT_EQUAL(usage_of(&pd.usage, 1000).bytes, 0);
	space_free();
}

/*
 * An anonymous region lives while a lease holds it: closing the last one
 * frees it at once; a session that ends lets its leases go after
 * lease.grace, at the sweep; a kept region stays without any.
 */
static void test_anonymous_leases(void)
{
	struct region *r, *o;
	struct lease *l;

	space_new(1);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "tmp", MiB, "any", 0600, true, &r), 0);
	CU_ASSERT_EQUAL(r->leases, 1);
	CU_ASSERT_EQUAL(region_close(&pd, "tmp", &bob, err, sizeof(err)), -ENOENT);
	CU_ASSERT_EQUAL(region_close(&pd, "tmp", &alice, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(region_find(pd.regions, "tmp"));
	CU_ASSERT_EQUAL(used(2), MiB); /* given back, being scrubbed */

	/* A session's end: its leases hold on through lease.grace, then the sweep ends them. */
	CU_ASSERT_EQUAL_FATAL(make(&alice, "tmp2", MiB, "any", 0600, true, &r), 0);
	CU_ASSERT_EQUAL(region_open(&pd, "tmp2", 4, &alice, &o, err, sizeof(err)), 0);
	pd.conf->lease_grace_ms = 3600000;
	region_session_end(&pd, alice.node, alice.session);
	region_sweep_leases(&pd);
	CU_ASSERT_PTR_EQUAL(region_find(pd.regions, "tmp2"), r);
	CU_ASSERT_EQUAL(r->leases, 2);
	for (l = TAILQ_FIRST(&r->lease_list); l != NULL; l = TAILQ_NEXT(l, entry)) {
		CU_ASSERT(l->ends_at > units_now_ms() + 3500000);
		l->ends_at = units_now_ms(); /* as if lease.grace had passed */
	}
	region_sweep_leases(&pd);
	CU_ASSERT_PTR_NULL(region_find(pd.regions, "tmp2"));
	/* A node that registers again lists its live sessions: the others' leases end. */
	pd.conf->lease_grace_ms = 0;
	CU_ASSERT_EQUAL_FATAL(make(&alice, "live", MiB, "any", 0600, true, &r), 0);
	CU_ASSERT_EQUAL_FATAL(make(&bob, "dead", MiB, "any", 0600, true, NULL), 0);
	region_node_sessions(&pd, 1, 7, &alice.session, 1);
	region_sweep_leases(&pd);
	CU_ASSERT_PTR_EQUAL(region_find(pd.regions, "live"), r);
	CU_ASSERT_PTR_NULL(region_find(pd.regions, "dead"));
	CU_ASSERT_EQUAL(region_close(&pd, "live", &alice, err, sizeof(err)), 0);

	/* Kept: it stays when its last lease ends, and is an ordinary region from then on. */
	CU_ASSERT_EQUAL_FATAL(make(&bob, "kept", MiB, "any", 0600, true, &r), 0);
	CU_ASSERT_EQUAL(region_keep(&pd, "kept", &bob, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(r->anonymous);
	CU_ASSERT_EQUAL(region_close(&pd, "kept", &bob, err, sizeof(err)), 0);
	region_sweep_leases(&pd);
	CU_ASSERT_PTR_EQUAL(region_find(pd.regions, "kept"), r);
	CU_ASSERT_EQUAL(r->leases, 0);
	/* A node that died ends every lease of its sessions. */
	CU_ASSERT_EQUAL_FATAL(make(&eve, "eves", MiB, "any", 0600, true, &r), 0);
	region_node_gone(&pd, eve.node);
	region_sweep_leases(&pd);
	CU_ASSERT_PTR_NULL(region_find(pd.regions, "eves"));
	space_free();
}

/*
 * A lease from the coordinator's journal holds only if its node registers
 * again in the same life and lists its session as live: a node that
 * restarted numbers its sessions from the start again, so an equal session
 * id of a new incarnation is an unrelated client, and the anonymous region
 * goes.
 */
static void test_journal_lease_incarnation(void)
{
	const uint64_t session = 5;
	struct region *r;
	int life;

	space_new(1);
	pd.conf->lease_grace_ms = 0;
	for (life = 7; life <= 8; life++) {
		CU_ASSERT_EQUAL_FATAL(make(&alice, "anon", MiB, "any", 0600, true, &r), 0);
		region_replay_lease(&pd, r->id, 2, session, 7, true);
		CU_ASSERT_EQUAL(region_close(&pd, "anon", &alice, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(r->leases, 1);
		region_node_sessions(&pd, 2, (uint64_t)life, &session, 1);
		region_sweep_leases(&pd);
		if (life == 7) { /* the same life: the lease holds */
			CU_ASSERT_PTR_EQUAL(region_find(pd.regions, "anon"), r);
			CU_ASSERT_EQUAL(region_destroy(&pd, "anon", &alice, err, sizeof(err)), 0);
		} else {
			CU_ASSERT_PTR_NULL(region_find(pd.regions, "anon"));
		}
	}
	space_free();
}

/*
 * A region destroyed while a lender of it is down leaves a tombstone for
 * that lender (it still records the extent, and must scrub it, not have
 * it adopted back); none for a lender that is up. The tombstone goes once
 * the lender's record is reconciled.
 */
static void test_tombstones(void)
{
	struct region *r;
	uint64_t id, id2;

	space_new(2);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "far", 4 * MiB, "spread", 0600, false, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r->next, 2);
	id = r->id;
	member_find(&pd, 3)->state = MEMBER_DEAD;
	/* Its data is not whole while a lender is dead. */
	CU_ASSERT_EQUAL(region_open(&pd, "far", 4, &alice, &r, err, sizeof(err)), POOL_ELOST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "lender node 3 is dead"));
	CU_ASSERT_EQUAL(region_destroy(&pd, "far", &alice, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(region_tombstone(&pd, 2, id));
	CU_ASSERT_PTR_NOT_NULL_FATAL(region_tombstone(&pd, 3, id));
	CU_ASSERT_STRING_EQUAL(region_tombstone(&pd, 3, id)->name, "far");
	CU_ASSERT_EQUAL_FATAL(make(&alice, "near", MiB, "node=2", 0600, false, &r), 0);
	id2 = r->id;
	CU_ASSERT_EQUAL(region_destroy(&pd, "near", &alice, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(region_tombstone(&pd, 2, id2));
	region_tombstones_done(&pd, 3);
	CU_ASSERT_PTR_NULL(region_tombstone(&pd, 3, id));
	space_free();
}

/* rec as a lender's holding or the journal keeps it: packed, unpacked (free *ret after use). */
static void through_a_holding(const struct region_record *rec, struct holding_unpacked *ret,
			      struct region_record *got)
{
	struct holding h = {.e.region = rec->id, .has_region = true, .region = *rec};

	cores_holding_again(&h, ret);
	CU_ASSERT_FATAL(ret->h.has_region);
	*got = ret->h.region;
}

/*
 * A restarted coordinator: the journal's record makes the region again,
 * under its id and global address, lost until the lenders' records of its
 * extents bring it back whole, where it was.
 */
static void test_records(void)
{
	struct region_record jrec, erec[2], got, ext_got[2];
	struct holding_unpacked jh, eh[2], odd;
	struct holding odd_class;
	struct region_extent ext[2];
	uint64_t id, base;
	struct region *r;
	size_t i;

	space_new(2);
	CU_ASSERT_EQUAL_FATAL(make(&alice, "far", 4 * MiB, "spread", 0640, false, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r->next, 2);
	id = r->id;
	base = r->base;
	memcpy(ext, r->ext, sizeof(ext));
	region_record(r, &jrec);
	through_a_holding(&jrec, &jh, &got);
	for (i = 0; i < 2; i++) {
		CU_ASSERT_FATAL(
		    region_extent_record(&pd, ext[i].node, id, ext[i].arena, ext[i].off, &erec[i]));
		CU_ASSERT_EQUAL(erec[i].index, ext[i].region_off);
		through_a_holding(&erec[i], &eh[i], &ext_got[i]);
		CU_ASSERT_EQUAL(ext_got[i].index, ext[i].region_off);
	}
	/* No region has an extent there. */
	CU_ASSERT_FALSE(
	    region_extent_record(&pd, ext[0].node, id, ext[0].arena, ext[0].off + MiB, &got));
	CU_ASSERT_FALSE(
	    region_extent_record(&pd, ext[0].node, id + 1, ext[0].arena, ext[0].off, &got));
	space_free();

	space_new(2);
	got = jh.h.region;
	CU_ASSERT_EQUAL_FATAL(region_replay(&pd, &got, base), 0);
	r = region_find(pd.regions, "far");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->id, id);
	CU_ASSERT_EQUAL(r->base, base);
	CU_ASSERT_EQUAL(r->size, 4 * MiB);
	CU_ASSERT_EQUAL(r->mode, 0640);
	CU_ASSERT_EQUAL(r->uid, 1000);
	CU_ASSERT_EQUAL(r->gid, 100);
	CU_ASSERT_EQUAL(r->cls, CLASS_PINNED);
	CU_ASSERT_STRING_EQUAL(r->placement, "spread");
	CU_ASSERT(r->lost);
	CU_ASSERT_EQUAL(region_open(&pd, "far", 4, &alice, &r, err, sizeof(err)), POOL_ELOST);
	/* A record whose index is past its extents does not hold up. */
	got = ext_got[0];
	got.index = got.extents;
	CU_ASSERT_EQUAL(region_adopt(&pd, ext[0].node, ext[0].arena, ext[0].off, ext[0].len, &got),
			-EINVAL);
	CU_ASSERT_EQUAL(
	    region_adopt(&pd, ext[0].node, ext[0].arena, ext[0].off, ext[0].len, &ext_got[0]), 0);
	/* Told twice while lost: nothing changes; another place for the same extent: refused. */
	CU_ASSERT_EQUAL(
	    region_adopt(&pd, ext[0].node, ext[0].arena, ext[0].off, ext[0].len, &ext_got[0]), 0);
	CU_ASSERT_EQUAL(region_adopt(&pd, ext[0].node, ext[0].arena, ext[0].off + 2 * MiB,
				     ext[0].len, &ext_got[0]),
			-EEXIST);
	CU_ASSERT(region_find(pd.regions, "far")->lost);
	CU_ASSERT_EQUAL(
	    region_adopt(&pd, ext[1].node, ext[1].arena, ext[1].off, ext[1].len, &ext_got[1]), 0);
	r = region_find(pd.regions, "far");
	CU_ASSERT_FALSE(r->lost);
	CU_ASSERT_EQUAL_FATAL(r->next, 2);
	CU_ASSERT(memcmp(r->ext, ext, sizeof(ext)) == 0);
	CU_ASSERT_EQUAL(used(2) + used(3), 4 * MiB);
	CU_ASSERT_EQUAL(region_open(&pd, "far", 4, &alice, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(region_open(&pd, "far", 4, &eve, &r, err, sizeof(err)), -EACCES);

	/* A class this poold does not know is no record of a region. */
	odd_class = (struct holding){.e.region = id, .has_region = true, .region = jh.h.region};
	odd_class.region.cls = 7;
	cores_holding_again(&odd_class, &odd);
	CU_ASSERT_FALSE(odd.h.has_region);
	holding_unpacked_free(&odd);
	holding_unpacked_free(&jh);
	for (i = 0; i < 2; i++)
		holding_unpacked_free(&eh[i]);
	space_free();
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"refusals take nothing", test_refusals},
	    {"placement", test_placement},
	    {"who may open, destroy, keep", test_access},
	    {"anonymous regions and leases", test_anonymous_leases},
	    {"a journal's lease holds only in the same life of its node",
	     test_journal_lease_incarnation},
	    {"tombstones", test_tombstones},
	    {"records bring a region back", test_records},
	    {NULL, NULL},
	};

	return unit_run("region", tests);
}

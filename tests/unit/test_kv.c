/*
 * tests/unit/test_kv.c - the KV index's core (daemon/kv/kv.c, kv_key_op()) on
 * its own: a coordinator's index over lenders' arenas, no network.
 * Eviction order, the last reserver winning, pins outliving a replaced
 * value, aborts and releases that give back exactly what was taken,
 * replicas outliving one lender, dedup values living as long as a holder,
 * lenders' records bringing values back after a coordinator restart, and
 * the namespaces' definitions the nodes keep bringing back namespaces,
 * also when they go in chunks.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/coord/coord.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"
#include "tests/unit/cores.h"
#include "tests/unit/unit.h"

#define MiB (1u << 20)
#define LENDER 2 /* the node lending the arena; this poold is node 1 */

static struct poold pd;

/* A coordinator (node 1) whose one lender, node 2, lends a 64 MiB DRAM arena. */
static void index_new(void)
{
	cores_open(&pd, 1);
}

static void index_free(void)
{
	cores_close(&pd);
}

/*
 * A namespace of capacity bytes, evicting LRU, DRAM only, root's, with replicas copies of each
 * value.
 */
static struct kv_ns *ns_new_copies(const char *name, uint64_t capacity, unsigned replicas)
{
	struct kv_ns_spec spec = {name, capacity, 0, HOLD_NS_DRAM_ONLY, replicas, 0, 0, 0600, 0};
	char err[128];

	CU_ASSERT_FATAL(kv_ns_create(&pd, &spec, err, sizeof(err)) == 0);
	return kv_ns_find(&pd, name);
}

static struct kv_ns *ns_new(const char *name, uint64_t capacity)
{
	return ns_new_copies(name, capacity, 1);
}

static int op(struct kv_ns *ns, uint64_t session, enum kv_op o, const char *key, uint64_t arg,
	      struct kv_result *res)
{
	struct kv_caller who = {1, session, 0};
	struct kv_result r;

	kv_key_op(&pd, ns, &who, o, (const uint8_t *)key, strlen(key), arg, res ? res : &r);
	return res ? res->status : r.status;
}

/* reserve + commit of len bytes for session: the version stored. */
static uint64_t put(struct kv_ns *ns, uint64_t session, const char *key, uint64_t len)
{
	struct kv_result res;

	CU_ASSERT_FATAL(op(ns, session, KV_RESERVE, key, len, &res) == 0);
	CU_ASSERT_EQUAL(res.places, KV_PLACES_WRITE);
	CU_ASSERT_EQUAL(res.val.node, LENDER);
	CU_ASSERT_EQUAL(op(ns, session, KV_COMMIT, key, res.val.version, NULL), 0);
	return res.val.version;
}

/*
 * An expired value is gone for the next read, before any sweep runs (lazy
 * expiry, as Redis's). And a uid that may only read a namespace reserves
 * nothing there: a reserve makes room by evicting, so a refused one must
 * not get that far.
 */
static void test_expiry_on_read_and_write_gate(void)
{
	struct kv_ns_spec spec = {"gate", MiB, 0, HOLD_NS_DRAM_ONLY, 1, 1000, 1000, 0644, 0};
	struct kv_where w;
	struct kv_entry *e;
	struct kv_ns *ns;
	char key[16], err[128];
	int i;

	index_new();
	CU_ASSERT_FATAL(kv_ns_create(&pd, &spec, err, sizeof(err)) == 0);
	ns = kv_ns_find(&pd, "gate");
	put(ns, 1, "old", 1000);
	e = *kv_slot(ns, (const uint8_t *)"old", 3, kv_hash((const uint8_t *)"old", 3));
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(kv_set_expire(ns, e, kv_unix_ms() - 1), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "old", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(ns->expired, 1);
	CU_ASSERT_EQUAL(ns->nentries, 0);

	/* Full of its owner's values (16 of 64 KiB in 1 MiB). */
	for (i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(ns, 1, key, 64 << 10);
	}
	CU_ASSERT_EQUAL(
	    kv_local_op(&pd, 3, 2000, "gate", KV_RESERVE, (const uint8_t *)"new", 3, 64 << 10, &w),
	    -EACCES);
	CU_ASSERT_EQUAL(
	    kv_local_op(&pd, 3, 2000, "gate", KV_REMOVE, (const uint8_t *)"k0", 2, 0, NULL),
	    -EACCES);
	CU_ASSERT_EQUAL(ns->nentries, 16);
	CU_ASSERT_EQUAL(ns->evictions, 0);
	CU_ASSERT_EQUAL(
	    kv_local_op(&pd, 3, 2000, "gate", KV_LOOKUP, (const uint8_t *)"k0", 2, 0, &w), 0);
	CU_ASSERT_EQUAL(kv_local_op(&pd, 3, 2000, "gate", KV_RELEASE, (const uint8_t *)"k0", 2,
				    w.version, NULL),
			0);
	/* Its owner's reserve evicts the coldest. */
	CU_ASSERT_EQUAL(
	    kv_local_op(&pd, 3, 1000, "gate", KV_RESERVE, (const uint8_t *)"new", 3, 64 << 10, &w),
	    0);
	CU_ASSERT_EQUAL(ns->evictions, 1);
	index_free();
}

static void test_put_lookup_release(void)
{
	struct kv_result res;
	struct kv_ns *ns;
	uint64_t v;

	index_new();
	ns = ns_new("kv", 8 * MiB);
	v = put(ns, 1, "k", 1000);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.places, KV_PLACES_READ);
	CU_ASSERT_EQUAL(res.val.version, v);
	CU_ASSERT_EQUAL(res.val.vlen, 1000);
	CU_ASSERT_EQUAL(ns->hits, 1);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "nope", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(ns->misses, 1);
	/* A pin is its session's: another's release finds nothing, its own works once. */
	CU_ASSERT_EQUAL(op(ns, 3, KV_RELEASE, "k", v, NULL), -ENOENT);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k", v, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k", v, NULL), -ENOENT);
	index_free();
}

/* Past the capacity the least recently used value goes, not one read since. */
static void test_eviction_order(void)
{
	struct kv_result res;
	struct kv_ns *ns;
	char key[8];
	int i;

	index_new();
	ns = ns_new("kv", 4 * MiB);
	for (i = 1; i <= 4; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(ns, 1, key, MiB);
	}
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k1", 0, &res), 0); /* k1 is now the most recent */
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k1", res.val.version, NULL), 0);
	put(ns, 1, "k5", MiB);
	CU_ASSERT_EQUAL(ns->evictions, 1);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k2", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k1", 0, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k3", 0, NULL), 0);
	CU_ASSERT(ns->used <= ns->capacity);
	index_free();
}

static struct kv_entry *entry(struct kv_ns *ns, const char *key)
{
	return *kv_slot(ns, (const uint8_t *)key, strlen(key),
			kv_hash((const uint8_t *)key, strlen(key)));
}

/* Pin key's value how, until then (Unix ms, 0: for as long as it lives). */
static void pin(struct kv_ns *ns, const char *key, enum kv_retain how, int64_t until)
{
	struct kv_entry *e = entry(ns, key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(kv_retain_set(ns, e, how, until), 0);
}

static bool present(struct kv_ns *ns, const char *key)
{
	return op(ns, 9, KV_EXISTS, key, 0, NULL) == 0;
}

/*
 * Pins against eviction (4 MiB of 1 MiB values): a hard pinned value is
 * never evicted, a soft pinned one only when no unpinned value can go, each
 * until its deadline; a new version of a key keeps its pin; a namespace
 * full of hard pinned values refuses a put, and takes it once one is removed.
 */
static void test_retention(void)
{
	struct kv_result res;
	struct kv_ns *ns;
	char key[8];
	int i;

	index_new();
	ns = ns_new("kv", 4 * MiB);
	put(ns, 1, "hard", MiB);
	pin(ns, "hard", KV_RETAIN_HARD, 0);
	put(ns, 1, "soft", MiB);
	pin(ns, "soft", KV_RETAIN_SOFT, 0);
	CU_ASSERT_EQUAL(ns->nhard, 1);
	CU_ASSERT_EQUAL(ns->nsoft, 1);
	/* Ten more values through the two places left: the pinned ones stay. */
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(ns, 1, key, MiB);
	}
	CU_ASSERT(present(ns, "hard"));
	CU_ASSERT(present(ns, "soft"));
	CU_ASSERT(present(ns, "k9") && present(ns, "k8") && !present(ns, "k7"));
	CU_ASSERT_EQUAL(ns->evictions, 8);
	/* Pinned values read often stay pinned; a rewrite of a pinned key keeps its pin. */
	put(ns, 1, "soft", MiB);
	CU_ASSERT_EQUAL(ns->nsoft, 1);
	CU_ASSERT_EQUAL(entry(ns, "soft")->retain, KV_RETAIN_SOFT);
	/* A value that needs 3 places: the unpinned ones go, then the soft pinned one. */
	put(ns, 1, "big", 3 * MiB);
	CU_ASSERT(present(ns, "hard"));
	CU_ASSERT(!present(ns, "soft") && !present(ns, "k9") && !present(ns, "k8"));
	CU_ASSERT_EQUAL(ns->nsoft, 0);
	/* Full of hard pinned values: a put is refused, not made room for. */
	pin(ns, "big", KV_RETAIN_HARD, 0);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "more", MiB, &res), -ENOSPC);
	CU_ASSERT(present(ns, "hard") && present(ns, "big"));
	/* A pin whose deadline passed ends at the sweep: the value may go again. */
	pin(ns, "big", KV_RETAIN_HARD, kv_unix_ms() - 1);
	kv_sweep(&pd);
	CU_ASSERT_EQUAL(entry(ns, "big")->retain, KV_RETAIN_NONE);
	CU_ASSERT_EQUAL(ns->nhard, 1);
	put(ns, 1, "more", MiB);
	CU_ASSERT(present(ns, "hard") && present(ns, "more") && !present(ns, "big"));
	/* Removed, a hard pinned value goes, and its pin with it. */
	CU_ASSERT_EQUAL(op(ns, 1, KV_REMOVE, "hard", 0, NULL), 0);
	CU_ASSERT_EQUAL(ns->nhard, 0);
	CU_ASSERT(ns->used <= ns->capacity);
	index_free();
}

/*
 * The last writer to reserve wins: the earlier one's commit succeeds and
 * changes nothing, and the value is the later one's, whichever commits first.
 */
static void test_last_reserver_wins(void)
{
	struct kv_result a, b, res;
	struct kv_ns *ns;

	index_new();
	ns = ns_new("kv", 8 * MiB);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "k", 100, &a), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RESERVE, "k", 200, &b), 0);
	CU_ASSERT_NOT_EQUAL(a.val.off, b.val.off); /* never the same place */
	CU_ASSERT_EQUAL(op(ns, 2, KV_COMMIT, "k", b.val.version, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 1, KV_COMMIT, "k", a.val.version, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_EXISTS, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.val.version, b.val.version);
	CU_ASSERT_EQUAL(res.val.vlen, 200);
	/* Only its session may publish a reservation. */
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "j", 100, &a), 0);
	CU_ASSERT_EQUAL(op(ns, 9, KV_COMMIT, "j", a.val.version, NULL), -EPERM);
	CU_ASSERT_EQUAL(op(ns, 9, KV_COMMIT, "j", a.val.version + 100, NULL), -ESTALE);
	index_free();
}

/* A value replaced while pinned lives on, out of the index, until its last pin goes. */
static void test_pin_outlives_replace(void)
{
	struct kv_result res;
	struct kv_ns *ns;
	uint64_t v1, v2, used1;

	index_new();
	ns = ns_new("kv", 8 * MiB);
	v1 = put(ns, 1, "k", MiB);
	used1 = ns->used;
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.val.version, v1);
	v2 = put(ns, 1, "k", MiB);
	CU_ASSERT_NOT_EQUAL(v1, v2);
	CU_ASSERT_EQUAL(op(ns, 3, KV_EXISTS, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.val.version, v2);
	CU_ASSERT(!TAILQ_EMPTY(&ns->zombies)); /* v1, still read */
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k", v1, NULL), 0);
	CU_ASSERT(TAILQ_EMPTY(&ns->zombies));
	CU_ASSERT_EQUAL(ns->used, used1); /* v2's bytes only */
	index_free();
}

/* An abort gives back what the reservation took; remove drops the value. */
static void test_abort_and_remove(void)
{
	struct kv_result res;
	struct kv_ns *ns;

	index_new();
	ns = ns_new("kv", 8 * MiB);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "k", MiB, &res), 0);
	CU_ASSERT(ns->used >= MiB);
	CU_ASSERT_EQUAL(op(ns, 1, KV_ABORT, "k", res.val.version, NULL), 0);
	CU_ASSERT_EQUAL(ns->used, 0);
	CU_ASSERT_EQUAL(op(ns, 1, KV_EXISTS, "k", 0, NULL), -ENOENT);
	put(ns, 1, "k", MiB);
	CU_ASSERT_EQUAL(op(ns, 1, KV_REMOVE, "k", 0, NULL), 0);
	CU_ASSERT_EQUAL(ns->used, 0);
	CU_ASSERT_EQUAL(op(ns, 1, KV_REMOVE, "k", 0, NULL), -ENOENT);
	/* Bad input: a key over the limit, a value over the limit or the capacity. */
	{
		char big[POOL_KV_KEY_MAX + 2];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, big, 10, NULL), -EINVAL);
	}
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "k", (uint64_t)POOL_KV_VALUE_MAX + 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "k", 16 * MiB, NULL), -ENOSPC);
	index_free();
}

/* With replicas 2 a value is on two lenders; it outlives one of them, not both. */
/* What uid 0 is charged for: KV values' bytes. */
static uint64_t charged(void)
{
	return usage_of(&pd.usage, 0).bytes;
}

/*
 * A value's copies are charged with it, and a copy lost with its lender
 * is no longer charged.
 */
static void test_replicas(void)
{
	struct kv_place copy;
	struct kv_result res;
	struct kv_ns *ns;

	index_new();
	cores_lender_add(&pd, 3);
	ns = ns_new_copies("kv", 8 * MiB, 2);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "k", 1000, &res), 0);
	CU_ASSERT_EQUAL(res.val.ncopies, 1);
	CU_ASSERT_NOT_EQUAL(res.val.node, res.val.copy[0].node); /* never both on one node */
	CU_ASSERT_EQUAL(op(ns, 1, KV_COMMIT, "k", res.val.version, NULL), 0);
	copy = res.val.copy[0];
	CU_ASSERT_EQUAL(charged(), res.val.alen + copy.alen);
	kv_node_lost(&pd, res.val.node);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k", 0, NULL), 0);
	CU_ASSERT_EQUAL(charged(), copy.alen);
	kv_node_lost(&pd, copy.node);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(charged(), 0);
	index_free();
}

/* One operation on a binary key (a snapshot page's: its owner's uid first, big-endian). */
static int op_bin(struct kv_ns *ns, uint64_t session, enum kv_op o, const uint8_t *key, size_t klen,
		  uint64_t arg, struct kv_result *res)
{
	struct kv_caller who = {1, session, 0};

	kv_key_op(&pd, ns, &who, o, key, klen, arg, res);
	return res->status;
}

/*
 * A dedup namespace's value lives while a holder region holds it: the first
 * holder's put writes it, another's put of the same key only takes a
 * reference (-EEXIST: nothing to write), and the value goes with the last
 * holder, not before.
 */
static void test_dedup_references(void)
{
	static const uint8_t key[] = {0, 0, 0, 0, 'p', 'a', 'g', 'e'};
	struct region_caller root = {1, 1, 0, 0, true};
	struct region_spec spec = {"snap/a", MiB, CLASS_PINNED, "any", 0, 0600, false, false};
	struct kv_result res;
	struct region *a, *b;
	struct kv_ns *ns;
	char err[256];

	index_new();
	CU_ASSERT_FATAL(kv_snap_open(&pd) == 0);
	ns = kv_ns_find(&pd, "snap.pages");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
	CU_ASSERT_EQUAL_FATAL(region_create(&pd, &spec, &root, &a, err, sizeof(err)), 0);
	spec.name = "snap/b";
	CU_ASSERT_EQUAL_FATAL(region_create(&pd, &spec, &root, &b, err, sizeof(err)), 0);
	pd.kv->holder = a;
	CU_ASSERT_EQUAL_FATAL(op_bin(ns, 1, KV_RESERVE, key, sizeof(key), 4096, &res), 0);
	CU_ASSERT_EQUAL(op_bin(ns, 1, KV_COMMIT, key, sizeof(key), res.val.version, &res), 0);
	CU_ASSERT_EQUAL(a->refs_len, 1 + sizeof(key));
	pd.kv->holder = b;
	CU_ASSERT_EQUAL(op_bin(ns, 2, KV_RESERVE, key, sizeof(key), 4096, &res), -EEXIST);
	CU_ASSERT_EQUAL(b->refs_len, 1 + sizeof(key));
	CU_ASSERT_EQUAL(ns->nentries, 1);
	pd.kv->holder = NULL;
	CU_ASSERT_EQUAL(region_destroy(&pd, "snap/a", &root, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(op_bin(ns, 3, KV_EXISTS, key, sizeof(key), 0, &res), 0);
	CU_ASSERT(ns->used > 0);
	CU_ASSERT_EQUAL(region_destroy(&pd, "snap/b", &root, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(op_bin(ns, 3, KV_EXISTS, key, sizeof(key), 0, &res), -ENOENT);
	CU_ASSERT_EQUAL(ns->used, 0);
	CU_ASSERT_EQUAL(ns->nentries, 0);
	index_free();
}

/*
 * After a restart of the coordinator a dedup namespace's references are
 * unknown: nothing is freed until the holders told their keys again
 * (adopted), and a recount refused while a snapshot manifest has not; then
 * it frees exactly the values no holder lists.
 */
static void test_dedup_recount(void)
{
	static const uint8_t held[] = {0, 0, 0, 0, 'h'}, lone[] = {0, 0, 0, 0, 'l'};
	struct region_caller root = {1, 1, 0, 0, true};
	struct region_spec spec = {"snap/m", MiB, CLASS_PINNED, "any", 0, 0600, false, false};
	struct kv_result res;
	struct kv_entry *e;
	struct region *m;
	struct kv_ns *ns;
	uint64_t freed = 99;
	char err[256];

	index_new();
	CU_ASSERT_FATAL(kv_snap_open(&pd) == 0);
	ns = kv_ns_find(&pd, "snap.pages");
	CU_ASSERT_EQUAL_FATAL(region_create(&pd, &spec, &root, &m, err, sizeof(err)), 0);
	pd.kv->holder = m;
	CU_ASSERT_EQUAL_FATAL(op_bin(ns, 1, KV_RESERVE, held, sizeof(held), 4096, &res), 0);
	CU_ASSERT_EQUAL(op_bin(ns, 1, KV_COMMIT, held, sizeof(held), res.val.version, &res), 0);
	CU_ASSERT_EQUAL_FATAL(op_bin(ns, 1, KV_RESERVE, lone, sizeof(lone), 4096, &res), 0);
	CU_ASSERT_EQUAL(op_bin(ns, 1, KV_COMMIT, lone, sizeof(lone), res.val.version, &res), 0);
	/* As a restart leaves them: counts unknown, the manifest's list empty, not adopted. */
	free(m->refs);
	m->refs = NULL;
	m->refs_len = m->refs_cap = 0;
	m->refs_unknown = true;
	e = *kv_slot(ns, held, sizeof(held), kv_hash(held, sizeof(held)));
	e->refs = KV_REFS_UNKNOWN;
	e = *kv_slot(ns, lone, sizeof(lone), kv_hash(lone, sizeof(lone)));
	e->refs = KV_REFS_UNKNOWN;
	CU_ASSERT_EQUAL(kv_recount(&pd, ns, &freed, err, sizeof(err)), -EBUSY);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "'snap/m' is not adopted yet"));
	CU_ASSERT_EQUAL(freed, 99);
	CU_ASSERT_EQUAL(ns->nentries, 2);
	/* The manifest tells its one key again (adopt), and is whole (adopted). */
	CU_ASSERT_EQUAL(kv_holder_add(&pd, ns, held, sizeof(held), NULL), 0);
	m->refs_unknown = false;
	CU_ASSERT_EQUAL(kv_recount(&pd, ns, &freed, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(freed, 1);
	CU_ASSERT_EQUAL(op_bin(ns, 2, KV_EXISTS, lone, sizeof(lone), 0, &res), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(op_bin(ns, 2, KV_EXISTS, held, sizeof(held), 0, &res), 0);
	e = *kv_slot(ns, held, sizeof(held), kv_hash(held, sizeof(held)));
	CU_ASSERT_EQUAL(e->refs, 1);
	/* Counted again, it goes with its holder as before. */
	pd.kv->holder = NULL;
	CU_ASSERT_EQUAL(region_destroy(&pd, "snap/m", &root, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ns->nentries, 0);
	CU_ASSERT_EQUAL(ns->used, 0);
	index_free();
}

/* A value at e as its lender's holding keeps it: packed, unpacked (free *ret after use). */
static void through_a_holding(const struct ledger_extent *e, const struct kv_record *rec,
			      struct holding_unpacked *ret)
{
	struct holding h = {.e = *e, .has_kv = true, .kv = *rec};

	cores_holding_again(&h, ret);
	CU_ASSERT_FATAL(ret->h.has_kv);
}

/*
 * A restarted coordinator: a lender's record of a value brings back its
 * namespace and the value where it was; an older record changes nothing,
 * a newer one replaces it.
 */
static void test_records(void)
{
	struct ledger_extent at;
	struct holding_unpacked h;
	struct kv_record rec, got;
	struct kv_result res;
	struct kv_ns *ns;
	struct kv_val was;
	uint64_t v;

	index_new();
	ns = ns_new("kv", 8 * MiB);
	ns->size_hint = 4096;
	v = put(ns, 1, "k", 1000);
	CU_ASSERT_EQUAL_FATAL(op(ns, 2, KV_LOOKUP, "k", 0, &res), 0);
	was = res.val;
	at = (struct ledger_extent){
	    .arena = was.arena, .off = was.off, .len = was.alen, .region = KV_HOLD_ID(ns)};
	rec = (struct kv_record){.ns = "kv",
				 .ns_capacity = ns->capacity,
				 .ns_flags = ns->flags,
				 .ns_replicas = 1,
				 .ns_size_hint = 4096,
				 .key = (const uint8_t *)"k",
				 .klen = 1,
				 .vlen = 1000,
				 .version = v,
				 .has_owner = true,
				 .owner = 1000};
	through_a_holding(&at, &rec, &h);
	at = h.h.e;
	got = h.h.kv;
	index_free();

	index_new();
	CU_ASSERT_PTR_NULL(kv_ns_find(&pd, "kv"));
	CU_ASSERT_EQUAL_FATAL(kv_adopt(&pd, LENDER, &at, &got), 0);
	ns = kv_ns_find(&pd, "kv");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
	CU_ASSERT_EQUAL(ns->capacity, 8 * MiB);
	CU_ASSERT_EQUAL(ns->flags, HOLD_NS_DRAM_ONLY);
	CU_ASSERT_EQUAL(ns->replicas, 1);
	CU_ASSERT_EQUAL(ns->size_hint, 4096);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.val.version, v);
	CU_ASSERT_EQUAL(res.val.vlen, 1000);
	CU_ASSERT_EQUAL(res.val.node, LENDER);
	CU_ASSERT_EQUAL(res.val.arena, was.arena);
	CU_ASSERT_EQUAL(res.val.off, was.off);
	CU_ASSERT_EQUAL(res.val.owner, 1000);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k", v, NULL), 0);
	/* Told again, or of an older version: nothing changes. */
	CU_ASSERT_EQUAL(kv_adopt(&pd, LENDER, &at, &got), -EEXIST);
	/* A newer version elsewhere on the lender replaces it. */
	got.version = v + 1;
	at.off = was.off + 4 * MiB;
	CU_ASSERT_EQUAL(kv_adopt(&pd, LENDER, &at, &got), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k", 0, &res), 0);
	CU_ASSERT_EQUAL(res.val.version, v + 1);
	CU_ASSERT_EQUAL(res.val.off, was.off + 4 * MiB);
	CU_ASSERT_EQUAL(ns->used, was.alen);
	/* A record that does not hold up: no key, or a value longer than its extent. */
	got.version = v + 2;
	got.klen = 0;
	CU_ASSERT_EQUAL(kv_adopt(&pd, LENDER, &at, &got), -EINVAL);
	got.klen = 1;
	got.vlen = at.len + 1;
	CU_ASSERT_EQUAL(kv_adopt(&pd, LENDER, &at, &got), -EINVAL);
	holding_unpacked_free(&h);
	index_free();
}

static void ns_make(const struct kv_ns_spec *spec)
{
	char err[128];

	CU_ASSERT_FATAL(kv_ns_create(&pd, spec, err, sizeof(err)) == 0);
}

static void ns_defined_as(const struct kv_ns_spec *spec)
{
	const struct kv_ns *ns = kv_ns_find(&pd, spec->name);

	CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
	CU_ASSERT_EQUAL(ns->capacity, spec->capacity);
	CU_ASSERT_EQUAL(ns->size_hint, spec->size_hint);
	CU_ASSERT_EQUAL(ns->flags, spec->flags);
	CU_ASSERT_EQUAL(ns->replicas, spec->replicas);
	CU_ASSERT_EQUAL(ns->uid, spec->uid);
	CU_ASSERT_EQUAL(ns->gid, spec->gid);
	CU_ASSERT_EQUAL(ns->mode, spec->mode);
	CU_ASSERT_EQUAL(ns->nentries, 0);
}

/*
 * A restarted coordinator: the namespaces' definitions a node kept bring
 * back each namespace as it was made, with none of its values, a RESP
 * user's database with its owner, but not root's RESP database (made again
 * on use) unless a SWAPDB moved it to another database (which it is told
 * again, also when it was rebuilt from its lenders first), one it has, or
 * one that does not hold up.
 */
static void test_definitions(void)
{
	const struct kv_ns_spec specs[] = {
	    {"dram", 8 * MiB, 4096, HOLD_NS_DRAM_ONLY | HOLD_NS_NO_EVICT, 2, 1000, 100, 0640, 0},
	    {"pmem", 16 * MiB, 0, HOLD_NS_PERSISTENT, 1, 0, 0, 0600, 0},
	    {"both", MiB, 0, 0, 1, 1001, 1001, 0604, 0},
	    {"pages", 4 * MiB, 0, HOLD_NS_DEDUP, 1, 0, 0, 0666, 0},
	    {"redis0", MiB, 0, 0, 1, 0, 0, 0600, 0},
	    {"redis1", MiB, 0, 0, 1, 0, 0, 0600, 0},
	    {"redis2", MiB, 0, 0, 1, 0, 0, 0600, 0},
	};
	const struct kv_ns_spec odd[] = {
	    {"", 8 * MiB, 0, 0, 1, 0, 0, 0600, 0},
	    {"small", MiB - 1, 0, 0, 1, 0, 0, 0600, 0},
	    {"copies", 8 * MiB, 0, 0, KV_MAX_REPLICAS + 1, 0, 0, 0600, 0},
	    {"hint", 8 * MiB, POOL_KV_VALUE_MAX + 1, 0, 1, 0, 0, 0600, 0},
	    {"fine", 8 * MiB, 0, 0, 1, 0, 0, 0600, 0},
	};
	struct kv_ns_spec *defs;
	uint8_t *kept;
	size_t i, len, n;

	index_new();
	for (i = 0; i < ARRAY_SIZE(specs); i++)
		ns_make(&specs[i]);
	put(kv_ns_find(&pd, "dram"), 1, "k", 1000);
	kv_ns_find(&pd, "both")->resp_db = true;   /* a RESP user's */
	kv_ns_find(&pd, "redis0")->resp_db = true; /* root's */
	kv_ns_find(&pd, "redis1")->resp_db = true; /* root's, serving database 2 */
	kv_ns_find(&pd, "redis2")->resp_db = true; /* and database 1 */
	kv_ns_serve(&pd, kv_ns_find(&pd, "redis1"), 2 + 1);
	kv_ns_serve(&pd, kv_ns_find(&pd, "redis2"), 1 + 1);
	CU_ASSERT_EQUAL(pd.kv->nswapped, 2);
	kept = cores_defs_kept(&pd, &len);
	index_free();

	index_new();
	ns_make(&(struct kv_ns_spec){"pmem", 2 * MiB, 0, 0, 1, 7, 7, 0600, 0});
	ns_make(&specs[6]); /* (rebuilt from its lenders, before the definitions came) */
	cores_defs_told(&pd, kept, len);
	ns_defined_as(&specs[0]);
	ns_defined_as(&specs[2]);
	ns_defined_as(&specs[3]);
	CU_ASSERT_EQUAL(kv_ns_find(&pd, "pmem")->capacity, 2 * MiB); /* as this one had it */
	CU_ASSERT_EQUAL(kv_ns_find(&pd, "pmem")->uid, 7);
	CU_ASSERT_PTR_NULL(kv_ns_find(&pd, "redis0"));
	CU_ASSERT_EQUAL(kv_ns_find(&pd, "redis1")->serves_db, 2 + 1);
	CU_ASSERT_EQUAL(kv_ns_find(&pd, "redis2")->serves_db, 1 + 1);
	CU_ASSERT_EQUAL(op(kv_ns_find(&pd, "dram"), 2, KV_LOOKUP, "k", 0, NULL), -ENOENT);
	/* Told again: nothing changes. */
	cores_defs_told(&pd, kept, len);
	CU_ASSERT_EQUAL_FATAL(kv_defs(&pd, &defs, &n), 0);
	CU_ASSERT_EQUAL(n, 6);
	free(defs);
	/* A swapped namespace dropped is no longer listed as swapped. */
	kv_ns_drop(&pd, kv_ns_find(&pd, "redis1"));
	CU_ASSERT_EQUAL(pd.kv->nswapped, 1);
	CU_ASSERT_PTR_EQUAL(pd.kv->swapped[0], kv_ns_find(&pd, "redis2"));
	free(kept);
	index_free();

	/* Definitions that do not hold up are passed over. */
	index_new();
	kv_defs_adopt(&pd, odd, ARRAY_SIZE(odd), "a test");
	CU_ASSERT_EQUAL_FATAL(kv_defs(&pd, &defs, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_STRING_EQUAL(defs[0].name, "fine");
	free(defs);
	index_free();
}

static void no_frame(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload, void *arg)
{
	(void)c, (void)hdr, (void)payload, (void)arg;
}

static void no_close(struct conn *c, void *arg)
{
	(void)c, (void)arg;
}

/*
 * The definitions go to a node in kv-ns-defs chunks of peer.chunk_size,
 * numbered, the last without more; told to a restarted coordinator chunk by
 * chunk, they bring every namespace back.
 */
static void test_definitions_in_chunks(void)
{
	static const struct conn_ops ops = {.frame = no_frame, .closed = no_close};
	struct member *m;
	struct kv_ns_spec *defs;
	Pool__KvNamespace **msgs;
	uint8_t *kept[KV_MAX_NAMESPACES];
	size_t len[KV_MAX_NAMESPACES], n, i, nchunks = 0;
	char name[32];
	bool more = true;
	int sv[2];

	index_new();
	pd.conf->peer_chunk_size = 4096;
	CU_ASSERT_FATAL(member_call_open(&pd) == 0);
	for (i = 0; i < KV_MAX_NAMESPACES; i++) {
		snprintf(name, sizeof(name), "namespace-%03zu", i);
		ns_make(&(struct kv_ns_spec){name, MiB, 0, 0, 1, 1000, 1000, 0600, 0});
	}
	m = member_find(&pd, LENDER);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT_FATAL(conn_new(pd.base, sv[0], NULL, 1u << 20, &ops, NULL, "node 2", &m->conn) ==
			0);
	CU_ASSERT_FATAL((msgs = kv_defs_msg(&pd, &n)) != NULL);
	CU_ASSERT_EQUAL(n, KV_MAX_NAMESPACES);
	kv_defs_tell(&pd, LENDER, msgs, n, 0, 0);
	free(msgs);
	for (i = 0; i < 100 && conn_output_len(m->conn) > 0; i++)
		event_base_loop(pd.base, EVLOOP_NONBLOCK);
	while (more) {
		struct wire_hdr hdr;
		ProtobufCMessage *msg;
		Pool__KvNsReply *chunk;

		CU_ASSERT_FATAL(wire_recv_frame(sv[1], 1u << 20, 1000, &hdr, &kept[nchunks]) == 0);
		len[nchunks] = hdr.len;
		CU_ASSERT_EQUAL(hdr.type, WIRE_KV_NS_DEFS);
		CU_ASSERT(hdr.len <= 4096);
		CU_ASSERT_FATAL(wire_msg_unpack(WIRE_KV_NS_DEFS, kept[nchunks], hdr.len, &msg) ==
				0);
		chunk = (Pool__KvNsReply *)msg;
		CU_ASSERT(chunk->has_seq && chunk->seq == nchunks);
		CU_ASSERT(chunk->n_namespaces > 0);
		more = chunk->has_more && chunk->more;
		wire_msg_free(msg);
		nchunks++;
	}
	CU_ASSERT(nchunks > 2);
	member_call_close(&pd);
	conn_free(m->conn);
	m->conn = NULL;
	close(sv[1]);
	index_free();

	index_new();
	for (i = 0; i < nchunks; i++) {
		cores_defs_told(&pd, kept[i], len[i]);
		free(kept[i]);
	}
	CU_ASSERT_EQUAL_FATAL(kv_defs(&pd, &defs, &n), 0);
	CU_ASSERT_EQUAL(n, KV_MAX_NAMESPACES);
	free(defs);
	ns_defined_as(&(struct kv_ns_spec){"namespace-255", MiB, 0, 0, 1, 1000, 1000, 0600, 0});
	index_free();
}

/* reserve + commit of key, a persistent value, as one key of the commit d. */
static void put_durable(struct kv_ns *ns, struct kv_durable *d, size_t i, const char *key,
			uint32_t lender)
{
	struct kv_result res;

	CU_ASSERT_FATAL(op(ns, 1, KV_RESERVE, key, 1000, &res) == 0);
	CU_ASSERT_EQUAL(res.val.node, lender);
	pd.kv->durable = d;
	pd.kv->durable_i = i;
	CU_ASSERT_EQUAL(op(ns, 1, KV_COMMIT, key, res.val.version, NULL), 0);
	pd.kv->durable = NULL;
}

/*
 * A commit of persistent values: each lender is told the values it holds in
 * one message, and a key whose lender cannot record it is failed; a lender
 * that records them (this poold itself) fails none.
 */
static void test_durable_commits(void)
{
	struct kv_ns_spec spec = {"p", 8 * MiB, 0, HOLD_NS_PERSISTENT, 1, 0, 0, 0600, 0};
	const char *keys[] = {"a", "b", "c"};
	struct holding *held;
	struct kv_durable *d;
	char err[128];
	size_t i, n;

	/* This poold (node 1) lends the pmem tier: its own record takes the values. */
	cores_open(&pd, 0);
	cores_lender_add_tier(&pd, 1, TIER_PMEM);
	CU_ASSERT_FATAL(kv_ns_create(&pd, &spec, err, sizeof(err)) == 0);
	d = kv_durable_new(3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (i = 0; i < 3; i++)
		put_durable(kv_ns_find(&pd, "p"), d, i, keys[i], 1);
	CU_ASSERT_EQUAL(d->ntells, 3);
	kv_durable_send(&pd, d);
	CU_ASSERT_EQUAL(d->pending, 0);
	CU_ASSERT_EQUAL(d->lost, 0);
	for (i = 0; i < 3; i++)
		CU_ASSERT_FALSE(d->failed[i]);
	kv_durable_free(d);
	CU_ASSERT_EQUAL_FATAL(hold_list(&pd, &held, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	for (i = 0; i < n; i++) {
		CU_ASSERT(held[i].has_kv);
		CU_ASSERT_STRING_EQUAL(held[i].kv.ns, "p");
		CU_ASSERT_EQUAL(held[i].kv.ns_flags, HOLD_NS_PERSISTENT);
		CU_ASSERT_EQUAL(held[i].kv.vlen, 1000);
	}
	free(held);
	index_free();

	/* Node 3 lends it, but no link reaches it: every key of the commit fails. */
	cores_open(&pd, 0);
	cores_lender_add_tier(&pd, 3, TIER_PMEM);
	CU_ASSERT_FATAL(kv_ns_create(&pd, &spec, err, sizeof(err)) == 0);
	d = kv_durable_new(2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	put_durable(kv_ns_find(&pd, "p"), d, 0, "a", 3);
	put_durable(kv_ns_find(&pd, "p"), d, 1, "b", 3);
	kv_durable_send(&pd, d);
	CU_ASSERT_EQUAL(d->pending, 0);
	CU_ASSERT_EQUAL(d->lost, 2);
	CU_ASSERT(d->failed[0] && d->failed[1]);
	kv_durable_free(d);
	index_free();
}

/* reserve + commit of len bytes for session, wherever it lands: the version stored. */
static uint64_t put_any(struct kv_ns *ns, uint64_t session, const char *key, uint64_t len)
{
	struct kv_result res;

	CU_ASSERT_FATAL(op(ns, session, KV_RESERVE, key, len, &res) == 0);
	CU_ASSERT_FATAL(op(ns, session, KV_COMMIT, key, res.val.version, NULL) == 0);
	return res.val.version;
}

#define BULK 200000 /* keys of the sliced flush */
#define BULK_VLEN 64
#define SLICE 10000

/* A coordinator that lends its own arena (node 1): freed extents go back to it at once. */
static struct kv_ns *bulk_ns(const char *name, size_t n)
{
	char key[16];
	struct kv_ns *ns;
	size_t i;

	cores_open(&pd, 0);
	cores_lender_add(&pd, 1);
	ns = ns_new(name, 32 * MiB);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		put_any(ns, 1, key, BULK_VLEN);
	}
	CU_ASSERT_EQUAL_FATAL(ns->nentries, n);
	CU_ASSERT_EQUAL(ns->used, n * BULK_VLEN);
	CU_ASSERT_EQUAL(charged(), n * BULK_VLEN);
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), n * BULK_VLEN);
	CU_ASSERT_EQUAL(pd.nholds, n);
	return ns;
}

/* The sum of what the namespaces being freed hold, and their entries. */
static size_t ghosts(uint64_t *ret_used, size_t *ret_entries)
{
	struct kv_ns *g;
	size_t n = 0;

	*ret_used = 0;
	*ret_entries = 0;
	TAILQ_FOREACH(g, &pd.kv->reaping, entry) {
		n++;
		*ret_used += g->used;
		*ret_entries += g->nentries;
	}
	return n;
}

/*
 * A flush of many keys: at once, the namespace is empty for gets and takes
 * puts, which the flush leaves alone; its entries are freed a slice at a
 * time, each giving back exactly its values' bytes (quota, extents), the
 * namespace's own untouched; a reader's pin and a writer's reservation
 * taken before the flush are settled as a flush at once would have (the
 * release and the commit succeed and change nothing), freed yet or not;
 * a session that ends before its entry is freed leaves nothing behind; at
 * the end only what was put after the flush is held, by the lender too.
 */
static void test_flush_sliced(void)
{
	struct kv_result res, pin, late;
	uint64_t used, before;
	size_t entries, slices = 0;
	struct kv_ns *ns;

	ns = bulk_ns("kv", BULK);
	CU_ASSERT_EQUAL_FATAL(op(ns, 2, KV_LOOKUP, "k5", 0, &pin), 0);	   /* 2 reads k5 */
	CU_ASSERT_EQUAL_FATAL(op(ns, 3, KV_RESERVE, "k7", 100, &late), 0); /* 3 writes k7 again */
	CU_ASSERT_EQUAL_FATAL(op(ns, 4, KV_RESERVE, "new", 100, &res), 0); /* 4 a new key */
	CU_ASSERT_EQUAL_FATAL(op(ns, 5, KV_LOOKUP, "k9", 0, &res), 0);	   /* 5 reads k9 */
	before = charged();

	kv_ns_flush(&pd, ns);
	CU_ASSERT_EQUAL(ns->nentries, 0);
	CU_ASSERT_EQUAL(ns->used, 0);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(op(ns, 6, KV_LOOKUP, "k5", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "new", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(ghosts(&used, &entries), 1);
	CU_ASSERT_EQUAL(entries, BULK + 1);
	CU_ASSERT_EQUAL(used, before);
	CU_ASSERT_EQUAL(charged(), before); /* nothing is freed yet */
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), before);

	/* A put during the flush lands in the emptied namespace; a session ends meanwhile. */
	put_any(ns, 1, "k1", BULK_VLEN);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), 0);
	CU_ASSERT_EQUAL(ns->nentries, 1);
	CU_ASSERT_EQUAL(ns->used, BULK_VLEN);
	kv_session_end(&pd, 1, 5, false); /* before k9, which it read, is freed */

	while (ghosts(&used, &entries) > 0) {
		size_t was = entries;
		uint64_t had = used;

		kv_reap(&pd, SLICE, 0);
		slices++;
		(void)ghosts(&used, &entries);
		CU_ASSERT(was - entries <= SLICE);
		if (was >
		    SLICE) { /* (the last slices also look for reservations, bucket by bucket) */
			CU_ASSERT_EQUAL(was - entries, SLICE);
			CU_ASSERT_EQUAL(had - used, SLICE * BULK_VLEN);
		}
		/* What is charged and lent is what the ghost and the namespace hold, at every
		 * stage. */
		CU_ASSERT_EQUAL(charged(), used + ns->used);
		CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), used + ns->used);
		CU_ASSERT_EQUAL(ns->nentries, 1);
		CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), 0);
		if (slices == 2) {
			/*
			 * k5 (moved to the end of the recency list by its read) is not freed yet,
			 * k7's reservation is kept for its writer: each settles them now.
			 */
			CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k5", pin.val.version, NULL), 0);
			CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k5", pin.val.version, NULL),
					-ENOENT);
			CU_ASSERT_EQUAL(op(ns, 9, KV_COMMIT, "k7", late.val.version, NULL),
					-ESTALE);
			CU_ASSERT_EQUAL(op(ns, 3, KV_COMMIT, "k7", late.val.version, NULL), 0);
			CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k7", 0, NULL), -ENOENT);
			CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k5", 0, NULL), -ENOENT);
		}
		if (slices == 3) {
			/* A ledger pass meanwhile neither takes them back nor scrubs them. */
			before = charged();
			reconcile_ask(&pd, 1);
			reconcile_run(&pd, 0);
			CU_ASSERT_EQUAL(ns->nentries, 1);
			CU_ASSERT_EQUAL(ns->used, BULK_VLEN);
			CU_ASSERT_EQUAL(charged(), before);
			CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), before);
		}
	}
	CU_ASSERT(slices >= BULK / SLICE);
	/* Session 4's reservation outlived its entry, for its writer: it goes with the session. */
	CU_ASSERT_EQUAL(ns->used, BULK_VLEN + 128);
	kv_session_end(&pd, 1, 4, false);
	CU_ASSERT(TAILQ_EMPTY(&ns->zombies));
	CU_ASSERT(TAILQ_EMPTY(&pd.kv->orphans->zombies));
	CU_ASSERT_EQUAL(ns->used, BULK_VLEN);
	CU_ASSERT_EQUAL(charged(), BULK_VLEN);
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), BULK_VLEN);
	CU_ASSERT_EQUAL(pd.nholds, 1);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), 0);
	index_free();
}

/*
 * A drop of many keys frees the name at once: a namespace made again with
 * it is empty and takes puts while the old entries are freed; a value
 * still read outlives the drop among the orphans until its reader goes.
 */
static void test_drop_sliced(void)
{
	struct kv_result pin;
	size_t entries;
	struct kv_ns *ns;
	uint64_t used;

	ns = bulk_ns("kv", BULK / 4);
	CU_ASSERT_EQUAL_FATAL(op(ns, 2, KV_LOOKUP, "k3", 0, &pin), 0);
	kv_ns_drop(&pd, ns);
	CU_ASSERT_PTR_NULL(kv_ns_find(&pd, "kv"));
	CU_ASSERT_EQUAL(ghosts(&used, &entries), 1);
	CU_ASSERT_EQUAL(entries, BULK / 4);
	ns = ns_new("kv", 32 * MiB);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), -ENOENT);
	put_any(ns, 1, "k1", BULK_VLEN);
	/* (a release names the namespace made again: not the one its pin is in) */
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k3", pin.val.version, NULL), -ENOENT);
	reconcile_ask(&pd, 1); /* (a ledger pass takes none back into the new one) */
	reconcile_run(&pd, 0);
	while (kv_reap(&pd, SLICE, 0)) {
		(void)ghosts(&used, &entries);
		CU_ASSERT_EQUAL(charged(), used + ns->used);
		CU_ASSERT_EQUAL(ns->nentries, 1);
	}
	CU_ASSERT_FALSE(TAILQ_EMPTY(&pd.kv->orphans->zombies));
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), 2 * BULK_VLEN);
	kv_session_end(&pd, 1, 2, false);
	CU_ASSERT(TAILQ_EMPTY(&pd.kv->orphans->zombies));
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), BULK_VLEN);
	CU_ASSERT_EQUAL(charged(), BULK_VLEN);
	CU_ASSERT_EQUAL(pd.nholds, 1);
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k1", 0, NULL), 0);
	index_free();
}

/*
 * poold stopping in the middle: a namespace flushed and one dropped, each
 * a slice into its freeing, with a value still read and a reservation;
 * closing the index frees the rest (run under --enable-asan, LeakSanitizer
 * checks nothing is left).
 */
static void test_close_mid_flush(void)
{
	struct kv_result res;
	size_t i, entries;
	struct kv_ns *ns;
	uint64_t used;
	char key[16];

	ns = bulk_ns("a", BULK / 4);
	CU_ASSERT_EQUAL_FATAL(op(ns, 2, KV_LOOKUP, "k100", 0, &res), 0);
	CU_ASSERT_EQUAL_FATAL(op(ns, 3, KV_RESERVE, "k200", 100, &res), 0);
	kv_ns_flush(&pd, ns);
	ns = ns_new("b", 32 * MiB);
	for (i = 0; i < 2 * KV_REAP_NOW; i++) {
		snprintf(key, sizeof(key), "b%zu", i);
		put_any(ns, 1, key, BULK_VLEN);
	}
	kv_ns_drop(&pd, ns);
	CU_ASSERT_EQUAL(ghosts(&used, &entries), 2);
	CU_ASSERT_TRUE(kv_reap(&pd, SLICE, 0));
	index_free();
}

/*
 * A lender lost in the middle of a flush: the values it held go at once,
 * flushed ones too, under its old life (freed after it restarted, they
 * would be scrubbed in its new one).
 */
static void test_lost_mid_flush(void)
{
	struct kv_ns *ns;
	size_t i, entries;
	uint64_t used;
	char key[16];

	index_new();
	ns = ns_new("kv", 32 * MiB);
	for (i = 0; i < 4 * KV_REAP_NOW; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		put(ns, 1, key, BULK_VLEN);
	}
	kv_ns_flush(&pd, ns);
	CU_ASSERT_TRUE(kv_reap(&pd, KV_REAP_NOW, 0));
	CU_ASSERT_EQUAL(ghosts(&used, &entries), 1);
	CU_ASSERT_EQUAL(entries, 3 * KV_REAP_NOW);
	kv_node_lost(&pd, LENDER);
	(void)ghosts(&used, &entries);
	CU_ASSERT_EQUAL(entries, 0);
	CU_ASSERT_EQUAL(used, 0);
	CU_ASSERT_FALSE(kv_reap(&pd, KV_REAP_NOW, 0));
	index_free();
}

/* How many entries of ns are on its held list. */
static size_t held(struct kv_ns *ns)
{
	struct kv_entry *e;
	size_t n = 0;

	TAILQ_FOREACH(e, &ns->held, x->held)
		n++;
	return n;
}

/*
 * A session's end looks at the entries someone pins or reserves, not at
 * every key: those are on the namespace's held list, and only while they
 * are held; a reservation never committed expires by the sweep from there,
 * on time.
 */
static void test_held_list(void)
{
	struct kv_result k1, k2, k3, fresh;
	struct kv_entry *e;
	struct kv_ns *ns;

	ns = bulk_ns("kv", BULK / 4);
	CU_ASSERT_EQUAL(held(ns), 0); /* puts done: nobody holds anything */
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k1", 0, &k1), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_RESERVE, "k2", 100, &k2), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k3", 0, &k3), 0);
	CU_ASSERT_EQUAL(op(ns, 4, KV_RESERVE, "new", 100, &fresh), 0);
	CU_ASSERT_EQUAL(held(ns), 4);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k3", k3.val.version, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_COMMIT, "k2", k2.val.version, NULL), 0);
	CU_ASSERT_EQUAL(held(ns), 2);	  /* k3 released, k2 committed: nobody holds them */
	kv_session_end(&pd, 1, 9, false); /* nobody's: nothing changes */
	CU_ASSERT_EQUAL(held(ns), 2);
	kv_session_end(&pd, 1, 2, false); /* k1's reader */
	CU_ASSERT_EQUAL(held(ns), 1);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k1", k1.val.version, NULL), -ENOENT);
	CU_ASSERT_EQUAL(ns->nentries, BULK / 4 + 1);
	/* The sweep finds the reservation on the list when its time is up, and only then. */
	e = *kv_slot(ns, (const uint8_t *)"new", 3, kv_hash((const uint8_t *)"new", 3));
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	kv_sweep(&pd);
	CU_ASSERT_EQUAL(ns->npending, 1);
	e->x->pending->reserved_at -= KV_RESERVE_TTL_MS; /* as if made long ago */
	kv_sweep(&pd);
	CU_ASSERT_EQUAL(ns->npending, 0);
	CU_ASSERT_EQUAL(held(ns), 0);
	CU_ASSERT_EQUAL(ns->nentries, BULK / 4);
	CU_ASSERT_EQUAL(op(ns, 4, KV_COMMIT, "new", fresh.val.version, NULL),
			0); /* changes nothing */
	CU_ASSERT_EQUAL(op(ns, 4, KV_EXISTS, "new", 0, NULL), -ENOENT);
	index_free();
}

/* Count the entries of ns with extras (struct kv_extra). */
static size_t with_extras(struct kv_ns *ns)
{
	struct kv_entry *e;
	size_t b, n = 0;

	for (b = 0; b < ns->nbuckets; b++)
		for (e = ns->buckets[b]; e != NULL; e = e->hnext)
			n += e->x != NULL;
	return n;
}

/*
 * An entry has extras only while it is read, reserved or volatile: a
 * namespace of keys nobody holds has none, and each goes when its reason
 * goes.
 */
static void test_extras(void)
{
	struct kv_result k1, k2;
	struct kv_entry *e;
	struct kv_ns *ns;

	ns = bulk_ns("kv", BULK / 4);
	CU_ASSERT_EQUAL(with_extras(ns), 0);
	CU_ASSERT_EQUAL(op(ns, 2, KV_LOOKUP, "k1", 0, &k1), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_RESERVE, "k2", 100, &k2), 0);
	CU_ASSERT_EQUAL(with_extras(ns), 2);
	CU_ASSERT_EQUAL(op(ns, 2, KV_RELEASE, "k1", k1.val.version, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_COMMIT, "k2", k2.val.version, NULL), 0);
	CU_ASSERT_EQUAL(with_extras(ns), 0);
	e = *kv_slot(ns, (const uint8_t *)"k3", 2, kv_hash((const uint8_t *)"k3", 2));
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(kv_set_expire(ns, e, kv_unix_ms() + 60000), 0);
	CU_ASSERT_EQUAL(ns->nvolatile, 1);
	CU_ASSERT_EQUAL(with_extras(ns), 1);
	/* A new version keeps its expiry, through the reservation's extras. */
	CU_ASSERT_EQUAL(op(ns, 3, KV_RESERVE, "k3", 100, &k2), 0);
	CU_ASSERT_EQUAL(op(ns, 3, KV_COMMIT, "k3", k2.val.version, NULL), 0);
	CU_ASSERT_EQUAL(ns->nvolatile, 1);
	CU_ASSERT(kv_expire_at(e) > kv_unix_ms());
	CU_ASSERT_EQUAL(kv_set_expire(ns, e, 0), 0);
	CU_ASSERT_EQUAL(ns->nvolatile, 0);
	CU_ASSERT_EQUAL(with_extras(ns), 0);
	index_free();
}

/*
 * When this node's lender (64 MiB) is full, a namespace under its capacity takes
 * room from the one holding most beyond its fair share (max-min over the
 * capacities: 16, 1024 and 1024 MiB over 64 MiB give 16, 24 and 24), or
 * from its own values when none is over: a greedy namespace whose capacity
 * is far beyond the memory never keeps another from its share.
 */
static void test_fair_shares(void)
{
	struct kv_ns *hog, *small, *late;
	char key[16];
	int i;

	/* (a lender on this node: an evicted value's extent is scrubbed and back at once) */
	cores_open(&pd, 0);
	cores_lender_add(&pd, 1);
	hog = ns_new("hog", 1024 * MiB);
	small = ns_new("small", 16 * MiB);
	late = ns_new("late", 1024 * MiB);
	for (i = 0; i < 70; i++) { /* its own cold values go past the memory */
		snprintf(key, sizeof(key), "h%d", i);
		put_any(hog, 1, key, MiB);
	}
	CU_ASSERT_EQUAL(hog->evictions, 6);
	CU_ASSERT_EQUAL(hog->used, 64 * MiB);
	for (i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "s%d", i);
		put_any(small, 1, key, MiB);
	}
	CU_ASSERT_EQUAL(small->used, 16 * MiB);
	CU_ASSERT_EQUAL(hog->evictions, 22);
	for (i = 0; i < 24; i++) {
		snprintf(key, sizeof(key), "l%d", i);
		put_any(late, 1, key, MiB);
	}
	CU_ASSERT_EQUAL(late->used, 24 * MiB);
	CU_ASSERT_EQUAL(hog->used, 24 * MiB);
	/* All at their shares: each gives its own. */
	put_any(hog, 1, "h-more", MiB);
	put_any(late, 1, "l-more", MiB);
	CU_ASSERT_EQUAL(hog->used, 24 * MiB);
	CU_ASSERT_EQUAL(late->used, 24 * MiB);
	CU_ASSERT_EQUAL(small->evictions, 0);
	CU_ASSERT_EQUAL(small->used, 16 * MiB);
	CU_ASSERT_EQUAL(op(small, 2, KV_EXISTS, "s0", 0, NULL), 0);
	CU_ASSERT_EQUAL(op(late, 2, KV_EXISTS, "l1", 0, NULL), 0);
	CU_ASSERT_EQUAL(op(late, 2, KV_EXISTS, "l0", 0, NULL), -ENOENT);
	index_free();
}

/*
 * A large value put into a full namespace of small ones: its reservation
 * evicts KV_EVICT_NOW values itself and takes its room over the capacity;
 * another that would take it further over fails meanwhile; the loop evicts
 * the rest, least recently used first, until the namespace is within its
 * capacity again, the new value kept.
 */
static void test_evict_sliced(void)
{
	size_t i, n = MiB / BULK_VLEN;
	struct kv_result res;
	struct kv_ns *ns;
	char key[16];

	cores_open(&pd, 0);
	cores_lender_add(&pd, 1);
	ns = ns_new("kv", MiB);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		put_any(ns, 1, key, BULK_VLEN);
	}
	CU_ASSERT_EQUAL(ns->used, MiB);
	CU_ASSERT_EQUAL(ns->evictions, 0);
	put_any(ns, 1, "big", MiB / 2);
	CU_ASSERT_EQUAL(ns->evictions, KV_EVICT_NOW);
	CU_ASSERT(ns->used > ns->capacity);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k0", 0, NULL), -ENOENT);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "k600", 0, NULL), 0);
	CU_ASSERT_EQUAL(op(ns, 1, KV_RESERVE, "big2", MiB / 2, &res), -ENOSPC);
	CU_ASSERT(ns->used <= ns->capacity + MiB / 2); /* over by one value at most */
	while (kv_evict(&pd, 0))
		;
	CU_ASSERT(ns->used <= ns->capacity);
	CU_ASSERT_EQUAL(ns->evictions, n / 2);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "big", 0, NULL), 0);
	snprintf(key, sizeof(key), "k%zu", n / 2 - 1);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, key, 0, NULL), -ENOENT);
	snprintf(key, sizeof(key), "k%zu", n / 2);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, key, 0, NULL), 0);
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), ns->used);
	put_any(ns, 1, "big2", MiB / 2); /* once it is done, over again */
	while (kv_evict(&pd, 0))
		;
	CU_ASSERT(ns->used <= ns->capacity);
	CU_ASSERT_EQUAL(op(ns, 2, KV_EXISTS, "big2", 0, NULL), 0);
	index_free();
}

/*
 * Lost copies are made again by the sweep, which looks at a bounded
 * number of buckets each time, where it left off, not at every key of a
 * replicated namespace.
 */
static void test_sweep_bounded(void)
{
	struct kv_ns *ns;
	char key[16];
	size_t i;

	cores_open(&pd, 0);
	cores_lender_add(&pd, 1);
	cores_lender_add(&pd, 2);
	ns = ns_new_copies("kv", 32 * MiB, 2);
	for (i = 0; i < BULK / 4; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		put_any(ns, 1, key, BULK_VLEN);
	}
	CU_ASSERT_FATAL(ns->nbuckets > 4 * KV_SWEEP_BUCKETS);
	kv_sweep(&pd);
	CU_ASSERT_EQUAL(ns->sweep_bucket, KV_SWEEP_BUCKETS);
	kv_sweep(&pd);
	CU_ASSERT_EQUAL(ns->sweep_bucket, 2 * KV_SWEEP_BUCKETS);
	index_free();
}

/*
 * A ledger pass of a lender of many values runs a slice at a time while
 * values come and go: those removed meanwhile are neither taken back nor
 * scrubbed, those put meanwhile are not told again; what one side alone
 * held before the pass is repaired (an extent only the lender records, of
 * no value; a value's record the lender lost, at the latest by a pass
 * while nothing changes). Then the lender's record and the map agree.
 */
static void test_ledger_sliced(void)
{
	struct kv_ns *ns = bulk_ns("kv", BULK);
	struct holding stray = {
	    .e = {.arena = 0, .off = CORES_ARENA - 2 * MiB, .len = 4096, .region = KV_HOLD_ID(ns)}};
	struct kv_result lost;
	struct holding held;
	size_t slices = 0, removed = 0, added = 0, i;
	char key[32];

	/* Before the pass: k0's record lost by the lender, a stray extent only in its record. */
	CU_ASSERT_EQUAL_FATAL(op(ns, 6, KV_LOOKUP, "k0", 0, &lost), 0);
	CU_ASSERT_EQUAL(op(ns, 6, KV_RELEASE, "k0", lost.val.version, NULL), 0);
	hold_scrub(&pd, lost.val.arena, lost.val.off, lost.val.alen);
	CU_ASSERT_EQUAL_FATAL(hold_add(&pd, &stray, 1), 0);
	CU_ASSERT_EQUAL(pd.nholds, BULK);

	reconcile_ask(&pd, 1);
	while (reconcile_run(&pd, 1)) { /* (a step at a time) */
		snprintf(key, sizeof(key), "k%zu", 1 + slices * 7 % (BULK - 1));
		if (op(ns, 1, KV_REMOVE, key, 0, NULL) == 0)
			removed++;
		snprintf(key, sizeof(key), "new%zu", slices);
		put_any(ns, 1, key, BULK_VLEN);
		added++;
		slices++;
	}
	CU_ASSERT(slices > 100);
	CU_ASSERT(removed > 100);
	CU_ASSERT_EQUAL(ns->nentries, BULK - removed + added);
	CU_ASSERT_EQUAL(ns->used, ns->nentries * BULK_VLEN);
	CU_ASSERT_EQUAL(charged(), ns->used);
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), ns->used); /* (nothing kept unclaimed) */
	CU_ASSERT(!hold_at(&pd, 0, stray.e.off, &held));	 /* the stray scrubbed */
	CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, "k0", 0, NULL), 0);
	for (i = 0; i < added; i++) {
		snprintf(key, sizeof(key), "new%zu", i);
		CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, key, 0, NULL), 0);
	}

	/* k0's record is told again, by then or (its granule changed meanwhile) by a quiet pass. */
	reconcile_ask(&pd, 1);
	reconcile_run(&pd, 0);
	CU_ASSERT_EQUAL(pd.nholds, ns->nentries);
	CU_ASSERT(hold_at(&pd, lost.val.arena, lost.val.off, &held));
	CU_ASSERT_EQUAL(region_arena_used(&pd, 1, 0), ns->used);
	index_free();
}

/*
 * The index grows a bucket at a time as keys come, never rehashing all of
 * them in one put (a table of 16 million took 3 s to double), and every
 * key is found again, whatever round of splits its bucket is in.
 */
static void test_index_grows_by_buckets(void)
{
	struct kv_ns *ns;
	char key[32];
	size_t i, was;

	cores_open(&pd, 0);
	cores_lender_add(&pd, 1);
	ns = ns_new("kv", 32 * MiB);
	for (i = 0; i < 5 * KV_BUCKETS0; i++) {
		was = ns->nbuckets;
		snprintf(key, sizeof(key), "k%zu", i);
		put_any(ns, 1, key, BULK_VLEN);
		CU_ASSERT(ns->nbuckets - was <= 1);
		CU_ASSERT(ns->nbuckets >= ns->nentries);
		CU_ASSERT(ns->low <= ns->nbuckets && ns->nbuckets <= 2 * ns->low);
	}
	CU_ASSERT(ns->nbuckets > 4 * KV_BUCKETS0 && ns->low == 4 * KV_BUCKETS0);
	for (i = 0; i < 5 * KV_BUCKETS0; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, key, 0, NULL), 0);
	}
	for (i = 0; i < 5 * KV_BUCKETS0; i += 2) {
		snprintf(key, sizeof(key), "k%zu", i);
		CU_ASSERT_EQUAL(op(ns, 1, KV_REMOVE, key, 0, NULL), 0);
	}
	for (i = 0; i < 5 * KV_BUCKETS0; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		CU_ASSERT_EQUAL(op(ns, 6, KV_EXISTS, key, 0, NULL), i % 2 ? 0 : -ENOENT);
	}
	CU_ASSERT_EQUAL(pd.nholds, ns->nentries);
	CU_ASSERT(pd.hold_tab_low <= pd.hold_tab_size && pd.hold_tab_size <= 2 * pd.hold_tab_low);
	index_free();
}

#define DENSE 65536 /* keys of the index's size test */

/*
 * The coordinator's index takes at most 128 bytes a key of 16 bytes: its
 * entry and key in one allocation, and a bucket. The bucket array is
 * counted as the buckets in use (8 bytes each): its room past them is
 * never touched, so it takes no memory (what RssAnon shows).
 */
static void test_index_compact(void)
{
	size_t before, after, room_before, room_after, i;
	struct kv_ns *ns;
	char key[17];

	index_new();
	ns = ns_new("kv", 32 * MiB);
	before = unit_heap_used();
	room_before = 2 * ns->low * sizeof(*ns->buckets);
	for (i = 0; i < DENSE; i++) {
		snprintf(key, sizeof(key), "key-%012zu", i);
		put(ns, 1, key, 32);
	}
	after = unit_heap_used();
	room_after = 2 * ns->low * sizeof(*ns->buckets);
	CU_ASSERT_EQUAL_FATAL(ns->nentries, DENSE);
	if (before > 0 && after > before) {
		size_t per_key = (after - room_after - (before - room_before) +
				  ns->nbuckets * sizeof(*ns->buckets)) /
				 DENSE;

		printf("\n    index: %zu bytes a key\n", per_key);
		CU_ASSERT(per_key <= 128);
	}
	index_free();
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"put, lookup, release", test_put_lookup_release},
	    {"eviction order", test_eviction_order},
	    {"soft and hard pins", test_retention},
	    {"lazy expiry on read; a reader's reserve refused before it evicts",
	     test_expiry_on_read_and_write_gate},
	    {"the last reserver wins", test_last_reserver_wins},
	    {"a pin outlives a replace", test_pin_outlives_replace},
	    {"abort and remove", test_abort_and_remove},
	    {"replicas", test_replicas},
	    {"dedup references", test_dedup_references},
	    {"dedup recount after a restart", test_dedup_recount},
	    {"records bring values back", test_records},
	    {"durable commits", test_durable_commits},
	    {"namespace definitions bring namespaces back", test_definitions},
	    {"namespace definitions in chunks", test_definitions_in_chunks},
	    {"a flush of many keys is freed a slice at a time", test_flush_sliced},
	    {"a drop of many keys frees the name at once", test_drop_sliced},
	    {"stopping in the middle of a flush frees everything", test_close_mid_flush},
	    {"a session's end looks at the entries held", test_held_list},
	    {"extras only while an entry needs them", test_extras},
	    {"the sweep looks at a bounded part of the keys", test_sweep_bounded},
	    {"a lender lost in the middle of a flush", test_lost_mid_flush},
	    {"a large value's evictions are done by the loop", test_evict_sliced},
	    {"a full lender is shared fairly between namespaces", test_fair_shares},
	    {"a ledger pass in slices while values come and go", test_ledger_sliced},
	    {"the index grows a bucket at a time", test_index_grows_by_buckets},
	    {"the index takes 128 bytes a key at most", test_index_compact},
	    {NULL, NULL},
	};

	return unit_run("kv", tests);
}

/*
 * daemon/kv/kv-reap.c - the freeing of flushed and dropped KV namespaces, a
 * slice at a time.
 *
 * Freeing a value costs microseconds (its extent goes back to an AVL-tree
 * allocator, its lender scrubs it), so a flush or a drop of millions of
 * keys done in one callback froze poold for seconds. Instead, the
 * namespace's whole index (its hash table, recency lists and reservations)
 * moves at once into a namespace of its own off the list, a ghost, and
 * the namespace starts again empty: a get after the flush finds nothing,
 * and a put lands in the emptied namespace, untouched by what follows. A
 * dropped namespace becomes the ghost itself, its name free at once. Then
 * an event of the loop frees the ghosts' entries, for about a millisecond
 * each time and re-armed until none is left, least recently used first:
 * they were mostly put in that order, so their extents go back in the
 * order they were cut, each merging with the run freed just before it.
 *
 * Until it is freed an entry keeps what its readers and writers hold: a
 * release, commit or abort that finds nothing in the namespace frees that
 * key's entry in its ghosts now (kv_reap_settle()), and answers as a
 * flush done at once would have; a session that ends finds its pins and
 * reservations in the ghost's held list as in any namespace's. A ghost's
 * counters are its own: the namespace's used bytes fall at once, its
 * owners' quota as values are freed; values still read when their entries
 * are freed outlive the ghost in the namespace, or the orphans when it was
 * dropped.
 *
 * Where a lender is another node, each freed extent is a scrub it answers:
 * while REGION_SCRUBS_MAX of them are in flight the slices wait. What the
 * entries took of the heap goes back to the system as they go
 * (kv_entry_drop(), heap.c), not in one trim at the end.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"

#define KV_REAP_SLICE 8192    /* entries freed in one slice at most */
#define KV_REAP_SLICE_US 1000 /* ... and for about this long */
#define KV_REAP_CHECK 32      /* entries between looks at the clock */
#define KV_REAP_BUCKETS 1024  /* empty buckets looked at, as much as freeing an entry */
#define KV_REAP_WAIT_MS 1     /* between slices while scrubs are in flight */

/* Free the next slice from the loop: now, or when lenders answered some scrubs. */
static void kv_reap_arm(struct poold *pd)
{
	struct timeval tv = {0, region_scrubs_full(pd) ? KV_REAP_WAIT_MS * 1000 : 0};

	if (pd->kv->reap_ev != NULL && !evtimer_pending(pd->kv->reap_ev, NULL))
		evtimer_add(pd->kv->reap_ev, &tv);
}

static void kv_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;
	bool more;

	(void)fd, (void)what;
	more = region_scrubs_full(pd) || kv_reap(pd, KV_REAP_SLICE, KV_REAP_SLICE_US);
	region_account(pd);
	if (more)
		kv_reap_arm(pd);
}

/* The slices' event; 0 or -ENOMEM. */
int kv_reap_open(struct poold *pd)
{
	pd->kv->reap_ev = evtimer_new(pd->base, kv_reap_cb, pd);
	return pd->kv->reap_ev != NULL ? 0 : -ENOMEM;
}

/* A ghost joins the list, to be freed from the loop. */
static void kv_reap_add(struct poold *pd, struct kv_ns *g)
{
	g->flushing = true; /* what it frees tells no router: the flush or drop did */
	g->reap_bucket = 0;
	g->reap_count = g->nentries;
	g->reap_since = units_now_ms();
	TAILQ_INSERT_TAIL(&pd->kv->reaping, g, entry);
	kv_reap_arm(pd);
}

/*
 * Take every entry of ns out of it, into a ghost freed from the loop: ns is
 * empty at once. 0, or -ENOMEM (then nothing changed).
 */
int kv_reap_flush(struct poold *pd, struct kv_ns *ns)
{
	struct kv_entry **buckets = calloc(2 * KV_BUCKETS0, sizeof(*buckets));
	struct kv_ns *g = calloc(1, sizeof(*g));

	if (g == NULL || buckets == NULL) {
		free(g);
		free(buckets);
		return -ENOMEM;
	}
	snprintf(g->name, sizeof(g->name), "%s", ns->name);
	g->id = ns->id;
	g->flags = ns->flags;
	g->buckets = ns->buckets;
	g->nbuckets = ns->nbuckets;
	g->low = ns->low;
	g->nentries = ns->nentries;
	g->npending = ns->npending;
	g->nvolatile = ns->nvolatile;
	g->leaving = ns->leaving;
	/* Copies in flight come back to ns, by its id, whatever becomes of their keys. */
	g->used = ns->used - ns->landing;
	g->pmem_used = ns->pmem_used - ns->planding;
	g->nsoft = ns->nsoft;
	g->nhard = ns->nhard;
	kv_ns_lists_init(g);
	TAILQ_CONCAT(&g->lru, &ns->lru, lru);
	TAILQ_CONCAT(&g->plru, &ns->plru, lru);
	TAILQ_CONCAT(&g->soft, &ns->soft, lru);
	TAILQ_CONCAT(&g->hard, &ns->hard, lru);
	TAILQ_CONCAT(&g->rvol, &ns->rvol, x->rvol);
	TAILQ_CONCAT(&g->zombies, &ns->zombies, entry);
	TAILQ_CONCAT(&g->vol, &ns->vol, x->vol);
	TAILQ_CONCAT(&g->held, &ns->held, x->held);
	kv_ages_clear(ns); /* (its values are the ghost's) */
	ns->buckets = buckets;
	ns->nbuckets = ns->low = KV_BUCKETS0;
	ns->nentries = ns->npending = ns->nvolatile = ns->leaving = 0;
	ns->nsoft = ns->nhard = 0;
	ns->copies = 0;
	if (ns->shard_entries != NULL) /* (the ghost's go uncounted) */
		memset(ns->shard_entries, 0, KV_SHARDS * sizeof(*ns->shard_entries));
	ns->used = ns->landing;
	ns->pmem_used = ns->planding;
	kv_reap_add(pd, g);
	return 0;
}

/* Take a namespace out of the list, its name free at once: it is freed from the loop. */
void kv_reap_drop(struct poold *pd, struct kv_ns *ns)
{
	kv_ns_serve(pd, ns, 0);
	TAILQ_REMOVE(&pd->kv->list, ns, entry);
	kv_reap_add(pd, ns);
}

/*
 * One step of freeing g: an entry, least recently used first, then those
 * with no value (reservations), bucket by bucket, as a flush at once would
 * have (values still read live on as zombies). false when none is left.
 */
static bool kv_reap_step(struct poold *pd, struct kv_ns *g)
{
	struct kv_lru *lists[] = {&g->lru, &g->soft, &g->plru, &g->hard};
	struct kv_entry *e = NULL;
	size_t end, k;

	for (k = 0; k < ARRAY_SIZE(lists) && e == NULL; k++)
		e = TAILQ_FIRST(lists[k]);
	if (e != NULL) {
		kv_entry_clear(pd, g, e);
		return true;
	}
	if (g->nentries == 0)
		return false;
	end = MIN(g->nbuckets, g->reap_bucket + KV_REAP_BUCKETS);
	for (; g->reap_bucket < end; g->reap_bucket++)
		if ((e = g->buckets[g->reap_bucket]) != NULL) {
			kv_entry_clear(pd, g, e);
			break;
		}
	return true;
}

/*
 * A ghost with no entry left goes. Values still read live on, as zombies,
 * in the namespace it was flushed from, or in the orphans if it was dropped,
 * until their readers let go.
 */
static void kv_reap_end(struct poold *pd, struct kv_ns *g)
{
	struct kv_ns *to = kv_ns_by_id(pd, g->id);
	struct kv_zombie *z;

	log_info("KV namespace '%s': %zu entries %s freed in %llu ms", g->name, g->reap_count,
		 to != NULL ? "flushed" : "dropped",
		 (unsigned long long)(units_now_ms() - g->reap_since));
	kv_zombies_sweep(pd, g);
	if (to == NULL)
		to = pd->kv->orphans;
	while ((z = TAILQ_FIRST(&g->zombies)) != NULL) {
		TAILQ_REMOVE(&g->zombies, z, entry);
		kv_zombie_move(to, z);
	}
	TAILQ_REMOVE(&pd->kv->reaping, g, entry);
	free(g->buckets);
	free(g->shard_entries);
	free(g->copy_since);
	free(g);
}

/*
 * Free up to max entries of the flushed and dropped namespaces, for about
 * budget_us (0: no limit), and no more while lenders have
 * REGION_SCRUBS_MAX scrubs to answer. Whether any are left.
 */
bool kv_reap(struct poold *pd, size_t max, uint64_t budget_us)
{
	uint64_t start = budget_us != 0 ? units_now_us() : 0;
	struct kv_ns *g;
	size_t n = 0;

	while (n < max && (g = TAILQ_FIRST(&pd->kv->reaping)) != NULL) {
		if (!kv_reap_step(pd, g)) {
			kv_reap_end(pd, g);
			continue;
		}
		if (region_scrubs_full(pd))
			break;
		if (++n % KV_REAP_CHECK == 0 && budget_us != 0 &&
		    units_now_us() - start >= budget_us)
			break;
	}
	return !TAILQ_EMPTY(&pd->kv->reaping);
}

/*
 * A release, commit or abort of version of key in ns found nothing in ns:
 * if the key's entry waits in a ghost of ns, it is freed now, and the
 * version is looked for among the ghost's zombies, as a flush done at once
 * would have left it. Whether the caller's pin or reservation was there
 * (then it is gone).
 */
bool kv_reap_settle(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
		    const uint8_t *key, size_t klen, uint64_t h, uint64_t version)
{
	struct kv_entry *e;
	struct kv_zombie *z;
	struct kv_ns *g;

	TAILQ_FOREACH(g, &pd->kv->reaping, entry) {
		if (g->id != ns->id)
			continue;
		if ((e = *kv_slot(g, key, klen, h)) != NULL)
			kv_entry_clear(pd, g, e);
		TAILQ_FOREACH(z, &g->zombies, entry)
			if (z->val.version == version &&
			    kv_unpin(&z->pins, who->node, who->session, version)) {
				kv_zombies_sweep(pd, g);
				return true;
			}
	}
	return false;
}

/* Scrub the places of v in this node's own arenas, lent again or not. */
static void kv_reap_scrub_here(struct poold *pd, const struct kv_val *v)
{
	struct kv_place all[KV_MAX_REPLICAS];
	size_t n = kv_places(v, all), i;

	for (i = 0; i < n; i++)
		if (all[i].node == pd->node_id)
			hold_scrub(pd, all[i].arena, all[i].off, all[i].alen);
}

/*
 * A persistent namespace's values in this node's pmem tier are journaled:
 * left there by a poold that stops before they are freed (it scrubs
 * nothing then, so that lenders keep the cache), they would come back
 * when it starts again, flushed or not. They are scrubbed, their ends
 * journaled; other nodes' are not reached (see pool-failures(7)).
 */
static void kv_reap_unjournal(struct poold *pd, struct kv_ns *g)
{
	struct kv_zombie *z;
	struct kv_entry *e;
	size_t i;

	for (i = g->reap_bucket; i < g->nbuckets; i++)
		for (e = g->buckets[i]; e != NULL; e = e->hnext) {
			if (e->has_val)
				kv_reap_scrub_here(pd, &e->val);
			if (kv_pending(e) != NULL)
				kv_reap_scrub_here(pd, &kv_pending(e)->val);
		}
	TAILQ_FOREACH(z, &g->zombies, entry)
		kv_reap_scrub_here(pd, &z->val);
	lend_flush();
}

/* At exit (or when this poold stops coordinating): free what is left now. */
void kv_reap_close(struct poold *pd)
{
	struct kv_ns *g;

	if (pd->kv->reap_ev != NULL)
		event_free(pd->kv->reap_ev);
	pd->kv->reap_ev = NULL;
	TAILQ_FOREACH(g, &pd->kv->reaping, entry)
		if (g->flags & HOLD_NS_PERSISTENT)
			kv_reap_unjournal(pd, g);
	while ((g = TAILQ_FIRST(&pd->kv->reaping)) != NULL)
		if (!kv_reap_step(pd, g))
			kv_reap_end(pd, g);
}

/* daemon/lend/extent.c - the extent allocator of one arena of lendable memory. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/lend/extent.h"
#include "daemon/lend/lend.h"

/*
 * Data structure. Every range the arena tracks is a struct ext that sits in
 * intrusive AVL trees:
 *
 *   big.by_off, big.by_len      free runs of the big pool, unit-aligned
 *   small.by_off, small.by_len  free runs inside small units, grain-aligned
 *   fine.by_off, fine.by_len    free runs inside fine units, EXTENT_FINE_GRAIN-aligned
 *   units                       small and fine units by offset (ext.used: bytes lent)
 *   used                        allocated extents by offset, but those of fine units
 *
 * A fine unit keeps its extents in two bitmaps of its grains instead (ext.map:
 * which grains start an extent, which are allocated): a KV value of a few
 * dozen bytes would otherwise cost a node of 80 bytes (a malloc chunk of 96),
 * more than the value, and a million of them 96 MB of a coordinator's memory.
 * The maps of a 2 MiB unit take 8 KiB, a quarter of a byte for each of its up
 * to 32,768 extents, and say exactly where each extent starts and ends, so a
 * release of anything but an extent still fails.
 *
 * Fine units hold only the extents of extent_alloc_fine() (KV values of up
 * to EXTENT_FINE_MAX bytes), packed at a 64-byte grain: a page-grain extent
 * per small value would spread a million 16-byte values over 4 GiB, each at
 * a page boundary, where the CPU caches and TLB hold few of them. Small
 * units keep the page grain: what is mapped (regions) stays page-aligned
 * and never shares a page with another tenant's values.
 *
 * A by_off tree finds the neighbours to coalesce with and the run containing
 * a range; a by_len tree, ordered by (len, off), gives best fit (lowest offset
 * among equals) in O(log n). Free runs are coalesced on every release, so the
 * free space of a pool never holds two adjacent runs (runs in different small
 * units excepted: a small unit is lent to the big pool only as a whole).
 *
 * Why AVL: glibc has no <sys/tree.h>, and a recursive AVL with unique keys is
 * the shortest balanced tree to get right; its depth stays under 1.44 log2 n,
 * so the recursion is shallow. A bitmap would make large arenas with 4 KiB
 * grains slow to search, and a skip list is no shorter.
 *
 * Nodes come from a small spare list that each mutating call tops up before it
 * changes anything, so -ENOMEM never leaves the arena half-updated.
 * extent_release() reuses the node of the extent it frees, except for an
 * extent of a fine unit, which has none: its free run may need a new node,
 * and without one the release fails with nothing changed (the extent stays
 * allocated, which leaks its bytes rather than lending them twice).
 */

#define SPARE_NEED 5 /* the most nodes one call can take */
#define SPARE_MAX 16

struct avl {
	struct avl *l, *r;
	int h;
};

struct ext {
	struct avl by_off;
	struct avl by_len;
	uint64_t off;
	union {
		uint64_t len;  /* free runs, allocated extents */
		uint64_t used; /* small and fine units: bytes lent out of the unit */
	};
	struct ext *unit; /* small runs and small extents: their unit, saving a lookup */
	uint64_t
	    *map; /* fine units: fine_map_words() of starts, then as many of allocated grains */
	int fine; /* units: a fine one */
};

struct pool {
	struct avl *by_off;
	struct avl *by_len;
	uint64_t nruns;
};

struct extent_arena {
	uint64_t size;
	uint64_t unit;
	uint64_t grain;
	struct pool big;
	struct pool small;
	struct pool fine;
	struct avl *units;
	uint64_t nunits;
	struct avl *used;
	uint64_t used_bytes;
	uint64_t nextents;
	struct ext *spare; /* linked through by_off.l */
	unsigned nspare;
	struct extent_changes *changes; /* extent_watch(): what changed since, or NULL */
};

struct extent_changes {
	struct extent_change *at;
	size_t n, cap, max;
	bool lost; /* more than max, or no memory to keep one */
};

typedef int (*avl_cmp_fn)(const struct avl *x, const struct avl *y);

#define EXT_OF(p, field) ((struct ext *)(void *)((char *)(p)-offsetof(struct ext, field)))
#define CEXT_OF(p, field)                                                                          \
	((const struct ext *)(const void *)((const char *)(p)-offsetof(struct ext, field)))

static int cmp_u64(uint64_t x, uint64_t y)
{
	return x < y ? -1 : x > y;
}

static int cmp_off(const struct avl *x, const struct avl *y)
{
	return cmp_u64(CEXT_OF(x, by_off)->off, CEXT_OF(y, by_off)->off);
}

static int cmp_len(const struct avl *x, const struct avl *y)
{
	const struct ext *ex = CEXT_OF(x, by_len), *ey = CEXT_OF(y, by_len);
	int c = cmp_u64(ex->len, ey->len);

	return c ? c : cmp_u64(ex->off, ey->off);
}

/* AVL tree with unique keys. */

static int avl_height(const struct avl *n)
{
	return n ? n->h : 0;
}

static void avl_fix(struct avl *n)
{
	int hl = avl_height(n->l), hr = avl_height(n->r);

	n->h = 1 + (hl > hr ? hl : hr);
}

static struct avl *avl_rot_right(struct avl *n)
{
	struct avl *l = n->l;

	n->l = l->r;
	l->r = n;
	avl_fix(n);
	avl_fix(l);
	return l;
}

static struct avl *avl_rot_left(struct avl *n)
{
	struct avl *r = n->r;

	n->r = r->l;
	r->l = n;
	avl_fix(n);
	avl_fix(r);
	return r;
}

static struct avl *avl_balance(struct avl *n)
{
	int b;

	avl_fix(n);
	b = avl_height(n->l) - avl_height(n->r);
	if (b > 1) {
		if (avl_height(n->l->l) < avl_height(n->l->r))
			n->l = avl_rot_left(n->l);
		return avl_rot_right(n);
	}
	if (b < -1) {
		if (avl_height(n->r->r) < avl_height(n->r->l))
			n->r = avl_rot_right(n->r);
		return avl_rot_left(n);
	}
	return n;
}

static struct avl *avl_insert(struct avl *root, struct avl *n, avl_cmp_fn cmp)
{
	if (root == NULL) {
		n->l = n->r = NULL;
		n->h = 1;
		return n;
	}
	if (cmp(n, root) < 0)
		root->l = avl_insert(root->l, n, cmp);
	else
		root->r = avl_insert(root->r, n, cmp);
	return avl_balance(root);
}

static struct avl *avl_pop_min(struct avl *root, struct avl **ret_min)
{
	if (root->l == NULL) {
		*ret_min = root;
		return root->r;
	}
	root->l = avl_pop_min(root->l, ret_min);
	return avl_balance(root);
}

/* n must be in the tree. */
static struct avl *avl_remove(struct avl *root, struct avl *n, avl_cmp_fn cmp)
{
	struct avl *m, *r;
	int c = cmp(n, root);

	if (c < 0) {
		root->l = avl_remove(root->l, n, cmp);
	} else if (c > 0) {
		root->r = avl_remove(root->r, n, cmp);
	} else {
		if (root->r == NULL)
			return root->l;
		r = avl_pop_min(root->r, &m);
		m->l = root->l;
		m->r = r;
		return avl_balance(m);
	}
	return avl_balance(root);
}

/* The last node <= key, or NULL. */
static struct avl *avl_le(struct avl *n, const struct avl *key, avl_cmp_fn cmp)
{
	struct avl *best = NULL;

	while (n != NULL) {
		if (cmp(n, key) <= 0) {
			best = n;
			n = n->r;
		} else {
			n = n->l;
		}
	}
	return best;
}

/* The first node >= key, or NULL. */
static struct avl *avl_ge(struct avl *n, const struct avl *key, avl_cmp_fn cmp)
{
	struct avl *best = NULL;

	while (n != NULL) {
		if (cmp(n, key) >= 0) {
			best = n;
			n = n->l;
		} else {
			n = n->r;
		}
	}
	return best;
}

static struct avl *avl_last(struct avl *n)
{
	if (n != NULL)
		while (n->r != NULL)
			n = n->r;
	return n;
}

static void avl_destroy(struct avl *n)
{
	if (n == NULL)
		return;
	avl_destroy(n->l);
	avl_destroy(n->r);
	free(EXT_OF(n, by_off));
}

/* By-offset lookups on a tree of struct ext. */

static struct ext *ext_le(struct avl *root, uint64_t off)
{
	struct ext key = {.off = off};
	struct avl *n = avl_le(root, &key.by_off, cmp_off);

	return n ? EXT_OF(n, by_off) : NULL;
}

static struct ext *ext_ge(struct avl *root, uint64_t off)
{
	struct ext key = {.off = off};
	struct avl *n = avl_ge(root, &key.by_off, cmp_off);

	return n ? EXT_OF(n, by_off) : NULL;
}

/* Spare nodes. */

static int spare_fill(struct extent_arena *a)
{
	struct ext *e;

	while (a->nspare < SPARE_NEED) {
		e = malloc(sizeof(*e));
		if (e == NULL)
			return -ENOMEM;
		e->by_off.l = a->spare ? &a->spare->by_off : NULL;
		a->spare = e;
		a->nspare++;
	}
	return 0;
}

static struct ext *spare_get(struct extent_arena *a)
{
	struct ext *e = a->spare;

	/* Callers topped the list up with spare_fill(): never empty here. */
	a->spare = e->by_off.l ? EXT_OF(e->by_off.l, by_off) : NULL;
	a->nspare--;
	return e;
}

static void spare_put(struct extent_arena *a, struct ext *e)
{
	if (a->nspare >= SPARE_MAX) {
		free(e);
		return;
	}
	e->by_off.l = a->spare ? &a->spare->by_off : NULL;
	a->spare = e;
	a->nspare++;
}

/* Free-run pools. */

static void pool_add(struct pool *p, struct ext *e)
{
	p->by_off = avl_insert(p->by_off, &e->by_off, cmp_off);
	p->by_len = avl_insert(p->by_len, &e->by_len, cmp_len);
	p->nruns++;
}

static void pool_del(struct pool *p, struct ext *e)
{
	p->by_off = avl_remove(p->by_off, &e->by_off, cmp_off);
	p->by_len = avl_remove(p->by_len, &e->by_len, cmp_len);
	p->nruns--;
}

/* The smallest run of at least len bytes, lowest offset first. */
static struct ext *pool_fit(const struct pool *p, uint64_t len)
{
	struct ext key = {.off = 0, .len = len};
	struct avl *n = avl_ge(p->by_len, &key.by_len, cmp_len);

	return n ? EXT_OF(n, by_len) : NULL;
}

/* The run that holds all of [off, off + len), or NULL. */
static struct ext *pool_holding(const struct pool *p, uint64_t off, uint64_t len)
{
	struct ext *r = ext_le(p->by_off, off);

	if (r == NULL || r->off + r->len < off + len)
		return NULL;
	return r;
}

/* Cut [off, off + len) out of run r, which holds it; takes at most one spare. */
static void pool_take(struct extent_arena *a, struct pool *p, struct ext *r, uint64_t off,
		      uint64_t len)
{
	uint64_t left = off - r->off, right = r->off + r->len - (off + len);
	struct ext *n;

	pool_del(p, r);
	if (left) {
		r->len = left;
		pool_add(p, r);
	}
	if (right) {
		n = left ? spare_get(a) : r;
		n->unit = r->unit;
		n->off = off + len;
		n->len = right;
		pool_add(p, n);
	}
	if (!left && !right)
		spare_put(a, r);
}

/*
 * Give the range e describes back to the pool, merged with neighbouring runs
 * that lie in [lo, hi); e becomes a run or goes back to the spares.
 */
static void pool_give(struct extent_arena *a, struct pool *p, struct ext *e, uint64_t lo,
		      uint64_t hi)
{
	uint64_t end = e->off + e->len;
	struct ext *n;

	n = ext_le(p->by_off, e->off);
	if (n != NULL && n->off >= lo && n->off + n->len == e->off) {
		pool_del(p, n);
		n->len += e->len;
		spare_put(a, e);
		e = n;
	}
	n = ext_ge(p->by_off, end);
	if (n != NULL && n->off == end && end < hi) {
		pool_del(p, n);
		e->len += n->len;
		spare_put(a, n);
	}
	pool_add(p, e);
}

/* Rounding and small units. */

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) & ~(to - 1);
}

/* The rounded length of a request of len (0 < len <= size), fine or not. */
static uint64_t ext_round(const struct extent_arena *a, uint64_t len, int fine)
{
	uint64_t r = round_up(len, a->grain);

	if (fine && len <= EXTENT_FINE_MAX)
		return round_up(len, EXTENT_FINE_GRAIN);
	return r < a->unit ? r : round_up(len, a->unit);
}

/* Whether a request of len goes to a fine unit. */
static int ext_is_fine(uint64_t len, int fine)
{
	return fine && len <= EXTENT_FINE_MAX;
}

static struct pool *unit_pool(struct extent_arena *a, const struct ext *u)
{
	return u->fine ? &a->fine : &a->small;
}

static struct ext *unit_find(const struct extent_arena *a, uint64_t off)
{
	struct ext *u = ext_le(a->units, off);

	return u != NULL && off - u->off < a->unit ? u : NULL;
}

/* Fine units' maps: a bit a grain, in 64-bit words. */
static size_t fine_map_words(const struct extent_arena *a)
{
	return (a->unit / EXTENT_FINE_GRAIN + 63) / 64;
}

/* A fine unit's map, all free; NULL without memory. */
static uint64_t *fine_map_new(const struct extent_arena *a)
{
	return calloc(2 * fine_map_words(a), sizeof(uint64_t));
}

static int map_bit(const uint64_t *m, size_t i)
{
	return (m[i / 64] >> (i % 64)) & 1;
}

static void map_put(uint64_t *m, size_t i, int on)
{
	if (on)
		m[i / 64] |= UINT64_C(1) << (i % 64);
	else
		m[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/* Mark [off, off + len) of fine unit u an extent (on) or free again (off). */
static void fine_mark(const struct extent_arena *a, struct ext *u, uint64_t off, uint64_t len,
		      int on)
{
	uint64_t *start = u->map, *busy = u->map + fine_map_words(a);
	size_t g = (off - u->off) / EXTENT_FINE_GRAIN, end = g + len / EXTENT_FINE_GRAIN;

	map_put(start, g, on);
	for (; g < end; g++)
		map_put(busy, g, on);
}

/* The length of the extent of fine unit u that starts at grain g; 0 if none does. */
static uint64_t fine_extent_len(const struct extent_arena *a, const struct ext *u, size_t g)
{
	const uint64_t *start = u->map, *busy = u->map + fine_map_words(a);
	size_t n = a->unit / EXTENT_FINE_GRAIN, end = g + 1;

	if (!map_bit(start, g))
		return 0;
	while (end < n && map_bit(busy, end) && !map_bit(start, end))
		end++;
	return (end - g) * EXTENT_FINE_GRAIN;
}

/* Make the unit at off, already cut out of the big pool, a small or a fine unit (with map). */
static struct ext *unit_open(struct extent_arena *a, uint64_t off, uint64_t *map)
{
	struct ext *u = spare_get(a), *r = spare_get(a);

	u->off = off;
	u->used = 0;
	u->unit = NULL;
	u->map = map;
	u->fine = map != NULL;
	a->units = avl_insert(a->units, &u->by_off, cmp_off);
	a->nunits++;
	r->off = off;
	r->len = a->unit;
	r->unit = u;
	r->map = NULL;
	r->fine = 0;
	pool_add(unit_pool(a, u), r);
	return u;
}

/* An extent allocated, reserved or released, for extent_watch(). */
static void ext_changed(struct extent_arena *a, uint64_t off, uint64_t len)
{
	struct extent_changes *c = a->changes;

	if (c == NULL || c->lost)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct extent_change *g;

		cap = cap < c->max ? cap : c->max;
		g = cap > c->n ? realloc(c->at, cap * sizeof(*g)) : NULL;

		if (g == NULL) {
			c->lost = true;
			return;
		}
		c->at = g;
		c->cap = cap;
	}
	c->at[c->n++] = (struct extent_change){off, len};
}

static void ext_record(struct extent_arena *a, uint64_t off, uint64_t len, struct ext *u)
{
	struct ext *e;

	ext_changed(a, off, len);
	a->used_bytes += len;
	a->nextents++;
	if (u != NULL && u->fine) {
		fine_mark(a, u, off, len, 1);
		return;
	}
	e = spare_get(a);
	e->off = off;
	e->len = len;
	e->unit = u;
	e->map = NULL;
	a->used = avl_insert(a->used, &e->by_off, cmp_off);
}

static int is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* Make an arena of size bytes, all free; unit and grain 0 take the defaults. */
int extent_arena_new(uint64_t size, uint64_t unit, uint64_t grain, struct extent_arena **ret)
{
	struct extent_arena *a;
	struct ext *e;
	int rc;

	if (unit == 0)
		unit = EXTENT_UNIT_DEFAULT;
	if (grain == 0)
		grain = unit < EXTENT_GRAIN_DEFAULT ? unit : EXTENT_GRAIN_DEFAULT;
	if (!is_pow2(unit) || !is_pow2(grain) || grain > unit || size % unit)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->unit = unit;
	a->grain = grain;
	a->size = size;
	rc = spare_fill(a);
	if (rc < 0) {
		extent_arena_free(a);
		return rc;
	}
	if (size) {
		e = spare_get(a);
		e->off = 0;
		e->len = size;
		e->unit = NULL;
		pool_add(&a->big, e);
	}
	*ret = a;
	return 0;
}

static void units_free_maps(struct avl *n)
{
	if (n == NULL)
		return;
	units_free_maps(n->l);
	units_free_maps(n->r);
	free(EXT_OF(n, by_off)->map);
}

/* Free the arena and all its bookkeeping (the memory it describes is not touched). */
void extent_arena_free(struct extent_arena *a)
{
	struct ext *e;

	if (a == NULL)
		return;
	extent_unwatch(a);
	avl_destroy(a->big.by_off);
	avl_destroy(a->small.by_off);
	avl_destroy(a->fine.by_off);
	units_free_maps(a->units);
	avl_destroy(a->units);
	avl_destroy(a->used);
	while ((e = a->spare) != NULL) {
		a->spare = e->by_off.l ? EXT_OF(e->by_off.l, by_off) : NULL;
		free(e);
	}
	free(a);
}

/*
 * Allocate len bytes, rounded as described above (fine: see extent_alloc_fine()): -ENOSPC when
 * nothing fits.
 */
static int ext_alloc(struct extent_arena *a, uint64_t len, int fine, uint64_t *ret_off,
		     uint64_t *ret_len)
{
	struct pool *small = ext_is_fine(len, fine) ? &a->fine : &a->small;
	struct ext *r, *u = NULL;
	uint64_t rlen, off;
	int rc;

	if (len == 0)
		return -EINVAL;
	if (len > a->size)
		return -ENOSPC;
	rlen = ext_round(a, len, fine);
	rc = spare_fill(a);
	if (rc < 0)
		return rc;
	if (rlen >= a->unit) {
		r = pool_fit(&a->big, rlen);
		if (r == NULL)
			return -ENOSPC;
		off = r->off;
		pool_take(a, &a->big, r, off, rlen);
	} else {
		r = pool_fit(small, rlen);
		if (r == NULL) {
			uint64_t *map = NULL;

			r = pool_fit(&a->big, a->unit);
			if (r == NULL)
				return -ENOSPC;
			if (small == &a->fine && (map = fine_map_new(a)) == NULL)
				return -ENOMEM;
			off = r->off;
			pool_take(a, &a->big, r, off, a->unit);
			unit_open(a, off, map);
			r = pool_holding(small, off, rlen);
		}
		off = r->off;
		u = r->unit;
		pool_take(a, small, r, off, rlen);
		u->used += rlen;
	}
	ext_record(a, off, rlen, u);
	*ret_off = off;
	if (ret_len != NULL)
		*ret_len = rlen;
	return 0;
}

int extent_alloc(struct extent_arena *a, uint64_t len, uint64_t *ret_off, uint64_t *ret_len)
{
	return ext_alloc(a, len, 0, ret_off, ret_len);
}

int extent_alloc_fine(struct extent_arena *a, uint64_t len, uint64_t *ret_off, uint64_t *ret_len)
{
	return ext_alloc(a, len, 1, ret_off, ret_len);
}

static int ext_reserve(struct extent_arena *a, uint64_t off, uint64_t len, int fine)
{
	struct ext *r, *u = NULL;
	uint64_t rlen, base;
	int rc;

	if (len == 0 || len > a->size)
		return -EINVAL;
	fine = ext_is_fine(len, fine);
	rlen = ext_round(a, len, fine);
	if (off > a->size - rlen)
		return -EINVAL;
	base = off & ~(a->unit - 1);
	if (rlen >= a->unit
		? off != base
		: (off % (fine ? EXTENT_FINE_GRAIN : a->grain) || off + rlen > base + a->unit))
		return -EINVAL;
	rc = spare_fill(a);
	if (rc < 0)
		return rc;
	if (rlen >= a->unit) {
		r = pool_holding(&a->big, off, rlen);
		if (r == NULL)
			return -EBUSY;
		pool_take(a, &a->big, r, off, rlen);
	} else {
		u = unit_find(a, off);
		if (u == NULL) {
			uint64_t *map = NULL;

			r = pool_holding(&a->big, base, a->unit);
			if (r == NULL)
				return -EBUSY;
			if (fine && (map = fine_map_new(a)) == NULL)
				return -ENOMEM;
			pool_take(a, &a->big, r, base, a->unit);
			u = unit_open(a, base, map);
		}
		if (u->fine != fine)
			return -EBUSY; /* a unit holds extents of one grain */
		r = pool_holding(unit_pool(a, u), off, rlen);
		if (r == NULL)
			return -EBUSY;
		pool_take(a, unit_pool(a, u), r, off, rlen);
		u->used += rlen;
	}
	ext_record(a, off, rlen, u);
	return 0;
}

int extent_reserve(struct extent_arena *a, uint64_t off, uint64_t len)
{
	return ext_reserve(a, off, len, 0);
}

int extent_reserve_fine(struct extent_arena *a, uint64_t off, uint64_t len)
{
	return ext_reserve(a, off, len, 1);
}

/*
 * The node of the extent of a fine unit at off, of len rounded, taken out of
 * the unit's map (a free run's node to be); NULL if no such extent is there,
 * or without memory for the node (*rc says which).
 */
static struct ext *fine_take(struct extent_arena *a, uint64_t off, uint64_t len, int *rc)
{
	struct ext *u = unit_find(a, off), *e;
	uint64_t rlen = ext_round(a, len, 1);

	*rc = -EINVAL;
	if (u == NULL || !u->fine || !ext_is_fine(len, 1) || (off - u->off) % EXTENT_FINE_GRAIN ||
	    fine_extent_len(a, u, (off - u->off) / EXTENT_FINE_GRAIN) != rlen)
		return NULL;
	/* Its run's node: the only memory a release of a fine extent may need. */
	if ((*rc = spare_fill(a)) < 0)
		return NULL;
	fine_mark(a, u, off, rlen, 0);
	e = spare_get(a);
	e->off = off;
	e->len = rlen;
	e->unit = u;
	e->map = NULL;
	e->fine = 0;
	return e;
}

/*
 * Release the extent at off, allocated or reserved with a len that rounds
 * the same: 0, -EINVAL, or -ENOMEM (an extent of a fine unit, whose free run
 * may need a node; nothing changed).
 */
int extent_release(struct extent_arena *a, uint64_t off, uint64_t len)
{
	struct ext *e, *u, *r;
	int rc;

	if (len == 0 || len > a->size)
		return -EINVAL;
	u = unit_find(a, off);
	if (u != NULL && u->fine) {
		if ((e = fine_take(a, off, len, &rc)) == NULL)
			return rc;
	} else {
		e = ext_le(a->used, off);
		if (e == NULL || e->off != off || ext_round(a, len, 0) != e->len)
			return -EINVAL;
		a->used = avl_remove(a->used, &e->by_off, cmp_off);
	}
	a->used_bytes -= e->len;
	a->nextents--;
	ext_changed(a, e->off, e->len);
	if (e->len >= a->unit) {
		pool_give(a, &a->big, e, 0, a->size);
		return 0;
	}
	u = e->unit;
	u->used -= e->len;
	pool_give(a, unit_pool(a, u), e, u->off, u->off + a->unit);
	if (u->used)
		return 0;
	/* The unit is all free again: one run, which goes back to the big pool. */
	r = pool_holding(unit_pool(a, u), u->off, a->unit);
	pool_del(unit_pool(a, u), r);
	spare_put(a, r);
	a->units = avl_remove(a->units, &u->by_off, cmp_off);
	a->nunits--;
	free(u->map);
	u->map = NULL;
	u->len = a->unit;
	u->unit = NULL;
	pool_give(a, &a->big, u, 0, a->size);
	return 0;
}

/* Add [size, new_size) at the end of the arena as free space. */
int extent_arena_grow(struct extent_arena *a, uint64_t new_size)
{
	struct ext *e;
	int rc;

	if (new_size < a->size || new_size % a->unit)
		return -EINVAL;
	if (new_size == a->size)
		return 0;
	rc = spare_fill(a);
	if (rc < 0)
		return rc;
	e = spare_get(a);
	e->off = a->size;
	e->len = new_size - a->size;
	e->unit = NULL;
	a->size = new_size;
	pool_give(a, &a->big, e, 0, new_size);
	return 0;
}

/* Bytes of allocated extents inside [lo, hi). */
static uint64_t ext_busy(const struct extent_arena *a, uint64_t lo, uint64_t hi)
{
	struct ext *e = ext_le(a->used, lo);
	uint64_t busy = 0, s, t;

	if (e == NULL || e->off + e->len <= lo)
		e = ext_ge(a->used, lo + 1);
	for (; e != NULL && e->off < hi; e = ext_ge(a->used, e->off + 1)) {
		s = e->off > lo ? e->off : lo;
		t = e->off + e->len < hi ? e->off + e->len : hi;
		busy += t - s;
	}
	/* Fine units' extents are in their maps (lo and hi are on unit boundaries). */
	for (e = ext_ge(a->units, lo); e != NULL && e->off < hi; e = ext_ge(a->units, e->off + 1))
		if (e->fine)
			busy += e->used;
	return busy;
}

/*
 * Cut the arena down to new_size if [new_size, size) is all free; otherwise
 * -EBUSY, and *ret_busy says how many bytes in that range are allocated.
 */
int extent_arena_shrink(struct extent_arena *a, uint64_t new_size, uint64_t *ret_busy)
{
	struct ext *r;

	if (new_size > a->size || new_size % a->unit)
		return -EINVAL;
	if (new_size < a->size) {
		r = pool_holding(&a->big, new_size, a->size - new_size);
		if (r == NULL) {
			if (ret_busy != NULL)
				*ret_busy = ext_busy(a, new_size, a->size);
			return -EBUSY;
		}
		/* The run reaches the end of the arena: trimming it takes no spare. */
		pool_take(a, &a->big, r, new_size, a->size - new_size);
		a->size = new_size;
	}
	if (ret_busy != NULL)
		*ret_busy = 0;
	return 0;
}

/* Fill *ret with the arena's figures. */
void extent_stats(const struct extent_arena *a, struct extent_stats *ret)
{
	struct avl *b = avl_last(a->big.by_len), *s = avl_last(a->small.by_len);
	uint64_t lb = b ? CEXT_OF(b, by_len)->len : 0, ls = s ? CEXT_OF(s, by_len)->len : 0;

	/* Fine runs are no larger than a unit's free part: they never exceed a small run's. */
	ret->size = a->size;
	ret->used = a->used_bytes;
	ret->free = a->size - a->used_bytes;
	ret->largest_free = lb > ls ? lb : ls;
	ret->nfree_runs = a->big.nruns + a->small.nruns + a->fine.nruns;
	ret->nextents = a->nextents;
	ret->nsmall_units = a->nunits;
	ret->fragmentation = ret->free ? 1.0 - (double)ret->largest_free / (double)ret->free : 0.0;
}

/* Call cb on each extent of fine unit u in offset order; a non-zero return stops the walk. */
static int fine_walk(const struct extent_arena *a, const struct ext *u,
		     int (*cb)(uint64_t off, uint64_t len, void *arg), void *arg)
{
	size_t w, words = fine_map_words(a);
	int rc;

	for (w = 0; w < words; w++) {
		uint64_t bits = u->map[w];

		while (bits != 0) {
			size_t g = w * 64 + (size_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			rc = cb(u->off + g * EXTENT_FINE_GRAIN, fine_extent_len(a, u, g), arg);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Call cb on each allocated extent in offset order; a non-zero return stops the walk. */
int extent_foreach(const struct extent_arena *a, int (*cb)(uint64_t off, uint64_t len, void *arg),
		   void *arg)
{
	const struct ext *e = ext_ge(a->used, 0), *u = ext_ge(a->units, 0);
	int rc;

	while (e != NULL || u != NULL) {
		if (u == NULL || (e != NULL && e->off < u->off)) {
			rc = cb(e->off, e->len, arg);
			e = rc ? NULL : ext_ge(a->used, e->off + 1);
		} else {
			rc = u->fine ? fine_walk(a, u, cb, arg) : 0;
			u = ext_ge(a->units, u->off + 1);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Consistency check. */

enum { K_BIG, K_SMALL, K_USED };

struct check_item {
	uint64_t off, len;
	const struct ext *unit;
	int kind;
	int fine; /* runs: found in the fine pool; extents: their unit is fine */
};

struct check {
	struct check_item *items;
	size_t n, cap;
};

/* Height of a well-formed AVL subtree ordered by cmp, or -1; counts its nodes. */
static int check_avl(const struct avl *n, avl_cmp_fn cmp, uint64_t *count)
{
	int hl, hr;

	if (n == NULL)
		return 0;
	if ((n->l && cmp(n->l, n) >= 0) || (n->r && cmp(n->r, n) <= 0))
		return -1;
	hl = check_avl(n->l, cmp, count);
	hr = check_avl(n->r, cmp, count);
	if (hl < 0 || hr < 0 || hl - hr > 1 || hr - hl > 1 || n->h != 1 + (hl > hr ? hl : hr))
		return -1;
	(*count)++;
	return n->h;
}

/*
 * Append the tree's ranges in order; check_sorted() then proves the whole
 * order. fine: the pool's kind, or -1 for extents (their unit's).
 */
static int check_add(struct check *c, const struct check_item *it)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct check_item *p = realloc(c->items, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		c->items = p;
		c->cap = cap;
	}
	c->items[c->n++] = *it;
	return 0;
}

static int check_collect(const struct avl *n, struct check *c, int kind, int fine)
{
	const struct ext *e;

	if (n == NULL)
		return 0;
	if (check_collect(n->l, c, kind, fine) < 0)
		return -1;
	e = CEXT_OF(n, by_off);
	if (check_add(c, &(struct check_item){
			     .off = e->off,
			     .len = e->len,
			     .unit = e->unit,
			     .kind = kind,
			     .fine = fine >= 0 ? fine : e->unit != NULL && e->unit->fine}) < 0)
		return -1;
	return check_collect(n->r, c, kind, fine);
}

static int check_item_cmp(const void *x, const void *y)
{
	const struct check_item *p = x, *q = y;

	return cmp_u64(p->off, q->off);
}

/* Each node of the by_len tree is the node the by_off tree has at its offset. */
static int check_twins(const struct avl *n, struct avl *by_off)
{
	const struct ext *e;

	if (n == NULL)
		return 0;
	e = CEXT_OF(n, by_len);
	if (ext_le(by_off, e->off) != e)
		return -1;
	return check_twins(n->l, by_off) < 0 ? -1 : check_twins(n->r, by_off);
}

static int check_pool(const struct pool *p)
{
	uint64_t n1 = 0, n2 = 0;

	if (check_avl(p->by_off, cmp_off, &n1) < 0 || check_avl(p->by_len, cmp_len, &n2) < 0)
		return -1;
	if (n1 != p->nruns || n2 != p->nruns)
		return -1;
	return check_twins(p->by_len, p->by_off);
}

/* The items collected from index from on are in strictly increasing order. */
static int check_sorted(const struct check *c, size_t from)
{
	size_t i;

	for (i = from + 1; i < c->n; i++)
		if (c->items[i - 1].off >= c->items[i].off)
			return -1;
	return 0;
}

/* Every range of the arena is exactly one of: big run, small run, extent. */
static int check_tiling(const struct extent_arena *a, const struct check *c)
{
	uint64_t pos = 0, used = 0, nused = 0, uoff = 0, ufree = 0, uused = 0, nunits = 0;
	const struct check_item *it, *prev = NULL;
	const struct ext *u = NULL;
	uint64_t grain;
	int small;
	size_t i;

	for (i = 0; i < c->n; i++, prev = it) {
		it = &c->items[i];
		if (it->off != pos || it->len == 0 || it->len > a->size - it->off)
			return -1;
		pos += it->len;
		small = it->kind == K_SMALL || (it->kind == K_USED && it->len < a->unit);
		if (it->kind == K_USED) {
			used += it->len;
			nused++;
		}
		if (!small) {
			if (it->off % a->unit || it->len % a->unit || u != NULL || it->unit != NULL)
				return -1;
			if (prev && prev->kind == K_BIG && it->kind == K_BIG)
				return -1; /* not coalesced */
			continue;
		}
		if (u == NULL) {
			u = unit_find(a, it->off);
			if (u == NULL || u->off != it->off)
				return -1;
			uoff = u->off;
			ufree = uused = 0;
			nunits++;
		} else if (prev->kind == K_SMALL && it->kind == K_SMALL) {
			return -1; /* not coalesced */
		}
		if (it->unit != u || it->fine != u->fine)
			return -1; /* a run or extent in the pool of another grain */
		grain = u->fine ? EXTENT_FINE_GRAIN : a->grain;
		if (it->off % grain || it->len % grain)
			return -1;
		if (it->kind == K_SMALL)
			ufree += it->len;
		else
			uused += it->len;
		if (it->off + it->len > uoff + a->unit)
			return -1;
		if (it->off + it->len == uoff + a->unit) {
			if (uused == 0 || uused != u->used || uused + ufree != a->unit)
				return -1;
			u = NULL;
		}
	}
	if (pos != a->size || u != NULL || used != a->used_bytes || nused != a->nextents ||
	    nunits != a->nunits)
		return -1;
	return 0;
}

/* The extents of a fine unit's map, as check items, and the grains they take. */
struct check_fine {
	struct check *c;
	const struct ext *unit;
	size_t grains;
};

static int check_fine_cb(uint64_t off, uint64_t len, void *arg)
{
	struct check_fine *fc = arg;

	if (check_add(fc->c, &(struct check_item){off, len, fc->unit, K_USED, 1}) < 0)
		return -1;
	fc->grains += len / EXTENT_FINE_GRAIN;
	return 0;
}

/* Verify every internal invariant (for tests): 0, -EUCLEAN if one is broken, or -ENOMEM. */
int extent_arena_check(const struct extent_arena *a)
{
	struct check c = {0};
	struct check_fine fc;
	const struct ext *u;
	uint64_t n;
	int rc = -EUCLEAN;

	if (check_pool(&a->big) < 0 || check_pool(&a->small) < 0 || check_pool(&a->fine) < 0)
		return rc;
	n = 0;
	if (check_avl(a->units, cmp_off, &n) < 0 || n != a->nunits)
		return rc;
	n = 0;
	if (check_avl(a->used, cmp_off, &n) < 0) /* (its count with the fine ones: tiling) */
		return rc;
	if (check_collect(a->big.by_off, &c, K_BIG, 0) < 0) {
		rc = -ENOMEM;
		goto out_items;
	}
	n = c.n;
	if (check_sorted(&c, 0) < 0)
		goto out_items;
	if (check_collect(a->small.by_off, &c, K_SMALL, 0) < 0) {
		rc = -ENOMEM;
		goto out_items;
	}
	if (check_sorted(&c, n) < 0)
		goto out_items;
	n = c.n;
	if (check_collect(a->fine.by_off, &c, K_SMALL, 1) < 0) {
		rc = -ENOMEM;
		goto out_items;
	}
	if (check_sorted(&c, n) < 0)
		goto out_items;
	n = c.n;
	if (check_collect(a->used, &c, K_USED, -1) < 0) {
		rc = -ENOMEM;
		goto out_items;
	}
	if (check_sorted(&c, n) < 0)
		goto out_items;
	n = c.n;
	fc = (struct check_fine){&c, NULL, 0};
	for (u = ext_ge(a->units, 0); u != NULL; u = ext_ge(a->units, u->off + 1)) {
		size_t w, words = fine_map_words(a), grains = 0;

		if (!u->fine)
			continue;
		fc.unit = u;
		fc.grains = 0;
		if (fine_walk(a, u, check_fine_cb, &fc) < 0) {
			rc = -ENOMEM;
			goto out_items;
		}
		for (w = 0; w < words; w++)
			grains += (size_t)__builtin_popcountll(u->map[words + w]);
		if (grains != fc.grains) /* an allocated grain in no extent */
			goto out_items;
	}
	if (check_sorted(&c, n) < 0)
		goto out_items;
	if (c.n)
		qsort(c.items, c.n, sizeof(*c.items), check_item_cmp);
	if (check_tiling(a, &c) == 0)
		rc = 0;
out_items:
	free(c.items);
	return rc;
}

/* Keep a list of the extents changed from now on; see extent.h. */
int extent_watch(struct extent_arena *a, size_t max)
{
	extent_unwatch(a);
	if ((a->changes = calloc(1, sizeof(*a->changes))) == NULL)
		return -ENOMEM;
	a->changes->max = max;
	return 0;
}

void extent_unwatch(struct extent_arena *a)
{
	if (a->changes == NULL)
		return;
	free(a->changes->at);
	free(a->changes);
	a->changes = NULL;
}

int extent_changes(const struct extent_arena *a, const struct extent_change **ret, size_t *ret_n)
{
	if (a->changes == NULL || a->changes->lost)
		return -EOVERFLOW;
	*ret = a->changes->at;
	*ret_n = a->changes->n;
	return 0;
}

void extent_changes_forget(struct extent_arena *a, size_t n)
{
	if (a->changes != NULL && n < a->changes->n)
		a->changes->n = n;
}

/* Whether any byte of [off, off + len) is allocated or reserved; see extent.h. */
bool extent_busy(const struct extent_arena *a, uint64_t off, uint64_t len)
{
	uint64_t end = len > a->size || off > a->size - len ? a->size : off + len, at = off;

	while (at < end) {
		uint64_t stop = (at & ~(a->unit - 1)) + a->unit;
		const struct ext *u = unit_find(a, at);
		const struct pool *p = u == NULL ? &a->big : u->fine ? &a->fine : &a->small;

		stop = stop < end ? stop : end;
		if (pool_holding(p, at, stop - at) == NULL)
			return true;
		at = stop;
	}
	return false;
}

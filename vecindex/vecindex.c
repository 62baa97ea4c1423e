/*
 * vecindex/vecindex.c - a vector index (flat or HNSW) in one memory range.
 *
 * Layout (all little-endian, offsets from the start of the range):
 *
 *	[0, 4096)		header: immutable part (magic, version, params,
 *				layout; checksummed), then the mutable words
 *	[4096, data_off)	chunk table: capacity >> chunk_shift u64
 *				offsets of chunks, 0 until allocated
 *	[data_off, size)	chunks of 1 << chunk_shift node records, and
 *				HNSW upper-level link blocks, handed out in
 *				order by the bump pointer hdr.alloc
 *
 * Node id i lives in chunk i >> chunk_shift, slot i & mask. A record is
 *
 *	HNSW:	n0 u32 | links0[m0] u32 | state u32 | pad | vector[dim] f32 |
 *		pad to 8 | label u64 | upper u64
 *	flat:	state u32 | pad | vector[dim] f32 | pad to 8 | label u64
 *
 * state is READY | DELETED | level << 8; upper is the offset of a node's
 * upper-level block: for levels 1..level, one list of n u32 | links[m] u32
 * each. The range is fixed-size: capacity (the chunk table's length) is
 * decided at create time from the size and the params, chunks are
 * allocated as the index fills, and an add that finds no room fails with
 * -ENOSPC, changing nothing that readers see.
 *
 * Memory ordering (C11 atomics; one writer, any number of readers):
 *
 *  W1. The writer fills a node's record (vector, label, upper offset, its
 *      own link lists) before it stores the node's state with release:
 *      READY means complete. Vectors and labels never change afterwards;
 *      a remove only sets DELETED in state (release).
 *  W2. A new chunk is zeroed before its table entry is stored (release);
 *      an upper block is zeroed before the record that points to it is
 *      published by W1.
 *  W3. Only ids of READY nodes are ever stored in a link list. A list
 *      changes by storing its entries (each with release), then its length
 *      (release): appending one, or rewriting the whole list in place when
 *      pruning. Entries beyond the length are left as they were, so they
 *      still name READY nodes.
 *  W4. Order of one add: record (W1), state, back-links into neighbours'
 *      lists (W3), the entry point if the node is the new top (release),
 *      and last the count (release).
 *
 *  R1. Readers load the count and the entry point with acquire; a flat
 *      scan reads only ids below the count it loaded. An HNSW search
 *      skips ids at or above max(count, entry + 1).
 *  R2. Every id read from shared memory is checked against the capacity,
 *      every chunk or upper offset against the range, every list length
 *      against its list's room, and every node's state (acquire) must say
 *      READY with a level in range before its vector is read; a node that
 *      fails a check is skipped. Entries are loaded with acquire, so a
 *      node's record is visible to whoever reads its id, and a list that
 *      changes under a reader only gives it a mix of old and new READY ids.
 *  R3. Every node is expanded at most once per search (visited tags) and
 *      the number of expansions is capped, so no walk loops, whatever the
 *      memory holds.
 *
 * The writer holds a token in the header, taken with a compare-and-swap;
 * a new holder first takes over nodes a dead writer left READY but not
 * counted (it crashed between W1 and W4). Nothing here depends on the rest
 * of the project.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecindex/vecdist.h"
#include "vecindex/vecindex.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the vector index layout is little-endian"
#endif

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
	       "shared-memory atomics must be lock-free");

#define VX_MAGIC UINT64_C(0x786365766c6f6f70) /* "poolvecx" */
#define VX_VERSION 1
#define VX_HDR_BYTES 4096
#define VX_MAX_LEVEL 16
#define VX_CHUNK_MAX_SHIFT 10 /* at most 1024 records a chunk */
#define VX_ID_MAX UINT64_C(0xfffffffe)
#define VX_NONE UINT32_MAX

#define VX_READY 0x1u
#define VX_DELETED 0x2u
#define VX_LEVEL(st) ((st) >> 8)

#define VX_ENTRY_VALID (UINT64_C(1) << 63)
#define VX_PREFETCH_AHEAD 3 /* records, when computing a node's neighbours' distances */

struct vecindex_hdr {
	/* Immutable after vecindex_create(); sum covers them. */
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t size;
	uint32_t kind, metric, dim, m;
	uint32_t m0, ef_construction, ef_search, max_level;
	uint32_t rec_size, up_size, vec_off, chunk_shift;
	uint64_t capacity;
	uint64_t table_off;
	uint64_t data_off;
	uint64_t seed;
	uint64_t sum; /* FNV-1a 64 of the fields above */
	uint8_t pad0[16];
	/* Mutable: see the ordering rules above. */
	_Atomic uint64_t count;	  /* ids [0, count) are published */
	_Atomic uint64_t entry;	  /* HNSW: VALID | level << 32 | id, or 0 */
	_Atomic uint64_t deleted; /* tombstones */
	_Atomic uint64_t alloc;	  /* next free byte of [data_off, size) */
	_Atomic uint64_t writer;  /* 0, or the token: owner << 32 | nonce */
	_Atomic uint64_t rng;	  /* the writer's level generator */
	uint64_t reserved[2];
};

_Static_assert(offsetof(struct vecindex_hdr, count) == 128, "header layout");
_Static_assert(sizeof(struct vecindex_hdr) == 192, "header layout");

/* Where things are, derived from params and size by vx_layout(). */
struct vx_layout {
	uint32_t m0, rec_size, up_size, vec_off, chunk_shift;
	uint32_t off_state, off_label, off_upper;
	uint64_t capacity, nchunks, table_off, data_off;
};

struct vecindex {
	uint8_t *base;
	uint64_t size;
	struct vecindex_hdr *hdr;
	_Atomic uint64_t *table;
	struct vecindex_params p;
	struct vx_layout l;
	uint64_t mask;	      /* slot of an id in its chunk */
	uint64_t chunk_bytes; /* of one chunk */
	bool l2;	      /* else 1 - dot */
	const struct vecdist_ops *ops;
	void (*persist)(const void *p, size_t len);
	uint64_t token;			     /* the writer token this handle holds, or 0 */
	struct vecindex_ctx *wctx;	     /* the writer's scratch */
	float *wvec;			     /* the writer's normalised vector */
	uint32_t (*sel)[2 * VECINDEX_M_MAX]; /* the writer's chosen links, per level */
	uint32_t nsel[VX_MAX_LEVEL + 1];
};

struct vx_cand {
	float d;
	uint32_t id;
};

struct vecindex_ctx {
	uint16_t *tags; /* visited: tags[id] == tag */
	uint64_t ntags;
	uint16_t tag;
	struct vx_cand *cand; /* min-heap of candidates to expand */
	size_t ncand, cand_cap;
	struct vx_cand *top; /* max-heap of the best found */
	size_t ntop, top_cap;
	struct vx_cand *heaps; /* flat batch: one max-heap of k per query */
	size_t heaps_cap;
	float *q; /* normalised query */
	size_t q_cap;
};

static __thread char vx_errbuf[256];

static int vx_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int vx_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(vx_errbuf, sizeof(vx_errbuf), fmt, ap);
	va_end(ap);
	return code;
}

const char *vecindex_errmsg(void)
{
	return vx_errbuf;
}

static uint64_t vx_fnv(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	while (len-- > 0)
		h = (h ^ *b++) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t vx_round(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

void vecindex_params_init(struct vecindex_params *p, uint32_t kind, uint32_t metric, uint32_t dim)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->metric = metric;
	p->dim = dim;
	if (kind == VECINDEX_HNSW) {
		p->m = VECINDEX_M_DEFAULT;
		p->ef_construction = VECINDEX_EFC_DEFAULT;
		p->ef_search = VECINDEX_EFS_DEFAULT;
	}
}

int vecindex_params_check(const struct vecindex_params *p)
{
	if (p == NULL)
		return vx_err(-EINVAL, "no parameters");
	if (p->kind != VECINDEX_FLAT && p->kind != VECINDEX_HNSW)
		return vx_err(-EINVAL, "index kind %u is neither flat nor hnsw", p->kind);
	if (p->metric < VECINDEX_L2 || p->metric > VECINDEX_COSINE)
		return vx_err(-EINVAL, "metric %u is not l2, ip or cosine", p->metric);
	if (p->dim == 0 || p->dim > VECINDEX_DIM_MAX)
		return vx_err(-EINVAL, "dimension %u is outside 1..%d", p->dim, VECINDEX_DIM_MAX);
	if (p->kind == VECINDEX_FLAT)
		return 0;
	if (p->m < VECINDEX_M_MIN || p->m > VECINDEX_M_MAX)
		return vx_err(-EINVAL, "hnsw M %u is outside %d..%d", p->m, VECINDEX_M_MIN,
			      VECINDEX_M_MAX);
	if (p->ef_construction == 0 || p->ef_construction > VECINDEX_EF_MAX)
		return vx_err(-EINVAL, "hnsw ef_construction %u is outside 1..%d",
			      p->ef_construction, VECINDEX_EF_MAX);
	if (p->ef_search == 0 || p->ef_search > VECINDEX_EF_MAX)
		return vx_err(-EINVAL, "hnsw ef_search %u is outside 1..%d", p->ef_search,
			      VECINDEX_EF_MAX);
	return 0;
}

/* Record offsets for the params (chunking and capacity come from the size). */
static void vx_record(const struct vecindex_params *p, struct vx_layout *l)
{
	uint32_t links = 0;

	memset(l, 0, sizeof(*l));
	if (p->kind == VECINDEX_HNSW) {
		l->m0 = 2 * p->m;
		links = 4 + 4 * l->m0;
		l->up_size = 4 + 4 * p->m;
	}
	l->off_state = links;
	l->vec_off = (uint32_t)vx_round(links + 4, 8);
	l->off_label = (uint32_t)vx_round(l->vec_off + 4 * p->dim, 8);
	l->off_upper = l->off_label + 8;
	l->rec_size = l->off_label + 8 + (p->kind == VECINDEX_HNSW ? 8 : 0);
}

/*
 * The layout of a range of size bytes: chunks of up to 1024 records, and
 * small enough that 64 of them fill the range, so that at most 1/64 of it
 * is lost to the last, partly used chunk. -ENOSPC if no chunk fits.
 */
static int vx_layout(const struct vecindex_params *p, uint64_t size, struct vx_layout *l)
{
	uint64_t avail, per;
	uint32_t shift = 0;

	vx_record(p, l);
	if (size < VX_HDR_BYTES + 64 + 8 + l->rec_size)
		return -ENOSPC;
	avail = size - VX_HDR_BYTES - 64; /* 64: the table is rounded up to it */
	while (shift < VX_CHUNK_MAX_SHIFT && (UINT64_C(2) << shift) * l->rec_size * 64 <= avail)
		shift++;
	l->chunk_shift = shift;
	per = 8 + (UINT64_C(1) << shift) * l->rec_size;
	l->nchunks = avail / per;
	if (l->nchunks == 0)
		return -ENOSPC;
	l->capacity = l->nchunks << shift;
	if (l->capacity > VX_ID_MAX) {
		l->nchunks = VX_ID_MAX >> shift;
		l->capacity = l->nchunks << shift;
	}
	l->table_off = VX_HDR_BYTES;
	l->data_off = vx_round(VX_HDR_BYTES + 8 * l->nchunks, 64);
	return 0;
}

int vecindex_size(const struct vecindex_params *p, uint64_t n, uint64_t *ret_size)
{
	struct vx_layout l;
	uint64_t size, upper = 0;
	int rc = vecindex_params_check(p);

	if (rc < 0)
		return rc;
	if (ret_size == NULL || n > VX_ID_MAX)
		return vx_err(-EINVAL, "vecindex_size: invalid argument");
	vx_record(p, &l);
	/* Upper levels: a node reaches level j with probability m^-j, so 1/(m-1) lists each. */
	if (p->kind == VECINDEX_HNSW)
		upper = (uint64_t)((double)n * l.up_size / (p->m - 1) * 1.25) + 8 * l.up_size;
	size = VX_HDR_BYTES + 64 + n * (l.rec_size + 8) + upper;
	for (;;) {
		rc = vx_layout(p, size, &l);
		if (rc == 0 && l.capacity >= n &&
		    size >=
			l.data_off + upper + vx_round(n, UINT64_C(1) << l.chunk_shift) * l.rec_size)
			break;
		size += size / 32 + l.rec_size;
	}
	*ret_size = vx_round(size, 4096);
	return 0;
}

int vecindex_create(void *base, uint64_t size, const struct vecindex_params *p)
{
	struct vecindex_hdr *h = base;
	struct vx_layout l;
	int rc = vecindex_params_check(p);

	if (rc < 0)
		return rc;
	if (base == NULL || ((uintptr_t)base & 63) != 0)
		return vx_err(-EINVAL, "the range must start 64-byte aligned");
	rc = vx_layout(p, size, &l);
	if (rc < 0)
		return vx_err(rc, "%llu bytes cannot hold an index of dimension %u",
			      (unsigned long long)size, p->dim);
	memset(base, 0, l.data_off);
	h->magic = VX_MAGIC;
	h->version = VX_VERSION;
	h->hdr_size = sizeof(*h);
	h->size = size;
	h->kind = p->kind;
	h->metric = p->metric;
	h->dim = p->dim;
	h->m = p->kind == VECINDEX_HNSW ? p->m : 0;
	h->m0 = l.m0;
	h->ef_construction = p->kind == VECINDEX_HNSW ? p->ef_construction : 0;
	h->ef_search = p->kind == VECINDEX_HNSW ? p->ef_search : 0;
	h->max_level = p->kind == VECINDEX_HNSW ? VX_MAX_LEVEL : 0;
	h->rec_size = l.rec_size;
	h->up_size = l.up_size;
	h->vec_off = l.vec_off;
	h->chunk_shift = l.chunk_shift;
	h->capacity = l.capacity;
	h->table_off = l.table_off;
	h->data_off = l.data_off;
	h->seed = p->seed ? p->seed : UINT64_C(0x5eed);
	h->sum = vx_fnv(h, offsetof(struct vecindex_hdr, sum));
	atomic_store_explicit(&h->alloc, l.data_off, memory_order_relaxed);
	atomic_store_explicit(&h->rng, h->seed, memory_order_relaxed);
	return 0;
}

/* Check a header against the layout its params and size imply. */
static int vx_check_header(const struct vecindex_hdr *h, uint64_t size,
			   struct vecindex_params *ret_p, struct vx_layout *ret_l)
{
	struct vecindex_params p;
	struct vx_layout l;
	int rc;

	if (size < VX_HDR_BYTES)
		return vx_err(-EBADMSG, "a range of %llu bytes holds no index",
			      (unsigned long long)size);
	if (h->magic != VX_MAGIC)
		return vx_err(-EBADMSG, "no vector index here (bad magic)");
	if (h->version != VX_VERSION || h->hdr_size != sizeof(*h))
		return vx_err(-EPROTONOSUPPORT, "vector index version %u, this library reads %d",
			      h->version, VX_VERSION);
	if (h->sum != vx_fnv(h, offsetof(struct vecindex_hdr, sum)))
		return vx_err(-EBADMSG, "vector index header is corrupt (checksum)");
	if (h->size > size)
		return vx_err(-EBADMSG, "vector index of %llu bytes in a range of %llu",
			      (unsigned long long)h->size, (unsigned long long)size);
	memset(&p, 0, sizeof(p));
	p.kind = h->kind;
	p.metric = h->metric;
	p.dim = h->dim;
	p.m = h->m;
	p.ef_construction = h->ef_construction;
	p.ef_search = h->ef_search;
	p.seed = h->seed;
	rc = vecindex_params_check(&p);
	if (rc < 0)
		return vx_err(-EBADMSG, "vector index header is corrupt: %s", vx_errbuf);
	if (vx_layout(&p, h->size, &l) < 0 || l.m0 != h->m0 || l.rec_size != h->rec_size ||
	    l.up_size != h->up_size || l.vec_off != h->vec_off || l.chunk_shift != h->chunk_shift ||
	    l.capacity != h->capacity || l.table_off != h->table_off || l.data_off != h->data_off ||
	    h->max_level != (p.kind == VECINDEX_HNSW ? VX_MAX_LEVEL : 0))
		return vx_err(-EBADMSG, "vector index header is corrupt (layout)");
	*ret_p = p;
	*ret_l = l;
	return 0;
}

int vecindex_ctx_new(struct vecindex_ctx **ret)
{
	struct vecindex_ctx *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return vx_err(-ENOMEM, "out of memory");
	*ret = c;
	return 0;
}

void vecindex_ctx_free(struct vecindex_ctx *ctx)
{
	if (ctx == NULL)
		return;
	free(ctx->tags);
	free(ctx->cand);
	free(ctx->top);
	free(ctx->heaps);
	free(ctx->q);
	free(ctx);
}

int vecindex_open(void *base, uint64_t size, void (*persist)(const void *p, size_t len),
		  struct vecindex **ret)
{
	struct vecindex *ix;
	int rc;

	if (base == NULL || ret == NULL || ((uintptr_t)base & 7) != 0)
		return vx_err(-EINVAL, "vecindex_open: invalid argument");
	ix = calloc(1, sizeof(*ix));
	if (ix == NULL)
		return vx_err(-ENOMEM, "out of memory");
	rc = vx_check_header(base, size, &ix->p, &ix->l);
	if (rc < 0) {
		free(ix);
		return rc;
	}
	ix->base = base;
	ix->hdr = base;
	ix->size = ix->hdr->size;
	ix->table = (_Atomic uint64_t *)(ix->base + ix->l.table_off);
	ix->mask = (UINT64_C(1) << ix->l.chunk_shift) - 1;
	ix->chunk_bytes = (ix->mask + 1) * ix->l.rec_size;
	ix->l2 = ix->p.metric == VECINDEX_L2;
	ix->ops = vecdist_best();
	ix->persist = persist;
	*ret = ix;
	return 0;
}

void vecindex_close(struct vecindex *ix)
{
	if (ix == NULL)
		return;
	vecindex_writer_release(ix);
	vecindex_ctx_free(ix->wctx);
	free(ix->wvec);
	free(ix->sel);
	free(ix);
}

const char *vecindex_simd(const struct vecindex *ix)
{
	return ix->ops->name;
}

static void vx_persist(const struct vecindex *ix, const void *p, size_t len)
{
	if (ix->persist != NULL)
		ix->persist(p, len);
}

static inline float vx_dist(const struct vecindex *ix, const float *a, const float *b)
{
	if (ix->l2)
		return ix->ops->l2(a, b, ix->p.dim);
	return 1.0f - ix->ops->dot(a, b, ix->p.dim);
}

/* The record of id, or NULL if its chunk is not there or not inside the range (R2). */
static inline uint8_t *vx_rec(const struct vecindex *ix, uint64_t id)
{
	uint64_t c;

	if (id >= ix->l.capacity)
		return NULL;
	c = atomic_load_explicit(&ix->table[id >> ix->l.chunk_shift], memory_order_acquire);
	if (c < ix->l.data_off || c > ix->size - ix->chunk_bytes || (c & 7) != 0)
		return NULL;
	return ix->base + c + (id & ix->mask) * ix->l.rec_size;
}

static inline _Atomic uint32_t *vx_state(const struct vecindex *ix, uint8_t *rec)
{
	return (_Atomic uint32_t *)(rec + ix->l.off_state);
}

/* A node's state if it is READY with a level in range (R2), else 0. */
static inline uint32_t vx_ready(const struct vecindex *ix, uint8_t *rec)
{
	uint32_t st = atomic_load_explicit(vx_state(ix, rec), memory_order_acquire);

	if (!(st & VX_READY) || VX_LEVEL(st) > (ix->p.kind == VECINDEX_HNSW ? VX_MAX_LEVEL : 0))
		return 0;
	return st;
}

static inline const float *vx_vec(const struct vecindex *ix, const uint8_t *rec)
{
	return (const float *)(rec + ix->l.vec_off);
}

static inline uint64_t vx_label(const struct vecindex *ix, const uint8_t *rec)
{
	return *(const uint64_t *)(rec + ix->l.off_label);
}

/*
 * The link list of a READY node (state st) at level: its room in *ret_cap.
 * NULL if the node has no such level or its upper block is out of range.
 */
static _Atomic uint32_t *vx_links(const struct vecindex *ix, uint8_t *rec, uint32_t st,
				  unsigned level, uint32_t *ret_cap)
{
	uint64_t up;

	if (level == 0) {
		*ret_cap = ix->l.m0;
		return (_Atomic uint32_t *)rec;
	}
	if (VX_LEVEL(st) < level)
		return NULL;
	up = *(const uint64_t *)(rec + ix->l.off_upper);
	if (up < ix->l.data_off || (up & 7) != 0 ||
	    up > ix->size - (uint64_t)VX_LEVEL(st) * ix->l.up_size)
		return NULL;
	*ret_cap = ix->p.m;
	return (_Atomic uint32_t *)(ix->base + up + (uint64_t)(level - 1) * ix->l.up_size);
}

/* A list's length, never more than its room (R2). */
static inline uint32_t vx_list_len(_Atomic uint32_t *list, uint32_t cap)
{
	uint32_t n = atomic_load_explicit(&list[0], memory_order_acquire);

	return n < cap ? n : cap;
}

/* Heaps of candidates: ties broken by id, so that every search is deterministic. */
static inline bool vx_less(struct vx_cand a, struct vx_cand b)
{
	return a.d < b.d || (a.d == b.d && a.id < b.id);
}

/*
 * Binary heaps of candidates: a min-heap of those to expand, a max-heap of
 * the best found. One function per kind so that the comparisons inline.
 */
#define VX_HEAP_FUNCS(kind, before)                                                                \
	static inline void vx_##kind##_push(struct vx_cand *h, size_t *n, struct vx_cand c)        \
	{                                                                                          \
		size_t i = (*n)++;                                                                 \
                                                                                                   \
		while (i > 0 && before(c, h[(i - 1) / 2])) {                                       \
			h[i] = h[(i - 1) / 2];                                                     \
			i = (i - 1) / 2;                                                           \
		}                                                                                  \
		h[i] = c;                                                                          \
	}                                                                                          \
	/* Replace the root by c and restore the heap. */                                          \
	static inline void vx_##kind##_sift(struct vx_cand *h, size_t n, struct vx_cand c)         \
	{                                                                                          \
		size_t i = 0, child;                                                               \
                                                                                                   \
		while ((child = 2 * i + 1) < n) {                                                  \
			if (child + 1 < n && before(h[child + 1], h[child]))                       \
				child++;                                                           \
			if (!before(h[child], c))                                                  \
				break;                                                             \
			h[i] = h[child];                                                           \
			i = child;                                                                 \
		}                                                                                  \
		h[i] = c;                                                                          \
	}

#define VX_NEARER(a, b) vx_less(a, b)
#define VX_FARTHER(a, b) vx_less(b, a)
VX_HEAP_FUNCS(min, VX_NEARER)
VX_HEAP_FUNCS(max, VX_FARTHER)

/* Drop the top (the nearest) of a min-heap. */
static inline void vx_min_pop(struct vx_cand *h, size_t *n)
{
	if (*n > 0) {
		(*n)--;
		vx_min_sift(h, *n, h[*n]);
	}
}

/* Empty a max-heap into ascending order in place. */
static void vx_max_sort(struct vx_cand *h, size_t n)
{
	while (n > 1) {
		struct vx_cand top = h[0];

		vx_max_sift(h, n - 1, h[n - 1]);
		h[--n] = top;
	}
}

/* Sort a few candidates, nearest first. */
static void vx_sort(struct vx_cand *a, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		struct vx_cand x = a[i];

		for (j = i; j > 0 && vx_less(x, a[j - 1]); j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

/* Grow an array of candidates to hold at least want. */
static int vx_reserve(struct vx_cand **arr, size_t *cap, size_t want)
{
	struct vx_cand *a;
	size_t n = *cap ? *cap : 64;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	a = realloc(*arr, n * sizeof(*a));
	if (a == NULL)
		return vx_err(-ENOMEM, "out of memory");
	*arr = a;
	*cap = n;
	return 0;
}

/* Start a new visit over ids [0, limit): fresh tags. */
static int vx_visit_begin(struct vecindex_ctx *c, uint64_t limit)
{
	if (limit > c->ntags) {
		uint64_t n = limit + limit / 4 + 1024;
		uint16_t *t = realloc(c->tags, n * sizeof(*t));

		if (t == NULL)
			return vx_err(-ENOMEM, "out of memory");
		memset(t + c->ntags, 0, (n - c->ntags) * sizeof(*t));
		c->tags = t;
		c->ntags = n;
	}
	if (++c->tag == 0) {
		memset(c->tags, 0, c->ntags * sizeof(*c->tags));
		c->tag = 1;
	}
	return 0;
}

/* Mark id visited; true if it was already. */
static inline bool vx_visited(struct vecindex_ctx *c, uint32_t id)
{
	if (c->tags[id] == c->tag)
		return true;
	c->tags[id] = c->tag;
	return false;
}

/* The most nodes one search expands (R3): enough for any sane graph. */
static inline size_t vx_hop_cap(unsigned ef)
{
	return 16 * (size_t)ef + 4096;
}

/* Greedy walk on one upper level: the nearest node to q reachable from *cur. */
static void vx_greedy(const struct vecindex *ix, const float *q, unsigned level, uint64_t limit,
		      uint32_t *cur, float *dcur)
{
	size_t hops = 0;
	bool changed = true;

	while (changed && hops++ < vx_hop_cap(1)) {
		uint8_t *rec = vx_rec(ix, *cur);
		uint32_t st = rec ? vx_ready(ix, rec) : 0, cap = 0, n, j;
		_Atomic uint32_t *list = st ? vx_links(ix, rec, st, level, &cap) : NULL;

		changed = false;
		if (list == NULL)
			return;
		n = vx_list_len(list, cap);
		for (j = 0; j < n; j++) {
			uint32_t id = atomic_load_explicit(&list[1 + j], memory_order_acquire);
			uint8_t *r;
			float d;

			if (id >= limit || (r = vx_rec(ix, id)) == NULL || !vx_ready(ix, r))
				continue;
			d = vx_dist(ix, q, vx_vec(ix, r));
			if (d < *dcur) {
				*dcur = d;
				*cur = id;
				changed = true;
			}
		}
	}
}

/*
 * Best-first search of one level from ep (already marked visited): the ef
 * nearest in c->top (a max-heap). Deleted nodes are walked through but not
 * kept when skip_deleted.
 */
static int vx_search_level(const struct vecindex *ix, struct vecindex_ctx *c, const float *q,
			   uint32_t ep, float dep, unsigned ef, unsigned level, bool skip_deleted,
			   uint64_t limit)
{
	size_t hops = 0, cap_hops = vx_hop_cap(ef);
	uint8_t *erec = vx_rec(ix, ep);
	uint32_t est = erec ? vx_ready(ix, erec) : 0;
	float lower;
	int rc;

	c->ncand = c->ntop = 0;
	if ((rc = vx_reserve(&c->cand, &c->cand_cap, 256)) < 0 ||
	    (rc = vx_reserve(&c->top, &c->top_cap, (size_t)ef + 2)) < 0)
		return rc;
	if (est == 0)
		return 0;
	vx_min_push(c->cand, &c->ncand, (struct vx_cand){dep, ep});
	if (!(skip_deleted && (est & VX_DELETED)))
		vx_max_push(c->top, &c->ntop, (struct vx_cand){dep, ep});
	lower = c->ntop ? c->top[0].d : INFINITY;
	while (c->ncand > 0) {
		struct vx_cand cur = c->cand[0];
		uint8_t *rec, *nrec[2 * VECINDEX_M_MAX];
		uint32_t st, cap = 0, n, j, nid[2 * VECINDEX_M_MAX], nn = 0;
		_Atomic uint32_t *list;

		if (cur.d > lower && c->ntop >= ef)
			break;
		if (hops++ >= cap_hops)
			break;
		vx_min_pop(c->cand, &c->ncand);
		rec = vx_rec(ix, cur.id);
		st = rec ? vx_ready(ix, rec) : 0;
		list = st ? vx_links(ix, rec, st, level, &cap) : NULL;
		if (list == NULL)
			continue;
		n = vx_list_len(list, cap);
		/* The ids not seen yet, and their records. */
		for (j = 0; j < n; j++) {
			uint32_t id = atomic_load_explicit(&list[1 + j], memory_order_acquire);
			uint8_t *r;

			if (id >= limit || vx_visited(c, id) || (r = vx_rec(ix, id)) == NULL)
				continue;
			nid[nn] = id;
			nrec[nn++] = r;
		}
		if ((rc = vx_reserve(&c->cand, &c->cand_cap, c->ncand + nn)) < 0)
			return rc;
		/*
		 * Then the distances, each record prefetched a few ahead: all at
		 * once would fill the line-fill buffers and stall, one ahead is
		 * too late to hide a miss behind one distance.
		 */
		for (j = 0; j < nn && j < VX_PREFETCH_AHEAD; j++)
			__builtin_prefetch(nrec[j] + ix->l.off_state);
		for (j = 0; j < nn; j++) {
			uint32_t nst;
			float d;

			if (j + VX_PREFETCH_AHEAD < nn)
				__builtin_prefetch(nrec[j + VX_PREFETCH_AHEAD] + ix->l.off_state);
			nst = vx_ready(ix, nrec[j]);
			if (nst == 0 || (level > 0 && VX_LEVEL(nst) < level))
				continue;
			d = vx_dist(ix, q, vx_vec(ix, nrec[j]));
			if (c->ntop >= ef && !(d < lower))
				continue;
			/* A candidate's links are read when it is expanded: fetch them now. */
			__builtin_prefetch(nrec[j]);
			vx_min_push(c->cand, &c->ncand, (struct vx_cand){d, nid[j]});
			if (skip_deleted && (nst & VX_DELETED))
				continue;
			if (c->ntop < ef)
				vx_max_push(c->top, &c->ntop, (struct vx_cand){d, nid[j]});
			else
				vx_max_sift(c->top, c->ntop, (struct vx_cand){d, nid[j]});
			lower = c->top[0].d;
		}
	}
	return 0;
}

/* Check a vector and, for cosine, normalise it into out. Returns the vector to use. */
static int vx_prepare(const struct vecindex *ix, const float *v, float *out, const float **ret)
{
	double norm = 0;
	uint32_t i;

	for (i = 0; i < ix->p.dim; i++) {
		if (!isfinite(v[i]))
			return vx_err(-EINVAL, "component %u of the vector is not a finite number",
				      i);
		norm += (double)v[i] * v[i];
	}
	if (ix->p.metric != VECINDEX_COSINE) {
		*ret = v;
		return 0;
	}
	if (norm == 0)
		return vx_err(-EINVAL, "a zero vector has no direction for cosine distance");
	norm = 1 / sqrt(norm);
	for (i = 0; i < ix->p.dim; i++)
		out[i] = (float)(v[i] * norm);
	*ret = out;
	return 0;
}

static int vx_query(const struct vecindex *ix, struct vecindex_ctx *c, const float *q,
		    const float **ret)
{
	if (c->q_cap < ix->p.dim) {
		float *b = realloc(c->q, ix->p.dim * sizeof(float));

		if (b == NULL)
			return vx_err(-ENOMEM, "out of memory");
		c->q = b;
		c->q_cap = ix->p.dim;
	}
	return vx_prepare(ix, q, c->q, ret);
}

/* Write the sorted candidates out as labels and distances; the count. */
static int vx_results(const struct vecindex *ix, struct vx_cand *res, size_t n, unsigned k,
		      uint64_t *labels, float *dists)
{
	size_t i, out = 0;

	vx_max_sort(res, n);
	for (i = 0; i < n && out < k; i++) {
		uint8_t *rec = vx_rec(ix, res[i].id);

		if (rec == NULL)
			continue;
		labels[out] = vx_label(ix, rec);
		if (dists != NULL)
			dists[out] = res[i].d;
		out++;
	}
	return (int)out;
}

/* The ids a search may visit (R1), and the entry point. */
static uint64_t vx_limit(const struct vecindex *ix, uint64_t *ret_entry)
{
	uint64_t n = atomic_load_explicit(&ix->hdr->count, memory_order_acquire);
	uint64_t e = atomic_load_explicit(&ix->hdr->entry, memory_order_acquire);
	uint64_t eid = e & 0xffffffffu;

	if (n > ix->l.capacity)
		n = ix->l.capacity;
	if ((e & VX_ENTRY_VALID) && eid < ix->l.capacity && eid >= n)
		n = eid + 1;
	*ret_entry = e;
	return n;
}

static int vx_search_hnsw(const struct vecindex *ix, struct vecindex_ctx *c, const float *q,
			  unsigned k, unsigned ef, uint64_t *labels, float *dists)
{
	uint64_t e, limit = vx_limit(ix, &e);
	uint32_t cur = (uint32_t)(e & 0xffffffffu), top = (uint32_t)((e >> 32) & 0xff);
	uint8_t *rec;
	float dcur;
	unsigned l;
	int rc;

	if (!(e & VX_ENTRY_VALID) || cur >= limit)
		return 0;
	rec = vx_rec(ix, cur);
	if (rec == NULL || !vx_ready(ix, rec))
		return 0;
	if (top > VX_MAX_LEVEL)
		top = VX_MAX_LEVEL;
	dcur = vx_dist(ix, q, vx_vec(ix, rec));
	for (l = top; l > 0; l--)
		vx_greedy(ix, q, l, limit, &cur, &dcur);
	if ((rc = vx_visit_begin(c, limit)) < 0)
		return rc;
	vx_visited(c, cur);
	rc = vx_search_level(ix, c, q, cur, dcur, ef < k ? k : ef, 0, true, limit);
	if (rc < 0)
		return rc;
	return vx_results(ix, c->top, c->ntop, k, labels, dists);
}

/* A flat scan of ids [0, count) for nq queries at once: each record is read once for all. */
static int vx_scan(const struct vecindex *ix, struct vecindex_ctx *c, const float *const *qs,
		   size_t nq, unsigned k, uint64_t *labels, float *dists, unsigned *counts,
		   size_t stride)
{
	uint64_t e, n = vx_limit(ix, &e), chunk, per = ix->mask + 1;
	size_t *nh, qi;
	int rc;

	(void)e;
	if ((rc = vx_reserve(&c->heaps, &c->heaps_cap, nq * (size_t)k + nq)) < 0)
		return rc;
	nh = (size_t *)calloc(nq, sizeof(*nh));
	if (nh == NULL)
		return vx_err(-ENOMEM, "out of memory");
	for (chunk = 0; chunk * per < n; chunk++) {
		uint8_t *rec = vx_rec(ix, chunk * per);
		uint64_t slot, end = n - chunk * per < per ? n - chunk * per : per;

		if (rec == NULL)
			continue;
		for (slot = 0; slot < end; slot++, rec += ix->l.rec_size) {
			uint32_t st = atomic_load_explicit(vx_state(ix, rec), memory_order_acquire);
			const float *v = vx_vec(ix, rec);
			uint32_t id = (uint32_t)(chunk * per + slot);

			if ((st & (VX_READY | VX_DELETED)) != VX_READY)
				continue;
			for (qi = 0; qi < nq; qi++) {
				struct vx_cand *h = c->heaps + qi * k;
				float d = vx_dist(ix, qs[qi], v);

				if (nh[qi] < k)
					vx_max_push(h, &nh[qi], (struct vx_cand){d, id});
				else if (vx_less((struct vx_cand){d, id}, h[0]))
					vx_max_sift(h, k, (struct vx_cand){d, id});
			}
		}
	}
	for (qi = 0; qi < nq; qi++)
		counts[qi] =
		    (unsigned)vx_results(ix, c->heaps + qi * k, nh[qi], k, labels + qi * stride,
					 dists ? dists + qi * stride : NULL);
	free(nh);
	return 0;
}

static int vx_search_args(const struct vecindex *ix, const void *q, unsigned k,
			  const uint64_t *labels)
{
	if (ix == NULL || q == NULL || labels == NULL)
		return vx_err(-EINVAL, "search: invalid argument");
	if (k == 0 || k > VECINDEX_K_MAX)
		return vx_err(-EINVAL, "k %u is outside 1..%d", k, VECINDEX_K_MAX);
	return 0;
}

int vecindex_search(const struct vecindex *ix, struct vecindex_ctx *ctx, const float *q, unsigned k,
		    unsigned ef, uint64_t *ret_labels, float *ret_dists)
{
	struct vecindex_ctx *c = ctx;
	const float *qq;
	unsigned cnt = 0;
	int rc = vx_search_args(ix, q, k, ret_labels);

	if (rc < 0)
		return rc;
	if (ef > VECINDEX_EF_MAX)
		return vx_err(-EINVAL, "ef %u is above %d", ef, VECINDEX_EF_MAX);
	if (c == NULL && (rc = vecindex_ctx_new(&c)) < 0)
		return rc;
	rc = vx_query(ix, c, q, &qq);
	if (rc == 0 && ix->p.kind == VECINDEX_HNSW)
		rc = vx_search_hnsw(ix, c, qq, k, ef ? ef : ix->p.ef_search, ret_labels, ret_dists);
	else if (rc == 0)
		rc = vx_scan(ix, c, &qq, 1, k, ret_labels, ret_dists, &cnt, k);
	if (rc == 0 && ix->p.kind == VECINDEX_FLAT)
		rc = (int)cnt;
	if (c != ctx)
		vecindex_ctx_free(c);
	return rc;
}

/* Flat batches scan the records once per block of this many queries. */
#define VX_SCAN_BLOCK 8

int vecindex_search_batch(const struct vecindex *ix, struct vecindex_ctx *ctx, size_t n,
			  const float *q, unsigned k, unsigned ef, uint64_t *ret_labels,
			  float *ret_dists, unsigned *ret_counts)
{
	struct vecindex_ctx *c = ctx;
	float *qbuf = NULL;
	size_t i, j, dim;
	int rc = vx_search_args(ix, q, k, ret_labels);

	if (rc < 0)
		return rc;
	if (ret_counts == NULL || ef > VECINDEX_EF_MAX)
		return vx_err(-EINVAL, "search: invalid argument");
	if (c == NULL && (rc = vecindex_ctx_new(&c)) < 0)
		return rc;
	dim = ix->p.dim;
	for (i = 0; i < n * k; i++) {
		ret_labels[i] = UINT64_MAX;
		if (ret_dists != NULL)
			ret_dists[i] = INFINITY;
	}
	if (ix->p.kind == VECINDEX_HNSW) {
		for (i = 0; i < n && rc >= 0; i++) {
			rc = vecindex_search(ix, c, q + i * dim, k, ef, ret_labels + i * k,
					     ret_dists ? ret_dists + i * k : NULL);
			ret_counts[i] = rc < 0 ? 0 : (unsigned)rc;
		}
		goto out;
	}
	qbuf = malloc(VX_SCAN_BLOCK * dim * sizeof(float));
	if (qbuf == NULL) {
		rc = vx_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n && rc >= 0; i += VX_SCAN_BLOCK) {
		const float *qs[VX_SCAN_BLOCK];
		size_t nb = n - i < VX_SCAN_BLOCK ? n - i : VX_SCAN_BLOCK;

		for (j = 0; j < nb && rc >= 0; j++)
			rc = vx_prepare(ix, q + (i + j) * dim, qbuf + j * dim, &qs[j]);
		if (rc >= 0)
			rc = vx_scan(ix, c, qs, nb, k, ret_labels + i * k,
				     ret_dists ? ret_dists + i * k : NULL, ret_counts + i, k);
	}
out:
	free(qbuf);
	if (c != ctx)
		vecindex_ctx_free(c);
	return rc < 0 ? rc : 0;
}

/* ---- the writer ---- */

static uint64_t vx_splitmix(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A new node's level: j with probability (1 - 1/m) m^-j, as HNSW's exp(-j ln m). */
static uint32_t vx_random_level(struct vecindex *ix)
{
	uint64_t s = atomic_load_explicit(&ix->hdr->rng, memory_order_relaxed);
	uint64_t bar = UINT64_MAX / ix->p.m;
	uint32_t level = 0;

	while (level < VX_MAX_LEVEL && vx_splitmix(&s) < bar)
		level++;
	atomic_store_explicit(&ix->hdr->rng, s, memory_order_relaxed);
	return level;
}

/* Hand out len bytes of the range (8-aligned), zeroed; 0 if there is no room. */
static uint64_t vx_alloc(struct vecindex *ix, uint64_t len)
{
	uint64_t at = atomic_load_explicit(&ix->hdr->alloc, memory_order_relaxed);

	len = vx_round(len, 8);
	if (at < ix->l.data_off || at > ix->size || ix->size - at < len)
		return 0;
	memset(ix->base + at, 0, len);
	vx_persist(ix, ix->base + at, len);
	atomic_store_explicit(&ix->hdr->alloc, at + len, memory_order_relaxed);
	vx_persist(ix, &ix->hdr->alloc, sizeof(ix->hdr->alloc));
	return at;
}

/* The record of a new id, allocating its chunk if it is the first there (W2). */
static uint8_t *vx_new_rec(struct vecindex *ix, uint64_t id)
{
	_Atomic uint64_t *slot = &ix->table[id >> ix->l.chunk_shift];

	if (atomic_load_explicit(slot, memory_order_relaxed) == 0) {
		uint64_t at = vx_alloc(ix, ix->chunk_bytes);

		if (at == 0)
			return NULL;
		atomic_store_explicit(slot, at, memory_order_release);
		vx_persist(ix, slot, sizeof(*slot));
	}
	return vx_rec(ix, id);
}

static int vx_writer_check(const struct vecindex *ix)
{
	if (ix->token == 0)
		return vx_err(-EPERM, "this handle does not hold the writer token");
	if (atomic_load_explicit(&ix->hdr->writer, memory_order_relaxed) != ix->token)
		return vx_err(-EPERM, "the writer token was taken over by owner %llu",
			      (unsigned long long)(atomic_load_explicit(&ix->hdr->writer,
									memory_order_relaxed) >>
						   32));
	return 0;
}

/* Store a list's entries, then its length (W3). */
static void vx_list_store(const struct vecindex *ix, _Atomic uint32_t *list, const uint32_t *ids,
			  uint32_t n)
{
	uint32_t j;

	for (j = 0; j < n; j++)
		atomic_store_explicit(&list[1 + j], ids[j], memory_order_release);
	atomic_store_explicit(&list[0], n, memory_order_release);
	vx_persist(ix, list, 4 + 4 * (size_t)n);
}

/*
 * HNSW's neighbour heuristic: from candidates sorted nearest first (d: to
 * the base point), keep one only if it is nearer the base than to every
 * one kept, up to max. Keeps links that point in different directions.
 */
static uint32_t vx_select(const struct vecindex *ix, const struct vx_cand *cand, size_t n,
			  uint32_t max, uint32_t *out)
{
	uint32_t kept = 0;
	size_t i;

	if (n <= max) {
		for (i = 0; i < n; i++)
			out[i] = cand[i].id;
		return (uint32_t)n;
	}
	for (i = 0; i < n && kept < max; i++) {
		uint8_t *rec = vx_rec(ix, cand[i].id);
		bool good = rec != NULL;
		uint32_t j;

		for (j = 0; j < kept && good; j++)
			if (vx_dist(ix, vx_vec(ix, rec), vx_vec(ix, vx_rec(ix, out[j]))) <
			    cand[i].d)
				good = false;
		if (good)
			out[kept++] = cand[i].id;
	}
	return kept;
}

/* Link id into the list of node s at level, pruning it with the heuristic if it is full. */
static int vx_backlink(struct vecindex *ix, uint32_t s, uint32_t id, unsigned level)
{
	struct vecindex_ctx *c = ix->wctx;
	uint8_t *srec = vx_rec(ix, s), *r;
	uint32_t st = srec ? vx_ready(ix, srec) : 0;
	uint32_t cap = 0, n, j, m = 0, kept, ids[2 * VECINDEX_M_MAX];
	_Atomic uint32_t *list = st ? vx_links(ix, srec, st, level, &cap) : NULL;
	const float *sv;
	int rc;

	if (list == NULL)
		return 0;
	sv = vx_vec(ix, srec);
	n = vx_list_len(list, cap);
	for (j = 0; j < n; j++)
		if (atomic_load_explicit(&list[1 + j], memory_order_relaxed) == id)
			return 0;
	if (n < cap) {
		atomic_store_explicit(&list[1 + n], id, memory_order_release);
		atomic_store_explicit(&list[0], n + 1, memory_order_release);
		vx_persist(ix, list, 4 + 4 * (size_t)(n + 1));
		return 0;
	}
	if ((rc = vx_reserve(&c->cand, &c->cand_cap, (size_t)n + 1)) < 0)
		return rc;
	for (j = 0; j <= n; j++) {
		uint32_t o = j < n ? atomic_load_explicit(&list[1 + j], memory_order_relaxed) : id;

		if ((r = vx_rec(ix, o)) != NULL)
			c->cand[m++] = (struct vx_cand){vx_dist(ix, sv, vx_vec(ix, r)), o};
	}
	vx_sort(c->cand, m);
	kept = vx_select(ix, c->cand, m, cap, ids);
	vx_list_store(ix, list, ids, kept);
	return 0;
}

static int vx_add_hnsw(struct vecindex *ix, uint64_t id, uint8_t *rec, const float *v)
{
	struct vecindex_ctx *c = ix->wctx;
	uint64_t e = atomic_load_explicit(&ix->hdr->entry, memory_order_relaxed);
	uint32_t level = vx_random_level(ix), top, cur, l, j;
	_Atomic uint32_t *list;
	uint32_t cap, st;
	float dcur;
	int rc;

	if (level > 0) {
		uint64_t up = vx_alloc(ix, (uint64_t)level * ix->l.up_size);

		if (up == 0)
			return vx_err(-ENOSPC, "the index is full (no room for upper links)");
		*(uint64_t *)(rec + ix->l.off_upper) = up;
	}
	memcpy(rec + ix->l.vec_off, v, ix->p.dim * sizeof(float));
	v = vx_vec(ix, rec);
	st = VX_READY | level << 8;
	memset(ix->nsel, 0, sizeof(ix->nsel));
	if (e & VX_ENTRY_VALID) {
		cur = (uint32_t)(e & 0xffffffffu);
		top = (uint32_t)((e >> 32) & 0xff);
		dcur = vx_dist(ix, v, vx_vec(ix, vx_rec(ix, cur)));
		for (l = top; l > level; l--)
			vx_greedy(ix, v, l, id, &cur, &dcur);
		for (l = level < top ? level : top;; l--) {
			if ((rc = vx_visit_begin(c, id)) < 0)
				return rc;
			vx_visited(c, cur);
			rc = vx_search_level(ix, c, v, cur, dcur, ix->p.ef_construction, l, false,
					     id);
			if (rc < 0)
				return rc;
			vx_max_sort(c->top, c->ntop);
			ix->nsel[l] = vx_select(ix, c->top, c->ntop, ix->p.m, ix->sel[l]);
			list = vx_links(ix, rec, st, l, &cap);
			vx_list_store(ix, list, ix->sel[l], ix->nsel[l]);
			if (c->ntop > 0) {
				cur = c->top[0].id;
				dcur = c->top[0].d;
			}
			if (l == 0)
				break;
		}
	}
	/* W1: the record is complete; W3: now others may link to it. */
	vx_persist(ix, rec, ix->l.rec_size);
	atomic_store_explicit(vx_state(ix, rec), st, memory_order_release);
	vx_persist(ix, vx_state(ix, rec), 4);
	for (l = 0; l <= level; l++)
		for (j = 0; j < ix->nsel[l]; j++)
			if ((rc = vx_backlink(ix, ix->sel[l][j], (uint32_t)id, l)) < 0)
				return rc;
	if (!(e & VX_ENTRY_VALID) || level > ((e >> 32) & 0xff)) {
		atomic_store_explicit(&ix->hdr->entry, VX_ENTRY_VALID | (uint64_t)level << 32 | id,
				      memory_order_release);
		vx_persist(ix, &ix->hdr->entry, sizeof(ix->hdr->entry));
	}
	return 0;
}

int vecindex_add(struct vecindex *ix, uint64_t label, const float *v)
{
	uint64_t id;
	uint8_t *rec;
	int rc;

	if (ix == NULL || v == NULL)
		return vx_err(-EINVAL, "add: invalid argument");
	if ((rc = vx_writer_check(ix)) < 0)
		return rc;
	if ((rc = vx_prepare(ix, v, ix->wvec, &v)) < 0)
		return rc;
	id = atomic_load_explicit(&ix->hdr->count, memory_order_relaxed);
	if (id >= ix->l.capacity)
		return vx_err(-ENOSPC, "the index is full (%llu vectors)", (unsigned long long)id);
	rec = vx_new_rec(ix, id);
	if (rec == NULL)
		return vx_err(-ENOSPC, "the index is full (%llu vectors; no room for a chunk)",
			      (unsigned long long)id);
	*(uint64_t *)(rec + ix->l.off_label) = label;
	if (ix->p.kind == VECINDEX_HNSW) {
		if ((rc = vx_add_hnsw(ix, id, rec, v)) < 0)
			return rc;
	} else {
		memcpy(rec + ix->l.vec_off, v, ix->p.dim * sizeof(float));
		vx_persist(ix, rec, ix->l.rec_size);
		atomic_store_explicit(vx_state(ix, rec), VX_READY, memory_order_release);
		vx_persist(ix, vx_state(ix, rec), 4);
	}
	/* W4: the count last. */
	atomic_store_explicit(&ix->hdr->count, id + 1, memory_order_release);
	vx_persist(ix, &ix->hdr->count, sizeof(ix->hdr->count));
	return 0;
}

int vecindex_add_batch(struct vecindex *ix, size_t n, const uint64_t *labels, const float *v)
{
	size_t i;
	int rc;

	if (ix == NULL || (n > 0 && (labels == NULL || v == NULL)))
		return vx_err(-EINVAL, "add: invalid argument");
	if (n > INT32_MAX)
		return vx_err(-EINVAL, "add: at most %d vectors a batch", INT32_MAX);
	for (i = 0; i < n; i++) {
		rc = vecindex_add(ix, labels[i], v + i * ix->p.dim);
		if (rc < 0)
			return i > 0 ? (int)i : rc;
	}
	return (int)n;
}

int vecindex_remove(struct vecindex *ix, uint64_t label)
{
	uint64_t id, n;
	int rc, removed = 0;

	if (ix == NULL)
		return vx_err(-EINVAL, "remove: invalid argument");
	if ((rc = vx_writer_check(ix)) < 0)
		return rc;
	n = atomic_load_explicit(&ix->hdr->count, memory_order_relaxed);
	for (id = 0; id < n && id < ix->l.capacity; id++) {
		uint8_t *rec = vx_rec(ix, id);
		uint32_t st;

		if (rec == NULL || vx_label(ix, rec) != label)
			continue;
		st = atomic_load_explicit(vx_state(ix, rec), memory_order_relaxed);
		if ((st & (VX_READY | VX_DELETED)) != VX_READY)
			continue;
		atomic_fetch_or_explicit(vx_state(ix, rec), VX_DELETED, memory_order_release);
		vx_persist(ix, vx_state(ix, rec), 4);
		removed++;
	}
	if (removed == 0)
		return vx_err(-ENOENT, "no vector has label %llu", (unsigned long long)label);
	atomic_fetch_add_explicit(&ix->hdr->deleted, (uint64_t)removed, memory_order_relaxed);
	vx_persist(ix, &ix->hdr->deleted, sizeof(ix->hdr->deleted));
	return removed;
}

/*
 * A writer that died between W1 and W4 left READY nodes past the count:
 * they are complete (their back-links may be partial), so count them, and
 * make the highest the entry point if it tops the graph.
 */
static void vx_recover(struct vecindex *ix)
{
	uint64_t n = atomic_load_explicit(&ix->hdr->count, memory_order_relaxed);
	uint64_t e = atomic_load_explicit(&ix->hdr->entry, memory_order_relaxed);
	uint8_t *rec;
	uint32_t st;

	while (n < ix->l.capacity && (rec = vx_rec(ix, n)) != NULL && (st = vx_ready(ix, rec))) {
		if (ix->p.kind == VECINDEX_HNSW &&
		    (!(e & VX_ENTRY_VALID) || VX_LEVEL(st) > ((e >> 32) & 0xff))) {
			e = VX_ENTRY_VALID | (uint64_t)VX_LEVEL(st) << 32 | n;
			atomic_store_explicit(&ix->hdr->entry, e, memory_order_release);
		}
		atomic_store_explicit(&ix->hdr->count, ++n, memory_order_release);
	}
}

int vecindex_writer_acquire(struct vecindex *ix, uint32_t owner, unsigned flags,
			    uint32_t *ret_owner)
{
	uint64_t nonce, token, cur = 0, at;

	if (ix == NULL || owner == 0 || (flags & ~VECINDEX_TAKEOVER))
		return vx_err(-EINVAL, "writer: invalid argument");
	if (ix->token != 0)
		return 0;
	at = atomic_load_explicit(&ix->hdr->alloc, memory_order_relaxed);
	if (at < ix->l.data_off || at > ix->size)
		return vx_err(-EBADMSG, "vector index is corrupt (allocation pointer)");
	if (ix->wctx == NULL && vecindex_ctx_new(&ix->wctx) < 0)
		return -ENOMEM;
	if (ix->wvec == NULL && (ix->wvec = malloc(ix->p.dim * sizeof(float))) == NULL)
		return vx_err(-ENOMEM, "out of memory");
	if (ix->sel == NULL && (ix->sel = calloc(VX_MAX_LEVEL + 1, sizeof(*ix->sel))) == NULL)
		return vx_err(-ENOMEM, "out of memory");
	nonce = (uintptr_t)ix ^ (uintptr_t)&nonce;
	nonce = vx_splitmix(&nonce) & 0xffffffffu;
	token = (uint64_t)owner << 32 | (nonce ? nonce : 1);
	while (!atomic_compare_exchange_strong_explicit(
	    &ix->hdr->writer, &cur, token, memory_order_acq_rel, memory_order_acquire)) {
		/* cur now holds the holder's token: take it only if told it is dead. */
		if (!(flags & VECINDEX_TAKEOVER)) {
			if (ret_owner != NULL)
				*ret_owner = (uint32_t)(cur >> 32);
			return vx_err(-EBUSY, "owner %u holds the writer token",
				      (unsigned)(cur >> 32));
		}
	}
	vx_persist(ix, &ix->hdr->writer, sizeof(ix->hdr->writer));
	ix->token = token;
	vx_recover(ix);
	return 0;
}

int vecindex_writer_release(struct vecindex *ix)
{
	uint64_t token;

	if (ix == NULL || ix->token == 0)
		return 0;
	token = ix->token;
	ix->token = 0;
	if (!atomic_compare_exchange_strong_explicit(&ix->hdr->writer, &token, 0,
						     memory_order_release, memory_order_relaxed))
		return vx_err(-EPERM, "the writer token had been taken over");
	vx_persist(ix, &ix->hdr->writer, sizeof(ix->hdr->writer));
	return 0;
}

void vecindex_stat(const struct vecindex *ix, struct vecindex_stat *ret)
{
	uint64_t e = atomic_load_explicit(&ix->hdr->entry, memory_order_acquire);

	memset(ret, 0, sizeof(*ret));
	ret->params = ix->p;
	ret->count = atomic_load_explicit(&ix->hdr->count, memory_order_acquire);
	ret->deleted = atomic_load_explicit(&ix->hdr->deleted, memory_order_relaxed);
	ret->capacity = ix->l.capacity;
	ret->used = atomic_load_explicit(&ix->hdr->alloc, memory_order_relaxed);
	ret->size = ix->size;
	ret->writer = atomic_load_explicit(&ix->hdr->writer, memory_order_relaxed);
	ret->levels = (e & VX_ENTRY_VALID) ? (uint32_t)((e >> 32) & 0xff) + 1 : 0;
}

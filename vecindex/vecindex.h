/*
 * vecindex/vecindex.h - a vector index (flat or HNSW) laid out in one memory
 * range.
 *
 * The index lives wholly inside [base, base + size): a header, a table of
 * chunk offsets and the chunks, with offsets instead of pointers, so that
 * any process may map the range at any address and search it in place.
 * Many threads and processes search while one writer (the holder of the
 * writer token in the header) adds and removes; readers take no locks.
 * The layout and the memory-ordering rules are described in vecindex.c.
 *
 * It depends on nothing else in the project: libpool uses it on a mapped
 * pool region, the unit tests on malloc'd memory, and poold will link it
 * to search near the data. Functions return 0 (or a count) or -errno and
 * leave a message for vecindex_errmsg().
 */
#ifndef LIBPOOL_VECINDEX_H
#define LIBPOOL_VECINDEX_H

#include <stddef.h>
#include <stdint.h>

#define VECINDEX_FLAT 1
#define VECINDEX_HNSW 2

#define VECINDEX_L2 1	  /* squared Euclidean distance */
#define VECINDEX_IP 2	  /* 1 - dot product */
#define VECINDEX_COSINE 3 /* 1 - cosine similarity; vectors normalised when added */

#define VECINDEX_DIM_MAX 4096
#define VECINDEX_K_MAX 1024
#define VECINDEX_EF_MAX 4096
#define VECINDEX_M_MIN 2
#define VECINDEX_M_MAX 128

/* Defaults of the HNSW parameters. */
#define VECINDEX_M_DEFAULT 16
#define VECINDEX_EFC_DEFAULT 200
#define VECINDEX_EFS_DEFAULT 64

/* vecindex_writer_acquire() flags */
#define VECINDEX_TAKEOVER 0x1 /* the current holder is known to be dead: take its token */

struct vecindex;
struct vecindex_ctx;

struct vecindex_params {
	uint32_t kind;	 /* VECINDEX_FLAT or VECINDEX_HNSW */
	uint32_t metric; /* VECINDEX_L2, _IP or _COSINE */
	uint32_t dim;	 /* 1 .. VECINDEX_DIM_MAX */
	uint32_t m;	 /* HNSW: links per node on the upper levels, twice that on level 0 */
	uint32_t ef_construction; /* HNSW: candidates kept while linking a new node */
	uint32_t ef_search;	  /* HNSW: candidates kept while searching (at least k) */
	uint64_t seed;		  /* HNSW: of the level generator; 0 for a fixed one */
};

struct vecindex_stat {
	struct vecindex_params params;
	uint64_t count;	   /* vectors added, removed ones included */
	uint64_t deleted;  /* removed (tombstones) */
	uint64_t capacity; /* ids the chunk table has room for: an upper bound */
	uint64_t used;	   /* bytes of the range in use */
	uint64_t size;	   /* bytes of the range */
	uint64_t writer;   /* the writer token (0: none); its high 32 bits are the owner's pid */
	uint32_t levels;   /* HNSW: levels of the graph */
};

/* Fill in the defaults for a kind, metric and dimension. */
void vecindex_params_init(struct vecindex_params *p, uint32_t kind, uint32_t metric, uint32_t dim);
/* Check parameters; 0 or -EINVAL with a message. */
int vecindex_params_check(const struct vecindex_params *p);
/* Bytes a range needs to hold n vectors (HNSW: with the expected upper levels). */
int vecindex_size(const struct vecindex_params *p, uint64_t n, uint64_t *ret_size);

/* Lay out an empty index in [base, base + size), which must be 64-byte aligned. */
int vecindex_create(void *base, uint64_t size, const struct vecindex_params *p);

/*
 * Open the index in [base, base + size): check its header and take its
 * parameters into a private handle, which later reads of the range never
 * trust over. persist (NULL for DRAM) makes a written range durable and is
 * called by the writer in publication order.
 */
int vecindex_open(void *base, uint64_t size, void (*persist)(const void *p, size_t len),
		  struct vecindex **ret);
/* Close a handle, releasing the writer token if it holds it. */
void vecindex_close(struct vecindex *ix);

/*
 * The writer token: a compare-and-swap of the header's writer word from 0
 * to (owner << 32 | nonce). -EBUSY (and *ret_owner, if not NULL, the
 * holder's owner) while another handle holds it, unless VECINDEX_TAKEOVER
 * says that holder is dead. Adds and removes need it.
 */
int vecindex_writer_acquire(struct vecindex *ix, uint32_t owner, unsigned flags,
			    uint32_t *ret_owner);
int vecindex_writer_release(struct vecindex *ix);

/* Add one vector of dim floats under a 64-bit label (labels need not be unique). */
int vecindex_add(struct vecindex *ix, uint64_t label, const float *v);
/* Add n vectors (n * dim floats); the number added, fewer than n only if the next one failed. */
int vecindex_add_batch(struct vecindex *ix, size_t n, const uint64_t *labels, const float *v);
/* Tombstone every vector under label: how many, or -ENOENT. */
int vecindex_remove(struct vecindex *ix, uint64_t label);

/* Scratch memory for searches: one per thread, reused across searches. */
int vecindex_ctx_new(struct vecindex_ctx **ret);
void vecindex_ctx_free(struct vecindex_ctx *ctx);

/*
 * The k nearest vectors to q, nearest first: labels and distances (dists
 * may be NULL); the number found (fewer than k when the index holds fewer
 * live vectors, or when corruption cut the walk short). ef: HNSW
 * candidates (0: the index's ef_search; at least k).
 */
int vecindex_search(const struct vecindex *ix, struct vecindex_ctx *ctx, const float *q, unsigned k,
		    unsigned ef, uint64_t *ret_labels, float *ret_dists);
/*
 * n queries (n * dim floats): query i's results at [i * k, i * k + k) of the
 * arrays, its count in ret_counts[i]; unused slots get label UINT64_MAX and
 * distance +inf. 0 or the first error.
 */
int vecindex_search_batch(const struct vecindex *ix, struct vecindex_ctx *ctx, size_t n,
			  const float *q, unsigned k, unsigned ef, uint64_t *ret_labels,
			  float *ret_dists, unsigned *ret_counts);

void vecindex_stat(const struct vecindex *ix, struct vecindex_stat *ret);
/* The distance kernels in use ("avx512", "avx2", "sse", "generic"). */
const char *vecindex_simd(const struct vecindex *ix);
/* The calling thread's message for its last failed call. */
const char *vecindex_errmsg(void);

#endif

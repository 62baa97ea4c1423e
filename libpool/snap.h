/*
 * libpool/snap.h - what the snapshot files of libpool share (snap.c: the
 * store and the manifest; snapcopy.c: the node's shared copy and clones;
 * snapuffd.c: lazy restores through userfaultfd; snapsave.c and
 * snapvmsave.c: saves of running clones and served VMMs). Nothing here is
 * exported.
 *
 * A snapshot NAME is a manifest region "snap/NAME" (class pinned, or
 * persistent for persistent snapshots) laid out as:
 *
 *   [0, 4096)            struct snap_header
 *   [hashes_off, ...)    npages page hashes, 16 bytes each (XXH3-128 of
 *                        the page); all zero for a zero page
 *   [ws_off, ...)        the recorded working set: ws_len page indexes
 *                        (uint32_t), room for npages
 *   [state_off, ...)     the state blob, state_len bytes
 *
 * The pages live in a KV namespace with reference counts (SNAP_NS_PINNED
 * or SNAP_NS_PERSISTENT), the hash being the key: a put of a page already
 * there only counts one more reference, held by the manifest region the
 * put names; the coordinator drops the region's references when the
 * region goes, and frees a value nobody holds. Each snapshot holds one
 * reference per distinct page.
 */
#ifndef LIBPOOL_SNAP_H
#define LIBPOOL_SNAP_H

#include <stdint.h>

#include "libpool/internal.h"

struct uffd_server;

#define SNAP_MAGIC UINT64_C(0x50414e534c4f4f50) /* "POOLSNAP" */
#define SNAP_VERSION 1
#define SNAP_HDR_LEN 4096
#define SNAP_HASH_LEN 16
#define SNAP_PREFIX "snap/"
#define SNAP_NS_PINNED "snap.pages"
#define SNAP_NS_PERSISTENT "snap.ppages"
#define SNAP_NS_SHARED "snap.shared"

enum { SNAP_WRITING = 1, SNAP_SEALED = 2 };
#define SNAP_F_PERSISTENT 0x1u
#define SNAP_F_SHARED 0x2u /* class shared: its pages dedup across uids (SNAP_NS_SHARED) */

struct snap_header {
	uint64_t magic;
	uint32_t version;
	uint32_t state; /* SNAP_WRITING until every page is stored */
	uint64_t id;	/* random, per put: names this image among node copies */
	uint64_t image_len;
	uint64_t page_size;
	uint64_t npages;
	uint64_t zero_pages, distinct, new_pages;
	uint64_t created_ms;
	uint32_t uid, flags;
	uint64_t hashes_off, ws_off, ws_len, ws_runs, state_off, state_len;
	char parent[64];
};

/* An open snapshot: its manifest read once (a snapshot never changes but for its working set). */
struct pool_snap {
	struct pool *pool;
	char name[POOL_SNAP_NAME_MAX + 1];
	struct pool_region *manifest;
	struct snap_header hdr;
	/*
	 * npages * SNAP_HASH_LEN, read from the manifest a chunk of
	 * SNAP_HASH_CHUNK pages at a time as pages are asked for (snap_hash()):
	 * a restore's first fault waits for 64 KiB, not for the whole list
	 * (8 MiB for 2 GiB). have[c]: chunk c is read (atomic); hash_lock:
	 * one reader of the manifest at a time.
	 */
	uint8_t *hashes;
	uint8_t *have;
	pthread_mutex_t hash_lock;
	struct pool_kv *pages;
	struct snap_lazy *lazy; /* the thread behind the lazy clones, while it runs */
	int stop;		/* pool_snap_serve_stop() asked (atomic) */
	int stop_fd;		/* the eventfd that wakes a serve; -1 until one ran */
};

/* snap.c */
#define SNAP_BATCH 512	     /* pages per request to the store */
#define SNAP_HASH_CHUNK 4096 /* pages whose hashes are read from a manifest at once */
/* Page p's hash in *ret, its chunk read first: 0 or -errno. */
int snap_hash(struct pool_snap *snap, uint64_t p, const uint8_t **ret);
/* Every page's hash read: 0 or -errno. */
int snap_hashes_all(struct pool_snap *snap);

/*
 * Where a put reads page p of its image: from over, at slot[p], when the
 * page has a slot there (a save's written pages), else from image.
 */
struct snap_pages {
	const uint8_t *image;
	const uint8_t *over;
	const uint32_t *slot; /* per page, or NULL: no page is over */
};
#define SNAP_NO_SLOT UINT32_MAX

static inline const uint8_t *snap_page(const struct snap_pages *src, uint64_t p, uint64_t page_size)
{
	if (src->slot != NULL && src->slot[p] != SNAP_NO_SLOT)
		return src->over + (uint64_t)src->slot[p] * page_size;
	return src->image + p * page_size;
}

/*
 * Put the image of len bytes that src reads as snapshot name, made with
 * opts (NULL: the defaults). With parent, a save of a clone of it: its page
 * size and its name as the parent, and, where the new snapshot keys pages
 * as parent does (snap_same_keys()), a page with no slot in src takes
 * parent's key instead of being hashed.
 */
int snap_put_pages(struct pool *pool, const char *name, const struct snap_pages *src, uint64_t len,
		   struct pool_snap *parent, const struct pool_snap_opts *opts);
bool snap_same_keys(const struct snap_header *hdr, const struct pool_snap_opts *opts);
bool snap_zero_hash(const uint8_t *hash);
/*
 * Fetch n pages (indexes into the image) from the store into bufs[i]
 * (page_size bytes each), in batches: zero pages are zeroed here.
 */
int snap_fetch(struct pool_snap *snap, size_t n, const uint64_t *pages, void *const *bufs);
/*
 * Page p's bytes where they lie (pool_kv_acquire(): in place in a local
 * arena, else copied here), *ret_ref to release; for a zero page *ret_data
 * and *ret_ref are NULL. 0, or -errno (POOL_ELOST: not in the store).
 */
int snap_page_acquire(struct pool_snap *snap, uint64_t p, const uint8_t **ret_data,
		      struct pool_kv_ref **ret_ref);
/*
 * Pages [first, first + n) of the image (n at most SNAP_BATCH) into the
 * memfd fd at their offsets, through bounce (n pages). With pwrite(2),
 * not through a mapping: a page the kernel adds to a memfd for a store
 * through a mapping is visible to the clones that map it, zeroed, before
 * its bytes are in; pwrite keeps it locked until it holds them all.
 */
int snap_fill_fd(struct pool_snap *snap, int fd, uint64_t first, size_t n, void *bounce);
/*
 * The same for the listed pages (at most SNAP_BATCH), in any order;
 * between(arg), if not NULL, is called before the writes, and before each
 * SNAP_FILL_WRITE_BYTES of a larger page (a 2 MiB page in four): a -errno
 * from it ends the fill.
 */
#define SNAP_FILL_WRITE_BYTES (512u << 10)
int snap_fill_pages(struct pool_snap *snap, int fd, const uint64_t *pages, size_t n, void *bounce,
		    int (*between)(void *arg), void *arg);
/*
 * The recorded working set (malloc'd, *ret_n entries), and adding a restore's first touches to it.
 */
int snap_ws_load(struct pool_snap *snap, uint32_t **ret_pages, size_t *ret_n);
int snap_ws_merge(struct pool_snap *snap, const uint64_t *pages, size_t n);

/* snapcopy.c */
/* The node's shared copy: a sealed memfd of the image, made here if the node has none. */
int snap_copy_fd(struct pool_snap *snap, int *ret_fd);
/* What poold's answer to a get makes of this client. */
enum snap_copy_as {
	COPY_READY,   /* the copy is ready: map it */
	COPY_TO_FILL, /* the copy is empty: this client fills it */
	COPY_FILLING, /* lazy: another client fills it now */
};
/* The node's copy as poold hands it (lazy: without waiting for another's fill). */
int snap_copy_get(struct pool_snap *snap, bool lazy, int *ret_fd, enum snap_copy_as *ret_as);
/*
 * Whether the copy this client maps (the memfd of inode ino) is ready: 1;
 * 0 while it fills; -ESTALE when it never will be, or -errno.
 */
int snap_copy_state(struct pool_snap *snap, uint64_t ino);
/* Fill the empty copy poold handed us (fd), and hand it back; done or abort. */
int snap_copy_fill(struct pool_snap *snap, int fd);
int snap_copy_end(struct pool_snap *snap, bool done);
/* A clone: a private, writable mapping of the copy fd. */
int snap_clone_map(struct pool_snap *snap, int fd, void **ret_addr);

/* snapbase.c: a snapshot of 2 MiB pages served in base pages */
struct snap_base {
	struct pool_snap *snap;
	uint64_t per;		 /* base pages in a snapshot page */
	uint64_t held;		 /* the snapshot page in reach, or UINT64_MAX */
	struct pool_kv_ref *ref; /* its value, acquired (NULL: a page of zeros) */
	const uint8_t *data;	 /* its bytes */
};
/*
 * Base pages per snapshot page for the page server of a range: 1 when the
 * snapshot's pages are base pages, or the range's are huge (hugetlbfs),
 * and pages are placed as they are stored.
 */
uint64_t snap_base_per(const struct pool_snap *snap, bool huge_range);
int snap_base_new(struct pool_snap *snap, uint64_t per, struct snap_base **ret);
void snap_base_free(struct snap_base *b);
/* A uffd_fetch_fn over a struct snap_base: base pages, read from the snapshot page they are in. */
int snap_base_fetch(void *arg, size_t n, const uint64_t *pages, void *const *bufs);
/*
 * A list of base pages as snapshot pages (pages[i] / per), or with expand
 * a list of snapshot pages as the base pages in them; malloc'd (NULL: no
 * memory), its length in *ret_n.
 */
uint64_t *snap_base_pages(const uint64_t *pages, size_t n, uint64_t per, bool expand,
			  size_t *ret_n);

/* snapvmsave.c: a served VMM saved (pool_snap_serve() with POOL_SNAP_TRACK) */
#define SNAPVM_LINE_MAX 255 /* bytes of a request line */
/* A save request read from a client of the serve socket. */
struct snapvm_ctl {
	char line[SNAPVM_LINE_MAX + 1];
	size_t len;
	pid_t vmm;			   /* parsed: whose memory to save, */
	char name[POOL_SNAP_NAME_MAX + 1]; /* and as what */
};
struct snapvm_copies;
struct snapvm_job;
/*
 * Read what sock has of a request: 0 when it is whole and parsed, -EAGAIN
 * while more is to come, or -errno with err (answer it, close).
 */
int snapvm_ctl_read(struct snapvm_ctl *ctl, int sock, char *err, size_t errlen);
/* Answer a request: one line, fmt and a newline. */
void snapvm_reply(int sock, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Save the VMM that s serves as ctl->name: the pages it wrote since its
 * last save are taken now, at one instant (the VMM held that long), each
 * given its place in *copies (made at the first save). 0 with *ret_job,
 * which owns sock from then on, or -errno with err, sock still the
 * caller's. Then, while snapvm_job_copying(), snapvm_job_copy() with the
 * VMM's server (NULL once it is gone) between rounds reads the next of
 * them: 1 while more are to be read, 0 once they are and a thread stores
 * the snapshot over parent (pages that stayed read from image; NULL: the
 * node's copy), -1 when the save failed (answered, the job freed). When
 * snapvm_job_fd() is readable the store is done: snapvm_job_end() answers
 * and frees the job (at any time: a save not read whole fails).
 */
int snapvm_save_start(struct pool_snap *parent, const void *image, struct uffd_server *s,
		      struct snapvm_copies **copies, const struct snapvm_ctl *ctl, int sock,
		      struct snapvm_job **ret_job, char *err, size_t errlen);
pid_t snapvm_job_vmm(const struct snapvm_job *job);
bool snapvm_job_copying(const struct snapvm_job *job);
int snapvm_job_copy(struct snapvm_job *job, struct uffd_server *s);
int snapvm_job_fd(const struct snapvm_job *job);
void snapvm_job_end(struct snapvm_job *job);
void snapvm_copies_drop(struct snapvm_copies *copies);

/* snaplazy.c */
/* Wait for the thread behind the lazy clones, if one runs: 0, or why it failed. */
int snap_lazy_wait(struct pool_snap *snap);
/* Drop the node's copies of a snapshot (pool_snap_remove); what clients mapped stays. */
int snap_copy_drop(struct pool *pool, const char *name);

#endif

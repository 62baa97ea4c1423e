/*
 * libpool/snap.c - the snapshot store: putting an image, reading it back,
 * what a snapshot is, removing it. The layout is in snap.h.
 *
 * A put hashes every page here (XXH3-128), so the pool sees only the
 * pages it does not have yet: the page store is a dedup KV namespace kept
 * by the coordinator, and putting a page it has costs one reference and
 * no transfer. The references are the manifest region's: the coordinator
 * records them with the region and drops them when the region goes. So a
 * remove is the destruction of the manifest, whoever runs it and whatever
 * state the put was in (one that died midway leaves a SNAP_WRITING
 * manifest, which cannot be opened), and nobody can drop a reference to a
 * page but by destroying a manifest they may destroy.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/common.h"
#include "libpool/snap.h"

#define SNAP_PUT_RETRY_MS 5000 /* how long a page another put is writing may take */

struct pool_snap_opts {
	uint64_t page_size;
	unsigned mode;
	char cls[16];
	char parent[64];
	void *state;
	size_t state_len;
	bool diff; /* pool_snap_put_fd(): the file holds the pages changed since parent */
};

struct pool_snap_info {
	struct snap_header hdr;
};

POOL_EXPORT int pool_snap_opts_new(struct pool_snap_opts **ret_opts)
{
	struct pool_snap_opts *o;

	if (ret_opts == NULL)
		return pool_err(-EINVAL, "pool_snap_opts_new: invalid argument");
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		return pool_err(-ENOMEM, "out of memory");
	o->page_size = 4096;
	o->mode = 0600;
	strcpy(o->cls, "pinned");
	*ret_opts = o;
	return 0;
}

POOL_EXPORT void pool_snap_opts_free(struct pool_snap_opts *opts)
{
	if (opts == NULL)
		return;
	free(opts->state);
	free(opts);
}

POOL_EXPORT int pool_snap_opts_set_page_size(struct pool_snap_opts *opts, uint64_t page_size)
{
	if (opts == NULL || (page_size != 4096 && page_size != (2u << 20)))
		return pool_err(-EINVAL, "snapshot page size: 4096 or 2M");
	opts->page_size = page_size;
	return 0;
}

POOL_EXPORT int pool_snap_opts_set_class(struct pool_snap_opts *opts, const char *cls)
{
	if (opts == NULL || cls == NULL ||
	    (strcmp(cls, "pinned") != 0 && strcmp(cls, "persistent") != 0 &&
	     strcmp(cls, "shared") != 0))
		return pool_err(-EINVAL, "snapshot class: pinned, persistent or shared");
	strcpy(opts->cls, cls);
	return 0;
}

POOL_EXPORT int pool_snap_opts_set_mode(struct pool_snap_opts *opts, unsigned mode)
{
	if (opts == NULL || mode > 0777)
		return pool_err(-EINVAL, "snapshot mode: at most 0777");
	opts->mode = mode;
	return 0;
}

POOL_EXPORT int pool_snap_opts_set_parent(struct pool_snap_opts *opts, const char *parent)
{
	if (opts == NULL || parent == NULL || strlen(parent) > POOL_SNAP_NAME_MAX)
		return pool_err(-EINVAL, "snapshot parent: at most %d bytes", POOL_SNAP_NAME_MAX);
	strcpy(opts->parent, parent);
	return 0;
}

POOL_EXPORT int pool_snap_opts_set_diff(struct pool_snap_opts *opts, int diff)
{
	if (opts == NULL)
		return pool_err(-EINVAL, "pool_snap_opts_set_diff: invalid argument");
	opts->diff = diff != 0;
	return 0;
}

POOL_EXPORT int pool_snap_opts_set_state(struct pool_snap_opts *opts, const void *state, size_t len)
{
	void *copy = NULL;

	if (opts == NULL || (state == NULL && len > 0) || len > POOL_SNAP_STATE_MAX)
		return pool_err(-EINVAL, "snapshot state: at most 64 MiB");
	if (len > 0 && (copy = malloc(len)) == NULL)
		return pool_err(-ENOMEM, "out of memory");
	if (len > 0)
		memcpy(copy, state, len);
	free(opts->state);
	opts->state = copy;
	opts->state_len = len;
	return 0;
}

bool snap_zero_hash(const uint8_t *hash)
{
	static const uint8_t zero[SNAP_HASH_LEN];

	return memcmp(hash, zero, SNAP_HASH_LEN) == 0;
}

static bool page_is_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

/*
 * A page's key: the writer's uid (4 bytes, big-endian), then the first 12
 * bytes of XXH3-128 of the page in its canonical form. poold stores a page
 * only under its writer's own keys, so dedup stays within one uid and no
 * one's put can plant the page another uid's snapshot would find. A zero
 * page has the all-zero key and is not stored; a key that happens to be
 * all zero gets its last bit set, the same every time. In the shared class
 * the key is the page's SHA-256 (page_key_shared()), which poold checks
 * against the bytes before another uid's put can find them.
 */
static int page_hash(const uint8_t *p, size_t len, uid_t uid, bool shared, uint8_t *out)
{
	XXH128_canonical_t c;

	if (page_is_zero(p, len)) {
		memset(out, 0, SNAP_HASH_LEN);
		return 0;
	}
	if (shared)
		return page_key_shared(p, len, out) < 0 ? pool_err(-EIO, "SHA-256 failed") : 0;
	XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
	out[0] = (uint8_t)(uid >> 24);
	out[1] = (uint8_t)(uid >> 16);
	out[2] = (uint8_t)(uid >> 8);
	out[3] = (uint8_t)uid;
	memcpy(out + 4, c.digest, SNAP_HASH_LEN - 4);
	if (snap_zero_hash(out))
		out[SNAP_HASH_LEN - 1] = 1;
	return 0;
}

static int snap_region_name(const char *name, char *out)
{
	if (!name_ok(name, POOL_SNAP_NAME_MAX, false))
		return pool_err(-EINVAL, "snapshot name '%s': 1-%d characters of [A-Za-z0-9._:-]",
				name != NULL ? name : "", POOL_SNAP_NAME_MAX);
	snprintf(out, 64, SNAP_PREFIX "%s", name);
	return 0;
}

static const char *snap_ns(const struct snap_header *h)
{
	return h->flags & SNAP_F_PERSISTENT ? SNAP_NS_PERSISTENT
	       : h->flags & SNAP_F_SHARED   ? SNAP_NS_SHARED
					    : SNAP_NS_PINNED;
}

/* Where things go in a manifest of npages, and its size. */
static uint64_t snap_layout(struct snap_header *h)
{
	h->hashes_off = SNAP_HDR_LEN;
	h->ws_off = h->hashes_off + h->npages * SNAP_HASH_LEN;
	h->state_off = h->ws_off + h->npages * sizeof(uint32_t);
	return (h->state_off + h->state_len + 4095) & ~UINT64_C(4095);
}

struct snap_ref {
	const uint8_t *hash;
	uint64_t page;
};

static int ref_cmp_hash(const void *a, const void *b)
{
	const struct snap_ref *x = a, *y = b;
	int c = memcmp(x->hash, y->hash, SNAP_HASH_LEN);

	return c != 0 ? c : x->page < y->page ? -1 : x->page > y->page;
}

static int ref_cmp_page(const void *a, const void *b)
{
	const struct snap_ref *x = a, *y = b;

	return x->page < y->page ? -1 : x->page > y->page;
}

/*
 * The distinct non-zero pages of an image, each by its first use, in image
 * order: what a snapshot holds a reference to.
 */
static int snap_distinct(const uint8_t *hashes, uint64_t npages, struct snap_ref **ret,
			 size_t *ret_n)
{
	struct snap_ref *r = malloc((npages ? npages : 1) * sizeof(*r));
	size_t n = 0, i, k = 0;

	if (r == NULL)
		return pool_err(-ENOMEM, "out of memory");
	for (i = 0; i < npages; i++)
		if (!snap_zero_hash(hashes + i * SNAP_HASH_LEN))
			r[n++] = (struct snap_ref){hashes + i * SNAP_HASH_LEN, i};
	qsort(r, n, sizeof(*r), ref_cmp_hash);
	for (i = 0; i < n; i++)
		if (k == 0 || memcmp(r[k - 1].hash, r[i].hash, SNAP_HASH_LEN) != 0)
			r[k++] = r[i];
	qsort(r, k, sizeof(*r), ref_cmp_page);
	*ret = r;
	*ret_n = k;
	return 0;
}

static int64_t snap_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Take references to a batch of distinct pages, storing those the store
 * lacks: the number stored, or -errno. Pages another put is writing now
 * (-EAGAIN) are asked for again until it commits them. known: the store
 * most likely has them all (a save's pages its parent holds).
 */
static int snap_put_batch(struct pool_kv *kv, const struct snap_pages *src, uint64_t page_size,
			  const struct snap_ref *refs, size_t n, bool known)
{
	const void *keys[SNAP_BATCH], *vals[SNAP_BATCH];
	size_t klens[SNAP_BATCH], vlens[SNAP_BATCH], i, k;
	int status[SNAP_BATCH], stored = 0, rc;
	uint64_t deadline = units_now_ms() + SNAP_PUT_RETRY_MS;

	for (i = 0; i < n; i++) {
		keys[i] = refs[i].hash;
		klens[i] = SNAP_HASH_LEN;
		vals[i] = snap_page(src, refs[i].page, page_size);
		vlens[i] = page_size;
	}
	while (n > 0) {
		rc = known ? kv_put_batch_known(kv, n, keys, klens, vals, vlens, status)
			   : pool_kv_put_batch(kv, n, keys, klens, vals, vlens, status);
		if (rc < 0)
			return rc;
		for (i = 0, k = 0; i < n; i++) {
			if (status[i] == 0) {
				stored++;
			} else if (status[i] == -EAGAIN) {
				keys[k] = keys[i];
				vals[k++] = vals[i];
			} else if (status[i] != -EEXIST) {
				return pool_err(
				    status[i], "storing a page: %s%s", pool_strerror(status[i]),
				    status[i] == -ENOSPC ? " (no room left in the store)" : "");
			}
		}
		n = k;
		if (n > 0 && units_now_ms() > deadline)
			return pool_err(-ETIMEDOUT, "a page another put is writing did not come");
		if (n > 0)
			usleep(1000);
	}
	return stored;
}

static int snap_hdr_write(struct pool_region *r, const struct snap_header *h)
{
	return pool_region_write(r, 0, h, sizeof(*h));
}

/*
 * Store the pages, their references the manifest's, and seal it. With
 * parent_keys (a save keyed as its parent), the pages src takes from the
 * parent go first, as pages the store has.
 */
static int snap_store(struct pool *pool, struct pool_region *r, const char *rname,
		      struct snap_header *h, const struct snap_pages *src, const uint8_t *hashes,
		      bool parent_keys)
{
	struct snap_ref *refs = NULL, t;
	struct pool_kv *kv;
	size_t n = 0, nknown = 0, i, k;
	int rc;

	rc = snap_distinct(hashes, h->npages, &refs, &n);
	if (rc < 0)
		return rc;
	rc = pool_kv_open(pool, snap_ns(h), &kv);
	if (rc < 0) {
		free(refs);
		return rc;
	}
	kv_set_holder(kv, rname);
	h->distinct = n;
	for (i = 0; parent_keys && i < n; i++)
		if (src->slot == NULL || src->slot[refs[i].page] == SNAP_NO_SLOT) {
			t = refs[nknown];
			refs[nknown++] = refs[i];
			refs[i] = t;
		}
	for (i = 0; i < n && rc >= 0; i += k) {
		k = MIN((size_t)SNAP_BATCH, (i < nknown ? nknown : n) - i);
		rc = snap_put_batch(kv, src, h->page_size, refs + i, k, i < nknown);
		if (rc >= 0)
			h->new_pages += (uint64_t)rc;
	}
	if (rc >= 0) {
		h->state = SNAP_SEALED;
		rc = snap_hdr_write(r, h);
	}
	pool_kv_close(kv);
	free(refs);
	return rc < 0 ? rc : 0;
}

static int snap_manifest_create(struct pool *pool, const char *rname, uint64_t size,
				const struct pool_snap_opts *opts, struct pool_region **ret)
{
	struct pool_region_opts *ro;
	int rc;

	rc = pool_region_opts_new(&ro);
	if (rc < 0)
		return rc;
	rc = pool_region_opts_set_size(ro, size);
	if (rc == 0) /* a shared snapshot's manifest is a pinned region */
		rc = pool_region_opts_set_class(
		    ro, strcmp(opts->cls, "persistent") == 0 ? "persistent" : "pinned");
	if (rc == 0)
		rc = pool_region_opts_set_mode(ro, opts->mode);
	/* Anonymous until its pages are stored: a put that dies leaves nothing behind. */
	if (rc == 0)
		rc = pool_region_create(pool, rname, ro, POOL_REGION_ANONYMOUS, ret);
	pool_region_opts_free(ro);
	return rc;
}

static const struct pool_snap_opts snap_defaults = {4096, 0600, "pinned", "", NULL, 0, false};

POOL_EXPORT int pool_snap_put(struct pool *pool, const char *name, const void *image, uint64_t len,
			      const struct pool_snap_opts *opts)
{
	struct snap_pages src = {image, NULL, NULL};

	if (pool == NULL || (image == NULL && len > 0))
		return pool_err(-EINVAL, "pool_snap_put: invalid argument");
	if (opts != NULL && opts->diff)
		return pool_err(-EINVAL, "a diff snapshot is put from its sparse file "
					 "(pool_snap_put_fd)");
	return snap_put_pages(pool, name, &src, len, NULL, opts);
}

/* Whether a put with opts keys its pages as a snapshot of hdr's did (same uid and class). */
bool snap_same_keys(const struct snap_header *hdr, const struct pool_snap_opts *opts)
{
	if (opts == NULL)
		opts = &snap_defaults;
	return hdr->uid == geteuid() &&
	       !(hdr->flags & SNAP_F_SHARED) == (strcmp(opts->cls, "shared") != 0);
}

/*
 * A save starts with its parent's working set (the same image pages, the
 * sandbox running on from it touches them too): its first lazy clone on a
 * node fills them first. Best effort: without it a save is only slower to
 * fork on a new node.
 */
static void snap_ws_inherit(struct pool_snap *parent, struct pool_region *r, struct snap_header *h)
{
	uint32_t *ws = NULL;
	size_t n = 0;

	if (snap_ws_load(parent, &ws, &n) == 0 && n > 0 && n <= h->npages &&
	    pool_region_write(r, h->ws_off, ws, n * sizeof(*ws)) == 0) {
		h->ws_len = n;
		h->ws_runs = parent->hdr.ws_runs > 0 ? parent->hdr.ws_runs : 1;
	}
	free(ws);
}

/* Put the image src reads as snapshot name (see snap.h). */
int snap_put_pages(struct pool *pool, const char *name, const struct snap_pages *src, uint64_t len,
		   struct pool_snap *parent, const struct pool_snap_opts *opts)
{
	struct snap_header h = {0};
	struct pool_region *r;
	const uint8_t *known = NULL;
	uint8_t *hashes;
	char rname[POOL_REGION_NAME_MAX + 1];
	uint64_t i, page_size;
	int rc;

	if (opts == NULL)
		opts = &snap_defaults;
	page_size = parent != NULL ? parent->hdr.page_size : opts->page_size;
	rc = snap_region_name(name, rname);
	if (rc < 0)
		return rc;
	if (len == 0 || len % page_size != 0 || len / page_size > UINT32_MAX)
		return pool_err(-EINVAL,
				"snapshot image of %llu bytes: a multiple of the page size "
				"(%llu), at most 2^32 pages",
				(unsigned long long)len, (unsigned long long)page_size);
	if (parent != NULL && snap_same_keys(&parent->hdr, opts)) {
		rc = snap_hashes_all(parent);
		if (rc < 0)
			return rc;
		known = parent->hashes;
	}
	h.magic = SNAP_MAGIC;
	h.version = SNAP_VERSION;
	h.state = SNAP_WRITING;
	if (getrandom(&h.id, sizeof(h.id), 0) != sizeof(h.id))
		return pool_err(-errno, "getrandom: %s", strerror(errno));
	h.image_len = len;
	h.page_size = page_size;
	h.npages = len / page_size;
	h.created_ms = (uint64_t)snap_now_ms();
	h.uid = geteuid(); /* as poold sees it (SO_PEERCRED): the pages' keys start with it */
	h.flags = strcmp(opts->cls, "persistent") == 0 ? SNAP_F_PERSISTENT
		  : strcmp(opts->cls, "shared") == 0   ? SNAP_F_SHARED
						       : 0;
	h.state_len = opts->state_len;
	snprintf(h.parent, sizeof(h.parent), "%s", parent != NULL ? parent->name : opts->parent);
	hashes = malloc(h.npages * SNAP_HASH_LEN);
	if (hashes == NULL)
		return pool_err(-ENOMEM, "out of memory");
	for (i = 0, rc = 0; i < h.npages && rc == 0; i++) {
		if (known != NULL && src->slot[i] == SNAP_NO_SLOT)
			memcpy(hashes + i * SNAP_HASH_LEN, known + i * SNAP_HASH_LEN,
			       SNAP_HASH_LEN);
		else
			rc = page_hash(snap_page(src, i, h.page_size), h.page_size, h.uid,
				       h.flags & SNAP_F_SHARED, hashes + i * SNAP_HASH_LEN);
		h.zero_pages += snap_zero_hash(hashes + i * SNAP_HASH_LEN);
	}
	if (rc < 0)
		goto out;
	rc = snap_manifest_create(pool, rname, snap_layout(&h), opts, &r);
	if (rc < 0)
		goto out;
	if (parent != NULL)
		snap_ws_inherit(parent, r, &h);
	rc = snap_hdr_write(r, &h);
	if (rc == 0)
		rc = pool_region_write(r, h.hashes_off, hashes, h.npages * SNAP_HASH_LEN);
	if (rc == 0 && h.state_len > 0)
		rc = pool_region_write(r, h.state_off, opts->state, h.state_len);
	if (rc == 0)
		rc = snap_store(pool, r, rname, &h, src, hashes, known != NULL);
	if (rc == 0)
		rc = pool_region_keep(pool, rname); /* sealed: it stays */
	pool_region_close(r); /* unless kept, the manifest and its references go with its lease */
out:
	free(hashes);
	return rc;
}

/*
 * A diff snapshot, as Firecracker writes one (snapshot_type Diff): a sparse
 * file of the guest's full size whose data are the pages written since the
 * parent, its holes the pages that stayed. The image is the parent's with
 * the file's data laid over it (what Firecracker's rebase tool makes of
 * the two files), put as any image: the unchanged pages are the parent's,
 * already in the store, so only the changed ones are sent.
 */
static int snap_put_diff(struct pool *pool, const char *name, int fd, uint64_t len,
			 const struct pool_snap_opts *opts)
{
	struct pool_snap_opts full = *opts;
	struct pool_snap *parent;
	uint8_t *image;
	off_t data = 0, hole = 0;
	int rc;

	if (opts->parent[0] == '\0')
		return pool_err(-EINVAL, "a diff snapshot needs its parent (the snapshot it was "
					 "taken on top of)");
	rc = pool_snap_open(pool, opts->parent, &parent);
	if (rc < 0)
		return rc;
	if (parent->hdr.image_len != len || parent->hdr.page_size != opts->page_size) {
		rc = pool_err(-EINVAL,
			      "diff snapshot of %llu bytes in %llu-byte pages: its parent "
			      "'%s' has %llu bytes in %llu-byte pages",
			      (unsigned long long)len, (unsigned long long)opts->page_size,
			      opts->parent, (unsigned long long)parent->hdr.image_len,
			      (unsigned long long)parent->hdr.page_size);
		goto out_close;
	}
	image = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image == MAP_FAILED) {
		rc = pool_err(-errno, "snapshot image: %s", strerror(errno));
		goto out_close;
	}
	rc = pool_snap_read(parent, 0, image, len);
	while (rc == 0 && (data = lseek(fd, hole, SEEK_DATA)) >= 0) {
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > len) {
			rc = pool_err(-EIO, "diff snapshot: the file changed while read");
			break;
		}
		for (off_t at = data; at < hole && rc == 0;) {
			ssize_t n = pread(fd, image + at, (size_t)(hole - at), at);

			if (n <= 0)
				rc = pool_err(n < 0 ? -errno : -EIO, "diff snapshot: read: %s",
					      n < 0 ? strerror(errno) : "short file");
			at += n > 0 ? n : 0;
		}
	}
	if (rc == 0 && data < 0 && errno != ENXIO) /* ENXIO: no data past hole */
		rc = pool_err(-errno, "diff snapshot: lseek: %s", strerror(errno));
	full.diff = false;
	if (rc == 0)
		rc = pool_snap_put(pool, name, image, len, &full);
	munmap(image, len);
out_close:
	pool_snap_close(parent);
	return rc;
}

POOL_EXPORT int pool_snap_put_fd(struct pool *pool, const char *name, int fd,
				 const struct pool_snap_opts *opts)
{
	struct stat st;
	void *image;
	int rc;

	if (fstat(fd, &st) < 0)
		return pool_err(-errno, "snapshot image: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return pool_err(-EINVAL, "snapshot image: not a regular file, or empty");
	if (opts != NULL && opts->diff)
		return snap_put_diff(pool, name, fd, (uint64_t)st.st_size, opts);
	image = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (image == MAP_FAILED)
		return pool_err(-errno, "snapshot image: mmap: %s", strerror(errno));
	madvise(image, (size_t)st.st_size, MADV_SEQUENTIAL);
	rc = pool_snap_put(pool, name, image, (uint64_t)st.st_size, opts);
	munmap(image, (size_t)st.st_size);
	return rc;
}

POOL_EXPORT int pool_snap_put_region(struct pool *pool, const char *name,
				     struct pool_region *region, const struct pool_snap_opts *opts)
{
	uint64_t size = region != NULL ? pool_region_size(region) : 0;
	void *image;
	int rc;

	if (region == NULL)
		return pool_err(-EINVAL, "pool_snap_put_region: invalid argument");
	if (pool_region_map(region, &image) == 0)
		return pool_snap_put(pool, name, image, size, opts);
	/* Not mapped here: read it over the fabric. */
	image = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image == MAP_FAILED)
		return pool_err(-errno, "snapshot image: %s", strerror(errno));
	rc = pool_region_read(region, 0, image, size);
	if (rc == 0)
		rc = pool_snap_put(pool, name, image, size, opts);
	munmap(image, size);
	return rc;
}

/* Read and check a manifest's header. */
static int snap_hdr_read(struct pool_region *r, const char *name, struct snap_header *h)
{
	struct snap_header t;
	uint64_t size = pool_region_size(r);
	int rc;

	if (size < SNAP_HDR_LEN)
		return pool_err(-EINVAL, "snapshot '%s': not a snapshot", name);
	rc = pool_region_read(r, 0, h, sizeof(*h));
	if (rc < 0)
		return rc;
	t = *h;
	if (h->magic != SNAP_MAGIC || h->version != SNAP_VERSION ||
	    (h->page_size != 4096 && h->page_size != (2u << 20)) ||
	    h->npages != h->image_len / h->page_size || h->image_len % h->page_size != 0 ||
	    h->npages > UINT32_MAX || h->state_len > POOL_SNAP_STATE_MAX ||
	    snap_layout(&t) > size || t.hashes_off != h->hashes_off || t.ws_off != h->ws_off ||
	    t.state_off != h->state_off || h->ws_len > h->npages)
		return pool_err(-EINVAL, "snapshot '%s': its manifest is not valid", name);
	h->parent[sizeof(h->parent) - 1] = '\0';
	return 0;
}

/* Read the hashes of chunks [c, c + n) into snap->hashes. */
static int snap_chunks_read(struct pool_snap *snap, uint64_t c, uint64_t n)
{
	uint64_t first = c * SNAP_HASH_CHUNK,
		 end = MIN((c + n) * SNAP_HASH_CHUNK, snap->hdr.npages);

	return pool_region_read(snap->manifest, snap->hdr.hashes_off + first * SNAP_HASH_LEN,
				snap->hashes + first * SNAP_HASH_LEN,
				(end - first) * SNAP_HASH_LEN);
}

/* Chunks [c, end) read, those not read yet in runs: 0 or -errno. */
static int snap_chunks_need(struct pool_snap *snap, uint64_t c, uint64_t end)
{
	int rc = 0;

	for (; c < end && __atomic_load_n(&snap->have[c], __ATOMIC_ACQUIRE); c++)
		;
	if (c == end)
		return 0;
	pthread_mutex_lock(&snap->hash_lock);
	while (rc == 0 && c < end) {
		uint64_t k = 0, i;

		while (c < end && snap->have[c])
			c++;
		while (c + k < end && !snap->have[c + k])
			k++;
		if (k > 0 && (rc = snap_chunks_read(snap, c, k)) == 0)
			for (i = 0; i < k; i++)
				__atomic_store_n(&snap->have[c + i], 1, __ATOMIC_RELEASE);
		c += k;
	}
	pthread_mutex_unlock(&snap->hash_lock);
	return rc;
}

int snap_hash(struct pool_snap *snap, uint64_t p, const uint8_t **ret)
{
	uint64_t c = p / SNAP_HASH_CHUNK;
	int rc = snap_chunks_need(snap, c, c + 1);

	*ret = snap->hashes + p * SNAP_HASH_LEN;
	return rc;
}

int snap_hashes_all(struct pool_snap *snap)
{
	return snap_chunks_need(snap, 0,
				(snap->hdr.npages + SNAP_HASH_CHUNK - 1) / SNAP_HASH_CHUNK);
}

/* A manifest's header and its page hashes (malloc'd, npages * SNAP_HASH_LEN). */
static int snap_manifest_read(struct pool_region *r, const char *name, struct snap_header *h,
			      uint8_t **ret_hashes)
{
	uint8_t *hashes;
	int rc;

	rc = snap_hdr_read(r, name, h);
	if (rc < 0)
		return rc;
	hashes = malloc(h->npages * SNAP_HASH_LEN);
	if (hashes == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = pool_region_read(r, h->hashes_off, hashes, h->npages * SNAP_HASH_LEN);
	if (rc < 0) {
		free(hashes);
		return rc;
	}
	*ret_hashes = hashes;
	return 0;
}

POOL_EXPORT int pool_snap_open(struct pool *pool, const char *name, struct pool_snap **ret_snap)
{
	struct pool_snap *s;
	char rname[POOL_REGION_NAME_MAX + 1];
	int rc;

	if (pool == NULL || ret_snap == NULL)
		return pool_err(-EINVAL, "pool_snap_open: invalid argument");
	rc = snap_region_name(name, rname);
	if (rc < 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return pool_err(-ENOMEM, "out of memory");
	s->pool = pool;
	strcpy(s->name, name);
	s->stop_fd = -1;
	pthread_mutex_init(&s->hash_lock, NULL);
	rc = pool_region_open(pool, rname, 0, &s->manifest);
	if (rc < 0) {
		pthread_mutex_destroy(&s->hash_lock);
		free(s);
		return rc == -ENOENT ? pool_err(rc, "no snapshot '%s'", name) : rc;
	}
	rc = snap_hdr_read(s->manifest, name, &s->hdr);
	if (rc == 0) { /* (the hashes are read as they are needed: snap_hash()) */
		s->hashes = malloc(s->hdr.npages * SNAP_HASH_LEN);
		s->have = calloc((s->hdr.npages + SNAP_HASH_CHUNK - 1) / SNAP_HASH_CHUNK, 1);
		if (s->hashes == NULL || s->have == NULL)
			rc = pool_err(-ENOMEM, "out of memory");
	}
	if (rc == 0 && s->hdr.state != SNAP_SEALED)
		rc = pool_err(-EBUSY, "snapshot '%s' is still being put (or its put failed)", name);
	if (rc == 0)
		rc = pool_kv_open(pool, snap_ns(&s->hdr), &s->pages);
	if (rc < 0) {
		pool_snap_close(s);
		return rc;
	}
	*ret_snap = s;
	return 0;
}

POOL_EXPORT void pool_snap_close(struct pool_snap *snap)
{
	if (snap == NULL)
		return;
	snap_lazy_wait(snap);
	if (snap->manifest != NULL)
		pool_region_close(snap->manifest);
	if (snap->pages != NULL)
		pool_kv_close(snap->pages);
	free(snap->hashes);
	free(snap->have);
	if (snap->stop_fd >= 0)
		close(snap->stop_fd);
	pthread_mutex_destroy(&snap->hash_lock);
	free(snap);
}

POOL_EXPORT uint64_t pool_snap_size(const struct pool_snap *snap)
{
	return snap != NULL ? snap->hdr.image_len : 0;
}

POOL_EXPORT uint64_t pool_snap_page_size(const struct pool_snap *snap)
{
	return snap != NULL ? snap->hdr.page_size : 0;
}

/* Fetch up to SNAP_BATCH pages, all of them non-zero. */
static int snap_fetch_batch(struct pool_snap *snap, size_t n, const uint64_t *pages,
			    void *const *bufs)
{
	const void *keys[SNAP_BATCH];
	size_t klens[SNAP_BATCH], lens[SNAP_BATCH], vlens[SNAP_BATCH], i;
	int status[SNAP_BATCH], rc;

	if (n == 0 || n > SNAP_BATCH)
		return n == 0 ? 0 : -EINVAL;
	for (i = 0; i < n; i++) {
		keys[i] = snap->hashes + pages[i] * SNAP_HASH_LEN; /* (read by snap_fetch()) */
		klens[i] = SNAP_HASH_LEN;
		lens[i] = snap->hdr.page_size;
	}
	rc = pool_kv_get_batch(snap->pages, n, keys, klens, bufs, lens, vlens, status);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (status[i] != 0 || vlens[i] != snap->hdr.page_size)
			return pool_err(POOL_ELOST,
					"snapshot '%s': page %llu is lost from the "
					"store (%s)",
					snap->name, (unsigned long long)pages[i],
					status[i] != 0 ? pool_strerror(status[i]) : "wrong size");
	return 0;
}

int snap_fetch(struct pool_snap *snap, size_t n, const uint64_t *pages, void *const *bufs)
{
	const uint8_t *hash;
	uint64_t batch[SNAP_BATCH];
	void *bb[SNAP_BATCH];
	size_t i, k = 0;
	int rc;

	for (i = 0; i < n; i++) {
		if (pages[i] >= snap->hdr.npages)
			return pool_err(-EINVAL, "page %llu of a snapshot of %llu",
					(unsigned long long)pages[i],
					(unsigned long long)snap->hdr.npages);
		rc = snap_hash(snap, pages[i], &hash);
		if (rc < 0)
			return rc;
		if (snap_zero_hash(hash)) {
			memset(bufs[i], 0, snap->hdr.page_size);
			continue;
		}
		batch[k] = pages[i];
		bb[k++] = bufs[i];
		if (k == SNAP_BATCH) {
			rc = snap_fetch_batch(snap, k, batch, bb);
			if (rc < 0)
				return rc;
			k = 0;
		}
	}
	return k > 0 ? snap_fetch_batch(snap, k, batch, bb) : 0;
}

int snap_page_acquire(struct pool_snap *snap, uint64_t p, const uint8_t **ret_data,
		      struct pool_kv_ref **ret_ref)
{
	const uint8_t *hash;
	const void *data;
	size_t len;
	int rc;

	*ret_data = NULL;
	*ret_ref = NULL;
	if (p >= snap->hdr.npages)
		return pool_err(-EINVAL, "page %llu of a snapshot of %llu", (unsigned long long)p,
				(unsigned long long)snap->hdr.npages);
	if ((rc = snap_hash(snap, p, &hash)) < 0 || snap_zero_hash(hash))
		return rc;
	rc = pool_kv_acquire(snap->pages, hash, SNAP_HASH_LEN, &data, &len, ret_ref);
	if (rc == 0 && len != snap->hdr.page_size) {
		pool_kv_release(*ret_ref);
		*ret_ref = NULL;
		rc = -EBADMSG;
	}
	if (rc < 0)
		return pool_err(POOL_ELOST, "snapshot '%s': page %llu is lost from the store (%s)",
				snap->name, (unsigned long long)p,
				rc == -EBADMSG ? "wrong size" : pool_strerror(rc));
	*ret_data = data;
	return 0;
}

/*
 * Pages larger than a write (2 MiB): each acquired and written from where
 * it lies, SNAP_FILL_WRITE_BYTES at a time, between() before each, rather
 * than fetched whole first (a fetch of 2 MiB is a wait of milliseconds
 * for what between() serves). A zero page is written from bounce, zeroed.
 */
static int snap_fill_big(struct pool_snap *snap, int fd, const uint64_t *pages, size_t n,
			 void *bounce, int (*between)(void *arg), void *arg)
{
	uint64_t ps = snap->hdr.page_size, at, len;
	struct pool_kv_ref *ref;
	const uint8_t *src;
	size_t k;
	int rc = 0;

	for (k = 0; k < n && rc == 0; k++) {
		if ((rc = snap_page_acquire(snap, pages[k], &src, &ref)) < 0)
			break;
		if (src == NULL)
			src = memset(bounce, 0, ps);
		for (at = 0; at < ps && rc == 0; at += len) {
			len = MIN(ps - at, (uint64_t)SNAP_FILL_WRITE_BYTES);
			if (between != NULL && (rc = between(arg)) < 0)
				break;
			if (pwrite(fd, src + at, len, (off_t)(pages[k] * ps + at)) != (ssize_t)len)
				rc = pool_err(-EIO, "snapshot %s: writing the node's copy: %s",
					      snap->name, strerror(errno));
		}
		if (ref != NULL)
			(void)pool_kv_release(ref); /* a pin poold drops with us anyway */
	}
	return rc;
}

int snap_fill_pages(struct pool_snap *snap, int fd, const uint64_t *pages, size_t n, void *bounce,
		    int (*between)(void *arg), void *arg)
{
	uint64_t ps = snap->hdr.page_size;
	void *bufs[SNAP_BATCH];
	size_t k, run;
	int rc;

	if (n == 0 || n > SNAP_BATCH)
		return n == 0
			   ? 0
			   : pool_err(-EINVAL, "snap_fill_pages: more than %d pages", SNAP_BATCH);
	if (ps > SNAP_FILL_WRITE_BYTES)
		return snap_fill_big(snap, fd, pages, n, bounce, between, arg);
	for (k = 0; k < n; k++) {
		if (pages[k] >= snap->hdr.npages)
			return pool_err(-EINVAL, "snap_fill_pages: outside the image");
		bufs[k] = (uint8_t *)bounce + k * ps;
	}
	if ((rc = snap_fetch(snap, n, pages, bufs)) < 0)
		return rc;
	if (between != NULL && (rc = between(arg)) < 0)
		return rc;
	/* One pwrite a run of pages that follow each other in the list and the image. */
	for (k = 0; k < n; k += run) {
		for (run = 1; k + run < n && pages[k + run] == pages[k] + run; run++)
			;
		if (pwrite(fd, bufs[k], run * ps, (off_t)(pages[k] * ps)) != (ssize_t)(run * ps))
			return pool_err(-EIO, "snapshot %s: writing the node's copy: %s",
					snap->name, strerror(errno));
	}
	return 0;
}

int snap_fill_fd(struct pool_snap *snap, int fd, uint64_t first, size_t n, void *bounce)
{
	uint64_t pages[SNAP_BATCH];
	size_t k;

	if (n > SNAP_BATCH || first > snap->hdr.npages || n > snap->hdr.npages - first)
		return pool_err(-EINVAL, "snap_fill_fd: outside the image");
	for (k = 0; k < n; k++)
		pages[k] = first + k;
	return snap_fill_pages(snap, fd, pages, n, bounce, NULL, NULL);
}

/* Whole pages into out in batches, a partial first or last one through a bounce page. */
POOL_EXPORT int pool_snap_read(struct pool_snap *snap, uint64_t offset, void *buf, size_t len)
{
	uint64_t pages[SNAP_BATCH], ps, end;
	void *bufs[SNAP_BATCH];
	uint8_t *tmp = NULL, *out = buf;
	size_t k = 0;
	int rc = 0;

	if (snap == NULL || (buf == NULL && len > 0) || offset > snap->hdr.image_len ||
	    len > snap->hdr.image_len - offset)
		return pool_err(-EINVAL, "pool_snap_read: outside the image");
	ps = snap->hdr.page_size;
	end = offset + len;
	while (offset < end && rc == 0) {
		uint64_t in = offset % ps, n = MIN(ps - in, end - offset);

		if (in == 0 && n == ps) {
			pages[k] = offset / ps;
			bufs[k++] = out;
		} else {
			uint64_t pg = offset / ps;

			if (tmp == NULL && (tmp = malloc(ps)) == NULL)
				rc = pool_err(-ENOMEM, "out of memory");
			if (rc == 0)
				rc = snap_fetch(snap, 1, &pg, (void *const *)&tmp);
			if (rc == 0)
				memcpy(out, tmp + in, n);
		}
		if (rc == 0 && (k == SNAP_BATCH || (k > 0 && offset + n >= end))) {
			rc = snap_fetch(snap, k, pages, bufs);
			k = 0;
		}
		out += n;
		offset += n;
	}
	free(tmp);
	return rc;
}

POOL_EXPORT int pool_snap_state(struct pool_snap *snap, void *buf, size_t buflen, size_t *ret_len)
{
	int rc = 0;

	if (snap == NULL || ret_len == NULL || (buf == NULL && buflen > 0))
		return pool_err(-EINVAL, "pool_snap_state: invalid argument");
	if (buflen > 0 && snap->hdr.state_len > 0)
		rc = pool_region_read(snap->manifest, snap->hdr.state_off, buf,
				      MIN(buflen, snap->hdr.state_len));
	*ret_len = snap->hdr.state_len;
	return rc;
}

int snap_ws_load(struct pool_snap *snap, uint32_t **ret_pages, size_t *ret_n)
{
	struct snap_header h;
	uint32_t *p;
	size_t i;
	int rc;

	rc = snap_hdr_read(snap->manifest, snap->name, &h); /* the working set grows */
	if (rc < 0)
		return rc;
	p = malloc((h.ws_len ? h.ws_len : 1) * sizeof(*p));
	if (p == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = h.ws_len ? pool_region_read(snap->manifest, h.ws_off, p, h.ws_len * sizeof(*p)) : 0;
	for (i = 0; rc == 0 && i < h.ws_len; i++)
		if (p[i] >= h.npages)
			rc = pool_err(-EINVAL, "snapshot '%s': its working set is not valid",
				      snap->name);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*ret_pages = p;
	*ret_n = h.ws_len;
	return 0;
}

/*
 * Merge a restore's first touches into the working set: the pages already
 * in it keep their place, new ones follow in the order they were touched.
 * Two restores merging at once may lose one's additions (a later restore
 * records them again); the list itself stays valid.
 */
int snap_ws_merge(struct pool_snap *snap, const uint64_t *pages, size_t n)
{
	struct pool_region *w;
	struct snap_header h;
	uint32_t *ws = NULL;
	uint8_t *seen = NULL;
	size_t len, i;
	char rname[POOL_REGION_NAME_MAX + 1];
	int rc;

	snprintf(rname, sizeof(rname), SNAP_PREFIX "%s", snap->name);
	rc = pool_region_open(snap->pool, rname, POOL_REGION_WRITE, &w);
	if (rc < 0)
		return rc;
	rc = snap_hdr_read(w, snap->name, &h);
	if (rc == 0 && h.id != snap->hdr.id)
		rc = pool_err(-ESTALE, "snapshot '%s' was replaced", snap->name);
	if (rc == 0 &&
	    ((ws = malloc(h.npages * sizeof(*ws))) == NULL || (seen = calloc(h.npages, 1)) == NULL))
		rc = pool_err(-ENOMEM, "out of memory");
	if (rc == 0 && h.ws_len > 0)
		rc = pool_region_read(w, h.ws_off, ws, h.ws_len * sizeof(*ws));
	for (i = 0, len = h.ws_len; rc == 0 && i < len; i++)
		if (ws[i] < h.npages)
			seen[ws[i]] = 1;
	for (i = 0; rc == 0 && i < n; i++)
		if (pages[i] < h.npages && !seen[pages[i]]) {
			seen[pages[i]] = 1;
			ws[len++] = (uint32_t)pages[i];
		}
	if (rc == 0 && len > h.ws_len)
		rc = pool_region_write(w, h.ws_off + h.ws_len * sizeof(*ws), ws + h.ws_len,
				       (len - h.ws_len) * sizeof(*ws));
	if (rc == 0) {
		h.ws_len = len;
		h.ws_runs++;
		rc = snap_hdr_write(w, &h);
	}
	free(ws);
	free(seen);
	pool_region_close(w);
	return rc;
}

POOL_EXPORT int pool_snap_remove(struct pool *pool, const char *name)
{
	char rname[POOL_REGION_NAME_MAX + 1];
	int rc;

	if (pool == NULL)
		return pool_err(-EINVAL, "pool_snap_remove: invalid argument");
	rc = snap_region_name(name, rname);
	if (rc < 0)
		return rc;
	rc = pool_region_destroy(pool, rname); /* its pages' references go with it */
	if (rc == -ENOENT)
		return pool_err(rc, "no snapshot '%s'", name);
	if (rc == 0) /* this node's copy now; others' go when replaced or evicted */
		snap_copy_drop(pool, name);
	return rc;
}

/* Tell the coordinator again which pages one snapshot holds (adopt). */
static int snap_adopt(struct pool *pool, const char *name)
{
	const void *keys[SNAP_BATCH];
	size_t klens[SNAP_BATCH], n = 0, i, k;
	struct snap_ref *refs = NULL;
	struct pool_region *r;
	struct snap_header h;
	struct pool_kv *kv = NULL;
	uint8_t *hashes = NULL;
	char rname[POOL_REGION_NAME_MAX + 1];
	int rc;

	snprintf(rname, sizeof(rname), SNAP_PREFIX "%s", name);
	rc = pool_region_open(pool, rname, 0, &r);
	if (rc < 0)
		return rc;
	rc = snap_manifest_read(r, name, &h, &hashes);
	pool_region_close(r);
	if (rc == 0)
		rc = snap_distinct(hashes, h.npages, &refs, &n);
	if (rc == 0 && (rc = pool_kv_open(pool, snap_ns(&h), &kv)) == 0)
		kv_set_holder(kv, rname);
	for (i = 0; rc == 0 && i < n; i += k) {
		for (k = 0; k < SNAP_BATCH && i + k < n; k++) {
			keys[k] = refs[i + k].hash;
			klens[k] = SNAP_HASH_LEN;
		}
		rc = kv_count_op(kv, POOL__KV_OP__KV_OP_ADOPT, k, keys, klens, NULL);
	}
	if (rc == 0)
		rc = kv_count_op(kv, POOL__KV_OP__KV_OP_ADOPTED, 0, NULL, NULL, NULL);
	pool_kv_close(kv);
	free(refs);
	free(hashes);
	return rc;
}

POOL_EXPORT int pool_snap_recount(struct pool *pool, uint64_t *ret_freed)
{
	static const char *const stores[] = {SNAP_NS_PINNED, SNAP_NS_PERSISTENT, SNAP_NS_SHARED};
	uint64_t freed = 0, f;
	struct pool_kv *kv;
	char **names;
	size_t n, i;
	int rc, failed = 0;

	if (pool == NULL)
		return pool_err(-EINVAL, "pool_snap_recount: invalid argument");
	rc = pool_snap_list(pool, &names, &n);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (snap_adopt(pool, names[i]) < 0 && failed++ == 0) {
			char msg[200];

			snprintf(msg, sizeof(msg), "%s", pool_errormsg());
			rc = pool_err(-EIO, "snapshot '%s': %s", names[i], msg);
		}
	free(names);
	for (i = 0; rc == 0 && i < ARRAY_SIZE(stores); i++) {
		rc = pool_kv_open(pool, stores[i], &kv);
		if (rc == 0) {
			rc = kv_count_op(kv, POOL__KV_OP__KV_OP_RECOUNT, 0, NULL, NULL, &f);
			freed += f;
			pool_kv_close(kv);
		}
	}
	if (ret_freed != NULL)
		*ret_freed = freed;
	return rc;
}

POOL_EXPORT int pool_snap_list(struct pool *pool, char ***ret_names, size_t *ret_n)
{
	Pool__RegionListRequest req = POOL__REGION_LIST_REQUEST__INIT;
	Pool__RegionList *rep;
	size_t i, n = 0, bytes = 0, plen = strlen(SNAP_PREFIX);
	char **names, *p;
	int rc;

	if (pool == NULL || ret_names == NULL || ret_n == NULL)
		return pool_err(-EINVAL, "pool_snap_list: invalid argument");
	rc = pool_call(pool, WIRE_REGION_LIST, &req.base, WIRE_REGION_LIST_REPLY,
		       (ProtobufCMessage **)&rep);
	if (rc < 0)
		return rc;
	for (i = 0; i < rep->n_regions; i++)
		if (strncmp(rep->regions[i]->name, SNAP_PREFIX, plen) == 0) {
			n++;
			bytes += strlen(rep->regions[i]->name) - plen + 1;
		}
	names = malloc(n * sizeof(char *) + bytes + 1);
	if (names == NULL) {
		wire_msg_free(&rep->base);
		return pool_err(-ENOMEM, "out of memory");
	}
	p = (char *)(names + n);
	for (i = 0, n = 0; i < rep->n_regions; i++)
		if (strncmp(rep->regions[i]->name, SNAP_PREFIX, plen) == 0) {
			names[n++] = p;
			p = stpcpy(p, rep->regions[i]->name + plen) + 1;
		}
	wire_msg_free(&rep->base);
	*ret_names = names;
	*ret_n = n;
	return 0;
}

POOL_EXPORT int pool_snap_stat(struct pool *pool, const char *name,
			       struct pool_snap_info **ret_info)
{
	struct pool_snap_info *info;
	struct pool_region *r;
	char rname[POOL_REGION_NAME_MAX + 1];
	int rc;

	if (pool == NULL || ret_info == NULL)
		return pool_err(-EINVAL, "pool_snap_stat: invalid argument");
	rc = snap_region_name(name, rname);
	if (rc < 0)
		return rc;
	info = calloc(1, sizeof(*info));
	if (info == NULL)
		return pool_err(-ENOMEM, "out of memory");
	rc = pool_region_open(pool, rname, 0, &r);
	if (rc < 0) {
		free(info);
		return rc == -ENOENT ? pool_err(rc, "no snapshot '%s'", name) : rc;
	}
	rc = snap_hdr_read(r, name, &info->hdr);
	pool_region_close(r);
	if (rc < 0) {
		free(info);
		return rc;
	}
	*ret_info = info;
	return 0;
}

POOL_EXPORT void pool_snap_info_free(struct pool_snap_info *info)
{
	free(info);
}

POOL_EXPORT uint64_t pool_snap_info_size(const struct pool_snap_info *info)
{
	return info->hdr.image_len;
}

POOL_EXPORT uint64_t pool_snap_info_page_size(const struct pool_snap_info *info)
{
	return info->hdr.page_size;
}

POOL_EXPORT uint64_t pool_snap_info_zero_pages(const struct pool_snap_info *info)
{
	return info->hdr.zero_pages;
}

POOL_EXPORT uint64_t pool_snap_info_distinct_pages(const struct pool_snap_info *info)
{
	return info->hdr.distinct;
}

POOL_EXPORT uint64_t pool_snap_info_new_pages(const struct pool_snap_info *info)
{
	return info->hdr.new_pages;
}

POOL_EXPORT uint64_t pool_snap_info_state_len(const struct pool_snap_info *info)
{
	return info->hdr.state_len;
}

POOL_EXPORT uint64_t pool_snap_info_created_ms(const struct pool_snap_info *info)
{
	return info->hdr.created_ms;
}

POOL_EXPORT uint32_t pool_snap_info_uid(const struct pool_snap_info *info)
{
	return info->hdr.uid;
}

POOL_EXPORT const char *pool_snap_info_class(const struct pool_snap_info *info)
{
	return info->hdr.flags & SNAP_F_PERSISTENT ? "persistent"
	       : info->hdr.flags & SNAP_F_SHARED   ? "shared"
						   : "pinned";
}

POOL_EXPORT const char *pool_snap_info_parent(const struct pool_snap_info *info)
{
	return info->hdr.parent;
}

POOL_EXPORT uint64_t pool_snap_info_ws_pages(const struct pool_snap_info *info)
{
	return info->hdr.ws_len;
}

POOL_EXPORT uint64_t pool_snap_info_ws_runs(const struct pool_snap_info *info)
{
	return info->hdr.ws_runs;
}

/* "writing" while the put runs (or after it failed), else "sealed". */
POOL_EXPORT const char *pool_snap_info_state(const struct pool_snap_info *info)
{
	return info->hdr.state == SNAP_SEALED ? "sealed" : "writing";
}

POOL_EXPORT int pool_snap_store_bytes(struct pool *pool, const char *cls, uint64_t *ret_bytes,
				      uint64_t *ret_pages)
{
	if (pool == NULL || cls == NULL || ret_bytes == NULL || ret_pages == NULL ||
	    (strcmp(cls, "pinned") != 0 && strcmp(cls, "persistent") != 0 &&
	     strcmp(cls, "shared") != 0))
		return pool_err(-EINVAL,
				"pool_snap_store_bytes: class pinned, persistent or shared");
	return kv_ns_usage(pool,
			   cls[1] == 'i'   ? SNAP_NS_PINNED
			   : cls[1] == 'e' ? SNAP_NS_PERSISTENT
					   : SNAP_NS_SHARED,
			   ret_bytes, ret_pages);
}

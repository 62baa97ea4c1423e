/*
 * libpool/region.c - regions: create, open, read, write, map, close.
 *
 * The coordinator (through the local poold) says where a region's extents
 * live and grants the session access; the data path is this process's own
 * poold, which carries each transfer after checking it against that grant
 * (xfer.c), or plain loads and stores when the region is one extent on this
 * node, through a file poold hands the session that holds just the region's
 * memory (region_map_local()). Batches are carried in as few
 * requests as the window allows.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "libpool/internal.h"

/* How long opening a region again waits for its lenders to be back (region_reopen()). */
#define REGION_REOPEN_WAIT_MS 10000

/* Stripes one carried op spans at most (poold takes up to 256 pieces an op). */
#define REGION_STRIPES_PER_OP 128

struct pool_region_opts {
	uint64_t size;
	uint64_t stripe;
	char cls[16];
	char placement[32];
	unsigned mode;
};

struct pool_region_extent {
	uint64_t len;
	uint32_t node_id, arena;
	uint64_t off;
};

struct pool_region {
	struct pool *pool;
	char name[POOL_REGION_NAME_MAX + 1];
	uint64_t id, size, gva, stripe;
	unsigned flags;
	size_t n;
	struct pool_region_extent *ext;
	void *map; /* the region mapped here (region_map_local()), or NULL */
	size_t map_len;
	bool leased;		  /* open or create took a lease */
	bool moved;		  /* notice: fetch the layout again before the next access */
	bool gone;		  /* notice: evicted or destroyed */
	struct pool_region *next; /* on pool->regions */
};

static int region_resolve(struct pool_region *r, const Pool__RegionReply *rep);
static int region_map_local(struct pool_region *r, const Pool__RegionFdReply *file, int fd);
static void region_unmap(struct pool_region *r);

/*
 * A notice from poold about a region this process holds. Called under
 * pool->lock, from inside a control call or wire_client_poll().
 */
void pool_region_notice(void *arg, uint16_t type, const uint8_t *payload, size_t len)
{
	struct pool *pool = arg;
	Pool__RegionNotice *rn = NULL;
	struct pool_region *r;

	if (type != WIRE_REGION_NOTICE ||
	    wire_msg_unpack(type, payload, len, (ProtobufCMessage **)&rn) < 0)
		return;
	for (r = pool->regions; r != NULL; r = r->next) {
		if (strcmp(r->name, rn->name) != 0)
			continue;
		if (rn->event == POOL__REGION_EVENT__REGION_EVENT_GONE)
			r->gone = true;
		else
			r->moved = true;
	}
	wire_msg_free(&rn->base);
}

/* Take the layout of a reply, which is freed; a bad one leaves the old layout. */
static int region_relayout(struct pool_region *r, Pool__RegionReply *rep)
{
	struct pool_region_extent *old = r->ext;
	size_t oldn = r->n;
	int rc;

	r->ext = NULL;
	rc = region_resolve(r, rep);
	wire_msg_free(&rep->base);
	if (rc < 0) {
		free(r->ext);
		r->ext = old;
		r->n = oldn;
		return rc;
	}
	free(old);
	return 0;
}

/*
 * Before an access: take in waiting notices; a region that moved gets its
 * new layout, one that is gone fails with -ESTALE.
 */
static int region_refresh(struct pool_region *r)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	Pool__RegionReply *rep;
	int rc;

	pthread_mutex_lock(&r->pool->lock);
	wire_client_poll(r->pool->wc);
	pthread_mutex_unlock(&r->pool->lock);
	if (r->gone)
		return pool_err(-ESTALE, "region '%s' was evicted or destroyed", r->name);
	if (!r->moved)
		return 0;
	req.name = r->name;
	rc = pool_call(r->pool, WIRE_REGION_STAT, &req.base, WIRE_REGION_REPLY,
		       (ProtobufCMessage **)&rep);
	if (rc < 0)
		return rc;
	r->moved = false;
	rc = region_relayout(r, rep);
	if (rc < 0)
		return rc;
	/* The old mapping shows the old place: the new one, if it is local. */
	region_unmap(r);
	region_map_local(r, NULL, -1);
	return 0;
}

POOL_EXPORT int pool_region_opts_new(struct pool_region_opts **ret_opts)
{
	struct pool_region_opts *o;

	if (ret_opts == NULL)
		return pool_err(-EINVAL, "pool_region_opts_new: invalid argument");
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		return pool_err(-ENOMEM, "out of memory");
	snprintf(o->cls, sizeof(o->cls), "pinned");
	snprintf(o->placement, sizeof(o->placement), "any");
	o->mode = 0600;
	*ret_opts = o;
	return 0;
}

POOL_EXPORT void pool_region_opts_free(struct pool_region_opts *opts)
{
	free(opts);
}

POOL_EXPORT int pool_region_opts_set_size(struct pool_region_opts *opts, uint64_t size)
{
	if (opts == NULL || size == 0)
		return pool_err(-EINVAL, "region size must be positive");
	opts->size = size;
	return 0;
}

POOL_EXPORT int pool_region_opts_set_class(struct pool_region_opts *opts, const char *cls)
{
	if (opts == NULL || cls == NULL || strlen(cls) >= sizeof(opts->cls))
		return pool_err(-EINVAL, "invalid region class");
	snprintf(opts->cls, sizeof(opts->cls), "%s", cls);
	return 0;
}

POOL_EXPORT int pool_region_opts_set_placement(struct pool_region_opts *opts, const char *placement)
{
	if (opts == NULL || placement == NULL || strlen(placement) >= sizeof(opts->placement))
		return pool_err(-EINVAL, "invalid placement");
	snprintf(opts->placement, sizeof(opts->placement), "%s", placement);
	return 0;
}

POOL_EXPORT int pool_region_opts_set_mode(struct pool_region_opts *opts, unsigned mode)
{
	if (opts == NULL || mode > 0777)
		return pool_err(-EINVAL, "mode %o is not a permission mode", mode);
	opts->mode = mode;
	return 0;
}

POOL_EXPORT int pool_region_opts_set_stripe(struct pool_region_opts *opts, uint64_t stripe)
{
	if (opts == NULL)
		return pool_err(-EINVAL, "invalid argument");
	opts->stripe = stripe;
	return 0;
}

/* The extents of a RegionReply, in region order. */
static int region_resolve(struct pool_region *r, const Pool__RegionReply *rep)
{
	const Pool__RegionInfo *ri = rep->region;
	size_t i;

	r->ext = calloc(ri->n_extents ? ri->n_extents : 1, sizeof(*r->ext));
	if (r->ext == NULL)
		return pool_err(-ENOMEM, "out of memory");
	r->n = ri->n_extents;
	for (i = 0; i < ri->n_extents; i++) {
		const Pool__Extent *e = ri->extents[i];
		size_t slot = ri->stripe ? e->region_off : i;

		if (slot >= r->n)
			return pool_err(POOL_EPROTOCOL, "bad extent list for '%s'", r->name);
		r->ext[slot].node_id = e->node;
		r->ext[slot].arena = e->arena;
		r->ext[slot].off = e->off;
		r->ext[slot].len = e->len;
	}
	if (r->n == 0 || (ri->stripe == 0 && r->ext[0].len < r->size))
		return pool_err(POOL_EPROTOCOL, "region '%s' has no room for its size", r->name);
	return 0;
}

/* The whole of a local arena, mapped on first use (for root only); pool->lock held. */
int pool_arena_map(struct pool *pool, uint32_t arena, void **ret_base, uint64_t *ret_size)
{
	Pool__ArenaFd req = POOL__ARENA_FD__INIT;
	Pool__Ok *ok = NULL;
	char msg[256];
	struct stat st;
	uint64_t size;
	void *base;
	size_t i;
	int fd = -1, rc;

	for (i = 0; i < pool->namaps; i++)
		if (pool->amaps[i].arena == arena) {
			*ret_base = pool->amaps[i].base;
			*ret_size = pool->amaps[i].len;
			return 0;
		}
	if (pool->amap_refused || pool->namaps == ARRAY_SIZE(pool->amaps))
		return -EACCES;
	req.arena = arena;
	rc = wire_client_call_fd(pool->wc, WIRE_ARENA_FD, &req.base, WIRE_OK,
				 (ProtobufCMessage **)&ok, &fd, msg, sizeof(msg));
	if (rc == -EPERM) /* not a trusted caller: do not ask again */
		pool->amap_refused = true;
	if (rc < 0)
		return rc;
	wire_msg_free(&ok->base);
	if (fd < 0)
		return POOL_EPROTOCOL;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return POOL_EPROTOCOL;
	}
	size = (uint64_t)st.st_size;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return -errno;
	pool->amaps[pool->namaps++] = (struct pool_arena_map){arena, base, size};
	*ret_base = base;
	*ret_size = size;
	return 0;
}

/* Forget the local arena mappings (at pool_close()). */
void pool_arenas_unmap(struct pool *pool)
{
	size_t i;

	for (i = 0; i < pool->namaps; i++)
		munmap(pool->amaps[i].base, pool->amaps[i].len);
	pool->namaps = 0;
}

/* Unmap the region's local mapping, if it has one. */
static void region_unmap(struct pool_region *r)
{
	if (r->map != NULL)
		munmap(r->map, r->map_len);
	r->map = NULL;
	r->map_len = 0;
}

/*
 * A region that is one extent on this node is accessed by loads and
 * stores: poold hands the session a file holding exactly its memory
 * (RegionFd, or with the reply of the open or create that asked for it),
 * which is mapped here, writable when this handle writes and the session
 * may. Otherwise (remote, striped, not granted that access, or a node that
 * cannot give it a file) poold carries each transfer. file and fd: what
 * came with the open's reply (fd -1 if nothing did), closed here.
 */
static int region_map_local(struct pool_region *r, const Pool__RegionFdReply *file, int fd)
{
	Pool__RegionFd req = POOL__REGION_FD__INIT;
	Pool__RegionFdReply *rep = NULL;
	bool write = (r->flags & POOL_REGION_WRITE) != 0;
	char msg[256];
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off, len;
	void *base;
	int rc = 0;

	if (r->n != 1 || r->stripe != 0 || r->ext[0].node_id != wire_client_node_id(r->pool->wc)) {
		if (fd >= 0)
			close(fd);
		return -EREMOTE;
	}
	if (fd < 0 || file == NULL) {
		if (fd >= 0)
			close(fd);
		req.region = r->id;
		pthread_mutex_lock(&r->pool->lock);
		rc = wire_client_call_fd(r->pool->wc, WIRE_REGION_FD, &req.base,
					 WIRE_REGION_FD_REPLY, (ProtobufCMessage **)&rep, &fd, msg,
					 sizeof(msg));
		pthread_mutex_unlock(&r->pool->lock);
		if (rc < 0)
			return rc;
		file = rep;
	}
	off = file->offset;
	len = file->len;
	rc = write && !file->write ? -EACCES : 0;
	if (rep != NULL)
		wire_msg_free(&rep->base);
	if (fd < 0)
		return POOL_EPROTOCOL;
	if (rc == 0 && (len < r->size || off % (uint64_t)page != 0))
		rc = POOL_EPROTOCOL;
	if (rc == 0) {
		base = mmap(NULL, r->size, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd,
			    (off_t)off);
		rc = base == MAP_FAILED ? -errno : 0;
	}
	close(fd);
	if (rc < 0)
		return rc;
	r->map = base;
	r->map_len = r->size;
	return 0;
}

/* A handle from the reply of an open or create, and the file that came with it (fd, or -1). */
static int region_from_reply(struct pool *pool, const char *name, unsigned flags,
			     Pool__RegionReply *rep, int fd, struct pool_region **ret)
{
	struct pool_region *r = calloc(1, sizeof(*r));
	int rc;

	if (r == NULL) {
		wire_msg_free(&rep->base);
		if (fd >= 0)
			close(fd);
		return pool_err(-ENOMEM, "out of memory");
	}
	r->pool = pool;
	r->flags = flags;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->id = rep->region->id;
	r->size = rep->region->size;
	r->gva = rep->region->gva;
	r->stripe = rep->region->stripe;
	r->leased = true;
	rc = region_resolve(r, rep);
	if (rc < 0) {
		wire_msg_free(&rep->base);
		if (fd >= 0)
			close(fd);
		pool_region_close(r);
		return rc;
	}
	/*
	 * Local and mappable: loads and stores. Otherwise carried transfers,
	 * which need no map.
	 */
	region_map_local(r, rep->file, fd);
	wire_msg_free(&rep->base);
	pthread_mutex_lock(&pool->lock);
	r->next = pool->regions;
	pool->regions = r;
	pthread_mutex_unlock(&pool->lock);
	*ret = r;
	return 0;
}

POOL_EXPORT int pool_region_create(struct pool *pool, const char *name,
				   const struct pool_region_opts *opts, unsigned flags,
				   struct pool_region **ret_region)
{
	Pool__RegionCreate req = POOL__REGION_CREATE__INIT;
	Pool__RegionReply *rep;
	int fd = -1, rc;

	if (pool == NULL || name == NULL || opts == NULL || ret_region == NULL ||
	    (flags & ~POOL_REGION_ANONYMOUS))
		return pool_err(-EINVAL, "pool_region_create: invalid argument");
	if (opts->size == 0)
		return pool_err(-EINVAL, "pool_region_create: no size set");
	req.name = (char *)name;
	req.size = opts->size;
	req.class_ = (char *)opts->cls;
	req.placement = (char *)opts->placement;
	req.mode = opts->mode;
	req.stripe = opts->stripe;
	req.anonymous = (flags & POOL_REGION_ANONYMOUS) != 0;
	req.has_open = req.has_map = 1;
	req.open = req.map = 1;
	req.from_node = wire_client_node_id(pool->wc);
	rc = pool_call_fd(pool, WIRE_REGION_CREATE, &req.base, WIRE_REGION_REPLY,
			  (ProtobufCMessage **)&rep, &fd);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	return region_from_reply(pool, name, POOL_REGION_WRITE, rep, fd, ret_region);
}

POOL_EXPORT int pool_region_open(struct pool *pool, const char *name, unsigned flags,
				 struct pool_region **ret_region)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	Pool__RegionReply *rep;
	int fd = -1, rc;

	if (pool == NULL || name == NULL || ret_region == NULL || (flags & ~POOL_REGION_WRITE))
		return pool_err(-EINVAL, "pool_region_open: invalid argument");
	req.name = (char *)name;
	req.has_access = req.has_map = 1;
	req.access = (flags & POOL_REGION_WRITE) ? 6 : 4;
	req.map = 1;
	rc = pool_call_fd(pool, WIRE_REGION_OPEN, &req.base, WIRE_REGION_REPLY,
			  (ProtobufCMessage **)&rep, &fd);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	return region_from_reply(pool, name, flags, rep, fd, ret_region);
}

POOL_EXPORT int pool_region_close(struct pool_region *region)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;

	if (region == NULL)
		return 0;
	/*
	 * End the lease without waiting for poold's Ok: it ends the lease
	 * before it serves this connection's next request, and there is
	 * nothing the caller could do about a failure (a broken connection ends
	 * the lease anyway, after lease.grace).
	 */
	req.name = region->name;
	if (region->leased)
		pool_send(region->pool, WIRE_REGION_CLOSE, &req.base, WIRE_OK);
	pthread_mutex_lock(&region->pool->lock);
	for (struct pool_region **pp = &region->pool->regions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == region) {
			*pp = region->next;
			break;
		}
	pthread_mutex_unlock(&region->pool->lock);
	region_unmap(region);
	free(region->ext);
	free(region);
	return 0;
}

/* A request on a region by name that is answered Ok. */
static int region_name_call(struct pool *pool, uint16_t type, const char *name, const char *fn)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	Pool__Ok *ok;
	int rc;

	if (pool == NULL || name == NULL)
		return pool_err(-EINVAL, "%s: invalid argument", fn);
	req.name = (char *)name;
	rc = pool_call(pool, type, &req.base, WIRE_OK, (ProtobufCMessage **)&ok);
	if (rc < 0)
		return rc;
	wire_msg_free(&ok->base);
	return 0;
}

POOL_EXPORT int pool_region_destroy(struct pool *pool, const char *name)
{
	return region_name_call(pool, WIRE_REGION_DESTROY, name, "pool_region_destroy");
}

POOL_EXPORT int pool_region_keep(struct pool *pool, const char *name)
{
	return region_name_call(pool, WIRE_REGION_KEEP, name, "pool_region_keep");
}

POOL_EXPORT uint64_t pool_region_size(const struct pool_region *region)
{
	return region->size;
}

POOL_EXPORT uint64_t pool_region_gva(const struct pool_region *region)
{
	return region->gva;
}

POOL_EXPORT int pool_region_map(struct pool_region *region, void **ret_addr)
{
	if (region == NULL || ret_addr == NULL)
		return pool_err(-EINVAL, "pool_region_map: invalid argument");
	if (region->map == NULL)
		return pool_err(-EREMOTE,
				"region '%s' does not live (wholly) on this node, or this "
				"caller may not map it",
				region->name);
	*ret_addr = region->map;
	return 0;
}

/* The message of a carried transfer that failed. */
static int region_xfer_err(const char *name, const char *what, int rc)
{
	if (rc == -EPERM)
		return pool_err(rc,
				"region '%s': %s: this session holds no grant of it (closed, "
				"destroyed, or its node was fenced)",
				name, what);
	return pool_err(rc, "region '%s': %s failed: %s", name, what, err_str(rc));
}

/*
 * poold no longer honours the handle's grant (its node registered again
 * with the coordinator, which may have lost the lease): open the region
 * again, which takes a new lease, if it is still the same region.
 */
static int region_reopen(struct pool_region *r)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	Pool__RegionReply *rep;
	int rc;

	req.name = r->name;
	req.has_access = 1;
	req.access = (r->flags & POOL_REGION_WRITE) ? 6 : 4;
	/*
	 * A coordinator that just restarted may not have all the extents back
	 * from their lenders yet (POOL_ELOST): wait for them a while.
	 */
	for (int waited = 0;; waited += 100) {
		rc = pool_call(r->pool, WIRE_REGION_OPEN, &req.base, WIRE_REGION_REPLY,
			       (ProtobufCMessage **)&rep);
		if (rc != POOL_ELOST && rc != POOL_ECOORD)
			break;
		if (waited >= REGION_REOPEN_WAIT_MS)
			return rc;
		usleep(100000);
	}
	if (rc < 0)
		return rc;
	if (rep->region->id != r->id) {
		wire_msg_free(&rep->base);
		r->gone = true; /* (the new region's lease ends with the session) */
		return pool_err(-ESTALE, "region '%s' was destroyed and made again", r->name);
	}
	return region_relayout(r, rep);
}

/* Carry one item of region r; a region that moved meanwhile is looked up again once. */
static int region_carry(struct pool_region *r, struct pool_xfer_item *it, const char *what)
{
	int rc, tries;

	for (tries = 0; tries < 2; tries++) {
		it->region = r->id;
		it->max_op = r->stripe * REGION_STRIPES_PER_OP;
		rc = pool_xfer_run(r->pool, it, 1);
		if (rc < 0)
			return rc;
		if (it->status == -EPERM) {
			/* Refused: if a notice says why (evicted, destroyed), say that. */
			rc = region_refresh(r);
			if (rc < 0)
				return rc;
		}
		if (it->status == -EKEYEXPIRED && tries == 0) {
			rc = region_reopen(r);
			if (rc < 0)
				return rc;
			continue;
		}
		if (it->status != -ESTALE || tries > 0)
			break;
		r->moved = true;
		rc = region_refresh(r);
		if (rc < 0)
			return rc;
	}
	return it->status < 0 ? region_xfer_err(r->name, what, it->status) : 0;
}

/* Transfers queued until pool_batch_wait(). */
struct pool_batch {
	struct pool *pool;
	struct pool_xfer_item *items;
	struct pool_region **regs; /* each item's region */
	size_t n, cap;
	char name[POOL_REGION_NAME_MAX + 1]; /* a region the batch touched, for messages */
};

static int region_rma(struct pool_region *r, uint64_t off, void *buf, size_t len, bool write)
{
	struct pool_xfer_item it = {
	    .op = write ? POOL_XFER_WRITE : POOL_XFER_READ, .off = off, .buf = buf, .len = len};

	return region_carry(r, &it, write ? "write" : "read");
}

static int region_check(struct pool_region *r, uint64_t off, const void *buf, size_t len,
			const char *what)
{
	if (r == NULL || (buf == NULL && len > 0))
		return pool_err(-EINVAL, "%s: invalid argument", what);
	if (off > r->size || len > r->size - off)
		return pool_err(-ERANGE, "%s: [%llu, +%zu) is outside region '%s' of %llu bytes",
				what, (unsigned long long)off, len, r->name,
				(unsigned long long)r->size);
	return 0;
}

POOL_EXPORT int pool_region_read(struct pool_region *region, uint64_t offset, void *buf, size_t len)
{
	int rc = region_check(region, offset, buf, len, "pool_region_read");

	if (rc < 0 || len == 0)
		return rc;
	rc = region_refresh(region);
	if (rc < 0)
		return rc;
	if (region->map != NULL) {
		memcpy(buf, (char *)region->map + offset, len);
		return 0;
	}
	return region_rma(region, offset, buf, len, false);
}

POOL_EXPORT int pool_region_write(struct pool_region *region, uint64_t offset, const void *buf,
				  size_t len)
{
	int rc = region_check(region, offset, buf, len, "pool_region_write");

	if (rc < 0 || len == 0)
		return rc;
	if (!(region->flags & POOL_REGION_WRITE))
		return pool_err(-EBADF, "region '%s' is open for reading only", region->name);
	rc = region_refresh(region);
	if (rc < 0)
		return rc;
	if (region->map != NULL) {
		memcpy((char *)region->map + offset, buf, len);
		return 0;
	}
	return region_rma(region, offset, (void *)buf, len, true);
}

/*
 * For the KV cache: check [off, off+len) of a region for an access (store:
 * the region is written) and, when the region is mapped here, give its
 * address there. 1 and *ret_addr when mapped, 0 when not (the caller goes
 * through pool_region_read() or pool_region_write()), or an error.
 */
int pool_region_window(struct pool_region *r, uint64_t off, size_t len, bool store,
		       const char *what, void **ret_addr)
{
	int rc = region_check(r, off, r, len, what); /* r: there is no buffer to check */

	if (rc < 0)
		return rc;
	if (store && !(r->flags & POOL_REGION_WRITE))
		return pool_err(-EBADF, "region '%s' is open for reading only", r->name);
	rc = region_refresh(r);
	if (rc < 0)
		return rc;
	if (r->map == NULL)
		return 0;
	*ret_addr = (char *)r->map + off;
	return 1;
}

POOL_EXPORT int pool_batch_new(struct pool *pool, struct pool_batch **ret_batch)
{
	struct pool_batch *b;

	if (pool == NULL || ret_batch == NULL)
		return pool_err(-EINVAL, "pool_batch_new: invalid argument");
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return pool_err(-ENOMEM, "out of memory");
	b->pool = pool;
	*ret_batch = b;
	return 0;
}

POOL_EXPORT void pool_batch_free(struct pool_batch *batch)
{
	if (batch == NULL)
		return;
	free(batch->items);
	free(batch->regs);
	free(batch);
}

static int batch_add(struct pool_batch *b, struct pool_region *r, uint64_t off, void *buf,
		     size_t len, bool write)
{
	const char *what = write ? "pool_batch_write" : "pool_batch_read";
	int rc = region_check(r, off, buf, len, what);

	if (rc < 0)
		return rc;
	if (b == NULL || r->pool != b->pool)
		return pool_err(-EINVAL, "%s: the batch and the region belong to different pools",
				what);
	if (write && !(r->flags & POOL_REGION_WRITE))
		return pool_err(-EBADF, "region '%s' is open for reading only", r->name);
	if (len == 0)
		return 0;
	rc = region_refresh(r);
	if (rc < 0)
		return rc;
	if (r->map != NULL) {
		if (write)
			memcpy((char *)r->map + off, buf, len);
		else
			memcpy(buf, (char *)r->map + off, len);
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct pool_xfer_item *more = realloc(b->items, cap * sizeof(*more));
		struct pool_region **mregs;

		if (more == NULL)
			return pool_err(-ENOMEM, "out of memory");
		b->items = more;
		mregs = realloc(b->regs, cap * sizeof(*mregs));
		if (mregs == NULL)
			return pool_err(-ENOMEM, "out of memory");
		b->regs = mregs;
		b->cap = cap;
	}
	b->regs[b->n] = r;
	b->items[b->n++] = (struct pool_xfer_item){.op = write ? POOL_XFER_WRITE : POOL_XFER_READ,
						   .region = r->id,
						   .off = off,
						   .buf = buf,
						   .len = len,
						   .max_op = r->stripe * REGION_STRIPES_PER_OP};
	snprintf(b->name, sizeof(b->name), "%s", r->name);
	return 0;
}

POOL_EXPORT int pool_batch_read(struct pool_batch *batch, struct pool_region *region,
				uint64_t offset, void *buf, size_t len)
{
	return batch_add(batch, region, offset, buf, len, false);
}

POOL_EXPORT int pool_batch_write(struct pool_batch *batch, struct pool_region *region,
				 uint64_t offset, const void *buf, size_t len)
{
	return batch_add(batch, region, offset, (void *)buf, len, true);
}

POOL_EXPORT int pool_batch_wait(struct pool_batch *batch)
{
	size_t i, again;
	int rc, err = 0;

	if (batch == NULL)
		return pool_err(-EINVAL, "pool_batch_wait: invalid argument");
	rc = pool_xfer_run(batch->pool, batch->items, batch->n);
	/*
	 * The first error wins; items whose region's grant expired are carried
	 * once more after the region was opened again.
	 */
	for (i = 0, again = 0; rc == 0 && i < batch->n; i++) {
		int st = batch->items[i].status;

		if (st == -EKEYEXPIRED) {
			size_t j;

			/*
			 * Once per region: the items moved before it name the regions opened again.
			 */
			for (j = 0; j < again && batch->regs[j] != batch->regs[i]; j++)
				;
			st = j < again ? 0 : region_reopen(batch->regs[i]);
		}
		if (batch->items[i].status == -EKEYEXPIRED && st == 0) {
			batch->items[again] = batch->items[i];
			batch->regs[again++] = batch->regs[i];
		} else if (st < 0 && err == 0) {
			err = region_xfer_err(batch->name, "batch", st);
		}
	}
	if (rc == 0 && again > 0)
		rc = pool_xfer_run(batch->pool, batch->items, again);
	for (i = 0; rc == 0 && i < again; i++)
		if (batch->items[i].status < 0 && err == 0)
			err = region_xfer_err(batch->name, "batch", batch->items[i].status);
	batch->n = 0;
	return rc < 0 ? rc : err;
}

/*
 * Atomics always go through poold, even for a mapped region, so that local
 * and remote users of the same word agree (poold applies them, and UCX's
 * software atomics from other nodes, in its one thread). cswap: compare
 * with a, swap in b; otherwise add a.
 */
static int region_atomic(struct pool_region *r, uint64_t off, bool cswap, uint64_t a, uint64_t b,
			 uint64_t *ret_old)
{
	struct pool_xfer_item it = {
	    .op = cswap ? POOL_XFER_CSWAP : POOL_XFER_FADD, .off = off, .a = a, .b = b};
	int rc = r ? region_refresh(r) : pool_err(-EINVAL, "invalid argument");

	if (rc < 0)
		return rc;
	if (off % 8 != 0)
		return pool_err(-EINVAL, "atomics need an 8-byte aligned offset");
	if (off > r->size || r->size - off < 8)
		return pool_err(-ERANGE, "offset %llu is outside region '%s'",
				(unsigned long long)off, r->name);
	if (!(r->flags & POOL_REGION_WRITE))
		return pool_err(-EBADF, "region '%s' is open for reading only", r->name);
	rc = region_carry(r, &it, cswap ? "compare-swap" : "fetch-add");
	if (rc == 0 && ret_old != NULL)
		*ret_old = it.old;
	return rc;
}

POOL_EXPORT int pool_region_fetch_add(struct pool_region *region, uint64_t offset, uint64_t add,
				      uint64_t *ret_old)
{
	return region_atomic(region, offset, false, add, 0, ret_old);
}

POOL_EXPORT int pool_region_compare_swap(struct pool_region *region, uint64_t offset,
					 uint64_t expect, uint64_t desired, uint64_t *ret_old)
{
	return region_atomic(region, offset, true, expect, desired, ret_old);
}
struct pool_region_info {
	Pool__RegionReply *rep;
};

POOL_EXPORT int pool_region_stat(struct pool *pool, const char *name,
				 struct pool_region_info **ret_info)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	struct pool_region_info *info;
	int rc;

	if (pool == NULL || name == NULL || ret_info == NULL)
		return pool_err(-EINVAL, "pool_region_stat: invalid argument");
	info = calloc(1, sizeof(*info));
	if (info == NULL)
		return pool_err(-ENOMEM, "out of memory");
	req.name = (char *)name;
	rc = pool_call(pool, WIRE_REGION_STAT, &req.base, WIRE_REGION_REPLY,
		       (ProtobufCMessage **)&info->rep);
	if (rc < 0) {
		free(info);
		return rc;
	}
	*ret_info = info;
	return 0;
}

POOL_EXPORT void pool_region_info_free(struct pool_region_info *info)
{
	if (info == NULL)
		return;
	wire_msg_free(&info->rep->base);
	free(info);
}

POOL_EXPORT uint64_t pool_region_info_size(const struct pool_region_info *info)
{
	return info->rep->region->size;
}

POOL_EXPORT const char *pool_region_info_class(const struct pool_region_info *info)
{
	return info->rep->region->class_;
}

POOL_EXPORT const char *pool_region_info_placement(const struct pool_region_info *info)
{
	return info->rep->region->placement;
}

POOL_EXPORT unsigned pool_region_info_mode(const struct pool_region_info *info)
{
	return info->rep->region->mode;
}

POOL_EXPORT uint32_t pool_region_info_uid(const struct pool_region_info *info)
{
	return info->rep->region->uid;
}

POOL_EXPORT uint32_t pool_region_info_gid(const struct pool_region_info *info)
{
	return info->rep->region->gid;
}

POOL_EXPORT uint32_t pool_region_info_leases(const struct pool_region_info *info)
{
	return info->rep->region->leases;
}

POOL_EXPORT uint32_t pool_region_info_nodes(const struct pool_region_info *info)
{
	const Pool__RegionInfo *ri = info->rep->region;
	uint32_t n = 0;
	size_t i, k;

	for (i = 0; i < ri->n_extents; i++) {
		for (k = 0; k < i && ri->extents[k]->node != ri->extents[i]->node; k++)
			;
		n += k == i;
	}
	return n;
}

/*
 * daemon/snap/snap-copy.c - the node's shared copies of snapshot images.
 *
 * A copy is a memfd holding a whole image, kept per (name, id) and handed
 * to the clients of this node (SCM_RIGHTS), which map it copy-on-write:
 * a thousand clones of one image share its pages and own only the pages
 * they write. poold never reads the store: the first client to ask gets an
 * empty memfd and fills it (it already holds the snapshot open), then says
 * done; poold seals the memfd so that nobody can change a byte of it any
 * more, and answers the clients that asked in the meantime. A filler that
 * aborts or goes away hands the fill to the next of them, on a fresh memfd.
 * A lazy get does not wait: it gets a read-only fd of the copy being filled
 * ("filling"), and the client fetches what is not there yet itself, asking
 * "state" until the copy is ready.
 *
 * The id is the random identity a put writes into the snapshot's manifest.
 * Only clients that could read the manifest know it, so it is the
 * capability to a copy: a get must name it, and list shows it only to
 * admins and to the uid that made the copy.
 *
 * Nothing checks the bytes a filler writes against the snapshot's pages,
 * so a copy is trusted only by those who trust its filler: a copy filled
 * by an admin (root, poold's own uid, the admin group: `snap place`) is
 * shared, and serves every client that names its id; a copy filled by any
 * other uid serves that uid alone. A tenant who may read another uid's
 * snapshot therefore never decides what that uid's clones hold, and its
 * own clones never depend on another tenant's fill. A different id under
 * the same name, from the same maker (the admins for shared copies), is a
 * newer image: it replaces the older copy; nobody evicts another uid's
 * copy by naming it.
 *
 * The bytes of all copies are bounded by snap.copies; to make room, the
 * least recently used ready copies are dropped (clients keep what they
 * have mapped: the kernel frees a memfd with its last mapping). The copies
 * of one uid other than the admins, ready or filling, take at most
 * snap.copies_per_uid (half of snap.copies unless set): past it, that
 * uid's own least recently used ready copies make room, so a tenant cannot
 * push the others' copies out, and a fill that never ends leaves the
 * others room.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/control/control.h"
#include "daemon/lend/lend.h"
#include "daemon/net/net.h"
#include "daemon/snap/snap.h"
#include "proto/pool_contract.h"

#define SNAPCOPY_MAX 256		      /* copies on a node: each is an fd */
#define SNAPCOPY_WAITERS_MAX 1024	      /* gets held while one copy fills */
#define SNAPCOPY_FILLS_MAX 16		      /* copies one connection fills at once */
#define SNAPCOPY_SIZE_MAX (UINT64_C(1) << 40) /* bytes of one image */
#define SNAPCOPY_ALIGN 4096		      /* an image is whole pages */
#define SNAPCOPY_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

enum snap_copy_state { COPY_FILLING, COPY_READY };

struct snapcopy {
	TAILQ_ENTRY(snapcopy) entry; /* least recently used first */
	char name[POOL_SNAP_NAME_MAX + 1];
	uint64_t id, size;
	int fd;
	enum snap_copy_state state;
	bool shared;	      /* filled by an admin: every uid that names it uses it */
	uid_t uid;	      /* of the client that asked first */
	uint64_t filler;      /* filling: the session of the client filling it */
	uint64_t clones;      /* gets answered with it ready */
	struct req **waiters; /* filling: the gets held until it is ready */
	size_t nwaiters;
};

struct snap_copies {
	TAILQ_HEAD(, snapcopy) list;
	size_t count;
	uint64_t bytes;
	uint64_t clones, fills, evictions; /* for the metrics */
	/* lazy restores of this node's clients, as they report them ("restored") */
	uint64_t restores, restores_failed, faults, pages, prefetched;
};

static struct snap_copies *snap_copy_space(struct poold *pd)
{
	if (pd->snap_copies == NULL) {
		pd->snap_copies = calloc(1, sizeof(*pd->snap_copies));
		if (pd->snap_copies != NULL)
			TAILQ_INIT(&pd->snap_copies->list);
	}
	return pd->snap_copies;
}

/* snap.copies, or a quarter of the node's RAM when it is 0. */
static uint64_t snap_copy_budget(const struct poold *pd)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	if (pd->conf->snap_copies > 0)
		return (uint64_t)pd->conf->snap_copies;
	if (pages <= 0 || psize <= 0)
		return 0;
	return (uint64_t)pages * (uint64_t)psize / 4;
}

/* Whether r may use copy c: it trusts the copy's filler (see above). */
static bool snap_copy_trusts(const struct req *r, const struct snapcopy *c)
{
	return c->shared || c->uid == r->uid;
}

/* Whether r fills copies like c: an admin fills the shared ones, another uid its own. */
static bool snap_copy_makes(const struct req *r, const struct snapcopy *c)
{
	return r->admin ? c->shared : !c->shared && c->uid == r->uid;
}

/* The copy of (name, id) r may use: a ready one before one filling, a shared one first. */
static struct snapcopy *snap_copy_find(struct snap_copies *sc, const char *name, uint64_t id,
				       const struct req *r)
{
	struct snapcopy *c, *best = NULL;

	TAILQ_FOREACH(c, &sc->list, entry) {
		if (c->id != id || strcmp(c->name, name) != 0 || !snap_copy_trusts(r, c))
			continue;
		if (best == NULL || (c->state == COPY_READY && best->state != COPY_READY) ||
		    (c->state == best->state && c->shared && !best->shared))
			best = c;
	}
	return best;
}

/* A copy of name with another id than id, of those r makes: an older image. */
static struct snapcopy *snap_copy_find_older(struct snap_copies *sc, const char *name, uint64_t id,
					     const struct req *r)
{
	struct snapcopy *c;

	TAILQ_FOREACH(c, &sc->list, entry)
		if (c->id != id && strcmp(c->name, name) == 0 && snap_copy_makes(r, c))
			return c;
	return NULL;
}

/* An empty memfd of size bytes that can be sealed. */
static int snap_copy_memfd(const struct snapcopy *c, int *ret_fd)
{
	char label[16 + POOL_SNAP_NAME_MAX];
	int fd;

	snprintf(label, sizeof(label), "poold-snap:%s", c->name);
	fd = memfd_create(label, MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (fd < 0) {
		log_warn("memfd_create for snapshot copy %s", c->name);
		return -errno;
	}
	if (ftruncate(fd, (off_t)c->size) < 0) {
		int rc = -errno;

		log_warn("ftruncate of snapshot copy %s to %llu bytes", c->name,
			 (unsigned long long)c->size);
		close(fd);
		return rc;
	}
	*ret_fd = fd;
	return 0;
}

/* Answer a get with the copy's fd: ready (and count a clone) or fill. */
static int snap_copy_send(struct snap_copies *sc, struct snapcopy *c, struct req *r)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;
	int rc;

	rep.status = c->state == COPY_READY ? POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_READY
					    : POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILL;
	rc = conn_send_fd(r->conn, WIRE_SNAP_COPY_REPLY, r->id, &rep.base, c->fd);
	if (rc < 0)
		return req_errorf(r, rc, "cannot pass the copy of %s: %s", c->name, err_str(rc));
	if (c->state == COPY_READY) {
		c->clones++;
		sc->clones++;
	}
	return 0;
}

/*
 * Answer a lazy get while another client fills the copy: filling, with a
 * read-only fd of it (a private mapping sees the pages as they are
 * written; the client fetches the others itself), counted as a clone.
 */
static int snap_copy_send_filling(struct snap_copies *sc, struct snapcopy *c, struct req *r)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;
	int rc, ro;

	if ((ro = fd_read_only(c->fd)) < 0)
		return req_errorf(r, -errno, "cannot reopen the copy of %s: %s", c->name,
				  strerror(errno));
	rep.status = POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILLING;
	rc = conn_send_fd(r->conn, WIRE_SNAP_COPY_REPLY, r->id, &rep.base, ro);
	close(ro);
	if (rc < 0)
		return req_errorf(r, rc, "cannot pass the copy of %s: %s", c->name, err_str(rc));
	c->clones++;
	sc->clones++;
	return 0;
}

/* state: whether the copy of (name, id) is ready, and which memfd it is. */
static int snap_copy_state(struct req *r, struct snap_copies *sc, const Pool__SnapCopy *m)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;
	struct snapcopy *c = m->has_id ? snap_copy_find(sc, m->name, m->id, r) : NULL;
	struct stat st;

	rep.status = POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_NONE;
	if (c != NULL && c->fd >= 0 && fstat(c->fd, &st) == 0) {
		rep.status = c->state == COPY_READY
				 ? POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_READY
				 : POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILLING;
		rep.has_ino = 1;
		rep.ino = st.st_ino;
	}
	return req_reply(r, WIRE_SNAP_COPY_REPLY, &rep.base);
}

/* Forget a copy, failing the gets it holds with rc. */
static void snap_copy_free(struct snap_copies *sc, struct snapcopy *c, int rc, const char *why)
{
	size_t i;

	for (i = 0; i < c->nwaiters; i++) {
		req_errorf(c->waiters[i], rc, "copy of snapshot %s %s", c->name, why);
		req_finish(c->waiters[i], rc);
	}
	free(c->waiters);
	TAILQ_REMOVE(&sc->list, c, entry);
	sc->count--;
	sc->bytes -= c->size;
	if (c->fd >= 0) /* not after a refill that could not make a memfd */
		close(c->fd);
	free(c);
}

/* Answer the held gets of a copy just sealed. */
static void snap_copy_wake(struct snap_copies *sc, struct snapcopy *c)
{
	size_t i;

	for (i = 0; i < c->nwaiters; i++) {
		struct req *w = c->waiters[i];

		req_finish(w, conn_alive(w->conn) ? snap_copy_send(sc, c, w) : -ENOTCONN);
	}
	free(c->waiters);
	c->waiters = NULL;
	c->nwaiters = 0;
}

/* What a get asks for: from its request, or again for a get held on a copy that went. */
struct snap_copy_ask {
	const char *name;
	uint64_t id, size;
	bool lazy;
};

static int snap_copy_get(struct req *r, struct snap_copies *sc, const struct snap_copy_ask *a,
			 bool held);

/*
 * The filler gave up (or went away): the next waiter still connected that
 * may fill it (an admin for a shared copy) fills it instead, on a fresh
 * memfd, since nobody knows how much of the old one was written. With no
 * such waiter the copy goes, and the gets it held are asked again: each
 * finds or makes a copy of its own uid's.
 */
static void snap_copy_refill(struct snap_copies *sc, struct snapcopy *c)
{
	struct snap_copy_ask ask = {.name = NULL, .id = c->id, .size = c->size};
	char name[sizeof(c->name)];
	struct req *w, **rest;
	size_t i, nrest;
	int fd, rc;

	close(c->fd);
	c->fd = -1;
	for (i = 0; i < c->nwaiters; i++) {
		w = c->waiters[i];
		if (!conn_alive(w->conn) || (c->shared && !w->admin))
			continue;
		memmove(c->waiters + i, c->waiters + i + 1,
			(--c->nwaiters - i) * sizeof(*c->waiters));
		rc = snap_copy_memfd(c, &fd);
		if (rc < 0) {
			req_errorf(w, rc, "cannot make a copy of %s: %s", c->name, err_str(rc));
			req_finish(w, rc);
			break;
		}
		c->fd = fd;
		c->filler = w->session;
		c->uid = w->uid;
		rc = snap_copy_send(sc, c, w);
		req_finish(w, rc);
		if (rc == 0) {
			sc->fills++;
			return;
		}
		close(c->fd);
		c->fd = -1;
		i--;
	}
	rest = c->waiters;
	nrest = c->nwaiters;
	c->waiters = NULL;
	c->nwaiters = 0;
	snprintf(name, sizeof(name), "%s", c->name);
	snap_copy_free(sc, c, -ECANCELED, "was given up by the client filling it");
	ask.name = name;
	for (i = 0; i < nrest; i++) {
		w = rest[i];
		rc = conn_alive(w->conn) ? snap_copy_get(w, sc, &ask, true) : -ENOTCONN;
		if (rc != REQ_LATER)
			req_finish(w, rc);
	}
	free(rest);
}

/* Drop least recently used ready copies until size more bytes and one more copy fit. */
static int snap_copy_room(struct poold *pd, struct snap_copies *sc, uint64_t size)
{
	uint64_t budget = snap_copy_budget(pd), filling = 0;
	struct snapcopy *c, *next;
	size_t nfilling = 0;

	/* Copies being filled stay: evict nothing when they alone leave no room. */
	TAILQ_FOREACH(c, &sc->list, entry)
		if (c->state == COPY_FILLING) {
			filling += c->size;
			nfilling++;
		}
	if (filling + size > budget || nfilling >= SNAPCOPY_MAX)
		return -ENOSPC;
	for (c = TAILQ_FIRST(&sc->list); c != NULL; c = next) {
		if (sc->bytes + size <= budget && sc->count < SNAPCOPY_MAX)
			return 0;
		next = TAILQ_NEXT(c, entry);
		if (c->state != COPY_READY)
			continue;
		log_debug("snapshot copy %s (%llu bytes) evicted", c->name,
			  (unsigned long long)c->size);
		sc->evictions++;
		snap_copy_free(sc, c, -ENOENT, "was evicted");
	}
	return 0;
}

/* snap.copies_per_uid, or half of snap.copies when it is 0. */
static uint64_t snap_copy_uid_budget(const struct poold *pd)
{
	if (pd->conf->snap_copies_per_uid > 0)
		return (uint64_t)pd->conf->snap_copies_per_uid;
	return snap_copy_budget(pd) / 2;
}

/*
 * Room for size more bytes of r's uid's copies under snap.copies_per_uid:
 * its own least recently used ready copies go first, and only when that
 * makes room (the copies it is filling cannot go). Admins' copies are the
 * shared ones, bounded by snap.copies alone.
 */
static int snap_copy_uid_room(struct req *r, struct snap_copies *sc, uint64_t size)
{
	uint64_t budget = snap_copy_uid_budget(r->pd), held = 0, filling = 0;
	struct snapcopy *c, *next;

	if (r->admin)
		return 0;
	TAILQ_FOREACH(c, &sc->list, entry) {
		if (c->shared || c->uid != r->uid)
			continue;
		held += c->size;
		if (c->state == COPY_FILLING)
			filling += c->size;
	}
	if (filling + size > budget)
		return req_errorf(
		    r, -ENOSPC,
		    "the copies of uid %u on this node may take %llu "
		    "bytes (snap.copies_per_uid); it fills %llu, and this one has %llu",
		    (unsigned)r->uid, (unsigned long long)budget, (unsigned long long)filling,
		    (unsigned long long)size);
	for (c = TAILQ_FIRST(&sc->list); c != NULL && held + size > budget; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->shared || c->uid != r->uid || c->state != COPY_READY)
			continue;
		held -= c->size;
		sc->evictions++;
		snap_copy_free(sc, c, -ENOENT, "was evicted");
	}
	return 0;
}

/* get: no copy r may use yet, so this client makes one. */
static int snap_copy_create(struct req *r, struct snap_copies *sc, const struct snap_copy_ask *a)
{
	struct snapcopy *c;
	unsigned fills = 0;
	int rc;

	/* A client that never says done would hold the memory of its copies: only so many. */
	TAILQ_FOREACH(c, &sc->list, entry)
		fills += c->state == COPY_FILLING && c->filler == r->session;
	if (fills >= SNAPCOPY_FILLS_MAX)
		return req_errorf(r, -EBUSY, "this connection fills %u copies already", fills);
	rc = snap_copy_uid_room(r, sc, a->size);
	if (rc < 0)
		return rc;
	rc = snap_copy_room(r->pd, sc, a->size);
	if (rc < 0)
		return req_errorf(r, rc,
				  "no room for a %llu-byte copy of %s: snap.copies is "
				  "%llu bytes, or %d copies, and the copies being filled use them",
				  (unsigned long long)a->size, a->name,
				  (unsigned long long)snap_copy_budget(r->pd), SNAPCOPY_MAX);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	snprintf(c->name, sizeof(c->name), "%s", a->name);
	c->id = a->id;
	c->size = a->size;
	c->state = COPY_FILLING;
	c->shared = r->admin;
	c->uid = r->uid;
	c->filler = r->session;
	rc = snap_copy_memfd(c, &c->fd);
	if (rc < 0) {
		free(c);
		return req_errorf(r, rc, "cannot make a copy of %s: %s", a->name, err_str(rc));
	}
	TAILQ_INSERT_TAIL(&sc->list, c, entry);
	sc->count++;
	sc->bytes += c->size;
	rc = snap_copy_send(sc, c, r);
	if (rc < 0) {
		snap_copy_free(sc, c, rc, "could not be passed");
		return rc;
	}
	sc->fills++;
	return 0;
}

/* get: wait for the client filling the copy (r is held already when held). */
static int snap_copy_wait(struct req *r, struct snapcopy *c, bool held)
{
	struct req **w;

	if (c->filler == r->session)
		return req_errorf(r, -EBUSY, "this connection is filling the copy of %s", c->name);
	if (c->nwaiters >= SNAPCOPY_WAITERS_MAX)
		return req_errorf(r, -EAGAIN, "%d clients wait for the copy of %s already",
				  SNAPCOPY_WAITERS_MAX, c->name);
	w = realloc(c->waiters, (c->nwaiters + 1) * sizeof(*w));
	if (w == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	c->waiters = w;
	w[c->nwaiters] = held ? r : req_hold(r);
	if (w[c->nwaiters] == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	c->nwaiters++;
	return REQ_LATER;
}

/*
 * get: the copy r may use, ready (sent), being filled by another client
 * (held until then, or sent read-only when lazy), or none yet (made, for r
 * to fill). held: r is a held get asked again (snap_copy_refill()).
 */
static int snap_copy_get(struct req *r, struct snap_copies *sc, const struct snap_copy_ask *a,
			 bool held)
{
	struct snapcopy *c = snap_copy_find(sc, a->name, a->id, r);

	if (c == NULL) {
		/* A newer image under that name from its copy's maker: the old one is done with. */
		struct snapcopy *old = snap_copy_find_older(sc, a->name, a->id, r);

		if (old != NULL)
			snap_copy_free(sc, old, -ESTALE, "was replaced by a newer image");
		return snap_copy_create(r, sc, a);
	}
	if (c->size != a->size)
		return req_errorf(r, -EINVAL, "the copy of %s has %llu bytes, not %llu", c->name,
				  (unsigned long long)c->size, (unsigned long long)a->size);
	TAILQ_REMOVE(&sc->list, c, entry);
	TAILQ_INSERT_TAIL(&sc->list, c, entry);
	if (c->state == COPY_FILLING && a->lazy && c->filler != r->session)
		return snap_copy_send_filling(sc, c, r);
	if (c->state == COPY_FILLING)
		return snap_copy_wait(r, c, held);
	return snap_copy_send(sc, c, r);
}

static int snap_copy_get_request(struct req *r, struct snap_copies *sc, const Pool__SnapCopy *m)
{
	struct snap_copy_ask a = {
	    .name = m->name, .id = m->id, .size = m->size, .lazy = m->has_lazy && m->lazy};

	if (!m->has_id || !m->has_size)
		return req_errorf(r, -EINVAL, "get needs a name, an id and a size");
	if (m->size == 0 || m->size > SNAPCOPY_SIZE_MAX || m->size % SNAPCOPY_ALIGN != 0)
		return req_errorf(r, -EINVAL, "size %llu: a multiple of %d bytes, at most 1T",
				  (unsigned long long)m->size, SNAPCOPY_ALIGN);
	return snap_copy_get(r, sc, &a, false);
}

/* The copy a done or abort is about: the one of (name, id) this client is filling. */
static int snap_copy_filling(struct req *r, struct snap_copies *sc, const Pool__SnapCopy *m,
			     struct snapcopy **ret_c)
{
	struct snapcopy *c;
	bool named = false;

	if (!m->has_id)
		return req_errorf(r, -EINVAL, "%s needs a name and an id",
				  m->op == POOL__SNAP_COPY_OP__SNAP_COPY_OP_DONE ? "done"
										 : "abort");
	TAILQ_FOREACH(c, &sc->list, entry) {
		if (c->id != m->id || strcmp(c->name, m->name) != 0)
			continue;
		if (c->state == COPY_FILLING && c->filler == r->session) {
			*ret_c = c;
			return 0;
		}
		named = true;
	}
	if (!named)
		return req_errorf(r, -ENOENT, "no copy of %s with that id here", m->name);
	return req_errorf(r, -EPERM, "this connection is not filling the copy of %s", m->name);
}

static int snap_copy_reply(struct req *r, Pool__SnapCopyStatus status)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;

	rep.status = status;
	return req_reply(r, WIRE_SNAP_COPY_REPLY, &rep.base);
}

/*
 * done: seal the copy. F_SEAL_WRITE fails with EBUSY while a shared
 * writable mapping exists: the filler must munmap first, and may retry.
 */
static int snap_copy_done(struct req *r, struct snap_copies *sc, const Pool__SnapCopy *m)
{
	struct snapcopy *c;
	int rc;

	rc = snap_copy_filling(r, sc, m, &c);
	if (rc < 0)
		return rc;
	if (fcntl(c->fd, F_ADD_SEALS, SNAPCOPY_SEALS) < 0) {
		rc = -errno;
		return req_errorf(r, rc,
				  rc == -EBUSY ? "the copy of %s is still mapped writable: "
						 "unmap it first"
					       : "cannot seal the copy of %s",
				  c->name);
	}
	c->state = COPY_READY;
	c->filler = 0;
	rc = snap_copy_reply(r, POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_DONE);
	snap_copy_wake(sc, c);
	return rc;
}

static int snap_copy_abort(struct req *r, struct snap_copies *sc, const Pool__SnapCopy *m)
{
	struct snapcopy *c;
	int rc;

	rc = snap_copy_filling(r, sc, m, &c);
	if (rc < 0)
		return rc;
	rc = snap_copy_reply(r, POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_ABORTED);
	snap_copy_refill(sc, c);
	return rc;
}

static void snap_copy_entry(const struct req *r, const struct snapcopy *c, Pool__SnapCopyEntry *e)
{
	pool__snap_copy_entry__init(e);
	e->name = (char *)c->name;
	/* The id is the capability: only for admins and the uid that made the copy. */
	if (r->admin || r->uid == c->uid) {
		e->has_id = 1;
		e->id = c->id;
	}
	e->size = c->size;
	e->state = c->state == COPY_READY ? POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_READY
					  : POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILLING;
	e->clones = c->clones;
	e->uid = (uint32_t)c->uid;
	e->waiters = (uint32_t)c->nwaiters;
}

/* list (name NULL: all copies) or drop (the copies of name the caller may drop). */
static int snap_copy_list(struct req *r, struct snap_copies *sc, const char *name, bool drop)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;
	Pool__SnapCopyEntry *e, **ep;
	struct snapcopy *c, *next;
	size_t n = 0, denied = 0;
	int rc;

	e = calloc(sc->count + 1, sizeof(*e));
	ep = calloc(sc->count + 1, sizeof(*ep));
	if (e == NULL || ep == NULL) {
		free(e);
		free(ep);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	TAILQ_FOREACH(c, &sc->list, entry) {
		if (name != NULL && strcmp(c->name, name) != 0)
			continue;
		if (drop && !r->admin && !snap_copy_makes(r, c)) {
			denied++;
			continue;
		}
		snap_copy_entry(r, c, &e[n]);
		ep[n] = &e[n];
		n++;
	}
	if (drop && n == 0 && denied > 0) {
		rc = req_errorf(r, -EPERM, "the copies of %s belong to other users", name);
		goto out;
	}
	rep.status = drop ? POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_DROPPED
			  : POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_LIST;
	rep.copies = ep;
	rep.n_copies = n;
	rc = req_reply(r, WIRE_SNAP_COPY_REPLY, &rep.base);
	/* The entries point into the copies: free those only once the reply is out. */
	for (c = TAILQ_FIRST(&sc->list); drop && c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (strcmp(c->name, name) == 0 && (r->admin || snap_copy_makes(r, c)))
			snap_copy_free(sc, c, -ENOENT, "was dropped");
	}
out:
	free(e);
	free(ep);
	return rc;
}

static int snap_copy_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__SnapCopy *m = (const Pool__SnapCopy *)msg;
	struct snap_copies *sc;

	/* The fd must reach a process on this node: never a request relayed by a peer. */
	if (r->node != r->pd->node_id)
		return req_errorf(r, -EOPNOTSUPP, "snapshot copies serve local clients only");
	sc = snap_copy_space(r->pd);
	if (sc == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	if (m->op == POOL__SNAP_COPY_OP__SNAP_COPY_OP_LIST)
		return snap_copy_list(r, sc, NULL, false);
	if (m->op == POOL__SNAP_COPY_OP__SNAP_COPY_OP_RESTORED) {
		/* Counted as told: a client can only skew this node's metrics. */
		Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;

		sc->restores++;
		sc->restores_failed += m->has_failed && m->failed;
		sc->faults += m->faults;
		sc->pages += m->pages;
		sc->prefetched += m->prefetched;
		rep.status = POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_COUNTED;
		return req_reply(r, WIRE_SNAP_COPY_REPLY, &rep.base);
	}
	/* the others name a copy */
	if (m->name == NULL || !name_ok(m->name, POOL_SNAP_NAME_MAX, false))
		return req_errorf(r, -EINVAL, "snapshot name: 1-%d characters of [A-Za-z0-9._:/-]",
				  POOL_SNAP_NAME_MAX);
	switch (m->op) {
	case POOL__SNAP_COPY_OP__SNAP_COPY_OP_GET:
		return snap_copy_get_request(r, sc, m);
	case POOL__SNAP_COPY_OP__SNAP_COPY_OP_DONE:
		return snap_copy_done(r, sc, m);
	case POOL__SNAP_COPY_OP__SNAP_COPY_OP_ABORT:
		return snap_copy_abort(r, sc, m);
	case POOL__SNAP_COPY_OP__SNAP_COPY_OP_DROP:
		return snap_copy_list(r, sc, m->name, true);
	case POOL__SNAP_COPY_OP__SNAP_COPY_OP_STATE:
		return snap_copy_state(r, sc, m);
	default: /* (wire_msg_unpack() refused any other number) */
		return req_errorf(r, -EINVAL, "unknown snapshot copy operation %d", m->op);
	}
}

/*
 * A client connection ended: its own held gets are answered (into the
 * void) now, not at the fill, and what it was filling goes to the next
 * waiter. A refill may make and drop copies, so each starts a new walk.
 */
void snap_copy_session_end(struct poold *pd, uint64_t session)
{
	struct snap_copies *sc = pd->snap_copies;
	struct snapcopy *c;
	size_t i, j;

	if (sc == NULL)
		return;
	TAILQ_FOREACH(c, &sc->list, entry) {
		for (i = j = 0; i < c->nwaiters; i++) {
			if (c->waiters[i]->session == session)
				req_finish(c->waiters[i], -ENOTCONN);
			else
				c->waiters[j++] = c->waiters[i];
		}
		c->nwaiters = j;
	}
	for (;;) {
		TAILQ_FOREACH(c, &sc->list, entry)
			if (c->state == COPY_FILLING && c->filler == session)
				break;
		if (c == NULL)
			return;
		log_debug("the client filling the copy of %s went away", c->name);
		snap_copy_refill(sc, c);
	}
}

/* What the metrics tell: copies, their bytes, clones served, fills started, evictions. */
void snap_copy_stats(struct poold *pd, uint64_t ret[SNAPCOPY_STATS])
{
	struct snap_copies *sc = pd->snap_copies;

	if (sc == NULL) {
		memset(ret, 0, SNAPCOPY_STATS * sizeof(ret[0]));
		return;
	}
	ret[0] = sc->count;
	ret[1] = sc->bytes;
	ret[2] = sc->clones;
	ret[3] = sc->fills;
	ret[4] = sc->evictions;
	ret[5] = sc->restores;
	ret[6] = sc->restores_failed;
	ret[7] = sc->faults;
	ret[8] = sc->pages;
	ret[9] = sc->prefetched;
}

/* Drop every copy (poold stops): held gets get an error. */
void snap_copy_close(struct poold *pd)
{
	struct snap_copies *sc = pd->snap_copies;

	if (sc == NULL)
		return;
	while (!TAILQ_EMPTY(&sc->list))
		snap_copy_free(sc, TAILQ_FIRST(&sc->list), -ESHUTDOWN, "is gone: poold stops");
	free(sc);
	pd->snap_copies = NULL;
}

const struct ctl_handler snap_copy_handlers[] = {
    {WIRE_SNAP_COPY, CTL_ANY, AT_HERE, snap_copy_request, NULL},
    {0, 0, 0, NULL, NULL},
};

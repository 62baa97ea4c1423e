/*
 * daemon/resp/resp-place.c - a SET's big value read straight into its place.
 *
 * A SET of a big value (the parser's RESP_PART_BULK or more) used to be
 * copied twice after the kernel: socket -> argument, argument -> the
 * value's place in the lend pool. Now, when its header comes, the value is
 * reserved where it will live, read there as it arrives, and the SET
 * commits it: the kernel's copy is the only one.
 *
 * Only where the SET runs as soon as it is whole, with nothing else
 * between, so that reserving early changes nothing a client can see: a
 * plain SET key value (options come after the value, too late), on an
 * authenticated connection outside MULTI with no command read ahead and no
 * write in flight, in a database that exists and whose value would land in
 * this node's DRAM in one copy. If another client's write or a flush
 * overtook the reservation while the value came (the index's last
 * reserver wins), the SET stores the value again from where it lies, as
 * Redis would have run it then. A value that never comes whole is given
 * back when the parser lets go of it.
 */
#include "config.h"

#include <errno.h>
#include <strings.h>

#include "daemon/kv/kv.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"

static char *resp_place(void *arg, const struct resp_parser *p, size_t len)
{
	struct resp_conn *c = arg;
	struct poold *pd = c->rs->pd;
	const uint8_t *key = (const uint8_t *)p->argv[1];
	struct kv_where w;
	char ns[32];

	if (p->nargs != 3 || p->have != 2 || p->argl[0] != 3 ||
	    strcasecmp(p->argv[0], "set") != 0 || !c->authed || c->multi || c->closing ||
	    c->nahead > 0 || c->inflight > 0 || c->fetching)
		return NULL;
	resp_db_name(c, c->db, ns, sizeof(ns));
	if (!kv_local_lands_here(pd, c->uid, ns, key, p->argl[1], len) ||
	    kv_local_reserve(pd, c->session, c->uid, ns, key, p->argl[1], len, true, &w) < 0)
		return NULL;
	if (w.node != pd->node_id || w.arena >= pd->narenas) { /* not where it was to land */
		kv_local_op(pd, c->session, c->uid, ns, KV_ABORT, key, p->argl[1], w.version, NULL);
		return NULL;
	}
	c->placed =
	    (struct resp_placed){(char *)pd->arenas[w.arena].base + w.off, w.version, false};
	return c->placed.at;
}

/* The parser lets go of the value: given back unless the SET published it. */
static void resp_unplace(void *arg, const struct resp_parser *p)
{
	struct resp_conn *c = arg;
	char ns[32];

	if (!c->placed.committed) {
		resp_db_name(c, c->db, ns, sizeof(ns));
		kv_local_op(c->rs->pd, c->session, c->uid, ns, KV_ABORT,
			    (const uint8_t *)p->argv[1], p->argl[1], c->placed.version, NULL);
	}
	c->placed = (struct resp_placed){NULL, 0, false};
}

void resp_place_init(struct resp_conn *c)
{
	c->placer = (struct resp_placer){resp_place, resp_unplace, c};
	c->p.placer = &c->placer;
}

int resp_place_commit(struct resp_conn *c, const char *ns, const char *key, size_t klen,
		      int64_t expire)
{
	struct poold *pd = c->rs->pd;
	int rc;

	rc = kv_local_commit_own(pd, c->session, c->uid, ns, (const uint8_t *)key, klen,
				 c->placed.version);
	if (rc < 0)
		return rc;
	c->placed.committed = true;
	if (expire != KV_EXPIRE_KEEP)
		kv_local_expire(pd, c->uid, ns, (const uint8_t *)key, klen, expire);
	return 0;
}

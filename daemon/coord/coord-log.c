/*
 * daemon/coord/coord-log.c - the coordinator's journal.
 *
 * With coord.journal set, the coordinator records what it alone knows of
 * the map in a journal (journal.c: checksummed, sequenced records) in a
 * file mapped with libpmem2: each region it makes or adopts (name, size,
 * class, owner, mode, id, global address, how many extents), each region
 * that goes (with the lenders that could not be told), the leases on
 * anonymous regions (which end with them), the KV namespaces' definitions,
 * its counters, and every node that registered (its id stays its own).
 * When a half is full the journal is rewritten to what is live: that
 * rewrite is the checkpoint. The records of one turn of the loop are
 * made durable together after it (coord_log_sync(): a group commit), and
 * the replies to the requests that made them wait until then.
 *
 * With coord.etcd the same records go to etcd instead (ha-log.c), and
 * the replies to requests wait until the records before them are there
 * (coord_log_hold_reply()): a new leader loads them as a restarted
 * coordinator replays its journal.
 *
 * A restarted coordinator replays it before any node registers. Regions
 * are known at once with their ids and addresses, lost until their
 * lenders report their extents (where the data is, the lenders say, as
 * without a journal); a region whose lenders never return stays listed as
 * lost instead of vanishing; a lender that returns with an extent of a
 * region destroyed while it was away has it scrubbed instead of bringing
 * the region back; an anonymous region comes back with its leases, each
 * kept if its node says the session is live in the same life of the node;
 * empty namespaces are back before any node is. A torn or corrupt tail is
 * cut off at the last good record, and said so.
 */
#include "config.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/coord/coordrecord.pb-c.h"
#include "daemon/coord/coord.h"
#include "daemon/ha/ha.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/util/util.h"

enum {
	CL_REGION = 1,
	CL_REGION_GONE = 2,
	CL_NAMESPACES = 3,
	CL_COUNTERS = 4,
	CL_TOMBSTONE_DONE = 5,
	CL_LEASE = 6,
	CL_LEASE_END = 7,
	CL_NODE = 8,
};

/* A held reply: sent once the records before it are in etcd. */
struct held_reply {
	TAILQ_ENTRY(held_reply) entry;
	struct conn *conn;
	uint64_t seq;	/* the newest record when it was made */
	uint8_t *frame; /* packed, header and all */
	size_t len;
};

/* Where records go: the pmem journal, or etcd. */
struct coord_log_sink {
	struct journal *j;
	struct etcdlog *el;
};

struct coord_log {
	int fd;
	struct pmem2_source *src;
	struct pmem2_map *map;
	struct coord_log_sink to; /* the journal, or (coord.etcd) etcd; none while replayed */
	TAILQ_HEAD(, held_reply) held;
	struct event *sync_ev;	 /* the journal's group commit, after this turn's records */
	Pool__CoordRecord *defs; /* replay: the last namespaces record */
	bool full;		 /* the live set did not fit: said once */
};

static int coord_log_write(const struct coord_log_sink *to, const Pool__CoordRecord *rec)
{
	size_t len = pool__coord_record__get_packed_size(rec);
	uint8_t *buf = malloc(len ? len : 1);
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	pool__coord_record__pack(rec, buf);
	rc = to->el != NULL ? ha_log_append(to->el, buf, len) : journal_write(to->j, buf, len);
	free(buf);
	return rc;
}

static int coord_log_write_region(const struct coord_log_sink *to, const struct region *r)
{
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	struct holding rh = {.e.region = r->id, .has_region = true};
	Pool__Holding h;

	region_record(r, &rh.region);
	holding_to_msg(&rh, &h);
	rec.kind = CL_REGION;
	rec.region = &h;
	rec.has_gva = 1;
	rec.gva = r->base;
	return coord_log_write(to, &rec);
}

static int coord_log_write_gone(const struct coord_log_sink *to, uint64_t id, const char *name,
				int kind, uint32_t *nodes, size_t n)
{
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	Pool__Holding h = POOL__HOLDING__INIT;

	h.region = id;
	h.rname = (char *)name;
	rec.kind = (uint32_t)kind;
	rec.region = &h;
	rec.nodes = nodes;
	rec.n_nodes = n;
	return coord_log_write(to, &rec);
}

static int coord_log_write_lease(const struct coord_log_sink *to, const struct region *r,
				 const struct lease *l, bool taken)
{
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	Pool__Holding h = POOL__HOLDING__INIT;
	uint32_t node = l->node;

	h.region = r->id;
	rec.kind = taken ? CL_LEASE : CL_LEASE_END;
	rec.region = &h;
	rec.nodes = &node;
	rec.n_nodes = 1;
	rec.has_session = 1;
	rec.session = l->session;
	rec.has_incarnation = taken;
	rec.incarnation = l->incarnation;
	return coord_log_write(to, &rec);
}

static int coord_log_write_node(const struct coord_log_sink *to, const struct node_id *k)
{
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	uint32_t id = k->id;

	rec.kind = CL_NODE;
	rec.nodes = &id;
	rec.n_nodes = 1;
	rec.node_name = (char *)k->name;
	rec.has_kv_drained = rec.kv_drained = k->kv_drained;
	return coord_log_write(to, &rec);
}

static int coord_log_write_namespaces(struct poold *pd, const struct coord_log_sink *to)
{
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	int rc;

	if ((rec.namespaces = kv_defs_msg(pd, &rec.n_namespaces)) == NULL)
		return -ENOMEM;
	rec.kind = CL_NAMESPACES;
	rc = coord_log_write(to, &rec);
	free(rec.namespaces);
	return rc;
}

/* The checkpoint: what is live now. */
static int coord_log_fill(struct poold *pd, const struct coord_log_sink *to)
{
	size_t i;
	Pool__CoordRecord rec = POOL__COORD_RECORD__INIT;
	struct tombstone *t;
	struct region *r;
	int rc;

	rec.kind = CL_COUNTERS;
	rec.has_next_id = rec.has_next_base = 1;
	rec.next_id = pd->regions->next_id;
	rec.next_base = pd->regions->next_base;
	if ((rc = coord_log_write(to, &rec)) < 0)
		return rc;
	TAILQ_FOREACH(r, &pd->regions->list, entry) {
		struct lease *l;

		if ((rc = coord_log_write_region(to, r)) < 0)
			return rc;
		TAILQ_FOREACH(l, &r->lease_list, entry)
			if (r->anonymous && (rc = coord_log_write_lease(to, r, l, true)) < 0)
				return rc;
	}
	TAILQ_FOREACH(t, &pd->regions->tombstones, entry)
		if ((rc = coord_log_write_gone(to, t->id, t->name, CL_REGION_GONE, &t->node, 1)) <
		    0)
			return rc;
	for (i = 0; i < pd->n_member_ids; i++)
		if ((rc = coord_log_write_node(to, &pd->member_ids[i])) < 0)
			return rc;
	return coord_log_write_namespaces(pd, to);
}

static int coord_log_fill_journal(void *arg, struct journal *j)
{
	struct coord_log_sink to = {.j = j};

	return coord_log_fill(arg, &to);
}

static int coord_log_fill_etcd(void *arg, struct etcdlog *el)
{
	struct coord_log_sink to = {.el = el};

	return coord_log_fill(arg, &to);
}

/*
 * Record a change that the map already shows: when the half is full, the
 * journal is rewritten to the live set, which holds the change too.
 */
static void coord_log_commit(struct poold *pd, int rc)
{
	struct coord_log *cl = pd->coord_log;

	if (rc == -ENOSPC)
		rc = journal_rewrite(cl->to.j, coord_log_fill_journal, pd);
	if (rc == 0 && cl->to.el != NULL && ha_log_wants_rewrite(cl->to.el))
		rc = ha_log_rewrite(cl->to.el, coord_log_fill_etcd, pd);
	if (rc == 0) {
		cl->full = false;
		static const struct timeval now;

		if (cl->to.j != NULL && journal_unsynced(cl->to.j) &&
		    !evtimer_pending(cl->sync_ev, NULL))
			evtimer_add(cl->sync_ev, &now);
		return;
	}
	if (!cl->full) {
		log_warnx(
		    "coordinator journal %s: %s: changes of the map are not recorded until it "
		    "has room",
		    cl->to.el != NULL ? "in etcd" : pd->conf->coord_journal, err_str(rc));
		events_add(pd, "journal", "the coordinator journal cannot record changes: %s",
			   err_str(rc));
	}
	cl->full = true;
}

/* Whether changes are recorded (not while the journal is replayed). */
static bool coord_log_on(const struct poold *pd)
{
	return pd->coord_log != NULL &&
	       (pd->coord_log->to.j != NULL || pd->coord_log->to.el != NULL);
}

void coord_log_region(struct poold *pd, const struct region *r)
{
	if (coord_log_on(pd))
		coord_log_commit(pd, coord_log_write_region(&pd->coord_log->to, r));
}

void coord_log_region_gone(struct poold *pd, const struct region *r, const uint32_t *nodes,
			   size_t n)
{
	if (coord_log_on(pd))
		coord_log_commit(pd, coord_log_write_gone(&pd->coord_log->to, r->id, r->name,
							  CL_REGION_GONE, (uint32_t *)nodes, n));
}

void coord_log_tombstone_done(struct poold *pd, uint64_t id, uint32_t node)
{
	if (coord_log_on(pd))
		coord_log_commit(pd, coord_log_write_gone(&pd->coord_log->to, id, "",
							  CL_TOMBSTONE_DONE, &node, 1));
}

/* Node id's record: its name, and whether it is drained. */
void coord_log_node(struct poold *pd, uint32_t id)
{
	const struct node_id *k = member_ids_find(pd, id, NULL);

	if (coord_log_on(pd) && k != NULL)
		coord_log_commit(pd, coord_log_write_node(&pd->coord_log->to, k));
}

void coord_log_namespaces(struct poold *pd)
{
	if (coord_log_on(pd))
		coord_log_commit(pd, coord_log_write_namespaces(pd, &pd->coord_log->to));
}

void coord_log_lease(struct poold *pd, const struct region *r, const struct lease *l, bool taken)
{
	if (coord_log_on(pd))
		coord_log_commit(pd, coord_log_write_lease(&pd->coord_log->to, r, l, taken));
}

/* This poold's journals, at most 2: the pmem tier's ("lender"), the coordinator's. */
size_t journals_stats(struct poold *pd, const char *names[2], struct journal_stats *st)
{
	size_t n = 0;

	if (pd->journal != NULL) {
		names[n] = "lender";
		journal_stats(pd->journal, &st[n++]);
	}
	if (pd->coord_log != NULL && pd->coord_log->to.j != NULL) {
		names[n] = "coordinator";
		journal_stats(pd->coord_log->to.j, &st[n++]);
	}
	return n;
}

/* coord.etcd, at the leader: its records in etcd. */
bool coord_log_etcd_stats(const struct poold *pd, struct ha_log_stats *ret)
{
	if (pd->coord_log == NULL || pd->coord_log->to.el == NULL)
		return false;
	ha_log_stats(pd->coord_log->to.el, ret);
	return true;
}

/* One record of the journal at open. A record that does not decode is skipped. */
static int coord_log_replay(void *arg, const uint8_t *buf, size_t len)
{
	struct poold *pd = arg;
	struct coord_log *cl = pd->coord_log;
	Pool__CoordRecord *rec = pool__coord_record__unpack(NULL, len, buf);
	const Pool__Holding *h;
	struct holding rh;
	size_t i;

	if (rec == NULL) {
		log_warnx("coordinator journal: a record of %zu bytes does not decode: skipped",
			  len);
		return 0;
	}
	h = rec->region;
	switch (rec->kind) {
	case CL_REGION:
		if (h != NULL)
			holding_of_msg(h, &rh);
		if (h == NULL || !rec->has_gva || !rh.has_region ||
		    region_replay(pd, &rh.region, rec->gva) < 0)
			log_warnx("coordinator journal: a region record does not hold up: skipped");
		break;
	case CL_REGION_GONE:
		if (h != NULL && h->rname != NULL)
			region_replay_gone(pd, h->region, h->rname, rec->nodes, rec->n_nodes);
		break;
	case CL_TOMBSTONE_DONE:
		for (i = 0; h != NULL && i < rec->n_nodes; i++)
			region_tombstone_drop(pd, rec->nodes[i], h->region);
		break;
	case CL_LEASE:
	case CL_LEASE_END:
		if (h != NULL && rec->n_nodes == 1 && rec->has_session)
			region_replay_lease(pd, h->region, rec->nodes[0], rec->session,
					    rec->incarnation, rec->kind == CL_LEASE);
		break;
	case CL_NODE:
		if (rec->n_nodes == 1 && rec->node_name != NULL) {
			member_ids_add(pd, rec->nodes[0], rec->node_name);
			member_ids_set_drained(pd, rec->nodes[0],
					       rec->has_kv_drained && rec->kv_drained);
		}
		break;
	case CL_NAMESPACES:
		if (cl->defs != NULL)
			pool__coord_record__free_unpacked(cl->defs, NULL);
		cl->defs = rec;
		return 0;
	case CL_COUNTERS:
		pd->regions->next_id = MAX(pd->regions->next_id, rec->next_id);
		pd->regions->next_base = MAX(pd->regions->next_base, rec->next_base);
		break;
	default:
		log_warnx("coordinator journal: a record of unknown kind %u: skipped", rec->kind);
	}
	pool__coord_record__free_unpacked(rec, NULL);
	return 0;
}

static void coord_log_free(struct coord_log *cl)
{
	struct held_reply *h;

	while ((h = TAILQ_FIRST(&cl->held)) != NULL) {
		TAILQ_REMOVE(&cl->held, h, entry);
		conn_unref(h->conn);
		free(h->frame);
		free(h);
	}
	if (cl->sync_ev != NULL)
		event_free(cl->sync_ev);
	ha_log_close(cl->to.el);
	if (cl->to.j != NULL)
		journal_close(cl->to.j);
	if (cl->defs != NULL)
		pool__coord_record__free_unpacked(cl->defs, NULL);
	if (cl->map != NULL)
		pmem2_map_delete(&cl->map);
	if (cl->src != NULL)
		pmem2_source_delete(&cl->src);
	if (cl->fd >= 0)
		close(cl->fd);
	free(cl);
}

/* Map the journal's file, making it coord.journal_size bytes when it is new. */
static int coord_log_map(struct poold *pd, struct coord_log *cl)
{
	const char *path = pd->conf->coord_journal;
	struct pmem2_config *cfg = NULL;
	struct stat st;
	int rc;

	cl->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (cl->fd < 0 || fstat(cl->fd, &st) < 0) {
		rc = -errno;
		log_warn("coord.journal %s", path);
		return rc;
	}
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
		log_warnx("coord.journal %s: not a file or a DAX device", path);
		return -EINVAL;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0 &&
	    (rc = posix_fallocate(cl->fd, 0, (off_t)pd->conf->coord_journal_size)) != 0) {
		errno = rc;
		log_warn("coord.journal %s: cannot make it %lld bytes", path,
			 (long long)pd->conf->coord_journal_size);
		return -rc;
	}
	if (pmem2_config_new(&cfg) != 0 || pmem2_source_from_fd(&cl->src, cl->fd) != 0 ||
	    pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE) != 0 ||
	    pmem2_map_new(&cl->map, cfg, cl->src) != 0) {
		log_warnx("coord.journal %s: %s", path, pmem2_errormsg());
		pmem2_config_delete(&cfg);
		return -EIO;
	}
	pmem2_config_delete(&cfg);
	if (pmem2_map_get_size(cl->map) < JOURNAL_MIN_SIZE) {
		log_warnx("coord.journal %s: smaller than %d bytes", path, JOURNAL_MIN_SIZE);
		return -EINVAL;
	}
	return 0;
}

/* The KV namespaces of the last namespaces record replayed. */
static void coord_log_adopt_defs(struct poold *pd, const char *from)
{
	struct coord_log *cl = pd->coord_log;

	if (cl->defs == NULL)
		return;
	kv_defs_adopt_msg(pd, cl->defs->namespaces, cl->defs->n_namespaces, from);
	pool__coord_record__free_unpacked(cl->defs, NULL);
	cl->defs = NULL;
}

/* Send the replies whose records are all durable now (in etcd: up to seq). */
static void coord_log_durable(void *arg, uint64_t seq)
{
	struct poold *pd = arg;
	struct held_reply *h;

	while ((h = TAILQ_FIRST(&pd->coord_log->held)) != NULL && h->seq <= seq) {
		TAILQ_REMOVE(&pd->coord_log->held, h, entry);
		conn_send_frame(h->conn, h->frame, h->len);
		conn_unref(h->conn);
		free(h->frame);
		free(h);
	}
}

/*
 * The journal's group commit: the records of every request handled in this
 * turn of the loop made durable at once (one msync where each record had
 * two), then the replies that waited for them.
 */
static void coord_log_sync(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd;
	(void)what;
	journal_sync(pd->coord_log->to.j);
	coord_log_durable(pd, UINT64_MAX);
}

static void coord_log_deposed(void *arg, const char *why)
{
	(void)arg;
	ha_deposed(why);
}

/*
 * A reply to a request at the coordinator: while records are on their way
 * to etcd, or not yet durable in the journal, it waits for them (what it
 * acknowledges is then recorded), and so do the replies after it. 1: held,
 * 0: send it now, or -errno.
 */
int coord_log_hold_reply(struct poold *pd, struct conn *c, uint16_t type, uint64_t req_id,
			 const ProtobufCMessage *msg)
{
	struct coord_log *cl = pd->coord_log;
	struct held_reply *h;
	uint64_t seq;
	uint8_t *frame;
	size_t len;
	int rc;

	if (cl == NULL)
		return 0;
	if (cl->to.j != NULL)
		seq = journal_unsynced(cl->to.j) ? 1 : 0; /* all go at the next sync */
	else if (cl->to.el == NULL || (seq = ha_log_unsynced(cl->to.el)) == 0)
		return 0;
	if (seq == 0)
		return 0;
	rc = wire_frame_pack(type, req_id, msg, &frame, &len);
	if (rc == 0 && (rc = conn_fits(c, type, len - WIRE_HDR_LEN)) < 0)
		free(frame);
	if (rc < 0)
		return rc;
	h = malloc(sizeof(*h));
	if (h == NULL) {
		free(frame);
		return -ENOMEM;
	}
	h->conn = conn_ref(c);
	h->seq = seq;
	h->frame = frame;
	h->len = len;
	TAILQ_INSERT_TAIL(&cl->held, h, entry);
	return 1;
}

/* coord.etcd: the coordinator's state is in etcd; load it as the new leader. */
static int coord_log_open_etcd(struct poold *pd)
{
	struct coord_log *cl = calloc(1, sizeof(*cl));
	struct ha_log_stats st;
	struct etcdlog *el;
	struct etcd *etcd;
	const char *key;
	char err[400];
	int64_t epoch;

	if (cl == NULL)
		return -ENOMEM;
	cl->fd = -1;
	TAILQ_INIT(&cl->held);
	etcd = ha_etcd(pd, &key);
	if (!ha_epoch(pd, &epoch)) {
		free(cl);
		return -EPERM;
	}
	pd->coord_log = cl; /* for the replay; it records nothing before cl->to.el is set */
	el = ha_log_open(pd->base, etcd, pd->conf->coord_etcd_prefix, key, epoch,
			 (uint64_t)pd->conf->coord_etcd_rewrite, coord_log_replay,
			 coord_log_durable, coord_log_deposed, pd, err, sizeof(err));
	if (el == NULL) {
		log_warnx("coord.etcd: %s", err);
		pd->coord_log = NULL;
		coord_log_free(cl);
		return -EIO;
	}
	cl->to.el = el;
	coord_log_adopt_defs(pd, "etcd");
	ha_log_stats(cl->to.el, &st);
	log_info("coordinator state from etcd: %zu region(s) back; %llu record(s)",
		 pd->regions->count, (unsigned long long)st.records);
	if (pd->regions->count > 0)
		events_add(pd, "journal",
			   "%zu region(s) back from etcd, lost until their lenders report them",
			   pd->regions->count);
	return 0;
}

/*
 * Open the coordinator's journal, if there is one, and replay it into the
 * map (before any node registers). 0 or -errno: a journal that is set and
 * cannot be opened stops poold rather than running without it.
 */
int coord_log_open(struct poold *pd)
{
	struct journal_stats st;
	struct coord_log *cl;
	struct tombstone *t;
	struct journal *j;
	size_t ntomb = 0;
	int rc;

	if (pd->ha != NULL)
		return coord_log_open_etcd(pd);
	if (pd->conf->coord_journal[0] == '\0')
		return 0;
	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		return -ENOMEM;
	cl->fd = -1;
	TAILQ_INIT(&cl->held);
	if ((cl->sync_ev = evtimer_new(pd->base, coord_log_sync, pd)) == NULL) {
		coord_log_free(cl);
		return -ENOMEM;
	}
	if ((rc = coord_log_map(pd, cl)) < 0) {
		coord_log_free(cl);
		return rc;
	}
	if (journal_probe(pmem2_map_get_address(cl->map), pmem2_map_get_size(cl->map)) < 0) {
		log_warnx(
		    "coord.journal %s holds something that is not a coordinator journal (or "
		    "both of its headers are damaged): not overwriting it; remove it to start "
		    "a new journal",
		    pd->conf->coord_journal);
		coord_log_free(cl);
		return -EINVAL;
	}
	pd->coord_log = cl; /* for the replay; it records nothing without its journal */
	rc = journal_open(pmem2_map_get_address(cl->map), pmem2_map_get_size(cl->map),
			  pmem2_get_persist_fn(cl->map), coord_log_replay, pd, &j);
	if (rc < 0) {
		log_warnx("coord.journal %s: %s", pd->conf->coord_journal, err_str(rc));
		pd->coord_log = NULL;
		coord_log_free(cl);
		return rc;
	}
	coord_log_adopt_defs(pd, "the coordinator journal");
	cl->to.j = j;
	journal_stats(j, &st);
	if (st.dropped > 0) {
		log_warnx("coordinator journal: a torn or corrupt record ends it: used up to the "
			  "%llu record(s) before it",
			  (unsigned long long)st.records);
		events_add(pd, "journal",
			   "a torn or corrupt record ends the coordinator journal: "
			   "used up to the %llu record(s) before it",
			   (unsigned long long)st.records);
	}
	TAILQ_FOREACH(t, &pd->regions->tombstones, entry)
		ntomb++;
	log_info("coordinator journal %s: %zu region(s) back, %zu extent(s) of destroyed regions "
		 "to scrub; %llu record(s) in a half of %llu KiB",
		 pd->conf->coord_journal, pd->regions->count, ntomb, (unsigned long long)st.records,
		 (unsigned long long)(st.half >> 10));
	if (pd->regions->count > 0)
		events_add(pd, "journal",
			   "%zu region(s) back from the coordinator journal, lost "
			   "until their lenders report them",
			   pd->regions->count);
	return 0;
}

void coord_log_close(struct poold *pd)
{
	if (pd->coord_log == NULL)
		return;
	if (pd->coord_log->to.j != NULL) {
		journal_sync(pd->coord_log->to.j);
		coord_log_durable(pd, UINT64_MAX);
	}
	coord_log_free(pd->coord_log);
	pd->coord_log = NULL;
}

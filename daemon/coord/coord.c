/*
 * daemon/coord/coord.c - the coordinator role: accepts nodes on the peer
 * listener, keeps the member table, watches heartbeats, tells members about
 * each other, gathers link probes, and serves requests nodes forward.
 *
 * A node's link: Hello (protocol version) then Register (with the shared
 * secret) before anything else. Node ids are tied to node names for the
 * coordinator's lifetime: a name keeps its id and an id is never handed to
 * another name. A node is suspect once a heartbeat is late (or its link
 * drops) and dead after heartbeat.misses intervals without one.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <arpa/inet.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/coord/coord-slot.h"
#include "daemon/control/control.h"
#include "daemon/coord/coord.h"
#include "daemon/ha/ha.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/resp/resp.h"
#include "daemon/util/util.h"
#include "proto/pool_contract.h"

/*
 * What links that have not registered may hold: they have not proved they
 * know the secret, so each gets a small frame (PEER_UNREG_FRAME_MAX), a
 * place in the small pools of coord-slot.c (never one a registered node
 * holds), and a deadline from its accept that no trickle of bytes extends.
 * A real node's handshake takes milliseconds; a flood then neither fills
 * poold's fds or memory nor keeps a real node out.
 */
#define COORD_REGISTER_TIMEOUT_MS 5000
#define COORD_PROBE_TIMEOUT_MS 60000
/*
 * Members' changes go to the nodes batched: those of a tick in one frame
 * per node (at most COORD_EVENTS_CHUNK members a frame), packed once for
 * all. A thousand nodes joining are then a few frames to each node, not
 * one per join: membership costs O(N) frames, not O(N^2).
 */
#define COORD_EVENTS_TICK_MS 50
#define COORD_EVENTS_CHUNK 256

struct coord_peer {
	TAILQ_ENTRY(coord_peer) entry;
	struct coord *co;
	struct conn *conn;
	struct member *m; /* once registered */
	bool hello_done;
	struct coordslot slot; /* until registered: its place, its address and accept time */
	uint8_t nonce[PEERAUTH_NONCE_LEN];	/* our challenge on this link */
	uint8_t node_nonce[PEERAUTH_NONCE_LEN]; /* the node's, from its Hello */
	struct holdreport *report; /* the node's report of its record, coming in chunks */
	char addr[64];
	uint64_t ev_gen; /* registered in that tick of member events ... */
	size_t ev_from;	 /* ... after that many of them (its RegisterReply has those) */
};

/* One round of link probes: the coordinator's own and one call per node. */
struct gather {
	TAILQ_ENTRY(gather) entry;
	struct coord *co;
	struct req *r; /* the admin request waiting for the round, or NULL */
	unsigned outstanding;
	Pool__ProbeResult **results;
	size_t nresults;
	struct event *timeout;
	TAILQ_HEAD(, gather_call) calls; /* to nodes, not answered yet */
};

/* A node's probe of the round, waiting for its report (coord_call()). */
struct gather_call {
	TAILQ_ENTRY(gather_call) entry;
	struct gather *g;
	uint32_t node;
};

struct coord {
	struct poold *pd;
	struct evconnlistener *listener;
	TAILQ_HEAD(, coord_peer) peers;
	TAILQ_HEAD(, gather) gathers;
	struct coordslots slots;   /* the links that have not registered */
	struct event *deadline_ev; /* when the oldest of them is due */
	uint32_t next_id;
	uint64_t next_epoch; /* the number of the next registration (node_info.epoch) */
	struct event *check_ev;
	uint64_t last_check; /* units_now_ms() at coord_check()'s last run */
	bool check_put_off;  /* coord_check() judged nobody last time: its loop was held */
	struct event *probe_ev;
	struct event *ledger_ev;
	struct event *sweep_ev;
	Pool__Member **ev; /* members' changes of this tick, not yet told (owned copies) */
	size_t nev, ev_cap;
	uint64_t ev_gen; /* ticks told so far */
	struct event *ev_tick;
};

/* Forget the changes queued (told, or the coordinator stops). */
static void coord_events_clear(struct coord *co)
{
	size_t i;

	for (i = 0; i < co->nev; i++)
		pool__member__free_unpacked(co->ev[i], NULL);
	co->nev = 0;
	co->ev_gen++;
}

/* Send changes [from, to) of the tick to p, packed for it alone. */
static void coord_events_send_one(struct coord *co, struct coord_peer *p, size_t from, size_t to)
{
	Pool__MemberEvents evs = POOL__MEMBER_EVENTS__INIT;
	Pool__Member *ptrs[COORD_EVENTS_CHUNK];
	size_t i;

	for (i = from; i < to; i++)
		ptrs[i - from] = co->ev[i];
	evs.members = ptrs;
	evs.n_members = to - from;
	conn_send(p->conn, WIRE_MEMBER_EVENTS, 0, &evs.base);
}

/*
 * The tick's changes, in order, to every registered node: each chunk packed
 * once and the same bytes queued on each link. A node that registered in
 * this tick gets only the changes after its RegisterReply's table.
 */
static void coord_events_tick(evutil_socket_t fd, short what, void *arg)
{
	struct coord *co = arg;
	Pool__MemberEvents evs = POOL__MEMBER_EVENTS__INIT;
	Pool__Member *ptrs[COORD_EVENTS_CHUNK];
	struct coord_peer *p;
	size_t at, end, i, len;
	uint8_t *frame;

	(void)fd;
	(void)what;
	for (at = 0; at < co->nev; at = end) {
		end = MIN(co->nev, at + COORD_EVENTS_CHUNK);
		for (i = at; i < end; i++)
			ptrs[i - at] = co->ev[i];
		evs.members = ptrs;
		evs.n_members = end - at;
		if (wire_frame_pack(WIRE_MEMBER_EVENTS, 0, &evs.base, &frame, &len) < 0) {
			log_warnx("out of memory telling the nodes of %zu members' changes",
				  end - at);
			continue;
		}
		TAILQ_FOREACH(p, &co->peers, entry) {
			size_t from = p->ev_gen == co->ev_gen ? p->ev_from : 0;

			if (p->m == NULL || from >= end)
				continue;
			if (from <= at)
				conn_send_frame(p->conn, frame, len);
			else
				coord_events_send_one(co, p, from, end);
		}
		free(frame);
	}
	coord_events_clear(co);
}

/* Queue a member's change for the nodes: told at the end of the tick. */
static void coord_send_event(struct coord *co, struct member *m)
{
	if (co->ev_tick == NULL)
		return; /* opening: no node is registered yet */
	if (co->nev == co->ev_cap) {
		size_t cap = co->ev_cap ? co->ev_cap * 2 : 64;
		Pool__Member **ev = realloc(co->ev, cap * sizeof(*ev));

		if (ev == NULL)
			goto fail;
		co->ev = ev;
		co->ev_cap = cap;
	}
	co->ev[co->nev] = member_to_wire_copy(co->pd, m);
	if (co->ev[co->nev] == NULL)
		goto fail;
	co->nev++;
	if (!evtimer_pending(co->ev_tick, NULL)) {
		struct timeval tv = units_timeval(COORD_EVENTS_TICK_MS);

		evtimer_add(co->ev_tick, &tv);
	}
	return;
fail:
	log_warnx("node %u (%s): out of memory telling the nodes it is %s", m->info->id,
		  m->info->name, member_state_name(m->state));
}

/* Tell every registered node that a member joined or changed state. */
static void coord_member_changed(struct poold *pd, struct member *m)
{
	if (pd->coord != NULL)
		coord_send_event(pd->coord, m);
}

/*
 * The coordinator's fan-out to its cores (region.c, kv.c, reclaim.c): they
 * do not call each other for these, so each can be followed alone.
 */

/* Every 250 ms: leases and anonymous regions, KV expiry and copies, retired extents, reclaims. */
static void coord_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;

	(void)fd;
	(void)what;
	(void)ha_epoch(pd, NULL); /* (a deposed leader stops here, before it acts) */
	region_sweep_leases(pd);
	kv_sweep(pd);
	region_sweep_retired(pd);
	reclaim_sweep(pd);
}

/*
 * A client session of node ended: its leases end after lease.grace, its KV pins and reservations
 * go.
 */
void coord_session_end(struct poold *pd, uint32_t node, uint64_t session)
{
	if (pd->regions == NULL)
		return;
	region_session_end(pd, node, session);
	kv_session_end(pd, node, session, false);
}

/*
 * What the address space tells: a region that goes takes the KV references
 * it held (a snapshot's pages) with it; its changes go to the journal.
 */
const struct space_hooks coord_space_hooks = {
    .freed = kv_holder_drop,
    .logged = coord_log_region,
    .gone = coord_log_region_gone,
    .buried = coord_log_tombstone_done,
    .leased = coord_log_lease,
};

/* A node died or restarted: so did every session it held. */
static void coord_node_gone(struct poold *pd, uint32_t node)
{
	region_node_gone(pd, node);
	kv_session_end(pd, node, 0, true);
}

/* A lender registered: a restarted one lost its KV values first, then its arenas start afresh. */
static void coord_lender_update(struct poold *pd, const struct node_info *info)
{
	if (region_lender_restarted(pd, info))
		kv_node_lost(pd, info->id);
	region_lender_update(pd, info);
}

static void coord_set_state(struct coord *co, struct member *m, enum member_state state)
{
	if (m->state == state)
		return;
	member_set_state(co->pd, m, state);
	coord_send_event(co, m);
	if (state == MEMBER_DEAD) {
		coord_node_gone(co->pd, m->info->id); /* its clients' leases end */
		kv_node_lost(co->pd, m->info->id);    /* its values: gets are misses */
	}
}

/* A client could not reach a node: suspect it at once, not after heartbeats. */
static void coord_suspect(struct poold *pd, uint32_t node)
{
	struct member *m = member_find(pd, node);

	if (pd->coord == NULL || m == NULL || m->state != MEMBER_UP || node == pd->node_id)
		return;
	log_warnx("node %u (%s): a client's transfer failed", node, m->info->name);
	events_add(pd, "member", "node %u (%s): a client's transfer failed", node, m->info->name);
	coord_set_state(pd->coord, m, MEMBER_SUSPECT);
}

/* What the handlers below the role ask of it (pd->coord_role). */
static const struct coord_role coord_role = {
    .suspect = coord_suspect,
    .member_changed = coord_member_changed,
    .node_changed = coord_log_node,
};

/* Keep the latest result of each link. */
static void coord_store_probe(struct poold *pd, const Pool__ProbeResult *res)
{
	Pool__ProbeResult *copy = probe_result_dup(res), **grown;
	size_t i;

	if (copy == NULL)
		return;
	copy->when_ms = units_now_ms() - pd->start_ms;
	for (i = 0; i < pd->nprobes; i++) {
		if (pd->probes[i]->src == res->src && pd->probes[i]->dst == res->dst) {
			probe_result_free(pd->probes[i]);
			pd->probes[i] = copy;
			return;
		}
	}
	grown = realloc(pd->probes, (pd->nprobes + 1) * sizeof(*grown));
	if (grown == NULL) {
		probe_result_free(copy);
		return;
	}
	pd->probes = grown;
	pd->probes[pd->nprobes++] = copy;
}

static void gather_add(struct gather *g, Pool__ProbeResult *const *results, size_t n)
{
	Pool__ProbeResult **grown;
	size_t i;

	grown = realloc(g->results, (g->nresults + n) * sizeof(*grown));
	if (grown == NULL)
		return;
	g->results = grown;
	for (i = 0; i < n; i++) {
		g->results[g->nresults] = probe_result_dup(results[i]);
		if (g->results[g->nresults] != NULL)
			g->nresults++;
	}
}

/* Record a failed link (a node that could not probe, or did not answer). */
static void gather_add_error(struct gather *g, uint32_t src, uint32_t dst, int err)
{
	Pool__ProbeResult res = POOL__PROBE_RESULT__INIT, *p = &res;

	res.src = src;
	res.dst = dst;
	res.error = err;
	res.transport = "";
	gather_add(g, &p, 1);
}

static int coord_fabric_reply(struct poold *pd, struct req *r, Pool__ProbeResult **results,
			      size_t n)
{
	Pool__FabricReply reply = POOL__FABRIC_REPLY__INIT;
	Pool__Member **members;
	size_t nmembers;
	int rc;

	rc = members_msg(pd, true, &members, &nmembers);
	if (rc < 0)
		return rc;
	reply.results = results;
	reply.n_results = n;
	reply.members = members;
	reply.n_members = nmembers;
	rc = req_reply(r, WIRE_FABRIC_REPLY, &reply.base);
	members_msg_free(members, nmembers);
	return rc;
}

static void gather_done(struct gather *g)
{
	struct coord *co = g->co;
	struct gather_call *gc;
	size_t i;

	while ((gc = TAILQ_FIRST(&g->calls)) != NULL) {
		gather_add_error(g, gc->node, 0, -ETIMEDOUT);
		member_call_cancel(co->pd, gc);
		TAILQ_REMOVE(&g->calls, gc, entry);
		free(gc);
	}
	for (i = 0; i < g->nresults; i++)
		coord_store_probe(co->pd, g->results[i]);
	if (g->r != NULL)
		req_finish(g->r, coord_fabric_reply(co->pd, g->r, g->results, g->nresults));
	TAILQ_REMOVE(&co->gathers, g, entry);
	event_free(g->timeout);
	probe_results_free(g->results, g->nresults);
	free(g);
}

static void gather_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct gather *g = arg;

	log_warnx("link probe round timed out with %u answers missing", g->outstanding);
	gather_done(g);
}

static void gather_self_done(struct poold *pd, Pool__ProbeResult **results, size_t n, void *arg)
{
	struct gather *g = arg;

	gather_add(g, results, n);
	probe_results_free(results, n);
	if (--g->outstanding == 0)
		gather_done(g);
}

/* A node's probe report, its error, or its link dropped (rc < 0). */
static void gather_reply(struct poold *pd, void *arg, int rc, const struct wire_hdr *hdr,
			 const uint8_t *payload)
{
	struct gather_call *gc = arg;
	struct gather *g = gc->g;
	Pool__ProbeReport *rep = NULL;

	(void)pd;
	if (rc == 0 && hdr->type == WIRE_PROBE_REPORT &&
	    wire_msg_unpack(hdr->type, payload, hdr->len, (ProtobufCMessage **)&rep) == 0) {
		gather_add(g, rep->results, rep->n_results);
		wire_msg_free(&rep->base);
	} else {
		gather_add_error(g, gc->node, 0, rc < 0 ? rc : -EPROTO);
	}
	TAILQ_REMOVE(&g->calls, gc, entry);
	free(gc);
	if (--g->outstanding == 0)
		gather_done(g);
}

/* Up members other than src, as probe targets. */
static size_t coord_targets(struct poold *pd, uint32_t src, uint32_t *targets, size_t max)
{
	struct member *m;
	size_t n = 0;

	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->info->id != src && m->state == MEMBER_UP && n < max)
			targets[n++] = m->info->id;
	return n;
}

/*
 * Start a round of link probes: every up member measures every other.
 * With r, the round's results answer it (REQ_LATER); without, they are
 * only kept.
 */
int coord_probe_all(struct poold *pd, struct req *r)
{
	struct coord *co = pd->coord;
	struct timeval tv = {.tv_sec = COORD_PROBE_TIMEOUT_MS / 1000};
	uint32_t *targets;
	struct gather *g;
	struct member *m;
	size_t n, max = 0;
	int rc = -ENOMEM;

	TAILQ_FOREACH(m, &pd->members, entry)
		max++;
	targets = calloc(max, sizeof(*targets));
	g = calloc(1, sizeof(*g));
	if (targets == NULL || g == NULL)
		goto out_free;
	g->co = co;
	TAILQ_INIT(&g->calls);
	g->timeout = evtimer_new(pd->base, gather_timeout, g);
	if (g->timeout == NULL)
		goto out_free;
	if (r != NULL && (g->r = req_hold(r)) == NULL) {
		event_free(g->timeout);
		goto out_free;
	}
	TAILQ_INSERT_TAIL(&co->gathers, g, entry);
	g->outstanding = 1; /* held until every call is out */
	TAILQ_FOREACH(m, &pd->members, entry) {
		Pool__ProbeRequest pr = POOL__PROBE_REQUEST__INIT;
		struct gather_call *gc;

		if (m->state != MEMBER_UP)
			continue;
		n = coord_targets(pd, m->info->id, targets, max);
		if (n == 0)
			continue;
		if (m->info->id == pd->node_id) {
			g->outstanding++;
			if (probe_run(pd, targets, n, gather_self_done, g) < 0) {
				gather_add_error(g, pd->node_id, 0, -ENOMEM);
				g->outstanding--;
			}
			continue;
		}
		if ((gc = calloc(1, sizeof(*gc))) == NULL) {
			gather_add_error(g, m->info->id, 0, -ENOMEM);
			continue;
		}
		gc->g = g;
		gc->node = m->info->id;
		pr.targets = targets;
		pr.n_targets = n;
		if (coord_call(pd, m->info->id, WIRE_PROBE, &pr.base, gather_reply, gc) < 0) {
			gather_add_error(g, m->info->id, 0, -ENOTCONN);
			free(gc);
			continue;
		}
		TAILQ_INSERT_TAIL(&g->calls, gc, entry);
		g->outstanding++;
	}
	free(targets);
	evtimer_add(g->timeout, &tv);
	if (--g->outstanding == 0)
		gather_done(g);
	return r != NULL ? REQ_LATER : 0;
out_free:
	free(targets);
	free(g);
	return r ? req_errorf(r, rc, "out of memory") : rc;
}

static int coord_refuse(struct coord_peer *p, uint64_t req_id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Refuse a peer with a logged reason, and close its link. */
static int coord_refuse(struct coord_peer *p, uint64_t req_id, int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("refused peer %s: %s", p->addr, msg);
	conn_send_error(p->conn, req_id, code, msg);
	conn_close_later(p->conn);
	return code;
}

/* With a secret: whether the node proved it knows it, on this link's nonces. */
static bool coord_node_authentic(const struct coord_peer *p, const Pool__Register *reg)
{
	const char *secret = p->co->pd->conf->secret;
	uint8_t want[PEERAUTH_PROOF_LEN];

	if (secret[0] == '\0')
		return true;
	return peer_auth_node_proof(secret, p->nonce, p->node_nonce, reg->node->name, want) == 0 &&
	       peer_auth_equal(want, reg->proof.data, reg->has_proof ? reg->proof.len : 0);
}

/*
 * A registering node's record for the member table, under the id it is
 * given and the number of this registration. A node without a listener
 * is reached where its link came from; so are its fabric links, unless it
 * says where (fabric.address).
 */
static struct node_info *coord_node_record(struct coord_peer *p, const Pool__NodeInfo *w,
					   uint32_t id)
{
	struct node_info *info = node_info_from_wire(w);
	char host[INET6_ADDRSTRLEN + 1];

	if (info == NULL)
		return NULL;
	info->id = id;
	info->epoch = p->co->next_epoch++;
	if (info->addr[0] == '\0') {
		free(info->addr);
		if ((info->addr = strdup(p->addr)) == NULL) {
			node_info_free(info);
			return NULL;
		}
	}
	if (info->link_host[0] == '\0' && addr_host(p->addr, host, sizeof(host)) == 0) {
		free(info->link_host);
		if ((info->link_host = strdup(host)) == NULL) {
			node_info_free(info);
			return NULL;
		}
	}
	return info;
}

/*
 * Answer a node's registration with the member table and the KV
 * namespaces' definitions, in chunks of peer.chunk_size: the reply holds the
 * node itself first and as many other members as fit, the others follow as
 * member events; the definitions that do not fit follow as kv-ns-defs.
 */
static void coord_register_reply(struct coord_peer *p, uint64_t req_id, Pool__RegisterReply *reply,
				 Pool__Member **members, size_t nmembers, Pool__KvNamespace **defs,
				 size_t ndefs)
{
	struct poold *pd = p->co->pd;
	size_t max = (size_t)pd->conf->peer_chunk_size, i;
	uint32_t id = reply->node_id;
	Pool__Member *self;

	for (i = 0; i < nmembers; i++)
		if (members[i]->node->id == id) {
			self = members[i];
			members[i] = members[0];
			members[0] = self;
		}
	reply->members = members;
	reply->n_members = wire_fit((void *const *)members, nmembers, max);
	reply->namespaces = defs;
	reply->n_namespaces = wire_fit((void *const *)defs, ndefs, max);
	reply->has_namespaces_more = reply->namespaces_more = reply->n_namespaces < ndefs;
	if (conn_send(p->conn, WIRE_REGISTER_REPLY, req_id, &reply->base) < 0)
		return; /* (said there) */
	if (reply->n_members < nmembers || reply->namespaces_more)
		log_info("node %u: %zu of %zu members and %zu of %zu KV namespaces in its register "
			 "reply, the others follow (peer.chunk_size)",
			 id, reply->n_members, nmembers, reply->n_namespaces, ndefs);
	for (i = reply->n_members; i < nmembers; i++) {
		Pool__MemberEvent ev = POOL__MEMBER_EVENT__INIT;

		ev.member = members[i];
		conn_send(p->conn, WIRE_MEMBER_EVENT, 0, &ev.base);
	}
	if (reply->namespaces_more)
		kv_defs_tell(pd, id, defs, ndefs, reply->n_namespaces, 1);
}

/* A node's link goes with its holdings report under way: the report is dropped. */
static void coord_report_cut(const struct coord_peer *p)
{
	uint32_t chunks;
	size_t n;

	if (p->report == NULL)
		return;
	holdreport_progress(p->report, &chunks, &n);
	log_info("node %u (%s): its holdings report, cut short after %u chunk(s) and %zu "
		 "holding(s), is dropped, not reconciled",
		 p->m->info->id, p->m->info->name, chunks, n);
}

/*
 * Whether the node of reg may register: its secret, its way of moving
 * bytes, its name and id against the members and the ids the coordinator's
 * state keeps, the cluster's size. *ret_m: its member, when it is one;
 * *ret_id: its id (the one it had, the one it asks for, or the next free).
 * 0, or the refusal's code (the link is closed).
 */
static int coord_register_admit(struct coord_peer *p, uint64_t req_id, const Pool__Register *reg,
				struct member **ret_m, uint32_t *ret_id)
{
	struct coord *co = p->co;
	struct poold *pd = co->pd;
	const Pool__NodeInfo *info = reg->node;
	const struct node_id *known, *other;
	struct member *m, *by_id;
	size_t n = 0;
	uint32_t id;

	if (reg->secret != NULL && reg->secret[0] != '\0') {
		events_add(pd, "member", "refused peer %s: it sent a secret in clear", p->addr);
		return coord_refuse(p, req_id, -EACCES,
				    "node '%s' sent a secret in clear (an older "
				    "poold?): refused",
				    info->name);
	}
	if (!coord_node_authentic(p, reg)) {
		events_add(pd, "member", "refused peer %s: node '%s' failed authentication",
			   p->addr, info->name);
		return coord_refuse(p, req_id, -EACCES, "node '%s' presented a wrong peer secret",
				    info->name);
	}
	if (info->name[0] == '\0' || strlen(info->name) > 63)
		return coord_refuse(p, req_id, -EINVAL, "invalid node name");
	if ((pd->conf->fabric_transfer == TRANSFER_RMA) != (info->worker_addr.len > 0) ||
	    (pd->conf->fabric_transfer == TRANSFER_CHECKED) !=
		(info->has_link_port && info->link_port != 0))
		return coord_refuse(p, req_id, -EPROTONOSUPPORT,
				    "node '%s' moves bytes another way than this cluster "
				    "(fabric.transfer = %s here): set the same on every poold",
				    info->name,
				    pd->conf->fabric_transfer == TRANSFER_RMA ? "rma" : "checked");
	m = member_find_name(pd, info->name);
	by_id = info->id ? member_find(pd, info->id) : NULL;
	if ((m != NULL && m->info->id == pd->node_id) || info->id == pd->node_id)
		return coord_refuse(
		    p, req_id, -EEXIST,
		    "node '%s' (id %u) clashes with the coordinator '%s' (id %u): set "
		    "another node.name or node.id",
		    info->name, info->id, pd->conf->node_name, pd->node_id);
	if (m != NULL && info->id != 0 && info->id != m->info->id)
		return coord_refuse(p, req_id, -EEXIST,
				    "host '%s' is node %u: set node.id = %u or 0, not %u",
				    info->name, m->info->id, m->info->id, info->id);
	if (m == NULL && by_id != NULL)
		return coord_refuse(p, req_id, -EEXIST, "node id %u belongs to host '%s'", info->id,
				    by_id->info->name);
	/* Not back yet, but known from the coordinator's state: ids stay whose they were. */
	known = m == NULL ? member_ids_find(pd, 0, info->name) : NULL;
	if (known != NULL && info->id != 0 && info->id != known->id)
		return coord_refuse(p, req_id, -EEXIST,
				    "host '%s' is node %u: set node.id = %u or 0, not %u",
				    info->name, known->id, known->id, info->id);
	if (m == NULL && known == NULL && info->id != 0 &&
	    (other = member_ids_find(pd, info->id, NULL)) != NULL)
		return coord_refuse(p, req_id, -EEXIST, "node id %u belongs to host '%s'", info->id,
				    other->name);
	*ret_m = m;
	if (m != NULL) {
		*ret_id = m->info->id;
		return 0;
	}
	TAILQ_FOREACH(m, &pd->members, entry)
		n++;
	if (n >= (size_t)pd->conf->max_nodes)
		return coord_refuse(p, req_id, -EUSERS, "cluster full (peer.max_nodes = %lld)",
				    (long long)pd->conf->max_nodes);
	id = known != NULL ? known->id : info->id;
	if (id == 0) {
		while (member_find(pd, co->next_id) != NULL ||
		       member_ids_find(pd, co->next_id, NULL) != NULL)
			co->next_id++;
		id = co->next_id++;
	}
	*ret_id = id;
	return 0;
}

/* Member m (node id) registers on link p while another link of its is up: that one is stale. */
static void coord_register_unlink(struct coord_peer *p, struct member *m, uint32_t id)
{
	struct coord *co = p->co;
	struct coord_peer *old;

	TAILQ_FOREACH(old, &co->peers, entry)
		if (old->conn == m->conn)
			break;
	m->conn = NULL; /* (so a failed call's caller asking again is refused) */
	member_call_fail(co->pd, id);
	if (old != NULL) {
		coord_report_cut(old);
		conn_free(old->conn);
		TAILQ_REMOVE(&co->peers, old, entry);
		coord_slot_give(&co->slots, &old->slot);
		holdreport_free(old->report);
		free(old);
	}
}

/*
 * Answer node id's registration (reply holds what is known of it): its id,
 * the heartbeat, the RESP endpoint, the members and the KV namespaces'
 * definitions. 0, or the refusal's code.
 */
static int coord_register_answer(struct coord_peer *p, uint64_t req_id, uint32_t id,
				 Pool__RegisterReply *reply)
{
	struct coord *co = p->co;
	struct poold *pd = co->pd;
	Pool__Member **members = NULL;
	Pool__KvNamespace **defs = NULL;
	size_t nmembers = 0, ndefs = 0;
	char resp_at[64];
	int rc;

	reply->node_id = id;
	reply->heartbeat_ms = (uint32_t)pd->conf->heartbeat_ms;
	reply->heartbeat_misses = (uint32_t)pd->conf->heartbeat_misses;
	if (resp_endpoint(pd, resp_at, sizeof(resp_at)) == 0)
		reply->resp_endpoint = resp_at;
	rc = members_msg(pd, false, &members, &nmembers);
	if (rc == 0 && (defs = kv_defs_msg(pd, &ndefs)) == NULL) {
		members_msg_free(members, nmembers);
		rc = -ENOMEM;
	}
	if (rc < 0)
		return coord_refuse(p, req_id, rc, "out of memory");
	coord_register_reply(p, req_id, reply, members, nmembers, defs, ndefs);
	p->ev_gen = co->ev_gen; /* the changes queued so far are in its table */
	p->ev_from = co->nev;
	members_msg_free(members, nmembers);
	free(defs);
	return 0;
}

static int coord_register(struct coord_peer *p, uint64_t req_id, const Pool__Register *reg)
{
	struct coord *co = p->co;
	struct poold *pd = co->pd;
	Pool__RegisterReply reply = POOL__REGISTER_REPLY__INIT;
	const Pool__NodeInfo *info = reg->node;
	const struct node_id *known;
	struct member *m = NULL;
	struct node_info *rec;
	char desc[96];
	uint32_t id = 0;
	int rc;

	rc = coord_register_admit(p, req_id, reg, &m, &id);
	if (rc < 0)
		return rc;
	/* (back from the dead without a restart: the others went on with its KV shards) */
	reply.was_dead =
	    m != NULL && m->state == MEMBER_DEAD && m->info->incarnation == info->incarnation;
	reply.has_was_dead = reply.was_dead;
	if (m != NULL && m->info->incarnation != info->incarnation)
		coord_node_gone(pd, m->info->id); /* restarted: its old clients are gone */
	else /* (new to this coordinator: leases from its journal, if any, are confirmed) */
		region_node_sessions(pd, id, info->incarnation, reg->sessions, reg->n_sessions);
	if (m != NULL && m->conn != NULL && m->conn != p->conn)
		coord_register_unlink(p, m, id); /* the node restarted or reconnected */
	rec = coord_node_record(p, info, id);
	rc = rec != NULL ? member_update(pd, rec, &m) : -ENOMEM;
	if (rc < 0)
		return coord_refuse(p, req_id, rc, "out of memory");
	if (member_ids_add(pd, id, info->name))
		coord_log_node(pd, id);
	known = member_ids_find(pd, id, NULL); /* (drained before a restart: it stays so) */
	member_set_kv_drained(pd, m, known != NULL && known->kv_drained);
	m->conn = p->conn;
	m->last_heartbeat = units_now_ms();
	m->from = p->slot.from; /* where it comes back from: coord_known_addr() */
	p->m = m;
	coord_slot_give(&co->slots, &p->slot); /* a member's link, no longer a stranger's */
	coord_lender_update(pd, m->info);
	snprintf(desc, sizeof(desc), "node %u (%s) at %s", id, info->name, p->addr);
	conn_set_desc(p->conn, desc);
	conn_set_max_frame(p->conn, PEER_FRAME_MAX);
	conn_set_limit_name(p->conn, "the frame limit");
	log_info("%s registered (%s, incarnation %llx)", desc, info->version,
		 (unsigned long long)info->incarnation);
	events_add(pd, "member", "%s registered (%s, incarnation %llx)", desc, info->version,
		   (unsigned long long)info->incarnation);
	m->state = MEMBER_DEAD; /* so that the change to up is announced */
	coord_set_state(co, m, MEMBER_UP);
	kv_defs_adopt_msg(pd, reg->namespaces, reg->n_namespaces, "a node's record");
	rc = coord_register_answer(p, req_id, id, &reply);
	if (rc == 0)
		reconcile_ask(pd, id); /* reconcile its record with the map */
	return rc;
}

static void coord_heartbeat(struct coord_peer *p, uint64_t req_id, const Pool__Heartbeat *hb)
{
	Pool__Ok ok = POOL__OK__INIT;
	struct member *m = p->m;

	if (hb->node_id != m->info->id || hb->incarnation != m->info->incarnation) {
		coord_refuse(p, req_id, -ESTALE,
			     "heartbeat for node %u incarnation %llx on the "
			     "link of node %u",
			     hb->node_id, (unsigned long long)hb->incarnation, m->info->id);
		return;
	}
	m->last_heartbeat = units_now_ms();
	if (m->state != MEMBER_UP)
		coord_set_state(p->co, m, MEMBER_UP);
	conn_send(p->conn, WIRE_OK, req_id, &ok.base);
}

/*
 * A lender's record of what it holds, or a chunk of it: compared with the
 * map once the report is whole (hold-report.c). A report in one message is
 * an older lender's.
 */
static void coord_holdings(struct coord_peer *p, const Pool__Holdings *hs)
{
	static struct log_limit said;
	struct poold *pd = p->co->pd;
	uint32_t node = p->m->info->id;
	struct holding *h = holdings_of_msg(hs);
	struct hold_place *gone = holding_ends_of_msg(hs);
	int rc;

	if (!hs->has_seq) {
		if (h != NULL)
			reconcile_holdings(pd, node, h, hs->n_holdings);
		else
			log_warnx("node %u: out of memory reading its holdings", node);
		free(h);
		free(gone);
		return;
	}
	rc = h == NULL || gone == NULL
		 ? -ENOMEM
		 : holdreport_add(&p->report, hs->report, hs->seq, hs->has_more && hs->more, h,
				  hs->n_holdings, gone, hs->n_gone);
	free(h);
	free(gone);
	if (rc < 0) {
		/* (the next ledger pass asks again) */
		holdreport_free(p->report);
		p->report = NULL;
		log_warnx_limited(&said, 10000,
				  "node %u: chunk %u of its holdings report %llu %s: the report is "
				  "dropped, not reconciled",
				  node, hs->seq, (unsigned long long)hs->report,
				  rc == -EPROTO ? "is not the one due" : "cannot be kept");
		return;
	}
	if (hs->has_ack && hs->ack) { /* (the lender sends the next chunks) */
		Pool__HoldingsAck ack = POOL__HOLDINGS_ACK__INIT;

		ack.report = hs->report;
		ack.seq = hs->seq;
		conn_send(p->conn, WIRE_HOLDINGS_ACK, 0, &ack.base);
	}
	if (rc == 1) {
		log_debug("node %u: holdings report %llu whole in %u chunk(s)", node,
			  (unsigned long long)hs->report, hs->seq + 1);
		reconcile_report(pd, node, p->report);
		p->report = NULL;
	}
}

/* A request a node forwarded on behalf of one of its clients. */
static void coord_forwarded(struct coord_peer *p, uint64_t req_id, const Pool__Forward *fw)
{
	struct req r = {.pd = p->co->pd,
			.conn = p->conn,
			.id = req_id,
			.uid = fw->uid,
			.gid = fw->gid,
			.pid = (pid_t)fw->pid,
			.admin = fw->admin,
			.node = p->m->info->id,
			.session = fw->session};
	const struct ctl_handler *h = control_handler((uint16_t)fw->type);

	/* Only what a node would forward: the node's local requests are its own. */
	if (h == NULL || h->where == AT_HERE) {
		conn_send_error(p->conn, req_id, -EOPNOTSUPP, "not a request nodes forward");
		return;
	}
	control_dispatch(&r, (uint16_t)fw->type, fw->payload.data, fw->payload.len);
}

static void coord_hello(struct coord_peer *p, const struct wire_hdr *hdr, const uint8_t *payload)
{
	Pool__HelloReply reply = POOL__HELLO_REPLY__INIT;
	const char *secret = p->co->pd->conf->secret;
	uint8_t proof[PEERAUTH_PROOF_LEN];
	Pool__Hello *hello = NULL;

	if (hdr->type != WIRE_HELLO ||
	    wire_msg_unpack(WIRE_HELLO, payload, hdr->len, (ProtobufCMessage **)&hello) < 0) {
		coord_refuse(p, hdr->req_id, POOL_EPROTOCOL, "expected hello, got %s",
			     wire_type_name(hdr->type));
		return;
	}
	if (hello->version != WIRE_VERSION) {
		coord_refuse(p, hdr->req_id, POOL_EVERSION,
			     "protocol version %u is not supported: this coordinator speaks "
			     "version %u",
			     hello->version, WIRE_VERSION);
		wire_msg_free(&hello->base);
		return;
	}
	if (secret[0] != '\0') {
		if (!hello->has_nonce || hello->nonce.len != PEERAUTH_NONCE_LEN) {
			wire_msg_free(&hello->base);
			events_add(p->co->pd, "member", "refused peer %s: no challenge", p->addr);
			coord_refuse(p, hdr->req_id, -EACCES,
				     "peer links need authentication: "
				     "hello without a challenge");
			return;
		}
		memcpy(p->node_nonce, hello->nonce.data, PEERAUTH_NONCE_LEN);
		if (peer_auth_nonce(p->nonce) < 0 ||
		    peer_auth_coord_proof(secret, p->node_nonce, p->nonce, proof) < 0) {
			wire_msg_free(&hello->base);
			coord_refuse(p, hdr->req_id, -EIO,
				     "cannot compute the authentication proof");
			return;
		}
		reply.has_nonce = reply.has_proof = 1;
		reply.nonce.data = p->nonce;
		reply.nonce.len = sizeof(p->nonce);
		reply.proof.data = proof;
		reply.proof.len = sizeof(proof);
	}
	wire_msg_free(&hello->base);
	p->hello_done = true;
	reply.version = WIRE_VERSION;
	reply.server_version = PACKAGE_VERSION;
	reply.node_id = p->co->pd->node_id;
	reply.has_epoch = ha_epoch(p->co->pd, &reply.epoch);
	conn_send(p->conn, WIRE_HELLO_REPLY, hdr->req_id, &reply.base);
}

/* A node's message, handled: unpacked as msg, freed after. */
typedef void coord_msg_fn(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg);

static void coord_on_register(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	coord_register(p, req_id, (Pool__Register *)msg);
}

static void coord_on_heartbeat(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	coord_heartbeat(p, req_id, (Pool__Heartbeat *)msg);
}

static void coord_on_holdings(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	(void)req_id;
	coord_holdings(p, (Pool__Holdings *)msg);
}

/* What its Register had no room for. */
static void coord_on_kv_ns_defs(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	const Pool__KvNsReply *defs = (const Pool__KvNsReply *)msg;

	(void)req_id;
	kv_defs_adopt_msg(p->co->pd, defs->namespaces, defs->n_namespaces, "a node's record");
}

static void coord_on_session_end(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	(void)req_id;
	coord_session_end(p->co->pd, p->m->info->id, ((Pool__SessionEnd *)msg)->session);
}

static void coord_on_forward(struct coord_peer *p, uint64_t req_id, ProtobufCMessage *msg)
{
	coord_forwarded(p, req_id, (Pool__Forward *)msg);
}

/*
 * What a node sends the coordinator, by type: an answer to one of the
 * coordinator's calls (member-call.c takes it, from a member), or a request
 * of the node's, with its handler; all but a Register need the node
 * registered. Any other type is refused and the link closed.
 */
static const struct {
	coord_msg_fn *handle;
	bool answer;
} coord_msgs[WIRE_TYPE_MAX] = {
    [WIRE_OK] = {NULL, true},
    [WIRE_ERROR] = {NULL, true},
    [WIRE_PROBE_REPORT] = {NULL, true},
    [WIRE_VEC_REPLY] = {NULL, true},
    [WIRE_SNAP_PLACE_REPLY] = {NULL, true},
    [WIRE_REGISTER] = {coord_on_register, false},
    [WIRE_HEARTBEAT] = {coord_on_heartbeat, false},
    [WIRE_HOLDINGS_REPLY] = {coord_on_holdings, false},
    [WIRE_KV_NS_DEFS] = {coord_on_kv_ns_defs, false},
    [WIRE_SESSION_END] = {coord_on_session_end, false},
    [WIRE_FORWARD] = {coord_on_forward, false},
};

static void coord_peer_frame(struct conn *conn, const struct wire_hdr *hdr, const uint8_t *payload,
			     void *arg)
{
	struct coord_peer *p = arg;
	ProtobufCMessage *msg = NULL;
	coord_msg_fn *handle = hdr->type < WIRE_TYPE_MAX ? coord_msgs[hdr->type].handle : NULL;

	(void)conn;
	(void)ha_epoch(p->co->pd, NULL);
	if (!p->hello_done) {
		coord_hello(p, hdr, payload);
		return;
	}
	if (hdr->type < WIRE_TYPE_MAX && coord_msgs[hdr->type].answer) {
		if (p->m != NULL)
			member_call_answer(p->co->pd, hdr, payload);
		return;
	}
	if (handle == NULL) {
		coord_refuse(p, hdr->req_id, -EOPNOTSUPP, "%s is not a peer request",
			     wire_type_name(hdr->type));
		return;
	}
	if (wire_msg_unpack(hdr->type, payload, hdr->len, &msg) < 0) {
		coord_refuse(p, hdr->req_id, -EBADMSG, "malformed %s", wire_type_name(hdr->type));
		return;
	}
	if (p->m == NULL && hdr->type != WIRE_REGISTER)
		coord_refuse(p, hdr->req_id, -EACCES, "%s before register",
			     wire_type_name(hdr->type));
	else
		handle(p, hdr->req_id, msg);
	wire_msg_free(msg);
}

static void coord_peer_closed(struct conn *conn, void *arg)
{
	struct coord_peer *p = arg;
	struct coord *co = p->co;

	if (p->m != NULL && p->m->conn == conn) {
		log_info("link to node %u (%s) closed", p->m->info->id, p->m->info->name);
		coord_report_cut(p);
		p->m->conn = NULL;
		member_call_fail(co->pd, p->m->info->id);
		if (p->m->state == MEMBER_UP)
			coord_set_state(co, p->m, MEMBER_SUSPECT);
	}
	TAILQ_REMOVE(&co->peers, p, entry);
	coord_slot_give(&co->slots, &p->slot);
	holdreport_free(p->report); /* (cut short: never the lender's record) */
	free(p);
}

static const struct conn_ops coord_peer_ops = {
    .frame = coord_peer_frame,
    .closed = coord_peer_closed,
};

/* Whether a member registered from sa's address before: a node coming back. */
static bool coord_known_addr(const struct coord *co, const struct sockaddr *sa)
{
	const struct member *m;

	TAILQ_FOREACH(m, &co->pd->members, entry)
		if (m->from.ss_family != 0 &&
		    coord_slot_same_addr((const struct sockaddr *)&m->from, sa))
			return true;
	return false;
}

/*
 * Turn a link away at its accept (its host holds its share of the links
 * that have not registered). On plain links the node is told why, in an
 * Error frame written at once into the new socket's empty buffer (it
 * never blocks); through TLS nothing can be said before a handshake not
 * worth a stranger's while, and the node sees the link close. What the
 * node sent already is read before the close, so that the close does not
 * become a reset that could overtake the frame.
 */
static void coord_turn_away(struct coord *co, evutil_socket_t fd, const char *addr)
{
	static struct log_limit said;
	Pool__Error err = POOL__ERROR__INIT;
	char host[64], msg[240], junk[512];
	uint8_t *buf;
	size_t len;
	int i;

	if (addr_host(addr, host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "%s", addr);
	log_warnx_limited(
	    &said, 10000,
	    "refusing a peer link from %s: %u links from its host have not registered", addr,
	    COORDSLOT_PER_HOST);
	if (co->pd->tls == NULL) {
		snprintf(msg, sizeof(msg),
			 "%u peer links from %s have not registered: no room for another from that "
			 "host until they do, or are closed %d s after their accept",
			 COORDSLOT_PER_HOST, host, COORD_REGISTER_TIMEOUT_MS / 1000);
		err.code = -EBUSY;
		err.message = msg;
		if (wire_frame_pack(WIRE_ERROR, 0, &err.base, &buf, &len) == 0) {
			(void)send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
			free(buf);
		}
		(void)shutdown(fd, SHUT_WR);
		for (i = 0; i < 8 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
			;
	}
	evutil_closesocket(fd);
}

/* A link that gave its slot (of pool: the new link's) to a newer one: closed now. */
static void coord_evict(struct coord *co, struct coordslot *s, enum coord_slot_pool pool)
{
	static struct log_limit known_said, strangers_said;
	struct coord_peer *p = s->owner;

	if (pool == COORDSLOT_KNOWN)
		log_warnx_limited(&known_said, 10000,
				  "peer link from %s, a member's address, gives way to a newer one "
				  "from there that has not registered either",
				  p->addr);
	else
		log_warnx_limited(&strangers_said, 10000,
				  "%u peer links from other addresses than the members' have not "
				  "registered: closing the oldest from the host with the most, %s",
				  co->slots.strangers, p->addr);
	conn_abort(p->conn, true);
}

/* The oldest link that has not registered is due then: come back to close it. */
static void coord_deadline_arm(struct coord *co)
{
	const struct coordslot *s = coord_slots_oldest(&co->slots);
	uint64_t now = units_now_ms(), due;
	struct timeval tv;

	if (s == NULL || evtimer_pending(co->deadline_ev, NULL))
		return;
	due = s->taken_ms + COORD_REGISTER_TIMEOUT_MS;
	tv = units_timeval(due > now ? due - now : 0);
	evtimer_add(co->deadline_ev, &tv);
}

/* Close the links that did not register within the deadline of their accept. */
static void coord_deadline(evutil_socket_t fd, short what, void *arg)
{
	static struct log_limit said;
	struct coord *co = arg;
	uint64_t now = units_now_ms();
	struct coordslot *s;

	(void)fd;
	(void)what;
	while ((s = coord_slots_oldest(&co->slots)) != NULL &&
	       now - s->taken_ms >= COORD_REGISTER_TIMEOUT_MS) {
		struct coord_peer *p = s->owner;

		log_warnx_limited(&said, 10000,
				  "peer link from %s did not register within %d ms of its accept: "
				  "closed",
				  p->addr, COORD_REGISTER_TIMEOUT_MS);
		coord_slot_give(&co->slots, s);
		conn_abort(p->conn, true);
	}
	coord_deadline_arm(co);
}

/*
 * A new peer link: it waits in a slot of coord-slot.c until it registers,
 * or is turned away when its host has no room; the slot it took may be one
 * another link gave up.
 */
static void coord_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			 int salen, void *arg)
{
	struct coord *co = arg;
	struct coordslot *evicted;
	struct coord_peer *p;
	struct ssl_st *ssl;
	char desc[96], addr[64];
	int rc;

	(void)lis;
	(void)salen;
	addr_format(sa, addr, sizeof(addr));
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	co->slots.known_max = (unsigned)co->pd->conf->max_nodes;
	rc = coord_slot_take(&co->slots, &p->slot, sa, coord_known_addr(co, sa), units_now_ms(),
			     &evicted);
	if (rc < 0) {
		if (rc == -EBUSY)
			coord_turn_away(co, fd, addr);
		else
			evutil_closesocket(fd);
		free(p);
		return;
	}
	if (evicted != NULL)
		coord_evict(co, evicted, p->slot.pool);
	p->co = co;
	p->slot.owner = p;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	snprintf(desc, sizeof(desc), "peer %s", p->addr);
	if (peer_tls_new(co->pd, &ssl) < 0) {
		evutil_closesocket(fd);
		coord_slot_give(&co->slots, &p->slot);
		free(p);
		return;
	}
	if (conn_new(co->pd->base, fd, ssl, PEER_UNREG_FRAME_MAX, &coord_peer_ops, p, desc,
		     &p->conn) < 0) {
		coord_slot_give(&co->slots, &p->slot);
		free(p);
		return;
	}
	conn_set_limit_name(p->conn, "what a link may send before it registers");
	conn_set_max_send(p->conn, PEER_FRAME_MAX);
	TAILQ_INSERT_TAIL(&co->peers, p, entry);
	coord_deadline_arm(co);
	log_debug("peer link from %s", p->addr);
}

/* Watch heartbeats: late is suspect, heartbeat.misses intervals late is dead. */
static void coord_check(evutil_socket_t fd, short what, void *arg)
{
	struct coord *co = arg;
	struct poold *pd = co->pd;
	uint64_t now = units_now_ms(), hb = (uint64_t)pd->conf->heartbeat_ms;
	struct member *m;
	bool late;

	(void)ha_epoch(pd, NULL);
	/*
	 * This coordinator's own loop was held (a long callback, a starved
	 * host) for a quarter of an interval or more past this check's time:
	 * heartbeats that came meanwhile may still wait unread in their links,
	 * so a node's silence says nothing yet. It is judged at the next
	 * check, half an interval on, once they are read; only once in a row,
	 * so that a coordinator always held still declares the dead dead.
	 */
	late = co->last_check != 0 && now - co->last_check > hb / 2 + hb / 4;
	co->last_check = now;
	if (late && !co->check_put_off) {
		co->check_put_off = true;
		return;
	}
	co->check_put_off = false;
	TAILQ_FOREACH(m, &pd->members, entry) {
		uint64_t age = now - m->last_heartbeat;

		if (m->info->id == pd->node_id) {
			m->last_heartbeat = now;
			continue;
		}
		if (m->state != MEMBER_DEAD && age > hb * (uint64_t)pd->conf->heartbeat_misses) {
			coord_set_state(co, m, MEMBER_DEAD);
			if (m->conn !=
			    NULL) /* fenced: it must register again, and hears nothing more */
				conn_abort(m->conn, true);
		} else if (m->state == MEMBER_UP && age > hb + hb / 2) {
			coord_set_state(co, m, MEMBER_SUSPECT);
		}
	}
}

/*
 * Every ledger.interval: ask each lender that is up for its record, but
 * one whose last comparison was long until its pace allows (reconcile.c).
 */
static void coord_ledger(evutil_socket_t fd, short what, void *arg)
{
	struct coord *co = arg;
	uint64_t now = units_now_ms();
	struct member *m;

	(void)ha_epoch(co->pd, NULL);
	TAILQ_FOREACH(m, &co->pd->members, entry)
		if (m->state == MEMBER_UP && now >= m->ledger_after)
			reconcile_ask(co->pd, m->info->id);
}

static void coord_periodic_probe(evutil_socket_t fd, short what, void *arg)
{
	struct coord *co = arg;

	(void)ha_epoch(co->pd, NULL);
	coord_probe_all(co->pd, NULL);
}

static int coord_listen(struct coord *co)
{
	struct poold *pd = co->pd;
	int rc;

	rc = accept_listen(pd, "peer.listen", pd->conf->peer_listen, 128, coord_accept, co,
			   &co->listener);
	if (rc == 0)
		log_info("coordinator accepting nodes on %s", pd->conf->peer_listen);
	return rc;
}

/* Start the coordinator role: this poold is the first member, then listen for nodes. */
int coord_open(struct poold *pd)
{
	struct timespec now;
	struct timeval tv;
	struct node_info *self;
	struct member *m, *other;
	struct coord *co;
	int rc;

	co = calloc(1, sizeof(*co));
	if (co == NULL)
		return -ENOMEM;
	co->pd = pd;
	co->next_id = 1;
	/*
	 * Registrations are numbered from the wall clock in microseconds: a
	 * restarted or new coordinator never gives a node a number it had.
	 */
	clock_gettime(CLOCK_REALTIME, &now);
	co->next_epoch = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	pd->epoch = co->next_epoch++;
	carry_joined(pd);
	TAILQ_INIT(&co->peers);
	TAILQ_INIT(&co->gathers);
	coord_slots_init(&co->slots, (unsigned)pd->conf->max_nodes);
	pd->coord = co;
	pd->coord_role = &coord_role;
	self = member_self_info(pd);
	rc = self != NULL ? member_update(pd, self, &m) : -ENOMEM;
	if (rc < 0)
		goto out_free;
	m->state = MEMBER_UP;
	/*
	 * The members a standby followed (coord.etcd) have a heartbeat window
	 * to find their new leader before it declares them dead, and fences
	 * them off every lender.
	 */
	TAILQ_FOREACH(other, &pd->members, entry)
		other->last_heartbeat = units_now_ms();
	rc = member_call_open(pd);
	if (rc == 0)
		rc = region_open_space(pd, &coord_space_hooks);
	if (rc == 0)
		rc = kv_open(pd, coord_log_namespaces);
	if (rc == 0)
		rc = kv_snap_open(pd);
	if (rc == 0)
		rc = coord_log_open(pd);
	if (rc == 0)
		rc = resp_open(pd);
	if (rc == 0)
		rc = kv_events_open(pd);
	if (rc < 0)
		goto out_free;
	coord_lender_update(pd, m->info);
	reconcile_ask(pd, pd->node_id); /* this poold's own arenas: nothing held yet */
	if (pd->conf->peer_listen[0] != '\0' && (rc = coord_listen(co)) < 0)
		goto out_free;
	co->check_ev = event_new(pd->base, -1, EV_PERSIST, coord_check, co);
	co->probe_ev = event_new(pd->base, -1, EV_PERSIST, coord_periodic_probe, co);
	co->ledger_ev = event_new(pd->base, -1, EV_PERSIST, coord_ledger, co);
	co->sweep_ev = event_new(pd->base, -1, EV_PERSIST, coord_sweep, pd);
	co->deadline_ev = evtimer_new(pd->base, coord_deadline, co);
	co->ev_tick = evtimer_new(pd->base, coord_events_tick, co);
	if (co->check_ev == NULL || co->probe_ev == NULL || co->ledger_ev == NULL ||
	    co->sweep_ev == NULL || co->deadline_ev == NULL || co->ev_tick == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	tv = units_timeval((uint64_t)pd->conf->heartbeat_ms / 2);
	event_add(co->check_ev, &tv);
	event_add(co->sweep_ev, &(struct timeval){.tv_sec = 0, .tv_usec = 250000});
	if (pd->conf->ledger_interval_ms > 0) {
		tv = units_timeval((uint64_t)pd->conf->ledger_interval_ms);
		event_add(co->ledger_ev, &tv);
	}
	if (pd->conf->probe_interval_ms > 0) {
		tv = units_timeval((uint64_t)pd->conf->probe_interval_ms);
		event_add(co->probe_ev, &tv);
	}
	return 0;
out_free:
	coord_close(pd);
	return rc;
}

/* Stop the coordinator role: close every node link and pending round. */
void coord_close(struct poold *pd)
{
	struct coord *co = pd->coord;
	struct coord_peer *p;
	struct gather *g;

	if (co == NULL)
		return;
	while ((g = TAILQ_FIRST(&co->gathers)) != NULL) {
		if (g->r != NULL) {
			req_finish(g->r, req_errorf(g->r, -ESHUTDOWN, "poold is stopping"));
			g->r = NULL;
		}
		gather_done(g);
	}
	while ((p = TAILQ_FIRST(&co->peers)) != NULL) {
		if (p->m != NULL && p->m->conn == p->conn)
			p->m->conn = NULL; /* nothing below may send on it any more */
		conn_free(p->conn);
		TAILQ_REMOVE(&co->peers, p, entry);
		holdreport_free(p->report);
		free(p);
	}
	resp_close(pd);
	reconcile_close(pd); /* (its passes walk the index and the address space) */
	kv_events_close(pd); /* before the index: its last flush is no news to anyone */
	kv_close(pd);
	coord_log_close(pd);
	reclaim_close(pd);	/* (its moves are the address space's) */
	region_close_space(pd); /* before the calls go: it owns their arguments */
	usage_clear(&pd->usage);
	member_call_close(pd);
	accept_close(co->listener);
	if (co->check_ev != NULL)
		event_free(co->check_ev);
	if (co->probe_ev != NULL)
		event_free(co->probe_ev);
	if (co->ledger_ev != NULL)
		event_free(co->ledger_ev);
	if (co->sweep_ev != NULL)
		event_free(co->sweep_ev);
	if (co->deadline_ev != NULL)
		event_free(co->deadline_ev);
	if (co->ev_tick != NULL)
		event_free(co->ev_tick);
	coord_events_clear(co);
	free(co->ev);
	member_ids_clear(pd);
	free(co);
	pd->coord = NULL;
	pd->coord_role = NULL;
}

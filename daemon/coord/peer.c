/*
 * daemon/coord/peer.c - a node's link to its coordinator.
 *
 * The node connects, says Hello, checks that the coordinator knows the
 * shared secret, registers with its own proof of it (peer-auth.c: the secret
 * never crosses the link) and then sends a heartbeat every
 * heartbeat.interval. It mirrors the member
 * table from the coordinator's replies and member events, runs the link
 * probes the coordinator asks for, and forwards its clients' cluster-wide
 * requests. When the coordinator stops answering for heartbeat.misses
 * intervals, or declares this node dead, the node drops the link and
 * registers again; meanwhile forwarded requests fail with POOL_ECOORD.
 *
 * With coord.etcd the coordinator is whichever candidate leads there
 * (ha.c tells peer_follow()): the node moves its link to each new
 * leader, and refuses a coordinator whose epoch is older than the newest
 * it has seen, a deposed leader still listening.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <event2/event.h>

#include "daemon/control/control.h"
#include "daemon/coord/coord.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/resp/resp.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"
#include "daemon/vec/vec.h"
#include "proto/pool_contract.h"

#define PEER_MAX_FORWARDS 4096
#define PEER_RETRY_MAX_MS 10000

enum peer_state { PEER_IDLE, PEER_CONNECTING, PEER_HELLO, PEER_REGISTERING, PEER_UP };

/* A client request forwarded to the coordinator, waiting for its reply. */
struct forward {
	TAILQ_ENTRY(forward) entry;
	uint64_t id;
	struct req *r; /* NULL: this poold's own (peer_ask()), its answer only logged */
};

/* KV namespace definitions as the coordinator tells them: kv-ns-defs chunks (packed KvNsReply). */
struct nsdefs_chunk {
	uint8_t *buf;
	size_t len;
};

struct nsdefs {
	struct nsdefs_chunk *c;
	size_t n;
};

struct peer {
	struct poold *pd;
	struct conn *conn;
	enum peer_state state;
	struct event *timer;
	uint64_t next_id;
	uint64_t last_ack;
	uint64_t retry_ms;
	uint64_t hb_ms; /* the coordinator's heartbeat settings, once registered */
	uint64_t hb_misses;
	uint64_t last_tick; /* units_now_ms() of the last peer_tick() */
	/*
	 * After this poold did not run for longer than the heartbeat window:
	 * the first heartbeat sent since (UINT64_MAX: the next one), whose
	 * answer says it is still a member; its KV shards are held back until
	 * then, or until it registers again (0: not held back).
	 */
	uint64_t stall_beat;
	bool close_said;  /* said once that links close before the coordinator answers */
	char target[256]; /* host:port of the coordinator: coordinator, or etcd's leader */
	int64_t epoch;	  /* with coord.etcd: the newest leader's, 0 before one is known */
	uint8_t nonce[PEERAUTH_NONCE_LEN]; /* this link's challenge to the coordinator */
	TAILQ_HEAD(, forward) forwards;
	unsigned nforwards;
	/*
	 * The KV namespaces the coordinator last told of, for a restarted one:
	 * the set, kept once its last chunk came; the chunks of a set still
	 * coming; and how many kept chunks the last Register carried (the
	 * others follow it).
	 */
	struct nsdefs nsdefs, nsdefs_coming;
	size_t nsdefs_registered;
	/* The record's report on its way to the coordinator, in chunks (stream.c, hold.c). */
	struct stream *report;
	uint64_t report_no;  /* its number */
	uint32_t report_seq; /* the number of its next chunk */
	size_t report_chunk; /* the most bytes of a chunk */
	/*
	 * Chunks it may send beyond those the coordinator said it read (0: no
	 * acknowledgements, an older coordinator), how many it said it read,
	 * and when it last said so or the report began.
	 */
	uint32_t report_window, report_read;
	uint64_t report_heard;
	/* Scrubs done, acknowledged once they are durable (lend_flush()), in a burst. */
	uint64_t *scrub_acks;
	size_t nscrub_acks, scrub_acks_cap;
	struct event *scrub_ev;
};

static void peer_scrubs_durable(evutil_socket_t fd, short what, void *arg)
{
	struct peer *pe = arg;
	Pool__Ok ok = POOL__OK__INIT;
	size_t i;

	(void)fd, (void)what;
	lend_flush();
	for (i = 0; pe->conn != NULL && i < pe->nscrub_acks; i++)
		conn_send(pe->conn, WIRE_OK, pe->scrub_acks[i], &ok.base);
	pe->nscrub_acks = 0;
}

/* Lender: record what the coordinator's Hold says it holds; 0 or -errno as hold_add(). */
static int peer_hold_add(struct poold *pd, const Pool__Holdings *hs)
{
	struct holding *h = holdings_of_msg(hs);
	int rc;

	if (h == NULL)
		return -ENOMEM;
	rc = hold_add(pd, h, hs->n_holdings);
	free(h);
	return rc;
}

/*
 * Lender: answer an older coordinator's HoldingsRequest, without a chunk
 * size, with its record in one message: a record too large for a frame is
 * said, and not sent (that coordinator reconciles nothing of this node).
 */
static void peer_hold_report_whole(struct poold *pd, struct conn *c, uint64_t req_id)
{
	Pool__Holdings hs;
	struct holding *h;
	size_t n;
	int rc;

	if ((rc = hold_list(pd, &h, &n)) == 0) {
		if ((rc = holdings_msg(h, n, &hs)) == 0) {
			rc = conn_send(c, WIRE_HOLDINGS_REPLY, req_id, &hs.base);
			holdings_msg_free(&hs);
		}
		free(h);
	}
	if (rc < 0)
		log_warnx(
		    "cannot report this node's %zu holding(s) to a coordinator that takes them "
		    "in one message only: %s",
		    pd->nholds, err_str(rc));
}

/* Lender: the next chunk of the record's report (stream.c): 1 more follow, 0 the last, -errno. */
static int peer_report_next(struct poold *pd, struct conn *c, void *arg)
{
	struct peer *pe = arg;
	struct holdreport_chunk chunk;
	Pool__Holdings hs;
	bool more;
	int rc;

	if ((rc = holdreport_chunk(pd, pe->report_chunk, &chunk)) < 0)
		return rc;
	more = chunk.more;
	if ((rc = holdings_chunk_msg(pe->report_no, pe->report_seq, &chunk, &hs)) == 0) {
		/* (acknowledged twice a window: the next chunks go while the ack comes) */
		hs.has_ack = hs.ack = pe->report_window != 0 &&
				      (pe->report_seq + 1) % MAX(pe->report_window / 2, 1u) == 0;
		rc = conn_send(c, WIRE_HOLDINGS_REPLY, 0, &hs.base);
		holdings_chunk_free(&hs);
	}
	holdreport_chunk_free(&chunk);
	if (rc < 0)
		return rc;
	pe->report_seq++;
	if (more && pe->report_window != 0 && pe->report_seq - pe->report_read >= pe->report_window)
		stream_pause(pe->report);
	return more ? 1 : 0;
}

/* Lender: the coordinator read the chunks of the report up to seq: the next may go. */
static void peer_report_read(struct peer *pe, const Pool__HoldingsAck *ack)
{
	if (pe->report == NULL || ack->report != pe->report_no || ack->seq >= pe->report_seq ||
	    ack->seq < pe->report_read)
		return; /* (a report that ended, or an ack out of place) */
	pe->report_read = ack->seq + 1;
	pe->report_heard = units_now_ms();
	if (pe->report_seq - pe->report_read < pe->report_window)
		stream_resume(pe->report);
}

/*
 * Lender: the report is out, or stopped: a chunk that could not be sent
 * ends it (the coordinator drops what it gathered, and asks again at its
 * next ledger pass).
 */
static void peer_report_end(struct poold *pd, void *arg, int rc)
{
	struct peer *pe = arg;

	pe->report = NULL;
	hold_report_end(pd);
	if (rc < 0 && rc != -ECONNRESET)
		log_warnx("holdings report %llu to the coordinator stopped at chunk %u: %s; it "
			  "starts over when the coordinator asks again",
			  (unsigned long long)pe->report_no, pe->report_seq, err_str(rc));
	else if (rc == 0)
		log_debug("holdings report %llu sent: %u chunk(s)",
			  (unsigned long long)pe->report_no, pe->report_seq);
}

/* Lender: stop the report on its way (its link went). */
static void peer_report_stop(struct peer *pe)
{
	if (pe->report == NULL)
		return;
	stream_stop(pe->report);
	pe->report = NULL;
	hold_report_end(pe->pd);
}

/*
 * Lender: the coordinator's HoldingsRequest. The record goes in chunks of
 * at most the size it asks for, one per turn of the loop (stream.c), so
 * that no record is too large to report and heartbeats go on meanwhile,
 * and at most window chunks beyond those the coordinator said it read, so
 * that a heartbeat never waits behind megabytes of report in the sockets'
 * buffers while a busy coordinator reads its way through them. A request
 * while a report is on its way is answered by it: it ends with the record
 * as it is then.
 */
static void peer_holdings_request(struct peer *pe, uint64_t req_id,
				  const Pool__HoldingsRequest *req)
{
	struct poold *pd = pe->pd;
	int rc;

	if (!req->has_chunk_size) {
		peer_hold_report_whole(pd, pe->conn, req_id);
		return;
	}
	if (pe->report != NULL)
		return;
	pe->report_chunk = MIN(MAX(req->chunk_size, 256u), PEER_FRAME_MAX / 4);
	pe->report_window = req->has_window ? MAX(req->window, 1u) : 0;
	pe->report_no++;
	pe->report_seq = pe->report_read = 0;
	pe->report_heard = units_now_ms();
	rc = hold_report_begin(pd);
	if (rc == 0)
		rc = stream_start(pd, pe->conn, 2 * pe->report_chunk, peer_report_next,
				  peer_report_end, pe, &pe->report);
	if (rc < 0) {
		hold_report_end(pd);
		log_warnx(
		    "cannot report this node's holdings to the coordinator: %s; it asks again",
		    err_str(rc));
	}
}

/* A scrub is over: acknowledged when the loop has made the burst durable. */
static void peer_scrub_ack(struct peer *pe, uint64_t req_id)
{
	static const struct timeval now = {0, 0};
	size_t cap = pe->scrub_acks_cap ? pe->scrub_acks_cap * 2 : 64;
	uint64_t *acks;

	if (pe->nscrub_acks == pe->scrub_acks_cap) {
		if ((acks = reallocarray(pe->scrub_acks, cap, sizeof(*acks))) == NULL) {
			/* No room to wait: durable now, acknowledged now. */
			Pool__Ok ok = POOL__OK__INIT;

			lend_flush();
			conn_send(pe->conn, WIRE_OK, req_id, &ok.base);
			return;
		}
		pe->scrub_acks = acks;
		pe->scrub_acks_cap = cap;
	}
	pe->scrub_acks[pe->nscrub_acks++] = req_id;
	evtimer_add(pe->scrub_ev, &now);
}

/* A Scrub done in slices (scrub.c), on the link it came on. */
struct peer_scrub_wait {
	struct conn *conn;
	uint64_t req_id;
};

static void peer_scrubbed(struct poold *pd, void *arg, int rc)
{
	struct peer_scrub_wait *w = arg;
	struct peer *pe = pd->peer;

	(void)rc;
	if (pe != NULL && pe->conn == w->conn && conn_alive(w->conn))
		peer_scrub_ack(pe, w->req_id);
	conn_unref(w->conn);
	free(w);
}

/* The coordinator's Scrub: done now, or in slices when the extent is large. */
static void peer_scrub(struct peer *pe, uint64_t req_id, const Pool__Scrub *sc)
{
	struct peer_scrub_wait *w = req_id != 0 ? malloc(sizeof(*w)) : NULL;

	if (w != NULL)
		*w = (struct peer_scrub_wait){conn_ref(pe->conn), req_id};
	if ((req_id == 0 || w != NULL) &&
	    scrub_later(pe->pd, sc->arena, sc->off, sc->len, w ? peer_scrubbed : NULL, w))
		return;
	if (w != NULL) {
		conn_unref(w->conn);
		free(w);
	}
	hold_scrub(pe->pd, sc->arena, sc->off, sc->len);
	if (req_id != 0)
		peer_scrub_ack(pe, req_id);
}

static void nsdefs_clear(struct nsdefs *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->c[i].buf);
	free(d->c);
	d->c = NULL;
	d->n = 0;
}

/*
 * A chunk of the coordinator's KV namespace definitions (a packed
 * KvNsReply, seq and more as it says): the set its chunks make is kept
 * once its last chunk came; one out of its order drops the set coming (the
 * older one stays).
 */
/* The whole set came: this poold's sharded namespaces follow it (kv-owner.c). */
static void peer_follow_nsdefs(struct peer *pe)
{
	Pool__KvNamespace **all = NULL, **more;
	ProtobufCMessage **chunks = calloc(pe->nsdefs.n ? pe->nsdefs.n : 1, sizeof(*chunks));
	size_t i, n = 0;

	for (i = 0; chunks != NULL && i < pe->nsdefs.n; i++) {
		const Pool__KvNsReply *r;

		if (wire_msg_unpack(WIRE_KV_NS_DEFS, pe->nsdefs.c[i].buf, pe->nsdefs.c[i].len,
				    &chunks[i]) < 0)
			goto out;
		r = (const Pool__KvNsReply *)chunks[i];
		if ((more = reallocarray(all, n + r->n_namespaces + 1, sizeof(*all))) == NULL)
			goto out;
		all = more;
		memcpy(all + n, r->namespaces, r->n_namespaces * sizeof(*all));
		n += r->n_namespaces;
	}
	if (chunks != NULL)
		kv_defs_adopt_msg(pe->pd, all, n, NULL);
out:
	for (i = 0; chunks != NULL && i < pe->nsdefs.n; i++)
		wire_msg_free(chunks[i]);
	free(chunks);
	free(all);
}

static void peer_keep_nsdefs(struct peer *pe, uint32_t seq, bool more, const uint8_t *buf,
			     size_t len)
{
	struct nsdefs *coming = &pe->nsdefs_coming;
	struct nsdefs_chunk *c;
	uint8_t *copy;

	if (seq == 0)
		nsdefs_clear(coming);
	if (seq != coming->n) {
		log_warnx("coordinator %s: chunk %u of the KV namespace definitions is out of "
			  "order: the older ones stay",
			  pe->target, seq);
		nsdefs_clear(coming);
		return;
	}
	if ((c = reallocarray(coming->c, coming->n + 1, sizeof(*c))) != NULL)
		coming->c = c;
	if (c == NULL || (copy = malloc(len ? len : 1)) == NULL) {
		log_warnx(
		    "out of memory keeping the KV namespace definitions: the older ones stay");
		nsdefs_clear(coming);
		return;
	}
	memcpy(copy, buf, len);
	coming->c[coming->n++] = (struct nsdefs_chunk){copy, len};
	if (more)
		return;
	nsdefs_clear(&pe->nsdefs);
	pe->nsdefs = *coming;
	*coming = (struct nsdefs){0};
	peer_follow_nsdefs(pe);
}

/* The same, from a message: the first chunk, as a register reply carries it. */
static void peer_keep_nsdefs_msg(struct peer *pe, Pool__KvNamespace **defs, size_t n, bool more)
{
	Pool__KvNsReply chunk = POOL__KV_NS_REPLY__INIT;
	size_t len;
	uint8_t *buf;

	chunk.namespaces = defs;
	chunk.n_namespaces = n;
	len = protobuf_c_message_get_packed_size(&chunk.base);
	if ((buf = malloc(len ? len : 1)) == NULL)
		return; /* the older ones stay */
	protobuf_c_message_pack(&chunk.base, buf);
	peer_keep_nsdefs(pe, 0, more, buf, len);
	free(buf);
}

static void peer_schedule(struct peer *pe, uint64_t ms)
{
	struct timeval tv = units_timeval(ms);

	evtimer_add(pe->timer, &tv);
}

static void peer_fail_forwards(struct peer *pe)
{
	struct forward *f;

	while ((f = TAILQ_FIRST(&pe->forwards)) != NULL) {
		TAILQ_REMOVE(&pe->forwards, f, entry);
		if (f->r != NULL)
			req_finish(f->r,
				   req_errorf(f->r, POOL_ECOORD,
					      "coordinator unavailable: the link to %s dropped",
					      pe->target));
		free(f);
	}
	pe->nforwards = 0;
}

/*
 * Drop the link (reset: the coordinator must not get, late, what it was
 * sent before; its forwards are failed here) and try again after a
 * back-off.
 */
static void peer_reset(struct peer *pe, const char *why)
{
	if (pe->conn != NULL) {
		conn_abort(pe->conn, false);
		pe->conn = NULL;
	}
	if (pe->state == PEER_UP) {
		log_warnx("lost the coordinator %s: %s", pe->target, why);
		events_add(pe->pd, "coordinator", "lost the coordinator %s: %s", pe->target, why);
	} else
		log_debug("coordinator %s: %s", pe->target, why);
	pe->state = PEER_IDLE;
	pe->nscrub_acks = 0; /* the old link's: its coordinator retries them on a new one */
	peer_report_stop(pe);
	nsdefs_clear(&pe->nsdefs_coming);
	peer_fail_forwards(pe);
	pe->retry_ms = MIN(MAX(pe->retry_ms * 2, 200),
			   MIN(PEER_RETRY_MAX_MS, (uint64_t)pe->pd->conf->heartbeat_ms * 2));
	peer_schedule(pe, pe->retry_ms);
}

/*
 * The coordinator's HelloReply: with a secret, it must prove it knows it
 * (else it is not ours, and learns nothing more); then register, with this
 * node's own proof.
 */
static void peer_register(struct peer *pe, const Pool__HelloReply *hr)
{
	Pool__Register reg = POOL__REGISTER__INIT;
	const char *secret = pe->pd->conf->secret;
	uint8_t want[PEERAUTH_PROOF_LEN], proof[PEERAUTH_PROOF_LEN];
	ProtobufCMessage *defs = NULL;
	struct node_info *self;
	Pool__NodeInfo wself;

	if (pe->epoch != 0 && (!hr->has_epoch || hr->epoch < pe->epoch)) {
		log_warnx("coordinator %s is of epoch %lld, older than the leader's (%lld): a "
			  "deposed leader, not joined",
			  pe->target, (long long)(hr->has_epoch ? hr->epoch : 0),
			  (long long)pe->epoch);
		peer_reset(pe, "a deposed coordinator");
		return;
	}
	if (secret[0] != '\0') {
		if (!hr->has_nonce || hr->nonce.len != PEERAUTH_NONCE_LEN ||
		    peer_auth_coord_proof(secret, pe->nonce, hr->nonce.data, want) < 0 ||
		    !peer_auth_equal(want, hr->proof.data, hr->has_proof ? hr->proof.len : 0)) {
			log_warnx("coordinator %s did not prove it knows peer.secret: not joining",
				  pe->target);
			events_add(pe->pd, "coordinator", "coordinator %s failed authentication",
				   pe->target);
			peer_reset(pe, "the coordinator failed authentication");
			return;
		}
		if (peer_auth_node_proof(secret, hr->nonce.data, pe->nonce, pe->pd->conf->node_name,
					 proof) < 0) {
			peer_reset(pe, "cannot compute the authentication proof");
			return;
		}
		reg.has_proof = 1;
		reg.proof.data = proof;
		reg.proof.len = sizeof(proof);
	}
	if ((self = member_self_info(pe->pd)) == NULL) {
		peer_reset(pe, "out of memory");
		return;
	}
	self->id = (uint32_t)pe->pd->conf->node_id;
	if (node_info_to_wire(self, false, &wself) < 0) {
		node_info_free(self);
		peer_reset(pe, "out of memory");
		return;
	}
	reg.node = &wself;
	/* Sessions that ended while the link was down are those not listed. */
	if (control_sessions(pe->pd, &reg.sessions, &reg.n_sessions) < 0)
		reg.n_sessions = 0;
	/*
	 * The definitions' first chunk, when it leaves room in what a link may
	 * send before it registers; the others follow the register reply.
	 */
	pe->nsdefs_registered = 0;
	if (pe->nsdefs.n > 0 && pe->nsdefs.c[0].len <= PEER_UNREG_FRAME_MAX / 4 &&
	    wire_msg_unpack(WIRE_KV_NS_DEFS, pe->nsdefs.c[0].buf, pe->nsdefs.c[0].len, &defs) ==
		0) {
		reg.namespaces = ((Pool__KvNsReply *)defs)->namespaces;
		reg.n_namespaces = ((Pool__KvNsReply *)defs)->n_namespaces;
		pe->nsdefs_registered = 1;
	}
	conn_send(pe->conn, WIRE_REGISTER, ++pe->next_id, &reg.base);
	wire_msg_free(defs);
	free(reg.sessions);
	node_info_wire_free(&wself);
	node_info_free(self);
	pe->state = PEER_REGISTERING;
}

/*
 * A member whose record does not say where its links are taken (the
 * coordinator's, without fabric.address) is reached at the address this
 * node reaches the coordinator at.
 */
static void peer_link_host(struct peer *pe, struct node_info *info)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char at[INET6_ADDRSTRLEN + 16], host[INET6_ADDRSTRLEN + 1], *copy;

	if (info->link_host[0] != '\0' || info->link_port == 0 || pe->conn == NULL ||
	    getpeername(conn_fd(pe->conn), (struct sockaddr *)&ss, &sl) < 0)
		return;
	addr_format(&ss, at, sizeof(at));
	if (addr_host(at, host, sizeof(host)) == 0 && (copy = strdup(host)) != NULL) {
		free(info->link_host);
		info->link_host = copy;
	}
}

static void peer_registered(struct peer *pe, const Pool__RegisterReply *rep)
{
	struct poold *pd = pe->pd;
	struct member *m;
	size_t i;

	pd->node_id = rep->node_id;
	sdnotify_serving(pd, "node, registered with the coordinator");
	grant_expire_all(pd);
	if (rep->has_was_dead && rep->was_dead)
		kv_owner_fenced(pd);
	pe->stall_beat = 0; /* (the coordinator's word: a member, and whether it was dead) */
	kv_owner_hold(pd, false);
	/*
	 * The members are updated in place, and those the coordinator does not
	 * list (a restarted coordinator before they registered again) are kept:
	 * transfers this poold carries to them go on meanwhile.
	 */
	for (i = 0; i < rep->n_members; i++) {
		struct node_info *info = node_info_from_wire(rep->members[i]->node);

		if (info == NULL)
			continue;
		if (info->id == rep->node_id)
			pd->epoch = info->epoch; /* (its links say so from now on) */
		peer_link_host(pe, info);
		if (member_update(pd, info, &m) < 0)
			continue;
		m->state = member_state_of(rep->members[i]->state);
		m->heartbeat_age_ms = rep->members[i]->heartbeat_age_ms;
		member_set_kv_drained(pd, m, rep->members[i]->kv_drained);
	}
	carry_joined(pd);
	pe->hb_ms = rep->heartbeat_ms ? rep->heartbeat_ms : (uint64_t)pd->conf->heartbeat_ms;
	pe->hb_misses =
	    rep->heartbeat_misses ? rep->heartbeat_misses : (uint64_t)pd->conf->heartbeat_misses;
	conn_set_max_send(pe->conn, PEER_FRAME_MAX);
	/* What the Register had no room for, before the coordinator's set replaces them. */
	for (i = pe->nsdefs_registered; i < pe->nsdefs.n; i++)
		conn_send_raw(pe->conn, WIRE_KV_NS_DEFS, 0, pe->nsdefs.c[i].buf,
			      pe->nsdefs.c[i].len);
	peer_keep_nsdefs_msg(pe, rep->namespaces, rep->n_namespaces,
			     rep->has_namespaces_more && rep->namespaces_more);
	resp_relay_learn(pd, rep->resp_endpoint, conn_fd(pe->conn));
	pe->state = PEER_UP;
	pe->close_said = false;
	pe->last_ack = units_now_ms();
	pe->retry_ms = 0;
	log_info("joined the coordinator %s as node %u (%zu members)", pe->target, pd->node_id,
		 rep->n_members);
	events_add(pd, "coordinator", "joined the coordinator %s as node %u", pe->target,
		   pd->node_id);
}

static void peer_member_event(struct peer *pe, const Pool__Member *mm)
{
	struct poold *pd = pe->pd;
	enum member_state state = member_state_of(mm->state);
	struct node_info *info;
	struct member *m;

	if (mm->node->id == pd->node_id && state == MEMBER_DEAD) {
		/*
		 * Declared dead while we were away: our old standing is void, our
		 * grants too, and nothing carried for our clients goes on.
		 */
		grant_clear(pd);
		carry_fence(pd);
		kv_owner_fenced(pd);
		peer_reset(pe, "the coordinator declared this node dead; registering again");
		return;
	}
	if ((info = node_info_from_wire(mm->node)) == NULL)
		return;
	peer_link_host(pe, info);
	if (member_update(pd, info, &m) < 0)
		return;
	m->heartbeat_age_ms = mm->heartbeat_age_ms;
	member_set_kv_drained(pd, m, mm->kv_drained);
	member_set_state(pd, m, state);
}

struct peer_probe {
	struct peer *pe;
	struct conn *conn;
	uint64_t id;
};

static void peer_probe_done(struct poold *pd, Pool__ProbeResult **results, size_t n, void *arg)
{
	struct peer_probe *pp = arg;
	Pool__ProbeReport rep = POOL__PROBE_REPORT__INIT;

	rep.results = results;
	rep.n_results = n;
	conn_send(pp->conn, WIRE_PROBE_REPORT, pp->id, &rep.base); /* no-op if the link is gone */
	conn_unref(pp->conn);
	probe_results_free(results, n);
	free(pp);
}

static void peer_probe(struct peer *pe, uint64_t id, const Pool__ProbeRequest *req)
{
	struct peer_probe *pp = malloc(sizeof(*pp));

	if (pp == NULL) {
		conn_send_error(pe->conn, id, -ENOMEM, NULL);
		return;
	}
	pp->pe = pe;
	pp->conn = conn_ref(pe->conn);
	pp->id = id;
	if (probe_run(pe->pd, req->targets, req->n_targets, peer_probe_done, pp) < 0) {
		conn_send_error(pe->conn, id, -ENOMEM, NULL);
		conn_unref(pp->conn);
		free(pp);
	}
}

/* A reply for a forwarded request: relay it, as it is, to the client. */
static bool peer_relay(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload)
{
	struct forward *f;
	bool sent = false;

	TAILQ_FOREACH(f, &pe->forwards, entry)
		if (f->id == hdr->req_id)
			break;
	if (f == NULL)
		return false;
	TAILQ_REMOVE(&pe->forwards, f, entry);
	pe->nforwards--;
	if (f->r == NULL) { /* (this poold's own: what it changes, every node is told) */
		Pool__Error *err;

		if (hdr->type == WIRE_ERROR && wire_msg_unpack(WIRE_ERROR, payload, hdr->len,
							       (ProtobufCMessage **)&err) == 0) {
			log_debug("coordinator %s: %s", pe->target, err->message);
			wire_msg_free(&err->base);
		}
		free(f);
		return true;
	}
	if (hdr->type == WIRE_REGION_REPLY || hdr->type == WIRE_KV_REPLY) {
		ProtobufCMessage *msg;

		/* What the coordinator granted the client: its transfers go through us. */
		if (wire_msg_unpack(hdr->type, payload, hdr->len, &msg) == 0) {
			grant_reply(pe->pd, f->r->session, hdr->type, msg);
			sent = f->r->with_file && region_reply_with_file(f->r, hdr->type, msg) != 0;
			wire_msg_free(msg);
		}
	}
	if (!sent)
		conn_send_raw(f->r->conn, hdr->type, f->r->id, payload, hdr->len);
	req_finish(f->r, 0);
	free(f);
	return true;
}

/* A message the coordinator sends, handled: unpacked as msg, freed after. */
typedef void peer_msg_fn(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			 ProtobufCMessage *msg);

static void peer_on_hello_reply(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
				ProtobufCMessage *msg)
{
	(void)hdr, (void)payload;
	if (pe->state == PEER_HELLO)
		peer_register(pe, (Pool__HelloReply *)msg);
}

static void peer_on_register_reply(struct peer *pe, const struct wire_hdr *hdr,
				   const uint8_t *payload, ProtobufCMessage *msg)
{
	(void)hdr, (void)payload;
	if (pe->state == PEER_REGISTERING)
		peer_registered(pe, (Pool__RegisterReply *)msg);
}

/* A heartbeat's answer (not a relayed reply). */
static void peer_on_ok(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
		       ProtobufCMessage *msg)
{
	(void)payload, (void)msg;
	pe->last_ack = units_now_ms();
	if (pe->stall_beat != 0 && pe->stall_beat != UINT64_MAX &&
	    hdr->req_id >= pe->stall_beat) { /* (still a member: not declared dead) */
		pe->stall_beat = 0;
		kv_owner_hold(pe->pd, false);
	}
}

static void peer_on_member_event(struct peer *pe, const struct wire_hdr *hdr,
				 const uint8_t *payload, ProtobufCMessage *msg)
{
	(void)hdr, (void)payload;
	if (pe->state == PEER_UP)
		peer_member_event(pe, ((Pool__MemberEvent *)msg)->member);
}

static void peer_on_member_events(struct peer *pe, const struct wire_hdr *hdr,
				  const uint8_t *payload, ProtobufCMessage *msg)
{
	Pool__MemberEvents *evs = (Pool__MemberEvents *)msg;
	size_t i;

	(void)hdr, (void)payload;
	/* (one of them may reset the link: this node declared dead) */
	for (i = 0; i < evs->n_members && pe->state == PEER_UP; i++)
		peer_member_event(pe, evs->members[i]);
}

static void peer_on_kv_ns_defs(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			       ProtobufCMessage *msg)
{
	const Pool__KvNsReply *defs = (const Pool__KvNsReply *)msg;

	peer_keep_nsdefs(pe, defs->has_seq ? defs->seq : 0, defs->has_more && defs->more, payload,
			 hdr->len);
}

static void peer_on_probe(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			  ProtobufCMessage *msg)
{
	(void)payload;
	peer_probe(pe, hdr->req_id, (Pool__ProbeRequest *)msg);
}

static void peer_on_region_notice(struct peer *pe, const struct wire_hdr *hdr,
				  const uint8_t *payload, ProtobufCMessage *msg)
{
	Pool__RegionNotice *rn = (Pool__RegionNotice *)msg;
	size_t i, n = rn->n_sessions;

	(void)hdr, (void)payload;
	rn->n_sessions = 0; /* clients get the notice without the node's session list */
	for (i = 0; i < n; i++)
		control_notify(pe->pd, rn->sessions[i], WIRE_REGION_NOTICE, msg);
	rn->n_sessions = n;
}

static void peer_on_arena_limit(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
				ProtobufCMessage *msg)
{
	const Pool__ArenaLimit *al = (const Pool__ArenaLimit *)msg;

	(void)hdr, (void)payload;
	lend_set_limit(pe->pd, al->arena, al->limit);
}

/* An answer to the coordinator's request id: OK, or the error rc (what, when not NULL). */
static void peer_answer(struct peer *pe, uint64_t id, int rc, const char *what)
{
	Pool__Ok ok = POOL__OK__INIT;

	if (rc < 0)
		conn_send_error(pe->conn, id, rc, what);
	else
		conn_send(pe->conn, WIRE_OK, id, &ok.base);
}

static void peer_on_copy(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			 ProtobufCMessage *msg)
{
	const Pool__Copy *cp = (const Pool__Copy *)msg;

	(void)payload;
	peer_answer(
	    pe, hdr->req_id,
	    lend_copy(pe->pd, cp->src_arena, cp->src_off, cp->dst_arena, cp->dst_off, cp->len),
	    NULL);
}

static void peer_on_hold(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			 ProtobufCMessage *msg)
{
	int rc = peer_hold_add(pe->pd, (Pool__Holdings *)msg);

	(void)payload;
	if (hdr->req_id != 0) /* the coordinator waits for it to be durable */
		peer_answer(pe, hdr->req_id, rc, "not made durable");
}

static void peer_on_vec(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			ProtobufCMessage *msg)
{
	(void)payload;
	vec_serve(pe->pd, pe->conn, hdr->req_id, (const Pool__VecRequest *)msg);
}

static void peer_on_snap_place(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			       ProtobufCMessage *msg)
{
	(void)payload;
	snap_place_serve(pe->pd, pe->conn, hdr->req_id, (const Pool__SnapPlace *)msg);
}

static void peer_on_holdings(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			     ProtobufCMessage *msg)
{
	(void)payload;
	peer_holdings_request(pe, hdr->req_id, (const Pool__HoldingsRequest *)msg);
}

static void peer_on_holdings_ack(struct peer *pe, const struct wire_hdr *hdr,
				 const uint8_t *payload, ProtobufCMessage *msg)
{
	(void)hdr, (void)payload;
	peer_report_read(pe, (const Pool__HoldingsAck *)msg);
}

static void peer_on_scrub(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			  ProtobufCMessage *msg)
{
	(void)payload;
	peer_scrub(pe, hdr->req_id, (const Pool__Scrub *)msg);
}

static void peer_on_error(struct peer *pe, const struct wire_hdr *hdr, const uint8_t *payload,
			  ProtobufCMessage *msg)
{
	const Pool__Error *err = (const Pool__Error *)msg;

	(void)hdr, (void)payload;
	log_warnx("coordinator %s refused: %s", pe->target, err->message);
	peer_reset(pe, err->message);
}

/*
 * What the coordinator sends a node, by type: its handler, and whether it
 * is a request of the coordinator's own (its id is the coordinator's; any
 * other message with an id is first a reply to relay to a client).
 */
static const struct {
	peer_msg_fn *handle;
	bool request;
} peer_msgs[WIRE_TYPE_MAX] = {
    [WIRE_HELLO_REPLY] = {peer_on_hello_reply, false},
    [WIRE_REGISTER_REPLY] = {peer_on_register_reply, false},
    [WIRE_OK] = {peer_on_ok, false},
    [WIRE_ERROR] = {peer_on_error, false},
    [WIRE_MEMBER_EVENT] = {peer_on_member_event, false},
    [WIRE_MEMBER_EVENTS] = {peer_on_member_events, false},
    [WIRE_KV_NS_DEFS] = {peer_on_kv_ns_defs, false},
    [WIRE_REGION_NOTICE] = {peer_on_region_notice, false},
    [WIRE_ARENA_LIMIT] = {peer_on_arena_limit, false},
    [WIRE_HOLDINGS] = {peer_on_holdings, false},
    [WIRE_HOLDINGS_ACK] = {peer_on_holdings_ack, false},
    [WIRE_PROBE] = {peer_on_probe, true},
    [WIRE_SCRUB] = {peer_on_scrub, true},
    [WIRE_COPY] = {peer_on_copy, true},
    [WIRE_VEC] = {peer_on_vec, true},
    [WIRE_HOLD] = {peer_on_hold, true},
    [WIRE_SNAP_PLACE] = {peer_on_snap_place, true},
};

static void peer_frame(struct conn *conn, const struct wire_hdr *hdr, const uint8_t *payload,
		       void *arg)
{
	struct peer *pe = arg;
	ProtobufCMessage *msg = NULL;
	peer_msg_fn *handle = hdr->type < WIRE_TYPE_MAX ? peer_msgs[hdr->type].handle : NULL;

	(void)conn;
	if (hdr->req_id != 0 && (handle == NULL || !peer_msgs[hdr->type].request) &&
	    peer_relay(pe, hdr, payload))
		return;
	if (wire_msg_unpack(hdr->type, payload, hdr->len, &msg) < 0) {
		log_warnx("coordinator sent a malformed %s", wire_type_name(hdr->type));
		peer_reset(pe, "malformed message");
		return;
	}
	if (handle != NULL)
		handle(pe, hdr, payload, msg);
	else
		log_debug("ignoring %s from the coordinator", wire_type_name(hdr->type));
	wire_msg_free(msg);
}

static void peer_connected(struct conn *conn, void *arg)
{
	struct peer *pe = arg;
	Pool__Hello hello = POOL__HELLO__INIT;

	hello.version = WIRE_VERSION;
	hello.name = pe->pd->conf->node_name;
	if (peer_auth_nonce(pe->nonce) < 0) {
		peer_reset(pe, "no random bytes for the challenge");
		return;
	}
	hello.has_nonce = 1;
	hello.nonce.data = pe->nonce;
	hello.nonce.len = sizeof(pe->nonce);
	pe->state = PEER_HELLO;
	conn_send(conn, WIRE_HELLO, ++pe->next_id, &hello.base);
}

static void peer_closed(struct conn *conn, void *arg)
{
	struct peer *pe = arg;

	/*
	 * Closed before an answer, and without a word (a coordinator that
	 * refuses a node says why, when it can): what happened, and the reasons
	 * a coordinator has to do it. Said once until this node joins.
	 */
	if ((pe->state == PEER_HELLO || pe->state == PEER_REGISTERING) && !pe->close_said) {
		pe->close_said = true;
		log_warnx("coordinator %s closed the link before answering %s, without a word%s: a "
			  "coordinator does so to links it has no room for or that do not register "
			  "in time (its log says which)%s",
			  pe->target, pe->state == PEER_HELLO ? "hello" : "register",
			  pe->pd->tls != NULL ? " (TLS was agreed)" : "",
			  pe->state == PEER_HELLO && pe->pd->tls == NULL
			      ? ", and to links without TLS when its peer.tls is on (off here)"
			      : "");
	}
	pe->conn = NULL;
	peer_reset(pe, "link closed");
}

static const struct conn_ops peer_ops = {
    .frame = peer_frame,
    .connected = peer_connected,
    .closed = peer_closed,
};

static void peer_connect(struct peer *pe)
{
	struct sockaddr_storage ss;
	struct ssl_st *ssl = NULL;
	unsigned len;
	char desc[96];
	int rc;

	if (pe->target[0] == '\0') { /* (coord.etcd: no leader known yet) */
		pe->state = PEER_IDLE;
		peer_schedule(pe, (uint64_t)pe->pd->conf->heartbeat_ms);
		return;
	}
	rc = addr_parse(pe->target, &ss, &len);
	if (rc == 0)
		rc = peer_tls_new(pe->pd, &ssl);
	if (rc == 0) {
		snprintf(desc, sizeof(desc), "coordinator %.60s", pe->target);
		rc = conn_connect(pe->pd->base, (struct sockaddr *)&ss, len, ssl, PEER_FRAME_MAX,
				  &peer_ops, pe, desc, &pe->conn);
	}
	if (rc < 0) {
		peer_reset(pe, err_str(rc));
		return;
	}
	conn_set_max_send(pe->conn, PEER_UNREG_FRAME_MAX); /* (until it registers) */
	pe->state = PEER_CONNECTING;
	pe->last_ack = units_now_ms();
}

/* Every heartbeat interval: beat, notice a silent coordinator, or reconnect. */
static void peer_tick(evutil_socket_t fd, short what, void *arg)
{
	struct peer *pe = arg;
	struct poold *pd = pe->pd;
	uint64_t hb = pe->hb_ms, misses = pe->hb_misses, now = units_now_ms();

	/*
	 * Not run for longer than the heartbeat window (stopped, or starved):
	 * the coordinator has declared this node dead and ended its clients'
	 * leases, so what they were granted is void here too, at once.
	 */
	if (pe->last_tick != 0 && hb != 0 && now - pe->last_tick > hb * misses &&
	    pd->grants != NULL) {
		log_warnx("this poold did not run for %llu ms (more than the heartbeat window): "
			  "its clients' grants end, its KV shards wait for the coordinator's word",
			  (unsigned long long)(now - pe->last_tick));
		grant_clear(pd);
		kv_owner_hold(pd, true);
		pe->stall_beat = UINT64_MAX;
	}
	pe->last_tick = now;
	if (pe->report != NULL && pe->report_window != 0 && hb != 0 &&
	    pe->report_seq - pe->report_read >= pe->report_window &&
	    now - pe->report_heard > hb * misses) {
		/* (a coordinator that dropped the report: it asks again) */
		log_warnx("holdings report %llu: chunk %u not read by the coordinator for %llu ms: "
			  "stopped",
			  (unsigned long long)pe->report_no, pe->report_read,
			  (unsigned long long)(now - pe->report_heard));
		peer_report_stop(pe);
	}
	if (pe->state == PEER_IDLE) {
		peer_connect(pe);
	} else if (units_now_ms() - pe->last_ack > hb * misses) {
		peer_reset(pe, "no answer within heartbeat.misses intervals");
		return;
	} else if (pe->state == PEER_UP) {
		Pool__Heartbeat beat = POOL__HEARTBEAT__INIT;

		beat.node_id = pd->node_id;
		beat.incarnation = pd->incarnation;
		conn_send(pe->conn, WIRE_HEARTBEAT, ++pe->next_id, &beat.base);
		if (pe->stall_beat == UINT64_MAX)
			pe->stall_beat = pe->next_id;
	}
	if (pe->state != PEER_IDLE)
		peer_schedule(pe, hb);
}

/*
 * Forward a client's request to the coordinator; the reply is relayed when
 * it comes. Fails at once with POOL_ECOORD while the coordinator is away.
 */
int peer_forward(struct req *r, uint16_t type, const uint8_t *payload, size_t len)
{
	struct peer *pe = r->pd->peer;
	Pool__Forward fw = POOL__FORWARD__INIT;
	struct forward *f;

	if (pe == NULL || pe->state != PEER_UP)
		return req_errorf(r, POOL_ECOORD, "coordinator unavailable (%s)",
				  pe != NULL && pe->target[0] != '\0' ? pe->target
								      : "none leads yet");
	if (pe->nforwards >= PEER_MAX_FORWARDS)
		return req_errorf(r, -EAGAIN, "too many requests waiting for the coordinator");
	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->r = req_hold(r)) == NULL) {
		free(f);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	f->id = ++pe->next_id;
	fw.uid = r->uid;
	fw.gid = r->gid;
	fw.pid = (uint32_t)r->pid;
	fw.admin = r->admin;
	fw.type = type;
	fw.has_session = 1;
	fw.session = r->session;
	fw.payload.data = (uint8_t *)payload;
	fw.payload.len = len;
	if (conn_send(pe->conn, WIRE_FORWARD, f->id, &fw.base) < 0) {
		req_finish(f->r, 0);
		free(f);
		return req_errorf(r, POOL_ECOORD, "coordinator unavailable (%s)", pe->target);
	}
	TAILQ_INSERT_TAIL(&pe->forwards, f, entry);
	pe->nforwards++;
	return 0;
}

/*
 * Ask the coordinator something for this poold itself, acting as uid (an
 * admin): not waited for, what it changes comes back as the coordinator
 * tells every node. 0, or -errno when it could not be sent.
 */
static int peer_ask(struct poold *pd, uid_t uid, uint16_t type, const ProtobufCMessage *msg)
{
	struct peer *pe = pd->peer;
	Pool__Forward fw = POOL__FORWARD__INIT;
	struct forward *f;
	size_t len = protobuf_c_message_get_packed_size(msg);
	int rc;

	if (pe == NULL || pe->state != PEER_UP)
		return POOL_ECOORD;
	if (pe->nforwards >= PEER_MAX_FORWARDS)
		return -EAGAIN;
	f = calloc(1, sizeof(*f));
	if (f == NULL || (fw.payload.data = malloc(len ? len : 1)) == NULL) {
		free(f);
		return -ENOMEM;
	}
	fw.payload.len = protobuf_c_message_pack(msg, fw.payload.data);
	fw.uid = uid;
	fw.gid = (uint32_t)-1;
	fw.admin = true;
	fw.type = type;
	f->id = ++pe->next_id;
	rc = conn_send(pe->conn, WIRE_FORWARD, f->id, &fw.base);
	free(fw.payload.data);
	if (rc < 0) {
		free(f);
		return POOL_ECOORD;
	}
	TAILQ_INSERT_TAIL(&pe->forwards, f, entry);
	pe->nforwards++;
	return 0;
}

/*
 * Tell the coordinator a client session ended. Lost if the link is down; the
 * coordinator then ends the node's sessions when the node is declared dead.
 */
void peer_session_end(struct poold *pd, uint64_t session)
{
	Pool__SessionEnd se = POOL__SESSION_END__INIT;
	struct peer *pe = pd->peer;

	if (pe == NULL || pe->state != PEER_UP)
		return;
	se.session = session;
	conn_send(pe->conn, WIRE_SESSION_END, 0, &se.base);
}

/* Start joining the coordinator. */
int peer_open(struct poold *pd)
{
	struct peer *pe = calloc(1, sizeof(*pe));

	if (pe == NULL)
		return -ENOMEM;
	pe->pd = pd;
	pe->hb_ms = (uint64_t)pd->conf->heartbeat_ms;
	pe->hb_misses = (uint64_t)pd->conf->heartbeat_misses;
	TAILQ_INIT(&pe->forwards);
	pe->timer = evtimer_new(pd->base, peer_tick, pe);
	pe->scrub_ev = evtimer_new(pd->base, peer_scrubs_durable, pe);
	if (pe->timer == NULL || pe->scrub_ev == NULL) {
		if (pe->timer != NULL)
			event_free(pe->timer);
		free(pe);
		return -ENOMEM;
	}
	/* With coord.etcd, only the leader found there: coordinator may name a deposed one. */
	if (pd->conf->coord_etcd[0] == '\0')
		snprintf(pe->target, sizeof(pe->target), "%s", pd->conf->coordinator);
	pd->peer = pe;
	pd->ask_coordinator = peer_ask;
	peer_connect(pe);
	if (pe->state != PEER_IDLE)
		peer_schedule(pe, pe->hb_ms);
	return 0;
}

/*
 * etcd says who leads (ha.c): move the link to a new leader at once.
 * A leader that went (NULL) leaves the link as it is, until it fails or the
 * next leader is known.
 */
void peer_follow(struct poold *pd, const char *leader, int64_t epoch)
{
	struct peer *pe = pd->peer;
	char why[320];

	if (pe == NULL || leader == NULL || epoch < pe->epoch)
		return;
	if (epoch == pe->epoch && strcmp(leader, pe->target) == 0)
		return;
	snprintf(why, sizeof(why), "%s leads now (epoch %lld)", leader, (long long)epoch);
	log_info("etcd: the coordinator is %s, epoch %lld", leader, (long long)epoch);
	snprintf(pe->target, sizeof(pe->target), "%s", leader);
	pe->epoch = epoch;
	if (pe->state != PEER_IDLE)
		peer_reset(pe, why);
	evtimer_del(pe->timer);
	pe->retry_ms = 0;
	peer_connect(pe);
	if (pe->state != PEER_IDLE)
		peer_schedule(pe, pe->hb_ms);
}

/* Leave the coordinator. */
void peer_close(struct poold *pd)
{
	struct peer *pe = pd->peer;

	if (pe == NULL)
		return;
	peer_report_stop(pe);
	if (pe->conn != NULL)
		conn_free(pe->conn);
	pe->conn = NULL;
	peer_fail_forwards(pe);
	event_free(pe->timer);
	event_free(pe->scrub_ev);
	free(pe->scrub_acks);
	nsdefs_clear(&pe->nsdefs);
	nsdefs_clear(&pe->nsdefs_coming);
	free(pe);
	pd->peer = NULL;
	pd->ask_coordinator = NULL;
}

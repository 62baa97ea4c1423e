/*
 * daemon/link/carry-link.c - fabric.transfer = checked: other poolds' memory
 * reached by requests on authenticated links (fabric/link*.c), and this
 * poold's own memory served the same way, each request checked here before
 * a byte moves:
 *
 *  - the requester must be a member as this poold knows it, of the
 *    incarnation and registration (epoch) its link proved, and not dead:
 *    a node declared dead is fenced at once, its links closed;
 *  - the bytes must lie in an extent this poold holds (hold.c) as the
 *    coordinator told it, from where it starts: nothing else of its memory
 *    (its heap, its secrets, extents given back) is reachable; or in its
 *    probe buffer, for reads.
 *
 * What is not known yet (a member's record or a Hold still on its way from
 * the coordinator, which answered the requester first; a member that found
 * a new coordinator before this poold did) makes the request wait, for up
 * to a heartbeat window (heartbeat.interval * heartbeat.misses, 10 s at
 * most), until the record comes (carry_hooks.changed).
 *
 * The links' key comes from peer.secret, which both ends know and neither
 * sends; without one (a cluster on loopback only) anyone who can join the
 * cluster can make links too.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "fabric/fabric.h"
#include "proto/pool_contract.h"

static const char link_key_label[] = "pool-fabric-link-key-v1";

/* The links' key: HMAC-SHA256(peer.secret, a label of its own). */
int carry_link_key(const char *secret, uint8_t ret_key[FAB_LINK_KEY_LEN])
{
	unsigned len = 0;

	if (HMAC(EVP_sha256(), secret, (int)strlen(secret), (const uint8_t *)link_key_label,
		 sizeof(link_key_label) - 1, ret_key, &len) == NULL ||
	    len != FAB_LINK_KEY_LEN)
		return -EIO;
	return 0;
}

/* Whether peer is a member this poold serves: 0, -EAGAIN (not known yet), -ECONNABORTED. */
static int link_member(struct poold *pd, const struct fab_link_peer *peer, bool last)
{
	struct member *m = member_find(pd, peer->node);

	if (m != NULL && m->state == MEMBER_DEAD && m->info->incarnation == peer->incarnation)
		return -ECONNABORTED; /* fenced */
	if (m == NULL || m->info->incarnation != peer->incarnation ||
	    !member_epoch_ok(m, peer->epoch)) {
		if (last)
			log_debug("fabric link from node %u (incarnation %llx, registration %llu): "
				  "%s",
				  peer->node, (unsigned long long)peer->incarnation,
				  (unsigned long long)peer->epoch,
				  m == NULL ? "not a member"
				  : m->info->incarnation != peer->incarnation
				      ? "another incarnation than the member's"
				      : "a registration before the member last died, or older");
		return last ? -ECONNABORTED : -EAGAIN;
	}
	return m->state == MEMBER_DEAD ? -ECONNABORTED : 0;
}

/* The lender's check of one request (fab_link_ops.check). */
static int link_check(void *arg, const struct fab_link_peer *peer, const struct fab_link_req *req,
		      bool last, void **ret_ptr)
{
	struct poold *pd = arg;
	int rc = link_member(pd, peer, last);

	if (rc < 0)
		return rc;
	if (req->arena == CARRY_PROBE_ARENA) {
		if (req->op != FAB_LINK_READ || req->ext != 0 || req->off > pd->probe_len ||
		    req->len > pd->probe_len - req->off)
			return -EACCES;
		*ret_ptr = (char *)pd->probe_buf + req->off;
		return 0;
	}
	return carry_memory(pd, req->arena, req->ext, req->off, req->len, last, ret_ptr);
}

/* Whether peer is a member this poold serves now: 0 or -ECONNABORTED (nodecall.c). */
int carry_link_member(struct poold *pd, const struct fab_link_peer *peer)
{
	return link_member(pd, peer, true);
}

/* A call from another node's poold (fab_link_ops.call). */
static void link_call(void *arg, const struct fab_link_peer *peer, const void *in, size_t len,
		      size_t max, struct fab_link_answer *ans)
{
	struct poold *pd = arg;

	(void)max; /* (an answer over it is refused by the link) */
	if (pd->node_call != NULL)
		pd->node_call(pd, peer, in, len, ans);
	else
		fab_link_answer(ans, -EOPNOTSUPP, NULL, 0);
}

/* Said once per 10 s for each kind, so that a flood of one hides no other. */
static void link_refused(void *arg, const char *who, const char *what, int err)
{
	static struct log_limit strangers, requests, links;
	struct poold *pd = arg;
	struct log_limit *l = strstr(who, "node ") == who
				  ? strstr(what, "request") != NULL ? &requests : &links
				  : &strangers;

	(void)pd;
	log_warnx_limited(l, 10000, "fabric link from %s: %s (%s)", who, what, err_str(err));
}

static const struct fab_link_ops link_ops = {
    .check = link_check, .refused = link_refused, .call = link_call};

/* Whether this poold is part of a cluster, and so takes links. */
static bool link_clustered(const struct poold_conf *conf)
{
	return conf->role == ROLE_NODE || conf->peer_listen[0] != '\0' ||
	       conf->coord_etcd[0] != '\0';
}

static int link_open(struct poold *pd)
{
	struct poold_conf *conf = pd->conf;
	struct fab_links_config cfg = {
	    .bind = conf->fabric_address[0] != '\0' ? conf->fabric_address : NULL,
	    .self = {pd->node_id, pd->incarnation, pd->epoch},
	    .handshake_ms = 2000,
	    .wait_ms = (unsigned)MIN(conf->heartbeat_ms * conf->heartbeat_misses, 10000),
	    .max_links = (unsigned)conf->max_nodes * 2,
	    .sndbuf = conf->fabric_send_buffer > 0 ? (int)conf->fabric_send_buffer : -1,
	    .ops = &link_ops,
	    .arg = pd,
	};
	unsigned lo = 0, hi = 0;
	int rc;

	if (!link_clustered(conf)) {
		log_info("fabric: a single node, no links to take");
		return 0;
	}
	if (conf->fabric_ports[0] != '\0')
		conf_port_range(conf->fabric_ports, &lo, &hi);
	cfg.port_lo = (uint16_t)lo;
	cfg.port_hi = (uint16_t)hi;
	rc = carry_link_key(conf->secret, cfg.key);
	if (rc == 0)
		rc = fab_links_create(pd->base, &cfg, &pd->links);
	if (rc < 0) {
		log_warnx("cannot start the fabric's links (fabric.address '%s', fabric.ports "
			  "'%s'): %s",
			  conf->fabric_address, conf->fabric_ports, err_str(rc));
		return rc;
	}
	log_info("fabric up: checked transfers on links at %s port %u%s",
		 cfg.bind != NULL ? cfg.bind : "every address", fab_links_port(pd->links),
		 conf->secret[0] == '\0' ? " (no peer.secret: any process that can join the "
					   "cluster can make links)"
					 : "");
	return 0;
}

static void link_close(struct poold *pd)
{
	fab_links_destroy(pd->links);
	pd->links = NULL;
}

static bool link_failed(const struct member *m)
{
	return m->link != NULL && fab_link_error(m->link) != 0;
}

static void link_drop(struct member *m)
{
	fab_link_close(m->link);
	m->link = NULL;
	if (m->side_link != NULL)
		fab_link_close(m->side_link);
	m->side_link = NULL;
}

/* Open a link to m in *ret: 0 or -errno. */
static int link_connect(struct poold *pd, struct member *m, struct fab_link **ret)
{
	struct fab_link_peer to = {m->info->id, m->info->incarnation, 0};
	char addr[96];

	if (pd->links == NULL)
		return -ENOTCONN;
	if (m->info->link_port == 0 || m->info->link_host[0] == '\0')
		return -EHOSTUNREACH; /* (a poold of fabric.transfer = rma) */
	snprintf(addr, sizeof(addr), strchr(m->info->link_host, ':') ? "[%s]:%u" : "%s:%u",
		 m->info->link_host, m->info->link_port);
	return fab_link_open(pd->links, &to, addr, ret);
}

/* m's link, made on first use and again after it failed or m restarted. */
static int link_way(struct poold *pd, struct member *m)
{
	int rc;

	if (m->link != NULL && (link_failed(m) || m->way_incarnation != m->info->incarnation))
		link_drop(m);
	if (m->link != NULL)
		return 0;
	rc = link_connect(pd, m, &m->link);
	if (rc < 0)
		return rc;
	m->way_incarnation = m->info->incarnation;
	m->way_failed_ms = 0;
	m->way_gen = carry_new_gen();
	return 0;
}

/* m's link, opened if need be (nodecall.c): m->link, or -errno. */
int carry_link_way(struct poold *pd, struct member *m)
{
	return link_way(pd, m);
}

/* m's side link, opened if need be (nodecall.c): m->side_link, or -errno. */
int carry_link_side(struct poold *pd, struct member *m)
{
	int rc = link_way(pd, m); /* (both go when m restarted) */

	if (rc < 0)
		return rc;
	if (m->side_link != NULL && fab_link_error(m->side_link) != 0) {
		fab_link_close(m->side_link);
		m->side_link = NULL;
	}
	return m->side_link != NULL ? 0 : link_connect(pd, m, &m->side_link);
}

static int link_start(struct poold *pd, struct member *m, enum carry_op op,
		      const struct carry_place *p, void *buf, uint64_t a, uint64_t b,
		      uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	int rc = link_way(pd, m);

	if (rc < 0)
		return rc;
	switch (op) {
	case CARRY_READ:
		return fab_link_read(m->link, p->arena, p->ext, p->off, p->len, buf, cb, arg);
	case CARRY_WRITE:
		return fab_link_write(m->link, p->arena, p->ext, p->off, p->len, buf, cb, arg);
	case CARRY_FADD:
		return fab_link_fadd(m->link, p->arena, p->ext, p->off, a, ret_old, cb, arg);
	case CARRY_CSWAP:
		return fab_link_cswap(m->link, p->arena, p->ext, p->off, a, b, ret_old, cb, arg);
	}
	return -EINVAL;
}

/* A write's reply comes once its bytes are in the lender's memory: nothing to flush. */
static int link_flush(struct poold *pd, struct member *m, fab_done_cb cb, void *arg)
{
	(void)pd;
	(void)m;
	(void)cb;
	(void)arg;
	return 1;
}

static int link_transport(struct member *m, char *buf, size_t len)
{
	snprintf(buf, len, "tcp/checked %s:%u", m->info->link_host, m->info->link_port);
	return 0;
}

static uint64_t link_activity(const struct poold *pd)
{
	struct fab_link_stats st;

	if (pd->links == NULL)
		return 0;
	fab_links_stats(pd->links, &st);
	return st.moved;
}

const struct carry_ops carry_link_ops = {
    .name = "checked",
    .open = link_open,
    .close = link_close,
    .start = link_start,
    .flush = link_flush,
    .failed = link_failed,
    .drop = link_drop,
    .transport = link_transport,
    .activity = link_activity,
};

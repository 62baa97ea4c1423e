/*
 * daemon/cluster.c - the member table: every node this poold knows, its
 * registration record, state, and the fabric endpoint to reach it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/poold.h"
#include "fabric/fabric.h"

/* The word for a member state, as poolctl shows it. */
const char *member_state_name(enum member_state state)
{
	static const char *const names[] = {"up", "suspect", "dead"};

	return names[state];
}

/* The member with this node id, or NULL. */
struct member *cluster_find(struct poold *pd, uint32_t id)
{
	struct member *m;

	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->info->id == id)
			return m;
	return NULL;
}

/* The member with this node name, or NULL. */
struct member *cluster_find_name(struct poold *pd, const char *name)
{
	struct member *m;

	TAILQ_FOREACH(m, &pd->members, entry)
		if (strcmp(m->info->name, name) == 0)
			return m;
	return NULL;
}

static Pool__NodeInfo *cluster_info_dup(const Pool__NodeInfo *info)
{
	size_t len = protobuf_c_message_get_packed_size(&info->base);
	Pool__NodeInfo *copy;
	uint8_t *buf = malloc(len ? len : 1);

	if (buf == NULL)
		return NULL;
	protobuf_c_message_pack(&info->base, buf);
	copy = pool__node_info__unpack(NULL, len, buf);
	free(buf);
	return copy;
}

/* Close the fabric endpoint to a member; the next cluster_ep() makes a new one. */
void cluster_drop_ep(struct member *m)
{
	if (m->probe_rkey != NULL)
		fab_rkey_destroy(m->probe_rkey);
	if (m->ep != NULL)
		fab_ep_abort(m->ep); /* never wait on a peer that may be gone */
	m->probe_rkey = NULL;
	m->ep = NULL;
}

/*
 * Insert or refresh the member with info's id from a registration record.
 * A new incarnation (the node restarted) drops the old fabric endpoint.
 */
int cluster_update(struct poold *pd, const Pool__NodeInfo *info, struct member **ret_member)
{
	struct member *m = cluster_find(pd, info->id);
	Pool__NodeInfo *copy = cluster_info_dup(info);

	if (copy == NULL)
		return -ENOMEM;
	if (m == NULL) {
		m = calloc(1, sizeof(*m));
		if (m == NULL) {
			pool__node_info__free_unpacked(copy, NULL);
			return -ENOMEM;
		}
		TAILQ_INSERT_TAIL(&pd->members, m, entry);
	} else {
		if (m->info->incarnation != info->incarnation)
			cluster_drop_ep(m);
		pool__node_info__free_unpacked(m->info, NULL);
	}
	m->info = copy;
	if (ret_member != NULL)
		*ret_member = m;
	return 0;
}

/* Change a member's state; a dead member's fabric endpoint is closed. */
void cluster_set_state(struct poold *pd, struct member *m, enum member_state state)
{
	if (m->state == state)
		return;
	log_info("node %u (%s) is %s", m->info->id, m->info->name, member_state_name(state));
	events_add(pd, "member", "node %u (%s) is %s", m->info->id, m->info->name,
		   member_state_name(state));
	m->state = state;
	pd->member_changes++;
	if (state == MEMBER_DEAD)
		cluster_drop_ep(m);
}

/* Forget a member. */
void cluster_remove(struct poold *pd, struct member *m)
{
	TAILQ_REMOVE(&pd->members, m, entry);
	cluster_drop_ep(m);
	pool__node_info__free_unpacked(m->info, NULL);
	free(m);
}

/* Forget every member. */
void cluster_clear(struct poold *pd)
{
	struct member *m;

	while ((m = TAILQ_FIRST(&pd->members)) != NULL)
		cluster_remove(pd, m);
}

/* Describe this poold as a registration record; free with cluster_self_info_free(). */
int cluster_self_info(struct poold *pd, Pool__NodeInfo *info)
{
	Pool__NumaNode **numa;
	size_t n;
	int rc;

	rc = numa_layout(pd->conf->lend_numa, (uint64_t)pd->conf->lend_size, &numa, &n);
	if (rc < 0)
		return rc;
	pool__node_info__init(info);
	rc = lend_arenas_msg(pd, &info->arenas, &info->n_arenas);
	if (rc < 0) {
		numa_layout_free(numa, n);
		return rc;
	}
	info->id = pd->node_id;
	info->name = pd->conf->node_name;
	info->addr = pd->conf->peer_listen;
	info->worker_addr.data = pd->worker_addr;
	info->worker_addr.len = pd->worker_addr_len;
	info->version = PACKAGE_VERSION;
	info->role = pd->conf->role == ROLE_COORDINATOR ? "coordinator" : "node";
	info->numa = numa;
	info->n_numa = n;
	info->probe_addr = (uint64_t)(uintptr_t)pd->probe_buf;
	info->probe_len = pd->probe_len;
	info->probe_rkey.data = pd->probe_rkey;
	info->probe_rkey.len = pd->probe_rkey_len;
	info->incarnation = pd->incarnation;
	for (size_t i = 0; i < pd->narenas; i++)
		if (pd->arenas[i].tier == TIER_PMEM)
			info->pmem_capacity += pd->arenas[i].size;
	return 0;
}

/* Free what cluster_self_info() allocated. */
void cluster_self_info_free(Pool__NodeInfo *info)
{
	numa_layout_free(info->numa, info->n_numa);
	lend_arenas_msg_free(info->arenas, info->n_arenas);
	info->numa = NULL;
	info->n_numa = 0;
	info->arenas = NULL;
	info->n_arenas = 0;
}

/* The member table as Member messages (borrowing each member's info). */
int cluster_members_msg(struct poold *pd, Pool__Member ***ret_members, size_t *ret_n)
{
	uint64_t now = units_now_ms();
	Pool__Member **out;
	struct member *m;
	size_t n = 0;

	TAILQ_FOREACH(m, &pd->members, entry)
		n++;
	out = calloc(n ? n : 1, sizeof(*out));
	if (out == NULL)
		return -ENOMEM;
	n = 0;
	TAILQ_FOREACH(m, &pd->members, entry) {
		out[n] = malloc(sizeof(**out));
		if (out[n] == NULL) {
			cluster_members_msg_free(out, n);
			return -ENOMEM;
		}
		pool__member__init(out[n]);
		out[n]->node = m->info;
		out[n]->state = (char *)member_state_name(m->state);
		out[n]->heartbeat_age_ms = pd->coord ? now - m->last_heartbeat : m->heartbeat_age_ms;
		n++;
	}
	*ret_members = out;
	*ret_n = n;
	return 0;
}

/* Free what cluster_members_msg() allocated. */
void cluster_members_msg_free(Pool__Member **members, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(members[i]);
	free(members);
}

static void cluster_ep_failed(struct fab_ep *ep, int err, void *arg)
{
	struct member *m = arg;

	log_warnx("fabric endpoint to node %u (%s) failed: %s", m->info->id, m->info->name,
		  err_str(err));
}

/*
 * The fabric endpoint to a member and the rkey of its probe buffer, made on
 * first use and again after the member restarted or the endpoint failed.
 */
int cluster_ep(struct poold *pd, struct member *m, struct fab_ep **ret_ep,
	       struct fab_rkey **ret_rkey)
{
	int rc;

	if (m->ep != NULL && (fab_ep_error(m->ep) != 0 ||
			      m->ep_incarnation != m->info->incarnation))
		cluster_drop_ep(m);
	if (m->ep == NULL) {
		rc = fab_ep_create(pd->fab, m->info->worker_addr.data, m->info->worker_addr.len,
				   cluster_ep_failed, m, &m->ep);
		if (rc < 0)
			return rc;
		m->ep_incarnation = m->info->incarnation;
		rc = fab_rkey_unpack(m->ep, m->info->probe_rkey.data, m->info->probe_rkey.len,
				     &m->probe_rkey);
		if (rc < 0) {
			cluster_drop_ep(m);
			return rc;
		}
	}
	*ret_ep = m->ep;
	*ret_rkey = m->probe_rkey;
	return 0;
}

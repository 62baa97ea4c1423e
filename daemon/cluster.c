/*
 * daemon/cluster.c - the member table: every node this poold knows, its
 * registration record, state, and the fabric endpoint to reach it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/poold.h"
#include "proto/pool_contract.h"
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

/* Free a node's record and all it points to. */
void node_info_free(struct node_info *info)
{
	size_t i;

	if (info == NULL)
		return;
	free(info->name);
	free(info->addr);
	free(info->version);
	free(info->role);
	free(info->worker_addr.data);
	free(info->numa);
	free(info->probe_rkey.data);
	for (i = 0; i < info->n_arenas; i++)
		free(info->arenas[i].rkey.data);
	free(info->arenas);
	free(info->fabric_ports);
	free(info);
}

/* Forget the member's unpacked arena keys (its record changed, or its endpoint went). */
static void cluster_drop_arena_rkeys(struct member *m)
{
	size_t i;

	for (i = 0; i < m->n_arena_rkeys; i++)
		if (m->arena_rkeys[i] != NULL)
			fab_rkey_destroy(m->arena_rkeys[i]);
	free(m->arena_rkeys);
	m->arena_rkeys = NULL;
	m->n_arena_rkeys = 0;
}

/* Close the fabric endpoint to a member; the next cluster_ep() makes a new one. */
void cluster_drop_ep(struct member *m)
{
	if (m->ep != NULL)
		fab_ep_abort(m->ep); /* never wait on a peer that may be gone */
	cluster_drop_arena_rkeys(m);
	if (m->probe_rkey != NULL)
		fab_rkey_destroy(m->probe_rkey);
	m->probe_rkey = NULL;
	m->ep = NULL;
}

/*
 * Insert or refresh the member with info's id from its registration
 * record, which the table takes (and frees, on failure too). A new
 * incarnation (the node restarted) drops the old fabric endpoint.
 */
int cluster_update(struct poold *pd, struct node_info *info, struct member **ret_member)
{
	struct member *m = cluster_find(pd, info->id);

	if (m == NULL) {
		m = calloc(1, sizeof(*m));
		if (m == NULL) {
			node_info_free(info);
			return -ENOMEM;
		}
		TAILQ_INSERT_TAIL(&pd->members, m, entry);
	} else {
		/* A new incarnation has new keys; the same one keeps its endpoint and keys. */
		if (m->info->incarnation != info->incarnation)
			cluster_drop_ep(m);
		node_info_free(m->info);
	}
	m->info = info;
	firewall_members_changed(pd);
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
	node_info_free(m->info);
	free(m);
	firewall_members_changed(pd);
}

/* Forget every member. */
void cluster_clear(struct poold *pd)
{
	struct member *m;

	while ((m = TAILQ_FIRST(&pd->members)) != NULL)
		cluster_remove(pd, m);
}

static char *cluster_strdup(const char *s, bool *failed)
{
	char *copy = strdup(s);

	if (copy == NULL)
		*failed = true;
	return copy;
}

/* This poold's registration record; NULL when out of memory. */
struct node_info *cluster_self_info(struct poold *pd)
{
	struct node_info *info = calloc(1, sizeof(*info));
	uint32_t *ports;
	bool failed = false;
	size_t i;

	if (info == NULL)
		return NULL;
	info->id = pd->node_id;
	info->name = cluster_strdup(pd->conf->node_name, &failed);
	info->addr = cluster_strdup(pd->conf->peer_listen, &failed);
	info->version = cluster_strdup(PACKAGE_VERSION, &failed);
	info->role =
	    cluster_strdup(pd->conf->role == ROLE_COORDINATOR ? "coordinator" : "node", &failed);
	info->worker_addr.data = malloc(pd->worker_addr_len ? pd->worker_addr_len : 1);
	info->probe_rkey.data = malloc(pd->probe_rkey_len ? pd->probe_rkey_len : 1);
	firewall_ports(pd, &ports, &info->n_fabric_ports);
	info->fabric_ports =
	    malloc((info->n_fabric_ports ? info->n_fabric_ports : 1) * sizeof(*info->fabric_ports));
	if (failed || info->worker_addr.data == NULL || info->probe_rkey.data == NULL ||
	    info->fabric_ports == NULL ||
	    numa_layout(pd->conf->lend_numa, (uint64_t)pd->conf->lend_size, &info->numa,
			&info->n_numa) < 0 ||
	    lend_arenas_info(pd, &info->arenas, &info->n_arenas) < 0) {
		node_info_free(info);
		return NULL;
	}
	if (pd->worker_addr_len > 0)
		memcpy(info->worker_addr.data, pd->worker_addr, pd->worker_addr_len);
	info->worker_addr.len = pd->worker_addr_len;
	if (pd->probe_rkey_len > 0)
		memcpy(info->probe_rkey.data, pd->probe_rkey, pd->probe_rkey_len);
	info->probe_rkey.len = pd->probe_rkey_len;
	if (info->n_fabric_ports > 0)
		memcpy(info->fabric_ports, ports, info->n_fabric_ports * sizeof(*ports));
	info->probe_addr = (uint64_t)(uintptr_t)pd->probe_buf;
	info->probe_len = pd->probe_len;
	info->incarnation = pd->incarnation;
	for (i = 0; i < pd->narenas; i++)
		if (pd->arenas[i].tier == TIER_PMEM)
			info->pmem_capacity += pd->arenas[i].size;
	return info;
}

/* Endpoints made so far: each gets a number of its own (member.ep_gen). */
static uint64_t cluster_ep_gens;

static void cluster_ep_failed(struct fab_ep *ep, int err, void *arg)
{
	struct member *m = arg;

	m->ep_failed_ms = units_now_ms();
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

	if (m->ep != NULL &&
	    (fab_ep_error(m->ep) != 0 || m->ep_incarnation != m->info->incarnation))
		cluster_drop_ep(m);
	if (m->ep == NULL) {
		rc = fab_ep_create(pd->fab, m->info->worker_addr.data, m->info->worker_addr.len,
				   cluster_ep_failed, m, &m->ep);
		if (rc < 0)
			return rc;
		m->ep_incarnation = m->info->incarnation;
		m->ep_gen = ++cluster_ep_gens;
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

/*
 * Where poold reaches [off, off+len) of arena of a node over the fabric:
 * the member's endpoint (shared by everything this poold sends it: UCX 1.13
 * over TCP pairs the endpoints two workers make to each other, so closing
 * one of several can silence the other), the arena's key, the remote address
 * and the endpoint's generation (cluster_ep_of()). The endpoint and key
 * belong to the member: use them only while cluster_ep_of() gives it.
 * -ERANGE when the arena does not hold that range.
 */
int cluster_arena(struct poold *pd, uint32_t node, uint32_t arena, uint64_t off, uint64_t len,
		  struct fab_ep **ret_ep, struct fab_rkey **ret_rkey, uint64_t *ret_raddr,
		  uint64_t *ret_gen)
{
	struct member *m = cluster_find(pd, node);
	struct fab_rkey *probe;
	struct fab_ep *ep;
	size_t k;
	int rc;

	if (m == NULL || m->state == MEMBER_DEAD)
		return POOL_ELOST;
	/*
	 * An endpoint that failed is not made again at once for the same
	 * incarnation: its lender most likely died, and a new one announces
	 * itself. Transfers fail fast meanwhile, for a heartbeat interval.
	 */
	if (m->ep != NULL && fab_ep_error(m->ep) != 0 &&
	    m->ep_incarnation == m->info->incarnation &&
	    units_now_ms() - m->ep_failed_ms < (uint64_t)pd->conf->heartbeat_ms)
		return POOL_ELOST;
	rc = cluster_ep(pd, m, &ep, &probe);
	if (rc < 0)
		return rc;
	for (k = 0; k < m->info->n_arenas && m->info->arenas[k].id != arena; k++)
		;
	if (k == m->info->n_arenas)
		return -ENOENT;
	if (off > m->info->arenas[k].size || len > m->info->arenas[k].size - off)
		return -ERANGE;
	if (m->arena_rkeys == NULL) {
		m->arena_rkeys = calloc(m->info->n_arenas, sizeof(*m->arena_rkeys));
		if (m->arena_rkeys == NULL)
			return -ENOMEM;
		m->n_arena_rkeys = m->info->n_arenas;
	}
	if (k >= m->n_arena_rkeys)
		return -ENOENT;
	if (m->arena_rkeys[k] == NULL) {
		rc = fab_rkey_unpack(ep, m->info->arenas[k].rkey.data, m->info->arenas[k].rkey.len,
				     &m->arena_rkeys[k]);
		if (rc < 0)
			return rc;
	}
	*ret_ep = ep;
	*ret_rkey = m->arena_rkeys[k];
	*ret_raddr = m->info->arenas[k].addr + off;
	*ret_gen = m->ep_gen;
	return 0;
}

/*
 * The endpoint to node that cluster_arena() gave as generation gen, if it
 * is still the member's and has not failed; NULL once it was closed (its
 * transfers were cancelled) or replaced.
 */
struct fab_ep *cluster_ep_of(struct poold *pd, uint32_t node, uint64_t gen)
{
	struct member *m = cluster_find(pd, node);

	if (m == NULL || m->ep == NULL || m->ep_gen != gen || fab_ep_error(m->ep) != 0)
		return NULL;
	return m->ep;
}

/*
 * daemon/member/member.c - the member table: every node this poold knows, its
 * registration record, state, and the fabric endpoint to reach it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/util/util.h"
#include "proto/pool_contract.h"

/* The word for a member state, as poolctl shows it. */
const char *member_state_name(enum member_state state)
{
	static const char *const names[] = {"up", "suspect", "dead"};

	return names[state];
}

/* The member with this node id, or NULL. */
struct member *member_find(struct poold *pd, uint32_t id)
{
	struct member *m;

	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->info->id == id)
			return m;
	return NULL;
}

/* The member with this node name, or NULL. */
struct member *member_find_name(struct poold *pd, const char *name)
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
	free(info->link_host);
	free(info);
}

/* The member table changed: what follows it is told (after the change, from the loop). */
static void member_table_changed(struct poold *pd)
{
	pd->members_gen++;
	if (pd->members_changed != NULL)
		pd->members_changed(pd);
}

/*
 * Insert or refresh the member with info's id from its registration
 * record, which the table takes (and frees, on failure too). A new
 * incarnation (the node restarted) drops the old fabric endpoint.
 */
int member_update(struct poold *pd, struct node_info *info, struct member **ret_member)
{
	struct member *m = member_find(pd, info->id);

	if (m == NULL) {
		m = calloc(1, sizeof(*m));
		if (m == NULL) {
			node_info_free(info);
			return -ENOMEM;
		}
		TAILQ_INSERT_TAIL(&pd->members, m, entry);
	} else {
		/*
		 * Registered again without dying since (a coordinator came back,
		 * or another leads): what it did under its numbers before is
		 * still its own.
		 */
		if (m->info->incarnation != info->incarnation || m->state == MEMBER_DEAD)
			memset(m->past_epochs, 0, sizeof(m->past_epochs));
		else if (m->info->epoch != info->epoch && m->info->epoch != 0) {
			memmove(m->past_epochs + 1, m->past_epochs,
				sizeof(m->past_epochs) - sizeof(m->past_epochs[0]));
			m->past_epochs[0] = m->info->epoch;
		}
		node_info_free(m->info);
	}
	m->info = info;
	member_table_changed(pd);
	firewall_members_changed(pd);
	if (pd->carry_hooks != NULL)
		pd->carry_hooks->changed(pd);
	if (ret_member != NULL)
		*ret_member = m;
	return 0;
}

/* Whether epoch is one of m's registrations since it last died (its links made then go on). */
bool member_epoch_ok(const struct member *m, uint64_t epoch)
{
	size_t i;

	if (epoch == m->info->epoch)
		return true;
	for (i = 0; i < MEMBER_PAST_EPOCHS && m->past_epochs[i] != 0; i++)
		if (m->past_epochs[i] == epoch)
			return true;
	return false;
}

/* Change a member's state; a dead member is fenced: nothing more goes to it or comes from it. */
void member_set_state(struct poold *pd, struct member *m, enum member_state state)
{
	if (m->state == state)
		return;
	log_info("node %u (%s) is %s", m->info->id, m->info->name, member_state_name(state));
	events_add(pd, "member", "node %u (%s) is %s", m->info->id, m->info->name,
		   member_state_name(state));
	m->state = state;
	pd->member_changes++;
	member_table_changed(pd);
	if (state == MEMBER_DEAD) {
		memset(m->past_epochs, 0, sizeof(m->past_epochs));
		if (pd->carry_hooks != NULL)
			pd->carry_hooks->dead(pd, m);
	}
	if (pd->carry_hooks != NULL)
		pd->carry_hooks->changed(pd);
}

/* Mark a member drained of its KV shards (poolctl drain), or not (lend): the map changes. */
void member_set_kv_drained(struct poold *pd, struct member *m, bool drained)
{
	if (m->kv_drained == drained)
		return;
	m->kv_drained = drained;
	member_table_changed(pd);
}

/* Forget a member. */
void member_remove(struct poold *pd, struct member *m)
{
	TAILQ_REMOVE(&pd->members, m, entry);
	member_table_changed(pd);
	if (pd->carry_hooks != NULL)
		pd->carry_hooks->dead(pd, m);
	node_info_free(m->info);
	free(m);
	firewall_members_changed(pd);
}

/* Forget every member. */
void member_clear(struct poold *pd)
{
	struct member *m;

	while ((m = TAILQ_FIRST(&pd->members)) != NULL)
		member_remove(pd, m);
	kv_shard_map_clear(&pd->kv_shards);
}

/*
 * The KV index's shards and their owners: every member not dead that
 * keeps memory for them (kv.shard_size; a suspect one keeps its shards
 * until it is declared dead), worked out again from
 * the table when it changed since. Every poold works the map out from its
 * own copy of the table, and gets the coordinator's map once its copy is
 * up to date (the digest says so). Out of memory, the last map stays.
 */
const struct kv_shard_map *member_kv_shards(struct poold *pd)
{
	struct kv_shard_map *map = &pd->kv_shards;
	uint64_t digest = map->digest;
	struct member *m;
	uint32_t *ids;
	size_t n = 0;
	long moved;

	if ((pd->kv_shards_gen == pd->members_gen && pd->members_gen != 0) || pd->stopping)
		return map; /* (stopping: the table is going, and the map with it) */
	TAILQ_FOREACH(m, &pd->members, entry)
		n++;
	if ((ids = malloc((n ? n : 1) * sizeof(*ids))) == NULL)
		return map;
	n = 0;
	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->state != MEMBER_DEAD && m->info->kv_shard_size > 0 && !m->kv_drained)
			ids[n++] = m->info->id;
	moved = kv_shard_map_set(map, ids, n);
	free(ids);
	if (moved < 0)
		return map;
	pd->kv_shards_gen = pd->members_gen;
	if (map->digest != digest) {
		pd->kv_shard_changes++;
		pd->kv_shard_moves += (uint64_t)moved;
		log_debug("KV shards: %zu owner(s), %ld shard(s) moved, map %016llx", map->nowners,
			  moved, (unsigned long long)map->digest);
	}
	return map;
}

static char *member_strdup(const char *s, bool *failed)
{
	char *copy = strdup(s);

	if (copy == NULL)
		*failed = true;
	return copy;
}

/* This poold's registration record; NULL when out of memory. */
struct node_info *member_self_info(struct poold *pd)
{
	struct node_info *info = calloc(1, sizeof(*info));
	uint32_t *ports;
	bool failed = false;
	size_t i;

	if (info == NULL)
		return NULL;
	info->id = pd->node_id;
	info->name = member_strdup(pd->conf->node_name, &failed);
	info->addr = member_strdup(pd->conf->peer_listen, &failed);
	info->version = member_strdup(PACKAGE_VERSION, &failed);
	info->role =
	    member_strdup(pd->conf->role == ROLE_COORDINATOR ? "coordinator" : "node", &failed);
	info->link_host = member_strdup(pd->conf->fabric_address, &failed);
	info->link_port = pd->links != NULL ? fab_links_port(pd->links) : 0;
	info->epoch = pd->epoch;
	info->kv_shard_size = (uint64_t)pd->conf->kv_shard_size;
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

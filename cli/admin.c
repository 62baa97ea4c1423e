/*
 * cli/admin.c - poolctl's requests to poold: each builds its request,
 * waits for the reply and maps it to the C structs of admin.h.
 *
 * A result is one allocation (struct admin_block) holding the reply it
 * was read from, whose strings it points into, and the arrays made for
 * it, so admin_free() frees it all.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/admin.h"
#include "common/common.h"
#include "libpool/libpool.h"
#include "proto/wire.h"

struct admin {
	struct wire_client *wc;
	const char *socket;
};

struct admin_block {
	ProtobufCMessage *wire;	  /* the reply the result's strings live in */
	struct admin_block *more; /* the result's arrays */
	max_align_t data[];
};

unsigned admin_protocol(void)
{
	return WIRE_VERSION;
}

/* Why a connection failed, on stderr; the exit status it gives. */
static int admin_connect_failed(const char *socket, int rc, const char *msg)
{
	if (msg[0] != '\0') {
		/* poold answered: it refused us, and said why. */
		fprintf(stderr, "poolctl: %s\n", msg);
		return EXIT_ERROR;
	}
	switch (rc) {
	case -ENOENT:
	case -ECONNREFUSED:
		fprintf(stderr, "poolctl: poold is not running (no server at %s)\n", socket);
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "poolctl: permission denied on %s: are you in the control group?\n",
			socket);
		break;
	case POOL_EVERSION:
		fprintf(stderr, "poolctl: poold at %s speaks another protocol version\n", socket);
		return EXIT_ERROR;
	default:
		fprintf(stderr, "poolctl: cannot reach poold at %s: %s\n", socket, err_str(rc));
		break;
	}
	return EXIT_UNREACHABLE;
}

/* Connect to poold at socket, waiting up to timeout_ms for each reply. */
int admin_connect(const char *socket, int timeout_ms, bool quiet, struct admin **ret)
{
	struct admin *a = calloc(1, sizeof(*a));
	char msg[512];
	int rc;

	*ret = NULL;
	if (a == NULL) {
		fprintf(stderr, "poolctl: out of memory\n");
		return EXIT_ERROR;
	}
	a->socket = socket;
	rc = wire_client_connect(socket, "poolctl", timeout_ms, &a->wc, msg, sizeof(msg));
	if (rc < 0) {
		free(a);
		return quiet ? EXIT_UNREACHABLE : admin_connect_failed(socket, rc, msg);
	}
	*ret = a;
	return EXIT_OK;
}

void admin_close(struct admin *a)
{
	if (a == NULL)
		return;
	wire_client_close(a->wc);
	free(a);
}

const char *admin_server_version(const struct admin *a)
{
	return wire_client_server_version(a->wc);
}

static struct admin_block *admin_block_of(const void *result)
{
	return (struct admin_block *)((const char *)result - offsetof(struct admin_block, data));
}

void admin_free(const void *result)
{
	struct admin_block *b, *next;

	if (result == NULL)
		return;
	b = admin_block_of(result);
	if (b->wire != NULL)
		wire_msg_free(b->wire);
	for (; b != NULL; b = next) {
		next = b->more;
		free(b);
	}
}

/* A zeroed result of len bytes that keeps reply; NULL (reply freed) when out of memory. */
static void *admin_result(ProtobufCMessage *reply, size_t len)
{
	struct admin_block *b = calloc(1, sizeof(*b) + len);

	if (b == NULL) {
		fprintf(stderr, "poolctl: out of memory\n");
		wire_msg_free(reply);
		return NULL;
	}
	b->wire = reply;
	return b->data;
}

/*
 * Send a request and wait for its reply, and make the result of len bytes
 * that keeps it: *ret_result, zeroed. An error reply is printed (unless
 * quiet) and yields EXIT_ERROR; a broken connection EXIT_UNREACHABLE.
 */
static int admin_ask(struct admin *a, uint16_t type, const ProtobufCMessage *req,
		     uint16_t reply_type, bool quiet, ProtobufCMessage **ret_reply, size_t len,
		     void **ret_result)
{
	char msg[512];
	int rc;

	rc = wire_client_call(a->wc, type, req, reply_type, ret_reply, msg, sizeof(msg));
	if (rc == 0) {
		*ret_result = admin_result(*ret_reply, len);
		return *ret_result != NULL ? EXIT_OK : EXIT_ERROR;
	}
	if (msg[0] != '\0') {
		if (!quiet)
			fprintf(stderr, "poolctl: %s\n", msg);
		return EXIT_ERROR;
	}
	if (!quiet)
		fprintf(stderr, "poolctl: lost the connection to poold at %s: %s\n", a->socket,
			err_str(rc));
	return EXIT_UNREACHABLE;
}

/* n zeroed elements of size bytes, freed with result; NULL when out of memory. */
static void *admin_array(void *result, size_t n, size_t size)
{
	struct admin_block *owner = admin_block_of(result), *b;

	if (n > (SIZE_MAX - sizeof(*b)) / (size ? size : 1) ||
	    (b = calloc(1, sizeof(*b) + n * size)) == NULL) {
		fprintf(stderr, "poolctl: out of memory\n");
		return NULL;
	}
	b->more = owner->more;
	owner->more = b;
	return b->data;
}

/* A result's array failed: free the result, and give the caller's status. */
static int admin_fail(void *result)
{
	admin_free(result);
	return EXIT_ERROR;
}

/* An enum's value as its short name, in a string freed with result. */
static const char *admin_enum(void *result, const ProtobufCEnumDescriptor *d, int value)
{
	char *buf = admin_array(result, 1, WIRE_ENUM_NAME_MAX);

	return buf != NULL ? wire_enum_name(d, value, buf, WIRE_ENUM_NAME_MAX) : "?";
}

/* Allocate *ret's array of n elements with result; false when out of memory. */
#define ADMIN_ARRAY(result, ret, n) (((ret) = admin_array((result), (n), sizeof(*(ret)))) != NULL)

int admin_status(struct admin *a, int64_t node, const struct admin_status **ret)
{
	Pool__StatusRequest req = POOL__STATUS_REQUEST__INIT;
	struct admin_journal *journals;
	struct admin_status *st;
	Pool__StatusReply *rep;
	size_t i;
	int rc;

	if (node >= 0) {
		req.has_node = 1;
		req.node = (uint32_t)node;
	}
	rc = admin_ask(a, WIRE_STATUS, &req.base, WIRE_STATUS_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*st), (void **)&st);
	if (rc != EXIT_OK)
		return rc;
	*st = (struct admin_status){
	    .version = rep->version,
	    .role = rep->role,
	    .config_file = rep->config_file,
	    .socket = rep->socket,
	    .fabric_firewall = rep->fabric_firewall,
	    .uptime_ms = rep->uptime_ms,
	    .lend_size = rep->lend_size,
	    .reloads = rep->reloads,
	    .requests = rep->requests,
	    .node_id = rep->node_id,
	    .pid = rep->pid,
	    .clients = rep->clients,
	    .n_journals = rep->n_journals,
	};
	if (!ADMIN_ARRAY(st, journals, rep->n_journals))
		return admin_fail(st);
	for (i = 0; i < rep->n_journals; i++) {
		const Pool__JournalInfo *ji = rep->journals[i];

		journals[i].name = ji->name;
#define ADMIN_JOURNAL(name, ...) journals[i].name = ji->name;
		JOURNAL_STATS(ADMIN_JOURNAL)
#undef ADMIN_JOURNAL
	}
	st->journals = journals;
	if (rep->etcd != NULL) {
		const Pool__EtcdInfo *e = rep->etcd;
		struct admin_etcd *etcd;

		if (!ADMIN_ARRAY(st, etcd, 1))
			return admin_fail(st);
		*etcd = (struct admin_etcd){
		    .endpoint = e->endpoint,
		    .standing = e->standing,
		    .leader = e->leader != NULL ? e->leader : "",
		    .why = e->why != NULL ? e->why : "",
		    .epoch = e->epoch,
		    .leader_changes = e->leader_changes,
		    .has_records = e->has_records,
		};
#define ADMIN_ETCD(name, ...) etcd->name = e->name;
		ETCD_STATS(ADMIN_ETCD)
#undef ADMIN_ETCD
		st->etcd = etcd;
	}
	if (rep->kv_shards != NULL) {
		const Pool__KvShardInfo *k = rep->kv_shards;
		struct admin_kv_shards *shards;

		if (!ADMIN_ARRAY(st, shards, 1))
			return admin_fail(st);
#define ADMIN_SHARD(name, ...) shards->name = k->name;
		KV_SHARD_STATS(ADMIN_SHARD)
#undef ADMIN_SHARD
		shards->backups = k->has_backed;
		st->kv_shards = shards;
	}
	*ret = st;
	return EXIT_OK;
}

int admin_config(struct admin *a, const struct admin_config **ret)
{
	Pool__ConfigShowRequest req = POOL__CONFIG_SHOW_REQUEST__INIT;
	struct admin_option *options;
	Pool__ConfigShowReply *rep;
	struct admin_config *c;
	size_t i;
	int rc;

	rc = admin_ask(a, WIRE_CONFIG_SHOW, &req.base, WIRE_CONFIG_SHOW_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*c), (void **)&c);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(c, options, rep->n_options))
		return admin_fail(c);
	for (i = 0; i < rep->n_options; i++) {
		const Pool__ConfigOption *o = rep->options[i];

		options[i] = (struct admin_option){o->name,	     o->type, o->value,
						   o->default_value, o->help, o->is_default};
	}
	c->config_file = rep->config_file;
	c->options = options;
	c->n_options = rep->n_options;
	*ret = c;
	return EXIT_OK;
}

/* Send a request answered by Ok; *ret (if not NULL) what it said. */
static int admin_ok(struct admin *a, uint16_t type, const ProtobufCMessage *req,
		    const struct admin_said **ret)
{
	struct admin_said *said;
	Pool__Ok *ok;
	int rc;

	rc = admin_ask(a, type, req, WIRE_OK, false, (ProtobufCMessage **)&ok, sizeof(*said),
		       (void **)&said);
	if (rc != EXIT_OK)
		return rc;
	said->message = ok->message != NULL ? ok->message : "";
	if (ret != NULL)
		*ret = said;
	else
		admin_free(said);
	return EXIT_OK;
}

int admin_reload(struct admin *a, const struct admin_said **ret)
{
	Pool__ReloadRequest req = POOL__RELOAD_REQUEST__INIT;

	return admin_ok(a, WIRE_RELOAD, &req.base, ret);
}

/* A member's node, in dst; false when out of memory. */
static bool admin_node_from(void *result, struct admin_node *dst, const Pool__Member *m)
{
	const Pool__NodeInfo *ni = m->node;
	struct admin_arena *arenas;
	struct admin_numa *numa;
	size_t k;

	*dst = (struct admin_node){
	    .id = ni->id,
	    .name = ni->name,
	    .addr = ni->addr,
	    .role = ni->role,
	    .version = ni->version,
	    .state = admin_enum(result, &pool__member_state__descriptor, m->state),
	    .heartbeat_age_ms = m->heartbeat_age_ms,
	    .incarnation = ni->incarnation,
	    .pmem_capacity = ni->pmem_capacity,
	    .pmem_used = ni->pmem_used,
	    .n_numa = ni->n_numa,
	    .n_arenas = ni->n_arenas,
	};
	if (!ADMIN_ARRAY(result, numa, ni->n_numa) || !ADMIN_ARRAY(result, arenas, ni->n_arenas))
		return false;
	for (k = 0; k < ni->n_numa; k++)
		numa[k] = (struct admin_numa){ni->numa[k]->id, ni->numa[k]->mem_total,
					      ni->numa[k]->lend_capacity, ni->numa[k]->lend_used};
	for (k = 0; k < ni->n_arenas; k++) {
		const Pool__Arena *ar = ni->arenas[k];

		arenas[k] = (struct admin_arena){
		    .id = ar->id,
		    .tier = ar->tier,
		    .numa = ar->numa,
		    .size = ar->size,
		    .lent = ar->lent,
		    .used = ar->used,
		    .largest_free = ar->largest_free,
		    .free_runs = ar->free_runs,
		    .extents = ar->extents,
		};
	}
	dst->numa = numa;
	dst->arenas = arenas;
	return true;
}

int admin_nodes(struct admin *a, const struct admin_nodes **ret)
{
	Pool__NodesRequest req = POOL__NODES_REQUEST__INIT;
	struct admin_node *nodes;
	struct admin_nodes *ns;
	Pool__NodesReply *rep;
	size_t i;
	int rc;

	rc = admin_ask(a, WIRE_NODES, &req.base, WIRE_NODES_REPLY, false, (ProtobufCMessage **)&rep,
		       sizeof(*ns), (void **)&ns);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(ns, nodes, rep->n_members))
		return admin_fail(ns);
	for (i = 0; i < rep->n_members; i++)
		if (!admin_node_from(ns, &nodes[i], rep->members[i]))
			return admin_fail(ns);
	ns->nodes = nodes;
	ns->n = rep->n_members;
	*ret = ns;
	return EXIT_OK;
}

int admin_fabric(struct admin *a, bool probe, const struct admin_fabric **ret)
{
	Pool__FabricRequest freq = POOL__FABRIC_REQUEST__INIT;
	Pool__ProbeRequest preq = POOL__PROBE_REQUEST__INIT;
	struct admin_fabric *f;
	struct admin_link *links;
	Pool__FabricReply *rep;
	uint32_t *nodes;
	size_t i;
	int rc;

	rc =
	    admin_ask(a, probe ? WIRE_PROBE : WIRE_FABRIC, probe ? &preq.base : &freq.base,
		      WIRE_FABRIC_REPLY, false, (ProtobufCMessage **)&rep, sizeof(*f), (void **)&f);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(f, links, rep->n_results) || !ADMIN_ARRAY(f, nodes, rep->n_members))
		return admin_fail(f);
	for (i = 0; i < rep->n_results; i++) {
		const Pool__ProbeResult *r = rep->results[i];

		links[i] = (struct admin_link){
		    .src = r->src,
		    .dst = r->dst,
		    .error = r->error,
		    .latency_ns = r->latency_ns,
		    .bandwidth = r->bandwidth,
		    .when_ms = r->when_ms,
		    .transport = r->transport,
		};
	}
	for (i = 0; i < rep->n_members; i++)
		nodes[i] = rep->members[i]->node->id;
	*f = (struct admin_fabric){links, rep->n_results, nodes, rep->n_members};
	*ret = f;
	return EXIT_OK;
}

/* A region, in dst; false when out of memory. */
static bool admin_region_from(void *result, struct admin_region *dst, const Pool__RegionInfo *r)
{
	struct admin_extent *extents;
	size_t k;

	*dst = (struct admin_region){
	    .name = r->name,
	    .class_name = r->class_,
	    .placement = r->placement,
	    .id = r->id,
	    .size = r->size,
	    .gva = r->gva,
	    .stripe = r->stripe,
	    .leases = r->leases,
	    .uid = r->uid,
	    .gid = r->gid,
	    .mode = r->mode,
	    .anonymous = r->anonymous,
	    .lost = r->lost,
	    .want_extents = r->want_extents,
	    .n_extents = r->n_extents,
	};
	if (!ADMIN_ARRAY(result, extents, r->n_extents))
		return false;
	for (k = 0; k < r->n_extents; k++)
		extents[k] = (struct admin_extent){r->extents[k]->node, r->extents[k]->arena,
						   r->extents[k]->off, r->extents[k]->len};
	dst->extents = extents;
	return true;
}

int admin_regions(struct admin *a, const struct admin_regions **ret)
{
	Pool__RegionListRequest req = POOL__REGION_LIST_REQUEST__INIT;
	struct admin_region *regions;
	struct admin_regions *rs;
	Pool__RegionList *rep;
	size_t i;
	int rc;

	rc = admin_ask(a, WIRE_REGION_LIST, &req.base, WIRE_REGION_LIST_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*rs), (void **)&rs);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(rs, regions, rep->n_regions))
		return admin_fail(rs);
	for (i = 0; i < rep->n_regions; i++)
		if (!admin_region_from(rs, &regions[i], rep->regions[i]))
			return admin_fail(rs);
	rs->regions = regions;
	rs->n = rep->n_regions;
	*ret = rs;
	return EXIT_OK;
}

/* Send a request answered by a RegionReply; *ret its region. */
static int admin_region_call(struct admin *a, uint16_t type, const ProtobufCMessage *req,
			     const struct admin_region **ret)
{
	struct admin_region *r;
	Pool__RegionReply *rep;
	int rc;

	rc = admin_ask(a, type, req, WIRE_REGION_REPLY, false, (ProtobufCMessage **)&rep,
		       sizeof(*r), (void **)&r);
	if (rc != EXIT_OK)
		return rc;
	if (!admin_region_from(r, r, rep->region))
		return admin_fail(r);
	*ret = r;
	return EXIT_OK;
}

int admin_region_create(struct admin *a, const struct admin_region_spec *spec,
			const struct admin_region **ret)
{
	Pool__RegionCreate req = POOL__REGION_CREATE__INIT;

	req.name = (char *)spec->name;
	req.size = spec->size;
	req.class_ = (char *)spec->class_name;
	req.placement = (char *)spec->placement;
	req.mode = spec->mode;
	req.stripe = spec->stripe;
	req.anonymous = spec->anonymous;
	req.from_node = wire_client_node_id(a->wc);
	return admin_region_call(a, WIRE_REGION_CREATE, &req.base, ret);
}

int admin_region_stat(struct admin *a, const char *name, const struct admin_region **ret)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;

	req.name = (char *)name;
	return admin_region_call(a, WIRE_REGION_STAT, &req.base, ret);
}

int admin_region_destroy(struct admin *a, const char *name)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;

	req.name = (char *)name;
	return admin_ok(a, WIRE_REGION_DESTROY, &req.base, NULL);
}

int admin_lend(struct admin *a, enum admin_lend_op op, uint32_t node, uint64_t size,
	       const struct admin_said **ret)
{
	static const Pool__LendOp ops[] = {
	    [ADMIN_LEND] = POOL__LEND_OP__LEND_OP_LEND,
	    [ADMIN_RECLAIM] = POOL__LEND_OP__LEND_OP_RECLAIM,
	    [ADMIN_DRAIN] = POOL__LEND_OP__LEND_OP_DRAIN,
	};
	Pool__LendRequest req = POOL__LEND_REQUEST__INIT;

	req.node = node;
	req.size = size;
	req.op = ops[op];
	return admin_ok(a, WIRE_LEND, &req.base, ret);
}

int admin_ledger(struct admin *a, const struct admin_ledger **ret)
{
	Pool__LedgerRequest req = POOL__LEDGER_REQUEST__INIT;
	struct admin_lending *entries;
	struct admin_ledger *l;
	Pool__Ledger *rep;
	size_t i;
	int rc;

	rc = admin_ask(a, WIRE_LEDGER, &req.base, WIRE_LEDGER_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*l), (void **)&l);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(l, entries, rep->n_entries))
		return admin_fail(l);
	for (i = 0; i < rep->n_entries; i++) {
		const Pool__LedgerEntry *e = rep->entries[i];

		entries[i] = (struct admin_lending){
		    .node = e->node,
		    .arena = e->arena,
		    .tier = e->tier,
		    .uid = e->uid,
		    .size = e->size,
		    .lent = e->lent,
		    .used = e->used,
		    .regions = e->regions,
		    .draining = e->draining,
		};
	}
	l->entries = entries;
	l->n = rep->n_entries;
	*ret = l;
	return EXIT_OK;
}

/* A statistic of proto/kvstats.h from its field of the same name in KvNamespace. */
#define ADMIN_KV_STAT(name, ...) namespaces[i].name = n->name;

/* A namespace create's options into req. */
static void admin_kv_spec_to(Pool__KvNsRequest *req, const struct admin_kv_spec *spec)
{
	req->has_capacity = spec->capacity > 0;
	req->capacity = spec->capacity;
	req->tier = (char *)spec->tier;
	req->evict = (char *)spec->evict;
	req->has_replicas = spec->replicas > 0;
	req->replicas = spec->replicas;
	req->has_size_hint = spec->size_hint > 0;
	req->size_hint = spec->size_hint;
	req->has_mode = spec->mode >= 0;
	req->mode = spec->mode >= 0 ? (uint32_t)spec->mode : 0;
	req->has_gid = spec->gid >= 0;
	req->gid = spec->gid >= 0 ? (uint32_t)spec->gid : 0;
	req->has_sharded = req->sharded = spec->sharded;
}

int admin_kv(struct admin *a, enum admin_kv_op op, const char *name,
	     const struct admin_kv_spec *spec, const struct admin_kv **ret)
{
	static const Pool__KvNsOp ops[] = {
	    [ADMIN_KV_STATS] = POOL__KV_NS_OP__KV_NS_OP_STATS,
	    [ADMIN_KV_CREATE] = POOL__KV_NS_OP__KV_NS_OP_CREATE,
	    [ADMIN_KV_DROP] = POOL__KV_NS_OP__KV_NS_OP_DROP,
	    [ADMIN_KV_FLUSH] = POOL__KV_NS_OP__KV_NS_OP_FLUSH,
	};
	Pool__KvNsRequest req = POOL__KV_NS_REQUEST__INIT;
	struct admin_kv_ns *namespaces;
	Pool__KvNsReply *rep;
	struct admin_kv *kv;
	size_t i;
	int rc;

	req.op = ops[op];
	req.name = (char *)name;
	if (op == ADMIN_KV_CREATE)
		admin_kv_spec_to(&req, spec);
	rc = admin_ask(a, WIRE_KV_NS, &req.base, WIRE_KV_NS_REPLY, false, (ProtobufCMessage **)&rep,
		       sizeof(*kv), (void **)&kv);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(kv, namespaces, rep->n_namespaces))
		return admin_fail(kv);
	for (i = 0; i < rep->n_namespaces; i++) {
		const Pool__KvNamespace *n = rep->namespaces[i];

		namespaces[i] = (struct admin_kv_ns){
		    .name = n->name,
		    .tier = n->tier,
		    .evict = n->evict,
		    .capacity = n->capacity,
		    .used = n->used,
		    .pmem_used = n->pmem_used,
		    .size_hint = n->size_hint,
		    .replicas = n->has_replicas ? n->replicas : 1,
		    .has_owner = n->has_mode,
		    .uid = n->uid,
		    .gid = n->gid,
		    .mode = n->mode,
		};
		KV_STATS(ADMIN_KV_STAT) /* entries, hits... */
	}
	kv->namespaces = namespaces;
	kv->n = rep->n_namespaces;
	*ret = kv;
	return EXIT_OK;
}

int admin_vec_stat(struct admin *a, const char *name, bool quiet, const struct admin_vec **ret)
{
	Pool__VecRequest req = POOL__VEC_REQUEST__INIT;
	struct admin_vec *v;
	Pool__VecReply *rep;
	int rc;

	req.op = POOL__VEC_OP__VEC_OP_STAT;
	req.name = (char *)name;
	rc = admin_ask(a, WIRE_VEC, &req.base, WIRE_VEC_REPLY, quiet, (ProtobufCMessage **)&rep,
		       sizeof(*v), (void **)&v);
	if (rc != EXIT_OK)
		return rc;
	*v = (struct admin_vec){
	    .node = rep->node,
	    .kind = rep->kind,
	    .metric = rep->metric,
	    .dim = rep->dim,
	    .m = rep->m,
	    .ef_construction = rep->ef_construction,
	    .ef_search = rep->ef_search,
	    .levels = rep->levels,
	    .count = rep->count,
	    .deleted = rep->deleted,
	    .capacity = rep->capacity,
	    .used = rep->used,
	    .size = rep->size,
	    .writer_pid = (uint32_t)(rep->writer >> 32), /* pid << 32 | its start */
	};
	*ret = v;
	return EXIT_OK;
}

int admin_events(struct admin *a, unsigned max, const struct admin_events **ret)
{
	Pool__EventsRequest req = POOL__EVENTS_REQUEST__INIT;
	struct admin_event *events;
	struct admin_events *es;
	Pool__EventsReply *rep;
	size_t i;
	int rc;

	req.has_max = max > 0;
	req.max = max;
	rc = admin_ask(a, WIRE_EVENTS, &req.base, WIRE_EVENTS_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*es), (void **)&es);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(es, events, rep->n_events))
		return admin_fail(es);
	for (i = 0; i < rep->n_events; i++)
		events[i] = (struct admin_event){rep->events[i]->seq, rep->events[i]->time_ms,
						 rep->events[i]->kind, rep->events[i]->text};
	es->events = events;
	es->n = rep->n_events;
	*ret = es;
	return EXIT_OK;
}

int admin_snap_copies(struct admin *a, const struct admin_copies **ret)
{
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	struct admin_copies *cs;
	struct admin_copy *copies;
	Pool__SnapCopyReply *rep;
	size_t i;
	int rc;

	req.op = POOL__SNAP_COPY_OP__SNAP_COPY_OP_LIST;
	rc = admin_ask(a, WIRE_SNAP_COPY, &req.base, WIRE_SNAP_COPY_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*cs), (void **)&cs);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(cs, copies, rep->n_copies))
		return admin_fail(cs);
	for (i = 0; i < rep->n_copies; i++) {
		const Pool__SnapCopyEntry *e = rep->copies[i];

		copies[i] = (struct admin_copy){
		    .name = e->name,
		    .state = admin_enum(cs, &pool__snap_copy_status__descriptor, e->state),
		    .has_id = e->has_id,
		    .id = e->id,
		    .size = e->size,
		    .clones = e->clones,
		    .uid = e->uid,
		    .waiters = e->waiters,
		};
	}
	cs->copies = copies;
	cs->n = rep->n_copies;
	*ret = cs;
	return EXIT_OK;
}

int admin_snap_place(struct admin *a, const char *name, const uint32_t *nodes, size_t n,
		     const struct admin_places **ret)
{
	Pool__SnapPlace req = POOL__SNAP_PLACE__INIT;
	struct admin_placed *results;
	struct admin_places *ps;
	Pool__SnapPlaceReply *rep;
	size_t i;
	int rc;

	req.name = (char *)name;
	req.nodes = (uint32_t *)nodes;
	req.n_nodes = n;
	rc = admin_ask(a, WIRE_SNAP_PLACE, &req.base, WIRE_SNAP_PLACE_REPLY, false,
		       (ProtobufCMessage **)&rep, sizeof(*ps), (void **)&ps);
	if (rc != EXIT_OK)
		return rc;
	if (!ADMIN_ARRAY(ps, results, rep->n_results))
		return admin_fail(ps);
	for (i = 0; i < rep->n_results; i++) {
		const Pool__SnapPlaceResult *r = rep->results[i];

		results[i] = (struct admin_placed){
		    r->node, r->code, r->message != NULL ? r->message : err_str(r->code)};
	}
	ps->results = results;
	ps->n = rep->n_results;
	*ret = ps;
	return EXIT_OK;
}

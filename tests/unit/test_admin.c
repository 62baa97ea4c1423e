/*
 * tests/unit/test_admin.c - poolctl's requests (cli/admin.c) against a
 * poold played by a thread on a real unix socket: each call sends the
 * request its arguments say, field for field, and maps every field of
 * the reply (each set to a value of its own) to its C struct; an error
 * reply and a dropped connection give poolctl's exit statuses.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/admin.h"
#include "proto/wire.h"
#include "tests/unit/unit.h"

#define FAKE_NODE_ID 5

static char sock_dir[] = "/tmp/test_admin.XXXXXX"; /* ours alone (mkdtemp) */
static char sock_path[108];
static int listen_fd = -1;
static pthread_t server;

/* The last request the fake poold took: its type and message. */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static uint16_t last_type;
static ProtobufCMessage *last_req;

/* Keep the request just taken, for the test to check. */
static void fake_keep(uint16_t type, ProtobufCMessage *req)
{
	pthread_mutex_lock(&last_lock);
	if (last_req != NULL)
		wire_msg_free(last_req);
	last_type = type;
	last_req = req;
	pthread_mutex_unlock(&last_lock);
}

static const void *fake_last(uint16_t type)
{
	const void *req;

	pthread_mutex_lock(&last_lock);
	req = last_type == type ? last_req : NULL;
	pthread_mutex_unlock(&last_lock);
	CU_ASSERT_FATAL(req != NULL);
	return req;
}

static int fake_error(int fd, uint64_t id, const char *msg)
{
	Pool__Error e = POOL__ERROR__INIT;

	e.code = -2;
	e.message = (char *)msg;
	return wire_send_frame(fd, WIRE_ERROR, id, &e.base);
}

static int fake_ok(int fd, uint64_t id, const char *msg)
{
	Pool__Ok ok = POOL__OK__INIT;

	ok.message = (char *)msg;
	return wire_send_frame(fd, WIRE_OK, id, &ok.base);
}

static int fake_status(int fd, uint64_t id)
{
	Pool__StatusReply st = POOL__STATUS_REPLY__INIT;
	Pool__JournalInfo ji = POOL__JOURNAL_INFO__INIT, *journals[] = {&ji};
	Pool__EtcdInfo e = POOL__ETCD_INFO__INIT;
	Pool__KvShardInfo k = POOL__KV_SHARD_INFO__INIT;

	st.version = "1.2.3";
	st.uptime_ms = 1001;
	st.node_id = 7;
	st.role = "node";
	st.clients = 3;
	st.pid = 4242;
	st.config_file = "/etc/pool/poold.conf";
	st.lend_size = 1u << 30;
	st.socket = "/run/poold/poold.sock";
	st.reloads = 2;
	st.requests = 99;
	st.fabric_firewall = "on: 2 port(s)";
	ji.name = "lender";
	ji.records = 11;
	ji.used = 12;
	ji.half = 13;
	ji.rewrites = 14;
	ji.dropped = 15;
	st.journals = journals;
	st.n_journals = 1;
	e.endpoint = "127.0.0.1:2379";
	e.standing = "leader";
	e.leader = "10.0.0.1:7440";
	e.has_epoch = 1;
	e.epoch = -6;
	e.has_leader_changes = 1;
	e.leader_changes = 16;
	e.has_records = e.has_waiting = e.has_txns = e.has_failures = e.has_rewrites = 1;
	e.records = 21;
	e.waiting = 22;
	e.txns = 23;
	e.failures = 24;
	e.rewrites = 25;
	st.etcd = &e;
	k.shards = 1024;
	k.owners = 31;
	k.owned = 32;
	k.digest = 0x3300000000000033ull;
	k.changes = 34;
	k.moves = 35;
	st.kv_shards = &k;
	return wire_send_frame(fd, WIRE_STATUS_REPLY, id, &st.base);
}

static int fake_nodes(int fd, uint64_t id)
{
	Pool__NodesReply rep = POOL__NODES_REPLY__INIT;
	Pool__Member m = POOL__MEMBER__INIT, *members[] = {&m};
	Pool__NodeInfo ni = POOL__NODE_INFO__INIT;
	Pool__NumaNode n0 = POOL__NUMA_NODE__INIT, *numa[] = {&n0};
	Pool__Arena a0 = POOL__ARENA__INIT, a1 = POOL__ARENA__INIT, *arenas[] = {&a0, &a1};

	ni.id = 3;
	ni.name = "host-c";
	ni.addr = "10.0.0.3:7440";
	ni.version = "0.9";
	ni.role = "node";
	ni.pmem_capacity = 31;
	ni.pmem_used = 32;
	ni.incarnation = 33;
	n0.id = 1;
	n0.mem_total = 41;
	n0.lend_capacity = 42;
	n0.lend_used = 43;
	ni.numa = numa;
	ni.n_numa = 1;
	a0.id = 2;
	a0.tier = "dram";
	a0.numa = 1;
	a0.size = 51;
	a0.used = 52;
	a0.lent = 53;
	a0.has_largest_free = a0.has_free_runs = a0.has_extents = 1;
	a0.largest_free = 54;
	a0.free_runs = 55;
	a0.extents = 56;
	a1.id = 4;
	a1.tier = "pmem";
	a1.numa = -1;
	ni.arenas = arenas;
	ni.n_arenas = 2;
	m.node = &ni;
	m.state = POOL__MEMBER_STATE__MEMBER_STATE_SUSPECT;
	m.heartbeat_age_ms = 61;
	rep.members = members;
	rep.n_members = 1;
	return wire_send_frame(fd, WIRE_NODES_REPLY, id, &rep.base);
}

/* type: WIRE_FABRIC or WIRE_PROBE, told apart by the transport. */
static int fake_fabric(int fd, uint64_t id, uint16_t type)
{
	Pool__FabricReply rep = POOL__FABRIC_REPLY__INIT;
	Pool__ProbeResult r = POOL__PROBE_RESULT__INIT, *results[] = {&r};
	Pool__Member m1 = POOL__MEMBER__INIT, m2 = POOL__MEMBER__INIT, *members[] = {&m1, &m2};
	Pool__NodeInfo n1 = POOL__NODE_INFO__INIT, n2 = POOL__NODE_INFO__INIT;

	r.src = 9;
	r.dst = 8;
	r.error = -110;
	r.latency_ns = 71;
	r.bandwidth = 72;
	r.transport = type == WIRE_PROBE ? "tcp (probed)" : "tcp";
	r.when_ms = 73;
	n1.id = 9;
	n2.id = 8;
	m1.node = &n1;
	m2.node = &n2;
	rep.results = results;
	rep.n_results = 1;
	rep.members = members;
	rep.n_members = 2;
	return wire_send_frame(fd, WIRE_FABRIC_REPLY, id, &rep.base);
}

/* A region of two extents, named name, lost with 3 wanted. */
static void fake_region_info(Pool__RegionInfo *r, Pool__Extent *e, Pool__Extent **extents,
			     const char *name)
{
	*r = (Pool__RegionInfo)POOL__REGION_INFO__INIT;
	r->name = (char *)name;
	r->id = 81;
	r->size = 82;
	r->class_ = "cache";
	r->placement = "spread=2";
	r->mode = 0640;
	r->uid = 83;
	r->gid = 84;
	r->gva = 85;
	r->stripe = 86;
	r->leases = 87;
	r->anonymous = 1;
	r->has_lost = r->lost = 1;
	r->has_want_extents = 1;
	r->want_extents = 3;
	e[0] = (Pool__Extent)POOL__EXTENT__INIT;
	e[1] = (Pool__Extent)POOL__EXTENT__INIT;
	e[0].node = 1;
	e[0].arena = 2;
	e[0].off = 91;
	e[0].len = 92;
	e[1].node = 3;
	e[1].arena = 4;
	e[1].off = 93;
	e[1].len = 94;
	extents[0] = &e[0];
	extents[1] = &e[1];
	r->extents = extents;
	r->n_extents = 2;
}

static int fake_region(int fd, uint64_t id, const char *name)
{
	Pool__RegionReply rep = POOL__REGION_REPLY__INIT;
	Pool__Extent e[2], *extents[2];
	Pool__RegionInfo r;

	if (strcmp(name, "nope") == 0)
		return fake_error(fd, id, "no region 'nope'");
	fake_region_info(&r, e, extents, name);
	rep.region = &r;
	return wire_send_frame(fd, WIRE_REGION_REPLY, id, &rep.base);
}

static int fake_region_list(int fd, uint64_t id)
{
	Pool__RegionList rep = POOL__REGION_LIST__INIT;
	Pool__Extent e[2][2], *extents[2][2];
	Pool__RegionInfo r[2], *regions[] = {&r[0], &r[1]};

	fake_region_info(&r[0], e[0], extents[0], "first");
	fake_region_info(&r[1], e[1], extents[1], "second");
	r[1].has_lost = r[1].lost = 0;
	r[1].n_extents = 1;
	rep.regions = regions;
	rep.n_regions = 2;
	return wire_send_frame(fd, WIRE_REGION_LIST_REPLY, id, &rep.base);
}

static int fake_ledger(int fd, uint64_t id)
{
	Pool__Ledger rep = POOL__LEDGER__INIT;
	Pool__LedgerEntry e = POOL__LEDGER_ENTRY__INIT, *entries[] = {&e};

	e.node = 2;
	e.arena = 3;
	e.tier = "pmem";
	e.size = 101;
	e.lent = 102;
	e.used = 103;
	e.uid = 104;
	e.regions = 105;
	e.draining = 1;
	rep.entries = entries;
	rep.n_entries = 1;
	return wire_send_frame(fd, WIRE_LEDGER_REPLY, id, &rep.base);
}

/* Two namespaces: one with every field, one of an older definition (no replicas, no owner). */
static int fake_kv(int fd, uint64_t id)
{
	Pool__KvNsReply rep = POOL__KV_NS_REPLY__INIT;
	Pool__KvNamespace n = POOL__KV_NAMESPACE__INIT, old = POOL__KV_NAMESPACE__INIT;
	Pool__KvNamespace *namespaces[] = {&n, &old};

	n.name = "prefix";
	n.capacity = 111;
	n.has_used = n.has_entries = n.has_hits = n.has_misses = n.has_evictions = 1;
	n.has_puts = n.has_pmem_used = n.has_spills = n.has_promotions = n.has_pmem_hits = 1;
	n.used = 112;
	n.entries = 113;
	n.hits = 114;
	n.misses = 115;
	n.evictions = 116;
	n.puts = 117;
	n.pmem_used = 118;
	n.spills = 119;
	n.promotions = 120;
	n.pmem_hits = 121;
	n.tier = "dram";
	n.evict = "none";
	n.has_replicas = 1;
	n.replicas = 3;
	n.has_size_hint = 1;
	n.size_hint = 122;
	n.has_uid = n.has_gid = n.has_mode = 1;
	n.uid = 123;
	n.gid = 124;
	n.mode = 0660;
	old.name = "old";
	old.capacity = 131;
	rep.namespaces = namespaces;
	rep.n_namespaces = 2;
	return wire_send_frame(fd, WIRE_KV_NS_REPLY, id, &rep.base);
}

static int fake_vec(int fd, uint64_t id, const Pool__VecRequest *req)
{
	Pool__VecReply v = POOL__VEC_REPLY__INIT;

	if (strcmp(req->name, "plain") == 0)
		return fake_error(fd, id, "region 'plain' holds no vector index");
	v.has_node = v.has_kind = v.has_metric = v.has_dim = v.has_m = 1;
	v.has_ef_construction = v.has_ef_search = v.has_count = v.has_deleted = 1;
	v.has_capacity = v.has_used = v.has_size = v.has_writer = v.has_levels = 1;
	v.node = 141;
	v.kind = 2;
	v.metric = 3;
	v.dim = 142;
	v.m = 143;
	v.ef_construction = 144;
	v.ef_search = 145;
	v.count = 146;
	v.deleted = 147;
	v.capacity = 148;
	v.used = 149;
	v.size = 150;
	v.writer = (uint64_t)4321 << 32 | 99; /* pid << 32 | its start */
	v.levels = 151;
	return wire_send_frame(fd, WIRE_VEC_REPLY, id, &v.base);
}

static int fake_events(int fd, uint64_t id)
{
	Pool__EventsReply rep = POOL__EVENTS_REPLY__INIT;
	Pool__Event e = POOL__EVENT__INIT, *events[] = {&e};

	e.seq = 161;
	e.time_ms = 162;
	e.kind = "reclaim";
	e.text = "node 2 drained";
	rep.events = events;
	rep.n_events = 1;
	return wire_send_frame(fd, WIRE_EVENTS_REPLY, id, &rep.base);
}

static int fake_snap_copies(int fd, uint64_t id)
{
	Pool__SnapCopyReply rep = POOL__SNAP_COPY_REPLY__INIT;
	Pool__SnapCopyEntry c = POOL__SNAP_COPY_ENTRY__INIT, *copies[] = {&c};

	rep.status = POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_LIST;
	c.name = "vm1";
	c.has_id = 1;
	c.id = 171;
	c.size = 172;
	c.state = POOL__SNAP_COPY_STATUS__SNAP_COPY_STATUS_FILLING;
	c.clones = 173;
	c.uid = 174;
	c.waiters = 175;
	rep.copies = copies;
	rep.n_copies = 1;
	return wire_send_frame(fd, WIRE_SNAP_COPY_REPLY, id, &rep.base);
}

/* A result per node asked: the first placed, the others failed (the last without a message). */
static int fake_snap_place(int fd, uint64_t id, const Pool__SnapPlace *req)
{
	Pool__SnapPlaceReply rep = POOL__SNAP_PLACE_REPLY__INIT;
	Pool__SnapPlaceResult r[4], *results[4];
	size_t i;

	for (i = 0; i < req->n_nodes && i < 4; i++) {
		r[i] = (Pool__SnapPlaceResult)POOL__SNAP_PLACE_RESULT__INIT;
		r[i].node = req->nodes[i];
		r[i].code = i == 0 ? 0 : -28;
		r[i].message = i == 0 || i + 1 == req->n_nodes ? NULL : "no room";
		results[i] = &r[i];
	}
	rep.results = results;
	rep.n_results = i;
	return wire_send_frame(fd, WIRE_SNAP_PLACE_REPLY, id, &rep.base);
}

static int fake_config(int fd, uint64_t id)
{
	Pool__ConfigShowReply rep = POOL__CONFIG_SHOW_REPLY__INIT;
	Pool__ConfigOption o = POOL__CONFIG_OPTION__INIT, *options[] = {&o};

	rep.config_file = "/etc/pool/poold.conf";
	o.name = "lend.size";
	o.type = "size";
	o.value = "1G";
	o.default_value = "0";
	o.help = "how much DRAM this node lends";
	o.is_default = 0;
	rep.options = options;
	rep.n_options = 1;
	return wire_send_frame(fd, WIRE_CONFIG_SHOW_REPLY, id, &rep.base);
}

/* Answer one request; -1 to hang up (the request "drop" asks it). */
static int fake_answer(int fd, const struct wire_hdr *hdr, ProtobufCMessage *req)
{
	switch (hdr->type) {
	case WIRE_STATUS:
		return fake_status(fd, hdr->req_id);
	case WIRE_CONFIG_SHOW:
		return fake_config(fd, hdr->req_id);
	case WIRE_RELOAD:
		return fake_ok(fd, hdr->req_id, NULL);
	case WIRE_NODES:
		return fake_nodes(fd, hdr->req_id);
	case WIRE_FABRIC:
	case WIRE_PROBE:
		return fake_fabric(fd, hdr->req_id, hdr->type);
	case WIRE_REGION_LIST:
		return fake_region_list(fd, hdr->req_id);
	case WIRE_REGION_CREATE:
		return fake_region(fd, hdr->req_id, ((Pool__RegionCreate *)req)->name);
	case WIRE_REGION_STAT:
		return fake_region(fd, hdr->req_id, ((Pool__RegionName *)req)->name);
	case WIRE_REGION_DESTROY:
		if (strcmp(((Pool__RegionName *)req)->name, "drop") == 0)
			return -1;
		return fake_ok(fd, hdr->req_id, NULL);
	case WIRE_LEND:
		return fake_ok(fd, hdr->req_id, "node 2: now lends 1G");
	case WIRE_LEDGER:
		return fake_ledger(fd, hdr->req_id);
	case WIRE_KV_NS:
		return fake_kv(fd, hdr->req_id);
	case WIRE_VEC:
		return fake_vec(fd, hdr->req_id, (Pool__VecRequest *)req);
	case WIRE_EVENTS:
		return fake_events(fd, hdr->req_id);
	case WIRE_SNAP_COPY:
		return fake_snap_copies(fd, hdr->req_id);
	case WIRE_SNAP_PLACE:
		return fake_snap_place(fd, hdr->req_id, (Pool__SnapPlace *)req);
	default:
		return fake_error(fd, hdr->req_id, "not played here");
	}
}

/* The fake poold: one client at a time, its Hello answered, then its requests. */
static void *fake_serve(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		Pool__HelloReply hello = POOL__HELLO_REPLY__INIT;
		struct wire_hdr hdr;
		uint8_t *payload;

		if (fd < 0)
			return NULL;
		hello.version = WIRE_VERSION;
		hello.server_version = "9.8.7";
		hello.node_id = FAKE_NODE_ID;
		if (wire_recv_frame(fd, WIRE_MAX_FRAME_DEFAULT, 5000, &hdr, &payload) == 0) {
			free(payload);
			wire_send_frame(fd, WIRE_HELLO_REPLY, hdr.req_id, &hello.base);
		}
		while (wire_recv_frame(fd, WIRE_MAX_FRAME_DEFAULT, 5000, &hdr, &payload) == 0) {
			ProtobufCMessage *req = NULL;
			int rc = wire_msg_unpack(hdr.type, payload, hdr.len, &req);

			free(payload);
			if (rc < 0)
				break;
			fake_keep(hdr.type, req);
			if (fake_answer(fd, &hdr, req) < 0)
				break;
		}
		close(fd);
	}
}

static struct admin *connect_fake(void)
{
	struct admin *a = NULL;

	CU_ASSERT_EQUAL_FATAL(admin_connect(sock_path, 5000, false, &a), EXIT_OK);
	CU_ASSERT_FATAL(a != NULL);
	return a;
}

static void test_status(void)
{
	struct admin *a = connect_fake();
	const struct admin_status *st = NULL;

	CU_ASSERT_STRING_EQUAL(admin_server_version(a), "9.8.7");
	CU_ASSERT_EQUAL_FATAL(admin_status(a, -1, &st), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(st->version, "1.2.3");
	CU_ASSERT_STRING_EQUAL(st->role, "node");
	CU_ASSERT_STRING_EQUAL(st->config_file, "/etc/pool/poold.conf");
	CU_ASSERT_STRING_EQUAL(st->socket, "/run/poold/poold.sock");
	CU_ASSERT_STRING_EQUAL(st->fabric_firewall, "on: 2 port(s)");
	CU_ASSERT_EQUAL(st->uptime_ms, 1001);
	CU_ASSERT_EQUAL(st->lend_size, 1u << 30);
	CU_ASSERT_EQUAL(st->reloads, 2);
	CU_ASSERT_EQUAL(st->requests, 99);
	CU_ASSERT_EQUAL(st->node_id, 7);
	CU_ASSERT_EQUAL(st->pid, 4242);
	CU_ASSERT_EQUAL(st->clients, 3);
	CU_ASSERT_EQUAL_FATAL(st->n_journals, 1);
	CU_ASSERT_STRING_EQUAL(st->journals[0].name, "lender");
	CU_ASSERT_EQUAL(st->journals[0].records, 11);
	CU_ASSERT_EQUAL(st->journals[0].used, 12);
	CU_ASSERT_EQUAL(st->journals[0].half, 13);
	CU_ASSERT_EQUAL(st->journals[0].rewrites, 14);
	CU_ASSERT_EQUAL(st->journals[0].dropped, 15);
	CU_ASSERT_FATAL(st->etcd != NULL);
	CU_ASSERT_STRING_EQUAL(st->etcd->endpoint, "127.0.0.1:2379");
	CU_ASSERT_STRING_EQUAL(st->etcd->standing, "leader");
	CU_ASSERT_STRING_EQUAL(st->etcd->leader, "10.0.0.1:7440");
	CU_ASSERT_STRING_EQUAL(st->etcd->why, ""); /* not sent */
	CU_ASSERT_EQUAL(st->etcd->epoch, -6);
	CU_ASSERT_EQUAL(st->etcd->leader_changes, 16);
	CU_ASSERT_TRUE(st->etcd->has_records);
	CU_ASSERT_EQUAL(st->etcd->records, 21);
	CU_ASSERT_EQUAL(st->etcd->waiting, 22);
	CU_ASSERT_EQUAL(st->etcd->txns, 23);
	CU_ASSERT_EQUAL(st->etcd->failures, 24);
	CU_ASSERT_EQUAL(st->etcd->rewrites, 25);
	CU_ASSERT_FATAL(st->kv_shards != NULL);
	CU_ASSERT_EQUAL(st->kv_shards->shards, 1024);
	CU_ASSERT_EQUAL(st->kv_shards->owners, 31);
	CU_ASSERT_EQUAL(st->kv_shards->owned, 32);
	CU_ASSERT_EQUAL(st->kv_shards->digest, 0x3300000000000033ull);
	CU_ASSERT_EQUAL(st->kv_shards->changes, 34);
	CU_ASSERT_EQUAL(st->kv_shards->moves, 35);
	admin_free(st);
	admin_close(a);
}

static void test_config_reload(void)
{
	struct admin *a = connect_fake();
	const struct admin_config *c = NULL;
	const struct admin_said *said = NULL;

	CU_ASSERT_EQUAL_FATAL(admin_config(a, &c), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(c->config_file, "/etc/pool/poold.conf");
	CU_ASSERT_EQUAL_FATAL(c->n_options, 1);
	CU_ASSERT_STRING_EQUAL(c->options[0].name, "lend.size");
	CU_ASSERT_STRING_EQUAL(c->options[0].type, "size");
	CU_ASSERT_STRING_EQUAL(c->options[0].value, "1G");
	CU_ASSERT_STRING_EQUAL(c->options[0].default_value, "0");
	CU_ASSERT_STRING_EQUAL(c->options[0].help, "how much DRAM this node lends");
	CU_ASSERT_FALSE(c->options[0].is_default);
	admin_free(c);
	CU_ASSERT_EQUAL_FATAL(admin_reload(a, &said), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(said->message, ""); /* no warnings: "", not NULL */
	CU_ASSERT_PTR_NOT_NULL(fake_last(WIRE_RELOAD));
	admin_free(said);
	admin_close(a);
}

static void test_nodes_fabric(void)
{
	struct admin *a = connect_fake();
	const struct admin_nodes *ns = NULL;
	const struct admin_fabric *f = NULL;
	const struct admin_node *n;

	CU_ASSERT_EQUAL_FATAL(admin_nodes(a, &ns), EXIT_OK);
	CU_ASSERT_EQUAL_FATAL(ns->n, 1);
	n = &ns->nodes[0];
	CU_ASSERT_EQUAL(n->id, 3);
	CU_ASSERT_STRING_EQUAL(n->name, "host-c");
	CU_ASSERT_STRING_EQUAL(n->addr, "10.0.0.3:7440");
	CU_ASSERT_STRING_EQUAL(n->role, "node");
	CU_ASSERT_STRING_EQUAL(n->version, "0.9");
	CU_ASSERT_STRING_EQUAL(n->state, "suspect");
	CU_ASSERT_EQUAL(n->heartbeat_age_ms, 61);
	CU_ASSERT_EQUAL(n->incarnation, 33);
	CU_ASSERT_EQUAL(n->pmem_capacity, 31);
	CU_ASSERT_EQUAL(n->pmem_used, 32);
	CU_ASSERT_EQUAL_FATAL(n->n_numa, 1);
	CU_ASSERT_EQUAL(n->numa[0].id, 1);
	CU_ASSERT_EQUAL(n->numa[0].mem_total, 41);
	CU_ASSERT_EQUAL(n->numa[0].lend_capacity, 42);
	CU_ASSERT_EQUAL(n->numa[0].lend_used, 43);
	CU_ASSERT_EQUAL_FATAL(n->n_arenas, 2);
	CU_ASSERT_EQUAL(n->arenas[0].id, 2);
	CU_ASSERT_STRING_EQUAL(n->arenas[0].tier, "dram");
	CU_ASSERT_EQUAL(n->arenas[0].numa, 1);
	CU_ASSERT_EQUAL(n->arenas[0].size, 51);
	CU_ASSERT_EQUAL(n->arenas[0].used, 52);
	CU_ASSERT_EQUAL(n->arenas[0].lent, 53);
	CU_ASSERT_EQUAL(n->arenas[0].largest_free, 54);
	CU_ASSERT_EQUAL(n->arenas[0].free_runs, 55);
	CU_ASSERT_EQUAL(n->arenas[0].extents, 56);
	CU_ASSERT_EQUAL(n->arenas[1].id, 4);
	CU_ASSERT_STRING_EQUAL(n->arenas[1].tier, "pmem");
	CU_ASSERT_EQUAL(n->arenas[1].numa, -1);
	admin_free(ns);

	CU_ASSERT_EQUAL_FATAL(admin_fabric(a, false, &f), EXIT_OK);
	CU_ASSERT_EQUAL_FATAL(f->n_links, 1);
	CU_ASSERT_EQUAL(f->links[0].src, 9);
	CU_ASSERT_EQUAL(f->links[0].dst, 8);
	CU_ASSERT_EQUAL(f->links[0].error, -110);
	CU_ASSERT_EQUAL(f->links[0].latency_ns, 71);
	CU_ASSERT_EQUAL(f->links[0].bandwidth, 72);
	CU_ASSERT_EQUAL(f->links[0].when_ms, 73);
	CU_ASSERT_STRING_EQUAL(f->links[0].transport, "tcp");
	CU_ASSERT_EQUAL_FATAL(f->n_nodes, 2);
	CU_ASSERT_EQUAL(f->nodes[0], 9);
	CU_ASSERT_EQUAL(f->nodes[1], 8);
	admin_free(f);
	CU_ASSERT_EQUAL_FATAL(admin_fabric(a, true, &f), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(f->links[0].transport, "tcp (probed)");
	CU_ASSERT_PTR_NOT_NULL(fake_last(WIRE_PROBE));
	admin_free(f);
	admin_close(a);
}

static void check_region(const struct admin_region *r, const char *name)
{
	CU_ASSERT_STRING_EQUAL(r->name, name);
	CU_ASSERT_STRING_EQUAL(r->class_name, "cache");
	CU_ASSERT_STRING_EQUAL(r->placement, "spread=2");
	CU_ASSERT_EQUAL(r->id, 81);
	CU_ASSERT_EQUAL(r->size, 82);
	CU_ASSERT_EQUAL(r->mode, 0640);
	CU_ASSERT_EQUAL(r->uid, 83);
	CU_ASSERT_EQUAL(r->gid, 84);
	CU_ASSERT_EQUAL(r->gva, 85);
	CU_ASSERT_EQUAL(r->stripe, 86);
	CU_ASSERT_EQUAL(r->leases, 87);
	CU_ASSERT_TRUE(r->anonymous);
	CU_ASSERT_TRUE(r->lost);
	CU_ASSERT_EQUAL(r->want_extents, 3);
	CU_ASSERT_EQUAL_FATAL(r->n_extents, 2);
	CU_ASSERT_EQUAL(r->extents[0].node, 1);
	CU_ASSERT_EQUAL(r->extents[0].arena, 2);
	CU_ASSERT_EQUAL(r->extents[0].off, 91);
	CU_ASSERT_EQUAL(r->extents[0].len, 92);
	CU_ASSERT_EQUAL(r->extents[1].node, 3);
	CU_ASSERT_EQUAL(r->extents[1].arena, 4);
	CU_ASSERT_EQUAL(r->extents[1].off, 93);
	CU_ASSERT_EQUAL(r->extents[1].len, 94);
}

static void test_regions(void)
{
	const struct admin_region_spec spec = {
	    .name = "r1",
	    .class_name = "cache",
	    .placement = "spread=2",
	    .size = 64u << 20,
	    .stripe = 1u << 20,
	    .mode = 0640,
	    .anonymous = true,
	};
	struct admin *a = connect_fake();
	const struct admin_regions *rs = NULL;
	const struct admin_region *r = NULL;
	const Pool__RegionCreate *create;

	CU_ASSERT_EQUAL_FATAL(admin_regions(a, &rs), EXIT_OK);
	CU_ASSERT_EQUAL_FATAL(rs->n, 2);
	check_region(&rs->regions[0], "first");
	CU_ASSERT_STRING_EQUAL(rs->regions[1].name, "second");
	CU_ASSERT_FALSE(rs->regions[1].lost);
	CU_ASSERT_EQUAL(rs->regions[1].n_extents, 1);
	admin_free(rs);

	CU_ASSERT_EQUAL_FATAL(admin_region_create(a, &spec, &r), EXIT_OK);
	create = fake_last(WIRE_REGION_CREATE);
	CU_ASSERT_STRING_EQUAL(create->name, "r1");
	CU_ASSERT_STRING_EQUAL(create->class_, "cache");
	CU_ASSERT_STRING_EQUAL(create->placement, "spread=2");
	CU_ASSERT_EQUAL(create->size, 64u << 20);
	CU_ASSERT_EQUAL(create->stripe, 1u << 20);
	CU_ASSERT_EQUAL(create->mode, 0640);
	CU_ASSERT_TRUE(create->anonymous);
	CU_ASSERT_EQUAL(create->from_node, FAKE_NODE_ID); /* the node poold said it is */
	check_region(r, "r1");
	admin_free(r);

	r = NULL;
	CU_ASSERT_EQUAL_FATAL(admin_region_stat(a, "r2", &r), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(((const Pool__RegionName *)fake_last(WIRE_REGION_STAT))->name, "r2");
	check_region(r, "r2");
	admin_free(r);
	r = NULL;
	CU_ASSERT_EQUAL(admin_region_stat(a, "nope", &r), EXIT_ERROR);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(admin_region_destroy(a, "r2"), EXIT_OK);
	CU_ASSERT_STRING_EQUAL(((const Pool__RegionName *)fake_last(WIRE_REGION_DESTROY))->name,
			       "r2");
	admin_close(a);
}

static void test_lend_ledger(void)
{
	static const struct {
		enum admin_lend_op op;
		Pool__LendOp wire;
	} ops[] = {
	    {ADMIN_LEND, POOL__LEND_OP__LEND_OP_LEND},
	    {ADMIN_RECLAIM, POOL__LEND_OP__LEND_OP_RECLAIM},
	    {ADMIN_DRAIN, POOL__LEND_OP__LEND_OP_DRAIN},
	};
	struct admin *a = connect_fake();
	const struct admin_ledger *l = NULL;
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct admin_said *said = NULL;
		const Pool__LendRequest *req;

		CU_ASSERT_EQUAL_FATAL(admin_lend(a, ops[i].op, 2, 1u << 30, &said), EXIT_OK);
		req = fake_last(WIRE_LEND);
		CU_ASSERT_EQUAL(req->op, ops[i].wire);
		CU_ASSERT_EQUAL(req->node, 2);
		CU_ASSERT_EQUAL(req->size, 1u << 30);
		CU_ASSERT_STRING_EQUAL(said->message, "node 2: now lends 1G");
		admin_free(said);
	}
	CU_ASSERT_EQUAL_FATAL(admin_ledger(a, &l), EXIT_OK);
	CU_ASSERT_EQUAL_FATAL(l->n, 1);
	CU_ASSERT_EQUAL(l->entries[0].node, 2);
	CU_ASSERT_EQUAL(l->entries[0].arena, 3);
	CU_ASSERT_STRING_EQUAL(l->entries[0].tier, "pmem");
	CU_ASSERT_EQUAL(l->entries[0].size, 101);
	CU_ASSERT_EQUAL(l->entries[0].lent, 102);
	CU_ASSERT_EQUAL(l->entries[0].used, 103);
	CU_ASSERT_EQUAL(l->entries[0].uid, 104);
	CU_ASSERT_EQUAL(l->entries[0].regions, 105);
	CU_ASSERT_TRUE(l->entries[0].draining);
	admin_free(l);
	admin_close(a);
}

static void test_kv(void)
{
	const struct admin_kv_spec spec = {
	    .capacity = 8u << 20,
	    .size_hint = 4096,
	    .tier = "dram",
	    .evict = "none",
	    .replicas = 2,
	    .mode = 0640,
	    .gid = 0, /* root's group: set, though 0 */
	};
	const struct admin_kv_spec defaults = {.mode = -1, .gid = -1};
	struct admin *a = connect_fake();
	const struct admin_kv *kv = NULL;
	const struct admin_kv_ns *n;
	const Pool__KvNsRequest *req;

	CU_ASSERT_EQUAL_FATAL(admin_kv(a, ADMIN_KV_CREATE, "prefix", &spec, &kv), EXIT_OK);
	req = fake_last(WIRE_KV_NS);
	CU_ASSERT_EQUAL(req->op, POOL__KV_NS_OP__KV_NS_OP_CREATE);
	CU_ASSERT_STRING_EQUAL(req->name, "prefix");
	CU_ASSERT_TRUE(req->has_capacity && req->capacity == 8u << 20);
	CU_ASSERT_TRUE(req->has_size_hint && req->size_hint == 4096);
	CU_ASSERT_STRING_EQUAL(req->tier, "dram");
	CU_ASSERT_STRING_EQUAL(req->evict, "none");
	CU_ASSERT_TRUE(req->has_replicas && req->replicas == 2);
	CU_ASSERT_TRUE(req->has_mode && req->mode == 0640);
	CU_ASSERT_TRUE(req->has_gid && req->gid == 0);
	CU_ASSERT_EQUAL_FATAL(kv->n, 2);
	n = &kv->namespaces[0];
	CU_ASSERT_STRING_EQUAL(n->name, "prefix");
	CU_ASSERT_STRING_EQUAL(n->tier, "dram");
	CU_ASSERT_STRING_EQUAL(n->evict, "none");
	CU_ASSERT_EQUAL(n->capacity, 111);
	CU_ASSERT_EQUAL(n->used, 112);
	CU_ASSERT_EQUAL(n->entries, 113);
	CU_ASSERT_EQUAL(n->hits, 114);
	CU_ASSERT_EQUAL(n->misses, 115);
	CU_ASSERT_EQUAL(n->evictions, 116);
	CU_ASSERT_EQUAL(n->puts, 117);
	CU_ASSERT_EQUAL(n->pmem_used, 118);
	CU_ASSERT_EQUAL(n->spills, 119);
	CU_ASSERT_EQUAL(n->promotions, 120);
	CU_ASSERT_EQUAL(n->pmem_hits, 121);
	CU_ASSERT_EQUAL(n->size_hint, 122);
	CU_ASSERT_EQUAL(n->replicas, 3);
	CU_ASSERT_TRUE(n->has_owner);
	CU_ASSERT_EQUAL(n->uid, 123);
	CU_ASSERT_EQUAL(n->gid, 124);
	CU_ASSERT_EQUAL(n->mode, 0660);
	n = &kv->namespaces[1]; /* an older definition */
	CU_ASSERT_STRING_EQUAL(n->name, "old");
	CU_ASSERT_EQUAL(n->replicas, 1);
	CU_ASSERT_FALSE(n->has_owner);
	admin_free(kv);

	/* Unset options are not sent; stats, drop and flush send no options at all. */
	CU_ASSERT_EQUAL_FATAL(admin_kv(a, ADMIN_KV_CREATE, "bare", &defaults, &kv), EXIT_OK);
	req = fake_last(WIRE_KV_NS);
	CU_ASSERT_FALSE(req->has_capacity || req->has_size_hint || req->has_replicas ||
			req->has_mode || req->has_gid);
	CU_ASSERT_PTR_NULL(req->tier);
	CU_ASSERT_PTR_NULL(req->evict);
	admin_free(kv);
	CU_ASSERT_EQUAL_FATAL(admin_kv(a, ADMIN_KV_STATS, "", NULL, &kv), EXIT_OK);
	CU_ASSERT_EQUAL(((const Pool__KvNsRequest *)fake_last(WIRE_KV_NS))->op,
			POOL__KV_NS_OP__KV_NS_OP_STATS);
	admin_free(kv);
	CU_ASSERT_EQUAL_FATAL(admin_kv(a, ADMIN_KV_DROP, "prefix", NULL, &kv), EXIT_OK);
	CU_ASSERT_EQUAL(((const Pool__KvNsRequest *)fake_last(WIRE_KV_NS))->op,
			POOL__KV_NS_OP__KV_NS_OP_DROP);
	admin_free(kv);
	CU_ASSERT_EQUAL_FATAL(admin_kv(a, ADMIN_KV_FLUSH, "prefix", NULL, &kv), EXIT_OK);
	req = fake_last(WIRE_KV_NS);
	CU_ASSERT_EQUAL(req->op, POOL__KV_NS_OP__KV_NS_OP_FLUSH);
	CU_ASSERT_FALSE(req->has_capacity);
	admin_free(kv);
	admin_close(a);
}

static void test_vec_events_snap(void)
{
	static const uint32_t nodes[] = {4, 6, 7};
	struct admin *a = connect_fake();
	const struct admin_vec *v = NULL;
	const struct admin_events *es = NULL;
	const struct admin_copies *cs = NULL;
	const struct admin_places *ps = NULL;
	const Pool__VecRequest *vreq;
	const Pool__EventsRequest *ereq;
	const Pool__SnapPlace *preq;

	CU_ASSERT_EQUAL_FATAL(admin_vec_stat(a, "index", false, &v), EXIT_OK);
	vreq = fake_last(WIRE_VEC);
	CU_ASSERT_EQUAL(vreq->op, POOL__VEC_OP__VEC_OP_STAT);
	CU_ASSERT_STRING_EQUAL(vreq->name, "index");
	CU_ASSERT_EQUAL(v->node, 141);
	CU_ASSERT_EQUAL(v->kind, 2);
	CU_ASSERT_EQUAL(v->metric, 3);
	CU_ASSERT_EQUAL(v->dim, 142);
	CU_ASSERT_EQUAL(v->m, 143);
	CU_ASSERT_EQUAL(v->ef_construction, 144);
	CU_ASSERT_EQUAL(v->ef_search, 145);
	CU_ASSERT_EQUAL(v->count, 146);
	CU_ASSERT_EQUAL(v->deleted, 147);
	CU_ASSERT_EQUAL(v->capacity, 148);
	CU_ASSERT_EQUAL(v->used, 149);
	CU_ASSERT_EQUAL(v->size, 150);
	CU_ASSERT_EQUAL(v->writer_pid, 4321);
	CU_ASSERT_EQUAL(v->levels, 151);
	admin_free(v);
	v = NULL;
	CU_ASSERT_EQUAL(admin_vec_stat(a, "plain", true, &v), EXIT_ERROR);
	CU_ASSERT_PTR_NULL(v);

	CU_ASSERT_EQUAL_FATAL(admin_events(a, 0, &es), EXIT_OK);
	CU_ASSERT_FALSE(((const Pool__EventsRequest *)fake_last(WIRE_EVENTS))->has_max);
	admin_free(es);
	CU_ASSERT_EQUAL_FATAL(admin_events(a, 25, &es), EXIT_OK);
	ereq = fake_last(WIRE_EVENTS);
	CU_ASSERT_TRUE(ereq->has_max && ereq->max == 25);
	CU_ASSERT_EQUAL_FATAL(es->n, 1);
	CU_ASSERT_EQUAL(es->events[0].seq, 161);
	CU_ASSERT_EQUAL(es->events[0].time_ms, 162);
	CU_ASSERT_STRING_EQUAL(es->events[0].kind, "reclaim");
	CU_ASSERT_STRING_EQUAL(es->events[0].text, "node 2 drained");
	admin_free(es);

	CU_ASSERT_EQUAL_FATAL(admin_snap_copies(a, &cs), EXIT_OK);
	CU_ASSERT_EQUAL(((const Pool__SnapCopy *)fake_last(WIRE_SNAP_COPY))->op,
			POOL__SNAP_COPY_OP__SNAP_COPY_OP_LIST);
	CU_ASSERT_EQUAL_FATAL(cs->n, 1);
	CU_ASSERT_STRING_EQUAL(cs->copies[0].name, "vm1");
	CU_ASSERT_STRING_EQUAL(cs->copies[0].state, "filling");
	CU_ASSERT_TRUE(cs->copies[0].has_id);
	CU_ASSERT_EQUAL(cs->copies[0].id, 171);
	CU_ASSERT_EQUAL(cs->copies[0].size, 172);
	CU_ASSERT_EQUAL(cs->copies[0].clones, 173);
	CU_ASSERT_EQUAL(cs->copies[0].uid, 174);
	CU_ASSERT_EQUAL(cs->copies[0].waiters, 175);
	admin_free(cs);

	CU_ASSERT_EQUAL_FATAL(admin_snap_place(a, "vm1", nodes, 3, &ps), EXIT_OK);
	preq = fake_last(WIRE_SNAP_PLACE);
	CU_ASSERT_STRING_EQUAL(preq->name, "vm1");
	CU_ASSERT_EQUAL_FATAL(preq->n_nodes, 3);
	CU_ASSERT_TRUE(preq->nodes[0] == 4 && preq->nodes[1] == 6 && preq->nodes[2] == 7);
	CU_ASSERT_EQUAL_FATAL(ps->n, 3);
	CU_ASSERT_TRUE(ps->results[0].node == 4 && ps->results[0].code == 0);
	CU_ASSERT_TRUE(ps->results[1].node == 6 && ps->results[1].code == -28);
	CU_ASSERT_STRING_EQUAL(ps->results[1].message, "no room");
	/* No message from poold: the code's own words. */
	CU_ASSERT_TRUE(ps->results[2].message != NULL && ps->results[2].message[0] != '\0');
	admin_free(ps);
	admin_close(a);
}

/* poold gone mid-call: EXIT_UNREACHABLE; no server: the same, at connect. */
static void test_unreachable(void)
{
	struct admin *a = connect_fake(), *none = NULL;
	const struct admin_status *st = NULL;

	CU_ASSERT_EQUAL(admin_region_destroy(a, "drop"), EXIT_UNREACHABLE);
	CU_ASSERT_EQUAL(admin_status(a, -1, &st), EXIT_UNREACHABLE);
	CU_ASSERT_PTR_NULL(st);
	admin_close(a);
	CU_ASSERT_EQUAL(admin_connect("/nonexistent/poold.sock", 1000, true, &none),
			EXIT_UNREACHABLE);
	CU_ASSERT_PTR_NULL(none);
	admin_free(NULL);
}

static const struct unit_test tests[] = {
    {"status: every field of the reply", test_status},
    {"config show and reload", test_config_reload},
    {"nodes and fabric: members, NUMA nodes, arenas, links", test_nodes_fabric},
    {"regions: list, create (the request field for field), stat, destroy", test_regions},
    {"lend, reclaim, drain and the ledger", test_lend_ledger},
    {"kv: create's options sent only when set; every counter back", test_kv},
    {"vec stat, events, snap copies, snap place", test_vec_events_snap},
    {"a dropped connection and no poold give EXIT_UNREACHABLE", test_unreachable},
    {NULL, NULL},
};

int main(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int rc;

	if (mkdtemp(sock_dir) == NULL) {
		perror("test_admin: mkdtemp");
		return 1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/poold.sock", sock_dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(listen_fd, 4) < 0 || pthread_create(&server, NULL, fake_serve, NULL) != 0) {
		perror("test_admin: the fake poold");
		return 1;
	}
	rc = unit_run("admin", tests);
	shutdown(listen_fd, SHUT_RDWR);
	close(listen_fd);
	pthread_join(server, NULL);
	unlink(sock_path);
	rmdir(sock_dir);
	fake_keep(0, NULL);
	return rc;
}

/*
 * tests/tools/pool-hostile.c - a hostile tenant: raw protobuf frames on the
 * control socket (no libpool), trying to reach what it was not granted.
 *
 *	pool-hostile SOCKET PUBLIC PRIVATE
 *	pool-hostile SOCKET --keep REGION
 *	pool-hostile SOCKET --steal NS KEY
 *	pool-hostile SOCKET --poison HOLDER
 *	pool-hostile SOCKET --poison-shared HOLDER HEXKEY
 *	pool-hostile SOCKET --squat-shared HOLDER HEXKEY
 *	pool-hostile SOCKET --node-calls NS
 *
 * PUBLIC is a region others may read (mode 0644) but not write; PRIVATE one
 * they may not touch (0600). Each attack prints "refused: WHAT (error)" when
 * poold refuses it and "NOT REFUSED: WHAT" when it does not; the exit
 * status is the number of attacks that were not refused (0: all refused).
 *
 * --keep maps REGION's memory file, closes the region but keeps the mapping,
 * prints "mapped", waits for a line on stdin (the test frees the region and
 * lends its memory to someone else meanwhile) and then says how many bytes
 * of the mapping are not zero: a revoked mapping must hold nothing.
 *
 * --steal tries to commit and to abort another session's reservation of KEY
 * in NS, trying every version from 1 to 10,000 (they are sequential); the
 * exit status is the number of tries poold did not refuse.
 *
 * --poison tries to store a snapshot page (in snap.pages, held by HOLDER,
 * a region of its own) under a key of root's (uid 0), as root's next put of
 * that page would look it up; it must be refused, while a key of its own
 * uid is taken (then aborted).
 *
 * --poison-shared reserves HEXKEY (16 bytes: the SHA-256 key of a page root
 * will put in the shared class) in snap.shared, writes other bytes there
 * and commits: poold must drop them (EBADMSG). Then it stores a page of its
 * own under that page's true key, which must be taken.
 *
 * --squat-shared reserves HEXKEY in snap.shared, prints "reserved", and
 * holds the reservation without writing until stdin closes: another uid's
 * put of that page must not wait on it for more than a second.
 *
 * --node-calls sends what only another node's poold sends on the link
 * between them, on the control socket: a KV shard hand-over request, a
 * backup copy of a key of NS (a sharded namespace of 2 replicas), a RESP
 * command of a sharded database, a report of NS's use to its keeper that
 * would take all its capacity and a keeper's part of NS that would leave
 * this owner none; all must be refused, whoever asks (root too), and NS must
 * not hold the key.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/wire.h"

static struct wire_client *wc;
static int failures;

static void verdict(const char *what, int refused, const char *why)
{
	if (refused)
		printf("refused: %s (%s)\n", what, why);
	else
		printf("NOT REFUSED: %s\n", what);
	failures += !refused;
}

/* A call that must fail: refused if it does. */
static void must_fail(const char *what, uint16_t type, const ProtobufCMessage *req,
		      uint16_t reply_type)
{
	ProtobufCMessage *rep = NULL;
	char msg[256] = "";
	int fd = -1;
	int rc = wire_client_call_fd(wc, type, req, reply_type, &rep, &fd, msg, sizeof(msg));

	if (rc == 0)
		wire_msg_free(rep);
	if (fd >= 0)
		close(fd);
	verdict(what, rc < 0, msg);
}

/* One carried transfer; its status (or the call's error). */
static int xfer(Pool__XferOp *op)
{
	Pool__Xfer req = POOL__XFER__INIT;
	Pool__XferReply *rep;
	char msg[256];
	int rc;

	req.ops = &op;
	req.n_ops = 1;
	rc = wire_client_call(wc, WIRE_XFER, &req.base, WIRE_XFER_REPLY, (ProtobufCMessage **)&rep,
			      msg, sizeof(msg));
	if (rc < 0)
		return rc;
	rc = rep->n_status == 1 ? rep->status[0] : -EPROTO;
	wire_msg_free(&rep->base);
	return rc;
}

/* A transfer that must be refused with one of the given codes. */
static void xfer_refused(const char *what, Pool__XferOp *op, int want)
{
	int rc = xfer(op);

	verdict(what, rc == want, rc < 0 ? strerror(-rc) : "it succeeded");
}

static Pool__XferOp op_region(unsigned kind, uint64_t region, uint64_t off, uint64_t len,
			      uint32_t window, uint64_t win_off)
{
	Pool__XferOp op = POOL__XFER_OP__INIT;

	op.op = kind;
	op.has_region = 1;
	op.region = region;
	op.off = off;
	op.len = len;
	op.has_window = op.has_win_off = window != 0;
	op.window = window;
	op.win_off = win_off;
	return op;
}

static int region_call(uint16_t type, const char *name, unsigned access, Pool__RegionReply **ret)
{
	Pool__RegionName req = POOL__REGION_NAME__INIT;
	char msg[256];

	req.name = (char *)name;
	req.has_access = access != 0;
	req.access = access;
	return wire_client_call(wc, type, &req.base, WIRE_REGION_REPLY, (ProtobufCMessage **)ret,
				msg, sizeof(msg));
}

/* A region's memory file (RegionFd), with its reply; -errno. */
static int region_fd(uint64_t region, Pool__RegionFdReply **ret, int *ret_fd, char *msg,
		     size_t msglen)
{
	Pool__RegionFd req = POOL__REGION_FD__INIT;

	req.region = region;
	*ret_fd = -1;
	return wire_client_call_fd(wc, WIRE_REGION_FD, &req.base, WIRE_REGION_FD_REPLY,
				   (ProtobufCMessage **)ret, ret_fd, msg, msglen);
}

/* A region's memory file the session holds no grant of: refused with -EPERM. */
static void region_fd_refused(const char *what, uint64_t region)
{
	Pool__RegionFdReply *rep;
	char msg[256];
	int fd, rc = region_fd(region, &rep, &fd, msg, sizeof(msg));

	if (rc == 0)
		wire_msg_free(&rep->base);
	if (fd >= 0)
		close(fd);
	verdict(what, rc == -EPERM, msg);
}

/* The public region's memory file, granted read-only: exactly the region, and only to read. */
static void region_file_attacks(const Pool__RegionReply *pub, const void *window)
{
	Pool__RegionFdReply *rep;
	char msg[256];
	struct stat st;
	void *map;
	int fd, rc;

	rc = region_fd(pub->region->id, &rep, &fd, msg, sizeof(msg));
	if (rc == -EREMOTE) {
		verdict("the memory file of a region on another node", 1, msg);
		return;
	}
	if (rc < 0 || fd < 0) {
		printf("FAILED: the memory file of the public region it opened (%s)\n", msg);
		failures++;
		return;
	}
	verdict("a memory file that holds more than the region",
		fstat(fd, &st) == 0 && (uint64_t)st.st_size == rep->offset + rep->len &&
		    rep->len >= pub->region->size && rep->len < pub->region->size + (2 << 20),
		"its size is the region's extent");
	verdict("a writable file of a region it may only read", !rep->write, "read-only");
	map = mmap(NULL, pub->region->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)rep->offset);
	verdict("mapping it writable", map == MAP_FAILED, strerror(errno));
	if (map != MAP_FAILED)
		munmap(map, pub->region->size);
	rc = ftruncate(fd, 0);
	verdict("truncating it", rc < 0, strerror(errno));
	rc = fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
	verdict("sealing it", rc < 0, strerror(errno));
	map = mmap(NULL, pub->region->size, PROT_READ, MAP_SHARED, fd, (off_t)rep->offset);
	if (map == MAP_FAILED) {
		printf("FAILED: mapping the public region read-only (%s)\n", strerror(errno));
		failures++;
	} else {
		rc = memcmp(map, window, 4096);
		printf("%s: mapping the public region read-only shows what a carried read does\n",
		       rc == 0 ? "allowed" : "FAILED");
		failures += rc != 0;
		rc = mprotect(map, 4096, PROT_READ | PROT_WRITE);
		verdict("making the read-only mapping writable", rc < 0, strerror(errno));
		munmap(map, pub->region->size);
	}
	wire_msg_free(&rep->base);
	close(fd);
}

/* --keep: a mapping kept past the grant holds nothing once the memory is lent again. */
static int keep_mapping(const char *name)
{
	Pool__RegionName close_req = POOL__REGION_NAME__INIT;
	Pool__RegionFdReply *rep;
	Pool__RegionReply *r;
	Pool__Ok *ok;
	char msg[256], line[16];
	uint64_t size, nonzero = 0, i;
	const unsigned char *map;
	int fd, rc;

	if (region_call(WIRE_REGION_OPEN, name, 4, &r) < 0) {
		fprintf(stderr, "pool-hostile: open %s failed\n", name);
		return 2;
	}
	rc = region_fd(r->region->id, &rep, &fd, msg, sizeof(msg));
	if (rc < 0 || fd < 0) {
		fprintf(stderr, "pool-hostile: the memory file of %s: %s\n", name, msg);
		return 2;
	}
	size = r->region->size;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, (off_t)rep->offset);
	wire_msg_free(&rep->base);
	close(fd);
	if (map == MAP_FAILED) {
		perror("pool-hostile: mmap");
		return 2;
	}
	for (i = 0; i < size; i++)
		nonzero += map[i] != 0;
	close_req.name = (char *)name;
	if (wire_client_call(wc, WIRE_REGION_CLOSE, &close_req.base, WIRE_OK,
			     (ProtobufCMessage **)&ok, msg, sizeof(msg)) == 0)
		wire_msg_free(&ok->base);
	wire_msg_free(&r->base);
	printf("mapped %" PRIu64 " bytes, %" PRIu64 " not zero\n", size, nonzero);
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 2;
	for (i = 0, nonzero = 0; i < size; i++)
		nonzero += map[i] != 0;
	printf("after: %" PRIu64 " bytes of the kept mapping not zero\n", nonzero);
	return nonzero != 0;
}

/*
 * One KV operation on one key: version for commit and abort, size for a
 * reserve (held by holder); the key's status (or the call's error), and
 * the version a reserve gave.
 */
static int kv_one_at(Pool__KvOp op, const char *ns, const void *key, size_t klen, uint64_t arg,
		     const char *holder, uint64_t *ret_version, Pool__KvLocation *ret_loc)
{
	Pool__KvRequest kr = POOL__KV_REQUEST__INIT;
	ProtobufCBinaryData k = {klen, (uint8_t *)key};
	Pool__KvReply *rep;
	char msg[256];
	int rc;

	kr.op = op;
	kr.ns = (char *)ns;
	kr.keys = &k;
	kr.n_keys = 1;
	if (op == POOL__KV_OP__KV_OP_RESERVE) {
		kr.sizes = &arg;
		kr.n_sizes = 1;
	} else {
		kr.versions = &arg;
		kr.n_versions = 1;
	}
	kr.holder = (char *)holder;
	rc = wire_client_call(wc, WIRE_KV, &kr.base, WIRE_KV_REPLY, (ProtobufCMessage **)&rep, msg,
			      sizeof(msg));
	if (rc < 0) {
		printf("  (%s)\n", msg);
		return rc;
	}
	rc = rep->n_locations == 1 ? rep->locations[0]->status : -EPROTO;
	if (ret_version != NULL)
		*ret_version = rep->n_locations == 1 ? rep->locations[0]->version : 0;
	if (ret_loc != NULL && rep->n_locations == 1) {
		*ret_loc = *rep->locations[0];
		ret_loc->n_copies = 0;
		ret_loc->copies = NULL;
	}
	wire_msg_free(&rep->base);
	return rc;
}

static int kv_one(Pool__KvOp op, const char *ns, const void *key, size_t klen, uint64_t arg,
		  const char *holder, uint64_t *ret_version)
{
	return kv_one_at(op, ns, key, klen, arg, holder, ret_version, NULL);
}

/* --steal: another session's reservation can be neither published nor freed. */
static int steal_reservation(const char *ns, const char *key)
{
	static const Pool__KvOp ops[] = {POOL__KV_OP__KV_OP_COMMIT, POOL__KV_OP__KV_OP_ABORT};
	unsigned taken = 0, refused = 0, other = 0;
	uint64_t version;

	for (version = 1; version <= 10000; version++)
		for (size_t i = 0; i < 2; i++) {
			int rc = kv_one(ops[i], ns, key, strlen(key), version, NULL, NULL);

			taken += rc == 0;
			refused += rc == -EPERM;
			other += rc != 0 && rc != -EPERM;
		}
	printf("steal: %u taken, %u refused as another session's, %u not found\n", taken, refused,
	       other);
	return (int)taken;
}

/* --poison: a page planted under another uid's key is refused. */
static int poison_page(const char *holder)
{
	uint8_t key[16];
	uint64_t version = 0;
	uid_t me = geteuid();
	int rc;

	memset(key, 0xab, sizeof(key));
	key[0] = key[1] = key[2] = key[3] = 0; /* root's */
	rc = kv_one(POOL__KV_OP__KV_OP_RESERVE, "snap.pages", key, sizeof(key), 4096, holder,
		    &version);
	verdict("storing a page under a key of root's", rc == -EPERM, strerror(-rc));
	key[0] = (uint8_t)(me >> 24);
	key[1] = (uint8_t)(me >> 16);
	key[2] = (uint8_t)(me >> 8);
	key[3] = (uint8_t)me;
	rc = kv_one(POOL__KV_OP__KV_OP_RESERVE, "snap.pages", key, sizeof(key), 4096, holder,
		    &version);
	printf("%s: storing a page under a key of its own (%s)\n", rc == 0 ? "allowed" : "FAILED",
	       rc == 0 ? "reserved" : strerror(-rc));
	failures += rc != 0;
	if (rc == 0)
		kv_one(POOL__KV_OP__KV_OP_ABORT, "snap.pages", key, sizeof(key), version, NULL,
		       NULL);
	return failures;
}

/* Reserve key in snap.shared, write page there (carried), commit: the commit's status. */
static int shared_put(const char *holder, const uint8_t *key, const uint8_t *page)
{
	Pool__XferWindow wreq = POOL__XFER_WINDOW__INIT;
	Pool__XferOp op = POOL__XFER_OP__INIT;
	Pool__XferWindowReply *win;
	Pool__KvLocation loc;
	uint64_t version = 0;
	char msg[256];
	void *map;
	int fd = -1, rc;

	rc = kv_one_at(POOL__KV_OP__KV_OP_RESERVE, "snap.shared", key, 16, 4096, holder, &version,
		       &loc);
	if (rc < 0)
		return rc;
	wreq.size = 64 << 10;
	rc = wire_client_call_fd(wc, WIRE_XFER_WINDOW, &wreq.base, WIRE_XFER_WINDOW_REPLY,
				 (ProtobufCMessage **)&win, &fd, msg, sizeof(msg));
	if (rc < 0 || fd < 0)
		return rc < 0 ? rc : -EIO;
	map = mmap(NULL, win->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	memcpy(map, page, 4096);
	op.op = 2; /* write */
	op.has_node = op.has_arena = op.has_window = op.has_win_off = 1;
	op.node = loc.node;
	op.arena = loc.arena;
	op.off = loc.off;
	op.len = 4096;
	op.window = win->window;
	rc = xfer(&op);
	if (rc == 0)
		rc = kv_one(POOL__KV_OP__KV_OP_COMMIT, "snap.shared", key, 16, version, holder,
			    NULL);
	munmap(map, win->size);
out:
	close(fd);
	wire_msg_free(&win->base);
	return rc;
}

static int hex_key(const char *hex, uint8_t key[16])
{
	unsigned b;

	for (size_t i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		key[i] = (uint8_t)b;
	}
	return 0;
}

/* --squat-shared: hold a reservation of a shared key, and never commit. */
static int squat_shared(const char *holder, const char *hexkey)
{
	uint8_t key[16];
	uint64_t version;
	char line[8];
	int rc;

	if (hex_key(hexkey, key) < 0)
		return 2;
	rc = kv_one(POOL__KV_OP__KV_OP_RESERVE, "snap.shared", key, sizeof(key), 4096, holder,
		    &version);
	printf("%s\n", rc == 0 ? "reserved" : strerror(-rc));
	fflush(stdout);
	while (rc == 0 && fgets(line, sizeof(line), stdin) != NULL)
		;
	return rc != 0;
}

/* --poison-shared: bytes that are not their key's never become the shared page. */
static int poison_shared(const char *holder, const char *hexkey)
{
	uint8_t key[16], page[4096], own[16];
	int rc;

	if (hex_key(hexkey, key) < 0)
		return 2;
	memset(page, 0x66, sizeof(page));
	rc = shared_put(holder, key, page);
	verdict("planting other bytes under the shared key of root's next page", rc == -EBADMSG,
		rc < 0 ? strerror(-rc) : "committed");
	if (page_key_shared(page, sizeof(page), own) < 0)
		return 2;
	rc = shared_put(holder, own, page);
	printf("%s: storing a page under its own SHA-256 key (%s)\n",
	       rc == 0 ? "allowed" : "FAILED", rc == 0 ? "committed" : strerror(-rc));
	failures += rc != 0;
	return failures;
}

/*
 * A shard hand-over, a backup copy of key "stolen" of ns and a RESP SET,
 * asked as a client: refused.
 */
static int node_calls(const char *ns)
{
	static uint8_t all[128], value[64];
	Pool__KvHandoverRequest ho = POOL__KV_HANDOVER_REQUEST__INIT;
	Pool__KvBackup bk = POOL__KV_BACKUP__INIT;
	Pool__KvHandoverEntry e = POOL__KV_HANDOVER_ENTRY__INIT, *ep = &e;
	ProtobufCBinaryData removed = {4, (uint8_t *)"a100"};

	memset(all, 0xff, sizeof(all));
	memset(value, 'x', sizeof(value));
	ho.shards = (ProtobufCBinaryData){sizeof(all), all};
	must_fail("a KV shard hand-over asked on the control socket", WIRE_KV_HANDOVER, &ho.base,
		  WIRE_KV_HANDOVER_REPLY);
	e.key = (ProtobufCBinaryData){6, (uint8_t *)"stolen"};
	e.value = (ProtobufCBinaryData){sizeof(value), value};
	e.size = sizeof(value);
	bk.ns = (char *)ns;
	bk.entries = &ep;
	bk.n_entries = 1;
	bk.removed = &removed;
	bk.n_removed = 1;
	must_fail("a KV backup copy sent on the control socket", WIRE_KV_BACKUP, &bk.base, WIRE_OK);
	{
		ProtobufCBinaryData set[] = {
		    {3, (uint8_t *)"SET"}, {6, (uint8_t *)"stolen"}, {1, (uint8_t *)"x"}};
		Pool__RespCommand rc = POOL__RESP_COMMAND__INIT;

		rc.argv = set;
		rc.n_argv = 3;
		rc.proto = 2;
		must_fail("a RESP command of another node's client sent on the control socket",
			  WIRE_RESP_COMMAND, &rc.base, WIRE_RESP_REPLY);
	}
	{
		Pool__KvDemand dm = POOL__KV_DEMAND__INIT;
		Pool__KvDemandUse use = POOL__KV_DEMAND_USE__INIT, *up = &use;

		use.ns = (char *)ns;
		use.used = UINT64_C(1) << 40; /* (held back 1 ms: the highest rate) */
		use.age_ms = 1;
		use.has_evicted = use.evicted = 1;
		dm.uses = &up;
		dm.n_uses = 1;
		must_fail("a report of a namespace's use to its keeper sent on the control socket",
			  WIRE_KV_DEMAND, &dm.base, WIRE_KV_DEMAND_REPLY);
	}
	{
		Pool__KvPart kp = POOL__KV_PART__INIT;
		Pool__KvPartOf of = POOL__KV_PART_OF__INIT, *op = &of;

		of.ns = (char *)ns;
		of.part = 1;
		kp.parts = &op;
		kp.n_parts = 1;
		must_fail("a keeper's part of a namespace sent on the control socket", WIRE_KV_PART,
			  &kp.base, WIRE_OK);
	}
	return failures;
}

int main(int argc, char **argv)
{
	Pool__NodesRequest nr = POOL__NODES_REQUEST__INIT;
	Pool__XferWindow wreq = POOL__XFER_WINDOW__INIT;
	Pool__ArenaFd af = POOL__ARENA_FD__INIT;
	Pool__NodesReply *nodes;
	Pool__XferWindowReply *win;
	Pool__RegionReply *pub, *priv;
	Pool__XferOp op, *many[4097];
	Pool__Xfer big = POOL__XFER__INIT;
	Pool__RegionName close_req = POOL__REGION_NAME__INIT;
	Pool__Ok *ok;
	char msg[256];
	size_t i, k, leaks = 0;
	uint64_t pub_size;
	void *map;
	int fd = -1, rc;

	if (argc != 4 && !(argc == 5 && (strcmp(argv[2], "--steal") == 0 ||
					 strcmp(argv[2], "--poison-shared") == 0 ||
					 strcmp(argv[2], "--squat-shared") == 0))) {
		fprintf(stderr, "usage: pool-hostile SOCKET PUBLIC PRIVATE\n"
				"       pool-hostile SOCKET --keep REGION\n"
				"       pool-hostile SOCKET --steal NS KEY\n"
				"       pool-hostile SOCKET --poison HOLDER\n"
				"       pool-hostile SOCKET --poison-shared HOLDER HEXKEY\n"
				"       pool-hostile SOCKET --squat-shared HOLDER HEXKEY\n"
				"       pool-hostile SOCKET --node-calls NS\n");
		return 2;
	}
	rc = wire_client_connect(argv[1], "hostile", 10000, &wc, msg, sizeof(msg));
	if (rc < 0) {
		fprintf(stderr, "pool-hostile: connect: %s\n", msg);
		return 2;
	}
	if (strcmp(argv[2], "--keep") == 0)
		return keep_mapping(argv[3]);
	if (strcmp(argv[2], "--steal") == 0)
		return steal_reservation(argv[3], argv[4]);
	if (strcmp(argv[2], "--poison") == 0)
		return poison_page(argv[3]);
	if (strcmp(argv[2], "--poison-shared") == 0)
		return poison_shared(argv[3], argv[4]);
	if (strcmp(argv[2], "--squat-shared") == 0)
		return squat_shared(argv[3], argv[4]);
	if (strcmp(argv[2], "--node-calls") == 0)
		return node_calls(argv[3]);

	/* What poold publishes names no worker and holds no key. */
	rc = wire_client_call(wc, WIRE_NODES, &nr.base, WIRE_NODES_REPLY,
			      (ProtobufCMessage **)&nodes, msg, sizeof(msg));
	if (rc < 0) {
		fprintf(stderr, "pool-hostile: nodes: %s\n", msg);
		return 2;
	}
	for (i = 0; i < nodes->n_members; i++) {
		const Pool__NodeInfo *n = nodes->members[i]->node;

		leaks += n->worker_addr.len + n->probe_rkey.len + n->probe_addr;
		for (k = 0; k < n->n_arenas; k++)
			leaks += n->arenas[k]->rkey.len + n->arenas[k]->addr;
	}
	verdict("the node list gives worker addresses, keys or remote addresses", leaks == 0,
		"none in it");
	wire_msg_free(&nodes->base);

	/* What only admins may do to the KV cache, checked by the permission table. */
	{
		static const Pool__KvNsOp ns_ops[] = {POOL__KV_NS_OP__KV_NS_OP_CREATE,
						      POOL__KV_NS_OP__KV_NS_OP_DROP,
						      POOL__KV_NS_OP__KV_NS_OP_FLUSH};
		static const Pool__KvOp kv_ops[] = {POOL__KV_OP__KV_OP_ADOPT,
						    POOL__KV_OP__KV_OP_ADOPTED,
						    POOL__KV_OP__KV_OP_RECOUNT};
		char name[WIRE_ENUM_NAME_MAX];
		Pool__KvNsRequest ns = POOL__KV_NS_REQUEST__INIT;
		Pool__KvRequest kv = POOL__KV_REQUEST__INIT;
		char what[64];

		ns.name = kv.ns = (char *)"hostile";
		for (i = 0; i < 3; i++) {
			ns.op = ns_ops[i];
			snprintf(
			    what, sizeof(what), "KV namespace %s",
			    wire_enum_name(&pool__kv_ns_op__descriptor, ns.op, name, sizeof(name)));
			must_fail(what, WIRE_KV_NS, &ns.base, WIRE_KV_NS_REPLY);
			kv.op = kv_ops[i];
			snprintf(
			    what, sizeof(what), "KV %s",
			    wire_enum_name(&pool__kv_op__descriptor, kv.op, name, sizeof(name)));
			must_fail(what, WIRE_KV, &kv.base, WIRE_KV_REPLY);
		}
		/* An operation the protocol does not name is a malformed message. */
		kv.op = (Pool__KvOp)99;
		must_fail("a KV operation numbered 99", WIRE_KV, &kv.base, WIRE_KV_REPLY);
		ns.op = (Pool__KvNsOp)0;
		must_fail("a KV namespace operation numbered 0", WIRE_KV_NS, &ns.base,
			  WIRE_KV_NS_REPLY);
	}

	/* A local arena's memfd is not for tenants. */
	af.arena = 0;
	must_fail("the memfd of arena 0", WIRE_ARENA_FD, &af.base, WIRE_OK); /* root only */

	/* A window: sealed, so the tenant cannot make poold's mapping fault. */
	wreq.size = 1 << 20;
	rc = wire_client_call_fd(wc, WIRE_XFER_WINDOW, &wreq.base, WIRE_XFER_WINDOW_REPLY,
				 (ProtobufCMessage **)&win, &fd, msg, sizeof(msg));
	if (rc < 0 || fd < 0) {
		fprintf(stderr, "pool-hostile: window: %s\n", msg);
		return 2;
	}
	rc = ftruncate(fd, 0);
	verdict("shrinking the window under poold", rc < 0, strerror(errno));
	rc = ftruncate(fd, 2 << 20);
	verdict("growing the window", rc < 0, strerror(errno));
	/* Windows are bounded per session: 16 in all, 1 GiB each at most. */
	for (i = 1, k = 0; i < 17; i++) {
		Pool__XferWindowReply *more;
		int mfd = -1;

		wreq.size = 64 << 10;
		if (wire_client_call_fd(wc, WIRE_XFER_WINDOW, &wreq.base, WIRE_XFER_WINDOW_REPLY,
					(ProtobufCMessage **)&more, &mfd, msg, sizeof(msg)) == 0) {
			wire_msg_free(&more->base);
			k++;
		}
		if (mfd >= 0)
			close(mfd);
	}
	verdict("a 17th window", k == 15,
		k == 15 ? "15 more given, the 17th refused" : "more given");
	wreq.size = 2ull << 30;
	must_fail("a 2 GiB window", WIRE_XFER_WINDOW, &wreq.base, WIRE_XFER_WINDOW_REPLY);
	wreq.size = 0;
	wreq.has_window = 1;
	wreq.window = win->window + 1000;
	must_fail("closing a window that is not its own", WIRE_XFER_WINDOW, &wreq.base, WIRE_OK);
	map = mmap(NULL, win->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("pool-hostile: mmap window");
		return 2;
	}

	/* The private region: known by name and id, granted nothing. */
	rc = region_call(WIRE_REGION_STAT, argv[3], 0, &priv);
	if (rc < 0) {
		fprintf(stderr, "pool-hostile: stat %s failed\n", argv[3]);
		return 2;
	}
	verdict("the private region's extents through stat", priv->region->n_extents == 0,
		"none shown");
	op = op_region(1, priv->region->id, 0, 4096, win->window, 0);
	xfer_refused("reading the private region by id", &op, -EPERM);
	op = op_region(2, priv->region->id, 0, 4096, win->window, 0);
	xfer_refused("writing the private region by id", &op, -EPERM);
	op = op_region(3, priv->region->id, 0, 0, 0, 0);
	op.has_a = 1;
	op.a = 1;
	xfer_refused("an atomic on the private region", &op, -EPERM);
	region_fd_refused("the memory file of the private region", priv->region->id);
	close_req.name = argv[3];
	must_fail("opening the private region", WIRE_REGION_OPEN, &close_req.base,
		  WIRE_REGION_REPLY);
	must_fail("keeping another uid's region", WIRE_REGION_KEEP, &close_req.base, WIRE_OK);
	close_req.name = argv[2];
	must_fail("keeping another uid's region it may read", WIRE_REGION_KEEP, &close_req.base,
		  WIRE_OK);
	close_req.name = argv[3];

	/* The public region, opened for reading: no writes, nothing past its end. */
	rc = region_call(WIRE_REGION_OPEN, argv[2], 4, &pub);
	if (rc < 0) {
		fprintf(stderr, "pool-hostile: open %s failed\n", argv[2]);
		return 2;
	}
	pub_size = pub->region->size;
	op = op_region(1, pub->region->id, 0, 4096, win->window, 0);
	rc = xfer(&op);
	printf("%s: reading the public region it opened (%s)\n", rc == 0 ? "allowed" : "FAILED",
	       rc == 0 ? "granted" : strerror(-rc));
	failures += rc != 0;
	region_file_attacks(pub, map);
	op = op_region(2, pub->region->id, 0, 4096, win->window, 0);
	xfer_refused("writing the region it may only read", &op, -EACCES);
	op = op_region(1, pub->region->id, pub_size - 8, 16, win->window, 0);
	xfer_refused("reading past the region's end", &op, -ERANGE);
	op = op_region(1, pub->region->id, UINT64_MAX - 4095, 8192, win->window, 0);
	xfer_refused("an offset that wraps around", &op, -ERANGE);
	op = op_region(1, pub->region->id, 0, 4096, win->window + 1000, 0);
	xfer_refused("a window that is not its own", &op, -EBADF);
	op = op_region(1, pub->region->id, 0, 4096, win->window, win->size - 100);
	xfer_refused("past the end of its window", &op, -ERANGE);
	op = op_region(1, pub->region->id, 0, 4096, 0, 0);
	xfer_refused("no window at all", &op, -EBADF);

	/* KV places and raw arena offsets it was never given. */
	op = (Pool__XferOp)POOL__XFER_OP__INIT;
	op.op = 1;
	op.has_node = op.has_arena = op.has_window = op.has_win_off = 1;
	op.node = wire_client_node_id(wc);
	op.len = 8;
	op.window = win->window;
	xfer_refused("reading arena 0 at offset 0 as a KV place", &op, -EPERM);
	op.op = 2;
	xfer_refused("writing arena 0 at offset 0 as a KV place", &op, -EPERM);

	/* Too many ops in one request: an error reply, the connection stays. */
	for (i = 0; i < 4097; i++) {
		static Pool__XferOp same;

		same = op_region(1, pub->region->id, 0, 8, win->window, 0);
		many[i] = &same;
	}
	big.ops = many;
	big.n_ops = 4097;
	must_fail("4097 ops in one request", WIRE_XFER, &big.base, WIRE_XFER_REPLY);

	/* Closed: the grant is gone with its lease. */
	close_req.name = argv[2];
	rc = wire_client_call(wc, WIRE_REGION_CLOSE, &close_req.base, WIRE_OK,
			      (ProtobufCMessage **)&ok, msg, sizeof(msg));
	if (rc == 0)
		wire_msg_free(&ok->base);
	op = op_region(1, pub->region->id, 0, 4096, win->window, 0);
	xfer_refused("reading the public region after closing it", &op, -EPERM);
	region_fd_refused("the public region's memory file after closing it", pub->region->id);

	wire_msg_free(&pub->base);
	wire_msg_free(&priv->base);
	wire_msg_free(&win->base);
	munmap(map, 1 << 20);
	close(fd);
	wire_client_close(wc);
	printf("%d attack(s) not refused\n", failures);
	return failures;
}

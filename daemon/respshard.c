/*
 * daemon/respshard.c - the RESP endpoint over sharded databases
 * (resp.placement = sharded): every node's endpoint runs commands itself,
 * and each key is served by the owner of its shard, as libpool's KV
 * requests are (kvroute.c), never by the coordinator.
 *
 * A command whose keys are all in shards this node owns runs here, on its
 * own index, with memory copies only. One whose keys are all another
 * owner's is sent whole to that owner, as a call on the link between the
 * two poolds (RespCommand), run there as the client's user, and its reply's
 * bytes come back as they are. MGET, MSET, DEL, UNLINK and EXISTS whose
 * keys have several owners are split by owner, the parts in flight
 * together, and their replies merged (MGET's values back in the keys'
 * order). DBSIZE, FLUSHDB, FLUSHALL and KEYS go to every owner; SCAN walks
 * the owners one after the other, its cursor naming the owner (low 16 bits)
 * and the owner's own cursor. Any other command whose keys have several
 * owners, MSETNX and a transaction among them, gets Redis Cluster's
 * CROSSSLOT error: its atomicity would need a lock across nodes. A
 * transaction whose keys are all one owner's runs there, in one turn of
 * its loop, as EXEC runs here.
 *
 * A key whose shard is moving (its owner changed, or its keys are on their
 * way) is asked again every RESP_SHARD_RETRY_MS for a heartbeat window,
 * the client waiting; after that it gets TRYAGAIN. A database is made on
 * first use by the coordinator (asked on this node's link to it), sharded,
 * and every node learns it from the namespaces' definitions.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/kvint.h"
#include "daemon/kvshard.h"
#include "daemon/resp.h"
#include "fabric/fabric.h"

#define RESP_SHARD_RETRY_MS 20
#define RESP_SHARD_REPLY_MAX (FAB_LINK_CALL_MAX - 2) /* a call's answer, at most */
#define RESP_SHARD_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"
#define RESP_SCAN_OWNER_BITS 16

/* How the replies of a command's parts make its reply. */
enum resp_merge {
	MERGE_WHOLE,  /* one part: its reply as it is */
	MERGE_VALUES, /* MGET: each part's array of values, back in the keys' order */
	MERGE_SUM,    /* integers added up (DEL, UNLINK, EXISTS, DBSIZE) */
	MERGE_OK,     /* +OK when every part said so (MSET, FLUSHDB, FLUSHALL) */
	MERGE_ARRAY,  /* the parts' arrays one after the other (KEYS) */
	MERGE_SCAN,   /* one owner's SCAN, its cursor made the cluster's */
	MERGE_NONE,   /* not split: CROSSSLOT */
};

struct resp_fwd;

/* The keys of one owner, and its reply. */
struct resp_fwd_part {
	struct resp_fwd *fw;
	uint32_t node;
	long argc;
	long *arg; /* each argument's place in the command (argv[0]: the name) */
	uint8_t *reply;
	size_t len;
	int status; /* -errno: it failed */
};

/* A command sent to its keys' owners, until every part answered. */
struct resp_fwd {
	struct resp_conn *c; /* NULL once the client went: the answers are dropped */
	enum resp_merge merge;
	size_t nparts, pending;
	uint64_t scan_owner; /* MERGE_SCAN: the owner's place among the map's owners */
	struct resp_fwd_part parts[];
};

/* Commands (or parts) sent to other owners, and served for other nodes' clients. */
static uint64_t resp_shard_sent, resp_shard_served;

void resp_shard_stats(uint64_t *to_owners, uint64_t *from_nodes)
{
	*to_owners = resp_shard_sent;
	*from_nodes = resp_shard_served;
}

bool resp_sharded(const struct poold *pd)
{
	return pd->conf->resp_placement == RESP_PLACE_SHARDED;
}

/*
 * The arguments of cmd that are keys: from first to last (a negative last
 * counts from the end), every step; first 0: it has none, and goes to
 * every owner.
 */
static void resp_shard_keys(const char *name, long argc, long *first, long *last, long *step)
{
	static const char *const none[] = {"dbsize", "flushall", "flushdb", "keys", "scan"};
	size_t i;

	*first = *last = *step = 1;
	for (i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (strcasecmp(name, none[i]) == 0) {
			*first = 0;
			return;
		}
	if (strcasecmp(name, "mget") == 0 || strcasecmp(name, "del") == 0 ||
	    strcasecmp(name, "unlink") == 0 || strcasecmp(name, "exists") == 0)
		*last = argc - 1;
	else if (strcasecmp(name, "mset") == 0 || strcasecmp(name, "msetnx") == 0)
		*last = argc - 2, *step = 2;
}

/* How a command whose keys have several owners (or none) is put together. */
static enum resp_merge resp_shard_merge(const char *name)
{
	static const struct {
		const char *name;
		enum resp_merge merge;
	} how[] = {
	    {"dbsize", MERGE_SUM},  {"del", MERGE_SUM},	   {"exists", MERGE_SUM},
	    {"flushall", MERGE_OK}, {"flushdb", MERGE_OK}, {"keys", MERGE_ARRAY},
	    {"mget", MERGE_VALUES}, {"mset", MERGE_OK},	   {"scan", MERGE_SCAN},
	    {"unlink", MERGE_SUM},
	};
	size_t i;

	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++)
		if (strcasecmp(name, how[i].name) == 0)
			return how[i].merge;
	return MERGE_NONE;
}

static void resp_fwd_free(struct resp_fwd *fw)
{
	size_t i;

	for (i = 0; i < fw->nparts; i++) {
		free(fw->parts[i].arg);
		free(fw->parts[i].reply);
	}
	free(fw);
}

/* ------------------------------------------------------------ the owner's side */

/*
 * Whether the keys of a command of name (argc arguments) are all in
 * shards of ns this node serves now: 0, or -ESTALE (not its own) or
 * -EAGAIN (moving here).
 */
static int resp_shard_serves(struct poold *pd, const struct kv_ns *ns, long argc, char **argv,
			     const size_t *argl)
{
	long first, last, step, i;
	int rc;

	resp_shard_keys(argv[0], argc, &first, &last, &step);
	for (i = first; first > 0 && i <= last && i < argc; i += step)
		if ((rc = kvowner_serves(pd, ns, argv[i], argl[i])) < 0)
			return rc;
	return 0;
}

/* The commands of m, each argument a string of its own (as the parser's); -errno. */
static int resp_shard_unpack(const Pool__RespCommand *m, struct resp_queued **ret, size_t *ret_n)
{
	size_t n = m->exec ? m->n_argc : 1, i, k, at = 0;
	struct resp_queued *qs = calloc(n ? n : 1, sizeof(*qs));

	*ret = qs;
	*ret_n = 0;
	if (qs == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct resp_queued *q = &qs[i];
		size_t argc = m->exec ? m->argc[i] : m->n_argv;

		if (argc == 0 || argc > m->n_argv - at || argc > RESP_MAX_ARGS)
			return -EINVAL;
		q->argv = calloc(argc, sizeof(*q->argv));
		q->argl = calloc(argc, sizeof(*q->argl));
		*ret_n = i + 1;
		if (q->argv == NULL || q->argl == NULL)
			return -ENOMEM;
		for (k = 0; k < argc; k++, at++) {
			const ProtobufCBinaryData *a = &m->argv[at];

			if ((q->argv[k] = malloc(a->len + 1)) == NULL)
				return -ENOMEM;
			q->argc = (long)k + 1;
			memcpy(q->argv[k], a->data, a->len);
			q->argv[k][a->len] = '\0';
			q->argl[k] = a->len;
			q->bytes += a->len;
		}
	}
	return at == m->n_argv ? 0 : -EINVAL;
}

/*
 * Run m, a command (or a transaction's, with exec) of a client of another
 * node's endpoint, uid, on this node's shards: its reply in *ret (to free).
 * 0; -ESTALE or -EAGAIN when a key's shard is not served here now; another
 * -errno, said in err, when it cannot run.
 */
static int resp_shard_run(struct poold *pd, uid_t uid, const Pool__RespCommand *m, uint8_t **ret,
			  size_t *ret_len, char *err, size_t errlen)
{
	struct resp rs_here = {.pd = pd};
	struct resp_conn t = {.rs = pd->resp != NULL ? pd->resp : &rs_here};
	static uint64_t sessions; /* (numbered apart from the endpoint's connections) */
	struct resp_queued *qs;
	const struct resp_cmd *cmd;
	const struct kv_ns *ns;
	char name[32];
	size_t n, i;
	int rc;

	*ret = NULL;
	*ret_len = 0;
	t.db = (int)m->db;
	t.proto = m->proto == 3 ? 3 : 2;
	t.uid = uid;
	t.authed = true;
	LIST_INIT(&t.remote);
	rc = resp_shard_unpack(m, &qs, &n);
	for (i = 0; rc == 0 && i < n; i++) {
		cmd = resp_cmd_find(qs[i].argv[0]);
		if (cmd == NULL || !(cmd->flags & RESP_CMD_KEYS) ||
		    (cmd->arity > 0 && qs[i].argc != cmd->arity) ||
		    (cmd->arity < 0 && qs[i].argc < -cmd->arity))
			rc = -EINVAL;
	}
	if (rc == 0 && m->db >= RESP_DBS)
		rc = -EINVAL;
	if (rc < 0) {
		snprintf(err, errlen, "a RESP command that is not one of a sharded database");
		goto out;
	}
	resp_db_name(&t, t.db, name, sizeof(name));
	ns = pd->kv != NULL ? kv_ns_find(pd, name) : NULL;
	if (ns == NULL || !(ns->flags & HOLD_NS_SHARDED)) {
		rc = ns == NULL ? -EAGAIN : -EINVAL; /* (its definition is on its way) */
		snprintf(err, errlen, "no sharded database '%s' here", name);
		goto out;
	}
	for (i = 0; i < n; i++)
		if ((rc = resp_shard_serves(pd, ns, qs[i].argc, qs[i].argv, qs[i].argl)) < 0) {
			snprintf(err, errlen, "a key's shard of '%s' is not served here now", name);
			goto out;
		}
	if ((t.out = evbuffer_new()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	t.session = (UINT64_C(3) << 61) | ++sessions;
	if (m->exec) { /* (EXEC frees the queue) */
		static char exec[] = "exec";
		char *argv[] = {exec};
		size_t argl[] = {4};

		t.queued = qs;
		t.nqueued = n;
		t.multi = true;
		qs = NULL;
		n = 0;
		resp_cmd_run(&t, resp_cmd_find("exec"), 1, argv, argl);
	} else {
		resp_cmd_run(&t, resp_cmd_find(qs[0].argv[0]), qs[0].argc, qs[0].argv, qs[0].argl);
	}
	*ret_len = evbuffer_get_length(t.out);
	if (t.overflow != NULL || *ret_len > RESP_SHARD_REPLY_MAX) {
		evbuffer_drain(t.out, *ret_len);
		evbuffer_add_printf(t.out, "-ERR the reply would pass %s\r\n",
				    t.overflow != NULL ? t.overflow
						       : "4M, the most a node sends another");
		*ret_len = evbuffer_get_length(t.out);
	}
	/* Copied out before the pins of values sent by reference go with the session. */
	*ret = malloc(*ret_len ? *ret_len : 1);
	if (*ret == NULL)
		rc = -ENOMEM;
	else
		evbuffer_remove(t.out, *ret, *ret_len);
	resp_remote_end(&t);
	evbuffer_free(t.out);
out:
	for (i = 0; i < n; i++)
		resp_args_free(&qs[i]);
	free(qs);
	return rc;
}

/* A command of a client of another node's endpoint (WIRE_RESP_COMMAND), asked on the link. */
static int resp_shard_request(struct req *r, const ProtobufCMessage *msg)
{
	Pool__RespReply rep = POOL__RESP_REPLY__INIT;
	uint8_t *bytes;
	size_t len;
	char err[160];
	int rc;

	if (r->answer == NULL) /* (a client of this poold's control socket) */
		return req_errorf(r, -EPERM, "RESP commands are asked only by other nodes");
	if (!resp_sharded(r->pd))
		return req_errorf(r, -EOPNOTSUPP, "this node's RESP databases are not sharded");
	resp_shard_served++;
	rc = resp_shard_run(r->pd, r->uid, (const Pool__RespCommand *)msg, &bytes, &len, err,
			    sizeof(err));
	if (rc < 0)
		return req_errorf(r, rc, "%s", err);
	rep.reply = (ProtobufCBinaryData){len, bytes};
	rc = req_reply(r, WIRE_RESP_REPLY, &rep.base);
	free(bytes);
	return rc;
}

const struct ctl_handler respshard_handlers[] = {
    {WIRE_RESP_COMMAND, CTL_ADMIN, AT_HERE, resp_shard_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/* ------------------------------------------------------------ the client's side */

/* A part's reply is in: once all are, the command runs again and takes them. */
static void resp_fwd_answered(struct resp_fwd *fw)
{
	if (--fw->pending > 0)
		return;
	if (fw->c == NULL) {
		resp_fwd_free(fw);
		return;
	}
	resp_resume(fw->c);
}

static void resp_shard_answer(struct poold *pd, void *arg, int status, uint16_t type,
			      const uint8_t *bytes, size_t len)
{
	struct resp_fwd_part *p = arg;
	Pool__RespReply *rep;

	(void)pd;
	p->status =
	    nodecall_reply(status, type, bytes, len, WIRE_RESP_REPLY, (ProtobufCMessage **)&rep);
	if (p->status == 0) {
		p->len = rep->reply.len;
		p->reply = malloc(p->len ? p->len : 1);
		if (p->reply == NULL)
			p->status = -ENOMEM;
		else
			memcpy(p->reply, rep->reply.data, p->len);
		wire_msg_free(&rep->base);
	}
	resp_fwd_answered(p->fw);
}

/*
 * Send part p of c's command (its arguments argv, with the first key's
 * replaced by cursor for SCAN) to its owner, or serve it here at once.
 */
static void resp_fwd_send(struct resp_conn *c, struct resp_fwd_part *p, char **argv,
			  const size_t *argl, bool exec, const size_t *counts, size_t ncmds,
			  const char *cursor)
{
	struct poold *pd = c->rs->pd;
	Pool__RespCommand m = POOL__RESP_COMMAND__INIT;
	struct nodecall_as as = {
	    .uid = c->uid, .gid = (uint32_t)-1, .admin = true, .session = c->session};
	ProtobufCBinaryData *av = calloc((size_t)p->argc, sizeof(*av));
	uint32_t *ac = exec ? calloc(ncmds, sizeof(*ac)) : NULL;
	char err[160];
	long i;

	p->status = av == NULL || (exec && ac == NULL) ? -ENOMEM : 0;
	for (i = 0; p->status == 0 && i < p->argc; i++)
		av[i] = (ProtobufCBinaryData){argl[p->arg[i]], (uint8_t *)argv[p->arg[i]]};
	if (cursor != NULL && p->argc > 1)
		av[1] = (ProtobufCBinaryData){strlen(cursor), (uint8_t *)cursor};
	for (i = 0; ac != NULL && (size_t)i < ncmds; i++)
		ac[i] = (uint32_t)counts[i];
	m.db = (uint32_t)c->db;
	m.proto = (uint32_t)c->proto;
	m.argv = av;
	m.n_argv = (size_t)p->argc;
	m.argc = ac;
	m.n_argc = exec ? ncmds : 0;
	m.has_exec = m.exec = exec;
	if (p->status == 0 && p->node == pd->node_id) {
		p->status = resp_shard_run(pd, c->uid, &m, &p->reply, &p->len, err, sizeof(err));
		p->fw->pending--;
	} else if (p->status == 0) {
		resp_shard_sent++;
		p->status = nodecall_send(pd, p->node, &as, WIRE_RESP_COMMAND, &m.base,
					  RESP_SHARD_REPLY_MAX, resp_shard_answer, p);
		if (p->status < 0)
			p->fw->pending--;
	} else {
		p->fw->pending--;
	}
	free(av);
	free(ac);
}

/* The start of a reply's next element at *at: its end, or 0 when it is not a whole one. */
static size_t resp_elem_end(const uint8_t *buf, size_t len, size_t at)
{
	const uint8_t *nl = at < len ? memchr(buf + at, '\n', len - at) : NULL;
	long long n;

	if (nl == NULL)
		return 0;
	if (buf[at] != '$')
		return (size_t)(nl - buf) + 1; /* ($-1, _, :n...) one line */
	n = strtoll((const char *)buf + at + 1, NULL, 10);
	if (n < 0)
		return (size_t)(nl - buf) + 1;
	if ((size_t)(nl - buf) + 1 + (size_t)n + 2 > len)
		return 0;
	return (size_t)(nl - buf) + 1 + (size_t)n + 2;
}

/* The count of an array reply ("*n\r\n"), and where its elements begin; -1 when it is not one. */
static long long resp_array_head(const uint8_t *buf, size_t len, size_t *body)
{
	const uint8_t *nl = len > 0 && buf[0] == '*' ? memchr(buf, '\n', len) : NULL;

	if (nl == NULL)
		return -1;
	*body = (size_t)(nl - buf) + 1;
	return strtoll((const char *)buf + 1, NULL, 10);
}

/* MGET: the parts' values in the order of the command's keys. false: a part's reply is not one. */
static bool resp_merge_values(struct resp_conn *c, struct resp_fwd *fw, long nkeys)
{
	struct evbuffer *out = resp_output(c);
	size_t *from = calloc((size_t)nkeys + 1, sizeof(*from)),
	       *to = calloc((size_t)nkeys + 1, sizeof(*to));
	const uint8_t **buf = calloc((size_t)nkeys + 1, sizeof(*buf));
	size_t i, at;
	long k;
	bool whole = from != NULL && to != NULL && buf != NULL;

	for (i = 0; whole && i < fw->nparts; i++) {
		const struct resp_fwd_part *p = &fw->parts[i];

		whole = resp_array_head(p->reply, p->len, &at) == p->argc - 1;
		for (k = 1; whole && k < p->argc; k++) {
			long key = p->arg[k] - 1;

			buf[key] = p->reply;
			from[key] = at;
			whole = (at = resp_elem_end(p->reply, p->len, at)) != 0;
			to[key] = at;
		}
	}
	for (k = 0; whole && k < nkeys; k++)
		whole = buf[k] != NULL;
	if (whole) {
		resp_array(c, (size_t)nkeys);
		for (k = 0; k < nkeys; k++)
			evbuffer_add(out, buf[k] + from[k], to[k] - from[k]);
	}
	free(from);
	free(to);
	free(buf);
	return whole;
}

/* SCAN of one owner: its keys, and the cursor that goes on from there. */
static bool resp_merge_scan(struct resp_conn *c, const struct resp_fwd *fw, size_t nowners)
{
	const struct resp_fwd_part *p = &fw->parts[0];
	size_t body, at;
	unsigned long long next;
	char num[32];

	if (resp_array_head(p->reply, p->len, &body) != 2 || p->reply[body] != '$' ||
	    (at = resp_elem_end(p->reply, p->len, body)) == 0)
		return false;
	next = strtoull(memchr(p->reply + body, '\n', p->len - body) + 1, NULL, 10);
	if (next != 0)
		next = next << RESP_SCAN_OWNER_BITS | fw->scan_owner;
	else if (fw->scan_owner + 1 < nowners)
		next = fw->scan_owner + 1;
	snprintf(num, sizeof(num), "%llu", next);
	resp_array(c, 2);
	resp_bulk(c, num, strlen(num));
	evbuffer_add(resp_output(c), p->reply + at, p->len - at);
	return true;
}

/* The parts' replies made the command's (all of them answered, none failed). */
static void resp_fwd_merge(struct resp_conn *c, struct resp_fwd *fw, long argc, size_t nowners)
{
	long long sum = 0, n;
	size_t i, body;
	bool whole = true;

	for (i = 0; i < fw->nparts; i++)
		if (fw->parts[i].len == 0 || fw->parts[i].reply[0] == '-') {
			/* The first error says it all (a database of another uid, say). */
			evbuffer_add(resp_output(c), fw->parts[i].reply, fw->parts[i].len);
			return;
		}
	switch (fw->merge) {
	case MERGE_WHOLE:
	case MERGE_NONE:
		evbuffer_add(resp_output(c), fw->parts[0].reply, fw->parts[0].len);
		return;
	case MERGE_VALUES:
		whole = resp_merge_values(c, fw, argc - 1);
		break;
	case MERGE_SUM:
		for (i = 0; whole && i < fw->nparts; i++) {
			whole = fw->parts[i].reply[0] == ':';
			sum += strtoll((const char *)fw->parts[i].reply + 1, NULL, 10);
		}
		if (whole)
			resp_int(c, sum);
		break;
	case MERGE_OK:
		for (i = 0; whole && i < fw->nparts; i++)
			whole = fw->parts[i].reply[0] == '+';
		if (whole)
			resp_ok(c);
		break;
	case MERGE_ARRAY:
		for (i = 0; whole && i < fw->nparts; i++) {
			whole =
			    (n = resp_array_head(fw->parts[i].reply, fw->parts[i].len, &body)) >= 0;
			sum += n;
		}
		if (!whole)
			break;
		resp_array(c, (size_t)sum);
		for (i = 0; i < fw->nparts; i++) {
			resp_array_head(fw->parts[i].reply, fw->parts[i].len, &body);
			evbuffer_add(resp_output(c), fw->parts[i].reply + body,
				     fw->parts[i].len - body);
		}
		break;
	case MERGE_SCAN:
		whole = resp_merge_scan(c, fw, nowners);
		break;
	}
	if (!whole)
		resp_err(c, "ERR a shard owner's reply could not be merged");
}

/* Ask again in a while (resp_shard_route() ran too early or a shard moved). */
static void resp_shard_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	resp_resume(arg);
}

/*
 * What c's command waits for is not there yet (its database, its shards'
 * owners): RESP_SHARD_WAIT while a heartbeat window has not passed since
 * it was first asked, then false.
 */
static bool resp_shard_wait(struct resp_conn *c)
{
	const struct poold_conf *conf = c->rs->pd->conf;
	uint64_t now = units_now_ms();
	struct timeval tv = {0, RESP_SHARD_RETRY_MS * 1000};

	if (c->fwd_since_ms == 0)
		c->fwd_since_ms = now;
	if (now - c->fwd_since_ms > (uint64_t)conf->heartbeat_ms * (uint64_t)conf->heartbeat_misses)
		return false;
	if (c->fwd_timer == NULL &&
	    (c->fwd_timer = evtimer_new(c->rs->pd->base, resp_shard_later, c)) == NULL)
		return false;
	evtimer_add(c->fwd_timer, &tv);
	c->fetching = true;
	return true;
}

/* Database name made on first use: by the coordinator, sharded, for c's user. */
static void resp_shard_make_db(struct resp_conn *c, const char *name)
{
	struct poold *pd = c->rs->pd;
	Pool__KvNsRequest nr = POOL__KV_NS_REQUEST__INIT;
	struct kv_ns_spec spec = {
	    .name = name,
	    .capacity = (uint64_t)pd->conf->resp_capacity,
	    .flags = HOLD_NS_SHARDED | HOLD_NS_DRAM_ONLY,
	    .replicas = 1,
	    .uid = c->uid,
	    .gid = c->uid != 0 ? (gid_t)-1 : 0,
	    .mode = c->uid != 0 ? 0600 : 0666, /* (root's are open to all, as unsharded ones) */
	};
	char err[128];

	if (pd->conf->role == ROLE_COORDINATOR) {
		if (kv_ns_create(pd, &spec, err, sizeof(err)) < 0)
			log_warnx("RESP database '%s': %s", name, err);
		return;
	}
	nr.op = POOL__KV_NS_OP__KV_NS_OP_CREATE;
	nr.name = (char *)name;
	nr.has_capacity = nr.has_mode = nr.has_gid = nr.has_sharded = 1;
	nr.capacity = spec.capacity;
	nr.tier = (char *)"dram";
	nr.mode = spec.mode;
	nr.gid = (uint32_t)spec.gid;
	nr.sharded = true;
	if (pd->ask_coordinator != NULL)
		(void)pd->ask_coordinator(pd, c->uid, WIRE_KV_NS, &nr.base);
}

/*
 * A transaction's commands (EXEC's), as one argument list with each
 * command's count; -1 (replied) when one of them is not a key command.
 */
static int resp_shard_flatten(struct resp_conn *c, char ***ret_argv, size_t **ret_argl,
			      size_t **ret_counts, long *ret_argc)
{
	size_t i, total = 0;
	long k, at = 0;

	for (i = 0; i < c->nqueued; i++)
		total += (size_t)c->queued[i].argc;
	*ret_argv = calloc(total + 1, sizeof(**ret_argv));
	*ret_argl = calloc(total + 1, sizeof(**ret_argl));
	*ret_counts = calloc(c->nqueued + 1, sizeof(**ret_counts));
	if (*ret_argv == NULL || *ret_argl == NULL || *ret_counts == NULL) {
		resp_err(c, "ERR out of memory");
		return -1;
	}
	for (i = 0; i < c->nqueued; i++) {
		const struct resp_cmd *cmd = resp_cmd_find(c->queued[i].argv[0]);

		if (cmd == NULL || !(cmd->flags & RESP_CMD_KEYS)) {
			resp_err(c, "ERR %s in a transaction of a sharded database",
				 c->queued[i].argv[0]);
			return -1;
		}
		(*ret_counts)[i] = (size_t)c->queued[i].argc;
		for (k = 0; k < c->queued[i].argc; k++, at++) {
			(*ret_argv)[at] = c->queued[i].argv[k];
			(*ret_argl)[at] = c->queued[i].argl[k];
		}
	}
	*ret_argc = at;
	return 0;
}

/*
 * The owner of every key of argv (one command, or a transaction's as
 * counts says): its node id, 0 when they have several, or UINT32_MAX when
 * a command has none (it goes to every owner).
 */
static uint32_t resp_shard_owner(const struct kv_shard_map *map, const char *ns, char **argv,
				 const size_t *argl, const size_t *counts, size_t ncmds)
{
	uint32_t owner = UINT32_MAX, o;
	long first, last, step, k;
	size_t i, at = 0;

	for (i = 0; i < ncmds; at += counts[i], i++) {
		resp_shard_keys(argv[at], (long)counts[i], &first, &last, &step);
		if (first == 0)
			return map->nowners == 1 ? map->owners[0] : UINT32_MAX;
		for (k = first; k <= last && k < (long)counts[i]; k += step) {
			o = map->owner[kv_shard_of(ns, argv[at + k], argl[at + k])];
			if (owner != UINT32_MAX && o != owner)
				return 0;
			owner = o;
		}
	}
	return owner;
}

/* A part for owner node, of the arguments of argv from first on (every step), after the name. */
static struct resp_fwd_part *resp_fwd_part(struct resp_fwd *fw, uint32_t node, long nargs)
{
	struct resp_fwd_part *p = &fw->parts[fw->nparts++];

	p->fw = fw;
	p->node = node;
	p->arg = calloc((size_t)nargs + 1, sizeof(*p->arg));
	p->argc = 1; /* (the name) */
	return p->arg != NULL ? p : NULL;
}

/*
 * Split a command whose keys have several owners (MGET, MSET, DEL...) by
 * owner, or send one without keys to every owner (a SCAN to the owner its
 * cursor names): its parts, in fw. 0, 1 when replied, or -ENOMEM.
 */
static int resp_fwd_split(struct resp_conn *c, struct resp_fwd *fw, const struct kv_shard_map *map,
			  const char *ns, long argc, char **argv, const size_t *argl, char *cursor,
			  size_t clen)
{
	size_t nowners = map->nowners, i;
	long first, last, step, k, j;

	resp_shard_keys(argv[0], argc, &first, &last, &step);
	if (fw->merge == MERGE_SCAN) {
		unsigned long long at = strtoull(argv[1], NULL, 10);

		fw->scan_owner = at & ((1u << RESP_SCAN_OWNER_BITS) - 1);
		if (fw->scan_owner >= nowners) { /* (the owners changed meanwhile) */
			resp_array(c, 2);
			resp_bulk(c, "0", 1);
			resp_array(c, 0);
			return 1;
		}
		snprintf(cursor, clen, "%llu", at >> RESP_SCAN_OWNER_BITS);
		nowners = 1;
	}
	for (i = 0; first == 0 && i < nowners; i++) {
		struct resp_fwd_part *p = resp_fwd_part(
		    fw, map->owners[fw->merge == MERGE_SCAN ? fw->scan_owner : i], argc);

		if (p == NULL)
			return -ENOMEM;
		for (k = 1; k < argc; k++)
			p->arg[p->argc++] = k;
	}
	for (k = first; first > 0 && k <= last && k < argc; k += step) {
		uint32_t o = map->owner[kv_shard_of(ns, argv[k], argl[k])];
		struct resp_fwd_part *p = NULL;

		for (i = 0; i < fw->nparts && p == NULL; i++)
			if (fw->parts[i].node == o)
				p = &fw->parts[i];
		if (p == NULL && (p = resp_fwd_part(fw, o, argc)) == NULL)
			return -ENOMEM;
		for (j = 0; j < step; j++)
			p->arg[p->argc++] = k + j;
	}
	return 0;
}

/*
 * Every part of fw answered: the command's reply (RESP_SHARD_DONE), or
 * RESP_SHARD_WAIT when a part's shard moved and is asked again in a
 * while. argc: the command's own count of arguments.
 */
static int resp_shard_taken(struct resp_conn *c, struct resp_fwd *fw, long argc)
{
	size_t i;

	c->fwd = NULL;
	for (i = 0; i < fw->nparts && fw->parts[i].status == 0; i++)
		;
	/* (not sent to a member declared dead: the map will name another owner) */
	if (i < fw->nparts &&
	    (fw->parts[i].status == -ESTALE || fw->parts[i].status == -EAGAIN ||
	     fw->parts[i].status == -EHOSTUNREACH) &&
	    resp_shard_wait(c)) {
		resp_fwd_free(fw); /* (its owners are asked again) */
		return RESP_SHARD_WAIT;
	}
	if (i < fw->nparts && fw->parts[i].status == -EMSGSIZE)
		resp_err(c, "ERR the command or its reply would pass 4M, the most one node sends "
			    "another (node %u owns its key's shard)",
			 (unsigned)fw->parts[i].node);
	else if (i < fw->nparts)
		resp_err(c, "TRYAGAIN the owner of a key's shard (node %u) did not serve it: %s",
			 (unsigned)fw->parts[i].node, err_str(fw->parts[i].status));
	else
		resp_fwd_merge(c, fw, argc, cluster_kv_shards(c->rs->pd)->nowners);
	resp_fwd_free(fw);
	return RESP_SHARD_DONE;
}

/*
 * Route a command (or, with exec, a transaction's commands, counts[i]
 * arguments each) of database ns: run here, sent to its owners, or
 * refused (see resp_shard_route()).
 */
static int resp_shard_start(struct resp_conn *c, const struct kv_shard_map *map,
			    const struct kv_ns *ns, char **argv, const size_t *argl, long argc,
			    const size_t *counts, size_t ncmds, bool exec)
{
	struct poold *pd = c->rs->pd;
	uint32_t owner = resp_shard_owner(map, ns->name, argv, argl, counts, ncmds);
	struct resp_fwd *fw;
	char cursor[24];
	size_t i, at;
	long k, first, last, step;
	int rc = 0;

	resp_shard_keys(argv[0], argc, &first, &last, &step);
	if (!exec && step > 1 && (argc - 1) % step != 0)
		return RESP_SHARD_HERE; /* (MSET's arguments do not pair: its error, here) */
	if (owner == pd->node_id) {
		for (i = at = 0; rc == 0 && i < ncmds; at += counts[i++])
			rc = resp_shard_serves(pd, ns, (long)counts[i], argv + at, argl + at);
		if (rc == 0)
			return RESP_SHARD_HERE;
		if (resp_shard_wait(c))
			return RESP_SHARD_WAIT;
		resp_err(c, "TRYAGAIN the shard of a key is moving to this node");
		return RESP_SHARD_DONE;
	}
	fw = calloc(1, sizeof(*fw) + sizeof(fw->parts[0]) * (map->nowners + 1));
	if (fw == NULL) {
		resp_err(c, "ERR out of memory");
		return RESP_SHARD_DONE;
	}
	fw->c = c;
	fw->merge = owner != 0 && owner != UINT32_MAX ? MERGE_WHOLE
		    : exec			      ? MERGE_NONE
						      : resp_shard_merge(argv[0]);
	if (fw->merge == MERGE_NONE) {
		resp_fwd_free(fw);
		resp_err(c, RESP_SHARD_CROSSSLOT);
		return RESP_SHARD_DONE;
	}
	if (fw->merge == MERGE_WHOLE) {
		struct resp_fwd_part *p = resp_fwd_part(fw, owner, argc);

		for (k = 1; p != NULL && k < argc; k++)
			p->arg[p->argc++] = k;
		rc = p == NULL ? -ENOMEM : 0;
	} else {
		rc = resp_fwd_split(c, fw, map, ns->name, argc, argv, argl, cursor, sizeof(cursor));
	}
	if (rc != 0) {
		resp_fwd_free(fw);
		if (rc < 0)
			resp_err(c, "ERR out of memory");
		return RESP_SHARD_DONE;
	}
	c->fwd = fw;
	fw->pending = fw->nparts;
	for (i = 0; i < fw->nparts; i++)
		resp_fwd_send(c, &fw->parts[i], argv, argl, exec, counts, ncmds,
			      fw->merge == MERGE_SCAN ? cursor : NULL);
	if (fw->pending == 0) /* (served here, or not sent: at once) */
		return resp_shard_taken(c, fw, argc);
	c->fetching = true;
	return RESP_SHARD_WAIT;
}

/*
 * The command c is about to run (cmd, the arguments of q; EXEC with its
 * transaction), on a sharded database: RESP_SHARD_HERE when its keys are
 * all this node's to serve, RESP_SHARD_WAIT while it is with their owners
 * or waits for its database (it runs again then), RESP_SHARD_DONE once
 * replied.
 */
int resp_shard_route(struct resp_conn *c, const struct resp_cmd *cmd, const struct resp_queued *q)
{
	struct poold *pd = c->rs->pd;
	const struct kv_shard_map *map = cluster_kv_shards(pd);
	bool exec = strcasecmp(cmd->name, "exec") == 0;
	size_t one = (size_t)q->argc, *counts = NULL, *argl = NULL;
	char name[32], **argv = NULL;
	const struct kv_ns *ns;
	long argc;
	int rc;

	if (exec && (!c->multi || c->multi_dirty || c->nqueued == 0))
		return RESP_SHARD_HERE; /* (EXEC's own errors, or an empty transaction) */
	resp_db_name(c, c->db, name, sizeof(name));
	ns = pd->kv != NULL ? kv_ns_find(pd, name) : NULL;
	if (c->fwd != NULL) {
		rc = resp_shard_taken(c, c->fwd, q->argc);
	} else if (ns == NULL || map->nowners == 0) {
		if (ns == NULL && (c->fwd_since_ms == 0 ||
				   (units_now_ms() - c->fwd_since_ms) % 500 < RESP_SHARD_RETRY_MS))
			resp_shard_make_db(c, name);
		rc = resp_shard_wait(c) ? RESP_SHARD_WAIT : RESP_SHARD_DONE;
		if (rc == RESP_SHARD_DONE && ns == NULL)
			resp_err(c, "ERR cannot open database %d: the coordinator did not make it",
				 c->db);
		else if (rc == RESP_SHARD_DONE)
			resp_err(c, "TRYAGAIN no node owns KV shards (kv.shard_size) now");
	} else if (!(ns->flags & HOLD_NS_SHARDED)) {
		resp_err(c, "ERR database %d was made before resp.placement was sharded", c->db);
		rc = RESP_SHARD_DONE;
	} else if (!exec) {
		rc = resp_shard_start(c, map, ns, q->argv, q->argl, q->argc, &one, 1, false);
	} else if (resp_shard_flatten(c, &argv, &argl, &counts, &argc) < 0) {
		rc = RESP_SHARD_DONE;
	} else {
		rc = resp_shard_start(c, map, ns, argv, argl, argc, counts, c->nqueued, true);
	}
	free(argv);
	free(argl);
	free(counts);
	if (rc != RESP_SHARD_WAIT)
		c->fwd_since_ms = 0;
	if (rc == RESP_SHARD_DONE && exec) { /* the transaction is over, as EXEC ends it */
		c->multi = false;
		resp_queue_clear(c);
	}
	return rc;
}

/* c goes: answers still on their way are dropped when they come. */
void resp_shard_end(struct resp_conn *c)
{
	if (c->fwd != NULL) {
		if (c->fwd->pending > 0)
			c->fwd->c = NULL;
		else
			resp_fwd_free(c->fwd);
		c->fwd = NULL;
	}
	if (c->fwd_timer != NULL)
		event_free(c->fwd_timer);
	c->fwd_timer = NULL;
}

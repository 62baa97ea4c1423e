/*
 * daemon/resp/resp-shard.c - the RESP endpoint over sharded databases
 * (resp.placement = sharded): every node's endpoint runs commands itself,
 * and each key is served by the owner of its shard, as libpool's KV
 * requests are (kv-route.c), never by the coordinator.
 *
 * A command whose keys are all in shards this node owns runs here, on its
 * own index, with memory copies only. One whose keys are all another
 * owner's is sent to that owner, as a call on the link between the two
 * poolds (RespCommand), run there as the client's user, and its reply's
 * bytes come back as they are. The commands of a pipeline go together: the
 * ones read ahead while the first waits are grouped by owner, one call per
 * owner, run there in order (a batch), their replies taken in the client's
 * order; an owner runs no more of a group than one answer can carry back,
 * and is asked again for the rest. Keys of different owners are different
 * keys, so only each owner's order matters.
 *
 * MGET, MSET, DEL, UNLINK and EXISTS whose keys have several owners are
 * split by owner, the parts in flight together, and their replies merged
 * (MGET's values back in the keys' order). DBSIZE, FLUSHDB, FLUSHALL and
 * KEYS go to every owner; SCAN walks the owners one after the other, its
 * cursor naming the owner (low 16 bits) and the owner's own cursor. Any
 * other command whose keys have several owners, MSETNX and a transaction
 * among them, gets Redis Cluster's CROSSSLOT error: its atomicity would
 * need a lock across nodes. A transaction whose keys are all one owner's
 * runs there, in one turn of its loop, as EXEC runs here.
 *
 * A key whose shard is moving (its owner changed, or its keys are on their
 * way) is asked again every RESP_SHARD_RETRY_MS for a heartbeat window,
 * the client waiting; after that it gets TRYAGAIN. An owner refuses a call
 * before running any of it when one of its keys is not its to serve, so
 * asking again runs nothing twice. A database is made on first use by the
 * coordinator (asked on this node's link to it), sharded, and every node
 * learns it from the namespaces' definitions.
 *
 * With resp.replicas = 2 the owner sends the keys a call's commands
 * changed to their shards' backups (kv-backup.c) and answers once they
 * have them; this node's own writes go the same way (a batch's group for
 * this node), so that no reply says OK of a change only one node holds.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "daemon/control/control.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "fabric/fabric.h"

#define RESP_SHARD_RETRY_MS 20
#define RESP_SHARD_REPLY_MAX (FAB_LINK_CALL_MAX - 2) /* a call's answer, at most */
/*
 * The room for a batch's replies a call asks for at first: its answer's
 * buffer is allocated before it is sent, and one below malloc's mmap
 * threshold costs nothing to take and give back. A connection whose values
 * need more gets more (resp_conn.shard_room), and less again as they shrink.
 */
#define RESP_SHARD_ROOM (96u << 10)
#define RESP_SHARD_CALL_MAX (FAB_LINK_CALL_MAX / 2) /* a batch's group's arguments */
#define RESP_SHARD_REPLY_SLACK 64 /* of a reply, more than the values it carries */
#define RESP_SHARD_ERR_ROOM 1024  /* of a reply that is an integer or +OK: for an error */
#define RESP_SHARD_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"
#define RESP_SCAN_OWNER_BITS 16

/* What an owner answered: its replies one after another, reply i ending at ends[i]. */
struct resp_answer {
	int status; /* -errno: nothing ran (or, not retryable, the call failed) */
	uint8_t *buf;
	size_t n, *ends;
	uint64_t needs; /* none ran: the first one's reply may take this many bytes */
};

/* Where an answer goes: what asked for it, once its commands ran (and were backed up). */
typedef void (*resp_took_cb)(void *arg, struct resp_answer *a);

/* Commands to send: each one's arguments, those of pick[] only when it is set. */
struct resp_cmdref {
	const struct resp_cmd *cmd;
	long argc;
	char **argv;
	const size_t *argl;
	const long *pick;
};

/* How the replies of a command's parts make its reply. */
enum resp_merge {
	MERGE_WHOLE,  /* one part: its reply as it is */
	MERGE_VALUES, /* MGET: each part's array of values, back in the keys' order */
	MERGE_SUM,    /* integers added up (DEL, UNLINK, EXISTS, DBSIZE) */
	MERGE_OK,     /* +OK when every part said so (MSET, FLUSHDB, FLUSHALL) */
	MERGE_ARRAY,  /* the parts' arrays one after the other (KEYS) */
	MERGE_SCAN,   /* one owner's SCAN, its cursor made the cluster's */
	MERGE_ANY,    /* the first that is not null, from an owner picked at random (RANDOMKEY) */
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
	int status;   /* -errno: it failed */
	size_t room;  /* its call's, in flight */
	size_t needs; /* its reply did not fit: the room it is asked again with */
};

/* A command (or a transaction) sent to its keys' owners, until every part answered. */
struct resp_fwd {
	struct resp_conn *c; /* NULL once the client went: the answers are dropped */
	enum resp_merge merge;
	size_t nparts, pending;
	uint64_t scan_owner; /* MERGE_SCAN: the owner's place among the map's owners */
	uint64_t held;	     /* of c->shard_bytes: the parts' replies, and their calls' room */
	struct resp_fwd_part parts[];
};

struct resp_batch;

/* The commands of a batch one owner serves, in order; from done on, not answered yet. */
struct resp_group {
	struct resp_batch *b;
	uint32_t node;
	size_t n, done;
	size_t *cmd; /* their places in the batch */
	bool again;  /* its shards moved: asked again when the batch's timer rings */
	size_t room; /* its call's, in flight */
};

/* A command's reply in a batch, or why it has none. */
struct resp_result {
	int status;
	uint32_t node;
	uint8_t *reply;
	size_t len;
};

/*
 * Commands read ahead (c->ahead[0..n) when it was made) sent to their
 * owners together; taken in order as each runs (next), once every group
 * answered.
 */
struct resp_batch {
	struct resp_conn *c; /* NULL once the client went */
	size_t n, next, pending;
	uint64_t held; /* of c->shard_bytes: the replies not taken, and the calls' room */
	uint64_t since_ms;
	bool sending;	     /* (answers served here come while it is being sent) */
	struct event *timer; /* asks the groups whose shards moved again; resumes c */
	struct resp_group *groups;
	size_t ngroups;
	struct resp_result res[];
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
 * bytes more of owners' replies held for c (in *held, its batch's or
 * split command's), counted in its buffers (resp.max_buffers*) as its
 * unread replies are. With check, the room a call asks for, counted from
 * before it is sent: false, and nothing counted, when that would pass a
 * bound (c->overflow names it: c is closed once its command ends), so
 * that replies on their way are bounded as a local one is before it is
 * built.
 */
static bool resp_hold(struct resp_conn *c, uint64_t *held, size_t bytes, bool check)
{
	if (c == NULL)
		return !check;
	if (check && !resp_room(c, bytes))
		return false;
	c->shard_bytes += bytes;
	*held += bytes;
	return true;
}

/* bytes of those held for c (in *held) are not any more; c NULL: it went. */
static void resp_unhold(struct resp_conn *c, uint64_t *held, size_t bytes)
{
	*held -= bytes;
	if (c != NULL)
		c->shard_bytes -= bytes;
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
	    {"mget", MERGE_VALUES}, {"mset", MERGE_OK},	   {"randomkey", MERGE_ANY},
	    {"scan", MERGE_SCAN},   {"unlink", MERGE_SUM},
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

	resp_unhold(fw->c, &fw->held, fw->held);
	for (i = 0; i < fw->nparts; i++) {
		free(fw->parts[i].arg);
		free(fw->parts[i].reply);
	}
	free(fw);
}

/* ------------------------------------------------------------ the owner's side */

/*
 * Whether the keys of a command cmd (argc arguments) are all in shards of
 * ns this node serves now: 0, or -ESTALE (not its own) or
 * -EAGAIN (moving here).
 */
static int resp_shard_serves(struct poold *pd, const struct kv_ns *ns, const struct resp_cmd *cmd,
			     long argc, char **argv, const size_t *argl)
{
	long first, last, step, i;
	int rc;

	resp_cmd_keys(cmd, argc, &first, &last, &step);
	for (i = first; first > 0 && i <= last && i < argc; i += step)
		if ((rc = kv_owner_serves(pd, ns, argv[i], argl[i])) < 0)
			return rc;
	return 0;
}

/*
 * The commands of m, each argument NUL-terminated as the parser's: in
 * buffers of their own for a transaction (EXEC frees its queue), else in
 * one block, *ret_block, all arguments' pointers in qs[0]'s arrays.
 */
static int resp_shard_unpack(const Pool__RespCommand *m, struct resp_queued **ret, size_t *ret_n,
			     char **ret_block)
{
	size_t n = m->n_argc > 0 ? m->n_argc : 1, i, k, at = 0, bytes = 0;
	struct resp_queued *qs = calloc(n, sizeof(*qs));
	char **argv = NULL, *p = NULL;
	size_t *argl = NULL;

	*ret = qs;
	*ret_n = 0;
	*ret_block = NULL;
	if (qs == NULL)
		return -ENOMEM;
	for (i = 0; !m->exec && i < m->n_argv; i++)
		bytes += m->argv[i].len + 1;
	if (!m->exec && ((argv = calloc(m->n_argv + 1, sizeof(*argv))) == NULL ||
			 (argl = calloc(m->n_argv + 1, sizeof(*argl))) == NULL ||
			 (*ret_block = p = malloc(bytes + 1)) == NULL)) {
		free(argv);
		free(argl);
		return -ENOMEM;
	}
	if (!m->exec) { /* (resp_shard_unpacked_free() frees them with qs[0]'s) */
		qs[0].argv = argv;
		qs[0].argl = argl;
	}
	for (i = 0; i < n; i++) {
		struct resp_queued *q = &qs[i];
		size_t argc = m->n_argc > 0 ? m->argc[i] : m->n_argv;

		if (argc == 0 || argc > m->n_argv - at || argc > RESP_MAX_ARGS)
			return -EINVAL;
		*ret_n = i + 1;
		if (m->exec) {
			q->argv = calloc(argc, sizeof(*q->argv));
			q->argl = calloc(argc, sizeof(*q->argl));
			if (q->argv == NULL || q->argl == NULL)
				return -ENOMEM;
		} else {
			q->argv = argv + at;
			q->argl = argl + at;
		}
		for (k = 0; k < argc; k++, at++) {
			const ProtobufCBinaryData *a = &m->argv[at];

			if (m->exec && (p = malloc(a->len + 1)) == NULL)
				return -ENOMEM;
			q->argv[k] = p;
			q->argc = (long)k + 1;
			memcpy(p, a->data, a->len);
			p[a->len] = '\0';
			q->argl[k] = a->len;
			q->bytes += a->len;
			p += m->exec ? 0 : a->len + 1;
		}
	}
	return at == m->n_argv ? 0 : -EINVAL;
}

/* Free what resp_shard_unpack() made (block: its one block, or NULL). */
static void resp_shard_unpacked_free(struct resp_queued *qs, size_t n, char *block)
{
	size_t i;

	if (block != NULL && qs != NULL) { /* (the arrays are qs[0]'s, the strings the block's) */
		free(qs[0].argv);
		free(qs[0].argl);
		n = 0;
	}
	for (i = 0; i < n; i++)
		resp_args_free(&qs[i]);
	free(qs);
	free(block);
}

static void resp_answer_free(struct resp_answer *a)
{
	free(a->buf);
	free(a->ends);
	*a = (struct resp_answer){0};
}

/* Reply i of a: its bytes and length. */
static const uint8_t *resp_answer_reply(const struct resp_answer *a, size_t i, size_t *ret_len)
{
	size_t from = i > 0 ? a->ends[i - 1] : 0;

	*ret_len = a->ends[i] - from;
	return a->buf + from;
}

/*
 * The most bytes the reply of q, a command of ns as uid, may take with the
 * values it reads as they are now (whole), and a little more per key;
 * SIZE_MAX for one without keys (KEYS, SCAN: any) but an integer or +OK.
 */
static size_t resp_shard_need(struct poold *pd, uid_t uid, const char *ns,
			      const struct resp_cmd *cmd, const struct resp_queued *q)
{
	long first, last, step, k;
	struct kv_where w;
	size_t need = RESP_SHARD_REPLY_SLACK;

	resp_cmd_keys(cmd, q->argc, &first, &last, &step);
	if (first == 0 &&
	    (resp_shard_merge(cmd->name) == MERGE_SUM || resp_shard_merge(cmd->name) == MERGE_OK))
		return need; /* (DBSIZE, FLUSHDB...) */
	if (first == 0)
		return SIZE_MAX;
	for (k = first; k <= last && k < q->argc; k += step) {
		need += RESP_SHARD_REPLY_SLACK;
		if ((cmd->flags & (RESP_CMD_READS | RESP_CMD_READS_ALL | RESP_CMD_READS_GET)) &&
		    kv_local_where(pd, uid, ns, (const uint8_t *)q->argv[k], q->argl[k], &w) == 0)
			need += w.len;
	}
	return need;
}

/* The answer of a run whose changes went to their shards' backups, until they have them. */
struct resp_backed {
	resp_took_cb took;
	void *arg;
	struct resp_answer a;
};

static void resp_shard_backed(void *arg)
{
	struct resp_backed *bk = arg;

	bk->took(bk->arg, &bk->a);
	free(bk);
}

/*
 * The keys of the commands among qs[0..n) that may change them (copied
 * when copy: the commands' arguments go first), in *ret: how many, or
 * -ENOMEM.
 */
static long resp_shard_written(const struct resp_cmd *const *cmds, const struct resp_queued *qs,
			       size_t n, bool copy, ProtobufCBinaryData **ret)
{
	long first, last, step, k, count = 0;
	size_t i, max = 0;

	for (i = 0; i < n; i++)
		max += (cmds[i]->flags & RESP_CMD_WRITES) ? (size_t)qs[i].argc : 0;
	if ((*ret = calloc(max ? max : 1, sizeof(**ret))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		resp_cmd_keys(cmds[i], qs[i].argc, &first, &last, &step);
		for (k = first;
		     (cmds[i]->flags & RESP_CMD_WRITES) && first > 0 && k <= last && k < qs[i].argc;
		     k += step) {
			uint8_t *key = (uint8_t *)qs[i].argv[k];

			if (copy && (key = malloc(qs[i].argl[k] ? qs[i].argl[k] : 1)) == NULL)
				return count; /* (those it has: the rest copied whole later) */
			if (copy)
				memcpy(key, qs[i].argv[k], qs[i].argl[k]);
			(*ret)[count++] = (ProtobufCBinaryData){qs[i].argl[k], key};
		}
	}
	return count;
}

/*
 * Send the keys of ns a run changed to their shards' backups, the run's
 * answer *a going to took(arg) once they have them: 1, a moved there; 0
 * when none went (one replica, or no backup now).
 */
static int resp_shard_back(struct poold *pd, struct kv_ns *ns, const ProtobufCBinaryData *keys,
			   long n, struct resp_answer *a, resp_took_cb took, void *arg)
{
	Pool__KvLocation *locs =
	    calloc(n > 0 ? (size_t)n : 1, sizeof(*locs)); /* (status 0: done) */
	struct resp_backed *bk = malloc(sizeof(*bk));
	int rc = 0;

	if (locs != NULL && bk != NULL && n > 0) {
		*bk = (struct resp_backed){took, arg, *a};
		rc = kv_backup_send(pd, ns, keys, locs, (size_t)n, false, resp_shard_backed, bk);
	}
	if (rc > 0)
		*a = (struct resp_answer){0};
	else
		free(bk);
	free(locs);
	return rc > 0;
}

/*
 * Whether the n commands qs are each one of a sharded database's, with
 * keys, of its arity, in a database there is (cmds[i]: qs[i]'s entry of
 * the command table): 0 or -EINVAL.
 */
static int resp_shard_cmds(const Pool__RespCommand *m, const struct resp_queued *qs, size_t n,
			   const struct resp_cmd **cmds)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct resp_cmd *cmd = cmds[i] = resp_cmd_find(qs[i].argv[0]);

		if (cmd == NULL || !(cmd->flags & RESP_CMD_KEYS) ||
		    (cmd->arity > 0 && qs[i].argc != cmd->arity) ||
		    (cmd->arity < 0 && qs[i].argc < -cmd->arity))
			return -EINVAL;
	}
	return m->db >= RESP_DBS ? -EINVAL : 0;
}

/*
 * Run the commands qs[0..n) of database name on t, in order, as long as
 * their replies fit room (those after are asked again: a reply that would
 * not fit is never built; ret->needs says what the first one needs), each
 * reply's end in ret. A lone reply over the bound is replaced by an error.
 */
static void resp_shard_each(struct resp_conn *t, const char *name, const struct resp_cmd **cmds,
			    struct resp_queued *qs, size_t n, size_t room, struct resp_answer *ret)
{
	struct poold *pd = t->rs->pd;
	size_t i, len, need;

	for (i = 0; i < n; i++) {
		len = evbuffer_get_length(t->out);
		need = resp_shard_need(pd, t->uid, name, cmds[i], &qs[i]);
		if ((len >= room || need > room - len) && (i > 0 || room < RESP_SHARD_REPLY_MAX)) {
			ret->needs = i == 0 ? MIN(need, (size_t)RESP_SHARD_REPLY_MAX) : 0;
			break;
		}
		resp_cmd_run(t, cmds[i], qs[i].argc, qs[i].argv, qs[i].argl);
		ret->ends[ret->n++] = evbuffer_get_length(t->out);
		if (t->overflow != NULL || ret->ends[i] > RESP_SHARD_REPLY_MAX)
			break; /* (the first one alone: its reply is replaced by the error) */
	}
	len = evbuffer_get_length(t->out);
	if (ret->n == 1 && (t->overflow != NULL || len > RESP_SHARD_REPLY_MAX)) {
		evbuffer_drain(t->out, len);
		evbuffer_add_printf(t->out, "-ERR the reply would pass %s\r\n",
				    t->overflow != NULL ? t->overflow
							: "4M, the most a node sends another");
		ret->ends[0] = evbuffer_get_length(t->out);
	}
}

/*
 * Run m, commands (or a transaction's, with exec) of a client of another
 * node's endpoint (or of this one's), uid, on this node's shards, in order,
 * as many as one answer carries back: their replies in *ret, 0. With 2
 * replicas, what they changed goes to the shards' backups first, and the
 * answer to took(arg) once they have it: 1. -ESTALE or -EAGAIN when a
 * key's shard is not served here now (none ran); another -errno, said in
 * err, when they cannot run.
 */
static int resp_shard_run(struct poold *pd, uid_t uid, const Pool__RespCommand *m,
			  struct resp_answer *ret, char *err, size_t errlen, resp_took_cb took,
			  void *arg)
{
	static uint64_t sessions; /* (numbered apart from the endpoint's connections) */
	struct resp rs_here = {.pd = pd};
	struct resp_conn t = {.rs = pd->resp != NULL ? pd->resp : &rs_here};
	struct resp_queued *qs;
	char *block;
	const struct resp_cmd **cmds = NULL;
	struct kv_ns *ns;
	ProtobufCBinaryData *written = NULL;
	long nwritten = 0, k;
	char name[32];
	size_t n, i, len,
	    room =
		m->has_reply_max ? MIN(m->reply_max, RESP_SHARD_REPLY_MAX) : RESP_SHARD_REPLY_MAX;
	int rc;

	*ret = (struct resp_answer){0};
	t.db = (int)m->db;
	t.proto = m->proto == 3 ? 3 : 2;
	t.uid = uid;
	t.authed = true;
	LIST_INIT(&t.remote);
	rc = resp_shard_unpack(m, &qs, &n, &block);
	if (rc == 0 && (cmds = calloc(n, sizeof(*cmds))) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = resp_shard_cmds(m, qs, n, cmds);
	if (rc < 0) {
		snprintf(err, errlen, "a RESP command that is not one of a sharded database");
		goto out;
	}
	resp_db_name(&t, t.db, name, sizeof(name));
	ns = pd->kv != NULL ? kv_ns_find(pd, name) : NULL;
	if (ns == NULL || !(kv_ns_flags(ns) & HOLD_NS_SHARDED)) {
		rc = ns == NULL ? -EAGAIN : -EINVAL; /* (its definition is on its way) */
		snprintf(err, errlen, "no sharded database '%s' here", name);
		goto out;
	}
	for (i = 0; i < n; i++)
		if ((rc = resp_shard_serves(pd, ns, cmds[i], qs[i].argc, qs[i].argv, qs[i].argl)) <
		    0) {
			snprintf(err, errlen, "a key's shard of '%s' is not served here now", name);
			goto out;
		}
	ret->ends = calloc(n, sizeof(*ret->ends));
	if (ret->ends == NULL || (t.out = evbuffer_new()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	t.session = (UINT64_C(3) << 61) | ++sessions;
	if (m->exec) { /* (EXEC frees the queue: its keys are copied first) */
		static char exec[] = "exec";
		char *argv[] = {exec};
		size_t argl[] = {4};

		if (kv_ns_replicas(ns) > 1)
			nwritten = resp_shard_written(cmds, qs, n, true, &written);
		t.queued = qs;
		t.nqueued = n;
		t.multi = true;
		qs = NULL;
		n = 0;
		resp_cmd_run(&t, resp_cmd_find("exec"), 1, argv, argl);
		ret->ends[ret->n++] = evbuffer_get_length(t.out);
	}
	resp_shard_each(&t, name, cmds, qs, n, room, ret);
	len = evbuffer_get_length(t.out);
	/* Copied out before the pins of values sent by reference go with the session. */
	ret->buf = malloc(len ? len : 1);
	if (ret->buf == NULL)
		rc = -ENOMEM;
	else
		evbuffer_remove(t.out, ret->buf, len);
	resp_remote_end(&t);
	evbuffer_free(t.out);
	if (rc == 0 && kv_ns_replicas(ns) > 1 && !m->exec) /* (those that ran) */
		nwritten = resp_shard_written(cmds, qs, ret->n, false, &written);
	if (rc == 0 && nwritten > 0 && resp_shard_back(pd, ns, written, nwritten, ret, took, arg))
		rc = 1;
	for (k = 0; m->exec && k < nwritten; k++)
		free(written[k].data);
	free(written);
out:
	resp_shard_unpacked_free(qs, n, block);
	free(cmds);
	if (rc < 0)
		resp_answer_free(ret);
	ret->status = rc < 0 ? rc : 0;
	return rc;
}

/* Answer r (held) with a's replies. */
static int resp_shard_reply(struct req *r, struct resp_answer *a)
{
	Pool__RespReply rep = POOL__RESP_REPLY__INIT;
	ProtobufCBinaryData *replies = calloc(a->n ? a->n : 1, sizeof(*replies));
	size_t i, len;
	int rc;

	if (replies == NULL) {
		resp_answer_free(a);
		return req_errorf(r, -ENOMEM, "out of memory");
	}
	for (i = 0; i < a->n; i++) {
		const uint8_t *p = resp_answer_reply(a, i, &len);

		replies[i] = (ProtobufCBinaryData){len, (uint8_t *)p};
	}
	rep.replies = replies;
	rep.n_replies = a->n;
	rep.has_needs = a->needs > 0;
	rep.needs = a->needs;
	rc = req_reply(r, WIRE_RESP_REPLY, &rep.base);
	free(replies);
	resp_answer_free(a);
	return rc;
}

/* The backups have what a request's commands changed: its answer goes. */
static void resp_shard_request_backed(void *arg, struct resp_answer *a)
{
	struct req *held = arg;

	req_finish(held, resp_shard_reply(held, a));
}

/* Commands of a client of another node's endpoint (WIRE_RESP_COMMAND), asked on the link. */
static int resp_shard_request(struct req *r, const ProtobufCMessage *msg)
{
	struct resp_answer a;
	struct req *held;
	char err[160];
	int rc;

	if (r->answer == NULL) /* (a client of this poold's control socket) */
		return req_errorf(r, -EPERM, "RESP commands are asked only by other nodes");
	if (!resp_sharded(r->pd))
		return req_errorf(r, -EOPNOTSUPP, "this node's RESP databases are not sharded");
	if ((held = req_hold(r)) == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	resp_shard_served++;
	rc = resp_shard_run(r->pd, r->uid, (const Pool__RespCommand *)msg, &a, err, sizeof(err),
			    resp_shard_request_backed, held);
	if (rc > 0)
		return REQ_LATER; /* (resp_shard_request_backed() answers) */
	req_finish(held, 0);
	if (rc < 0)
		return req_errorf(r, rc, "%s", err);
	return resp_shard_reply(r, &a);
}

const struct ctl_handler respshard_handlers[] = {
    {WIRE_RESP_COMMAND, CTL_ADMIN, AT_HERE, resp_shard_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/* ------------------------------------------------------------ the client's side */

/* An owner's answer to a call (nodecall_cb), as a resp_answer. */
static void resp_answer_take(struct resp_answer *a, int status, uint16_t type, const uint8_t *bytes,
			     size_t len)
{
	Pool__RespReply *rep;
	size_t i, total = 0;

	*a = (struct resp_answer){0};
	a->status =
	    nodecall_reply(status, type, bytes, len, WIRE_RESP_REPLY, (ProtobufCMessage **)&rep);
	if (a->status < 0)
		return;
	for (i = 0; i < rep->n_replies; i++)
		total += rep->replies[i].len;
	a->buf = malloc(total ? total : 1);
	a->ends = calloc(rep->n_replies + 1, sizeof(*a->ends));
	if (a->buf == NULL || a->ends == NULL) {
		resp_answer_free(a);
		a->status = -ENOMEM;
	}
	for (i = 0, total = 0; a->status == 0 && i < rep->n_replies; i++) {
		memcpy(a->buf + total, rep->replies[i].data, rep->replies[i].len);
		total += rep->replies[i].len;
		a->ends[a->n++] = total;
	}
	a->needs = rep->has_needs ? rep->needs : 0;
	wire_msg_free(&rep->base);
}

/* A call in flight: where its answer goes. */
struct resp_call {
	resp_took_cb took;
	void *arg;
};

static void resp_call_answer(struct poold *pd, void *arg, int status, uint16_t type,
			     const uint8_t *bytes, size_t len)
{
	struct resp_call call = *(struct resp_call *)arg;
	struct resp_answer a;

	(void)pd;
	free(arg);
	resp_answer_take(&a, status, type, bytes, len);
	call.took(call.arg, &a);
}

/*
 * Send commands cmds[0..n) of c (a transaction's with exec; with cursor,
 * the second argument of the first replaced by it) to node, their replies
 * to take room bytes at most, took(arg) to get the answer: 1 (also when
 * served here but waiting for the backups). Or served here at once, the
 * answer in *here: 0. Or -errno: not sent.
 */
static int resp_shard_call(struct resp_conn *c, uint32_t node, const struct resp_cmdref *cmds,
			   size_t n, bool exec, const char *cursor, size_t room, resp_took_cb took,
			   void *arg, struct resp_answer *here)
{
	struct resp_call *call;
	struct poold *pd = c->rs->pd;
	Pool__RespCommand m = POOL__RESP_COMMAND__INIT;
	struct nodecall_as as = {
	    .uid = c->uid, .gid = (uint32_t)-1, .admin = true, .session = c->session};
	ProtobufCBinaryData *av;
	uint32_t *ac = calloc(n, sizeof(*ac));
	size_t i, total = 0;
	char err[160];
	long k;
	int rc;

	for (i = 0; i < n; i++)
		total += (size_t)cmds[i].argc;
	av = calloc(total ? total : 1, sizeof(*av));
	if (av == NULL || ac == NULL) {
		free(av);
		free(ac);
		return -ENOMEM;
	}
	for (i = 0, total = 0; i < n; i++) {
		for (k = 0; k < cmds[i].argc; k++) {
			long at = cmds[i].pick != NULL ? cmds[i].pick[k] : k;

			av[total++] =
			    (ProtobufCBinaryData){cmds[i].argl[at], (uint8_t *)cmds[i].argv[at]};
		}
		ac[i] = (uint32_t)cmds[i].argc;
	}
	if (cursor != NULL && total > 1)
		av[1] = (ProtobufCBinaryData){strlen(cursor), (uint8_t *)cursor};
	m.db = (uint32_t)c->db;
	m.proto = (uint32_t)c->proto;
	m.argv = av;
	m.n_argv = total;
	m.argc = ac;
	m.n_argc = n;
	m.has_exec = m.exec = exec;
	m.has_reply_max = room < RESP_SHARD_REPLY_MAX;
	m.reply_max = (uint32_t)room;
	if (node == pd->node_id) {
		rc = resp_shard_run(pd, c->uid, &m, here, err, sizeof(err), took, arg);
		rc = rc > 0; /* (its errors are in *here) */
	} else if ((call = malloc(sizeof(*call))) == NULL) {
		rc = -ENOMEM;
	} else {
		*call = (struct resp_call){took, arg};
		/* (the answer's own bytes: a few per reply, and its type) */
		rc = nodecall_send(pd, node, &as, WIRE_RESP_COMMAND, &m.base,
				   MIN(room + 16 * n + 64, (size_t)RESP_SHARD_REPLY_MAX),
				   resp_call_answer, call);
		if (rc < 0)
			free(call);
		rc = rc < 0 ? rc : 1;
		resp_shard_sent += rc > 0;
	}
	free(av);
	free(ac);
	return rc;
}

/* Whether a call's failure means the keys' shards moved: asked again in a while. */
static bool resp_shard_moved(int status)
{
	/* (-EHOSTUNREACH: not sent to a member declared dead, the map will name another) */
	return status == -ESTALE || status == -EAGAIN || status == -EHOSTUNREACH;
}

/* The error a command gets when its owner failed it with status. */
static void resp_shard_failed(struct resp_conn *c, int status, uint32_t node)
{
	if (status == -EMSGSIZE)
		resp_err(c,
			 "ERR the command or its reply would pass 4M, the most one node sends "
			 "another (node %u owns its key's shard)",
			 (unsigned)node);
	else
		resp_err(c, "TRYAGAIN the owner of a key's shard (node %u) did not serve it: %s",
			 (unsigned)node, err_str(status));
}

/*
 * What c's command waits for is not there yet (its database, its shards'
 * owners): true, c asked again in a while, until a heartbeat window has
 * passed since it was first asked; then false.
 */
static bool resp_shard_wait(struct resp_conn *c);

/* ------------------------------------------------------------ split commands */

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

/* A part's answer a: its one reply in p, or the room it needs (asked again: resp_fwd_again()). */
static void resp_fwd_took(struct resp_fwd_part *p, struct resp_answer *a)
{
	struct resp_fwd *fw = p->fw;
	size_t len;
	const uint8_t *r;

	resp_unhold(fw->c, &fw->held, p->room);
	p->room = 0;
	p->status = a->status;
	if (p->status == 0 && a->n == 0 && a->needs > p->needs && fw->merge != MERGE_SCAN &&
	    fw->merge != MERGE_WHOLE)
		p->needs = (size_t)a->needs;
	else if (p->status == 0 && a->n != 1)
		p->status = -EPROTO;
	if (p->status == 0 && a->n == 1) {
		r = resp_answer_reply(a, 0, &len);
		p->reply = malloc(len ? len : 1);
		p->len = len;
		if (p->reply == NULL)
			p->status = -ENOMEM;
		else
			memcpy(p->reply, r, len);
		if (p->reply != NULL)
			resp_hold(fw->c, &fw->held, len, false);
	}
	resp_answer_free(a);
}

static void resp_fwd_part_took(void *arg, struct resp_answer *a)
{
	struct resp_fwd_part *p = arg;

	resp_fwd_took(p, a);
	resp_fwd_answered(p->fw);
}

/*
 * The room part p asks for its reply: an integer's or +OK's (DEL, MSET,
 * DBSIZE...), with room for an error; MGET's values in what the
 * connection's batches found enough, asked again with what the owner says
 * they need. KEYS, SCAN and a transaction may take any (4M), which is not
 * reserved: *charge, what c's buffers count until the reply comes.
 */
static size_t resp_fwd_room(const struct resp_conn *c, const struct resp_fwd_part *p,
			    size_t *charge)
{
	size_t room = RESP_SHARD_REPLY_MAX;

	if (p->needs > 0)
		room = p->needs;
	else if (p->fw->merge == MERGE_SUM || p->fw->merge == MERGE_OK)
		room = RESP_SHARD_ERR_ROOM + RESP_SHARD_REPLY_SLACK * (size_t)p->argc;
	else if (p->fw->merge == MERGE_VALUES)
		room = MIN(MAX(c->shard_room, (size_t)RESP_SHARD_ROOM) +
			       RESP_SHARD_REPLY_SLACK * (size_t)p->argc,
			   (size_t)RESP_SHARD_REPLY_MAX);
	*charge = p->needs == 0 && room == RESP_SHARD_REPLY_MAX ? RESP_SHARD_ROOM : room;
	return room;
}

/*
 * Send part p of c's command (argv, or the queue of its transaction with
 * exec; for SCAN, the owner's cursor), or serve it here at once.
 */
static void resp_fwd_send(struct resp_conn *c, struct resp_fwd_part *p, char **argv,
			  const size_t *argl, const char *cursor, bool exec)
{
	struct resp_cmdref one = {NULL, p->argc, argv, argl, p->arg}, *refs = &one;
	struct resp_answer here;
	size_t charge, room = resp_fwd_room(c, p, &charge), n = 1, i;
	int rc = -ENOBUFS;

	if (exec && (refs = calloc((n = c->nqueued), sizeof(*refs))) == NULL)
		rc = -ENOMEM;
	for (i = 0; exec && refs != NULL && i < n; i++)
		refs[i] = (struct resp_cmdref){NULL, c->queued[i].argc, c->queued[i].argv,
					       c->queued[i].argl, NULL};
	if (refs != NULL && resp_hold(c, &p->fw->held, charge, true)) {
		p->room = charge;
		rc = resp_shard_call(c, p->node, refs, n, exec, cursor, room, resp_fwd_part_took, p,
				     &here);
	}
	if (exec)
		free(refs);
	if (rc < 0)
		here = (struct resp_answer){.status = rc};
	if (rc <= 0) {
		resp_fwd_took(p, &here);
		p->fw->pending--;
	}
}

/* The parts whose replies did not fit sent again, with the room they need; whether any went. */
static bool resp_fwd_again(struct resp_conn *c, struct resp_fwd *fw, const struct resp_queued *q)
{
	size_t i;

	for (i = 0; i < fw->nparts; i++)
		if (fw->parts[i].status == 0 && fw->parts[i].reply == NULL) {
			fw->pending++;
			resp_fwd_send(c, &fw->parts[i], q->argv, q->argl, NULL, false);
		}
	return fw->pending > 0;
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
	case MERGE_ANY:
		for (i = 0, body = (size_t)random() % fw->nparts; i < fw->nparts; i++) {
			const struct resp_fwd_part *p = &fw->parts[(body + i) % fw->nparts];

			if (p->reply[0] != '_' && !(p->reply[0] == '$' && p->reply[1] == '-'))
				break;
		}
		n = (long long)((body + (i < fw->nparts ? i : 0)) % fw->nparts);
		evbuffer_add(resp_output(c), fw->parts[n].reply, fw->parts[n].len);
		break;
	}
	if (!whole)
		resp_err(c, "ERR a shard owner's reply could not be merged");
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

static int resp_owner_cmp(const void *key, const void *elem)
{
	uint32_t a = *(const uint32_t *)key, b = *(const uint32_t *)elem;

	return a < b ? -1 : a > b;
}

/*
 * The keys of argv (from first to last, every step) in one part per
 * owner, each part's arguments counted first and taken exactly: an MGET of
 * a million keys over 1,024 owners is two passes over its keys, not a
 * search of the parts per key nor a million places in every part. 0 or
 * -ENOMEM.
 */
static int resp_fwd_by_owner(struct resp_fwd *fw, const struct kv_shard_map *map, const char *ns,
			     long argc, char **argv, const size_t *argl, long first, long last,
			     long step)
{
	size_t nkeys = (size_t)((last - first) / step + 1), i, *count, *part;
	uint32_t *at = calloc(nkeys, sizeof(*at)); /* each key's owner, as its place in owners[] */
	long k, j;
	int rc = 0;

	count = calloc(map->nowners, sizeof(*count));
	part = calloc(map->nowners, sizeof(*part)); /* each owner's part + 1, or 0 */
	for (k = first, i = 0; at != NULL && count != NULL && k <= last && k < argc; k += step) {
		uint32_t o = map->owner[kv_shard_of(ns, argv[k], argl[k])];
		const uint32_t *p =
		    bsearch(&o, map->owners, map->nowners, sizeof(o), resp_owner_cmp);

		at[i] = (uint32_t)(p - map->owners);
		count[at[i++]] += (size_t)step;
	}
	for (k = first, i = 0;
	     at != NULL && count != NULL && part != NULL && rc == 0 && k <= last && k < argc;
	     k += step, i++) {
		struct resp_fwd_part *p;

		if (part[at[i]] == 0) {
			p = resp_fwd_part(fw, map->owners[at[i]], (long)count[at[i]]);
			if (p == NULL) {
				rc = -ENOMEM;
				break;
			}
			part[at[i]] = (size_t)(p - fw->parts) + 1;
		}
		p = &fw->parts[part[at[i]] - 1];
		for (j = 0; j < step; j++)
			p->arg[p->argc++] = k + j;
	}
	if (at == NULL || count == NULL || part == NULL)
		rc = -ENOMEM;
	free(at);
	free(count);
	free(part);
	return rc;
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
	long first, last, step, k;

	resp_cmd_keys(resp_cmd_find(argv[0]), argc, &first, &last, &step);
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
	return first > 0 ? resp_fwd_by_owner(fw, map, ns, argc, argv, argl, first, last, step) : 0;
}

static uint32_t resp_shard_owner(const struct kv_shard_map *map, const char *ns,
				 const struct resp_cmdref *cmds, size_t n);
static bool resp_shard_soon(struct resp_conn *c, unsigned ms);

/* ------------------------------------------------------------ batches */

static void resp_batch_free(struct resp_batch *b)
{
	size_t i;

	resp_unhold(b->c, &b->held, b->held);
	for (i = 0; i < b->n; i++)
		free(b->res[i].reply);
	for (i = 0; i < b->ngroups; i++)
		free(b->groups[i].cmd);
	free(b->groups);
	if (b->timer != NULL)
		event_free(b->timer);
	free(b);
}

/* The commands of group g not answered yet: failed with status (they get an error). */
static void resp_group_fail(struct resp_group *g, int status)
{
	for (; g->done < g->n; g->done++)
		g->b->res[g->cmd[g->done]] = (struct resp_result){status, g->node, NULL, 0};
}

static void resp_group_send(struct resp_group *g);

/*
 * Every group answered, or waits to be asked again: the batch's commands
 * run (each takes its reply), or the timer rings for those that wait.
 */
static void resp_batch_settled(struct resp_batch *b)
{
	struct timeval now = {0, 0}, later = {0, RESP_SHARD_RETRY_MS * 1000};
	size_t i;
	bool again = false;

	if (b->pending > 0)
		return;
	if (b->c == NULL) {
		resp_batch_free(b);
		return;
	}
	for (i = 0; i < b->ngroups; i++)
		again |= b->groups[i].again;
	/* (from the timer: not within resp_read_cb(), which sends batches) */
	evtimer_add(b->timer, again ? &later : &now);
}

/* Group g's answer a: its commands' replies; the rest asked again, or failed. */
static void resp_group_took(void *arg, struct resp_answer *a)
{
	struct resp_group *g = arg;
	struct resp_batch *b = g->b;
	const struct poold_conf *conf = b->c != NULL ? b->c->rs->pd->conf : NULL;
	size_t i, len;
	const uint8_t *r;

	b->pending--;
	resp_unhold(b->c, &b->held, g->room);
	g->room = 0;
	if (b->c != NULL && a->status == 0 && a->n == 0 && a->needs > 0) {
		/* (asked again at once, with that room: it grows, so this ends) */
		b->c->shard_room = MAX(b->c->shard_room, (size_t)a->needs);
	} else if (a->status == 0 && a->n == 0) {
		a->status = -EPROTO; /* (not one ran: it would be asked forever) */
	} else if (b->c != NULL && a->status == 0 && b->c->shard_room > RESP_SHARD_ROOM &&
		   a->ends[a->n - 1] < b->c->shard_room / 8) {
		b->c->shard_room = MAX(b->c->shard_room / 2, (size_t)RESP_SHARD_ROOM);
	}
	if (a->status < 0) {
		if (b->c != NULL && resp_shard_moved(a->status) &&
		    units_now_ms() - b->since_ms <=
			(uint64_t)conf->heartbeat_ms * (uint64_t)conf->heartbeat_misses)
			g->again = true;
		else
			resp_group_fail(g, a->status);
	}
	for (i = 0; a->status == 0 && i < a->n && g->done < g->n; i++, g->done++) {
		struct resp_result *res = &b->res[g->cmd[g->done]];

		r = resp_answer_reply(a, i, &len);
		res->reply = malloc(len ? len : 1);
		res->len = len;
		res->node = g->node;
		res->status = res->reply != NULL ? 0 : -ENOMEM;
		if (res->reply != NULL)
			memcpy(res->reply, r, len);
		if (res->reply != NULL)
			resp_hold(b->c, &b->held, len, false);
	}
	resp_answer_free(a);
	if (g->done < g->n && !g->again && b->c != NULL)
		resp_group_send(g); /* (what did not fit in one answer) */
	else if (g->done < g->n && !g->again)
		resp_group_fail(g, -ECONNRESET);
	if (!b->sending)
		resp_batch_settled(b);
}

/* Send group g's commands not answered yet (as many as one call carries) to its owner. */
static void resp_group_send(struct resp_group *g)
{
	struct resp_batch *b = g->b;
	struct resp_conn *c = b->c;
	struct resp_cmdref *refs = calloc(g->n - g->done, sizeof(*refs));
	struct resp_answer here;
	size_t i, n = 0, bytes = 0;
	int rc;

	g->again = false;
	b->pending++;
	for (i = g->done; refs != NULL && i < g->n; i++) {
		const struct resp_queued *q = &c->ahead[g->cmd[i]];

		if (n > 0 && bytes + q->bytes > RESP_SHARD_CALL_MAX)
			break; /* (the rest once this is answered) */
		refs[n++] = (struct resp_cmdref){NULL, q->argc, q->argv, q->argl, NULL};
		bytes += q->bytes;
	}
	if (refs == NULL)
		rc = -ENOMEM;
	else if (!resp_hold(c, &b->held, c->shard_room, true))
		rc = -ENOBUFS; /* (c is closed once its command ends: c->overflow) */
	else
		rc = resp_shard_call(c, g->node, refs, n, false, NULL, g->room = c->shard_room,
				     resp_group_took, g, &here);
	free(refs);
	if (rc < 0)
		here = (struct resp_answer){.status = rc};
	if (rc <= 0)
		resp_group_took(g, &here);
}

/* The batch's timer: the groups whose shards moved are asked again, or c resumes. */
static void resp_batch_timer(evutil_socket_t fd, short what, void *arg)
{
	struct resp_batch *b = arg;
	size_t i;

	(void)fd, (void)what;
	b->sending = true;
	for (i = 0; i < b->ngroups; i++)
		if (b->groups[i].again)
			resp_group_send(&b->groups[i]);
	b->sending = false;
	if (b->pending > 0)
		return;
	for (i = 0; i < b->ngroups && !b->groups[i].again; i++)
		;
	if (i < b->ngroups) {
		resp_batch_settled(b);
		return;
	}
	resp_resume(b->c); /* (its commands take their replies) */
}

/*
 * Whether command q (read ahead on c) may go in a batch: a key command
 * that would run (known, its arguments counted right, outside MULTI) with
 * all its keys one owner's; that owner in *ret_owner.
 */
static bool resp_batchable(struct resp_conn *c, const struct kv_shard_map *map, const char *ns,
			   const struct resp_queued *q, uint32_t *ret_owner)
{
	const struct resp_cmd *cmd = resp_cmd_find(q->argv[0]);
	struct resp_cmdref ref = {cmd, q->argc, q->argv, q->argl, NULL};
	long first, last, step;

	if (cmd == NULL || !(cmd->flags & RESP_CMD_KEYS) || (cmd->flags & RESP_CMD_TXN) ||
	    (cmd->arity > 0 && q->argc != cmd->arity) ||
	    (cmd->arity < 0 && q->argc < -cmd->arity) || !c->authed || c->multi)
		return false;
	resp_cmd_keys(cmd, q->argc, &first, &last, &step);
	if (first == 0 || (step > 1 && (q->argc - 1) % step != 0))
		return false;
	*ret_owner = resp_shard_owner(map, ns, &ref, 1);
	return *ret_owner != 0 && *ret_owner != UINT32_MAX;
}

/*
 * The commands read ahead on c from its first (which waits for its owner)
 * on, up to the first that cannot go in a batch, sent to their owners, one
 * call per owner (those of this node served at once).
 */
void resp_shard_flush(struct resp_conn *c)
{
	struct poold *pd = c->rs->pd;
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct resp_batch *b;
	uint32_t owner[RESP_AHEAD];
	char ns[32];
	size_t n, i, k;

	c->batch_wanted = false;
	if (c->batch != NULL || c->nahead == 0)
		return;
	resp_db_name(c, c->db, ns, sizeof(ns));
	for (n = 0; n < c->nahead && resp_batchable(c, map, ns, &c->ahead[n], &owner[n]); n++)
		;
	b = calloc(1, sizeof(*b) + n * sizeof(b->res[0]));
	if (b == NULL || n == 0 || (b->groups = calloc(n, sizeof(*b->groups))) == NULL ||
	    (b->timer = evtimer_new(pd->base, resp_batch_timer, b)) == NULL) {
		/* (the map changed since, or no memory: the first is routed again) */
		if (b != NULL)
			resp_batch_free(b);
		resp_shard_soon(c, n == 0 ? 0 : RESP_SHARD_RETRY_MS);
		return;
	}
	b->c = c;
	b->n = n;
	b->since_ms = units_now_ms();
	for (i = 0; i < n; i++) {
		struct resp_group *g = NULL;

		for (k = 0; k < b->ngroups && g == NULL; k++)
			if (b->groups[k].node == owner[i])
				g = &b->groups[k];
		if (g == NULL) {
			g = &b->groups[b->ngroups++];
			*g = (struct resp_group){.b = b, .node = owner[i]};
			if ((g->cmd = calloc(n, sizeof(*g->cmd))) == NULL) {
				b->ngroups--;
				resp_batch_free(b);
				resp_shard_soon(c, RESP_SHARD_RETRY_MS);
				return;
			}
		}
		g->cmd[g->n++] = i;
	}
	c->batch = b;
	c->fetching = true;
	if (c->shard_room == 0)
		c->shard_room = RESP_SHARD_ROOM;
	b->sending = true;
	for (i = 0; i < b->ngroups; i++)
		if (b->groups[i].node != pd->node_id)
			resp_group_send(&b->groups[i]);
	for (i = 0; i < b->ngroups; i++) /* (after: the others' calls are on their way) */
		if (b->groups[i].node == pd->node_id)
			resp_group_send(&b->groups[i]);
	b->sending = false;
	resp_batch_settled(b);
}

static void resp_reply_free(const void *data, size_t len, void *arg)
{
	(void)len, (void)arg;
	free((void *)(uintptr_t)data);
}

/* c's first command read ahead takes its reply from the batch (not copied: it is the output's). */
static int resp_batch_take(struct resp_conn *c)
{
	struct resp_batch *b = c->batch;
	struct resp_result *r = &b->res[b->next++];

	resp_unhold(c, &b->held, r->status == 0 ? r->len : 0);
	if (r->status == 0 &&
	    (r->len == 0 ||
	     evbuffer_add_reference(resp_output(c), r->reply, r->len, resp_reply_free, NULL) < 0))
		evbuffer_add(resp_output(c), r->reply, r->len);
	else if (r->status == 0)
		r->reply = NULL;
	else
		resp_shard_failed(c, r->status, r->node);
	if (b->next == b->n) {
		c->batch = NULL;
		resp_batch_free(b);
	}
	return RESP_SHARD_DONE;
}

/* ------------------------------------------------------------ routing */

static void resp_shard_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	resp_resume(arg);
}

/* c's command runs again in ms (from the loop); false without memory. */
static bool resp_shard_soon(struct resp_conn *c, unsigned ms)
{
	struct timeval tv = {0, (suseconds_t)ms * 1000};

	if (c->fwd_timer == NULL &&
	    (c->fwd_timer = evtimer_new(c->rs->pd->base, resp_shard_later, c)) == NULL)
		return false;
	evtimer_add(c->fwd_timer, &tv);
	c->fetching = true;
	return true;
}

static bool resp_shard_wait(struct resp_conn *c)
{
	const struct poold_conf *conf = c->rs->pd->conf;
	uint64_t now = units_now_ms();

	if (c->fwd_since_ms == 0)
		c->fwd_since_ms = now;
	if (now - c->fwd_since_ms > (uint64_t)conf->heartbeat_ms * (uint64_t)conf->heartbeat_misses)
		return false;
	return resp_shard_soon(c, RESP_SHARD_RETRY_MS);
}

/*
 * The owner of every key of cmds[0..n): its node id, 0 when they have
 * several, or UINT32_MAX when a command has none (it goes to every owner).
 */
static uint32_t resp_shard_owner(const struct kv_shard_map *map, const char *ns,
				 const struct resp_cmdref *cmds, size_t n)
{
	uint32_t owner = UINT32_MAX, o;
	long first, last, step, k;
	size_t i;

	for (i = 0; i < n; i++) {
		resp_cmd_keys(cmds[i].cmd, cmds[i].argc, &first, &last, &step);
		if (first == 0)
			return map->nowners == 1 ? map->owners[0] : UINT32_MAX;
		for (k = first; k <= last && k < cmds[i].argc; k += step) {
			o = map->owner[kv_shard_of(ns, cmds[i].argv[k], cmds[i].argl[k])];
			if (owner != UINT32_MAX && o != owner)
				return 0;
			owner = o;
		}
	}
	return owner;
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
	    .replicas = (unsigned)pd->conf->resp_replicas,
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
	nr.has_capacity = nr.has_mode = nr.has_gid = nr.has_sharded = nr.has_replicas = 1;
	nr.capacity = spec.capacity;
	nr.replicas = spec.replicas;
	nr.tier = (char *)"dram";
	nr.mode = spec.mode;
	nr.gid = (uint32_t)spec.gid;
	nr.sharded = true;
	if (pd->ask_coordinator != NULL)
		(void)pd->ask_coordinator(pd, c->uid, WIRE_KV_NS, &nr.base);
}

/*
 * SWAPDB at a node's endpoint: asked of the coordinator (resp_db_swap()),
 * answered once this node's definitions show that either database's
 * namespace changed (another client's SWAPDB of one of them may be the
 * change seen first). RESP_SHARD_HERE: cmd_swapdb() answers (its errors, a
 * database swapped with itself, at the coordinator's own endpoint).
 */
static int resp_shard_swapdb(struct resp_conn *c, const struct resp_queued *q)
{
	struct poold *pd = c->rs->pd;
	Pool__KvNsRequest nr = POOL__KV_NS_REQUEST__INIT;
	char now[2][sizeof(c->swap_was[0])];
	long long db[2];
	int i;

	for (i = 0; i < 2; i++)
		if (!resp_ll(q->argv[1 + i], q->argl[1 + i], &db[i]) || db[i] < 0 ||
		    db[i] >= RESP_DBS)
			return RESP_SHARD_HERE;
	if (db[0] == db[1] || pd->conf->role == ROLE_COORDINATOR)
		return RESP_SHARD_HERE;
	for (i = 0; i < 2; i++)
		resp_db_name(c, (int)db[i], now[i], sizeof(now[i]));
	if (c->fwd_since_ms != 0) {
		if (strcmp(now[0], c->swap_was[0]) != 0 || strcmp(now[1], c->swap_was[1]) != 0) {
			resp_ok(c);
			return RESP_SHARD_DONE;
		}
	} else if (pd->kv == NULL ||
		   (kv_ns_find(pd, now[0]) == NULL && kv_ns_find(pd, now[1]) == NULL)) {
		resp_ok(c); /* (two databases without values: nothing changes) */
		return RESP_SHARD_DONE;
	} else {
		memcpy(c->swap_was, now, sizeof(now));
		nr.op = POOL__KV_NS_OP__KV_NS_OP_SWAPDB;
		nr.name = (char *)"";
		nr.has_db = nr.has_other_db = 1;
		nr.db = (uint32_t)db[0];
		nr.other_db = (uint32_t)db[1];
		if (pd->ask_coordinator == NULL ||
		    pd->ask_coordinator(pd, c->uid, WIRE_KV_NS, &nr.base) < 0) {
			resp_err(c, "TRYAGAIN the coordinator cannot be asked now");
			return RESP_SHARD_DONE;
		}
	}
	if (resp_shard_wait(c))
		return RESP_SHARD_WAIT;
	resp_err(c, "TRYAGAIN the coordinator did not swap the databases in time");
	return RESP_SHARD_DONE;
}

/*
 * Every part of fw answered: the command's reply (RESP_SHARD_DONE), or
 * RESP_SHARD_WAIT when a part's shard moved and is asked again in a
 * while. argc: the command's own count of arguments.
 */
static int resp_shard_taken(struct resp_conn *c, struct resp_fwd *fw, const struct resp_queued *q)
{
	size_t i;

	c->fwd = NULL;
	for (i = 0; i < fw->nparts && fw->parts[i].status == 0; i++)
		;
	if (i == fw->nparts && resp_fwd_again(c, fw, q)) {
		c->fwd = fw;
		c->fetching = true;
		return RESP_SHARD_WAIT;
	}
	for (i = 0; i < fw->nparts && fw->parts[i].status == 0; i++)
		;
	if (i < fw->nparts && resp_shard_moved(fw->parts[i].status) && resp_shard_wait(c)) {
		resp_fwd_free(fw); /* (its owners are asked again) */
		return RESP_SHARD_WAIT;
	}
	if (i < fw->nparts)
		resp_shard_failed(c, fw->parts[i].status, fw->parts[i].node);
	else
		resp_fwd_merge(c, fw, q->argc, member_kv_shards(c->rs->pd)->nowners);
	resp_fwd_free(fw);
	return RESP_SHARD_DONE;
}

/*
 * Send a command whose keys have several owners or none (split), or a
 * transaction (exec: c's queue, all its keys owner's), to the owners.
 */
static int resp_fwd_start(struct resp_conn *c, const struct kv_shard_map *map, const char *ns,
			  const struct resp_queued *q, uint32_t owner, bool exec)
{
	struct resp_fwd *fw;
	struct resp_fwd_part *p;
	char cursor[24];
	size_t i;
	int rc = 0;

	fw = calloc(1, sizeof(*fw) + sizeof(fw->parts[0]) * (map->nowners + 1));
	if (fw == NULL) {
		resp_err(c, "ERR out of memory");
		return RESP_SHARD_DONE;
	}
	fw->c = c;
	fw->merge = exec ? MERGE_WHOLE : resp_shard_merge(q->argv[0]);
	if (fw->merge == MERGE_NONE || (exec && (owner == 0 || owner == UINT32_MAX))) {
		resp_fwd_free(fw);
		resp_err(c, RESP_SHARD_CROSSSLOT);
		return RESP_SHARD_DONE;
	}
	if (exec)
		rc = (p = resp_fwd_part(fw, owner, 1)) == NULL ? -ENOMEM : 0;
	else
		rc = resp_fwd_split(c, fw, map, ns, q->argc, q->argv, q->argl, cursor,
				    sizeof(cursor));
	if (rc != 0) {
		resp_fwd_free(fw);
		if (rc < 0)
			resp_err(c, "ERR out of memory");
		return RESP_SHARD_DONE;
	}
	c->fwd = fw;
	fw->pending = fw->nparts;
	for (i = 0; i < fw->nparts; i++)
		resp_fwd_send(c, &fw->parts[i], q->argv, q->argl,
			      fw->merge == MERGE_SCAN ? cursor : NULL, exec);
	if (fw->pending == 0) /* (served here, or not sent: at once) */
		return resp_shard_taken(c, fw, q);
	c->fetching = true;
	return RESP_SHARD_WAIT;
}

/*
 * Where c's command (q; EXEC with c's queue) of database ns runs: here,
 * with its keys' owner in a batch, or split over the owners.
 */
static int resp_shard_start(struct resp_conn *c, const struct kv_shard_map *map,
			    const struct kv_ns *ns, const struct resp_cmd *cmd,
			    const struct resp_queued *q, bool exec)
{
	struct poold *pd = c->rs->pd;
	struct resp_cmdref one = {cmd, q->argc, q->argv, q->argl, NULL}, *refs = &one;
	size_t n = 1, i;
	uint32_t owner;
	long first, last, step;
	bool writes = false;
	int rc = 0;

	resp_cmd_keys(cmd, q->argc, &first, &last, &step);
	if (!exec && step > 1 && (q->argc - 1) % step != 0)
		return RESP_SHARD_HERE; /* (MSET's arguments do not pair: its error, here) */
	if (exec) {
		if ((refs = calloc(c->nqueued, sizeof(*refs))) == NULL) {
			resp_err(c, "ERR out of memory");
			return RESP_SHARD_DONE;
		}
		for (n = 0; n < c->nqueued; n++)
			refs[n] = (struct resp_cmdref){resp_cmd_find(c->queued[n].argv[0]),
						       c->queued[n].argc, c->queued[n].argv,
						       c->queued[n].argl, NULL};
	}
	owner = resp_shard_owner(map, kv_ns_name(ns), refs, n);
	if (exec && c->nwatched > 0 && owner != pd->node_id) {
		/* (its watched keys are this node's: they could change while it runs there) */
		free(refs);
		resp_err(c, RESP_SHARD_CROSSSLOT);
		return RESP_SHARD_DONE;
	}
	/* A write with 2 replicas runs as another owner's would: its reply waits for the backup. */
	for (i = 0; owner == pd->node_id && kv_ns_replicas(ns) > 1 && i < n; i++)
		writes |= (refs[i].cmd->flags & RESP_CMD_WRITES) != 0;
	for (i = 0; exec && (owner != pd->node_id || writes) && i < n; i++)
		if (!(refs[i].cmd->flags & RESP_CMD_KEYS)) { /* (no key to send it with) */
			resp_err(c,
				 "ERR %s in a transaction of a sharded database that runs at "
				 "its keys' owner",
				 refs[i].cmd->name);
			free(refs);
			return RESP_SHARD_DONE;
		}
	if (owner == pd->node_id && !writes) {
		for (i = 0; rc == 0 && i < n; i++)
			rc = resp_shard_serves(pd, ns, refs[i].cmd, refs[i].argc, refs[i].argv,
					       refs[i].argl);
		if (exec)
			free(refs);
		if (rc == 0)
			return RESP_SHARD_HERE;
		if (resp_shard_wait(c))
			return RESP_SHARD_WAIT;
		resp_err(c, "TRYAGAIN the shard of a key is moving to this node");
		return RESP_SHARD_DONE;
	}
	if (exec)
		free(refs);
	if (!exec && resp_batchable(c, map, kv_ns_name(ns), q, &owner)) {
		/* Sent with the commands read after it (resp_shard_flush(), from resp_read_cb). */
		c->batch_wanted = true;
		c->fetching = true;
		return RESP_SHARD_WAIT;
	}
	return resp_fwd_start(c, map, kv_ns_name(ns), q, owner, exec);
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
	const struct kv_shard_map *map = member_kv_shards(pd);
	bool exec = strcasecmp(cmd->name, "exec") == 0;
	const struct kv_ns *ns;
	char name[32];
	int rc;

	if (c->batch != NULL)
		return resp_batch_take(c);
	/* (EXEC's own errors, an empty or aborted transaction; not once it ran, its own writes) */
	if (exec && c->fwd == NULL &&
	    (!c->multi || c->multi_dirty || c->nqueued == 0 || resp_watch_touched(c)))
		return RESP_SHARD_HERE;
	resp_db_name(c, c->db, name, sizeof(name));
	ns = pd->kv != NULL ? kv_ns_find(pd, name) : NULL;
	if (cmd->flags & RESP_CMD_COORD) {
		rc = resp_shard_swapdb(c, q);
	} else if (c->fwd != NULL) {
		rc = resp_shard_taken(c, c->fwd, q);
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
	} else if (!(kv_ns_flags(ns) & HOLD_NS_SHARDED)) {
		resp_err(c, "ERR database %d was made before resp.placement was sharded", c->db);
		rc = RESP_SHARD_DONE;
	} else {
		rc = resp_shard_start(c, map, ns, cmd, q, exec);
	}
	if (rc != RESP_SHARD_WAIT)
		c->fwd_since_ms = 0;
	if (rc == RESP_SHARD_DONE && exec) { /* the transaction is over, as EXEC ends it */
		c->multi = false;
		resp_queue_clear(c);
		resp_watch_clear(c);
	}
	return rc;
}

/* Whether key of database ns is in a shard this node serves (WATCH is kept there). */
bool resp_shard_here(struct resp_conn *c, const char *ns, const char *key, size_t klen)
{
	const struct kv_shard_map *map = member_kv_shards(c->rs->pd);

	return map->nowners > 0 && map->owner[kv_shard_of(ns, key, klen)] == c->rs->pd->node_id;
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
	if (c->batch != NULL) {
		if (c->batch->pending > 0) {
			c->batch->c = NULL;
			evtimer_del(c->batch->timer);
		} else {
			resp_batch_free(c->batch);
		}
		c->batch = NULL;
	}
	if (c->fwd_timer != NULL)
		event_free(c->fwd_timer);
	c->fwd_timer = NULL;
}

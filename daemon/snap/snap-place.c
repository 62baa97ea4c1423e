/*
 * daemon/snap/snap-place.c - a snapshot's node copy made ahead of use, on the
 * nodes an admin names (poolctl snap place NAME NODE...), so that restores
 * there start from a local copy.
 *
 * The coordinator checks the request and asks each node's poold (its own
 * without the network); it answers the client once every node answered.
 * A poold cannot fill a copy itself: filling reads the store through
 * libpool's data path, which lives in clients. So each node runs a helper,
 * `pool-snap-helper SOCKET place NAME` (daemon/snap/snap-helper.c, a libpool
 * client), which opens the snapshot and asks this poold for the copy as a
 * clone would; its exit status is the node's answer, the line it writes
 * to stderr the reason.
 *
 * The helper runs as poold's user, root, and could read any snapshot. That
 * gives the admin nothing: place only makes the node's memory copy of an
 * image, and poold hands a copy's fd only to clients that name the
 * snapshot's id, which only the readers of its manifest know (snap-copy.c).
 *
 * The same helpers count snapshot pages' references again after this
 * coordinator restarted (`pool-snap-helper SOCKET gc`, what `poolctl snap
 * gc` does, which reads every manifest):
 * a few seconds after the last manifest or page came back from a lender,
 * and again, later and later, while a manifest cannot be read yet.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/control/control.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"
#include "proto/pool_contract.h"

#define PLACE_HELPERS_MAX 4	 /* helpers running at once on a node */
#define PLACE_TIMEOUT_S (5 * 60) /* then the helper is killed */
#define PLACE_NODES_MAX 64	 /* nodes in one request */
#define PLACE_MSG_MAX 200	 /* bytes of a node's error message */
#define RECOUNT_QUIET_MS 3000	 /* after the last page or manifest came back */
#define RECOUNT_RETRY_MAX_MS (5 * 60 * 1000)

extern char **environ;

typedef void (*place_done_cb)(struct poold *pd, void *arg, int rc, const char *msg);

/* A helper process filling this node's copy of one snapshot. */
struct place_helper {
	TAILQ_ENTRY(place_helper) entry;
	struct poold *pd;
	pid_t pid;
	int pidfd, errfd; /* errfd: the read end of the helper's stderr */
	struct event *exit_ev, *timeout_ev;
	bool timed_out;
	place_done_cb done;
	void *arg;
	char name[POOL_SNAP_NAME_MAX + 1]; /* the snapshot placed; empty: a snap gc */
};

struct snap_places {
	TAILQ_HEAD(, place_helper) helpers;
	unsigned count;
	/* Coordinator: counting the references again after a restart. */
	struct event *recount_ev;
	bool recount_running, recount_failed;
	uint64_t recount_retry_ms; /* the wait after a failed count */
};

/* Coordinator: one request, waiting for its nodes. */
struct place_round {
	struct req *q;
	size_t n, outstanding;
	struct place_slot {
		struct place_round *round;
		uint32_t node;
		int code;
		char msg[PLACE_MSG_MAX];
	} slots[PLACE_NODES_MAX];
};

/* Node: the coordinator's request a helper answers. */
struct place_asker {
	struct conn *conn;
	uint64_t req_id;
};

/*
 * The helper to run: $POOL_SNAP_HELPER, else the one built beside this
 * poold (a build tree's, for the tests), else the installed one.
 */
static void place_helper_path(char *buf, size_t len)
{
	const char *env = getenv("POOL_SNAP_HELPER");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env != NULL && env[0] != '\0') {
		snprintf(buf, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(buf, len, "%s/pool-snap-helper", exe) < len &&
			    access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, len, "%s/pool-snap-helper", POOL_PKGLIBEXECDIR);
}

static struct snap_places *place_space(struct poold *pd)
{
	if (pd->snap_places == NULL) {
		pd->snap_places = calloc(1, sizeof(*pd->snap_places));
		if (pd->snap_places != NULL)
			TAILQ_INIT(&pd->snap_places->helpers);
	}
	return pd->snap_places;
}

/* The line the helper wrote to stderr, why it failed (it has exited: no blocking read). */
static void place_errmsg(struct place_helper *h, char *buf, size_t len)
{
	ssize_t n = read(h->errfd, buf, len - 1);
	char *nl;

	buf[n > 0 ? n : 0] = '\0';
	nl = strchr(buf, '\n');
	if (nl != NULL)
		*nl = '\0';
}

/* Reap the helper, forget it, and tell its caller. */
static void place_helper_end(struct place_helper *h, int rc, const char *msg)
{
	struct snap_places *sp = h->pd->snap_places;
	char errbuf[PLACE_MSG_MAX];
	int status = 0;

	if (waitpid(h->pid, &status, 0) < 0 && rc == 0)
		rc = -ECHILD;
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		place_errmsg(h, errbuf, sizeof(errbuf));
		rc = -EIO;
		msg = errbuf;
		if (errbuf[0] == '\0')
			snprintf(errbuf, sizeof(errbuf), "the helper %s %d",
				 WIFEXITED(status) ? "exited with" : "was killed by signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	TAILQ_REMOVE(&sp->helpers, h, entry);
	sp->count--;
	event_free(h->exit_ev);
	event_free(h->timeout_ev);
	close(h->pidfd);
	close(h->errfd);
	h->done(h->pd, h->arg, rc, msg);
	free(h);
}

static void place_helper_exited(evutil_socket_t fd, short what, void *arg)
{
	struct place_helper *h = arg;

	(void)fd;
	(void)what;
	if (h->timed_out)
		place_helper_end(h, -ETIMEDOUT, "the helper took over 5 minutes: killed");
	else
		place_helper_end(h, 0, NULL);
}

static void place_helper_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct place_helper *h = arg;

	(void)fd;
	(void)what;
	log_warnx("snap %s%s: helper %d runs over %d s: killing it", h->name[0] ? "place " : "gc",
		  h->name, (int)h->pid, PLACE_TIMEOUT_S);
	h->timed_out = true;
	kill(h->pid, SIGKILL); /* its pidfd becomes readable when it is gone */
}

/* Start `pool-snap-helper SOCKET place NAME` (or gc) with stdin and stdout on /dev/null. */
static int place_spawn(struct poold *pd, struct place_helper *h, int errpipe[2])
{
	char helper[PATH_MAX];
	char *argv[] = {helper, pd->conf->socket, h->name[0] ? "place" : "gc",
			h->name[0] ? h->name : NULL, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int rc;

	place_helper_path(helper, sizeof(helper));
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE); /* poold ignores it; an exec would keep that */
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, errpipe[1], 2);
	rc = -posix_spawn(&h->pid, helper, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc < 0)
		log_warnx("snap %s%s: cannot run %s: %s", h->name[0] ? "place " : "gc", h->name,
			  helper, err_str(rc));
	return rc;
}

/*
 * Fill this node's copy of snapshot name with a helper (name "": count the
 * snapshot pages' references again); done gets the result later (not when
 * this fails: the caller answers then).
 */
static int place_here(struct poold *pd, const char *name, place_done_cb done, void *arg,
		      char *errbuf, size_t errlen)
{
	struct snap_places *sp = place_space(pd);
	struct timeval tv = {PLACE_TIMEOUT_S, 0};
	struct place_helper *h;
	int errpipe[2], rc;

	if (sp == NULL)
		return -ENOMEM;
	if (sp->count >= PLACE_HELPERS_MAX) {
		snprintf(errbuf, errlen, "%d places run on this node already", PLACE_HELPERS_MAX);
		return -EBUSY;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->pd = pd;
	h->done = done;
	h->arg = arg;
	h->pidfd = -1;
	snprintf(h->name, sizeof(h->name), "%s", name);
	/* Non-blocking: the helper has exited when we read, but need not have written. */
	if (pipe2(errpipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		goto out_free;
	}
	rc = place_spawn(pd, h, errpipe);
	close(errpipe[1]);
	h->errfd = errpipe[0];
	if (rc < 0)
		goto out_pipe;
	h->pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
	if (h->pidfd < 0) {
		rc = -errno;
		log_warn("pidfd_open of the snap place helper %d", (int)h->pid);
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
		goto out_pipe;
	}
	h->exit_ev = event_new(pd->base, h->pidfd, EV_READ, place_helper_exited, h);
	h->timeout_ev = evtimer_new(pd->base, place_helper_timeout, h);
	if (h->exit_ev == NULL || h->timeout_ev == NULL || event_add(h->exit_ev, NULL) < 0 ||
	    evtimer_add(h->timeout_ev, &tv) < 0) {
		rc = -ENOMEM;
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
		goto out_events;
	}
	TAILQ_INSERT_TAIL(&sp->helpers, h, entry);
	sp->count++;
	log_debug("snap %s%s: helper %d started", name[0] ? "place " : "gc", name, (int)h->pid);
	return 0;

out_events:
	if (h->exit_ev != NULL)
		event_free(h->exit_ev);
	if (h->timeout_ev != NULL)
		event_free(h->timeout_ev);
	close(h->pidfd);
out_pipe:
	close(h->errfd);
out_free:
	free(h);
	if (errbuf[0] == '\0')
		snprintf(errbuf, errlen, "cannot run pool-snap-helper: %s", err_str(rc));
	return rc;
}

/* Node: a helper ended; answer the coordinator, if its link is still the same. */
static void place_answer(struct poold *pd, void *arg, int rc, const char *msg)
{
	struct place_asker *a = arg;
	Pool__SnapPlaceReply rep = POOL__SNAP_PLACE_REPLY__INIT;
	Pool__SnapPlaceResult res = POOL__SNAP_PLACE_RESULT__INIT;
	Pool__SnapPlaceResult *resp = &res;

	res.node = pd->node_id;
	res.code = rc;
	res.message = (char *)(rc < 0 ? (msg != NULL ? msg : err_str(rc)) : NULL);
	rep.results = &resp;
	rep.n_results = 1;
	if (conn_alive(a->conn))
		conn_send(a->conn, WIRE_SNAP_PLACE_REPLY, a->req_id, &rep.base);
	conn_unref(a->conn);
	free(a);
}

/* Node: the coordinator asks this node to place a snapshot (peer.c). */
void snap_place_serve(struct poold *pd, struct conn *conn, uint64_t req_id,
		      const Pool__SnapPlace *m)
{
	struct place_asker *a;
	char err[PLACE_MSG_MAX] = "";
	int rc;

	if (!name_ok(m->name, POOL_SNAP_NAME_MAX, false)) {
		conn_send_error(conn, req_id, -EINVAL, "bad snapshot name");
		return;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		conn_send_error(conn, req_id, -ENOMEM, NULL);
		return;
	}
	a->conn = conn_ref(conn);
	a->req_id = req_id;
	rc = place_here(pd, m->name, place_answer, a, err, sizeof(err));
	if (rc < 0)
		place_answer(pd, a, rc, err[0] != '\0' ? err : NULL);
}

/* Coordinator: every node answered; reply to the client. */
static void place_round_end(struct place_round *pr)
{
	Pool__SnapPlaceReply rep = POOL__SNAP_PLACE_REPLY__INIT;
	Pool__SnapPlaceResult res[PLACE_NODES_MAX], *resp[PLACE_NODES_MAX];
	size_t i;

	for (i = 0; i < pr->n; i++) {
		pool__snap_place_result__init(&res[i]);
		res[i].node = pr->slots[i].node;
		res[i].code = pr->slots[i].code;
		res[i].message = pr->slots[i].code < 0 ? pr->slots[i].msg : NULL;
		resp[i] = &res[i];
	}
	rep.results = resp;
	rep.n_results = pr->n;
	req_finish(pr->q, req_reply(pr->q, WIRE_SNAP_PLACE_REPLY, &rep.base));
	free(pr);
}

static void place_slot_done(struct place_slot *s, int rc, const char *msg)
{
	s->code = rc;
	if (rc < 0)
		snprintf(s->msg, sizeof(s->msg), "%s", msg != NULL && *msg ? msg : err_str(rc));
	if (--s->round->outstanding == 0)
		place_round_end(s->round);
}

/* Coordinator: its own helper ended. */
static void place_self_done(struct poold *pd, void *arg, int rc, const char *msg)
{
	(void)pd;
	place_slot_done(arg, rc, msg);
}

/* Coordinator: a node answered (or its link dropped). */
static void place_node_done(struct poold *pd, void *arg, int rc, const struct wire_hdr *hdr,
			    const uint8_t *payload)
{
	struct place_slot *s = arg;
	ProtobufCMessage *msg = NULL;
	const char *why = NULL;

	(void)pd;
	if (hdr == NULL) {
		place_slot_done(s, rc, "the node's link dropped");
		return;
	}
	if (wire_msg_unpack(hdr->type, payload, hdr->len, &msg) < 0) {
		rc = -EPROTO;
		why = "the node sent a malformed answer";
	} else if (hdr->type == WIRE_ERROR) {
		const Pool__Error *e = (const Pool__Error *)msg;

		rc = e->code < 0 ? e->code : -EPROTO;
		why = e->message;
	} else if (hdr->type == WIRE_SNAP_PLACE_REPLY &&
		   ((Pool__SnapPlaceReply *)msg)->n_results == 1) {
		const Pool__SnapPlaceResult *r = ((Pool__SnapPlaceReply *)msg)->results[0];

		rc = r->code < 0 ? r->code : 0;
		why = r->message;
	} else {
		rc = -EPROTO;
		why = "the node sent an unexpected answer";
	}
	place_slot_done(s, rc, why);
	wire_msg_free(msg);
}

/* Coordinator: the nodes are 1 to 64 known ids, each once. */
static int place_check_nodes(struct req *q, const Pool__SnapPlace *m)
{
	size_t i, j;

	if (m->n_nodes == 0 || m->n_nodes > PLACE_NODES_MAX)
		return req_errorf(q, -EINVAL, "place on 1 to %d nodes, not %zu", PLACE_NODES_MAX,
				  m->n_nodes);
	for (i = 0; i < m->n_nodes; i++) {
		if (member_find(q->pd, m->nodes[i]) == NULL)
			return req_errorf(q, -ENOENT,
					  "no node %u in the cluster (see poolctl nodes)",
					  m->nodes[i]);
		for (j = 0; j < i; j++)
			if (m->nodes[j] == m->nodes[i])
				return req_errorf(q, -EINVAL, "node %u is named twice",
						  m->nodes[i]);
	}
	return 0;
}

/* Coordinator: ask one node; a node that is not up gets its error at once. */
static void place_ask(struct poold *pd, struct place_slot *s, const char *name)
{
	Pool__SnapPlace req = POOL__SNAP_PLACE__INIT;
	struct member *m = member_find(pd, s->node);
	char err[PLACE_MSG_MAX] = "";
	int rc;

	if (s->node == pd->node_id) {
		rc = place_here(pd, name, place_self_done, s, err, sizeof(err));
		if (rc < 0)
			place_slot_done(s, rc, err);
		return;
	}
	if (m == NULL || m->state != MEMBER_UP) {
		place_slot_done(s, -EHOSTDOWN, "the node is not up");
		return;
	}
	req.name = (char *)name;
	req.n_nodes = 1;
	req.nodes = &s->node;
	if (coord_call(pd, s->node, WIRE_SNAP_PLACE, &req.base, place_node_done, s) < 0)
		place_slot_done(s, -ENOTCONN, "the node is not connected");
}

/* Coordinator: an admin's place, on the nodes it names. */
static int place_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__SnapPlace *m = (const Pool__SnapPlace *)msg;
	struct place_round *pr;
	size_t i;
	int rc;

	if (!name_ok(m->name, POOL_SNAP_NAME_MAX, false))
		return req_errorf(q, -EINVAL, "snapshot name: 1-%d characters of [A-Za-z0-9._:-]",
				  POOL_SNAP_NAME_MAX);
	rc = place_check_nodes(q, m);
	if (rc < 0)
		return rc;
	pr = calloc(1, sizeof(*pr));
	if (pr == NULL || (pr->q = req_hold(q)) == NULL) {
		free(pr);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	pr->n = m->n_nodes;
	/* One more than the nodes, so that answers given at once cannot end the round early. */
	pr->outstanding = pr->n + 1;
	for (i = 0; i < pr->n; i++) {
		pr->slots[i].round = pr;
		pr->slots[i].node = m->nodes[i];
		place_ask(q->pd, &pr->slots[i], m->name);
	}
	if (--pr->outstanding == 0)
		place_round_end(pr);
	return REQ_LATER;
}

static void recount_arm(struct snap_places *sp, uint64_t ms)
{
	struct timeval tv = units_timeval(ms);

	evtimer_add(sp->recount_ev, &tv);
}

/* The helper's snap gc ended: done, or again later. */
static void recount_done(struct poold *pd, void *arg, int rc, const char *msg)
{
	struct snap_places *sp = pd->snap_places;

	(void)arg;
	sp->recount_running = false;
	if (rc == -ESHUTDOWN)
		return;
	if (rc == 0) {
		log_info("snapshot pages' references counted again after the restart (snap gc)");
		events_add(pd, "kv", "snapshot pages' references counted again after the restart");
		sp->recount_failed = false;
		sp->recount_retry_ms = 0;
		return;
	}
	sp->recount_retry_ms =
	    MIN(MAX(sp->recount_retry_ms * 2, UINT64_C(10000)), (uint64_t)RECOUNT_RETRY_MAX_MS);
	if (!sp->recount_failed)
		log_warnx("snap gc after the restart: %s; again in %llu s and later, until it "
			  "succeeds",
			  msg != NULL && *msg ? msg : err_str(rc),
			  (unsigned long long)sp->recount_retry_ms / 1000);
	sp->recount_failed = true;
	recount_arm(sp, sp->recount_retry_ms);
}

static void recount_fire(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;
	struct snap_places *sp = pd->snap_places;
	char err[PLACE_MSG_MAX] = "";
	int rc;

	(void)fd;
	(void)what;
	if (sp->recount_running) {
		recount_arm(sp, RECOUNT_QUIET_MS);
		return;
	}
	rc = place_here(pd, "", recount_done, NULL, err, sizeof(err));
	if (rc < 0)
		recount_done(pd, NULL, rc, err);
	else
		sp->recount_running = true;
}

/*
 * Coordinator: a snapshot manifest or page came back from a lender with
 * its references unknown (this coordinator restarted): count them again
 * once they stop coming.
 */
void snap_recount_want(struct poold *pd)
{
	struct snap_places *sp = place_space(pd);

	if (sp == NULL)
		return;
	if (sp->recount_ev == NULL &&
	    (sp->recount_ev = evtimer_new(pd->base, recount_fire, pd)) == NULL)
		return;
	sp->recount_retry_ms = 0;
	recount_arm(sp, RECOUNT_QUIET_MS);
}

/* poold stops: kill the helpers and tell their callers. */
void snap_place_close(struct poold *pd)
{
	struct snap_places *sp = pd->snap_places;
	struct place_helper *h;

	if (sp == NULL)
		return;
	while ((h = TAILQ_FIRST(&sp->helpers)) != NULL) {
		kill(h->pid, SIGKILL);
		place_helper_end(h, -ESHUTDOWN, "poold stopped");
	}
	if (sp->recount_ev != NULL)
		event_free(sp->recount_ev);
	free(sp);
	pd->snap_places = NULL;
}

const struct ctl_handler snap_place_handlers[] = {
    {WIRE_SNAP_PLACE, CTL_ADMIN, AT_COORD, place_request, NULL},
    {0, 0, 0, NULL, NULL},
};

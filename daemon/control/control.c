/*
 * daemon/control/control.c - the local control socket.
 *
 * Each client is a framed connection (conn.c). The first message must be
 * Hello and every request gets exactly one reply. Caller credentials come
 * from SO_PEERCRED and SO_PEERGROUPS and are checked per message type
 * against the handler table.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/control/control.h"
#include "daemon/ha/ha.h"
#include "daemon/net/net.h"
#include "proto/pool_contract.h"

#define CTL_MAX_GROUPS 64

struct ctl_conn;

struct ctl_uid {
	LIST_ENTRY(ctl_uid) entry;
	uid_t uid;
	unsigned count;
	TAILQ_HEAD(, ctl_conn) conns; /* its connections, for its share of unread replies */
};

struct ctl_conn {
	TAILQ_ENTRY(ctl_conn) entry;
	TAILQ_ENTRY(ctl_conn) uid_entry;
	struct control *ctl;
	struct conn *conn;
	struct ctl_uid *u;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t groups[CTL_MAX_GROUPS];
	int ngroups;
	uint64_t session;
	bool hello_done;
};

struct control {
	struct poold *pd;
	struct evconnlistener *listener;
	char *path;
	TAILQ_HEAD(, ctl_conn) conns;
	LIST_HEAD(, ctl_uid) uids;
	unsigned nconns;
};

static const struct control_wiring *wiring;
static const struct ctl_handler *handlers[WIRE_TYPE_MAX]; /* wiring's tables, by type */

/* Send an unsolicited frame (request id 0) to the client of a session, if it is still here. */
void control_notify(struct poold *pd, uint64_t session, uint16_t type, const ProtobufCMessage *msg)
{
	struct ctl_conn *c;

	if (pd->control == NULL) /* (a poold's cores without its socket: the unit tests) */
		return;
	TAILQ_FOREACH(c, &pd->control->conns, entry)
		if (c->session == session) {
			if (type == WIRE_REGION_NOTICE) {
				const Pool__RegionNotice *rn = (const Pool__RegionNotice *)msg;

				grant_notice(pd, session, rn->name,
					     rn->event == POOL__REGION_EVENT__REGION_EVENT_GONE);
			}
			conn_send(c->conn, type, 0, msg);
			return;
		}
}

/* The sessions of the connected clients; free() the array. */
int control_sessions(struct poold *pd, uint64_t **ret_sessions, size_t *ret_n)
{
	struct ctl_conn *c;
	uint64_t *s;
	size_t n = 0;

	s = calloc(pd->control->nconns ? pd->control->nconns : 1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	TAILQ_FOREACH(c, &pd->control->conns, entry)
		s[n++] = c->session;
	*ret_sessions = s;
	*ret_n = n;
	return 0;
}

/* Number of connected clients. */
unsigned control_nclients(const struct control *ctl)
{
	return ctl->nconns;
}

static void ctl_uid_put(struct control *ctl, struct ctl_uid *u)
{
	if (--u->count == 0) {
		LIST_REMOVE(u, entry);
		free(u);
	}
}

/* The connection ended: forget the client. */
static void ctl_closed(struct conn *conn, void *arg)
{
	struct ctl_conn *c = arg;
	struct control *ctl = c->ctl;

	wiring->session_end(ctl->pd, c->session);
	TAILQ_REMOVE(&ctl->conns, c, entry);
	TAILQ_REMOVE(&c->u->conns, c, uid_entry);
	ctl->nconns--;
	ctl_uid_put(ctl, c->u);
	log_debug("%s disconnected", conn_desc(conn));
	free(c);
}

/* The handler of a request type, or NULL. */
const struct ctl_handler *control_handler(uint16_t type)
{
	return type < WIRE_TYPE_MAX ? handlers[type] : NULL;
}

/* Count how long a request took, now that it is answered. */
static void req_timed(struct req *r)
{
	static const uint64_t bounds[] = REQ_LATENCY_BOUNDS_US;
	uint64_t us = units_now_us() - r->start_us;
	struct req_latency *l;
	size_t i;

	if (r->pd->latency == NULL || r->type >= WIRE_TYPE_MAX || r->start_us == 0)
		return;
	l = &r->pd->latency[r->type];
	for (i = 0; i < ARRAY_SIZE(bounds) && us > bounds[i]; i++)
		;
	l->bucket[i]++;
	l->count++;
	l->sum_us += us;
	r->start_us = 0; /* once */
}

/* Reply to a request; a local client's session takes in what the reply grants it. */
int req_reply(struct req *r, uint16_t type, const ProtobufCMessage *msg)
{
	int rc;

	req_timed(r);
	if ((type == WIRE_REGION_REPLY || type == WIRE_KV_REPLY) && r->session != 0 &&
	    r->node == r->pd->node_id)
		grant_reply(r->pd, r->session, type, msg);
	if (r->answer != NULL) /* (asked by another node) */
		return r->answer(r, type, msg);
	rc = wiring->hold_reply(r->pd, r->conn, type, r->id, msg);
	if (rc == 0 && r->with_file)
		rc = wiring->reply_with_file(r, type, msg);
	return rc != 0 ? MIN(rc, 0) : conn_send(r->conn, type, r->id, msg);
}

/* Send the error reply of code, with the message req_errorf() recorded. */
void req_send_error(struct req *r, int code)
{
	Pool__Error err = POOL__ERROR__INIT;

	req_timed(r);
	if (r->answer == NULL) {
		conn_send_error(r->conn, r->id, code, r->errmsg);
		return;
	}
	err.code = code;
	err.message = r->errmsg[0] != '\0' ? r->errmsg : (char *)err_str(code);
	r->answer(r, WIRE_ERROR, &err.base);
}

/*
 * Record the message for the error reply of a request and return code, so
 * handlers can `return req_errorf(r, -EINVAL, ...)`.
 */
int req_errorf(struct req *r, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

/* A copy of r that outlives the handler, for a reply sent later by req_finish(). */
struct req *req_hold(const struct req *r)
{
	struct req *held = malloc(sizeof(*held));

	if (held == NULL)
		return NULL;
	*held = *r;
	if (held->conn != NULL)
		conn_ref(held->conn);
	return held;
}

/*
 * End a held request: rc < 0 sends the error reply (rc >= 0 means the reply
 * was sent already), then frees it.
 */
void req_finish(struct req *r, int rc)
{
	if (rc < 0)
		req_send_error(r, rc);
	if (r->conn != NULL)
		conn_unref(r->conn);
	free(r);
}

/* Whether the caller has the permission perm; what: the request, for the error. */
static int control_permitted(struct req *r, enum ctl_perm perm, const char *what)
{
	if (perm == CTL_ADMIN && !r->admin)
		return req_errorf(r, -EPERM, "%s needs root or the admin group", what);
	if (perm == CTL_ROOT && !r->root)
		return req_errorf(r, -EPERM, "%s needs root or poold's own user", what);
	return 0;
}

/* The permission of the request's op, when the handler's table names it. */
static int control_op_permitted(struct req *r, const struct ctl_handler *h,
				const ProtobufCMessage *msg)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, "op");
	const struct ctl_op *o;
	char what[64], name[WIRE_ENUM_NAME_MAX];
	int op;

	if (f == NULL || f->type != PROTOBUF_C_TYPE_ENUM || f->label != PROTOBUF_C_LABEL_REQUIRED)
		return 0;
	op = *(const int *)((const char *)msg + f->offset);
	for (o = h->ops; o->op != 0; o++)
		if (o->op == op) {
			snprintf(what, sizeof(what), "%s %s", wire_type_name(h->type),
				 wire_enum_name(f->descriptor, op, name, sizeof(name)));
			return control_permitted(r, o->perm, what);
		}
	return 0;
}

/*
 * Serve one request from a client or, at the coordinator, one forwarded by
 * a node: check the caller's permission, unpack, run the handler here or
 * forward it to the coordinator, and make sure an error gets its reply.
 * The request is unpacked at most once, and a request forwarded as it is
 * only when what it asks must be read here first.
 */
void control_dispatch(struct req *r, uint16_t type, const uint8_t *payload, size_t len)
{
	const struct ctl_handler *h = control_handler(type);
	ProtobufCMessage *msg = NULL;
	bool local;
	int rc;

	r->pd->requests++;
	r->errmsg[0] = '\0';
	r->type = type;
	r->start_us = units_now_us();
	if (h == NULL) {
		rc = req_errorf(r, -EOPNOTSUPP, "message type %u is not a request poold serves",
				type);
		goto out_error;
	}
	if (ha_standby(r->pd) && type != WIRE_STATUS) {
		struct ha_info ha;

		ha_describe(r->pd, &ha);
		rc = req_errorf(r, POOL_ECOORD,
				"this poold is a standby coordinator; the coordinator is %s",
				ha.leader[0] != '\0' ? ha.leader : "not elected yet");
		goto out_error;
	}
	(void)ha_epoch(r->pd, NULL); /* (a deposed leader stops here, before it acts) */
	rc = control_permitted(r, h->perm, wire_type_name(type));
	if (rc < 0)
		goto out_error;
	/* A local session's close or release ends its grants before anything else. */
	local = r->node == r->pd->node_id && r->session != 0;
	if (local && grant_wants(r->pd, r->session, type) &&
	    wire_msg_unpack(type, payload, len, &msg) == 0)
		grant_request(r->pd, r->session, type, msg);
	if (h->where == AT_COORD && r->pd->conf->role == ROLE_NODE) {
		/* (the coordinator's reply passes here on its way back: read it now) */
		if (local && (type == WIRE_REGION_CREATE || type == WIRE_REGION_OPEN) &&
		    (msg != NULL || wire_msg_unpack(type, payload, len, &msg) == 0))
			r->with_file = wiring->wants_file(type, msg);
		rc = wiring->forward(r, type, payload, len);
		goto out;
	}
	if (msg == NULL && wire_msg_unpack(type, payload, len, &msg) < 0) {
		rc = req_errorf(r, -EBADMSG, "malformed %s message", wire_type_name(type));
		goto out;
	}
	if (h->ops != NULL && (rc = control_op_permitted(r, h, msg)) < 0)
		goto out;
	if (h->where == AT_ROUTE && (rc = wiring->route(r, type, msg)) != CTL_NOT_ROUTED)
		goto out;
	if (h->where == AT_ROUTE && r->pd->conf->role == ROLE_NODE) { /* (the coordinator's) */
		rc = wiring->forward(r, type, payload, len);
		goto out;
	}
	if (local)
		r->with_file = wiring->wants_file(type, msg);
	rc = h->fn(r, msg);
out:
	wire_msg_free(msg);
	if (rc >= 0)
		return;
out_error:
	log_debug("%s: %s: %s", r->conn != NULL ? conn_desc(r->conn) : "a node's call",
		  wire_type_name(type), r->errmsg[0] ? r->errmsg : err_str(rc));
	req_send_error(r, rc);
}

static bool ctl_is_admin(const struct ctl_conn *c)
{
	gid_t admin = c->ctl->pd->admin_gid;
	int i;

	if (c->uid == 0 || c->uid == geteuid())
		return true;
	if (admin == (gid_t)-1)
		return false;
	if (c->gid == admin)
		return true;
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i] == admin)
			return true;
	return false;
}

/* The first frame from a client: Hello with our protocol version, or a refusal and a close. */
static void ctl_hello(struct ctl_conn *c, const struct wire_hdr *hdr, const uint8_t *payload)
{
	Pool__HelloReply reply = POOL__HELLO_REPLY__INIT;
	Pool__Hello *hello = NULL;
	char msg[128];
	int rc = POOL_EPROTOCOL;

	if (hdr->type != WIRE_HELLO) {
		snprintf(msg, sizeof(msg), "the first message must be hello, not %s",
			 wire_type_name(hdr->type));
		goto out_refuse;
	}
	if (wire_msg_unpack(WIRE_HELLO, payload, hdr->len, (ProtobufCMessage **)&hello) < 0) {
		snprintf(msg, sizeof(msg), "malformed hello message");
		goto out_refuse;
	}
	if (hello->version != WIRE_VERSION) {
		rc = POOL_EVERSION;
		snprintf(msg, sizeof(msg),
			 "protocol version %u is not supported: this poold speaks version %u",
			 hello->version, WIRE_VERSION);
		goto out_refuse;
	}
	c->hello_done = true;
	reply.version = WIRE_VERSION;
	reply.server_version = PACKAGE_VERSION;
	reply.node_id = c->ctl->pd->node_id;
	reply.transports = c->ctl->pd->conf->fabric_transports;
	log_debug("%s: hello (%s)", conn_desc(c->conn), hello->name ? hello->name : "");
	wire_msg_free(&hello->base);
	conn_send(c->conn, WIRE_HELLO_REPLY, hdr->req_id, &reply.base);
	return;
out_refuse:
	wire_msg_free(hello ? &hello->base : NULL);
	log_debug("%s: %s", conn_desc(c->conn), msg);
	conn_send_error(c->conn, hdr->req_id, rc, msg);
	conn_close_later(c->conn);
}

/* One complete frame from a client. */
static void ctl_frame(struct conn *conn, const struct wire_hdr *hdr, const uint8_t *payload,
		      void *arg)
{
	struct ctl_conn *c = arg;
	struct req r = {.pd = c->ctl->pd,
			.conn = conn,
			.id = hdr->req_id,
			.uid = c->uid,
			.gid = c->gid,
			.pid = c->pid,
			.node = c->ctl->pd->node_id,
			.session = c->session};

	if (!c->hello_done) {
		ctl_hello(c, hdr, payload);
		return;
	}
	r.admin = ctl_is_admin(c);
	r.root = c->uid == 0 || c->uid == geteuid();
	control_dispatch(&r, hdr->type, payload, hdr->len);
}

/*
 * One uid's connections share control.max_output_per_uid of unread
 * replies: past it, a connection of that uid whose replies wait takes no
 * more requests until they are out (256 connections left unread would
 * otherwise each hold their own few frames).
 */
static bool ctl_may_read(struct conn *conn, void *arg)
{
	struct ctl_conn *c = arg, *o;
	size_t sum = 0;

	(void)conn;
	TAILQ_FOREACH(o, &c->u->conns, uid_entry)
		if ((sum += conn_output_len(o->conn)) >
		    (size_t)c->ctl->pd->conf->max_output_per_uid)
			return false;
	return true;
}

static const struct conn_ops ctl_conn_ops = {
    .frame = ctl_frame,
    .closed = ctl_closed,
    .may_read = ctl_may_read,
};

static struct ctl_uid *ctl_uid_get(struct control *ctl, uid_t uid)
{
	struct ctl_uid *u;

	LIST_FOREACH(u, &ctl->uids, entry)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->uid = uid;
	TAILQ_INIT(&u->conns);
	LIST_INSERT_HEAD(&ctl->uids, u, entry);
	return u;
}

/* Refuse a connection over a limit: one error frame, written best-effort, then close. */
static void ctl_refuse(int fd, int code, const char *msg)
{
	Pool__Error err = POOL__ERROR__INIT;
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};

	err.code = code;
	err.message = (char *)msg;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	wire_send_frame(fd, WIRE_ERROR, 0, &err.base);
	close(fd);
}

static void ctl_accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			  int salen, void *arg)
{
	struct control *ctl = arg;
	struct poold_conf *conf = ctl->pd->conf;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ctl_conn *c;
	struct ctl_uid *u;
	char msg[128];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn("SO_PEERCRED");
		close(fd);
		return;
	}
	if (ctl->nconns >= (unsigned)conf->max_clients) {
		static struct log_limit said;

		log_warnx_limited(&said, 10000,
				  "refusing client pid %d: %u connections "
				  "(control.max_clients)",
				  (int)cred.pid, ctl->nconns);
		snprintf(msg, sizeof(msg),
			 "too many connections to poold (control.max_clients = %lld)",
			 (long long)conf->max_clients);
		ctl_refuse(fd, -EMFILE, msg);
		return;
	}
	u = ctl_uid_get(ctl, cred.uid);
	if (u == NULL) {
		close(fd);
		return;
	}
	if (u->count >= (unsigned)conf->max_clients_per_uid) {
		static struct log_limit said;

		log_warnx_limited(&said, 10000,
				  "refusing client pid %d: uid %u has %u connections "
				  "(control.max_clients_per_uid)",
				  (int)cred.pid, (unsigned)cred.uid, u->count);
		snprintf(msg, sizeof(msg),
			 "too many connections from uid %u (control.max_clients_per_uid = %lld)",
			 (unsigned)cred.uid, (long long)conf->max_clients_per_uid);
		ctl_refuse(fd, -EUSERS, msg);
		return;
	}
	u->count++;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		goto out_uid;
	}
	c->ctl = ctl;
	c->session = ++ctl->pd->next_session;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	c->u = u;
	len = sizeof(c->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) == 0)
		c->ngroups = (int)(len / sizeof(gid_t));
	snprintf(msg, sizeof(msg), "client pid %d uid %u", (int)cred.pid, (unsigned)cred.uid);
	if (conn_new(ctl->pd->base, fd, NULL, (size_t)conf->max_frame, &ctl_conn_ops, c, msg,
		     &c->conn) < 0) {
		free(c);
		goto out_uid;
	}
	conn_set_limit_name(c->conn, "control.max_frame");
	conn_set_write_timeout(c->conn, (unsigned)conf->control_write_timeout_ms);
	TAILQ_INSERT_TAIL(&ctl->conns, c, entry);
	TAILQ_INSERT_TAIL(&u->conns, c, uid_entry);
	ctl->nconns++;
	log_debug("%s connected", msg);
	return;
out_uid:
	ctl_uid_put(ctl, u);
	log_warnx("out of memory accepting a client");
}

/* Refuse to replace a socket that another live poold is listening on. */
static int control_check_stale(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, rc;

	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (rc == 0) {
		log_warnx("another poold is listening on %s", path);
		return -EADDRINUSE;
	}
	if (errno == ECONNREFUSED)
		unlink(path);
	return 0;
}

/* Take what poold serves (once, before the socket opens or a node forwards a request). */
void control_wire(const struct control_wiring *w)
{
	size_t i;

	wiring = w;
	memset(handlers, 0, sizeof(handlers));
	for (i = 0; i < w->ntables; i++) {
		const struct ctl_handler *h;

		for (h = w->tables[i]; h->fn != NULL; h++) {
			if (h->type >= WIRE_TYPE_MAX || handlers[h->type] != NULL)
				fatalx("handler table: type %u registered twice", h->type);
			handlers[h->type] = h;
		}
	}
}

/* Create the control socket with the configured mode and group, and listen. */
int control_open(struct poold *pd, struct control **ret_ctl)
{
	struct poold_conf *conf = pd->conf;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct control *ctl;
	mode_t old_umask;
	int fd, rc;

	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return -ENOMEM;
	ctl->pd = pd;
	TAILQ_INIT(&ctl->conns);
	LIST_INIT(&ctl->uids);
	ctl->path = strdup(conf->socket);
	if (ctl->path == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = control_check_stale(conf->socket);
	if (rc < 0)
		goto out_free;
	strcpy(sun.sun_path, conf->socket);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	old_umask = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old_umask);
	if (rc < 0) {
		rc = -errno;
		log_warn("bind %s", conf->socket);
		goto out_close;
	}
	if (conf->control_group[0] != '\0') {
		struct group *gr = getgrnam(conf->control_group);

		if (gr == NULL || chown(conf->socket, (uid_t)-1, gr->gr_gid) < 0) {
			log_warnx("control.group: cannot give %s to group '%s'", conf->socket,
				  conf->control_group);
			rc = -EINVAL;
			goto out_unlink;
		}
	}
	if (chmod(conf->socket, (mode_t)conf->control_mode) < 0) {
		rc = -errno;
		log_warn("chmod %s", conf->socket);
		goto out_unlink;
	}
	ctl->listener =
	    evconnlistener_new(pd->base, ctl_accept_cb, ctl, LEV_OPT_CLOSE_ON_FREE, 128, fd);
	if (ctl->listener == NULL) {
		rc = -ENOMEM;
		goto out_unlink;
	}
	if (accept_guard(pd, ctl->listener, "control socket") < 0) {
		evconnlistener_free(ctl->listener); /* closes fd */
		unlink(conf->socket);
		rc = -ENOMEM;
		goto out_free;
	}
	*ret_ctl = ctl;
	return 0;
out_unlink:
	unlink(conf->socket);
out_close:
	close(fd);
out_free:
	free(ctl->path);
	free(ctl);
	return rc;
}

/* Close every client and the socket. */
void control_close(struct control *ctl)
{
	struct ctl_conn *c;

	if (ctl == NULL)
		return;
	while ((c = TAILQ_FIRST(&ctl->conns)) != NULL) {
		struct conn *conn = c->conn;

		ctl_closed(conn, c); /* frees c, reads conn */
		conn_free(conn);
	}
	accept_close(ctl->listener);
	unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}

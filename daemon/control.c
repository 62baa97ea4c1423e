/*
 * daemon/control.c - the local control socket.
 *
 * Each connection is a bufferevent. Frames are parsed as they arrive: the
 * header is checked (version, length cap) before the payload is buffered,
 * the first message must be Hello, and every request gets exactly one reply.
 * Framing errors (oversize length, wrong version, no Hello) are answered
 * and the connection is closed once the reply is written; a malformed
 * payload in a well-formed frame is answered and the connection kept.
 * Caller credentials come from SO_PEERCRED and SO_PEERGROUPS and are
 * checked per message type against the handler table.
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

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/poold.h"
#include "libpool/libpool.h"

#define CTL_MAX_GROUPS 64
/* Stop reading from a client whose unread replies exceed this many frames. */
#define CTL_OUTPUT_FRAMES 4

struct ctl_uid {
	LIST_ENTRY(ctl_uid) entry;
	uid_t uid;
	unsigned count;
};

struct ctl_conn {
	TAILQ_ENTRY(ctl_conn) entry;
	struct control *ctl;
	struct bufferevent *bev;
	struct ctl_uid *u;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t groups[CTL_MAX_GROUPS];
	int ngroups;
	bool hello_done;
	bool closing;
	char errmsg[256];
};

struct control {
	struct poold *pd;
	struct evconnlistener *listener;
	char *path;
	TAILQ_HEAD(, ctl_conn) conns;
	LIST_HEAD(, ctl_uid) uids;
	unsigned nconns;
	const struct ctl_handler *handlers[WIRE_TYPE_MAX];
};

/* Every file's handler table, each ended by an entry with fn == NULL. */
static const struct ctl_handler *const handler_tables[] = {
	status_handlers,
	reload_handlers,
};

static int control_hello(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg);

static const struct ctl_handler hello_handler = {WIRE_HELLO, CTL_ANY, control_hello};

/* The daemon a connection belongs to. */
struct poold *ctl_poold(const struct ctl_conn *c)
{
	return c->ctl->pd;
}

/* Number of connected clients. */
unsigned control_nclients(const struct control *ctl)
{
	return ctl->nconns;
}

static void ctl_conn_free(struct ctl_conn *c)
{
	struct control *ctl = c->ctl;

	TAILQ_REMOVE(&ctl->conns, c, entry);
	ctl->nconns--;
	if (c->u != NULL && --c->u->count == 0) {
		LIST_REMOVE(c->u, entry);
		free(c->u);
	}
	bufferevent_free(c->bev);
	log_debug("client pid %d uid %u disconnected", (int)c->pid, (unsigned)c->uid);
	free(c);
}

/* Close after the pending replies are written. */
static void ctl_conn_close_later(struct ctl_conn *c)
{
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
}

/* Queue one reply frame. */
int ctl_reply(struct ctl_conn *c, uint64_t req_id, uint16_t type, const ProtobufCMessage *msg)
{
	uint8_t *buf;
	size_t len;
	int rc;

	rc = wire_frame_pack(type, req_id, msg, &buf, &len);
	if (rc < 0) {
		log_warnx("cannot pack %s reply: %s", wire_type_name(type), err_str(rc));
		return rc;
	}
	rc = bufferevent_write(c->bev, buf, len) == 0 ? 0 : -ENOMEM;
	free(buf);
	return rc;
}

/*
 * Record the message for the error reply of the current request and
 * return code, so handlers can `return ctl_errorf(c, -EINVAL, ...)`.
 */
int ctl_errorf(struct ctl_conn *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

static void ctl_reply_error(struct ctl_conn *c, uint64_t req_id, int code, const char *msg)
{
	Pool__Error err = POOL__ERROR__INIT;

	err.code = code;
	err.message = (char *)(msg && *msg ? msg : err_str(code));
	ctl_reply(c, req_id, WIRE_ERROR, &err.base);
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

static int control_hello(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg)
{
	const Pool__Hello *hello = (const Pool__Hello *)msg;
	Pool__HelloReply reply = POOL__HELLO_REPLY__INIT;

	if (hello->version != WIRE_VERSION) {
		ctl_conn_close_later(c);
		return ctl_errorf(c, POOL_EVERSION,
				  "protocol version %u is not supported: this poold speaks version %u",
				  hello->version, WIRE_VERSION);
	}
	c->hello_done = true;
	reply.version = WIRE_VERSION;
	reply.server_version = PACKAGE_VERSION;
	reply.node_id = c->ctl->pd->node_id;
	log_debug("client pid %d uid %u hello (%s)", (int)c->pid, (unsigned)c->uid,
		  hello->name ? hello->name : "");
	return ctl_reply(c, req_id, WIRE_HELLO_REPLY, &reply.base);
}

/* Handle one complete frame whose header passed the checks. */
static void ctl_handle(struct ctl_conn *c, const struct wire_hdr *hdr, const uint8_t *payload)
{
	const struct ctl_handler *h;
	ProtobufCMessage *msg = NULL;
	int rc;

	c->ctl->pd->requests++;
	c->errmsg[0] = '\0';
	h = hdr->type < WIRE_TYPE_MAX ? c->ctl->handlers[hdr->type] : NULL;
	if (!c->hello_done && hdr->type != WIRE_HELLO) {
		ctl_conn_close_later(c);
		rc = ctl_errorf(c, POOL_EPROTOCOL, "the first message must be hello, not %s",
				wire_type_name(hdr->type));
		goto out_error;
	}
	if (h == NULL) {
		rc = ctl_errorf(c, -EOPNOTSUPP, "message type %u is not a request poold serves",
				hdr->type);
		goto out_error;
	}
	if (h->perm == CTL_ADMIN && !ctl_is_admin(c)) {
		rc = ctl_errorf(c, -EPERM, "%s needs root or the admin group",
				wire_type_name(hdr->type));
		goto out_error;
	}
	rc = wire_msg_unpack(hdr->type, payload, hdr->len, &msg);
	if (rc < 0) {
		rc = ctl_errorf(c, -EBADMSG, "malformed %s message", wire_type_name(hdr->type));
		goto out_error;
	}
	rc = h->fn(c, hdr->req_id, msg);
	wire_msg_free(msg);
	if (rc >= 0)
		return;
out_error:
	log_debug("client pid %d: %s: %s", (int)c->pid, wire_type_name(hdr->type),
		  c->errmsg[0] ? c->errmsg : err_str(rc));
	ctl_reply_error(c, hdr->req_id, rc, c->errmsg);
}

static void ctl_read_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t max_frame = (size_t)c->ctl->pd->conf->max_frame;
	uint8_t hbuf[WIRE_HDR_LEN];
	struct wire_hdr hdr;

	while (!c->closing) {
		size_t avail = evbuffer_get_length(in);
		const uint8_t *frame;
		int rc;

		if (avail < WIRE_HDR_LEN)
			break;
		evbuffer_copyout(in, hbuf, WIRE_HDR_LEN);
		rc = wire_hdr_decode(hbuf, WIRE_HDR_LEN, max_frame, &hdr);
		if (rc == POOL_EVERSION) {
			log_warnx("client pid %d uid %u speaks protocol version %u, not %u",
				  (int)c->pid, (unsigned)c->uid, hdr.version, WIRE_VERSION);
			ctl_errorf(c, rc, "protocol version %u is not supported: this poold speaks "
				   "version %u", hdr.version, WIRE_VERSION);
		} else if (rc == -EMSGSIZE) {
			log_warnx("client pid %d uid %u sent a %u-byte frame, over the %zu limit",
				  (int)c->pid, (unsigned)c->uid, hdr.len, max_frame);
			ctl_errorf(c, rc, "frame of %u bytes exceeds control.max_frame (%zu)",
				   hdr.len, max_frame);
		}
		if (rc < 0) {
			ctl_reply_error(c, hdr.req_id, rc, c->errmsg);
			ctl_conn_close_later(c);
			break;
		}
		if (avail < WIRE_HDR_LEN + (size_t)hdr.len) {
			/* Wake only when the whole frame is here. */
			bufferevent_setwatermark(bev, EV_READ, WIRE_HDR_LEN + (size_t)hdr.len, 0);
			return;
		}
		frame = evbuffer_pullup(in, (ssize_t)(WIRE_HDR_LEN + hdr.len));
		if (frame == NULL) {
			log_warnx("out of memory reading from client pid %d", (int)c->pid);
			ctl_conn_close_later(c);
			break;
		}
		ctl_handle(c, &hdr, frame + WIRE_HDR_LEN);
		evbuffer_drain(in, WIRE_HDR_LEN + hdr.len);
	}
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	/* Back-pressure: a client that does not read its replies stops being read. */
	if (!c->closing &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > CTL_OUTPUT_FRAMES * max_frame)
		bufferevent_disable(bev, EV_READ);
	if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		ctl_conn_free(c);
}

static void ctl_write_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *c = arg;

	if (c->closing) {
		ctl_conn_free(c);
		return;
	}
	if (!(bufferevent_get_enabled(bev) & EV_READ)) {
		bufferevent_enable(bev, EV_READ);
		ctl_read_cb(bev, c);
	}
}

static void ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *c = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("client pid %d: connection error", (int)c->pid);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		ctl_conn_free(c);
}

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
		log_warnx("refusing client pid %d: %u connections (control.max_clients)",
			  (int)cred.pid, ctl->nconns);
		snprintf(msg, sizeof(msg), "too many connections to poold (control.max_clients = %lld)",
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
		log_warnx("refusing client pid %d: uid %u has %u connections "
			  "(control.max_clients_per_uid)",
			  (int)cred.pid, (unsigned)cred.uid, u->count);
		snprintf(msg, sizeof(msg),
			 "too many connections from uid %u (control.max_clients_per_uid = %lld)",
			 (unsigned)cred.uid, (long long)conf->max_clients_per_uid);
		ctl_refuse(fd, -EUSERS, msg);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto out_close;
	c->bev = bufferevent_socket_new(ctl->pd->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		free(c);
		goto out_close;
	}
	c->ctl = ctl;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	len = sizeof(c->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) == 0)
		c->ngroups = (int)(len / sizeof(gid_t));
	c->u = u;
	u->count++;
	TAILQ_INSERT_TAIL(&ctl->conns, c, entry);
	ctl->nconns++;
	bufferevent_setcb(c->bev, ctl_read_cb, ctl_write_cb, ctl_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("client pid %d uid %u connected", (int)c->pid, (unsigned)c->uid);
	return;
out_close:
	if (u->count == 0) {
		LIST_REMOVE(u, entry);
		free(u);
	}
	log_warnx("out of memory accepting a client");
	close(fd);
}

static void ctl_error_cb(struct evconnlistener *lis, void *arg)
{
	/* EMFILE and the like: log, keep listening; the next accept may work. */
	log_warn("control socket accept");
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

static int control_register(struct control *ctl)
{
	size_t i;

	ctl->handlers[WIRE_HELLO] = &hello_handler;
	for (i = 0; i < ARRAY_SIZE(handler_tables); i++) {
		const struct ctl_handler *h;

		for (h = handler_tables[i]; h->fn != NULL; h++) {
			if (h->type >= WIRE_TYPE_MAX || ctl->handlers[h->type] != NULL)
				fatalx("handler table: type %u registered twice", h->type);
			ctl->handlers[h->type] = h;
		}
	}
	return 0;
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
	control_register(ctl);
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
	ctl->listener = evconnlistener_new(pd->base, ctl_accept_cb, ctl, LEV_OPT_CLOSE_ON_FREE,
					   128, fd);
	if (ctl->listener == NULL) {
		rc = -ENOMEM;
		goto out_unlink;
	}
	evconnlistener_set_error_cb(ctl->listener, ctl_error_cb);
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
	while ((c = TAILQ_FIRST(&ctl->conns)) != NULL)
		ctl_conn_free(c);
	evconnlistener_free(ctl->listener);
	unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}

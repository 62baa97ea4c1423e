/*
 * daemon/poold.h - internals of poold, the per-node daemon.
 */
#ifndef POOLD_H
#define POOLD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "common/common.h"
#include "proto/wire.h"

struct event_base;
struct event;
struct ctl_conn;
struct control;

struct poold {
	struct event_base *base;
	struct poold_conf *conf;
	const char *conf_path;	/* NULL: embedded defaults */
	char **overrides;	/* -o name=value, applied over the file */
	size_t noverrides;
	uint64_t start_ms;
	uint64_t reloads;
	uint64_t requests;
	uint32_t node_id;
	gid_t admin_gid;	/* (gid_t)-1: no admin group */
	struct control *control;
	struct event *sig_ev[3];
	int pid_fd;
};

/* poold.c */
int poold_reload(struct poold *pd, char *errbuf, size_t errlen);

/* pidfile.c */
int pidfile_open(const char *path, int *ret_fd);
int pidfile_write(const char *path, int fd);
void pidfile_close(const char *path, int fd);

/* conn.c: a framed connection over a bufferevent */
struct conn;
struct sockaddr;
struct conn_ops {
	/* One complete frame whose header passed the checks. */
	void (*frame)(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload,
		      void *arg);
	/* An outgoing connection is established (optional). */
	void (*connected)(struct conn *c, void *arg);
	/* The connection ended; it is freed when this returns. */
	void (*closed)(struct conn *c, void *arg);
};

int conn_new(struct event_base *base, int fd, size_t max_frame, const struct conn_ops *ops,
	     void *arg, const char *desc, struct conn **ret_conn);
int conn_connect(struct event_base *base, const struct sockaddr *sa, unsigned salen,
		 size_t max_frame, const struct conn_ops *ops, void *arg, const char *desc,
		 struct conn **ret_conn);
void conn_free(struct conn *c);
void conn_close_later(struct conn *c);
int conn_send(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg);
int conn_send_error(struct conn *c, uint64_t req_id, int code, const char *msg);
const char *conn_desc(const struct conn *c);
void conn_set_desc(struct conn *c, const char *desc);
void conn_set_limit_name(struct conn *c, const char *name);
void conn_set_read_timeout(struct conn *c, unsigned timeout_ms);

/* control.c: the local control socket */
enum ctl_perm { CTL_ANY, CTL_ADMIN };

struct ctl_handler {
	uint16_t type;
	enum ctl_perm perm;
	int (*fn)(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg);
};

int control_open(struct poold *pd, struct control **ret_ctl);
void control_close(struct control *ctl);
unsigned control_nclients(const struct control *ctl);
int ctl_reply(struct ctl_conn *c, uint64_t req_id, uint16_t type, const ProtobufCMessage *msg);
int ctl_errorf(struct ctl_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct poold *ctl_poold(const struct ctl_conn *c);

/* handlers, one file per concept */
extern const struct ctl_handler status_handlers[];
extern const struct ctl_handler reload_handlers[];

#endif

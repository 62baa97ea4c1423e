/*
 * daemon/net/net.h - poold's connections: framed links over bufferevents,
 * listeners that outlive running out of fds, who a client counts as, the
 * HTTP and ZMQ gates, peer links' TLS and challenge, the fabric ports'
 * firewall. The interface of net/ to the rest of poold.
 */
#ifndef POOLD_NET_H
#define POOLD_NET_H

#include "daemon/poold.h"

struct clientkey_ctx;
struct conn;
struct evbuffer;
struct evconnlistener;
struct httpd;
struct sockaddr;
struct ssl_st;
struct stream;
struct wire_hdr;
struct zmqgate;

/* conn.c: a framed connection over a bufferevent */
struct conn_ops {
	/* One complete frame whose header passed the checks. */
	void (*frame)(struct conn *c, const struct wire_hdr *hdr, const uint8_t *payload,
		      void *arg);
	/* An outgoing connection is established (optional). */
	void (*connected)(struct conn *c, void *arg);
	/* The connection ended; it is freed when this returns. */
	void (*closed)(struct conn *c, void *arg);
	/*
	 * Whether to take another frame while replies wait unread (optional: a
	 * budget shared by several connections); a connection held back goes
	 * on once its own replies are out.
	 */
	bool (*may_read)(struct conn *c, void *arg);
};

int conn_new(struct event_base *base, int fd, struct ssl_st *ssl, size_t max_frame,
	     const struct conn_ops *ops, void *arg, const char *desc, struct conn **ret_conn);
int conn_connect(struct event_base *base, const struct sockaddr *sa, unsigned salen,
		 struct ssl_st *ssl, size_t max_frame, const struct conn_ops *ops, void *arg,
		 const char *desc, struct conn **ret_conn);
void conn_free(struct conn *c);
void conn_close_later(struct conn *c);
void conn_abort(struct conn *c, bool closed);
struct conn *conn_ref(struct conn *c);
void conn_unref(struct conn *c);
bool conn_alive(const struct conn *c);
int conn_send_raw(struct conn *c, uint16_t type, uint64_t req_id, const uint8_t *payload,
		  size_t len);
int conn_send_fd(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg,
		 int fd);
int conn_send(struct conn *c, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg);
size_t conn_output_len(const struct conn *c);
int conn_send_error(struct conn *c, uint64_t req_id, int code, const char *msg);
int conn_send_frame(struct conn *c, const uint8_t *frame, size_t len);
const char *conn_desc(const struct conn *c);
int conn_fd(const struct conn *c);
void conn_set_desc(struct conn *c, const char *desc);
void conn_set_limit_name(struct conn *c, const char *name);
void conn_set_read_timeout(struct conn *c, unsigned timeout_ms);
void conn_set_write_timeout(struct conn *c, unsigned timeout_ms);
void conn_set_max_frame(struct conn *c, size_t max_frame);
void conn_set_max_send(struct conn *c, size_t max_send);
int conn_fits(const struct conn *c, uint16_t type, size_t len);

/* accept.c: listeners that outlive running out of fds */
int accept_guard(struct poold *pd, struct evconnlistener *l, const char *what);
int accept_listen(struct poold *pd, const char *what, const char *addr, int backlog,
		  evconnlistener_cb cb, void *arg, struct evconnlistener **ret);
void accept_close(struct evconnlistener *l);
void accept_refuse(int fd, const char *why, size_t len);

/* clientkey.c: who a client counts as: its uid on this host, else its address */
enum clientkey_kind { CLIENTKEY_UID, CLIENTKEY_ADDR };
struct clientkey {
	enum clientkey_kind kind;
	uint32_t uid;	  /* CLIENTKEY_UID */
	uint8_t addr[16]; /* CLIENTKEY_ADDR: IPv4 v4-mapped, IPv6 its /64 */
};
int clientkey_open(struct clientkey_ctx **ret);
void clientkey_close(struct clientkey_ctx *ck);
int clientkey_of(struct clientkey_ctx *ck, int fd, struct clientkey *ret);
bool clientkey_eq(const struct clientkey *a, const struct clientkey *b);
const char *clientkey_str(const struct clientkey *k, char *buf, size_t len);

/* zmqgate.c: bounds on the connections a bound ZMQ socket takes */
struct zmqgate_limits {
	unsigned max, per_uid, per_addr;
	uint64_t in_max;  /* bytes a TCP connection may send over its life; 0: no bound */
	const char *what; /* the socket, for the log */
	const char *max_option, *per_uid_option, *per_addr_option;
};
int zmqgate_open(struct poold *pd, void *ctx, void *sock, const struct zmqgate_limits *lim,
		 struct zmqgate **ret);
void zmqgate_close(struct zmqgate *g);
void zmqgate_stats(const struct zmqgate *g, uint64_t *ret_open, uint64_t *ret_refused);

/* httpd.c: a small HTTP server for one resource (the metrics) */
typedef int (*httpd_get_fn)(struct poold *pd, struct evbuffer *body);
struct httpd_limits {
	/* connections at once: in all, of one uid on this host, of one address elsewhere */
	unsigned max_clients, per_uid, per_addr;
	unsigned timeout_ms; /* of a connection, from its accept */
	const char *per_uid_option, *per_addr_option;
};
int httpd_open(struct poold *pd, const char *addr, const char *option, const char *path,
	       const struct httpd_limits *lim, httpd_get_fn get, struct httpd **ret);
void httpd_close(struct httpd *h);

/* peer-tls.c: TLS on peer links */
int peer_tls_open(struct poold *pd);
void peer_tls_close(struct poold *pd);
int peer_tls_new(struct poold *pd, struct ssl_st **ret_ssl);

/* stream.c: a long list sent over a peer link in chunks, as the loop turns */
typedef int (*stream_next_cb)(struct poold *pd, struct conn *c, void *arg);
typedef void (*stream_end_cb)(struct poold *pd, void *arg, int rc);
int stream_start(struct poold *pd, struct conn *c, size_t ahead, stream_next_cb next,
		 stream_end_cb end, void *arg, struct stream **ret);
void stream_pause(struct stream *s);
void stream_resume(struct stream *s);
void stream_stop(struct stream *s);

/* firewall.c: the fabric's ports of every node admit poold's uid only (nftables) */
int firewall_open(struct poold *pd);
int firewall_cover_fabric(struct poold *pd);
void firewall_members_changed(struct poold *pd);
void firewall_ports(const struct poold *pd, uint32_t **ret_ports, size_t *ret_n);
const char *firewall_state(const struct poold *pd);
bool firewall_is_on(const struct poold *pd);
void firewall_close(struct poold *pd);

/* peer-auth.c: challenge-response on the peer secret */
#define PEERAUTH_NONCE_LEN 32
#define PEERAUTH_PROOF_LEN 32
int peer_auth_nonce(uint8_t ret_nonce[PEERAUTH_NONCE_LEN]);
int peer_auth_coord_proof(const char *secret, const uint8_t *nn, const uint8_t *nc,
			  uint8_t ret_proof[PEERAUTH_PROOF_LEN]);
int peer_auth_node_proof(const char *secret, const uint8_t *nc, const uint8_t *nn, const char *name,
			 uint8_t ret_proof[PEERAUTH_PROOF_LEN]);
bool peer_auth_equal(const uint8_t want[PEERAUTH_PROOF_LEN], const uint8_t *got, size_t len);

#endif /* POOLD_NET_H */

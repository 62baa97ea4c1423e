/*
 * fabric/link_int.h - the insides of the checked transport (link*.c),
 * private to fabric/: the wire of a link and the objects both ends keep.
 *
 * A link is one TCP connection from a requester to a target poold. The
 * target speaks first, with nothing but a fresh nonce; the requester
 * answers with who it is, who it wants and a proof over both nonces; the
 * target checks that proof before it reads another byte, then proves
 * itself. Requests follow, served in order, so replies come in order:
 *
 *	target -> requester	challenge: magic, version, kind 1, nonce_t
 *	requester -> target	hello: magic, version, kind 2, from node, to node,
 *				from incarnation, from epoch, to incarnation,
 *				nonce_r, proof_r
 *	target -> requester	welcome: magic, version, kind 3, proof_t
 *	requester -> target	request: op, arena, id, extent, offset, length,
 *				a, b [, the bytes of a write or a call]
 *	target -> requester	reply: id, status, old [, the bytes of a read,
 *				or old bytes of a call's answer]
 *
 *	proof_r = HMAC-SHA256(key, "pool-link-requester" || nonce_t || hello
 *				   up to its proof)
 *	proof_t = HMAC-SHA256(key, "pool-link-target" || nonce_t || hello
 *				   up to its proof)
 *
 * Every integer is little-endian. The labels keep one side's proof from
 * being replayed as the other's, and the target's fresh nonce keeps a
 * recorded hello from being replayed on a new connection.
 */
#ifndef POOL_FABRIC_LINK_INT_H
#define POOL_FABRIC_LINK_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/param.h>
#include <sys/queue.h>

#include "fabric/fabric.h"

#define LINK_MAGIC 0x314b4c50u /* "PLK1" */
#define LINK_VERSION 1
#define LINK_NONCE_LEN 32
#define LINK_PROOF_LEN 32

#define LINK_CHALLENGE_LEN 40
#define LINK_HELLO_LEN 104
#define LINK_HELLO_SIGNED 72 /* the hello up to its proof */
#define LINK_WELCOME_LEN 40
#define LINK_REQ_LEN 56
#define LINK_REP_LEN 24

enum link_kind { LINK_CHALLENGE = 1, LINK_HELLO = 2, LINK_WELCOME = 3 };

struct link_hello {
	uint32_t from_node, to_node;
	uint64_t from_incarnation, from_epoch, to_incarnation;
	uint8_t nonce[LINK_NONCE_LEN];
	uint8_t proof[LINK_PROOF_LEN];
};

/* link-wire.c: the fixed-size messages of a link, checked as they are read */
void link_put_challenge(uint8_t out[LINK_CHALLENGE_LEN], const uint8_t nonce[LINK_NONCE_LEN]);
int link_get_challenge(const uint8_t in[LINK_CHALLENGE_LEN], uint8_t ret_nonce[LINK_NONCE_LEN]);
void link_put_hello(uint8_t out[LINK_HELLO_LEN], const struct link_hello *h);
int link_get_hello(const uint8_t in[LINK_HELLO_LEN], struct link_hello *ret);
void link_put_welcome(uint8_t out[LINK_WELCOME_LEN], const uint8_t proof[LINK_PROOF_LEN]);
int link_get_welcome(const uint8_t in[LINK_WELCOME_LEN], uint8_t ret_proof[LINK_PROOF_LEN]);
void link_put_req(uint8_t out[LINK_REQ_LEN], const struct fab_link_req *req, uint64_t id);
int link_get_req(const uint8_t in[LINK_REQ_LEN], struct fab_link_req *ret_req, uint64_t *ret_id);
int link_req_check(const struct fab_link_req *req);
void link_put_rep(uint8_t out[LINK_REP_LEN], uint64_t id, int32_t status, uint64_t old);
void link_get_rep(const uint8_t in[LINK_REP_LEN], uint64_t *ret_id, int32_t *ret_status,
		  uint64_t *ret_old);

/* link-auth.c: nonces and proofs */
int link_nonce(uint8_t ret_nonce[LINK_NONCE_LEN]);
int link_proof(const uint8_t key[FAB_LINK_KEY_LEN], bool target,
	       const uint8_t nonce_t[LINK_NONCE_LEN], const uint8_t hello[LINK_HELLO_LEN],
	       uint8_t ret_proof[LINK_PROOF_LEN]);
bool link_proof_equal(const uint8_t a[LINK_PROOF_LEN], const uint8_t b[LINK_PROOF_LEN]);

/* link.c: the context both ends share */
struct link_in;
struct link_call;
LIST_HEAD(link_in_list, link_in);
LIST_HEAD(link_out_list, fab_link);

struct fab_links {
	struct event_base *base;
	struct fab_links_config cfg;
	const struct fab_link_ops *ops;
	void *arg;
	int lfd;
	uint16_t port;
	struct event *accept_ev, *accept_pause;
	struct link_in_list ins;    /* inbound links (served here) */
	size_t nins, nunauth;	    /* ... and of those, still in their handshake */
	struct link_in_list parked; /* those waiting for their check: fab_links_kick() */
	struct link_out_list outs;  /* outbound links */
	struct link_call *orphans;  /* calls of closed links, completed from orphan_ev */
	struct event *orphan_ev;
	struct fab_link_stats stats;
};

/* link-serve.c: the target's end */
void link_serve_accept(struct fab_links *ls, int fd, const struct sockaddr *sa);
void link_serve_kick(struct fab_links *ls);
unsigned link_serve_drop_peer(struct fab_links *ls, uint32_t node);
void link_serve_close_all(struct fab_links *ls);

/* link-call.c: the requester's end */
void link_call_close_all(struct fab_links *ls);
void link_call_orphans(struct fab_links *ls);
void link_call_drop_orphans(struct fab_links *ls);

/* Text of a socket address, "a.b.c.d:port" or "[v6]:port". */
void link_addr_str(const struct sockaddr *sa, char *buf, size_t len);
#define LINK_SNDBUF (512 << 10)
void link_sockopts(const struct fab_links *ls, int fd);

#endif /* POOL_FABRIC_LINK_INT_H */

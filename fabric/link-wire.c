/*
 * fabric/link-wire.c - the fixed-size messages of a link (link_int.h), in
 * little-endian, and what a reader checks before it believes one: the
 * magic, the version, the kind, the op, a length the target takes, an
 * aligned word for atomics.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fabric/link_int.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* The 8-byte preamble of the handshake's messages. */
static void put_preamble(uint8_t *out, enum link_kind kind)
{
	put32(out, LINK_MAGIC);
	put16(out + 4, LINK_VERSION);
	put16(out + 6, (uint16_t)kind);
}

static int get_preamble(const uint8_t *in, enum link_kind kind)
{
	if (get32(in) != LINK_MAGIC)
		return -EPROTO;
	if (get16(in + 4) != LINK_VERSION)
		return -EPROTONOSUPPORT;
	return get16(in + 6) == kind ? 0 : -EPROTO;
}

void link_put_challenge(uint8_t out[LINK_CHALLENGE_LEN], const uint8_t nonce[LINK_NONCE_LEN])
{
	put_preamble(out, LINK_CHALLENGE);
	memcpy(out + 8, nonce, LINK_NONCE_LEN);
}

int link_get_challenge(const uint8_t in[LINK_CHALLENGE_LEN], uint8_t ret_nonce[LINK_NONCE_LEN])
{
	int rc = get_preamble(in, LINK_CHALLENGE);

	if (rc == 0)
		memcpy(ret_nonce, in + 8, LINK_NONCE_LEN);
	return rc;
}

void link_put_hello(uint8_t out[LINK_HELLO_LEN], const struct link_hello *h)
{
	put_preamble(out, LINK_HELLO);
	put32(out + 8, h->from_node);
	put32(out + 12, h->to_node);
	put64(out + 16, h->from_incarnation);
	put64(out + 24, h->from_epoch);
	put64(out + 32, h->to_incarnation);
	memcpy(out + 40, h->nonce, LINK_NONCE_LEN);
	memcpy(out + LINK_HELLO_SIGNED, h->proof, LINK_PROOF_LEN);
}

int link_get_hello(const uint8_t in[LINK_HELLO_LEN], struct link_hello *ret)
{
	int rc = get_preamble(in, LINK_HELLO);

	if (rc < 0)
		return rc;
	ret->from_node = get32(in + 8);
	ret->to_node = get32(in + 12);
	ret->from_incarnation = get64(in + 16);
	ret->from_epoch = get64(in + 24);
	ret->to_incarnation = get64(in + 32);
	memcpy(ret->nonce, in + 40, LINK_NONCE_LEN);
	memcpy(ret->proof, in + LINK_HELLO_SIGNED, LINK_PROOF_LEN);
	return 0;
}

void link_put_welcome(uint8_t out[LINK_WELCOME_LEN], const uint8_t proof[LINK_PROOF_LEN])
{
	put_preamble(out, LINK_WELCOME);
	memcpy(out + 8, proof, LINK_PROOF_LEN);
}

int link_get_welcome(const uint8_t in[LINK_WELCOME_LEN], uint8_t ret_proof[LINK_PROOF_LEN])
{
	int rc = get_preamble(in, LINK_WELCOME);

	if (rc == 0)
		memcpy(ret_proof, in + 8, LINK_PROOF_LEN);
	return rc;
}

/*
 *	0  op (u8), 3 bytes zero, arena (u32)
 *	8  id	16 extent	24 offset	32 length	40 a	48 b
 */
void link_put_req(uint8_t out[LINK_REQ_LEN], const struct fab_link_req *req, uint64_t id)
{
	out[0] = (uint8_t)req->op;
	out[1] = out[2] = out[3] = 0;
	put32(out + 4, req->arena);
	put64(out + 8, id);
	put64(out + 16, req->ext);
	put64(out + 24, req->off);
	put64(out + 32, req->len);
	put64(out + 40, req->a);
	put64(out + 48, req->b);
}

/*
 * A request as the target reads it: -EPROTO for an unknown op or bits that
 * must be zero, -EMSGSIZE for a length over FAB_LINK_MAX_LEN. Either breaks
 * the link (what follows cannot be told apart from a write's bytes).
 */
int link_get_req(const uint8_t in[LINK_REQ_LEN], struct fab_link_req *ret_req, uint64_t *ret_id)
{
	struct fab_link_req req;

	if (in[1] != 0 || in[2] != 0 || in[3] != 0)
		return -EPROTO;
	switch (in[0]) {
	case FAB_LINK_READ:
	case FAB_LINK_WRITE:
	case FAB_LINK_FADD:
	case FAB_LINK_CSWAP:
	case FAB_LINK_CALL:
		req.op = (enum fab_link_op)in[0];
		break;
	default:
		return -EPROTO;
	}
	req.arena = get32(in + 4);
	req.ext = get64(in + 16);
	req.off = get64(in + 24);
	req.len = get64(in + 32);
	req.a = get64(in + 40);
	req.b = get64(in + 48);
	if (req.len > FAB_LINK_MAX_LEN)
		return -EMSGSIZE;
	*ret_req = req;
	*ret_id = get64(in + 8);
	return 0;
}

/*
 * -EINVAL for a request that is well formed but asks for nothing a target
 * can do: a range that wraps, an atomic that is not one aligned word, a
 * call that names a place or is larger than FAB_LINK_CALL_MAX either way.
 * It is answered with that error (a call's bytes are read and dropped).
 */
int link_req_check(const struct fab_link_req *req)
{
	if (req->ext + req->off < req->ext || req->ext + req->off + req->len < req->ext + req->off)
		return -EINVAL;
	if ((req->op == FAB_LINK_FADD || req->op == FAB_LINK_CSWAP) &&
	    (req->len != 8 || (req->ext + req->off) % 8 != 0))
		return -EINVAL;
	if (req->op == FAB_LINK_CALL &&
	    (req->arena != 0 || req->ext != 0 || req->off != 0 || req->b != 0 ||
	     req->len > FAB_LINK_CALL_MAX || req->a > FAB_LINK_CALL_MAX))
		return -EINVAL;
	return 0;
}

/*	0  id	8  status (i32), 4 bytes zero	16 old */
void link_put_rep(uint8_t out[LINK_REP_LEN], uint64_t id, int32_t status, uint64_t old)
{
	put64(out, id);
	put32(out + 8, (uint32_t)status);
	put32(out + 12, 0);
	put64(out + 16, old);
}

void link_get_rep(const uint8_t in[LINK_REP_LEN], uint64_t *ret_id, int32_t *ret_status,
		  uint64_t *ret_old)
{
	*ret_id = get64(in);
	*ret_status = (int32_t)get32(in + 8);
	*ret_old = get64(in + 16);
}

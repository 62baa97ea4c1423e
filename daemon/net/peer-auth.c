/*
 * daemon/net/peer-auth.c - mutual authentication of peer links on the shared
 * secret, without the secret ever on the wire.
 *
 * The node's Hello carries a fresh 32-byte nonce Nn. The coordinator
 * answers with its own nonce Nc and proves it knows the secret:
 *
 *	coordinator proof = HMAC-SHA256(secret, "poold-coordinator" || Nn || Nc)
 *
 * The node checks that before it registers (a rogue coordinator learns
 * nothing and gets no register), then proves the same to the coordinator:
 *
 *	node proof = HMAC-SHA256(secret, "poold-node" || Nc || Nn || node name)
 *
 * The labels keep one side's proof from being replayed as the other's, and
 * fresh nonces on both sides keep a recorded exchange from being replayed
 * on a new link. Without a secret (a single node, or a cluster on loopback)
 * no proof is asked for; conf.c refuses a coordinator that listens beyond
 * loopback without one.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "daemon/net/net.h"

static const char label_coord[] = "poold-coordinator";
static const char label_node[] = "poold-node";

/* A fresh random nonce. */
int peer_auth_nonce(uint8_t ret_nonce[PEERAUTH_NONCE_LEN])
{
	size_t got = 0;

	while (got < PEERAUTH_NONCE_LEN) {
		ssize_t n = getrandom(ret_nonce + got, PEERAUTH_NONCE_LEN - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

/* HMAC-SHA256(secret, label || a || b || name) into out. */
static int peer_auth_mac(const char *secret, const char *label, const uint8_t *a, const uint8_t *b,
			 const char *name, uint8_t out[PEERAUTH_PROOF_LEN])
{
	uint8_t msg[sizeof(label_coord) + 2 * PEERAUTH_NONCE_LEN + 64];
	size_t len = strlen(label), nlen = name ? strnlen(name, 64) : 0;
	unsigned outlen = 0;

	memcpy(msg, label, len);
	memcpy(msg + len, a, PEERAUTH_NONCE_LEN);
	memcpy(msg + len + PEERAUTH_NONCE_LEN, b, PEERAUTH_NONCE_LEN);
	len += 2 * PEERAUTH_NONCE_LEN;
	if (nlen > 0)
		memcpy(msg + len, name, nlen);
	len += nlen;
	if (HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, len, out, &outlen) == NULL ||
	    outlen != PEERAUTH_PROOF_LEN)
		return -EIO;
	return 0;
}

/* The coordinator's proof for the node nonce nn and its own nonce nc. */
int peer_auth_coord_proof(const char *secret, const uint8_t *nn, const uint8_t *nc,
			  uint8_t ret_proof[PEERAUTH_PROOF_LEN])
{
	return peer_auth_mac(secret, label_coord, nn, nc, NULL, ret_proof);
}

/* The node's proof for the coordinator nonce nc, its own nonce nn and its name. */
int peer_auth_node_proof(const char *secret, const uint8_t *nc, const uint8_t *nn, const char *name,
			 uint8_t ret_proof[PEERAUTH_PROOF_LEN])
{
	return peer_auth_mac(secret, label_node, nc, nn, name, ret_proof);
}

/* Whether got (len bytes) equals the proof want, in constant time. */
bool peer_auth_equal(const uint8_t want[PEERAUTH_PROOF_LEN], const uint8_t *got, size_t len)
{
	return len == PEERAUTH_PROOF_LEN && CRYPTO_memcmp(want, got, PEERAUTH_PROOF_LEN) == 0;
}

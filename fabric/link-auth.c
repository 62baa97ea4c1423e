/*
 * fabric/link-auth.c - the proofs of a link's handshake (link_int.h):
 * HMAC-SHA256 under the cluster's link key, over the target's nonce and
 * the requester's hello, under a label of each side's own.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fabric/link_int.h"

static const char label_requester[] = "pool-link-requester";
static const char label_target[] = "pool-link-target";

/* A fresh random nonce. */
int link_nonce(uint8_t ret_nonce[LINK_NONCE_LEN])
{
	size_t got = 0;

	while (got < LINK_NONCE_LEN) {
		ssize_t n = getrandom(ret_nonce + got, LINK_NONCE_LEN - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

/* The requester's proof (target false) or the target's, for this nonce and hello. */
int link_proof(const uint8_t key[FAB_LINK_KEY_LEN], bool target,
	       const uint8_t nonce_t[LINK_NONCE_LEN], const uint8_t hello[LINK_HELLO_LEN],
	       uint8_t ret_proof[LINK_PROOF_LEN])
{
	const char *label = target ? label_target : label_requester;
	uint8_t msg[sizeof(label_requester) + LINK_NONCE_LEN + LINK_HELLO_SIGNED];
	size_t len = strlen(label);
	unsigned outlen = 0;

	memcpy(msg, label, len);
	memcpy(msg + len, nonce_t, LINK_NONCE_LEN);
	memcpy(msg + len + LINK_NONCE_LEN, hello, LINK_HELLO_SIGNED);
	len += LINK_NONCE_LEN + LINK_HELLO_SIGNED;
	if (HMAC(EVP_sha256(), key, FAB_LINK_KEY_LEN, msg, len, ret_proof, &outlen) == NULL ||
	    outlen != LINK_PROOF_LEN)
		return -EIO;
	return 0;
}

/* Whether two proofs are equal, in time that does not depend on where they differ. */
bool link_proof_equal(const uint8_t a[LINK_PROOF_LEN], const uint8_t b[LINK_PROOF_LEN])
{
	return CRYPTO_memcmp(a, b, LINK_PROOF_LEN) == 0;
}

/* common/sha256.c - SHA-256 of a buffer (libcrypto), for page keys and RESP passwords. */
#include "config.h"

#include <errno.h>

#include <openssl/evp.h>

#include "common/common.h"

int sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int n = 0;

	return EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) == 1 && n == SHA256_LEN ? 0
											  : -EIO;
}

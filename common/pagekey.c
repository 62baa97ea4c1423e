/*
 * common/pagekey.c - the key of a snapshot page in the store shared across
 * uids: the first 16 bytes of the page's SHA-256. libpool derives it when
 * it puts a page; the coordinator derives it again from the bytes stored
 * under the key before any other put can find them, so both use this one.
 * (Finding other bytes for a given key takes about 2^128 tries.)
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/common.h"

int page_key_shared(const void *page, size_t len, uint8_t out[PAGE_KEY_LEN])
{
	static const uint8_t zero[PAGE_KEY_LEN];
	uint8_t md[SHA256_LEN];

	if (sha256(page, len, md) < 0)
		return -EIO;
	memcpy(out, md, PAGE_KEY_LEN);
	/* The all-zero key means a zero page, which is not stored. */
	if (memcmp(out, zero, PAGE_KEY_LEN) == 0)
		out[PAGE_KEY_LEN - 1] = 1;
	return 0;
}

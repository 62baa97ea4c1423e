/*
 * daemon/resp/resp-auth.c - who a RESP client is, from its AUTH.
 *
 * "AUTH PASSWORD" and "AUTH default PASSWORD" check resp.password and act
 * as root, as the endpoint always has; "AUTH NAME PASSWORD" checks a user
 * of resp.users and acts as its uid. Passwords are compared as SHA-256
 * digests in constant time, so neither a password's bytes nor its length
 * leak through the time a refusal takes.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>

#include "daemon/resp/resp.h"

static int resp_unhex(const char *hex, unsigned char out[SHA256_LEN])
{
	size_t i;

	for (i = 0; i < SHA256_LEN; i++) {
		unsigned hi, lo;

		if (sscanf(hex + 2 * i, "%1x%1x", &hi, &lo) != 2)
			return -EINVAL;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Whether password (len bytes) is the one secret stands for. */
static bool resp_secret_matches(const char *secret, bool hashed, const char *password, size_t len)
{
	unsigned char want[SHA256_LEN], got[SHA256_LEN];
	bool same;

	if (sha256(password, len, got) < 0 ||
	    (hashed ? resp_unhex(secret, want) : sha256(secret, strlen(secret), want)) < 0)
		return false;
	same = CRYPTO_memcmp(want, got, SHA256_LEN) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	OPENSSL_cleanse(got, sizeof(got));
	return same;
}

int resp_auth(const struct poold_conf *conf, const char *user, const char *password, size_t len,
	      uint32_t *ret_uid)
{
	size_t i;

	if (user == NULL || strcmp(user, "default") == 0) {
		if (conf->resp_password[0] == '\0' ||
		    !resp_secret_matches(conf->resp_password, false, password, len))
			return -EPERM;
		*ret_uid = 0;
		return 0;
	}
	for (i = 0; i < conf->resp_nusers; i++)
		if (strcmp(conf->resp_users[i].name, user) == 0) {
			if (!resp_secret_matches(conf->resp_users[i].secret,
						 conf->resp_users[i].hashed, password, len))
				return -EPERM;
			*ret_uid = conf->resp_users[i].uid;
			return 0;
		}
	return -EPERM;
}

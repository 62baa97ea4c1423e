/*
 * daemon/net/peer-tls.c - TLS on peer links (peer.tls): TLS 1.3 only, and both
 * ends present a certificate that must chain to peer.tls_ca, so a host
 * without one of the cluster's certificates cannot even start the
 * secret's challenge (peer-auth.c), which still runs inside the tunnel.
 * conn.c runs the bufferevents; this file makes their SSL objects.
 */
#include "config.h"

#include <errno.h>

#include <openssl/ssl.h>

#include "daemon/net/net.h"

/* Load the certificate, key and CA when peer.tls is set; poold does not start without them. */
int peer_tls_open(struct poold *pd)
{
	const struct poold_conf *conf = pd->conf;
	SSL_CTX *ctx;

	if (!conf->peer_tls)
		return 0;
	ctx = SSL_CTX_new(TLS_method());
	if (ctx == NULL) {
		log_warnx("peer.tls: %s", ssl_error_text());
		return -ENOMEM;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) {
		log_warnx("peer.tls: TLS 1.3: %s", ssl_error_text());
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, conf->peer_tls_cert) != 1) {
		log_warnx("peer.tls_cert: %s: %s", conf->peer_tls_cert, ssl_error_text());
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, conf->peer_tls_key, SSL_FILETYPE_PEM) != 1) {
		log_warnx("peer.tls_key: %s: %s", conf->peer_tls_key, ssl_error_text());
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		log_warnx("peer.tls_key: %s is not the key of %s", conf->peer_tls_key,
			  conf->peer_tls_cert);
		goto fail;
	}
	if (SSL_CTX_load_verify_locations(ctx, conf->peer_tls_ca, NULL) != 1) {
		log_warnx("peer.tls_ca: %s: %s", conf->peer_tls_ca, ssl_error_text());
		goto fail;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	pd->tls = ctx;
	log_info("peer links use TLS 1.3 (certificates of %s)", conf->peer_tls_ca);
	return 0;
fail:
	SSL_CTX_free(ctx);
	return -EINVAL;
}

void peer_tls_close(struct poold *pd)
{
	SSL_CTX_free(pd->tls);
	pd->tls = NULL;
}

/* An SSL object for a new peer link, or NULL with 0 when peer links are in clear. */
int peer_tls_new(struct poold *pd, SSL **ret_ssl)
{
	*ret_ssl = NULL;
	if (pd->tls == NULL)
		return 0;
	*ret_ssl = SSL_new(pd->tls);
	if (*ret_ssl == NULL) {
		log_warnx("peer.tls: %s", ssl_error_text());
		return -ENOMEM;
	}
	return 0;
}

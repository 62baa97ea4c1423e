/*
 * common/sslerr.c - OpenSSL's last error, as text for a message (the TLS
 * of peer links and of etcd's client).
 */
#include "config.h"

#include <openssl/err.h>

#include "common/common.h"

/* The oldest error in OpenSSL's queue, which is then emptied; "no detail" if none. */
const char *ssl_error_text(void)
{
	static char buf[256];
	unsigned long code = ERR_get_error();

	if (code == 0)
		return "no detail";
	ERR_error_string_n(code, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}

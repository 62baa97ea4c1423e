/* libpool/error.c - error codes, texts and the per-thread error message. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/common.h"
#include "libpool/internal.h"

static __thread char pool_errbuf[512];

/* Record the calling thread's error message and return code. */
int pool_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pool_errbuf, sizeof(pool_errbuf), fmt, ap);
	va_end(ap);
	return code;
}

POOL_EXPORT const char *pool_strerror(int code)
{
	return err_str(code);
}

POOL_EXPORT const char *pool_errormsg(void)
{
	return pool_errbuf;
}

POOL_EXPORT const char *pool_version(void)
{
	return PACKAGE_VERSION;
}

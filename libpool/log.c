/*
 * libpool/log.c - where libpool's messages go: what it has to say outside
 * a call's return value, such as a restore that pool_snap_serve() served
 * and that failed. To the application's callback (pool_set_log()), else to
 * standard error as one line each.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "libpool/internal.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_log_fn *log_fn;
static void *log_arg;

POOL_EXPORT void pool_set_log(pool_log_fn *fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

/* Log a message at level (POOL_LOG_*): see the top of the file. */
void pool_log(int level, const char *fmt, ...)
{
	char line[512];
	pool_log_fn *fn;
	void *arg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Called outside the lock, so that a callback may call pool_set_log(). */
	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	arg = log_arg;
	pthread_mutex_unlock(&log_lock);
	if (fn != NULL)
		fn(level, line, arg);
	else
		fprintf(stderr, "libpool: %s\n", line);
}

/*
 * common/log.c - logging for poold and poolctl, in the OpenBSD daemons' style:
 * log_warn() appends strerror(errno), log_warnx() does not; fatal() and
 * fatalx() log and exit. Messages go to stderr or to syslog.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

static const char *log_ident = "poold";
static bool log_stderr = true;
static int log_level = LOG_LVL_INFO;

/* Start logging: to stderr when to_stderr, else to syslog as ident. */
void log_init(const char *ident, bool to_stderr, int level)
{
	log_ident = ident;
	log_stderr = to_stderr;
	log_level = level;
	if (!to_stderr)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/* Change the least severe level logged. */
void log_set_level(int level)
{
	log_level = level;
}

static void __attribute__((format(printf, 3, 0)))
log_vwrite(int level, int errnum, const char *fmt, va_list ap)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	static const char *const name[] = {"error", "warning", "info", "debug"};
	char msg[1024];
	int n;

	if (level > log_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (errnum != 0 && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(errnum));
	if (log_stderr) {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s[%d]: %s: %s\n", when, ts.tv_nsec / 1000000, log_ident,
			(int)getpid(), name[level], msg);
	} else {
		syslog(prio[level], "%s", msg);
	}
}

#define LOG_BODY(level, errnum)                                                                    \
	do {                                                                                       \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		log_vwrite(level, errnum, fmt, ap);                                                \
		va_end(ap);                                                                        \
	} while (0)

/* Log a warning followed by strerror(errno). */
void log_warn(const char *fmt, ...)
{
	int saved = errno;

	LOG_BODY(LOG_LVL_WARN, saved);
	errno = saved;
}

/* Log a warning. */
void log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_WARN, 0);
}

/* Log an informational message. */
void log_info(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_INFO, 0);
}

/* Log a debug message. */
void log_debug(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_DEBUG, 0);
}

/* Log an error with strerror(errno) and exit: only for broken invariants. */
void fatal(const char *fmt, ...)
{
	int saved = errno;

	LOG_BODY(LOG_LVL_ERROR, saved);
	exit(1);
}

/* Log an error and exit: only for broken invariants. */
void fatalx(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_ERROR, 0);
	exit(1);
}

/*
 * log_warnx(), at most once per interval_ms for one limit: the lines held
 * back meanwhile are counted and said with the next one that goes out, so
 * a flood (a client refused again and again) cannot fill the log.
 */
void log_warnx_limited(struct log_limit *l, unsigned interval_ms, const char *fmt, ...)
{
	uint64_t now = units_now_ms();
	char line[512];
	va_list ap;

	if (now < l->next_ms) {
		l->held++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (l->held > 0)
		log_warnx("%s (and %u more like it in the last %u ms)", line, l->held, interval_ms);
	else
		log_warnx("%s", line);
	l->held = 0;
	l->next_ms = now + interval_ms;
}

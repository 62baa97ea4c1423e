/* common/units.c - sizes and durations with units, as written in poold.conf. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/common.h"

struct unit {
	const char *suffix;
	uint64_t mult;
};

static int units_parse(const char *s, const struct unit *units, size_t nunits, uint64_t *ret)
{
	unsigned long long v;
	char *end;
	size_t i;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -ERANGE;
	for (i = 0; i < nunits; i++) {
		if (strcasecmp(end, units[i].suffix) != 0)
			continue;
		if (units[i].mult != 0 && v > UINT64_MAX / units[i].mult)
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

/* Parse "4096", "64K", "64M", "2G", "1T" (also "KiB", "MiB" ...) into bytes. */
int units_parse_size(const char *s, uint64_t *ret_bytes)
{
	static const struct unit units[] = {
	    {"", 1},	       {"b", 1},
	    {"k", 1ULL << 10}, {"kib", 1ULL << 10},
	    {"m", 1ULL << 20}, {"mib", 1ULL << 20},
	    {"g", 1ULL << 30}, {"gib", 1ULL << 30},
	    {"t", 1ULL << 40}, {"tib", 1ULL << 40},
	};
	return units_parse(s, units, ARRAY_SIZE(units), ret_bytes);
}

/* Parse "500ms", "2s", "5m", "1h" into milliseconds; a bare number is seconds. */
int units_parse_duration(const char *s, uint64_t *ret_ms)
{
	static const struct unit units[] = {
	    {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
	};
	return units_parse(s, units, ARRAY_SIZE(units), ret_ms);
}

/* Format bytes with the largest binary unit that divides it exactly. */
void units_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char suffix[] = "KMGT";
	int i = -1;

	while (bytes != 0 && bytes % 1024 == 0 && i < 3) {
		bytes /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)bytes, suffix[i]);
}

/* Format milliseconds with the largest unit that divides it exactly. */
void units_fmt_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms != 0 && ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms != 0 && ms % 60000 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
}

/*
 * Whether name is a name of the pool's (a region, a KV namespace, a
 * snapshot): 1 to max characters of [A-Za-z0-9._:-], and '/' too with slash.
 */
bool name_ok(const char *name, size_t max, bool slash)
{
	size_t n = name != NULL ? strlen(name) : 0;

	return n > 0 && n <= max && strspn(name, slash ? NAME_CHARS "/" : NAME_CHARS) == n;
}

/* Microseconds on the monotonic clock. */
uint64_t units_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A duration in milliseconds as a timeval, for libevent's timers. */
struct timeval units_timeval(uint64_t ms)
{
	return (struct timeval){.tv_sec = (time_t)(ms / 1000),
				.tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

/* Milliseconds on the monotonic clock. */
uint64_t units_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * daemon/util/util.h - the small pieces every part of poold uses: the heap
 * given back, the pid file, systemd's notify socket, the loop's lag, NUMA
 * layouts, the recent events. The interface of util/ to the rest of
 * poold.
 */
#ifndef POOLD_UTIL_H
#define POOLD_UTIL_H

#include "daemon/poold.h"
#include "daemon/util/htab.h"
#include "daemon/util/placement.h"
#include "daemon/util/usage.h"

/* pidfile.c */
int pidfile_open(const char *path, int *ret_fd);
int pidfile_write(const char *path, int fd);
void pidfile_close(const char *path, int fd);

/* heap.c: freed heap given back to the system, a little at a time */
void heap_freed(size_t bytes);
void heap_trim_soon(struct event_base *base);

/* numa.c */
int numa_layout(const char *spec, uint64_t total, struct node_numa **ret_nodes, size_t *ret_n);

/* events.c: the recent events, for poolctl events (events-serve.c) */
struct event_rec {
	uint64_t seq;
	uint64_t time_ms; /* wall clock, ms since the epoch */
	char kind[16];
	char text[200];
};
void events_add(struct poold *pd, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void events_free(struct poold *pd);
size_t events_count(const struct poold *pd);
void events_each(const struct poold *pd, void (*cb)(void *arg, const struct event_rec *e),
		 void *arg);
/* looplag.c: how late the event loop runs, for the metrics */
#define LOOPLAG_STALL_LEVELS 3
extern const uint64_t looplag_stall_us[LOOPLAG_STALL_LEVELS]; /* 10 ms, 100 ms, 1 s */
struct looplag_stats {
	uint64_t total_us;		       /* lateness of the loop's timer, summed */
	uint64_t max_us;		       /* the longest in the last minute */
	uint64_t stalls[LOOPLAG_STALL_LEVELS]; /* ticks later than each level */
};
int looplag_open(struct poold *pd);
void looplag_stats(const struct poold *pd, struct looplag_stats *st);
void looplag_close(struct poold *pd);

/* sdnotify.c: systemd's READY=1, STATUS= and WATCHDOG=1 (Type=notify) */
int sdnotify_open(struct poold *pd);
/* A STATUS= line (printf), with READY=1 the first time ready is true. */
void sdnotify_status(struct poold *pd, bool ready, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* READY=1 and what it serves as: role, its node id and the memory it lends. */
void sdnotify_serving(struct poold *pd, const char *role);
void sdnotify_close(struct poold *pd);

#endif /* POOLD_UTIL_H */

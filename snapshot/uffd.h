/*
 * snapshot/uffd.h - a userfaultfd page server for one lazy restore: serves
 * a VMM's guest memory faults from a memory image.
 */
#ifndef POOL_SNAPSHOT_UFFD_H
#define POOL_SNAPSHOT_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/fc.h"

#define UFFD_SERVER_RECORD 0x1	 /* record the order of first-touched pages */
#define UFFD_SERVER_ZEROPAGE 0x2 /* map all-zero pages with UFFDIO_ZEROPAGE */
#define UFFD_SERVER_AROUND 0x4	 /* a fault places the missing pages after it too */
#define UFFD_SERVER_TRACK 0x8	 /* see the pages the VMM writes (write-protect) */

#define UFFD_SERVER_EXITED 1 /* uffd_server_handle(): the VMM is gone */
#define UFFD_SERVER_FILLED 2 /* uffd_server_fill(): no page is missing any more */

/*
 * A page source for an image not in memory: fill bufs[i] (page_size bytes
 * each) with image page pages[i], for i < n. 0 or -errno. Slow per call
 * (it may cross the network), so the server calls it with large batches
 * where it can.
 */
typedef int (*uffd_fetch_fn)(void *arg, size_t n, const uint64_t *pages, void *const *bufs);

struct uffd_server;

struct uffd_stats {
	uint64_t faults;      /* page fault events read */
	uint64_t copied;      /* pages placed with UFFDIO_COPY */
	uint64_t zeroed;      /* pages placed with UFFDIO_ZEROPAGE */
	uint64_t prefetched;  /* of those, pages placed by uffd_server_prefetch() */
	uint64_t around;      /* of those, pages placed after a fault's page, ahead of faults */
	uint64_t filled;      /* of those, pages placed by uffd_server_fill() */
	uint64_t fetches;     /* calls of the fetch source */
	uint64_t fetched;     /* pages it gave */
	uint64_t existed;     /* faults on pages already there (EEXIST) */
	uint64_t removes;     /* REMOVE events */
	uint64_t unmaps;      /* UNMAP events */
	uint64_t remaps;      /* REMAP events */
	uint64_t retries;     /* UFFDIO_COPY answered EAGAIN and retried */
	uint64_t written;     /* UFFD_SERVER_TRACK: first writes since placed or saved */
	uint64_t saved_early; /* pages of a save read before a write to them */
};

/*
 * A server for the userfaultfd uffd of the VMM peer (its pid, 0 if
 * unknown; pidfd, its pidfd from the socket, or -1 to open one from the
 * pid), whose regions m lie in the image [image, image+image_len), which
 * must stay mapped until the server is freed. uffd and pidfd are taken
 * over: closed by uffd_server_free(), also on failure here. flags:
 * UFFD_SERVER_*. 0 or -errno, with a message in err.
 */
int uffd_server_new(int uffd, pid_t peer, int pidfd, const struct fc_mappings *m, const void *image,
		    uint64_t image_len, unsigned flags, char *err, size_t errlen,
		    struct uffd_server **ret);
/*
 * The same, with the image (image_len bytes) read through fetch(arg, ...)
 * instead: one page per fault, one call per prefetch or fill batch. A fetch
 * error fails the restore like any other (see uffd_server_handle()).
 */
int uffd_server_new_fetch(int uffd, pid_t peer, int pidfd, const struct fc_mappings *m,
			  uffd_fetch_fn fetch, void *arg, uint64_t image_len, unsigned flags,
			  char *err, size_t errlen, struct uffd_server **ret);
void uffd_server_free(struct uffd_server *s);
/* The fd to wait on (readable: call uffd_server_handle()). */
int uffd_server_fd(const struct uffd_server *s);
/*
 * Serve everything pending now, without blocking. 0: the restore goes on;
 * UFFD_SERVER_EXITED: the VMM is gone, free the server; -errno: the
 * restore failed (uffd_server_error() says why) and the server has
 * stopped: the VMM must be ended (see uffd.c). Repeats its final answer.
 */
int uffd_server_handle(struct uffd_server *s);
/* Why the restore failed or ended ("" while it goes on). */
const char *uffd_server_error(const struct uffd_server *s);
/*
 * End the VMM of a failed restore (SIGKILL through its pidfd, so never
 * another process that took its pid), as Firecracker's own page servers
 * do: its faulting thread would otherwise wait forever. 0, -ESRCH when
 * the server has no VMM peer (an in-process restore), or -errno.
 */
int uffd_server_kill(struct uffd_server *s);
/*
 * Place the listed pages (indexes of page_size pages of the image) now,
 * contiguous runs in large UFFDIO_COPYs, serving faults between batches.
 * Pages already there or removed are skipped. 0 or as uffd_server_handle().
 */
int uffd_server_prefetch(struct uffd_server *s, const uint64_t *pages, size_t n);
/*
 * Place up to max_pages of the next missing pages, in image order and in
 * batches as uffd_server_prefetch(), serving faults between batches: what
 * to do while no fault is pending. 0: more to fill; UFFD_SERVER_FILLED:
 * every page is there (or removed); else as uffd_server_handle().
 */
int uffd_server_fill(struct uffd_server *s, size_t max_pages);
/*
 * UFFD_SERVER_TRACK: the image pages written since the server started or
 * since the last call, in image order (*ret_pages: malloc'd, the caller's),
 * each write-protected again so that its next write is seen. 0 or as
 * uffd_server_handle().
 */
int uffd_server_written(struct uffd_server *s, uint64_t **ret_pages, size_t *ret_n);
/* Pages uffd_server_written() returned that are not saved: written still, for the next save. */
void uffd_server_give_back(struct uffd_server *s, const uint64_t *pages, size_t n);
/* How many pages uffd_server_written() would return now. */
uint64_t uffd_server_nwritten(const struct uffd_server *s);
/*
 * Save the pages uffd_server_written() just returned, as they are now:
 * each into bufs[i] (page_size bytes). Both arrays must stay until
 * uffd_server_save_end(). A removed page is zeroed here; the others are
 * read from the VMM (process_vm_readv: it needs the VMM's uid or
 * CAP_SYS_PTRACE) by uffd_server_save_step() while the VMM runs on, and a
 * write to one that is not read yet waits until it is (copy before write).
 */
void uffd_server_save_begin(struct uffd_server *s, const uint64_t *pages, size_t n,
			    void *const *bufs);
/*
 * Read up to max of the pages still to be saved. The pages left (0: the
 * save is whole), or -errno with the reason in err: the save is lost (a
 * page could not be read, or the guest gave one back before it was), the
 * restore goes on.
 */
int64_t uffd_server_save_step(struct uffd_server *s, size_t max, char *err, size_t errlen);
/*
 * The save is over: whole (done), or not, and then its pages count as
 * written again, for the next save to take.
 */
void uffd_server_save_end(struct uffd_server *s, bool done);
/* The pages faulted so far, in order of first touch (UFFD_SERVER_RECORD). */
size_t uffd_server_touched(const struct uffd_server *s, const uint64_t **ret_pages);
void uffd_server_stats(const struct uffd_server *s, struct uffd_stats *ret);

#endif

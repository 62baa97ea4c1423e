/*
 * daemon/util/heap.c - freed heap given back to the system, a little at a time.
 *
 * free() keeps what it frees inside the heap; malloc_trim() gives the free
 * pages back to the kernel, and costs about as much as it gives: the
 * kernel drops every page. After a flush of a million keys had freed a
 * gigabyte of entries and holdings, the one trim that followed held the
 * loop for 150 ms. So work that frees in bulk says how much it freed
 * (heap_freed()), and the heap is trimmed each time HEAP_TRIM_STEP more
 * is free, a millisecond or two each; and a second after connections
 * close, what their buffers left is given back (heap_trim_soon()).
 */
#include "config.h"

#include <malloc.h>
#include <stdbool.h>

#include <event2/event.h>

#include "daemon/util/util.h"

#define HEAP_TRIM_STEP (4u << 20)
#define HEAP_TRIM_DELAY_MS 1000

static size_t heap_kept;       /* bytes freed in bulk since the last trim */
static bool heap_trim_pending; /* heap_trim_soon()'s trim is on its way */

static void heap_trim(void)
{
	heap_kept = 0;
	malloc_trim(0);
}

/* Bulk work freed about bytes of heap: given back once HEAP_TRIM_STEP are. */
void heap_freed(size_t bytes)
{
	heap_kept += bytes;
	if (heap_kept >= HEAP_TRIM_STEP)
		heap_trim();
}

static void heap_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	heap_trim_pending = false;
	heap_trim();
}

/*
 * A connection's buffers are many small chunks in the middle of the heap:
 * without a trim, what a burst of clients made poold hold stays in its
 * RSS after they leave. Once a second at most.
 */
void heap_trim_soon(struct event_base *base)
{
	struct timeval tv = units_timeval(HEAP_TRIM_DELAY_MS);

	if (!heap_trim_pending &&
	    event_base_once(base, -1, EV_TIMEOUT, heap_trim_cb, NULL, &tv) == 0)
		heap_trim_pending = true;
}

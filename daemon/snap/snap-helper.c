/*
 * daemon/snap/snap-helper.c - pool-snap-helper, what poold runs to fill this
 * node's copy of a snapshot or to count snapshot pages again (snap-place.c
 * says why a helper does it): a libpool client of the poold that started
 * it, never run by hand.
 *
 *   pool-snap-helper SOCKET place NAME
 *   pool-snap-helper SOCKET gc
 *
 * Exit status 0 when done; else 1, with why as one line on stderr, which
 * poold gives its caller as it is.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "libpool/libpool.h"
#include "daemon/snap/snap.h"

static int fail(int rc)
{
	const char *msg = pool_errormsg();

	fprintf(stderr, "%s\n", msg != NULL && msg[0] != '\0' ? msg : pool_strerror(rc));
	return 1;
}

int main(int argc, char **argv)
{
	struct pool_snap *snap = NULL;
	struct pool *pool;
	uint64_t freed;
	int rc;

	if (!((argc == 4 && strcmp(argv[2], "place") == 0) ||
	      (argc == 3 && strcmp(argv[2], "gc") == 0))) {
		fprintf(stderr,
			"usage: pool-snap-helper SOCKET place NAME | SOCKET gc (poold runs it)\n");
		return 2;
	}
	rc = pool_open(argv[1], 0, &pool);
	if (rc < 0)
		return fail(rc);
	if (argc == 4) {
		rc = pool_snap_open(pool, argv[3], &snap);
		if (rc == 0)
			rc = pool_snap_place(snap);
		pool_snap_close(snap);
	} else {
		rc = pool_snap_recount(pool, &freed);
	}
	if (rc < 0)
		rc = fail(rc);
	pool_close(pool);
	return rc;
}

/*
 * examples/pool-demo.c - the smallest libpool client: connect to the local
 * poold, print its status, disconnect.
 *
 *	cc pool-demo.c $(pkg-config --cflags --libs libpool) -o pool-demo
 */
#include <inttypes.h>
#include <stdio.h>

#include <libpool.h>

int main(int argc, char **argv)
{
	const char *socket = argc > 1 ? argv[1] : NULL;
	struct pool_status *st;
	struct pool *pool;
	int rc;

	rc = pool_open(socket, 0, &pool);
	if (rc < 0) {
		fprintf(stderr, "pool-demo: %s\n", pool_errormsg());
		return 1;
	}
	rc = pool_status(pool, &st);
	if (rc < 0) {
		fprintf(stderr, "pool-demo: %s (%s)\n", pool_errormsg(), pool_strerror(rc));
		pool_close(pool);
		return 1;
	}
	printf("libpool %s connected to poold %s: node %" PRIu32 ", role %s, up %" PRIu64
	       " ms, %" PRIu32 " client(s)\n",
	       pool_version(), pool_status_version(st), pool_status_node_id(st),
	       pool_status_role(st), pool_status_uptime_ms(st), pool_status_clients(st));
	pool_status_free(st);
	pool_close(pool);
	return 0;
}

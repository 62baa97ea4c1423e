/*
 * cli/cmd-snap-serve.c - poolctl snap serve NAME SOCKET [--prefetch]
 * [--record] [--remote] [--fill] [--track] [--max N]: serve Firecracker
 * UFFD restores of snapshot NAME on the unix socket SOCKET
 * (pool_snap_serve()), until SIGINT or SIGTERM, or until N restores have
 * ended. poolctl snap save SOCKET PID NAME: save the sandbox of the VMM
 * PID that such a server (--track) serves (pool_snap_serve_save()).
 *
 * libpool talks to poold itself here: the command needs a struct pool,
 * not poolctl's own control connection. libpool reports each refused or
 * failed restore through its log callback, which writes it to stderr as
 * poolctl's other messages are; we print the total at the end.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cli/poolctl.h"
#include "libpool/libpool.h"

static struct pool_snap *serving; /* what a signal stops */

static void serve_signal(int sig)
{
	(void)sig;
	pool_snap_serve_stop(serving);
}

static void serve_log(int level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	fprintf(stderr, "poolctl: snap serve: %s\n", line);
}

struct serve_args {
	const char *name, *socket;
	unsigned flags, max;
};

static int serve_parse(struct cmd_ctx *ctx, struct serve_args *a)
{
	int i;

	a->name = ctx->argv[0];
	a->socket = ctx->argv[1];
	for (i = 2; i < ctx->argc; i++) {
		const char *o = ctx->argv[i];

		if (strcmp(o, "--prefetch") == 0)
			a->flags |= POOL_SNAP_PREFETCH;
		else if (strcmp(o, "--record") == 0)
			a->flags |= POOL_SNAP_RECORD;
		else if (strcmp(o, "--remote") == 0)
			a->flags |= POOL_SNAP_REMOTE;
		else if (strcmp(o, "--fill") == 0)
			a->flags |= POOL_SNAP_FILL;
		else if (strcmp(o, "--track") == 0)
			a->flags |= POOL_SNAP_TRACK;
		else if (strcmp(o, "--max") == 0 && i + 1 < ctx->argc)
			a->max = (unsigned)strtoul(ctx->argv[++i], NULL, 10);
		else
			return -EINVAL;
	}
	return 0;
}

/* Bind and listen on path, mode 0600; a socket nobody listens on any more is replaced. */
static int serve_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "poolctl: socket path too long: %s\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			fprintf(stderr, "poolctl: %s: a server is listening there already\n", path);
			close(fd);
			return -EADDRINUSE;
		}
		unlink(path);
	}
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc == 0)
		rc = listen(fd, 16);
	if (rc < 0) {
		rc = -errno;
		fprintf(stderr, "poolctl: %s: %s\n", path, strerror(errno));
		close(fd);
		return rc;
	}
	return fd;
}

static int serve_run(struct pool *pool, const struct serve_args *a, int fd)
{
	struct sigaction sa = {.sa_handler = serve_signal};
	struct pool_snap *snap;
	int rc;

	rc = pool_snap_open(pool, a->name, &snap);
	if (rc < 0) {
		fprintf(stderr, "poolctl: snapshot %s: %s\n", a->name, pool_errormsg());
		return EXIT_ERROR;
	}
	serving = snap;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pool_set_log(serve_log, NULL);
	printf("serving snapshot %s on %s\n", a->name, a->socket);
	fflush(stdout);
	rc = pool_snap_serve(snap, fd, a->flags, a->max);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	pool_snap_close(snap);
	if (rc < 0) {
		fprintf(stderr, "poolctl: snap serve %s: %s\n", a->name, pool_errormsg());
		return EXIT_ERROR;
	}
	printf("stopped: %d restore%s failed\n", rc, rc == 1 ? "" : "s");
	return rc == 0 ? EXIT_OK : EXIT_ERROR;
}

/* poolctl snap serve: see the top of the file. */
int cmd_snap_serve(struct cmd_ctx *ctx)
{
	struct serve_args a = {0};
	struct pool *pool;
	int fd, rc;

	if (serve_parse(ctx, &a) < 0) {
		fprintf(stderr, "usage: poolctl snap serve NAME SOCKET [--prefetch] [--record] "
				"[--remote] [--fill] [--track] [--max N]\n");
		return EXIT_USAGE;
	}
	rc = pool_open(ctx->socket, 0, &pool);
	if (rc < 0) {
		fprintf(stderr, "poolctl: %s\n", pool_errormsg());
		return EXIT_UNREACHABLE;
	}
	fd = serve_listen(a.socket);
	if (fd < 0) {
		pool_close(pool);
		return EXIT_ERROR;
	}
	rc = serve_run(pool, &a, fd);
	close(fd);
	unlink(a.socket);
	pool_close(pool);
	return rc;
}

const struct cmd_entry cmd_snap_serve_entry = {
    "snap serve",
    "NAME SOCKET [--prefetch] [--record] [--remote] [--fill] [--track] [--max N]",
    2,
    10,
    DAEMON_NONE,
    cmd_snap_serve,
    "serve Firecracker UFFD restores of a snapshot",
};

/* poolctl snap save: see the top of the file. */
static int cmd_snap_save(struct cmd_ctx *ctx)
{
	uint64_t pages, diff, held_us;
	char *end;
	long pid;
	int rc;

	errno = 0;
	pid = strtol(ctx->argv[1], &end, 10);
	if (errno != 0 || *end != '\0' || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, "usage: poolctl snap save SOCKET PID NAME\n");
		return EXIT_USAGE;
	}
	rc = pool_snap_serve_save(ctx->argv[0], (pid_t)pid, ctx->argv[2], &pages, &diff, &held_us);
	if (rc < 0) {
		fprintf(stderr, "poolctl: snap save %s: %s\n", ctx->argv[2], pool_errormsg());
		return EXIT_ERROR;
	}
	printf("saved %s: %llu pages written since the last save, held %.1f ms; diff %llu pages\n",
	       ctx->argv[2], (unsigned long long)pages, (double)held_us / 1000.0,
	       (unsigned long long)diff);
	return EXIT_OK;
}

const struct cmd_entry cmd_snap_save_entry = {
    "snap save",
    "SOCKET PID NAME",
    3,
    3,
    DAEMON_NONE,
    cmd_snap_save,
    "save the sandbox of a VMM that snap serve --track serves",
};

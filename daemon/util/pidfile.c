/* daemon/util/pidfile.c - a locked pid file: one poold per runtime directory. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "daemon/util/util.h"

/*
 * Create and lock the pid file, write our pid. -EEXIST (logged with the
 * other daemon's pid) when another poold holds it.
 */
int pidfile_open(const char *path, int *ret_fd)
{
	char buf[32];
	int fd, n;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_warn("pid file %s", path);
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int rc = errno == EWOULDBLOCK ? -EEXIST : -errno;

		n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		log_warnx("another poold (pid %s) already runs with pid file %s",
			  buf[0] ? buf : "?", path);
		close(fd);
		return rc;
	}
	if (pidfile_write(path, fd) < 0) {
		close(fd);
		return -EIO;
	}
	*ret_fd = fd;
	return 0;
}

/* (Re)write our pid into the locked pid file, e.g. after daemon(). */
int pidfile_write(const char *path, int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		log_warn("write pid file %s", path);
		return -EIO;
	}
	return 0;
}

/* Remove the pid file and drop its lock. */
void pidfile_close(const char *path, int fd)
{
	if (fd < 0)
		return;
	unlink(path);
	close(fd);
}

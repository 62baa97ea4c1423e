/*
 * common/respusers.c - the users of the RESP endpoint (resp.users).
 *
 * One user a line, as "NAME UID >PASSWORD" or "NAME UID #SHA256-HEX" (the
 * two forms of a Redis ACL password); blank lines and lines starting with
 * '#' are skipped. AUTH NAME PASSWORD then acts as UID: its databases, its
 * permissions and its quota. The file holds secrets, so one that others may
 * read is refused, as is anything but a regular file. Read by conf_finish(),
 * so poold -n checks it and a reload reads it again.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"

/* Parse one line into u; 0, or -EINVAL with the reason in why. */
static int resp_user_parse(char *line, struct resp_user *u, const char **why)
{
	char *name, *uid, *secret, *end, *extra;
	unsigned long v;
	size_t i;

	name = strtok_r(line, " \t", &end);
	uid = strtok_r(NULL, " \t", &end);
	secret = strtok_r(NULL, " \t", &end);
	extra = strtok_r(NULL, " \t", &end);
	if (name == NULL || uid == NULL || secret == NULL || extra != NULL) {
		*why = "expected NAME UID >PASSWORD or NAME UID #SHA256";
		return -EINVAL;
	}
	if (strlen(name) >= sizeof(u->name) || strcmp(name, "default") == 0) {
		*why = "a name is at most 63 bytes, and not 'default' (resp.password is its)";
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(uid, &end, 10);
	if (!isdigit((unsigned char)uid[0]) || *end != '\0' || errno != 0 || v >= UINT32_MAX) {
		*why = "the uid is not a number";
		return -EINVAL;
	}
	if (secret[0] == '>') {
		if (secret[1] == '\0' || strlen(secret + 1) >= sizeof(u->secret)) {
			*why = "a password is 1 to 256 bytes";
			return -EINVAL;
		}
	} else if (secret[0] == '#') {
		for (i = 1; isxdigit((unsigned char)secret[i]); i++)
			secret[i] = (char)tolower((unsigned char)secret[i]);
		if (i != 65 || secret[i] != '\0') {
			*why = "a #hash is the 64 hex digits of the password's SHA-256";
			return -EINVAL;
		}
	} else {
		*why = "the password starts with '>' (the password) or '#' (its SHA-256)";
		return -EINVAL;
	}
	snprintf(u->name, sizeof(u->name), "%s", name);
	u->uid = (uint32_t)v;
	u->hashed = secret[0] == '#';
	snprintf(u->secret, sizeof(u->secret), "%s", secret + 1);
	return 0;
}

int conf_load_resp_users(struct poold_conf *conf, struct conf_error *err)
{
	const char *path = conf->resp_users_file, *why = NULL;
	struct resp_user *users = NULL;
	size_t n = 0, lineno = 0, i;
	char line[1024];
	int rc = 0;
	FILE *f;

	if (conf->resp_users != NULL) /* read again (conf_finish() called twice) */
		explicit_bzero(conf->resp_users, conf->resp_nusers * sizeof(*conf->resp_users));
	free(conf->resp_users);
	conf->resp_users = NULL;
	conf->resp_nusers = 0;
	if (path[0] == '\0')
		return 0;
	rc = conf_open_file("resp.users", path, true, &f, err);
	if (rc < 0)
		return rc;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *s = line;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			why = "the line is longer than 1023 bytes";
			rc = -EINVAL;
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		while (isspace((unsigned char)*s))
			s++;
		if (*s == '\0' || *s == '#')
			continue;
		if (n == RESP_USERS_MAX) {
			why = "more than 4096 users";
			rc = -EINVAL;
			break;
		}
		if (n % 64 == 0) {
			struct resp_user *u = reallocarray(users, n + 64, sizeof(*u));

			if (u == NULL) {
				rc = -ENOMEM;
				why = "out of memory";
				break;
			}
			users = u;
		}
		rc = resp_user_parse(s, &users[n], &why);
		if (rc < 0)
			break;
		for (i = 0; i < n && strcmp(users[i].name, users[n].name) != 0; i++)
			;
		if (i < n) {
			why = "a second line for the same name";
			rc = -EINVAL;
			break;
		}
		n++;
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	if (rc < 0) {
		snprintf(err->msg, sizeof(err->msg), "resp.users: %s line %zu: %s", path, lineno,
			 why);
		if (users != NULL)
			explicit_bzero(users, n * sizeof(*users));
		free(users);
		return rc;
	}
	conf->resp_users = users;
	conf->resp_nusers = n;
	return 0;
}

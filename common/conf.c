/*
 * common/conf.c - parse poold.conf against the option table.
 *
 * Syntax: one `name = value` per line; `#` starts a comment outside quotes;
 * a value may be double-quoted (with \" and \\ escapes) to keep `#` or
 * leading spaces. Every error carries file:line and stops the parse: a config
 * is used whole or not at all.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

static bool conf_numeric_host(const char *s);

#define CONF_MAX_FILE (1 << 20)
#define CONF_MAX_LINE 4096

#define CONF_FIELD(conf, opt, type) ((type *)((char *)(conf) + (opt)->offset))

/* The option called name, or NULL. */
const struct conf_option *conf_find(const char *name)
{
	size_t i;

	for (i = 0; i < conf_noptions; i++)
		if (strcmp(conf_options[i].name, name) == 0)
			return &conf_options[i];
	return NULL;
}

/* A word for an option type, as shown by `poolctl config show`. */
const char *conf_type_name(enum conf_type type)
{
	static const char *const names[] = {
	    [CONF_BOOL] = "bool",	  [CONF_INT] = "int",	    [CONF_SIZE] = "size",
	    [CONF_DURATION] = "duration", [CONF_STRING] = "string", [CONF_ENUM] = "enum",
	    [CONF_MODE] = "mode",
	};
	return names[type];
}

static int conf_enum_index(const char *choices, const char *value)
{
	size_t vlen = strlen(value);
	const char *p = choices;
	int i = 0;

	while (*p != '\0') {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == vlen && strncmp(p, value, len) == 0)
			return i;
		if (bar == NULL)
			break;
		p = bar + 1;
		i++;
	}
	return -1;
}

static void conf_enum_name(const char *choices, int64_t index, char *buf, size_t len)
{
	const char *p = choices;

	while (index-- > 0 && p != NULL) {
		p = strchr(p, '|');
		if (p != NULL)
			p++;
	}
	if (p == NULL) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
}

/*
 * Set one option from its textual value, checking type and bounds.
 * On error, errbuf says why (without file:line).
 */
int conf_set(struct poold_conf *conf, const char *name, const char *value, char *errbuf,
	     size_t errlen)
{
	const struct conf_option *opt = conf_find(name);
	int64_t v = 0;
	uint64_t u;
	char *end, *copy;
	int rc;

	if (opt == NULL) {
		snprintf(errbuf, errlen, "unknown option '%s'", name);
		return -ENOENT;
	}
	switch (opt->type) {
	case CONF_BOOL:
		if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 ||
		    strcmp(value, "on") == 0)
			v = 1;
		else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 ||
			 strcmp(value, "off") == 0)
			v = 0;
		else
			goto bad_value;
		break;
	case CONF_INT:
	case CONF_MODE:
		errno = 0;
		v = strtoll(value, &end, opt->type == CONF_MODE ? 8 : 10);
		if (errno != 0 || end == value || *end != '\0')
			goto bad_value;
		break;
	case CONF_SIZE:
		rc = units_parse_size(value, &u);
		if (rc < 0 || u > INT64_MAX)
			goto bad_value;
		v = (int64_t)u;
		break;
	case CONF_DURATION:
		rc = units_parse_duration(value, &u);
		if (rc < 0 || u > INT64_MAX)
			goto bad_value;
		v = (int64_t)u;
		break;
	case CONF_ENUM:
		v = conf_enum_index(opt->choices, value);
		if (v < 0) {
			snprintf(errbuf, errlen, "%s: '%s' is not one of %s", name, value,
				 opt->choices);
			return -EINVAL;
		}
		*CONF_FIELD(conf, opt, int64_t) = v;
		conf->set[opt - conf_options] = true;
		return 0;
	case CONF_STRING:
		if ((int64_t)strlen(value) > opt->max) {
			snprintf(errbuf, errlen, "%s: value longer than %lld characters", name,
				 (long long)opt->max);
			return -ERANGE;
		}
		copy = strdup(value);
		if (copy == NULL) {
			snprintf(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
		free(*CONF_FIELD(conf, opt, char *));
		*CONF_FIELD(conf, opt, char *) = copy;
		conf->set[opt - conf_options] = true;
		return 0;
	}
	if (v < opt->min || v > opt->max) {
		char lo[32], hi[32];

		if (opt->type == CONF_SIZE) {
			units_fmt_size((uint64_t)opt->min, lo, sizeof(lo));
			units_fmt_size((uint64_t)opt->max, hi, sizeof(hi));
		} else if (opt->type == CONF_DURATION) {
			units_fmt_duration((uint64_t)opt->min, lo, sizeof(lo));
			units_fmt_duration((uint64_t)opt->max, hi, sizeof(hi));
		} else if (opt->type == CONF_MODE) {
			snprintf(lo, sizeof(lo), "%04llo", (long long)opt->min);
			snprintf(hi, sizeof(hi), "%04llo", (long long)opt->max);
		} else {
			snprintf(lo, sizeof(lo), "%lld", (long long)opt->min);
			snprintf(hi, sizeof(hi), "%lld", (long long)opt->max);
		}
		snprintf(errbuf, errlen, "%s: %s is out of range [%s, %s]", name, value, lo, hi);
		return -ERANGE;
	}
	*CONF_FIELD(conf, opt, int64_t) = v;
	conf->set[opt - conf_options] = true;
	return 0;

bad_value:
	snprintf(errbuf, errlen, "%s: '%s' is not a valid %s%s", name, value,
		 conf_type_name(opt->type),
		 opt->type == CONF_SIZE	      ? " (use e.g. 4096, 64M, 2G)"
		 : opt->type == CONF_DURATION ? " (use e.g. 500ms, 2s, 1m)"
		 : opt->type == CONF_BOOL     ? " (use yes or no)"
		 : opt->type == CONF_MODE     ? " (use octal, e.g. 0660)"
					      : "");
	return -EINVAL;
}

/* Format an option's current value as it would be written in the file. */
void conf_format(const struct poold_conf *conf, const struct conf_option *opt, char *buf,
		 size_t len)
{
	int64_t v;

	if (opt->type == CONF_STRING) {
		const char *s = *CONF_FIELD(conf, opt, char *const);

		snprintf(buf, len, "%s", s ? s : "");
		return;
	}
	v = *CONF_FIELD(conf, opt, const int64_t);
	switch (opt->type) {
	case CONF_BOOL:
		snprintf(buf, len, "%s", v ? "yes" : "no");
		break;
	case CONF_SIZE:
		units_fmt_size((uint64_t)v, buf, len);
		break;
	case CONF_DURATION:
		units_fmt_duration((uint64_t)v, buf, len);
		break;
	case CONF_ENUM:
		conf_enum_name(opt->choices, v, buf, len);
		break;
	case CONF_MODE:
		snprintf(buf, len, "%04llo", (long long)v);
		break;
	default:
		snprintf(buf, len, "%lld", (long long)v);
		break;
	}
}

/* Whether an option was left at its default (not set by the file or the command line). */
bool conf_is_default(const struct poold_conf *conf, const struct conf_option *opt)
{
	return !conf->set[opt - conf_options];
}

/* Free a configuration; NULL is a no-op. */
void conf_free(struct poold_conf *conf)
{
	size_t i;

	if (conf == NULL)
		return;
	for (i = 0; i < conf_noptions; i++)
		if (conf_options[i].type == CONF_STRING)
			free(*CONF_FIELD(conf, &conf_options[i], char *));
	free(conf->secret);
	if (conf->etcd_password != NULL)
		explicit_bzero(conf->etcd_password, strlen(conf->etcd_password));
	free(conf->etcd_password);
	if (conf->resp_users != NULL)
		explicit_bzero(conf->resp_users, conf->resp_nusers * sizeof(*conf->resp_users));
	free(conf->resp_users);
	free(conf);
}

/* A configuration holding every option's default. */
int conf_defaults(struct poold_conf **ret_conf)
{
	struct poold_conf *conf = calloc(1, sizeof(*conf));
	char err[256];
	size_t i;

	if (conf == NULL)
		return -ENOMEM;
	if (conf_noptions > CONF_MAX_OPTIONS)
		fatalx("option table larger than CONF_MAX_OPTIONS");
	for (i = 0; i < conf_noptions; i++) {
		int rc =
		    conf_set(conf, conf_options[i].name, conf_options[i].def, err, sizeof(err));

		if (rc < 0)
			fatalx("default of %s is invalid: %s", conf_options[i].name, err);
		conf->set[i] = false;
	}
	*ret_conf = conf;
	return 0;
}

static int conf_derive_path(char **field, const char *dir, const char *file)
{
	char *path;

	if (**field != '\0')
		return 0;
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	free(*field);
	*field = path;
	return 0;
}

/*
 * Look up a NUMA node in a lend.numa spec ("0:1G,1:512M"). Returns 1 and its
 * share when listed, 0 when not, -EINVAL on a malformed spec; *ret_sum (may
 * be NULL) gets the sum of all listed shares.
 */
int conf_numa_share(const char *spec, int node, uint64_t *ret_bytes, uint64_t *ret_sum)
{
	const char *p = spec;
	uint64_t sum = 0;
	int found = 0;

	while (*p != '\0') {
		char item[64], *colon, *end;
		size_t len = strcspn(p, ",");
		uint64_t bytes;
		long id;

		if (len == 0 || len >= sizeof(item))
			return -EINVAL;
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		colon = strchr(item, ':');
		if (colon == NULL)
			return -EINVAL;
		*colon = '\0';
		id = strtol(item, &end, 10);
		if (item[0] == '\0' || *end != '\0' || id < 0 || id > 1023 ||
		    units_parse_size(colon + 1, &bytes) < 0)
			return -EINVAL;
		sum += bytes;
		if (id == node) {
			*ret_bytes = bytes;
			found = 1;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (ret_sum != NULL)
		*ret_sum = sum;
	return found;
}

/*
 * Open a file to read without blocking on what is not one: a FIFO or a
 * device would hold the event loop until someone wrote to it. The caller
 * checks that it is a regular file.
 */
FILE *conf_fopen(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (f == NULL)
		close(fd);
	return f;
}

/*
 * Open the regular file at path, option's value (an absolute path). With
 * secret, it holds passwords: refuse it if others may read or write it or
 * its group write it, as ssh refuses such a key. 0, or -errno with the
 * reason in err.
 */
int conf_open_file(const char *option, const char *path, bool secret, FILE **ret,
		   struct conf_error *err)
{
	struct stat st;
	FILE *f;

	if (path[0] != '/') {
		snprintf(err->msg, sizeof(err->msg), "%s: '%s' is not an absolute path", option,
			 path);
		return -EINVAL;
	}
	f = conf_fopen(path);
	if (f != NULL && (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode))) {
		fclose(f);
		f = NULL;
		errno = EINVAL; /* "Invalid argument": not a regular file */
	}
	if (f == NULL) {
		snprintf(err->msg, sizeof(err->msg), "%s: cannot read %s: %s", option, path,
			 strerror(errno));
		return -errno;
	}
	if (secret && (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) != 0) {
		fclose(f);
		snprintf(err->msg, sizeof(err->msg),
			 "%s: %s holds passwords and is mode %04o: others may read or write it "
			 "(chmod 0600)",
			 option, path, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	*ret = f;
	return 0;
}

/* TLS to etcd: https endpoints need coord.etcd_tls_ca; a client certificate, its key. */
static int conf_check_etcd_tls(const struct poold_conf *conf, bool https, struct conf_error *err)
{
	const struct {
		const char *name, *path;
	} files[] = {{"coord.etcd_tls_ca", conf->coord_etcd_tls_ca},
		     {"coord.etcd_tls_cert", conf->coord_etcd_tls_cert},
		     {"coord.etcd_tls_key", conf->coord_etcd_tls_key}};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		if (files[i].path[0] != '\0' && files[i].path[0] != '/') {
			snprintf(err->msg, sizeof(err->msg), "%s: '%s' is not an absolute path",
				 files[i].name, files[i].path);
			return -EINVAL;
		}
		if (files[i].path[0] != '\0' && !https) {
			snprintf(err->msg, sizeof(err->msg),
				 "%s is set, but no coord.etcd endpoint is https://",
				 files[i].name);
			return -EINVAL;
		}
	}
	if (https && conf->coord_etcd_tls_ca[0] == '\0') {
		snprintf(err->msg, sizeof(err->msg),
			 "coord.etcd: https endpoints need coord.etcd_tls_ca (the CA of etcd's "
			 "certificates)");
		return -EINVAL;
	}
	if ((conf->coord_etcd_tls_cert[0] != '\0') != (conf->coord_etcd_tls_key[0] != '\0')) {
		snprintf(err->msg, sizeof(err->msg),
			 "coord.etcd_tls_cert and coord.etcd_tls_key go together");
		return -EINVAL;
	}
	return 0;
}

/*
 * coord.etcd: each endpoint http[s]://HOST:PORT. A candidate needs an address
 * nodes can reach when it leads, and a node.id of its own: two candidates
 * that both took id 1 would each claim the other's extents after a failover.
 */
static int conf_check_etcd(const struct poold_conf *conf, struct conf_error *err)
{
	const char *s = conf->coord_etcd, *at;
	bool https = false;
	char addr[256];
	size_t n, scheme;
	int rc;

	if (s[0] == '\0')
		return 0;
	for (; *s != '\0'; s += n + (s[n] == ',')) {
		n = strcspn(s, ",");
		scheme = strncmp(s, "https://", 8) == 0 ? 8 : strncmp(s, "http://", 7) == 0 ? 7 : 0;
		if (scheme == 0 || n - scheme >= sizeof(addr)) {
			snprintf(err->msg, sizeof(err->msg),
				 "coord.etcd: '%.*s' is not http[s]://HOST:PORT", (int)MIN(n, 200),
				 s);
			return -EINVAL;
		}
		https |= scheme == 8;
		snprintf(addr, sizeof(addr), "%.*s", (int)(n - scheme), s + scheme);
		if (addr_check("coord.etcd", addr, err->msg, sizeof(err->msg)) < 0)
			return -EINVAL;
	}
	rc = conf_check_etcd_tls(conf, https, err);
	if (rc < 0 || conf->role != ROLE_COORDINATOR)
		return rc;
	if (conf->coord_journal[0] != '\0') {
		snprintf(err->msg, sizeof(err->msg),
			 "coord.journal and coord.etcd cannot be combined: with coord.etcd the "
			 "coordinator's state lives in etcd");
		return -EINVAL;
	}
	if (conf->node_id == 0) {
		snprintf(err->msg, sizeof(err->msg),
			 "a coordinator candidate (coord.etcd) needs a node.id of its own");
		return -EINVAL;
	}
	at = conf->coord_advertise[0] != '\0' ? conf->coord_advertise : conf->peer_listen;
	if (at[0] == '\0' || strncmp(at, "0.0.0.0:", 8) == 0 || strncmp(at, "[::]:", 5) == 0) {
		snprintf(err->msg, sizeof(err->msg),
			 "a coordinator candidate (coord.etcd) needs peer.listen, and "
			 "coord.advertise when peer.listen is a wildcard");
		return -EINVAL;
	}
	return addr_check("coord.advertise", at, err->msg, sizeof(err->msg)) < 0 ? -EINVAL : 0;
}

/* peer.tls needs its three files, as absolute paths; they are read when poold starts. */
static int conf_check_tls(const struct poold_conf *conf, struct conf_error *err)
{
	const struct {
		const char *name, *path;
	} files[] = {{"peer.tls_cert", conf->peer_tls_cert},
		     {"peer.tls_key", conf->peer_tls_key},
		     {"peer.tls_ca", conf->peer_tls_ca}};
	size_t i;

	if (!conf->peer_tls)
		return 0;
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		if (files[i].path[0] == '\0') {
			snprintf(err->msg, sizeof(err->msg), "peer.tls needs %s", files[i].name);
			return -EINVAL;
		}
		if (files[i].path[0] != '/') {
			snprintf(err->msg, sizeof(err->msg), "%s: '%s' is not an absolute path",
				 files[i].name, files[i].path);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The first line of the file at path (option's value), without its line
 * end, into buf; secret: the file must be private (conf_open_file()).
 */
static int conf_read_secret_file(const char *option, const char *path, bool secret, char *buf,
				 size_t len, struct conf_error *err)
{
	size_t n;
	FILE *f;
	int rc = conf_open_file(option, path, secret, &f, err);

	if (rc < 0)
		return rc;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (buf[0] == '\0') {
		snprintf(err->msg, sizeof(err->msg), "%s: %s is empty", option, path);
		return -EINVAL;
	}
	return 0;
}

/* The peer secret: peer.secret, or the first line of peer.secret_file. */
static int conf_load_secret(struct poold_conf *conf, struct conf_error *err)
{
	char buf[1025] = "";
	int rc;

	if (conf->peer_secret[0] != '\0' && conf->peer_secret_file[0] != '\0') {
		snprintf(err->msg, sizeof(err->msg),
			 "set peer.secret or peer.secret_file, not both");
		return -EINVAL;
	}
	if (conf->peer_secret_file[0] != '\0') {
		rc = conf_read_secret_file("peer.secret_file", conf->peer_secret_file, false, buf,
					   sizeof(buf), err);
		if (rc < 0)
			return rc;
	}
	free(conf->secret);
	conf->secret = strdup(conf->peer_secret_file[0] ? buf : conf->peer_secret);
	explicit_bzero(buf, sizeof(buf));
	return conf->secret ? 0 : -ENOMEM;
}

/* poold's password at etcd: the first line of coord.etcd_password_file, a file of its own. */
static int conf_load_etcd_password(struct poold_conf *conf, struct conf_error *err)
{
	char buf[1025] = "";
	int rc;

	if ((conf->coord_etcd_user[0] != '\0') != (conf->coord_etcd_password_file[0] != '\0')) {
		snprintf(err->msg, sizeof(err->msg),
			 "coord.etcd_user and coord.etcd_password_file go together");
		return -EINVAL;
	}
	if (conf->coord_etcd_user[0] == '\0')
		return 0;
	if (conf->coord_etcd[0] == '\0') {
		snprintf(err->msg, sizeof(err->msg), "coord.etcd_user needs coord.etcd");
		return -EINVAL;
	}
	rc = conf_read_secret_file("coord.etcd_password_file", conf->coord_etcd_password_file, true,
				   buf, sizeof(buf), err);
	if (rc < 0)
		return rc;
	free(conf->etcd_password);
	conf->etcd_password = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return conf->etcd_password ? 0 : -ENOMEM;
}

/*
 * Check what single options cannot (relations between options) and fill in
 * derived values. Called once all options are set.
 */
int conf_finish(struct poold_conf *conf, struct conf_error *err)
{
	int rc;

	if (conf->runtime_dir[0] != '/') {
		snprintf(err->msg, sizeof(err->msg), "runtime_dir: '%s' is not an absolute path",
			 conf->runtime_dir);
		return -EINVAL;
	}
	rc = conf_derive_path(&conf->socket, conf->runtime_dir, "poold.sock");
	if (rc == 0)
		rc = conf_derive_path(&conf->pidfile, conf->runtime_dir, "poold.pid");
	if (rc < 0) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return rc;
	}
	if (strlen(conf->socket) > 107) {
		snprintf(err->msg, sizeof(err->msg), "control.socket: path '%s' is too long",
			 conf->socket);
		return -ENAMETOOLONG;
	}
	if (conf->node_name[0] == '\0') {
		char host[64];

		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		free(conf->node_name);
		conf->node_name = strdup(host);
		if (conf->node_name == NULL)
			return -ENOMEM;
	}
	if (conf->lend_numa[0] != '\0') {
		uint64_t b, sum = 0;

		if (conf_numa_share(conf->lend_numa, -1, &b, &sum) < 0) {
			snprintf(err->msg, sizeof(err->msg),
				 "lend.numa: '%s' is not NODE:SIZE[,NODE:SIZE]...",
				 conf->lend_numa);
			return -EINVAL;
		}
		if (sum > (uint64_t)conf->lend_size) {
			snprintf(err->msg, sizeof(err->msg),
				 "lend.numa: the shares add up to more "
				 "than lend.size");
			return -EINVAL;
		}
		if (conf->lend_max != 0) {
			snprintf(err->msg, sizeof(err->msg),
				 "lend.numa and lend.max cannot be combined");
			return -EINVAL;
		}
	}
	if (conf->lend_max != 0 && conf->lend_max < conf->lend_size) {
		snprintf(err->msg, sizeof(err->msg), "lend.max must be 0 or at least lend.size");
		return -EINVAL;
	}
	if (conf->role == ROLE_NODE && conf->coordinator[0] == '\0' &&
	    conf->coord_etcd[0] == '\0') {
		snprintf(err->msg, sizeof(err->msg),
			 "role = node needs coordinator = host:port or coord.etcd");
		return -EINVAL;
	}
	rc = conf_check_etcd(conf, err);
	if (rc < 0)
		return rc;
	if (conf->coordinator[0] != '\0' &&
	    addr_check("coordinator", conf->coordinator, err->msg, sizeof(err->msg)) < 0)
		return -EINVAL;
	if (conf->peer_listen[0] != '\0' &&
	    addr_check("peer.listen", conf->peer_listen, err->msg, sizeof(err->msg)) < 0)
		return -EINVAL;
	if (conf->resp_listen[0] != '\0' &&
	    addr_check("resp.listen", conf->resp_listen, err->msg, sizeof(err->msg)) < 0)
		return -EINVAL;
	if (conf->metrics_listen[0] != '\0' &&
	    addr_check("metrics.listen", conf->metrics_listen, err->msg, sizeof(err->msg)) < 0)
		return -EINVAL;
	if (conf->fabric_ports[0] != '\0' && conf_port_range(conf->fabric_ports, NULL, NULL) < 0) {
		snprintf(err->msg, sizeof(err->msg),
			 "fabric.ports: '%s' is not LO-HI (1024-65535, "
			 "LO <= HI)",
			 conf->fabric_ports);
		return -EINVAL;
	}
	if (conf->fabric_address[0] != '\0' && !conf_numeric_host(conf->fabric_address)) {
		snprintf(err->msg, sizeof(err->msg),
			 "fabric.address: '%s' is not a numeric IPv4 or IPv6 address",
			 conf->fabric_address);
		return -EINVAL;
	}
	rc = conf_check_tls(conf, err);
	if (rc < 0)
		return rc;
	rc = conf_load_secret(conf, err);
	if (rc < 0)
		return rc;
	rc = conf_load_etcd_password(conf, err);
	if (rc < 0)
		return rc;
	rc = conf_load_resp_users(conf, err);
	if (rc < 0)
		return rc;
	/* Whoever reaches an open peer listener would be a node, trusted with any uid. */
	if (conf->role == ROLE_COORDINATOR && conf->peer_listen[0] != '\0' &&
	    conf->secret[0] == '\0' && !addr_is_loopback(conf->peer_listen)) {
		snprintf(err->msg, sizeof(err->msg),
			 "peer.listen: %s is reachable from other hosts: "
			 "set peer.secret or peer.secret_file (nodes authenticate with it)",
			 conf->peer_listen);
		return -EINVAL;
	}
	return 0;
}

/* Whether s is a numeric IPv4 or IPv6 address (no port, no brackets). */
static bool conf_numeric_host(const char *s)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, s, &a4) == 1 || inet_pton(AF_INET6, s, &a6) == 1;
}

/* Parse "LO-HI", 1024 <= LO <= HI <= 65535; either out-parameter may be NULL. */
int conf_port_range(const char *s, unsigned *ret_lo, unsigned *ret_hi)
{
	unsigned lo, hi;
	int n = 0;

	if (sscanf(s, "%u-%u%n", &lo, &hi, &n) != 2 || s[n] != '\0' || lo < 1024 || lo > hi ||
	    hi > 65535)
		return -EINVAL;
	if (ret_lo != NULL)
		*ret_lo = lo;
	if (ret_hi != NULL)
		*ret_hi = hi;
	return 0;
}

static char *conf_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Parse the value part of a line in place: quotes, escapes, trailing comment. */
static int conf_parse_value(char *s, char **ret_value)
{
	char *out, *in;

	s = conf_trim(s);
	if (*s != '"') {
		char *hash = strchr(s, '#');

		if (hash != NULL)
			*hash = '\0';
		*ret_value = conf_trim(s);
		return 0;
	}
	out = in = s + 1;
	for (; *in != '"'; in++) {
		if (*in == '\0')
			return -EINVAL;
		if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
			in++;
		*out++ = *in;
	}
	*out = '\0';
	in = conf_trim(in + 1);
	if (*in != '\0' && *in != '#')
		return -EINVAL;
	*ret_value = s + 1;
	return 0;
}

static int conf_parse_line(struct poold_conf *conf, char *line, int *seen_at, int lineno,
			   struct conf_error *err)
{
	char *eq, *name, *value;
	const struct conf_option *opt;
	int rc;

	name = conf_trim(line);
	if (*name == '\0' || *name == '#')
		return 0;
	eq = strchr(name, '=');
	if (eq == NULL) {
		snprintf(err->msg, sizeof(err->msg), "expected 'name = value'");
		return -EINVAL;
	}
	*eq = '\0';
	name = conf_trim(name);
	if (conf_parse_value(eq + 1, &value) < 0) {
		snprintf(err->msg, sizeof(err->msg), "%s: unterminated or malformed quoted value",
			 name);
		return -EINVAL;
	}
	opt = conf_find(name);
	if (opt != NULL && seen_at[opt - conf_options] != 0) {
		snprintf(err->msg, sizeof(err->msg), "%s: set twice (first at line %d)", name,
			 seen_at[opt - conf_options]);
		return -EINVAL;
	}
	rc = conf_set(conf, name, value, err->msg, sizeof(err->msg));
	if (rc < 0)
		return rc;
	seen_at[opt - conf_options] = lineno;
	return 0;
}

/*
 * Parse configuration text; name is used in error messages as the file name.
 * The result still needs conf_finish() (conf_load() does both).
 */
int conf_parse_text(const char *name, const char *text, struct poold_conf **ret_conf,
		    struct conf_error *err)
{
	struct poold_conf *conf;
	const char *p = text;
	char line[CONF_MAX_LINE];
	int *seen_at; /* line where each option was set, 0 if not yet */
	int rc, lineno = 0;

	snprintf(err->file, sizeof(err->file), "%s", name);
	err->line = 0;
	snprintf(err->msg, sizeof(err->msg), "out of memory");
	seen_at = calloc(conf_noptions, sizeof(*seen_at));
	if (seen_at == NULL)
		return -ENOMEM;
	rc = conf_defaults(&conf);
	if (rc < 0)
		goto out_seen;
	while (*p != '\0') {
		size_t len = strcspn(p, "\n");

		lineno++;
		err->line = lineno;
		if (len >= sizeof(line)) {
			snprintf(err->msg, sizeof(err->msg), "line longer than %d bytes",
				 CONF_MAX_LINE - 1);
			rc = -EINVAL;
			goto out_free;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		rc = conf_parse_line(conf, line, seen_at, lineno, err);
		if (rc < 0)
			goto out_free;
		p += len;
		if (*p == '\n')
			p++;
	}
	err->line = 0;
	*ret_conf = conf;
	free(seen_at);
	return 0;
out_free:
	conf_free(conf);
out_seen:
	free(seen_at);
	return rc;
}

/* Parse a configuration file; on error err holds file, line and reason. */
int conf_parse_file(const char *path, struct poold_conf **ret_conf, struct conf_error *err)
{
	struct stat st;
	char *text;
	size_t len;
	FILE *f;
	int rc;

	snprintf(err->file, sizeof(err->file), "%s", path);
	err->line = 0;
	f = conf_fopen(path);
	if (f == NULL) {
		rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "cannot open: %s", strerror(errno));
		return rc;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CONF_MAX_FILE) {
		snprintf(err->msg, sizeof(err->msg), "not a regular file of at most %d bytes",
			 CONF_MAX_FILE);
		fclose(f);
		return -EINVAL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		fclose(f);
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	len = fread(text, 1, (size_t)st.st_size, f);
	text[len] = '\0';
	fclose(f);
	if (strlen(text) != len) {
		snprintf(err->msg, sizeof(err->msg), "file contains a NUL byte");
		free(text);
		return -EINVAL;
	}
	rc = conf_parse_text(path, text, ret_conf, err);
	free(text);
	return rc;
}

/*
 * Load the configuration poold runs on: the file (or the embedded defaults
 * when path is NULL), then `name=value` overrides from the command line, then
 * conf_finish(). On error err says where and why.
 */
int conf_load(const char *path, char *const *overrides, size_t noverrides,
	      struct poold_conf **ret_conf, struct conf_error *err)
{
	struct poold_conf *conf;
	size_t i;
	int rc;

	memset(err, 0, sizeof(*err));
	rc = path ? conf_parse_file(path, &conf, err) : conf_defaults(&conf);
	if (rc < 0)
		return rc;
	for (i = 0; i < noverrides; i++) {
		char name[128];
		const char *eq = strchr(overrides[i], '=');

		snprintf(err->file, sizeof(err->file), "command line");
		err->line = 0;
		if (eq == NULL || (size_t)(eq - overrides[i]) >= sizeof(name)) {
			snprintf(err->msg, sizeof(err->msg), "'%s' is not name=value",
				 overrides[i]);
			rc = -EINVAL;
			goto out_free;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - overrides[i]), overrides[i]);
		rc = conf_set(conf, name, eq + 1, err->msg, sizeof(err->msg));
		if (rc < 0)
			goto out_free;
	}
	snprintf(err->file, sizeof(err->file), "%s", path ? path : "built-in defaults");
	rc = conf_finish(conf, err);
	if (rc < 0)
		goto out_free;
	*ret_conf = conf;
	return 0;
out_free:
	conf_free(conf);
	return rc;
}

/*
 * daemon/firewall.c - only poold's uid reaches the fabric's ports, this
 * node's and every member's, from this host (fabric.firewall).
 *
 * UCX's software RMA (TCP, shared-memory emulation) serves whoever holds an
 * endpoint to a worker, at any address of its process; tenants never learn
 * a worker's address from poold, but one could rebuild it from a listening
 * port. An nftables rule on this host's output path refuses new connections
 * (a SYN without ACK) to those ports from any other uid: a tenant on this
 * host reaches neither this poold's worker nor, as every node has the rule,
 * any other node's. Each endpoint UCX accepts holds one of poold's fds, so
 * the rule is also what bounds the fabric connections a tenant can make
 * poold hold: none.
 *
 * The ports are fabric.ports, when set, from before the fabric starts, and
 * the TCP ports the worker turned out to listen on (found in /proc right
 * after it starts, before poold opens a listener of its own), which every
 * node publishes in its NodeInfo; the set holds this node's and every
 * member's, and follows the member list. Only SYNs are matched, so a
 * tenant's own server answering a client whose port happens to be one of
 * them is left alone. The table is named after the control socket (one
 * poold per socket on a host): a crashed poold's is replaced at its next
 * start, and it is deleted at stop.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <event2/event.h>

#include "daemon/poold.h"

extern char **environ;

/* Ports of one member the rule covers: a worker listens on one per network device. */
#define FIREWALL_MEMBER_PORTS_MAX 64

struct firewall {
	bool on;		     /* the table is installed and in force */
	char table[40];		     /* inet TABLE */
	char state[200];	     /* for status: "on: ..." or "off: why" */
	unsigned range_lo, range_hi; /* fabric.ports, 0-0 when unset */
	uint32_t *own;		     /* the ports this poold's worker listens on, sorted */
	size_t nown;
	uint32_t *applied; /* the set beyond the range as last installed, sorted */
	size_t napplied;
	struct event *sync_ev; /* members changed: the set follows, batched */
};

/* Run nft with script on its standard input; 0, or -errno / a failed nft as -EIO. */
static int firewall_nft(const char *script, bool quiet)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {"nft", "-f", "-", NULL};
	int in[2], devnull, status, rc;
	size_t len = strlen(script);
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (quiet && devnull >= 0)
		posix_spawn_file_actions_adddup2(&fa, devnull, 2);
	rc = posix_spawnp(&pid, "nft", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	if (devnull >= 0)
		close(devnull);
	if (rc != 0) {
		close(in[1]);
		return -rc;
	}
	if (write(in[1], script, len) != (ssize_t)len)
		rc = -EIO;
	close(in[1]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		rc = -EIO;
	return rc;
}

static int firewall_cmp_port(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort and drop repeats; the new count. */
static size_t firewall_sort_unique(uint32_t *ports, size_t n)
{
	size_t i, k = 0;

	if (n > 1)
		qsort(ports, n, sizeof(*ports), firewall_cmp_port);
	for (i = 0; i < n; i++)
		if (k == 0 || ports[k - 1] != ports[i])
			ports[k++] = ports[i];
	return k;
}

static bool firewall_has(const uint64_t *inodes, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (inodes[i] == ino)
			return true;
	return false;
}

/*
 * The TCP ports a socket of this process listens on, sorted: the sockets
 * among its fds (/proc/self/fd), looked up in this network namespace's
 * tables (/proc/self/net/tcp, tcp6) in the LISTEN state.
 */
static int firewall_listening_ports(uint32_t **ret_ports, size_t *ret_n)
{
	static const char *const tables[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
	uint64_t *inodes = NULL;
	uint32_t *ports = NULL, *grown;
	size_t ninodes = 0, cap = 0, nports = 0, pcap = 0, t;
	struct dirent *de;
	char link[64], line[512];
	unsigned port, state;
	int rc = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		ssize_t len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		unsigned long long v;

		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%llu]", &v) != 1)
			continue;
		if (ninodes == cap) {
			uint64_t *more = reallocarray(inodes, cap ? cap * 2 : 64, sizeof(*inodes));

			if (more == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			inodes = more;
			cap = cap ? cap * 2 : 64;
		}
		inodes[ninodes++] = v;
	}
	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		FILE *f = fopen(tables[t], "re");

		if (f == NULL)
			continue; /* no IPv6 */
		while (fgets(line, sizeof(line), f) != NULL) {
			unsigned long long v;

			/* "sl: local:port remote:port st tx:rx tr:when retr uid timeout inode" */
			if (sscanf(line,
				   " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x "
				   "%*x %*u %*u %llu",
				   &port, &state, &v) != 3 ||
			    state != 0x0A || !firewall_has(inodes, ninodes, v))
				continue;
			if (nports == pcap) {
				grown = reallocarray(ports, pcap ? pcap * 2 : 8, sizeof(*ports));
				if (grown == NULL) {
					fclose(f);
					rc = -ENOMEM;
					goto out;
				}
				ports = grown;
				pcap = pcap ? pcap * 2 : 8;
			}
			ports[nports++] = port;
		}
		fclose(f);
	}
	*ret_n = firewall_sort_unique(ports, nports);
	*ret_ports = ports;
	ports = NULL;
out:
	closedir(d);
	free(inodes);
	free(ports);
	return rc;
}

static bool firewall_in_range(const struct firewall *fw, uint32_t port)
{
	return fw->range_lo != 0 && port >= fw->range_lo && port <= fw->range_hi;
}

/* This node's ports and every member's, outside fabric.ports, sorted; NULL when none. */
static int firewall_wanted(struct poold *pd, uint32_t **ret_ports, size_t *ret_n)
{
	struct firewall *fw = pd->firewall;
	struct member *m;
	size_t n = fw->nown, k = 0, i;
	uint32_t *ports;

	TAILQ_FOREACH(m, &pd->members, entry)
		n += MIN(m->info->n_fabric_ports, FIREWALL_MEMBER_PORTS_MAX);
	ports = calloc(n ? n : 1, sizeof(*ports));
	if (ports == NULL)
		return -ENOMEM;
	for (i = 0; i < fw->nown; i++)
		ports[k++] = fw->own[i];
	TAILQ_FOREACH(m, &pd->members, entry)
		for (i = 0; i < MIN(m->info->n_fabric_ports, FIREWALL_MEMBER_PORTS_MAX); i++)
			if (m->info->fabric_ports[i] >= 1 && m->info->fabric_ports[i] <= 65535)
				ports[k++] = m->info->fabric_ports[i];
	n = 0;
	for (i = 0; i < k; i++)
		if (!firewall_in_range(fw, ports[i]))
			ports[n++] = ports[i];
	*ret_n = firewall_sort_unique(ports, n);
	*ret_ports = ports;
	return 0;
}

/*
 * Make the table's set hold fabric.ports and ports, in one nft transaction,
 * after head (the table's definition at start, or nothing).
 */
static int firewall_apply(struct firewall *fw, const char *head, const uint32_t *ports, size_t n,
			  bool quiet)
{
	size_t cap = strlen(head) + 256 + 8 * n, used;
	char *script = malloc(cap), *sep = "";
	int rc;

	if (script == NULL)
		return -ENOMEM;
	used = (size_t)snprintf(script, cap, "%sflush set inet %s fabric\n", head, fw->table);
	if (fw->range_lo != 0 || n > 0) {
		used += (size_t)snprintf(script + used, cap - used, "add element inet %s fabric { ",
					 fw->table);
		if (fw->range_lo != 0) {
			used += (size_t)snprintf(script + used, cap - used, "%u-%u", fw->range_lo,
						 fw->range_hi);
			sep = ", ";
		}
		for (size_t i = 0; i < n; i++, sep = ", ")
			used += (size_t)snprintf(script + used, cap - used, "%s%u", sep, ports[i]);
		snprintf(script + used, cap - used, " }\n");
	}
	rc = firewall_nft(script, quiet);
	free(script);
	return rc;
}

static void firewall_set_state(struct firewall *fw, size_t npeer)
{
	char own[64] = "";

	if (fw->range_lo != 0)
		snprintf(own, sizeof(own), "fabric.ports %u-%u and ", fw->range_lo, fw->range_hi);
	snprintf(fw->state, sizeof(fw->state),
		 "on: %s%zu port(s) of this node's fabric and %zu of other members' refuse every "
		 "uid but %u (table inet %s)",
		 own, fw->nown, npeer, (unsigned)geteuid(), fw->table);
}

/* Bring the set up to this node's and the members' ports; 0 when it already was. */
static int firewall_sync(struct poold *pd, bool quiet)
{
	struct firewall *fw = pd->firewall;
	uint32_t *ports;
	size_t n;
	int rc;

	rc = firewall_wanted(pd, &ports, &n);
	if (rc < 0)
		return rc;
	if (n == fw->napplied && (n == 0 || memcmp(ports, fw->applied, n * sizeof(*ports)) == 0)) {
		free(ports);
		return 0;
	}
	rc = firewall_apply(fw, "", ports, n, quiet);
	if (rc < 0) {
		free(ports);
		return rc;
	}
	free(fw->applied);
	fw->applied = ports;
	fw->napplied = n;
	firewall_set_state(fw, n >= fw->nown ? n - fw->nown : 0);
	return 0;
}

static void firewall_sync_cb(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;
	int rc;

	(void)fd;
	(void)what;
	rc = firewall_sync(pd, false);
	if (rc < 0)
		log_warnx(
		    "fabric.firewall: cannot update the ports of table inet %s to the members': "
		    "%s (tried again at the next change)",
		    pd->firewall->table, err_str(rc));
}

/* Delete the table, if it is installed. */
static void firewall_remove(struct firewall *fw)
{
	char script[128];

	if (!fw->on)
		return;
	snprintf(script, sizeof(script), "delete table inet %s\n", fw->table);
	if (firewall_nft(script, false) < 0)
		log_warnx("fabric.firewall: cannot remove table inet %s", fw->table);
	fw->on = false;
}

/* Not in force: say why, and whether poold may go on without it. */
static int firewall_refused(struct poold *pd, const char *what, int rc)
{
	struct firewall *fw = pd->firewall;
	const char *why = rc == -ENOENT ? "nft is not installed"
			  : rc == -EIO	? "nft refused it (poold needs root or CAP_NET_ADMIN)"
					: err_str(rc);

	firewall_remove(fw);
	snprintf(fw->state, sizeof(fw->state), "off: cannot %s: %s", what, why);
	if (pd->conf->fabric_firewall == FIREWALL_YES) {
		log_warnx("fabric.firewall: cannot %s: %s", what, why);
		return rc;
	}
	log_warnx("fabric.firewall = auto: cannot %s: %s; every uid on this host can reach this "
		  "poold's fabric ports",
		  what, why);
	return 0;
}

/*
 * Before the fabric starts: the table, with fabric.ports if set. An error
 * means poold must not start (fabric.firewall = yes).
 */
int firewall_open(struct poold *pd)
{
	struct firewall *fw = calloc(1, sizeof(*fw));
	char script[768];
	int rc;

	if (fw == NULL)
		return -ENOMEM;
	pd->firewall = fw;
	if (pd->conf->fabric_ports[0] != '\0')
		conf_port_range(pd->conf->fabric_ports, &fw->range_lo, &fw->range_hi);
	if (pd->conf->fabric_firewall == FIREWALL_NO) {
		snprintf(fw->state, sizeof(fw->state), "off: fabric.firewall = no");
		return 0;
	}
	fw->sync_ev = evtimer_new(pd->base, firewall_sync_cb, pd);
	if (fw->sync_ev == NULL)
		return -ENOMEM;
	snprintf(fw->table, sizeof(fw->table), "poold_fabric_%08x",
		 (unsigned)XXH32(pd->conf->socket, strlen(pd->conf->socket), 0));
	/*
	 * One transaction: a crashed poold's table replaced (added first, so there is one to
	 * delete).
	 */
	snprintf(script, sizeof(script),
		 "add table inet %s\n"
		 "delete table inet %s\n"
		 "table inet %s {\n"
		 "  set fabric { type inet_service; flags interval; }\n"
		 "  chain out {\n"
		 "    type filter hook output priority 0; policy accept;\n"
		 "    tcp flags & (syn | ack) == syn tcp dport @fabric meta skuid != %u "
		 "reject with tcp reset\n"
		 "  }\n"
		 "}\n",
		 fw->table, fw->table, fw->table, (unsigned)geteuid());
	rc = firewall_apply(fw, script, NULL, 0, pd->conf->fabric_firewall == FIREWALL_AUTO);
	fw->on = rc == 0;
	if (rc < 0)
		return firewall_refused(pd, "install the nftables rule", rc);
	firewall_set_state(fw, 0);
	return 0;
}

/*
 * Right after the fabric started, before poold opens a listener of its
 * own: the ports its worker listens on, published to the members and
 * added to the set.
 */
int firewall_cover_fabric(struct poold *pd)
{
	struct firewall *fw = pd->firewall;
	int rc;

	rc = firewall_listening_ports(&fw->own, &fw->nown);
	if (rc < 0) {
		log_warnx("fabric.firewall: cannot find the fabric's ports in /proc: %s",
			  err_str(rc));
		return fw->on ? rc : 0;
	}
	if (!fw->on)
		return 0;
	rc = firewall_sync(pd, false);
	if (rc < 0)
		return firewall_refused(pd, "add the fabric's ports to the rule", rc);
	log_info("fabric.firewall: %s", fw->state);
	return 0;
}

/* The members changed: the set follows them soon (one nft for a burst of changes). */
void firewall_members_changed(struct poold *pd)
{
	struct timeval now = {0, 0};

	if (pd->firewall != NULL && pd->firewall->on &&
	    !evtimer_pending(pd->firewall->sync_ev, NULL))
		evtimer_add(pd->firewall->sync_ev, &now);
}

/* The ports this poold's worker listens on, for its registration record. */
void firewall_ports(const struct poold *pd, uint32_t **ret_ports, size_t *ret_n)
{
	*ret_ports = pd->firewall != NULL ? pd->firewall->own : NULL;
	*ret_n = pd->firewall != NULL ? pd->firewall->nown : 0;
}

/* "on: ..." or "off: why", for status. */
const char *firewall_state(const struct poold *pd)
{
	return pd->firewall != NULL ? pd->firewall->state : "off";
}

bool firewall_is_on(const struct poold *pd)
{
	return pd->firewall != NULL && pd->firewall->on;
}

/* Remove the rule at stop. */
void firewall_close(struct poold *pd)
{
	struct firewall *fw = pd->firewall;

	if (fw == NULL)
		return;
	firewall_remove(fw);
	if (fw->sync_ev != NULL)
		event_free(fw->sync_ev);
	free(fw->own);
	free(fw->applied);
	free(fw);
	pd->firewall = NULL;
}

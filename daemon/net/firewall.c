/*
 * daemon/net/firewall.c - only poold's uid reaches the fabric's ports, this
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
 *
 * The rules are nft scripts run in-process by libnftables, each one
 * transaction; a refusal is reported with nft's own message.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include <event2/event.h>
#include <nftables/libnftables.h>

#include "daemon/net/net.h"

/* Ports of one member the rule covers: a worker listens on one per network device. */
#define FIREWALL_MEMBER_PORTS_MAX 64

struct firewall {
	struct nft_ctx *nft;	     /* libnftables, its output and errors kept */
	char nft_error[160];	     /* the last refusal, nft's message */
	bool on;		     /* the table is installed and in force */
	char table[40];		     /* inet TABLE */
	char state[384];	     /* for status: "on: ..." or "off: why" */
	unsigned range_lo, range_hi; /* fabric.ports, 0-0 when unset */
	uint32_t *own;		     /* the ports this poold's worker listens on, sorted */
	size_t nown;
	uint32_t *applied; /* the set beyond the range as last installed, sorted */
	size_t napplied;
	struct event *sync_ev; /* members changed: the set follows, batched */
};

/*
 * Run script as one nft transaction: 0, or -EIO with nft's message (its
 * first line: "Error: Could not process rule: Operation not permitted", say)
 * in fw->nft_error.
 */
static int firewall_nft(struct firewall *fw, const char *script)
{
	const char *msg;
	size_t len;

	fw->nft_error[0] = '\0';
	if (nft_run_cmd_from_buffer(fw->nft, script) == 0)
		return 0;
	msg = nft_ctx_get_error_buffer(fw->nft);
	len = msg != NULL ? strcspn(msg, "\n") : 0;
	snprintf(fw->nft_error, sizeof(fw->nft_error), "%.*s", (int)len,
		 len > 0 ? msg : "nft refused the rules");
	return -EIO;
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
static int firewall_apply(struct firewall *fw, const char *head, const uint32_t *ports, size_t n)
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
	rc = firewall_nft(fw, script);
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
static int firewall_sync(struct poold *pd)
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
	rc = firewall_apply(fw, "", ports, n);
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
	rc = firewall_sync(pd);
	if (rc < 0)
		log_warnx(
		    "fabric.firewall: cannot update the ports of table inet %s to the members': "
		    "%s (tried again at the next change)",
		    pd->firewall->table, rc == -EIO ? pd->firewall->nft_error : err_str(rc));
}

/* Delete the table, if it is installed. */
static void firewall_remove(struct firewall *fw)
{
	char script[128];

	if (!fw->on)
		return;
	snprintf(script, sizeof(script), "delete table inet %s\n", fw->table);
	if (firewall_nft(fw, script) < 0)
		log_warnx("fabric.firewall: cannot remove table inet %s: %s", fw->table,
			  fw->nft_error);
	fw->on = false;
}

/* Not in force: say why, and whether poold may go on without it. */
static int firewall_refused(struct poold *pd, const char *what, int rc)
{
	struct firewall *fw = pd->firewall;
	char why[sizeof(fw->nft_error) + 64];

	if (rc != -EIO)
		snprintf(why, sizeof(why), "%s", err_str(rc));
	else if (strstr(fw->nft_error, "not permitted") != NULL)
		snprintf(why, sizeof(why), "%s (poold needs root or CAP_NET_ADMIN)", fw->nft_error);
	else
		snprintf(why, sizeof(why), "%s", fw->nft_error);
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
	fw->nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (fw->sync_ev == NULL || fw->nft == NULL)
		return -ENOMEM;
	/* Kept, not printed: an error is said with its context, output is not wanted. */
	if (nft_ctx_buffer_output(fw->nft) < 0 || nft_ctx_buffer_error(fw->nft) < 0)
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
	rc = firewall_apply(fw, script, NULL, 0);
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
	rc = firewall_sync(pd);
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
	if (fw->nft != NULL)
		nft_ctx_free(fw->nft);
	free(fw->own);
	free(fw->applied);
	free(fw);
	pd->firewall = NULL;
}

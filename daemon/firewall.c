/*
 * daemon/firewall.c - only poold's uid reaches the fabric's ports from this
 * host (fabric.firewall).
 *
 * UCX's software RMA (TCP, shared-memory emulation) serves whoever holds an
 * endpoint to a worker, at any address of its process; tenants never learn
 * a worker's address from poold, but one could rebuild it from a listening
 * port. With fabric.ports fixed, an nftables rule on this host's output
 * path rejects connections to those ports from any other uid: a tenant on
 * this host cannot reach this poold's worker, nor, as every host has the
 * rule, any other node's. The table is named after the range, replaced at
 * start (a crashed poold's is taken over) and deleted at stop.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/poold.h"

extern char **environ;

/* Run nft with script on its standard input; 0, or -errno / a positive exit status as -EIO. */
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

static void firewall_table(const struct poold *pd, char *buf, size_t len)
{
	unsigned lo = 0, hi = 0;

	conf_port_range(pd->conf->fabric_ports, &lo, &hi);
	snprintf(buf, len, "poold_fabric_%u_%u", lo, hi);
}

/* Install the rule (fabric.firewall); an error means poold must not start. */
int firewall_open(struct poold *pd)
{
	char table[64], script[512];
	unsigned lo = 0, hi = 0;
	int rc;

	if (!pd->conf->fabric_firewall)
		return 0;
	conf_port_range(pd->conf->fabric_ports, &lo, &hi);
	firewall_table(pd, table, sizeof(table));
	snprintf(script, sizeof(script), "delete table inet %s\n", table);
	(void)firewall_nft(script, true); /* a crashed poold's, if any */
	snprintf(script, sizeof(script),
		 "table inet %s {\n"
		 "  chain out {\n"
		 "    type filter hook output priority 0; policy accept;\n"
		 "    tcp dport %u-%u meta skuid != %u reject with tcp reset\n"
		 "  }\n"
		 "}\n",
		 table, lo, hi, (unsigned)geteuid());
	rc = firewall_nft(script, false);
	if (rc < 0) {
		log_warnx("fabric.firewall: cannot install the nftables rule for ports %u-%u (is nft "
			  "installed, and poold allowed to use it?): %s", lo, hi, err_str(rc));
		return rc;
	}
	log_info("fabric.firewall: only uid %u reaches TCP ports %u-%u from this host (table "
		 "inet %s)", (unsigned)geteuid(), lo, hi, table);
	pd->firewall_on = true;
	return 0;
}

/* Remove the rule at stop. */
void firewall_close(struct poold *pd)
{
	char table[64], script[128];

	if (!pd->firewall_on)
		return;
	firewall_table(pd, table, sizeof(table));
	snprintf(script, sizeof(script), "delete table inet %s\n", table);
	if (firewall_nft(script, false) < 0)
		log_warnx("fabric.firewall: cannot remove table inet %s", table);
	pd->firewall_on = false;
}

/*
 * daemon/main.c - poold: start-up, signals, reload and shutdown.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/admin/admin.h"
#include "daemon/control/control.h"
#include "daemon/coord/coord.h"
#include "daemon/ha/ha.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/net/net.h"
#include "daemon/region/region.h"
#include "daemon/resp/resp.h"
#include "daemon/snap/snap.h"
#include "daemon/util/util.h"
#include "daemon/vec/vec.h"
#include "daemon/xfer/xfer.h"
#include "fabric/fabric.h"
#include "vecindex/vecindex.h"

/* Size of the buffer peers read in link probes. */
#define POOLD_PROBE_LEN (1u << 20)

/*
 * A local client's connection closed. Its leases end (after lease.grace)
 * wherever the coordinator is; a copy it was filling goes to the next
 * client waiting for it; its grants and transfers end.
 */
static void poold_session_end(struct poold *pd, uint64_t session)
{
	if (pd->conf->role == ROLE_NODE)
		peer_session_end(pd, session);
	else
		coord_session_end(pd, pd->node_id, session);
	kv_route_session_end(pd, session);
	snap_copy_session_end(pd, session);
	grant_session_end(pd, session);
	xfer_session_end(pd, session);
}

/* Every service's handler table. */
static const struct ctl_handler *const poold_handlers[] = {
    status_handlers,	reload_handlers,      nodes_handlers,	   region_handlers,
    reclaim_handlers,	arena_handlers,	      kv_handlers,	   vec_handlers,
    events_handlers,	snap_copy_handlers,   snap_place_handlers, metrics_handlers,
    xfer_handlers,	kv_handover_handlers, kv_backup_handlers,  kv_demand_handlers,
    respshard_handlers,
};

static const struct control_wiring poold_wiring = {
    .tables = poold_handlers,
    .ntables = ARRAY_SIZE(poold_handlers),
    .session_end = poold_session_end,
    .forward = peer_forward,
    .route = kv_route_request,
    .hold_reply = coord_log_hold_reply,
    .wants_file = region_file_wanted,
    .reply_with_file = region_reply_with_file,
};

static void usage(FILE *f)
{
	fprintf(f, "usage: poold [-dnhV] [-f file] [-o name=value]...\n"
		   "  -f file        configuration file (default: built-in defaults)\n"
		   "  -o name=value  set an option over the file's value (repeatable)\n"
		   "  -d             stay in the foreground and log to stderr\n"
		   "  -n             check the configuration and exit\n"
		   "  -V             print the version and exit\n"
		   "  -h             print this help and exit\n");
}

static void poold_signal(evutil_socket_t sig, short what, void *arg)
{
	struct poold *pd = arg;
	char err[512];

	switch (sig) {
	case SIGHUP:
		poold_reload(pd, err, sizeof(err));
		break;
	case SIGTERM:
	case SIGINT:
		log_info("signal %d: stopping", (int)sig);
		/* (a loop run during start-up, loading state, forgets its break: the flag stays) */
		pd->stop_asked = true;
		event_base_loopbreak(pd->base);
		break;
	}
}

/*
 * Requests served so far and, while it carries transfers for its clients
 * or its RESP endpoint, fabric progress: it changes while poold is busy. (A
 * lender serving other nodes' transfers does not poll for them: its sockets
 * or UCX wake it.)
 */
static uint64_t poold_activity(const struct poold *pd)
{
	return pd->requests + (xfer_busy() || resp_remote_busy() ? carry_activity(pd) : 0);
}

/*
 * The event loop, polling while poold is busy before it sleeps again: a
 * client in a loop sends its next request within microseconds, and a
 * transfer carried for it brings data all along; waking a sleeping process
 * costs more than that on a loaded host (tens of µs on a VM, and many
 * wake-ups per megabyte). Polling runs the loop without blocking, so every
 * other event is served as before; after POOLD_POLL_US without a request
 * or fabric progress, poold sleeps. Idle, it uses no CPU.
 *
 * Each turn of the poll yields the CPU first: where the client runs on
 * the same CPU (a host with more busy processes than CPUs, or both pinned
 * to one), a poll that did not would hold that CPU until its quiet ran
 * out, and each of the client's requests would wait for it (a same-CPU
 * acquire took 110 µs instead of 9 µs). With no one else runnable there,
 * sched_yield() returns at once.
 */
#define POOLD_POLL_US 50 /* quiet after which poold sleeps again */

static void poold_run(struct poold *pd)
{
	uint64_t seen, until;

	for (;;) {
		seen = poold_activity(pd);
		if (pd->stop_asked || event_base_loop(pd->base, EVLOOP_ONCE) != 0 ||
		    event_base_got_break(pd->base))
			return;
		if (poold_activity(pd) == seen)
			continue;
		for (until = units_now_us() + POOLD_POLL_US; units_now_us() < until;) {
			sched_yield();
			seen = poold_activity(pd);
			if (event_base_loop(pd->base, EVLOOP_NONBLOCK) != 0 ||
			    event_base_got_break(pd->base))
				return;
			if (poold_activity(pd) != seen)
				until = units_now_us() + POOLD_POLL_US;
		}
	}
}

static int poold_check(const char *path, char *const *overrides, size_t n)
{
	struct poold_conf *conf;
	struct conf_error err;
	gid_t gid;
	char msg[256];

	if (conf_load(path, overrides, n, &conf, &err) < 0) {
		if (err.line > 0)
			fprintf(stderr, "%s:%d: %s\n", err.file, err.line, err.msg);
		else
			fprintf(stderr, "%s: %s\n", err.file, err.msg);
		return 1;
	}
	if (poold_resolve_admin(conf, &gid, msg, sizeof(msg)) < 0 ||
	    (conf->pmem_path[0] != '\0' && !conf->pmem_init &&
	     lend_pmem_check(conf->pmem_path, (uint64_t)conf->pmem_size, msg, sizeof(msg)) < 0)) {
		fprintf(stderr, "%s: %s\n", path ? path : "built-in defaults", msg);
		conf_free(conf);
		return 1;
	}
	conf_free(conf);
	printf("%s: configuration OK\n", path ? path : "built-in defaults");
	return 0;
}

/*
 * Start the fabric: the buffer peers read to probe links to this node, and
 * the way this poold reaches the others' memory and serves its own
 * (fabric.transfer, carry.c).
 */
/*
 * Raise the soft limit on open files to what the configured bounds may
 * hold at once (clients, RESP and metrics connections, subscribers, and
 * for each member a peer link and checked links both ways), as far as the
 * hard limit allows: a coordinator of a thousand nodes started from a
 * shell, whose soft limit is 1,024, would otherwise refuse links long
 * before peer.max_nodes.
 */
static void poold_raise_nofile(const struct poold_conf *c)
{
	rlim_t need = (rlim_t)(c->max_clients + c->resp_max_clients + c->metrics_max_clients +
			       c->kv_events_max_subscribers + 3 * c->max_nodes + 64);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		log_warnx(
		    "open files: the configured bounds may need %llu, the hard limit is %llu "
		    "(LimitNOFILE= in the unit, ulimit -Hn): past it, new links and clients are "
		    "refused",
		    (unsigned long long)need, (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the limit on open files to %llu",
			 (unsigned long long)rl.rlim_cur);
	else
		log_debug("limit on open files raised to %llu", (unsigned long long)rl.rlim_cur);
}

static int poold_fabric_open(struct poold *pd)
{
	pd->probe_len = POOLD_PROBE_LEN;
	if (posix_memalign(&pd->probe_buf, 4096, pd->probe_len) != 0) {
		log_warnx("cannot start the fabric: %s", err_str(-ENOMEM));
		return -ENOMEM;
	}
	memset(pd->probe_buf, 0xa5, pd->probe_len);
	return carry_open(pd);
}

static void poold_fabric_close(struct poold *pd)
{
	carry_close(pd);
	free(pd->probe_buf);
}

static void poold_free(struct poold *pd)
{
	size_t i;

	/*
	 * What lenders hold outlives this poold: a coordinator that stops
	 * scrubs nothing (its lenders keep the cache for the next one, and
	 * persistent values stay in its own pmem tier).
	 */
	pd->stopping = true;
	metrics_close(pd);
	snap_place_close(pd); /* before the links its helpers answer on */
	scrub_close(pd);      /* (a scrub's caller is in the address space) */
	kv_backup_close(pd);  /* (its waiting requests answered: some are kv-route.c's parts) */
	kv_route_close(pd);
	kv_handover_close(pd); /* (before the coordinator's index goes with the KV space) */
	copy_cancel(pd);       /* (the copies' callers are the index's and reclaim's) */
	coord_close(pd);
	kv_events_close(pd); /* (a node's: the coordinator's went with its index) */
	resp_relay_close(pd);
	peer_close(pd);
	ha_close(pd);
	member_clear(pd);
	hold_clear(pd);
	probe_results_free(pd->probes, pd->nprobes);
	vecindex_ctx_free(pd->vec_ctx);
	events_free(pd);
	snap_copy_close(pd);
	grant_clear(pd);
	xfer_close(pd);
	carve_close(pd);
	kv_owner_close(pd);
	kvstore_close(pd);
	lend_close(pd);
	poold_fabric_close(pd);
	copy_close(); /* (nothing of theirs can complete now) */
	firewall_close(pd);
	peer_tls_close(pd);
	sdnotify_close(pd);
	looplag_close(pd);
	control_close(pd->control);
	free(pd->latency);
	for (i = 0; i < ARRAY_SIZE(pd->sig_ev); i++)
		if (pd->sig_ev[i] != NULL)
			event_free(pd->sig_ev[i]);
	if (pd->conf != NULL)
		pidfile_close(pd->conf->pidfile, pd->pid_fd);
	if (pd->base != NULL)
		event_base_free(pd->base);
	conf_free(pd->conf);
	free(pd->overrides);
}

/*
 * The command line into pd: -1 to go on (*foreground, *check set), or
 * the exit status of a command line that ends here (-V, -h, a bad one).
 */
static int poold_args(int argc, char **argv, struct poold *pd, bool *foreground, bool *check)
{
	int ch;

	while ((ch = getopt(argc, argv, "df:hno:V")) != -1) {
		switch (ch) {
		case 'd':
			*foreground = true;
			break;
		case 'f':
			pd->conf_path = optarg;
			break;
		case 'n':
			*check = true;
			break;
		case 'o': {
			char **o = realloc(pd->overrides, (pd->noverrides + 1) * sizeof(*o));

			if (o == NULL)
				fatalx("out of memory");
			pd->overrides = o;
			o[pd->noverrides++] = optarg;
			break;
		}
		case 'V':
			printf("poold %s (protocol %d)\n", PACKAGE_VERSION, WIRE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "poold: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/*
 * The configuration loaded and what needs no fabric set up: the runtime
 * directory, the pid file, the event loop, this poold's identity and the
 * control socket. 0, or -1 (said in the log).
 */
static int poold_setup(struct poold *pd)
{
	struct conf_error err;
	char msg[256];

	log_init("poold", true, LOG_LVL_INFO);
	if (conf_load(pd->conf_path, pd->overrides, pd->noverrides, &pd->conf, &err) < 0) {
		if (err.line > 0)
			log_warnx("%s:%d: %s", err.file, err.line, err.msg);
		else
			log_warnx("%s: %s", err.file, err.msg);
		return -1;
	}
	if (poold_resolve_admin(pd->conf, &pd->admin_gid, msg, sizeof(msg)) < 0) {
		log_warnx("%s", msg);
		return -1;
	}
	log_set_level((int)pd->conf->log_level);
	poold_raise_nofile(pd->conf);
	if (mkdir(pd->conf->runtime_dir, 0755) < 0 && errno != EEXIST) {
		log_warn("runtime_dir %s", pd->conf->runtime_dir);
		return -1;
	}
	if (pidfile_open(pd->conf->pidfile, &pd->pid_fd) < 0)
		return -1;
	pd->base = event_base_new();
	if (pd->base == NULL) {
		log_warnx("cannot create the event loop");
		return -1;
	}
	/* A coordinator numbers itself; a node learns its id when it registers. */
	pd->node_id = (uint32_t)pd->conf->node_id;
	if (pd->node_id == 0 && pd->conf->role == ROLE_COORDINATOR)
		pd->node_id = 1;
	pd->start_ms = units_now_ms();
	pd->latency = calloc(WIRE_TYPE_MAX, sizeof(*pd->latency)); /* without: not measured */
	if (getrandom(&pd->incarnation, sizeof(pd->incarnation), 0) != sizeof(pd->incarnation))
		pd->incarnation = pd->start_ms ^ ((uint64_t)getpid() << 32);
	TAILQ_INIT(&pd->members);
	TAILQ_INIT(&pd->holds);
	control_wire(&poold_wiring);
	nodecall_open(pd, kv_session_end);
	if (control_open(pd, &pd->control) < 0) {
		log_warnx("cannot open the control socket %s", pd->conf->socket);
		return -1;
	}
	return 0;
}

/* The signals handled by the loop, then (unless foreground) the process detached: 0 or -1. */
static int poold_detach(struct poold *pd, bool foreground)
{
	static const int signals[] = {SIGTERM, SIGINT, SIGHUP};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(signals); i++) {
		pd->sig_ev[i] = evsignal_new(pd->base, signals[i], poold_signal, pd);
		if (pd->sig_ev[i] == NULL || evsignal_add(pd->sig_ev[i], NULL) < 0)
			fatalx("cannot install the handler of signal %d", signals[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	/* Before detaching: a certificate that cannot be read is said on the terminal. */
	if (peer_tls_open(pd) < 0)
		return -1;
	if (!foreground) {
		if (daemon(0, 0) < 0) {
			log_warn("daemon");
			return -1;
		}
		log_init("poold", false, (int)pd->conf->log_level);
		/* The lock came along with the fd; only the pid changed. */
		if (pidfile_write(pd->conf->pidfile, pd->pid_fd) < 0)
			return -1;
		event_reinit(pd->base);
	}
	return sdnotify_open(pd);
}

/*
 * The fabric, then this poold's role: -1 when it cannot start, 1 when a
 * standby (coord.etcd) was stopped before it led, 0 when it serves.
 */
static int poold_start(struct poold *pd)
{
	int rc;

	/* UCX after the fork: its threads and fds belong to the daemon process. */
	/* The rule first: the fabric's listener is never open to other uids. */
	if (firewall_open(pd) < 0 || poold_fabric_open(pd) < 0 || firewall_cover_fabric(pd) < 0 ||
	    ha_open(pd, peer_follow) < 0)
		return -1;
	/* A candidate (coord.etcd) is a standby until it leads; it lends only then. */
	if (ha_standby(pd))
		sdnotify_serving(pd, "standby for the coordinator (etcd)");
	if (ha_standby(pd) && (rc = ha_campaign(pd)) != 0)
		return rc < 0 ? -1 : 1;
	if (lend_open(pd) < 0 || kvstore_open(pd) < 0 || kv_owner_open(pd) < 0 ||
	    kv_handover_open(pd) < 0 || kv_backup_open(pd) < 0 || hold_open(pd) < 0)
		return -1;
	if (pd->conf->role == ROLE_COORDINATOR
		? coord_open(pd) < 0
		: peer_open(pd) < 0 ||
		      (resp_sharded(pd) ? resp_open(pd) : resp_relay_open(pd)) < 0 ||
		      kv_events_open(pd) < 0) {
		log_warnx("cannot start the %s role",
			  pd->conf->role == ROLE_COORDINATOR ? "coordinator" : "node");
		return -1;
	}
	/* (the lag of the loop from now on: start-up's long steps are not stalls) */
	return metrics_open(pd) < 0 || looplag_open(pd) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct poold pd = {.pid_fd = -1};
	bool foreground = false, check = false;
	char msg[256];
	int rc;

	rc = poold_args(argc, argv, &pd, &foreground, &check);
	if (rc >= 0) {
		free(pd.overrides);
		return rc;
	}
	if (check) {
		rc = poold_check(pd.conf_path, pd.overrides, pd.noverrides);
		free(pd.overrides);
		return rc;
	}
	rc = 1;
	if (poold_setup(&pd) < 0 || poold_detach(&pd, foreground) < 0)
		goto out;
	rc = poold_start(&pd);
	if (rc != 0) {
		rc = rc < 0; /* (a standby stopped before it led ends well) */
		goto out;
	}
	conf_format(pd.conf, conf_find("role"), msg, sizeof(msg));
	log_info("poold %s started: %s %s, socket %s, config %s", PACKAGE_VERSION, msg,
		 pd.conf->node_name, pd.conf->socket,
		 pd.conf_path ? pd.conf_path : "built-in defaults");
	if (pd.conf->role == ROLE_COORDINATOR)
		sdnotify_serving(&pd, pd.ha != NULL ? "coordinator (leader, etcd)" : "coordinator");
	else /* ready once registered (peer.c) */
		sdnotify_status(&pd, false, "node: registering with the coordinator");
	poold_run(&pd);
	rc = 0;
	log_info("poold stopped");
out:
	poold_free(&pd);
	return rc;
}

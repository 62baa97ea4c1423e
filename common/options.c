/*
 * common/options.c - the table of poold.conf options.
 *
 * This one table drives parsing, validation, defaults, `poolctl config show`
 * and the option list in poold.conf(5) (checked by tests/integration/man.sh).
 */
#include "config.h"

#include <stddef.h>

#include "common/common.h"

#define OFF(f) offsetof(struct poold_conf, f)
#define GiB (1024LL * 1024 * 1024)

const struct conf_option conf_options[] = {
	{"runtime_dir", CONF_STRING, OFF(runtime_dir), 0, 200, "/run/poold", NULL,
	 CONF_F_RESTART, "directory for the control socket and the pid file"},
	{"control.socket", CONF_STRING, OFF(socket), 0, 107, "", NULL, CONF_F_RESTART,
	 "control socket path; empty means runtime_dir/poold.sock"},
	{"control.mode", CONF_MODE, OFF(control_mode), 0, 0777, "0660", NULL, CONF_F_RESTART,
	 "permission bits of the control socket"},
	{"control.group", CONF_STRING, OFF(control_group), 0, 64, "", NULL, CONF_F_RESTART,
	 "group owning the control socket; empty keeps the daemon's group"},
	{"control.admin_group", CONF_STRING, OFF(admin_group), 0, 64, "", NULL, 0,
	 "group whose members may send admin requests (root always may)"},
	{"control.max_clients", CONF_INT, OFF(max_clients), 1, 65536, "1024", NULL, 0,
	 "most control connections at once"},
	{"control.max_clients_per_uid", CONF_INT, OFF(max_clients_per_uid), 1, 65536, "256", NULL,
	 0, "most control connections at once from one uid"},
	{"control.max_frame", CONF_SIZE, OFF(max_frame), 4096, 64LL << 20, "1M", NULL, 0,
	 "largest request frame accepted from a client"},
	{"pidfile", CONF_STRING, OFF(pidfile), 0, 200, "", NULL, CONF_F_RESTART,
	 "pid file path; empty means runtime_dir/poold.pid"},
	{"log.level", CONF_ENUM, OFF(log_level), 0, 0, "info", "error|warn|info|debug", 0,
	 "least severe message logged"},
	{"node.id", CONF_INT, OFF(node_id), 0, 65535, "0", NULL, CONF_F_RESTART,
	 "this node's id; 0 lets the coordinator assign one"},
	{"node.name", CONF_STRING, OFF(node_name), 0, 63, "", NULL, CONF_F_RESTART,
	 "name identifying this host in the cluster; empty means the hostname"},
	{"role", CONF_ENUM, OFF(role), 0, 0, "coordinator", "coordinator|node", CONF_F_RESTART,
	 "coordinator owns the global map; node joins the coordinator"},
	{"coordinator", CONF_STRING, OFF(coordinator), 0, 255, "", NULL, CONF_F_RESTART,
	 "host:port of the coordinator's peer listener (role = node)"},
	{"peer.listen", CONF_STRING, OFF(peer_listen), 0, 255, "", NULL, CONF_F_RESTART,
	 "address:port where the coordinator accepts nodes; empty: single node, no listener"},
	{"peer.secret", CONF_STRING, OFF(peer_secret), 0, 1024, "", NULL, CONF_F_SECRET,
	 "shared secret nodes present to the coordinator"},
	{"peer.secret_file", CONF_STRING, OFF(peer_secret_file), 0, 200, "", NULL, 0,
	 "file holding the shared secret (instead of peer.secret)"},
	{"peer.max_nodes", CONF_INT, OFF(max_nodes), 1, 4096, "256", NULL, 0,
	 "most nodes the coordinator accepts"},
	{"heartbeat.interval", CONF_DURATION, OFF(heartbeat_ms), 100, 60000, "2s", NULL,
	 CONF_F_RESTART,
	 "how often nodes report to the coordinator"},
	{"heartbeat.misses", CONF_INT, OFF(heartbeat_misses), 2, 100, "3", NULL, CONF_F_RESTART,
	 "missed heartbeats after which a node is dead (suspect after one)"},
	{"fabric.transports", CONF_STRING, OFF(fabric_transports), 0, 255, "", NULL,
	 CONF_F_RESTART, "UCX transports to use (UCX_TLS syntax); empty lets UCX choose"},
	{"fabric.devices", CONF_STRING, OFF(fabric_devices), 0, 255, "", NULL, CONF_F_RESTART,
	 "network devices UCX may use (UCX_NET_DEVICES syntax); empty means all"},
	{"fabric.probe_interval", CONF_DURATION, OFF(probe_interval_ms), 0, 24 * 3600000LL, "0",
	 NULL, CONF_F_RESTART, "how often to measure every link; 0 means only on request"},
	{"lend.size", CONF_SIZE, OFF(lend_size), 0, 1024 * GiB, "256M", NULL, CONF_F_RESTART,
	 "DRAM this node lends to the pool, split over its NUMA nodes"},
	{"lend.numa", CONF_STRING, OFF(lend_numa), 0, 255, "", NULL, CONF_F_RESTART,
	 "per-NUMA-node shares of lend.size, e.g. 0:1G,1:512M; the rest is split evenly"},
	{"lend.max", CONF_SIZE, OFF(lend_max), 0, 1024 * GiB, "0", NULL, CONF_F_RESTART,
	 "most DRAM this node may lend after poolctl lend; 0 means lend.size"},
	{"reclaim.grace", CONF_DURATION, OFF(reclaim_grace_ms), 0, 3600000, "2s", NULL, 0,
	 "how long moved or evicted extents stay readable before their memory is reclaimed"},
	{"ledger.interval", CONF_DURATION, OFF(ledger_interval_ms), 0, 24 * 3600000LL, "30s", NULL,
	 CONF_F_RESTART, "how often the coordinator reconciles its map with each lender's record; "
	 "0: only when a lender registers"},
	{"lend.hugepages", CONF_BOOL, OFF(lend_hugepages), 0, 1, "no", NULL, CONF_F_RESTART,
	 "back lent DRAM with huge pages (they must be reserved in the kernel)"},
	{"lease.grace", CONF_DURATION, OFF(lease_grace_ms), 0, 3600000, "5s", NULL, 0,
	 "how long the leases of a client that went away outlive it"},
	{"quota.bytes", CONF_SIZE, OFF(quota_bytes), 0, 1LL << 50, "0", NULL, 0,
	 "bytes of regions one uid may own; 0 means no limit"},
	{"quota.regions", CONF_INT, OFF(quota_regions), 0, 1000000, "0", NULL, 0,
	 "regions one uid may own; 0 means no limit"},
	{"lend.watermark", CONF_INT, OFF(watermark), 1, 100, "90", NULL, 0,
	 "percent of a lender's memory in use above which placement prefers other lenders"},
	{"regions.max", CONF_INT, OFF(max_regions), 1, 1000000, "65536", NULL, 0,
	 "most regions in the pool"},
	{"metrics.listen", CONF_STRING, OFF(metrics_listen), 0, 255, "", NULL, CONF_F_RESTART,
	 "address:port of the Prometheus endpoint (GET /metrics); empty: off"},
	{"resp.listen", CONF_STRING, OFF(resp_listen), 0, 255, "", NULL, CONF_F_RESTART,
	 "address:port of the Redis-protocol endpoint (coordinator only); empty: off"},
	{"resp.password", CONF_STRING, OFF(resp_password), 0, 1024, "", NULL, CONF_F_SECRET,
	 "password RESP clients must give with AUTH; empty: none"},
	{"resp.capacity", CONF_SIZE, OFF(resp_capacity), 1 << 20, 1024 * GiB, "256M", NULL, 0,
	 "capacity of each RESP database (namespace redisN, in this node's lend pool)"},
	{"resp.max_clients", CONF_INT, OFF(resp_max_clients), 1, 65536, "1024", NULL, 0,
	 "most RESP connections at once"},
	{"pmem.path", CONF_STRING, OFF(pmem_path), 0, 200, "", NULL, CONF_F_RESTART,
	 "file or DAX device of the persistent tier; empty: no persistent tier"},
	{"pmem.size", CONF_SIZE, OFF(pmem_size), 0, 16384 * GiB, "0", NULL, CONF_F_RESTART,
	 "size of the persistent tier; 0 uses the size of an existing file"},
};

const size_t conf_noptions = sizeof(conf_options) / sizeof(conf_options[0]);

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
	{"role", CONF_ENUM, OFF(role), 0, 0, "coordinator", "coordinator", CONF_F_RESTART,
	 "coordinator: this poold owns the global map (single-node install)"},
	{"lend.size", CONF_SIZE, OFF(lend_size), 0, 1024 * GiB, "256M", NULL, 0,
	 "DRAM this node lends to the pool"},
};

const size_t conf_noptions = sizeof(conf_options) / sizeof(conf_options[0]);

/*
 * daemon/link/carry-rma.c - fabric.transfer = rma: other poolds' memory reached
 * one-sidedly over UCX with their arenas' keys, for fabrics that enforce a
 * key in hardware (RDMA, UnifiedBus). Over UCX's TCP and shared-memory
 * transports nothing bounds a key: whoever reaches this poold's worker
 * reads and writes all of its memory, so poold warns when it starts this
 * way on them (doc/decisions.md).
 *
 * One endpoint per member, shared by everything this poold sends it: UCX
 * 1.13 over TCP pairs the endpoints two workers make to each other, so
 * closing one of several can silence the other.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/link/link.h"
#include "fabric/fabric.h"
#include "proto/pool_contract.h"

/* Forget the member's unpacked arena keys (its record changed, or its endpoint went). */
static void rma_drop_arena_rkeys(struct member *m)
{
	size_t i;

	for (i = 0; i < m->n_arena_rkeys; i++)
		if (m->arena_rkeys[i] != NULL)
			fab_rkey_destroy(m->arena_rkeys[i]);
	free(m->arena_rkeys);
	m->arena_rkeys = NULL;
	m->n_arena_rkeys = 0;
}

/* Close the endpoint to a member; the next transfer makes a new one. */
static void rma_drop(struct member *m)
{
	if (m->ep != NULL)
		fab_ep_abort(m->ep); /* never wait on a peer that may be gone */
	rma_drop_arena_rkeys(m);
	if (m->probe_rkey != NULL)
		fab_rkey_destroy(m->probe_rkey);
	m->probe_rkey = NULL;
	m->ep = NULL;
}

static void rma_ep_failed(struct fab_ep *ep, int err, void *arg)
{
	struct member *m = arg;

	(void)ep;
	m->way_failed_ms = units_now_ms();
	log_warnx("fabric endpoint to node %u (%s) failed: %s", m->info->id, m->info->name,
		  err_str(err));
}

static bool rma_failed(const struct member *m)
{
	return m->ep != NULL && fab_ep_error(m->ep) != 0;
}

/*
 * The endpoint to a member and the key of its probe buffer, made on first
 * use and again after the member restarted or the endpoint failed.
 */
static int rma_ep(struct poold *pd, struct member *m)
{
	int rc;

	if (m->ep != NULL && (rma_failed(m) || m->way_incarnation != m->info->incarnation))
		rma_drop(m);
	if (m->ep != NULL)
		return 0;
	rc = fab_ep_create(pd->fab, m->info->worker_addr.data, m->info->worker_addr.len,
			   rma_ep_failed, m, &m->ep);
	if (rc < 0)
		return rc;
	m->way_incarnation = m->info->incarnation;
	m->way_failed_ms = 0;
	m->way_gen = carry_new_gen();
	rc = fab_rkey_unpack(m->ep, m->info->probe_rkey.data, m->info->probe_rkey.len,
			     &m->probe_rkey);
	if (rc < 0)
		rma_drop(m);
	return rc;
}

/* The key and remote address of p's bytes at m, on m's endpoint. */
static int rma_where(struct member *m, const struct carry_place *p, struct fab_rkey **ret_rkey,
		     uint64_t *ret_raddr)
{
	uint64_t off = p->ext + p->off;
	size_t k;
	int rc;

	if (p->arena == CARRY_PROBE_ARENA) {
		if (off > m->info->probe_len || p->len > m->info->probe_len - off)
			return -ERANGE;
		*ret_rkey = m->probe_rkey;
		*ret_raddr = m->info->probe_addr + off;
		return 0;
	}
	for (k = 0; k < m->info->n_arenas && m->info->arenas[k].id != p->arena; k++)
		;
	if (k == m->info->n_arenas)
		return -ENOENT;
	if (off > m->info->arenas[k].size || p->len > m->info->arenas[k].size - off)
		return -ERANGE;
	if (m->arena_rkeys == NULL) {
		m->arena_rkeys = calloc(m->info->n_arenas, sizeof(*m->arena_rkeys));
		if (m->arena_rkeys == NULL)
			return -ENOMEM;
		m->n_arena_rkeys = m->info->n_arenas;
	}
	if (k >= m->n_arena_rkeys)
		return -ENOENT;
	if (m->arena_rkeys[k] == NULL) {
		rc = fab_rkey_unpack(m->ep, m->info->arenas[k].rkey.data,
				     m->info->arenas[k].rkey.len, &m->arena_rkeys[k]);
		if (rc < 0)
			return rc;
	}
	*ret_rkey = m->arena_rkeys[k];
	*ret_raddr = m->info->arenas[k].addr + off;
	return 0;
}

static int rma_start(struct poold *pd, struct member *m, enum carry_op op,
		     const struct carry_place *p, void *buf, uint64_t a, uint64_t b,
		     uint64_t *ret_old, fab_done_cb cb, void *arg)
{
	struct fab_rkey *rkey = NULL;
	uint64_t raddr = 0;
	int rc = rma_ep(pd, m);

	if (rc == 0)
		rc = rma_where(m, p, &rkey, &raddr);
	if (rc < 0)
		return rc;
	switch (op) {
	case CARRY_READ:
		return fab_get_nb(m->ep, buf, p->len, raddr, rkey, cb, arg);
	case CARRY_WRITE:
		return fab_put_nb(m->ep, buf, p->len, raddr, rkey, cb, arg);
	case CARRY_FADD:
		return fab_atomic_fadd64_nb(m->ep, raddr, rkey, a, ret_old, cb, arg);
	case CARRY_CSWAP:
		return fab_atomic_cswap64_nb(m->ep, raddr, rkey, a, b, ret_old, cb, arg);
	}
	return -EINVAL;
}

static int rma_flush(struct poold *pd, struct member *m, fab_done_cb cb, void *arg)
{
	(void)pd;
	return fab_flush_nb(m->ep, cb, arg);
}

static int rma_transport(struct member *m, char *buf, size_t len)
{
	return m->ep != NULL ? fab_ep_transports(m->ep, buf, len) : -ENOTCONN;
}

static uint64_t rma_activity(const struct poold *pd)
{
	return fab_ctx_busy(pd->fab);
}

/*
 * Start UCX: one context and worker driven by the event loop, with the
 * probe buffer registered for peers' link probes.
 */
static int rma_open(struct poold *pd)
{
	struct poold_conf *conf = pd->conf;
	struct fab_config cfg = {0};
	char tl[128];
	int rc;

	cfg.transports = conf->fabric_transports[0] ? conf->fabric_transports : NULL;
	cfg.devices = conf->fabric_devices[0] ? conf->fabric_devices : NULL;
	cfg.tcp_ports = conf->fabric_ports[0] ? conf->fabric_ports : NULL;
	rc = fab_ctx_create(&cfg, &pd->fab);
	if (rc < 0) {
		log_warnx(
		    "cannot start the fabric (fabric.transports '%s', fabric.devices '%s'): %s",
		    conf->fabric_transports, conf->fabric_devices, err_str(rc));
		return rc;
	}
	rc = fab_ctx_attach(pd->fab, pd->base);
	if (rc == 0)
		rc = fab_ctx_address(pd->fab, &pd->worker_addr, &pd->worker_addr_len);
	if (rc == 0)
		rc = fab_mem_register(pd->fab, pd->probe_buf, pd->probe_len, &pd->probe_mem);
	if (rc == 0)
		rc = fab_mem_rkey_pack(pd->probe_mem, &pd->probe_rkey, &pd->probe_rkey_len);
	if (rc < 0) {
		log_warnx("cannot start the fabric: %s", err_str(rc));
		return rc;
	}
	if (fab_ctx_transports(pd->fab, tl, sizeof(tl)) == 0) {
		log_info("fabric up: one-sided (fabric.transfer = rma), transports %s", tl);
		if (strstr(tl, "tcp") != NULL || strstr(tl, "posix") != NULL ||
		    strstr(tl, "sysv") != NULL || strstr(tl, "cma") != NULL)
			log_warnx("fabric.transfer = rma on software transports (%s): whoever "
				  "reaches this poold's fabric ports can read and write all of "
				  "its memory; use fabric.transfer = checked unless the fabric "
				  "enforces keys in hardware",
				  tl);
	}
	return 0;
}

static void rma_close(struct poold *pd)
{
	free(pd->probe_rkey);
	pd->probe_rkey = NULL;
	if (pd->probe_mem != NULL)
		fab_mem_deregister(pd->probe_mem);
	pd->probe_mem = NULL;
	free(pd->worker_addr);
	pd->worker_addr = NULL;
	if (pd->fab != NULL)
		fab_ctx_destroy(pd->fab);
	pd->fab = NULL;
}

const struct carry_ops carry_rma_ops = {
    .name = "rma",
    .open = rma_open,
    .close = rma_close,
    .start = rma_start,
    .flush = rma_flush,
    .failed = rma_failed,
    .drop = rma_drop,
    .transport = rma_transport,
    .activity = rma_activity,
};

/* ctx.c - a fabric context: one UCP context and one worker with a wake-up fd. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/config/global_opts.h>

#include "fabric/ucx_int.h"

/*
 * Default TCP segment size. UCX's 8 KiB TX / 64 KiB RX segments make every
 * large get a long train of small round trips over loopback; bigger
 * segments cut the per-fragment overhead (measured in tests/bench/fabric.sh).
 */
#define FAB_TCP_SEG_DEFAULT (512u * 1024u)

static int fab_ctx_set(ucp_config_t *config, const char *name, const char *value)
{
	return fab_status_errno(ucp_config_modify(config, name, value));
}

static int fab_ctx_set_extra(ucp_config_t *config, const char *kv)
{
	char name[128];
	const char *eq = strchr(kv, '=');
	size_t n;

	if (eq == NULL || eq == kv)
		return -EINVAL;
	n = (size_t)(eq - kv);
	if (n >= sizeof(name))
		return -EINVAL;
	memcpy(name, kv, n);
	name[n] = '\0';
	return fab_ctx_set(config, name, eq + 1);
}

/* The fabric layer must not print: quiet UCX unless the user asked for its log. */
static void fab_ctx_quiet(void)
{
	if (getenv("UCX_LOG_LEVEL") == NULL)
		(void)ucs_global_opts_set_value("LOG_LEVEL", "fatal");
}

/* Whether the configured transport list names tl (or leaves UCX the choice). */
static int fab_ctx_uses(const struct fab_config *cfg, const char *tl)
{
	const char *p = cfg->transports;
	size_t n = strlen(tl);

	if (p == NULL || strstr(p, "all") != NULL)
		return 1;
	while ((p = strstr(p, tl)) != NULL) {
		if ((p == cfg->transports || p[-1] == ',' || p[-1] == '^') &&
		    (p[n] == '\0' || p[n] == ','))
			return 1;
		p += n;
	}
	return 0;
}

static int fab_ctx_configure(const struct fab_config *cfg, ucp_config_t *config)
{
	char seg[32];
	size_t segsz = cfg->tcp_seg_size ? cfg->tcp_seg_size : FAB_TCP_SEG_DEFAULT;
	int rc;

	if (cfg->transports != NULL && (rc = fab_ctx_set(config, "TLS", cfg->transports)) < 0)
		return rc;
	if (cfg->devices != NULL && (rc = fab_ctx_set(config, "NET_DEVICES", cfg->devices)) < 0)
		return rc;
	/*
	 * Transport-level keys go without their transport prefix: UCX matches
	 * them against each transport's own table (a "TCP_" prefixed key is
	 * reported as unused by ucp_worker_create).
	 */
	if (fab_ctx_uses(cfg, "tcp")) {
		if (cfg->tcp_ports != NULL &&
		    (rc = fab_ctx_set(config, "PORT_RANGE", cfg->tcp_ports)) < 0)
			return rc;
		/*
		 * Connect without blocking: UCX's default connect() blocks the
		 * caller until the peer answers, so a peer whose host drops SYNs
		 * (gone, or cut off by a firewall) would stall poold's event loop
		 * for the kernel's whole SYN retry time.
		 */
		if ((rc = fab_ctx_set(config, "CONN_NB", "y")) < 0)
			return rc;
		snprintf(seg, sizeof(seg), "%zu", segsz);
		if ((rc = fab_ctx_set(config, "TX_SEG_SIZE", seg)) < 0)
			return rc;
		if ((rc = fab_ctx_set(config, "RX_SEG_SIZE", seg)) < 0)
			return rc;
	}

	for (const char *const *kv = cfg->ucx_opts; kv != NULL && *kv != NULL; kv++)
		if ((rc = fab_ctx_set_extra(config, *kv)) < 0)
			return rc;
	return 0;
}

/* Create a context and its worker (features RMA, AMO64, WAKEUP). */
int fab_ctx_create(const struct fab_config *cfg, struct fab_ctx **ret_ctx)
{
	static const struct fab_config defaults;
	ucp_params_t params = {0};
	ucp_worker_params_t wparams = {0};
	ucp_config_t *config;
	struct fab_ctx *ctx;
	int rc;

	if (cfg == NULL)
		cfg = &defaults;
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return -ENOMEM;
	ctx->efd = -1;
	ctx->timeout_ms = cfg->op_timeout_ms ? cfg->op_timeout_ms : FAB_DEFAULT_TIMEOUT_MS;
	ctx->rma_chunk = cfg->rma_chunk;
	ctx->mt = cfg->thread_multi != 0;
	if (ctx->mt && pthread_mutex_init(&ctx->lock, NULL) != 0) {
		free(ctx);
		return -ENOMEM;
	}
	snprintf(ctx->tls, sizeof(ctx->tls), "%s", cfg->transports ? cfg->transports : "default");
	fab_ctx_quiet();

	rc = fab_status_errno(ucp_config_read(NULL, NULL, &config));
	if (rc < 0)
		goto out_free;
	rc = fab_ctx_configure(cfg, config);
	if (rc < 0)
		goto out_config;

	params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
	params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;
	params.mt_workers_shared = cfg->thread_multi ? 1 : 0;
	rc = fab_status_errno(ucp_init(&params, config, &ctx->context));
	if (rc < 0)
		goto out_config;

	wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wparams.thread_mode = cfg->thread_multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
	rc = fab_status_errno(ucp_worker_create(ctx->context, &wparams, &ctx->worker));
	if (rc < 0)
		goto out_cleanup;
	rc = fab_status_errno(ucp_worker_get_efd(ctx->worker, &ctx->efd));
	if (rc < 0)
		goto out_worker;

	ucp_config_release(config);
	*ret_ctx = ctx;
	return 0;

out_worker:
	ucp_worker_destroy(ctx->worker);
out_cleanup:
	ucp_cleanup(ctx->context);
out_config:
	ucp_config_release(config);
out_free:
	if (ctx->mt)
		pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return rc;
}

/* Destroy a context; endpoints, memory and rkeys made from it must be gone. */
void fab_ctx_destroy(struct fab_ctx *ctx)
{
	if (ctx == NULL)
		return;
	fab_ctx_detach(ctx);
	fab_op_run_deferred(ctx);
	fab_ep_release_closing(ctx);
	ucp_worker_destroy(ctx->worker);
	fab_ep_reap_closing(ctx);
	ucp_cleanup(ctx->context);
	if (ctx->mt)
		pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/* Copy of the worker address to give to peers; free() it. */
int fab_ctx_address(struct fab_ctx *ctx, void **ret_addr, size_t *ret_len)
{
	ucp_address_t *addr;
	size_t len;
	void *copy;
	int rc;

	rc = fab_status_errno(ucp_worker_get_address(ctx->worker, &addr, &len));
	if (rc < 0)
		return rc;
	copy = malloc(len);
	if (copy == NULL) {
		rc = -ENOMEM;
		goto out_release;
	}
	memcpy(copy, addr, len);
	*ret_addr = copy;
	*ret_len = len;
out_release:
	ucp_worker_release_address(ctx->worker, addr);
	return rc;
}

/* The worker's wake-up fd: readable when fab_ctx_progress() has work. */
int fab_ctx_event_fd(struct fab_ctx *ctx, int *ret_fd)
{
	if (ctx->efd < 0)
		return -EBADF;
	*ret_fd = ctx->efd;
	return 0;
}

/* Arm the wake-up fd: 0 = armed (safe to sleep on it), -EAGAIN = progress again. */
int fab_ctx_arm(struct fab_ctx *ctx)
{
	if (ctx->deferred != NULL)
		return -EAGAIN;
	return fab_status_errno(ucp_worker_arm(ctx->worker));
}

/* Progress the worker once; returns the number of events handled. */
unsigned fab_ctx_progress(struct fab_ctx *ctx)
{
	unsigned n = ucp_worker_progress(ctx->worker);

	if (ctx->deferred != NULL)
		n += fab_op_run_deferred(ctx);
	if (n != 0)
		ctx->busy++;
	return n;
}

/* How many calls of progress moved something so far: it changes while traffic flows. */
uint64_t fab_ctx_busy(const struct fab_ctx *ctx)
{
	return ctx->busy;
}

/*
 * Whether every remote write into this context's registered memory is
 * applied by its own worker's progress: true only for a transport list made
 * of UCX's software transports (tcp, self, and the shared-memory FIFOs posix
 * and sysv, which carry messages, not RMA). cma, knem and xpmem let another
 * process write our pages, and RDMA a device, at any moment; UCX's default
 * ("all", or a list with "sm", "shm" or an exclusion) may pick them. Only
 * when this holds may a caller swap the pages behind a registered range
 * without losing a write that lands meanwhile.
 */
bool fab_ctx_writes_in_progress(const struct fab_ctx *ctx)
{
	static const char *const software[] = {"tcp", "self", "posix", "sysv", "mm"};
	const size_t nsoftware = sizeof(software) / sizeof(software[0]);
	const char *p = ctx->tls;

	if (strcmp(p, "default") == 0 || *p == '\0' || *p == '^')
		return false;
	while (*p != '\0') {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < nsoftware; i++)
			if (strlen(software[i]) == n && strncmp(p, software[i], n) == 0)
				break;
		if (i == nsoftware)
			return false;
		p += n;
		p += *p == ',';
	}
	return true;
}

/* Human readable list of the transports the context was configured with. */
int fab_ctx_transports(struct fab_ctx *ctx, char *buf, size_t len)
{
	int n;

	if (buf == NULL || len == 0)
		return -EINVAL;
	n = snprintf(buf, len, "%s", ctx->tls);
	return (size_t)n < len ? 0 : -ENOSPC;
}

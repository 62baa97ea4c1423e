/* ep.c - endpoints to peer workers, with peer failure detection. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/ucx_int.h"

/* Mark ep failed with err (first error wins) and tell its owner once. */
void fab_ep_fail(struct fab_ep *ep, int err)
{
	if (ep->err != 0)
		return;
	ep->err = err < 0 ? err : -EIO;
	if (ep->err_cb != NULL && !ep->closing)
		ep->err_cb(ep, ep->err, ep->err_arg);
}

static void fab_ep_on_error(void *arg, ucp_ep_h uep, ucs_status_t status)
{
	fab_ep_fail(arg, fab_status_errno(status));
}

/* Connect to a peer worker address; cb (may be NULL) is told once if the endpoint fails. */
int fab_ep_create(struct fab_ctx *ctx, const void *addr, size_t len, fab_ep_err_cb cb, void *arg,
		  struct fab_ep **ret_ep)
{
	ucp_ep_params_t params = {0};
	struct fab_ep *ep;
	int rc;

	if (addr == NULL || len == 0)
		return -EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return -ENOMEM;
	ep->ctx = ctx;
	ep->err_cb = cb;
	ep->err_arg = arg;
	params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
			    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
	params.address = addr;
	params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
	params.err_handler.cb = fab_ep_on_error;
	params.err_handler.arg = ep;
	rc = fab_status_errno(ucp_ep_create(ctx->worker, &params, &ep->ep));
	if (rc == -EHOSTUNREACH) {
		/*
		 * UCX 1.13 shared memory (posix, sysv) has no peer failure
		 * handler unless UCX_POSIX_ERROR_HANDLING=y is in the
		 * environment (ucp_config_modify cannot set it). Such a peer
		 * is on this host: connect without UCX failure detection and
		 * rely on op timeouts and the caller's own process watch.
		 */
		params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
		rc = fab_status_errno(ucp_ep_create(ctx->worker, &params, &ep->ep));
		ep->no_peer_err = 1;
	}
	if (rc < 0) {
		free(ep);
		return rc;
	}
	*ret_ep = ep;
	return 0;
}

/* 0 while the endpoint is usable, else the -errno it failed with. */
int fab_ep_error(const struct fab_ep *ep)
{
	return ep->err;
}

static void fab_ep_unlink_closing(struct fab_ep *ep)
{
	if (ep->close_prev != NULL)
		ep->close_prev->close_next = ep->close_next;
	else
		ep->ctx->closing = ep->close_next;
	if (ep->close_next != NULL)
		ep->close_next->close_prev = ep->close_prev;
}

static void fab_ep_closed(void *request, ucs_status_t status, void *arg)
{
	struct fab_ep *ep = arg;

	if (ep->in_close) { /* completed inside ucp_ep_close_nbx(): fab_ep_destroy() frees */
		ep->close_done = 1;
		ucp_request_free(request);
		return;
	}
	fab_ep_unlink_closing(ep);
	if (ep->close_req != NULL) /* else fab_ep_reap_closing() released it */
		ucp_request_free(request);
	free(ep);
}

/*
 * Close the endpoint (forced if it failed) without waiting: a peer that is
 * gone must not stall the caller's event loop. Pending operations complete
 * with -ECANCELED or their result; the struct goes when UCX is done with it,
 * at the latest in fab_ctx_destroy().
 */
void fab_ep_destroy(struct fab_ep *ep)
{
	ucp_request_param_t param = {0};
	ucs_status_ptr_t sp;

	if (ep == NULL)
		return;
	ep->closing = 1;
	param.op_attr_mask =
	    UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
	param.flags = ep->err ? UCP_EP_CLOSE_FLAG_FORCE : 0;
	param.cb.send = fab_ep_closed;
	param.user_data = ep;
	ep->in_close = 1;
	sp = ucp_ep_close_nbx(ep->ep, &param);
	ep->in_close = 0;
	if (!UCS_PTR_IS_PTR(sp) || ep->close_done) {
		free(ep);
		return;
	}
	ep->close_req = sp;
	ep->close_prev = NULL;
	ep->close_next = ep->ctx->closing;
	if (ep->close_next != NULL)
		ep->close_next->close_prev = ep;
	ep->ctx->closing = ep;
	fab_evloop_kick(ep->ctx);
}

/* Close at once without flushing, for a peer that is gone or stuck. */
void fab_ep_abort(struct fab_ep *ep)
{
	if (ep == NULL)
		return;
	ep->closing = 1;
	if (ep->err == 0)
		ep->err = -ECANCELED;
	fab_ep_destroy(ep);
}

/*
 * Before the worker goes: give pending closes a moment to complete (forced
 * ones do at once), then release the requests of those that did not, so
 * the worker can be destroyed. fab_ep_reap_closing() frees what is left.
 */
void fab_ep_release_closing(struct fab_ctx *ctx)
{
	struct fab_ep *ep;
	int spins;

	for (spins = 0; ctx->closing != NULL && spins < 100000; spins++)
		ucp_worker_progress(ctx->worker);
	for (ep = ctx->closing; ep != NULL; ep = ep->close_next) {
		ucp_request_free(ep->close_req);
		ep->close_req = NULL;
	}
}

/* Free the endpoints whose close never completed (their worker is gone). */
void fab_ep_reap_closing(struct fab_ctx *ctx)
{
	while (ctx->closing != NULL) {
		struct fab_ep *ep = ctx->closing;

		ctx->closing = ep->close_next;
		free(ep);
	}
}

/*
 * Describe the transports the endpoint uses ("tcp/lo.0", "posix/memory.0 cma/memory.0"), if UCX
 * tells.
 */
int fab_ep_transports(struct fab_ep *ep, char *buf, size_t len)
{
	char *text = NULL, *line, *save = NULL;
	size_t tlen = 0, used = 0;
	FILE *f;

	if (buf == NULL || len == 0)
		return -EINVAL;
	f = open_memstream(&text, &tlen);
	if (f == NULL)
		return -ENOMEM;
	ucp_ep_print_info(ep->ep, f);
	fclose(f);
	buf[0] = '\0';
	/* Lines look like "#   lane[0]:  0:tcp/lo.0 md[0] -> ...". */
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, "lane["), *colon, *end;

		if (p == NULL || (p = strchr(p, ':')) == NULL)
			continue;
		p++;
		while (*p == ' ')
			p++;
		colon = strchr(p, ':');
		end = strchr(p, ' ');
		if (colon != NULL && (end == NULL || colon < end))
			p = colon + 1;
		end = strchr(p, ' ');
		if (end != NULL)
			*end = '\0';
		if (strstr(buf, p) != NULL)
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", p);
		if (n < 0 || (size_t)n >= len - used) {
			free(text);
			return -ENOSPC;
		}
		used += (size_t)n;
	}
	free(text);
	return 0;
}

/* rkey.c - a peer's remote key, unpacked for one endpoint. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "fabric/ucx_int.h"

/* Unpack a peer's packed rkey for use on ep. */
int fab_rkey_unpack(struct fab_ep *ep, const void *buf, size_t len, struct fab_rkey **ret_rkey)
{
	struct fab_rkey *rkey;
	int rc;

	if (buf == NULL || len == 0)
		return -EINVAL;
	if ((rc = fab_op_check(ep, NULL)) < 0)
		return rc;
	rkey = calloc(1, sizeof(*rkey));
	if (rkey == NULL)
		return -ENOMEM;
	rkey->ep = ep;
	rc = fab_status_errno(ucp_ep_rkey_unpack(ep->ep, buf, &rkey->rkey));
	if (rc < 0) {
		free(rkey);
		return rc;
	}
	*ret_rkey = rkey;
	return 0;
}

/* Release an unpacked rkey (before its endpoint is destroyed). */
void fab_rkey_destroy(struct fab_rkey *rkey)
{
	if (rkey == NULL)
		return;
	ucp_rkey_destroy(rkey->rkey);
	free(rkey);
}

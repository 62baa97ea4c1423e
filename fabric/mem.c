/* mem.c - local memory registered for remote access, and its packed rkey. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/ucx_int.h"

/* Register [addr, addr+len) for remote access. */
int fab_mem_register(struct fab_ctx *ctx, void *addr, size_t len, struct fab_mem **ret_mem)
{
	ucp_mem_map_params_t params = {0};
	struct fab_mem *mem;
	int rc;

	if (addr == NULL || len == 0)
		return -EINVAL;
	mem = calloc(1, sizeof(*mem));
	if (mem == NULL)
		return -ENOMEM;
	mem->ctx = ctx;
	params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
	params.address = addr;
	params.length = len;
	rc = fab_status_errno(ucp_mem_map(ctx->context, &params, &mem->memh));
	if (rc < 0) {
		free(mem);
		return rc;
	}
	*ret_mem = mem;
	return 0;
}

/*
 * Allocate and register len bytes. UCX allocates shared memory (posix md:
 * a memfd, or shm_open) that peers on the same host attach and copy to or
 * from directly, with no work by this process. Memory merely registered
 * with fab_mem_register() is reached over shared-memory transports through
 * UCX's active-message emulation instead (UCX 1.13 has no CMA RMA lanes),
 * several times slower: lend memory that same-host peers read should come
 * from here.
 */
int fab_mem_alloc(struct fab_ctx *ctx, size_t len, struct fab_mem **ret_mem, void **ret_addr)
{
	ucp_mem_map_params_t params = {0};
	ucp_mem_attr_t attr = {0};
	struct fab_mem *mem;
	int rc;

	if (len == 0)
		return -EINVAL;
	mem = calloc(1, sizeof(*mem));
	if (mem == NULL)
		return -ENOMEM;
	mem->ctx = ctx;
	params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
			    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
	params.address = NULL;
	params.length = len;
	params.flags = UCP_MEM_MAP_ALLOCATE;
	rc = fab_status_errno(ucp_mem_map(ctx->context, &params, &mem->memh));
	if (rc < 0)
		goto out_free;
	attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
	rc = fab_status_errno(ucp_mem_query(mem->memh, &attr));
	if (rc < 0)
		goto out_unmap;
	*ret_mem = mem;
	*ret_addr = attr.address;
	return 0;

out_unmap:
	(void)ucp_mem_unmap(ctx->context, mem->memh);
out_free:
	free(mem);
	return rc;
}

/* Pack a remote key for the memory, to give to peers; free() it. */
int fab_mem_rkey_pack(struct fab_mem *mem, void **ret_buf, size_t *ret_len)
{
	void *packed, *copy;
	size_t len;
	int rc;

	rc = fab_status_errno(ucp_rkey_pack(mem->ctx->context, mem->memh, &packed, &len));
	if (rc < 0)
		return rc;
	copy = malloc(len);
	if (copy == NULL) {
		rc = -ENOMEM;
		goto out_release;
	}
	memcpy(copy, packed, len);
	*ret_buf = copy;
	*ret_len = len;
out_release:
	ucp_rkey_buffer_release(packed);
	return rc;
}

/* Deregister memory (freeing it if fab_mem_alloc made it); peers holding its rkey lose access. */
void fab_mem_deregister(struct fab_mem *mem)
{
	if (mem == NULL)
		return;
	(void)ucp_mem_unmap(mem->ctx->context, mem->memh);
	free(mem);
}

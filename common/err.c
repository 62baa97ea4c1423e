/* common/err.c - text for every error code: -errno and the POOL_E* range. */
#include "config.h"

#include <string.h>

#include "common/common.h"
#include "proto/pool_contract.h"

/* Describe a negative errno or POOL_E* code. */
const char *err_str(int code)
{
	switch (code) {
	case 0:
		return "success";
	case POOL_EVERSION:
		return "peer speaks another protocol version";
	case POOL_EPROTOCOL:
		return "malformed or unexpected message from peer";
	case POOL_ECOORD:
		return "coordinator unavailable";
	case POOL_ELOST:
		return "the memory's lender is gone";
	}
	if (code < 0 && code > POOL_E_FIRST)
		return strerror(-code);
	return "unknown error";
}

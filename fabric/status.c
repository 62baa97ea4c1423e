/* status.c - UCX status codes to -errno, at the fabric layer's edge. */
#include "config.h"

#include <errno.h>

#include "fabric/ucx_int.h"

/* Convert a UCX ucs_status_t (passed as int) to 0 or -errno. */
int fab_status_errno(int ucs_status)
{
	switch ((ucs_status_t)ucs_status) {
	case UCS_OK:
		return 0;
	case UCS_INPROGRESS:
	case UCS_ERR_BUSY:
	case UCS_ERR_NO_RESOURCE:
		return -EAGAIN;
	case UCS_ERR_NO_MEMORY:
	case UCS_ERR_EXCEEDS_LIMIT:
		return -ENOMEM;
	case UCS_ERR_INVALID_PARAM:
	case UCS_ERR_INVALID_ADDR:
	case UCS_ERR_BUFFER_TOO_SMALL:
		return -EINVAL;
	case UCS_ERR_IO_ERROR:
		return -EIO;
	case UCS_ERR_NO_DEVICE:
		return -ENODEV;
	case UCS_ERR_NO_ELEM:
		return -ENOENT;
	case UCS_ERR_ALREADY_EXISTS:
		return -EEXIST;
	case UCS_ERR_OUT_OF_RANGE:
		return -ERANGE;
	case UCS_ERR_TIMED_OUT:
	case UCS_ERR_ENDPOINT_TIMEOUT:
		return -ETIMEDOUT;
	case UCS_ERR_UNREACHABLE:
		return -EHOSTUNREACH;
	case UCS_ERR_CONNECTION_RESET:
		return -ECONNRESET;
	case UCS_ERR_REJECTED:
		return -ECONNREFUSED;
	case UCS_ERR_NOT_CONNECTED:
		return -ENOTCONN;
	case UCS_ERR_UNSUPPORTED:
	case UCS_ERR_NOT_IMPLEMENTED:
		return -ENOTSUP;
	case UCS_ERR_CANCELED:
		return -ECANCELED;
	case UCS_ERR_MESSAGE_TRUNCATED:
		return -EMSGSIZE;
	case UCS_ERR_NO_PROGRESS:
		return -EDEADLK;
	case UCS_ERR_SHMEM_SEGMENT:
		return -EFAULT;
	default:
		return -EIO;
	}
}

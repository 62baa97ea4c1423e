/* libpool/pool.c - connection to the local poold, and its status. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "libpool/internal.h"

struct pool_status {
	Pool__StatusReply *reply;
};

POOL_EXPORT int pool_open(const char *socket, unsigned flags, struct pool **ret_pool)
{
	struct pool *pool;
	char msg[256];
	int rc;

	if (ret_pool == NULL || flags != 0)
		return pool_err(-EINVAL, "pool_open: invalid argument");
	if (socket == NULL)
		socket = getenv("POOL_SOCKET");
	if (socket == NULL || *socket == '\0')
		socket = POOL_DEFAULT_SOCKET;
	pool = calloc(1, sizeof(*pool));
	if (pool == NULL)
		return pool_err(-ENOMEM, "pool_open: out of memory");
	rc = wire_client_connect(socket, "libpool", POOL_CALL_TIMEOUT_MS, &pool->wc, msg,
				 sizeof(msg));
	if (rc < 0) {
		free(pool);
		return pool_err(rc, "cannot connect to poold at %s: %s", socket,
				msg[0] ? msg : err_str(rc));
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->data_lock, NULL);
	wire_client_set_notice(pool->wc, pool_region_notice, pool);
	*ret_pool = pool;
	return 0;
}

POOL_EXPORT int pool_close(struct pool *pool)
{
	if (pool == NULL)
		return 0;
	pool_xfer_close(pool);
	pool_arenas_unmap(pool);
	wire_client_close(pool->wc);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->data_lock);
	free(pool);
	return 0;
}

/* One request/reply on the control connection; errors recorded for pool_errormsg(). */
int pool_call(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	      ProtobufCMessage **ret_reply)
{
	return pool_call_fd(pool, type, req, reply_type, ret_reply, NULL);
}

/* Send a request whose reply does not matter (see wire_client_send()); a call when that fails. */
int pool_send(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type)
{
	ProtobufCMessage *reply;
	int rc;

	pthread_mutex_lock(&pool->lock);
	rc = wire_client_send(pool->wc, type, req);
	pthread_mutex_unlock(&pool->lock);
	if (rc != -EBUSY)
		return rc;
	rc = pool_call(pool, type, req, reply_type, &reply);
	if (rc == 0)
		wire_msg_free(reply);
	return rc;
}

/* pool_call() for a reply that carries a file descriptor. */
int pool_call_fd(struct pool *pool, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
		 ProtobufCMessage **ret_reply, int *ret_fd)
{
	char msg[256];
	int rc;

	pthread_mutex_lock(&pool->lock);
	rc = wire_client_call_fd(pool->wc, type, req, reply_type, ret_reply, ret_fd, msg,
				 sizeof(msg));
	pthread_mutex_unlock(&pool->lock);
	if (rc < 0)
		return pool_err(rc, "%s: %s", wire_type_name(type), msg[0] ? msg : err_str(rc));
	return 0;
}

POOL_EXPORT int pool_status(struct pool *pool, struct pool_status **ret_status)
{
	Pool__StatusRequest req = POOL__STATUS_REQUEST__INIT;
	struct pool_status *st;
	int rc;

	if (pool == NULL || ret_status == NULL)
		return pool_err(-EINVAL, "pool_status: invalid argument");
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return pool_err(-ENOMEM, "pool_status: out of memory");
	rc = pool_call(pool, WIRE_STATUS, &req.base, WIRE_STATUS_REPLY,
		       (ProtobufCMessage **)&st->reply);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*ret_status = st;
	return 0;
}

POOL_EXPORT void pool_status_free(struct pool_status *status)
{
	if (status == NULL)
		return;
	wire_msg_free(&status->reply->base);
	free(status);
}

POOL_EXPORT const char *pool_status_version(const struct pool_status *status)
{
	return status->reply->version;
}

POOL_EXPORT const char *pool_status_role(const struct pool_status *status)
{
	return status->reply->role;
}

POOL_EXPORT uint32_t pool_status_node_id(const struct pool_status *status)
{
	return status->reply->node_id;
}

POOL_EXPORT uint64_t pool_status_uptime_ms(const struct pool_status *status)
{
	return status->reply->uptime_ms;
}

POOL_EXPORT uint32_t pool_status_clients(const struct pool_status *status)
{
	return status->reply->clients;
}

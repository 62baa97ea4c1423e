/*
 * proto/wire.h - frames and messages of the control protocol.
 *
 * A frame is a 16-byte header followed by one packed protobuf-c message:
 *
 *	offset	size	field
 *	0	4	payload length in bytes (big-endian)
 *	4	2	message type (big-endian, enum wire_type)
 *	6	2	protocol version (big-endian)
 *	8	8	request id (big-endian), echoed in the reply
 *
 * The length is checked against the receiver's cap before any byte of the
 * payload is buffered or unpacked. Every request gets exactly one reply with
 * the same request id: the reply type of that request, or WIRE_ERROR.
 * The first frame on a connection is WIRE_HELLO; a peer whose header or
 * Hello carries another protocol version gets WIRE_ERROR with
 * POOL_EVERSION and is disconnected. Request id 0 is never used by a client:
 * an error frame with id 0 concerns the whole connection (e.g. a refusal
 * over a connection limit) and is followed by a close.
 *
 * This is the only code that packs or unpacks control messages; poold,
 * poolctl and libpool all go through it.
 */
#ifndef POOL_WIRE_H
#define POOL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/pool.pb-c.h"

#define WIRE_HDR_LEN 16
#define WIRE_VERSION POOL_PROTO_VERSION
#define WIRE_MAX_FRAME_DEFAULT (1u << 20)
#define WIRE_MAX_FRAME_LIMIT (64u << 20)

enum wire_type {
	WIRE_HELLO = 1,
	WIRE_HELLO_REPLY = 2,
	WIRE_ERROR = 3,
	WIRE_OK = 4,
	WIRE_STATUS = 5,
	WIRE_STATUS_REPLY = 6,
	WIRE_CONFIG_SHOW = 7,
	WIRE_CONFIG_SHOW_REPLY = 8,
	WIRE_RELOAD = 9,
	WIRE_REGISTER = 10,
	WIRE_REGISTER_REPLY = 11,
	WIRE_HEARTBEAT = 12,
	WIRE_MEMBER_EVENT = 13,
	WIRE_NODES = 14,
	WIRE_NODES_REPLY = 15,
	WIRE_PROBE = 16,
	WIRE_PROBE_REPORT = 17,
	WIRE_FABRIC = 18,
	WIRE_FABRIC_REPLY = 19,
	WIRE_FORWARD = 20,
	WIRE_REGION_CREATE = 21,
	WIRE_REGION_OPEN = 22,
	WIRE_REGION_STAT = 23,
	WIRE_REGION_DESTROY = 24,
	WIRE_REGION_REPLY = 25,
	WIRE_REGION_LIST = 26,
	WIRE_REGION_LIST_REPLY = 27,
	WIRE_ARENA_FD = 28,
	WIRE_SCRUB = 29,
	WIRE_REGION_CLOSE = 30,
	WIRE_SESSION_END = 31,
	WIRE_REGION_NOTICE = 32,
	WIRE_LEND = 33,
	WIRE_ARENA_LIMIT = 34,
	WIRE_LEDGER = 35,
	WIRE_LEDGER_REPLY = 36,
	WIRE_HOLD = 37,
	WIRE_HOLDINGS = 38,
	WIRE_HOLDINGS_REPLY = 39,
	WIRE_KV_NS = 40,
	WIRE_KV_NS_REPLY = 41,
	WIRE_KV = 42,
	WIRE_KV_REPLY = 43,
	WIRE_COPY = 44,
	WIRE_VEC = 45,
	WIRE_VEC_REPLY = 46,
	WIRE_EVENTS = 47,
	WIRE_EVENTS_REPLY = 48,
	WIRE_SNAP_COPY = 49,
	WIRE_SNAP_COPY_REPLY = 50,
	WIRE_SNAP_PLACE = 51,
	WIRE_SNAP_PLACE_REPLY = 52,
	WIRE_KV_NS_DEFS = 53,	/* coordinator -> nodes: the KV namespaces (KvNsReply) */
	WIRE_CLIENT_STATS = 54, /* client -> poold: its one-sided transfers (answered Ok) */
	WIRE_XFER_WINDOW = 55,	/* client -> its poold: a shared window (reply with its memfd) */
	WIRE_XFER_WINDOW_REPLY = 56,
	WIRE_XFER = 57, /* client -> its poold: transfers it carries, checked against grants */
	WIRE_XFER_REPLY = 58,
	WIRE_REGION_FD = 59, /* client -> its poold: a region's memory file (reply with its fd) */
	WIRE_REGION_FD_REPLY = 60,
	WIRE_REGION_KEEP =
	    61, /* client -> coordinator: an anonymous region stays (RegionName, Ok) */
	WIRE_MEMBER_EVENTS = 62, /* coordinator -> nodes: the members' changes of a tick */
	WIRE_HOLDINGS_ACK = 63,	 /* coordinator -> lender: chunks of its report read so far */
	WIRE_KV_HANDOVER = 64,	 /* node -> node: a KV shard's keys, asked of its last owner */
	WIRE_KV_HANDOVER_REPLY = 65,
	WIRE_KV_BACKUP = 66,	/* node -> node: a KV shard's changes, to its backup copy */
	WIRE_RESP_COMMAND = 67, /* node -> node: a RESP command on keys of shards it owns */
	WIRE_RESP_REPLY = 68,
	WIRE_KV_DEMAND = 69, /* node -> node: its use of sharded namespaces, to their keeper */
	WIRE_KV_DEMAND_REPLY = 70,
	WIRE_KV_PART = 71, /* node -> node: a keeper's part for a quiet owner (answered Ok) */
	WIRE_TYPE_MAX
};

struct wire_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t version;
	uint64_t req_id;
};

/* frame.c */
void wire_hdr_encode(const struct wire_hdr *hdr, uint8_t out[WIRE_HDR_LEN]);
int wire_hdr_decode(const uint8_t *buf, size_t len, size_t max_payload, struct wire_hdr *ret_hdr);
int wire_frame_pack(uint16_t type, uint64_t req_id, const ProtobufCMessage *msg, uint8_t **ret_buf,
		    size_t *ret_len);

/* msg.c */
const ProtobufCMessageDescriptor *wire_type_descriptor(uint16_t type);
const char *wire_type_name(uint16_t type);
const char *wire_enum_name(const ProtobufCEnumDescriptor *d, int value, char *buf, size_t len);
#define WIRE_ENUM_NAME_MAX 32
int wire_msg_unpack(uint16_t type, const uint8_t *payload, size_t len, ProtobufCMessage **ret_msg);
void wire_msg_free(ProtobufCMessage *msg);
size_t wire_elem_len(size_t len);
size_t wire_fit(void *const *msgs, size_t n, size_t max);

/* rpc.c: blocking client side, used by poolctl and libpool */
struct wire_client;
typedef void (*wire_notice_cb)(void *arg, uint16_t type, const uint8_t *payload, size_t len);
void wire_client_set_notice(struct wire_client *c, wire_notice_cb cb, void *arg);
int wire_client_poll(struct wire_client *c);
int wire_client_connect(const char *path, const char *name, int timeout_ms,
			struct wire_client **ret_client, char *errbuf, size_t errlen);
void wire_client_close(struct wire_client *c);
int wire_client_fd(const struct wire_client *c);
uint32_t wire_client_node_id(const struct wire_client *c);
const char *wire_client_server_version(const struct wire_client *c);
const char *wire_client_transports(const struct wire_client *c);
int wire_client_send(struct wire_client *c, uint16_t type, const ProtobufCMessage *req);
int wire_client_call(struct wire_client *c, uint16_t type, const ProtobufCMessage *req,
		     uint16_t reply_type, ProtobufCMessage **ret_reply, char *errbuf,
		     size_t errlen);
int wire_client_call_fd(struct wire_client *c, uint16_t type, const ProtobufCMessage *req,
			uint16_t reply_type, ProtobufCMessage **ret_reply, int *ret_fd,
			char *errbuf, size_t errlen);
int wire_send_frame(int fd, uint16_t type, uint64_t req_id, const ProtobufCMessage *msg);
int wire_recv_frame_fd(int fd, size_t max_payload, int timeout_ms, struct wire_hdr *ret_hdr,
		       uint8_t **ret_payload, int *ret_fd);
int wire_recv_frame(int fd, size_t max_payload, int timeout_ms, struct wire_hdr *ret_hdr,
		    uint8_t **ret_payload);

#endif

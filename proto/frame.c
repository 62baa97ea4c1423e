/* proto/frame.c - frame header encoding and decoding. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pool_contract.h"
#include "proto/wire.h"

/* Write hdr into out in network byte order. */
void wire_hdr_encode(const struct wire_hdr *hdr, uint8_t out[WIRE_HDR_LEN])
{
	uint32_t len = htobe32(hdr->len);
	uint16_t type = htobe16(hdr->type), version = htobe16(hdr->version);
	uint64_t id = htobe64(hdr->req_id);

	memcpy(out, &len, 4);
	memcpy(out + 4, &type, 2);
	memcpy(out + 6, &version, 2);
	memcpy(out + 8, &id, 8);
}

/*
 * Decode a header from the first bytes of buf. -EAGAIN: not enough bytes yet.
 * The header is returned even when the version or the length is refused
 * (POOL_EVERSION, -EMSGSIZE), so the caller can still answer the request id.
 */
int wire_hdr_decode(const uint8_t *buf, size_t len, size_t max_payload, struct wire_hdr *ret_hdr)
{
	uint32_t plen;
	uint16_t type, version;
	uint64_t id;

	if (len < WIRE_HDR_LEN)
		return -EAGAIN;
	memcpy(&plen, buf, 4);
	memcpy(&type, buf + 4, 2);
	memcpy(&version, buf + 6, 2);
	memcpy(&id, buf + 8, 8);
	ret_hdr->len = be32toh(plen);
	ret_hdr->type = be16toh(type);
	ret_hdr->version = be16toh(version);
	ret_hdr->req_id = be64toh(id);
	if (ret_hdr->version != WIRE_VERSION)
		return POOL_EVERSION;
	if (ret_hdr->len > max_payload)
		return -EMSGSIZE;
	return 0;
}

/* Pack msg into a newly allocated frame of the given type and request id. */
int wire_frame_pack(uint16_t type, uint64_t req_id, const ProtobufCMessage *msg, uint8_t **ret_buf,
		    size_t *ret_len)
{
	const ProtobufCMessageDescriptor *desc = wire_type_descriptor(type);
	struct wire_hdr hdr = {.type = type, .version = WIRE_VERSION, .req_id = req_id};
	size_t plen;
	uint8_t *buf;

	if (desc == NULL || msg == NULL || msg->descriptor != desc)
		return -EINVAL;
	plen = protobuf_c_message_get_packed_size(msg);
	if (plen > WIRE_MAX_FRAME_LIMIT)
		return -EMSGSIZE;
	buf = malloc(WIRE_HDR_LEN + plen);
	if (buf == NULL)
		return -ENOMEM;
	hdr.len = (uint32_t)plen;
	wire_hdr_encode(&hdr, buf);
	protobuf_c_message_pack(msg, buf + WIRE_HDR_LEN);
	*ret_buf = buf;
	*ret_len = WIRE_HDR_LEN + plen;
	return 0;
}

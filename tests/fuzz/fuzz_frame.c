/*
 * tests/fuzz/fuzz_frame.c - libFuzzer target: a byte stream as poold's
 * control socket would read it, split into frames, each header checked and
 * each payload unpacked as its type.
 *
 * With oracles for the decisions, not only crashes: each header is decoded
 * again by a plain reference (big-endian fields read byte by byte, the
 * version and the size bound as pool-protocol(7) states them) and both
 * must agree on the answer and the fields; what unpacks packs again into a
 * frame whose header says its type, id and length, whose payload unpacks
 * again, and packs again to the same bytes.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pool_contract.h"
#include "proto/wire.h"

#define MAX_PAYLOAD (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | *p++;
	return v;
}

/* The header at buf (WIRE_HDR_LEN bytes at least), as the protocol's text says. */
static int reference_hdr(const uint8_t *buf, struct wire_hdr *ret)
{
	ret->len = (uint32_t)be(buf, 4);
	ret->type = (uint16_t)be(buf + 4, 2);
	ret->version = (uint16_t)be(buf + 6, 2);
	ret->req_id = be(buf + 8, 8);
	if (ret->version != WIRE_VERSION)
		return POOL_EVERSION;
	return ret->len > MAX_PAYLOAD ? -EMSGSIZE : 0;
}

/* msg, unpacked from a frame of type and id: packed, unpacked and packed again, the same. */
static void round_trip(uint16_t type, uint64_t id, const ProtobufCMessage *msg)
{
	ProtobufCMessage *again;
	struct wire_hdr hdr;
	uint8_t *frame, *frame2;
	size_t len, len2;

	if (wire_frame_pack(type, id, msg, &frame, &len) < 0)
		__builtin_trap();
	if (len < WIRE_HDR_LEN || wire_hdr_decode(frame, len, WIRE_MAX_FRAME_LIMIT, &hdr) < 0 ||
	    hdr.type != type || hdr.req_id != id || hdr.len != len - WIRE_HDR_LEN)
		__builtin_trap();
	if (wire_msg_unpack(type, frame + WIRE_HDR_LEN, hdr.len, &again) < 0)
		__builtin_trap();
	if (wire_frame_pack(type, id, again, &frame2, &len2) < 0 || len2 != len ||
	    memcmp(frame, frame2, len) != 0)
		__builtin_trap();
	wire_msg_free(again);
	free(frame);
	free(frame2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_hdr ref;
	int rc, want;

	if (size < WIRE_HDR_LEN && wire_hdr_decode(data, size, MAX_PAYLOAD, &ref) != -EAGAIN)
		__builtin_trap();
	while (size >= WIRE_HDR_LEN) {
		ProtobufCMessage *msg;
		struct wire_hdr hdr;

		rc = wire_hdr_decode(data, size, MAX_PAYLOAD, &hdr);
		want = reference_hdr(data, &ref);
		if (rc != want || (rc == 0 && memcmp(&hdr, &ref, sizeof(hdr)) != 0))
			__builtin_trap();
		if (rc < 0)
			break;
		if (size - WIRE_HDR_LEN < hdr.len)
			break;
		if (wire_msg_unpack(hdr.type, data + WIRE_HDR_LEN, hdr.len, &msg) == 0) {
			round_trip(hdr.type, hdr.req_id, msg);
			wire_msg_free(msg);
		}
		data += WIRE_HDR_LEN + hdr.len;
		size -= WIRE_HDR_LEN + hdr.len;
	}
	return 0;
}

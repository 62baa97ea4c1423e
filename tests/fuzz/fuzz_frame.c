/*
 * tests/fuzz/fuzz_frame.c - libFuzzer target: a byte stream as poold's
 * control socket would read it, split into frames, each header checked and
 * each payload unpacked as its type.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= WIRE_HDR_LEN) {
		ProtobufCMessage *msg;
		struct wire_hdr hdr;
		uint8_t *frame;
		size_t len;

		if (wire_hdr_decode(data, size, 1 << 16, &hdr) < 0)
			break;
		if (size - WIRE_HDR_LEN < hdr.len)
			break;
		if (wire_msg_unpack(hdr.type, data + WIRE_HDR_LEN, hdr.len, &msg) == 0) {
			/* What unpacks must pack again. */
			if (wire_frame_pack(hdr.type, hdr.req_id, msg, &frame, &len) == 0)
				free(frame);
			wire_msg_free(msg);
		}
		data += WIRE_HDR_LEN + hdr.len;
		size -= WIRE_HDR_LEN + hdr.len;
	}
	return 0;
}

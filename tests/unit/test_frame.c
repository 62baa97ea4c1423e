/* tests/unit/test_frame.c - the frame codec: round trips and every refusal. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"

#include "libpool/libpool.h"
#include "proto/wire.h"

static void test_hdr_round_trip(void)
{
	struct wire_hdr in = {.len = 123456,
			      .type = WIRE_STATUS,
			      .version = WIRE_VERSION,
			      .req_id = 0x0102030405060708ULL};
	struct wire_hdr out;
	uint8_t buf[WIRE_HDR_LEN];

	wire_hdr_encode(&in, buf);
	/* Big-endian on the wire, whatever the host. */
	CU_ASSERT_EQUAL(buf[0], 0x00);
	CU_ASSERT_EQUAL(buf[1], 0x01);
	CU_ASSERT_EQUAL(buf[2], 0xe2);
	CU_ASSERT_EQUAL(buf[3], 0x40);
	CU_ASSERT_EQUAL(buf[8], 0x01);
	CU_ASSERT_EQUAL(buf[15], 0x08);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, sizeof(buf), 1 << 20, &out), 0);
	CU_ASSERT_EQUAL(out.len, in.len);
	CU_ASSERT_EQUAL(out.type, in.type);
	CU_ASSERT_EQUAL(out.version, in.version);
	CU_ASSERT_EQUAL(out.req_id, in.req_id);
}

static void test_hdr_truncated(void)
{
	struct wire_hdr in = {.len = 10, .type = WIRE_HELLO, .version = WIRE_VERSION, .req_id = 1};
	struct wire_hdr out;
	uint8_t buf[WIRE_HDR_LEN];
	size_t n;

	wire_hdr_encode(&in, buf);
	for (n = 0; n < WIRE_HDR_LEN; n++)
		CU_ASSERT_EQUAL(wire_hdr_decode(buf, n, 1 << 20, &out), -EAGAIN);
}

static void test_hdr_oversize(void)
{
	struct wire_hdr in = {
	    .len = (1 << 20) + 1, .type = WIRE_HELLO, .version = WIRE_VERSION, .req_id = 7};
	struct wire_hdr out;
	uint8_t buf[WIRE_HDR_LEN];

	wire_hdr_encode(&in, buf);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, sizeof(buf), 1 << 20, &out), -EMSGSIZE);
	/* The request id is still known, so the refusal can be answered. */
	CU_ASSERT_EQUAL(out.req_id, 7);
	in.len = 1 << 20;
	wire_hdr_encode(&in, buf);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, sizeof(buf), 1 << 20, &out), 0);
	in.len = UINT32_MAX;
	wire_hdr_encode(&in, buf);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, sizeof(buf), WIRE_MAX_FRAME_LIMIT, &out), -EMSGSIZE);
}

static void test_hdr_wrong_version(void)
{
	struct wire_hdr in = {
	    .len = 0, .type = WIRE_HELLO, .version = WIRE_VERSION + 1, .req_id = 9};
	struct wire_hdr out;
	uint8_t buf[WIRE_HDR_LEN];

	wire_hdr_encode(&in, buf);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, sizeof(buf), 1 << 20, &out), POOL_EVERSION);
	CU_ASSERT_EQUAL(out.version, WIRE_VERSION + 1);
	CU_ASSERT_EQUAL(out.req_id, 9);
}

static void test_frame_round_trip(void)
{
	Pool__Error err = POOL__ERROR__INIT;
	ProtobufCMessage *msg = NULL;
	struct wire_hdr hdr;
	uint8_t *buf;
	size_t len;

	err.code = -EPERM;
	err.message = "not allowed";
	CU_ASSERT_EQUAL_FATAL(wire_frame_pack(WIRE_ERROR, 42, &err.base, &buf, &len), 0);
	CU_ASSERT_EQUAL(wire_hdr_decode(buf, len, 1 << 20, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.type, WIRE_ERROR);
	CU_ASSERT_EQUAL(hdr.req_id, 42);
	CU_ASSERT_EQUAL(hdr.len + WIRE_HDR_LEN, len);
	CU_ASSERT_EQUAL_FATAL(wire_msg_unpack(hdr.type, buf + WIRE_HDR_LEN, hdr.len, &msg), 0);
	CU_ASSERT_EQUAL(((Pool__Error *)msg)->code, -EPERM);
	CU_ASSERT_STRING_EQUAL(((Pool__Error *)msg)->message, "not allowed");
	wire_msg_free(msg);
	free(buf);
}

static void test_frame_type_mismatch(void)
{
	Pool__Hello hello = POOL__HELLO__INIT;
	uint8_t *buf = NULL;
	size_t len;

	/* A message packed under another type's number is refused. */
	CU_ASSERT_EQUAL(wire_frame_pack(WIRE_STATUS, 1, &hello.base, &buf, &len), -EINVAL);
	CU_ASSERT_EQUAL(wire_frame_pack(WIRE_TYPE_MAX, 1, &hello.base, &buf, &len), -EINVAL);
	CU_ASSERT_EQUAL(wire_frame_pack(0, 1, &hello.base, &buf, &len), -EINVAL);
	CU_ASSERT_PTR_NULL(buf);
}

static void test_msg_malformed(void)
{
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
	static const uint8_t missing_required[] = {0x12, 0x01, 'x'}; /* name only, no version */
	ProtobufCMessage *msg = NULL;

	CU_ASSERT_EQUAL(wire_msg_unpack(WIRE_HELLO, garbage, sizeof(garbage), &msg), -EBADMSG);
	CU_ASSERT_EQUAL(
	    wire_msg_unpack(WIRE_HELLO, missing_required, sizeof(missing_required), &msg),
	    -EBADMSG);
	CU_ASSERT_EQUAL(wire_msg_unpack(999, garbage, sizeof(garbage), &msg), -ENOMSG);
	CU_ASSERT_PTR_NULL(msg);
	/* Messages without required fields unpack from zero bytes. */
	CU_ASSERT_EQUAL(wire_msg_unpack(WIRE_STATUS, NULL, 0, &msg), 0);
	wire_msg_free(msg);
}

static void test_stream_round_trip(void)
{
	Pool__Ok ok = POOL__OK__INIT;
	struct wire_hdr hdr;
	uint8_t *payload;
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ok.message = "fine";
	CU_ASSERT_EQUAL(wire_send_frame(sv[0], WIRE_OK, 5, &ok.base), 0);
	CU_ASSERT_EQUAL(wire_recv_frame(sv[1], 1 << 20, 1000, &hdr, &payload), 0);
	CU_ASSERT_EQUAL(hdr.type, WIRE_OK);
	CU_ASSERT_EQUAL(hdr.req_id, 5);
	free(payload);
	/* A peer that closes mid-header is a reset, not a hang. */
	CU_ASSERT_EQUAL(write(sv[0], "\0\0", 2), 2);
	close(sv[0]);
	CU_ASSERT_EQUAL(wire_recv_frame(sv[1], 1 << 20, 1000, &hdr, &payload), -ECONNRESET);
	close(sv[1]);
}

static void test_stream_timeout(void)
{
	struct wire_hdr hdr;
	uint8_t *payload;
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL(wire_recv_frame(sv[1], 1 << 20, 50, &hdr, &payload), -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);
}

/* A server that answers a client's requests out of order (a child process). */
static void fake_server(int lfd)
{
	Pool__HelloReply hr = POOL__HELLO_REPLY__INIT;
	Pool__Error err = POOL__ERROR__INIT;
	Pool__Ok ok = POOL__OK__INIT;
	struct wire_hdr hdr, send_only, call;
	uint8_t *payload;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0 || wire_recv_frame(fd, 1 << 20, 5000, &hdr, &payload) < 0)
		_exit(1);
	free(payload);
	hr.version = WIRE_VERSION;
	hr.server_version = "test";
	wire_send_frame(fd, WIRE_HELLO_REPLY, hdr.req_id, &hr.base);
	/* A request sent without waiting, then a call: the call is answered first. */
	if (wire_recv_frame(fd, 1 << 20, 5000, &send_only, &payload) < 0)
		_exit(1);
	free(payload);
	if (wire_recv_frame(fd, 1 << 20, 5000, &call, &payload) < 0)
		_exit(1);
	free(payload);
	wire_send_frame(fd, WIRE_OK, call.req_id, &ok.base);
	err.code = -EINVAL;
	err.message = "refused";
	wire_send_frame(fd, WIRE_ERROR, send_only.req_id, &err.base);
	/* Then another call, answered in turn. */
	if (wire_recv_frame(fd, 1 << 20, 5000, &call, &payload) < 0)
		_exit(1);
	free(payload);
	wire_send_frame(fd, WIRE_OK, call.req_id, &ok.base);
	/* Wait for the client to go. */
	while (wire_recv_frame(fd, 1 << 20, 5000, &hdr, &payload) == 0)
		free(payload);
	_exit(0);
}

static void test_send_without_reply(void)
{
	Pool__StatusRequest st = POOL__STATUS_REQUEST__INIT;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct wire_client *c;
	ProtobufCMessage *reply;
	int lfd, status, i, rc = 0;
	pid_t pid;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/test_frame.%d.sock", (int)getpid());
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(lfd >= 0);
	CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
			listen(lfd, 1) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		fake_server(lfd);
	close(lfd);
	CU_ASSERT_EQUAL_FATAL(wire_client_connect(sun.sun_path, "test", 5000, &c, NULL, 0), 0);
	unlink(sun.sun_path);
	CU_ASSERT_EQUAL(wire_client_send(c, WIRE_STATUS, &st.base), 0);
	/* The call gets its own reply although it comes first ... */
	CU_ASSERT_EQUAL(wire_client_call(c, WIRE_STATUS, &st.base, WIRE_OK, &reply, NULL, 0), 0);
	wire_msg_free(reply);
	/* ... the other reply (an error) is dropped, and the next call gets its own. */
	CU_ASSERT_EQUAL(wire_client_call(c, WIRE_STATUS, &st.base, WIRE_OK, &reply, NULL, 0), 0);
	wire_msg_free(reply);
	CU_ASSERT_EQUAL(wire_client_poll(c), 0);
	/* Replies due are bounded: then the caller must wait for one. */
	for (i = 0; i < 64 && rc == 0; i++)
		rc = wire_client_send(c, WIRE_STATUS, &st.base);
	CU_ASSERT_EQUAL(rc, -EBUSY);
	CU_ASSERT_EQUAL(i, 33);
	wire_client_close(c);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"header round trip", test_hdr_round_trip},
	    {"truncated header", test_hdr_truncated},
	    {"oversize length", test_hdr_oversize},
	    {"wrong version", test_hdr_wrong_version},
	    {"frame round trip", test_frame_round_trip},
	    {"type mismatch", test_frame_type_mismatch},
	    {"malformed payload", test_msg_malformed},
	    {"requests sent without waiting for the reply", test_send_without_reply},
	    {"stream round trip", test_stream_round_trip},
	    {"stream timeout", test_stream_timeout},
	    {NULL, NULL},
	};
	return unit_run("frame", tests);
}

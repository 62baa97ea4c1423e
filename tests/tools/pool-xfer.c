/*
 * tests/tools/pool-xfer.c - the largest transfer requests the protocol
 * allows, in raw frames (no libpool, which would map a local region and
 * copy it itself), over a region of the caller's own.
 *
 *	pool-xfer SOCKET flood SIZE OPS OPLEN [PLACEMENT [WINDOW]]
 *	pool-xfer SOCKET hangup SIZE OPS OPLEN MS [PLACEMENT [WINDOW]]
 *	pool-xfer SOCKET busy SIZE OPS OPLEN N [PLACEMENT [WINDOW]]
 *	pool-xfer SOCKET read SIZE LEN TIMES [PLACEMENT]
 *
 * Each makes an anonymous region of SIZE bytes (PLACEMENT: local, node=N,
 * ...; local by default) and a window (WINDOW bytes, 256M by default),
 * writes a seeded pattern into the region through the window, then:
 *
 * flood sends one Xfer request of OPS reads of OPLEN bytes each from the
 * region into the window (OPLEN-sized slots of it, each slot read again
 * and again from the same offset of the region, 64 bytes past a MiB) and
 * checks every slot against the pattern; it prints the time the request
 * took and exits 1 on a wrong byte or a failed op.
 *
 * With POOL_XFER_SENT=FILE in the environment, flood makes FILE as it
 * sends its request.
 *
 * hangup sends the same request, waits MS milliseconds and exits without
 * reading the reply: the connection closes mid-transfer.
 *
 * busy sends N such requests back to back on its one connection, then
 * reads their N answers, and prints how many were refused with EBUSY (a
 * session has a few in progress at most) and why.
 *
 * read reads [0, LEN) of the region into the window TIMES times, one op a
 * request, and prints the rate (GB/s) of the best of them, and how long
 * the slowest took.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/wire.h"

#define READ POOL__XFER_KIND__XFER_KIND_READ
#define WRITE POOL__XFER_KIND__XFER_KIND_WRITE

static struct wire_client *wc;
static uint64_t region, win_id, win_size;
static uint8_t *win, *want;
static Pool__XferOp *req_ops, **req_opp; /* the request of flood, hangup and busy */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G':
		v <<= 10;
		/* fall through */
	case 'M':
		v <<= 10;
		/* fall through */
	case 'K':
		v <<= 10;
	}
	return v;
}

static int die(const char *what, int rc, const char *msg)
{
	fprintf(stderr, "pool-xfer: %s: %s (%s)\n", what, msg != NULL ? msg : "", strerror(-rc));
	exit(1);
}

/* The seeded pattern of the region's bytes. */
static void pattern(uint8_t *buf, size_t len)
{
	uint64_t z = 0x9e3779b97f4a7c15ull;
	size_t i;

	for (i = 0; i < len; i++) {
		z ^= z << 13;
		z ^= z >> 7;
		z ^= z << 17;
		buf[i] = (uint8_t)z;
	}
}

static Pool__XferOp op_of(unsigned kind, uint64_t off, uint64_t len, uint64_t win_off)
{
	Pool__XferOp op = POOL__XFER_OP__INIT;

	op.op = kind;
	op.has_region = 1;
	op.region = region;
	op.off = off;
	op.len = len;
	op.has_window = op.has_win_off = 1;
	op.window = (uint32_t)win_id;
	op.win_off = win_off;
	return op;
}

/* One request of n ops; statuses checked. */
static void xfer(Pool__XferOp *ops, size_t n, const char *what)
{
	Pool__Xfer req = POOL__XFER__INIT;
	Pool__XferReply *rep;
	Pool__XferOp **opp = calloc(n, sizeof(*opp));
	char msg[256];
	size_t i;
	int rc;

	if (opp == NULL)
		die(what, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		opp[i] = &ops[i];
	req.ops = opp;
	req.n_ops = n;
	rc = wire_client_call(wc, WIRE_XFER, &req.base, WIRE_XFER_REPLY, (ProtobufCMessage **)&rep,
			      msg, sizeof(msg));
	free(opp);
	if (rc < 0)
		die(what, rc, msg);
	for (i = 0; i < n; i++)
		if (rep->status[i] != 0) {
			fprintf(stderr, "pool-xfer: %s: op %zu of %zu failed: %s\n", what, i, n,
				strerror(-rep->status[i]));
			exit(1);
		}
	wire_msg_free(&rep->base);
}

/* An anonymous region of size bytes, a window, and the pattern written into the region. */
static void setup(uint64_t size, const char *placement, uint64_t wsize)
{
	Pool__RegionCreate rc_req = POOL__REGION_CREATE__INIT;
	Pool__XferWindow w_req = POOL__XFER_WINDOW__INIT;
	Pool__RegionReply *rrep;
	Pool__XferWindowReply *wrep;
	Pool__XferOp op;
	char msg[256], name[64];
	uint64_t pos, step;
	int fd, rc;

	snprintf(name, sizeof(name), "pool-xfer-%d", (int)getpid());
	rc_req.name = name;
	rc_req.size = size;
	rc_req.class_ = "pinned";
	rc_req.placement = (char *)placement;
	rc_req.mode = 0600;
	rc_req.anonymous = 1;
	rc_req.has_open = 1;
	rc_req.open = 1;
	rc_req.from_node = wire_client_node_id(wc);
	rc = wire_client_call(wc, WIRE_REGION_CREATE, &rc_req.base, WIRE_REGION_REPLY,
			      (ProtobufCMessage **)&rrep, msg, sizeof(msg));
	if (rc < 0)
		die("region", rc, msg);
	region = rrep->region->id;
	wire_msg_free(&rrep->base);
	w_req.size = wsize;
	rc = wire_client_call_fd(wc, WIRE_XFER_WINDOW, &w_req.base, WIRE_XFER_WINDOW_REPLY,
				 (ProtobufCMessage **)&wrep, &fd, msg, sizeof(msg));
	if (rc < 0 || fd < 0)
		die("window", rc < 0 ? rc : -EPROTO, msg);
	win_id = wrep->window;
	win_size = wrep->size;
	wire_msg_free(&wrep->base);
	win = mmap(NULL, win_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	want = malloc(size);
	if (win == MAP_FAILED || want == NULL)
		die("window", -errno, "cannot map it");
	pattern(want, size);
	step = MIN(win_size, (uint64_t)16 << 20);
	/*
	 * In ops of 16 MiB at most: a poold that carried each op in one piece
	 * (before chunks) failed one that took longer than a heartbeat window.
	 */
	for (pos = 0; pos < size; pos += step) {
		uint64_t len = MIN(step, size - pos);

		memcpy(win, want + pos, len);
		op = op_of(WRITE, pos, len, 0);
		xfer(&op, 1, "write the pattern");
	}
	memset(win, 0, win_size);
}

/* ops[] of the flood: op i reads slot i % slots of the window from that slot's place. */
static Pool__XferOp *flood_ops(uint64_t size, size_t n, uint64_t oplen, size_t *ret_slots)
{
	Pool__XferOp *ops = calloc(n, sizeof(*ops));
	size_t slots = (size_t)(win_size / oplen), i;

	if (ops == NULL || slots == 0 || oplen > size)
		die("flood", -EINVAL, "OPLEN must fit the region and the window");
	for (i = 0; i < n; i++) {
		size_t k = i % slots;

		ops[i] = op_of(READ, ((uint64_t)k * 5242944u) % (size - oplen + 1), oplen,
			       (uint64_t)k * oplen);
	}
	*ret_slots = MIN(slots, n);
	return ops;
}

/* Free what main() made (for the leak checks of sanitized builds) and return rc. */
static int finish(int rc)
{
	free(req_ops);
	free(req_opp);
	free(want);
	if (win != NULL && win != MAP_FAILED)
		munmap(win, win_size);
	wire_client_close(wc);
	return rc;
}

/* req_opp[] pointing at req_ops[0..n), for a request. */
static void ops_ptrs(size_t n)
{
	size_t k;

	req_opp = calloc(n, sizeof(*req_opp));
	if (req_opp == NULL)
		die("request", -ENOMEM, "out of memory");
	for (k = 0; k < n; k++)
		req_opp[k] = &req_ops[k];
}

int main(int argc, char **argv)
{
	const char *cmd, *placement = "local";
	char msg[256];
	uint64_t size;
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: pool-xfer SOCKET flood|hangup|busy|read SIZE ...\n");
		return 2;
	}
	cmd = argv[2];
	size = parse_size(argv[3]);
	rc = wire_client_connect(argv[1], "pool-xfer", -1, &wc, msg, sizeof(msg));
	if (rc < 0)
		die("connect", rc, msg);
	if (strcmp(cmd, "flood") == 0 || strcmp(cmd, "hangup") == 0) {
		bool hangup = cmd[0] == 'h';
		size_t n = (size_t)strtoull(argv[4], NULL, 0), slots, k;
		uint64_t oplen = argc > 5 ? parse_size(argv[5]) : 0, ms = 0;
		int at = hangup ? 7 : 6;
		double t0;

		if (hangup)
			ms = argc > 6 ? strtoull(argv[6], NULL, 0) : 0;
		if (argc > at)
			placement = argv[at];
		setup(size, placement, argc > at + 1 ? parse_size(argv[at + 1]) : 256u << 20);
		req_ops = flood_ops(size, n, oplen, &slots);
		t0 = now_s();
		if (hangup) {
			Pool__Xfer req = POOL__XFER__INIT;

			ops_ptrs(n);
			req.ops = req_opp;
			req.n_ops = n;
			rc = wire_client_send(wc, WIRE_XFER, &req.base);
			if (rc < 0)
				die("send", rc, "");
			usleep((useconds_t)(ms * 1000));
			printf("hangup: sent %zu reads of %" PRIu64 " bytes, closed after %" PRIu64
			       " ms\n",
			       n, oplen, ms);
			return finish(0);
		}
		if (getenv("POOL_XFER_SENT") != NULL) { /* (a file that says the flood starts) */
			FILE *f = fopen(getenv("POOL_XFER_SENT"), "w");

			if (f != NULL)
				fclose(f);
		}
		xfer(req_ops, n, "flood");
		t0 = now_s() - t0;
		for (k = 0; k < slots; k++) {
			const uint8_t *got = win + req_ops[k].win_off;

			if (memcmp(got, want + req_ops[k].off, oplen) != 0) {
				fprintf(stderr, "pool-xfer: flood: slot %zu holds wrong bytes\n",
					k);
				return finish(1);
			}
		}
		printf("flood: %zu reads of %" PRIu64 " bytes (%.1f GiB) in %.2f s, %.2f GB/s, "
		       "verified\n",
		       n, oplen, (double)n * (double)oplen / (1 << 30), t0,
		       (double)n * (double)oplen / t0 / 1e9);
		return finish(0);
	}
	if (strcmp(cmd, "busy") == 0 && argc > 6) {
		size_t n = (size_t)strtoull(argv[4], NULL, 0), slots;
		unsigned times = (unsigned)strtoul(argv[6], NULL, 0), i, busy = 0, done = 0;
		Pool__Xfer req = POOL__XFER__INIT;
		char why[256] = "";

		if (argc > 7)
			placement = argv[7];
		setup(size, placement, argc > 8 ? parse_size(argv[8]) : 256u << 20);
		req_ops = flood_ops(size, n, parse_size(argv[5]), &slots);
		ops_ptrs(n);
		req.ops = req_opp;
		req.n_ops = n;
		for (i = 0; i < times; i++) {
			rc = wire_send_frame(wire_client_fd(wc), WIRE_XFER, 1000 + i, &req.base);
			if (rc < 0)
				die("send", rc, "");
		}
		for (i = 0; i < times; i++) {
			struct wire_hdr hdr;
			uint8_t *payload;
			ProtobufCMessage *m;

			rc = wire_recv_frame(wire_client_fd(wc), 1 << 20, -1, &hdr, &payload);
			if (rc < 0)
				die("reply", rc, "");
			if (hdr.type == WIRE_ERROR &&
			    wire_msg_unpack(hdr.type, payload, hdr.len, &m) == 0) {
				Pool__Error *e = (Pool__Error *)m;

				busy += e->code == -EBUSY;
				snprintf(why, sizeof(why), "%s", e->message);
				wire_msg_free(m);
			} else if (hdr.type == WIRE_XFER_REPLY) {
				done++;
			}
			free(payload);
		}
		printf("busy: %u of %u refused with EBUSY (%s), %u answered\n", busy, times, why,
		       done);
		return finish(0);
	}
	if (strcmp(cmd, "read") == 0) {
		uint64_t len = parse_size(argv[4]);
		unsigned times = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 0) : 5, i;
		double best = 0, worst = 0;

		if (argc > 6)
			placement = argv[6];
		setup(size, placement, MIN(len, (uint64_t)1 << 30));
		for (i = 0; i < times; i++) {
			Pool__XferOp op = op_of(READ, 0, len, 0);
			double t0 = now_s(), t;

			xfer(&op, 1, "read");
			t = now_s() - t0;
			if (best == 0 || t < best)
				best = t;
			if (t > worst)
				worst = t;
		}
		if (memcmp(win, want, len) != 0) {
			fprintf(stderr, "pool-xfer: read: wrong bytes\n");
			return finish(1);
		}
		printf("read: %" PRIu64
		       " bytes, best of %u: %.3f s, %.2f GB/s; the slowest %.1f ms\n",
		       len, times, best, (double)len / best / 1e9, worst * 1000);
		return finish(0);
	}
	fprintf(stderr, "pool-xfer: unknown command %s\n", cmd);
	return finish(2);
}

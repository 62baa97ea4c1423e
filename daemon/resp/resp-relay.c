/*
 * daemon/resp/resp-relay.c - the RESP endpoint of a node that is not the
 * coordinator: each connection is relayed, bytes both ways, to the
 * coordinator's endpoint, so that redis://localhost works on every node.
 *
 * RESP commands are read-modify-writes of the KV index (INCR, SET NX,
 * APPEND, MULTI/EXEC, expiry), which only the coordinator holds: running
 * them there keeps Redis's one-at-a-time semantics without locks between
 * nodes, while the values already live on the lenders. The coordinator
 * tells a node where its endpoint is bound when the node registers; a
 * wildcard address is reached at the address the node reaches the
 * coordinator at, and one on the coordinator's loopback only from a node
 * on the same host.
 *
 * AUTH, SELECT and every command pass through unchanged: the coordinator
 * authenticates and limits each client as its own (resp.max_clients and
 * the per-user limits count relayed ones too). Here a connection holds at
 * most RELAY_HIGH bytes each way: past that the side that sends is not
 * read until the other has taken half of it, so a client that does not
 * read its replies stalls the coordinator's, where resp.max_output ends
 * it. When either side ends, what is buffered for the other is written,
 * within RELAY_DRAIN_MS, and both are closed.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "daemon/net/net.h"
#include "daemon/resp/resp.h"

#define RELAY_HIGH (256u << 10)
#define RELAY_CONNECT_MS 5000
#define RELAY_DRAIN_MS 10000

struct relay_conn {
	TAILQ_ENTRY(relay_conn) entry;
	struct resp_relay *rl;
	struct bufferevent *client, *coord; /* coord is NULL once the coordinator's side ended */
	bool connected;			    /* to the coordinator */
	bool draining;			    /* one side ended: the other is written, then closed */
};

struct resp_relay {
	struct poold *pd;
	struct evconnlistener *listener;
	TAILQ_HEAD(, relay_conn) conns;
	unsigned nconns;
	uint64_t refused, to_coordinator, to_client; /* ever, for the metrics */
	bool known;				     /* where the coordinator's endpoint is */
	struct sockaddr_storage to;
	unsigned tolen;
	char endpoint[64];
	char why[256]; /* when not known: why, for the clients */
	struct log_limit said;
};

static void relay_free(struct relay_conn *r)
{
	struct resp_relay *rl = r->rl;

	if (r->client != NULL)
		bufferevent_free(r->client);
	if (r->coord != NULL)
		bufferevent_free(r->coord);
	TAILQ_REMOVE(&rl->conns, r, entry);
	rl->nconns--;
	free(r);
}

static struct bufferevent *relay_other(const struct relay_conn *r, const struct bufferevent *bev)
{
	return bev == r->client ? r->coord : r->client;
}

/* Bytes came from one side: pass them on; pause that side while the other's are many. */
static void relay_read_cb(struct bufferevent *bev, void *arg)
{
	struct relay_conn *r = arg;
	struct bufferevent *to = relay_other(r, bev);
	struct evbuffer *out;

	if (to == NULL || r->draining) { /* nothing to pass them to any more */
		evbuffer_drain(bufferevent_get_input(bev),
			       evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	out = bufferevent_get_output(to);
	if (bev == r->client)
		r->rl->to_coordinator += evbuffer_get_length(bufferevent_get_input(bev));
	else
		r->rl->to_client += evbuffer_get_length(bufferevent_get_input(bev));
	evbuffer_add_buffer(out, bufferevent_get_input(bev));
	if (evbuffer_get_length(out) >= RELAY_HIGH) {
		bufferevent_disable(bev, EV_READ);
		/* to's write callback runs when it is down to half. */
		bufferevent_setwatermark(to, EV_WRITE, RELAY_HIGH / 2, 0);
	}
}

/* One side's output went down to its low watermark: read the other again, or end. */
static void relay_write_cb(struct bufferevent *bev, void *arg)
{
	struct relay_conn *r = arg;
	struct bufferevent *from = relay_other(r, bev);

	if (r->draining) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			relay_free(r);
		return;
	}
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	if (from != NULL)
		bufferevent_enable(from, EV_READ);
}

/* Side bev ended: write what the other side has pending, then close it. */
static void relay_drain(struct relay_conn *r, struct bufferevent *ended)
{
	struct bufferevent *left = relay_other(r, ended);
	struct timeval tv = units_timeval(RELAY_DRAIN_MS);

	bufferevent_free(ended);
	if (ended == r->client)
		r->client = NULL;
	else
		r->coord = NULL;
	if (left == NULL || evbuffer_get_length(bufferevent_get_output(left)) == 0) {
		relay_free(r);
		return;
	}
	r->draining = true;
	bufferevent_disable(left, EV_READ);
	bufferevent_setwatermark(left, EV_WRITE, 0, 0);
	bufferevent_set_timeouts(left, NULL, &tv);
}

/* Nothing came from the coordinator's side: the client is told why, as an error reply. */
static void relay_unreachable(struct relay_conn *r, const char *why)
{
	struct resp_relay *rl = r->rl;

	log_warnx_limited(&rl->said, 10000,
			  "RESP relay: cannot reach the coordinator's endpoint %s: %s",
			  rl->endpoint, why);
	evbuffer_add_printf(bufferevent_get_output(r->client),
			    "-ERR the coordinator's RESP endpoint %s is unreachable from this "
			    "node: %s\r\n",
			    rl->endpoint, why);
}

static void relay_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct relay_conn *r = arg;

	if (bev == r->coord && (what & BEV_EVENT_CONNECTED)) {
		int one = 1; /* replies are small writes: no Nagle delay */

		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		r->connected = true;
		if (!r->draining) /* (else the connect's timeout bounds the drain) */
			bufferevent_set_timeouts(bev, NULL, NULL);
		return;
	}
	if (r->draining) { /* the side left could not be written to in time */
		relay_free(r);
		return;
	}
	if (bev == r->coord && !r->connected) {
		int err = EVUTIL_SOCKET_ERROR();

		relay_unreachable(r, (what & BEV_EVENT_TIMEOUT) ? "timed out"
				     : err != 0			? strerror(err)
								: "connection refused");
	}
	relay_drain(r, bev);
}

/* Refuse a client with an error reply that says why. */
static void relay_refuse(int fd, const char *why)
{
	char msg[300];
	int n = snprintf(msg, sizeof(msg), "-ERR %s\r\n", why);

	accept_refuse(fd, msg, (size_t)MIN(n, (int)sizeof(msg) - 1));
}

static void relay_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			 int salen, void *arg)
{
	struct resp_relay *rl = arg;
	struct timeval tv = units_timeval(RELAY_CONNECT_MS);
	struct relay_conn *r;
	int one = 1;

	(void)lis, (void)sa, (void)salen;
	if (rl->nconns >= (unsigned)rl->pd->conf->resp_max_clients || !rl->known) {
		relay_refuse(fd, rl->known ? "max number of clients reached" : rl->why);
		rl->refused++;
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		evutil_closesocket(fd);
		return;
	}
	r->rl = rl;
	r->client = bufferevent_socket_new(rl->pd->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (r->client == NULL) {
		evutil_closesocket(fd);
		free(r);
		return;
	}
	TAILQ_INSERT_TAIL(&rl->conns, r, entry);
	rl->nconns++;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r->coord = bufferevent_socket_new(rl->pd->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (r->coord == NULL) {
		relay_free(r);
		return;
	}
	bufferevent_setcb(r->client, relay_read_cb, relay_write_cb, relay_event_cb, r);
	bufferevent_enable(r->client, EV_READ | EV_WRITE);
	/*
	 * Its callbacks are set once the connect started: one that fails at
	 * once (no fds) calls none, and one refused later calls them deferred.
	 */
	if (bufferevent_socket_connect(r->coord, (struct sockaddr *)&rl->to, (int)rl->tolen) < 0) {
		relay_unreachable(r, strerror(errno));
		relay_drain(r, r->coord);
		return;
	}
	bufferevent_setcb(r->coord, relay_read_cb, relay_write_cb, relay_event_cb, r);
	/* For a socket that connects, the write timeout bounds the connect. */
	bufferevent_set_timeouts(r->coord, NULL, &tv);
	bufferevent_enable(r->coord, EV_READ | EV_WRITE);
}

static bool relay_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr) >>
			24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
		    &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static bool relay_is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr ==
		       INADDR_ANY;
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
}

static void relay_set_port(struct sockaddr_storage *ss, in_port_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = port;
}

static in_port_t relay_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET
		   ? ((const struct sockaddr_in *)(const void *)ss)->sin_port
		   : ((const struct sockaddr_in6 *)(const void *)ss)->sin6_port;
}

/*
 * The coordinator said where its endpoint is bound (NULL: it has none),
 * over the link on socket link_fd: connections from now on go there.
 */
void resp_relay_learn(struct poold *pd, const char *endpoint, int link_fd)
{
	struct resp_relay *rl = pd->resp_relay;
	struct sockaddr_storage to, via;
	socklen_t vialen = sizeof(via);
	unsigned tolen;
	char was[sizeof(rl->endpoint)];
	bool was_known;

	if (rl == NULL)
		return;
	was_known = rl->known;
	snprintf(was, sizeof(was), "%s", rl->endpoint);
	rl->known = false;
	if (endpoint == NULL || endpoint[0] == '\0') {
		snprintf(rl->why, sizeof(rl->why),
			 "the coordinator %s serves no RESP endpoint "
			 "(resp.listen is unset there)",
			 pd->conf->coordinator);
	} else if (addr_parse_numeric(endpoint, &to, &tolen) < 0 ||
		   (to.ss_family != AF_INET && to.ss_family != AF_INET6) ||
		   getpeername(link_fd, (struct sockaddr *)&via, &vialen) < 0) {
		snprintf(rl->why, sizeof(rl->why),
			 "the coordinator's RESP endpoint '%.64s' is "
			 "not an address this node can use",
			 endpoint);
	} else if (relay_is_loopback(&to) && !relay_is_loopback(&via)) {
		snprintf(rl->why, sizeof(rl->why),
			 "the coordinator's RESP endpoint %.64s is on "
			 "its loopback only: set its resp.listen to an address nodes reach",
			 endpoint);
	} else {
		if (relay_is_wildcard(&to)) {
			/* Bound to all its addresses: reach it where the link reaches it. */
			in_port_t port = relay_port(&to);

			to = via;
			tolen = vialen;
			relay_set_port(&to, port);
		}
		rl->to = to;
		rl->tolen = tolen;
		rl->known = true;
		addr_format(&to, rl->endpoint, sizeof(rl->endpoint));
	}
	if (rl->known && (!was_known || strcmp(was, rl->endpoint) != 0))
		log_info("RESP endpoint %s: relayed to the coordinator's, %s",
			 pd->conf->resp_listen, rl->endpoint);
	else if (!rl->known)
		log_warnx("RESP endpoint %s: %s", pd->conf->resp_listen, rl->why);
}

/*
 * At a node, start the RESP endpoint if resp.listen is set: relayed once the coordinator is known.
 */
int resp_relay_open(struct poold *pd)
{
	struct resp_relay *rl;
	int rc;

	if (pd->conf->resp_listen[0] == '\0')
		return 0;
	rl = calloc(1, sizeof(*rl));
	if (rl == NULL)
		return -ENOMEM;
	rl->pd = pd;
	TAILQ_INIT(&rl->conns);
	snprintf(rl->why, sizeof(rl->why), "this node has not joined the coordinator %s yet",
		 pd->conf->coordinator);
	rc = accept_listen(pd, "resp.listen", pd->conf->resp_listen, 128, relay_accept, rl,
			   &rl->listener);
	if (rc < 0) {
		free(rl);
		return rc;
	}
	pd->resp_relay = rl;
	log_info("RESP endpoint on %s, relayed to the coordinator's", pd->conf->resp_listen);
	return 0;
}

/* What the relay served; false without one. */
bool resp_relay_stats(const struct poold *pd, struct resp_stats *ret)
{
	const struct resp_relay *rl = pd->resp_relay;

	if (rl == NULL)
		return false;
	*ret = (struct resp_stats){.connections = rl->nconns,
				   .refused = rl->refused,
				   .to_coordinator = rl->to_coordinator,
				   .to_client = rl->to_client,
				   .relay = true};
	return true;
}

/* Stop it: relayed connections end. */
void resp_relay_close(struct poold *pd)
{
	struct resp_relay *rl = pd->resp_relay;
	struct relay_conn *r;

	if (rl == NULL)
		return;
	while ((r = TAILQ_FIRST(&rl->conns)) != NULL)
		relay_free(r);
	accept_close(rl->listener);
	free(rl);
	pd->resp_relay = NULL;
}

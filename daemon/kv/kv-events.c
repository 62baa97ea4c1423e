/*
 * daemon/kv/kv-events.c - KV events for cache-aware routers, in vLLM's format.
 *
 * When kv_events.endpoint is set, the coordinator publishes what happens to
 * one KV namespace (kv_events.namespace), or, where that namespace is
 * sharded, every poold what happens to the keys of the shards it owns
 * (kv-evshards.c, which says in what order), as vLLM's engines publish their
 * prefix cache (vllm/distributed/kv_events.py): a ZMQ PUB socket sends
 * three-frame messages, topic | 8-byte big-endian sequence number | payload,
 * the payload a msgpack EventBatch [ts, [event, ...]] of BlockStored (keys
 * that became present), BlockRemoved (keys gone: removed, evicted, expired,
 * lost with their lender) and AllBlocksCleared (the namespace flushed or
 * dropped, and first when this coordinator starts). Routers built for
 * those events (Dynamo, llm-d, Mooncake's conductor) index the pool as one
 * more engine.
 *
 * Events are tagged maps {"type": "BlockStored", ...}, as vLLM sends them
 * since its events became maps, or with kv_events.format = array the tagged
 * arrays of earlier versions. Block hashes are the keys, as integers (the
 * last 8 bytes, big-endian: what vLLM sends by default, its
 * maybe_convert_block_hash()) or as the key bytes themselves.
 *
 * The medium is kv_events.medium for values in DRAM and STORAGE (vLLM's
 * name for its storage tiers) for values in the pmem tier: a value spilled
 * there is a BlockRemoved of the one and a BlockStored of the other, and a
 * promotion back the reverse, so a router that weighs tiers knows which.
 *
 * The keys of one request are one event, in the order the client gave them:
 * a router that keeps a prefix tree takes them as a chain, which is what an
 * engine storing a prompt's blocks in one batch means. An event cut for
 * size goes on with the last key before the cut as its parent.
 *
 * Batches are published once per turn of the event loop and kept for
 * replay (kv_events.buffer_steps of them, at most kv_events.buffer_bytes):
 * a subscriber that missed some sends the first sequence number it wants,
 * 8 bytes big-endian, to the ROUTER socket at kv_events.replay_endpoint and
 * gets every kept batch from there, one [topic, seq, payload] message each
 * (vLLM 0.26 on; [seq, payload] with kv_events.format = array, as before),
 * then one whose seq is -1 and payload empty. ZMQ bounds what each subscriber may leave unread
 * (kv_events.hwm batches, beyond which PUB drops) and what a peer may send
 * (ZMQ_MAXMSGSIZE): a subscriber can neither stall poold nor make it hold
 * more than its high-water mark of batches of at most KVEV_BATCH_MAX.
 *
 * Both endpoints are bound, whatever their address. vLLM connects to an
 * address without a wildcard instead, for routers that bind and let
 * publishers connect; but then whoever binds that address first gets the
 * events (on loopback, any local user), and a publisher that binds never
 * gives its address away. How many connect is bounded by zmqgate.c
 * (kv_events.max_subscribers, in all and per uid or address, on each
 * socket), so that no one fills poold's fds or memory with connections.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include <event2/event.h>

#include "daemon/kv/kv.h"
#include "daemon/net/net.h"
#include "proto/pool_contract.h"

#define KVEV_BATCH_MAX (64u << 10) /* bytes of events in one batch before it goes out */
#define KVEV_REPLAYS_PER_TURN 16   /* replay requests served before other work gets a turn */
#define KVEV_IN_MAX 256		   /* largest message a subscriber may send (ZMQ_MAXMSGSIZE) */
/* A connection that never completes ZMQ's handshake holds its slot this long (libzmq: 30 s). */
#define KVEV_HANDSHAKE_MS 5000
/* A peer gone without a word (its host down) is found by TCP keepalives in about 2 minutes. */
#define KVEV_KEEPALIVE_IDLE_S 60
#define KVEV_KEEPALIVE_INTVL_S 10
#define KVEV_KEEPALIVE_CNT 6
/*
 * What a subscriber may send over a connection: its handshake and its
 * subscriptions, each of which libzmq files in a trie that only a
 * disconnect empties (zmqgate.c). A router subscribes to one topic.
 */
#define KVEV_SUB_IN_MAX (32u << 10)
#define KVEV_MEDIUM_PMEM "STORAGE" /* vLLM's MEDIUM_STORAGE */

enum { KVEV_PUB, KVEV_REPLAY }; /* the sockets, as zmqgate's */

enum kv_events_kind { KVEV_NONE, KVEV_STORED, KVEV_REMOVED };

/*
 * A published batch. The replay ring holds a reference, and so does each
 * message ZMQ has yet to send of it (zero-copy): ZMQ drops those from its
 * own thread, hence the atomic count.
 */
struct kv_events_batch {
	atomic_uint refs;
	struct kv_events *ev;
	uint64_t seq;
	size_t len;
	char data[];
};

struct kv_events {
	void *ctx, *pub, *replay;
	struct zmqgate *gate[2]; /* KVEV_PUB, KVEV_REPLAY */
	struct event *flush_ev, *replay_ev;
	/* the event being gathered: its kind, tier and hashes, packed */
	enum kv_events_kind kind;
	bool pmem;
	msgpack_sbuffer hashes;
	uint32_t nhashes;
	uint8_t parent[POOL_KV_KEY_MAX]; /* an event cut for size goes on from its last key */
	size_t parent_len;
	bool has_parent;
	uint8_t last[POOL_KV_KEY_MAX];
	size_t last_len;
	/* the batch being gathered: its events, packed */
	msgpack_sbuffer events;
	uint32_t nevents;
	uint64_t seq;
	/* the ring of published batches, and bytes of those out of it that ZMQ still holds */
	struct kv_events_batch **kept;
	size_t cap, head, count, kept_bytes;
	atomic_llong held_bytes;
	uint64_t published, dropped_replays, refused_replays;
	struct log_limit bad_replay;
};

static int kv_events_write(void *data, const char *buf, size_t len)
{
	return msgpack_sbuffer_write(data, buf, len);
}

static void kv_events_pack_str(msgpack_packer *pk, const char *s)
{
	size_t len = strlen(s);

	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

/* A field's name, as its map key (arrays give fields by position). */
static void kv_events_pack_field(msgpack_packer *pk, const struct poold_conf *conf,
				 const char *name)
{
	if (conf->kv_events_format == KV_EVENTS_MAP)
		kv_events_pack_str(pk, name);
}

/* One block hash: the key as an integer (its last 8 bytes, big-endian) or as bytes. */
static void kv_events_pack_hash(msgpack_packer *pk, const struct poold_conf *conf,
				const uint8_t *key, size_t klen)
{
	uint64_t v = 0;
	size_t i;

	if (conf->kv_events_block_hash == KV_EVENTS_HASH_BYTES) {
		msgpack_pack_bin(pk, klen);
		msgpack_pack_bin_body(pk, key, klen);
		return;
	}
	for (i = klen > 8 ? klen - 8 : 0; i < klen; i++)
		v = v << 8 | key[i];
	msgpack_pack_uint64(pk, v);
}

static void kv_events_pack_nullable_str(msgpack_packer *pk, const char *s)
{
	if (s[0] == '\0')
		msgpack_pack_nil(pk);
	else
		kv_events_pack_str(pk, s);
}

/*
 * Close the event being gathered into the batch: BlockStored's fields are
 * block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
 * lora_name (the later optional ones left out, as vLLM leaves out fields at
 * their defaults); BlockRemoved's are block_hashes, medium.
 */
static void kv_events_close_event(struct poold *pd)
{
	const struct poold_conf *conf = pd->conf;
	struct kv_events *ev = pd->kv_events;
	bool stored = ev->kind == KVEV_STORED;
	msgpack_packer pk;

	if (ev->kind == KVEV_NONE)
		return;
	msgpack_packer_init(&pk, &ev->events, kv_events_write);
	if (conf->kv_events_format == KV_EVENTS_MAP)
		msgpack_pack_map(&pk, stored ? 8 : 3);
	else
		msgpack_pack_array(&pk, stored ? 8 : 3);
	kv_events_pack_field(&pk, conf, "type");
	kv_events_pack_str(&pk, stored ? "BlockStored" : "BlockRemoved");
	kv_events_pack_field(&pk, conf, "block_hashes");
	msgpack_pack_array(&pk, ev->nhashes);
	msgpack_sbuffer_write(&ev->events, ev->hashes.data, ev->hashes.size);
	if (stored) {
		kv_events_pack_field(&pk, conf, "parent_block_hash");
		if (ev->has_parent)
			kv_events_pack_hash(&pk, conf, ev->parent, ev->parent_len);
		else
			msgpack_pack_nil(&pk);
		kv_events_pack_field(&pk, conf, "token_ids"); /* the pool sees blocks, not tokens */
		msgpack_pack_array(&pk, 0);
		kv_events_pack_field(&pk, conf, "block_size");
		msgpack_pack_int64(&pk, conf->kv_events_block_size);
		kv_events_pack_field(&pk, conf, "lora_id");
		msgpack_pack_nil(&pk);
	}
	kv_events_pack_field(&pk, conf, "medium");
	kv_events_pack_nullable_str(&pk, ev->pmem ? KVEV_MEDIUM_PMEM : conf->kv_events_medium);
	if (stored) {
		kv_events_pack_field(&pk, conf, "lora_name");
		msgpack_pack_nil(&pk);
	}
	ev->nevents++;
	ev->kind = KVEV_NONE;
	ev->nhashes = 0;
	msgpack_sbuffer_clear(&ev->hashes);
}

/* Drop a reference; what is out of the ring and held by ZMQ alone is counted apart. */
static void kv_events_batch_put(struct kv_events_batch *b, bool from_ring)
{
	if (atomic_fetch_sub(&b->refs, 1) == 1) {
		if (!from_ring)
			atomic_fetch_sub(&b->ev->held_bytes, (long long)b->len);
		free(b);
	} else if (from_ring) {
		atomic_fetch_add(&b->ev->held_bytes, (long long)b->len);
	}
}

/* ZMQ is done with a message of a batch (called from its I/O thread). */
static void kv_events_batch_sent(void *data, void *hint)
{
	(void)data;
	kv_events_batch_put(hint, false);
}

/* Queue a batch's bytes on a socket without copying them; false if ZMQ did not take them. */
static bool kv_events_send_batch(void *sock, struct kv_events_batch *b)
{
	zmq_msg_t m;

	atomic_fetch_add(&b->refs, 1);
	if (zmq_msg_init_data(&m, b->data, b->len, kv_events_batch_sent, b) < 0) {
		kv_events_batch_put(b, false);
		return false;
	}
	if (zmq_msg_send(&m, sock, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m); /* drops the reference */
		return false;
	}
	return true;
}

/* Keep a published batch for replay, dropping the oldest beyond the bounds. */
static void kv_events_keep(struct kv_events *ev, const struct poold_conf *conf,
			   struct kv_events_batch *b)
{
	struct kv_events_batch *old;

	while (ev->count > 0 && (ev->count == ev->cap ||
				 ev->kept_bytes + b->len > (size_t)conf->kv_events_buffer_bytes)) {
		old = ev->kept[ev->head];
		ev->kept_bytes -= old->len;
		ev->head = (ev->head + 1) % ev->cap;
		ev->count--;
		kv_events_batch_put(old, true);
	}
	if (ev->cap == 0 || b->len > (size_t)conf->kv_events_buffer_bytes) {
		kv_events_batch_put(b, true);
		return;
	}
	ev->kept[(ev->head + ev->count) % ev->cap] = b;
	ev->kept_bytes += b->len;
	ev->count++;
}

static void kv_events_seq_bytes(uint64_t seq, uint8_t out[8])
{
	int i;

	for (i = 7; i >= 0; i--, seq >>= 8)
		out[i] = (uint8_t)seq;
}

/* Publish the batch gathered: [ts, [events]], as topic | seq | payload. */
static void kv_events_flush(struct poold *pd)
{
	const struct poold_conf *conf = pd->conf;
	struct kv_events *ev = pd->kv_events;
	struct kv_events_batch *b;
	msgpack_sbuffer head;
	msgpack_packer pk;
	struct timeval tv;
	uint8_t seq[8];

	kv_events_close_event(pd);
	if (ev->nevents == 0)
		return;
	gettimeofday(&tv, NULL);
	msgpack_sbuffer_init(&head);
	msgpack_packer_init(&pk, &head, kv_events_write);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_double(&pk, (double)tv.tv_sec + (double)tv.tv_usec / 1e6);
	msgpack_pack_array(&pk, ev->nevents);
	b = malloc(sizeof(*b) + head.size + ev->events.size);
	if (b == NULL) {
		log_warnx("KV events: out of memory: batch %llu lost", (unsigned long long)ev->seq);
	} else {
		atomic_init(&b->refs, 1);
		b->ev = ev;
		b->seq = ev->seq;
		b->len = head.size + ev->events.size;
		memcpy(b->data, head.data, head.size);
		memcpy(b->data + head.size, ev->events.data, ev->events.size);
		kv_events_seq_bytes(ev->seq, seq);
		/* PUB never blocks: a subscriber past its high-water mark misses the batch. */
		if (zmq_send(ev->pub, conf->kv_events_topic, strlen(conf->kv_events_topic),
			     ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
		    zmq_send(ev->pub, seq, sizeof(seq), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
		    !kv_events_send_batch(ev->pub, b))
			log_warnx("KV events: batch %llu not sent: %s", (unsigned long long)ev->seq,
				  zmq_strerror(zmq_errno()));
		ev->published++;
		kv_events_keep(ev, conf, b);
	}
	msgpack_sbuffer_destroy(&head);
	msgpack_sbuffer_clear(&ev->events);
	ev->nevents = 0;
	ev->seq++;
}

static void kv_events_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	kv_events_flush(arg);
}

/* The batch goes out at the next turn of the loop, with whatever else comes meanwhile. */
static void kv_events_schedule(struct kv_events *ev)
{
	static const struct timeval now = {0, 0};

	if (!evtimer_pending(ev->flush_ev, NULL))
		evtimer_add(ev->flush_ev, &now);
}

/* Whether events of this namespace are published. */
static struct kv_events *kv_events_of(struct poold *pd, const char *ns)
{
	if (pd->kv_events == NULL || pd->stopping || strcmp(ns, pd->conf->kv_events_namespace) != 0)
		return NULL;
	return pd->kv_events;
}

static void kv_events_add(struct poold *pd, enum kv_events_kind kind, bool pmem, const uint8_t *key,
			  size_t klen)
{
	struct kv_events *ev = pd->kv_events;
	msgpack_packer pk;

	if (ev->kind != kind || ev->pmem != pmem) {
		kv_events_close_event(pd);
		ev->has_parent = false;
	}
	if (ev->events.size + ev->hashes.size >= KVEV_BATCH_MAX) {
		bool chain = ev->kind == KVEV_STORED;

		kv_events_flush(pd);
		if (chain) { /* the rest of the request's keys go on from the last one */
			memcpy(ev->parent, ev->last, ev->last_len);
			ev->parent_len = ev->last_len;
			ev->has_parent = true;
		}
	}
	ev->kind = kind;
	ev->pmem = pmem;
	msgpack_packer_init(&pk, &ev->hashes, kv_events_write);
	kv_events_pack_hash(&pk, pd->conf, key, klen);
	ev->nhashes++;
	memcpy(ev->last, key, klen);
	ev->last_len = klen;
	kv_events_schedule(ev);
}

/* A key of namespace ns became present (its value in the pmem tier, or DRAM). */
void kv_events_stored(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool pmem)
{
	if (kv_events_of(pd, ns) != NULL && klen <= POOL_KV_KEY_MAX)
		kv_events_add(pd, KVEV_STORED, pmem, key, klen);
}

/* A key of namespace ns is gone (its value was in the pmem tier, or DRAM). */
void kv_events_removed(struct poold *pd, const char *ns, const uint8_t *key, size_t klen, bool pmem)
{
	if (kv_events_of(pd, ns) != NULL && klen <= POOL_KV_KEY_MAX)
		kv_events_add(pd, KVEV_REMOVED, pmem, key, klen);
}

/* A key's value moved to the pmem tier (to_pmem) or back to DRAM: gone from one, in the other. */
void kv_events_moved(struct poold *pd, const char *ns, const uint8_t *key, size_t klen,
		     bool to_pmem)
{
	if (kv_events_of(pd, ns) == NULL || klen > POOL_KV_KEY_MAX)
		return;
	kv_events_add(pd, KVEV_REMOVED, !to_pmem, key, klen);
	kv_events_end(pd);
	kv_events_add(pd, KVEV_STORED, to_pmem, key, klen);
	kv_events_end(pd); /* (not a chain: a key of its own) */
}

/* Every key of namespace ns is gone (flushed or dropped). */
void kv_events_cleared(struct poold *pd, const char *ns)
{
	struct kv_events *ev = kv_events_of(pd, ns);
	msgpack_packer pk;

	if (ev == NULL)
		return;
	kv_events_close_event(pd);
	msgpack_packer_init(&pk, &ev->events, kv_events_write);
	if (pd->conf->kv_events_format == KV_EVENTS_MAP) {
		msgpack_pack_map(&pk, 1);
		kv_events_pack_str(&pk, "type");
	} else {
		msgpack_pack_array(&pk, 1);
	}
	kv_events_pack_str(&pk, "AllBlocksCleared");
	ev->nevents++;
	kv_events_schedule(ev);
}

/* The keys given so far were one request's: the next ones start an event of their own. */
void kv_events_end(struct poold *pd)
{
	if (pd->kv_events == NULL)
		return;
	kv_events_close_event(pd);
	pd->kv_events->has_parent = false;
}

/*
 * The frames of a replayed message before its payload: the peer's identity
 * and the empty delimiter (which ROUTER and REQ or DEALER take off), then
 * topic and seq as the live messages have them (vLLM 0.26 and later, whose
 * events are maps), or seq alone (earlier versions, kv_events.format = array).
 */
static void kv_events_replay_head(struct poold *pd, zmq_msg_t *identity, const uint8_t seq[8])
{
	const char *topic = pd->conf->kv_events_topic;
	void *sock = pd->kv_events->replay;

	zmq_send(sock, zmq_msg_data(identity), zmq_msg_size(identity), ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	if (pd->conf->kv_events_format == KV_EVENTS_MAP)
		zmq_send(sock, topic, strlen(topic), ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(sock, seq, 8, ZMQ_SNDMORE | ZMQ_DONTWAIT);
}

/*
 * Answer one replay request: [identity, "", seq(8)] -> each kept batch from seq on, then the end.
 */
static void kv_events_replay_one(struct poold *pd)
{
	struct kv_events *ev = pd->kv_events;
	zmq_msg_t part[3], extra;
	size_t n = 0, i;
	bool toolong = false;
	int more;
	uint8_t end[8], seqb[8];
	uint64_t start = 0;

	/* Read every part (a message arrives whole); keep the first three. */
	for (;;) {
		zmq_msg_t *m = n < 3 ? &part[n] : &extra;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, ev->replay, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(m);
			break;
		}
		more = zmq_msg_more(m);
		if (n < 3) {
			n++;
		} else {
			zmq_msg_close(m);
			toolong = true;
		}
		if (!more)
			break;
	}
	if (n != 3 || toolong || zmq_msg_size(&part[1]) != 0 || zmq_msg_size(&part[2]) != 8) {
		ev->dropped_replays++;
		log_warnx_limited(&ev->bad_replay, 60000,
				  "KV events: a malformed replay request ignored");
		goto out;
	}
	for (i = 0; i < 8; i++)
		start = start << 8 | ((const uint8_t *)zmq_msg_data(&part[2]))[i];
	/*
	 * The batches are sent without copies, so a replay costs references,
	 * not memory, while they are in the ring. Batches that left it and that
	 * slow replays and subscribers still hold are bounded: past
	 * kv_events.buffer_bytes of them, a replay gets only the end marker
	 * (and asks again) until those are sent.
	 */
	if (atomic_load(&ev->held_bytes) > pd->conf->kv_events_buffer_bytes) {
		ev->refused_replays++;
		log_warnx_limited(&ev->bad_replay, 60000,
				  "KV events: a replay refused: "
				  "%lld bytes of batches out of the ring are still being sent",
				  (long long)atomic_load(&ev->held_bytes));
		goto out_end;
	}
	/* ROUTER drops what a peer past its high-water mark cannot take: it never blocks. */
	for (i = 0; i < ev->count; i++) {
		struct kv_events_batch *k = ev->kept[(ev->head + i) % ev->cap];

		if (k->seq < start)
			continue;
		kv_events_seq_bytes(k->seq, seqb);
		kv_events_replay_head(pd, &part[0], seqb);
		kv_events_send_batch(ev->replay, k);
	}
out_end:
	memset(end, 0xff, sizeof(end)); /* -1: the end of the replay */
	kv_events_replay_head(pd, &part[0], end);
	zmq_send(ev->replay, "", 0, ZMQ_DONTWAIT);
out:
	for (i = 0; i < n; i++)
		zmq_msg_close(&part[i]);
}

/*
 * The replay socket's ZMQ_FD is readable: serve what waits. That fd only
 * signals a change, so after a batch of requests, if more wait, this runs
 * again at once rather than waiting for a signal that will not come.
 */
static void kv_events_replay_cb(evutil_socket_t fd, short what, void *arg)
{
	struct poold *pd = arg;
	struct kv_events *ev = pd->kv_events;
	unsigned served;
	int events = 0;
	size_t len;

	(void)fd;
	(void)what;
	for (served = 0;; served++) {
		len = sizeof(events);
		if (zmq_getsockopt(ev->replay, ZMQ_EVENTS, &events, &len) < 0 ||
		    !(events & ZMQ_POLLIN))
			return;
		if (served == KVEV_REPLAYS_PER_TURN)
			break;
		kv_events_replay_one(pd);
	}
	event_active(ev->replay_ev, EV_READ, 0);
}

static void *kv_events_socket(struct kv_events *ev, int type, int hwm, const char *endpoint)
{
	void *s = zmq_socket(ev->ctx, type);
	int64_t in_max = KVEV_IN_MAX;
	int zero = 0, one = 1, ipv6 = strchr(endpoint, '[') != NULL,
	    rcvhwm = type == ZMQ_PUB ? 1 : 1000, handshake = KVEV_HANDSHAKE_MS,
	    idle = KVEV_KEEPALIVE_IDLE_S, intvl = KVEV_KEEPALIVE_INTVL_S, cnt = KVEV_KEEPALIVE_CNT;

	if (s == NULL)
		return NULL;
	/*
	 * A PUB reads a subscriber's subscriptions one at a time: see
	 * KVEV_SUB_IN_MAX. An IPv6 address ([::1], [::]) is bound with
	 * ZMQ_IPV6, which libzmq needs for it; IPv4 ones and * stay IPv4 only,
	 * as vLLM binds them.
	 */
	if (zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_setsockopt(s, ZMQ_IPV6, &ipv6, sizeof(ipv6)) < 0 ||
	    zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm)) < 0 ||
	    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &in_max, sizeof(in_max)) < 0 ||
	    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero)) < 0 ||
	    zmq_setsockopt(s, ZMQ_HANDSHAKE_IVL, &handshake, sizeof(handshake)) < 0 ||
	    zmq_setsockopt(s, ZMQ_TCP_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    zmq_setsockopt(s, ZMQ_TCP_KEEPALIVE_IDLE, &idle, sizeof(idle)) < 0 ||
	    zmq_setsockopt(s, ZMQ_TCP_KEEPALIVE_INTVL, &intvl, sizeof(intvl)) < 0 ||
	    zmq_setsockopt(s, ZMQ_TCP_KEEPALIVE_CNT, &cnt, sizeof(cnt)) < 0) {
		int err = zmq_errno(); /* for the caller to say */

		zmq_close(s);
		errno = err;
		return NULL;
	}
	return s;
}

/*
 * A socket of the given type bound to endpoint (the value of option), its
 * connections bounded by a gate watching it from before the bind; 0, or
 * -errno said in the log.
 */
/*
 * Whether something listens on endpoint's path, when it is an ipc:// one:
 * libzmq removes the path before it binds it, so another poold's socket
 * there (nodes that share a host and a configuration) would be taken over
 * without a word, its subscribers left with no events.
 */
static bool kv_events_ipc_taken(const char *endpoint)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(endpoint);
	bool taken;
	int fd;

	if (strncmp(endpoint, "ipc://", 6) != 0 || len - 6 >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, endpoint + 6, len - 6);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	taken = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return taken;
}

static int kv_events_listen(struct poold *pd, int which, int type, int hwm, const char *endpoint,
			    const char *option, void **ret)
{
	static const char *const what[] = {"KV events", "KV events replay"};
	const struct poold_conf *conf = pd->conf;
	const struct zmqgate_limits lim = {
	    (unsigned)conf->kv_events_max_subscribers,
	    (unsigned)conf->kv_events_max_subscribers_per_uid,
	    (unsigned)conf->kv_events_max_subscribers_per_addr,
	    which == KVEV_PUB ? KVEV_SUB_IN_MAX : 0,
	    what[which],
	    "kv_events.max_subscribers",
	    "kv_events.max_subscribers_per_uid",
	    "kv_events.max_subscribers_per_addr",
	};
	struct kv_events *ev = pd->kv_events;
	void *s;
	int rc;

	if (kv_events_ipc_taken(endpoint)) {
		log_warnx("%s %s: another process listens there (one poold an address)", option,
			  endpoint);
		return -EADDRINUSE;
	}
	if ((s = kv_events_socket(ev, type, hwm, endpoint)) == NULL) {
		log_warnx("%s: %s", option, zmq_strerror(zmq_errno()));
		return -ENOMEM;
	}
	rc = zmqgate_open(pd, ev->ctx, s, &lim, &ev->gate[which]);
	if (rc < 0) {
		zmq_close(s);
		return rc;
	}
	if (zmq_bind(s, endpoint) < 0) {
		log_warnx("%s %s: %s (it is bound, never connected to)", option, endpoint,
			  zmq_strerror(zmq_errno()));
		zmqgate_close(ev->gate[which]);
		ev->gate[which] = NULL;
		zmq_close(s);
		return -EINVAL;
	}
	*ret = s;
	return 0;
}

/* Start publishing if kv_events.endpoint is set (at a node: for a sharded namespace). */
int kv_events_open(struct poold *pd)
{
	const struct poold_conf *conf = pd->conf;
	struct kv_events *ev;
	int fd, rc = -ENOMEM;
	size_t len = sizeof(fd);

	if (conf->kv_events_endpoint[0] == '\0')
		return 0;
	if (conf->kv_events_namespace[0] == '\0') {
		log_warnx("kv_events.endpoint is set but kv_events.namespace is not: no KV events");
		return 0;
	}
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL)
		return -ENOMEM;
	pd->kv_events = ev;
	msgpack_sbuffer_init(&ev->hashes);
	msgpack_sbuffer_init(&ev->events);
	ev->cap = (size_t)conf->kv_events_buffer_steps;
	if (ev->cap > 0 && (ev->kept = calloc(ev->cap, sizeof(*ev->kept))) == NULL)
		goto out_close;
	ev->flush_ev = evtimer_new(pd->base, kv_events_flush_cb, pd);
	ev->ctx = zmq_ctx_new();
	if (ev->flush_ev == NULL || ev->ctx == NULL)
		goto out_close;
	zmq_ctx_set(ev->ctx, ZMQ_BLOCKY, 0);
	rc = kv_events_listen(pd, KVEV_PUB, ZMQ_PUB, (int)conf->kv_events_hwm,
			      conf->kv_events_endpoint, "kv_events.endpoint", &ev->pub);
	if (rc < 0)
		goto out_close;
	if (conf->kv_events_replay_endpoint[0] != '\0') {
		/* A whole replay fits in a peer's queue: it costs references, not copies. */
		rc = kv_events_listen(
		    pd, KVEV_REPLAY, ZMQ_ROUTER, (int)conf->kv_events_buffer_steps + 2,
		    conf->kv_events_replay_endpoint, "kv_events.replay_endpoint", &ev->replay);
		if (rc < 0)
			goto out_close;
		rc = -ENOMEM;
		if (zmq_getsockopt(ev->replay, ZMQ_FD, &fd, &len) < 0) {
			log_warnx("kv_events.replay_endpoint: %s", zmq_strerror(zmq_errno()));
			goto out_close;
		}
		ev->replay_ev =
		    event_new(pd->base, fd, EV_READ | EV_PERSIST, kv_events_replay_cb, pd);
		if (ev->replay_ev == NULL || event_add(ev->replay_ev, NULL) < 0)
			goto out_close;
		event_active(ev->replay_ev, EV_READ, 0); /* what came before the fd was watched */
	}
	/*
	 * Whatever routers knew of the index of a coordinator before this one
	 * is void: what the lenders still hold comes back as BlockStored when
	 * they rejoin. A subscriber that sees the sequence start again at 0
	 * replays from there to get this first.
	 */
	kv_events_cleared(pd, conf->kv_events_namespace);
	log_info("KV events of namespace '%s' on %s%s%s", conf->kv_events_namespace,
		 conf->kv_events_endpoint, ev->replay != NULL ? ", replay on " : "",
		 conf->kv_events_replay_endpoint);
	return 0;
out_close:
	kv_events_close(pd);
	return rc;
}

/* Stop publishing; what is gathered and not yet sent is dropped. */
void kv_events_close(struct poold *pd)
{
	struct kv_events *ev = pd->kv_events;
	size_t i;

	if (ev == NULL)
		return;
	if (ev->replay_ev != NULL)
		event_free(ev->replay_ev);
	if (ev->flush_ev != NULL)
		event_free(ev->flush_ev);
	zmqgate_close(ev->gate[KVEV_REPLAY]);
	zmqgate_close(ev->gate[KVEV_PUB]);
	if (ev->replay != NULL)
		zmq_close(ev->replay);
	if (ev->pub != NULL)
		zmq_close(ev->pub);
	if (ev->ctx != NULL)
		zmq_ctx_term(ev->ctx);
	for (i = 0; i < ev->count; i++)
		kv_events_batch_put(ev->kept[(ev->head + i) % ev->cap], true);
	free(ev->kept);
	msgpack_sbuffer_destroy(&ev->hashes);
	msgpack_sbuffer_destroy(&ev->events);
	free(ev);
	pd->kv_events = NULL;
}

/* What the metrics tell; false when no events are published. */
bool kv_events_stats(const struct poold *pd, struct kv_events_stats *ret)
{
	const struct kv_events *ev = pd->kv_events;
	int i;

	if (ev == NULL)
		return false;
	*ret =
	    (struct kv_events_stats){.published = ev->published,
				     .kept = ev->count,
				     .kept_bytes = ev->kept_bytes,
				     .held_bytes = (uint64_t)MAX(atomic_load(&ev->held_bytes), 0),
				     .bad_replays = ev->dropped_replays,
				     .refused_replays = ev->refused_replays};
	for (i = KVEV_PUB; i <= KVEV_REPLAY; i++)
		if (ev->gate[i] != NULL)
			zmqgate_stats(ev->gate[i], &ret->connections[i],
				      &ret->refused_connections[i]);
	return true;
}

/*
 * daemon/kv/kv-handover.c - a moved KV shard's keys, from its last owner to
 * its new one: the new owner asks (a call on the link between their
 * poolds, nodecall.c), the last owner answers with the keys and values of
 * the shards asked for, about a MiB at a time from where its last answer
 * stopped, and lets each go once it is in an answer; a value longer than
 * an answer goes in pieces. The new owner puts each in as its own (a
 * reservation and a commit, counted against the same uid, with the same
 * expiry) and serves the shards once their last owner said it has no more
 * of them (kv-owner.c holds them back meanwhile: nobody writes them there,
 * so what comes replaces what is there).
 *
 * The last owner answers -EAGAIN while its map still gives it a shard
 * asked for (the change has not reached it yet), and its link refuses a
 * node whose registration it has not heard of yet: asked again after
 * KVHANDOVER_RETRY_MS. It gives a shard's keys only to the shard's owner
 * in its own map. An answer whose link closes is lost with its keys (one
 * of the two poolds is going); a hand-over without an answer for
 * KVHANDOVER_STALL_MS is given up, its shards served with what came.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/control/control.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/lend/lend.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"

#define KVHANDOVER_BYTES (1u << 20)	 /* an answer's keys and values, about */
#define KVHANDOVER_ANSWER_MAX (2u << 20) /* ... packed, at most */
#define KVHANDOVER_SLICE_US 1000	 /* the last owner's walk for one answer, at most */
#define KVHANDOVER_ENTRY_COST 32	 /* an entry's framing, counted with its bytes */
#define KVHANDOVER_RETRY_MS 50		 /* after -EAGAIN */
#define KVHANDOVER_STALL_MS 10000	 /* no answer for this long: given up */
#define KVHANDOVER_HOPS 4		 /* members asked for a shard after the first had none */
#define KVHANDOVER_SESSION UINT64_MAX	 /* the session its reservations are made for */
#define KVHANDOVER_SHARD_BYTES (KV_SHARDS / 8)

/* What a new owner asks of one last owner, while it asks. */
struct kvhandover {
	TAILQ_ENTRY(kvhandover) entry;
	struct poold *pd; /* NULL: this poold stops, freed when its answer comes */
	uint32_t node;	  /* the last owner */
	uint8_t shards[KVHANDOVER_SHARD_BYTES]; /* asked for in the walk under way */
	/* Where the last answer stopped: a namespace, a bucket, a value cut at offset. */
	char ns[POOL_REGION_NAME_MAX + 1];
	uint64_t bucket, offset;
	uint8_t *key;
	size_t klen;
	bool in_flight;
	uint64_t asked_ms, retry_ms;
	uint64_t answered_ms; /* its last answer with keys (or when first asked) */
	struct kv_part part;
};

static void kv_handover_free(struct kvhandover *h)
{
	free(h->key);
	free(h->part.key);
	free(h);
}

/* A copy of len bytes into *to (freeing what was there); false when out of memory. */
static bool kv_handover_keep(uint8_t **to, size_t *to_len, const void *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (copy == NULL)
		return false;
	memcpy(copy, data, len);
	free(*to);
	*to = copy;
	*to_len = len;
	return true;
}

/* The shards arriving from node that may be asked for now (not dropping here). */
static bool kv_handover_wanted(struct poold *pd, uint32_t node, uint8_t *ret)
{
	struct kv_space *kv = pd->kv;
	bool any = false;
	uint32_t s;

	memset(ret, 0, KVHANDOVER_SHARD_BYTES);
	for (s = 0; s < KV_SHARDS; s++)
		if (kv->from[s] == node && !kv_owner_bit(kv->dropping, s)) {
			kv_owner_set(ret, s, true);
			any = true;
		}
	return any;
}

/*
 * Forget the value coming in pieces (its reservation is given back): true
 * when there was one.
 */
bool kv_handover_part_end(struct poold *pd, struct kv_part *part)
{
	struct kv_caller who = {pd->node_id, KVHANDOVER_SESSION, 0};
	struct kv_ns *ns = part->version != 0 ? kv_ns_by_id(pd, part->ns) : NULL;
	struct kv_result res;

	if (ns != NULL)
		kv_key_op(pd, ns, &who, KV_ABORT, part->key, part->klen, part->version, &res);
	part->version = 0;
	return ns != NULL;
}

/* A hand-over's value cut short is lost. */
static void kv_handover_cut(struct poold *pd, struct kvhandover *h)
{
	if (kv_handover_part_end(pd, &h->part))
		pd->kv->keys_lost++;
}

/* Where the value coming in pieces takes bytes [off, off + len), or NULL (it went). */
static void *kv_handover_part_bytes(struct poold *pd, struct kv_ns *ns, const struct kv_part *part,
				    uint64_t off, uint64_t len)
{
	struct kv_entry *e = *kv_slot(ns, part->key, part->klen, kv_hash(part->key, part->klen));
	struct kv_write *w = e != NULL ? kv_pending(e) : NULL;
	void *p;

	if (w == NULL || w->val.version != part->version ||
	    kvstore_reach(pd, w->val.off, off, len, &p) < 0)
		return NULL;
	return p;
}

/* Publish a value that came (its last piece did), with its expiry and pin. 0 or -errno. */
static int kv_handover_commit(struct poold *pd, struct kv_ns *ns, const struct kv_caller *who,
			      const Pool__KvHandoverEntry *in, uint64_t version)
{
	struct kv_entry *e;
	struct kv_result res;

	kv_key_op(pd, ns, who, KV_COMMIT, in->key.data, in->key.len, version, &res);
	kv_events_end(pd); /* (its event, if told of, is not a chain with the next key's) */
	if (res.status < 0)
		return res.status;
	e = *kv_slot(ns, in->key.data, in->key.len, kv_hash(in->key.data, in->key.len));
	if (e != NULL && in->has_expire_at && in->expire_at > 0)
		(void)kv_set_expire(ns, e, in->expire_at);
	if (e != NULL && e->has_val)
		(void)kv_retain_set(ns, e,
				    in->has_retain && in->retain <= POOL__KV_RETAIN__KV_RETAIN_HARD
					? (enum kv_retain)in->retain
					: KV_RETAIN_NONE,
				    in->has_retain_until ? in->retain_until : 0);
	return 0;
}

/*
 * A key that came, or a piece of its value (part: the value under way): put
 * in as this poold's, for the uid it counts against, replacing what is
 * there. 0, or -errno (it is lost).
 */
int kv_handover_put(struct poold *pd, struct kv_part *part, struct kv_ns *ns,
		    const Pool__KvHandoverEntry *in)
{
	struct kv_caller who = {pd->node_id, KVHANDOVER_SESSION, in->owner};
	const ProtobufCBinaryData *key = &in->key;
	struct kv_result res;
	uint64_t version;
	void *dst;

	if (in->size > POOL_KV_VALUE_MAX || in->offset > in->size ||
	    in->value.len > in->size - in->offset)
		return -EINVAL; /* (not a value) */
	if (in->offset > 0) {	/* the next piece of the value under way */
		if (part->version == 0 || part->ns != ns->id || key->len != part->klen ||
		    memcmp(key->data, part->key, part->klen) != 0 || in->offset != part->got)
			return -EINVAL;
		if ((dst = kv_handover_part_bytes(pd, ns, part, in->offset, in->value.len)) ==
		    NULL) {
			part->version = 0;
			return -ESTALE;
		}
		memcpy(dst, in->value.data, in->value.len);
		part->got += in->value.len;
		if (part->got < in->size)
			return 0;
		version = part->version;
		part->version = 0;
		return kv_handover_commit(pd, ns, &who, in, version);
	}
	kv_handover_part_end(pd, part); /* (a new value: the one cut short is lost) */
	kv_key_op(pd, ns, &who, KV_RESERVE, key->data, key->len, in->size, &res);
	if (res.status < 0)
		return res.status;
	if (kvstore_reach(pd, res.val.off, 0, in->value.len, &dst) < 0) {
		kv_key_op(pd, ns, &who, KV_ABORT, key->data, key->len, res.val.version, &res);
		return -EFAULT;
	}
	memcpy(dst, in->value.data, in->value.len);
	if (in->value.len == in->size)
		return kv_handover_commit(pd, ns, &who, in, res.val.version);
	if (!kv_handover_keep(&part->key, &part->klen, key->data, key->len)) {
		kv_key_op(pd, ns, &who, KV_ABORT, key->data, key->len, res.val.version, &res);
		return -ENOMEM;
	}
	part->ns = ns->id;
	part->version = res.val.version;
	part->got = in->value.len;
	return 0;
}

/* A key of a moved shard that came from h's node, or a piece of its value. 0 or -errno. */
static int kv_handover_take_one(struct poold *pd, struct kvhandover *h, struct kv_ns *ns,
				const Pool__KvHandoverEntry *in)
{
	uint32_t shard = kv_shard_of(ns->name, in->key.data, in->key.len);
	bool whole = in->offset + in->value.len == in->size;
	int rc;

	/* (arriving from there, or lost meanwhile: what comes of it goes on to its new owner) */
	if (pd->kv->from[shard] != h->node &&
	    !(kv_owner_bit(pd->kv->leaving, shard) && pd->kv->rest[shard] == h->node))
		return -EINVAL; /* (not coming from there any more) */
	rc = kv_handover_put(pd, &h->part, ns, in);
	pd->kv->keys_in += rc == 0 && whole;
	return rc;
}

static void kv_handover_ask(struct poold *pd, struct kvhandover *h);
static void kv_handover_kick(struct poold *pd);

/*
 * The shards asked of h's node arrived (its walk is done): they are served
 * from now on, but for those whose rest another node keeps (asked next).
 */
static void kv_handover_arrived(struct poold *pd, struct kvhandover *h)
{
	struct kv_space *kv = pd->kv;
	uint32_t s;

	for (s = 0; s < KV_SHARDS; s++) {
		if (!kv_owner_bit(h->shards, s) || kv->from[s] != h->node)
			continue;
		kv->from[s] =
		    kv->then[s] != pd->node_id && kv_owner_alive(pd, kv->then[s]) ? kv->then[s] : 0;
		kv->then[s] = 0;
		kv->hops[s] = 0;
	}
}

/*
 * The shards h's node handed over whole and backs now: it kept their keys
 * (kv-backup.c), the same as came, as none was written meanwhile.
 */
static void kv_handover_backed(struct poold *pd, const struct kvhandover *h)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	uint32_t s;

	for (s = 0; s < KV_SHARDS && map->nowners > 1; s++)
		if (kv_owner_bit(h->shards, s) && pd->kv->from[s] == h->node &&
		    pd->kv->then[s] == 0 && map->second[s] == h->node)
			pd->kv->copied_to[s] = h->node;
}

/* Ask again after a while (the last owner had not seen the map change yet). */
static void kv_handover_later(struct poold *pd, struct kvhandover *h, uint64_t ms)
{
	struct timeval tv = units_timeval(ms);

	h->retry_ms = units_now_ms() + ms;
	evtimer_add(pd->kv->handover_ev, &tv);
}

/*
 * The next member to ask for shard s, the one asked (node) having none of
 * it: down the shard's rendezvous order over the members up that keep
 * memory for shards (when several joined at once, the last owner worked
 * out may have joined with this one), at most KVHANDOVER_HOPS of them; 0
 * when none is left to ask.
 */
static uint32_t kv_handover_next(struct poold *pd, uint32_t s, uint32_t node)
{
	struct member *m;
	uint32_t *ids, next = 0;
	size_t n = 0;

	TAILQ_FOREACH(m, &pd->members, entry)
		n++;
	if ((ids = malloc((n ? n : 1) * sizeof(*ids))) == NULL)
		return 0;
	n = 0;
	TAILQ_FOREACH(m, &pd->members, entry)
		if (m->state != MEMBER_DEAD && m->info->kv_shard_size > 0 &&
		    m->info->id != pd->node_id)
			ids[n++] = m->info->id;
	while (next == 0 && pd->kv->hops[s] < KVHANDOVER_HOPS) {
		next = kv_shard_rank(s, ids, n, pd->kv->hops[s]++);
		if (next == 0)
			break;
		if (next == node)
			next = 0;
	}
	free(ids);
	return next;
}

/* The last owner's keys of one namespace, and where its walk goes on. */
static void kv_handover_take(struct poold *pd, struct kvhandover *h,
			     const Pool__KvHandoverReply *rep)
{
	struct kv_ns *ns = kv_ns_find(pd, rep->ns);
	const char *next = rep->next_ns != NULL ? rep->next_ns : rep->ns;
	size_t i, lost = 0;
	int rc, why = 0;
	uint32_t s;

	for (s = 0; rep->has_absent && rep->absent.len == KVHANDOVER_SHARD_BYTES && s < KV_SHARDS;
	     s++)
		if (kv_owner_bit(rep->absent.data, s) && pd->kv->from[s] == h->node) {
			pd->kv->from[s] = kv_handover_next(pd, s, h->node);
			log_debug("KV shards: node %u has none of shard %u: %s %u", h->node, s,
				  pd->kv->from[s] != 0 ? "asking node" : "served, none left to ask",
				  pd->kv->from[s]);
		}
	for (i = 0; i + 1 < rep->n_rest; i += 2)
		if (rep->rest[i] < KV_SHARDS && pd->kv->from[rep->rest[i]] == h->node)
			pd->kv->then[rep->rest[i]] = rep->rest[i + 1];
	for (i = 0; i < rep->n_entries; i++) {
		rc = ns == NULL || !(ns->flags & HOLD_NS_SHARDED)
			 ? -ENOENT
			 : kv_handover_take_one(pd, h, ns, rep->entries[i]);
		if (rc < 0 && rep->entries[i]->offset == 0) {
			pd->kv->keys_lost++;
			lost++;
			why = rc;
		}
	}
	if (lost > 0)
		log_warnx("KV shards: %zu key(s) from node %u could not be taken in: %s", lost,
			  h->node, err_str(why));
	snprintf(h->ns, sizeof(h->ns), "%s", next);
	h->bucket = rep->has_bucket ? rep->bucket : 0;
	h->offset = rep->has_offset ? rep->offset : 0;
	free(h->key);
	h->key = NULL;
	if (rep->has_key && !kv_handover_keep(&h->key, &h->klen, rep->key.data, rep->key.len))
		h->offset = 0; /* (out of memory: the cut value again from its start) */
}

/* The last owner's answer (from the loop). */
static void kv_handover_answer(struct poold *pd, void *arg, int status, uint16_t type,
			       const uint8_t *bytes, size_t len)
{
	struct kvhandover *h = arg;
	ProtobufCMessage *msg = NULL;

	h->in_flight = false;
	if (h->pd == NULL) { /* (this poold stops) */
		kv_handover_free(h);
		return;
	}
	status = nodecall_reply(status, type, bytes, len, WIRE_KV_HANDOVER_REPLY, &msg);
	/*
	 * -EAGAIN: its map has not changed yet; -EACCES: it does not know
	 * this poold's registration yet (a node that joined): asked again.
	 */
	if (status == -EAGAIN || status == -EACCES) {
		status = -EAGAIN;
		kv_handover_later(pd, h, KVHANDOVER_RETRY_MS);
	} else if (status < 0) {
		log_warnx("KV shards: node %u did not hand their keys over: %s; served without "
			  "them",
			  h->node, err_str(status));
		kv_handover_cut(pd, h);
		kv_handover_arrived(pd, h);
	} else {
		const Pool__KvHandoverReply *rep = (const Pool__KvHandoverReply *)msg;

		h->answered_ms = units_now_ms();
		kv_handover_take(pd, h, rep);
		if (rep->done) {
			kv_handover_cut(pd, h);
			kv_handover_backed(pd, h);
			kv_handover_arrived(pd, h);
			h->ns[0] = '\0';
			h->bucket = h->offset = 0;
		}
	}
	if (msg != NULL)
		wire_msg_free(msg);
	if (status != -EAGAIN)
		kv_handover_ask(pd, h);
	kv_handover_kick(pd); /* (shards it had none of are asked of the next member) */
}

/*
 * Ask h's node for the next answer, if shards still arrive from it: a new
 * walk from the start when more came meanwhile; h goes when none is left.
 */
static void kv_handover_ask(struct poold *pd, struct kvhandover *h)
{
	Pool__KvHandoverRequest req = POOL__KV_HANDOVER_REQUEST__INIT;
	struct nodecall_as as = {0, 0, 0, true, 0};
	uint8_t want[KVHANDOVER_SHARD_BYTES];
	int rc;

	if (!kv_handover_wanted(pd, h->node, want)) {
		TAILQ_REMOVE(&pd->kv->handovers, h, entry);
		kv_handover_cut(pd, h);
		kv_handover_free(h);
		return;
	}
	for (size_t i = 0; i < sizeof(want); i++)
		if (want[i] & ~h->shards[i]) { /* more came: a walk from the start for them */
			h->ns[0] = '\0';
			h->bucket = h->offset = 0;
			break;
		}
	memcpy(h->shards, want, sizeof(want));
	req.shards = (ProtobufCBinaryData){sizeof(h->shards), h->shards};
	req.ns = h->ns[0] != '\0' ? h->ns : NULL;
	req.has_bucket = req.ns != NULL;
	req.bucket = h->bucket;
	req.has_key = req.has_offset = h->key != NULL;
	req.key = (ProtobufCBinaryData){h->klen, h->key};
	req.offset = h->offset;
	rc = nodecall_send(pd, h->node, &as, WIRE_KV_HANDOVER, &req.base, KVHANDOVER_ANSWER_MAX,
			   kv_handover_answer, h);
	if (rc < 0) {
		log_warnx("KV shards: cannot ask node %u for their keys: %s; asked again", h->node,
			  err_str(rc));
		kv_handover_later(pd, h, KVHANDOVER_RETRY_MS * 10);
		return;
	}
	h->in_flight = true;
	h->asked_ms = units_now_ms();
}

/*
 * Ask every last owner whose shards arrive here and is not asked yet; give
 * up on one that sent no keys for KVHANDOVER_STALL_MS (its shards served
 * with what came). From the owner sweep and after each change of the map.
 */
static void kv_handover_kick(struct poold *pd)
{
	struct kv_space *kv = pd->kv;
	struct kvhandover *h = NULL, *next;
	uint64_t now = units_now_ms();
	uint32_t s;

	if (kv == NULL)
		return;
	for (s = 0; s < KV_SHARDS; s++) {
		if (kv->from[s] == 0 || kv_owner_bit(kv->dropping, s) ||
		    (h != NULL && h->node == kv->from[s]))
			continue; /* (the last shard's last owner: asked already) */
		TAILQ_FOREACH(h, &kv->handovers, entry)
			if (h->node == kv->from[s])
				break;
		if (h == NULL && (h = calloc(1, sizeof(*h))) != NULL) {
			h->pd = pd;
			h->node = kv->from[s];
			h->answered_ms = now;
			TAILQ_INSERT_TAIL(&kv->handovers, h, entry);
			log_info("KV shards: asking node %u for the keys of its shards now here",
				 h->node);
		}
	}
	for (h = TAILQ_FIRST(&kv->handovers); h != NULL; h = next) {
		next = TAILQ_NEXT(h, entry);
		if (now - h->answered_ms >= KVHANDOVER_STALL_MS) {
			log_warnx("KV shards: no keys from node %u for %u ms; its shards served "
				  "without what it still had",
				  h->node, KVHANDOVER_STALL_MS);
			kv_handover_arrived(pd, h);
			kv_handover_cut(pd, h);
			TAILQ_REMOVE(&kv->handovers, h, entry);
			if (h->in_flight)
				h->pd = NULL; /* (freed when its answer comes) */
			else
				kv_handover_free(h);
		} else if (!h->in_flight && now >= h->retry_ms) {
			kv_handover_ask(pd, h);
		}
	}
}

static void kv_handover_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	kv_handover_kick(arg);
}

/*
 * The last owner's part: the keys of the shards asked for that it lost to
 * the asker, from where its last answer stopped, about KVHANDOVER_BYTES
 * of them; each one in the answer leaves this poold.
 */
struct kv_handover_walk {
	uint8_t give[KVHANDOVER_SHARD_BYTES];
	Pool__KvHandoverEntry *entries;
	Pool__KvHandoverEntry **ptrs;
	struct kv_entry **gone; /* handed whole: cleared once the answer is packed */
	size_t n, ngone, cap;
	uint64_t bytes;
};

static bool kv_handover_grow(struct kv_handover_walk *w)
{
	size_t cap = w->cap ? w->cap * 2 : 256;
	Pool__KvHandoverEntry *entries = realloc(w->entries, cap * sizeof(*entries));

	if (entries != NULL)
		w->entries = entries;
	if (entries == NULL || (w->ptrs = realloc(w->ptrs, cap * sizeof(*w->ptrs))) == NULL ||
	    (w->gone = realloc(w->gone, cap * sizeof(*w->gone))) == NULL)
		return false;
	w->cap = cap;
	return true;
}

void kv_handover_entry(Pool__KvHandoverEntry *out, const struct kv_entry *e, uint64_t off,
		       void *data, uint64_t len)
{
	pool__kv_handover_entry__init(out);
	out->key = (ProtobufCBinaryData){e->klen, (uint8_t *)kv_entry_key(e)};
	out->value = (ProtobufCBinaryData){len, data};
	out->offset = off;
	out->size = e->val.vlen;
	out->owner = e->val.owner;
	out->has_expire_at = kv_expire_at(e) > 0;
	out->expire_at = kv_expire_at(e);
	out->has_retain = e->retain != KV_RETAIN_NONE;
	out->retain = (Pool__KvRetain)e->retain;
	out->has_retain_until = kv_retain_until(e) > 0;
	out->retain_until = kv_retain_until(e);
}

/*
 * Put e (its bytes from off) in the answer, as much as fits: 1 when it
 * went whole, 0 when cut (*ret_off says how far), -1 when it does not fit
 * (or no memory), -2 when its bytes cannot be reached (it stays).
 */
static int kv_handover_give(struct poold *pd, struct kv_handover_walk *w, struct kv_entry *e,
			    uint64_t off, uint64_t *ret_off)
{
	uint64_t room = KVHANDOVER_BYTES - MIN(w->bytes, (uint64_t)KVHANDOVER_BYTES);
	uint64_t need = e->val.vlen - off, take = MIN(need, room);
	void *data;

	if ((w->n > 0 && (take < need || w->bytes >= KVHANDOVER_BYTES)) ||
	    (w->n == w->cap && !kv_handover_grow(w)))
		return -1;
	if (kvstore_reach(pd, e->val.off, off, take, &data) < 0)
		return -2;
	kv_handover_entry(&w->entries[w->n++], e, off, data, take);
	w->bytes += take + e->klen + KVHANDOVER_ENTRY_COST;
	*ret_off = off + take;
	if (take < need)
		return 0;
	w->gone[w->ngone++] = e;
	return 1;
}

/*
 * The shards req asks for, as this node has them: those it gives (into
 * w->give, with their counts of values left in rest as (shard, count)
 * pairs) and those it never had (absent). 0, or -errno when one is not its
 * to give yet or any more.
 */
static int kv_handover_shards(struct req *r, const Pool__KvHandoverRequest *req,
			      struct kv_handover_walk *w, uint8_t *absent, uint32_t *rest,
			      size_t *ret_nrest)
{
	struct poold *pd = r->pd;
	const struct kv_shard_map *map = member_kv_shards(pd);
	size_t nrest = 0;
	uint32_t s;

	for (s = 0; s < KV_SHARDS; s++) {
		if (!kv_owner_bit(req->shards.data, s))
			continue;
		if (map->nowners > 0 && map->owner[s] == pd->node_id)
			return req_errorf(r, -EAGAIN, "shard %u is still this node's: ask again",
					  s);
		if (!kv_owner_bit(pd->kv->leaving, s)) {
			kv_owner_set(absent, s, true);
			continue;
		}
		if (map->nowners == 0 || map->owner[s] != r->node)
			return req_errorf(r, -EAGAIN, "shard %u went to node %u here: ask again", s,
					  map->nowners > 0 ? map->owner[s] : 0);
		kv_owner_set(w->give, s, true);
		if (pd->kv->rest[s] != 0) {
			rest[nrest++] = s;
			rest[nrest++] = pd->kv->rest[s];
		}
	}
	*ret_nrest = nrest;
	return 0;
}

/*
 * The values of bucket of ns that w gives, into w, from where req's answer
 * before it stopped (its key and offset). False when the bucket is done;
 * true when the answer stops in it (the slice's time is up at until, looked
 * at every 64 entries *seen counts, or the answer is full), rep then naming
 * the key and offset the next answer starts at.
 */
static bool kv_handover_bucket(struct poold *pd, const Pool__KvHandoverRequest *req,
			       struct kv_ns *ns, size_t bucket, struct kv_handover_walk *w,
			       Pool__KvHandoverReply *rep, uint64_t until, size_t *seen)
{
	uint64_t off, cut = 0;
	struct kv_entry *e;
	int rc;

	for (e = ns->buckets[bucket]; e != NULL; e = e->hnext) {
		if (++*seen % 64 == 0 && units_now_us() >= until)
			break;
		if (!e->has_val || e->val.node != pd->node_id ||
		    !kv_owner_bit(w->give, kv_shard_of(ns->name, kv_entry_key(e), e->klen)) ||
		    (kv_expire_at(e) > 0 && kv_expire_at(e) <= kv_unix_ms()))
			continue;
		off = req->has_key && bucket == req->bucket && req->key.len == e->klen &&
			      memcmp(req->key.data, kv_entry_key(e), e->klen) == 0
			  ? MIN(req->offset, (uint64_t)e->val.vlen)
			  : 0;
		rc = kv_handover_give(pd, w, e, off, &cut);
		if (rc == -2)
			continue;
		if (rc <= 0) {
			if (rc == 0) {
				rep->has_key = rep->has_offset = 1;
				rep->key = (ProtobufCBinaryData){e->klen, kv_entry_key(e)};
				rep->offset = cut;
			}
			break;
		}
	}
	if (e != NULL && !rep->has_key && req->has_key && bucket == req->bucket) {
		rep->has_key = rep->has_offset = 1; /* (the cut value not reached yet) */
		rep->key = req->key;
		rep->offset = req->offset;
	}
	return e != NULL; /* (stopped in this bucket: the next answer starts it again) */
}

/*
 * An answer sent: the values it carried go from here (unless this node
 * backs their shard now: kv-backup.c), and once the last answer went, the
 * shards given are no longer leaving.
 */
static void kv_handover_gave(struct poold *pd, const struct req *r,
			     const struct kv_handover_walk *w, const Pool__KvHandoverReply *rep)
{
	struct kv_ns *ns = kv_ns_find(pd, rep->ns);
	uint32_t s;
	size_t i;

	for (i = 0; i < w->ngone; i++)
		if (!kv_owner_keeps(
			pd->kv, ns,
			kv_shard_of(rep->ns, kv_entry_key(w->gone[i]), w->gone[i]->klen)))
			kv_entry_clear(pd, ns, w->gone[i]);
	pd->kv->keys_out += w->ngone;
	for (s = 0; rep->done && s < KV_SHARDS; s++)
		if (kv_owner_bit(w->give, s)) {
			kv_owner_set(pd->kv->leaving, s, false);
			pd->kv->rest[s] = 0;
			if (kv_owner_bit(pd->kv->backing,
					 s)) /* (what it kept is the shard whole) */
				pd->kv->whole_from[s] = r->node;
		}
}

/* Served for another node's poold, in a call (nodecall.c): r's answer goes back on the link. */
static int kv_handover_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__KvHandoverRequest *req = (const Pool__KvHandoverRequest *)msg;
	struct poold *pd = r->pd;
	Pool__KvHandoverReply rep = POOL__KV_HANDOVER_REPLY__INIT;
	struct kv_handover_walk w = {0};
	uint8_t absent[KVHANDOVER_SHARD_BYTES] = {0};
	uint32_t rest[2 * KV_SHARDS];
	uint64_t until = units_now_us() + KVHANDOVER_SLICE_US;
	struct kv_ns *ns, *next;
	size_t bucket, seen = 0, i;
	bool stop = false;
	int rc;

	if (r->answer == NULL) /* (a client's, or one a node forwarded: none asks this) */
		return req_errorf(r, -EPERM, "a hand-over is asked by a shard's new owner only");
	if (pd->kv == NULL || req->shards.len != KVHANDOVER_SHARD_BYTES)
		return req_errorf(r, -EINVAL, "a hand-over names %u shards", KV_SHARDS);
	kv_owner_map(pd);
	rc = kv_handover_shards(r, req, &w, absent, rest, &rep.n_rest);
	if (rc < 0)
		return rc;
	rep.rest = rest;
	rep.absent = (ProtobufCBinaryData){sizeof(absent), absent};
	rep.has_absent = 1;
	ns = req->ns != NULL ? kv_ns_find(pd, req->ns) : NULL;
	bucket = ns != NULL && req->has_bucket ? (size_t)req->bucket : 0;
	if (ns == NULL || !(ns->flags & HOLD_NS_SHARDED))
		ns = kv_owner_next_ns(pd, 0), bucket = 0; /* (gone meanwhile: all again) */
	for (; ns != NULL && !stop; ns = next, bucket = 0) {
		rep.ns = ns->name;
		for (; bucket < ns->nbuckets && !stop; bucket++)
			stop = kv_handover_bucket(pd, req, ns, bucket, &w, &rep, until, &seen);
		next = kv_owner_next_ns(pd, ns->id);
		if (stop) {
			bucket--;
			break;
		}
		if (w.n > 0 && next != NULL) { /* (an answer is one namespace's) */
			rep.next_ns = next->name;
			break;
		}
	}
	rep.done = ns == NULL || (!stop && rep.next_ns == NULL);
	rep.has_bucket = 1;
	rep.bucket = stop ? bucket : 0;
	if (rep.ns == NULL)
		rep.ns = (char *)"";
	rep.entries = w.ptrs;
	rep.n_entries = w.n;
	for (i = 0; i < w.n; i++)
		w.ptrs[i] = &w.entries[i];
	rc = req_reply(r, WIRE_KV_HANDOVER_REPLY, &rep.base); /* (packed: the bytes may go) */
	if (rc == 0)
		kv_handover_gave(pd, r, &w, &rep);
	free(w.entries);
	free(w.ptrs);
	free(w.gone);
	return 0; /* (answered: with the keys, or with why not) */
}

const struct ctl_handler kv_handover_handlers[] = {
    {WIRE_KV_HANDOVER, CTL_ADMIN, AT_HERE, kv_handover_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/* Ask for the keys of the shards that move here, from now on (kv-owner.c tells when). */
int kv_handover_open(struct poold *pd)
{
	TAILQ_INIT(&pd->kv->handovers);
	pd->kv->handover_ev = evtimer_new(pd->base, kv_handover_retry, pd);
	pd->kv->moved = kv_handover_kick;
	pd->kv->moves_close = kv_handover_close;
	return pd->kv->handover_ev != NULL ? 0 : -ENOMEM;
}

/* This poold stops: a hand-over asked is freed when its answer comes (the link fails it). */
void kv_handover_close(struct poold *pd)
{
	struct kvhandover *h;

	if (pd->kv == NULL)
		return;
	pd->kv->moved = NULL;
	pd->kv->moves_close = NULL;
	while ((h = TAILQ_FIRST(&pd->kv->handovers)) != NULL) {
		TAILQ_REMOVE(&pd->kv->handovers, h, entry);
		if (h->in_flight)
			h->pd = NULL;
		else
			kv_handover_free(h);
	}
	if (pd->kv->handover_ev != NULL)
		event_free(pd->kv->handover_ev);
	pd->kv->handover_ev = NULL;
}

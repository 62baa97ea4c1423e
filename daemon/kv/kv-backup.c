/*
 * daemon/kv/kv-backup.c - the backup copy of a sharded namespace's shards,
 * for namespaces of 2 replicas: each shard's keys are kept too by the next
 * member in the shard's rendezvous order (shardmap.c's second), which is the
 * shard's owner once its owner dies, and then serves it at once.
 *
 * The owner sends each value put and each key removed to the shard's
 * backup as the request is served, and answers the client once the backup
 * has them (a call on the side link between their poolds, which the backup
 * answers at once: nodecall_send_apart()): a put acknowledged is on two
 * nodes. A shard whose backup does not hold it
 * whole (the map changed, or a change could not be sent) is copied whole,
 * about a MiB a call, from the loop. Both go as calls on the same link,
 * which its target serves in their order, and both read the owner's index
 * as it is when they are sent: what the backup applies last of a key is
 * what the owner holds. A value longer than a call goes in pieces, sent
 * one after the other at once, so no other value's comes between them.
 *
 * A whole copy adds and replaces keys; what the backup held of the shard
 * from before and the copy did not write again (a removal it missed while
 * its link was down) is what the owner no longer holds: its first call
 * says which shards it copies, the backup notes each namespace's last
 * version then, and once the copy is done drops the shards' copies of
 * older versions, from the loop (kv-owner.c), serving none of those shards
 * meanwhile should it own them. The owner's evictions go to the backup
 * too, as removals, each before any later call: a value evicted at the
 * owner does not come back when the owner dies.
 *
 * The backup takes a shard's keys from the shard's owner in its own map
 * only, and only while it is the shard's backup in it (-EAGAIN otherwise:
 * the owner copies the shard again once their maps agree). It evicts
 * copies under its own LRU with its own values (copies are not read, so
 * cold copies go first), and drops a shard's copy when it no longer backs
 * it (kv-owner.c).
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

#define KVBACKUP_BYTES (1u << 20) /* a call's values, about */
#define KVBACKUP_SLICE_US 1000	  /* a whole copy's walk for one call, at most */
#define KVBACKUP_ENTRY_COST 32	  /* an entry's framing, counted with its bytes */
#define KVBACKUP_RETRY_MS 100	  /* a whole copy refused (maps apart) or failed: again */
#define KVBACKUP_ANSWER_MAX 4096  /* an Ok or an Error */
#define KVBACKUP_SESSION UINT64_MAX
#define KVBACKUP_SHARD_BYTES (KV_SHARDS / 8)

/*
 * A request answered once the backups have its changes, or at until_ms
 * from the owner alone (a backup's link that neither answers nor fails):
 * released then, its shards copied whole again, freed by its last answer.
 */
struct kv_backup_waiter {
	TAILQ_ENTRY(kv_backup_waiter) entry;
	struct poold *pd; /* NULL: answered already (this poold stops) */
	unsigned pending; /* calls not answered yet */
	void (*done)(void *arg);
	void *arg;
	uint64_t until_ms;
	bool released;
	uint8_t shards[KVBACKUP_SHARD_BYTES]; /* of its calls' keys */
};

/* Shards copied whole to their backup node, a call at a time. */
struct kv_backup_copy {
	TAILQ_ENTRY(kv_backup_copy) entry;
	struct poold *pd; /* NULL: this poold stops, freed by its last answer */
	uint32_t node;
	uint8_t shards[KVBACKUP_SHARD_BYTES];
	uint64_t ns; /* where the walk is: a namespace's id (0: from the start), its bucket */
	size_t bucket;
	unsigned in_flight;
	bool failed, done_sent;
	bool start_sent; /* the walk's first call went (it names the shards: KvBackup.start) */
	uint64_t retry_ms;
};

/* One call to a backup, who waits for its answer, and the shards of its keys. */
struct kv_backup_call {
	struct kv_backup_waiter *wait;
	struct kv_backup_copy *copy;
	uint32_t node;
	uint8_t shards[KVBACKUP_SHARD_BYTES];
};

/* At a backup: an owner's value coming in pieces. */
struct kv_backup_from {
	TAILQ_ENTRY(kv_backup_from) entry;
	uint32_t node;
	struct kv_part part;
};

/* A key the owner evicted, to be removed at its backup too. */
struct kv_backup_gone {
	uint32_t node;
	uint64_t ns;
	uint8_t *key;
	size_t klen;
};

/* A call being filled: one namespace's values and removed keys. */
struct kv_backup_msg {
	Pool__KvBackup m;
	Pool__KvHandoverEntry *entries;
	Pool__KvHandoverEntry **ptrs;
	ProtobufCBinaryData *removed;
	size_t n, nremoved, cap, rcap;
	uint64_t bytes;
	uint8_t shards[KVBACKUP_SHARD_BYTES]; /* of its keys */
};

static void kv_backup_msg_free(struct kv_backup_msg *b)
{
	free(b->entries);
	free(b->ptrs);
	free(b->removed);
}

static bool kv_backup_msg_room(struct kv_backup_msg *b)
{
	size_t cap = b->cap ? b->cap * 2 : 64;
	Pool__KvHandoverEntry *entries;

	if (b->n < b->cap)
		return true;
	if ((entries = realloc(b->entries, cap * sizeof(*entries))) == NULL)
		return false;
	b->entries = entries;
	if ((b->ptrs = realloc(b->ptrs, cap * sizeof(*b->ptrs))) == NULL)
		return false;
	b->cap = cap;
	return true;
}

/* Whether shards are backed in any namespace here (one of 2 replicas). */
static bool kv_backup_any(struct poold *pd)
{
	struct kv_ns *ns;

	for (ns = kv_owner_next_ns(pd, 0); ns != NULL; ns = kv_owner_next_ns(pd, ns->id))
		if (ns->replicas > 1)
			return true;
	return false;
}

/*
 * The shards (those of a call, or all with NULL) whose copy went to node
 * no longer count as whole there: they are copied again.
 */
static void kv_backup_recopy(struct poold *pd, uint32_t node, const uint8_t *shards)
{
	uint32_t s;

	for (s = 0; s < KV_SHARDS; s++)
		if (pd->kv->copied_to[s] == node && (shards == NULL || kv_owner_bit(shards, s)))
			pd->kv->copied_to[s] = 0;
}

static void kv_backup_copy_step(struct poold *pd, struct kv_backup_copy *c);

/* The backup's answer to one call (from the loop). */
static void kv_backup_answered(struct poold *pd, void *arg, int status, uint16_t type,
			       const uint8_t *bytes, size_t len)
{
	struct kv_backup_call *call = arg;
	struct kv_backup_waiter *w = call->wait;
	struct kv_backup_copy *c = call->copy;
	ProtobufCMessage *msg;

	status = nodecall_reply(status, type, bytes, len, WIRE_OK, &msg);
	if (msg != NULL)
		wire_msg_free(msg);
	if (w != NULL) {
		/* (a change the backup did not take: the shards it holds are copied again) */
		if (status < 0 && w->pd != NULL && !w->released) {
			w->pd->kv->backup_missed++;
			if (status != -ENOSPC && status != -EDQUOT)
				kv_backup_recopy(w->pd, call->node, call->shards);
		}
		if (--w->pending == 0) {
			if (w->pd != NULL && !w->released) {
				TAILQ_REMOVE(&w->pd->kv->waits, w, entry);
				w->done(w->arg);
			}
			free(w);
		}
	}
	if (w == NULL && c == NULL && status < 0 && pd->kv != NULL &&
	    pd->kv->copy_close != NULL) { /* (evictions not taken: copied again) */
		pd->kv->backup_missed++;
		kv_backup_recopy(pd, call->node, call->shards);
	}
	if (c != NULL) {
		c->failed = c->failed || status < 0;
		if (--c->in_flight == 0 && c->pd == NULL)
			free(c);
		else if (c->in_flight == 0)
			kv_backup_copy_step(pd, c);
	}
	free(call);
}

static void kv_backup_gone_send(struct poold *pd);

/*
 * Send the call b holds (of namespace ns) to node, for w or c (or
 * neither: evictions); then b is empty again. The evictions not sent yet
 * go first, so that a backup never removes a key after a newer value.
 */
static int kv_backup_msg_send(struct poold *pd, uint32_t node, const char *ns,
			      struct kv_backup_msg *b, struct kv_backup_waiter *w,
			      struct kv_backup_copy *c)
{
	struct nodecall_as as = {0, 0, 0, true, 0};
	struct kv_backup_call *call;
	size_t i;
	int rc;

	if (w != NULL || c != NULL)
		kv_backup_gone_send(pd);
	if ((call = malloc(sizeof(*call))) == NULL)
		return -ENOMEM;
	*call = (struct kv_backup_call){w, c, node, {0}};
	memcpy(call->shards, b->shards, sizeof(call->shards));
	b->m.ns = (char *)ns;
	for (i = 0; i < b->n; i++)
		b->ptrs[i] = &b->entries[i];
	b->m.entries = b->ptrs;
	b->m.n_entries = b->n;
	b->m.removed = b->removed;
	b->m.n_removed = b->nremoved;
	b->m.has_copy = b->m.copy = c != NULL;
	rc = nodecall_send_apart(pd, node, &as, WIRE_KV_BACKUP, &b->m.base, KVBACKUP_ANSWER_MAX,
				 kv_backup_answered, call);
	if (rc < 0) {
		free(call);
	} else {
		if (w != NULL) {
			w->pending++;
			for (i = 0; i < sizeof(w->shards); i++)
				w->shards[i] |= b->shards[i];
		}
		if (c != NULL) {
			c->in_flight++;
			c->start_sent = c->start_sent || b->m.has_start;
		}
		pd->kv->backup_keys += b->n + b->nremoved;
	}
	b->n = b->nremoved = 0;
	b->bytes = 0;
	b->m.has_done = b->m.has_start = 0;
	memset(b->shards, 0, sizeof(b->shards));
	return rc;
}

/*
 * Put e's value in the call b fills for node: whole, or when longer than
 * a call, in pieces each sent at once (a fuller call is sent first). 0 or
 * -errno (nothing of it went).
 */
static int kv_backup_msg_add(struct poold *pd, uint32_t node, const char *ns,
			     struct kv_backup_msg *b, const struct kv_entry *e,
			     struct kv_backup_waiter *w, struct kv_backup_copy *c)
{
	uint64_t off = 0, take;
	int rc = 0;

	if (b->n + b->nremoved > 0 && b->bytes + e->val.vlen > KVBACKUP_BYTES &&
	    (rc = kv_backup_msg_send(pd, node, ns, b, w, c)) < 0)
		return rc;
	do {
		void *data;

		take = MIN(e->val.vlen - off, (uint64_t)KVBACKUP_BYTES);
		if (!kv_backup_msg_room(b))
			return -ENOMEM;
		if (kvstore_reach(pd, e->val.off, off, take, &data) < 0)
			return -EFAULT;
		kv_handover_entry(&b->entries[b->n++], e, off, data, take);
		b->bytes += take + e->klen + KVBACKUP_ENTRY_COST;
		kv_owner_set(b->shards, kv_shard_of(ns, kv_entry_key(e), e->klen), true);
		off += take;
		if (off < e->val.vlen && (rc = kv_backup_msg_send(pd, node, ns, b, w, c)) < 0)
			return rc; /* (a piece, and the next one at once) */
	} while (off < e->val.vlen);
	return 0;
}

/* A removed key of ns in the call b fills. */
static int kv_backup_msg_removed(struct kv_backup_msg *b, const char *ns,
				 const ProtobufCBinaryData *key)
{
	if (b->nremoved == b->rcap) {
		size_t cap = b->rcap ? b->rcap * 2 : 64;
		ProtobufCBinaryData *r = realloc(b->removed, cap * sizeof(*r));

		if (r == NULL)
			return -ENOMEM;
		b->removed = r;
		b->rcap = cap;
	}
	b->removed[b->nremoved++] = *key;
	kv_owner_set(b->shards, kv_shard_of(ns, key->data, key->len), true);
	b->bytes += key->len + KVBACKUP_ENTRY_COST;
	return 0;
}

/*
 * The backup of key's shard of ns: 0 when it has none (a single owner).
 * The map's owners are the members not dead, so a second in it is up.
 */
static uint32_t kv_backup_of(struct poold *pd, const struct kv_ns *ns, const void *key, size_t klen)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	uint32_t s = kv_shard_of(ns->name, key, klen);

	return map->nowners > 1 && map->owner[s] == pd->node_id ? map->second[s] : 0;
}

/* A key of a request (its index) and the backup of its shard, sorted by backup then index. */
struct kv_backup_key {
	uint32_t node;
	uint32_t i;
};

static int kv_backup_key_cmp(const void *a, const void *b)
{
	const struct kv_backup_key *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The changes of one request to ns's keys whose backup is node (to, n of
 * them, in the request's order): the values now held of those put (a key
 * gone meanwhile goes as removed), or the keys removed.
 */
static void kv_backup_send_to(struct poold *pd, struct kv_ns *ns, uint32_t node,
			      const ProtobufCBinaryData *keys, const struct kv_backup_key *to,
			      size_t n, bool removed, struct kv_backup_waiter *w)
{
	Pool__KvBackup init = POOL__KV_BACKUP__INIT;
	struct kv_backup_msg b = {.m = init};
	size_t k, i;
	int rc = 0;

	for (k = 0; k < n && rc == 0; k++) {
		struct kv_entry *e;

		i = to[k].i;
		e = removed ? NULL
			    : *kv_slot(ns, keys[i].data, keys[i].len,
				       kv_hash(keys[i].data, keys[i].len));
		if (e != NULL && e->has_val && e->val.node == pd->node_id)
			rc = kv_backup_msg_add(pd, node, ns->name, &b, e, w, NULL);
		else
			rc = kv_backup_msg_removed(&b, ns->name, &keys[i]);
		if (rc == 0 && b.bytes >= KVBACKUP_BYTES)
			rc = kv_backup_msg_send(pd, node, ns->name, &b, w, NULL);
	}
	if (rc == 0 && b.n + b.nremoved > 0)
		rc = kv_backup_msg_send(pd, node, ns->name, &b, w, NULL);
	if (rc < 0) {
		pd->kv->backup_missed++;
		kv_backup_recopy(pd, node, NULL);
	}
	kv_backup_msg_free(&b);
}

int kv_backup_send(struct poold *pd, struct kv_ns *ns, const ProtobufCBinaryData *keys,
		   const Pool__KvLocation *locs, size_t n, bool removed, void (*done)(void *arg),
		   void *arg)
{
	struct kv_backup_waiter *w;
	struct kv_backup_key *to;
	uint64_t window;
	size_t i, j, m = 0;

	if (!(ns->flags & HOLD_NS_SHARDED) || ns->replicas < 2 || pd->kv == NULL ||
	    pd->kv->copy_close == NULL || n == 0)
		return 0; /* (nothing to back up, or backups closed: this poold stops) */
	to = malloc(n * sizeof(*to));
	w = calloc(1, sizeof(*w));
	if (to == NULL || w == NULL) {
		free(to);
		free(w);
		pd->kv->backup_missed++;
		return 0;
	}
	/* (a backup silent for the heartbeat window: kv_backup_waits_expire()) */
	window = (uint64_t)pd->conf->heartbeat_ms * (uint64_t)pd->conf->heartbeat_misses;
	*w = (struct kv_backup_waiter){
	    .pd = pd, .done = done, .arg = arg, .until_ms = units_now_ms() + window};
	for (i = 0; i < n; i++) {
		uint32_t node =
		    locs[i].status == 0 ? kv_backup_of(pd, ns, keys[i].data, keys[i].len) : 0;

		if (node != 0)
			to[m++] = (struct kv_backup_key){node, (uint32_t)i};
	}
	/* (grouped by backup, each group in the request's order: its calls) */
	qsort(to, m, sizeof(*to), kv_backup_key_cmp);
	w->pending = 1; /* (until every call went: an answer cannot come before) */
	for (i = 0; i < m; i = j) {
		for (j = i + 1; j < m && to[j].node == to[i].node; j++)
			;
		kv_backup_send_to(pd, ns, to[i].node, keys, &to[i], j - i, removed, w);
	}
	free(to);
	if (--w->pending == 0) {
		free(w);
		return 0;
	}
	TAILQ_INSERT_TAIL(&pd->kv->waits, w, entry);
	return 1;
}

static int kv_backup_gone_cmp(const void *a, const void *b)
{
	const struct kv_backup_gone *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/*
 * The evicted keys not sent yet, to their backups: grouped by backup and
 * namespace, a call each (more when many), answered by no one but
 * kv_backup_answered().
 */
static void kv_backup_gone_send(struct poold *pd)
{
	struct kv_space *kv = pd->kv;
	struct kv_backup_gone *gone = kv->gone;
	size_t n = kv->ngone, i, j, k;

	if (n == 0)
		return;
	kv->gone = NULL; /* (taken: the sends below do not come back here) */
	kv->ngone = kv->gone_cap = 0;
	qsort(gone, n, sizeof(*gone), kv_backup_gone_cmp);
	for (i = 0; i < n; i = j) {
		Pool__KvBackup init = POOL__KV_BACKUP__INIT;
		struct kv_backup_msg b = {.m = init};
		struct kv_ns *ns = kv_ns_by_id(pd, gone[i].ns);
		int rc = 0;

		for (j = i + 1; j < n && kv_backup_gone_cmp(&gone[i], &gone[j]) == 0; j++)
			;
		for (k = i; k < j && ns != NULL && rc == 0; k++) {
			ProtobufCBinaryData key = {gone[k].klen, gone[k].key};

			rc = kv_backup_msg_removed(&b, ns->name, &key);
			if (rc == 0 && b.bytes >= KVBACKUP_BYTES)
				rc = kv_backup_msg_send(pd, gone[i].node, ns->name, &b, NULL, NULL);
		}
		if (ns != NULL && rc == 0 && b.nremoved > 0)
			rc = kv_backup_msg_send(pd, gone[i].node, ns->name, &b, NULL, NULL);
		if (rc < 0) {
			kv->backup_missed++;
			kv_backup_recopy(pd, gone[i].node, NULL);
		}
		kv_backup_msg_free(&b); /* (before the keys its calls pointed at: packed, sent) */
		for (k = i; k < j; k++)
			free(gone[k].key);
	}
	free(gone);
}

static void kv_backup_gone_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	kv_backup_gone_send(arg);
}

/*
 * A value the owner evicts (kv-evict.c): its key is removed at the shard's
 * backup too, by the end of this turn of the loop or before any other
 * call to a backup, whichever comes first.
 */
static void kv_backup_evicted(struct poold *pd, const struct kv_ns *ns, const struct kv_entry *e)
{
	static const struct timeval now = {0, 0};
	struct kv_space *kv = pd->kv;
	uint32_t node;
	uint8_t *key;

	if (!(ns->flags & HOLD_NS_SHARDED) || ns->replicas < 2 ||
	    (node = kv_backup_of(pd, ns, kv_entry_key(e), e->klen)) == 0)
		return; /* (not a shard it owns with a backup: a copy, say) */
	if (kv->ngone == kv->gone_cap) {
		size_t cap = kv->gone_cap ? kv->gone_cap * 2 : 64;
		struct kv_backup_gone *g = realloc(kv->gone, cap * sizeof(*g));

		if (g == NULL)
			goto missed;
		kv->gone = g;
		kv->gone_cap = cap;
	}
	if ((key = malloc(e->klen)) == NULL)
		goto missed;
	memcpy(key, kv_entry_key(e), e->klen);
	kv->gone[kv->ngone++] = (struct kv_backup_gone){node, ns->id, key, e->klen};
	if (!evtimer_pending(kv->gone_ev, NULL))
		evtimer_add(kv->gone_ev, &now);
	return;
missed:
	kv->backup_missed++;
	kv_backup_recopy(pd, node, NULL);
}

/* Whether this poold owns shard s, serves it, and its backup is node. */
static bool kv_backup_copies(struct poold *pd, uint32_t s, uint32_t node)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct kv_space *kv = pd->kv;

	return map->nowners > 1 && map->owner[s] == pd->node_id && map->second[s] == node &&
	       kv->from[s] == 0 && !kv_owner_bit(kv->dropping, s);
}

static void kv_backup_copy_free(struct poold *pd, struct kv_backup_copy *c)
{
	TAILQ_REMOVE(&pd->kv->copies, c, entry);
	if (c->in_flight > 0)
		c->pd = NULL; /* (freed by its last answer) */
	else
		free(c);
}

/*
 * The next call of a whole copy, from where its walk stopped: about
 * KVBACKUP_BYTES of the values of its shards, or the last call, which
 * says the shards went whole; once that one is answered the shards count
 * as copied. A refused or failed walk starts again after a while.
 */
static void kv_backup_copy_step(struct poold *pd, struct kv_backup_copy *c)
{
	static const struct timeval now = {0, 0}, retry = {0, KVBACKUP_RETRY_MS * 1000};
	Pool__KvBackup init = POOL__KV_BACKUP__INIT;
	struct kv_backup_msg b = {.m = init};
	uint64_t until = units_now_us() + KVBACKUP_SLICE_US;
	struct kv_ns *ns;
	size_t seen = 0;
	bool any = false;
	uint32_t s;
	int rc = 0;

	for (s = 0; s < KV_SHARDS; s++) { /* (those it no longer copies there) */
		if (kv_owner_bit(c->shards, s) && !kv_backup_copies(pd, s, c->node))
			kv_owner_set(c->shards, s, false);
		any = any || kv_owner_bit(c->shards, s);
	}
	if (c->failed || !any) {
		c->failed = c->done_sent = c->start_sent = false;
		c->ns = 0;
		c->bucket = 0;
		c->retry_ms = units_now_ms() + KVBACKUP_RETRY_MS;
		if (!any)
			kv_backup_copy_free(pd, c);
		else
			evtimer_add(pd->kv->copy_ev, &retry);
		return;
	}
	if (c->done_sent) { /* (the last call was answered: the shards are whole there) */
		for (s = 0; s < KV_SHARDS; s++)
			if (kv_owner_bit(c->shards, s)) {
				pd->kv->copied_to[s] = c->node;
				pd->kv->backup_copied++;
			}
		kv_backup_copy_free(pd, c);
		return;
	}
	ns = c->ns != 0 ? kv_ns_by_id(pd, c->ns) : NULL;
	if (ns == NULL)
		ns = kv_owner_next_ns(pd, 0), c->bucket = 0; /* (the start, or gone: all again) */
	if (!c->start_sent) { /* (its first call names the shards it copies: KvBackup.start) */
		b.m.has_start = 1;
		b.m.start = (ProtobufCBinaryData){sizeof(c->shards), c->shards};
	}
	for (; ns != NULL && rc == 0 && b.bytes < KVBACKUP_BYTES;
	     ns = kv_owner_next_ns(pd, ns->id)) {
		if (ns->replicas < 2)
			continue;
		for (; c->bucket < ns->nbuckets && rc == 0 && b.bytes < KVBACKUP_BYTES;
		     c->bucket++) {
			const struct kv_entry *e;

			if (++seen % 64 == 0 && units_now_us() >= until)
				break;
			for (e = ns->buckets[c->bucket]; e != NULL && rc == 0; e = e->hnext)
				if (e->has_val && e->val.node == pd->node_id &&
				    kv_owner_bit(c->shards,
						 kv_shard_of(ns->name, kv_entry_key(e), e->klen)) &&
				    (kv_expire_at(e) == 0 || kv_expire_at(e) > kv_unix_ms()))
					rc = kv_backup_msg_add(pd, c->node, ns->name, &b, e, NULL,
							       c);
		}
		c->ns = ns->id;
		if (c->bucket < ns->nbuckets || b.n > 0)
			break; /* (a call is one namespace's) */
		c->bucket = 0;
	}
	if (rc == 0 && ns == NULL) { /* (walked them all: this call says so) */
		b.m.has_done = 1;
		b.m.done = (ProtobufCBinaryData){sizeof(c->shards), c->shards};
		c->done_sent = true;
	}
	if (rc == 0 && (b.n > 0 || b.m.has_done))
		rc = kv_backup_msg_send(pd, c->node, ns != NULL ? ns->name : "", &b, NULL, c);
	kv_backup_msg_free(&b);
	if (rc < 0)
		c->failed = true;
	if (c->in_flight == 0) /* (nothing went: the next step from the loop) */
		evtimer_add(pd->kv->copy_ev, &now);
}

/*
 * The shards this poold owns and serves whose backup does not hold them
 * whole are copied there; the copies not under way go on. From the owner
 * sweep and each change of the map (kv-owner.c).
 */
/*
 * The requests whose backups did not answer within the heartbeat window
 * (a link that neither answers nor fails, its peer still a member): each
 * is answered from the owner alone, and the shards of its keys are copied
 * whole again, so that a partition between two members does not stall
 * their writes.
 */
static void kv_backup_waits_expire(struct poold *pd, uint64_t now)
{
	struct kv_backup_waiter *w, *next;
	uint32_t s;

	for (w = TAILQ_FIRST(&pd->kv->waits); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (now < w->until_ms)
			continue;
		TAILQ_REMOVE(&pd->kv->waits, w, entry);
		w->released = true;
		pd->kv->backup_missed++;
		for (s = 0; s < KV_SHARDS; s++)
			if (kv_owner_bit(w->shards, s))
				pd->kv->copied_to[s] = 0;
		w->done(w->arg);
	}
}

static void kv_backup_kick(struct poold *pd)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct kv_space *kv = pd->kv;
	struct kv_backup_copy *c = NULL, *next;
	uint64_t now = units_now_ms();
	uint32_t s, b;

	if (kv == NULL)
		return;
	kv_backup_waits_expire(pd, now);
	if (!kv_backup_any(pd))
		return;
	for (s = 0; s < KV_SHARDS && map->nowners > 1; s++) {
		b = map->second[s];
		if (kv->copied_to[s] == b || !kv_backup_copies(pd, s, b))
			continue;
		if (c == NULL || c->node != b) {
			TAILQ_FOREACH(c, &kv->copies, entry)
				if (c->node == b)
					break;
		}
		if (c == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
			c->pd = pd;
			c->node = b;
			TAILQ_INSERT_TAIL(&kv->copies, c, entry);
		}
		if (c != NULL && !kv_owner_bit(c->shards, s)) {
			kv_owner_set(c->shards, s, true); /* (more: the walk from the start) */
			c->ns = 0;
			c->bucket = 0;
			c->done_sent = c->start_sent = false;
		}
	}
	for (c = TAILQ_FIRST(&kv->copies); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->in_flight == 0 && now >= c->retry_ms)
			kv_backup_copy_step(pd, c);
	}
}

static void kv_backup_again(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	kv_backup_kick(arg);
}

/* At a backup: the value in pieces of owner node's (made when first asked). */
static struct kv_part *kv_backup_part(struct poold *pd, uint32_t node)
{
	struct kv_backup_from *f;

	TAILQ_FOREACH(f, &pd->kv->parts, entry)
		if (f->node == node)
			return &f->part;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->node = node;
	TAILQ_INSERT_TAIL(&pd->kv->parts, f, entry);
	return &f->part;
}

/* Whether this poold backs shard s for node, in its own map (and is not dropping it). */
static bool kv_backup_backs_shard(struct poold *pd, uint32_t s, uint32_t node)
{
	const struct kv_shard_map *map = member_kv_shards(pd);

	return map->nowners > 1 && map->owner[s] == node && map->second[s] == pd->node_id &&
	       !kv_owner_bit(pd->kv->dropping, s);
}

/*
 * A whole copy of node's shards begins: each namespace's last version now
 * is noted, so that what the copy does not write again can go once it is
 * done; a sweep of what an earlier copy left stops (this one's will do).
 */
static void kv_backup_copy_begins(struct poold *pd, const uint8_t *shards, uint32_t node)
{
	struct kv_ns *ns;
	uint32_t s;

	for (ns = kv_owner_next_ns(pd, 0); ns != NULL; ns = kv_owner_next_ns(pd, ns->id))
		if (ns->replicas > 1 && ns->copy_since == NULL)
			ns->copy_since = calloc(KV_SHARDS, sizeof(*ns->copy_since));
	for (s = 0; s < KV_SHARDS; s++) {
		if (!kv_owner_bit(shards, s) || !kv_backup_backs_shard(pd, s, node))
			continue;
		kv_owner_set(pd->kv->stale, s, false);
		for (ns = kv_owner_next_ns(pd, 0); ns != NULL; ns = kv_owner_next_ns(pd, ns->id))
			if (ns->copy_since != NULL)
				ns->copy_since[s] = ns->next_version;
	}
}

/* The whole copy of node's shards is done: they are whole here, and their older copies go. */
static void kv_backup_copy_done(struct poold *pd, const uint8_t *shards, uint32_t node)
{
	bool any = false;
	uint32_t s;

	for (s = 0; s < KV_SHARDS; s++)
		if (kv_owner_bit(shards, s) && kv_backup_backs_shard(pd, s, node)) {
			pd->kv->whole_from[s] = node;
			kv_owner_set(pd->kv->stale, s, true);
			any = true;
		}
	if (any)
		kv_owner_drop_start(pd);
}

/* Served for a shard owner's poold, in a call (nodecall.c): its changes, taken here. */
static int kv_backup_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__KvBackup *m = (const Pool__KvBackup *)msg;
	struct poold *pd = r->pd;
	struct kv_caller who = {pd->node_id, KVBACKUP_SESSION, 0};
	Pool__Ok ok = POOL__OK__INIT;
	struct kv_result res;
	struct kv_part *part;
	struct kv_ns *ns;
	uint32_t s, partial = 0;
	int rc, why = 0;
	size_t i;

	if (r->answer == NULL) /* (a client's, or one a node forwarded: none sends this) */
		return req_errorf(r, -EPERM, "a backup copy is sent by a shard's owner only");
	if (pd->kv == NULL || pd->kv->copy_close == NULL)
		return req_errorf(r, -EAGAIN, "this poold takes no backup copies now");
	ns = kv_ns_find(pd, m->ns);
	if ((m->has_done && m->done.len != KVBACKUP_SHARD_BYTES) ||
	    (m->has_start && m->start.len != KVBACKUP_SHARD_BYTES))
		return req_errorf(r, -EINVAL, "a backup copy names %u shards", KV_SHARDS);
	kv_owner_map(pd);
	if (m->has_start)
		kv_backup_copy_begins(pd, m->start.data, r->node);
	if (m->n_entries + m->n_removed == 0 && m->has_done) { /* (the end of a whole copy) */
		kv_backup_copy_done(pd, m->done.data, r->node);
		return req_reply(r, WIRE_OK, &ok.base);
	}
	if (ns == NULL || !(ns->flags & HOLD_NS_SHARDED) || ns->replicas < 2)
		return req_errorf(r, -ENOENT, "no sharded KV namespace '%s' of 2 replicas here",
				  m->ns);
	for (i = 0; i < m->n_entries + m->n_removed; i++) {
		const ProtobufCBinaryData *key =
		    i < m->n_entries ? &m->entries[i]->key : &m->removed[i - m->n_entries];

		s = kv_shard_of(ns->name, key->data, key->len);
		if (!kv_backup_backs_shard(pd, s, r->node))
			return req_errorf(r, -EAGAIN,
					  "shard %u of '%s' is not backed here for node %u: "
					  "its copy again",
					  s, ns->name, r->node);
		if (!m->copy && pd->kv->whole_from[s] != r->node)
			partial = s + 1; /* (taken, but the rest of the shard is not here) */
	}
	if ((part = kv_backup_part(pd, r->node)) == NULL)
		return req_errorf(r, -ENOMEM, "out of memory");
	for (i = 0; i < m->n_entries; i++)
		if ((rc = kv_handover_put(pd, part, ns, m->entries[i])) < 0)
			why = why != 0 ? why : rc;
	for (i = 0; i < m->n_removed; i++)
		kv_key_op(pd, ns, &who, KV_REMOVE, m->removed[i].data, m->removed[i].len, 0, &res);
	if (why != 0)
		return req_errorf(r, why, "a backup copy of '%s' not taken: %s", ns->name,
				  err_str(why));
	if (partial != 0) /* (a backup that restarted, say, or whose copy was cut off) */
		return req_errorf(r, -ENODATA,
				  "shard %u of '%s' is not held whole here: copy it again",
				  partial - 1, ns->name);
	return req_reply(r, WIRE_OK, &ok.base);
}

const struct ctl_handler kv_backup_handlers[] = {
    {WIRE_KV_BACKUP, CTL_ADMIN, AT_HERE, kv_backup_request, NULL},
    {0, 0, 0, NULL, NULL},
};

static void kv_backup_close_space(struct poold *pd);

/* Back up the shards of namespaces of 2 replicas from now on (kv-owner.c tells of changes). */
int kv_backup_open(struct poold *pd)
{
	TAILQ_INIT(&pd->kv->copies);
	TAILQ_INIT(&pd->kv->parts);
	TAILQ_INIT(&pd->kv->waits);
	pd->kv->copy_ev = evtimer_new(pd->base, kv_backup_again, pd);
	pd->kv->gone_ev = evtimer_new(pd->base, kv_backup_gone_cb, pd);
	pd->kv->copy_kick = kv_backup_kick;
	pd->kv->copy_close = kv_backup_close_space;
	pd->kv->evicted = kv_backup_evicted;
	return pd->kv->copy_ev != NULL && pd->kv->gone_ev != NULL ? 0 : -ENOMEM;
}

/*
 * This poold stops (or its KV space goes): the requests waiting for their
 * backups are answered now; what is in flight is freed by its answer.
 */
static void kv_backup_close_space(struct poold *pd)
{
	struct kv_backup_waiter *w;
	struct kv_backup_copy *c;
	struct kv_backup_from *f;

	pd->kv->copy_kick = NULL;
	pd->kv->copy_close = NULL;
	pd->kv->evicted = NULL;
	while (pd->kv->ngone > 0)
		free(pd->kv->gone[--pd->kv->ngone].key);
	free(pd->kv->gone);
	pd->kv->gone = NULL;
	pd->kv->gone_cap = 0;
	while ((w = TAILQ_FIRST(&pd->kv->waits)) != NULL) {
		TAILQ_REMOVE(&pd->kv->waits, w, entry);
		w->pd = NULL;
		w->done(w->arg);
	}
	while ((c = TAILQ_FIRST(&pd->kv->copies)) != NULL)
		kv_backup_copy_free(pd, c);
	while ((f = TAILQ_FIRST(&pd->kv->parts)) != NULL) {
		TAILQ_REMOVE(&pd->kv->parts, f, entry);
		kv_handover_part_end(pd, &f->part);
		free(f->part.key);
		free(f);
	}
	if (pd->kv->copy_ev != NULL)
		event_free(pd->kv->copy_ev);
	if (pd->kv->gone_ev != NULL)
		event_free(pd->kv->gone_ev);
	pd->kv->copy_ev = pd->kv->gone_ev = NULL;
}

void kv_backup_close(struct poold *pd)
{
	if (pd->kv != NULL && pd->kv->copy_close != NULL)
		kv_backup_close_space(pd);
}

/*
 * daemon/kvwire.c - the KV requests of the control socket and the peer
 * links: operations on keys (lookup, reserve, commit, abort, release,
 * remove, match...) answered with locations, and on namespaces (create,
 * drop, flush, stats), checked against each namespace's owner and mode.
 */
#include "config.h"

#include "daemon/kvint.h"

/*
 * Where a value is. For a writer (pd NULL), every place, its own first:
 * the writer fills each. For a reader, the place to read first (on the
 * reader's node, else on a lender that is up) and the other live places
 * to fall back on. pl holds the places (NULL: none but the first).
 */
void kv_loc(struct poold *pd, Pool__KvLocation *loc, struct kv_locplaces *pl, int status,
	    const struct kv_val *v, uint32_t near)
{
	struct kv_place all[KV_MAX_REPLICAS], first;
	size_t n, i, best = 0;

	pool__kv_location__init(loc);
	loc->status = status;
	if (status != 0 || v == NULL)
		return;
	n = kv_places(v, all);
	if (pd != NULL) { /* a reader's own node, else the first lender up */
		for (best = 0; best < n && all[best].node != near; best++)
			;
		for (i = 0; best == n && i < n; i++)
			if (kv_node_up(pd, all[i].node))
				best = i;
		best = best < n ? best : 0;
	}
	first = all[best];
	all[best] = all[0];
	all[0] = first;
	loc->has_node = loc->has_arena = loc->has_off = loc->has_len = loc->has_version = 1;
	loc->node = first.node;
	loc->arena = first.arena;
	loc->off = first.off;
	loc->len = v->vlen;
	loc->version = v->version;
	for (i = 1; pl != NULL && i < n; i++) {
		Pool__KvPlace *p = &pl->place[loc->n_copies];

		if (pd != NULL && !kv_node_up(pd, all[i].node))
			continue;
		pool__kv_place__init(p);
		p->node = all[i].node;
		p->arena = all[i].arena;
		p->off = all[i].off;
		pl->ptr[loc->n_copies++] = p;
	}
	loc->copies = pl != NULL ? pl->ptr : NULL;
}

/* One key of a request. */
int kv_one(struct req *q, struct kv_ns *ns, const Pool__KvRequest *kr, size_t i,
	   Pool__KvLocation *loc, struct kv_locplaces *pl)
{
	struct poold *pd = q->pd;
	const uint8_t *key = kr->keys[i].data;
	size_t klen = kr->keys[i].len;
	uint64_t h = kv_hash(key, klen);
	struct kv_entry **pp = kv_slot(ns, key, klen, h), *e;
	const char *op = kr->op;
	int rc;

	/* The empty key is RESP's (GET ""): only its databases, this node's, take it. */
	if ((klen == 0 && !kv_is_resp_db(ns)) || klen > POOL_KV_KEY_MAX) {
		kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
		return 0;
	}
	e = kv_live(pd, ns, pp);
	if (strcmp(op, "lookup") == 0 || strcmp(op, "exists") == 0) {
		if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val)) {
			ns->misses += op[0] == 'l';
			kv_loc(NULL, loc, NULL, -ENOENT, NULL, 0);
			return 0;
		}
		if (op[0] == 'l') {
			if (kv_pin(e, q->node, q->session) < 0) {
				kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
				return 0;
			}
			ns->hits++;
			TAILQ_REMOVE(kv_lru(ns, e), e, lru);
			TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
			/* where it is now (a promotion moves it later), nearest first */
			kv_loc(pd, loc, pl, 0, &e->val, q->node);
			if (e->val.pmem) {
				ns->pmem_hits++;
				kv_promote(pd, ns, e);
			}
			return 1;
		}
		kv_loc(pd, loc, NULL, 0, &e->val, q->node);
		return 1;
	}
	if (strcmp(op, "reserve") == 0 && (ns->flags & HOLD_NS_DEDUP) && e != NULL &&
	    kv_dedup_reserve(pd, ns, e, q->uid, loc))
		return 0;
	if (strcmp(op, "reserve") == 0) {
		uint64_t size = kr->sizes[i], need;
		struct kv_val v;
		uint32_t owner;

		if (size > POOL_KV_VALUE_MAX) { /* 0 is an empty value (RESP's "") */
			kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
			return 0;
		}
		/* Room for every copy, each of the size it will take. */
		need = kv_alloc_len(ns, size) * ns->replicas;
		if (need > ns->capacity) { /* would spill everything and still not fit */
			kv_loc(NULL, loc, NULL, -ENOSPC, NULL, 0);
			return 0;
		}
		owner = kv_val_owner(ns, key, klen, (uint32_t)q->uid);
		rc = kv_quota_room(pd, ns, owner, need);
		if (rc == 0)
			rc = kv_make_room(pd, ns, need, !(ns->flags & HOLD_NS_NO_EVICT));
		if (rc == 0)
			rc = kv_place(pd, ns, h, size, &v);
		if (rc < 0) {
			e = *kv_slot(ns, key, klen, h);
			if (e != NULL && kv_entry_unused(e))
				kv_entry_drop(ns, e);
			kv_loc(NULL, loc, NULL, rc, NULL, 0);
			return 0;
		}
		e = *kv_slot(ns, key, klen, h); /* eviction may have dropped it */
		if (e == NULL && (e = kv_entry_new(ns, key, klen, h)) == NULL) {
			kv_val_retire(pd, &v);
			kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
			return 0;
		}
		/* The last writer wins, once its reservation is made: a failed one changes nothing.
		 */
		if (e->has_pending)
			kv_pending_retire(pd, ns, e);
		if (kv_owner_charge(pd, &v, owner) < 0) {
			kv_val_retire(pd, &v);
			if (kv_entry_unused(e))
				kv_entry_drop(ns, e);
			kv_loc(NULL, loc, NULL, -ENOMEM, NULL, 0);
			return 0;
		}
		v.version = ++ns->next_version;
		e->pending = v;
		kv_set_pending(ns, e, true);
		e->pnode = q->node;
		e->psession = q->session;
		e->preserved_at = units_now_ms();
		ns->used += kv_val_bytes(&v);
		{
			struct kv_place all[KV_MAX_REPLICAS];
			size_t n = kv_places(&v, all), k;

			for (k = 0; k < n; k++)
				hold_tell(pd, all[k].node, all[k].arena, all[k].off, all[k].alen,
					  KV_HOLD_ID(ns));
		}
		kv_loc(NULL, loc, pl, 0, &v, 0); /* every place: the writer fills each */
		return 1;
	}
	/*
	 * commit, abort, release: first the version kept out of the index (a
	 * superseded or flushed write, a value removed while read), then the entry.
	 */
	if (strcmp(op, "commit") == 0 || strcmp(op, "abort") == 0 || strcmp(op, "release") == 0) {
		uint64_t version = kr->versions[i];
		struct kv_zombie *z;
		int64_t ttl;
		bool fresh;

		if (e != NULL && strcmp(op, "release") == 0 &&
		    kv_unpin(&e->pins, q->node, q->session, version)) {
			kv_loc(NULL, loc, NULL, 0, NULL, 0);
			return 1;
		}
		if (e != NULL && op[0] != 'r' && e->has_pending && e->pending.version == version) {
			/* A reservation is its session's: nobody else may publish or free it. */
			if (e->pnode != q->node || e->psession != q->session) {
				kv_loc(NULL, loc, NULL, -EPERM, NULL, 0);
				return 0;
			}
			/* A value of the shared store whose bytes are not its key's is dropped. */
			rc = op[0] == 'c' && (ns->flags & HOLD_NS_SHARED) ? kv_verify(pd, ns, e, q)
									  : 0;
			if (op[0] == 'a' || rc < 0) { /* nobody writes there any more */
				kv_val_free(pd, ns, &e->pending);
				kv_set_pending(ns, e, false);
				if (kv_entry_unused(e))
					kv_entry_drop(ns, e);
				kv_loc(NULL, loc, NULL, rc, NULL, 0);
				return rc == 0;
			}
			/* In a dedup namespace the writer's holder takes a reference. */
			if ((ns->flags & HOLD_NS_DEDUP) &&
			    (rc = kv_holder_add(pd, ns, e->key, e->klen, e)) < 0) {
				kv_loc(NULL, loc, NULL, rc, NULL, 0);
				return 0;
			}
			/* A new version of a key keeps its expiry (APPEND, INCR); SET sets its own.
			 */
			ttl = e->has_val ? e->expire_ms : 0;
			fresh = !e->has_val;
			if (e->has_val)
				kv_val_out(pd, ns, e);
			e->val = e->pending;
			e->has_val = true;
			kv_set_pending(ns, e, false);
			kv_set_expire(ns, e, ttl);
			TAILQ_INSERT_TAIL(kv_lru(ns, e), e, lru);
			ns->puts++;
			/* The lender's record now names the value: a restarted coordinator rebuilds
			 * it. */
			kv_tell(pd, ns, e);
			if (fresh)
				kvev_stored(pd, ns->name, e->key, e->klen);
			kv_loc(NULL, loc, NULL, 0, &e->val, 0);
			return 1;
		}
		TAILQ_FOREACH(z, &ns->zombies, entry)
			if (z->val.version == version &&
			    kv_unpin(&z->pins, q->node, q->session, version)) {
				/* Superseded, flushed or removed: as if overwritten at once. */
				kv_zombies_sweep(pd, ns);
				kv_loc(NULL, loc, NULL, 0, NULL, 0);
				return 1;
			}
		kv_loc(NULL, loc, NULL, op[0] == 'c' ? -ESTALE : -ENOENT, NULL, 0);
		return 0;
	}
	if (e == NULL) {
		kv_loc(NULL, loc, NULL, -ENOENT, NULL, 0);
		return 0;
	}
	if (strcmp(op, "remove") == 0) {
		kv_entry_clear(pd, ns, e);
		kv_loc(NULL, loc, NULL, 0, NULL, 0);
		return 1;
	}
	kv_loc(NULL, loc, NULL, -EINVAL, NULL, 0);
	return 0;
}

/*
 * Reply with the locations. access (4 read, 2 write, 0 none) is what the
 * session may now do with their places: its own poold grants it that and
 * carries the transfers (grant.c). No lender's address or key goes to a
 * client.
 */
int kv_reply(struct req *q, Pool__KvLocation *locs, size_t n, uint64_t count, unsigned access)
{
	Pool__KvReply reply = POOL__KV_REPLY__INIT;
	Pool__KvLocation **lp = calloc(n ? n : 1, sizeof(*lp));
	size_t i;
	int rc;

	if (lp == NULL)
		return req_errorf(q, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		lp[i] = &locs[i];
	reply.locations = lp;
	reply.n_locations = n;
	reply.has_count = 1;
	reply.count = count;
	if (access != 0) {
		reply.has_access = 1;
		reply.access = access;
	}
	rc = req_reply(q, WIRE_KV_REPLY, &reply.base);
	free(lp);
	return rc;
}

/*
 * Whether the caller's session holds a transfer of key to node: a pin of a
 * value with a place there, or its own reservation there.
 */
static bool kv_was_given(struct kv_ns *ns, const struct req *q, const ProtobufCBinaryData *key,
			 uint32_t node)
{
	struct kv_entry *e;
	struct kv_zombie *z;
	struct kv_pin *p;

	if (key->len == 0 || key->len > POOL_KV_KEY_MAX)
		return false;
	e = *kv_slot(ns, key->data, key->len, kv_hash(key->data, key->len));
	if (e != NULL && e->has_pending && e->pnode == q->node && e->psession == q->session &&
	    kv_val_on(&e->pending, node))
		return true;
	for (p = e != NULL ? e->pins : NULL; p != NULL; p = p->next)
		if (p->node == q->node && p->session == q->session && e->has_val &&
		    kv_val_on(&e->val, node))
			return true;
	TAILQ_FOREACH(z, &ns->zombies, entry) /* replaced or spilled while it was read */
		for (p = z->pins; p != NULL; p = p->next)
			if (p->node == q->node && p->session == q->session &&
			    kv_val_on(&z->val, node))
				return true;
	return false;
}

/*
 * Whether the caller may access the namespace's values with the given bits
 * (4 read, 2 write): admins always; the others by its owner, group and mode,
 * as for regions.
 */
bool kv_ns_allowed(const struct kv_ns *ns, const struct req *q, unsigned want)
{
	return q->admin || req_mode_allows(q, ns->uid, ns->gid, ns->mode, want);
}

/* The access a KV operation needs: lookups (and exists) read, writes and their ends write, the rest
 * none. */
unsigned kv_op_access(const char *op)
{
	if (strcmp(op, "lookup") == 0 || strcmp(op, "exists") == 0 || strcmp(op, "match") == 0)
		return 4;
	if (strcmp(op, "reserve") == 0 || strcmp(op, "commit") == 0 || strcmp(op, "abort") == 0 ||
	    strcmp(op, "remove") == 0)
		return 2;
	return 0; /* release (of the caller's own pins), failed (of its own transfers) */
}

static int kv_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvRequest *kr = (const Pool__KvRequest *)msg;
	struct poold *pd = q->pd;
	struct kv_durable *d = NULL;
	struct kv_locplaces *pl;
	Pool__KvLocation *locs;
	struct kv_ns *ns = kv_ns_find(pd, kr->ns);
	uint64_t count = 0;
	size_t i;
	int rc;

	if (ns == NULL)
		return req_errorf(q, -ENOENT, "no KV namespace '%s'", kr->ns);
	if (!kv_ns_allowed(ns, q, kv_op_access(kr->op)))
		return req_errorf(q, -EACCES,
				  "KV namespace '%s' (mode %03o, uid %u): %s access "
				  "denied",
				  ns->name, ns->mode, (unsigned)ns->uid,
				  kv_op_access(kr->op) & 2 ? "write" : "read");
	if ((ns->flags & HOLD_NS_DEDUP) && (rc = kv_dedup_holder(q, ns, kr)) < 0)
		return rc;
	if ((ns->flags & HOLD_NS_DEDUP) &&
	    (strcmp(kr->op, "adopt") == 0 || strcmp(kr->op, "adopted") == 0 ||
	     strcmp(kr->op, "recount") == 0))
		return kv_recount_request(q, ns, kr);
	if (strcmp(kr->op, "failed") == 0) {
		/* A client could not reach a lender: suspect it now, not after heartbeats. */
		if (!kr->has_node || kr->n_keys != 1 ||
		    !kv_was_given(ns, q, &kr->keys[0], kr->node))
			return req_errorf(q, -EPERM,
					  "a lender is reported only with a key whose "
					  "transfer to it the caller was given");
		coord_suspect(pd, kr->node);
		return kv_reply(q, NULL, 0, 0, 0);
	}
	if (kr->n_keys > KV_MAX_KEYS)
		return req_errorf(q, -E2BIG, "at most %d keys per request", KV_MAX_KEYS);
	if ((strcmp(kr->op, "reserve") == 0 && kr->n_sizes != kr->n_keys) ||
	    ((strcmp(kr->op, "commit") == 0 || strcmp(kr->op, "release") == 0 ||
	      strcmp(kr->op, "abort") == 0) &&
	     kr->n_versions != kr->n_keys))
		return req_errorf(q, -EINVAL, "%s needs one %s per key", kr->op,
				  kr->op[0] == 'r' && kr->op[2] == 's' ? "size" : "version");
	if (strcmp(kr->op, "match") == 0) {
		for (i = 0; i < kr->n_keys; i++) {
			struct kv_entry *e = *kv_slot(ns, kr->keys[i].data, kr->keys[i].len,
						      kv_hash(kr->keys[i].data, kr->keys[i].len));

			if (e == NULL || !e->has_val || !kv_val_usable(pd, &e->val))
				break;
		}
		return kv_reply(q, NULL, 0, i, 0);
	}
	locs = calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*locs));
	pl = ns->replicas > 1 ? calloc(kr->n_keys ? kr->n_keys : 1, sizeof(*pl)) : NULL;
	if (locs == NULL || (ns->replicas > 1 && pl == NULL)) {
		free(locs);
		return req_errorf(q, -ENOMEM, "out of memory");
	}
	/* Commits of persistent values are answered once their lenders made them durable. */
	if (strcmp(kr->op, "commit") == 0 && (ns->flags & HOLD_NS_PERSISTENT) &&
	    (d = calloc(1, sizeof(*d))) != NULL) {
		d->locs = locs;
		d->n = kr->n_keys;
		pd->kv->durable = d;
	}
	for (i = 0; i < kr->n_keys; i++) {
		pd->kv->durable_i = i;
		count += (uint64_t)kv_one(q, ns, kr, i, &locs[i], pl ? &pl[i] : NULL);
	}
	kvev_end(pd);
	pd->kv->durable = NULL;
	if (d != NULL)
		kv_durable_send(pd, d);
	if (d != NULL) { /* (a commit's locations name no copies: pl is not theirs) */
		free(pl);
		pl = NULL;
		d->count = count;
		if (d->pending > 0 && (d->q = req_hold(q)) != NULL)
			return REQ_LATER; /* the last lender's answer replies */
		count -= d->lost;
		if (d->pending > 0)
			d->locs = NULL; /* without memory to wait: the reply goes now */
		else
			free(d);
	}
	if (strcmp(kr->op, "reserve") == 0 || strcmp(kr->op, "remove") == 0)
		region_account(pd);
	rc = kv_reply(q, locs, kr->n_keys, count,
		      strcmp(kr->op, "lookup") == 0    ? 4
		      : strcmp(kr->op, "reserve") == 0 ? 2
						       : 0);
	free(locs);
	free(pl);
	return rc;
}

void kv_ns_msg(const struct kv_ns *ns, Pool__KvNamespace *m)
{
	pool__kv_namespace__init(m);
	m->name = (char *)ns->name;
	m->capacity = ns->capacity;
	m->has_used = m->has_entries = m->has_hits = m->has_misses = 1;
	m->has_evictions = m->has_puts = m->has_id = 1;
	m->used = ns->used;
	m->entries = ns->nentries;
	m->hits = ns->hits;
	m->misses = ns->misses;
	m->evictions = ns->evictions;
	m->puts = ns->puts;
	m->id = ns->id;
	m->has_pmem_used = m->has_spills = m->has_promotions = m->has_pmem_hits = 1;
	m->pmem_used = ns->pmem_used;
	if (kv_tier(ns) == TIER_PMEM) { /* used counts the namespace's own tier */
		m->pmem_used += ns->used;
		m->used = 0;
	}
	m->spills = ns->spills;
	m->promotions = ns->promotions;
	m->pmem_hits = ns->pmem_hits;
	m->tier = (char *)kv_tier_name(ns);
	m->has_replicas = 1;
	m->replicas = ns->replicas;
	m->has_size_hint = 1;
	m->size_hint = ns->size_hint;
	m->evict = (char *)(ns->flags & HOLD_NS_NO_EVICT ? "none" : "lru");
	m->has_dedup = 1;
	m->dedup = (ns->flags & HOLD_NS_DEDUP) != 0;
	m->has_uid = m->has_gid = m->has_mode = 1;
	m->uid = ns->uid;
	m->gid = ns->gid;
	m->mode = ns->mode;
}

static int kv_ns_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__KvNsRequest *r = (const Pool__KvNsRequest *)msg;
	Pool__KvNsReply reply = POOL__KV_NS_REPLY__INIT;
	struct poold *pd = q->pd;
	Pool__KvNamespace *m = NULL, **mp = NULL;
	struct kv_ns *ns = kv_ns_find(pd, r->name);
	size_t n = 0;
	int rc;

	if (strcmp(r->op, "create") == 0) {
		uint32_t flags = 0;
		size_t count = 0;

		if (!name_ok(r->name, POOL_REGION_NAME_MAX, true))
			return req_errorf(q, -EINVAL,
					  "namespace name '%s': 1-63 characters of "
					  "[A-Za-z0-9._:/-]",
					  r->name);
		if (ns != NULL)
			return req_errorf(q, -EEXIST, "KV namespace '%s' exists", r->name);
		TAILQ_FOREACH(ns, &pd->kv->list, entry)
			count++;
		if (count >= KV_MAX_NAMESPACES)
			return req_errorf(q, -EUSERS, "at most %d KV namespaces",
					  KV_MAX_NAMESPACES);
		if (!r->has_capacity || r->capacity < (1u << 20))
			return req_errorf(q, -EINVAL,
					  "a namespace needs a capacity of at least 1M");
		if (r->tier != NULL && strcmp(r->tier, "dram") == 0)
			flags |= HOLD_NS_DRAM_ONLY;
		else if (r->tier != NULL && strcmp(r->tier, "pmem") == 0)
			flags |= HOLD_NS_PERSISTENT;
		else if (r->tier != NULL && strcmp(r->tier, "dram+pmem") != 0)
			return req_errorf(q, -EINVAL, "tier '%s': dram, dram+pmem or pmem",
					  r->tier);
		if (r->evict != NULL && strcmp(r->evict, "none") == 0)
			flags |= HOLD_NS_NO_EVICT;
		else if (r->evict != NULL && strcmp(r->evict, "lru") != 0)
			return req_errorf(q, -EINVAL, "evict '%s': lru or none", r->evict);
		if (r->has_replicas && (r->replicas < 1 || r->replicas > KV_MAX_REPLICAS))
			return req_errorf(q, -EINVAL, "replicas %u: 1 to %d", r->replicas,
					  KV_MAX_REPLICAS);
		if (r->has_size_hint &&
		    (r->size_hint > POOL_KV_VALUE_MAX || r->size_hint > r->capacity))
			return req_errorf(q, -EINVAL,
					  "size hint %llu: at most 64M and the capacity",
					  (unsigned long long)r->size_hint);
		ns = kv_ns_new(pd, r->name, r->capacity);
		if (ns == NULL)
			return req_errorf(q, -ENOMEM, "out of memory");
		ns->flags = flags;
		ns->replicas = r->has_replicas ? r->replicas : 1;
		ns->size_hint = r->has_size_hint ? r->size_hint : 0;
		ns->uid = q->uid;
		ns->gid = r->has_gid ? r->gid : q->gid;
		ns->mode = r->has_mode ? r->mode & 0777 : 0600;
		log_info(
		    "KV namespace '%s' created, capacity %llu, tier %s, evict %s, replicas %u, "
		    "uid %u gid %u mode %03o",
		    ns->name, (unsigned long long)ns->capacity, kv_tier_name(ns),
		    flags & HOLD_NS_NO_EVICT ? "none" : "lru", ns->replicas, (unsigned)ns->uid,
		    (unsigned)ns->gid, ns->mode);
		coordlog_namespaces(pd);
		kv_defs_send(pd);
	} else if (strcmp(r->op, "drop") == 0 || strcmp(r->op, "flush") == 0) {
		if (ns == NULL)
			return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
		log_info("KV namespace '%s' %s", ns->name, r->op[0] == 'd' ? "dropped" : "flushed");
		if (r->op[0] == 'd') {
			kv_ns_free(pd, ns);
			coordlog_namespaces(pd);
			kv_defs_send(pd);
			return req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
		}
		kv_ns_flush(pd, ns);
	} else if (strcmp(r->op, "stats") != 0) {
		return req_errorf(q, -EINVAL, "unknown namespace operation '%s'", r->op);
	} else if (r->name[0] != '\0' && ns == NULL) {
		return req_errorf(q, -ENOENT, "no KV namespace '%s'", r->name);
	} else if (ns != NULL && !kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2)) {
		return req_errorf(q, -EACCES,
				  "KV namespace '%s' (mode %03o, uid %u): access denied", ns->name,
				  ns->mode, (unsigned)ns->uid);
	}
	/* Reply with the namespace, or all of them for stats of "". */
	TAILQ_FOREACH(ns, &pd->kv->list, entry)
		n++;
	m = calloc(n ? n : 1, sizeof(*m));
	mp = calloc(n ? n : 1, sizeof(*mp));
	if (m == NULL || mp == NULL) {
		rc = req_errorf(q, -ENOMEM, "out of memory");
		goto out;
	}
	n = 0;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		if (r->name[0] != '\0' && strcmp(ns->name, r->name) != 0)
			continue;
		/* A listing shows a uid the namespaces it may use. */
		if (!kv_ns_allowed(ns, q, 4) && !kv_ns_allowed(ns, q, 2))
			continue;
		kv_ns_msg(ns, &m[n]);
		mp[n] = &m[n];
		n++;
	}
	reply.namespaces = mp;
	reply.n_namespaces = n;
	rc = req_reply(q, WIRE_KV_NS_REPLY, &reply.base);
out:
	free(m);
	free(mp);
	return rc;
}

/* Every namespace's stats, as kv stats shows them (the metrics endpoint). */
void kv_stats_each(struct poold *pd, void (*cb)(void *arg, const Pool__KvNamespace *m), void *arg)
{
	Pool__KvNamespace m;
	struct kv_ns *ns;

	if (pd->kv == NULL)
		return;
	TAILQ_FOREACH(ns, &pd->kv->list, entry) {
		kv_ns_msg(ns, &m);
		cb(arg, &m);
	}
}

/* Namespaces are made, dropped and flushed by admins; adopting and recounting holders too. */
static const struct ctl_op kv_ns_ops[] = {
    {"create", CTL_ADMIN},
    {"drop", CTL_ADMIN},
    {"flush", CTL_ADMIN},
    {NULL, 0},
};

static const struct ctl_op kv_ops[] = {
    {"adopt", CTL_ADMIN},
    {"adopted", CTL_ADMIN},
    {"recount", CTL_ADMIN},
    {NULL, 0},
};

const struct ctl_handler kv_handlers[] = {
    {WIRE_KV_NS, CTL_ANY, AT_COORD, kv_ns_request, kv_ns_ops},
    {WIRE_KV, CTL_ANY, AT_COORD, kv_request, kv_ops},
    {0, 0, 0, NULL, NULL},
};

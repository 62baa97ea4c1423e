/*
 * daemon/kv/kv-demand.c - a sharded namespace's capacity shared among its
 * owners as their demand goes, so that their LRUs together evict about
 * what one LRU over the namespace would.
 *
 * Each owner evicts its own least recently used values when its part is
 * full. With fixed parts (capacity * shards owned / 1,024), an owner whose
 * keys are in demand right now evicts values younger than those another
 * owner keeps, where one LRU would have taken the other's oldest: on the
 * Mooncake trace at 25% capacity that lost up to 1.4 points of hit rate.
 * One LRU evicts at one age for the whole namespace; so the parts are made
 * to keep values back to the same age. Each owner counts its values' bytes
 * by when they were last used (struct kv_ages, kept as they are used), and
 * so knows how much it holds that was used within t ms, held(t); the
 * keeper finds the age T at which the owners' held(T) add up to the
 * capacity, and each part is its owner's held(T) (kv_demand_split()).
 * Past its oldest value an owner that evicts would hold more: it is taken
 * to go on at its mean rate (bytes / oldest age). Until one evicts, each
 * keeps what it holds and the room left is shared by rate; while none
 * evicts, a namespace that holds its capacity keeps its parts (reads move
 * no value out, as in one LRU).
 *
 * Every KVDEMAND_MS while a namespace's keys are served here, its owner
 * reports its bytes, its oldest value's age, whether it evicted and
 * held(t) at 8 ms, 16 ms... 4 s to the namespace's keeper, the owner of
 * the shard of the empty key (one call per keeper for all namespaces it
 * keeps, on the side link so that it does not wait behind carried values),
 * and is answered its part from then on. The ages must be fresh: on the
 * trace, whose cache turns over in about 300 ms, reports every 50 ms
 * gained nothing over fixed parts, every 10 ms most of what one LRU keeps
 * more (doc/benchmarks.md). With more than KVDEMAND_OWNERS owners the
 * reports come less often, so a keeper takes at most KVDEMAND_OWNERS
 * reports of a namespace every KVDEMAND_MS.
 *
 * The keeper keeps what each owner reported and the part it gave each (its
 * book). A part that shrinks is evicted down to at once (from the loop); one
 * grows only into room the others gave back and 1/KVDEMAND_OVER of the
 * capacity more, so the parts given never add up to more than that over
 * the capacity: the others' parts in the book are from their last reports,
 * and a grower that waited for them all to shrink first would leave room
 * unused. A part never falls below 1/KVDEMAND_FLOOR of an even one, so an
 * owner whose keys come back has room to keep them while it reports.
 *
 * A quiet owner (none of its keys served) does not report; while others
 * evict, its values are older than any used of late, those one LRU would
 * evict first: the keeper gives it the floor and tells it so (KvPart),
 * once it has not reported for KVDEMAND_QUIET_MS, and the room goes to
 * the others. Parts are even again after each change of the shard map (the
 * books with them), and for namespaces of 2 replicas always: a backup's
 * copies follow its owners' evictions, not its own LRU.
 */
#include "config.h"

#include <event2/event.h>

#include "daemon/kv/kv-int.h"
#include "daemon/hold/hold.h"
#include "daemon/kv/kv.h"
#include "daemon/link/link.h"
#include "daemon/member/member.h"
#include "daemon/util/util.h"

#define KVDEMAND_MS 10		 /* a used namespace's report, this often ... */
#define KVDEMAND_OWNERS 32	 /* ... for each KVDEMAND_OWNERS owners (a keeper's load) */
#define KVDEMAND_STALE_MS 1000	 /* a report older than this (or 20 turns) no longer counts */
#define KVDEMAND_QUIET_MS 5000	 /* no report this long (or 100 turns) while others evict: quiet */
#define KVDEMAND_EVICTING 5	 /* an eviction reported this many turns ago is still going on */
#define KVDEMAND_FLOOR 16	 /* no part below 1/16 of an even one */
#define KVDEMAND_OVER 32	 /* the parts given pass the capacity by 1/32 at most */
#define KVDEMAND_ANSWER_MAX 4096 /* bytes of an answer: a part for each namespace asked */

/* What one owner reported to a namespace's keeper, and the part it was given. */
struct kv_demand_owner {
	uint32_t node;
	struct kv_demand_use use;
	uint64_t at_ms; /* when it reported (0: never since the map changed) */
	uint64_t part;
	uint64_t target; /* its part in the last split, if it took part in it (else 0) */
};

/* A namespace's owners at its keeper, for the map it was made for, and room to work out parts. */
struct kv_demand_book {
	uint64_t map_gen, made_ms;
	uint64_t split_ms; /* the last split, of the owners then fresh */
	size_t n;
	struct kv_demand_use *use; /* room for n: the owners split, */
	uint64_t *part;		   /* ... their parts */
	size_t *who;		   /* ... and their places in owner[] */
	struct kv_demand_owner owner[];
};

/* A namespace used here, and its keeper. */
struct kv_demand_pick {
	uint32_t keeper;
	struct kv_ns *ns;
};

/* A report in flight: the namespaces asked of a keeper, in order. */
struct kv_demand_call {
	TAILQ_ENTRY(kv_demand_call) entry;
	struct poold *pd; /* NULL once the KV index it was made for closed */
	uint32_t keeper;
	uint64_t map_gen;
	size_t n;
	uint64_t ns[];
};

/* An owner's bytes per ms of age: what its part holds for each ms it keeps values back. */
static double kv_demand_rate(const struct kv_demand_use *use)
{
	return (double)use->used / (double)MAX(use->age_ms, 1);
}

/*
 * What an owner keeps of the values used in the last t ms: as its points
 * say, straight between them (and from the last to its oldest age), or as
 * its rate says without them; past its oldest age, one that evicts would
 * keep more at its rate, one that did not holds no more than it has.
 */
static double kv_demand_held(const struct kv_demand_use *use, double t)
{
	double age = KV_AGE_EPOCH_MS, last_age = 0, last = 0, held;
	size_t i;

	if (t >= (double)use->age_ms || use->npoints == 0) {
		held = kv_demand_rate(use) * t;
		if (t >= (double)use->age_ms)
			held = (double)use->used + kv_demand_rate(use) * (t - (double)use->age_ms);
		return use->evicted ? held : MIN(held, (double)use->used);
	}
	for (i = 0; i < use->npoints && age < (double)use->age_ms; i++, age *= 2) {
		if (t <= age)
			return last +
			       ((double)use->held[i] - last) * (t - last_age) / (age - last_age);
		last_age = age;
		last = (double)use->held[i];
	}
	return last +
	       ((double)use->used - last) * (t - last_age) / ((double)use->age_ms - last_age);
}

/*
 * The age t (ms) at which the owners of use[] not set in ret[] (0) keep
 * room bytes between them (kv_demand_held()), or as far back as they can.
 */
static double kv_demand_age(const struct kv_demand_use *use, size_t n, const uint64_t *ret,
			    double room)
{
	double lo = 0, hi = 1, sum;
	size_t i, k;

	for (i = 0; i < n; i++) /* (from the oldest age reported, where most is held) */
		hi = MAX(hi, (double)use[i].age_ms);
	for (k = 0; k < 64; k++, hi *= 2) { /* (an age they keep more than room at, or none) */
		for (sum = 0, i = 0; i < n; i++)
			sum += ret[i] == 0 ? kv_demand_held(&use[i], hi) : 0;
		if (sum >= room)
			break;
	}
	for (k = 0; k < 40; k++) { /* (to a 2^-40th of it) */
		double mid = (lo + hi) / 2;

		for (sum = 0, i = 0; i < n; i++)
			sum += ret[i] == 0 ? kv_demand_held(&use[i], mid) : 0;
		*(sum < room ? &lo : &hi) = mid;
	}
	return hi;
}

void kv_demand_split(const struct kv_demand_use *use, size_t n, uint64_t capacity, uint64_t *ret)
{
	double rates = 0, floor, room, t;
	uint64_t used = 0;
	bool full = false, floored;
	size_t i;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		rates += kv_demand_rate(&use[i]);
		used += use[i].used;
		full = full || use[i].evicted;
	}
	if (rates <= 0) { /* (none holds anything: even parts) */
		for (i = 0; i < n; i++)
			ret[i] = capacity / n;
		return;
	}
	if (!full && used < capacity) {
		/* Room left: each keeps what it holds, the rest goes as the rates. */
		for (i = 0; i < n; i++)
			ret[i] = use[i].used + (uint64_t)((double)(capacity - used) *
							  kv_demand_rate(&use[i]) / rates);
		return;
	}
	/*
	 * Full: the parts that keep the values used in the last t ms, the
	 * same t for all, so that they fill the capacity (one LRU's); one
	 * that would fall below the floor gets the floor, the others share
	 * the rest.
	 */
	floor = (double)capacity / (double)n / KVDEMAND_FLOOR;
	room = (double)capacity;
	for (i = 0; i < n; i++)
		ret[i] = 0; /* (the floored are set to it) */
	do {
		t = kv_demand_age(use, n, ret, room);
		floored = false;
		for (i = 0; i < n; i++) {
			if (ret[i] != 0 || kv_demand_held(&use[i], t) >= floor)
				continue;
			ret[i] = (uint64_t)floor;
			room -= floor;
			floored = true;
		}
	} while (floored);
	for (i = 0; i < n; i++)
		if (ret[i] == 0)
			ret[i] = (uint64_t)kv_demand_held(&use[i], t);
}

/*
 * The time between reports: KVDEMAND_MS, or longer with more owners than
 * KVDEMAND_OWNERS, so that a keeper takes at most KVDEMAND_OWNERS reports
 * of a namespace each KVDEMAND_MS.
 */
static uint64_t kv_demand_turn_ms(struct poold *pd)
{
	size_t owners = member_kv_shards(pd)->nowners;

	return KVDEMAND_MS * MAX(1, (owners + KVDEMAND_OWNERS - 1) / KVDEMAND_OWNERS);
}

/* The ring's epochs up to epoch: those that drop out of it count as older. */
static void kv_ages_roll(struct kv_ages *a, uint64_t epoch)
{
	uint64_t i, n;

	if (epoch <= a->newest)
		return;
	n = MIN(epoch - a->newest, (uint64_t)KV_AGE_EPOCHS);
	for (i = 1; i <= n; i++) {
		uint64_t *slot = &a->bytes[(a->newest + i) % KV_AGE_EPOCHS];

		a->older += *slot;
		*slot = 0;
	}
	a->newest = epoch;
}

/*
 * Count bytes of a value last used at used_ms (units_now_ms(), modulo 2^32)
 * in, or out; now is units_now_ms().
 */
void kv_ages_count(struct kv_ages *a, uint64_t now, uint32_t used_ms, uint64_t bytes, bool add)
{
	uint64_t epoch = (now - (uint32_t)((uint32_t)now - used_ms)) / KV_AGE_EPOCH_MS, *slot;

	kv_ages_roll(a, now / KV_AGE_EPOCH_MS);
	slot = a->newest - epoch < KV_AGE_EPOCHS ? &a->bytes[epoch % KV_AGE_EPOCHS] : &a->older;
	if (add)
		*slot += bytes;
	else
		*slot -= MIN(*slot, bytes);
}

/* ns's values all left its LRU (a flush made them a ghost's). */
void kv_ages_clear(struct kv_ns *ns)
{
	if (ns->ages != NULL)
		memset(ns->ages, 0, sizeof(*ns->ages));
}

/* Of ns's values here, the bytes used within 8 ms, 16 ms..., into use's points. */
static void kv_ages_points(struct kv_ns *ns, struct kv_demand_use *use)
{
	struct kv_ages *a = ns->ages;
	uint64_t sum = 0, aged, j, epochs = 1;

	use->npoints = 0;
	if (a == NULL)
		return;
	kv_ages_roll(a, units_now_ms() / KV_AGE_EPOCH_MS);
	for (aged = a->older, j = 0; j < KV_AGE_EPOCHS; j++)
		aged += a->bytes[j];
	/* (values pinned against eviction are off the LRU: counted as the newest) */
	sum = ns->used - MIN(ns->used, aged);
	for (j = 0; use->npoints < KV_DEMAND_POINTS; epochs *= 2) {
		for (; j < epochs && j < KV_AGE_EPOCHS; j++)
			sum += a->bytes[(a->newest - j) % KV_AGE_EPOCHS];
		use->held[use->npoints++] = MIN(sum, ns->used);
	}
}

/* Namespace ns's keeper: the owner of the shard of its empty key (0: no owners). */
static uint32_t kv_demand_keeper(struct poold *pd, const struct kv_ns *ns)
{
	const struct kv_shard_map *map = member_kv_shards(pd);

	return map->nowners > 0 ? map->owner[kv_shard_of(ns->name, "", 0)] : 0;
}

/* Whether ns's part here follows demand: sharded, 1 replica, more than one owner. */
static bool kv_demand_follows(struct poold *pd, const struct kv_ns *ns)
{
	return (ns->flags & HOLD_NS_SHARDED) && ns->replicas == 1 &&
	       member_kv_shards(pd)->nowners > 1;
}

void kv_demand_book_free(struct kv_demand_book *b)
{
	if (b == NULL)
		return;
	free(b->use);
	free(b->part);
	free(b->who);
	free(b);
}

/* ns's book at its keeper, made for the map now (NULL: out of memory). */
static struct kv_demand_book *kv_demand_book(struct poold *pd, struct kv_ns *ns)
{
	const struct kv_shard_map *map = member_kv_shards(pd);
	struct kv_demand_book *b = ns->book;
	size_t i;

	if (b != NULL && b->map_gen == pd->kv->map_gen)
		return b;
	kv_demand_book_free(b);
	ns->book = b = calloc(1, sizeof(*b) + map->nowners * sizeof(b->owner[0]));
	if (b != NULL) {
		b->use = calloc(map->nowners ? map->nowners : 1, sizeof(*b->use));
		b->part = calloc(map->nowners ? map->nowners : 1, sizeof(*b->part));
		b->who = calloc(map->nowners ? map->nowners : 1, sizeof(*b->who));
	}
	if (b == NULL || b->use == NULL || b->part == NULL || b->who == NULL) {
		kv_demand_book_free(b);
		return ns->book = NULL;
	}
	b->map_gen = pd->kv->map_gen;
	b->made_ms = units_now_ms();
	b->n = map->nowners;
	for (i = 0; i < b->n; i++) {
		b->owner[i].node = map->owners[i];
		b->owner[i].part =
		    ns->capacity / KV_SHARDS * kv_shard_map_owned(map, map->owners[i]);
	}
	return b;
}

static void kv_demand_apply(struct poold *pd, struct kv_ns *ns, uint64_t part);

/* A report older than this no longer counts at the keeper. */
static uint64_t kv_demand_stale_ms(uint64_t turn)
{
	return MAX(KVDEMAND_STALE_MS, 20 * turn);
}

/*
 * An owner that has not reported for this long while others evict is
 * quiet: longer than a loaded host's late report (a poold that does not
 * run for that long is declared dead and the map changes anyway).
 */
static uint64_t kv_demand_quiet_ms(uint64_t turn)
{
	return MAX(KVDEMAND_QUIET_MS, 100 * turn);
}

/* Whether owner x reported of late. */
static bool kv_demand_fresh(const struct kv_demand_owner *x, uint64_t now, uint64_t turn)
{
	return x->at_ms != 0 && now - x->at_ms <= kv_demand_stale_ms(turn);
}

/* Whether owner x evicts now, as it reported. */
static bool kv_demand_evicting(const struct kv_demand_owner *x, uint64_t now, uint64_t turn)
{
	return x->at_ms != 0 && x->use.evicted && now - x->at_ms <= KVDEMAND_EVICTING * turn;
}

/* A quiet owner's answer to its part: nothing to do (one not taken is fixed by its next report). */
static void kv_demand_told(struct poold *pd, void *arg, int status, uint16_t type,
			   const uint8_t *bytes, size_t len)
{
	(void)pd, (void)arg, (void)status, (void)type, (void)bytes, (void)len;
}

/*
 * At ns's keeper, while the namespace evicts: owner x has not reported for
 * a while (none of its keys served), so its values are older than any
 * used of late, those one LRU would evict first. It is given the floor,
 * told so (an owner that does not get it holds more than its part until
 * it reports again, or the map changes for its death).
 */
static void kv_demand_quiet(struct poold *pd, struct kv_ns *ns, struct kv_demand_owner *x,
			    uint64_t floor)
{
	struct nodecall_as as = {0, 0, 0, true, 0};
	Pool__KvPart m = POOL__KV_PART__INIT;
	Pool__KvPartOf of = POOL__KV_PART_OF__INIT, *op = &of;

	if (x->part <= floor)
		return;
	x->part = floor;
	if (x->node == pd->node_id) {
		kv_demand_apply(pd, ns, floor);
		return;
	}
	of.ns = ns->name;
	of.part = floor;
	m.digest = member_kv_shards(pd)->digest;
	m.parts = &op;
	m.n_parts = 1;
	(void)nodecall_send_apart(pd, x->node, &as, WIRE_KV_PART, &m.base, KVDEMAND_ANSWER_MAX,
				  kv_demand_told, NULL);
}

/*
 * At ns's keeper: owner node reports its use; the part it may hold from
 * now on (0: it is no owner in this keeper's map, or out of memory: it
 * keeps its own).
 */
static uint64_t kv_demand_take(struct poold *pd, struct kv_ns *ns, uint32_t node,
			       const struct kv_demand_use *use)
{
	uint64_t now = units_now_ms(), turn = kv_demand_turn_ms(pd), budget = ns->capacity;
	uint64_t given = 0, used = 0, bound, part;
	struct kv_demand_book *b = kv_demand_book(pd, ns);
	size_t i, n = 0, me = SIZE_MAX;
	struct kv_demand_owner *o;
	bool evicting = false;

	if (b == NULL)
		return 0;
	for (i = 0; i < b->n && me == SIZE_MAX; i++)
		me = b->owner[i].node == node ? i : me;
	if (me == SIZE_MAX)
		return 0;
	o = &b->owner[me];
	o->use = *use;
	o->at_ms = now;
	for (i = 0; i < b->n; i++)
		evicting = evicting || kv_demand_evicting(&b->owner[i], now, turn);
	/* The parts of those that reported of late follow their rates; the others' stay. */
	for (i = 0; i < b->n; i++) {
		struct kv_demand_owner *x = &b->owner[i];

		if (!kv_demand_fresh(x, now, turn)) {
			if (evicting && now - MAX(x->at_ms, b->made_ms) > kv_demand_quiet_ms(turn))
				kv_demand_quiet(pd, ns, x, ns->capacity / b->n / KVDEMAND_FLOOR);
			given += x->part;
			budget -= MIN(budget, x->part);
			continue;
		}
		given += x->part;
		b->who[n] = i;
		b->use[n] = x->use;
		b->use[n].evicted = kv_demand_evicting(x, now, turn);
		used += b->use[n++].used;
	}
	/*
	 * One LRU evicts only to make room: while none evicts, the parts of
	 * a namespace that holds its capacity stay (reads change no part).
	 */
	if (!evicting && used >= budget)
		return o->part;
	/*
	 * Split again at each report; with more than KVDEMAND_OWNERS owners
	 * (each split a walk over all, a keeper taking KVDEMAND_OWNERS reports
	 * a turn) once every KVDEMAND_MS, the reports between taking their
	 * parts from the last.
	 */
	if (b->n <= KVDEMAND_OWNERS || now - b->split_ms >= KVDEMAND_MS || o->target == 0) {
		kv_demand_split(b->use, n, budget, b->part);
		for (i = 0; i < b->n; i++)
			b->owner[i].target = 0;
		for (i = 0; i < n; i++)
			b->owner[b->who[i]].target = MAX(b->part[i], 1);
		b->split_ms = now;
	}
	/* It grows only into room the others gave back, and 1/KVDEMAND_OVER more. */
	bound = ns->capacity + ns->capacity / KVDEMAND_OVER;
	part = o->target;
	if (part > o->part)
		part = MIN(part, o->part + (bound - MIN(bound, given)));
	o->part = part;
	return o->part;
}

/* Served for an owner's poold, in a call (nodecall.c): its use of the namespaces kept here. */
static int kv_demand_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__KvDemand *m = (const Pool__KvDemand *)msg;
	Pool__KvDemandReply reply = POOL__KV_DEMAND_REPLY__INIT;
	struct poold *pd = r->pd;
	uint64_t part[KV_MAX_NAMESPACES];
	size_t i;

	if (r->answer == NULL) /* (a client's, or one a node forwarded: none sends this) */
		return req_errorf(r, -EPERM, "a namespace's use is reported by a shard owner only");
	if (pd->kv == NULL)
		return req_errorf(r, -EAGAIN, "this poold keeps no KV shards now");
	if (m->n_uses > KV_MAX_NAMESPACES)
		return req_errorf(r, -EINVAL, "a report of more than %d namespaces",
				  KV_MAX_NAMESPACES);
	kv_owner_map(pd);
	if (m->digest != member_kv_shards(pd)->digest)
		return req_errorf(r, -ESTALE, "the shard map changed: parts are even again");
	for (i = 0; i < m->n_uses; i++) {
		const Pool__KvDemandUse *u = m->uses[i];
		struct kv_demand_use use = {
		    u->used, u->age_ms, u->has_evicted && u->evicted, {0}, 0};
		struct kv_ns *ns = kv_ns_find(pd, u->ns);

		/* (points that grow with age, no more than used: else the rate alone) */
		for (; use.npoints < MIN(u->n_held, (size_t)KV_DEMAND_POINTS); use.npoints++) {
			use.held[use.npoints] = u->held[use.npoints];
			if (use.held[use.npoints] > u->used ||
			    (use.npoints > 0 && use.held[use.npoints] < use.held[use.npoints - 1]))
				break;
		}
		if (use.npoints < MIN(u->n_held, (size_t)KV_DEMAND_POINTS))
			use.npoints = 0;

		part[i] = ns != NULL && kv_demand_follows(pd, ns) &&
				  kv_demand_keeper(pd, ns) == pd->node_id
			      ? kv_demand_take(pd, ns, r->node, &use)
			      : 0;
	}
	reply.part = part;
	reply.n_part = m->n_uses;
	return req_reply(r, WIRE_KV_DEMAND_REPLY, &reply.base);
}

/* Served for a keeper's poold, in a call: the part of a namespace this quiet owner holds now. */
static int kv_demand_part_request(struct req *r, const ProtobufCMessage *msg)
{
	const Pool__KvPart *m = (const Pool__KvPart *)msg;
	Pool__Ok ok = POOL__OK__INIT;
	struct poold *pd = r->pd;
	size_t i;

	if (r->answer == NULL)
		return req_errorf(r, -EPERM, "a namespace's part is given by its keeper only");
	if (pd->kv == NULL)
		return req_errorf(r, -EAGAIN, "this poold keeps no KV shards now");
	kv_owner_map(pd);
	if (m->digest != member_kv_shards(pd)->digest)
		return req_errorf(r, -ESTALE, "the shard map changed: parts are even again");
	for (i = 0; i < m->n_parts; i++) {
		struct kv_ns *ns = kv_ns_find(pd, m->parts[i]->ns);

		if (ns != NULL && kv_demand_follows(pd, ns) && kv_demand_keeper(pd, ns) == r->node)
			kv_demand_apply(pd, ns, m->parts[i]->part);
	}
	return req_reply(r, WIRE_OK, &ok.base);
}

const struct ctl_handler kv_demand_handlers[] = {
    {WIRE_KV_DEMAND, CTL_ADMIN, AT_HERE, kv_demand_request, NULL},
    {WIRE_KV_PART, CTL_ADMIN, AT_HERE, kv_demand_part_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/* ns's part here is part from now on (0: as it was); what it holds beyond goes. */
static void kv_demand_apply(struct poold *pd, struct kv_ns *ns, uint64_t part)
{
	if (part == 0 || part == kv_ns_room(ns))
		return;
	ns->given = part;
	pd->kv->part_changes++;
	if (ns->used > part)
		kv_evict_over(pd, ns);
}

/* A keeper's answer (from the loop). */
static void kv_demand_answer(struct poold *pd, void *arg, int status, uint16_t type,
			     const uint8_t *bytes, size_t len)
{
	struct kv_demand_call *call = arg;
	Pool__KvDemandReply *rep = NULL;
	size_t i;

	if (call->pd == NULL) { /* (the KV index closed) */
		free(call);
		return;
	}
	TAILQ_REMOVE(&pd->kv->demand_calls, call, entry);
	status = nodecall_reply(status, type, bytes, len, WIRE_KV_DEMAND_REPLY,
				(ProtobufCMessage **)&rep);
	/* (a map that changed meanwhile made the parts even: this answer is of the last) */
	if (status == 0 && pd->kv->map_gen == call->map_gen && rep->n_part == call->n) {
		for (i = 0; i < call->n; i++) {
			struct kv_ns *ns = kv_ns_by_id(pd, call->ns[i]);

			if (ns != NULL && kv_demand_follows(pd, ns))
				kv_demand_apply(pd, ns, rep->part[i]);
		}
	}
	if (rep != NULL)
		wire_msg_free(&rep->base);
	free(call);
}

/*
 * ns's use here, to report: its bytes, how long since its least recently
 * used value was used (ms), whether it evicted for values put since its
 * last report (evictions alone are a part that shrank: reads there are not
 * new values, and would be taken to go on at its rate).
 */
static struct kv_demand_use kv_demand_use(struct kv_ns *ns)
{
	const struct kv_entry *e = TAILQ_FIRST(&ns->lru);
	struct kv_demand_use use = {
	    .used = ns->used,
	    .age_ms = e != NULL ? (uint32_t)((uint32_t)units_now_ms() - e->used_ms) : 0,
	    .evicted = ns->evictions != ns->reported_evictions && ns->puts != ns->reported_puts,
	};

	ns->reported_evictions = ns->evictions;
	ns->reported_puts = ns->puts;
	kv_ages_points(ns, &use);
	return use;
}

/*
 * Whether ns was used here since its last report: its puts and hits (not
 * its evictions, which a smaller part makes: a quiet namespace's parts
 * stay).
 */
static bool kv_demand_used(const struct kv_ns *ns)
{
	return ns->puts + ns->hits != ns->reported;
}

/* Whether a report to keeper is still unanswered. */
static bool kv_demand_waits(struct poold *pd, uint32_t keeper)
{
	struct kv_demand_call *call;

	TAILQ_FOREACH(call, &pd->kv->demand_calls, entry)
		if (call->keeper == keeper)
			return true;
	return false;
}

/* Report to keeper the use of the n namespaces of ns[] it keeps (used here since their last). */
static void kv_demand_report(struct poold *pd, uint32_t keeper, struct kv_ns **ns, size_t n)
{
	struct nodecall_as as = {0, 0, 0, true, 0};
	Pool__KvDemand m = POOL__KV_DEMAND__INIT;
	Pool__KvDemandUse msgs[KV_MAX_NAMESPACES], *up[KV_MAX_NAMESPACES];
	uint64_t held[KV_MAX_NAMESPACES][KV_DEMAND_POINTS];
	struct kv_demand_call *call;
	size_t i;

	if (keeper == pd->node_id) { /* (its own keeper: no call) */
		for (i = 0; i < n; i++) {
			struct kv_demand_use use = kv_demand_use(ns[i]);

			kv_demand_apply(pd, ns[i], kv_demand_take(pd, ns[i], keeper, &use));
		}
		return;
	}
	if ((call = malloc(sizeof(*call) + n * sizeof(call->ns[0]))) == NULL)
		return;
	*call =
	    (struct kv_demand_call){.pd = pd, .keeper = keeper, .map_gen = pd->kv->map_gen, .n = n};
	for (i = 0; i < n; i++) {
		struct kv_demand_use u = kv_demand_use(ns[i]);

		pool__kv_demand_use__init(&msgs[i]);
		msgs[i].ns = ns[i]->name;
		msgs[i].used = u.used;
		msgs[i].age_ms = u.age_ms;
		msgs[i].has_evicted = msgs[i].evicted = u.evicted;
		memcpy(held[i], u.held, sizeof(held[i]));
		msgs[i].held = held[i];
		msgs[i].n_held = u.npoints;
		up[i] = &msgs[i];
		call->ns[i] = ns[i]->id;
	}
	m.digest = member_kv_shards(pd)->digest;
	m.uses = up;
	m.n_uses = n;
	/* (on the side link: not behind the values carried on the other) */
	if (nodecall_send_apart(pd, keeper, &as, WIRE_KV_DEMAND, &m.base, KVDEMAND_ANSWER_MAX,
				kv_demand_answer, call) < 0) {
		free(call); /* (the link is down: again at the next turn) */
		return;
	}
	TAILQ_INSERT_TAIL(&pd->kv->demand_calls, call, entry);
	pd->kv->demand_reports++;
}

/* Order by keeper. */
static int kv_demand_by_keeper(const void *a, const void *b)
{
	const struct kv_demand_pick *x = a, *y = b;

	return x->keeper < y->keeper ? -1 : x->keeper > y->keeper;
}

/* The next turn of the reports. */
static void kv_demand_later(struct poold *pd)
{
	struct timeval every = units_timeval(kv_demand_turn_ms(pd));

	evtimer_add(pd->kv->demand_ev, &every);
}

/*
 * Every KVDEMAND_MS while namespaces are used here: one report to each of
 * their keepers, unless the last one to it is still unanswered (those
 * namespaces wait for the next turn).
 */
static void kv_demand_cb(evutil_socket_t fd, short what, void *arg)
{
	struct kv_demand_pick pick[KV_MAX_NAMESPACES];
	struct kv_ns *run[KV_MAX_NAMESPACES];
	struct poold *pd = arg;
	size_t n = 0, i, j, k;
	struct kv_ns *ns;

	(void)fd, (void)what;
	kv_owner_map(pd);
	for (ns = kv_owner_next_ns(pd, 0); ns != NULL && n < KV_MAX_NAMESPACES;
	     ns = kv_owner_next_ns(pd, ns->id))
		if (kv_demand_follows(pd, ns) && kv_demand_used(ns))
			pick[n++] = (struct kv_demand_pick){kv_demand_keeper(pd, ns), ns};
	if (n == 0)
		return; /* (quiet: the next value placed here starts the reports again) */
	qsort(pick, n, sizeof(pick[0]), kv_demand_by_keeper);
	for (i = 0; i < n; i = k) {
		size_t m = 0;

		for (k = i; k < n && pick[k].keeper == pick[i].keeper; k++)
			run[m++] = pick[k].ns;
		if (kv_demand_waits(pd, pick[i].keeper))
			continue;
		for (j = 0; j < m; j++)
			run[j]->reported = run[j]->puts + run[j]->hits;
		kv_demand_report(pd, pick[i].keeper, run, m);
	}
	kv_demand_later(pd);
}

/* A key of ns is served here: its use is reported from now on. */
void kv_demand_arm(struct poold *pd, const struct kv_ns *ns)
{
	if (pd->kv->demand_ev != NULL && !evtimer_pending(pd->kv->demand_ev, NULL) &&
	    kv_demand_follows(pd, ns))
		kv_demand_later(pd);
}

/*
 * ns is made, or defined again: a sharded one of 1 replica counts its
 * values by age from now on (out of memory: none, its rate alone is
 * reported).
 */
void kv_demand_ns(struct kv_ns *ns)
{
	if ((ns->flags & HOLD_NS_SHARDED) && ns->replicas == 1 && ns->ages == NULL)
		ns->ages = calloc(1, sizeof(*ns->ages));
}

/* ns's part here is even again, and what it kept as a keeper gone (its capacity changed). */
void kv_demand_forget(struct kv_ns *ns)
{
	ns->given = 0;
	kv_demand_book_free(ns->book);
	ns->book = NULL;
}

/* After a change of the map (kv-owner.c): every part is even again, every book gone. */
void kv_demand_map(struct poold *pd)
{
	struct kv_ns *ns;

	for (ns = kv_owner_next_ns(pd, 0); ns != NULL; ns = kv_owner_next_ns(pd, ns->id))
		kv_demand_forget(ns);
}

int kv_demand_open(struct poold *pd)
{
	TAILQ_INIT(&pd->kv->demand_calls);
	pd->kv->demand_ev = evtimer_new(pd->base, kv_demand_cb, pd);
	return pd->kv->demand_ev != NULL ? 0 : -ENOMEM;
}

/* The KV index closes: the reports in flight are freed when their answers come. */
void kv_demand_close(struct poold *pd)
{
	struct kv_demand_call *call;

	while ((call = TAILQ_FIRST(&pd->kv->demand_calls)) != NULL) {
		TAILQ_REMOVE(&pd->kv->demand_calls, call, entry);
		call->pd = NULL;
	}
	if (pd->kv->demand_ev != NULL)
		event_free(pd->kv->demand_ev);
	pd->kv->demand_ev = NULL;
}

/*
 * daemon/coord/coord-slot.c - the coordinator's room for peer links that have not
 * registered yet: a pool for addresses members came from, and a smaller
 * one for strangers (coord-slot.h says how each gives way).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <netinet/in.h>

#include "daemon/coord/coord-slot.h"
#include "daemon/coord/coord.h"

/* An address as the quotas see it: IPv4 (also when mapped in IPv6), or IPv6. */
struct coord_slot_host {
	sa_family_t family;
	uint8_t addr[16];
};

static bool coord_slot_host_of(const struct sockaddr *sa, struct coord_slot_host *h)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(h, 0, sizeof(*h));
	if (sa->sa_family == AF_INET) {
		h->family = AF_INET;
		memcpy(h->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	memcpy(h->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	if (memcmp(h->addr, mapped, sizeof(mapped)) == 0) {
		h->family = AF_INET;
		memmove(h->addr, h->addr + 12, 4);
		memset(h->addr + 4, 0, 12);
	} else {
		h->family = AF_INET6;
	}
	return true;
}

/*
 * Whether a and b count as one host: the same IPv4 address, or for
 * strangers the same IPv6 /64 (a host is given a whole /64, and with it
 * more addresses than any count per address could hold), for the known
 * pool the same IPv6 address.
 */
static bool coord_slot_same_host(const struct sockaddr *a, const struct sockaddr *b, bool exact)
{
	struct coord_slot_host ha, hb;

	if (!coord_slot_host_of(a, &ha) || !coord_slot_host_of(b, &hb) || ha.family != hb.family)
		return false;
	if (ha.family == AF_INET)
		return memcmp(ha.addr, hb.addr, 4) == 0;
	return memcmp(ha.addr, hb.addr, exact ? 16 : 8) == 0;
}

/* Whether a and b are the same address (an IPv4 one mapped in IPv6 is that IPv4 one). */
bool coord_slot_same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	return coord_slot_same_host(a, b, true);
}

/* Empty pools; the known one holds at most known_max links. */
void coord_slots_init(struct coordslots *cs, unsigned known_max)
{
	TAILQ_INIT(&cs->held);
	cs->known = cs->strangers = 0;
	cs->known_max = known_max;
}

static bool coord_slot_mine(const struct coordslot *s, enum coord_slot_pool pool,
			    const struct sockaddr *sa)
{
	return s->pool == pool &&
	       coord_slot_same_host((const struct sockaddr *)&s->from, sa, pool == COORDSLOT_KNOWN);
}

/* How many links of pool come from sa's host. */
unsigned coord_slots_count(const struct coordslots *cs, enum coord_slot_pool pool,
			   const struct sockaddr *sa)
{
	const struct coordslot *s;
	unsigned n = 0;

	TAILQ_FOREACH(s, &cs->held, entry)
		n += coord_slot_mine(s, pool, sa);
	return n;
}

static struct coordslot *coord_slot_oldest_of(const struct coordslots *cs,
					      enum coord_slot_pool pool, const struct sockaddr *sa)
{
	struct coordslot *s;

	TAILQ_FOREACH(s, &cs->held, entry)
		if (coord_slot_mine(s, pool, sa))
			return s;
	return NULL;
}

/*
 * The stranger that gives way: the oldest link of the host holding the
 * most. (At most COORDSLOT_STRANGERS links: counting each one's host is
 * cheap.)
 */
static struct coordslot *coord_slot_crowded(const struct coordslots *cs)
{
	struct coordslot *s, *victim = NULL;
	unsigned n, most = 0;

	TAILQ_FOREACH(s, &cs->held, entry) {
		if (s->pool != COORDSLOT_STRANGER)
			continue;
		n = coord_slots_count(cs, COORDSLOT_STRANGER, (const struct sockaddr *)&s->from);
		if (n > most) {
			most = n;
			victim = s;
		}
	}
	return victim;
}

static void coord_slot_hold(struct coordslots *cs, struct coordslot *s, const struct sockaddr *sa,
			    enum coord_slot_pool pool, uint64_t now_ms)
{
	memset(&s->from, 0, sizeof(s->from));
	memcpy(&s->from, sa,
	       sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in));
	s->taken_ms = now_ms;
	s->pool = pool;
	if (pool == COORDSLOT_KNOWN)
		cs->known++;
	else
		cs->strangers++;
	TAILQ_INSERT_TAIL(&cs->held, s, entry);
}

/*
 * Take a slot for a link from sa (an IPv4 or IPv6 address); known: a
 * member registered from sa before. 0 when taken, with *ret_evicted the
 * slot given up to make room (its link must close; NULL if none); -EBUSY
 * when sa's host has no room among strangers: turn the link away.
 */
int coord_slot_take(struct coordslots *cs, struct coordslot *s, const struct sockaddr *sa,
		    bool known, uint64_t now_ms, struct coordslot **ret_evicted)
{
	struct coordslot *victim = NULL;
	enum coord_slot_pool pool = COORDSLOT_STRANGER;
	unsigned here;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (known) {
		here = coord_slots_count(cs, COORDSLOT_KNOWN, sa);
		if (here < COORDSLOT_PER_HOST && cs->known < cs->known_max) {
			pool = COORDSLOT_KNOWN;
		} else if (here > 0) {
			pool = COORDSLOT_KNOWN;
			victim = coord_slot_oldest_of(cs, COORDSLOT_KNOWN, sa);
		}
		/* else: the other members' addresses fill the pool; wait among strangers */
	}
	if (pool == COORDSLOT_STRANGER) {
		if (coord_slots_count(cs, COORDSLOT_STRANGER, sa) >= COORDSLOT_PER_HOST)
			return -EBUSY;
		if (cs->strangers >= COORDSLOT_STRANGERS)
			victim = coord_slot_crowded(cs);
	}
	if (victim != NULL)
		coord_slot_give(cs, victim);
	coord_slot_hold(cs, s, sa, pool, now_ms);
	*ret_evicted = victim;
	return 0;
}

/* Give a slot back (the link registered or closed); one that holds none is left as it is. */
void coord_slot_give(struct coordslots *cs, struct coordslot *s)
{
	if (s->pool == COORDSLOT_NONE)
		return;
	if (s->pool == COORDSLOT_KNOWN)
		cs->known--;
	else
		cs->strangers--;
	TAILQ_REMOVE(&cs->held, s, entry);
	s->pool = COORDSLOT_NONE;
}

/* The slot taken first of those held, whose deadline comes first; NULL if none. */
struct coordslot *coord_slots_oldest(const struct coordslots *cs)
{
	return TAILQ_FIRST(&cs->held);
}

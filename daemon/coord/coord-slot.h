/*
 * daemon/coord/coord-slot.h - the coordinator's room for peer links that have not
 * registered yet.
 *
 * Such a link has proved nothing, so it waits in one of two small pools
 * that registered links never share:
 *
 *  - known: links from an address a member registered from before (a node
 *    that restarts or lost its link comes back from there). At most
 *    COORDSLOT_PER_HOST per address and known_max (peer.max_nodes) in all;
 *    when its address has no room the oldest link from that address gives
 *    way, so strangers can never take a returning node's place.
 *  - strangers: links from anywhere else, at most COORDSLOT_PER_HOST per
 *    host (an IPv4 address, or an IPv6 /64 that one host may hold whole) and
 *    COORDSLOT_STRANGERS in all. A host with no room is turned away; when
 *    the pool is full, the oldest link of the host that holds the most gives
 *    way, so that a flood from a few hosts, however many links it opens,
 *    keeps no new node out.
 *
 * The coordinator closes any of them that has not registered within its
 * deadline of being taken (coord.c). The pools depend on nothing else in
 * poold, so they are unit-tested on their own.
 */
#ifndef POOLD_COORDSLOT_H
#define POOLD_COORDSLOT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#define COORDSLOT_PER_HOST 4
#define COORDSLOT_STRANGERS 32

enum coord_slot_pool { COORDSLOT_NONE, COORDSLOT_KNOWN, COORDSLOT_STRANGER };

/* One link's place: kept in the link's own record, given back when it registers or closes. */
struct coordslot {
	TAILQ_ENTRY(coordslot) entry;
	struct sockaddr_storage from;
	uint64_t taken_ms;
	enum coord_slot_pool pool; /* COORDSLOT_NONE: holds none */
	void *owner;		   /* the link's record, for whoever closes it */
};

struct coordslots {
	TAILQ_HEAD(, coordslot) held; /* the oldest first */
	unsigned known, strangers;
	unsigned known_max;
};

void coord_slots_init(struct coordslots *cs, unsigned known_max);
int coord_slot_take(struct coordslots *cs, struct coordslot *s, const struct sockaddr *sa,
		    bool known, uint64_t now_ms, struct coordslot **ret_evicted);
void coord_slot_give(struct coordslots *cs, struct coordslot *s);
struct coordslot *coord_slots_oldest(const struct coordslots *cs);
unsigned coord_slots_count(const struct coordslots *cs, enum coord_slot_pool pool,
			   const struct sockaddr *sa);
bool coord_slot_same_addr(const struct sockaddr *a, const struct sockaddr *b);

#endif

/*
 * daemon/util/htab.h - an intrusive hash table: the caller embeds a struct
 * htab_node in its record and keeps the key; the table keeps each node's
 * hash and finds the nodes of a hash in O(1) on average, for the caller to
 * compare keys. It doubles its buckets as it fills; when that allocation
 * fails it stays as it is, slower, never wrong, so adding cannot fail.
 */
#ifndef POOL_DAEMON_HTAB_H
#define POOL_DAEMON_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_node {
	struct htab_node *next;
	uint64_t hash;
};

struct htab {
	struct htab_node **buckets; /* &one until it first grows; never copy a table */
	size_t nbuckets, n;	    /* nbuckets: a power of two */
	struct htab_node *one;	    /* the bucket of a table that could not grow yet */
};

void htab_add(struct htab *t, struct htab_node *node, uint64_t hash);
void htab_del(struct htab *t, struct htab_node *node);
/* The first node of hash, then htab_next() for the others of it; NULL at the end. */
struct htab_node *htab_first(const struct htab *t, uint64_t hash);
struct htab_node *htab_next(const struct htab_node *node);
void htab_free(struct htab *t); /* the buckets, not the nodes */

uint64_t htab_hash_str(const char *s);
uint64_t htab_hash_u64(uint64_t v);

/* The record around a node of a table: htab_entry(node, struct region, by_name). */
#define htab_entry(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

#endif

/* daemon/util/htab.c - an intrusive hash table (see htab.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/util/htab.h"
#include "daemon/util/util.h"

#define HTAB_BUCKETS0 64

/* Twice the buckets, once the nodes outnumber them twice over; a failed allocation waits. */
static void htab_grow(struct htab *t)
{
	size_t n = t->nbuckets > 1 ? t->nbuckets * 2 : HTAB_BUCKETS0, i;
	struct htab_node **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		struct htab_node *e = t->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	if (t->buckets != &t->one)
		free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

/* A zeroed table has one bucket of its own, so that adding never fails. */
static void htab_init(struct htab *t)
{
	if (t->nbuckets == 0) {
		t->buckets = &t->one;
		t->nbuckets = 1;
	}
}

void htab_add(struct htab *t, struct htab_node *node, uint64_t hash)
{
	struct htab_node **slot;

	htab_init(t);
	if (t->n >= 2 * t->nbuckets)
		htab_grow(t);
	node->hash = hash;
	slot = &t->buckets[hash & (t->nbuckets - 1)];
	node->next = *slot;
	*slot = node;
	t->n++;
}

void htab_del(struct htab *t, struct htab_node *node)
{
	struct htab_node **pp;

	if (t->nbuckets == 0)
		return;
	for (pp = &t->buckets[node->hash & (t->nbuckets - 1)]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			t->n--;
			return;
		}
}

struct htab_node *htab_first(const struct htab *t, uint64_t hash)
{
	struct htab_node *e;

	if (t->nbuckets == 0)
		return NULL;
	for (e = t->buckets[hash & (t->nbuckets - 1)]; e != NULL && e->hash != hash; e = e->next)
		;
	return e;
}

struct htab_node *htab_next(const struct htab_node *node)
{
	struct htab_node *e;

	for (e = node->next; e != NULL && e->hash != node->hash; e = e->next)
		;
	return e;
}

void htab_free(struct htab *t)
{
	if (t->buckets != &t->one)
		free(t->buckets);
	memset(t, 0, sizeof(*t));
}

uint64_t htab_hash_str(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

uint64_t htab_hash_u64(uint64_t v)
{
	return XXH3_64bits(&v, sizeof(v));
}

/*
 * daemon/member/member-ids.c - node ids tied to node names at the coordinator: every
 * node that registered with it, or that its journal names, so that a name
 * keeps its id and an id is never handed to another name, even while the
 * node is away and after the coordinator restarted; and whether each is
 * drained, which a node that registers again is held to.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/member/member.h"

/* The node of id (when not 0) or of name (when not NULL), if known. */
const struct node_id *member_ids_find(const struct poold *pd, uint32_t id, const char *name)
{
	size_t i;

	for (i = 0; i < pd->n_member_ids; i++)
		if ((id != 0 && pd->member_ids[i].id == id) ||
		    (name != NULL && strcmp(pd->member_ids[i].name, name) == 0))
			return &pd->member_ids[i];
	return NULL;
}

/* Remember that node id is name's. true: it was not known so (the journal records it). */
bool member_ids_add(struct poold *pd, uint32_t id, const char *name)
{
	struct node_id *k = (struct node_id *)member_ids_find(pd, id, NULL), *n;

	if (k != NULL && strcmp(k->name, name) == 0)
		return false;
	if (k == NULL) {
		n = realloc(pd->member_ids, (pd->n_member_ids + 1) * sizeof(*n));
		if (n == NULL)
			return false;
		pd->member_ids = n;
		k = &n[pd->n_member_ids++];
		k->id = id;
		k->kv_drained = false;
	}
	snprintf(k->name, sizeof(k->name), "%s", name);
	return true;
}

/* Whether node id is drained. true: it was known and that changed (the journal records it). */
bool member_ids_set_drained(struct poold *pd, uint32_t id, bool drained)
{
	struct node_id *k = (struct node_id *)member_ids_find(pd, id, NULL);

	if (k == NULL || k->kv_drained == drained)
		return false;
	k->kv_drained = drained;
	return true;
}

void member_ids_clear(struct poold *pd)
{
	free(pd->member_ids);
	pd->member_ids = NULL;
	pd->n_member_ids = 0;
}

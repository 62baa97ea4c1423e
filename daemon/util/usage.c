/* daemon/util/usage.c - per-uid charges for the quotas: a sorted array. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/usage.h"
#include "daemon/util/util.h"

/* The index of uid, or where it would go. */
static size_t usage_find(const struct usage_table *t, uint32_t uid)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t usage_add(uint64_t have, int64_t delta)
{
	if (delta >= 0)
		return have + (uint64_t)delta;
	return have > (uint64_t)-delta ? have - (uint64_t)-delta : 0;
}

int usage_charge(struct usage_table *t, uint32_t uid, int64_t bytes, int64_t regions)
{
	size_t i = usage_find(t, uid);
	struct usage *u;

	if (i == t->n || t->v[i].uid != uid) {
		if (bytes <= 0 && regions <= 0)
			return 0; /* nothing to take back from */
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct usage *v = reallocarray(t->v, cap, sizeof(*v));

			if (v == NULL)
				return -ENOMEM;
			t->v = v;
			t->cap = cap;
		}
		memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
		t->v[i] = (struct usage){.uid = uid};
		t->n++;
	}
	u = &t->v[i];
	u->bytes = usage_add(u->bytes, bytes);
	u->regions = usage_add(u->regions, regions);
	if (u->bytes == 0 && u->regions == 0) {
		memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
		t->n--;
	}
	return 0;
}

struct usage usage_of(const struct usage_table *t, uint32_t uid)
{
	size_t i = usage_find(t, uid);

	if (i < t->n && t->v[i].uid == uid)
		return t->v[i];
	return (struct usage){.uid = uid};
}

void usage_clear(struct usage_table *t)
{
	free(t->v);
	*t = (struct usage_table){0};
}

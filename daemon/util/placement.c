/* daemon/util/placement.c - choose the lender of a new extent. */
#include "config.h"

#include "daemon/util/placement.h"
#include "daemon/util/util.h"

/* Pick a candidate for len bytes; see placement.h. */
long placement_choose(const struct placement_candidate *c, size_t n, uint64_t len,
		      unsigned watermark)
{
	uint64_t best_free = 0;
	bool best_under = false;
	long best = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t free = c[i].size > c[i].used ? c[i].size - c[i].used : 0;
		bool under;

		if (!c[i].usable || c[i].largest_free < len)
			continue;
		under = (c[i].used + len) * 100 <= c[i].size * (uint64_t)watermark;
		if (best < 0 || (under && !best_under) ||
		    (under == best_under && free > best_free)) {
			best = (long)i;
			best_free = free;
			best_under = under;
		}
	}
	return best;
}

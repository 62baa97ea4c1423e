/*
 * daemon/region/quota.c - how many bytes one uid may make the pool hold: its
 * regions, KV values and snapshot pages (usage.c counts them). The bound
 * is quota.bytes where set, and for every uid but root and poold's own,
 * quota.share of the pool's memory, whichever is less: so that with no
 * quota configured, one tenant still cannot take every lender's memory
 * from the others.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/region/region.h"

/* The memory of every lender's arenas, both tiers, as the coordinator knows them. */
static uint64_t quota_pool_size(const struct poold *pd)
{
	const struct lender_pool *lp;
	uint64_t size = 0;

	if (pd->regions == NULL)
		return 0;
	TAILQ_FOREACH(lp, &pd->regions->pools, entry)
		size += lp->size;
	return size;
}

uint64_t quota_of(const struct poold *pd, uint32_t uid, const char **ret_option)
{
	uint64_t limit = UINT64_MAX, share;
	const char *option = NULL;

	if (pd->conf->quota_bytes > 0) {
		limit = (uint64_t)pd->conf->quota_bytes;
		option = "quota.bytes";
	}
	if (pd->conf->quota_share > 0 && uid != 0 && uid != (uint32_t)geteuid()) {
		/* In whole MiB, which its refusals print plainly. */
		share = quota_pool_size(pd) / 100 * (uint64_t)pd->conf->quota_share >> 20 << 20;
		if (share > 0 && share < limit) {
			limit = share;
			option = "quota.share";
		}
	}
	if (ret_option != NULL)
		*ret_option = option;
	return limit;
}

bool quota_over(const struct poold *pd, uint32_t uid, uint64_t need)
{
	uint64_t limit = quota_of(pd, uid, NULL), held = usage_of(&pd->usage, uid).bytes;

	return held > limit || need > limit - held;
}

void quota_explain(const struct poold *pd, uint32_t uid, uint64_t need, char *buf, size_t len)
{
	char have[24], want[24], lim[24];
	const char *option;
	uint64_t limit = quota_of(pd, uid, &option);

	units_fmt_size(usage_of(&pd->usage, uid).bytes, have, sizeof(have));
	units_fmt_size(need, want, sizeof(want));
	units_fmt_size(limit, lim, sizeof(lim));
	if (option != NULL && strcmp(option, "quota.share") == 0)
		snprintf(buf, len,
			 "uid %u holds %s of regions, KV values and snapshot "
			 "pages; %s more is over quota.share (%lld%% of the pool: %s)",
			 uid, have, want, (long long)pd->conf->quota_share, lim);
	else
		snprintf(buf, len,
			 "uid %u holds %s of regions, KV values and snapshot pages; %s "
			 "more is over quota.bytes (%s)",
			 uid, have, want, lim);
}

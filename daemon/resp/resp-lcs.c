/*
 * daemon/resp/resp-lcs.c - LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n]
 * [WITHMATCHLEN]: the longest common subsequence of two string values,
 * Redis 7's algorithm step by step (its table of prefix LCS lengths, then
 * the walk back from its end that yields the string and the matched
 * ranges, last first), so that its replies are Redis's byte for byte.
 *
 * The table takes 4 bytes a cell, (len1 + 1) x (len2 + 1) cells, and as
 * many steps of the loop: it is bounded by RESP_LCS_TABLE_MAX, not by
 * Redis's 512 MB, so that one client's LCS holds neither that much memory
 * nor the loop for seconds.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"

#define RESP_LCS_TABLE_MAX (64u << 20) /* bytes: 16M cells, tens of ms */

/* A matched range: [a0, a1] of the first string, [b0, b1] of the second. */
struct resp_lcs_range {
	uint32_t a0, a1, b0, b1;
};

/* A key's value copied out (or "" without one): 0, or -1 after an error reply. */
static int resp_lcs_value(struct resp_conn *c, const char *ns, const char *key, size_t klen,
			  char **ret, size_t *ret_len)
{
	struct resp_val v;
	int rc = resp_get(c, ns, key, klen, &v);

	*ret_len = 0;
	*ret = NULL;
	if (rc == -EPROTOTYPE) {
		resp_err(c, "ERR The specified keys must contain string values");
		return -1;
	}
	if (rc == 0) {
		*ret_len = v.len;
		if ((*ret = malloc(v.len ? v.len : 1)) != NULL)
			memcpy(*ret, v.data, v.len);
		resp_put_back(c, ns, key, klen, &v);
	} else {
		*ret = malloc(1);
	}
	if (*ret == NULL)
		resp_err(c, "ERR out of memory");
	return *ret != NULL ? 0 : -1;
}

/* The reply of IDX: {"matches": [[[a0, a1], [b0, b1](, len)]...], "len": n}. */
static void resp_lcs_ranges(struct resp_conn *c, const struct resp_lcs_range *r, size_t n,
			    bool withlen, uint32_t len)
{
	size_t i;

	resp_map(c, 2);
	resp_bulk(c, "matches", 7);
	resp_array(c, n);
	for (i = 0; i < n; i++) {
		resp_array(c, withlen ? 3 : 2);
		resp_array(c, 2);
		resp_int(c, r[i].a0);
		resp_int(c, r[i].a1);
		resp_array(c, 2);
		resp_int(c, r[i].b0);
		resp_int(c, r[i].b1);
		if (withlen)
			resp_int(c, (long long)r[i].a1 - r[i].a0 + 1);
	}
	resp_bulk(c, "len", 3);
	resp_int(c, len);
}

/* LCS's options after its two keys: 0, or -1 with the error said. */
static int resp_lcs_opts(struct resp_conn *c, long argc, char **argv, const size_t *argl,
			 bool *getlen, bool *getidx, bool *withlen, long long *minlen)
{
	long k;

	for (k = 3; k < argc; k++) {
		if (strcasecmp(argv[k], "IDX") == 0) {
			*getidx = true;
		} else if (strcasecmp(argv[k], "LEN") == 0) {
			*getlen = true;
		} else if (strcasecmp(argv[k], "WITHMATCHLEN") == 0) {
			*withlen = true;
		} else if (strcasecmp(argv[k], "MINMATCHLEN") == 0 && k + 1 < argc) {
			if (!resp_ll(argv[k + 1], argl[k + 1], minlen)) {
				resp_err(c, RESP_ERR_INT);
				return -1;
			}
			if (*minlen < 0)
				*minlen = 0;
			k++;
		} else {
			resp_err(c, RESP_ERR_SYNTAX);
			return -1;
		}
	}
	if (*getidx && *getlen) {
		resp_err(c, "ERR If you want both the length and indexes, please just use IDX.");
		return -1;
	}
	return 0;
}

static void cmd_lcs(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	bool getlen = false, getidx = false, withlen = false;
	struct resp_lcs_range *ranges = NULL;
	size_t alen, blen, nranges = 0, cells;
	long long minlen = 0;
	char ns[32], *a = NULL, *b = NULL, *result = NULL;
	uint32_t *dp = NULL, i, j, idx, as, ae = 0, bs = 0, be = 0;

#define LCS(x, y) dp[(y) + (size_t)(x) * (blen + 1)]
	resp_ns(c, ns, sizeof(ns));
	if (resp_lcs_value(c, ns, argv[1], argl[1], &a, &alen) < 0 ||
	    resp_lcs_value(c, ns, argv[2], argl[2], &b, &blen) < 0 ||
	    resp_lcs_opts(c, argc, argv, argl, &getlen, &getidx, &withlen, &minlen) < 0)
		goto out;
	cells = (alen + 1) * (blen + 1);
	if (alen >= UINT32_MAX - 1 || blen >= UINT32_MAX - 1 ||
	    cells > RESP_LCS_TABLE_MAX / sizeof(*dp)) {
		resp_err(c, "ERR Insufficient memory, transient memory for LCS exceeds %u MiB",
			 RESP_LCS_TABLE_MAX >> 20);
		goto out;
	}
	if ((dp = malloc(cells * sizeof(*dp))) == NULL ||
	    (result = malloc(MIN(alen, blen) + 1)) == NULL ||
	    (getidx && (ranges = calloc(MIN(alen, blen) + 1, sizeof(*ranges))) == NULL)) {
		resp_err(c, "ERR Insufficient memory, failed allocating transient memory for LCS");
		goto out;
	}
	for (i = 0; i <= alen; i++)
		for (j = 0; j <= blen; j++)
			if (i == 0 || j == 0)
				LCS(i, j) = 0;
			else if (a[i - 1] == b[j - 1])
				LCS(i, j) = LCS(i - 1, j - 1) + 1;
			else
				LCS(i, j) = MAX(LCS(i - 1, j), LCS(i, j - 1));
	/* Back from the end: the string, last byte first, and the ranges as they close. */
	idx = LCS(alen, blen);
	as = (uint32_t)alen; /* (alen: no range open) */
	i = (uint32_t)alen, j = (uint32_t)blen;
	while ((getidx || !getlen) && i > 0 && j > 0) {
		bool emit = false;

		if (a[i - 1] == b[j - 1]) {
			result[idx - 1] = a[i - 1];
			if (as == alen) {
				as = ae = i - 1;
				bs = be = j - 1;
			} else if (as == i && bs == j) {
				as--;
				bs--;
			} else {
				emit = true;
			}
			if (as == 0 || bs == 0)
				emit = true;
			idx--, i--, j--;
		} else {
			if (LCS(i - 1, j) > LCS(i, j - 1))
				i--;
			else
				j--;
			emit = as != alen;
		}
		if (emit) {
			if (getidx && (minlen == 0 || (long long)ae - as + 1 >= minlen))
				ranges[nranges++] = (struct resp_lcs_range){as, ae, bs, be};
			as = (uint32_t)alen;
		}
	}
	if (getidx)
		resp_lcs_ranges(c, ranges, nranges, withlen, LCS(alen, blen));
	else if (getlen)
		resp_int(c, idx);
	else
		resp_bulk(c, result, LCS(alen, blen));
#undef LCS
out:
	free(ranges);
	free(result);
	free(dp);
	free(a);
	free(b);
}

const struct resp_cmd resp_lcs_cmds[] = {
    {"lcs", -3, RESP_CMD_KEYS | RESP_CMD_KEYS_TWO | RESP_CMD_READS, cmd_lcs},
};
const size_t n_resp_lcs_cmds = ARRAY_SIZE(resp_lcs_cmds);

/*
 * daemon/resp/resp-bits.c - the bit commands of the RESP endpoint on string
 * values: SETBIT, GETBIT, BITCOUNT and BITPOS, as Redis 7's bitops.c
 * defines them (offset 0 is the most significant bit of the first byte;
 * a string grows with zero bytes; ranges in bytes or, with BIT, in bits,
 * negative from the end). Values are read and written as APPEND and
 * SETRANGE do (resp-keys.c): the new value whole, its expiry kept.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/resp/resp.h"
#include "daemon/resp/resp-int.h"
#include "daemon/resp/resp-parse.h"
#include "proto/pool_contract.h"

#define RESP_ERR_BIT_OFFSET "ERR bit offset is not an integer or out of range"
#define RESP_BULK_MAX (512ull << 20) /* Redis's proto-max-bulk-len: its offsets' bound */

/* A bit offset argument: Redis's bound (512 MB of bytes), then this pool's value size. */
static bool resp_bit_offset(struct resp_conn *c, const char *arg, size_t len, uint64_t *ret)
{
	long long off;

	if (!resp_ll(arg, len, &off) || off < 0 || (unsigned long long)off >> 3 >= RESP_BULK_MAX) {
		resp_err(c, RESP_ERR_BIT_OFFSET);
		return false;
	}
	*ret = (uint64_t)off;
	return true;
}

static void cmd_setbit(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	uint64_t off;
	size_t byte, len;
	long long on;
	char ns[32];
	uint8_t *buf, mask;
	bool was;

	(void)argc;
	if (!resp_bit_offset(c, argv[2], argl[2], &off))
		return;
	if (!resp_ll(argv[3], argl[3], &on) || (on & ~1LL) != 0) {
		resp_err(c, "ERR bit is not an integer or out of range");
		return;
	}
	byte = (size_t)(off >> 3);
	if (byte >= POOL_KV_VALUE_MAX) {
		resp_err(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if ((buf = (uint8_t *)resp_value_copy(c, ns, argv[1], argl[1], byte + 1, &len)) == NULL)
		return;
	mask = (uint8_t)(1u << (7 - (off & 7)));
	was = (buf[byte] & mask) != 0;
	buf[byte] = on ? buf[byte] | mask : buf[byte] & (uint8_t)~mask;
	if (resp_put_edited(c, ns, argv[1], argl[1], buf, len, NULL, 0) == 0)
		resp_int(c, was);
	free(buf);
}

static void cmd_getbit(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	struct resp_val v;
	uint64_t off;
	char ns[32];
	int rc;

	(void)argc;
	if (!resp_bit_offset(c, argv[2], argl[2], &off))
		return;
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) < 0) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_int(c, 0);
		return;
	}
	resp_int(c, (off >> 3) < v.len &&
			(((const uint8_t *)v.data)[off >> 3] & (1u << (7 - (off & 7)))) != 0);
	resp_put_back(c, ns, argv[1], argl[1], &v);
}

/*
 * A range [*start, *end] over a string of len bytes, as Redis's BITCOUNT
 * and BITPOS make it: negative from the end, clamped to the string; with
 * bits, in bits, then the bytes it covers, *first and *last masking the
 * bits of its end bytes that are outside it (0: none).
 */
static void resp_bit_range(long long len, bool bits, long long *start, long long *end,
			   uint8_t *first, uint8_t *last)
{
	long long total = bits ? len << 3 : len;

	*first = *last = 0;
	if (*start < 0)
		*start = total + *start;
	if (*end < 0)
		*end = total + *end;
	if (*start < 0)
		*start = 0;
	if (*end < 0)
		*end = 0;
	if (*end >= total)
		*end = total - 1;
	if (bits && *start <= *end) {
		*first = (uint8_t)(~((1u << (8 - (*start & 7))) - 1) & 0xff);
		*last = (uint8_t)((1u << (7 - (*end & 7))) - 1);
		*start >>= 3;
		*end >>= 3;
	}
}

/* BYTE or BIT, the unit of a range: false (after a syntax error) for anything else. */
static bool resp_bit_unit(struct resp_conn *c, const char *arg, bool *bits)
{
	if (strcasecmp(arg, "BIT") == 0)
		*bits = true;
	else if (strcasecmp(arg, "BYTE") == 0)
		*bits = false;
	else
		resp_err(c, RESP_ERR_SYNTAX);
	return strcasecmp(arg, "BIT") == 0 || strcasecmp(arg, "BYTE") == 0;
}

static long long resp_popcount(const uint8_t *p, size_t n)
{
	long long count = 0;
	size_t i;

	for (i = 0; i < n; i++)
		count += __builtin_popcount(p[i]);
	return count;
}

/* BITCOUNT key [start end [BYTE | BIT]] */
static void cmd_bitcount(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long start = 0, end = 0, count;
	uint8_t first = 0, last = 0;
	struct resp_val v;
	const uint8_t *p;
	bool bits = false;
	char ns[32];
	int rc;

	if (argc == 3 || argc > 5) {
		resp_err(c, RESP_ERR_SYNTAX);
		return;
	}
	if (argc >= 4 && (!resp_ll(argv[2], argl[2], &start) || !resp_ll(argv[3], argl[3], &end))) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (argc == 5 && !resp_bit_unit(c, argv[4], &bits))
		return;
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) < 0) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_int(c, 0);
		return;
	}
	p = (const uint8_t *)v.data;
	if (argc >= 4 && start < 0 && end < 0 && start > end) {
		start = 1, end = 0; /* (empty) */
	} else if (argc >= 4) {
		resp_bit_range((long long)v.len, bits, &start, &end, &first, &last);
	} else {
		end = (long long)v.len - 1;
	}
	if (start > end) {
		resp_int(c, 0);
	} else {
		count = resp_popcount(p + start, (size_t)(end - start + 1));
		/* The bits of the end bytes outside the range, counted above, taken off. */
		if (first != 0)
			count -= __builtin_popcount(p[start] & first);
		if (last != 0)
			count -= __builtin_popcount(p[end] & last);
		resp_int(c, count);
	}
	resp_put_back(c, ns, argv[1], argl[1], &v);
}

/*
 * The first bit of p[0..n) that is bit, counting from the most significant
 * of p[0]; none: -1 for a 1, n * 8 for a 0 (the string goes on with zeros).
 */
static long long resp_bitpos_in(const uint8_t *p, size_t n, bool bit)
{
	uint8_t skip = bit ? 0 : 0xff;
	size_t i;
	int b;

	for (i = 0; i < n && p[i] == skip; i++)
		;
	if (i == n)
		return bit ? -1 : (long long)n << 3;
	for (b = 7; ((p[i] >> b) & 1) != bit; b--)
		;
	return (long long)(i << 3) + (7 - b);
}

/* BITPOS key bit [start [end [BYTE | BIT]]] (Redis 7's bitposCommand(), step by step). */
static void cmd_bitpos(struct resp_conn *c, long argc, char **argv, const size_t *argl)
{
	long long bit, start = 0, end = 0, pos = -1, bytes, cur;
	uint8_t first = 0, last = 0, one;
	struct resp_val v;
	const uint8_t *p;
	bool bits = false, end_given = false;
	char ns[32];
	int rc;

	if (!resp_ll(argv[2], argl[2], &bit)) {
		resp_err(c, RESP_ERR_INT);
		return;
	}
	if (bit != 0 && bit != 1) {
		resp_err(c, "ERR The bit argument must be 1 or 0.");
		return;
	}
	resp_ns(c, ns, sizeof(ns));
	if ((rc = resp_get(c, ns, argv[1], argl[1], &v)) < 0) {
		if (rc == -EPROTOTYPE)
			resp_wrongtype(c);
		else
			resp_int(c, bit ? -1 : 0); /* an endless string of zeros */
		return;
	}
	p = (const uint8_t *)v.data;
	if (argc > 6) {
		resp_err(c, RESP_ERR_SYNTAX);
		goto out;
	}
	if (argc >= 4) {
		if (!resp_ll(argv[3], argl[3], &start) ||
		    (argc >= 5 && !resp_ll(argv[4], argl[4], &end))) {
			resp_err(c, RESP_ERR_INT);
			goto out;
		}
		if (argc == 6 && !resp_bit_unit(c, argv[5], &bits))
			goto out;
		end_given = argc >= 5;
		if (!end_given)
			end = bits ? ((long long)v.len << 3) + 7 : (long long)v.len - 1;
		resp_bit_range((long long)v.len, bits, &start, &end, &first, &last);
	} else {
		end = (long long)v.len - 1;
	}
	if (start > end) { /* an empty range has neither a 0 nor a 1 */
		resp_int(c, -1);
		goto out;
	}
	bytes = end - start + 1;
	if (first != 0) {
		one = bit ? p[start] & (uint8_t)~first : p[start] | first;
		if (last != 0 && bytes == 1)
			one = bit ? one & (uint8_t)~last : one | last;
		pos = resp_bitpos_in(&one, 1, bit);
		if (bytes == 1 || (pos != -1 && pos != 8))
			goto found;
		start++;
		bytes--;
	}
	cur = bytes - (last != 0 ? 1 : 0); /* (the last byte apart when it is masked) */
	if (cur > 0) {
		pos = resp_bitpos_in(p + start, (size_t)cur, bit);
		if (bytes == cur || (pos != -1 && pos != cur << 3))
			goto found;
		start += cur;
		bytes -= cur;
	}
	one = bit ? p[end] & (uint8_t)~last : p[end] | last;
	pos = resp_bitpos_in(&one, 1, bit);
found:
	/* A 0 past an explicit end is not in the range. */
	if (end_given && bit == 0 && pos == bytes << 3)
		pos = -1;
	else if (pos != -1)
		pos += start << 3;
	resp_int(c, pos);
out:
	resp_put_back(c, ns, argv[1], argl[1], &v);
}

const struct resp_cmd resp_bit_cmds[] = {
    {"bitcount", -2, RESP_CMD_KEYS | RESP_CMD_READS, cmd_bitcount},
    {"bitpos", -3, RESP_CMD_KEYS | RESP_CMD_READS, cmd_bitpos},
    {"getbit", 3, RESP_CMD_KEYS | RESP_CMD_READS, cmd_getbit},
    {"setbit", 4, RESP_CMD_KEYS | RESP_CMD_READS | RESP_CMD_WRITES, cmd_setbit},
};
const size_t n_resp_bit_cmds = ARRAY_SIZE(resp_bit_cmds);

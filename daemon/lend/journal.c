/*
 * daemon/lend/journal.c - an append-only record log in persistent memory.
 *
 * Layout of the range:
 *
 *	[0, 4096)	two header slots, at 0 and 2048
 *	[4096, +half)	half 0
 *	[+half, +2half)	half 1
 *
 * A slot names the active half, the sequence number of its first record and
 * a generation; it carries a checksum, and the valid slot of the highest
 * generation is in force. A record is a 24-byte header (length, sequence,
 * checksum of the payload seeded with both) and its payload, padded to 8
 * bytes; an all-zero header ends the records. Sequence numbers only grow, so
 * records left from an earlier use of a half never pass for current ones.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/lend/journal.h"
#include "daemon/lend/lend.h"

#define JOURNAL_MAGIC UINT64_C(0x6c6e72756f6a6c70) /* "pljournl" */
#define JOURNAL_VERSION 1
#define JOURNAL_HDR 4096
#define JOURNAL_SLOT 2048

struct journal_slot {
	uint64_t magic;
	uint32_t version;
	uint32_t active;
	uint64_t gen;
	uint64_t first_seq;
	uint64_t half;
	uint64_t sum; /* XXH64 of the fields above */
};

struct journal_rec {
	uint32_t len;
	uint32_t zero;
	uint64_t seq;
	uint64_t sum; /* XXH64 of the payload, seeded with seq and len */
};

struct journal {
	uint8_t *base;
	uint64_t half;
	journal_persist_fn persist;
	unsigned slot; /* the slot in force */
	struct journal_slot cur;
	unsigned half_now; /* the half appends go to (the active one, or a rewrite's) */
	uint64_t pos;	   /* where the next record goes in it */
	uint64_t next_seq;
	uint64_t records;
	uint64_t rewrites;
	uint64_t dropped;
	uint8_t *dirty, *dirty_end; /* written by journal_write(), not yet persisted */
	bool filling; /* a rewrite's records: made durable together (journal_rewrite()) */
};

static void journal_persist(struct journal *j, const void *p, size_t len)
{
	if (j->persist != NULL && len > 0)
		j->persist(p, len);
}

static uint64_t journal_slot_sum(const struct journal_slot *s)
{
	return XXH64(s, offsetof(struct journal_slot, sum), 0);
}

static uint64_t journal_rec_sum(const void *payload, uint32_t len, uint64_t seq)
{
	return XXH64(payload, len, seq * UINT64_C(0x9e3779b97f4a7c15) ^ len);
}

static uint8_t *journal_half(struct journal *j, unsigned half)
{
	return j->base + JOURNAL_HDR + (uint64_t)half * j->half;
}

static size_t journal_pad(size_t len)
{
	return (len + 7) & ~(size_t)7;
}

/* End the records at pos of the half being written (if a header fits there); its length. */
static size_t journal_terminate(struct journal *j, uint64_t pos)
{
	if (pos + sizeof(struct journal_rec) > j->half)
		return 0;
	memset(journal_half(j, j->half_now) + pos, 0, sizeof(struct journal_rec));
	return sizeof(struct journal_rec);
}

/* The same, durable on return. */
static void journal_end(struct journal *j, uint64_t pos)
{
	journal_persist(j, journal_half(j, j->half_now) + pos, journal_terminate(j, pos));
}

/* Put a new slot in force (the one not in force now). */
static void journal_commit_slot(struct journal *j, unsigned active, uint64_t first_seq)
{
	struct journal_slot s = {JOURNAL_MAGIC, JOURNAL_VERSION, active, j->cur.gen + 1,
				 first_seq,	j->half,	 0};
	unsigned slot = j->slot ^ 1;

	s.sum = journal_slot_sum(&s);
	memcpy(j->base + slot * JOURNAL_SLOT, &s, sizeof(s));
	journal_persist(j, j->base + slot * JOURNAL_SLOT, sizeof(s));
	j->slot = slot;
	j->cur = s;
}

static bool journal_slot_ok(const struct journal_slot *s, size_t size)
{
	return s->magic == JOURNAL_MAGIC && s->version == JOURNAL_VERSION && s->active <= 1 &&
	       s->sum == journal_slot_sum(s) && s->half >= sizeof(struct journal_rec) &&
	       s->half % 8 == 0 && s->half <= (size - JOURNAL_HDR) / 2;
}

/* Replay the active half; stop at its end, or cut it at a record that does not check. */
static int journal_replay(struct journal *j, journal_record_fn fn, void *arg)
{
	uint8_t *h = journal_half(j, j->cur.active);
	uint64_t pos = 0, seq = j->cur.first_seq;
	static const struct journal_rec end;
	int rc;

	while (pos + sizeof(struct journal_rec) <= j->half) {
		struct journal_rec r;

		memcpy(&r, h + pos, sizeof(r));
		if (memcmp(&r, &end, sizeof(r)) == 0)
			break;
		if (r.len == 0 || r.zero != 0 || r.seq != seq ||
		    r.len > j->half - pos - sizeof(r) ||
		    r.sum != journal_rec_sum(h + pos + sizeof(r), r.len, r.seq)) {
			j->dropped = j->half - pos;
			break;
		}
		if (fn != NULL && (rc = fn(arg, h + pos + sizeof(r), r.len)) < 0)
			return rc;
		pos += sizeof(r) + journal_pad(r.len);
		seq++;
		j->records++;
	}
	j->half_now = j->cur.active;
	j->pos = pos;
	j->next_seq = seq;
	if (j->dropped > 0)
		journal_end(j, pos); /* appends go on from the last good record */
	return 0;
}

int journal_open(void *base, size_t size, journal_persist_fn persist, journal_record_fn fn,
		 void *arg, struct journal **ret)
{
	struct journal_slot s[2];
	struct journal *j;
	int rc;

	if (size < JOURNAL_MIN_SIZE)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return -ENOMEM;
	j->base = base;
	j->persist = persist;
	memcpy(&s[0], j->base, sizeof(s[0]));
	memcpy(&s[1], j->base + JOURNAL_SLOT, sizeof(s[1]));
	if (journal_slot_ok(&s[0], size) || journal_slot_ok(&s[1], size)) {
		j->slot = !journal_slot_ok(&s[0], size) ||
			  (journal_slot_ok(&s[1], size) && s[1].gen > s[0].gen);
		j->cur = s[j->slot];
		j->half = j->cur.half;
	} else {
		/* Nothing here yet (or not ours): an empty journal over the whole range. */
		j->half = ((size - JOURNAL_HDR) / 2) & ~(uint64_t)7;
		j->slot = 1;
		j->half_now = 0;
		journal_end(j, 0);
		journal_commit_slot(j, 0, 1);
	}
	rc = journal_replay(j, fn, arg);
	if (rc < 0) {
		free(j);
		return rc;
	}
	*ret = j;
	return 0;
}

void journal_close(struct journal *j)
{
	free(j);
}

int journal_probe(const void *base, size_t size)
{
	const uint8_t *p = base;
	struct journal_slot s[2];
	size_t i;

	if (size < JOURNAL_MIN_SIZE)
		return -1;
	memcpy(&s[0], p, sizeof(s[0]));
	memcpy(&s[1], p + JOURNAL_SLOT, sizeof(s[1]));
	if (journal_slot_ok(&s[0], size) || journal_slot_ok(&s[1], size))
		return 1;
	for (i = 0; i < JOURNAL_HDR; i++)
		if (p[i] != 0)
			return -1;
	return 0;
}

int journal_write(struct journal *j, const void *rec, size_t len)
{
	struct journal_rec r = {(uint32_t)len, 0, j->next_seq, 0};
	size_t need = sizeof(r) + journal_pad(len), end;
	uint8_t *p = journal_half(j, j->half_now) + j->pos;

	if (len == 0 || len > UINT32_MAX)
		return -EINVAL;
	if (need > j->half - j->pos)
		return -ENOSPC;
	r.sum = journal_rec_sum(rec, (uint32_t)len, r.seq);
	memcpy(p, &r, sizeof(r));
	memcpy(p + sizeof(r), rec, len);
	memset(p + sizeof(r) + len, 0, journal_pad(len) - len);
	/*
	 * The record and the header that ends the records after it are made
	 * durable together: replay checks each record's sequence and checksum,
	 * so whichever of the two a crash tears, no stale or torn record passes.
	 */
	end = need + journal_terminate(j, j->pos + need);
	if (j->dirty == NULL || p < j->dirty)
		j->dirty = p;
	if (p + end > j->dirty_end)
		j->dirty_end = p + end;
	j->pos += need;
	j->next_seq++;
	j->records++;
	return 0;
}

void journal_sync(struct journal *j)
{
	if (j->dirty == NULL)
		return;
	journal_persist(j, j->dirty, (size_t)(j->dirty_end - j->dirty));
	j->dirty = j->dirty_end = NULL;
}

bool journal_unsynced(const struct journal *j)
{
	return j->dirty != NULL;
}

int journal_append(struct journal *j, const void *rec, size_t len)
{
	int rc = journal_write(j, rec, len);

	if (rc == 0 && !j->filling)
		journal_sync(j);
	return rc;
}

int journal_rewrite(struct journal *j, int (*fill)(void *arg, struct journal *j), void *arg)
{
	uint64_t pos = j->pos, seq = j->next_seq, records = j->records;
	int rc;

	journal_sync(j); /* what was written before stays, should the rewrite fail */
	j->half_now = j->cur.active ^ 1;
	j->pos = 0;
	j->records = 0;
	journal_end(j, 0);
	/*
	 * The records go to the other half without a persist each (on a
	 * file, each is an msync: a rewrite of 30,000 records held poold's
	 * loop for minutes), then the half is made durable at once, before
	 * the header that puts it in force.
	 */
	j->filling = true;
	rc = fill(arg, j);
	j->filling = false;
	journal_sync(j);
	if (rc < 0) {
		/* The old half stays in force, as it was. */
		j->half_now = j->cur.active;
		j->pos = pos;
		j->next_seq = seq;
		j->records = records;
		return rc;
	}
	journal_commit_slot(j, j->half_now, seq);
	j->rewrites++;
	return 0;
}

void journal_stats(const struct journal *j, struct journal_stats *st)
{
	st->records = j->records;
	st->used = j->pos;
	st->half = j->half;
	st->rewrites = j->rewrites;
	st->dropped = j->dropped;
}

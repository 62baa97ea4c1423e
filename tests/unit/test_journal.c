/* tests/unit/test_journal.c - the record log: replay, torn tails, rewrites, torn headers, group
 * commits. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/lend/journal.h"
#include "tests/unit/unit.h"

#define AREA (64 * 1024)

/* What a replay delivered. */
struct seen {
	size_t n;
	char recs[4096][32];
};

static int collect(void *arg, const uint8_t *rec, size_t len)
{
	struct seen *s = arg;

	CU_ASSERT_FATAL(len < sizeof(s->recs[0]) && s->n < 4096);
	memcpy(s->recs[s->n], rec, len);
	s->recs[s->n++][len] = '\0';
	return 0;
}

static struct journal *reopen(uint8_t *area, struct journal *old, struct seen *s)
{
	struct journal *j;

	if (old != NULL)
		journal_close(old);
	memset(s, 0, sizeof(*s));
	CU_ASSERT_EQUAL_FATAL(journal_open(area, AREA, NULL, collect, s, &j), 0);
	return j;
}

static void append(struct journal *j, const char *what, int i)
{
	char rec[32];

	snprintf(rec, sizeof(rec), "%s%d", what, i);
	CU_ASSERT_EQUAL(journal_append(j, rec, strlen(rec)), 0);
}

static void test_replay_in_order(void)
{
	uint8_t *area = malloc(AREA);
	struct journal_stats st;
	struct seen *s = calloc(1, sizeof(*s));
	struct journal *j;
	int i;

	memset(area, 0xa5, AREA); /* not a journal yet: formatted on open */
	j = reopen(area, NULL, s);
	CU_ASSERT_EQUAL(s->n, 0);
	for (i = 0; i < 100; i++)
		append(j, "record ", i);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 100);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "record 0");
	CU_ASSERT_STRING_EQUAL(s->recs[99], "record 99");
	journal_stats(j, &st);
	CU_ASSERT_EQUAL(st.records, 100);
	CU_ASSERT_EQUAL(st.dropped, 0);
	/* Appends after a reopen follow on. */
	append(j, "after ", 1);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL(s->n, 101);
	CU_ASSERT_STRING_EQUAL(s->recs[100], "after 1");
	journal_close(j);
	free(s);
	free(area);
}

static void test_torn_tail(void)
{
	uint8_t *area = calloc(1, AREA);
	struct seen *s = calloc(1, sizeof(*s));
	struct journal_stats st;
	struct journal *j;
	uint8_t *last;
	int i;

	j = reopen(area, NULL, s);
	for (i = 0; i < 10; i++)
		append(j, "r", i);
	journal_stats(j, &st);
	/* Records are 24 + 8 bytes here: flip a payload byte of the last one. */
	last = area + 4096 + st.used - 8;
	*last ^= 0x40;
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL(s->n, 9);
	journal_stats(j, &st);
	CU_ASSERT(st.dropped > 0);
	/* The log goes on from the last good record. */
	append(j, "new ", 0);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 10);
	CU_ASSERT_STRING_EQUAL(s->recs[8], "r8");
	CU_ASSERT_STRING_EQUAL(s->recs[9], "new 0");
	journal_stats(j, &st);
	CU_ASSERT_EQUAL(st.dropped, 0);
	journal_close(j);
	free(s);
	free(area);
}

struct live {
	int from, to;
};

static int fill(void *arg, struct journal *j)
{
	const struct live *l = arg;
	int i, rc;

	for (i = l->from; i < l->to; i++) {
		char rec[32];

		snprintf(rec, sizeof(rec), "live %d", i);
		if ((rc = journal_append(j, rec, strlen(rec))) < 0)
			return rc;
	}
	return 0;
}

static void test_full_and_rewrite(void)
{
	uint8_t *area = calloc(1, AREA);
	struct seen *s = calloc(1, sizeof(*s));
	struct live few = {0, 5}, many = {0, 100000};
	struct journal_stats st;
	struct journal *j;
	int i, rc = 0;

	j = reopen(area, NULL, s);
	for (i = 0; rc == 0; i++) {
		char rec[32];

		snprintf(rec, sizeof(rec), "record %d", i);
		rc = journal_append(j, rec, strlen(rec));
	}
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	/* A live set that does not fit changes nothing. */
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &many), -ENOSPC);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL(s->n, (size_t)i - 1);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "record 0");
	/* One that fits replaces the records; appends follow it. */
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &few), 0);
	append(j, "then ", 1);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 6);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "live 0");
	CU_ASSERT_STRING_EQUAL(s->recs[5], "then 1");
	/* Twice more: the halves alternate. */
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &few), 0);
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &(struct live){3, 4}), 0);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 1);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "live 3");
	journal_stats(j, &st);
	CU_ASSERT_EQUAL(st.records, 1);
	journal_close(j);
	free(s);
	free(area);
}

static size_t persists;

static void count_persist(const void *p, size_t len)
{
	(void)p, (void)len;
	persists++;
}

/*
 * A rewrite makes its records durable together, not one persist (an msync,
 * on a file) each: the new half's end, its records at once, then the header
 * that puts it in force.
 */
static void test_rewrite_persists_once(void)
{
	uint8_t *area = calloc(1, AREA);
	struct seen *s = calloc(1, sizeof(*s));
	struct journal *j;

	CU_ASSERT_EQUAL_FATAL(journal_open(area, AREA, count_persist, NULL, NULL, &j), 0);
	append(j, "before ", 0);
	persists = 0;
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &(struct live){0, 500}), 0);
	CU_ASSERT_EQUAL(persists, 3);
	persists = 0;
	append(j, "after ", 1); /* (an append alone: the record and its terminator at once) */
	CU_ASSERT_EQUAL(persists, 1);
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 501);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "live 0");
	CU_ASSERT_STRING_EQUAL(s->recs[499], "live 499");
	CU_ASSERT_STRING_EQUAL(s->recs[500], "after 1");
	journal_close(j);
	free(s);
	free(area);
}

static void test_torn_header(void)
{
	uint8_t *area = calloc(1, AREA);
	struct seen *s = calloc(1, sizeof(*s));
	struct journal *j;

	j = reopen(area, NULL, s);
	append(j, "old ", 1);
	CU_ASSERT_EQUAL(journal_rewrite(j, fill, &(struct live){0, 2}), 0);
	/* The rewrite wrote slot 1 (the format wrote slot 0): tear it. */
	area[2048 + 20] ^= 1;
	j = reopen(area, j, s);
	CU_ASSERT_EQUAL_FATAL(s->n, 1);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "old 1");
	journal_close(j);
	CU_ASSERT_EQUAL(journal_open(area, JOURNAL_MIN_SIZE - 1, NULL, NULL, NULL, &j), -EINVAL);
	free(s);
	free(area);
}

/* Nothing (zeros), a journal, and something else are told apart before an open. */
static void test_probe(void)
{
	uint8_t *area = calloc(1, AREA);
	struct seen *s = calloc(1, sizeof(*s));
	struct journal *j;

	CU_ASSERT_EQUAL(journal_probe(area, AREA), 0);
	j = reopen(area, NULL, s);
	CU_ASSERT_EQUAL(journal_probe(area, AREA), 1);
	journal_close(j);
	area[2048 + 20] ^= 1; /* one slot torn: still a journal */
	CU_ASSERT_EQUAL(journal_probe(area, AREA), 1);
	area[20] ^= 1; /* both: not one any more */
	CU_ASSERT_EQUAL(journal_probe(area, AREA), -1);
	memset(area, 0, AREA);
	area[4000] = 1; /* garbage in the header area */
	CU_ASSERT_EQUAL(journal_probe(area, AREA), -1);
	CU_ASSERT_EQUAL(journal_probe(area, JOURNAL_MIN_SIZE - 1), -1);
	free(s);
	free(area);
}

/*
 * What a crash keeps: the ranges persisted, copied from the working area
 * into the durable one (the working area is what the process had written).
 */
static uint8_t *working, *durable;

static void persist_to_durable(const void *p, size_t len)
{
	size_t off = (size_t)((const uint8_t *)p - working);

	CU_ASSERT_FATAL(off + len <= AREA);
	memcpy(durable + off, p, len);
	persists++;
}

/* The records a poold restarted after a crash now would replay. */
static size_t after_crash(struct seen *s)
{
	uint8_t *copy = malloc(AREA);
	struct journal *j;

	memcpy(copy, durable, AREA);
	memset(s, 0, sizeof(*s));
	CU_ASSERT_EQUAL_FATAL(journal_open(copy, AREA, NULL, collect, s, &j), 0);
	journal_close(j);
	free(copy);
	return s->n;
}

static void test_group_commit(void)
{
	struct seen *s = calloc(1, sizeof(*s));
	struct journal *j;
	size_t before;

	working = calloc(1, AREA);
	durable = calloc(1, AREA);
	CU_ASSERT_EQUAL_FATAL(journal_open(working, AREA, persist_to_durable, NULL, NULL, &j), 0);
	CU_ASSERT_FALSE(journal_unsynced(j));
	CU_ASSERT_EQUAL(journal_append(j, "durable", 7), 0);
	CU_ASSERT_EQUAL(after_crash(s), 1);
	/* Written, not synced: a crash loses them, and only them. */
	CU_ASSERT_EQUAL(journal_write(j, "one", 3), 0);
	CU_ASSERT_EQUAL(journal_write(j, "two", 3), 0);
	CU_ASSERT_EQUAL(journal_write(j, "three", 5), 0);
	CU_ASSERT_TRUE(journal_unsynced(j));
	CU_ASSERT_EQUAL(after_crash(s), 1);
	CU_ASSERT_STRING_EQUAL(s->recs[0], "durable");
	/* One sync makes the three durable with one persist. */
	before = persists;
	journal_sync(j);
	CU_ASSERT_EQUAL(persists, before + 1);
	CU_ASSERT_FALSE(journal_unsynced(j));
	CU_ASSERT_EQUAL_FATAL(after_crash(s), 4);
	CU_ASSERT_STRING_EQUAL(s->recs[1], "one");
	CU_ASSERT_STRING_EQUAL(s->recs[3], "three");
	journal_sync(j); /* nothing to do */
	CU_ASSERT_EQUAL(persists, before + 1);
	/* An append persists once, the record and what ends the records with it. */
	CU_ASSERT_EQUAL(journal_append(j, "four", 4), 0);
	CU_ASSERT_EQUAL(persists, before + 2);
	CU_ASSERT_EQUAL(after_crash(s), 5);
	journal_close(j);
	free(working);
	free(durable);
	free(s);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"records replay in order", test_replay_in_order},
	    {"a torn tail is cut off", test_torn_tail},
	    {"full, then rewritten", test_full_and_rewrite},
	    {"a rewrite persists its records together", test_rewrite_persists_once},
	    {"a torn header slot falls back", test_torn_header},
	    {"a journal, nothing, or something else", test_probe},
	    {"records written now, durable at one sync", test_group_commit},
	    {NULL, NULL},
	};
	return unit_run("journal", tests);
}

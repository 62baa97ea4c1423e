/*
 * daemon/lend/journal.h - an append-only record log in persistent memory.
 *
 * A journal lives in a range of a persistent mapping: a header with two
 * checksummed slots (the newer valid one wins, so a torn header write loses
 * nothing) and two halves, one active. Records are appended to the active
 * half, each with its length, a sequence number and a checksum, and made
 * durable before journal_append() returns. When the half is full the owner
 * rewrites what is still live into the other half (journal_rewrite()),
 * which becomes active only once it is complete and durable.
 *
 * On open the active half is replayed up to the first record that does not
 * check: a torn or corrupt tail is cut off there, and said so. It depends
 * on nothing else in poold, so it is unit-tested on its own.
 */
#ifndef POOLD_JOURNAL_H
#define POOLD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_MIN_SIZE 8192

struct journal;
typedef void (*journal_persist_fn)(const void *ptr, size_t len);
/* One replayed record; a negative return stops the replay (and the open fails with it). */
typedef int (*journal_record_fn)(void *arg, const uint8_t *rec, size_t len);

struct journal_stats {
	uint64_t records;    /* in the active half */
	uint64_t used, half; /* bytes of the active half in use, and of a half */
	uint64_t rewrites;   /* since open */
	uint64_t dropped;    /* bytes cut off as a torn or corrupt tail at open */
};

/*
 * Open the journal in [base, base+size) (formatting it when it holds none)
 * and replay its records through fn. persist makes a range durable (NULL:
 * nothing to do, for tests). 0 or -errno.
 */
int journal_open(void *base, size_t size, journal_persist_fn persist, journal_record_fn fn,
		 void *arg, struct journal **ret);
void journal_close(struct journal *j);
/*
 * What [base, base+size) holds: 1 a journal, 0 nothing (its header is all
 * zeros), -1 something else, which journal_open() would overwrite.
 */
int journal_probe(const void *base, size_t size);
/* Append one record, durable on return: 0, or -ENOSPC when the half is full. */
int journal_append(struct journal *j, const void *rec, size_t len);
/*
 * Append a record that journal_sync() makes durable later, with every other
 * written since: a group commit (a record is lost in a crash before it).
 */
int journal_write(struct journal *j, const void *rec, size_t len);
void journal_sync(struct journal *j);
/* Whether records were written that are not yet durable. */
bool journal_unsynced(const struct journal *j);
/*
 * Replace the journal's records by those fill() appends (with
 * journal_append() on the journal it is given): the live set. The old
 * records stay in force until the new ones are complete; on an error
 * (-ENOSPC: the live set does not fit) nothing changes.
 */
int journal_rewrite(struct journal *j, int (*fill)(void *arg, struct journal *j), void *arg);
void journal_stats(const struct journal *j, struct journal_stats *st);

#endif

/*
 * daemon/hold/scrub.c - a lender's scrubs of large extents, in slices.
 *
 * Before an extent is lent again its lender zeroes it (hold_scrub()). A
 * gigabyte of DRAM costs about 0.2 s (its pages given back and taken
 * again, lend_renew(), and a carve's file emptied) and pmem more (written
 * and flushed): in one callback that would stall the loop, and with it
 * every client and heartbeat of the node. An extent over SCRUB_AT_ONCE is
 * therefore scrubbed here. It stops being reachable at once: its holding
 * is forgotten (no transfer reaches it) and its carves are taken out of
 * use. Then a timer of the loop, a step at a time and about a millisecond
 * a slice, maps the arena's file back over the carves (unmapping a
 * gigabyte that poold touched takes a while too), empties their files and
 * zeroes the range, and tells the caller when it is over; until then the
 * coordinator keeps the extent retired, so nothing new lands in it.
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include "daemon/hold/hold.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"

#define SCRUB_AT_ONCE (4ull << 20) /* bytes scrubbed in the caller's callback */
#define SCRUB_STEP (2ull << 20)	   /* bytes zeroed between looks at the clock */
/*
 * The pmem tier's, smaller: on a file each slice's writes are made durable
 * after it by one msync (lend.c's group), a disk write of what the slice
 * zeroed, 3 ms for 2 MiB here and several times that while the disk is
 * busy with other writes; so a slice zeroes this much at most.
 */
#define SCRUB_PMEM (1ull << 20)
#define SCRUB_SLICE_US 1000 /* loop time a slice may take */

struct scrub_carve {
	int fd;
	uint64_t off, len; /* where it was in the arena */
};

struct scrub_job {
	TAILQ_ENTRY(scrub_job) entry;
	uint32_t arena;
	uint64_t off, len, done; /* done: bytes zeroed so far */
	struct scrub_carve *carves;
	size_t ncarves;
	coord_done_cb cb;
	void *arg;
};

struct scrubs {
	TAILQ_HEAD(, scrub_job) jobs;
	struct event *ev;
};

static void scrub_job_free(struct scrub_job *j)
{
	for (size_t i = 0; i < j->ncarves; i++)
		close(j->carves[i].fd);
	free(j->carves);
	free(j);
}

/* Zero [at, at+len) of the job's extent and empty what its carves held there. */
static void scrub_step(struct poold *pd, struct scrub_job *j, uint64_t at, uint64_t len)
{
	for (size_t i = 0; i < j->ncarves; i++) {
		const struct scrub_carve *c = &j->carves[i];
		uint64_t from = MAX(at, c->off), to = MIN(at + len, c->off + c->len);

		if (from < to) {
			carve_put_back(pd, j->arena, from, to - from);
			carve_empty(c->fd, from - c->off, to - from);
		}
	}
	lend_scrub(pd, j->arena, at, len);
}

static bool scrub_pmem(const struct poold *pd, uint32_t arena)
{
	return arena < pd->narenas && pd->arenas[arena].tier == TIER_PMEM;
}

static void scrub_slice(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval now = {0, 0};
	struct poold *pd = arg;
	struct scrubs *s = pd->scrubs;
	uint64_t until = units_now_us() + SCRUB_SLICE_US;
	struct scrub_job *j;

	(void)fd;
	(void)what;
	while ((j = TAILQ_FIRST(&s->jobs)) != NULL && units_now_us() < until) {
		bool pmem = scrub_pmem(pd, j->arena);
		uint64_t step = MIN(pmem ? SCRUB_PMEM : SCRUB_STEP, j->len - j->done);

		scrub_step(pd, j, j->off + j->done, step);
		j->done += step;
		if (j->done < j->len) {
			if (pmem)
				break; /* (its msync, then the next slice) */
			continue;
		}
		TAILQ_REMOVE(&s->jobs, j, entry);
		if (j->cb != NULL)
			j->cb(pd, j->arg, 0);
		scrub_job_free(j);
	}
	if (!TAILQ_EMPTY(&s->jobs))
		evtimer_add(s->ev, &now);
}

static struct scrubs *scrubs_of(struct poold *pd)
{
	struct scrubs *s = pd->scrubs;

	if (s != NULL)
		return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	TAILQ_INIT(&s->jobs);
	if ((s->ev = evtimer_new(pd->base, scrub_slice, pd)) == NULL) {
		free(s);
		return NULL;
	}
	return pd->scrubs = s;
}

/*
 * Scrub [off, off+len) of an arena of this node, as hold_scrub() does: in
 * slices when it is large, cb(pd, arg, 0) called once it is over (true);
 * false when the caller is to call hold_scrub() now (a small extent, or no
 * memory to keep the job in).
 */
bool scrub_later(struct poold *pd, uint32_t arena, uint64_t off, uint64_t len, coord_done_cb cb,
		 void *arg)
{
	static const struct timeval now = {0, 0};
	struct scrubs *s;
	struct scrub_job *j;
	uint64_t coff, clen;
	int fd;

	if (len <= (scrub_pmem(pd, arena) ? SCRUB_PMEM : SCRUB_AT_ONCE) ||
	    (s = scrubs_of(pd)) == NULL || (j = calloc(1, sizeof(*j))) == NULL)
		return false;
	j->arena = arena;
	j->off = off;
	j->len = len;
	j->cb = cb;
	j->arg = arg;
	while ((fd = carve_take(pd, arena, off, len, &coff, &clen)) >= 0) {
		struct scrub_carve *v = reallocarray(j->carves, j->ncarves + 1, sizeof(*v));

		if (v == NULL) { /* (emptied now rather than lost) */
			carve_put_back(pd, arena, coff, clen);
			carve_empty(fd, 0, clen);
			close(fd);
			continue;
		}
		j->carves = v;
		j->carves[j->ncarves++] = (struct scrub_carve){fd, coff, clen};
	}
	hold_forget(pd, arena, off);
	TAILQ_INSERT_TAIL(&s->jobs, j, entry);
	evtimer_add(s->ev, &now);
	return true;
}

/*
 * At exit, before the address space goes: the scrubs under way are
 * dropped, their callers not told (a poold that stops scrubs nothing).
 */
void scrub_close(struct poold *pd)
{
	struct scrubs *s = pd->scrubs;
	struct scrub_job *j;

	if (s == NULL)
		return;
	while ((j = TAILQ_FIRST(&s->jobs)) != NULL) {
		TAILQ_REMOVE(&s->jobs, j, entry);
		scrub_job_free(j);
	}
	event_free(s->ev);
	free(s);
	pd->scrubs = NULL;
}

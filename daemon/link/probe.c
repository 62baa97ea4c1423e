/*
 * daemon/link/probe.c - link probes: this node reads each target's probe buffer
 * the way it reaches the target's memory (carry.c), one target at a time so
 * probes do not disturb each other. Latency is the median of
 * PROBE_LAT_ITERS sequential 8-byte gets;
 * bandwidth is PROBE_BW_SIZE gets, PROBE_BW_DEPTH in flight, for up to
 * PROBE_BW_BYTES or PROBE_BW_NS. Everything runs from fabric completions in
 * the event loop; a target that stops answering is given up after
 * PROBE_TARGET_MS.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "daemon/link/link.h"
#include "daemon/member/member.h"

#define PROBE_LAT_ITERS 200
#define PROBE_BW_SIZE (1u << 20)
#define PROBE_BW_DEPTH 4
#define PROBE_BW_BYTES (256ull << 20)
#define PROBE_BW_NS 500000000ull
#define PROBE_TARGET_MS 5000

enum probe_phase { PHASE_LAT, PHASE_BW, PHASE_DONE };

struct probe {
	struct poold *pd;
	uint32_t *targets;
	size_t ntargets, idx;
	Pool__ProbeResult **results;
	probe_done_cb cb;
	void *arg;
	/* the target being measured */
	uint32_t node;
	enum probe_phase phase;
	unsigned iters, inflight;
	struct probe_slot {
		struct probe *p;
		bool busy;
	} slots[PROBE_BW_DEPTH]; /* one buffer each for the gets in flight */
	uint64_t t0, bytes, samples[PROBE_LAT_ITERS];
	int error;
	uint8_t *buf; /* PROBE_BW_DEPTH * PROBE_BW_SIZE */
	struct event *timeout;
	struct event *next_ev;
};

static uint64_t probe_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int probe_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A deep copy of a probe result. */
Pool__ProbeResult *probe_result_dup(const Pool__ProbeResult *res)
{
	Pool__ProbeResult *copy = malloc(sizeof(*copy));

	if (copy == NULL)
		return NULL;
	*copy = *res;
	copy->transport = strdup(res->transport ? res->transport : "");
	if (copy->transport == NULL) {
		free(copy);
		return NULL;
	}
	return copy;
}

/* Free one probe result. */
void probe_result_free(Pool__ProbeResult *res)
{
	if (res == NULL)
		return;
	free(res->transport);
	free(res);
}

/* Free an array of probe results and the array. */
void probe_results_free(Pool__ProbeResult **results, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		probe_result_free(results[i]);
	free(results);
}

static void probe_step(struct probe *p);

/* Move on to the next target from the event loop, not from inside a completion. */
static void probe_next(struct probe *p)
{
	evtimer_del(p->timeout);
	event_active(p->next_ev, EV_TIMEOUT, 0);
}

static void probe_finish_target(struct probe *p)
{
	Pool__ProbeResult *res = p->results[p->idx];
	uint64_t elapsed;

	if (p->error == 0 && p->iters > 0) {
		qsort(p->samples, p->iters, sizeof(p->samples[0]), probe_cmp);
		res->latency_ns = p->samples[p->iters / 2];
	}
	elapsed = probe_now_ns() - p->t0;
	if (p->error == 0 && p->phase == PHASE_DONE && elapsed > 0)
		res->bandwidth = p->bytes * 1000000000ull / elapsed;
	res->error = p->error;
	p->phase = PHASE_DONE;
	p->idx++;
	probe_next(p);
}

static void probe_issue(struct probe *p);

static void probe_get_done(void *arg, int status)
{
	struct probe_slot *slot = arg;
	struct probe *p = slot->p;

	slot->busy = false;
	p->inflight--;
	if (status < 0 && p->error == 0)
		p->error = status;
	if (p->error != 0) {
		if (p->inflight == 0)
			probe_finish_target(p);
		return;
	}
	if (p->phase == PHASE_LAT) {
		uint64_t now = probe_now_ns();

		p->samples[p->iters++] = now - p->t0;
		if (p->iters < PROBE_LAT_ITERS) {
			probe_issue(p);
			return;
		}
		p->phase = PHASE_BW;
		p->t0 = probe_now_ns();
		p->bytes = 0;
		probe_issue(p);
		return;
	}
	p->bytes += PROBE_BW_SIZE;
	if (p->bytes + (uint64_t)p->inflight * PROBE_BW_SIZE < PROBE_BW_BYTES &&
	    probe_now_ns() - p->t0 < PROBE_BW_NS) {
		probe_issue(p);
		return;
	}
	if (p->inflight == 0) {
		p->phase = PHASE_DONE;
		probe_finish_target(p);
	}
}

/* Read len bytes of the target's probe buffer into slot's part of p->buf. */
static int probe_get(struct probe *p, size_t slot, uint64_t len)
{
	struct carry_place place = {p->node, CARRY_PROBE_ARENA, 0, 0, len};
	uint64_t gen;

	return carry_read(p->pd, &place, p->buf + slot * PROBE_BW_SIZE, probe_get_done,
			  &p->slots[slot], &gen);
}

/* Issue the next get(s) of the current phase. */
static void probe_issue(struct probe *p)
{
	int rc;

	if (p->phase == PHASE_LAT) {
		p->t0 = probe_now_ns();
		rc = probe_get(p, 0, 8);
		if (rc == 0) {
			p->slots[0].busy = true;
			p->inflight++;
		}
	} else {
		rc = 0;
		while (rc == 0 && p->inflight < PROBE_BW_DEPTH) {
			size_t slot = 0;

			while (p->slots[slot].busy)
				slot++;
			rc = probe_get(p, slot, PROBE_BW_SIZE);
			if (rc == 0) {
				p->slots[slot].busy = true;
				p->inflight++;
			}
		}
	}
	if (rc < 0 && p->error == 0)
		p->error = rc;
	if (p->error != 0 && p->inflight == 0)
		probe_finish_target(p);
}

static void probe_free(struct probe *p)
{
	event_free(p->timeout);
	event_free(p->next_ev);
	free(p->buf);
	free(p->targets);
	free(p);
}

/* Start measuring the target at p->idx, or report when all are done. */
static void probe_step(struct probe *p)
{
	struct timeval tv = {.tv_sec = PROBE_TARGET_MS / 1000};
	Pool__ProbeResult *res;
	struct member *m;
	char tl[128] = "";

	if (p->idx == p->ntargets) {
		p->cb(p->pd, p->results, p->ntargets, p->arg);
		probe_free(p);
		return;
	}
	res = p->results[p->idx];
	p->error = 0;
	p->iters = 0;
	p->bytes = 0;
	p->phase = PHASE_LAT;
	p->node = p->targets[p->idx];
	m = member_find(p->pd, p->node);
	if (m == NULL || m->state == MEMBER_DEAD)
		p->error = -EHOSTUNREACH;
	else if (m->info->probe_len < PROBE_BW_SIZE)
		p->error = -EINVAL;
	if (p->error != 0) {
		probe_finish_target(p);
		return;
	}
	evtimer_add(p->timeout, &tv);
	probe_issue(p); /* (makes the way, if there was none) */
	if (p->pd->carry->transport(m, tl, sizeof(tl)) == 0) {
		free(res->transport);
		res->transport = strdup(tl);
	}
}

static void probe_next_cb(evutil_socket_t fd, short what, void *arg)
{
	probe_step(arg);
}

/* A target that stopped answering: close the way to it so its gets complete with an error. */
static void probe_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	struct member *m = member_find(p->pd, p->targets[p->idx]);
	size_t idx = p->idx;

	log_warnx("link probe of node %u timed out", p->targets[p->idx]);
	p->error = -ETIMEDOUT;
	if (m != NULL)
		carry_drop(p->pd, m); /* completes the gets in flight, with an error */
	if (p->idx == idx && p->inflight == 0)
		probe_finish_target(p);
}

/*
 * Measure the links from this node to each target; cb gets one result per
 * target (it owns them) when all are done.
 */
int probe_run(struct poold *pd, const uint32_t *targets, size_t ntargets, probe_done_cb cb,
	      void *arg)
{
	struct probe *p = calloc(1, sizeof(*p));
	size_t i;

	if (p == NULL)
		return -ENOMEM;
	p->pd = pd;
	p->cb = cb;
	p->arg = arg;
	p->ntargets = ntargets;
	p->targets = malloc((ntargets ? ntargets : 1) * sizeof(*targets));
	p->results = calloc(ntargets ? ntargets : 1, sizeof(*p->results));
	p->buf = malloc((size_t)PROBE_BW_DEPTH * PROBE_BW_SIZE);
	p->timeout = evtimer_new(pd->base, probe_timeout_cb, p);
	p->next_ev = event_new(pd->base, -1, 0, probe_next_cb, p);
	if (p->targets == NULL || p->results == NULL || p->buf == NULL || p->timeout == NULL ||
	    p->next_ev == NULL)
		goto out_free;
	memcpy(p->targets, targets, ntargets * sizeof(*targets));
	for (i = 0; i < PROBE_BW_DEPTH; i++)
		p->slots[i].p = p;
	for (i = 0; i < ntargets; i++) {
		p->results[i] = calloc(1, sizeof(**p->results));
		if (p->results[i] == NULL)
			goto out_free;
		pool__probe_result__init(p->results[i]);
		p->results[i]->src = pd->node_id;
		p->results[i]->dst = targets[i];
		p->results[i]->transport = strdup("");
		if (p->results[i]->transport == NULL)
			goto out_free;
	}
	probe_next(p);
	return 0;
out_free:
	if (p->results != NULL)
		probe_results_free(p->results, ntargets);
	if (p->timeout != NULL)
		event_free(p->timeout);
	if (p->next_ev != NULL)
		event_free(p->next_ev);
	free(p->buf);
	free(p->targets);
	free(p);
	return -ENOMEM;
}

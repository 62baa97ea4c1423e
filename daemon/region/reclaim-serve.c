/*
 * daemon/region/reclaim-serve.c - the lend requests of the control socket (lend,
 * reclaim, drain: answered with the summary once done), the ledger (what
 * each lender's arenas offer and hold, and for whom). The limits
 * reclaim.c sets on other nodes' arenas are sent by region-tell.c.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/control/control.h"
#include "daemon/lend/lend.h"
#include "daemon/member/member.h"
#include "daemon/region/region.h"

/* A reclaim or drain ended: answer the admin who asked. */
static void reclaim_answer(void *arg, int rc, const char *summary)
{
	struct req *q = arg;
	Pool__Ok ok = POOL__OK__INIT;

	if (rc < 0) {
		req_finish(q, req_errorf(q, rc, "%s", summary));
		return;
	}
	ok.message = (char *)summary;
	req_finish(q, req_reply(q, WIRE_OK, &ok.base));
}

/*
 * A drained node owns no KV shards (until it lends again): their new
 * owners take their keys from it, and every poold is told.
 */
static void reclaim_kv_drain(struct poold *pd, uint32_t node, bool drained)
{
	struct member *m = member_find(pd, node);

	if (m != NULL && m->kv_drained != drained) {
		member_set_kv_drained(pd, m, drained);
		if (pd->coord_role != NULL)
			pd->coord_role->member_changed(pd, m);
	}
	/* (kept across restarts) */
	if (member_ids_set_drained(pd, node, drained) && pd->coord_role != NULL)
		pd->coord_role->node_changed(pd, node);
}

static int reclaim_request(struct req *q, const ProtobufCMessage *msg)
{
	const Pool__LendRequest *lr = (const Pool__LendRequest *)msg;
	Pool__Ok ok = POOL__OK__INIT;
	struct req *held;
	char text[400];
	int rc;

	switch (lr->op) {
	case POOL__LEND_OP__LEND_OP_LEND:
		rc = reclaim_lend(q->pd, lr->node, lr->size, text, sizeof(text));
		if (rc < 0)
			return req_errorf(q, rc, "%s", text);
		reclaim_kv_drain(q->pd, lr->node, false);
		ok.message = text;
		return req_reply(q, WIRE_OK, &ok.base);
	case POOL__LEND_OP__LEND_OP_RECLAIM:
	case POOL__LEND_OP__LEND_OP_DRAIN:
		if ((held = req_hold(q)) == NULL)
			return req_errorf(q, -ENOMEM, "out of memory");
		rc =
		    reclaim_start(q->pd, lr->node, lr->size, lr->op == POOL__LEND_OP__LEND_OP_DRAIN,
				  reclaim_answer, held, text, sizeof(text));
		if (rc < 0)
			req_finish(held, req_errorf(held, rc, "%s", text));
		else if (lr->op == POOL__LEND_OP__LEND_OP_DRAIN)
			reclaim_kv_drain(q->pd, lr->node, true);
		return REQ_LATER; /* reclaim_answer() replies */
	default:		  /* (wire_msg_unpack() refused any other number) */
		return req_errorf(q, -EINVAL, "unknown lend operation %d", lr->op);
	}
}

struct ledger_rows {
	Pool__LedgerEntry *rows;
	size_t n, cap;
};

/* A new row at the end (index returned), or -1 without memory. */
static long ledger_add(struct ledger_rows *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		Pool__LedgerEntry *grown = realloc(l->rows, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		l->rows = grown;
		l->cap = cap;
	}
	pool__ledger_entry__init(&l->rows[l->n]);
	return (long)l->n++;
}

/*
 * The ledger: for each lender arena, what it offers and uses (uid
 * 0xffffffff), then what each borrowing uid holds there.
 */
static int reclaim_ledger(struct req *q, const ProtobufCMessage *msg)
{
	struct poold *pd = q->pd;
	Pool__Ledger reply = POOL__LEDGER__INIT;
	Pool__LedgerEntry **ptrs = NULL;
	struct ledger_rows l = {0};
	struct lender_pool *lp;
	struct region *r;
	size_t i, k;
	int rc = -ENOMEM;

	TAILQ_FOREACH(lp, &pd->regions->pools, entry) {
		struct extent_stats st;
		long first = ledger_add(&l);

		if (first < 0)
			goto out;
		extent_stats(lp->alloc, &st);
		l.rows[first].node = lp->node;
		l.rows[first].arena = lp->arena;
		l.rows[first].tier = (char *)tier_name(lp->tier);
		l.rows[first].size = lp->size;
		l.rows[first].lent = lp->lent;
		l.rows[first].used = st.used;
		l.rows[first].uid = UINT32_MAX;
		l.rows[first].draining = lp->draining;
		TAILQ_FOREACH(r, &pd->regions->list, entry) {
			for (i = 0; i < r->next; i++) {
				if (r->ext[i].node != lp->node || r->ext[i].arena != lp->arena)
					continue;
				l.rows[first].regions++;
				/* A uid sees its own use of each arena; admins see every uid's. */
				if (!q->admin && r->uid != q->uid)
					continue;
				for (k = (size_t)first + 1; k < l.n && l.rows[k].uid != r->uid; k++)
					;
				if (k == l.n) {
					if (ledger_add(&l) < 0)
						goto out;
					l.rows[k] = l.rows[first];
					l.rows[k].uid = r->uid;
					l.rows[k].used = 0;
					l.rows[k].regions = 0;
				}
				l.rows[k].used += r->ext[i].len;
				l.rows[k].regions++;
			}
		}
	}
	ptrs = calloc(l.n ? l.n : 1, sizeof(*ptrs));
	if (ptrs == NULL)
		goto out;
	for (i = 0; i < l.n; i++)
		ptrs[i] = &l.rows[i];
	reply.entries = ptrs;
	reply.n_entries = l.n;
	rc = req_reply(q, WIRE_LEDGER_REPLY, &reply.base);
out:
	free(ptrs);
	free(l.rows);
	return rc < 0 && rc == -ENOMEM ? req_errorf(q, rc, "out of memory") : rc;
}

const struct ctl_handler reclaim_handlers[] = {
    {WIRE_LEND, CTL_ADMIN, AT_COORD, reclaim_request, NULL},
    {WIRE_LEDGER, CTL_ANY, AT_COORD, reclaim_ledger, NULL},
    {0, 0, 0, NULL, NULL},
};

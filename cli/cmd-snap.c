/* cli/cmd-snap.c - poolctl snap: snapshots, and the node's shared copies of their images. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cli/poolctl.h"

/* One copy as JSON; the id only when poold told it (admins and the copy's maker see it). */
static void snap_copy_json(struct json *j, const Pool__SnapCopyEntry *e)
{
	json_object(j, NULL);
	json_str(j, "name", e->name);
	if (e->has_id)
		json_u64(j, "id", e->id);
	json_u64(j, "size", e->size);
	json_str(j, "state", e->state);
	json_u64(j, "clones", e->clones);
	json_u64(j, "uid", e->uid);
	json_u64(j, "waiters", e->waiters);
	json_end(j);
}

/* poolctl snap copies: the shared copies of snapshot images the local poold keeps. */
static int cmd_snap_copies(struct cmd_ctx *ctx)
{
	static const char *const headers[] = {"NAME", "ID", "SIZE", "STATE", "CLONES", "UID",
					      "WAITING"};
	Pool__SnapCopy req = POOL__SNAP_COPY__INIT;
	Pool__SnapCopyReply *rep;
	struct json *j;
	struct table *t;
	size_t i;
	int rc;

	req.op = "list";
	rc = cmd_call(ctx, WIRE_SNAP_COPY, &req.base, WIRE_SNAP_COPY_REPLY,
		      (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		j = json_new(stdout);
		json_array(j, "copies");
		for (i = 0; i < rep->n_copies; i++)
			snap_copy_json(j, rep->copies[i]);
		json_finish(j);
		goto out;
	}
	t = table_new(7, headers);
	for (i = 0; i < rep->n_copies; i++) {
		const Pool__SnapCopyEntry *e = rep->copies[i];
		char id[20] = "-", size[32], clones[24], uid[12], waiters[12];

		if (e->has_id)
			snprintf(id, sizeof(id), "%016" PRIx64, e->id);
		units_fmt_size(e->size, size, sizeof(size));
		snprintf(clones, sizeof(clones), "%" PRIu64, e->clones);
		snprintf(uid, sizeof(uid), "%u", e->uid);
		snprintf(waiters, sizeof(waiters), "%u", e->waiters);
		table_row(t, e->name, id, size, e->state, clones, uid, waiters);
	}
	table_print(t, stdout);
	table_free(t);
out:
	wire_msg_free(&rep->base);
	return EXIT_OK;
}

const struct cmd_entry cmd_snap_copies_entry = {
	"snap copies", "", 0, 0, DAEMON_NEEDED, cmd_snap_copies,
	"the shared copies of snapshot images this node keeps for clones",
};

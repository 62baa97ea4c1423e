/* cli/cmd-reload.c - poolctl reload: make poold re-read its configuration. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_reload_exec(struct cmd_ctx *ctx)
{
	Pool__ReloadRequest req = POOL__RELOAD_REQUEST__INIT;
	Pool__Ok *ok;
	int rc;

	rc = cmd_call(ctx, WIRE_RELOAD, &req.base, WIRE_OK, (ProtobufCMessage **)&ok);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_bool(j, "reloaded", true);
		json_str(j, "warnings", ok->message);
		json_finish(j);
	} else {
		printf("configuration reloaded\n");
		if (ok->message != NULL && ok->message[0] != '\0')
			printf("warning: %s\n", ok->message);
	}
	wire_msg_free(&ok->base);
	return EXIT_OK;
}

const struct cmd_entry cmd_reload_entry = {
    "reload", "", 0, 0, DAEMON_NEEDED, cmd_reload_exec, "re-read the configuration file",
};

/* cli/cmd-reload.c - poolctl reload: make poold re-read its configuration. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_reload_exec(struct cmd_ctx *ctx)
{
	const struct admin_said *said;
	int rc;

	rc = admin_reload(ctx->admin, &said);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_bool(j, "reloaded", true);
		json_str(j, "warnings", said->message);
		json_finish(j);
	} else {
		printf("configuration reloaded\n");
		if (said->message[0] != '\0')
			printf("warning: %s\n", said->message);
	}
	admin_free(said);
	return EXIT_OK;
}

const struct cmd_entry cmd_reload_entry = {
    "reload", "", 0, 0, DAEMON_NEEDED, cmd_reload_exec, "re-read the configuration file",
};

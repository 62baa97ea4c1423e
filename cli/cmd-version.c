/* cli/cmd-version.c - poolctl version: this tool's and poold's versions. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_version_exec(struct cmd_ctx *ctx)
{
	const char *server = ctx->admin ? admin_server_version(ctx->admin) : "not reachable";

	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "poolctl", PACKAGE_VERSION);
		json_str(j, "poold", server);
		json_u64(j, "protocol", admin_protocol());
		json_finish(j);
	} else {
		printf("poolctl %s (protocol %u)\n", PACKAGE_VERSION, admin_protocol());
		printf("poold %s\n", server);
	}
	return EXIT_OK;
}

const struct cmd_entry cmd_version_entry = {
    "version", "", 0, 0, DAEMON_OPTIONAL, cmd_version_exec, "show poolctl's and poold's versions",
};

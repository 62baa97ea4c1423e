/* cli/cmd-version.c - poolctl version: this tool's and poold's versions. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_version_exec(struct cmd_ctx *ctx)
{
	const char *server = ctx->wc ? wire_client_server_version(ctx->wc) : "not reachable";

	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "poolctl", PACKAGE_VERSION);
		json_str(j, "poold", server);
		json_u64(j, "protocol", WIRE_VERSION);
		json_finish(j);
	} else {
		printf("poolctl %s (protocol %d)\n", PACKAGE_VERSION, WIRE_VERSION);
		printf("poold %s\n", server);
	}
	return EXIT_OK;
}

const struct cmd_entry cmd_version_entry = {
    "version", "", 0, 0, DAEMON_OPTIONAL, cmd_version_exec, "show poolctl's and poold's versions",
};

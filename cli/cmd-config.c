/* cli/cmd-config.c - poolctl config show | check FILE. */
#include "config.h"

#include "cli/poolctl.h"

static int cmd_config_show_exec(struct cmd_ctx *ctx)
{
	static const char *const headers[] = {"OPTION", "VALUE", "DEFAULT", "TYPE"};
	Pool__ConfigShowRequest req = POOL__CONFIG_SHOW_REQUEST__INIT;
	Pool__ConfigShowReply *rep;
	size_t i;
	int rc;

	rc = cmd_call(ctx, WIRE_CONFIG_SHOW, &req.base, WIRE_CONFIG_SHOW_REPLY,
		      (ProtobufCMessage **)&rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "config_file", rep->config_file);
		json_array(j, "options");
		for (i = 0; i < rep->n_options; i++) {
			Pool__ConfigOption *o = rep->options[i];

			json_object(j, NULL);
			json_str(j, "name", o->name);
			json_str(j, "value", o->value);
			json_str(j, "default", o->default_value);
			json_str(j, "type", o->type);
			json_bool(j, "is_default", o->is_default);
			json_str(j, "help", o->help);
			json_end(j);
		}
		json_finish(j);
	} else {
		struct table *t = table_new(4, headers);

		for (i = 0; i < rep->n_options; i++) {
			Pool__ConfigOption *o = rep->options[i];

			table_row(t, o->name, o->value, o->is_default ? "" : o->default_value,
				  o->type);
		}
		printf("# %s\n", rep->config_file[0] ? rep->config_file : "built-in defaults");
		table_print(t, stdout);
		table_free(t);
	}
	wire_msg_free(&rep->base);
	return EXIT_OK;
}

/* Checked here, with the same option table as poold, so poold need not run. */
static int cmd_config_check_exec(struct cmd_ctx *ctx)
{
	struct poold_conf *conf;
	struct conf_error err;
	int rc;

	rc = conf_load(ctx->argv[0], NULL, 0, &conf, &err);
	if (ctx->json) {
		struct json *j = json_new(stdout);

		json_str(j, "file", err.file);
		json_bool(j, "valid", rc == 0);
		if (rc < 0) {
			json_i64(j, "line", err.line);
			json_str(j, "error", err.msg);
		}
		json_finish(j);
	} else if (rc < 0 && err.line > 0) {
		fprintf(stderr, "%s:%d: %s\n", err.file, err.line, err.msg);
	} else if (rc < 0) {
		fprintf(stderr, "%s: %s\n", err.file, err.msg);
	} else {
		printf("%s: configuration OK\n", ctx->argv[0]);
	}
	if (rc < 0)
		return EXIT_ERROR;
	conf_free(conf);
	return EXIT_OK;
}

const struct cmd_entry cmd_config_show_entry = {
    "config show", "", 0, 0, DAEMON_NEEDED, cmd_config_show_exec, "show every option and its value",
};

const struct cmd_entry cmd_config_check_entry = {
    "config check",
    "FILE",
    1,
    1,
    DAEMON_NONE,
    cmd_config_check_exec,
    "check a configuration file without poold",
};

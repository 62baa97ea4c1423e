/* cli/cmd-config.c - poolctl config show | check FILE. */
#include "config.h"

#include "cli/poolctl.h"

enum { O_NAME, O_VALUE, O_DEFAULT_SHOWN, O_DEFAULT, O_TYPE, O_IS_DEFAULT, O_HELP, O_FIELDS };

static const struct field option_fields[O_FIELDS] = {
    [O_NAME] = {"name", "OPTION", FIELD_STR, IN_BOTH},
    [O_VALUE] = {"value", "VALUE", FIELD_STR, IN_BOTH},
    [O_DEFAULT_SHOWN] = {NULL, "DEFAULT", FIELD_STR, IN_BOTH}, /* (blank where it is the value) */
    [O_DEFAULT] = {"default", NULL, FIELD_STR, IN_BOTH},
    [O_TYPE] = {"type", "TYPE", FIELD_STR, IN_BOTH},
    [O_IS_DEFAULT] = {"is_default", NULL, FIELD_BOOL, IN_BOTH},
    [O_HELP] = {"help", NULL, FIELD_STR, IN_BOTH},
};

static int cmd_config_show_exec(struct cmd_ctx *ctx)
{
	const struct admin_config *rep;
	struct json *j = NULL;
	struct listing *l;
	size_t i;
	int rc;

	rc = admin_config(ctx->admin, &rep);
	if (rc != EXIT_OK)
		return rc;
	if (ctx->json) {
		j = json_new(stdout);
		json_str(j, "config_file", rep->config_file);
	} else {
		printf("# %s\n", rep->config_file[0] ? rep->config_file : "built-in defaults");
	}
	l = listing_new(j, "options", option_fields, O_FIELDS, false);
	for (i = 0; i < rep->n_options; i++) {
		const struct admin_option *o = &rep->options[i];
		struct value v[O_FIELDS] = {
		    [O_NAME].s = o->name,
		    [O_VALUE].s = o->value,
		    [O_DEFAULT_SHOWN].s = o->is_default ? "" : o->default_value,
		    [O_DEFAULT].s = o->default_value,
		    [O_TYPE].s = o->type,
		    [O_IS_DEFAULT].b = o->is_default,
		    [O_HELP].s = o->help,
		};

		listing_row(l, v);
	}
	listing_end(l);
	if (j != NULL)
		json_finish(j);
	admin_free(rep);
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

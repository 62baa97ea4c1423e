/* daemon/reload.c - config show and reload requests. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/poold.h"

static int reload_show(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg)
{
	struct poold *pd = ctl_poold(c);
	Pool__ConfigShowReply reply = POOL__CONFIG_SHOW_REPLY__INIT;
	Pool__ConfigOption *opts, **ptrs;
	char (*values)[512];
	size_t i;
	int rc;

	opts = calloc(conf_noptions, sizeof(*opts));
	ptrs = calloc(conf_noptions, sizeof(*ptrs));
	values = calloc(conf_noptions, sizeof(*values));
	if (opts == NULL || ptrs == NULL || values == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < conf_noptions; i++) {
		const struct conf_option *o = &conf_options[i];

		pool__config_option__init(&opts[i]);
		conf_format(pd->conf, o, values[i], sizeof(values[i]));
		opts[i].name = (char *)o->name;
		opts[i].type = (char *)conf_type_name(o->type);
		opts[i].value = values[i];
		opts[i].default_value = (char *)o->def;
		opts[i].help = (char *)o->help;
		opts[i].is_default = conf_is_default(pd->conf, o);
		ptrs[i] = &opts[i];
	}
	reply.config_file = (char *)(pd->conf_path ? pd->conf_path : "");
	reply.n_options = conf_noptions;
	reply.options = ptrs;
	rc = ctl_reply(c, req_id, WIRE_CONFIG_SHOW_REPLY, &reply.base);
out:
	free(values);
	free(ptrs);
	free(opts);
	return rc;
}

static int reload_request(struct ctl_conn *c, uint64_t req_id, const ProtobufCMessage *msg)
{
	Pool__Ok ok = POOL__OK__INIT;
	char err[512];
	int rc;

	rc = poold_reload(ctl_poold(c), err, sizeof(err));
	if (rc < 0)
		return ctl_errorf(c, rc, "%s", err);
	ok.message = err;
	return ctl_reply(c, req_id, WIRE_OK, &ok.base);
}

const struct ctl_handler reload_handlers[] = {
	{WIRE_CONFIG_SHOW, CTL_ANY, reload_show},
	{WIRE_RELOAD, CTL_ADMIN, reload_request},
	{0, 0, NULL},
};

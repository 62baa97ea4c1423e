/* daemon/reload.c - config show and reload requests. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/poold.h"

static int reload_show(struct req *r, const ProtobufCMessage *msg)
{
	struct poold *pd = r->pd;
	Pool__ConfigShowReply reply = POOL__CONFIG_SHOW_REPLY__INIT;
	Pool__ConfigOption *opts, **ptrs;
	char(*values)[512];
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
		if ((o->flags & CONF_F_SECRET) && values[i][0] != '\0')
			snprintf(values[i], sizeof(values[i]), "(set)");
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
	rc = req_reply(r, WIRE_CONFIG_SHOW_REPLY, &reply.base);
out:
	free(values);
	free(ptrs);
	free(opts);
	return rc;
}

static int reload_request(struct req *r, const ProtobufCMessage *msg)
{
	Pool__Ok ok = POOL__OK__INIT;
	char err[512];
	int rc;

	rc = poold_reload(r->pd, err, sizeof(err));
	if (rc < 0)
		return req_errorf(r, rc, "%s", err);
	ok.message = err;
	return req_reply(r, WIRE_OK, &ok.base);
}

const struct ctl_handler reload_handlers[] = {
    {WIRE_CONFIG_SHOW, CTL_ANY, AT_HERE, reload_show, NULL},
    {WIRE_RELOAD, CTL_ADMIN, AT_HERE, reload_request, NULL},
    {0, 0, 0, NULL, NULL},
};

/*
 * daemon/control/reload-serve.c - the configuration read again (SIGHUP,
 * poolctl reload), and config show.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control.h"

/* control.admin_group as a gid ((gid_t)-1 when unset): 0, or -EINVAL saying why. */
int poold_resolve_admin(struct poold_conf *conf, gid_t *ret_gid, char *errbuf, size_t errlen)
{
	struct group *gr;

	if (conf->admin_group[0] == '\0') {
		*ret_gid = (gid_t)-1;
		return 0;
	}
	gr = getgrnam(conf->admin_group);
	if (gr == NULL) {
		snprintf(errbuf, errlen, "control.admin_group: no group '%s'", conf->admin_group);
		return -EINVAL;
	}
	*ret_gid = gr->gr_gid;
	return 0;
}

/*
 * Re-read the configuration into a fresh struct and switch to it; on any
 * error the running configuration stays. Options that need a restart keep
 * their running value (with a warning in errbuf and the log).
 */
int poold_reload(struct poold *pd, char *errbuf, size_t errlen)
{
	struct poold_conf *next;
	struct conf_error err;
	size_t i, off = 0;
	gid_t admin;
	int rc;

	errbuf[0] = '\0';
	rc = conf_load(pd->conf_path, pd->overrides, pd->noverrides, &next, &err);
	if (rc < 0) {
		if (err.line > 0)
			snprintf(errbuf, errlen, "%s:%d: %s", err.file, err.line, err.msg);
		else
			snprintf(errbuf, errlen, "%s: %s", err.file, err.msg);
		log_warnx("reload failed, keeping the running configuration: %s", errbuf);
		return rc;
	}
	rc = poold_resolve_admin(next, &admin, errbuf, errlen);
	if (rc < 0) {
		log_warnx("reload failed, keeping the running configuration: %s", errbuf);
		conf_free(next);
		return rc;
	}
	for (i = 0; i < conf_noptions; i++) {
		const struct conf_option *o = &conf_options[i];
		char a[512], b[512];

		if (!(o->flags & CONF_F_RESTART))
			continue;
		conf_format(pd->conf, o, a, sizeof(a));
		conf_format(next, o, b, sizeof(b));
		if (strcmp(a, b) == 0)
			continue;
		log_warnx("reload: %s changed from '%s' to '%s'; it takes effect after a restart",
			  o->name, a, b);
		if (off < errlen)
			off += (size_t)snprintf(errbuf + off, errlen - off, "%s%s needs a restart",
						off ? "; " : "", o->name);
		conf_set(next, o->name, a, b, sizeof(b));
		next->set[i] = pd->conf->set[i];
	}
	conf_free(pd->conf);
	pd->conf = next;
	pd->admin_gid = admin;
	pd->reloads++;
	log_set_level((int)next->log_level);
	log_info("configuration reloaded from %s", pd->conf_path ? pd->conf_path : "defaults");
	return 0;
}

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

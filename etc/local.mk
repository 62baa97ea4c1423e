# etc/: the example configuration and the systemd unit.
dist_sysconf_DATA = etc/poold.conf.example
systemdsystemunitdir = $(prefix)/lib/systemd/system
systemdsystemunit_DATA = etc/poold.service
EXTRA_DIST += etc/poold.service.in
CLEANFILES += etc/poold.service

etc/poold.service: $(srcdir)/etc/poold.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/etc/poold.service.in >$@

# A Grafana dashboard of the metrics endpoint (tests/integration/dashboard.sh
# checks that what it queries is there).
grafanadir = $(datadir)/pool/grafana
dist_grafana_DATA = etc/grafana/pool.json

# The user the unit runs poold as; made at install when systemd-sysusers is there.
sysusersdir = $(prefix)/lib/sysusers.d
EXTRA_DIST += etc/poold.sysusers
# (and poolctl's bash completion, cli/local.mk, named for the command)
install-data-local:
	$(MKDIR_P) $(DESTDIR)$(bashcompletiondir)
	$(INSTALL_DATA) cli/poolctl.bash $(DESTDIR)$(bashcompletiondir)/poolctl
	$(MKDIR_P) $(DESTDIR)$(sysusersdir)
	$(INSTALL_DATA) $(srcdir)/etc/poold.sysusers $(DESTDIR)$(sysusersdir)/poold.conf
	if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(sysusersdir)/poold.conf || true; fi
uninstall-local:
	rm -f $(DESTDIR)$(sysusersdir)/poold.conf $(DESTDIR)$(bashcompletiondir)/poolctl

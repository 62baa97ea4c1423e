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

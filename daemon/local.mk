# daemon/: poold
sbin_PROGRAMS += daemon/poold
daemon_poold_SOURCES = daemon/poold.h daemon/poold.c daemon/pidfile.c daemon/conn.c daemon/control.c \
	daemon/status.c daemon/reload.c
daemon_poold_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
daemon_poold_LDADD = proto/libwire.la common/libconf.la common/libcommon.la $(EVENT_LIBS) \
	$(PROTOBUF_C_LIBS)

# common/: libcommon (units, error strings) goes into every binary and
# libpool; libconf (logging, the option table and its parser) into poold and
# poolctl only (libpool logs through its own callback, libpool/log.c).
noinst_LTLIBRARIES += common/libcommon.la common/libconf.la
common_libcommon_la_SOURCES = common/common.h common/units.c common/err.c common/addr.c \
	common/pagekey.c common/sha256.c common/sslerr.c
common_libcommon_la_CFLAGS = $(AM_CFLAGS) $(LIBCRYPTO_CFLAGS)
common_libcommon_la_LIBADD = $(LIBCRYPTO_LIBS)
common_libconf_la_SOURCES = common/log.c common/conf.c common/options.c common/respusers.c

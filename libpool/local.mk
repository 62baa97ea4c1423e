# libpool/: the client library, its public header and pkg-config file.
lib_LTLIBRARIES += libpool/libpool.la
include_HEADERS += libpool/libpool.h
libpool_libpool_la_SOURCES = libpool/libpool.h libpool/internal.h libpool/pool.c libpool/error.c \
	libpool/log.c libpool/region.c libpool/xfer.c libpool/kv.c libpool/vec.c libpool/snap.h libpool/snap.c libpool/snapbase.c libpool/snapcopy.c libpool/snaplazy.c libpool/snapsave.c libpool/snapuffd.c libpool/snapvmsave.c
libpool_libpool_la_CPPFLAGS = $(AM_CPPFLAGS) -DPOOL_BUILDING_LIB
libpool_libpool_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(XXHASH_CFLAGS)
# Only what the client side uses: a client holds no fabric endpoint (poold
# moves its data), so neither UCX nor libevent is linked (checked by
# tests/integration/libpool-abi.sh).
libpool_libpool_la_LIBADD = proto/libwire.la common/libcommon.la \
	vecindex/libvecindex.la snapshot/libsnapshot.la $(PROTOBUF_C_LIBS) $(XXHASH_LIBS)
libpool_libpool_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(LIBPOOL_LT_VERSION) \
	-Wl,--version-script=$(srcdir)/libpool/libpool.map
EXTRA_libpool_libpool_la_DEPENDENCIES = $(srcdir)/libpool/libpool.map
EXTRA_DIST += libpool/libpool.map libpool/libpool.pc.in

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libpool/libpool.pc
DISTCLEANFILES += libpool/libpool.pc

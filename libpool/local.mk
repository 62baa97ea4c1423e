# libpool/: the client library, its public header and pkg-config file.
#
# libvecindex: the vector index on a plain memory range. A convenience
# library of its own, since it depends on nothing else here: libpool links
# it, the unit tests use it on malloc'd memory, poold will search with it.
# The distance kernels are one file per instruction-set family.
noinst_LTLIBRARIES += libpool/libvecindex.la
libpool_libvecindex_la_SOURCES = libpool/vecindex.h libpool/vecindex.c libpool/vecdist.h
if HOST_X86_64
libpool_libvecindex_la_SOURCES += libpool/vecdist_x86.c
else
libpool_libvecindex_la_SOURCES += libpool/vecdist_generic.c
endif
libpool_libvecindex_la_LIBADD = $(LIBM)

lib_LTLIBRARIES += libpool/libpool.la
include_HEADERS += libpool/libpool.h
libpool_libpool_la_SOURCES = libpool/libpool.h libpool/internal.h libpool/pool.c libpool/error.c \
	libpool/region.c libpool/xfer.c libpool/kv.c libpool/vec.c libpool/snap.h libpool/snap.c libpool/snapcopy.c libpool/snaplazy.c libpool/snapuffd.c
libpool_libpool_la_CPPFLAGS = $(AM_CPPFLAGS) -DPOOL_BUILDING_LIB
libpool_libpool_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(XXHASH_CFLAGS)
libpool_libpool_la_LIBADD = proto/libwire.la common/libcommon.la fabric/libfabric.la \
	libpool/libvecindex.la snapshot/libsnapshot.la $(PROTOBUF_C_LIBS) $(UCX_LIBS) $(XXHASH_LIBS)
libpool_libpool_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(LIBPOOL_LT_VERSION) \
	-Wl,--version-script=$(srcdir)/libpool/libpool.map
EXTRA_libpool_libpool_la_DEPENDENCIES = $(srcdir)/libpool/libpool.map
EXTRA_DIST += libpool/libpool.map libpool/libpool.pc.in

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libpool/libpool.pc
DISTCLEANFILES += libpool/libpool.pc

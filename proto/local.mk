# Wire protocol: .proto compiled by protoc-c at build time, plus the frame
# codec and the blocking request helper shared by poold, poolctl and libpool,
# and the contract beside them (error codes, limits), installed with libpool.h.
include_HEADERS += proto/pool_contract.h
PROTO_GEN = proto/pool.pb-c.c proto/pool.pb-c.h
BUILT_SOURCES += $(PROTO_GEN)
CLEANFILES += $(PROTO_GEN)
dist_pkgdata_DATA = proto/pool.proto

proto/pool.pb-c.c proto/pool.pb-c.h: $(srcdir)/proto/pool.proto
	$(AM_V_GEN)$(MKDIR_P) proto && \
	$(PROTOC_C) --proto_path=$(srcdir)/proto --c_out=proto $(srcdir)/proto/pool.proto

noinst_LTLIBRARIES += proto/libwire.la
nodist_proto_libwire_la_SOURCES = $(PROTO_GEN)
proto_libwire_la_SOURCES = proto/wire.h proto/kvstats.h proto/kvshardstats.h proto/statusstats.h proto/frame.c proto/msg.c proto/rpc.c
proto_libwire_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
proto_libwire_la_LIBADD = $(PROTOBUF_C_LIBS)

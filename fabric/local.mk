# fabric/: the UCX layer (the only code that includes UCX headers) and the
# checked transport (link*.c), their unit tests and their benchmark.
noinst_LTLIBRARIES += fabric/libfabric.la
fabric_libfabric_la_SOURCES = fabric/fabric.h fabric/ucx_int.h \
	fabric/status.c fabric/ctx.c fabric/wait.c fabric/evloop.c fabric/op.c \
	fabric/ep.c fabric/mem.c fabric/rkey.c fabric/rma.c fabric/amo.c \
	fabric/link_int.h fabric/link.c fabric/link-auth.c fabric/link-wire.c \
	fabric/link-serve.c fabric/link-call.c
fabric_libfabric_la_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS) $(EVENT_CFLAGS) $(LIBCRYPTO_CFLAGS)
fabric_libfabric_la_LIBADD = $(UCX_LIBS) $(EVENT_LIBS) $(LIBCRYPTO_LIBS)

check_PROGRAMS += tests/unit/test_fabric
TESTS += tests/unit/test_fabric
tests_unit_test_fabric_SOURCES = tests/unit/test_fabric.c
tests_unit_test_fabric_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_fabric_LDADD = fabric/libfabric.la $(EVENT_LIBS) $(CUNIT_LIBS)

check_PROGRAMS += tests/unit/test_link
TESTS += tests/unit/test_link
tests_unit_test_link_SOURCES = tests/unit/test_link.c
tests_unit_test_link_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_link_LDADD = fabric/libfabric.la tests/unit/libunit.la $(EVENT_LIBS) $(CUNIT_LIBS)

# pool-bench-fabric: fabric/ put/get bandwidth and latency; fabric.sh runs it
# next to ucx_perftest and iperf3 (not part of make check).
noinst_PROGRAMS += tests/bench/pool-bench-fabric
tests_bench_pool_bench_fabric_SOURCES = tests/bench/bench_fabric.c
tests_bench_pool_bench_fabric_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS)
tests_bench_pool_bench_fabric_LDADD = fabric/libfabric.la $(EVENT_LIBS)
EXTRA_DIST += tests/bench/fabric.sh tests/bench/fabric-netns.sh tests/bench/ab.sh tests/bench/pool-bench \
	fabric/README.md

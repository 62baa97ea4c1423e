# tests/: CUnit unit tests, shell integration tests, fuzz targets.
noinst_LTLIBRARIES += tests/unit/libunit.la
tests_unit_libunit_la_SOURCES = tests/unit/unit.h tests/unit/unit.c
tests_unit_libunit_la_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_libunit_la_LIBADD = $(CUNIT_LIBS)

UNIT_LDADD = tests/unit/libunit.la proto/libwire.la common/libconf.la common/libcommon.la \
	$(PROTOBUF_C_LIBS) $(CUNIT_LIBS)

check_PROGRAMS += tests/unit/test_frame tests/unit/test_conf
tests_unit_test_frame_SOURCES = tests/unit/test_frame.c
tests_unit_test_frame_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_frame_LDADD = $(UNIT_LDADD)
tests_unit_test_conf_SOURCES = tests/unit/test_conf.c
tests_unit_test_conf_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_conf_LDADD = $(UNIT_LDADD)

# poolctl's requests (cli/admin.c), against a poold played by a thread.
check_PROGRAMS += tests/unit/test_admin
tests_unit_test_admin_SOURCES = tests/unit/test_admin.c cli/admin.c cli/admin.h
tests_unit_test_admin_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(CUNIT_CFLAGS) $(PTHREAD_CFLAGS)
tests_unit_test_admin_LDADD = $(UNIT_LDADD) $(PTHREAD_CFLAGS)

TESTS += tests/unit/test_frame tests/unit/test_conf tests/unit/test_admin

# The smallest libpool client, used by the demo and the tests.
noinst_PROGRAMS += examples/pool-demo
examples_pool_demo_SOURCES = examples/pool-demo.c
examples_pool_demo_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libpool
examples_pool_demo_LDADD = libpool/libpool.la

# Shell integration tests: each starts its own poold in a private directory.
INTEGRATION_TESTS = tests/integration/daemon.sh tests/integration/check.sh \
	tests/integration/garbage.sh tests/integration/limits.sh tests/integration/libpool.sh \
	tests/integration/libpool-abi.sh \
	tests/integration/man.sh tests/integration/regions.sh tests/integration/kv.sh \
	tests/integration/kv-persist.sh tests/integration/kv-share.sh tests/integration/kv-pins.sh tests/integration/persist.sh tests/integration/resp.sh \
	tests/integration/vec.sh tests/integration/metrics.sh tests/integration/leaks.sh \
	tests/integration/snap.sh tests/integration/snapcopy.sh tests/integration/snap-uffd.sh \
	tests/integration/snap-save.sh tests/integration/snap-vmsave.sh tests/integration/sdnotify.sh tests/integration/completion.sh tests/integration/dashboard.sh \
	tests/integration/hostile.sh tests/integration/user.sh tests/integration/firewall.sh \
	tests/integration/resp-compat.sh tests/integration/redis-suite.sh tests/integration/mooncake-suite.sh tests/integration/python.sh tests/integration/kvevents.sh \
	tests/integration/kvevents-flood.sh tests/integration/kv-bulk.sh tests/integration/xfer.sh \
	tests/integration/etcd.sh tests/integration/etcd-auth.sh tests/integration/etcd-tls.sh \
	tests/integration/elect.sh tests/integration/layers.sh tests/integration/fabric-attack.sh \
	tests/cluster/selftest.sh tests/cluster/kv.sh tests/cluster/vec.sh tests/cluster/snap.sh \
	tests/cluster/coord-restart.sh tests/cluster/coord-journal.sh tests/cluster/coord-ha.sh tests/cluster/client-crash.sh \
	tests/cluster/soak.sh tests/cluster/python.sh tests/cluster/resp.sh tests/cluster/resp-relay.sh tests/cluster/resp-shards.sh \
	tests/cluster/membership.sh tests/cluster/slots.sh tests/cluster/join-many.sh tests/cluster/regions.sh tests/cluster/reclaim.sh \
	tests/cluster/trust.sh tests/cluster/tls.sh tests/cluster/fence.sh tests/cluster/chunks.sh tests/cluster/kv-bulk.sh \
	tests/cluster/xfer.sh tests/cluster/kv-shards.sh tests/cluster/kv-sharded.sh \
	tests/cluster/kv-handover.sh tests/cluster/kv-wait.sh tests/cluster/kv-demand.sh tests/cluster/kv-backup.sh tests/cluster/kv-backup-stale.sh \
	tests/cluster/kv-shard-events.sh tests/cluster/kv-drain-journal.sh \
	tests/cluster/kv-share.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/lib.sh tests/integration/etcdlib.sh tests/integration/wire.py \
	tests/integration/resp-compat.py tests/integration/resp-py.py tests/integration/kv-share.py tests/integration/kv-pins.py \
	tests/redis tests/mooncake \
	tests/integration/snapcopy.py tests/integration/kvevents.py tests/integration/kvflood.py \
	tests/integration/fabric-link.py tests/integration/statusloop.py tests/cluster/kv-shard-events.py \
	tests/cluster/lib.sh tests/cluster/pool.sh tests/tap.sh tests/tools/journal-tear.py \
	tests/tools/call-cycles.py tests/tools/mutants.py tests/tools/pyabi.py \
	tests/tools/etcd-enable-auth
AM_TESTS_ENVIRONMENT = top_builddir='$(abs_top_builddir)'; top_srcdir='$(abs_top_srcdir)'; \
	pool_sanitizers='$(SAN_CFLAGS)'; export top_builddir top_srcdir pool_sanitizers;

# Fuzz targets: libFuzzer binaries with --enable-fuzzing (CC=clang); in every
# build, the same targets replay their seed corpus under make check.
FUZZ_LIBS = proto/libwire.la common/libconf.la common/libcommon.la $(PROTOBUF_C_LIBS)
EXTRA_DIST += tests/fuzz/corpus tests/fuzz/run.sh
check_PROGRAMS += tests/fuzz/replay_frame tests/fuzz/replay_conf tests/fuzz/replay_resp \
	tests/fuzz/replay_fc tests/fuzz/replay_link
tests_fuzz_replay_frame_SOURCES = tests/fuzz/fuzz_frame.c tests/fuzz/standalone.c
tests_fuzz_replay_frame_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_frame_LDADD = $(FUZZ_LIBS)
tests_fuzz_replay_conf_SOURCES = tests/fuzz/fuzz_conf.c tests/fuzz/standalone.c
tests_fuzz_replay_conf_LDADD = $(FUZZ_LIBS)
tests_fuzz_replay_resp_SOURCES = tests/fuzz/fuzz_resp.c tests/fuzz/standalone.c \
	daemon/resp/resp-parse.c daemon/resp/resp-parse.h
tests_fuzz_replay_resp_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS)
tests_fuzz_replay_resp_LDADD = $(EVENT_LIBS)
tests_fuzz_replay_fc_SOURCES = tests/fuzz/fuzz_fc.c tests/fuzz/standalone.c
tests_fuzz_replay_fc_LDADD = snapshot/libsnapshot.la
tests_fuzz_replay_link_SOURCES = tests/fuzz/fuzz_link.c tests/fuzz/standalone.c
tests_fuzz_replay_link_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS)
tests_fuzz_replay_link_LDADD = fabric/libfabric.la $(EVENT_LIBS)
TESTS += tests/fuzz/run.sh
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_frame tests/fuzz/fuzz_conf tests/fuzz/fuzz_resp \
	tests/fuzz/fuzz_fc tests/fuzz/fuzz_link
tests_fuzz_fuzz_frame_SOURCES = tests/fuzz/fuzz_frame.c
tests_fuzz_fuzz_frame_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_fuzz_frame_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_frame_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_conf_SOURCES = tests/fuzz/fuzz_conf.c
tests_fuzz_fuzz_conf_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_conf_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_resp_SOURCES = tests/fuzz/fuzz_resp.c daemon/resp/resp-parse.c daemon/resp/resp-parse.h
tests_fuzz_fuzz_resp_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS)
tests_fuzz_fuzz_resp_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_resp_LDADD = $(EVENT_LIBS)
tests_fuzz_fuzz_fc_SOURCES = tests/fuzz/fuzz_fc.c
tests_fuzz_fuzz_fc_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_fc_LDADD = snapshot/libsnapshot.la
tests_fuzz_fuzz_link_SOURCES = tests/fuzz/fuzz_link.c
tests_fuzz_fuzz_link_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS)
tests_fuzz_fuzz_link_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_link_LDADD = fabric/libfabric.la $(EVENT_LIBS)
endif

include tests/unit/daemon.mk

# pool-io: regions through libpool, for the region tests.
noinst_PROGRAMS += tests/tools/pool-io
tests_tools_pool_io_SOURCES = tests/tools/pool-io.c
tests_tools_pool_io_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
tests_tools_pool_io_LDADD = libpool/libpool.la $(XXHASH_LIBS)

include tests/bench/regions.mk

# pool-kvload: many KV keys at once, and a prober of poold's loop, for tests/integration/kv-bulk.sh.
noinst_PROGRAMS += tests/tools/pool-kvload
tests_tools_pool_kvload_SOURCES = tests/tools/pool-kvload.c
tests_tools_pool_kvload_LDADD = libpool/libpool.la

# fc-client: a Firecracker-like VMM restoring through a UFFD page server, for the snapshot tests.
noinst_PROGRAMS += tests/tools/fc-client
tests_tools_fc_client_SOURCES = tests/tools/fc-client.c
tests_tools_fc_client_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
tests_tools_fc_client_LDADD = $(XXHASH_LIBS)

# resp-null: a RESP server that keeps nothing, the ceiling of the RESP bench's client.
noinst_PROGRAMS += tests/tools/resp-null
tests_tools_resp_null_SOURCES = tests/tools/resp-null.c

# pool-etcd: daemon/etcd/etcd.c's requests against a real etcd (tests/integration/etcd.sh).
noinst_PROGRAMS += tests/tools/pool-etcd
tests_tools_pool_etcd_SOURCES = tests/tools/pool-etcd.c daemon/etcd/etcd.h daemon/etcd/etcd-int.h daemon/etcd/etcd.c \
	daemon/etcd/etcd-watch.c
tests_tools_pool_etcd_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(ETCD_CFLAGS) $(CRYPTO_CFLAGS)
tests_tools_pool_etcd_LDADD = common/libconf.la common/libcommon.la $(EVENT_LIBS) $(ETCD_LIBS) $(CRYPTO_LIBS)

# pool-elect: one candidate of daemon/ha/ha-elect.c's election (tests/integration/elect.sh).
noinst_PROGRAMS += tests/tools/pool-elect
tests_tools_pool_elect_SOURCES = tests/tools/pool-elect.c daemon/ha/ha-elect.h daemon/ha/ha-elect.c \
	daemon/etcd/etcd.h daemon/etcd/etcd-int.h daemon/etcd/etcd.c daemon/etcd/etcd-watch.c
tests_tools_pool_elect_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(ETCD_CFLAGS) $(CRYPTO_CFLAGS)
tests_tools_pool_elect_LDADD = common/libconf.la common/libcommon.la $(EVENT_LIBS) $(ETCD_LIBS) \
	$(CRYPTO_LIBS)

# pool-hostile: a tenant sending raw frames for what it was not granted.
if HAVE_HIREDIS
# A C cache client through hiredis, for the RESP tests (resp-compat.sh).
noinst_PROGRAMS += tests/tools/resp-hiredis
tests_tools_resp_hiredis_SOURCES = tests/tools/resp-hiredis.c
tests_tools_resp_hiredis_CFLAGS = $(AM_CFLAGS) $(HIREDIS_CFLAGS)
tests_tools_resp_hiredis_LDADD = $(HIREDIS_LIBS)
endif
EXTRA_DIST += tests/tools/resp-hiredis.c

# pool-ucx-attack: UCX's own code against a poold's fabric port (fabric-attack.sh).
noinst_PROGRAMS += tests/tools/pool-ucx-attack
tests_tools_pool_ucx_attack_SOURCES = tests/tools/pool-ucx-attack.c
tests_tools_pool_ucx_attack_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS)
tests_tools_pool_ucx_attack_LDADD = $(UCX_LIBS)

noinst_PROGRAMS += tests/tools/pool-hostile
tests_tools_pool_hostile_SOURCES = tests/tools/pool-hostile.c
tests_tools_pool_hostile_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_tools_pool_hostile_LDADD = proto/libwire.la common/libcommon.la $(PROTOBUF_C_LIBS)

# pool-fake-nodes: N nodes on the real peer protocol, for membership at size.
noinst_PROGRAMS += tests/tools/pool-fake-nodes
tests_tools_pool_fake_nodes_SOURCES = tests/tools/pool-fake-nodes.c daemon/net/peer-auth.c
tests_tools_pool_fake_nodes_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(EVENT_CFLAGS) \
	$(CRYPTO_CFLAGS)
tests_tools_pool_fake_nodes_LDADD = proto/libwire.la common/libcommon.la $(PROTOBUF_C_LIBS) \
	$(CRYPTO_LIBS)

# pool-xfer: the largest transfer requests, in raw frames, for the transfer tests.
noinst_PROGRAMS += tests/tools/pool-xfer
tests_tools_pool_xfer_SOURCES = tests/tools/pool-xfer.c
tests_tools_pool_xfer_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_tools_pool_xfer_LDADD = proto/libwire.la common/libcommon.la $(PROTOBUF_C_LIBS)

# pool-kv: the KV cache through libpool, for the KV tests.
noinst_PROGRAMS += tests/tools/pool-kv
tests_tools_pool_kv_SOURCES = tests/tools/pool-kv.c
tests_tools_pool_kv_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_tools_pool_kv_LDADD = libpool/libpool.la $(PTHREAD_CFLAGS)

include tests/bench/kv.mk

# pool-vec: vector indexes through libpool, for the vector index tests.
noinst_PROGRAMS += tests/tools/pool-vec
tests_tools_pool_vec_SOURCES = tests/tools/pool-vec.c tests/tools/vecdata.c tests/tools/vecdata.h
tests_tools_pool_vec_LDADD = libpool/libpool.la $(LIBM)

include tests/bench/vec.mk
include tests/bench/snap.mk

# pool-snap: snapshot images and restores through libpool, for the snapshot tests.
noinst_PROGRAMS += tests/tools/pool-snap
tests_tools_pool_snap_SOURCES = tests/tools/pool-snap.c
tests_tools_pool_snap_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS) $(PTHREAD_CFLAGS)
tests_tools_pool_snap_LDADD = libpool/libpool.la $(XXHASH_LIBS) $(PTHREAD_CFLAGS)

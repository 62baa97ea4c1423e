# Unit tests of daemon/ and snapshot/ pieces and of libpool functions without a daemon: included from tests/local.mk.
check_PROGRAMS += tests/unit/test_extent
TESTS += tests/unit/test_extent
tests_unit_test_extent_SOURCES = tests/unit/test_extent.c daemon/lend/extent.c daemon/lend/extent.h
tests_unit_test_extent_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_extent_LDADD = tests/unit/libunit.la $(CUNIT_LIBS)

# The ledger comparison of daemon/.
check_PROGRAMS += tests/unit/test_ledger
TESTS += tests/unit/test_ledger
tests_unit_test_ledger_SOURCES = tests/unit/test_ledger.c daemon/hold/ledger.c daemon/hold/ledger.h
tests_unit_test_ledger_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_ledger_LDADD = tests/unit/libunit.la $(CUNIT_LIBS)

# The coordinator's room for peer links that have not registered.
check_PROGRAMS += tests/unit/test_coord_slot
TESTS += tests/unit/test_coord_slot
tests_unit_test_coord_slot_SOURCES = tests/unit/test_coord_slot.c daemon/coord/coord-slot.c \
	daemon/coord/coord-slot.h
tests_unit_test_coord_slot_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_coord_slot_LDADD = tests/unit/libunit.la $(CUNIT_LIBS)

# The per-uid quota charges of daemon/.
check_PROGRAMS += tests/unit/test_usage
TESTS += tests/unit/test_usage
tests_unit_test_usage_SOURCES = tests/unit/test_usage.c daemon/util/usage.c daemon/util/usage.h
tests_unit_test_usage_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_usage_LDADD = tests/unit/libunit.la $(CUNIT_LIBS)

# The intrusive hash table of daemon/.
check_PROGRAMS += tests/unit/test_htab
TESTS += tests/unit/test_htab
tests_unit_test_htab_SOURCES = tests/unit/test_htab.c daemon/util/htab.c daemon/util/htab.h
tests_unit_test_htab_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_htab_LDADD = tests/unit/libunit.la $(XXHASH_LIBS) $(CUNIT_LIBS)

# The placement policy of daemon/.
check_PROGRAMS += tests/unit/test_placement
TESTS += tests/unit/test_placement
tests_unit_test_placement_SOURCES = tests/unit/test_placement.c daemon/util/placement.c \
	daemon/util/placement.h
tests_unit_test_placement_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_placement_LDADD = tests/unit/libunit.la $(CUNIT_LIBS)

# The KV index's shards and their owners.
check_PROGRAMS += tests/unit/test_shardmap
TESTS += tests/unit/test_shardmap
tests_unit_test_shardmap_SOURCES = tests/unit/test_shardmap.c daemon/member/shardmap.c daemon/member/shardmap.h
tests_unit_test_shardmap_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_test_shardmap_LDADD = tests/unit/libunit.la $(XXHASH_LIBS) $(CUNIT_LIBS)

# The KV block-hash chain of libpool, against fixed vectors.
check_PROGRAMS += tests/unit/test_kvhash
TESTS += tests/unit/test_kvhash
tests_unit_test_kvhash_SOURCES = tests/unit/test_kvhash.c
tests_unit_test_kvhash_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_kvhash_LDADD = tests/unit/libunit.la libpool/libpool.la $(CUNIT_LIBS)

# The persistent record log of daemon/.
check_PROGRAMS += tests/unit/test_journal
TESTS += tests/unit/test_journal
tests_unit_test_journal_SOURCES = tests/unit/test_journal.c daemon/lend/journal.c daemon/lend/journal.h
tests_unit_test_journal_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_test_journal_LDADD = tests/unit/libunit.la $(CUNIT_LIBS) $(XXHASH_LIBS)

# The vector index (vecindex/), on plain memory, without libpool.
check_PROGRAMS += tests/unit/test_vecindex
TESTS += tests/unit/test_vecindex
tests_unit_test_vecindex_SOURCES = tests/unit/test_vecindex.c tests/tools/vecdata.c \
	tests/tools/vecdata.h
tests_unit_test_vecindex_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_vecindex_LDADD = tests/unit/libunit.la vecindex/libvecindex.la $(CUNIT_LIBS) $(LIBM)

# One writer and several readers on one vector index (also under --enable-tsan).
check_PROGRAMS += tests/unit/test_vecstress
TESTS += tests/unit/test_vecstress
tests_unit_test_vecstress_SOURCES = tests/unit/test_vecstress.c tests/tools/vecdata.c \
	tests/tools/vecdata.h
tests_unit_test_vecstress_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_vecstress_LDADD = tests/unit/libunit.la vecindex/libvecindex.la $(CUNIT_LIBS) \
	$(LIBM)

# Firecracker's UFFD handshake of snapshot/: the parser and the receive.
check_PROGRAMS += tests/unit/test_fc
TESTS += tests/unit/test_fc
tests_unit_test_fc_SOURCES = tests/unit/test_fc.c
tests_unit_test_fc_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_fc_LDADD = tests/unit/libunit.la snapshot/libsnapshot.la $(CUNIT_LIBS)

# The userfaultfd page server of snapshot/, against a Firecracker-like client.
check_PROGRAMS += tests/unit/test_uffd
TESTS += tests/unit/test_uffd
tests_unit_test_uffd_SOURCES = tests/unit/test_uffd.c
tests_unit_test_uffd_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
tests_unit_test_uffd_LDADD = tests/unit/libunit.la snapshot/libsnapshot.la $(CUNIT_LIBS)

# The grant checks of daemon/: what a session may reach, from the coordinator's replies.
check_PROGRAMS += tests/unit/test_grant
TESTS += tests/unit/test_grant
tests_unit_test_grant_SOURCES = tests/unit/test_grant.c daemon/control/grant.c
tests_unit_test_grant_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_grant_LDADD = tests/unit/libunit.la proto/libwire.la common/libconf.la common/libcommon.la \
	$(CUNIT_LIBS) $(PROTOBUF_C_LIBS)

# The KV index's core (daemon/kv/kv.c) with the rest of poold's parts, no network.
check_PROGRAMS += tests/unit/test_kv_demand
TESTS += tests/unit/test_kv_demand
tests_unit_test_kv_demand_SOURCES = tests/unit/test_kv_demand.c
tests_unit_test_kv_demand_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_kv_demand_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

check_PROGRAMS += tests/unit/test_kv
TESTS += tests/unit/test_kv
tests_unit_test_kv_SOURCES = tests/unit/test_kv.c tests/unit/cores.h tests/unit/cores.c
tests_unit_test_kv_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS) \
	$(XXHASH_CFLAGS)
tests_unit_test_kv_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

# The global address space's core (daemon/region/region.c), the same way.
check_PROGRAMS += tests/unit/test_region
TESTS += tests/unit/test_region
tests_unit_test_region_SOURCES = tests/unit/test_region.c tests/unit/cores.h tests/unit/cores.c
tests_unit_test_region_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_region_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

# The member table's records to and from the wire (daemon/member/member-codec.c).
check_PROGRAMS += tests/unit/test_member_codec
TESTS += tests/unit/test_member_codec
tests_unit_test_member_codec_SOURCES = tests/unit/test_member_codec.c
tests_unit_test_member_codec_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) \
	$(PROTOBUF_C_CFLAGS)
tests_unit_test_member_codec_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

# A lender's record of what it holds (daemon/hold/hold.c) over a pmem tier in memory.
check_PROGRAMS += tests/unit/test_hold
TESTS += tests/unit/test_hold
tests_unit_test_hold_SOURCES = tests/unit/test_hold.c
tests_unit_test_hold_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_hold_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

# The coordinator's calls to its nodes (daemon/member/member-call.c) over a socket pair.
check_PROGRAMS += tests/unit/test_member_call
TESTS += tests/unit/test_member_call
tests_unit_test_member_call_SOURCES = tests/unit/test_member_call.c tests/unit/cores.h tests/unit/cores.c
tests_unit_test_member_call_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_member_call_LDADD = tests/unit/libunit.la daemon/libpoold.la $(EVENT_LIBS) $(CUNIT_LIBS)

# A lender's holdings in chunks (hold.c, hold-codec.c, stream.c, hold-report.c), both ways.
check_PROGRAMS += tests/unit/test_hold_report
TESTS += tests/unit/test_hold_report
tests_unit_test_hold_report_SOURCES = tests/unit/test_hold_report.c tests/unit/cores.h \
	tests/unit/cores.c
tests_unit_test_hold_report_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) \
	$(PROTOBUF_C_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_test_hold_report_LDADD = tests/unit/libunit.la daemon/libpoold.la $(EVENT_LIBS) \
	$(CUNIT_LIBS)

# The memory a node keeps for its KV shards' values (daemon/lend/kvstore.c).
check_PROGRAMS += tests/unit/test_kvstore
TESTS += tests/unit/test_kvstore
tests_unit_test_kvstore_SOURCES = tests/unit/test_kvstore.c
tests_unit_test_kvstore_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_kvstore_LDADD = tests/unit/libunit.la daemon/libpoold.la $(CUNIT_LIBS)

# A connection's socket closed when the connection is released (daemon/net/conn.c).
check_PROGRAMS += tests/unit/test_conn
TESTS += tests/unit/test_conn
tests_unit_test_conn_SOURCES = tests/unit/test_conn.c
tests_unit_test_conn_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_conn_LDADD = tests/unit/libunit.la daemon/libpoold.la $(EVENT_LIBS) $(CUNIT_LIBS)

# The RESP parser's bounds, whole commands and piece by piece (daemon/resp/resp-parse.c).
check_PROGRAMS += tests/unit/test_resp_parse
TESTS += tests/unit/test_resp_parse
tests_unit_test_resp_parse_SOURCES = tests/unit/test_resp_parse.c
tests_unit_test_resp_parse_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_unit_test_resp_parse_LDADD = tests/unit/libunit.la daemon/libpoold.la $(EVENT_LIBS) $(CUNIT_LIBS)

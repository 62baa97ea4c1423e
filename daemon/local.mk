# daemon/: poold
# libpoold: every part of poold but its main(), so that unit tests drive
# its cores (tests/unit/test_kv.c) in the same build as the daemon.
noinst_LTLIBRARIES += daemon/libpoold.la
# One folder per module (doc/DESIGN.md, section 9); each one's header first.
daemon_libpoold_la_SOURCES = daemon/poold.h \
	daemon/util/util.h daemon/util/htab.h daemon/util/placement.h daemon/util/usage.h \
	daemon/util/events.c daemon/util/heap.c daemon/util/htab.c daemon/util/looplag.c \
	daemon/util/numa.c daemon/util/pidfile.c daemon/util/placement.c \
	daemon/util/sdnotify.c daemon/util/usage.c \
	daemon/net/net.h daemon/net/accept.c daemon/net/clientkey.c daemon/net/conn.c \
	daemon/net/firewall.c daemon/net/httpd.c daemon/net/peer-auth.c daemon/net/peer-tls.c \
	daemon/net/stream.c daemon/net/zmqgate.c \
	daemon/etcd/etcd-int.h daemon/etcd/etcd.h daemon/etcd/etcd-watch.c daemon/etcd/etcd.c \
	daemon/ha/ha.h daemon/ha/ha-elect.h daemon/ha/ha-log.h daemon/ha/ha-elect.c \
	daemon/ha/ha-log.c daemon/ha/ha.c \
	daemon/control/control.h daemon/control/control.c daemon/control/grant.c \
	daemon/control/reload-serve.c \
	daemon/lend/lend.h daemon/lend/extent.h daemon/lend/journal.h daemon/lend/carve.c \
	daemon/lend/extent.c daemon/lend/journal.c daemon/lend/kvstore.c daemon/lend/lend.c \
	daemon/member/member.h daemon/member/shardmap.h daemon/member/member-call.c \
	daemon/member/member-codec.c daemon/member/member-ids.c daemon/member/member.c \
	daemon/member/shardmap.c \
	daemon/hold/hold.h daemon/hold/ledger.h daemon/hold/hold-codec.c \
	daemon/hold/hold-report.c daemon/hold/hold-sync.c daemon/hold/hold.c daemon/hold/ledger.c \
	daemon/hold/scrub.c \
	daemon/link/link.h daemon/link/carry-link.c daemon/link/carry-rma.c daemon/link/carry.c \
	daemon/link/copy.c daemon/link/nodecall.c daemon/link/probe.c \
	daemon/snap/snap.h daemon/snap/snap-copy.c daemon/snap/snap-place.c \
	daemon/region/region.h daemon/region/region-int.h daemon/region/reclaim-serve.c \
	daemon/region/quota.c daemon/region/reclaim.c daemon/region/region-fd-serve.c daemon/region/region-rebuild.c \
	daemon/region/region-serve.c daemon/region/region-tell.c daemon/region/region.c \
	daemon/xfer/xfer.h daemon/xfer/xfer-int.h daemon/xfer/xfer-share.c \
	daemon/xfer/xfer-window.c daemon/xfer/xfer.c \
	daemon/kv/kv.h daemon/kv/kv-int.h daemon/kv/kv-backup.c daemon/kv/kv-db.c \
	daemon/kv/kv-dedup.c daemon/kv/kv-events.c daemon/kv/kv-evict.c daemon/kv/kv-evshards.c \
	daemon/kv/kv-handover.c daemon/kv/kv-local.c daemon/kv/kv-owner.c daemon/kv/kv-reap.c \
	daemon/kv/kv-rebuild.c daemon/kv/kv-replica.c daemon/kv/kv-retain.c daemon/kv/kv-route.c \
	daemon/kv/kv-serve.c daemon/kv/kv-demand.c daemon/kv/kv-tell.c daemon/kv/kv-tier.c \
	daemon/kv/kv.c \
	daemon/resp/resp.h daemon/resp/resp-parse.h daemon/resp/resp-int.h \
	daemon/resp/resp-auth.c daemon/resp/resp-bits.c daemon/resp/resp-conn.c \
	daemon/resp/resp-info.c daemon/resp/resp-keys.c daemon/resp/resp-lcs.c \
	daemon/resp/resp-list.c daemon/resp/resp-move.c daemon/resp/resp-parse.c \
	daemon/resp/resp-place.c daemon/resp/resp-relay.c daemon/resp/resp-remote.c \
	daemon/resp/resp-set.c daemon/resp/resp-shard.c daemon/resp/resp-type.c \
	daemon/resp/resp-watch.c daemon/resp/resp.c \
	daemon/vec/vec.h daemon/vec/vec-serve.c \
	daemon/coord/coord.h daemon/coord/coord-slot.h daemon/coord/coord-log.c \
	daemon/coord/coord-slot.c daemon/coord/coord.c daemon/coord/peer.c \
	daemon/coord/reconcile.c \
	daemon/admin/admin.h daemon/admin/events-serve.c daemon/admin/metrics.c \
	daemon/admin/nodes-serve.c daemon/admin/status-serve.c
# The coordinator's journal record: poold's own schema, beside the protocol's
# (its generated header includes pool.pb-c.h by that name).
COORDRECORD_GEN = daemon/coord/coordrecord.pb-c.c daemon/coord/coordrecord.pb-c.h
BUILT_SOURCES += $(COORDRECORD_GEN)
CLEANFILES += $(COORDRECORD_GEN)
EXTRA_DIST += daemon/coord/coordrecord.proto
$(COORDRECORD_GEN): $(srcdir)/daemon/coord/coordrecord.proto $(srcdir)/proto/pool.proto
	$(AM_V_GEN)$(MKDIR_P) daemon/coord && \
	$(PROTOC_C) --proto_path=$(srcdir)/proto --proto_path=$(srcdir)/daemon/coord --c_out=daemon/coord \
	    $(srcdir)/daemon/coord/coordrecord.proto
nodist_daemon_libpoold_la_SOURCES = $(COORDRECORD_GEN)
daemon_libpoold_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/proto \
	-DPOOL_PKGLIBEXECDIR='"$(pkglibexecdir)"'
daemon_libpoold_la_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS) $(PMEM2_CFLAGS) \
	$(XXHASH_CFLAGS) $(CRYPTO_CFLAGS) $(ZMQ_CFLAGS) $(MSGPACK_CFLAGS) $(ETCD_CFLAGS) \
	$(NFTABLES_CFLAGS)
daemon_libpoold_la_LIBADD = fabric/libfabric.la proto/libwire.la vecindex/libvecindex.la \
	common/libconf.la common/libcommon.la $(EVENT_LIBS) $(PROTOBUF_C_LIBS) $(NUMA_LIBS) \
	$(PMEM2_LIBS) $(XXHASH_LIBS) $(CRYPTO_LIBS) $(ZMQ_LIBS) $(MSGPACK_LIBS) $(ETCD_LIBS) \
	$(NFTABLES_LIBS)

sbin_PROGRAMS += daemon/poold
daemon_poold_SOURCES = daemon/main.c
daemon_poold_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
daemon_poold_LDADD = daemon/libpoold.la

# pool-snap-helper: what poold runs to fill a node's copy of a snapshot
# through libpool (daemon/snap/snap-place.c), in $(pkglibexecdir).
pkglibexec_PROGRAMS = daemon/pool-snap-helper
daemon_pool_snap_helper_SOURCES = daemon/snap/snap-helper.c
daemon_pool_snap_helper_LDADD = libpool/libpool.la

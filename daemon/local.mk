# daemon/: poold
# libpoold: every part of poold but its main(), so that unit tests drive
# its cores (tests/unit/test_kv.c) in the same build as the daemon.
noinst_LTLIBRARIES += daemon/libpoold.la
daemon_libpoold_la_SOURCES = daemon/poold.h daemon/pidfile.c daemon/heap.c daemon/conn.c daemon/control.c \
	daemon/status.c daemon/reload.c daemon/cluster.c daemon/nodeids.c daemon/memberwire.c daemon/numa.c daemon/coord.c daemon/coordslot.h daemon/coordslot.c daemon/coordlink.c \
	daemon/peer.c daemon/peerauth.c daemon/carry.c daemon/carry-link.c daemon/carry-rma.c daemon/nodecall.c daemon/kvstore.c daemon/kvowner.c daemon/kvevshards.c daemon/kvhandover.c daemon/kvbackup.c daemon/kvroute.c daemon/probe.c daemon/nodes.c daemon/lend.c daemon/extent.h daemon/extent.c \
	daemon/regionint.h daemon/region.c daemon/regionrebuild.c daemon/regionwire.c daemon/reclaim.c daemon/reclaimwire.c daemon/spacetell.c daemon/arena.c daemon/ledger.h daemon/ledger.c \
	daemon/placement.h daemon/placement.c daemon/usage.h daemon/usage.c daemon/quota.c daemon/htab.h daemon/htab.c \
	daemon/hold.c daemon/holdwire.c daemon/holdsync.c daemon/holdreport.c daemon/reconcile.c daemon/stream.c daemon/kvint.h daemon/kvshard.h daemon/kvshard.c daemon/kv.c daemon/kvtier.c daemon/kvdedup.c daemon/kvreplica.c daemon/kvrebuild.c daemon/kvwire.c daemon/kvtell.c daemon/kvlocal.c daemon/kvevict.c daemon/kvretain.c daemon/kvreap.c daemon/kvevents.c daemon/resp.c daemon/journal.h daemon/journal.c daemon/coordlog.c daemon/vec.c daemon/respparse.h daemon/respparse.c daemon/respauth.c daemon/resp.h daemon/respkeys.c daemon/respbits.c daemon/respmove.c daemon/resplcs.c daemon/respwatch.c daemon/respdb.c daemon/respinfo.c daemon/resptype.c daemon/resplist.c daemon/respset.c daemon/respconn.c daemon/respremote.c daemon/respplace.c daemon/resprelay.c daemon/respshard.c \
	daemon/metrics.c daemon/events.c daemon/eventswire.c daemon/copy.c daemon/snapcopy.c \
	daemon/snapplace.c daemon/grant.c daemon/xferint.h daemon/xfer.c daemon/xfer-window.c daemon/xfer-share.c daemon/firewall.c daemon/sdnotify.c daemon/looplag.c daemon/carve.c daemon/scrub.c daemon/peertls.c daemon/accept.c daemon/clientkey.c daemon/httpd.c daemon/zmqgate.c \
	daemon/etcd.h daemon/etcdint.h daemon/etcd.c daemon/etcdwatch.c daemon/elect.h daemon/elect.c daemon/etcdlog.h daemon/etcdlog.c daemon/coordha.c
# The coordinator's journal record: poold's own schema, beside the protocol's
# (its generated header includes pool.pb-c.h by that name).
COORDRECORD_GEN = daemon/coordrecord.pb-c.c daemon/coordrecord.pb-c.h
BUILT_SOURCES += $(COORDRECORD_GEN)
CLEANFILES += $(COORDRECORD_GEN)
EXTRA_DIST += daemon/coordrecord.proto
$(COORDRECORD_GEN): $(srcdir)/daemon/coordrecord.proto $(srcdir)/proto/pool.proto
	$(AM_V_GEN)$(MKDIR_P) daemon && \
	$(PROTOC_C) --proto_path=$(srcdir)/proto --proto_path=$(srcdir)/daemon --c_out=daemon \
	    $(srcdir)/daemon/coordrecord.proto
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
daemon_poold_SOURCES = daemon/poold.c
daemon_poold_CFLAGS = $(AM_CFLAGS) $(EVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
daemon_poold_LDADD = daemon/libpoold.la

# pool-snap-helper: what poold runs to fill a node's copy of a snapshot
# through libpool (daemon/snapplace.c), in $(pkglibexecdir).
pkglibexec_PROGRAMS = daemon/pool-snap-helper
daemon_pool_snap_helper_SOURCES = daemon/snaphelper.c
daemon_pool_snap_helper_LDADD = libpool/libpool.la

# snapshot/: the userfaultfd side of a lazy snapshot restore: Firecracker's
# UFFD handshake (fc.c) and the page server (uffd.c). The rest of the
# snapshot pool lives with the programs that run it: the store and clones
# in libpool (libpool/snap*.c), the nodes' shared copies in poold
# (daemon/snap/snap-copy.c, daemon/snap/snap-place.c, daemon/snap/snap-helper.c). A
# convenience library of its own, since it depends on nothing else here:
# the unit tests drive it directly, and libpool links it.
noinst_LTLIBRARIES += snapshot/libsnapshot.la
snapshot_libsnapshot_la_SOURCES = snapshot/fc.h snapshot/fc.c snapshot/uffd.h snapshot/uffd.c

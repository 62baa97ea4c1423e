# snapshot/: the sandbox snapshot pool. libsnapshot so far holds the
# userfaultfd side of a lazy restore: Firecracker's UFFD handshake (fc.c)
# and the page server (uffd.c). A convenience library of its own, since it
# depends on nothing else here: the unit tests drive it directly, poold
# will link it.
noinst_LTLIBRARIES += snapshot/libsnapshot.la
snapshot_libsnapshot_la_SOURCES = snapshot/fc.h snapshot/fc.c snapshot/uffd.h snapshot/uffd.c

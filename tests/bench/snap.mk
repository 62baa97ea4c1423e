# pool-bench-snap: restoring a snapshot (clones, lazy through userfaultfd)
# next to reading or mapping its image file (tests/bench/snap.sh; pool-bench snap).
noinst_PROGRAMS += tests/bench/pool-bench-snap
tests_bench_pool_bench_snap_SOURCES = tests/bench/bench_snap.c
tests_bench_pool_bench_snap_LDADD = libpool/libpool.la
EXTRA_DIST += tests/bench/snap.sh tests/bench/snap-fleet.sh

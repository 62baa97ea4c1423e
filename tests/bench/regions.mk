# pool-bench-regions: regions through libpool, next to memcpy, the fabric
# layer's raw figures and iperf3 (tests/bench/regions.sh; pool-bench regions).
noinst_PROGRAMS += tests/bench/pool-bench-regions
tests_bench_pool_bench_regions_SOURCES = tests/bench/bench_regions.c
tests_bench_pool_bench_regions_CFLAGS = $(AM_CFLAGS)
tests_bench_pool_bench_regions_LDADD = libpool/libpool.la
EXTRA_DIST += tests/bench/regions.sh tests/bench/coord-ha.sh tests/bench/scale.sh tests/bench/reclaim.sh

# pool-bench-kv: the KV cache through libpool next to Redis (hiredis, when
# configure found it); pool-kv-replay: an LLM-serving trace replayed through
# the KV cache (tests/bench/kv.sh; pool-bench kv).
noinst_PROGRAMS += tests/bench/pool-kv-replay
tests_bench_pool_kv_replay_SOURCES = tests/bench/kv_replay.c
tests_bench_pool_kv_replay_CFLAGS = $(AM_CFLAGS)
tests_bench_pool_kv_replay_LDADD = libpool/libpool.la
if HAVE_HIREDIS
noinst_PROGRAMS += tests/bench/pool-bench-kv
tests_bench_pool_bench_kv_SOURCES = tests/bench/bench_kv.c
tests_bench_pool_bench_kv_CFLAGS = $(AM_CFLAGS) $(HIREDIS_CFLAGS)
tests_bench_pool_bench_kv_LDADD = libpool/libpool.la $(HIREDIS_LIBS)
endif
EXTRA_DIST += tests/bench/kv.sh tests/bench/kv_python.py tests/bench/mooncake.sh tests/bench/mooncake.py tests/bench/bench_kv.c tests/bench/kvevents.sh \
	tests/bench/resp.sh tests/bench/resp-cluster.sh tests/bench/resp-shards.sh tests/bench/kv-shards.sh \
	tests/bench/kv-handover.sh tests/bench/kv-backup.sh tests/bench/kv-lru.sh tests/bench/kvcluster.sh

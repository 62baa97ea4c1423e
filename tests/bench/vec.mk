# pool-bench-vec: our vector indexes through libpool; pool-bench-vec-hnswlib
# and pool-bench-vec-faiss: the same data through hnswlib and faiss, built
# when configure found them (tests/bench/vec.sh; pool-bench vec). The
# hnswlib baseline is compiled for this machine (BASELINE_CXXFLAGS:
# -march=native where the compiler takes it), since hnswlib chooses its
# SIMD kernels at compile time; ours choose at run time.
noinst_PROGRAMS += tests/bench/pool-bench-vec
tests_bench_pool_bench_vec_SOURCES = tests/bench/bench_vec.c tests/bench/bench_vec.h \
	tests/tools/vecdata.c tests/tools/vecdata.h
tests_bench_pool_bench_vec_LDADD = libpool/libpool.la vecindex/libvecindex.la $(LIBM)
if HAVE_HNSWLIB
noinst_PROGRAMS += tests/bench/pool-bench-vec-hnswlib
tests_bench_pool_bench_vec_hnswlib_SOURCES = tests/bench/bench_vec_hnswlib.cpp \
	tests/bench/bench_vec.h
tests_bench_pool_bench_vec_hnswlib_CXXFLAGS = -Wall -Wextra $(BASELINE_CXXFLAGS) \
	$(SAN_CFLAGS) $(PTHREAD_CFLAGS)
endif
if HAVE_FAISS
noinst_PROGRAMS += tests/bench/pool-bench-vec-faiss
tests_bench_pool_bench_vec_faiss_SOURCES = tests/bench/bench_vec_faiss.cpp tests/bench/bench_vec.h
tests_bench_pool_bench_vec_faiss_CXXFLAGS = -Wall -Wextra $(BASELINE_CXXFLAGS) $(SAN_CFLAGS) \
	$(PTHREAD_CFLAGS) $(OPENMP_CXXFLAGS)
tests_bench_pool_bench_vec_faiss_LDADD = $(FAISS_LIBS)
endif
EXTRA_DIST += tests/bench/vec.sh tests/bench/bench_vec_hnswlib.cpp tests/bench/bench_vec_faiss.cpp

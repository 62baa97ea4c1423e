/*
 * tests/bench/bench_vec_hnswlib.cpp - pool-bench-vec-hnswlib: the hnswlib
 * baseline of pool-bench vec (Debian libhnswlib-dev, header-only). Reads
 * the data file pool-bench-vec wrote and prints RESULT lines (bench_vec.h)
 * for hnswlib's HNSW index with the same M, ef_construction and ef as ours
 * and for its brute-force index.
 *
 *	pool-bench-vec-hnswlib [-M M] [-c EFC] [-e EF] [-f NQ_FLAT]
 *	                       [-r REPEATS] [-t SECS] DATAFILE
 *
 * Builds add the vectors one at a time from one thread, as our single
 * writer does. Queries go one per call, from one thread or two, timed like
 * ours (bench_vec_qps(): at least SECS seconds, best of REPEATS runs).
 * Memory per vector is what the index allocated with malloc (mallinfo2),
 * divided by the number of vectors. The brute-force index runs only the
 * first NQ_FLAT queries (all by default).
 */
#include "config.h"

#include <hnswlib/hnswlib.h>
#include <malloc.h>
#include <unistd.h>

#include <vector>

#include "tests/bench/bench_vec.h"

static size_t heap_bytes()
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static unsigned repeats = 3;
static double min_s = 0.3;

/* Queries [0, nq) through search(i) from nthreads threads (bench_vec_qps()). */
template <typename F> static double run_queries(size_t nq, unsigned nthreads, F &search)
{
	return bench_vec_qps(
	    nq, nthreads, min_s, repeats, [](void *arg, size_t i) { (*(F *)arg)(i); }, &search);
}

template <typename Index>
static void measure(const char *kind, Index &index, const bench_vec_data &d, size_t nq,
		    double build_s, double bytes)
{
	std::vector<uint64_t> labels(d.nq * d.k, UINT64_MAX);
	auto search = [&](size_t i) {
		auto res = index.searchKnn(d.queries + i * d.dim, d.k);
		for (size_t j = res.size(); j-- > 0; res.pop())
			labels[i * d.k + j] = res.top().second;
	};
	double q1 = run_queries(nq, 1, search);
	double q2 = run_queries(nq, 2, search);
	bench_vec_data sub = d;

	sub.nq = nq;
	bench_vec_result("hnswlib", kind, build_s, bytes, q1, q2, 0,
			 bench_vec_recall(&sub, labels.data()));
}

int main(int argc, char **argv)
{
	size_t m = 16, efc = 200, ef = 64, nq_flat = 0;
	bench_vec_data d;
	int opt;

	while ((opt = getopt(argc, argv, "M:c:e:f:r:t:")) != -1) {
		switch (opt) {
		case 'M':
			m = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			efc = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			ef = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			nq_flat = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			repeats = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 't':
			min_s = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: pool-bench-vec-hnswlib [-M M] [-c EFC] [-e EF] [-f "
					"NQ_FLAT] [-r REPEATS] [-t SECS] DATAFILE\n");
			return 2;
		}
	}
	if (optind + 1 != argc || bench_vec_file(argv[optind], &d, 0) < 0) {
		fprintf(stderr, "pool-bench-vec-hnswlib: cannot read the data file\n");
		return 1;
	}
	if (nq_flat == 0 || nq_flat > d.nq)
		nq_flat = d.nq;
	hnswlib::L2Space space(d.dim);
	{
		size_t before = heap_bytes();
		double t0 = bench_vec_now();
		hnswlib::HierarchicalNSW<float> index(&space, d.n, m, efc, 100);

		for (size_t i = 0; i < d.n; i++)
			index.addPoint(d.base + i * d.dim, i);
		double build = bench_vec_now() - t0;
		double bytes = (double)(heap_bytes() - before) / (double)d.n;

		index.setEf(ef);
		measure("hnsw", index, d, d.nq, build, bytes);
	}
	{
		size_t before = heap_bytes();
		double t0 = bench_vec_now();
		hnswlib::BruteforceSearch<float> index(&space, d.n);

		for (size_t i = 0; i < d.n; i++)
			index.addPoint(d.base + i * d.dim, i);
		double build = bench_vec_now() - t0;

		measure("flat", index, d, nq_flat, build,
			(double)(heap_bytes() - before) / (double)d.n);
	}
	return 0;
}

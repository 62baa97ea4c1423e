/*
 * tests/bench/bench_vec_faiss.cpp - pool-bench-vec-faiss: the faiss
 * baseline of pool-bench vec (Debian libfaiss-dev). Reads the data file
 * pool-bench-vec wrote and prints RESULT lines (bench_vec.h) for
 * IndexHNSWFlat with the same M, efConstruction and efSearch as ours, and
 * for IndexFlatL2.
 *
 *	pool-bench-vec-faiss [-M M] [-c EFC] [-e EF] [-f NQ_FLAT]
 *	                     [-r REPEATS] [-t SECS] DATAFILE
 *
 * Builds run on one OpenMP thread, as our single writer does. Queries go
 * one per call, from one thread or two (each with one OpenMP thread),
 * timed like ours (bench_vec_qps(): at least SECS seconds, best of REPEATS
 * runs); the batch figure is one call for all queries on one thread, best
 * of REPEATS.
 * Memory per vector is what the index allocated with malloc (mallinfo2),
 * divided by the number of vectors. IndexFlatL2 runs only the first
 * NQ_FLAT queries (all by default).
 */
#include "config.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <malloc.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "tests/bench/bench_vec.h"

static size_t heap_bytes()
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static unsigned repeats = 3;
static double min_s = 0.3;

struct one_query {
	const faiss::Index *index;
	const bench_vec_data *d;
	std::vector<faiss::Index::idx_t> *labels;
};

/* One query a call, on one OpenMP thread (the threads of bench_vec_qps() are the parallelism). */
static void run_one(void *arg, size_t i)
{
	one_query *q = (one_query *)arg;
	float dist[1024];

	omp_set_num_threads(1);
	q->index->search(1, q->d->queries + i * q->d->dim, q->d->k, dist,
			 q->labels->data() + i * q->d->k);
}

static double run_queries(const faiss::Index &index, const bench_vec_data &d, size_t nq,
			  unsigned nthreads, std::vector<faiss::Index::idx_t> &labels)
{
	one_query q = {&index, &d, &labels};

	return bench_vec_qps(nq, nthreads, min_s, repeats, run_one, &q);
}

static void measure(const char *kind, const faiss::Index &index, const bench_vec_data &d, size_t nq,
		    double build_s, double bytes)
{
	std::vector<faiss::Index::idx_t> labels(d.nq * d.k, -1);
	std::vector<float> dist(d.nq * d.k);
	double q1 = run_queries(index, d, nq, 1, labels);
	double q2 = run_queries(index, d, nq, 2, labels);
	bench_vec_data sub = d;
	double t0;

	sub.nq = nq;
	double recall = bench_vec_recall(&sub, (const uint64_t *)labels.data());
	double batch = 0;

	omp_set_num_threads(1);
	for (unsigned r = 0; r < repeats; r++) {
		t0 = bench_vec_now();
		index.search(nq, d.queries, d.k, dist.data(), labels.data());
		batch = std::max(batch, (double)nq / (bench_vec_now() - t0));
	}
	bench_vec_result("faiss", kind, build_s, bytes, q1, q2, batch, recall);
}

int main(int argc, char **argv)
{
	size_t m = 16, efc = 200, ef = 64, nq_flat = 0;
	bench_vec_data d;
	int opt;

	static_assert(sizeof(faiss::Index::idx_t) == sizeof(uint64_t), "labels are 64-bit");
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
			fprintf(stderr, "usage: pool-bench-vec-faiss [-M M] [-c EFC] [-e EF] [-f "
					"NQ_FLAT] [-r REPEATS] [-t SECS] DATAFILE\n");
			return 2;
		}
	}
	if (optind + 1 != argc || bench_vec_file(argv[optind], &d, 0) < 0) {
		fprintf(stderr, "pool-bench-vec-faiss: cannot read the data file\n");
		return 1;
	}
	if (nq_flat == 0 || nq_flat > d.nq)
		nq_flat = d.nq;
	omp_set_num_threads(1);
	{
		size_t before = heap_bytes();
		double t0 = bench_vec_now();
		faiss::IndexHNSWFlat index(d.dim, (int)m);

		index.hnsw.efConstruction = (int)efc;
		index.add(d.n, d.base);
		double build = bench_vec_now() - t0;

		index.hnsw.efSearch = (int)ef;
		measure("hnsw", index, d, d.nq, build,
			(double)(heap_bytes() - before) / (double)d.n);
	}
	{
		size_t before = heap_bytes();
		double t0 = bench_vec_now();
		faiss::IndexFlatL2 index(d.dim);

		index.add(d.n, d.base);
		double build = bench_vec_now() - t0;

		measure("flat", index, d, nq_flat, build,
			(double)(heap_bytes() - before) / (double)d.n);
	}
	return 0;
}

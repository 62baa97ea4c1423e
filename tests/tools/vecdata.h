/*
 * tests/tools/vecdata.h - clustered synthetic vectors for the vector index
 * tests and benchmark.
 *
 * Uniform random vectors in many dimensions are a poor test of an
 * approximate index (every point is about as far from every other), and
 * real embeddings are not like that: they have a low intrinsic dimension.
 * These points lie near a few random low-dimensional subspaces: point i is
 * a cluster's centre, plus a Gaussian combination of that cluster's random
 * basis vectors, plus a little noise in every coordinate. Everything is a
 * function of the seed and i, so any process can make the same point again.
 */
#ifndef POOL_TESTS_VECDATA_H
#define POOL_TESTS_VECDATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vecdata;

/* A model: dim coordinates, clusters subspaces of subdim dimensions each, noise per coordinate. */
struct vecdata *vecdata_new(uint32_t dim, uint32_t clusters, uint32_t subdim, float noise,
			    uint64_t seed);
void vecdata_free(struct vecdata *d);
/* Points first .. first + n - 1 of the model, n * dim floats. */
void vecdata_points(const struct vecdata *d, uint64_t first, size_t n, float *out);
/* Queries: points of the same model from a stream apart from the base points. */
void vecdata_queries(const struct vecdata *d, uint64_t first, size_t n, float *out);
/* A seeded generator for the tests: splitmix64. */
uint64_t vecdata_rand(uint64_t *state);

#ifdef __cplusplus
}
#endif
#endif

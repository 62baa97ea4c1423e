/*
 * vecindex/vecdist.h - distance kernels of the vector index.
 *
 * One implementation per instruction set family: vecdist_x86.c (SSE,
 * AVX2+FMA, AVX-512, chosen at run time) on x86-64, vecdist_generic.c
 * elsewhere; Makefile.am picks the file.
 */
#ifndef LIBPOOL_VECDIST_H
#define LIBPOOL_VECDIST_H

#include <stddef.h>

/* Squared L2 distance, or the dot product, of two vectors of dim floats. */
typedef float (*vecdist_fn)(const float *a, const float *b, size_t dim);

struct vecdist_ops {
	const char *name;
	vecdist_fn l2;
	vecdist_fn dot;
};

/* The fastest kernels this CPU runs; $POOL_VEC_SIMD=NAME picks another one it runs. */
const struct vecdist_ops *vecdist_best(void);
/* The variants this CPU can run, fastest first, for the tests: how many (at most max). */
size_t vecdist_variants(const struct vecdist_ops **ret, size_t max);

#endif

/*
 * vecindex/vecdist_x86.c - distance kernels for x86-64: SSE (every x86-64
 * CPU), AVX2 with FMA, AVX-512F. Each is compiled for its instruction set
 * with a target attribute and chosen at run time, so one build runs
 * everywhere and uses what the CPU has. Several accumulators hide the
 * latency of the adds; tails are done with masks (AVX-512) or one lane at
 * a time.
 */
#include "config.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "vecindex/vecdist.h"

static float vecdist_l2_sse(const float *a, const float *b, size_t dim)
{
	__m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
	float r[4], sum;
	size_t i = 0;

	for (; i + 8 <= dim; i += 8) {
		__m128 d0 = _mm_sub_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
		__m128 d1 = _mm_sub_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));

		s0 = _mm_add_ps(s0, _mm_mul_ps(d0, d0));
		s1 = _mm_add_ps(s1, _mm_mul_ps(d1, d1));
	}
	_mm_storeu_ps(r, _mm_add_ps(s0, s1));
	sum = (r[0] + r[1]) + (r[2] + r[3]);
	for (; i < dim; i++) {
		float d = a[i] - b[i];

		sum += d * d;
	}
	return sum;
}

static float vecdist_dot_sse(const float *a, const float *b, size_t dim)
{
	__m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
	float r[4], sum;
	size_t i = 0;

	for (; i + 8 <= dim; i += 8) {
		s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
		s1 = _mm_add_ps(s1, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
	}
	_mm_storeu_ps(r, _mm_add_ps(s0, s1));
	sum = (r[0] + r[1]) + (r[2] + r[3]);
	for (; i < dim; i++)
		sum += a[i] * b[i];
	return sum;
}

__attribute__((target("avx2,fma"))) static float vecdist_hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float vecdist_l2_avx2(const float *a, const float *b,
								 size_t dim)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	__m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
	size_t i = 0;
	float sum;

	for (; i + 32 <= dim; i += 32) {
		__m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		__m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
		__m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));

		s0 = _mm256_fmadd_ps(d0, d0, s0);
		s1 = _mm256_fmadd_ps(d1, d1, s1);
		s2 = _mm256_fmadd_ps(d2, d2, s2);
		s3 = _mm256_fmadd_ps(d3, d3, s3);
	}
	for (; i + 8 <= dim; i += 8) {
		__m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));

		s0 = _mm256_fmadd_ps(d, d, s0);
	}
	sum = vecdist_hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < dim; i++) {
		float d = a[i] - b[i];

		sum += d * d;
	}
	return sum;
}

__attribute__((target("avx2,fma"))) static float vecdist_dot_avx2(const float *a, const float *b,
								  size_t dim)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	__m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
	size_t i = 0;
	float sum;

	for (; i + 32 <= dim; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= dim; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	sum = vecdist_hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < dim; i++)
		sum += a[i] * b[i];
	return sum;
}

__attribute__((target("avx512f"))) static float vecdist_l2_avx512(const float *a, const float *b,
								  size_t dim)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	__m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
	size_t i = 0;

	for (; i + 64 <= dim; i += 64) {
		__m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
		__m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
		__m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
		__m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));

		s0 = _mm512_fmadd_ps(d0, d0, s0);
		s1 = _mm512_fmadd_ps(d1, d1, s1);
		s2 = _mm512_fmadd_ps(d2, d2, s2);
		s3 = _mm512_fmadd_ps(d3, d3, s3);
	}
	for (; i + 16 <= dim; i += 16) {
		__m512 d = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));

		s0 = _mm512_fmadd_ps(d, d, s0);
	}
	if (i < dim) {
		__mmask16 m = (__mmask16)((1u << (dim - i)) - 1);
		__m512 d =
		    _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));

		s1 = _mm512_fmadd_ps(d, d, s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

__attribute__((target("avx512f"))) static float vecdist_dot_avx512(const float *a, const float *b,
								   size_t dim)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	__m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
	size_t i = 0;

	for (; i + 64 <= dim; i += 64) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
		s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
		s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
	}
	for (; i + 16 <= dim; i += 16)
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
	if (i < dim) {
		__mmask16 m = (__mmask16)((1u << (dim - i)) - 1);

		s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i),
				     _mm512_maskz_loadu_ps(m, b + i), s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static const struct vecdist_ops vecdist_avx512 = {"avx512", vecdist_l2_avx512, vecdist_dot_avx512};
static const struct vecdist_ops vecdist_avx2 = {"avx2", vecdist_l2_avx2, vecdist_dot_avx2};
static const struct vecdist_ops vecdist_sse = {"sse", vecdist_l2_sse, vecdist_dot_sse};

size_t vecdist_variants(const struct vecdist_ops **ret, size_t max)
{
	size_t n = 0;

	__builtin_cpu_init();
	if (n < max && __builtin_cpu_supports("avx512f"))
		ret[n++] = &vecdist_avx512;
	if (n < max && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		ret[n++] = &vecdist_avx2;
	if (n < max)
		ret[n++] = &vecdist_sse;
	return n;
}

const struct vecdist_ops *vecdist_best(void)
{
	const struct vecdist_ops *v[3];
	const char *want = getenv("POOL_VEC_SIMD");
	size_t n = vecdist_variants(v, 3), i;

	for (i = 0; want != NULL && i < n; i++)
		if (strcmp(v[i]->name, want) == 0)
			return v[i];
	return v[0];
}

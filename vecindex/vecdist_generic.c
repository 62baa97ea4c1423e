/*
 * vecindex/vecdist_generic.c - distance kernels in plain C, for CPUs without
 * a vecdist_<arch>.c. Eight independent partial sums let the compiler
 * vectorise the loop without reassociating floating-point adds itself.
 */
#include "config.h"

#include "vecindex/vecdist.h"

static float vecdist_l2_generic(const float *a, const float *b, size_t dim)
{
	float s[8] = {0}, sum;
	size_t i = 0, j;

	for (; i + 8 <= dim; i += 8)
		for (j = 0; j < 8; j++) {
			float d = a[i + j] - b[i + j];

			s[j] += d * d;
		}
	sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
	for (; i < dim; i++) {
		float d = a[i] - b[i];

		sum += d * d;
	}
	return sum;
}

static float vecdist_dot_generic(const float *a, const float *b, size_t dim)
{
	float s[8] = {0}, sum;
	size_t i = 0, j;

	for (; i + 8 <= dim; i += 8)
		for (j = 0; j < 8; j++)
			s[j] += a[i + j] * b[i + j];
	sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
	for (; i < dim; i++)
		sum += a[i] * b[i];
	return sum;
}

static const struct vecdist_ops vecdist_generic = {"generic", vecdist_l2_generic,
						   vecdist_dot_generic};

size_t vecdist_variants(const struct vecdist_ops **ret, size_t max)
{
	if (max == 0)
		return 0;
	ret[0] = &vecdist_generic;
	return 1;
}

const struct vecdist_ops *vecdist_best(void)
{
	return &vecdist_generic;
}

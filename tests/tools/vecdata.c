/* tests/tools/vecdata.c - clustered synthetic vectors (see vecdata.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "tests/tools/vecdata.h"

struct vecdata {
	uint32_t dim, clusters, subdim;
	float noise;
	uint64_t seed;
	float *centres; /* clusters * dim */
	float *bases;	/* clusters * subdim * dim */
};

uint64_t vecdata_rand(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A standard normal deviate (Box-Muller). */
static double vecdata_gauss(uint64_t *s)
{
	double u = ((vecdata_rand(s) >> 11) + 0.5) / 9007199254740992.0;
	double v = (vecdata_rand(s) >> 11) / 9007199254740992.0;

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

struct vecdata *vecdata_new(uint32_t dim, uint32_t clusters, uint32_t subdim, float noise,
			    uint64_t seed)
{
	struct vecdata *d = calloc(1, sizeof(*d));
	uint64_t s = seed;
	size_t i;

	if (d == NULL || dim == 0 || clusters == 0)
		goto fail;
	d->dim = dim;
	d->clusters = clusters;
	d->subdim = subdim;
	d->noise = noise;
	d->seed = seed;
	d->centres = malloc((size_t)clusters * dim * sizeof(float));
	d->bases = malloc(((size_t)clusters * subdim * dim + 1) * sizeof(float));
	if (d->centres == NULL || d->bases == NULL)
		goto fail;
	/* Centres spread with unit variance per coordinate; basis vectors of about length 4. */
	for (i = 0; i < (size_t)clusters * dim; i++)
		d->centres[i] = (float)vecdata_gauss(&s);
	for (i = 0; i < (size_t)clusters * subdim * dim; i++)
		d->bases[i] = (float)(vecdata_gauss(&s) * 4 / sqrt(dim));
	return d;
fail:
	vecdata_free(d);
	return NULL;
}

void vecdata_free(struct vecdata *d)
{
	if (d == NULL)
		return;
	free(d->centres);
	free(d->bases);
	free(d);
}

static void vecdata_point(const struct vecdata *d, uint64_t i, float *out)
{
	uint64_t s = d->seed ^ (i * UINT64_C(0xd1342543de82ef95) + 1);
	uint32_t c = (uint32_t)(vecdata_rand(&s) % d->clusters), j, k;
	const float *ctr = d->centres + (size_t)c * d->dim;
	const float *basis = d->bases + (size_t)c * d->subdim * d->dim;

	for (k = 0; k < d->dim; k++)
		out[k] = ctr[k] + (float)(vecdata_gauss(&s) * d->noise);
	for (j = 0; j < d->subdim; j++) {
		float z = (float)vecdata_gauss(&s);

		for (k = 0; k < d->dim; k++)
			out[k] += z * basis[(size_t)j * d->dim + k];
	}
}

void vecdata_points(const struct vecdata *d, uint64_t first, size_t n, float *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		vecdata_point(d, first + i, out + i * d->dim);
}

void vecdata_queries(const struct vecdata *d, uint64_t first, size_t n, float *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		vecdata_point(d, (UINT64_C(1) << 62) + first + i, out + i * d->dim);
}

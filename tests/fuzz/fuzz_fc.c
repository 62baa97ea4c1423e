/*
 * tests/fuzz/fuzz_fc.c - libFuzzer target: a Firecracker UFFD handshake message through the parser.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/fc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fc_mappings m;
	char err[FC_ERR_MAX];
	char *msg = malloc(size + 1); /* exactly size bytes are readable: no terminator */

	if (msg == NULL)
		return 0;
	memcpy(msg, data, size);
	if (fc_parse(msg, size, &m, err, sizeof(err)) == 0) {
		/* Whatever parses must hold what the checks promise. */
		unsigned i;
		uint64_t total = 0;

		for (i = 0; i < m.n; i++) {
			if (m.r[i].size == 0 || m.r[i].base % m.page_size ||
			    m.r[i].size % m.page_size || m.r[i].offset % m.page_size ||
			    m.r[i].base + m.r[i].size < m.r[i].base)
				abort();
			total += m.r[i].size;
		}
		if (m.n == 0 || m.n > FC_REGIONS_MAX)
			abort();
		(void)fc_validate(&m, total, err, sizeof(err));
	}
	free(msg);
	return 0;
}

/*
 * tests/fuzz/standalone.c - runs a fuzz target over the files named on the
 * command line (its seed corpus and every crash ever found), so that
 * `make check` replays them in builds without libFuzzer.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long len;

		if (f == NULL || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0) {
			perror(argv[i]);
			return 1;
		}
		rewind(f);
		buf = malloc((size_t)len + 1);
		if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
			perror(argv[i]);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
	}
	printf("%d inputs replayed\n", argc - 1);
	return 0;
}

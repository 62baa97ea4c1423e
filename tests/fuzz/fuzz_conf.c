/* tests/fuzz/fuzz_conf.c - libFuzzer target: poold.conf text through the parser. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct poold_conf *conf;
	struct conf_error err;
	char *text = malloc(size + 1);

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (conf_parse_text("fuzz.conf", text, &conf, &err) == 0) {
		conf_finish(conf, &err);
		conf_free(conf);
	}
	free(text);
	return 0;
}

/* tests/unit/test_conf.c - the option table and poold.conf parser. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tests/unit/unit.h"

static struct poold_conf *parse_ok(const char *text)
{
	struct poold_conf *conf = NULL;
	struct conf_error err;
	int rc = conf_parse_text("t.conf", text, &conf, &err);

	CU_ASSERT_EQUAL(rc, 0);
	if (rc == 0)
		CU_ASSERT_EQUAL(conf_finish(conf, &err), 0);
	if (rc < 0)
		fprintf(stderr, "unexpected error %s:%d: %s\n", err.file, err.line, err.msg);
	return conf;
}

/* Parse text that must fail at line, with msg containing want. */
static void parse_bad(const char *text, int line, const char *want)
{
	struct poold_conf *conf = NULL;
	struct conf_error err;
	int rc = conf_parse_text("bad.conf", text, &conf, &err);

	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NULL(conf);
	CU_ASSERT_STRING_EQUAL(err.file, "bad.conf");
	CU_ASSERT_EQUAL(err.line, line);
	if (strstr(err.msg, want) == NULL) {
		fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
		CU_FAIL("error message");
	}
}

static void test_defaults(void)
{
	struct poold_conf *conf = parse_ok("");
	size_t i;

	CU_ASSERT_EQUAL(conf->lend_size, 256LL << 20);
	CU_ASSERT_EQUAL(conf->max_frame, 1LL << 20);
	CU_ASSERT_EQUAL(conf->control_mode, 0660);
	CU_ASSERT_EQUAL(conf->role, ROLE_COORDINATOR);
	CU_ASSERT(strstr(conf->socket, "/poold.sock") != NULL);
	for (i = 0; i < conf_noptions; i++)
		CU_ASSERT(conf_is_default(conf, &conf_options[i]));
	conf_free(conf);
}

static void test_every_type(void)
{
	struct poold_conf *conf = parse_ok("# comment\n"
					   "\n"
					   "runtime_dir = /tmp/x   # trailing comment\n"
					   "control.mode = 0600\n"
					   "control.max_clients = 17\n"
					   "control.max_frame = 64K\n"
					   "log.level = debug\n"
					   "control.group = \"a # b\"\n"
					   "lend.size = 2G\n");

	CU_ASSERT_STRING_EQUAL(conf->runtime_dir, "/tmp/x");
	CU_ASSERT_STRING_EQUAL(conf->socket, "/tmp/x/poold.sock");
	CU_ASSERT_STRING_EQUAL(conf->pidfile, "/tmp/x/poold.pid");
	CU_ASSERT_EQUAL(conf->control_mode, 0600);
	CU_ASSERT_EQUAL(conf->max_clients, 17);
	CU_ASSERT_EQUAL(conf->max_frame, 64 << 10);
	CU_ASSERT_EQUAL(conf->log_level, LOG_LVL_DEBUG);
	CU_ASSERT_STRING_EQUAL(conf->control_group, "a # b");
	CU_ASSERT_EQUAL(conf->lend_size, 2LL << 30);
	CU_ASSERT_FALSE(conf_is_default(conf, conf_find("lend.size")));
	conf_free(conf);
}

static void test_units(void)
{
	uint64_t v;

	CU_ASSERT_EQUAL(units_parse_size("4096", &v), 0);
	CU_ASSERT_EQUAL(v, 4096);
	CU_ASSERT_EQUAL(units_parse_size("64M", &v), 0);
	CU_ASSERT_EQUAL(v, 64ULL << 20);
	CU_ASSERT_EQUAL(units_parse_size("3MiB", &v), 0);
	CU_ASSERT_EQUAL(v, 3ULL << 20);
	CU_ASSERT_EQUAL(units_parse_size("1t", &v), 0);
	CU_ASSERT_EQUAL(v, 1ULL << 40);
	CU_ASSERT_EQUAL(units_parse_size("12X", &v), -EINVAL);
	CU_ASSERT_EQUAL(units_parse_size("-1", &v), -EINVAL);
	CU_ASSERT_EQUAL(units_parse_size("", &v), -EINVAL);
	CU_ASSERT_EQUAL(units_parse_size("99999999999999999999", &v), -ERANGE);
	CU_ASSERT_EQUAL(units_parse_size("17179869184T", &v), -ERANGE);
	CU_ASSERT_EQUAL(units_parse_duration("500ms", &v), 0);
	CU_ASSERT_EQUAL(v, 500);
	CU_ASSERT_EQUAL(units_parse_duration("2s", &v), 0);
	CU_ASSERT_EQUAL(v, 2000);
	CU_ASSERT_EQUAL(units_parse_duration("3", &v), 0);
	CU_ASSERT_EQUAL(v, 3000);
	CU_ASSERT_EQUAL(units_parse_duration("1h", &v), 0);
	CU_ASSERT_EQUAL(v, 3600000);
	CU_ASSERT_EQUAL(units_parse_duration("2 s", &v), -EINVAL);
}

static void test_format_round_trip(void)
{
	struct poold_conf *conf = parse_ok("lend.size = 1536K\ncontrol.mode = 640\n");
	char buf[64];

	conf_format(conf, conf_find("lend.size"), buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "1536K");
	conf_format(conf, conf_find("control.mode"), buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "0640");
	conf_format(conf, conf_find("log.level"), buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "info");
	conf_free(conf);
}

static void test_errors_with_lines(void)
{
	parse_bad("log.level = info\nbogus.key = 1\n", 2, "unknown option 'bogus.key'");
	parse_bad("\n\nlend.size = 12X\n", 3, "not a valid size");
	parse_bad("control.max_clients = 0\n", 1, "out of range [1, 65536]");
	parse_bad("control.max_clients = 12abc\n", 1, "not a valid int");
	parse_bad("control.max_frame = 100\n", 1, "out of range [4K, 64M]");
	parse_bad("log.level = loud\n", 1, "not one of error|warn|info|debug");
	parse_bad("control.mode = 0999\n", 1, "not a valid mode");
	parse_bad("# ok\njust some words\n", 2, "expected 'name = value'");
	parse_bad("control.group = \"open\n", 1, "unterminated");
	parse_bad("control.group = \"a\" b\n", 1, "malformed");
	parse_bad("lend.size = 1M\nlog.level = info\nlend.size = 2M\n", 3,
		  "set twice (first at line 1)");
}

static void test_string_limit(void)
{
	char text[400];

	snprintf(text, sizeof(text), "runtime_dir = /%0300d\n", 0);
	parse_bad(text, 1, "longer than 200");
}

static void test_long_line(void)
{
	char *text = malloc(5000);

	memset(text, 'a', 4999);
	text[4999] = '\0';
	parse_bad(text, 1, "line longer than");
	free(text);
}

static void test_finish_errors(void)
{
	struct poold_conf *conf = NULL;
	struct conf_error err;

	CU_ASSERT_EQUAL(conf_parse_text("f", "runtime_dir = relative\n", &conf, &err), 0);
	CU_ASSERT(conf_finish(conf, &err) < 0);
	CU_ASSERT(strstr(err.msg, "not an absolute path") != NULL);
	conf_free(conf);
}

static void test_load_overrides(void)
{
	char *good[] = {"runtime_dir=/tmp/o", "lend.size=1G"};
	char *bad[] = {"lend.size"};
	char *range[] = {"control.max_clients=0"};
	struct poold_conf *conf = NULL;
	struct conf_error err;

	CU_ASSERT_EQUAL_FATAL(conf_load(NULL, good, 2, &conf, &err), 0);
	/* Derived paths follow the overridden runtime_dir. */
	CU_ASSERT_STRING_EQUAL(conf->socket, "/tmp/o/poold.sock");
	CU_ASSERT_EQUAL(conf->lend_size, 1LL << 30);
	conf_free(conf);
	CU_ASSERT(conf_load(NULL, bad, 1, &conf, &err) < 0);
	CU_ASSERT_STRING_EQUAL(err.file, "command line");
	CU_ASSERT(conf_load(NULL, range, 1, &conf, &err) < 0);
	CU_ASSERT(strstr(err.msg, "out of range") != NULL);
	CU_ASSERT(conf_load("/nonexistent/poold.conf", NULL, 0, &conf, &err) < 0);
	CU_ASSERT(strstr(err.msg, "cannot open") != NULL);
}

static void test_table_sane(void)
{
	size_t i, j;

	for (i = 0; i < conf_noptions; i++) {
		CU_ASSERT_PTR_NOT_NULL(conf_options[i].help);
		for (j = i + 1; j < conf_noptions; j++)
			CU_ASSERT(strcmp(conf_options[i].name, conf_options[j].name) != 0);
	}
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"defaults", test_defaults},
	    {"every type", test_every_type},
	    {"units", test_units},
	    {"format round trip", test_format_round_trip},
	    {"errors carry line numbers", test_errors_with_lines},
	    {"string length limit", test_string_limit},
	    {"long line", test_long_line},
	    {"relations between options", test_finish_errors},
	    {"command-line overrides", test_load_overrides},
	    {"option table", test_table_sane},
	    {NULL, NULL},
	};
	return unit_run("conf", tests);
}

// SPDX-License-Identifier: Apache-2.0
/* Unit tests for Pyroscope's ingest name parser and the folded stack parser: what the Node
 * SDK sends, type suffixes (only Pyroscope's names), escaping, and each refusal's reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/folded.h"
#include "ingest/pyroscope_name.h"
#include "test.h"

static struct pyroscope_name name_;
static char err_[256];

static int parse(const char *text)
{
	err_[0] = '\0';
	return pyroscope_name_parse(text, &name_, err_, sizeof(err_));
}

TEST(the_nodejs_sdk_name_gives_app_labels_and_no_type)
{
	CHECK_EQ_INT(parse("shop{otel.scope.name=com.grafana.pyroscope/nodejs,"
			   "process.runtime.version=v20.20.2,service_version=1.4.2}"),
		     0);
	CHECK_EQ_STR(name_.app, "shop");
	CHECK(name_.type == NULL);
	CHECK_EQ_INT(name_.n_labels, 3);
	CHECK_EQ_STR(pyroscope_name__label(&name_, "otel.scope.name"),
		     "com.grafana.pyroscope/nodejs");
	CHECK_EQ_STR(pyroscope_name__label(&name_, "service_version"), "1.4.2");
	CHECK(pyroscope_name__label(&name_, "version") == NULL);
}

TEST(only_pyroscope_type_names_are_split_off_as_suffix)
{
	CHECK_EQ_INT(parse("simple.golang.app.cpu{env=staging}"), 0);
	CHECK_EQ_STR(name_.app, "simple.golang.app");
	CHECK_EQ_STR(name_.type->name, "cpu");
	CHECK_EQ_STR(name_.type->profile_type, "cpu");
	CHECK_EQ_INT(parse("shop.inuse_space"), 0);
	CHECK_EQ_STR(name_.app, "shop");
	CHECK_EQ_STR(name_.type->profile_type, "heap");
	CHECK_EQ_INT(parse("my.app"), 0);
	CHECK_EQ_STR(name_.app, "my.app");
	CHECK(name_.type == NULL);
	CHECK_EQ_INT(parse("app.goroutines"), 0);
	CHECK_EQ_STR(name_.type->name, "goroutines");
	CHECK(name_.type->profile_type == NULL); /* known to Pyroscope, not stored: 422 */
	CHECK_EQ_INT(parse(".cpu"), 0);
	CHECK_EQ_STR(name_.app, ".cpu");
}

TEST(values_are_unescaped_and_spaces_around_keys_and_values_dropped)
{
	CHECK_EQ_INT(parse("a{ k = x\\,y\\}z\\\\ , e=, s=tail\\ ,}"), 0);
	CHECK_EQ_INT(name_.n_labels, 3);
	CHECK_EQ_STR(pyroscope_name__label(&name_, "k"), "x,y}z\\");
	CHECK_EQ_STR(pyroscope_name__label(&name_, "e"), "");
	CHECK_EQ_STR(pyroscope_name__label(&name_, "s"), "tail ");
	CHECK_EQ_INT(parse("a{}"), 0);
	CHECK_EQ_INT(name_.n_labels, 0);
	CHECK_EQ_INT(parse("a{u=x=y}"), 0);
	CHECK_EQ_STR(pyroscope_name__label(&name_, "u"), "x=y");
}

TEST(malformed_names_are_refused_with_the_reason)
{
	static const struct {
		const char *name, *reason;
	} cases[] = {
	    {"", "name is missing"},
	    {"{a=b}", "no application name"},
	    {"a{b=c", "'}' missing"},
	    {"a{b}", "has no '='"},
	    {"a{1b=c}", "a key starts with a letter"},
	    {"a{b=c,b=d}", "appears twice"},
	    {"a{b=c}x", "text after"},
	    {"a{b=c\\", "'}' missing"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(parse(cases[i].name), -EINVAL);
		CHECK(strstr(err_, cases[i].reason) != NULL);
	}
}

TEST(name_length_and_label_count_are_bounded)
{
	char *big = malloc(PYROSCOPE_NAME_MAX + 1);
	int len = snprintf(big, PYROSCOPE_NAME_MAX, "a{");

	CHECK(big);
	for (int i = 0; i <= PYROSCOPE_LABELS_MAX; i++)
		len += snprintf(big + len, PYROSCOPE_NAME_MAX - len, "k%d=v,", i);
	snprintf(big + len, PYROSCOPE_NAME_MAX - len, "}");
	CHECK_EQ_INT(parse(big), -EINVAL);
	CHECK(strstr(err_, "more than 64 labels") != NULL);
	memset(big, 'a', PYROSCOPE_NAME_MAX);
	big[PYROSCOPE_NAME_MAX] = '\0';
	CHECK_EQ_INT(parse(big), -EINVAL);
	CHECK(strstr(err_, "the limit is 4095") != NULL);
	free(big);
}

TEST(accepted_types_are_the_stored_ones)
{
	char buf[256];

	pyroscope_types_accepted(buf, sizeof(buf));
	CHECK(strstr(buf, "cpu, itimer, wall, inuse_space") == buf);
	CHECK(strstr(buf, "goroutines") == NULL);
}

struct collected {
	char stacks[8][128];
	int64_t values[8];
	size_t n;
};

static int collect(void *ctx, const char *const *frames, size_t n_frames, int64_t value)
{
	struct collected *c = ctx;
	size_t used = 0;

	if (c->n == 8)
		return -E2BIG;
	for (size_t i = 0; i < n_frames; i++) /* leaf first */
		used +=
		    snprintf(c->stacks[c->n] + used, 128 - used, "%s%s", i ? "<" : "", frames[i]);
	c->values[c->n++] = value;
	return 0;
}

TEST(folded_lines_become_leaf_first_stacks)
{
	const char text[] = "main;work;hot 30\r\n\nmain;;x 1\nroot 9223372036854775807";
	struct collected c = {0};
	char err[128];

	CHECK_EQ_INT(folded_parse(text, strlen(text), collect, &c, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.n, 3);
	CHECK_EQ_STR(c.stacks[0], "hot<work<main");
	CHECK_EQ_INT(c.values[0], 30);
	CHECK_EQ_STR(c.stacks[1], "x<[unknown]<main");
	CHECK_EQ_INT(c.values[2], INT64_MAX);
}

TEST(folded_lines_without_a_value_are_refused_with_the_line)
{
	static const char *const bad[] = {"a;b 1\na;b\n", "a 1\nb -3\n",
					  "a 1\nb 9223372036854775808"};
	struct collected c = {0};
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(folded_parse(bad[i], strlen(bad[i]), collect, &c, err, sizeof(err)),
			     -EINVAL);
		CHECK(strstr(err, "line 2 ") != NULL);
	}
}

TEST_MAIN("pyroscope-name", T(the_nodejs_sdk_name_gives_app_labels_and_no_type),
	  T(only_pyroscope_type_names_are_split_off_as_suffix),
	  T(values_are_unescaped_and_spaces_around_keys_and_values_dropped),
	  T(malformed_names_are_refused_with_the_reason),
	  T(name_length_and_label_count_are_bounded), T(accepted_types_are_the_stored_ones),
	  T(folded_lines_become_leaf_first_stacks),
	  T(folded_lines_without_a_value_are_refused_with_the_line))

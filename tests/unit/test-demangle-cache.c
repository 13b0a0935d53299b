// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the demangled-name cache: names served as demangle() writes them, each
 * mangled name demangled once, a full cache emptied at a window's end, plain names not kept. */
#include <stdint.h>

#include "symbolize/demangle.h"
#include "symbolize/demangle_cache.h"
#include "test.h"

#define NAME_A "_ZN3foo3barEi"
#define NAME_B "_ZNSt6vectorIiSaIiEE9push_backERKi"

TEST(cached_name_is_what_demangle_writes_and_demangled_once)
{
	struct demangle_cache *c = demangle_cache__new(0);
	struct demangle_cache_stats st;
	char want[256], got[256];

	CHECK(c);
	demangle(NAME_B, want, sizeof(want));
	for (int i = 0; i < 3; i++) {
		demangle_cache__get(c, NAME_B, got, sizeof(got));
		CHECK_EQ_STR(got, want);
	}
	demangle_cache__stats(c, &st);
	demangle_cache__free(c);
	CHECK_EQ_STR(want, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	CHECK_EQ_INT(st.demangled, 1);
	CHECK_EQ_INT(st.hits, 2);
	CHECK_EQ_INT(st.entries, 1);
}

TEST(cached_name_is_truncated_to_the_callers_buffer)
{
	struct demangle_cache *c = demangle_cache__new(0);
	char got[8];

	CHECK(c);
	demangle_cache__get(c, NAME_A, got, sizeof(got));
	CHECK_EQ_STR(got, "foo::ba");
	demangle_cache__get(c, NAME_A, got, sizeof(got));
	CHECK_EQ_STR(got, "foo::ba");
	demangle_cache__free(c);
}

TEST(plain_and_unparsable_names_are_copied_as_is)
{
	struct demangle_cache *c = demangle_cache__new(0);
	struct demangle_cache_stats st;
	char got[64];

	CHECK(c);
	demangle_cache__get(c, "main", got, sizeof(got));
	CHECK_EQ_STR(got, "main");
	demangle_cache__get(c, "_Znot-a-name", got, sizeof(got));
	CHECK_EQ_STR(got, "_Znot-a-name");
	demangle_cache__stats(c, &st);
	demangle_cache__free(c);
	CHECK_EQ_INT(st.entries, 1); /* the refused one, kept as is; "main" never */
}

TEST(full_cache_keeps_naming_and_is_emptied_at_the_windows_end)
{
	struct demangle_cache *c = demangle_cache__new(1);
	struct demangle_cache_stats st;
	char got[128];

	CHECK(c);
	demangle_cache__get(c, NAME_A, got, sizeof(got));
	demangle_cache__get(c, NAME_B, got, sizeof(got)); /* full: demangled, not kept */
	CHECK_EQ_STR(got, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	demangle_cache__get(c, NAME_A, got, sizeof(got)); /* still held */
	CHECK_EQ_STR(got, "foo::bar(int)");
	demangle_cache__stats(c, &st);
	CHECK_EQ_INT(st.demangled, 2);
	CHECK_EQ_INT(st.hits, 1);
	CHECK_EQ_INT(st.cleared, 0);
	demangle_cache__end_window(c);
	demangle_cache__get(c, NAME_B, got, sizeof(got)); /* its place now */
	demangle_cache__get(c, NAME_B, got, sizeof(got));
	CHECK_EQ_STR(got, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	demangle_cache__stats(c, &st);
	demangle_cache__free(c);
	CHECK_EQ_INT(st.demangled, 3);
	CHECK_EQ_INT(st.hits, 2);
	CHECK_EQ_INT(st.cleared, 1);
	CHECK_EQ_INT(st.entries, 1);
}

TEST(cache_not_full_is_kept_at_the_windows_end)
{
	struct demangle_cache *c = demangle_cache__new(0);
	struct demangle_cache_stats st;
	char got[64];

	CHECK(c);
	demangle_cache__get(c, NAME_A, got, sizeof(got));
	demangle_cache__end_window(c);
	demangle_cache__get(c, NAME_A, got, sizeof(got));
	demangle_cache__stats(c, &st);
	demangle_cache__free(c);
	CHECK_EQ_INT(st.hits, 1);
	CHECK_EQ_INT(st.cleared, 0);
}

TEST(null_cache_demangles_every_time)
{
	char got[64];

	demangle_cache__get(NULL, NAME_A, got, sizeof(got));
	CHECK_EQ_STR(got, "foo::bar(int)");
	demangle_cache__free(NULL);
}

TEST_MAIN("demangle-cache", T(cached_name_is_what_demangle_writes_and_demangled_once),
	  T(cached_name_is_truncated_to_the_callers_buffer),
	  T(plain_and_unparsable_names_are_copied_as_is),
	  T(full_cache_keeps_naming_and_is_emptied_at_the_windows_end),
	  T(cache_not_full_is_kept_at_the_windows_end), T(null_cache_demangles_every_time))

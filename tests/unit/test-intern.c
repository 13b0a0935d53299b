// SPDX-License-Identifier: Apache-2.0
/* Unit tests for string interning and its arena: dense first-seen ids, one copy per content,
 * pointers that survive growth, the empty string, strings larger than a chunk. */
#include <stdint.h>
#include <stdio.h>

#include "../../lib/arena.h"
#include "../../lib/intern.h"
#include "test.h"

TEST(ids_are_dense_in_first_seen_order)
{
	struct intern *in = intern__new();

	CHECK(in);
	CHECK_EQ_INT(intern__count(in), 0);
	CHECK_EQ_INT(intern__add(in, "main"), 0);
	CHECK_EQ_INT(intern__add(in, ""), 1);
	CHECK_EQ_INT(intern__add(in, "parse"), 2);
	CHECK_EQ_INT(intern__add(in, "main"), 0);
	CHECK_EQ_INT(intern__add(in, ""), 1);
	CHECK_EQ_INT(intern__count(in), 3);
	CHECK_EQ_STR(intern__string(in, 0), "main");
	CHECK_EQ_STR(intern__string(in, 1), "");
	CHECK_EQ_STR(intern__strings(in)[2], "parse");
	intern__free(in);
	intern__free(NULL);
}

TEST(a_string_is_copied_once_and_its_pointer_survives_growth)
{
	struct intern *in = intern__new();
	char buf[32] = "first";
	const char *first;

	CHECK(in);
	CHECK_EQ_INT(intern__add(in, buf), 0);
	first = intern__string(in, 0);
	CHECK(first != buf);
	buf[0] = 'F'; /* the caller's buffer is not kept */
	for (int i = 0; i < 100000; i++) {
		snprintf(buf, sizeof(buf), "name-%d", i);
		CHECK_EQ_INT(intern__add(in, buf), i + 1);
	}
	CHECK(intern__string(in, 0) == first);
	CHECK_EQ_STR(first, "first");
	CHECK_EQ_INT(intern__add(in, "first"), 0);
	CHECK_EQ_INT(intern__add(in, "name-77777"), 77778);
	for (size_t i = 0; i < intern__count(in); i++)
		CHECK(intern__strings(in)[i] == intern__string(in, i));
	intern__free(in);
}

TEST(strings_larger_than_a_chunk_are_interned)
{
	struct intern *in = intern__new();
	static char big[200 * 1024];

	CHECK(in);
	memset(big, 'x', sizeof(big) - 1);
	CHECK_EQ_INT(intern__add(in, "small"), 0);
	CHECK_EQ_INT(intern__add(in, big), 1);
	CHECK_EQ_INT(intern__add(in, "after"), 2);
	CHECK_EQ_INT(intern__add(in, big), 1);
	CHECK_EQ_INT(strlen(intern__string(in, 1)), sizeof(big) - 1);
	CHECK_EQ_STR(intern__string(in, 0), "small");
	intern__free(in);
}

TEST(arena_pieces_are_aligned_and_distinct)
{
	struct arena a = {0};
	char *prev = NULL;

	for (size_t size = 1; size < 20000; size += 37) {
		char *p = arena__alloc(&a, size);

		CHECK(p);
		CHECK_EQ_INT((uintptr_t)p % 8, 0);
		memset(p, 0xab, size);
		CHECK(p != prev);
		prev = p;
	}
	CHECK(arena__alloc(&a, 0) != NULL);
	CHECK(arena__alloc(&a, SIZE_MAX) == NULL);
	arena__free(&a);
	CHECK(a.chunks == NULL);
	CHECK(arena__alloc(&a, 10) != NULL); /* reusable after free */
	arena__free(&a);
	arena__free(NULL);
}

TEST_MAIN("intern", T(ids_are_dense_in_first_seen_order),
	  T(a_string_is_copied_once_and_its_pointer_survives_growth),
	  T(strings_larger_than_a_chunk_are_interned), T(arena_pieces_are_aligned_and_distinct))

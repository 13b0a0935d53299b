// SPDX-License-Identifier: Apache-2.0
/* Unit tests for a window's distinct stacks: equal frames give one stored array, any field
 * that differs (a name, an offset, the depth) another; the set grows past thousands of
 * stacks; a window's samples of one stack in many processes share its frames, appended or
 * added. */
#include <stdio.h>
#include <string.h>

#include "sampling/window.h"
#include "sampling/window_stacks.h"
#include "test.h"

static const char *MAIN = "main", *WORK = "work", *EXE = "/bin/app", *NONE = "";

static void set_frame(struct window_frame *f, const char *function, uint64_t offset)
{
	*f = (struct window_frame){.function = function,
				   .module = EXE,
				   .build_id = NONE,
				   .file = NONE,
				   .file_offset = offset,
				   .has_offset = true};
}

TEST(equal_frames_are_stored_once_and_any_difference_is_another_stack)
{
	struct window_stacks *st = window_stacks__new();
	struct window_frame a[2], b[2], c[2];
	const struct window_frame *fa, *fb;

	CHECK(st);
	set_frame(&a[0], WORK, 0x10);
	set_frame(&a[1], MAIN, 0x20);
	memcpy(b, a, sizeof(a));
	memcpy(c, a, sizeof(a));
	fa = window_stacks__add(st, a, 2);
	fb = window_stacks__add(st, b, 2);
	CHECK(fa && fa == fb);
	CHECK(fa != a);		       /* a copy, not the caller's array */
	CHECK(fa[0].function == WORK); /* the same interned pointers */
	CHECK_EQ_INT(fa[1].file_offset, 0x20);
	c[0].file_offset = 0x11; /* another pc in the same function */
	CHECK(window_stacks__add(st, c, 2) != fa);
	c[0].file_offset = 0x10;
	c[0].has_offset = false; /* a frame without an offset */
	CHECK(window_stacks__add(st, c, 2) != fa);
	CHECK(window_stacks__add(st, a, 1) != fa); /* a prefix */
	CHECK(window_stacks__add(st, NULL, 0));	   /* no frames at all */
	CHECK(window_stacks__add(st, NULL, 0) == window_stacks__add(st, a, 0));
	CHECK_EQ_INT(window_stacks__count(st), 5);
	CHECK_EQ_INT(window_stacks__frames(st), 2 + 2 + 2 + 1);
	window_stacks__free(st);
}

TEST(thousands_of_stacks_each_found_again_after_the_set_grew)
{
	struct window_stacks *st = window_stacks__new();
	static const struct window_frame *first[5000];
	struct window_frame f[3];

	CHECK(st);
	for (int round = 0; round < 2; round++)
		for (uint64_t i = 0; i < 5000; i++) {
			set_frame(&f[0], WORK, i);
			set_frame(&f[1], MAIN, i % 7);
			set_frame(&f[2], MAIN, 0);
			if (!round)
				first[i] = window_stacks__add(st, f, 3);
			else
				CHECK(window_stacks__add(st, f, 3) == first[i]);
		}
	CHECK_EQ_INT(window_stacks__count(st), 5000);
	window_stacks__free(st);
}

static struct window_sample churned(pid_t pid, struct window_frame *frames, size_t n)
{
	return (struct window_sample){.pid = pid,
				      .tid = pid,
				      .comm = "churn",
				      .thread = "churn",
				      .frames = frames,
				      .n_frames = n,
				      .count = 1,
				      .cpu_ns = 1};
}

TEST(samples_of_one_stack_in_many_processes_share_its_frames)
{
	struct window *w = window__new(), *total = window__new();
	struct window_frame f[2];
	char name[2][16];

	CHECK(w && total);
	/* the names in a caller's own buffers, as the pipeline's are before interning */
	snprintf(name[0], sizeof(name[0]), "%s", WORK);
	snprintf(name[1], sizeof(name[1]), "%s", MAIN);
	set_frame(&f[0], name[0], 0x10);
	set_frame(&f[1], name[1], 0x20);
	for (pid_t pid = 100; pid < 1100; pid++) {
		struct window_sample s = churned(pid, f, 2);

		CHECK_EQ_INT(window__add_sample(w, &s), 0);
	}
	CHECK_EQ_INT(w->n_samples, 1000);
	CHECK(w->samples[0].frames == w->samples[999].frames);
	CHECK(w->samples[0].frames[0].function != name[0]); /* interned in the window */
	CHECK_EQ_STR(w->samples[999].frames[0].function, "work");
	CHECK_EQ_STR(w->samples[999].frames[1].function, "main");
	CHECK_EQ_INT(w->samples[999].pid, 1099);
	/* record's running total: appended windows share the total's copy */
	CHECK_EQ_INT(window__append(total, w), 0);
	CHECK_EQ_INT(window__append(total, w), 0);
	window__free(w);
	CHECK_EQ_INT(total->n_samples, 2000);
	CHECK(total->samples[0].frames == total->samples[1999].frames);
	CHECK_EQ_STR(total->samples[1999].frames[1].function, "main");
	CHECK_EQ_INT(total->samples[1999].n_frames, 2);
	window__free(total);
}

TEST_MAIN("window_stacks", T(equal_frames_are_stored_once_and_any_difference_is_another_stack),
	  T(thousands_of_stacks_each_found_again_after_the_set_grew),
	  T(samples_of_one_stack_in_many_processes_share_its_frames))
